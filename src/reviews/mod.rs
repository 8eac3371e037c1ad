//! Reviews (issue 6 "Reviews"; spec 2.9, 4.6).
//!
//! Invariants:
//! - The list is newest first and keyset-paged; `status=pending&limit=1&include_total=true`
//!   (the badge) reads a per-status counter, not a count over the reviews.
//! - A product's `rating_average` and `rating_count` cover its approved reviews only; the
//!   counters and ratings are kept by triggers (migration V12) in the transaction of every
//!   write, so no path can forget them.
//! - `is_verified_purchase` is derived, never sent: the review names an order of the store
//!   that contains the product and was paid (not pending, cancelled or refunded).
//! - Every query is scoped by store; every write records its audit entry.
//! - A review may carry the store's public `reply` (at most 2,000 characters) and its
//!   `replied_at`; moderating and replying are [`writes::update_review`], which the handler
//!   and the assistant call alike.

pub mod handlers;
pub mod model;
pub mod store;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_reviews, handlers::import_review))
        .routes(routes!(handlers::get_review, handlers::update_review))
}
