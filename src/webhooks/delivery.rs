//! The delivery dispatcher: claims due `webhooks` jobs lane by lane (a lane is one receiving
//! webhook) so that no receiver has more than `webhook_endpoint_concurrency` requests in
//! flight and all of them together no more than `webhook_concurrency`; sends each with ureq
//! on the blocking pool; records the attempt and settles the job in one transaction.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use sha2::Sha256;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::target::GuardedResolver;
use super::{QUEUE as WEBHOOK_QUEUE, WebhookDelivery};
use crate::config::Config;
use crate::error::AppError;
use crate::ids::{AttemptId, EventId, WebhookId};
use crate::jobs::worker::{self, Claimed};
use crate::state::AppState;
use crate::threads::run_blocking;
use crate::time;

/// How much of a receiver's answer is kept.
const KEEP_BODY: u64 = 4096;

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
        let agent = |allow_private| {
            ureq::Agent::with_parts(
                Self::config(cfg),
                ureq::unversioned::transport::DefaultConnector::new(),
                GuardedResolver::new(allow_private),
            )
        };
        Self {
            agent: agent(cfg.allow_private_webhook_targets),
            platform_agent: agent(true),
            flight: Arc::new(Mutex::new(Flight::default())),
            freed: Arc::new(Notify::new()),
        }
    }

    fn config(cfg: &Config) -> ureq::config::Config {
        ureq::Agent::config_builder()
            .timeout_global(Some(cfg.webhook_timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(None)
            .user_agent("Webhook/1.0")
            .max_idle_connections(cfg.webhook_concurrency)
            .max_idle_connections_per_host(cfg.webhook_endpoint_concurrency)
            .build()
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
                    let task = tasks.spawn(deliver(st.clone(), c.clone()));
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
            let interrupted = Attempt {
                error: Some("interrupted: the server stopped during this attempt".into()),
                ..Attempt::default()
            };
            let again = claimed.iter().map(|c| (c, "pending", Some(now)));
            for (c, status, next) in again.chain(dead.iter().map(|c| (c, "failed", None))) {
                if let Some(WebhookDelivery {
                    event_id,
                    webhook_id,
                    ..
                }) = c.read::<WebhookDelivery>()
                {
                    record_attempt(tx, webhook_id, event_id, status, &interrupted, now, next)?;
                }
            }
            let mut lanes = queued_lanes(tx)?;
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

/// Every lane with queued jobs and its earliest `run_at`: a loose index scan over
/// `jobs_queued (queue, lane, run_at)`, one seek per lane however long the backlog is.
fn queued_lanes(tx: &Transaction<'_>) -> Result<Vec<(String, DateTime<Utc>)>, AppError> {
    let rows: Vec<(String, String)> = tx
        .prepare_cached(
            "WITH RECURSIVE lanes(lane) AS (
                SELECT (SELECT lane FROM jobs WHERE queue = ?1 AND state = 'queued'
                          AND lane IS NOT NULL ORDER BY lane LIMIT 1)
                UNION ALL
                SELECT (SELECT j.lane FROM jobs j WHERE j.queue = ?1 AND j.state = 'queued'
                          AND j.lane > lanes.lane ORDER BY j.lane LIMIT 1)
                FROM lanes WHERE lanes.lane IS NOT NULL)
             SELECT lane, (SELECT MIN(run_at) FROM jobs WHERE queue = ?1 AND state = 'queued'
                             AND lane = lanes.lane)
             FROM lanes WHERE lane IS NOT NULL",
        )?
        .query_map([WEBHOOK_QUEUE], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(lane, at)| time::parse(&at).map(|t| (lane, t)))
        .collect())
}

/// The event as stored.
struct Event {
    name: String,
    body: String,
}

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
) -> Result<(Option<Event>, Target), AppError> {
    let event = c
        .query_row(
            "SELECT name, store_id, created_at, payload, body FROM events WHERE id = ?1",
            [event_id],
            |r| {
                let name: String = r.get(0)?;
                let body: Option<String> = r.get(4)?;
                let body = match body {
                    Some(b) => b,
                    // Recorded before bodies were stored: rebuilt the same way every time.
                    None => {
                        let at = time::parse(&r.get::<_, String>(2)?).map_or(0, |t| t.timestamp());
                        crate::events::envelope(&name, r.get(1)?, at, &r.get::<_, String>(3)?)
                    }
                };
                Ok(Event { name, body })
            },
        )
        .optional()?;
    let target = match webhook_id {
        None => match &st.cfg.platform_webhook {
            Some(p) => Target::Send {
                url: p.url.clone(),
                secret: p.secret.clone(),
            },
            None => Target::Nothing,
        },
        Some(id) => {
            let row: Option<(String, Vec<u8>, bool)> = c
                .query_row(
                    "SELECT url, secret, is_active FROM webhooks WHERE id = ?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            match row {
                None => Target::Nothing,
                Some((_, _, false)) => Target::Refuse("the webhook is not active".into()),
                Some((url, sealed, true)) => {
                    match st.secret_box.open_sealed(&sealed, &id.to_string()) {
                        Some(secret) => Target::Send { url, secret },
                        None => Target::Refuse(
                            "the signing secret cannot be unsealed with this data directory's \
                         secrets.key; set a new secret with PUT"
                                .into(),
                        ),
                    }
                }
            }
        }
    };
    Ok((event, target))
}

/// What one HTTP attempt came to.
#[derive(Debug, Default)]
struct Attempt {
    status: Option<u16>,
    body: Option<String>,
    error: Option<String>,
    duration_ms: u64,
}

impl Attempt {
    fn succeeded(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
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

/// Runs one claimed delivery: sends it, then records the attempt and settles the job.
async fn deliver(st: AppState, c: Claimed) {
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
        (Some(_), Target::Refuse(why)) => Attempt {
            error: Some(why),
            ..Attempt::default()
        },
        (Some(ev), Target::Send { url, secret }) => {
            let agent = if webhook_id.is_some() {
                st.webhooks.agent.clone()
            } else {
                st.webhooks.platform_agent.clone()
            };
            let (name, body) = (ev.name.clone(), ev.body.clone());
            let timeout = st.cfg.webhook_timeout;
            run_blocking(move || {
                send(
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
    tx: &Transaction<'_>,
    c: &Claimed,
    event_id: EventId,
    webhook_id: Option<WebhookId>,
    o: &Attempt,
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
    record_attempt(tx, webhook_id, event_id, status, o, now, retry_at)
}

/// Writes one attempt row, numbered after the delivery's earlier ones. The webhook may have
/// been deleted while the request was out: then nothing is kept.
fn record_attempt(
    tx: &Transaction<'_>,
    webhook_id: Option<WebhookId>,
    event_id: EventId,
    status: &str,
    o: &Attempt,
    now: DateTime<Utc>,
    next_attempt_at: Option<DateTime<Utc>>,
) -> Result<(), AppError> {
    tx.prepare_cached(
        "INSERT INTO webhook_attempts (id, webhook_id, event_id, event, attempt, status,
                                       response_status, response_body, duration_ms, error,
                                       created_at, next_attempt_at)
         SELECT ?1, ?2, ?3, COALESCE((SELECT name FROM events WHERE id = ?3), ''),
                (SELECT COALESCE(MAX(attempt), 0) + 1 FROM webhook_attempts
                 WHERE webhook_id IS ?2 AND event_id = ?3),
                ?4, ?5, ?6, ?7, ?8, ?9, ?10
         WHERE ?2 IS NULL OR EXISTS (SELECT 1 FROM webhooks WHERE id = ?2)",
    )?
    .execute(params![
        AttemptId::new(),
        webhook_id,
        event_id,
        status,
        o.status,
        o.body,
        i64::try_from(o.duration_ms).unwrap_or(i64::MAX),
        o.error,
        time::format(now),
        next_attempt_at.map(time::format),
    ])?;
    Ok(())
}

/// The `X-Webhook-Signature` value: HMAC-SHA256 keyed with the secret string's bytes over
/// the raw body (spec 6.1).
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key size");
    mac.update(body);
    format!("sha256={}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The Standard Webhooks `webhook-signature` value: `v1,` + HMAC-SHA256 over
/// `{id}.{timestamp}.{body}`, keyed with the base64-decoded part after `whsec_` (or the raw
/// bytes of a secret not of that form).
pub fn standard_signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|k| STANDARD.decode(k).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec());
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key size");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// One POST. Blocking: runs on the blocking pool.
#[allow(clippy::too_many_arguments)]
fn send(
    agent: &ureq::Agent,
    url: &str,
    secret: &str,
    event_id: EventId,
    name: &str,
    body: &str,
    timestamp: i64,
    timeout: Duration,
) -> Attempt {
    let id = event_id.to_string();
    let started = Instant::now();
    let result = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("User-Agent", "Webhook/1.0")
        .header("X-Webhook-Signature", &signature(secret, body.as_bytes()))
        .header("X-Webhook-Event", name)
        .header("X-Webhook-Event-Id", &id)
        .header("webhook-id", &id)
        .header("webhook-timestamp", &timestamp.to_string())
        .header(
            "webhook-signature",
            &standard_signature(secret, &id, timestamp, body.as_bytes()),
        )
        .send(body);
    let mut out = Attempt::default();
    match result {
        Ok(mut res) => {
            out.status = Some(res.status().as_u16());
            let mut kept = Vec::new();
            let read = res
                .body_mut()
                .as_reader()
                .take(KEEP_BODY)
                .read_to_end(&mut kept);
            out.body = Some(String::from_utf8_lossy(&kept).into_owned());
            if let Err(e) = read {
                out.error = Some(describe(&ureq::Error::Io(e), timeout));
            }
        }
        Err(e) => out.error = Some(describe(&e, timeout)),
    }
    out.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    out
}

fn describe(e: &ureq::Error, timeout: Duration) -> String {
    match e {
        ureq::Error::Timeout(_) => format!("no answer within {} s", timeout.as_secs_f64()),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            format!("no answer within {} s", timeout.as_secs_f64())
        }
        other => other.to_string(),
    }
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

    #[test]
    fn standard_signature_uses_the_decoded_secret() {
        // The example of the Standard Webhooks specification.
        let sig = standard_signature(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
