//! The delivery dispatcher: claims due `webhooks` jobs lane by lane (a lane is one receiving
//! webhook) so that no receiver has more than `webhook_endpoint_concurrency` requests in
//! flight and all of them together no more than `webhook_concurrency`, and runs each as a
//! task (`attempt`): sent with ureq on the blocking pool (`client`, `signing`).
//!
//! One write per round (issue 22): a round records the attempts that ended since the last
//! one (each attempt row with its job's settlement), claims what the freed slots allow and
//! reads what the claimed deliveries send, all in one transaction of the writer, instead of
//! a claim, a read and a settling write per delivery. An attempt that ended is only known
//! once that write commits: if the process dies first, its lease runs out and it is recorded
//! as interrupted and sent again (at least once, as for a crash mid-request). The SQL is in
//! `webhooks::store`.

mod attempt;
mod client;
mod signing;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
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
use attempt::{Ended, Work};
use signing::Signer;

/// Each webhook's sealed secret and the signer opened from it.
type Signers = HashMap<WebhookId, (Vec<u8>, Arc<Signer>)>;

/// A round's claims: the deliveries claimed, when the next queued one is due, and how many
/// lanes have queued deliveries.
type Claims = (Vec<Claimed>, Option<DateTime<Utc>>, usize);

/// Most signers kept (one per webhook delivered to); past it they are made again.
const SIGNERS_MAX: usize = 4096;

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
    /// Attempts that ended, for the next round's write to record.
    ended: Arc<Mutex<Vec<Ended>>>,
    /// Each webhook's signer, with the sealed secret it was opened from: unsealing and
    /// keying once per secret, not per attempt. A new secret does not match and is opened.
    signers: Arc<Mutex<Signers>>,
    /// The operator's platform webhook's signer.
    platform_signer: Option<Arc<Signer>>,
    /// `webhook_attempts_total` by outcome, registered once.
    counters: Arc<OnceLock<attempt::Counters>>,
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
            ended: Arc::default(),
            signers: Arc::default(),
            platform_signer: cfg
                .platform_webhook
                .as_ref()
                .map(|p| Arc::new(Signer::new(&p.secret))),
            counters: Arc::default(),
        }
    }

    /// The signer of a webhook's secret as sealed in `sealed`; None when this data
    /// directory's key cannot unseal it.
    fn signer(&self, st: &AppState, webhook_id: WebhookId, sealed: &[u8]) -> Option<Arc<Signer>> {
        let lock = || self.signers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((known, signer)) = lock().get(&webhook_id)
            && known.as_slice() == sealed
        {
            return Some(signer.clone());
        }
        let secret = st.secret_box.open_sealed(sealed, &webhook_id.to_string())?;
        let signer = Arc::new(Signer::new(&secret));
        let mut signers = lock();
        if signers.len() >= SIGNERS_MAX {
            signers.clear();
        }
        signers.insert(webhook_id, (sealed.to_vec(), signer.clone()));
        Some(signer)
    }

    /// Hands an ended attempt to the next round's write.
    fn ended(&self, e: Ended) {
        self.ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(e);
    }

    fn take_ended(&self) -> Vec<Ended> {
        std::mem::take(&mut *self.ended.lock().unwrap_or_else(PoisonError::into_inner))
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

        let next_due = match round(&st).await {
            Ok((claimed, next_due)) => {
                let any = !claimed.is_empty();
                for w in claimed {
                    let c = w.claim.clone();
                    let task = tasks.spawn(attempt::deliver(st.clone(), w));
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
    let drained = tokio::time::timeout(st.cfg.shutdown_drain(), finish)
        .await
        .is_ok();
    if !drained {
        // The request itself runs on a blocking thread until its own timeout; its answer is
        // no longer awaited, and the receiver may see the delivery again after the restart.
        tasks.abort_all();
        while let Some(ended) = tasks.join_next_with_id().await {
            if ended.is_ok() {
                flying.remove(&task_id(&ended));
            }
        }
    }
    let left: Vec<Claimed> = flying.into_values().collect();
    let ended = d.take_ended();
    let (n, now) = (left.len(), st.clock.now());
    // The attempts that ended are recorded first: a delivery settled so is no longer
    // running, and putting it back leaves it alone.
    let put_back = st
        .db
        .write_to_finish(move |tx| {
            for e in &ended {
                attempt::settle(tx, e)?;
            }
            for c in &left {
                worker::release(tx, c, now)?;
            }
            Ok(())
        })
        .await;
    match put_back {
        Ok(()) if n > 0 => tracing::info!(
            deliveries = n,
            "shutting down: deliveries in flight put back for the next start"
        ),
        Ok(()) => {}
        // Their lease runs out and they are taken again then (an ended attempt too).
        Err(e) => tracing::warn!(error = ?e, "shutting down: deliveries could not be put back"),
    }
}

fn task_id<T>(ended: &Result<(tokio::task::Id, T), tokio::task::JoinError>) -> tokio::task::Id {
    match ended {
        Ok((id, _)) => *id,
        Err(e) => e.id(),
    }
}

/// One round: records the attempts that ended, then claims what the free slots allow, lane
/// by lane, and reads what each claimed delivery sends, in one write. Also says when the
/// next queued job is due, so the dispatcher can sleep until then.
async fn round(st: &AppState) -> Result<(Vec<Work>, Option<DateTime<Utc>>), AppError> {
    let d = st.webhooks.clone();
    let (per_lane, all) = (
        st.cfg.webhook_endpoint_concurrency,
        st.cfg.webhook_concurrency,
    );
    let ended = d.take_ended();
    let (busy, free, turn) = {
        let f = d.flight();
        (f.lanes.clone(), all.saturating_sub(f.total), f.turn)
    };
    if free == 0 && ended.is_empty() {
        return Ok((Vec::new(), None));
    }
    let (now, lease) = (st.clock.now(), lease(&st.cfg));
    let recorded = ended.len();
    // Never refused for a full queue: it records attempts already made.
    let result = st
        .db
        .write_to_finish(move |tx| {
            for e in &ended {
                attempt::settle(tx, e)?;
            }
            if free == 0 {
                return Ok((Vec::new(), None, None));
            }
            let (claimed, next_due, lanes) = claim(tx, now, lease, free, per_lane, &busy, turn)?;
            Ok((attempt::load(tx, claimed)?, next_due, Some(lanes)))
        })
        .await;
    let (work, next_due, lanes) = match result {
        Ok(r) => r,
        Err(e) => {
            if recorded > 0 {
                // Still running in the queue: their leases run out and they are tried again.
                tracing::error!(
                    attempts = recorded,
                    "webhook attempts could not be recorded"
                );
            }
            return Err(e);
        }
    };
    let mut f = d.flight();
    if let Some(lanes) = lanes {
        f.turn = f.turn.wrapping_add(1) % lanes.max(1);
    }
    for w in &work {
        f.total += 1;
        *f.lanes
            .entry(w.claim.lane.clone().unwrap_or_default())
            .or_default() += 1;
    }
    Ok((work, next_due))
}

/// Claims up to `free` due deliveries, lane by lane, at most `per_lane` in flight per lane
/// (`busy` are in flight already), starting at lane `turn`. Returns them, when the next
/// queued one is due, and how many lanes have queued deliveries.
fn claim(
    tx: &crate::db::Tx<'_>,
    now: DateTime<Utc>,
    lease: Duration,
    free: usize,
    per_lane: usize,
    busy: &HashMap<String, usize>,
    turn: usize,
) -> Result<Claims, AppError> {
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
            store::record_attempt(tx, webhook_id, event_id, status, &interrupted, now, next)?;
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
        let used = busy.get(lane).copied().unwrap_or(0) + taken.get(lane).copied().unwrap_or(0);
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
}
