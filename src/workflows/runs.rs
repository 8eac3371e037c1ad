//! Workflow runs: the row each start of a published workflow writes (where the run is, how it
//! ended), and its SQL. Every query a request makes is scoped by store; the runner's own
//! reads go by the run's id, which only its jobs carry.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::rendered::Position;
use crate::error::AppError;
use crate::ids::{EventId, StoreId, WorkflowId, WorkflowRunId};
use crate::text_enum;
use crate::time;

text_enum! {
    /// `running` and `waiting` (at a `wait` step) go on; `completed` and `failed` are final.
    pub enum RunStatus {
        Running = "running",
        Waiting = "waiting",
        Completed = "completed",
        Failed = "failed",
    }
}

text_enum! {
    /// What a run is about: its steps read and act on this record.
    pub enum SubjectType {
        Order = "order",
        Customer = "customer",
    }
}

text_enum! {
    /// How a run started.
    pub enum StartedBy {
        Manual = "manual",
        Schedule = "schedule",
        Event = "event",
    }
}

/// The order or customer a run is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RunSubject)]
pub struct Subject {
    #[serde(rename = "type")]
    pub subject_type: SubjectType,
    /// The order's or customer's id.
    pub id: String,
}

/// One run of a workflow.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RunOut {
    pub id: WorkflowRunId,
    pub workflow_id: WorkflowId,
    /// The version published when the run started; the run follows it to its end.
    pub version: i32,
    pub status: RunStatus,
    /// Null for a run about nothing in particular (a schedule's, or a manual run without one).
    pub subject: Option<Subject>,
    pub started_by: StartedBy,
    /// The step the run is at (null once completed).
    pub current_node: Option<String>,
    /// Why the current step failed (kept while it is retried) or why the run failed.
    pub error: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

impl RunOut {
    pub fn is_finished(&self) -> bool {
        matches!(self.status, RunStatus::Completed | RunStatus::Failed)
    }
}

/// `POST .../workflows/{id}/run`: an optional subject.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunIn {
    pub subject: Option<Subject>,
}

const COLUMNS: &str = "id, workflow_id, version, status, subject_type, subject_id, started_by,
    current_node, error, started_at, finished_at, store_id";

fn row(r: &Row<'_>) -> rusqlite::Result<(RunOut, StoreId)> {
    let subject_type: Option<SubjectType> = r.get(4)?;
    let subject_id: Option<String> = r.get(5)?;
    Ok((
        RunOut {
            id: r.get(0)?,
            workflow_id: r.get(1)?,
            version: r.get(2)?,
            status: r.get(3)?,
            subject: subject_type
                .zip(subject_id)
                .map(|(subject_type, id)| Subject { subject_type, id }),
            started_by: r.get(6)?,
            current_node: r.get(7)?,
            error: r.get(8)?,
            started_at: r.get(9)?,
            finished_at: r.get(10)?,
        },
        r.get(11)?,
    ))
}

/// A run to insert, at its first step.
pub struct NewRun<'a> {
    pub id: WorkflowRunId,
    pub store: StoreId,
    pub workflow: WorkflowId,
    pub version: i32,
    pub subject: Option<&'a Subject>,
    pub started_by: StartedBy,
    pub event: Option<EventId>,
    pub start_node: &'a str,
}

/// Inserts the run; false when the workflow already has a run for that event.
pub fn insert(tx: &Tx<'_>, n: &NewRun<'_>, now: DateTime<Utc>) -> Result<bool, AppError> {
    let inserted = crate::db::exec(
        tx,
        "INSERT INTO workflow_runs (id, store_id, workflow_id, version, status, subject_type,
                                    subject_id, event_id, started_by, current_node, started_at,
                                    updated_at)
         VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8, ?9, ?10, ?10)
         ON CONFLICT (workflow_id, event_id) DO NOTHING",
        params![
            n.id,
            n.store,
            n.workflow,
            n.version,
            n.subject.map(|s| s.subject_type),
            n.subject.map(|s| s.id.as_str()),
            n.event,
            n.started_by,
            n.start_node,
            time::format(now)
        ],
    )?;
    Ok(inserted == 1)
}

/// A run of the store's workflow.
pub fn get(
    c: &Connection,
    store: StoreId,
    workflow: WorkflowId,
    id: WorkflowRunId,
) -> Result<Option<RunOut>, AppError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM workflow_runs WHERE store_id = ?1 AND workflow_id = ?2 AND id = ?3"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, workflow, id], row)
        .optional()?
        .map(|(r, _)| r))
}

/// A run by its id alone, with its store and the steps it took: for the runner's jobs,
/// which carry only the id.
pub fn get_for_runner(
    c: &Connection,
    id: WorkflowRunId,
) -> Result<Option<(RunOut, StoreId, i64)>, AppError> {
    let sql = format!("SELECT {COLUMNS}, steps FROM workflow_runs WHERE id = ?1");
    Ok(c.prepare_cached(&sql)?
        .query_row([id], |r| {
            row(r).and_then(|(run, store)| Ok((run, store, r.get(12)?)))
        })
        .optional()?)
}

/// The workflow's runs, newest first.
pub fn list(
    c: &Connection,
    store: StoreId,
    workflow: WorkflowId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<RunOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {COLUMNS} FROM workflow_runs
         WHERE workflow_id = ?2 AND store_id = ?1 AND (started_at, id) < (?3, ?4)
         ORDER BY started_at DESC, id DESC LIMIT {limit} OFFSET ?5"
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, workflow, at, id, offset], |r| {
            row(r).map(|(r, _)| r)
        })?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count(c: &Connection, store: StoreId, workflow: WorkflowId) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COUNT(*) FROM workflow_runs WHERE workflow_id = ?2 AND store_id = ?1",
    )?
    .query_row(params![store, workflow], |r| r.get(0))?)
}

/// Moves a run that is at `from` (and not finished) to `to`: its next step, the wait it
/// sleeps in, or its end. False when the run is elsewhere already (a step's job that ran
/// twice), so the caller enqueues nothing.
pub fn step(
    tx: &Tx<'_>,
    id: WorkflowRunId,
    from: (&str, RunStatus),
    to: (Option<&str>, RunStatus),
    error: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let now_s = time::format(now);
    let finished = matches!(to.1, RunStatus::Completed | RunStatus::Failed).then_some(&now_s);
    let n = crate::db::exec(
        tx,
        "UPDATE workflow_runs SET current_node = ?4, status = ?5, error = ?6, finished_at = ?7,
                                  updated_at = ?8, steps = steps + 1
         WHERE id = ?1 AND current_node = ?2 AND status = ?3",
        params![id, from.0, from.1, to.0, to.1, error, finished, now_s],
    )?;
    Ok(n == 1)
}

/// Notes why the current step's attempt failed while it is retried.
pub fn note_error(
    tx: &Tx<'_>,
    id: WorkflowRunId,
    node: &str,
    error: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE workflow_runs SET error = ?3, updated_at = ?4
         WHERE id = ?1 AND current_node = ?2 AND status = 'running'",
        params![id, node, error, time::format(now)],
    )?;
    Ok(())
}

/// Fails every run in flight whose step has no job waiting or running: its last attempt died
/// with the process that held it, or its job was lost. `live` are the runs the queue still
/// holds a step of. Returns how many failed.
pub fn fail_lost(
    tx: &Tx<'_>,
    live: &std::collections::HashSet<WorkflowRunId>,
    now: DateTime<Utc>,
) -> Result<usize, AppError> {
    let in_flight: Vec<(WorkflowRunId, String, RunStatus)> = tx
        .prepare_cached(
            "SELECT id, current_node, status FROM workflow_runs
             WHERE finished_at IS NULL AND status IN ('running', 'waiting')",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut failed = 0;
    for (id, node, status) in in_flight.into_iter().filter(|r| !live.contains(&r.0)) {
        let to = (Some(node.as_str()), RunStatus::Failed);
        let why = "the step's job stopped for good (its last attempt ended with the server)";
        if step(tx, id, (&node, status), to, Some(why), now)? {
            failed += 1;
        }
    }
    Ok(failed)
}

/// Deletes runs that finished before `before`.
pub fn purge_finished(tx: &Tx<'_>, before: DateTime<Utc>) -> Result<usize, AppError> {
    Ok(crate::db::exec(
        tx,
        "DELETE FROM workflow_runs WHERE finished_at IS NOT NULL AND finished_at < ?1",
        [time::format(before)],
    )?)
}
