//! The assistant's routes. Store-scoped ones take the store from the path; the unscoped
//! forms (`/assistant/conversations/{id}...`, `/assistant/proposals/{id}...`) find it from
//! the caller's own conversation or proposal, then run the same code.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::model::{
    ActionOut, ApproveQuery, AssistantConversationOut, ChatIn, ConversationPatch,
    ListConversationsQuery, Role, TranscriptMessage, UsageOut,
};
use super::proposals::{self, Decision};
use super::store::{self, NewMessage};
use super::tools;
use super::turn::{self, Caller};
use crate::audit::Actor;
use crate::error::{AppError, ErrorBody, ErrorCode};
use crate::http::auth::{Principal, StoreScope};
use crate::http::extract::{Json, Path, Query};
use crate::http::page::{Page, Paged};
use crate::http::permissions::Permission;
use crate::http::trace::TraceId;
use crate::ids::{ActionId, AssistantConversationId, ProposalId, StoreId};
use crate::state::AppState;

/// The longest message to the assistant.
const MAX_MESSAGE: usize = 8000;
/// A conversation's name (spec 8).
const MAX_NAME: usize = 120;

fn not_found() -> AppError {
    AppError::not_found("assistant conversation")
}

fn caller(scope: &StoreScope) -> Caller {
    Caller {
        store: scope.store_id,
        user: scope.principal.user_id,
        permissions: scope.permissions,
    }
}

/// The caller's standing in the store of their own conversation or proposal: 403
/// `not_a_member` once they have left it.
async fn scope_in(
    st: &AppState,
    principal: Principal,
    store: StoreId,
    trace: TraceId,
) -> Result<StoreScope, AppError> {
    StoreScope::resolve(st, principal, store, trace.0)
        .await
        .map_err(|e| {
            if e.code == ErrorCode::NotFound {
                AppError::new(
                    ErrorCode::NotAMember,
                    "you are no longer a member of this conversation's store",
                )
            } else {
                e
            }
        })
}

/// The store of the caller's conversation (unscoped paths).
async fn conversation_scope(
    st: &AppState,
    principal: Principal,
    trace: TraceId,
    id: AssistantConversationId,
) -> Result<StoreScope, AppError> {
    let user = principal.user_id;
    let store = st
        .db
        .read(move |c| store::conversation_store(c, user, id))
        .await?
        .ok_or_else(not_found)?;
    scope_in(st, principal, store, trace).await
}

/// Sends a message to the assistant and streams its turn as server-sent events:
/// `conversation` ({conversation_id}) first, then `text` ({delta}) as the model writes,
/// `tool_call` ({id, tool, arguments}) and `tool_result` ({id, tool, ok, result | error})
/// for the tools it runs, `proposal` ({proposal_id, tool, arguments, summary, risk,
/// expires_at}) for each write it proposes (nothing is written until approved), `stopped`
/// when stopped, `error` ({code, message}) when the model fails (what it said is kept), and
/// `done` last. Each message counts against the store's monthly cap: its plan's
/// `assistant_messages_per_store_per_month`, at most the operator's `--assistant-monthly-cap`
/// (429 `assistant_cap_reached` past it). While the organization's subscription is suspended
/// or canceled the assistant answers 402 `subscription_inactive` (`details {status}`).
#[utoipa::path(post, path = "/stores/{store_id}/assistant/chat", tag = "assistant",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)), request_body = ChatIn,
    responses((status = 200, content_type = "text/event-stream", description = "The turn, as server-sent events."),
              (status = 402, body = ErrorBody, description = "subscription_inactive"),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "assistant_busy"),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody, description = "assistant_cap_reached"),
              (status = 503, body = ErrorBody, description = "assistant_unavailable")))]
pub async fn chat(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<ChatIn>,
) -> Result<Response, AppError> {
    scope.require(Permission::AssistantUse)?;
    let model = turn::model(&st)?;
    let message = input.message;
    if message.trim().is_empty() || message.chars().count() > MAX_MESSAGE {
        return Err(AppError::field(
            "message",
            format!("must be 1 to {MAX_MESSAGE} characters"),
        ));
    }
    let (store_id, user, now) = (scope.store_id, scope.principal.user_id, st.clock.now());
    let (id, new) = match input.conversation_id {
        Some(id) => {
            st.db
                .read(move |c| store::get_conversation(c, store_id, user, id))
                .await?
                .ok_or_else(not_found)?;
            (id, false)
        }
        None => (AssistantConversationId::new(), true),
    };
    let guard = st.assistant.begin(id)?;
    let cfg = st.cfg.clone();
    st.db
        .write(move |tx| {
            let limits = (&*cfg.plans, cfg.assistant_monthly_cap);
            if let store::Slot::Full { cap } = store::take_message(tx, limits, store_id, now)? {
                let (_, _, end) = store::period(now);
                return Err(AppError::new(
                    ErrorCode::AssistantCapReached,
                    "the store has used this month's assistant messages",
                )
                .with_details(json!({"cap": cap, "used": cap,
                                     "period_end": crate::time::format(end)})));
            }
            if new {
                let name: String = message.trim().chars().take(60).collect();
                store::insert_conversation(tx, store_id, user, id, &name, now)?;
            }
            store::append(tx, id, &NewMessage::text(Role::User, &message), now)?;
            Ok(())
        })
        .await?;
    let (events, sse) = turn::channel();
    turn::spawn(
        st,
        Some(model),
        caller(&scope),
        id,
        guard,
        events,
        Vec::new(),
    );
    Ok(sse.into_response())
}

/// The caller's assistant conversations in the store, newest first; `search` matches the
/// name or any message.
#[utoipa::path(get, path = "/stores/{store_id}/assistant/conversations", tag = "assistant",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ListConversationsQuery),
    responses((status = 200, body = Page<AssistantConversationOut>)))]
pub async fn list_conversations(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, q): Paged<ListConversationsQuery>,
) -> Result<Json<Page<AssistantConversationOut>>, AppError> {
    scope.require(Permission::AssistantUse)?;
    let (store_id, user) = (scope.store_id, scope.principal.user_id);
    let search = q.search.filter(|s| !s.trim().is_empty());
    let s2 = search.clone();
    let page = page
        .list(
            &st.db,
            &format!("assistant-conversations:{store_id}:{user}"),
            move |c, after, limit, offset| {
                store::list_conversations(
                    c,
                    store_id,
                    user,
                    search.as_deref(),
                    after,
                    limit,
                    offset,
                )
            },
            move |c| store::count_conversations(c, store_id, user, s2.as_deref()),
            |c| (c.created_at.clone(), c.id.to_string()),
            |c| c,
        )
        .await?;
    Ok(Json(page))
}

async fn get_in(
    st: &AppState,
    scope: &StoreScope,
    id: AssistantConversationId,
) -> Result<AssistantConversationOut, AppError> {
    scope.require(Permission::AssistantUse)?;
    let (store_id, user, now) = (scope.store_id, scope.principal.user_id, st.clock.now());
    st.db
        .read(move |c| {
            let Some(mut conv) = store::get_conversation(c, store_id, user, id)? else {
                return Ok(None);
            };
            conv.pending_proposals = Some(store::pending_proposals(c, id, now)?);
            Ok(Some(conv))
        })
        .await?
        .ok_or_else(not_found)
}

/// One of the caller's conversations, with the proposals awaiting a decision.
#[utoipa::path(get, path = "/stores/{store_id}/assistant/conversations/{conversation_id}",
    tag = "assistant", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = AssistantConversationId, Path)),
    responses((status = 200, body = AssistantConversationOut), (status = 404, body = ErrorBody)))]
pub async fn get_conversation(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, AssistantConversationId)>,
) -> Result<Json<AssistantConversationOut>, AppError> {
    get_in(&st, &scope, ids.1).await.map(Json)
}

async fn rename_in(
    st: &AppState,
    scope: &StoreScope,
    id: AssistantConversationId,
    input: ConversationPatch,
) -> Result<AssistantConversationOut, AppError> {
    scope.require(Permission::AssistantUse)?;
    let name = input.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(AppError::field(
            "name",
            format!("must be 1 to {MAX_NAME} characters"),
        ));
    }
    let (store_id, user, now) = (scope.store_id, scope.principal.user_id, st.clock.now());
    let found = st
        .db
        .write(move |tx| store::rename_conversation(tx, store_id, user, id, &name, now))
        .await?;
    if !found {
        return Err(not_found());
    }
    get_in(st, scope, id).await
}

/// Renames one of the caller's conversations (`name`, 1 to 120 characters).
#[utoipa::path(patch, path = "/stores/{store_id}/assistant/conversations/{conversation_id}",
    tag = "assistant", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = AssistantConversationId, Path)),
    request_body = ConversationPatch,
    responses((status = 200, body = AssistantConversationOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn rename_conversation(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, AssistantConversationId)>,
    Json(input): Json<ConversationPatch>,
) -> Result<Json<AssistantConversationOut>, AppError> {
    rename_in(&st, &scope, ids.1, input).await.map(Json)
}

/// [`rename_conversation`] by the conversation alone.
#[utoipa::path(patch, path = "/assistant/conversations/{conversation_id}", tag = "assistant",
    security(("bearer" = [])), params(("conversation_id" = AssistantConversationId, Path)),
    request_body = ConversationPatch,
    responses((status = 200, body = AssistantConversationOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn rename_conversation_unscoped(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    Path(id): Path<AssistantConversationId>,
    Json(input): Json<ConversationPatch>,
) -> Result<Json<AssistantConversationOut>, AppError> {
    let scope = conversation_scope(&st, principal, trace, id).await?;
    rename_in(&st, &scope, id, input).await.map(Json)
}

async fn delete_in(
    st: &AppState,
    scope: &StoreScope,
    id: AssistantConversationId,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::AssistantUse)?;
    let (store_id, user) = (scope.store_id, scope.principal.user_id);
    // The turn is stopped first, so it writes nothing after the delete.
    st.db
        .read(move |c| store::get_conversation(c, store_id, user, id))
        .await?
        .ok_or_else(not_found)?;
    st.assistant.stop(id);
    let found = st
        .db
        .write(move |tx| store::delete_conversation(tx, store_id, user, id))
        .await?;
    if found {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found())
    }
}

/// Deletes one of the caller's conversations: stops its running turn, deletes its messages
/// and pending proposals; the actions it applied stay, and stay undoable.
#[utoipa::path(delete, path = "/stores/{store_id}/assistant/conversations/{conversation_id}",
    tag = "assistant", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = AssistantConversationId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn delete_conversation(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, AssistantConversationId)>,
) -> Result<StatusCode, AppError> {
    delete_in(&st, &scope, ids.1).await
}

/// [`delete_conversation`] by the conversation alone.
#[utoipa::path(delete, path = "/assistant/conversations/{conversation_id}", tag = "assistant",
    security(("bearer" = [])), params(("conversation_id" = AssistantConversationId, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete_conversation_unscoped(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    Path(id): Path<AssistantConversationId>,
) -> Result<StatusCode, AppError> {
    let scope = conversation_scope(&st, principal, trace, id).await?;
    delete_in(&st, &scope, id).await
}

async fn transcript_in(
    st: &AppState,
    scope: &StoreScope,
    id: AssistantConversationId,
    page: crate::http::page::PageParams,
) -> Result<Page<TranscriptMessage>, AppError> {
    scope.require(Permission::AssistantUse)?;
    let (store_id, user, now) = (scope.store_id, scope.principal.user_id, st.clock.now());
    st.db
        .read(move |c| store::get_conversation(c, store_id, user, id))
        .await?
        .ok_or_else(not_found)?;
    let who = caller(scope);
    page.list(
        &st.db,
        &format!("assistant-messages:{id}"),
        move |c, after, limit, offset| store::transcript(c, id, after, limit, offset, now),
        move |c| store::count_messages(c, id),
        |(_, seq)| (seq.to_string(), String::new()),
        |(mut m, _)| {
            if m.role == Role::Tool {
                m.content = turn::withheld(&who, m.tool.as_deref(), &m.content);
            }
            m
        },
    )
    .await
}

/// The whole transcript, oldest first and lossless: user and assistant text, tool calls,
/// tool results (`role` = `tool`), decisions, and on each proposing tool message its
/// proposal as it now stands (pending ones await a decision).
#[utoipa::path(get, path = "/stores/{store_id}/assistant/conversations/{conversation_id}/messages",
    tag = "assistant", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = AssistantConversationId, Path),
           crate::http::page::PageQuery),
    responses((status = 200, body = Page<TranscriptMessage>), (status = 404, body = ErrorBody)))]
pub async fn transcript(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, AssistantConversationId)>,
    Paged(page, _): Paged,
) -> Result<Json<Page<TranscriptMessage>>, AppError> {
    transcript_in(&st, &scope, ids.1, page).await.map(Json)
}

/// [`transcript`] by the conversation alone.
#[utoipa::path(get, path = "/assistant/conversations/{conversation_id}/messages",
    tag = "assistant", security(("bearer" = [])),
    params(("conversation_id" = AssistantConversationId, Path), crate::http::page::PageQuery),
    responses((status = 200, body = Page<TranscriptMessage>), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn transcript_unscoped(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    Path(id): Path<AssistantConversationId>,
    Paged(page, _): Paged,
) -> Result<Json<Page<TranscriptMessage>>, AppError> {
    let scope = conversation_scope(&st, principal, trace, id).await?;
    transcript_in(&st, &scope, id, page).await.map(Json)
}

/// Stops the conversation's running turn: its stream ends with `stopped` then `done`, and
/// what was said is kept. 204 always, whether a turn ran or not.
#[utoipa::path(post, path = "/stores/{store_id}/assistant/conversations/{conversation_id}/stop",
    tag = "assistant", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = AssistantConversationId, Path)),
    responses((status = 204)))]
pub async fn stop(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, AssistantConversationId)>,
) -> Result<StatusCode, AppError> {
    let (store_id, user, id) = (scope.store_id, scope.principal.user_id, ids.1);
    let own = st
        .db
        .read(move |c| store::get_conversation(c, store_id, user, id))
        .await?
        .is_some();
    if own && scope.permissions.contains(Permission::AssistantUse) {
        st.assistant.stop(id);
    }
    Ok(StatusCode::NO_CONTENT)
}

/// [`stop`] by the conversation alone.
#[utoipa::path(post, path = "/assistant/conversations/{conversation_id}/stop", tag = "assistant",
    security(("bearer" = [])), params(("conversation_id" = AssistantConversationId, Path)),
    responses((status = 204)))]
pub async fn stop_unscoped(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    Path(id): Path<AssistantConversationId>,
) -> Result<StatusCode, AppError> {
    // Nothing is said about conversations that are not the caller's: 204 all the same.
    if let Ok(scope) = conversation_scope(&st, principal, trace, id).await
        && scope.require(Permission::AssistantUse).is_ok()
    {
        st.assistant.stop(id);
    }
    Ok(StatusCode::NO_CONTENT)
}

fn no_proposal() -> AppError {
    AppError::not_found("pending proposal")
}

async fn decide_in(
    st: AppState,
    scope: StoreScope,
    id: ProposalId,
    decision: Decision,
) -> Result<Response, AppError> {
    scope.require(Permission::AssistantUse)?;
    let actor = Actor::of(&scope).via_assistant();
    // Its own task: a client hanging up mid-approval cannot leave a write done but its
    // action unrecorded.
    let (st2, who) = (st.clone(), caller(&scope));
    let d = tokio::spawn(async move { proposals::decide(&st2, &who, actor, id, decision).await })
        .await
        .map_err(|e| AppError::internal(anyhow::anyhow!("approval task: {e}")))??;
    let (events, sse) = turn::channel();
    turn::spawn(
        st,
        d.model,
        caller(&scope),
        d.conversation,
        d.guard,
        events,
        d.first,
    );
    Ok(sse.into_response())
}

/// Approves a proposal: its write runs now, through the same path as the REST route, with
/// the approver's permissions (403 `missing_permission` when they lack it); `destructive`,
/// `money` and `external` ones need `confirmed=true` (428 `confirmation_required`, it stays
/// pending). Streams the follow-up turn; the first event after `conversation` is a
/// `tool_result` ({proposal_id, tool, applied, action_id?, undoable?, result | error}).
/// Nothing is decided while the organization's subscription is suspended or canceled (402
/// `subscription_inactive`).
#[utoipa::path(post, path = "/stores/{store_id}/assistant/proposals/{proposal_id}/approve",
    tag = "assistant", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("proposal_id" = ProposalId, Path), ApproveQuery),
    responses((status = 200, content_type = "text/event-stream"),
              (status = 402, body = ErrorBody, description = "subscription_inactive"),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`assistant_busy` (another turn of the conversation runs) or `conflict` (the write no longer applies)"), (status = 428, body = ErrorBody, description = "`confirmation_required`: a risky proposal needs `confirmed=true`"),
              (status = 503, body = ErrorBody, description = "`assistant_unavailable`: no model is configured")))]
pub async fn approve(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ProposalId)>,
    Query(q): Query<ApproveQuery>,
) -> Result<Response, AppError> {
    let confirmed = q.confirmed.unwrap_or(false);
    decide_in(st, scope, ids.1, Decision::Approve { confirmed }).await
}

/// Declines a proposal: nothing is applied, the assistant is told, and its follow-up turn
/// is streamed (402 `subscription_inactive` while the subscription is suspended or canceled).
#[utoipa::path(post, path = "/stores/{store_id}/assistant/proposals/{proposal_id}/decline",
    tag = "assistant", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("proposal_id" = ProposalId, Path)),
    responses((status = 200, content_type = "text/event-stream"),
              (status = 402, body = ErrorBody, description = "subscription_inactive"),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`assistant_busy`"),
              (status = 503, body = ErrorBody, description = "`assistant_unavailable`")))]
pub async fn decline(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ProposalId)>,
) -> Result<Response, AppError> {
    decide_in(st, scope, ids.1, Decision::Decline).await
}

/// The store of the caller's proposal (unscoped paths).
async fn proposal_scope(
    st: &AppState,
    principal: Principal,
    trace: TraceId,
    id: ProposalId,
) -> Result<StoreScope, AppError> {
    let (user, now) = (principal.user_id, st.clock.now());
    let (store, _) = st
        .db
        .read(move |c| store::proposal_of(c, user, id, now))
        .await?
        .ok_or_else(no_proposal)?;
    scope_in(st, principal, store, trace).await
}

/// [`approve`] by the proposal alone.
#[utoipa::path(post, path = "/assistant/proposals/{proposal_id}/approve", tag = "assistant",
    security(("bearer" = [])), params(("proposal_id" = ProposalId, Path), ApproveQuery),
    responses((status = 200, content_type = "text/event-stream"),
              (status = 402, body = ErrorBody, description = "subscription_inactive"),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`assistant_busy` (another turn of the conversation runs) or `conflict` (the write no longer applies)"), (status = 428, body = ErrorBody, description = "`confirmation_required`: a risky proposal needs `confirmed=true`"),
              (status = 503, body = ErrorBody, description = "`assistant_unavailable`: no model is configured")))]
pub async fn approve_unscoped(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    Path(id): Path<ProposalId>,
    Query(q): Query<ApproveQuery>,
) -> Result<Response, AppError> {
    let scope = proposal_scope(&st, principal, trace, id).await?;
    let confirmed = q.confirmed.unwrap_or(false);
    decide_in(st, scope, id, Decision::Approve { confirmed }).await
}

/// [`decline`] by the proposal alone.
#[utoipa::path(post, path = "/assistant/proposals/{proposal_id}/decline", tag = "assistant",
    security(("bearer" = [])), params(("proposal_id" = ProposalId, Path)),
    responses((status = 200, content_type = "text/event-stream"),
              (status = 402, body = ErrorBody, description = "subscription_inactive"),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`assistant_busy`"),
              (status = 503, body = ErrorBody, description = "`assistant_unavailable`")))]
pub async fn decline_unscoped(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    Path(id): Path<ProposalId>,
) -> Result<Response, AppError> {
    let scope = proposal_scope(&st, principal, trace, id).await?;
    decide_in(st, scope, id, Decision::Decline).await
}

/// The writes the assistant made for the caller in this store, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/assistant/actions", tag = "assistant",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), crate::http::page::PageQuery),
    responses((status = 200, body = Page<ActionOut>)))]
pub async fn list_actions(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<ActionOut>>, AppError> {
    scope.require(Permission::AssistantUse)?;
    let (store_id, user) = (scope.store_id, scope.principal.user_id);
    let page = page
        .list(
            &st.db,
            &format!("assistant-actions:{store_id}:{user}"),
            move |c, after, limit, offset| {
                store::list_actions(c, store_id, user, after, limit, offset)
            },
            move |c| store::count_actions(c, store_id, user),
            |a| (a.created_at.clone(), a.id.to_string()),
            |a| a,
        )
        .await?;
    Ok(Json(page))
}

/// Takes back one of the caller's assistant actions through the same write path (a price or
/// a stock change is restored, a review reply put back as it was). 409
/// `action_already_undone`; 409 `conflict` when the price or reply was changed since (undo
/// would overwrite that change); 422 `undo_not_supported` for refunds, sent messages and order
/// status changes (the order lifecycle moves forward only).
#[utoipa::path(post, path = "/stores/{store_id}/assistant/actions/{action_id}/undo",
    tag = "assistant", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("action_id" = ActionId, Path)),
    responses((status = 200, body = ActionOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`action_already_undone` or `conflict` (changed since)"),
              (status = 422, body = ErrorBody)))]
pub async fn undo_action(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ActionId)>,
) -> Result<Json<ActionOut>, AppError> {
    scope.require(Permission::AssistantUse)?;
    let (store_id, user, id) = (scope.store_id, scope.principal.user_id, ids.1);
    let (action, undo) = st
        .db
        .read(move |c| store::get_action(c, store_id, user, id))
        .await?
        .ok_or_else(|| AppError::not_found("assistant action"))?;
    let already = || {
        AppError::new(
            ErrorCode::ActionAlreadyUndone,
            "this action was already undone",
        )
    };
    if action.undone_at.is_some() {
        return Err(already());
    }
    let Some(undo) = undo else {
        return Err(AppError::new(
            ErrorCode::UndoNotSupported,
            format!("{} cannot be undone", action.tool),
        ));
    };
    if let Some(t) = tools::find(&action.tool) {
        scope.require(t.permission)?;
    }
    let now = st.clock.now();
    // The gate two undos race through; put back if the write is refused.
    if !st
        .db
        .write(move |tx| store::mark_undone(tx, id, Some(now)))
        .await?
    {
        return Err(already());
    }
    let actor = Actor::of(&scope).via_assistant();
    if let Err(e) = tools::undo(
        &st,
        &actor,
        store_id,
        (&action.tool, &action.arguments),
        &undo,
    )
    .await
    {
        st.db
            .write(move |tx| store::mark_undone(tx, id, None))
            .await?;
        return Err(e);
    }
    st.db
        .read(move |c| store::get_action(c, store_id, user, id))
        .await?
        .map(|(a, _)| Json(a))
        .ok_or_else(|| AppError::not_found("assistant action"))
}

/// The store's use of the assistant this calendar month (UTC), and its cap (the plan's, at
/// most the operator's `--assistant-monthly-cap`).
#[utoipa::path(get, path = "/stores/{store_id}/assistant/usage", tag = "assistant",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)),
    responses((status = 200, body = UsageOut)))]
pub async fn usage(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Json<UsageOut>, AppError> {
    scope.require(Permission::AssistantUse)?;
    let (store_id, now, cfg) = (scope.store_id, st.clock.now(), st.cfg.clone());
    let (used, terms) = st
        .db
        .read(move |c| {
            let terms = crate::billing::limits::assistant_terms(
                c,
                &cfg.plans,
                cfg.assistant_monthly_cap,
                store_id,
            )?;
            Ok((store::used(c, store_id, now)?, terms))
        })
        .await?;
    let (_, start, end) = store::period(now);
    Ok(Json(UsageOut {
        used,
        cap: terms.cap,
        period_start: crate::time::format(start),
        period_end: crate::time::format(end),
    }))
}
