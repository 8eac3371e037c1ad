//! Notifications (issue 20 "Notifications"; spec 4.10 lists, 7 `notification_send_failed`):
//! a member's in-app feed per store, copies by e-mail and messaging app, preferences.
//!
//! Invariants:
//! - Produced in the transaction of what they report: `orders.created` and
//!   `inventory.low_stock` through the events listener ([`produce::on_event`]); a
//!   conversation's first inbound message, a review created pending and a subscription
//!   falling past due through [`produce::notify`], called by those areas. Nothing is
//!   notified for a change that rolls back.
//! - The fan-out reaches the store's active members (and its organization's owners) whose
//!   role holds the kind's read permission (`Kind::permission`, the one role table), at most
//!   `store::MAX_RECIPIENTS`, each as their preferences say; nobody otherwise.
//! - A member sees only their own notifications, in the store of the path; a store API
//!   token has no member and is refused (403). Marking read touches only the caller's.
//! - Each out-of-app copy is a delivery record and a job enqueued together. A failed
//!   attempt writes `notification_send_failed` and the provider's answer on the record and
//!   retries with the queue's backoff; the last attempt (or a refusal) leaves it `failed`.
//! - Notifications older than [`KEEP`] are purged by the periodic cleanup.

pub mod handlers;
pub mod model;
pub mod produce;
pub mod send;
pub mod store;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// How long a notification is kept.
pub const KEEP: chrono::Duration = chrono::Duration::days(90);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_notifications))
        .routes(routes!(handlers::read_notifications))
        .routes(routes!(
            handlers::get_preferences,
            handlers::update_preferences
        ))
}
