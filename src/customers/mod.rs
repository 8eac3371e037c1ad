//! Customers (issue 6 "Customers"; spec 4.10).
//!
//! Invariants:
//! - An e-mail is unique per store, case-insensitively (409 `conflict`); a customer may have
//!   none (a sale over the messaging app).
//! - `orders_count` and `total_spent_cents` are the orders area's to keep; clients cannot set
//!   them.
//! - Every write records `customers.created|updated|deleted` and an audit entry in its
//!   transaction; every query is scoped by store.

pub mod handlers;
pub mod model;
pub mod store;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_customers, handlers::create_customer))
        .routes(routes!(
            handlers::get_customer,
            handlers::update_customer,
            handlers::delete_customer
        ))
}
