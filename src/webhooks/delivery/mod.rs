//! The delivery dispatcher: claims due `webhooks` jobs lane by lane (a lane is one receiving
//! webhook) so that no receiver has more than `webhook_endpoint_concurrency` requests in
//! flight and all of them together no more than `webhook_concurrency`, and runs each as a
//! task (`attempt`): sent with ureq on the blocking pool (`client`, `signing`), then the
//! attempt recorded and the job settled in one transaction. The SQL is in `webhooks::store`.

mod attempt;
mod client;
mod signing;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::model::Outcome;
use super::{QUEUE as WEBHOOK_QUEUE, WebhookDelivery, store};
use crate::config::Config;
use crate::error::AppError;
use crate::ids::WebhookId;
use crate::jobs::worker::{self, Claimed};
use crate::state::AppState;

/// The shared HTTP client and the count of requests in flight, per lane and in all.
#[derive(Clone)]
pub struct Dispatcher {
    agent: ureq::Agent,
    /// For the operator's own platform webhook, which the SSRF guard does not apply to: the
    /// operator chose it, and it is often on their private network.
    platform_agent: ureq::Agent,
    flight: Arc<Mutex<Flight>>,
    /// Signalled when a delivery finishes, so the dispatcher can use the freed slot.
    freed: Arc<Notify>,
}

#[derive(Default)]
struct Flight {
    total: usize,
    lanes: HashMap<String, usize>,
    /// Where the next round starts in the lane list, so every lane gets a turn first.
    turn: usize,
}

impl Dispatcher {
    pub fn new(cfg: &Config) -> Self {
        Self {
            agent: client::agent(cfg, cfg.allow_private_webhook_targets),
            platform_agent: client::agent(cfg, true),
            flight: Arc::new(Mutex::new(Flight::default())),
            freed: Arc::new(Notify::new()),
        }
    }

    /// The agent for a store's webhook, or (None) for the platform webhook.
    fn agent_for(&self, webhook_id: Option<WebhookId>) -> ureq::Agent {
        if webhook_id.is_some() {
            self.agent.clone()
        } else {
            self.platform_agent.clone()
        }
    }

    fn flight(&self) -> std::sync::MutexGuard<'_, Flight> {
        self.flight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn finished(&self, lane: &str) {
        let mut f = self.flight();
        f.total = f.total.saturating_sub(1);
        if let Some(n) = f.lanes.get_mut(lane) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                f.lanes.remove(lane);
            }
        }
        drop(f);
        self.freed.notify_one();
    }
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dispatcher(..)")
    }
}

/// The lease of a delivery job: the request's timeout plus room to record it. A dispatcher
/// that dies mid-request leaves the job to be claimed again after this.
fn lease(cfg: &Config) -> Duration {
    cfg.job_lease
        .max(cfg.webhook_timeout + Duration::from_secs(30))
}

/// Runs until `shutdown`, then waits for the deliveries in flight for the drain period;
/// those still waiting for their receiver then are dropped and put back, due at once and
/// with the attempt not counted, so the next start sends them.
pub async fn run(st: AppState, shutdown: CancellationToken) {
    let d = st.webhooks.clone();
    let wake = st.db.jobs_ready().clone();
    let mut tasks = tokio::task::JoinSet::new();
    // The claim each delivery task holds, until the task ends.
    let mut flying: HashMap<tokio::task::Id, Claimed> = HashMap::new();
    while !shutdown.is_cancelled() {
        let enqueued = wake.notified();
        let freed = d.freed.notified();
        tokio::pin!(enqueued, freed);
        enqueued.as_mut().enable();
        freed.as_mut().enable();
        while let Some(ended) = tasks.try_join_next_with_id() {
            flying.remove(&task_id(&ended));
        }

        let next_due = match claim_round(&st).await {
            Ok((claimed, next_due)) => {
                let any = !claimed.is_empty();
                for c in claimed {
                    let task = tasks.spawn(attempt::deliver(st.clone(), c.clone()));
                    flying.insert(task.id(), c);
                }
                if any {
                    continue; // there may be more due work for the slots left
                }
                next_due
            }
            Err(e) => {
                tracing::error!(error = ?e, "webhook dispatcher could not reach the queue");
                None
            }
        };
        let now = st.clock.now();
        let sleep = next_due
            .and_then(|t| (t - now).to_std().ok())
            .map_or(st.cfg.webhook_poll, |d| d.min(st.cfg.webhook_poll));
        tokio::select! {
            () = &mut enqueued => {}
            () = &mut freed => {}
            () = tokio::time::sleep(sleep) => {}
            () = shutdown.cancelled() => {}
        }
    }
    let finish = async {
        while let Some(ended) = tasks.join_next_with_id().await {
            flying.remove(&task_id(&ended));
        }
    };
    if tokio::time::timeout(st.cfg.shutdown_drain(), finish)
        .await
        .is_ok()
    {
        return;
    }
    // The request itself runs on a blocking thread until its own timeout; its answer is
    // no longer awaited, and the receiver may see the delivery again after the restart.
    tasks.abort_all();
    while let Some(ended) = tasks.join_next_with_id().await {
        if ended.is_ok() {
            flying.remove(&task_id(&ended));
        }
    }
    let left: Vec<Claimed> = flying.into_values().collect();
    let (n, now) = (left.len(), st.clock.now());
    // A delivery that settled before it was dropped is no longer running: left alone.
    let put_back = st
        .db
        .write_to_finish(move |tx| {
            for c in &left {
                worker::release(tx, c, now)?;
            }
            Ok(())
        })
        .await;
    match put_back {
        Ok(()) => tracing::info!(
            deliveries = n,
            "shutting down: deliveries in flight put back for the next start"
        ),
        // Their lease runs out and they are taken again then.
        Err(e) => tracing::warn!(error = ?e, "shutting down: deliveries could not be put back"),
    }
}

fn task_id<T>(ended: &Result<(tokio::task::Id, T), tokio::task::JoinError>) -> tokio::task::Id {
    match ended {
        Ok((id, _)) => *id,
        Err(e) => e.id(),
    }
}

/// Claims what the free slots allow, lane by lane; also says when the next queued job is
/// due, so the dispatcher can sleep until then.
async fn claim_round(st: &AppState) -> Result<(Vec<Claimed>, Option<DateTime<Utc>>), AppError> {
    let d = st.webhooks.clone();
    let (per_lane, all) = (
        st.cfg.webhook_endpoint_concurrency,
        st.cfg.webhook_concurrency,
    );
    let (busy, free, turn) = {
        let f = d.flight();
        (f.lanes.clone(), all.saturating_sub(f.total), f.turn)
    };
    if free == 0 {
        return Ok((Vec::new(), None));
    }
    let (now, lease) = (st.clock.now(), lease(&st.cfg));
    let (claimed, next_due, lanes) = st
        .db
        .write(move |tx| {
            // Attempts whose dispatcher died mid-request (kill -9): recorded as interrupted,
            // then tried again, or failed if that was the last one.
            let (mut claimed, dead) = worker::claim_expired(tx, WEBHOOK_QUEUE, now, lease, free)?;
            let interrupted = Outcome {
                error: Some("interrupted: the server stopped during this attempt".into()),
                ..Outcome::default()
            };
            let again = claimed.iter().map(|c| (c, "pending", Some(now)));
            for (c, status, next) in again.chain(dead.iter().map(|c| (c, "failed", None))) {
                if let Some(WebhookDelivery {
                    event_id,
                    webhook_id,
                    ..
                }) = c.read::<WebhookDelivery>()
                {
                    store::record_attempt(
                        tx,
                        webhook_id,
                        event_id,
                        status,
                        &interrupted,
                        now,
                        next,
                    )?;
                }
            }
            let mut lanes = store::queued_lanes(tx)?;
            let n = lanes.len().max(1);
            lanes.rotate_left(turn % n);
            let mut next_due: Option<DateTime<Utc>> = None;
            let mut taken: HashMap<String, usize> = HashMap::new();
            for c in &claimed {
                *taken.entry(c.lane.clone().unwrap_or_default()).or_default() += 1;
            }
            for (lane, due) in &lanes {
                let room = free.saturating_sub(claimed.len());
                if room == 0 {
                    break;
                }
                if *due > now {
                    next_due = Some(next_due.map_or(*due, |t| t.min(*due)));
                    continue;
                }
                let used =
                    busy.get(lane).copied().unwrap_or(0) + taken.get(lane).copied().unwrap_or(0);
                let cap = per_lane.saturating_sub(used).min(room);
                if cap > 0 {
                    claimed.extend(worker::claim_lane(
                        tx,
                        WEBHOOK_QUEUE,
                        lane,
                        now,
                        lease,
                        cap,
                    )?);
                }
            }
            Ok((claimed, next_due, lanes.len()))
        })
        .await?;
    let mut f = d.flight();
    f.turn = f.turn.wrapping_add(1) % lanes.max(1);
    for c in &claimed {
        f.total += 1;
        *f.lanes
            .entry(c.lane.clone().unwrap_or_default())
            .or_default() += 1;
    }
    Ok((claimed, next_due))
}
