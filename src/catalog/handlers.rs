//! Product handlers (issue 6 "Catalog").

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{ProductFilter, ProductIn, ProductOut, ProductPatch, ProductStatus};
use super::store::{self, ProductQuery, Sort};
use super::writes::{
    self, check_tags, check_variants, publish_product, set_children, slug_and_description,
};
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

/// Creates a product with its variants. The organization's plan limits its products (all its
/// stores counted): one more past it is 402 `plan_limit_reached` (`details {limit:
/// "products", max, used, plan}`), and nothing is added while its subscription is suspended
/// or canceled (402 `subscription_inactive`, `details {status}`).
#[utoipa::path(post, path = "/stores/{store_id}/products", tag = "catalog", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = ProductIn,
    responses((status = 201, body = ProductOut),
              (status = 402, body = ErrorBody, description = "plan_limit_reached or subscription_inactive"),
              (status = 409, body = ErrorBody, description = "`conflict`: the slug or a SKU is taken"), (status = 422, body = ErrorBody)))]
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
    let plans = st.cfg.plans.clone();
    let product = st
        .db
        .write(move |tx| {
            // In the transaction that adds it: two requests cannot both take the last place.
            let products = crate::billing::limits::Limit::Products;
            crate::billing::limits::allow_one_more(tx, &plans, actor.tenant_id, products, now)?;
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
              (status = 409, body = ErrorBody, description = "`conflict`: the slug is taken"), (status = 422, body = ErrorBody)))]
pub async fn update_product(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ProductId)>,
    Json(input): Json<ProductPatch>,
) -> Result<Json<ProductOut>, AppError> {
    scope.require(Permission::ProductsWrite)?;
    let product =
        writes::update_product(&st, &Actor::of(&scope), scope.store_id, ids.1, input).await?;
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
