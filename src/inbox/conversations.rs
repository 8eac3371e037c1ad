//! Conversation handlers for the team (spec 4.8): the inbox list and counts, one
//! conversation, its messages, replies, notes, read marks and changes.

use axum::extract::{FromRequest, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};

use super::attachments::MessageBody;
use super::events;
use super::model::{
    ConversationCounts, ConversationDetail, ConversationFilter, ConversationOut, ConversationPatch,
    ConversationPatchIn, ConversationSort, ConversationStatus, InboxRow, MessageFilter, MessageIn,
    MessageOut, NoteIn, NoteOut, Sent, TypingIn,
};
use super::store::{self, ConversationChange, InboxQuery, MessageRange};
use crate::audit::{self, Actor};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageParams, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{ConversationId, MessageId, NoteId, StoreId, UserId};
use crate::state::AppState;
use crate::time;

type ErrorBody = crate::error::ErrorBody;

pub fn not_found() -> AppError {
    AppError::not_found("conversation")
}

/// The longest message, in characters (spec 7: `message_too_long`).
pub const MAX_MESSAGE_CHARS: usize = 4096;

/// A message's text as sent: 422 `empty_message` when blank, `message_too_long` past 4096
/// characters. Nothing is stored for either.
pub fn message_text(v: &str) -> Result<String, AppError> {
    if v.trim().is_empty() {
        return Err(AppError::new(
            ErrorCode::EmptyMessage,
            "the message has no text",
        ));
    }
    if v.chars().count() > MAX_MESSAGE_CHARS {
        return Err(AppError::new(
            ErrorCode::MessageTooLong,
            format!("a message holds at most {MAX_MESSAGE_CHARS} characters"),
        ));
    }
    Ok(v.to_owned())
}

/// The inbox, newest activity first unless `sort` says otherwise.
#[utoipa::path(get, path = "/stores/{store_id}/conversations", tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ConversationFilter, PageQuery),
    responses((status = 200, body = Page<InboxRow>), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn list_conversations(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<ConversationFilter>,
) -> Result<Json<Page<InboxRow>>, AppError> {
    scope.require(Permission::ConversationsRead)?;
    let assignee = match f.assignee.as_deref() {
        None => None,
        Some("me") => Some(Some(scope.principal.user_id)),
        Some("none") => Some(None),
        Some(id) => Some(Some(id.parse::<UserId>().map_err(|_| {
            AppError::field("assignee", "must be me, none or a user id")
        })?)),
    };
    let q = InboxQuery {
        search: f.search.filter(|s| !s.trim().is_empty()),
        channel_kind: f.channel_kind,
        status: f.status,
        priority: f.priority,
        assignee,
        sort: f.sort.unwrap_or(ConversationSort::NewestActivity),
    };
    let store_id = scope.store_id;
    // Cursors are bound to the list's filters and order.
    let list_scope = format!("conversations:{store_id}:{q:?}");
    let q2 = q.clone();
    let page = page
        .list(
            &st.db,
            &list_scope,
            move |c, after, limit, offset| store::list_rows(c, store_id, &q, after, limit, offset),
            move |c| store::count_rows(c, store_id, &q2),
            |(_, position)| position.clone(),
            |(row, _)| row,
        )
        .await?;
    Ok(Json(page))
}

/// The inbox badges: conversations by status, open and unassigned, open and the caller's.
#[utoipa::path(get, path = "/stores/{store_id}/conversations/counts", tag = "inbox",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)),
    responses((status = 200, body = ConversationCounts), (status = 403, body = ErrorBody)))]
pub async fn counts(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Json<ConversationCounts>, AppError> {
    scope.require(Permission::ConversationsRead)?;
    let (store_id, me) = (scope.store_id, scope.principal.user_id);
    Ok(Json(
        st.db.read(move |c| store::counts(c, store_id, me)).await?,
    ))
}

/// One conversation: its inbox row and its internal notes.
#[utoipa::path(get, path = "/stores/{store_id}/conversations/{conversation_id}", tag = "inbox",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    responses((status = 200, body = ConversationDetail), (status = 404, body = ErrorBody)))]
pub async fn get_conversation(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
) -> Result<Json<ConversationDetail>, AppError> {
    scope.require(Permission::ConversationsRead)?;
    let (store_id, id) = (scope.store_id, ids.1);
    let detail = st
        .db
        .read(move |c| {
            let row = store::get_row(c, store_id, id)?.ok_or_else(not_found)?;
            let notes = store::notes(c, id)?;
            Ok(ConversationDetail { row, notes })
        })
        .await?;
    Ok(Json(detail))
}

/// Changes status, priority, assignee or labels.
#[utoipa::path(patch, path = "/stores/{store_id}/conversations/{conversation_id}", tag = "inbox",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    request_body = ConversationPatchIn,
    responses((status = 200, body = ConversationOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn update_conversation(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
    Json(input): Json<ConversationPatch>,
) -> Result<Json<ConversationOut>, AppError> {
    scope.require(Permission::ConversationsWrite)?;
    let now = st.clock.now();
    let snoozed_until = snooze(&input, now)?;
    let labels = input.labels.as_deref().map(labels).transpose()?;
    let change = ConversationChange {
        status: input.status,
        priority: input.priority,
        assignee: input.assignee_user_id,
        labels,
        snoozed_until,
    };
    let (store_id, id, actor) = (scope.store_id, ids.1, Actor::of(&scope));
    let hub = st.hub.clone();
    let out = st
        .db
        .write_publish(
            move |tx| {
                if let Some(Some(user)) = change.assignee
                    && crate::auth::store::store_role(tx, store_id, user)?.is_none()
                {
                    return Err(AppError::field(
                        "assignee_user_id",
                        "is not a member of this store",
                    ));
                }
                if !store::update_conversation(tx, store_id, id, &change, now)? {
                    return Err(not_found());
                }
                if let Some(until) = &change.snoozed_until {
                    super::snooze::schedule(tx, store_id, id, until, now)?;
                }
                audit::record(
                    tx,
                    &actor,
                    "conversation.updated",
                    "conversation",
                    &id.to_string(),
                    now,
                )?;
                let out = store::get_conversation(tx, store_id, id)?.ok_or_else(not_found)?;
                let frames = events::conversation_updated(&out);
                Ok((out, frames))
            },
            move |frames| hub.publish(&frames),
        )
        .await?;
    Ok(Json(out))
}

/// `snoozed_until` belongs with `status: snoozed` (and is needed there); it is a future time.
fn snooze(p: &ConversationPatch, now: DateTime<Utc>) -> Result<Option<String>, AppError> {
    match (p.status, p.snoozed_until.as_deref()) {
        (Some(ConversationStatus::Snoozed), Some(t)) => {
            let at = time::parse(t).filter(|at| *at > now).ok_or_else(|| {
                AppError::field("snoozed_until", "must be a future RFC 3339 time")
            })?;
            Ok(Some(time::format(at)))
        }
        (Some(ConversationStatus::Snoozed), None) => Err(AppError::field(
            "snoozed_until",
            "is required with status snoozed",
        )),
        (_, Some(_)) => Err(AppError::field("snoozed_until", "goes with status snoozed")),
        (_, None) => Ok(None),
    }
}

fn labels(list: &[String]) -> Result<Vec<String>, AppError> {
    if list.len() > 20 {
        return Err(AppError::field("labels", "at most 20 labels"));
    }
    let mut out: Vec<String> = Vec::new();
    for l in list {
        let l = text("labels", l.trim(), 1, 50)?;
        if !out.contains(&l) {
            out.push(l);
        }
    }
    Ok(out)
}

/// The messages a list asks for, checked against the conversation.
fn message_range(
    c: &rusqlite::Connection,
    id: ConversationId,
    f: &MessageFilter,
) -> Result<MessageRange, AppError> {
    let seq = |field: &str, m: MessageId| {
        store::message_seq(c, id, m)?
            .ok_or_else(|| AppError::field(field, "is not a message of this conversation"))
    };
    Ok(match (f.after, f.before) {
        (Some(_), Some(_)) => {
            return Err(AppError::field("before", "cannot be used with after"));
        }
        (Some(after), None) => MessageRange::Oldest {
            after: seq("after", after)?,
        },
        (None, Some(before)) => MessageRange::Newest {
            before: Some(seq("before", before)?),
        },
        (None, None) if f.created_after.is_some() => MessageRange::Oldest { after: 0 },
        (None, None) => MessageRange::Newest { before: None },
    })
}

/// A page of a conversation's messages, newest first; with `after` (or `created_after`)
/// oldest first. The catch-up recipe (spec 6.4): `after=<last id>&limit=100`, then the same
/// `after` with `cursor=<next_cursor>` while `has_more`.
pub async fn list_messages_in(
    st: &AppState,
    store_id: StoreId,
    id: ConversationId,
    page: PageParams,
    f: MessageFilter,
) -> Result<Page<MessageOut>, AppError> {
    let created_after = f
        .created_after
        .as_deref()
        .map(|t| {
            time::parse(t)
                .map(time::format)
                .ok_or_else(|| AppError::field("created_after", "must be an RFC 3339 time"))
        })
        .transpose()?;
    let range = st
        .db
        .read(move |c| {
            store::get_conversation(c, store_id, id)?.ok_or_else(not_found)?;
            message_range(c, id, &f)
        })
        .await?;
    let list_scope = format!("messages:{id}:{range:?}:{created_after:?}");
    let ca = created_after.clone();
    page.list(
        &st.db,
        &list_scope,
        move |c, after, limit, offset| {
            store::list_messages(c, id, range, created_after.as_deref(), after, limit, offset)
        },
        move |c| store::count_messages(c, id, range, ca.as_deref()),
        |(_, seq)| (seq.to_string(), String::new()),
        |(m, _)| m.linked(st.public_url()),
    )
    .await
}

/// A page of a conversation's messages, newest first; with `after` (or `created_after`)
/// oldest first, for catching up after a reconnect (spec 6.4).
#[utoipa::path(get, path = "/stores/{store_id}/conversations/{conversation_id}/messages",
    tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path), MessageFilter,
           PageQuery),
    responses((status = 200, body = Page<MessageOut>), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn list_messages(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
    Paged(page, f): Paged<MessageFilter>,
) -> Result<Json<Page<MessageOut>>, AppError> {
    scope.require(Permission::ConversationsRead)?;
    Ok(Json(
        list_messages_in(&st, scope.store_id, ids.1, page, f).await?,
    ))
}

/// Sends the team's reply. `Idempotency-Key` is recommended: a retry sends nothing twice.
/// JSON `{text}`, or `multipart/form-data` with a `text` field and up to 4 file parts of
/// 16 MiB each (413 `payload_too_large` past it); a message with files may have no text.
#[utoipa::path(post, path = "/stores/{store_id}/conversations/{conversation_id}/messages",
    tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    request_body(content(
        (MessageIn = "application/json"),
        (super::attachments::MessageUpload = "multipart/form-data"))),
    responses((status = 201, body = Sent), (status = 404, body = ErrorBody),
              (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn send_message(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
    req: axum::extract::Request,
) -> Result<(StatusCode, Json<Sent>), AppError> {
    // Before the body is read: a caller who may not send does not get to upload 64 MiB.
    scope.require(Permission::ConversationsWrite)?;
    let MessageBody { text, files } = MessageBody::from_request(req, &st).await?;
    let sent = super::writes::send_agent_message(
        &st,
        &Actor::of(&scope),
        scope.store_id,
        ids.1,
        text,
        files,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(sent)))
}

/// The message just written and its conversation as it now is.
pub fn sent(
    c: &rusqlite::Connection,
    store_id: StoreId,
    id: ConversationId,
    message: MessageId,
) -> Result<Sent, AppError> {
    Ok(Sent {
        message: store::get_message(c, message)?.ok_or_else(not_found)?,
        conversation: store::get_conversation(c, store_id, id)?.ok_or_else(not_found)?,
    })
}

/// Adds an internal note: the team sees it, the contact never does.
#[utoipa::path(post, path = "/stores/{store_id}/conversations/{conversation_id}/notes",
    tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    request_body = NoteIn,
    responses((status = 201, body = NoteOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn add_note(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
    Json(input): Json<NoteIn>,
) -> Result<(StatusCode, Json<NoteOut>), AppError> {
    scope.require(Permission::ConversationsWrite)?;
    let text = text("text", &input.text, 1, MAX_MESSAGE_CHARS)?;
    let (store_id, id, now) = (scope.store_id, ids.1, st.clock.now());
    let note = NoteOut {
        id: NoteId::new(),
        conversation_id: id,
        author_user_id: Some(scope.principal.user_id),
        text,
        created_at: time::format(now),
    };
    let out = note.clone();
    st.db
        .write(move |tx| {
            store::get_conversation(tx, store_id, id)?.ok_or_else(not_found)?;
            store::insert_note(tx, store_id, &note)
        })
        .await?;
    st.hub.publish(&[events::note(store_id, &out)]);
    Ok((StatusCode::CREATED, Json(out)))
}

/// Marks the contact's messages read by the team; the unread count drops to zero.
#[utoipa::path(post, path = "/stores/{store_id}/conversations/{conversation_id}/read",
    tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn mark_read(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::ConversationsWrite)?;
    let (store_id, id, now) = (scope.store_id, ids.1, st.clock.now());
    let c = st
        .db
        .write(move |tx| {
            if !store::mark_read(tx, store_id, id, false, now)? {
                return Err(not_found());
            }
            store::get_conversation(tx, store_id, id)?.ok_or_else(not_found)
        })
        .await?;
    st.hub.publish(&events::conversation_updated(&c)[..1]);
    Ok(StatusCode::NO_CONTENT)
}

/// The team member is typing (or stopped): the same as the socket's `typing` frame.
#[utoipa::path(post, path = "/stores/{store_id}/conversations/{conversation_id}/typing",
    tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path)),
    request_body = TypingIn,
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn typing(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ConversationId)>,
    Json(input): Json<TypingIn>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::ConversationsWrite)?;
    let (store_id, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_conversation(c, store_id, id))
        .await?
        .ok_or_else(not_found)?;
    st.hub.publish(&super::sockets::typing_frames(
        store_id,
        id,
        "agent",
        Some(scope.principal.user_id),
        input.typing,
    ));
    Ok(StatusCode::NO_CONTENT)
}
