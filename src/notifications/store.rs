//! All of the notifications' SQL: the feed, preferences, the fan-out's recipients, the
//! deliveries and the retention purge.

use std::collections::BTreeMap;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{Channels, DeliveryOut, Kind, NotificationOut, Subject};
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::http::permissions::Role;
use crate::ids::{NotificationDeliveryId, NotificationId, StoreId, UserId};
use crate::time;

/// Most members one store event notifies: stores have a handful, and this bounds the work
/// an event adds to its transaction whatever happens.
pub const MAX_RECIPIENTS: usize = 200;

// ---- preferences ----

/// Every kind with the member's channels, defaults where they changed nothing.
pub fn preferences(c: &Connection, user: UserId) -> Result<BTreeMap<String, Channels>, AppError> {
    let mut out: BTreeMap<String, Channels> = Kind::ALL
        .iter()
        .map(|k| (k.as_str().to_owned(), Channels::default()))
        .collect();
    let rows = c
        .prepare_cached(
            "SELECT kind, in_app, email, msgapp FROM notification_preferences WHERE user_id = ?1",
        )?
        .query_map([user], |r| {
            Ok((
                r.get::<_, String>(0)?,
                Channels {
                    in_app: r.get(1)?,
                    email: r.get(2)?,
                    msgapp: r.get(3)?,
                },
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (kind, ch) in rows {
        // A kind a later version dropped is no longer shown.
        if let Some(slot) = out.get_mut(&kind) {
            *slot = ch;
        }
    }
    Ok(out)
}

pub fn set_preference(
    tx: &Tx<'_>,
    user: UserId,
    kind: Kind,
    ch: Channels,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO notification_preferences (user_id, kind, in_app, email, msgapp, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (user_id, kind) DO UPDATE SET in_app = excluded.in_app,
             email = excluded.email, msgapp = excluded.msgapp, updated_at = excluded.updated_at",
        params![
            user,
            kind.as_str(),
            ch.in_app,
            ch.email,
            ch.msgapp,
            time::format(now)
        ],
    )?;
    Ok(())
}

// ---- the fan-out ----

/// A member who may hear about a kind, with their channels for it.
#[derive(Debug, Clone)]
pub struct Recipient {
    pub user_id: UserId,
    pub role: Role,
    pub channels: Channels,
    /// A verified messaging-app number (the second factor's), if any.
    pub phone: Option<String>,
}

/// The store's active members (its members and its organization's owners, as the one role
/// lookup counts them) with their channels for `kind`, at most [`MAX_RECIPIENTS`].
pub fn recipients(c: &Connection, store: StoreId, kind: Kind) -> Result<Vec<Recipient>, AppError> {
    let sql = format!(
        "WITH owners(user_id) AS (
             SELECT tm.user_id FROM tenant_members tm JOIN stores s ON s.tenant_id = tm.tenant_id
             WHERE s.id = ?1 AND tm.role = 'owner'),
         members(user_id, role) AS (
             SELECT user_id, 'owner' FROM owners
             UNION ALL
             SELECT user_id, role FROM store_members
             WHERE store_id = ?1 AND user_id NOT IN (SELECT user_id FROM owners))
         SELECT m.user_id, m.role, u.msgapp_phone, p.in_app, p.email, p.msgapp
         FROM members m JOIN users u ON u.id = m.user_id
         LEFT JOIN notification_preferences p ON p.user_id = m.user_id AND p.kind = ?2
         WHERE u.disabled_at IS NULL
         ORDER BY m.user_id LIMIT {MAX_RECIPIENTS}"
    );
    let rows = c
        .prepare_cached(&sql)?
        .query_map(params![store, kind.as_str()], |r| {
            let d = Channels::default();
            Ok((
                r.get::<_, UserId>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                Channels {
                    in_app: r.get::<_, Option<bool>>(3)?.unwrap_or(d.in_app),
                    email: r.get::<_, Option<bool>>(4)?.unwrap_or(d.email),
                    msgapp: r.get::<_, Option<bool>>(5)?.unwrap_or(d.msgapp),
                },
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(user_id, role, phone, channels)| {
            Some(Recipient {
                user_id,
                role: Role::parse(&role)?,
                channels,
                phone,
            })
        })
        .collect())
}

/// A notification's row as the fan-out writes it.
pub struct NewNotification<'a> {
    pub id: NotificationId,
    pub store: StoreId,
    pub user: UserId,
    pub kind: Kind,
    pub title: &'a str,
    pub body: &'a str,
    pub subject_type: &'a str,
    pub subject_id: &'a str,
    pub in_app: bool,
}

pub fn insert(tx: &Tx<'_>, n: &NewNotification<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO notifications (id, store_id, user_id, kind, title, body, subject_type,
                                    subject_id, in_app, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            n.id,
            n.store,
            n.user,
            n.kind.as_str(),
            n.title,
            n.body,
            n.subject_type,
            n.subject_id,
            n.in_app,
            time::format(now)
        ],
    )?;
    Ok(())
}

pub fn insert_delivery(
    tx: &Tx<'_>,
    id: NotificationDeliveryId,
    notification: NotificationId,
    channel: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO notification_deliveries (id, notification_id, channel, status, updated_at)
         VALUES (?1, ?2, ?3, 'pending', ?4)",
        params![id, notification, channel, time::format(now)],
    )?;
    Ok(())
}

// ---- the feed ----

const COLUMNS: &str =
    "id, store_id, kind, title, body, subject_type, subject_id, read_at, created_at";

fn row(r: &Row<'_>) -> rusqlite::Result<NotificationOut> {
    let kind: String = r.get(2)?;
    Ok(NotificationOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        kind: Kind::parse(&kind).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                2,
                rusqlite::types::Type::Text,
                format!("unknown notification kind {kind:?}").into(),
            )
        })?,
        title: r.get(3)?,
        body: r.get(4)?,
        subject: Subject {
            subject_type: r.get(5)?,
            id: r.get(6)?,
        },
        read_at: r.get(7)?,
        created_at: r.get(8)?,
        deliveries: Vec::new(),
    })
}

/// The member's feed in the store, newest first (`unread`: not read yet only).
pub fn list(
    c: &Connection,
    store: StoreId,
    user: UserId,
    unread: bool,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<NotificationOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    // Two texts so each uses its partial index.
    let unread_only = if unread { "AND read_at IS NULL" } else { "" };
    let sql = format!(
        "SELECT {COLUMNS} FROM notifications
         WHERE store_id = ?1 AND user_id = ?2 AND in_app = 1 {unread_only}
           AND (created_at, id) < (?3, ?4)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?5"
    );
    let mut found: Vec<NotificationOut> = c
        .prepare_cached(&sql)?
        .query_map(params![store, user, at, id, offset], row)?
        .collect::<Result<_, _>>()?;
    let mut deliveries = c.prepare_cached(
        "SELECT channel, status, attempts, error_code, error, sent_at
         FROM notification_deliveries WHERE notification_id = ?1 ORDER BY channel",
    )?;
    for n in &mut found {
        n.deliveries = deliveries
            .query_map([n.id], |r| {
                Ok(DeliveryOut {
                    channel: r.get(0)?,
                    status: r.get(1)?,
                    attempts: r.get(2)?,
                    error_code: r.get(3)?,
                    error: r.get(4)?,
                    sent_at: r.get(5)?,
                })
            })?
            .collect::<Result<_, _>>()?;
    }
    Ok(found)
}

pub fn count(c: &Connection, store: StoreId, user: UserId, unread: bool) -> Result<i64, AppError> {
    let sql = if unread {
        "SELECT COUNT(*) FROM notifications
         WHERE store_id = ?1 AND user_id = ?2 AND in_app = 1 AND read_at IS NULL"
    } else {
        "SELECT COUNT(*) FROM notifications WHERE store_id = ?1 AND user_id = ?2 AND in_app = 1"
    };
    Ok(c.prepare_cached(sql)?
        .query_row(params![store, user], |r| r.get(0))?)
}

/// Marks the member's unread notifications in the store read: `ids` (others' and unknown
/// ones match nothing), or all of them. How many it marked.
pub fn mark_read(
    tx: &Tx<'_>,
    store: StoreId,
    user: UserId,
    ids: Option<&[NotificationId]>,
    now: DateTime<Utc>,
) -> Result<i64, AppError> {
    let at = time::format(now);
    let Some(ids) = ids else {
        let n = crate::db::exec(
            tx,
            "UPDATE notifications SET read_at = ?3
             WHERE store_id = ?1 AND user_id = ?2 AND in_app = 1 AND read_at IS NULL",
            params![store, user, at],
        )?;
        return Ok(i64::try_from(n).unwrap_or(i64::MAX));
    };
    let mut marked = 0;
    let mut stmt = tx.prepare_cached(
        "UPDATE notifications SET read_at = ?4
         WHERE id = ?3 AND store_id = ?1 AND user_id = ?2 AND in_app = 1 AND read_at IS NULL",
    )?;
    for id in ids {
        marked += stmt.execute(params![store, user, id, at])?;
    }
    Ok(i64::try_from(marked).unwrap_or(i64::MAX))
}

/// Deletes notifications created before `before` (their deliveries go with them).
pub fn purge_before(tx: &Tx<'_>, before: DateTime<Utc>) -> Result<usize, AppError> {
    Ok(crate::db::exec(
        tx,
        "DELETE FROM notifications WHERE created_at < ?1",
        [time::format(before)],
    )?)
}

// ---- deliveries ----

/// What sending one copy needs, read when its job runs (the member's address as it is now).
#[derive(Debug, Clone)]
pub struct Pending {
    pub channel: String,
    pub status: String,
    pub title: String,
    pub body: String,
    pub store_name: String,
    pub email: String,
    pub phone: Option<String>,
    pub locale: String,
}

pub fn pending(c: &Connection, id: NotificationDeliveryId) -> Result<Option<Pending>, AppError> {
    Ok(c.prepare_cached(
        "SELECT d.channel, d.status, n.title, n.body, s.name, u.email, u.msgapp_phone, u.locale
         FROM notification_deliveries d
         JOIN notifications n ON n.id = d.notification_id
         JOIN stores s ON s.id = n.store_id
         JOIN users u ON u.id = n.user_id
         WHERE d.id = ?1",
    )?
    .query_row([id], |r| {
        Ok(Pending {
            channel: r.get(0)?,
            status: r.get(1)?,
            title: r.get(2)?,
            body: r.get(3)?,
            store_name: r.get(4)?,
            email: r.get(5)?,
            phone: r.get(6)?,
            locale: r.get(7)?,
        })
    })
    .optional()?)
}

/// Records one attempt: sent, or its error (`failed` ends it; otherwise it stays pending
/// for the queue's retry). Only a pending copy moves, so a job run twice counts once.
pub fn record_attempt(
    tx: &Tx<'_>,
    id: NotificationDeliveryId,
    outcome: Result<(), (&str, bool)>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let at = time::format(now);
    let n = match outcome {
        Ok(()) => crate::db::exec(
            tx,
            "UPDATE notification_deliveries SET status = 'sent', attempts = attempts + 1,
                 sent_at = ?2, updated_at = ?2
             WHERE id = ?1 AND status = 'pending'",
            params![id, at],
        )?,
        Err((error, last)) => crate::db::exec(
            tx,
            "UPDATE notification_deliveries
             SET status = CASE WHEN ?4 THEN 'failed' ELSE 'pending' END,
                 attempts = attempts + 1, error_code = ?3, error = ?2, updated_at = ?5
             WHERE id = ?1 AND status = 'pending'",
            params![id, error, SEND_FAILED, last, at],
        )?,
    };
    Ok(n > 0)
}

/// The code a failed attempt records (spec 7).
pub const SEND_FAILED: &str = "notification_send_failed";

#[cfg(test)]
mod tests {
    #[test]
    fn the_recorded_code_is_the_error_codes_name() {
        let code = serde_json::to_value(crate::error::ErrorCode::NotificationSendFailed).unwrap();
        assert_eq!(code, super::SEND_FAILED);
    }
}
