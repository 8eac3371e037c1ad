//! The catalog: products with variants, and categories (issue 6 "Catalog"; spec 4.10).
//!
//! Invariants:
//! - Every product has 1 to 100 variants; a SKU is unique in its store (409 `conflict`).
//! - Categories form a tree per store: a parent is a category of the same store, and never
//!   the category itself or one of its descendants (422).
//! - Every write records its event (`products.created|updated|deleted`) and audit entry in
//!   the transaction of the change.
//! - A new product is held to the organization's plan (`billing::limits`, 402) in the
//!   transaction that adds it.
//! - Lists are keyset-paged on (sort column, id) with an index per order.
//! - A write the assistant also makes lives in [`writes`], which the handler calls: one path
//!   for validation, events and audit, whoever asks.

pub mod categories;
pub mod handlers;
pub mod model;
pub mod store;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_products, handlers::create_product))
        .routes(routes!(
            handlers::get_product,
            handlers::update_product,
            handlers::delete_product
        ))
        .routes(routes!(
            categories::list_categories,
            categories::create_category
        ))
        .routes(routes!(
            categories::get_category,
            categories::update_category,
            categories::delete_category
        ))
}
