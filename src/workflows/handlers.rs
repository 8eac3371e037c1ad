//! Workflow handlers.

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{
    VersionOut, VersionSummary, WorkflowIn, WorkflowOut, WorkflowPatch, WorkflowStatus,
};
use super::runs::{self, RunIn, RunOut, StartedBy, SubjectType};
use super::store::{self, Draft, NewWorkflow};
use super::validate;
use crate::audit::{self, Actor};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{CustomerId, OrderId, StoreId, WorkflowId, WorkflowRunId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

fn not_found() -> AppError {
    AppError::not_found("workflow")
}

fn manual() -> serde_json::Value {
    serde_json::json!({"type": "manual"})
}

fn version_param(v: &str) -> Result<i32, AppError> {
    crate::http::extract::int32_param("version", v)
}

fn audited(
    tx: &crate::db::Tx<'_>,
    actor: &Actor,
    action: &str,
    id: WorkflowId,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), AppError> {
    audit::record(tx, actor, action, "workflow", &id.to_string(), now)
}

/// 404 unless the store has the workflow (before listing what belongs to it).
async fn exists(st: &AppState, store: StoreId, id: WorkflowId) -> Result<(), AppError> {
    st.db
        .read(move |c| store::get(c, store, id))
        .await?
        .map(|_| ())
        .ok_or_else(not_found)
}

/// The store's workflows, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/workflows", tag = "workflows", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery),
    responses((status = 200, body = Page<WorkflowOut>), (status = 403, body = ErrorBody)))]
pub async fn list_workflows(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<WorkflowOut>>, AppError> {
    scope.require(Permission::WorkflowsRead)?;
    let store = scope.store_id;
    let page = page
        .list(
            &st.db,
            &format!("workflows:{store}"),
            move |c, after, limit, offset| store::list(c, store, after, limit, offset),
            move |c| store::count(c, store),
            |w| (w.created_at.clone(), w.id.to_string()),
            |w| w,
        )
        .await?;
    Ok(Json(page))
}

/// Creates a draft workflow; the graph and trigger are validated (422 `workflow_invalid`).
#[utoipa::path(post, path = "/stores/{store_id}/workflows", tag = "workflows", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = WorkflowIn,
    responses((status = 201, body = WorkflowOut), (status = 422, body = ErrorBody)))]
pub async fn create_workflow(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<WorkflowIn>,
) -> Result<(StatusCode, Json<WorkflowOut>), AppError> {
    scope.require(Permission::WorkflowsWrite)?;
    let name = text("name", &input.name, 1, 255)?;
    let description = input.description.unwrap_or_default();
    if description.chars().count() > 2000 {
        return Err(AppError::field("description", "at most 2000 characters"));
    }
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let smtp = st.cfg.smtp.is_some();
    let out = st
        .db
        .write(move |tx| {
            let ctx = super::context(tx, store, smtp)?;
            let trigger = input.trigger.unwrap_or_else(manual);
            let mut graph = input.graph;
            graph.normalize_numbers();
            let trigger = validate::check(&graph, &trigger, &ctx)?;
            let id = WorkflowId::new();
            let w = NewWorkflow {
                id,
                created_by: actor.user_id,
                name: &name,
                description: description.trim(),
                graph: &graph,
                trigger: &trigger,
            };
            store::insert(tx, store, &w, now)?;
            audited(tx, &actor, "workflow.created", id, now)?;
            store::get(tx, store, id)?.ok_or_else(not_found)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One workflow.
#[utoipa::path(get, path = "/stores/{store_id}/workflows/{workflow_id}", tag = "workflows",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path)),
    responses((status = 200, body = WorkflowOut), (status = 404, body = ErrorBody)))]
pub async fn get_workflow(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
) -> Result<Json<WorkflowOut>, AppError> {
    scope.require(Permission::WorkflowsRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

/// Saves the draft (any subset); the published copy is untouched until publish. The draft
/// that results is validated as a whole (422 `workflow_invalid`).
#[utoipa::path(patch, path = "/stores/{store_id}/workflows/{workflow_id}", tag = "workflows",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path)),
    request_body = WorkflowPatch,
    responses((status = 200, body = WorkflowOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn update_workflow(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
    Json(input): Json<WorkflowPatch>,
) -> Result<Json<WorkflowOut>, AppError> {
    scope.require(Permission::WorkflowsWrite)?;
    let name = input
        .name
        .as_deref()
        .map(|n| text("name", n, 1, 255))
        .transpose()?;
    if input
        .description
        .as_ref()
        .is_some_and(|d| d.chars().count() > 2000)
    {
        return Err(AppError::field("description", "at most 2000 characters"));
    }
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let smtp = st.cfg.smtp.is_some();
    let out = st
        .db
        .write(move |tx| {
            let w = store::get(tx, store, id)?.ok_or_else(not_found)?;
            let ctx = super::context(tx, store, smtp)?;
            let mut graph = input.graph.unwrap_or(w.graph);
            graph.normalize_numbers();
            let trigger = match input.trigger {
                Some(t) => t,
                None => super::trigger_json(&w.trigger)?,
            };
            let trigger = validate::check(&graph, &trigger, &ctx)?;
            let d = Draft {
                name,
                description: input.description.map(|d| d.trim().to_owned()),
                graph: Some(graph),
                trigger: Some(trigger),
            };
            store::save_draft(tx, store, id, &d, now)?;
            audited(tx, &actor, "workflow.updated", id, now)?;
            store::get(tx, store, id)?.ok_or_else(not_found)
        })
        .await?;
    Ok(Json(out))
}

/// Deletes a workflow and its versions.
#[utoipa::path(delete, path = "/stores/{store_id}/workflows/{workflow_id}", tag = "workflows",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn delete_workflow(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::WorkflowsWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::delete(tx, store, id)? {
                return Err(not_found());
            }
            audited(tx, &actor, "workflow.deleted", id, now)
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Publishes the draft as the next version (validated again) and makes it the live copy;
/// from any status, so publishing a paused workflow also resumes it.
#[utoipa::path(post, path = "/stores/{store_id}/workflows/{workflow_id}/publish", tag = "workflows",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path)),
    responses((status = 200, body = WorkflowOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn publish_workflow(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
) -> Result<Json<WorkflowOut>, AppError> {
    scope.require(Permission::WorkflowsWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let smtp = st.cfg.smtp.is_some();
    let out = st
        .db
        .write(move |tx| {
            let w =
                super::publish(tx, store, id, actor.user_id, smtp, now)?.ok_or_else(not_found)?;
            audited(tx, &actor, "workflow.published", id, now)?;
            Ok(w)
        })
        .await?;
    Ok(Json(out))
}

/// Moves `from` -> `to`: 404 for no such workflow, 409 from any other state.
async fn transition(
    st: &AppState,
    scope: &StoreScope,
    id: WorkflowId,
    (from, to, action): (WorkflowStatus, WorkflowStatus, &'static str),
) -> Result<Json<WorkflowOut>, AppError> {
    scope.require(Permission::WorkflowsWrite)?;
    let (store, actor, now) = (scope.store_id, Actor::of(scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let w = store::get(tx, store, id)?.ok_or_else(not_found)?;
            if w.status != from {
                return Err(AppError::conflict(
                    ErrorCode::Conflict,
                    format!(
                        "the workflow is {}; only a {} workflow can be {action}",
                        w.status.as_str(),
                        from.as_str()
                    ),
                ));
            }
            // Resuming looks ahead from now: fire times missed while paused are skipped.
            let next = match (to, &w.published_trigger) {
                (WorkflowStatus::Published, Some(t)) => validate::next_fire(t, now),
                _ => None,
            };
            store::set_status(tx, store, id, from, to, next, now)?;
            super::runner::schedule(tx, id, next, now)?;
            audited(tx, &actor, &format!("workflow.{action}"), id, now)?;
            store::get(tx, store, id)?.ok_or_else(not_found)
        })
        .await?;
    Ok(Json(out))
}

/// Stops a published workflow from firing (409 unless published).
#[utoipa::path(post, path = "/stores/{store_id}/workflows/{workflow_id}/pause", tag = "workflows",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path)),
    responses((status = 200, body = WorkflowOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`")))]
pub async fn pause_workflow(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
) -> Result<Json<WorkflowOut>, AppError> {
    let how = (WorkflowStatus::Published, WorkflowStatus::Paused, "paused");
    transition(&st, &scope, ids.1, how).await
}

/// Lets a paused workflow fire again (409 unless paused).
#[utoipa::path(post, path = "/stores/{store_id}/workflows/{workflow_id}/resume", tag = "workflows",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path)),
    responses((status = 200, body = WorkflowOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`")))]
pub async fn resume_workflow(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
) -> Result<Json<WorkflowOut>, AppError> {
    let how = (WorkflowStatus::Paused, WorkflowStatus::Published, "resumed");
    transition(&st, &scope, ids.1, how).await
}

/// The workflow's published versions, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/workflows/{workflow_id}/versions", tag = "workflows",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path), PageQuery),
    responses((status = 200, body = Page<VersionSummary>), (status = 404, body = ErrorBody)))]
pub async fn list_versions(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
    Paged(page, _): Paged,
) -> Result<Json<Page<VersionSummary>>, AppError> {
    scope.require(Permission::WorkflowsRead)?;
    let (store, id) = (scope.store_id, ids.1);
    exists(&st, store, id).await?;
    let page = page
        .list(
            &st.db,
            &format!("workflow_versions:{id}"),
            move |c, after, limit, offset| store::list_versions(c, store, id, after, limit, offset),
            move |c| store::count_versions(c, store, id),
            |v| (format!("{:010}", v.version), String::new()),
            |v| v,
        )
        .await?;
    Ok(Json(page))
}

/// One published version: its graph and trigger as they were published.
#[utoipa::path(get, path = "/stores/{store_id}/workflows/{workflow_id}/versions/{version}",
    tag = "workflows", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path), ("version" = i32, Path)),
    responses((status = 200, body = VersionOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn get_version(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId, String)>,
) -> Result<Json<VersionOut>, AppError> {
    scope.require(Permission::WorkflowsRead)?;
    let (store, id, v) = (scope.store_id, ids.1, version_param(&ids.2)?);
    st.db
        .read(move |c| store::version(c, store, id, v))
        .await?
        .map(Json)
        .ok_or_else(|| AppError::not_found("workflow version"))
}

/// Copies a version's graph and trigger into the draft (spec 4.7); the published copy stays
/// until the next publish.
#[utoipa::path(post, path = "/stores/{store_id}/workflows/{workflow_id}/versions/{version}/restore",
    tag = "workflows", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path), ("version" = i32, Path)),
    responses((status = 200, body = WorkflowOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn restore_version(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId, String)>,
) -> Result<Json<WorkflowOut>, AppError> {
    scope.require(Permission::WorkflowsWrite)?;
    let (store, id, v) = (scope.store_id, ids.1, version_param(&ids.2)?);
    let (actor, now) = (Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            store::get(tx, store, id)?.ok_or_else(not_found)?;
            let old = store::version(tx, store, id, v)?
                .ok_or_else(|| AppError::not_found("workflow version"))?;
            let d = Draft {
                graph: Some(old.graph),
                trigger: Some(old.trigger),
                ..Draft::default()
            };
            store::save_draft(tx, store, id, &d, now)?;
            audited(tx, &actor, "workflow.restored", id, now)?;
            store::get(tx, store, id)?.ok_or_else(not_found)
        })
        .await?;
    Ok(Json(out))
}

/// The workflow's runs, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/workflows/{workflow_id}/runs", tag = "workflows",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path), PageQuery),
    responses((status = 200, body = Page<RunOut>), (status = 404, body = ErrorBody)))]
pub async fn list_runs(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
    Paged(page, _): Paged,
) -> Result<Json<Page<RunOut>>, AppError> {
    scope.require(Permission::WorkflowsRead)?;
    let (store, id) = (scope.store_id, ids.1);
    exists(&st, store, id).await?;
    let page = page
        .list(
            &st.db,
            &format!("workflow_runs:{id}"),
            move |c, after, limit, offset| runs::list(c, store, id, after, limit, offset),
            move |c| runs::count(c, store, id),
            |r| (r.started_at.clone(), r.id.to_string()),
            |r| r,
        )
        .await?;
    Ok(Json(page))
}

/// One run of the workflow.
#[utoipa::path(get, path = "/stores/{store_id}/workflows/{workflow_id}/runs/{run_id}",
    tag = "workflows", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path),
           ("run_id" = WorkflowRunId, Path)),
    responses((status = 200, body = RunOut), (status = 404, body = ErrorBody)))]
pub async fn get_run(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId, WorkflowRunId)>,
) -> Result<Json<RunOut>, AppError> {
    scope.require(Permission::WorkflowsRead)?;
    let (store, id, run) = (scope.store_id, ids.1, ids.2);
    st.db
        .read(move |c| runs::get(c, store, id, run))
        .await?
        .map(Json)
        .ok_or_else(|| AppError::not_found("workflow run"))
}

/// Starts a run of the published version now, about `subject` if given (an order or a
/// customer of the store). 409 unless the workflow is published.
#[utoipa::path(post, path = "/stores/{store_id}/workflows/{workflow_id}/run", tag = "workflows",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("workflow_id" = WorkflowId, Path)),
    request_body(content = Option<RunIn>, description = "Optional; no body runs about nothing in particular."),
    responses((status = 201, body = RunOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`"), (status = 422, body = ErrorBody)))]
pub async fn run_workflow(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WorkflowId)>,
    input: Option<Json<RunIn>>,
) -> Result<(StatusCode, Json<RunOut>), AppError> {
    scope.require(Permission::WorkflowsWrite)?;
    let subject = input.and_then(|Json(i)| i.subject);
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let w = store::get(tx, store, id)?.ok_or_else(not_found)?;
            if let Some(s) = &subject {
                let (known, what) = match s.subject_type {
                    SubjectType::Order => match s.id.parse::<OrderId>() {
                        Ok(o) => (
                            crate::orders::store::order_exists(tx, store, o)?,
                            "an order",
                        ),
                        Err(_) => (false, "an order"),
                    },
                    SubjectType::Customer => match s.id.parse::<CustomerId>() {
                        Ok(c) => (crate::customers::store::exists(tx, store, c)?, "a customer"),
                        Err(_) => (false, "a customer"),
                    },
                };
                if !known {
                    return Err(AppError::field(
                        "subject.id",
                        format!("is not {what} of this store"),
                    ));
                }
            }
            let Some(version) = store::published_version(tx, store, id)? else {
                return Err(AppError::conflict(
                    ErrorCode::Conflict,
                    format!(
                        "the workflow is {}; only a published workflow runs",
                        w.status.as_str()
                    ),
                ));
            };
            let how = (subject.as_ref(), StartedBy::Manual, None);
            let run =
                super::runner::start(tx, store, &version, id, how, now)?.ok_or_else(|| {
                    AppError::internal(anyhow::anyhow!("a manual run is never a repeat"))
                })?;
            audit::record(tx, &actor, "workflow.run", "workflow", &id.to_string(), now)?;
            runs::get(tx, store, id, run)?
                .ok_or_else(|| AppError::internal(anyhow::anyhow!("the run just started")))
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}
