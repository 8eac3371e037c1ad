//! SQL of webhooks, their subscriptions, delivery attempts and the dispatcher's reads of the
//! queue and the outbox. Every query a route makes is scoped by store (attempts through their
//! webhook); the dispatcher's go by id, since a job, not a caller, names the webhook.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{AttemptOut, Outcome, SubscriptionOut};
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::events::Event;
use crate::ids::{AttemptId, EventId, StoreId, WebhookId};
use crate::jobs;
use crate::time;

/// A webhook as stored; the secret still sealed.
#[derive(Debug, Clone)]
pub struct WebhookRow {
    pub id: WebhookId,
    pub store_id: StoreId,
    pub url: String,
    pub sealed_secret: Vec<u8>,
    pub is_active: bool,
    pub created_at: String,
    pub updated_at: String,
    pub events: Vec<String>,
}

const COLUMNS: &str = "id, store_id, url, secret, is_active, created_at, updated_at";

fn row(r: &Row<'_>) -> rusqlite::Result<WebhookRow> {
    Ok(WebhookRow {
        id: r.get(0)?,
        store_id: r.get(1)?,
        url: r.get(2)?,
        sealed_secret: r.get(3)?,
        is_active: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
        events: Vec::new(),
    })
}

fn with_events(c: &Connection, mut w: WebhookRow) -> Result<WebhookRow, AppError> {
    w.events = c
        .prepare_cached(
            "SELECT event FROM webhook_subscriptions WHERE webhook_id = ?1 ORDER BY event",
        )?
        .query_map([w.id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(w)
}

#[allow(clippy::too_many_arguments)]
pub fn insert(
    tx: &Tx<'_>,
    id: WebhookId,
    store: StoreId,
    url: &str,
    sealed_secret: &[u8],
    is_active: bool,
    events: &[String],
    now: DateTime<Utc>,
) -> Result<WebhookRow, AppError> {
    let now_s = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO webhooks (id, store_id, url, secret, is_active, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![id, store, url, sealed_secret, is_active, now_s],
    )?;
    subscribe(tx, store, id, events, now)?;
    get(tx, store, id)?.ok_or_else(|| AppError::internal(anyhow::anyhow!("webhook vanished")))
}

pub fn get(c: &Connection, store: StoreId, id: WebhookId) -> Result<Option<WebhookRow>, AppError> {
    let sql = format!("SELECT {COLUMNS} FROM webhooks WHERE store_id = ?1 AND id = ?2");
    let found = c
        .prepare_cached(&sql)?
        .query_row(params![store, id], row)
        .optional()?;
    found.map(|w| with_events(c, w)).transpose()
}

/// The store a webhook belongs to (the root `/webhook-events` forms name only the webhook).
pub fn store_of(c: &Connection, id: WebhookId) -> Result<Option<StoreId>, AppError> {
    Ok(
        c.query_row("SELECT store_id FROM webhooks WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?,
    )
}

/// The store's webhooks, newest first, optionally only those subscribed to `event`.
pub fn list(
    c: &Connection,
    store: StoreId,
    event: Option<&str>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<WebhookRow>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {COLUMNS} FROM webhooks w
         WHERE store_id = ?1 AND (created_at, id) < (?2, ?3)
           AND (?4 IS NULL OR EXISTS (SELECT 1 FROM webhook_subscriptions s
                                      WHERE s.webhook_id = w.id AND s.event = ?4))
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?5"
    );
    let rows: Vec<WebhookRow> = c
        .prepare_cached(&sql)?
        .query_map(params![store, at, id, event, offset], row)?
        .collect::<Result<_, _>>()?;
    rows.into_iter().map(|w| with_events(c, w)).collect()
}

pub fn count(c: &Connection, store: StoreId, event: Option<&str>) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM webhooks w WHERE store_id = ?1
           AND (?2 IS NULL OR EXISTS (SELECT 1 FROM webhook_subscriptions s
                                      WHERE s.webhook_id = w.id AND s.event = ?2))",
        params![store, event],
        |r| r.get(0),
    )?)
}

/// What a write changes in a webhook; None keeps the stored value.
#[derive(Debug, Default)]
pub struct WebhookPatch {
    pub url: Option<String>,
    pub sealed_secret: Option<Vec<u8>>,
    pub is_active: Option<bool>,
}

/// Applies `patch` (an empty one: only `updated_at`); false when the store has no such
/// webhook.
pub fn update(
    tx: &Tx<'_>,
    store: StoreId,
    id: WebhookId,
    patch: &WebhookPatch,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    Ok(crate::db::exec(
        tx,
        "UPDATE webhooks SET url = COALESCE(?3, url), secret = COALESCE(?4, secret),
                             is_active = COALESCE(?5, is_active), updated_at = ?6
         WHERE store_id = ?1 AND id = ?2",
        params![
            store,
            id,
            patch.url,
            patch.sealed_secret,
            patch.is_active,
            time::format(now)
        ],
    )? == 1)
}

pub fn delete(tx: &Tx<'_>, store: StoreId, id: WebhookId) -> Result<bool, AppError> {
    crate::db::delete_in_store(tx, "webhooks", store, &id)
}

/// Adds subscriptions (already subscribed ones are kept as they are).
pub fn subscribe(
    tx: &Tx<'_>,
    store: StoreId,
    id: WebhookId,
    events: &[String],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO webhook_subscriptions (webhook_id, store_id, event, created_at)
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
    )?;
    let now_s = time::format(now);
    for e in events {
        stmt.execute(params![id, store, e, now_s])?;
    }
    Ok(())
}

/// Removes one subscription; false when the webhook was not subscribed to it.
pub fn unsubscribe(
    tx: &Tx<'_>,
    store: StoreId,
    id: WebhookId,
    event: &str,
) -> Result<bool, AppError> {
    Ok(crate::db::exec(
        tx,
        "DELETE FROM webhook_subscriptions WHERE webhook_id = ?1 AND store_id = ?2 AND event = ?3",
        params![id, store, event],
    )? == 1)
}

/// A webhook's subscriptions, by event name.
pub fn subscriptions(
    c: &Connection,
    id: WebhookId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<SubscriptionOut>, AppError> {
    let from = after.map_or("", |(e, _)| e.as_str());
    c.prepare_cached(&format!(
        "SELECT webhook_id, event, created_at FROM webhook_subscriptions
         WHERE webhook_id = ?1 AND event > ?2 ORDER BY event LIMIT {limit} OFFSET ?3"
    ))?
    .query_map(params![id, from, offset], |r| {
        let event: String = r.get(1)?;
        Ok(SubscriptionOut {
            webhook_id: r.get(0)?,
            description: super::event_types::description(&event),
            event,
            created_at: r.get(2)?,
        })
    })?
    .collect::<Result<_, _>>()
    .map_err(Into::into)
}

pub fn count_subscriptions(c: &Connection, id: WebhookId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM webhook_subscriptions WHERE webhook_id = ?1",
        [id],
        |r| r.get(0),
    )?)
}

const ATTEMPT_COLUMNS: &str = "a.id, a.webhook_id, a.event_id, a.event, a.attempt, a.status,
     a.response_status, a.response_body, a.duration_ms, a.error, a.created_at, a.next_attempt_at";

fn attempt_row(r: &Row<'_>) -> rusqlite::Result<AttemptOut> {
    Ok(AttemptOut {
        id: r.get(0)?,
        webhook_id: r.get(1)?,
        event_id: r.get(2)?,
        event: r.get(3)?,
        attempt: r.get(4)?,
        status: r.get(5)?,
        response_status: r.get(6)?,
        response_body: r.get(7)?,
        duration_ms: r.get::<_, i64>(8)?.try_into().unwrap_or_default(),
        error: r.get(9)?,
        created_at: r.get(10)?,
        next_attempt_at: r.get(11)?,
    })
}

/// A webhook's delivery attempts, newest first (the caller has checked the store).
pub fn attempts(
    c: &Connection,
    id: WebhookId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<AttemptOut>, AppError> {
    let (at, aid) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {ATTEMPT_COLUMNS} FROM webhook_attempts a
         WHERE a.webhook_id = ?1 AND (a.created_at, a.id) < (?2, ?3)
         ORDER BY a.created_at DESC, a.id DESC LIMIT {limit} OFFSET ?4"
    );
    c.prepare_cached(&sql)?
        .query_map(params![id, at, aid, offset], attempt_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_attempts(c: &Connection, id: WebhookId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM webhook_attempts WHERE webhook_id = ?1",
        [id],
        |r| r.get(0),
    )?)
}

/// The events with a delivery to the webhook queued or running: one pass over the
/// webhook's lane of the queue.
fn in_queue(c: &Connection, id: WebhookId) -> Result<std::collections::HashSet<EventId>, AppError> {
    c.prepare_cached(
        "SELECT json_extract(payload, '$.data.event_id') FROM jobs
         WHERE queue = ?1 AND lane = ?2 AND state = 'queued'
         UNION ALL
         SELECT json_extract(payload, '$.data.event_id') FROM jobs
         WHERE queue = ?1 AND state = 'running' AND lane = ?2",
    )?
    .query_map(params![crate::webhooks::QUEUE, id.to_string()], |r| {
        r.get(0)
    })?
    .collect::<Result<_, _>>()
    .map_err(Into::into)
}

/// The status of a delivery: its newest attempt's.
fn last_status(c: &Connection, id: WebhookId, event: EventId) -> Result<Option<String>, AppError> {
    Ok(c.query_row(
        "SELECT status FROM webhook_attempts WHERE webhook_id = ?1 AND event_id = ?2
             ORDER BY attempt DESC LIMIT 1",
        params![id, event],
        |r| r.get(0),
    )
    .optional()?)
}

/// Why a delivery cannot be re-sent now.
pub enum ResendRefused {
    NotFound,
    NotFailed(String),
}

/// Queues one more attempt of the delivery the attempt `attempt_id` belongs to, if that
/// delivery has failed and nothing of it is queued.
pub fn resend(
    tx: &Tx<'_>,
    id: WebhookId,
    attempt_id: crate::ids::AttemptId,
    now: DateTime<Utc>,
) -> Result<Result<EventId, ResendRefused>, AppError> {
    let event: Option<EventId> = tx
        .query_row(
            "SELECT event_id FROM webhook_attempts WHERE id = ?1 AND webhook_id = ?2",
            params![attempt_id, id],
            |r| r.get(0),
        )
        .optional()?;
    let Some(event) = event else {
        return Ok(Err(ResendRefused::NotFound));
    };
    let status = last_status(tx, id, event)?.unwrap_or_default();
    if status != "failed" || in_queue(tx, id)?.contains(&event) {
        let why = if status == "succeeded" {
            "succeeded"
        } else {
            "is still being attempted"
        };
        return Ok(Err(ResendRefused::NotFailed(why.into())));
    }
    enqueue_manual(tx, id, event, now)?;
    Ok(Ok(event))
}

/// Most deliveries one `recover` call queues; calling again queues the rest (what is
/// already queued is skipped).
pub const RECOVER_BATCH: usize = 10_000;

/// Queues one more attempt of every delivery to the webhook whose newest attempt failed at
/// or after `since` (at most [`RECOVER_BATCH`]); returns how many.
pub fn recover(
    tx: &Tx<'_>,
    id: WebhookId,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<u64, AppError> {
    let failed: Vec<EventId> = tx
        .prepare(
            "SELECT a.event_id FROM webhook_attempts a
             WHERE a.webhook_id = ?1 AND a.created_at >= ?2 AND a.status = 'failed'
               AND a.attempt = (SELECT MAX(b.attempt) FROM webhook_attempts b
                                WHERE b.webhook_id = a.webhook_id AND b.event_id = a.event_id)",
        )?
        .query_map(params![id, time::format(since)], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let queued = in_queue(tx, id)?;
    let mut n = 0;
    for event in failed
        .into_iter()
        .filter(|e| !queued.contains(e))
        .take(RECOVER_BATCH)
    {
        enqueue_manual(tx, id, event, now)?;
        n += 1;
    }
    Ok(n)
}

fn enqueue_manual(
    tx: &Tx<'_>,
    id: WebhookId,
    event: EventId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let job = crate::webhooks::WebhookDelivery {
        event_id: event,
        webhook_id: Some(id),
        manual: true,
    };
    jobs::enqueue(tx, &job, now).map(|_| ())
}

/// Enqueues one delivery of a just-recorded store event per active webhook subscribed to it.
pub fn fan_out(
    tx: &Tx<'_>,
    store: StoreId,
    event_id: EventId,
    event: Event,
    now: DateTime<Utc>,
) -> Result<usize, AppError> {
    let targets: Vec<WebhookId> = tx
        .prepare_cached(
            "SELECT s.webhook_id FROM webhook_subscriptions s JOIN webhooks w ON w.id = s.webhook_id
             WHERE s.store_id = ?1 AND s.event = ?2 AND w.is_active",
        )?
        .query_map(params![store, event.as_str()], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for w in &targets {
        let job = crate::webhooks::WebhookDelivery {
            event_id,
            webhook_id: Some(*w),
            manual: false,
        };
        jobs::enqueue(tx, &job, now)?;
    }
    Ok(targets.len())
}

/// Every lane of the delivery queue with queued jobs and its earliest `run_at`: a loose
/// index scan over `jobs_queued (queue, lane, run_at)`, one seek per lane however long the
/// backlog is.
pub fn queued_lanes(tx: &Tx<'_>) -> Result<Vec<(String, DateTime<Utc>)>, AppError> {
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
        .query_map([super::QUEUE], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(lane, at)| time::parse(&at).map(|t| (lane, t)))
        .collect())
}

/// An event as a delivery sends it.
pub struct StoredEvent {
    pub name: String,
    pub body: String,
}

/// The event with the body every attempt sends; None once it is purged.
pub fn stored_event(c: &Connection, id: EventId) -> Result<Option<StoredEvent>, AppError> {
    Ok(c.query_row(
        "SELECT name, store_id, created_at, payload, body FROM events WHERE id = ?1",
        [id],
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
            Ok(StoredEvent { name, body })
        },
    )
    .optional()?)
}

/// Where a delivery to a webhook goes; the secret still sealed.
pub struct Destination {
    pub url: String,
    pub sealed_secret: Vec<u8>,
    pub is_active: bool,
}

/// The webhook a delivery names, in whatever store (the job carries only its id); None once
/// it is deleted.
pub fn destination(c: &Connection, id: WebhookId) -> Result<Option<Destination>, AppError> {
    Ok(c.query_row(
        "SELECT url, secret, is_active FROM webhooks WHERE id = ?1",
        [id],
        |r| {
            Ok(Destination {
                url: r.get(0)?,
                sealed_secret: r.get(1)?,
                is_active: r.get(2)?,
            })
        },
    )
    .optional()?)
}

/// Writes one attempt row, numbered after the delivery's earlier ones. The webhook may have
/// been deleted while the request was out: then nothing is kept.
pub fn record_attempt(
    tx: &Tx<'_>,
    webhook_id: Option<WebhookId>,
    event_id: EventId,
    status: &str,
    o: &Outcome,
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

/// Delivery history and the events behind it are kept 30 days (recover reaches back 14).
pub fn purge_history(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<usize, AppError> {
    let old = time::format(now - chrono::Duration::days(30));
    Ok(crate::db::exec(
        tx,
        "DELETE FROM webhook_attempts WHERE created_at <= ?1",
        [&old],
    )? + crate::db::exec(tx, "DELETE FROM events WHERE created_at <= ?1", [&old])?)
}
