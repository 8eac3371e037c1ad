//! Orders, their lifecycle, payments and refunds (issue 6 "Orders", "Payments and
//! refunds"; spec 3 order row, 4.10, 6.1).
//!
//! Invariants:
//! - Creating an order reserves its stock in the same transaction (409
//!   `insufficient_stock` writes nothing); cancelling releases it; fulfilment takes it off
//!   hand. Numbers are a per-store sequence from 1001.
//! - The lifecycle is [`model::OrderStatus::allowed_next`]: `PATCH` outside it is 409
//!   `invalid_status_transition`; only refunds move an order to `partially_refunded` or
//!   `refunded`. Every order shows `allowed_status_transitions`.
//! - Marking an order paid records an approved payment (provider `manual`, or `http` for API
//!   orders when `--payments-api-base` is set). A refund never exceeds what is left of it,
//!   pending refunds counted; it settles exactly once, an uncertain outcome stays pending
//!   until the provider answers for sure, and only a refusal releases it (see [`refunds`]).
//! - Every change rewrites the order's stored `rendered` JSON (what reads serve), records its event
//!   (`orders.*`) and audit entry, all in one transaction.
//! - A new order is held to the plan's monthly orders in its transaction (402), except a
//!   storefront's, which is never refused: counted, and the owners told
//!   ([`writes::admit`]).
//! - Creating and changing an order and refunding it live in [`writes`], which the handlers and the
//!   assistant call alike: one path for validation, events and audit.

pub mod handlers;
pub mod model;
pub mod payments;
pub mod refunds;
pub mod store;
pub mod summary;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    let router = OpenApiRouter::new();
    router
        .routes(routes!(handlers::list_orders, handlers::create_order))
        .routes(routes!(handlers::create_manual_order))
        .routes(routes!(handlers::get_order, handlers::update_order))
        .routes(routes!(handlers::refund_order))
}
