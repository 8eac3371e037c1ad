//! One claimed delivery, start to end: where it goes (or why it cannot), the request, then
//! the attempt recorded and the job settled in one transaction, with the retry scheduled.

use std::time::Duration;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::Connection;

use super::{Dispatcher, client};
use crate::error::AppError;
use crate::ids::{EventId, WebhookId};
use crate::jobs::worker::{self, Claimed};
use crate::state::AppState;
use crate::threads::run_blocking;
use crate::time;
use crate::webhooks::WebhookDelivery;
use crate::webhooks::model::Outcome;
use crate::webhooks::store::{self, StoredEvent};

/// Where an attempt goes, or why it cannot.
enum Target {
    Send {
        url: String,
        secret: String,
    },
    /// Recorded as a failed attempt that is not retried.
    Refuse(String),
    /// Nothing to do (the webhook was deleted; no platform webhook is configured).
    Nothing,
}

fn load(
    c: &Connection,
    st: &AppState,
    event_id: EventId,
    webhook_id: Option<WebhookId>,
) -> Result<(Option<StoredEvent>, Target), AppError> {
    let event = store::stored_event(c, event_id)?;
    let target = match webhook_id {
        None => match &st.cfg.platform_webhook {
            Some(p) => Target::Send {
                url: p.url.clone(),
                secret: p.secret.clone(),
            },
            None => Target::Nothing,
        },
        Some(id) => match store::destination(c, id)? {
            None => Target::Nothing,
            Some(d) if !d.is_active => Target::Refuse("the webhook is not active".into()),
            Some(d) => match st.secret_box.open_sealed(&d.sealed_secret, &id.to_string()) {
                Some(secret) => Target::Send { url: d.url, secret },
                None => Target::Refuse(
                    "the signing secret cannot be unsealed with this data directory's \
                     secrets.key; set a new secret with PUT"
                        .into(),
                ),
            },
        },
    };
    Ok((event, target))
}

/// Gives the slot back however the delivery ends, a panic included.
struct Slot {
    d: Dispatcher,
    lane: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.d.finished(&self.lane);
    }
}

/// Runs one claimed delivery: sends it, then records the attempt and settles the job.
pub async fn deliver(st: AppState, c: Claimed) {
    let _slot = Slot {
        d: st.webhooks.clone(),
        lane: c.lane.clone().unwrap_or_default(),
    };
    if let Err(e) = attempt(&st, c).await {
        tracing::error!(error = ?e, "webhook delivery could not be recorded");
    }
}

async fn attempt(st: &AppState, c: Claimed) -> Result<(), AppError> {
    let Some(WebhookDelivery {
        event_id,
        webhook_id,
        ..
    }) = c.read::<WebhookDelivery>()
    else {
        let now = st.clock.now();
        st.db
            .write_to_finish(move |tx| worker::fail_at(tx, &c, "not a webhook delivery", now, None))
            .await?;
        return Ok(());
    };
    let s2 = st.clone();
    let (event, target) = st
        .db
        .read(move |conn| load(conn, &s2, event_id, webhook_id))
        .await?;
    let sent_at = st.clock.now();
    let refused = matches!(target, Target::Refuse(_));
    let outcome = match (&event, target) {
        (None, _) | (_, Target::Nothing) => {
            st.db
                .write_to_finish(move |tx| worker::complete(tx, &c, sent_at).map(|_| ()))
                .await?;
            return Ok(());
        }
        (Some(_), Target::Refuse(why)) => Outcome {
            error: Some(why),
            ..Outcome::default()
        },
        (Some(ev), Target::Send { url, secret }) => {
            let agent = st.webhooks.agent_for(webhook_id);
            let (name, body) = (ev.name.clone(), ev.body.clone());
            let timeout = st.cfg.webhook_timeout;
            run_blocking(move || {
                client::send(
                    &agent,
                    &url,
                    &secret,
                    event_id,
                    &name,
                    &body,
                    sent_at.timestamp(),
                    timeout,
                )
            })
            .await
        }
    };
    let now = st.clock.now();
    let retry_at = (!outcome.succeeded() && !refused && c.attempts < c.max_attempts)
        .then(|| now + backoff(st.cfg.webhook_retry_base, c.attempts));
    let label = match (outcome.succeeded(), refused) {
        (true, _) => "delivered",
        (false, true) => "refused",
        (false, false) => "failed",
    };
    st.metrics
        .counter("webhook_attempts_total", &[("outcome", label)])
        .increment(1);
    if outcome.succeeded() {
        tracing::debug!(%event_id, status = outcome.status, "webhook delivered");
    } else {
        tracing::info!(%event_id, status = outcome.status, error = outcome.error.as_deref(),
            retry_at = retry_at.map(time::format), "webhook attempt failed");
    }
    st.db
        .write_to_finish(move |tx| settle(tx, &c, event_id, webhook_id, &outcome, retry_at, now))
        .await
}

/// Delay before the attempt after `failed` attempts: base, 2×, 4×, 8× (the queue's rule).
fn backoff(base: Duration, failed: u32) -> chrono::Duration {
    chrono::Duration::from_std(crate::jobs::backoff_from(base, failed)).unwrap_or_default()
}

fn settle(
    tx: &Tx<'_>,
    c: &Claimed,
    event_id: EventId,
    webhook_id: Option<WebhookId>,
    o: &Outcome,
    retry_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let settled = if o.succeeded() {
        worker::complete(tx, c, now)?
    } else {
        let error = o
            .error
            .clone()
            .unwrap_or_else(|| format!("answered {}", o.status.unwrap_or_default()));
        worker::fail_at(tx, c, &error, now, retry_at)?
    };
    if !settled {
        return Ok(()); // another dispatcher took the job over; its attempt is the one recorded
    }
    let status = match (o.succeeded(), retry_at) {
        (true, _) => "succeeded",
        (false, Some(_)) => "pending",
        (false, None) => "failed",
    };
    store::record_attempt(tx, webhook_id, event_id, status, o, now, retry_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_base_with_a_little_jitter() {
        let base = Duration::from_secs(10);
        for (failed, secs) in [(1, 10), (2, 20), (3, 40), (4, 80)] {
            let d = backoff(base, failed).num_milliseconds();
            assert!(d >= secs * 1000 && d <= secs * 1100, "{failed}: {d}");
        }
    }
}
