//! Webhook DTOs (spec 2.7; the delivery fields are issue 5's), and the outcome of one delivery
//! attempt that the dispatcher records.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::events::Event;
use crate::ids::{AttemptId, EventId, StoreId, WebhookId};

/// The schema of an event name a store webhook may subscribe to: the catalog's names
/// ([`Event::ALL`]) less the platform's, the set `check_events` accepts, as an enum.
pub struct StoreEventName;

impl utoipa::PartialSchema for StoreEventName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let names = Event::ALL
            .iter()
            .filter(|e| !e.is_platform())
            .map(|e| e.as_str());
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(names))
            .into()
    }
}

impl ToSchema for StoreEventName {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("StoreEventName")
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookIn {
    /// Absolute http or https URL that receives the POSTs.
    // The pattern is the plain part of what the server takes (`target::parse_url`: any
    // absolute http(s) URL with a host), so generated URLs are ones it accepts.
    #[schema(
        max_length = 2048,
        pattern = r"^https?://[a-z0-9]+(\.[a-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    pub url: String,
    /// Signing secret, 16 to 255 printable characters; generated (`whsec_` + base64 of 32
    /// random bytes) when omitted.
    #[schema(min_length = 16, max_length = 255, pattern = r"^[!-~]+$")]
    pub secret: Option<String>,
    /// Default true.
    pub is_active: Option<bool>,
    /// Event names to subscribe to (see the catalog); default none.
    #[schema(value_type = Option<Vec<StoreEventName>>)]
    pub events: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookUpdate {
    #[schema(
        max_length = 2048,
        pattern = r"^https?://[a-z0-9]+(\.[a-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    pub url: Option<String>,
    #[schema(min_length = 16, max_length = 255, pattern = r"^[!-~]+$")]
    pub secret: Option<String>,
    pub is_active: Option<bool>,
}

/// A webhook. `secret` is shown to callers holding `webhooks.edit` (and always in the create
/// response).
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookOut {
    pub id: WebhookId,
    pub store_id: StoreId,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub is_active: bool,
    /// Subscribed event names, sorted.
    pub events: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WebhookFilter {
    /// Only webhooks subscribed to this event.
    pub event: Option<String>,
}

/// One delivery attempt. `status`: `succeeded` (a 2xx within the timeout), `pending` (this
/// attempt failed and another is scheduled at `next_attempt_at`) or `failed` (no attempt
/// follows automatically).
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptOut {
    pub id: AttemptId,
    pub webhook_id: WebhookId,
    pub event_id: EventId,
    pub event: String,
    pub attempt: u32,
    pub status: String,
    pub response_status: Option<u16>,
    /// The first 4 KiB of the response body.
    pub response_body: Option<String>,
    pub duration_ms: u64,
    pub error: Option<String>,
    pub created_at: String,
    pub next_attempt_at: Option<String>,
}

/// One subscription of a webhook. Named apart from billing's `SubscriptionOut` in the
/// document: two schemas of one name would overwrite each other.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = WebhookSubscriptionOut)]
pub struct SubscriptionOut {
    pub webhook_id: WebhookId,
    pub event: String,
    pub description: Option<&'static str>,
    pub created_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsIn {
    #[schema(value_type = Vec<StoreEventName>, min_items = 1)]
    pub events: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RootEventsIn {
    pub webhook_id: WebhookId,
    #[schema(value_type = Vec<StoreEventName>, min_items = 1)]
    pub events: Vec<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RootWebhookQuery {
    pub webhook_id: WebhookId,
}

#[derive(Debug, Deserialize, IntoParams, ToSchema)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RootUnsubscribe {
    pub webhook_id: WebhookId,
    #[param(value_type = StoreEventName)]
    #[schema(value_type = StoreEventName)]
    pub event: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogEntry {
    pub event: &'static str,
    pub description: &'static str,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoverIn {
    /// Re-send every failed delivery whose last attempt is at or after this time (RFC 3339,
    /// at most 14 days ago).
    #[schema(format = DateTime)]
    pub since: String,
}

/// What a re-send queued.
#[derive(Debug, Serialize, ToSchema)]
pub struct Queued {
    /// Deliveries queued.
    pub enqueued: u64,
    /// The event sent (test) or re-sent (retry); absent for recover.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<EventId>,
}

/// What one delivery attempt came to (the request, or why none was made); recorded as an
/// attempt row.
#[derive(Debug, Default)]
pub struct Outcome {
    pub status: Option<u16>,
    pub body: Option<String>,
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
    }
}
