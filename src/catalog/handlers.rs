//! Product handlers (issue 6 "Catalog").

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{ProductFilter, ProductIn, ProductOut, ProductPatch, ProductStatus, VariantIn};
use super::store::{self, ProductQuery, Sort};
use crate::audit::Actor;
use crate::error::AppError;
use crate::events::Event;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{ProductId, StoreId};
use crate::state::AppState;
use crate::webhooks;

type ErrorBody = crate::error::ErrorBody;

/// A slug as given: lowercase letters, digits and single hyphens.
pub fn check_slug(v: &str) -> Result<String, AppError> {
    if v.is_empty() || v.len() > 120 || slug::slugify(v) != v {
        return Err(AppError::field(
            "slug",
            "must be lowercase letters, digits and hyphens (at most 120)",
        ));
    }
    Ok(v.to_owned())
}

/// The optional text fields a create and an update check alike.
fn slug_and_description(
    slug: &Option<String>,
    description: &Option<String>,
) -> Result<(Option<String>, Option<String>), AppError> {
    let slug = slug.as_deref().map(check_slug).transpose()?;
    let description = description
        .as_deref()
        .map(|d| text("description", d, 0, 65_535))
        .transpose()?;
    Ok((slug, description))
}

fn check_tags(tags: &[String]) -> Result<Vec<String>, AppError> {
    if tags.len() > 50 {
        return Err(AppError::field("tags", "at most 50 tags"));
    }
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let t = text("tags", t, 1, 64)?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

fn check_variants(variants: &[VariantIn]) -> Result<Vec<VariantIn>, AppError> {
    if variants.is_empty() || variants.len() > 100 {
        return Err(AppError::field(
            "variants",
            "a product has 1 to 100 variants",
        ));
    }
    let mut out: Vec<VariantIn> = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        let at = |f: &str| format!("variants[{i}].{f}");
        let sku = text(&at("sku"), &v.sku, 1, 64)?;
        if out.iter().any(|o| o.sku == sku) {
            return Err(AppError::field(
                at("sku"),
                format!("SKU {sku} appears twice"),
            ));
        }
        if v.price_cents < 0 {
            return Err(AppError::field(at("price_cents"), "must be 0 or more"));
        }
        for (name, val) in [
            ("compare_at_price_cents", v.compare_at_price_cents),
            ("weight_grams", v.weight_grams),
            ("on_hand", v.on_hand),
            ("low_stock_threshold", v.low_stock_threshold),
        ] {
            if val.is_some_and(|n| n < 0) {
                return Err(AppError::field(at(name), "must be 0 or more"));
            }
        }
        if v.id.is_some() && v.on_hand.is_some() {
            return Err(AppError::field(
                at("on_hand"),
                "change an existing variant's stock with an inventory adjustment",
            ));
        }
        let title = v
            .title
            .as_deref()
            .map(|t| text(&at("title"), t, 1, 255))
            .transpose()?;
        out.push(VariantIn {
            sku,
            title,
            ..v.clone()
        });
    }
    Ok(out)
}

/// The write both create and update end with: categories and variants checked and set.
fn set_children(
    tx: &rusqlite::Transaction<'_>,
    store: StoreId,
    id: ProductId,
    categories: Option<&[crate::ids::CategoryId]>,
    variants: Option<&[VariantIn]>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), AppError> {
    if let Some(cats) = categories {
        if let Some(c) = store::unknown_category(tx, store, cats)? {
            return Err(AppError::field(
                "category_ids",
                format!("{c} is not a category of this store"),
            ));
        }
        store::set_categories(tx, id, cats)?;
    }
    if let Some(vs) = variants
        && let Err(v) = store::set_variants(tx, store, id, vs, now)?
    {
        return Err(AppError::field(
            "variants",
            format!("{v} is not a variant of this product"),
        ));
    }
    Ok(())
}

/// The store's products; filters `status`, `category_id`, `search`; `sort`.
#[utoipa::path(get, path = "/stores/{store_id}/products", tag = "catalog", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, ProductFilter),
    responses((status = 200, body = Page<ProductOut>), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn list_products(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<ProductFilter>,
) -> Result<Json<Page<ProductOut>>, AppError> {
    scope.require(Permission::ProductsRead)?;
    let sort = Sort::parse(f.sort.as_deref()).ok_or_else(|| {
        AppError::field(
            "sort",
            "one of created_at, updated_at, title, each optionally prefixed with -",
        )
    })?;
    if f.status
        .as_deref()
        .is_some_and(|s| ProductStatus::parse(s).is_none())
    {
        return Err(AppError::field("status", "one of draft, active, archived"));
    }
    let store = scope.store_id;
    let q = ProductQuery {
        status: f.status,
        category: f.category_id,
        search: f.search.filter(|s| !s.trim().is_empty()),
    };
    // Cursors are bound to the list's filters and order, so one cannot be reused across them.
    let list_scope = format!("products:{store}:{sort:?}:{q:?}");
    let q2 = q.clone();
    let page = page
        .list(
            &st.db,
            &list_scope,
            move |c, after, limit, offset| {
                store::list_products(c, store, &q, sort, after, limit, offset)
            },
            move |c| store::count_products(c, store, &q2),
            |p| sort.key(p),
            |p| p,
        )
        .await?;
    Ok(Json(page))
}

/// Creates a product with its variants.
#[utoipa::path(post, path = "/stores/{store_id}/products", tag = "catalog", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = ProductIn,
    responses((status = 201, body = ProductOut), (status = 409, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn create_product(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<ProductIn>,
) -> Result<(StatusCode, Json<ProductOut>), AppError> {
    scope.require(Permission::ProductsWrite)?;
    let title = text("title", &input.title, 1, 255)?;
    let (slug, description) = slug_and_description(&input.slug, &input.description)?;
    let tags = check_tags(input.tags.as_deref().unwrap_or_default())?;
    let variants = check_variants(&input.variants)?;
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let status = input.status.unwrap_or(ProductStatus::Active);
    let categories = input.category_ids.unwrap_or_default();
    let product = st
        .db
        .write(move |tx| {
            let id = ProductId::new();
            let slug = match slug {
                Some(s) => s,
                None => store::free_slug(tx, "products", store, &crate::text::slugify(&title))?,
            };
            let desc = description.unwrap_or_default();
            store::insert_product(tx, store, id, &title, &slug, &desc, status, &tags, now)?;
            set_children(tx, store, id, Some(&categories), Some(&variants), now)?;
            publish_product(
                tx,
                &actor,
                (store, id),
                Event::ProductsCreated,
                "product.created",
                now,
            )
        })
        .await?;
    Ok((StatusCode::CREATED, Json(product)))
}

/// Reads a product just written back as the API shows it, and publishes the change with it.
fn publish_product(
    tx: &rusqlite::Transaction<'_>,
    actor: &Actor,
    (store, id): (StoreId, ProductId),
    event: Event,
    action: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<ProductOut, AppError> {
    let p = store::get_product(tx, store, id)?.ok_or_else(|| AppError::not_found("product"))?;
    let change = webhooks::Change {
        event,
        data: &p,
        action,
        resource_id: &id.to_string(),
    };
    webhooks::publish_change(tx, actor, &change, now)?;
    Ok(p)
}

/// One product.
#[utoipa::path(get, path = "/stores/{store_id}/products/{product_id}", tag = "catalog",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("product_id" = ProductId, Path)),
    responses((status = 200, body = ProductOut), (status = 404, body = ErrorBody)))]
pub async fn get_product(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ProductId)>,
) -> Result<Json<ProductOut>, AppError> {
    scope.require(Permission::ProductsRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_product(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(|| AppError::not_found("product"))
}

/// Changes any subset of the product; `variants`, when given, is the whole new list.
#[utoipa::path(patch, path = "/stores/{store_id}/products/{product_id}", tag = "catalog",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("product_id" = ProductId, Path)),
    request_body = ProductPatch,
    responses((status = 200, body = ProductOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn update_product(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ProductId)>,
    Json(input): Json<ProductPatch>,
) -> Result<Json<ProductOut>, AppError> {
    scope.require(Permission::ProductsWrite)?;
    let title = input
        .title
        .as_deref()
        .map(|t| text("title", t, 1, 255))
        .transpose()?;
    let (slug, description) = slug_and_description(&input.slug, &input.description)?;
    let tags = input.tags.as_deref().map(check_tags).transpose()?;
    let variants = input.variants.as_deref().map(check_variants).transpose()?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let (status, categories) = (input.status, input.category_ids);
    let product = st
        .db
        .write(move |tx| {
            let found = store::update_product(
                tx,
                store,
                id,
                title.as_deref(),
                slug.as_deref(),
                description.as_deref(),
                status,
                tags.as_deref(),
                now,
            )?;
            if !found {
                return Err(AppError::not_found("product"));
            }
            set_children(
                tx,
                store,
                id,
                categories.as_deref(),
                variants.as_deref(),
                now,
            )?;
            publish_product(
                tx,
                &actor,
                (store, id),
                Event::ProductsUpdated,
                "product.updated",
                now,
            )
        })
        .await?;
    Ok(Json(product))
}

/// Deletes a product and its variants.
#[utoipa::path(delete, path = "/stores/{store_id}/products/{product_id}", tag = "catalog",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("product_id" = ProductId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn delete_product(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ProductId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::ProductsWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::delete_product(tx, store, id)? {
                return Err(AppError::not_found("product"));
            }
            webhooks::publish_change(
                tx,
                &actor,
                &webhooks::Change {
                    event: Event::ProductsDeleted,
                    data: &serde_json::json!({ "id": id }),
                    action: "product.deleted",
                    resource_id: &id.to_string(),
                },
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
