//! Analytics (issue 20 "Analytics"; spec 4.10, `marketing.read` per spec 5 rule 10): a
//! store's orders, revenue, refunds, average order and new customers over store-local days,
//! and its products ranked by revenue.
//!
//! Invariants:
//! - Reports read maintained counters, never the orders: `analytics_buckets` (per UTC
//!   quarter hour) and `analytics_product_buckets` (per quarter hour and per UTC day) are
//!   written by the one write of each thing they count, in its transaction:
//!   `orders::store::insert_payment` (an order counts once paid, in the bucket of its
//!   creation), `orders::store::confirm_refund` (a succeeded refund, at its own creation),
//!   `customers::store::insert` and `delete`. Migration V32 backfilled what existed before.
//! - Every time zone's offset is a multiple of 15 minutes, so a store-local day is a whole
//!   run of quarter hours: days are cut in the store's zone when read, and changing the
//!   zone re-cuts them without rewriting anything.
//! - A range is `from..=to`, store-local dates, at most 366 days (422 otherwise); every
//!   query is scoped by store.

pub mod handlers;
pub mod model;
pub mod range;
pub mod store;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::get_summary))
        .routes(routes!(handlers::list_top_products))
}
