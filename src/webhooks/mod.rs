//! Webhooks (spec 2.7, 3 webhook delivery rows, 4.5, 6.1; issue 5): publishing events to
//! subscribed webhooks (`publish`), their management routes (`handlers/`, one file per
//! sub-resource), the delivery dispatcher (`delivery/`), the catalog of events a webhook may
//! subscribe to (`event_types`, generated from [`crate::events::Event`]), and all their SQL
//! (`store`).
//!
//! Invariants:
//! - Domain code publishes an event with [`publish`] (or [`publish_change`], which also writes
//!   the audit entry) in the transaction of the write it describes: it is recorded in the
//!   outbox (`crate::events`) and the same transaction enqueues one delivery job per active
//!   webhook of that store subscribed to it (platform events: one for the operator's platform
//!   webhook). The envelope is built once and stored, so every attempt sends identical bytes.
//! - Signing secrets are sealed with the data directory's `secrets.key` (they must be read
//!   back to sign) and shown only to callers who may change them (`webhooks.edit`).
//! - Every route's query is scoped by store; another store's webhook is 404 on every route.
//! - A subscription names an event of the catalog, which lists only what the code emits;
//!   platform events (`user.created`) go to the operator's platform webhook, never a store's.
//! - `events` records, this area publishes: events names nothing of webhooks, so the outbox
//!   stays below every area that emits.
//! - Deliveries run on their own dispatcher (not the generic workers): bounded requests in
//!   flight in all and per webhook, ureq off the async runtime, no redirects, 30 s timeout.
//!   Five attempts, about 10/20/40/80 s apart; every attempt is recorded.
//! - The SSRF guard refuses non-public destinations when a URL is saved and again when a
//!   delivery resolves it, unless `--allow-private-webhook-targets`.

pub mod delivery;
pub mod event_types;
pub mod handlers;
pub mod model;
mod publish;
pub mod store;
pub mod target;

pub use publish::{Change, publish, publish_change};

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;
use handlers::{catalog, deliveries, endpoints, subscriptions};

/// Attempts of an automatic delivery (spec 6.1).
pub const MAX_ATTEMPTS: u32 = 5;
/// The dispatcher lane of the operator's platform webhook.
pub const PLATFORM_LANE: &str = "platform";
/// The job queue deliveries wait in; the dispatcher, not the generic workers, takes them.
pub const QUEUE: &str = "webhooks";

/// Sends one event to one webhook (None: the operator's platform webhook). `manual` re-sends
/// (retry, recover) get one attempt; the others get the spec's five.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WebhookDelivery {
    pub event_id: crate::ids::EventId,
    pub webhook_id: Option<crate::ids::WebhookId>,
    #[serde(default)]
    pub manual: bool,
}

impl crate::jobs::JobKind for WebhookDelivery {
    const KIND: &'static str = "webhook_delivery";

    fn max_attempts(&self) -> u32 {
        if self.manual { 1 } else { MAX_ATTEMPTS }
    }

    fn queue(&self) -> &'static str {
        QUEUE
    }

    /// The receiver: the dispatcher caps requests in flight per lane.
    fn lane(&self) -> Option<String> {
        Some(
            self.webhook_id
                .map_or_else(|| PLATFORM_LANE.to_owned(), |w| w.to_string()),
        )
    }
}

pub fn routes() -> OpenApiRouter<AppState> {
    let router = OpenApiRouter::new();
    router
        .routes(routes!(endpoints::list_webhooks, endpoints::create_webhook))
        .routes(routes!(
            endpoints::get_webhook,
            endpoints::update_webhook,
            endpoints::delete_webhook
        ))
        .routes(routes!(deliveries::list_deliveries))
        .routes(routes!(deliveries::retry_delivery))
        .routes(routes!(deliveries::send_test))
        .routes(routes!(deliveries::recover))
        .routes(routes!(
            subscriptions::list_events,
            subscriptions::subscribe
        ))
        .routes(routes!(subscriptions::unsubscribe))
        .routes(routes!(
            subscriptions::root_list_events,
            subscriptions::root_subscribe,
            subscriptions::root_unsubscribe
        ))
        .routes(routes!(catalog::catalog))
        .routes(routes!(catalog::catalog_alias))
}
