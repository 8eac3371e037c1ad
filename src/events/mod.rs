//! The event outbox (spec 6.1): the typed list of events the service emits, and the row and
//! envelope that record one. Publishing (record, then enqueue the deliveries, in the
//! transaction of the change) is the webhooks area's, which calls this.
//!
//! Besides webhooks, an area may react to store events in the same transaction (workflows
//! start runs): it registers a [`Listener`] once at start ([`set_listeners`]), so this module
//! names no area and a reaction commits with its event or not at all.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::params;
use serde::Serialize;

use crate::error::AppError;
use crate::ids::{EventId, StoreId};
use crate::time;

macro_rules! events {
    ($($variant:ident = $name:literal, $desc:literal;)*) => {
        /// An event the service emits, such as `orders.created`: a misspelt name does not
        /// compile. The name is what is stored and sent.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Event { $($variant),* }

        impl Event {
            /// Every event, in the order of the catalog.
            pub const ALL: &'static [Event] = &[$(Event::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(Event::$variant => $name),* }
            }

            /// What fires it (the webhook catalog's description).
            pub fn description(self) -> &'static str {
                match self { $(Event::$variant => $desc),* }
            }
        }
    };
}

// One line per event something emits; the webhook catalog is generated from this table, so
// add the line in the change that starts emitting the event.
events! {
    OrdersCreated = "orders.created", "A new order is committed (payment intent issued).";
    OrdersPaid = "orders.paid", "The payment provider confirmed an order's payment.";
    OrdersFulfilled = "orders.fulfilled", "An order was fulfilled.";
    OrdersShipped = "orders.shipped", "An order was shipped.";
    OrdersDelivered = "orders.delivered", "An order was delivered.";
    OrdersCancelled = "orders.cancelled", "An order was cancelled.";
    OrdersRefunded = "orders.refunded", "A full refund of an order cleared the provider.";
    OrdersUpdated = "orders.updated", "Any other change to an order.";
    ProductsCreated = "products.created", "A product was created.";
    ProductsUpdated = "products.updated", "A product changed, including its media.";
    ProductsDeleted = "products.deleted", "A product was deleted.";
    PagesCreated = "pages.created", "A storefront page was created; data is the page.";
    PagesUpdated = "pages.updated", "A storefront page changed (content, status, or a restored version); data is the page.";
    PagesDeleted = "pages.deleted", "A storefront page was deleted; data {id}.";
    InventoryLowStock = "inventory.low_stock", "A stock level fell to or below its low-stock threshold.";
    InventoryBackInStock = "inventory.back_in_stock", "A stock level rose back above its low-stock threshold.";
    CustomersCreated = "customers.created", "A customer record was created.";
    CustomersUpdated = "customers.updated", "A customer record changed.";
    CustomersDeleted = "customers.deleted", "A customer record was deleted.";
    CartsAbandoned = "carts.abandoned", "A storefront cart with a contact and items went untouched for --cart-abandon-after-minutes; data {cart, customer, recovery_url}. Once per cart.";
    CartsRecovered = "carts.recovered", "An abandoned cart was checked out; data {cart, order_id}. Once per cart.";
    BrandSystemUpdated = "brand_system.updated", "A new version of the store's brand system was saved (a save, a restore or an approved generation).";
    UserCreated = "user.created", "An account was registered (platform webhook only; no store).";
    SubscriptionUpdated = "subscription.updated", "An organization's subscription changed: its state, plan, cycle or pending cancellation (platform webhook only).";
    InvoicePaid = "invoice.paid", "An organization paid an invoice, by Pix or marked paid by the operator (platform webhook only).";
    WorkflowStep = "workflow.step", "A published workflow reached one of its webhook steps (the workflow runner emits it).";
    WebhookTest = "webhook.test", "Sent by POST .../webhooks/{id}/test to that webhook only.";
}

impl Event {
    /// The event of a stored or requested name; None for a name nothing emits.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|e| e.as_str() == name)
    }

    /// Belongs to no store: only the operator's platform webhook receives it.
    pub fn is_platform(self) -> bool {
        matches!(
            self,
            Self::UserCreated | Self::SubscriptionUpdated | Self::InvoicePaid
        )
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The JSON body every delivery of an event carries, fields in the spec's order, around the
/// already-serialized `data`. Recording and the delivery's rebuild of events stored before
/// bodies were both use it, so the two give the same bytes.
pub fn envelope(name: &str, store_id: Option<StoreId>, timestamp: i64, data_json: &str) -> String {
    format!(
        r#"{{"event":{},"store_id":{},"timestamp":{timestamp},"data":{data_json}}}"#,
        serde_json::Value::from(name),
        store_id.map_or_else(|| "null".to_owned(), |s| format!("\"{s}\"")),
    )
}

/// A store event just recorded, as a [`Listener`] sees it.
pub struct Recorded<'a> {
    pub id: EventId,
    pub store_id: StoreId,
    pub event: Event,
    /// The event's `data`, serialized.
    pub data_json: &'a str,
    pub at: DateTime<Utc>,
}

/// Runs in the transaction that records a store event; an error rolls the change back.
pub type Listener = fn(&Tx<'_>, &Recorded<'_>) -> Result<(), AppError>;

static LISTENERS: std::sync::OnceLock<&'static [Listener]> = std::sync::OnceLock::new();

/// Sets what reacts to store events. The application sets the same list each time it starts
/// (a test process starts many), so only the first call counts.
pub fn set_listeners(listeners: &'static [Listener]) {
    let _ = LISTENERS.set(listeners);
}

/// Records `event` with its `data` payload in the outbox, in the caller's transaction, and
/// runs the listeners for a store event: the webhooks area calls this when it publishes an
/// event, then enqueues the deliveries in the same transaction.
pub fn record(
    tx: &Tx<'_>,
    store_id: Option<StoreId>,
    event: Event,
    data: &impl Serialize,
    now: DateTime<Utc>,
) -> Result<EventId, AppError> {
    let id = EventId::new();
    let payload = serde_json::to_string(data).map_err(AppError::internal)?;
    let body = envelope(event.as_str(), store_id, now.timestamp(), &payload);
    tx.prepare_cached(
        "INSERT INTO events (id, store_id, name, payload, created_at, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        id,
        store_id,
        event.as_str(),
        payload,
        time::format(now),
        body
    ])?;
    if let (Some(store_id), Some(listeners)) = (store_id, LISTENERS.get()) {
        let recorded = Recorded {
            id,
            store_id,
            event,
            data_json: &payload,
            at: now,
        };
        for listen in *listeners {
            listen(tx, &recorded)?;
        }
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::Event;

    #[test]
    fn names_are_unique_and_parse_back() {
        for (i, e) in Event::ALL.iter().enumerate() {
            assert_eq!(Event::from_name(e.as_str()), Some(*e));
            assert!(!Event::ALL[..i].iter().any(|o| o.as_str() == e.as_str()));
        }
        assert_eq!(Event::from_name("carts.nonexistent"), None);
    }
}
