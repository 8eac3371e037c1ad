//! SQL of store API tokens; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::TokenOut;
use crate::error::AppError;
use crate::ids::{ApiTokenId, StoreId, UserId};
use crate::{secrets, time};

pub const PREFIX: &str = "svc_st_";

const COLUMNS: &str = "id, name, scopes, last4, created_by, created_at, last_used_at, expires_at";

fn row(r: &Row<'_>) -> rusqlite::Result<TokenOut> {
    Ok(TokenOut {
        id: r.get(0)?,
        name: r.get(1)?,
        scopes: crate::db::json_column(r, 2)?,
        last4: r.get(3)?,
        created_by: r.get(4)?,
        created_at: r.get(5)?,
        last_used_at: r.get(6)?,
        expires_at: r.get(7)?,
        value: None,
    })
}

fn last4(value: &str) -> String {
    value
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

/// Creates a token; returns it with its value (the only time the value exists).
pub fn create(
    tx: &Tx<'_>,
    store: StoreId,
    issuer: UserId,
    name: &str,
    scopes: &[String],
    expires_at: Option<&str>,
    now: DateTime<Utc>,
) -> Result<TokenOut, AppError> {
    let (id, value) = (ApiTokenId::new(), secrets::new_token(PREFIX));
    crate::db::exec(
        tx,
        "INSERT INTO api_tokens (id, store_id, created_by, name, scopes, token_hash, last4,
                                 created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            id,
            store,
            issuer,
            name,
            serde_json::to_string(scopes).map_err(AppError::internal)?,
            secrets::hash(&value),
            last4(&value),
            time::format(now),
            expires_at
        ],
    )?;
    let mut out =
        get(tx, store, id)?.ok_or_else(|| AppError::internal(anyhow::anyhow!("token vanished")))?;
    out.value = Some(value);
    Ok(out)
}

pub fn get(c: &Connection, store: StoreId, id: ApiTokenId) -> Result<Option<TokenOut>, AppError> {
    let sql = format!("SELECT {COLUMNS} FROM api_tokens WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], row)
        .optional()?)
}

/// The store's tokens, newest first, keyset-paged on (created_at, id).
pub fn list(
    c: &Connection,
    store: StoreId,
    after: Option<&(String, String)>,
    limit: i64,
    offset: i64,
) -> Result<Vec<TokenOut>, AppError> {
    let (at, id) = after.map_or(("9999".into(), String::new()), |(a, i)| {
        (a.clone(), i.clone())
    });
    let sql = format!(
        "SELECT {COLUMNS} FROM api_tokens WHERE store_id = ?1 AND (created_at, id) < (?2, ?3)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?4"
    );
    let mut stmt = c.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params![store, at, id, offset], row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn count(c: &Connection, store: StoreId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM api_tokens WHERE store_id = ?1",
        [store],
        |r| r.get(0),
    )?)
}

/// Gives a token a new value; the old one stops working at once.
pub fn rotate(tx: &Tx<'_>, store: StoreId, id: ApiTokenId) -> Result<Option<TokenOut>, AppError> {
    let value = secrets::new_token(PREFIX);
    let n = crate::db::exec(
        tx,
        "UPDATE api_tokens SET token_hash = ?3, last4 = ?4 WHERE store_id = ?1 AND id = ?2",
        params![store, id, secrets::hash(&value), last4(&value)],
    )?;
    if n == 0 {
        return Ok(None);
    }
    let mut out = get(tx, store, id)?;
    if let Some(o) = out.as_mut() {
        o.value = Some(value);
    }
    Ok(out)
}

/// Revokes a token; false when the store has no such token.
pub fn delete(tx: &Tx<'_>, store: StoreId, id: ApiTokenId) -> Result<bool, AppError> {
    crate::db::delete_in_store(tx, "api_tokens", store, &id)
}

/// A store token's scopes while it is usable (not revoked or expired, its issuer active);
/// None otherwise.
pub fn live_scopes(
    c: &Connection,
    id: ApiTokenId,
    now: DateTime<Utc>,
) -> Result<Option<Vec<String>>, AppError> {
    Ok(c.prepare_cached(
        "SELECT t.scopes FROM api_tokens t JOIN users u ON u.id = t.created_by
         WHERE t.id = ?1 AND (t.expires_at IS NULL OR t.expires_at > ?2)
           AND u.disabled_at IS NULL",
    )?
    .query_row(params![id, time::format(now)], |r| {
        crate::db::json_column(r, 0)
    })
    .optional()?)
}
