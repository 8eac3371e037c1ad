//! Stock (issue 6 "Stock"; spec 4.10): each variant's on-hand and reserved units.
//!
//! Invariants:
//! - `available = on_hand - reserved`, and neither `on_hand`, `reserved` nor `available`
//!   goes below zero: every change is one conditional UPDATE ([`store::change`]) inside the
//!   caller's transaction, so concurrent orders and adjustments never lose an update or
//!   oversell (the single writer serializes them).
//! - Orders reserve units when created, release them when cancelled, and take them off
//!   hand when fulfilled; adjustments change on-hand and are logged.
//! - A variant is low on stock when `available <= low_stock_threshold`. Crossing into low
//!   fires `inventory.low_stock`, crossing out fires `inventory.back_in_stock`, once per
//!   crossing, in the transaction of the change that crossed.
//! - An adjustment is [`writes::adjust_stock`], which the handler and the assistant call
//!   alike: one path for validation, events and audit.

pub mod handlers;
pub mod model;
pub mod store;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_inventory))
        .routes(routes!(handlers::adjust_stock))
}
