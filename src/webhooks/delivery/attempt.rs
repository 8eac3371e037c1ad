//! One claimed delivery, start to end: what it sends and where (read in the round's write
//! that claimed it), why it cannot be sent, the request, and the attempt as the next
//! round's write records it: the attempt row and the job settled together, with the retry
//! scheduled.

use std::sync::Arc;
use std::time::Duration;

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::signing::Signer;
use super::{Dispatcher, client};
use crate::error::AppError;
use crate::ids::{EventId, WebhookId};
use crate::jobs::worker::{self, Claimed};
use crate::state::AppState;
use crate::threads::run_blocking;
use crate::time;
use crate::webhooks::WebhookDelivery;
use crate::webhooks::model::Outcome;
use crate::webhooks::store::{self, Destination, StoredEvent};

/// A claimed delivery with what it sends, as its round read them.
pub struct Work {
    pub claim: Claimed,
    /// None: the job is not a webhook delivery.
    job: Option<WebhookDelivery>,
    /// None once the event is purged.
    event: Option<StoredEvent>,
    /// The webhook (None: deleted); always None for the platform webhook.
    destination: Option<Arc<Destination>>,
}

/// Reads, in the round's transaction, what each claimed delivery sends: its event, and its
/// webhook (once per webhook however many of its deliveries the round claimed).
pub fn load(tx: &Tx<'_>, claimed: Vec<Claimed>) -> Result<Vec<Work>, AppError> {
    let mut webhooks: Vec<(WebhookId, Option<Arc<Destination>>)> = Vec::new();
    let mut work = Vec::with_capacity(claimed.len());
    for claim in claimed {
        let job = claim.read::<WebhookDelivery>();
        let (mut event, mut destination) = (None, None);
        if let Some(j) = job {
            event = store::stored_event(tx, j.event_id)?;
            if let Some(id) = j.webhook_id {
                destination = match webhooks.iter().find(|(w, _)| *w == id) {
                    Some((_, d)) => d.clone(),
                    None => {
                        let d = store::destination(tx, id)?.map(Arc::new);
                        webhooks.push((id, d.clone()));
                        d
                    }
                };
            }
        }
        work.push(Work {
            claim,
            job,
            event,
            destination,
        });
    }
    Ok(work)
}

/// Where an attempt goes, or why it cannot.
enum Target {
    Send {
        url: String,
        signer: Arc<Signer>,
    },
    /// Recorded as a failed attempt that is not retried.
    Refuse(String),
    /// Nothing to do (the webhook was deleted; no platform webhook is configured).
    Nothing,
}

fn target(st: &AppState, webhook_id: Option<WebhookId>, d: Option<&Destination>) -> Target {
    match webhook_id {
        None => match (&st.cfg.platform_webhook, &st.webhooks.platform_signer) {
            (Some(p), Some(signer)) => Target::Send {
                url: p.url.clone(),
                signer: signer.clone(),
            },
            _ => Target::Nothing,
        },
        Some(id) => match d {
            None => Target::Nothing,
            Some(d) if !d.is_active => Target::Refuse("the webhook is not active".into()),
            Some(d) => match st.webhooks.signer(st, id, &d.sealed_secret) {
                Some(signer) => Target::Send {
                    url: d.url.clone(),
                    signer,
                },
                None => Target::Refuse(
                    "the signing secret cannot be unsealed with this data directory's \
                     secrets.key; set a new secret with PUT"
                        .into(),
                ),
            },
        },
    }
}

/// How an attempt ended, for the next round's write to record.
pub struct Ended {
    claim: Claimed,
    at: DateTime<Utc>,
    what: Settle,
}

enum Settle {
    /// Nothing to send (the event or the webhook is gone): the job is done, no attempt.
    Nothing,
    /// Not a webhook delivery: the job is dead.
    Unreadable,
    Attempt {
        event_id: EventId,
        webhook_id: Option<WebhookId>,
        outcome: Outcome,
        retry_at: Option<DateTime<Utc>>,
    },
}

/// `webhook_attempts_total` by outcome.
pub struct Counters {
    delivered: metrics::Counter,
    refused: metrics::Counter,
    failed: metrics::Counter,
}

impl Counters {
    fn new(st: &AppState) -> Self {
        let c = |label| {
            st.metrics
                .counter("webhook_attempts_total", &[("outcome", label)])
        };
        Self {
            delivered: c("delivered"),
            refused: c("refused"),
            failed: c("failed"),
        }
    }
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

/// Runs one claimed delivery: sends it, then hands how it ended to the next round (before
/// the slot is given back, so the round the freed slot wakes records it).
pub async fn deliver(st: AppState, w: Work) {
    let _slot = Slot {
        d: st.webhooks.clone(),
        lane: w.claim.lane.clone().unwrap_or_default(),
    };
    let ended = attempt(&st, w).await;
    st.webhooks.ended(ended);
}

async fn attempt(st: &AppState, w: Work) -> Ended {
    let Work {
        claim,
        job,
        event,
        destination,
    } = w;
    let Some(WebhookDelivery {
        event_id,
        webhook_id,
        ..
    }) = job
    else {
        return Ended {
            claim,
            at: st.clock.now(),
            what: Settle::Unreadable,
        };
    };
    let sent_at = st.clock.now();
    let target = target(st, webhook_id, destination.as_deref());
    let refused = matches!(target, Target::Refuse(_));
    let outcome = match (event, target) {
        (None, _) | (_, Target::Nothing) => {
            return Ended {
                claim,
                at: sent_at,
                what: Settle::Nothing,
            };
        }
        (Some(_), Target::Refuse(why)) => Outcome {
            error: Some(why),
            ..Outcome::default()
        },
        (Some(ev), Target::Send { url, signer }) => {
            let agent = st.webhooks.agent_for(webhook_id);
            let timeout = st.cfg.webhook_timeout;
            run_blocking(move || {
                client::send(
                    &agent,
                    &url,
                    &signer,
                    event_id,
                    &ev.name,
                    &ev.body,
                    sent_at.timestamp(),
                    timeout,
                )
            })
            .await
        }
    };
    let now = st.clock.now();
    let retry_at = (!outcome.succeeded() && !refused && claim.attempts < claim.max_attempts)
        .then(|| now + backoff(st.cfg.webhook_retry_base, claim.attempts));
    let counters = st.webhooks.counters.get_or_init(|| Counters::new(st));
    match (outcome.succeeded(), refused) {
        (true, _) => counters.delivered.increment(1),
        (false, true) => counters.refused.increment(1),
        (false, false) => counters.failed.increment(1),
    }
    if outcome.succeeded() {
        tracing::debug!(%event_id, status = outcome.status, "webhook delivered");
    } else {
        tracing::info!(%event_id, status = outcome.status, error = outcome.error.as_deref(),
            retry_at = retry_at.map(time::format), "webhook attempt failed");
    }
    Ended {
        claim,
        at: now,
        what: Settle::Attempt {
            event_id,
            webhook_id,
            outcome,
            retry_at,
        },
    }
}

/// Delay before the attempt after `failed` attempts: base, 2×, 4×, 8× (the queue's rule).
fn backoff(base: Duration, failed: u32) -> chrono::Duration {
    chrono::Duration::from_std(crate::jobs::backoff_from(base, failed)).unwrap_or_default()
}

/// Records how an attempt ended: the job settled and, for an attempt made, its row.
pub fn settle(tx: &Tx<'_>, e: &Ended) -> Result<(), AppError> {
    let (c, now) = (&e.claim, e.at);
    let Settle::Attempt {
        event_id,
        webhook_id,
        outcome: o,
        retry_at,
    } = &e.what
    else {
        if matches!(e.what, Settle::Unreadable) {
            worker::fail_at(tx, c, "not a webhook delivery", now, None)?;
        } else {
            worker::complete(tx, c, now)?;
        }
        return Ok(());
    };
    let settled = if o.succeeded() {
        worker::complete(tx, c, now)?
    } else {
        let error = o
            .error
            .clone()
            .unwrap_or_else(|| format!("answered {}", o.status.unwrap_or_default()));
        worker::fail_at(tx, c, &error, now, *retry_at)?
    };
    if !settled {
        return Ok(()); // another dispatcher took the job over; its attempt is the one recorded
    }
    let status = match (o.succeeded(), retry_at) {
        (true, _) => "succeeded",
        (false, Some(_)) => "pending",
        (false, None) => "failed",
    };
    store::record_attempt(tx, *webhook_id, *event_id, status, o, now, *retry_at)
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
