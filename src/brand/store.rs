//! The brand area's SQL. Versions are only ever inserted (a trigger refuses updates).

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::model::{BrandSystem, BrandSystemOut, BrandVersionOut};
use crate::error::AppError;
use crate::ids::{StoreId, UserId};
use crate::time;

fn parse(json: &str) -> Result<BrandSystem, AppError> {
    serde_json::from_str(json)
        .map_err(|e| AppError::internal(anyhow::anyhow!("a stored brand system: {e}")))
}

/// The store's highest version number; None before its first.
pub fn latest_version(c: &Connection, store: StoreId) -> Result<Option<i32>, AppError> {
    Ok(
        c.prepare_cached("SELECT MAX(version) FROM brand_versions WHERE store_id = ?1")?
            .query_row([store], |r| r.get(0))?,
    )
}

/// One version's system.
#[tracing::instrument(skip_all, fields(store_id = %store))]
pub fn get_version(
    c: &Connection,
    store: StoreId,
    version: i32,
) -> Result<Option<BrandSystem>, AppError> {
    c.prepare_cached("SELECT system FROM brand_versions WHERE store_id = ?1 AND version = ?2")?
        .query_row(params![store, version], |r| r.get::<_, String>(0))
        .optional()?
        .map(|s| parse(&s))
        .transpose()
}

/// The brand system response (2.11): the newest version's system and every version,
/// newest first; None for a store with no version yet.
#[tracing::instrument(skip_all, fields(store_id = %store))]
pub fn current(c: &Connection, store: StoreId) -> Result<Option<BrandSystemOut>, AppError> {
    let Some(version) = latest_version(c, store)? else {
        return Ok(None);
    };
    let system = get_version(c, store, version)?
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("brand version vanished")))?;
    let versions = c
        .prepare_cached(
            "SELECT created_at, COALESCE(prompt, ''), COALESCE(summary, ''), version
             FROM brand_versions WHERE store_id = ?1 ORDER BY version DESC",
        )?
        .query_map([store], |r| {
            Ok(BrandVersionOut {
                created_at: r.get(0)?,
                prompt: r.get(1)?,
                summary: r.get(2)?,
                version: r.get(3)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(Some(BrandSystemOut {
        system,
        version,
        versions,
    }))
}

/// A version to insert.
pub struct NewVersion<'a> {
    pub store: StoreId,
    pub version: i32,
    pub system: &'a BrandSystem,
    pub prompt: Option<&'a str>,
    pub summary: Option<&'a str>,
    pub created_by: UserId,
}

pub fn insert_version(tx: &Tx<'_>, v: &NewVersion<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    let system = serde_json::to_string(v.system).map_err(AppError::internal)?;
    crate::db::exec(
        tx,
        "INSERT INTO brand_versions (store_id, version, system, prompt, summary, created_by,
                                     created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            v.store,
            v.version,
            system,
            v.prompt,
            v.summary,
            v.created_by,
            time::format(now)
        ],
    )?;
    Ok(())
}

/// Records that the merchant saved the brand (the onboarding checklist's `brand` step).
pub fn mark_saved(tx: &Tx<'_>, store: StoreId, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE stores SET brand_updated_at = ?2 WHERE id = ?1",
        params![store, time::format(now)],
    )?;
    Ok(())
}

/// The store's name (a default system is named after it).
pub fn store_name(c: &Connection, store: StoreId) -> Result<Option<String>, AppError> {
    Ok(c.prepare_cached("SELECT name FROM stores WHERE id = ?1")?
        .query_row([store], |r| r.get(0))
        .optional()?)
}
