//! Deciding a proposal (spec 3): approve runs its write through the area's own write path
//! with the approver's permissions as they are now, decline applies nothing; either way the
//! model is told (a `decision` message) and the follow-up turn is the caller's to run. Used
//! by the HTTP routes and by messaging-app replies alike.

use serde_json::{Value, json};

use super::model::{ProposalStatus, Risk, Role};
use super::provider::ModelConfig;
use super::store::{self, NewAction, NewMessage};
use super::tools;
use super::turn::{self, Caller, TurnGuard};
use crate::audit::Actor;
use crate::error::{AppError, ErrorCode};
use crate::ids::{AssistantConversationId, ProposalId};
use crate::state::AppState;

/// Approve (with `confirmed`) or decline.
#[derive(Debug, Clone, Copy)]
pub enum Decision {
    Approve { confirmed: bool },
    Decline,
}

/// A decided proposal: what the follow-up turn needs.
pub struct Decided {
    pub model: ModelConfig,
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
            let applied = tools::apply(
                st,
                &actor,
                store_id,
                &p.tool,
                &p.arguments,
                format!("assistant-{id}"),
            )
            .await;
            let now = st.clock.now();
            let p2 = p.clone();
            match applied {
                Ok(a) => {
                    let undo = a.undo.clone();
                    let (rt, rid) = (a.resource_type, a.resource_id.clone());
                    let audited = a.audited;
                    let action = st
                        .db
                        .write(move |tx| {
                            // A write whose route keeps no audit entry (a team reply) gets
                            // one here, so every assistant write names its approver.
                            if !audited {
                                crate::audit::record(
                                    tx,
                                    &actor,
                                    &format!("{rt}.sent"),
                                    rt,
                                    &rid,
                                    now,
                                )?;
                            }
                            store::settle(tx, id, ProposalStatus::Applied, now)?;
                            store::insert_action(
                                tx,
                                &NewAction {
                                    store: store_id,
                                    user,
                                    proposal: &p2,
                                    resource_type: rt,
                                    resource_id: &rid,
                                    undo: undo.as_ref(),
                                },
                                now,
                            )
                        })
                        .await?;
                    first.push((
                        "tool_result",
                        json!({"proposal_id": p.id, "tool": p.tool, "applied": true,
                               "action_id": action, "undoable": a.undo.is_some(),
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
    let (conversation, now) = (p.conversation_id, st.clock.now());
    st.db
        .write(move |tx| {
            store::append(
                tx,
                conversation,
                &NewMessage::text(Role::Decision, &note),
                now,
            )?;
            Ok(())
        })
        .await?;
    Ok(Decided {
        model,
        guard,
        conversation,
        first,
    })
}
