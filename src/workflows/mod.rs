//! Workflows (issue 18; spec 2.10, 3 "Workflow", 4.7, 7 `workflow_invalid`): customer journeys
//! a merchant draws as a graph of steps, started by a trigger. This area keeps them and their
//! versions; [`runner`] runs them on the job queue (its header has the run's invariants).
//!
//! Invariants:
//! - Saving (create, PATCH, restore) edits the draft (`graph`, `trigger`) only; the live copy
//!   (`published_graph`, `published_trigger`) changes only on publish.
//! - A saved or published draft passed [`validate::check`]: known node types with valid
//!   configs, edges between existing nodes, exactly one start (no edge in), every node
//!   reachable from it, conditions with both branches, no cycle without a `wait`, at most
//!   200 nodes. Otherwise 422 `workflow_invalid` lists every problem and nothing is saved.
//! - Publish bumps `version` and stores that version in `workflow_versions`, which no
//!   statement may change (a trigger refuses updates); restore copies a version into the
//!   draft and answers the workflow (publishing makes it fire).
//! - Status: draft -> published (publish), published -> paused (pause), paused -> published
//!   (resume or publish); pause and resume from any other state are 409 `conflict`.
//! - `next_fire_at` is set only while published with a schedule trigger; a cron is read in
//!   the store's time zone (the trigger records it on save).
//! - Every write records its audit entry in its transaction; every query is scoped by store.

pub mod handlers;
pub mod model;
pub mod runner;
pub mod runs;
pub mod schema;
pub mod store;
pub mod validate;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::AppError;
use crate::ids::{StoreId, UserId, WorkflowId};
use crate::state::AppState;
use model::WorkflowOut;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_workflows, handlers::create_workflow))
        .routes(routes!(
            handlers::get_workflow,
            handlers::update_workflow,
            handlers::delete_workflow
        ))
        .routes(routes!(handlers::publish_workflow))
        .routes(routes!(handlers::pause_workflow))
        .routes(routes!(handlers::resume_workflow))
        .routes(routes!(handlers::list_versions))
        .routes(routes!(handlers::get_version))
        .routes(routes!(handlers::restore_version))
        .routes(routes!(handlers::list_runs))
        .routes(routes!(handlers::get_run))
        .routes(routes!(handlers::run_workflow))
}

/// Published (or paused) workflows started by events, per store: each is looked at in the
/// transaction of every store event, so their number is bounded.
pub const MAX_EVENT_WORKFLOWS: i64 = 50;

/// What validation needs to know about the store and the server.
pub fn context(c: &Connection, store: StoreId, smtp: bool) -> Result<validate::Context, AppError> {
    Ok(validate::Context {
        smtp,
        timezone: store::timezone(c, store)?,
    })
}

/// Checks the draft again and publishes it as the next version; None when the store has no
/// such workflow. The handler and the demo both publish through this.
pub fn publish(
    tx: &Tx<'_>,
    store: StoreId,
    id: WorkflowId,
    by: UserId,
    smtp: bool,
    now: DateTime<Utc>,
) -> Result<Option<WorkflowOut>, AppError> {
    let Some(w) = store::get(tx, store, id)? else {
        return Ok(None);
    };
    let ctx = context(tx, store, smtp)?;
    let trigger = validate::check(&w.graph, &trigger_json(&w.trigger)?, &ctx)?;
    if matches!(trigger, model::Trigger::Event { .. })
        && store::count_event_workflows(tx, store, id)? >= MAX_EVENT_WORKFLOWS
    {
        return Err(validate::invalid(&[model::Problem {
            node_id: None,
            edge: None,
            message: format!(
                "a store can have at most {MAX_EVENT_WORKFLOWS} published workflows started by \
                 events (pause or delete one)"
            ),
        }]));
    }
    let next = validate::next_fire(&trigger, now);
    store::publish(tx, store, id, &trigger, by, next, now)?;
    runner::schedule(tx, id, next, now)?;
    store::get(tx, store, id)
}

fn trigger_json(t: &model::Trigger) -> Result<serde_json::Value, AppError> {
    serde_json::to_value(t).map_err(AppError::internal)
}
