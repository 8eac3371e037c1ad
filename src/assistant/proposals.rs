//! Deciding a proposal (spec 3): approve runs its write through the area's own write path
//! with the approver's permissions as they are now, decline applies nothing; either way the
//! model is told (a `decision` message) and the follow-up turn is the caller's to run. Used
//! by the HTTP routes and by messaging-app replies alike.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::model::{ProposalStatus, Risk, Role};
use super::provider::ModelConfig;
use super::store::{self, NewAction, NewMessage};
use super::tools;
use super::turn::{self, Caller, TurnGuard};
use crate::audit::{Actor, OnRecord};
use crate::error::{AppError, ErrorCode};
use crate::ids::{ActionId, AssistantConversationId, ProposalId, StoreId, UserId};
use crate::state::AppState;

/// Approve (with `confirmed`) or decline.
#[derive(Debug, Clone, Copy)]
pub enum Decision {
    Approve { confirmed: bool },
    Decline,
}

/// A decided proposal: what the follow-up turn needs.
pub struct Decided {
    /// None when the store's monthly cap is reached (or the subscription was suspended
    /// meanwhile): the decision stands, the model is not asked (`first` ends with the
    /// `error` saying so).
    pub model: Option<ModelConfig>,
    pub guard: TurnGuard,
    pub conversation: AssistantConversationId,
    /// The events that open the follow-up turn's stream (the approval's `tool_result`).
    pub first: Vec<(&'static str, Value)>,
}

fn no_proposal() -> AppError {
    AppError::not_found("pending proposal")
}

/// Decides the caller's pending proposal `id` in the caller's store. 404 when there is no
/// such pending proposal of theirs (decided, expired, another's); 503 without a model; on
/// approval 403 `missing_permission` without the write's permission and 428
/// `confirmation_required` for a risky one without `confirmed`; 409 `assistant_busy`
/// while a turn of its conversation runs. A refused write is not an error: the proposal
/// fails and the `tool_result` says why.
pub async fn decide(
    st: &AppState,
    caller: &Caller,
    actor: Actor,
    id: ProposalId,
    decision: Decision,
) -> Result<Decided, AppError> {
    let (store_id, user, now) = (caller.store, caller.user, st.clock.now());
    let (_, p) = st
        .db
        .read(move |c| store::proposal_of(c, user, id, now))
        .await?
        .filter(|(s, p)| *s == store_id && p.status == ProposalStatus::Pending)
        .ok_or_else(no_proposal)?;
    let model = turn::model(st)?;
    let tool = tools::find(&p.tool).ok_or_else(no_proposal)?;
    // The follow-up is a turn of the assistant, which answers nothing while the subscription
    // is suspended or canceled: 402 before anything is decided.
    let cfg = st.cfg.clone();
    st.db
        .read(move |c| {
            crate::billing::limits::assistant_terms(
                c,
                &cfg.plans,
                cfg.assistant_monthly_cap,
                store_id,
            )?
            .active_cap()
        })
        .await?;
    if let Decision::Approve { confirmed } = decision {
        // The permission the write needs is the approver's now, not when it was proposed.
        if !caller.permissions.contains(tool.permission) {
            return Err(crate::http::auth::missing_permission(tool.permission));
        }
        if p.risk != Risk::None && !confirmed {
            return Err(AppError::new(
                ErrorCode::ConfirmationRequired,
                format!(
                    "this change is {}: approve again with confirmed=true",
                    p.risk.as_str()
                ),
            )
            .with_details(json!({"proposal_id": p.id, "risk": p.risk, "summary": p.summary})));
        }
    }
    let guard = st.assistant.begin(p.conversation_id)?;
    let to = match decision {
        Decision::Approve { .. } => ProposalStatus::Applying,
        Decision::Decline => ProposalStatus::Declined,
    };
    // The gate: of two approvals (or an approval and a decline), one wins.
    if !st
        .db
        .write(move |tx| store::decide(tx, user, id, to, now))
        .await?
    {
        return Err(no_proposal());
    }
    let mut first = Vec::new();
    let note = match decision {
        Decision::Decline => format!(
            "The user declined proposal {} ({}). Nothing was changed.",
            p.id, p.summary
        ),
        Decision::Approve { .. } => {
            // The action is recorded in the write's own transaction where the area audits
            // it (the hook runs there, once); `recorded` says whether it did.
            let recorded: Arc<Mutex<Option<ActionId>>> = Arc::default();
            let record = |planned: &tools::Planned| {
                let (p, slot) = (p.clone(), recorded.clone());
                let (rt, rid, undo) = (
                    planned.resource_type,
                    planned.resource_id.clone(),
                    planned.undo.clone(),
                );
                let clock = st.clock.clone();
                OnRecord::new(move |tx| {
                    let action = record_action(
                        tx,
                        &p,
                        (store_id, user),
                        (rt, &rid, undo.as_ref()),
                        clock.now(),
                    )?;
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(action);
                    Ok(())
                })
            };
            let applied = tools::apply(
                st,
                &actor,
                store_id,
                &p.tool,
                &p.arguments,
                format!("assistant-{id}"),
                &record,
            )
            .await;
            let now = st.clock.now();
            match applied {
                Ok(a) => {
                    let within = recorded
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take();
                    let action = match within {
                        Some(action) => action,
                        None => {
                            // Written without an audit entry of ours in its transaction (a
                            // team reply, a refund settled later, a change that changed
                            // nothing): recorded now.
                            let (p2, pl, audited) = (p.clone(), a.planned.clone(), a.audited);
                            let actor = actor.clone();
                            st.db
                                .write(move |tx| {
                                    if !audited {
                                        crate::audit::record(
                                            tx,
                                            &actor,
                                            &format!("{}.sent", pl.resource_type),
                                            pl.resource_type,
                                            &pl.resource_id,
                                            now,
                                        )?;
                                    }
                                    record_action(
                                        tx,
                                        &p2,
                                        (store_id, user),
                                        (pl.resource_type, &pl.resource_id, pl.undo.as_ref()),
                                        now,
                                    )
                                })
                                .await?
                        }
                    };
                    first.push((
                        "tool_result",
                        json!({"proposal_id": p.id, "tool": p.tool, "applied": true,
                               "action_id": action, "undoable": a.planned.undo.is_some(),
                               "result": a.result}),
                    ));
                    // What the model is told of the result: enough to answer from.
                    let result: String = a.result.to_string().chars().take(2000).collect();
                    format!(
                        "The user approved proposal {} ({}). It was applied. Result: {result}",
                        p.id, p.summary
                    )
                }
                Err(e) => {
                    st.db
                        .write(move |tx| store::settle(tx, id, ProposalStatus::Failed, now))
                        .await?;
                    first.push((
                        "tool_result",
                        json!({"proposal_id": p.id, "tool": p.tool, "applied": false,
                               "error": {"code": e.code, "message": e.message}}),
                    ));
                    format!(
                        "The user approved proposal {} ({}), but it was refused: {} ({}). \
                         Nothing was changed.",
                        p.id,
                        p.summary,
                        e.message,
                        json!(e.code).as_str().unwrap_or_default()
                    )
                }
            }
        }
    };
    let (conversation, now, cfg) = (p.conversation_id, st.clock.now(), st.cfg.clone());
    // The follow-up turn asks the model again: it counts against the cap like a message. The
    // decision stands whatever the count finds (a subscription suspended since the check
    // above included).
    let refused = st
        .db
        .write(move |tx| {
            store::append(
                tx,
                conversation,
                &NewMessage::text(Role::Decision, &note),
                now,
            )?;
            let limits = (&*cfg.plans, cfg.assistant_monthly_cap);
            Ok(match store::take_message(tx, limits, store_id, now) {
                Ok(store::Slot::Taken) => None,
                Ok(store::Slot::Full { .. }) => Some((
                    ErrorCode::AssistantCapReached,
                    "the store has used this month's assistant messages".to_owned(),
                )),
                Err(e) if e.code == ErrorCode::SubscriptionInactive => Some((e.code, e.message)),
                Err(e) => return Err(e),
            })
        })
        .await?;
    let counted = refused.is_none();
    if let Some((code, why)) = refused {
        first.push((
            "error",
            json!({"code": code, "message": format!("the decision stands; {why}")}),
        ));
    }
    Ok(Decided {
        model: counted.then_some(model),
        guard,
        conversation,
        first,
    })
}

/// Marks the proposal applied and records its action, in the caller's transaction.
fn record_action(
    tx: &crate::db::Tx<'_>,
    p: &super::model::ProposalOut,
    (store, user): (StoreId, UserId),
    (resource_type, resource_id, undo): (&str, &str, Option<&Value>),
    now: chrono::DateTime<chrono::Utc>,
) -> Result<ActionId, AppError> {
    store::settle(tx, p.id, ProposalStatus::Applied, now)?;
    store::insert_action(
        tx,
        &NewAction {
            store,
            user,
            proposal: p,
            resource_type,
            resource_id,
            undo,
        },
        now,
    )
}

/// A write another area asked the model for outside a chat (a brand system generated from
/// a prompt, issue 18), to store as a proposal the user decides like any other.
pub struct Outside<'a> {
    pub store: StoreId,
    pub user: UserId,
    /// What the user asked, the conversation's first message (and its name, cut short).
    pub request: &'a str,
    /// A write tool of [`tools::TOOLS`] and its checked arguments.
    pub tool: &'static str,
    pub arguments: &'a Value,
    pub summary: &'a str,
    pub risk: Risk,
}

/// Stores `o` as a pending proposal in a new conversation of its user, in the caller's
/// transaction: the request as the user's message, the model's call of the write tool, and
/// the proposal awaiting approval, so approving or declining it streams a follow-up turn
/// like any proposal's.
pub fn propose_outside_turn(
    tx: &crate::db::Tx<'_>,
    o: &Outside<'_>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<super::model::ProposalOut, AppError> {
    let conversation = AssistantConversationId::new();
    let name: String = o.request.trim().chars().take(60).collect();
    store::insert_conversation(tx, o.store, o.user, conversation, &name, now)?;
    store::append(
        tx,
        conversation,
        &NewMessage::text(Role::User, o.request),
        now,
    )?;
    let id = ProposalId::new();
    let call = super::provider::ToolCall {
        id: format!("call_{}", id.0.simple()),
        name: o.tool.to_owned(),
        arguments: o.arguments.to_string(),
    };
    store::append(
        tx,
        conversation,
        &NewMessage {
            tool_calls: Some(std::slice::from_ref(&call)),
            ..NewMessage::text(Role::Assistant, "")
        },
        now,
    )?;
    store::propose(
        tx,
        &store::NewProposal {
            id,
            store: o.store,
            user: o.user,
            conversation,
            tool_call_id: &call.id,
            tool: o.tool,
            arguments: o.arguments,
            summary: o.summary,
            risk: o.risk,
            expires_at: now + turn::PROPOSAL_TTL,
        },
        now,
    )?;
    store::proposal_by_id_unscoped(tx, id, now)
}
