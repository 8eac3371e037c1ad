//! SQL of workflows and their versions; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{
    Graph, Trigger, VersionOut, VersionSummary, WorkflowKind, WorkflowOut, WorkflowStatus,
};
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::ids::{StoreId, UserId, WorkflowId};
use crate::time;

const COLUMNS: &str = "id, store_id, created_by, name, description, status, version, graph,
    trigger, published_graph, published_trigger, published_at, last_run_at, next_fire_at,
    created_at, updated_at";

fn json_opt<T: serde::de::DeserializeOwned>(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<T>> {
    match r.get_ref(i)? {
        rusqlite::types::ValueRef::Null => Ok(None),
        _ => crate::db::json_column(r, i).map(Some),
    }
}

fn row(r: &Row<'_>) -> rusqlite::Result<WorkflowOut> {
    let status: String = r.get(5)?;
    Ok(WorkflowOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        created_by: r.get(2)?,
        name: r.get(3)?,
        description: r.get(4)?,
        kind: WorkflowKind::Journey,
        status: WorkflowStatus::parse(&status).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                5,
                rusqlite::types::Type::Text,
                format!("{status:?} is not a workflow status").into(),
            )
        })?,
        version: r.get(6)?,
        graph: crate::db::json_column(r, 7)?,
        trigger: crate::db::json_column(r, 8)?,
        published_graph: json_opt(r, 9)?,
        published_trigger: json_opt(r, 10)?,
        published_at: r.get(11)?,
        last_run_at: r.get(12)?,
        next_fire_at: r.get(13)?,
        created_at: r.get(14)?,
        updated_at: r.get(15)?,
    })
}

fn to_json(v: &impl serde::Serialize) -> Result<String, AppError> {
    serde_json::to_string(v).map_err(AppError::internal)
}

/// A new draft workflow (validated by the caller).
pub struct NewWorkflow<'a> {
    pub id: WorkflowId,
    pub created_by: UserId,
    pub name: &'a str,
    pub description: &'a str,
    pub graph: &'a Graph,
    pub trigger: &'a Trigger,
}

pub fn insert(
    tx: &Tx<'_>,
    store: StoreId,
    w: &NewWorkflow<'_>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO workflows (id, store_id, created_by, name, description, kind, status,
                                graph, trigger, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'journey', 'draft', ?6, ?7, ?8, ?8)",
        params![
            w.id,
            store,
            w.created_by,
            w.name,
            w.description,
            to_json(w.graph)?,
            to_json(w.trigger)?,
            time::format(now)
        ],
    )?;
    Ok(())
}

pub fn get(
    c: &Connection,
    store: StoreId,
    id: WorkflowId,
) -> Result<Option<WorkflowOut>, AppError> {
    let sql = format!("SELECT {COLUMNS} FROM workflows WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], row)
        .optional()?)
}

/// The draft's new fields; None keeps a field.
#[derive(Debug, Default)]
pub struct Draft {
    pub name: Option<String>,
    pub description: Option<String>,
    pub graph: Option<Graph>,
    pub trigger: Option<Trigger>,
}

/// Saves the draft; false when the store has no such workflow. The published copy stays.
pub fn save_draft(
    tx: &Tx<'_>,
    store: StoreId,
    id: WorkflowId,
    d: &Draft,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let graph = d.graph.as_ref().map(to_json).transpose()?;
    let trigger = d.trigger.as_ref().map(to_json).transpose()?;
    let n = crate::db::exec(
        tx,
        "UPDATE workflows SET name = COALESCE(?3, name), description = COALESCE(?4, description),
                graph = COALESCE(?5, graph), trigger = COALESCE(?6, trigger), updated_at = ?7
         WHERE store_id = ?1 AND id = ?2",
        params![
            store,
            id,
            d.name,
            d.description,
            graph,
            trigger,
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

pub fn delete(tx: &Tx<'_>, store: StoreId, id: WorkflowId) -> Result<bool, AppError> {
    crate::db::delete_in_store(tx, "workflows", store, &id)
}

/// The store's workflows, newest first.
pub fn list(
    c: &Connection,
    store: StoreId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<WorkflowOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {COLUMNS} FROM workflows WHERE store_id = ?1 AND (created_at, id) < (?2, ?3)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?4"
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, at, id, offset], row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count(c: &Connection, store: StoreId) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT COUNT(*) FROM workflows WHERE store_id = ?1")?
            .query_row(params![store], |r| r.get(0))?,
    )
}

/// Publishes the draft (already validated, its trigger typed as `trigger`): the next
/// version is stored, immutable, and becomes the live copy. Returns the new version.
pub fn publish(
    tx: &Tx<'_>,
    store: StoreId,
    id: WorkflowId,
    trigger: &Trigger,
    by: UserId,
    next_fire_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Option<i32>, AppError> {
    let now_s = time::format(now);
    let trigger = to_json(trigger)?;
    let version: Option<i32> = tx
        .prepare_cached(
            "UPDATE workflows SET version = version + 1, status = 'published',
                    published_graph = graph, published_trigger = ?3, trigger = ?3,
                    published_at = ?4, next_fire_at = ?5, updated_at = ?4
             WHERE store_id = ?1 AND id = ?2 RETURNING version",
        )?
        .query_row(
            params![store, id, trigger, now_s, next_fire_at.map(time::format)],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(v) = version {
        crate::db::exec(
            tx,
            "INSERT INTO workflow_versions (workflow_id, store_id, version, graph, trigger,
                                            published_at, published_by)
             SELECT id, store_id, version, published_graph, published_trigger, published_at, ?3
             FROM workflows WHERE store_id = ?1 AND id = ?2",
            params![store, id, by],
        )?;
        debug_assert!(v >= 1);
    }
    Ok(version)
}

/// Moves `from` -> `to` and sets `next_fire_at`; false when the workflow is not in `from`.
pub fn set_status(
    tx: &Tx<'_>,
    store: StoreId,
    id: WorkflowId,
    from: WorkflowStatus,
    to: WorkflowStatus,
    next_fire_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE workflows SET status = ?4, next_fire_at = ?5, updated_at = ?6
         WHERE store_id = ?1 AND id = ?2 AND status = ?3",
        params![
            store,
            id,
            from.as_str(),
            to.as_str(),
            next_fire_at.map(time::format),
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

/// The workflow's versions, newest first; the position is the zero-padded version.
pub fn list_versions(
    c: &Connection,
    store: StoreId,
    id: WorkflowId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<VersionSummary>, AppError> {
    let before: i64 = after.and_then(|(v, _)| v.parse().ok()).unwrap_or(i64::MAX);
    let sql = format!(
        "SELECT version, published_at, published_by FROM workflow_versions
         WHERE store_id = ?1 AND workflow_id = ?2 AND version < ?3
         ORDER BY version DESC LIMIT {limit} OFFSET ?4"
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, id, before, offset], |r| {
            Ok(VersionSummary {
                version: r.get(0)?,
                published_at: r.get(1)?,
                published_by: r.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_versions(c: &Connection, store: StoreId, id: WorkflowId) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COUNT(*) FROM workflow_versions WHERE store_id = ?1 AND workflow_id = ?2",
    )?
    .query_row(params![store, id], |r| r.get(0))?)
}

/// One stored version of a workflow of the store.
pub fn version(
    c: &Connection,
    store: StoreId,
    id: WorkflowId,
    version: i32,
) -> Result<Option<VersionOut>, AppError> {
    Ok(c.prepare_cached(
        "SELECT version, published_at, published_by, graph, trigger FROM workflow_versions
         WHERE store_id = ?1 AND workflow_id = ?2 AND version = ?3",
    )?
    .query_row(params![store, id, version], |r| {
        Ok(VersionOut {
            version: r.get(0)?,
            published_at: r.get(1)?,
            published_by: r.get(2)?,
            graph: crate::db::json_column(r, 3)?,
            trigger: crate::db::json_column(r, 4)?,
        })
    })
    .optional()?)
}

/// The version that is live now: the latest published one, while the workflow is
/// `published` (not paused, not a draft). A run records this version and follows it.
pub fn published_version(
    c: &Connection,
    store: StoreId,
    id: WorkflowId,
) -> Result<Option<VersionOut>, AppError> {
    let live: Option<i32> = c
        .prepare_cached(
            "SELECT version FROM workflows
             WHERE store_id = ?1 AND id = ?2 AND status = 'published'",
        )?
        .query_row(params![store, id], |r| r.get(0))
        .optional()?;
    match live {
        Some(v) => version(c, store, id, v),
        None => Ok(None),
    }
}

/// The store's published or paused workflows started by events, other than `except`.
pub fn count_event_workflows(
    c: &Connection,
    store: StoreId,
    except: WorkflowId,
) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COUNT(*) FROM workflows
         WHERE store_id = ?1 AND trigger_event IS NOT NULL AND id != ?2",
    )?
    .query_row(params![store, except], |r| r.get(0))?)
}

/// The store's locale (its organization's, `pt-BR`): a template's default language.
pub fn locale(c: &Connection, store: StoreId) -> Result<String, AppError> {
    Ok(c.prepare_cached(
        "SELECT t.locale FROM stores s JOIN tenants t ON t.id = s.tenant_id WHERE s.id = ?1",
    )?
    .query_row(params![store], |r| r.get(0))
    .optional()?
    .unwrap_or_else(|| "pt-BR".to_owned()))
}

/// The store's time zone (its organization's), which schedule triggers run in.
pub fn timezone(c: &Connection, store: StoreId) -> Result<String, AppError> {
    Ok(c.prepare_cached(
        "SELECT t.timezone FROM stores s JOIN tenants t ON t.id = s.tenant_id WHERE s.id = ?1",
    )?
    .query_row(params![store], |r| r.get(0))
    .optional()?
    .unwrap_or_else(|| "UTC".to_owned()))
}
