//! SQL of segments, campaigns and recipients; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{
    CampaignOut, CampaignStats, CampaignStatus, RecipientOut, RecipientStatus, SegmentFilter,
    SegmentOut,
};
use crate::customers::model::CustomerOut;
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::ids::{CampaignId, CustomerId, SegmentId, StoreId};
use crate::time;

// ---- segments ----

const SEGMENT_COLUMNS: &str = "id, store_id, name, filter, created_at, updated_at";

fn segment_row(r: &Row<'_>) -> rusqlite::Result<SegmentOut> {
    Ok(SegmentOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        name: r.get(2)?,
        filter: crate::db::json_column(r, 3)?,
        created_at: r.get(4)?,
        updated_at: r.get(5)?,
    })
}

fn filter_json(f: &SegmentFilter) -> Result<String, AppError> {
    serde_json::to_string(f).map_err(AppError::internal)
}

pub fn insert_segment(
    tx: &Tx<'_>,
    store: StoreId,
    id: SegmentId,
    name: &str,
    filter: &SegmentFilter,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO segments (id, store_id, name, filter, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![id, store, name, filter_json(filter)?, time::format(now)],
    )?;
    Ok(())
}

/// Applies the given fields; false when the store has no such segment.
pub fn update_segment(
    tx: &Tx<'_>,
    store: StoreId,
    id: SegmentId,
    name: Option<&str>,
    filter: Option<&SegmentFilter>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let filter = filter.map(filter_json).transpose()?;
    let n = crate::db::exec(
        tx,
        "UPDATE segments SET name = COALESCE(?3, name), filter = COALESCE(?4, filter),
                updated_at = ?5
         WHERE store_id = ?1 AND id = ?2",
        params![store, id, name, filter, time::format(now)],
    )?;
    Ok(n == 1)
}

pub fn get_segment(
    c: &Connection,
    store: StoreId,
    id: SegmentId,
) -> Result<Option<SegmentOut>, AppError> {
    let sql = format!("SELECT {SEGMENT_COLUMNS} FROM segments WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], segment_row)
        .optional()?)
}

/// How many campaigns name the segment (a segment with any is kept).
pub fn segment_campaigns(c: &Connection, store: StoreId, id: SegmentId) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT COUNT(*) FROM campaigns WHERE store_id = ?1 AND segment_id = ?2")?
            .query_row(params![store, id], |r| r.get(0))?,
    )
}

pub fn delete_segment(tx: &Tx<'_>, store: StoreId, id: SegmentId) -> Result<bool, AppError> {
    crate::db::delete_in_store(tx, "segments", store, &id)
}

/// The store's segments, newest first.
pub fn list_segments(
    c: &Connection,
    store: StoreId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<SegmentOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {SEGMENT_COLUMNS} FROM segments WHERE store_id = ?1 AND (created_at, id) < (?2, ?3)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?4"
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, at, id, offset], segment_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_segments(c: &Connection, store: StoreId) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT COUNT(*) FROM segments WHERE store_id = ?1")?
            .query_row([store], |r| r.get(0))?,
    )
}

// ---- a segment's customers ----

/// The filter as SQL over `customers c` (parameters ?1 to ?8). The latest order comes from
/// `orders_by_customer` (store, customer, created_at): one index seek per customer, so a
/// page of customers costs a page of seeks. A customer with no order has a NULL latest
/// order, which matches neither date bound. `?8` adds what every campaign requires.
const MATCH: &str = "c.store_id = ?1
    AND (?2 IS NULL OR EXISTS (SELECT 1 FROM json_each(c.tags) t
                               WHERE t.value IN (SELECT value FROM json_each(?2))))
    AND (?3 IS NULL OR c.total_spent_cents >= ?3)
    AND (?4 IS NULL OR c.total_spent_cents <= ?4)
    AND (?5 IS NULL OR (SELECT MAX(o.created_at) FROM orders o
                        WHERE o.store_id = c.store_id AND o.customer_id = c.id) < ?5)
    AND (?6 IS NULL OR (SELECT MAX(o.created_at) FROM orders o
                        WHERE o.store_id = c.store_id AND o.customer_id = c.id) >= ?6)
    AND (?7 IS NULL OR c.accepts_marketing = ?7)
    AND (NOT ?8 OR (c.accepts_marketing = 1 AND c.email IS NOT NULL AND c.email <> ''))";

/// The filter's parameters ?2 to ?7, as [`MATCH`] reads them: tags (JSON), spent min and
/// max, last order before and after, accepts_marketing.
type MatchParams = (
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<bool>,
);

fn match_params(f: &SegmentFilter) -> Result<MatchParams, AppError> {
    let tags = f
        .tags_any
        .as_ref()
        .map(|t| serde_json::to_string(t).map_err(AppError::internal))
        .transpose()?;
    Ok((
        tags,
        f.total_spent_min_cents,
        f.total_spent_max_cents,
        f.last_order_before.clone(),
        f.last_order_after.clone(),
        f.accepts_marketing,
    ))
}

/// The customers area's columns, in the order its row reader takes them.
const CUSTOMER_COLUMNS: &str = "c.id, c.store_id, c.name, c.email, c.phone, c.addresses,
    c.accepts_marketing, c.orders_count, c.total_spent_cents, c.created_at, c.updated_at, c.tags";

/// The segment's customers, newest first (the customers list's order and index).
pub fn segment_customers(
    c: &Connection,
    store: StoreId,
    f: &SegmentFilter,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<CustomerOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let (tags, min, max, before, since, accepts) = match_params(f)?;
    let sql = format!(
        "SELECT {CUSTOMER_COLUMNS} FROM customers c WHERE {MATCH}
           AND (c.created_at, c.id) < (?9, ?10)
         ORDER BY c.created_at DESC, c.id DESC LIMIT {limit} OFFSET ?11"
    );
    c.prepare_cached(&sql)?
        .query_map(
            params![
                store, tags, min, max, before, since, accepts, false, at, id, offset
            ],
            crate::customers::store::row,
        )?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_segment_customers(
    c: &Connection,
    store: StoreId,
    f: &SegmentFilter,
) -> Result<i64, AppError> {
    let (tags, min, max, before, since, accepts) = match_params(f)?;
    let sql = format!("SELECT COUNT(*) FROM customers c WHERE {MATCH}");
    Ok(c.prepare_cached(&sql)?.query_row(
        params![store, tags, min, max, before, since, accepts, false],
        |r| r.get(0),
    )?)
}

// ---- campaigns ----

const CAMPAIGN_COLUMNS: &str = "id, store_id, name, subject, body_markdown, segment_id, status,
    scheduled_at, sent_at, recipients, sent, failed, created_at, updated_at";

fn campaign_row(r: &Row<'_>) -> rusqlite::Result<CampaignOut> {
    Ok(CampaignOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        name: r.get(2)?,
        subject: r.get(3)?,
        body_markdown: r.get(4)?,
        segment_id: r.get(5)?,
        status: crate::db::parse_column(r, 6, CampaignStatus::parse)?,
        scheduled_at: r.get(7)?,
        sent_at: r.get(8)?,
        stats: CampaignStats {
            recipients: r.get(9)?,
            sent: r.get(10)?,
            failed: r.get(11)?,
            opened: None,
        },
        created_at: r.get(12)?,
        updated_at: r.get(13)?,
    })
}

/// A campaign's content as a write sets it; on update `None` keeps a field.
#[derive(Debug, Default, Clone)]
pub struct CampaignFields {
    pub name: Option<String>,
    pub subject: Option<String>,
    pub body_markdown: Option<String>,
    pub segment_id: Option<SegmentId>,
}

pub fn insert_campaign(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    f: &CampaignFields,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO campaigns (id, store_id, name, subject, body_markdown, segment_id, status,
                                created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'draft', ?7, ?7)",
        params![
            id,
            store,
            f.name,
            f.subject,
            f.body_markdown,
            f.segment_id,
            time::format(now)
        ],
    )?;
    Ok(())
}

pub fn update_campaign(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    f: &CampaignFields,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE campaigns SET name = COALESCE(?3, name), subject = COALESCE(?4, subject),
                body_markdown = COALESCE(?5, body_markdown),
                segment_id = COALESCE(?6, segment_id), updated_at = ?7
         WHERE store_id = ?1 AND id = ?2",
        params![
            store,
            id,
            f.name,
            f.subject,
            f.body_markdown,
            f.segment_id,
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

/// Moves the campaign from `from` to `to` (with its schedule); false when it was not in
/// `from` (a concurrent change), so callers check and move in one statement.
pub fn set_status(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    from: CampaignStatus,
    to: CampaignStatus,
    scheduled_at: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE campaigns SET status = ?4, scheduled_at = COALESCE(?5, scheduled_at),
                updated_at = ?6
         WHERE store_id = ?1 AND id = ?2 AND status = ?3",
        params![
            store,
            id,
            from.as_str(),
            to.as_str(),
            scheduled_at,
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

pub fn get_campaign(
    c: &Connection,
    store: StoreId,
    id: CampaignId,
) -> Result<Option<CampaignOut>, AppError> {
    let sql = format!("SELECT {CAMPAIGN_COLUMNS} FROM campaigns WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], campaign_row)
        .optional()?)
}

pub fn delete_campaign(tx: &Tx<'_>, store: StoreId, id: CampaignId) -> Result<bool, AppError> {
    crate::db::delete_in_store(tx, "campaigns", store, &id)
}

/// The store's campaigns, newest first; `status` filters (the index's store prefix, then a
/// check per row: a store has few campaigns).
pub fn list_campaigns(
    c: &Connection,
    store: StoreId,
    status: Option<CampaignStatus>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<CampaignOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {CAMPAIGN_COLUMNS} FROM campaigns
         WHERE store_id = ?1 AND (?2 IS NULL OR status = ?2) AND (created_at, id) < (?3, ?4)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?5"
    );
    c.prepare_cached(&sql)?
        .query_map(
            params![store, status.map(CampaignStatus::as_str), at, id, offset],
            campaign_row,
        )?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_campaigns(
    c: &Connection,
    store: StoreId,
    status: Option<CampaignStatus>,
) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COUNT(*) FROM campaigns WHERE store_id = ?1 AND (?2 IS NULL OR status = ?2)",
    )?
    .query_row(params![store, status.map(CampaignStatus::as_str)], |r| {
        r.get(0)
    })?)
}

// ---- recipients ----

/// Writes the recipients of a campaign from its segment's filter, numbered from 0, with
/// `accepts_marketing = true` and an e-mail required whatever the filter says, and sets the
/// campaign's `recipients`; how many.
pub fn freeze_recipients(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    f: &SegmentFilter,
    now: DateTime<Utc>,
) -> Result<i64, AppError> {
    let (tags, min, max, before, since, accepts) = match_params(f)?;
    let sql = format!(
        "INSERT INTO campaign_recipients (campaign_id, position, customer_id, email, name,
                                          status, updated_at)
         SELECT ?9, ROW_NUMBER() OVER (ORDER BY c.created_at, c.id) - 1, c.id, c.email, c.name,
                'pending', ?10
         FROM customers c WHERE {MATCH}"
    );
    let n = crate::db::exec(
        tx,
        &sql,
        params![
            store,
            tags,
            min,
            max,
            before,
            since,
            accepts,
            true,
            id,
            time::format(now)
        ],
    )?;
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    crate::db::exec(
        tx,
        "UPDATE campaigns SET recipients = ?3 WHERE store_id = ?1 AND id = ?2",
        params![store, id, n],
    )?;
    Ok(n)
}

const RECIPIENT_COLUMNS: &str =
    "customer_id, email, name, status, attempts, error_code, error, sent_at, updated_at";

/// A campaign's recipients in their order (by position, the primary key). The caller
/// checked the campaign is the store's.
pub fn list_recipients(
    c: &Connection,
    id: CampaignId,
    status: Option<RecipientStatus>,
    after: Option<i64>,
    limit: i64,
    offset: i64,
) -> Result<Vec<(i64, RecipientOut)>, AppError> {
    let sql = format!(
        "SELECT position, {RECIPIENT_COLUMNS} FROM campaign_recipients
         WHERE campaign_id = ?1 AND (?2 IS NULL OR status = ?2) AND position > ?3
         ORDER BY position LIMIT {limit} OFFSET ?4"
    );
    c.prepare_cached(&sql)?
        .query_map(
            params![
                id,
                status.map(RecipientStatus::as_str),
                after.unwrap_or(-1),
                offset
            ],
            |r| {
                let pos: i64 = r.get(0)?;
                let rest = RecipientRowAt(r);
                Ok((pos, rest.read()?))
            },
        )?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

/// Reads a recipient from a row whose first column is its position.
struct RecipientRowAt<'a, 'b>(&'a Row<'b>);

impl RecipientRowAt<'_, '_> {
    fn read(&self) -> rusqlite::Result<RecipientOut> {
        let r = self.0;
        Ok(RecipientOut {
            customer_id: r.get(1)?,
            email: r.get(2)?,
            name: r.get(3)?,
            status: crate::db::parse_column(r, 4, RecipientStatus::parse)?,
            attempts: r.get(5)?,
            error_code: r.get(6)?,
            error: r.get(7)?,
            sent_at: r.get(8)?,
            updated_at: r.get(9)?,
        })
    }
}

pub fn count_recipients(
    c: &Connection,
    id: CampaignId,
    status: Option<RecipientStatus>,
) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COUNT(*) FROM campaign_recipients
         WHERE campaign_id = ?1 AND (?2 IS NULL OR status = ?2)",
    )?
    .query_row(params![id, status.map(RecipientStatus::as_str)], |r| {
        r.get(0)
    })?)
}

/// One recipient still to send, with what the mail needs.
#[derive(Debug, Clone)]
pub struct Pending {
    pub position: i64,
    pub customer_id: CustomerId,
    pub email: String,
    pub name: Option<String>,
}

/// The pending recipients of positions `first..=last` (a batch), in order.
pub fn pending_in(
    c: &Connection,
    id: CampaignId,
    first: i64,
    last: i64,
) -> Result<Vec<Pending>, AppError> {
    c.prepare_cached(
        "SELECT position, customer_id, email, name FROM campaign_recipients
         WHERE campaign_id = ?1 AND position BETWEEN ?2 AND ?3 AND status = 'pending'
         ORDER BY position",
    )?
    .query_map(params![id, first, last], |r| {
        Ok(Pending {
            position: r.get(0)?,
            customer_id: r.get(1)?,
            email: r.get(2)?,
            name: r.get(3)?,
        })
    })?
    .collect::<Result<_, _>>()
    .map_err(Into::into)
}

/// Marks a pending recipient sent and counts it; false (nothing changed) when it was not
/// pending.
pub fn mark_sent(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    position: i64,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let now = time::format(now);
    let n = crate::db::exec(
        tx,
        "UPDATE campaign_recipients SET status = 'sent', attempts = attempts + 1, sent_at = ?3,
                updated_at = ?3
         WHERE campaign_id = ?1 AND position = ?2 AND status = 'pending'",
        params![id, position, now],
    )?;
    if n == 1 {
        crate::db::exec(
            tx,
            "UPDATE campaigns SET sent = sent + 1, updated_at = ?3 WHERE store_id = ?1 AND id = ?2",
            params![store, id, now],
        )?;
    }
    Ok(n == 1)
}

/// Records a failed attempt on a pending recipient: `error_code` and `error`, and with
/// `last` it becomes failed and is counted. False when it was not pending.
pub fn mark_attempt_failed(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    position: i64,
    (code, error): (&str, &str),
    last: bool,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let now = time::format(now);
    let n = crate::db::exec(
        tx,
        "UPDATE campaign_recipients SET attempts = attempts + 1, error_code = ?3, error = ?4,
                status = CASE WHEN ?5 THEN 'failed' ELSE status END, updated_at = ?6
         WHERE campaign_id = ?1 AND position = ?2 AND status = 'pending'",
        params![id, position, code, error, last, now],
    )?;
    if n == 1 && last {
        crate::db::exec(
            tx,
            "UPDATE campaigns SET failed = failed + 1, updated_at = ?3
             WHERE store_id = ?1 AND id = ?2",
            params![store, id, now],
        )?;
    }
    Ok(n == 1)
}

/// A sending campaign whose every recipient is sent or failed becomes `sent`; true when
/// this call made it so.
pub fn finish_if_done(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE campaigns SET status = 'sent', sent_at = ?3, updated_at = ?3
         WHERE store_id = ?1 AND id = ?2 AND status = 'sending' AND sent + failed >= recipients",
        params![store, id, time::format(now)],
    )?;
    Ok(n == 1)
}

/// Whether the customer still accepts marketing e-mail (false when deleted since).
pub fn still_accepts(
    c: &Connection,
    store: StoreId,
    customer: CustomerId,
) -> Result<bool, AppError> {
    Ok(c.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM customers
                        WHERE store_id = ?1 AND id = ?2 AND accepts_marketing = 1)",
    )?
    .query_row(params![store, customer], |r| r.get(0))?)
}
