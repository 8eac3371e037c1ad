//! The workflow runner: runs of published workflows on the durable job queue.
//!
//! - A run starts in the transaction of what starts it: the store event that matched the
//!   trigger ([`on_event`], once per event), the schedule's fire job ([`fire`]), or a manual
//!   request. It records the version live at that moment and follows that graph to its end.
//! - Each step is a [`WorkflowStep`] job. A step moves the run from its node to the next with
//!   a conditional update, so a step job that runs twice (a retry after a crash) moves nothing
//!   the second time. Steps that only write (tag, webhook, condition, end) commit their effect
//!   with that move; the two that send (message, e-mail) send first, so a crash between the
//!   send and the move sends again: at least once, never lost.
//! - A `wait` parks the run (`waiting`) and enqueues its next step for the time it ends; the
//!   queue keeps it across restarts.
//! - A step that fails is retried with the queue's backoff; a failure retrying cannot fix (no
//!   phone, no channel, a refusal) or the last attempt marks the run `failed` with the error.
//!   The hourly [`WorkflowSweep`] fails runs whose step job is gone (its last attempt died
//!   with the server), so no run stays `running` for good.
//! - A run takes at most [`MAX_STEPS`] steps (validation paces loops with an hour's wait);
//!   past that it fails.
//! - A step of a paused workflow holds: it looks again every [`HOLD`] until resumed.
//! - A schedule is one [`WorkflowFire`] job per fire time; publish and resume enqueue it, the
//!   fire enqueues the next, in the store's time zone as it is then. A fire whose time is no
//!   longer the workflow's `next_fire_at` (republished, paused) does nothing; the sweep
//!   enqueues the fire of a published schedule that has none.

use std::fmt::Write as _;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::model::{Op, Predicate, Step, Trigger, VersionOut};
use super::runs::{self, NewRun, RunOut, RunStatus, StartedBy, Subject, SubjectType};
use super::{store, validate};
use crate::audit::Actor;
use crate::customers::store::Tagged;
use crate::error::AppError;
use crate::events::{Event, Recorded};
use crate::ids::{CustomerId, EventId, OrderId, StoreId, WorkflowId, WorkflowRunId};
use crate::inbox::model::ChannelKind;
use crate::jobs::{self, JobKind};
use crate::state::AppState;
use crate::{customers, time, webhooks};

/// Runs one node of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowStep {
    pub run_id: WorkflowRunId,
    pub node_id: String,
    /// A `wait` node's second job: its time has come, go on.
    #[serde(default)]
    pub waited: bool,
}

impl JobKind for WorkflowStep {
    const KIND: &'static str = "workflow_step";

    /// 10 s, 20 s, ... about 21 minutes of retries before the run fails.
    fn max_attempts(&self) -> u32 {
        8
    }
}

/// Starts a schedule's run at `at`, if that is still when the workflow fires next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowFire {
    pub workflow_id: WorkflowId,
    /// The `next_fire_at` this job was enqueued for.
    pub at: String,
}

impl JobKind for WorkflowFire {
    const KIND: &'static str = "workflow_fire";

    fn max_attempts(&self) -> u32 {
        5
    }
}

/// Most steps a run takes before it fails.
pub const MAX_STEPS: i64 = 1000;

/// How often a step of a paused workflow looks again.
pub const HOLD: chrono::Duration = chrono::Duration::minutes(10);

/// Finished runs are kept this long.
pub const KEEP_RUNS: chrono::Duration = chrono::Duration::days(90);

/// Fails the runs whose step job is gone, and enqueues the fire of every published schedule
/// that has none waiting (the scheduler makes sure one is queued every hour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowSweep;

impl JobKind for WorkflowSweep {
    const KIND: &'static str = "workflow_sweep";

    fn max_attempts(&self) -> u32 {
        3
    }
}

/// Enqueues a sweep unless one is waiting or running ([`crate::jobs::Registry::recurring`]).
pub fn ensure_sweep(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    jobs::enqueue_once(tx, &WorkflowSweep, now, now, true).map(|_| ())
}

/// The sweep: runs whose step job is gone fail; schedules without a fire job get one.
pub async fn sweep(st: &AppState) -> anyhow::Result<()> {
    let now = st.clock.now();
    let (failed, scheduled) = st
        .db
        .write_to_finish(move |tx| {
            let mut live = std::collections::HashSet::new();
            let mut firing = std::collections::HashSet::new();
            let mut pending = tx.prepare_cached(
                "SELECT kind, payload FROM jobs
                 WHERE kind IN (?1, ?2) AND state IN ('queued', 'running')",
            )?;
            let rows = pending.query_map([WorkflowStep::KIND, WorkflowFire::KIND], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?;
            for row in rows {
                let (kind, payload) = row?;
                let Ok(job) = serde_json::from_str::<jobs::StoredJob>(&payload) else {
                    continue;
                };
                if kind == WorkflowStep::KIND {
                    live.extend(job.read::<WorkflowStep>().map(|j| j.run_id));
                } else {
                    firing.extend(job.read::<WorkflowFire>().map(|j| j.workflow_id));
                }
            }
            drop(pending);
            let failed = runs::fail_lost(tx, &live, now)?;
            let due: Vec<(WorkflowId, String)> = tx
                .prepare_cached(
                    "SELECT id, next_fire_at FROM workflows
                     WHERE next_fire_at IS NOT NULL AND status = 'published'",
                )?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            let mut scheduled = 0;
            for (id, at) in due.into_iter().filter(|(id, _)| !firing.contains(id)) {
                let job = WorkflowFire {
                    workflow_id: id,
                    at: at.clone(),
                };
                let when = time::parse(&at).unwrap_or(now).max(now);
                jobs::enqueue_at(tx, &job, when, now)?;
                scheduled += 1;
            }
            Ok((failed, scheduled))
        })
        .await?;
    if failed + scheduled > 0 {
        tracing::warn!(
            failed,
            scheduled,
            "workflow sweep: lost runs failed, schedules re-armed"
        );
    }
    Ok(())
}

/// Enqueues the fire job of a schedule's next time (publish, resume, a fire).
pub fn schedule(
    tx: &Tx<'_>,
    workflow: WorkflowId,
    next: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    if let Some(at) = next {
        let job = WorkflowFire {
            workflow_id: workflow,
            at: time::format(at),
        };
        jobs::enqueue_at(tx, &job, at, now)?;
    }
    Ok(())
}

/// Starts a run of `version` at its first node, in the caller's transaction; None when the
/// workflow already ran for `event`.
pub fn start(
    tx: &Tx<'_>,
    store: StoreId,
    version: &VersionOut,
    workflow: WorkflowId,
    (subject, started_by, event): (Option<&Subject>, StartedBy, Option<EventId>),
    now: DateTime<Utc>,
) -> Result<Option<WorkflowRunId>, AppError> {
    let first = version.graph.start().ok_or_else(|| {
        AppError::internal(anyhow::anyhow!("a published graph has no start node"))
    })?;
    let id = WorkflowRunId::new();
    let run = NewRun {
        id,
        store,
        workflow,
        version: version.version,
        subject,
        started_by,
        event,
        start_node: &first.id,
    };
    if !runs::insert(tx, &run, now)? {
        return Ok(None);
    }
    let step = WorkflowStep {
        run_id: id,
        node_id: first.id.clone(),
        waited: false,
    };
    jobs::enqueue(tx, &step, now)?;
    crate::db::exec(
        tx,
        "UPDATE workflows SET last_run_at = ?2 WHERE id = ?1",
        params![workflow, time::format(now)],
    )?;
    Ok(Some(id))
}

/// What a store event's `data` is about: the order of an `orders.*` event, the customer of a
/// `customers.*` one; nothing for the others.
fn subject_of(event: Event, data: &Value) -> Option<Subject> {
    let subject_type = match event.as_str().split('.').next() {
        Some("orders") => SubjectType::Order,
        Some("customers") => SubjectType::Customer,
        _ => return None,
    };
    let id = data["id"].as_str()?.to_owned();
    Some(Subject { subject_type, id })
}

/// The events listener: starts a run of every published workflow of the store whose trigger
/// is this event (and whose filter holds for its data), in the event's transaction.
pub fn on_event(tx: &Tx<'_>, e: &Recorded<'_>) -> Result<(), AppError> {
    if validate::store_event(e.event.as_str()).is_none() {
        return Ok(());
    }
    let ids: Vec<WorkflowId> = tx
        .prepare_cached(
            "SELECT id FROM workflows
             WHERE store_id = ?1 AND trigger_event = ?2 AND status = 'published'",
        )?
        .query_map(params![e.store_id, e.event.as_str()], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Ok(());
    }
    let data: Value = serde_json::from_str(e.data_json).map_err(AppError::internal)?;
    let subject = subject_of(e.event, &data);
    // A filter reads the event's data under its subject's name (`order.total_cents`), and
    // under `event` whatever the event.
    let mut seen = serde_json::Map::new();
    seen.insert("event".into(), data.clone());
    if let Some(s) = &subject {
        seen.insert(s.subject_type.as_str().into(), data);
    }
    let seen = Value::Object(seen);
    for id in ids {
        let Some(version) = store::published_version(tx, e.store_id, id)? else {
            continue;
        };
        if let Trigger::Event {
            filter: Some(f), ..
        } = &version.trigger
            && !holds(f, &seen)
        {
            continue;
        }
        let how = (subject.as_ref(), StartedBy::Event, Some(e.id));
        start(tx, e.store_id, &version, id, how, e.at)?;
    }
    Ok(())
}

/// A schedule's fire: starts its run and enqueues the next fire.
pub async fn fire(st: &AppState, job: WorkflowFire) -> anyhow::Result<()> {
    let now = st.clock.now();
    st.db
        .write_to_finish(move |tx| {
            let due: Option<StoreId> = tx
                .query_row(
                    "SELECT store_id FROM workflows
                     WHERE id = ?1 AND status = 'published' AND next_fire_at = ?2",
                    params![job.workflow_id, job.at],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(store) = due else {
                return Ok(());
            };
            let Some(version) = store::published_version(tx, store, job.workflow_id)? else {
                return Ok(());
            };
            // Fire times missed while the server was down are skipped: the next is after now,
            // on the store's clock as it is now (its time zone may have changed).
            let at = time::parse(&job.at).unwrap_or(now);
            let mut trigger = version.trigger.clone();
            if let Trigger::Schedule { timezone, .. } = &mut trigger {
                *timezone = Some(store::timezone(tx, store)?);
            }
            let next = validate::next_fire(&trigger, now.max(at));
            crate::db::exec(
                tx,
                "UPDATE workflows SET next_fire_at = ?2 WHERE id = ?1",
                params![job.workflow_id, next.map(time::format)],
            )?;
            schedule(tx, job.workflow_id, next, now)?;
            let how = (None, StartedBy::Schedule, None);
            start(tx, store, &version, job.workflow_id, how, now)?;
            Ok(())
        })
        .await?;
    Ok(())
}

/// Why a step did not go through.
#[derive(Debug)]
struct StepError {
    message: String,
    /// Retrying cannot help: the run fails now.
    permanent: bool,
}

impl StepError {
    fn permanent(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            permanent: true,
        }
    }

    fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            permanent: false,
        }
    }
}

impl From<AppError> for StepError {
    fn from(e: AppError) -> Self {
        Self::transient(format!("{e:?}"))
    }
}

/// What a step reads: the run, its store, its graph, and its subject as JSON.
struct Loaded {
    run: RunOut,
    store: StoreId,
    steps: i64,
    /// None when the run's version is gone (it never should be: versions are immutable).
    version: Option<VersionOut>,
    /// Whether the workflow is paused: its runs hold where they are.
    paused: bool,
    /// `{"order": .., "customer": ..}` as far as the run has them; conditions and the
    /// `{{..}}` fields of messages read it.
    seen: Value,
}

fn load(c: &Connection, id: WorkflowRunId) -> Result<Option<Loaded>, AppError> {
    let Some((run, store, steps)) = runs::get_for_runner(c, id)? else {
        return Ok(None);
    };
    let version = store::version(c, store, run.workflow_id, run.version)?;
    let paused = store::get(c, store, run.workflow_id)?
        .is_some_and(|w| w.status == super::model::WorkflowStatus::Paused);
    let mut seen = serde_json::Map::new();
    let mut customer: Option<CustomerId> = None;
    match &run.subject {
        Some(Subject {
            subject_type: SubjectType::Order,
            id,
        }) => {
            if let Some(o) = id
                .parse::<OrderId>()
                .ok()
                .map(|o| crate::orders::store::load(c, store, o))
                .transpose()?
                .flatten()
            {
                customer = o.customer_id;
                seen.insert("order".into(), to_value(&o)?);
            }
        }
        Some(Subject {
            subject_type: SubjectType::Customer,
            id,
        }) => customer = id.parse().ok(),
        None => {}
    }
    if let Some(c) = customer
        .map(|id| customers::store::get(c, store, id))
        .transpose()?
        .flatten()
    {
        seen.insert("customer".into(), to_value(&c)?);
    }
    Ok(Some(Loaded {
        run,
        store,
        steps,
        version,
        paused,
        seen: Value::Object(seen),
    }))
}

fn to_value(v: &impl Serialize) -> Result<Value, AppError> {
    serde_json::to_value(v).map_err(AppError::internal)
}

/// Runs one step of a run: the job handler.
pub async fn run_step(st: &AppState, job: WorkflowStep) -> anyhow::Result<()> {
    let (id, node) = (job.run_id, job.node_id.clone());
    let Some(l) = st.db.read(move |c| load(c, id)).await? else {
        return Ok(());
    };
    let expected = if job.waited {
        RunStatus::Waiting
    } else {
        RunStatus::Running
    };
    if l.run.current_node.as_deref() != Some(node.as_str()) || l.run.status != expected {
        // Moved on already: this job ran before (a retry after a crash) or the run ended.
        return Ok(());
    }
    if l.paused {
        let (again, now) = (job.clone(), st.clock.now());
        st.db
            .write_to_finish(move |tx| jobs::enqueue_at(tx, &again, now + HOLD, now).map(|_| ()))
            .await?;
        return Ok(());
    }
    let result = match &l.version {
        _ if l.steps >= MAX_STEPS => Err(StepError::permanent(format!(
            "the run took {MAX_STEPS} steps without ending"
        ))),
        None => Err(StepError::permanent("the run's version is gone")),
        Some(v) => execute(st, &l, v, &job).await,
    };
    let Err(e) = result else { return Ok(()) };
    let last = jobs::attempt().is_none_or(jobs::Attempt::is_last);
    let now = st.clock.now();
    let message = e.message.clone();
    if e.permanent || last {
        tracing::warn!(run = %id, node, error = %e.message, "workflow run failed");
        st.db
            .write_to_finish(move |tx| {
                runs::step(
                    tx,
                    id,
                    (&node, expected),
                    (Some(&node), RunStatus::Failed),
                    Some(&message),
                    now,
                )
                .map(|_| ())
            })
            .await?;
        // A refusal is settled; a last attempt that failed stays an error of its job.
        return if e.permanent {
            Ok(())
        } else {
            Err(anyhow::anyhow!(e.message))
        };
    }
    st.db
        .write_to_finish(move |tx| runs::note_error(tx, id, &node, &message, now))
        .await?;
    Err(anyhow::anyhow!(e.message))
}

async fn execute(
    st: &AppState,
    l: &Loaded,
    version: &VersionOut,
    job: &WorkflowStep,
) -> Result<(), StepError> {
    let node = version
        .graph
        .node(&job.node_id)
        .ok_or_else(|| StepError::permanent("the node is not in the run's version"))?;
    let step = node.step().map_err(StepError::permanent)?;
    let now = st.clock.now();
    let (id, store, from) = (l.run.id, l.store, job.node_id.clone());
    match step {
        Step::Wait(w) if !job.waited => {
            let until = match (w.seconds, w.until.as_deref().and_then(time::parse)) {
                (Some(s), _) => now + chrono::Duration::seconds(s),
                (None, Some(at)) => at,
                (None, None) => now,
            };
            st.db
                .write(move |tx| {
                    let moved = runs::step(
                        tx,
                        id,
                        (&from, RunStatus::Running),
                        (Some(&from), RunStatus::Waiting),
                        None,
                        now,
                    )?;
                    if moved {
                        let next = WorkflowStep {
                            run_id: id,
                            node_id: from.clone(),
                            waited: true,
                        };
                        jobs::enqueue_at(tx, &next, until.max(now), now)?;
                    }
                    Ok(())
                })
                .await?;
            return Ok(());
        }
        Step::Wait(_) => {
            let v = version.clone();
            st.db
                .write(move |tx| advance(tx, id, &v, (&from, RunStatus::Waiting), None, now))
                .await?;
            return Ok(());
        }
        Step::Condition(p) => {
            let branch = holds(&p, &l.seen);
            let v = version.clone();
            st.db
                .write(move |tx| {
                    advance(tx, id, &v, (&from, RunStatus::Running), Some(branch), now)
                })
                .await?;
            return Ok(());
        }
        Step::SendMessage(m) => send_message(st, l, &m).await?,
        Step::SendEmail(e) => send_email(st, l, &e).await?,
        Step::TagCustomer(t) => {
            let customer = customer_id(l)?;
            let v = version.clone();
            let tagged = st
                .db
                .write(move |tx| {
                    let tenant = crate::orders::store::tenant_of(tx, store)?;
                    match customers::store::add_tag(tx, store, customer, &t.tag, now)? {
                        Tagged::NoSuchCustomer => {
                            return Ok(Err("the run's customer no longer exists"));
                        }
                        Tagged::Full => return Ok(Err("the customer has 50 tags already")),
                        Tagged::Added => {
                            let c = customers::store::get(tx, store, customer)?
                                .ok_or_else(|| AppError::not_found("customer"))?;
                            let actor = Actor {
                                store_id: Some(store),
                                ..Actor::system(tenant, "workflow")
                            };
                            let change = webhooks::Change {
                                event: Event::CustomersUpdated,
                                data: &c,
                                action: "customer.updated",
                                resource_id: &customer.to_string(),
                            };
                            webhooks::publish_change(tx, &actor, &change, now)?;
                        }
                        // Tagged already: nothing changes, so no event (a workflow started by
                        // `customers.updated` that tags does not start itself again).
                        Tagged::Had => {}
                    }
                    advance(tx, id, &v, (&from, RunStatus::Running), None, now)?;
                    Ok(Ok(()))
                })
                .await?;
            return tagged.map_err(StepError::permanent);
        }
        Step::Webhook => {
            let v = version.clone();
            let data = json!({
                "workflow_id": l.run.workflow_id,
                "version": l.run.version,
                "run_id": id,
                "node_id": from,
                "subject": l.run.subject,
            });
            st.db
                .write(move |tx| {
                    if advance(tx, id, &v, (&from, RunStatus::Running), None, now)? {
                        webhooks::publish(tx, Some(store), Event::WorkflowStep, &data, now)?;
                    }
                    Ok(())
                })
                .await?;
            return Ok(());
        }
        Step::End => {
            st.db
                .write(move |tx| {
                    runs::step(
                        tx,
                        id,
                        (&from, RunStatus::Running),
                        (None, RunStatus::Completed),
                        None,
                        now,
                    )
                    .map(|_| ())
                })
                .await?;
            return Ok(());
        }
    }
    // A send went out: move on, whatever the write queue's load (a refusal would send again).
    let (v, now) = (version.clone(), st.clock.now());
    st.db
        .write_to_finish(move |tx| advance(tx, id, &v, (&from, RunStatus::Running), None, now))
        .await?;
    Ok(())
}

/// Moves the run from `from` along its edge (the `branch` of a condition) and enqueues that
/// step, or completes the run where no edge goes on. False when the run was not at `from`.
fn advance(
    tx: &Tx<'_>,
    id: WorkflowRunId,
    v: &VersionOut,
    from: (&str, RunStatus),
    branch: Option<bool>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let Some(next) = v.graph.next(from.0, branch) else {
        return runs::step(tx, id, from, (None, RunStatus::Completed), None, now);
    };
    let moved = runs::step(
        tx,
        id,
        from,
        (Some(&next.id), RunStatus::Running),
        None,
        now,
    )?;
    if moved {
        let job = WorkflowStep {
            run_id: id,
            node_id: next.id.clone(),
            waited: false,
        };
        jobs::enqueue(tx, &job, now)?;
    }
    Ok(moved)
}

fn customer_id(l: &Loaded) -> Result<CustomerId, StepError> {
    l.seen["customer"]["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| StepError::permanent("the run has no customer"))
}

async fn send_message(
    st: &AppState,
    l: &Loaded,
    m: &super::model::SendMessageConfig,
) -> Result<(), StepError> {
    let phone = l.seen["customer"]["phone"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| StepError::permanent("the run's customer has no phone number"))?;
    let store = l.store;
    let (channel, locale) = st
        .db
        .read(move |c| {
            let ch = crate::inbox::store::first_enabled_channel(c, store, ChannelKind::Msgapp)?;
            Ok((ch, store::locale(c, store)?))
        })
        .await?;
    let number = channel
        .as_ref()
        .and_then(|ch| ch.settings.get("phone_number_id"))
        .and_then(Value::as_str)
        .ok_or_else(|| StepError::permanent("the store has no enabled messaging-app channel"))?;
    let parameters: Vec<String> = m.parameters.iter().map(|p| render(p, &l.seen)).collect();
    let language = m
        .language
        .clone()
        .unwrap_or_else(|| locale.replace('-', "_"));
    let msg = crate::msgapp::TemplateMessage {
        phone_number_id: number,
        to: &phone,
        template: &m.template,
        language: &language,
        parameters: &parameters,
    };
    crate::msgapp::send_template(&st.cfg.msgapp, &st.db, msg, st.clock.now())
        .await
        .map(|_| ())
        .map_err(|e| StepError {
            permanent: e.is_permanent(),
            message: e.to_string(),
        })
}

async fn send_email(
    st: &AppState,
    l: &Loaded,
    e: &super::model::SendEmailConfig,
) -> Result<(), StepError> {
    use lettre::message::Mailbox;
    let Some(smtp) = st.cfg.smtp.clone() else {
        return Err(StepError::permanent(
            "e-mail sending is not available: the server has no SMTP sender",
        ));
    };
    let to: Mailbox = l.seen["customer"]["email"]
        .as_str()
        .and_then(|a| a.parse().ok())
        .map(|a| Mailbox::new(l.seen["customer"]["name"].as_str().map(str::to_owned), a))
        .ok_or_else(|| StepError::permanent("the run's customer has no e-mail address"))?;
    let store = l.store;
    let channel = st
        .db
        .read(move |c| crate::inbox::store::first_enabled_channel(c, store, ChannelKind::Email))
        .await?;
    let from: Mailbox = channel
        .as_ref()
        .and_then(|ch| {
            let address = ch.settings.get("address")?.as_str()?.parse().ok()?;
            Some(Mailbox::new(Some(ch.name.clone()), address))
        })
        .ok_or_else(|| {
            StepError::permanent("the store has no enabled e-mail channel to send from")
        })?;
    let mail = crate::mail::Outgoing {
        hello_name: from.email.domain().to_owned(),
        // Fresh for each send: a loop's second mail is not a duplicate of its first.
        message_id: format!("<{}@{}>", uuid::Uuid::now_v7(), from.email.domain()),
        from,
        to,
        subject: render(&e.subject, &l.seen),
        text: render(&e.body, &l.seen),
        in_reply_to: None,
        references: Vec::new(),
        date: st.clock.now(),
    };
    crate::threads::run_blocking(move || crate::mail::send(&smtp, &mail))
        .await
        .map_err(|e| StepError {
            permanent: e.is_permanent(),
            message: e.to_string(),
        })
}

/// The value at a dotted path (`order.total_cents`, `customer.tags`); Null where none.
fn at<'a>(seen: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .try_fold(seen, |v, key| match v {
            Value::Object(m) => m.get(key),
            Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        })
        .unwrap_or(&Value::Null)
}

/// Whether a condition's or a filter's predicate holds for what the run sees. A missing
/// field makes every comparison false (and `ne` true).
pub fn holds(p: &Predicate, seen: &Value) -> bool {
    let v = at(seen, &p.field);
    let want = p.value.as_ref().unwrap_or(&Value::Null);
    let num = |x: &Value| x.as_f64();
    match p.op {
        Op::Exists => !v.is_null(),
        Op::Eq => v == want,
        Op::Ne => v != want,
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => match (num(v), num(want)) {
            (Some(a), Some(b)) => match p.op {
                Op::Gt => a > b,
                Op::Gte => a >= b,
                Op::Lt => a < b,
                _ => a <= b,
            },
            _ => false,
        },
        Op::Contains => match (v, want) {
            (Value::Array(items), w) => items.contains(w),
            (Value::String(s), Value::String(w)) => s.contains(w.as_str()),
            _ => false,
        },
    }
}

/// Fills `{{path}}` fields from what the run sees (text as is, other values as JSON, a
/// missing field as nothing).
fn render(template: &str, seen: &Value) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open..].find("}}") else {
            break;
        };
        out.push_str(&rest[..open]);
        let path = rest[open + 2..open + close].trim();
        match at(seen, path) {
            Value::Null => {}
            Value::String(s) => out.push_str(s),
            other => {
                let _ = write!(out, "{other}");
            }
        }
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Op, Predicate, holds, render};

    fn p(field: &str, op: Op, value: serde_json::Value) -> Predicate {
        Predicate {
            field: field.into(),
            op,
            value: Some(value),
        }
    }

    #[test]
    fn predicates_read_dotted_paths_and_missing_fields_are_false() {
        let seen = json!({"order": {"total_cents": 12_000, "status": "delivered"},
                          "customer": {"tags": ["vip"], "name": "Ana Lima"}});
        assert!(holds(
            &p("order.total_cents", Op::Gte, json!(12_000)),
            &seen
        ));
        assert!(!holds(
            &p("order.total_cents", Op::Gt, json!(12_000)),
            &seen
        ));
        assert!(holds(&p("order.status", Op::Eq, json!("delivered")), &seen));
        assert!(holds(
            &p("customer.tags", Op::Contains, json!("vip")),
            &seen
        ));
        assert!(holds(
            &p("customer.name", Op::Contains, json!("Lima")),
            &seen
        ));
        assert!(!holds(&p("order.missing", Op::Lt, json!(1)), &seen));
        assert!(holds(&p("order.missing", Op::Ne, json!(1)), &seen));
        let exists = Predicate {
            field: "customer.tags.0".into(),
            op: Op::Exists,
            value: None,
        };
        assert!(holds(&exists, &seen));
    }

    #[test]
    fn fields_are_filled_from_the_subject() {
        let seen = json!({"customer": {"name": "Ana"}, "order": {"number": 1042}});
        assert_eq!(
            render(
                "Oi {{ customer.name }}, pedido #{{order.number}}{{order.none}}!",
                &seen
            ),
            "Oi Ana, pedido #1042!"
        );
        assert_eq!(render("no {{ end", &seen), "no {{ end");
    }
}
