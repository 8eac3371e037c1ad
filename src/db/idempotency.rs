//! The `idempotency_keys` table (spec 8): a start marker per (scope, key), then the stored
//! response. What the keys mean, and when a response is kept, is `http::idempotency`'s.

use std::time::Duration;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

use crate::error::AppError;
use crate::time;

/// What a request's key finds.
pub enum Begin {
    /// This request owns the marker, identified by its lock token.
    Started(String),
    InProgress,
    Mismatch,
    Replay(Stored),
}

pub struct Stored {
    pub status: u16,
    /// The replayed headers as a JSON list of `[name, value]` pairs.
    pub headers: String,
    pub body: Vec<u8>,
    /// `body` is sealed under `secrets.key`.
    pub sealed: bool,
}

/// Looks the key up and, unless a live request owns it or it holds a response, writes this
/// request's start marker (one left by a request older than `stale_after` is taken over).
pub fn begin(
    tx: &Tx<'_>,
    scope: &str,
    key: &str,
    hash: &[u8],
    now: DateTime<Utc>,
    ttl: chrono::Duration,
    stale_after: Duration,
) -> Result<Begin, AppError> {
    let row = tx
        .query_row(
            "SELECT request_hash, status, response_headers, response_body, created_at, expires_at,
                    response_sealed
             FROM idempotency_keys WHERE scope = ?1 AND key = ?2",
            params![scope, key],
            |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    r.get::<_, Option<u16>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<Vec<u8>>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, bool>(6)?,
                ))
            },
        )
        .optional()?;
    let now_s = time::format(now);
    let start = |tx: &Tx<'_>| -> Result<Begin, AppError> {
        let token = uuid::Uuid::new_v4().to_string();
        super::exec(
            tx,
            "INSERT OR REPLACE INTO idempotency_keys
                 (scope, key, request_hash, lock_token, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![scope, key, hash, token, now_s, time::format(now + ttl)],
        )?;
        Ok(Begin::Started(token))
    };
    let Some((stored_hash, status, headers, body, created_at, expires_at, sealed)) = row else {
        return start(tx);
    };
    if expires_at <= now_s {
        return start(tx);
    }
    if stored_hash != hash {
        return Ok(Begin::Mismatch);
    }
    match status {
        Some(status) => Ok(Begin::Replay(Stored {
            status,
            headers: headers.unwrap_or_default(),
            body: body.unwrap_or_default(),
            sealed,
        })),
        None => {
            let stale = time::parse(&created_at).is_none_or(|t| {
                now - t > chrono::Duration::from_std(stale_after).unwrap_or_default()
            });
            if stale {
                start(tx)
            } else {
                Ok(Begin::InProgress)
            }
        }
    }
}

/// Stores the response of the request that owns the marker (its `token`); false when the
/// marker was taken over meanwhile.
pub fn save_response(
    tx: &Tx<'_>,
    scope: &str,
    key: &str,
    token: &str,
    r: &Stored,
) -> Result<bool, AppError> {
    let n = super::exec(
        tx,
        "UPDATE idempotency_keys
         SET status = ?4, response_headers = ?5, response_body = ?6, response_sealed = ?7
         WHERE scope = ?1 AND key = ?2 AND lock_token = ?3 AND status IS NULL",
        params![scope, key, token, r.status, r.headers, r.body, r.sealed],
    )?;
    Ok(n == 1)
}

/// Removes the marker if still ours and unanswered, so the key can be used again.
pub fn remove_marker(tx: &Tx<'_>, scope: &str, key: &str, token: &str) -> Result<(), AppError> {
    super::exec(
        tx,
        "DELETE FROM idempotency_keys
         WHERE scope = ?1 AND key = ?2 AND lock_token = ?3 AND status IS NULL",
        params![scope, key, token],
    )?;
    Ok(())
}

/// Deletes expired records (run by the cleanup job).
pub fn purge_expired(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<usize, AppError> {
    Ok(super::exec(
        tx,
        "DELETE FROM idempotency_keys WHERE expires_at <= ?1",
        [time::format(now)],
    )?)
}
