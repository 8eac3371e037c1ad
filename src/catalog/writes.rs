//! The catalog's writes, shared by its REST handlers and the assistant (issue 16): each
//! checks its input, writes in one transaction and publishes its event and audit entry there.
//! Permission checks stay with the callers (the handler's `scope.require`, the assistant's
//! at approval time).

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::model::{ProductOut, ProductPatch, VariantIn};
use super::store;
use crate::audit::Actor;
use crate::error::AppError;
use crate::events::Event;
use crate::http::extract::text;
use crate::ids::{CategoryId, ProductId, StoreId};
use crate::state::AppState;
use crate::webhooks;

/// Changes any subset of a product (`variants`, when given, is the whole new list), as
/// `PATCH .../products/{id}` does: the fields are checked here (422 `validation_failed`),
/// an unknown product is 404, a SKU another product has is 409; `products.updated` and the
/// `product.updated` audit entry are written with the change.
pub async fn update_product(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    id: ProductId,
    input: ProductPatch,
) -> Result<ProductOut, AppError> {
    let title = input
        .title
        .as_deref()
        .map(|t| text("title", t, 1, 255))
        .transpose()?;
    let (slug, description) = slug_and_description(&input.slug, &input.description)?;
    let tags = input.tags.as_deref().map(check_tags).transpose()?;
    let variants = input.variants.as_deref().map(check_variants).transpose()?;
    let (actor, now) = (actor.clone(), st.clock.now());
    let (status, categories) = (input.status, input.category_ids);
    st.db
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
        .await
}

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
pub(super) fn slug_and_description(
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

pub(super) fn check_tags(tags: &[String]) -> Result<Vec<String>, AppError> {
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

pub(super) fn check_variants(variants: &[VariantIn]) -> Result<Vec<VariantIn>, AppError> {
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
pub(super) fn set_children(
    tx: &Tx<'_>,
    store: StoreId,
    id: ProductId,
    categories: Option<&[CategoryId]>,
    variants: Option<&[VariantIn]>,
    now: DateTime<Utc>,
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

/// Reads a product just written back as the API shows it, and publishes the change with it.
/// Every product write ends here, so this is also where its storefront row is rewritten.
pub(super) fn publish_product(
    tx: &Tx<'_>,
    actor: &Actor,
    (store, id): (StoreId, ProductId),
    event: Event,
    action: &str,
    now: DateTime<Utc>,
) -> Result<ProductOut, AppError> {
    crate::storefront::store::refresh(tx, store, id)?;
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
