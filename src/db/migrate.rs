//! Schema migrations: refinery, embedded from `migrations/`, applied on every start and by
//! `merchant-admin migrate`. A database written by a newer binary is refused, never touched.

use anyhow::{Context, bail};
use rusqlite::{Connection, OptionalExtension};

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// The highest migration version this binary carries.
pub fn latest_version() -> i64 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .max()
        .unwrap_or(0)
}

/// The highest version applied to this database (0 for a new one).
pub fn applied_version(c: &Connection) -> rusqlite::Result<i64> {
    let has_table: bool = c.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master
                        WHERE type = 'table' AND name = 'refinery_schema_history')",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        return Ok(0);
    }
    Ok(c.query_row(
        "SELECT MAX(version) FROM refinery_schema_history",
        [],
        |r| r.get::<_, Option<i64>>(0),
    )
    .optional()?
    .flatten()
    .unwrap_or(0))
}

/// Refuses a database from a newer binary, then applies pending migrations.
pub fn run(c: &mut Connection) -> anyhow::Result<()> {
    check_not_newer(c)?;
    embedded::migrations::runner()
        .run(c)
        .context("applying database migrations")?;
    Ok(())
}

pub fn check_not_newer(c: &Connection) -> anyhow::Result<()> {
    let (applied, ours) = (applied_version(c)?, latest_version());
    if applied > ours {
        bail!(
            "the database has schema version {applied}, but this merchant-admin only knows \
             versions up to {ours}: it was written by a newer release. Run that release (or \
             restore a backup taken with this one); the database was not changed."
        );
    }
    Ok(())
}
