//! Purchasing (issue 20 "Purchasing"; spec 4.10, permissions per spec 5): suppliers and the
//! purchase orders that bring stock in.
//!
//! Invariants:
//! - A purchase order moves draft -> ordered -> partially_received -> received, or to
//!   cancelled from draft or ordered; anything else is 409 `invalid_status_transition`.
//!   Only a draft's supplier, lines, expected date and note change.
//! - A line's `received_quantity` never passes its `quantity` (422, and a CHECK in the
//!   table). Receiving adds the units through the inventory's one stock change
//!   (`inventory::store::change`, which fires `inventory.low_stock|back_in_stock` and
//!   refreshes the storefront row), logs a `purchase_order` adjustment, and moves the order,
//!   all in one transaction: a refused line leaves nothing received.
//! - Numbers are a per-store sequence from 1001, like orders'. A supplier with purchase
//!   orders is not deleted (409 `conflict`).
//! - Reads need `inventory.read`, writes `inventory.write`; every query is scoped by store
//!   and every write records an audit entry in its transaction.

pub mod handlers;
pub mod model;
pub mod store;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_suppliers, handlers::create_supplier))
        .routes(routes!(
            handlers::get_supplier,
            handlers::update_supplier,
            handlers::delete_supplier
        ))
        .routes(routes!(
            handlers::list_purchase_orders,
            handlers::create_purchase_order
        ))
        .routes(routes!(
            handlers::get_purchase_order,
            handlers::update_purchase_order
        ))
        .routes(routes!(handlers::order_purchase_order))
        .routes(routes!(handlers::cancel_purchase_order))
        .routes(routes!(handlers::receive_purchase_order))
}
