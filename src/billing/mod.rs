//! Billing (issue 17; spec 2.12, 3 "Subscription", 4.4, 7, 8): the plan catalog, the
//! organizations' subscriptions and their invoices, paid by Pix, and the plan's limits.
//!
//! Invariants:
//! - Prices are BRL cents; every plan has every module and differs only in its limits.
//! - The catalog is fixed while the server runs: the defaults, or the operator's
//!   `--plans-file`, checked at start.
//! - Every organization has one subscription, started (trialing, 14 days) in the same
//!   transaction that creates it.
//! - A subscription moves only in `lifecycle` (the daily job, payments, the owner's
//!   changes), each move saved with its audit entry and `subscription.updated` event.
//! - An invoice is paid at most once: a payment of a paid invoice changes nothing.
//! - Store API tokens never reach billing (403, spec 5 rule 2).
//! - A limit is checked in the transaction that adds what it counts (`limits`); an order
//!   the storefront takes is never refused for one.

pub mod invoices;
pub mod lifecycle;
pub mod limits;
pub mod payments;
pub mod pix;
pub mod plans;
pub mod subscriptions;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::config::Config;
use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(plans::list_plans))
        .routes(routes!(
            subscriptions::get_subscription,
            subscriptions::update_subscription
        ))
        .routes(routes!(subscriptions::cancel_subscription))
        .routes(routes!(subscriptions::resume_subscription))
        .routes(routes!(subscriptions::pay_subscription))
        .routes(routes!(invoices::list_invoices))
        .routes(routes!(invoices::invoice_qr))
        .routes(routes!(payments::pix_webhook))
}

/// How invoices show their Pix data under this configuration.
pub fn pix_view<'a>(cfg: &'a Config, origin: &'a str) -> invoices::PixView<'a> {
    invoices::PixView {
        merchant: cfg.billing.pix.as_ref(),
        origin,
        grace_days: cfg.billing.grace_days,
    }
}
