//! Webhook management handlers (spec 4.5; retry, test and recover are issue 5's), one file per
//! sub-resource: the webhooks themselves (`endpoints`), their subscriptions (`subscriptions`,
//! with the root `/webhook-events` forms), their deliveries (`deliveries`: list, retry, test,
//! recover) and the event catalog (`catalog`). Here: what several of them share.

pub mod catalog;
pub mod deliveries;
pub mod endpoints;
pub mod subscriptions;

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::model::WebhookOut;
use super::store::{self, WebhookPatch, WebhookRow};
use crate::audit::{self, Actor};
use crate::error::AppError;
use crate::events::Event;
use crate::http::auth::StoreScope;
use crate::http::permissions::Permission;
use crate::ids::{StoreId, WebhookId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// Event names a store webhook may subscribe to: the catalog's, but not platform events.
fn check_events(events: &[String]) -> Result<Vec<String>, AppError> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        let Some(event) = Event::from_name(e) else {
            return Err(AppError::field(
                "events",
                format!("{e} is not an event name (see GET /v1/webhook-events/catalog)"),
            ));
        };
        if event.is_platform() {
            return Err(AppError::field(
                "events",
                format!("{e} belongs to no store; the operator's platform webhook receives it"),
            ));
        }
        if !out.contains(e) {
            out.push(e.clone());
        }
    }
    Ok(out)
}

/// The response form of a webhook; the secret only for those who may change it.
fn out(st: &AppState, w: WebhookRow, reveal: bool) -> WebhookOut {
    let secret = reveal
        .then(|| {
            st.secret_box
                .open_sealed(&w.sealed_secret, &w.id.to_string())
        })
        .flatten();
    WebhookOut {
        id: w.id,
        store_id: w.store_id,
        url: w.url,
        secret,
        is_active: w.is_active,
        events: w.events,
        created_at: w.created_at,
        updated_at: w.updated_at,
    }
}

fn not_found() -> AppError {
    AppError::not_found("webhook")
}

/// The webhook, in the caller's store, once the caller is known to hold `needs` there.
async fn find(
    st: &AppState,
    scope: &StoreScope,
    needs: Permission,
    id: WebhookId,
) -> Result<WebhookRow, AppError> {
    scope.require(needs)?;
    let store = scope.store_id;
    st.db
        .read(move |c| store::get(c, store, id))
        .await?
        .ok_or_else(not_found)
}

/// One write to a webhook of the caller's store: every handler that changes a webhook saves
/// it, records its audit entry and reads it back the same way, through this.
struct Edit {
    store: StoreId,
    id: WebhookId,
    actor: Actor,
    now: DateTime<Utc>,
}

impl Edit {
    fn new(st: &AppState, scope: &StoreScope, id: WebhookId) -> Self {
        Self {
            store: scope.store_id,
            id,
            actor: Actor::of(scope),
            now: st.clock.now(),
        }
    }

    /// Applies `patch` (an empty one only touches `updated_at`); 404 when the webhook is gone,
    /// since it may have been deleted after the handler found it.
    fn save(&self, tx: &Tx<'_>, patch: &WebhookPatch) -> Result<(), AppError> {
        if store::update(tx, self.store, self.id, patch, self.now)? {
            Ok(())
        } else {
            Err(not_found())
        }
    }

    /// Records `action` (`webhook.created`...) on the webhook in the audit trail.
    fn audit(&self, tx: &Tx<'_>, action: &str) -> Result<(), AppError> {
        audit::record(
            tx,
            &self.actor,
            action,
            "webhook",
            &self.id.to_string(),
            self.now,
        )
    }

    /// Records `action`, then reads the webhook back as the write left it.
    fn finish(&self, tx: &Tx<'_>, action: &str) -> Result<WebhookRow, AppError> {
        self.audit(tx, action)?;
        store::get(tx, self.store, self.id)?.ok_or_else(not_found)
    }
}
