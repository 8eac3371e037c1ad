//! Billing (issue 17; spec 2.12, 3 "Subscription", 4.4, 7, 8): the plan catalog and the
//! organizations' subscriptions so far, the plan's limits (`limits`), and the Pix payment
//! code (`pix`).
//!
//! Invariants:
//! - Prices are BRL cents; every plan has every module and differs only in its limits.
//! - The catalog is fixed while the server runs: the defaults, or the operator's
//!   `--plans-file`, checked at start.
//! - Every organization has one subscription, started (trialing, 14 days) in the same
//!   transaction that creates it.
//! - A limit is checked in the transaction that adds what it counts (`limits`); an order
//!   the storefront takes is never refused for one.

pub mod limits;
pub mod pix;
pub mod plans;
pub mod subscriptions;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(plans::list_plans))
        .routes(routes!(subscriptions::get_subscription))
}
