//! The widget's public routes (no account): a shopper's browser opens a conversation on a
//! chat channel, named by its public key, and then holds the visitor token that conversation
//! answers to. Origins are checked against the channel's `allowed_origins`.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::conversations::{list_messages_in, message_text, not_found, sent};
use super::events;
use super::hub::{Audience, Frame};
use super::model::{
    ChannelKind, ChannelOut, Contact, DeliveryStatus, MessageFilter, MessageIn, MessageOut, Sender,
};
use super::store::{self, NewConversation, NewMessage};
use crate::error::{AppError, ErrorCode};
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::ids::{ConversationId, MessageId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// Header a client may carry the visitor token in instead of `Authorization: Bearer`.
pub const VISITOR_TOKEN_HEADER: &str = "x-visitor-token";

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VisitorIn {
    pub name: Option<String>,
    pub email: Option<String>,
}

/// What the shopper's send answers: the message, and the four fields of the conversation
/// the widget shows (spec 6.3).
#[derive(Debug, Serialize, ToSchema)]
pub struct VisitorSent {
    pub message: MessageOut,
    #[schema(value_type = Object)]
    pub conversation: serde_json::Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VisitorConversation {
    pub conversation_id: ConversationId,
    /// Send it back as `Authorization: Bearer` or `X-Visitor-Token` (and as `token` on
    /// `/ws/widget`); it is shown only here.
    pub visitor_token: String,
}

/// The chat channel a widget names, if the request may use it: unknown key 404, a disabled
/// channel or an origin it does not allow 403. A request without `Origin` (not a browser)
/// is not held to the list.
pub fn chat_channel(
    c: &rusqlite::Connection,
    key: &str,
    origin: Option<&str>,
) -> Result<ChannelOut, AppError> {
    let ch = store::channel_by_key(c, key)?
        .filter(|ch| ch.kind == ChannelKind::StorefrontChat)
        .ok_or_else(|| AppError::not_found("channel"))?;
    if !ch.enabled {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "this chat channel is turned off",
        ));
    }
    if let Some(o) = origin
        && !ch.allowed_origins.is_empty()
        && !ch.allowed_origins.iter().any(|a| a == o)
    {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "this site may not use this chat channel",
        ));
    }
    Ok(ch)
}

/// The request's `Origin`, when it has a readable one (a browser's).
pub fn origin(h: &HeaderMap) -> Option<String> {
    h.get(header::ORIGIN)?.to_str().ok().map(str::to_owned)
}

/// The visitor token of a request: `Authorization: Bearer` or `X-Visitor-Token`.
pub fn visitor_token(h: &HeaderMap) -> Option<String> {
    if let Some(v) = h.get(VISITOR_TOKEN_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(v.to_owned());
    }
    let v = h.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// The widget's conversation, if `token` is its visitor token: 404 unknown conversation,
/// 401 a wrong token (compared in constant time).
pub fn visitor_conversation(
    c: &rusqlite::Connection,
    ch: &ChannelOut,
    id: ConversationId,
    token: Option<&str>,
) -> Result<(), AppError> {
    let hash = store::visitor_token_hash(c, ch.store_id, ch.id, id)?.ok_or_else(not_found)?;
    let given = token.map(crate::secrets::hash).unwrap_or_default();
    if hash.is_some_and(|h| crate::secrets::same(&h, &given)) {
        Ok(())
    } else {
        Err(AppError::new(
            ErrorCode::Unauthorized,
            "missing or wrong visitor token",
        ))
    }
}

/// Opens a conversation on a chat channel for a shopper; the name and e-mail are optional.
#[utoipa::path(post, path = "/widget/{key}/conversations", tag = "widget",
    params(("key" = String, Path, description = "The chat channel's public key")),
    request_body = VisitorIn,
    responses((status = 201, body = VisitorConversation), (status = 403, body = ErrorBody, description = "`forbidden`: the channel is off or the origin is not allowed"),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn open_conversation(
    State(st): State<AppState>,
    Path(key): Path<String>,
    headers: HeaderMap,
    Json(input): Json<VisitorIn>,
) -> Result<axum::response::Response, AppError> {
    let name = input
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| text("name", n, 1, 120))
        .transpose()?;
    let email = input
        .email
        .as_deref()
        .map(crate::text::normalize_email)
        .filter(|e| !e.is_empty())
        .map(|e| {
            if crate::text::looks_like_email(&e) {
                Ok(e)
            } else {
                Err(AppError::field("email", "is not an e-mail address"))
            }
        })
        .transpose()?;
    let token = crate::secrets::new_token("vt_");
    let hash = crate::secrets::hash(&token);
    let (origin, now, id) = (origin(&headers), st.clock.now(), ConversationId::new());
    st.db
        .write(move |tx| {
            let ch = chat_channel(tx, &key, origin.as_deref())?;
            store::insert_conversation(
                tx,
                &NewConversation {
                    id,
                    store: ch.store_id,
                    channel: ch.id,
                    kind: ch.kind,
                    contact: &Contact {
                        name,
                        email,
                        phone: None,
                    },
                    visitor_token_hash: Some(&hash),
                },
                now,
            )
        })
        .await?;
    // It carries the visitor token: never kept for an idempotent replay, never cached.
    Ok(crate::http::idempotency::no_store((
        StatusCode::CREATED,
        Json(VisitorConversation {
            conversation_id: id,
            visitor_token: token,
        }),
    )))
}

/// The conversation's messages, as the team's list (newest first; `after` oldest first).
#[utoipa::path(get, path = "/widget/{key}/conversations/{conversation_id}/messages", tag = "widget",
    params(("key" = String, Path), ("conversation_id" = ConversationId, Path), MessageFilter,
           PageQuery),
    responses((status = 200, body = Page<MessageOut>), (status = 401, body = ErrorBody, description = "`unauthorized`: a wrong visitor token"),
              (status = 404, body = ErrorBody)))]
pub async fn list_messages(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, ConversationId)>,
    headers: HeaderMap,
    Paged(page, f): Paged<MessageFilter>,
) -> Result<Json<Page<MessageOut>>, AppError> {
    let ch = visitor_check(&st, key, id, &headers).await?;
    Ok(Json(list_messages_in(&st, ch.store_id, id, page, f).await?))
}

async fn visitor_check(
    st: &AppState,
    key: String,
    id: ConversationId,
    headers: &HeaderMap,
) -> Result<ChannelOut, AppError> {
    let (origin, token) = (origin(headers), visitor_token(headers));
    st.db
        .read(move |c| {
            let ch = chat_channel(c, &key, origin.as_deref())?;
            visitor_conversation(c, &ch, id, token.as_deref())?;
            Ok(ch)
        })
        .await
}

/// The shopper's message.
#[utoipa::path(post, path = "/widget/{key}/conversations/{conversation_id}/messages", tag = "widget",
    params(("key" = String, Path), ("conversation_id" = ConversationId, Path)),
    request_body = MessageIn,
    responses((status = 201, body = VisitorSent), (status = 401, body = ErrorBody, description = "`unauthorized`: a wrong visitor token"),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn send_message(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, ConversationId)>,
    headers: HeaderMap,
    Json(input): Json<MessageIn>,
) -> Result<(StatusCode, Json<VisitorSent>), AppError> {
    let text = message_text(&input.text)?;
    let (origin, token, clock) = (origin(&headers), visitor_token(&headers), st.clock.clone());
    let (hub, link) = (st.hub.clone(), st.public_url().to_owned());
    let sent = st
        .db
        .write_publish(
            move |tx| {
                // Read on the writer: message times follow commit order (`created_after`).
                let now = clock.now();
                let ch = chat_channel(tx, &key, origin.as_deref())?;
                visitor_conversation(tx, &ch, id, token.as_deref())?;
                let mid = MessageId::new();
                store::insert_message(
                    tx,
                    &NewMessage {
                        id: mid,
                        conversation: id,
                        store: ch.store_id,
                        sender: Sender::Visitor,
                        agent: None,
                        text: &text,
                        external_id: None,
                        delivery_status: DeliveryStatus::Sent,
                    },
                    now,
                )?;
                // The first message announces the conversation to the team.
                let first = if store::message_count(tx, id)? == 1 {
                    store::get_row(tx, ch.store_id, id)?
                } else {
                    None
                };
                let sent = sent(tx, ch.store_id, id, mid)?.linked(&link);
                let frames = events::sent(first.as_ref(), &sent.message, &sent.conversation);
                Ok((sent, frames))
            },
            move |frames| hub.publish(&frames),
        )
        .await?;
    // The shopper sees what the widget socket shows of a conversation, nothing internal.
    Ok((
        StatusCode::CREATED,
        Json(VisitorSent {
            conversation: events::public_conversation(&sent.conversation),
            message: sent.message,
        }),
    ))
}

/// The shopper read the team's messages.
#[utoipa::path(post, path = "/widget/{key}/conversations/{conversation_id}/read", tag = "widget",
    params(("key" = String, Path), ("conversation_id" = ConversationId, Path)),
    responses((status = 204), (status = 401, body = ErrorBody, description = "`unauthorized`: a wrong visitor token"), (status = 404, body = ErrorBody)))]
pub async fn mark_read(
    State(st): State<AppState>,
    Path((key, id)): Path<(String, ConversationId)>,
    headers: HeaderMap,
) -> Result<StatusCode, AppError> {
    let (origin, token, now) = (origin(&headers), visitor_token(&headers), st.clock.now());
    let c = st
        .db
        .write(move |tx| {
            let ch = chat_channel(tx, &key, origin.as_deref())?;
            visitor_conversation(tx, &ch, id, token.as_deref())?;
            store::mark_read(tx, ch.store_id, id, true, now)?;
            store::get_conversation(tx, ch.store_id, id)?.ok_or_else(not_found)
        })
        .await?;
    let read = json!({"conversation_id": id, "by": "visitor"});
    let mut frames = vec![Frame::new(
        Audience::Agents,
        "messages:read",
        c.store_id,
        Some(id),
        &read,
    )];
    frames.extend(events::conversation_updated(&c));
    st.hub.publish(&frames);
    Ok(StatusCode::NO_CONTENT)
}

/// The widget's REST paths, and the storefront API's, may be read from the sites a chat
/// channel allows (spec 4.8: "CORS answers for the allowed origins only"; an empty list
/// allows any), and so may the files of a chat conversation, which the widget fetches with its visitor token. An unknown key's
/// 404 is readable from anywhere, so a widget whose channel was deleted can tell and stop.
pub struct WidgetOrigins;

impl crate::http::cors::CrossOrigin for WidgetOrigins {
    fn resource(&self, path: &str) -> Option<String> {
        // The storefront API is named by the same chat channel key (issue 19), so the
        // same sites may read it.
        if let Some(rest) = path
            .strip_prefix("/v1/widget/")
            .or_else(|| path.strip_prefix("/v1/storefront-api/"))
        {
            let key = rest.split('/').next()?;
            return (!key.is_empty()).then(|| format!("key:{key}"));
        }
        // /v1/stores/{s}/conversations/{c}/messages/{m}/attachments/{i}
        // Runs on every request: the cheap test first, the split only for attachment paths.
        let rest = path.strip_prefix("/v1/stores/")?;
        if !rest.contains("/attachments/") {
            return None;
        }
        let parts: Vec<&str> = rest.split('/').collect();
        match parts[..] {
            [s, "conversations", c, "messages", _, "attachments", _] => {
                Some(format!("conversation:{s}:{c}"))
            }
            _ => None,
        }
    }

    fn allows(
        &self,
        c: &rusqlite::Connection,
        resource: &str,
        origin: &str,
    ) -> Result<bool, AppError> {
        let allowed = |ch: &ChannelOut| {
            ch.allowed_origins.is_empty() || ch.allowed_origins.iter().any(|a| a == origin)
        };
        if let Some(key) = resource.strip_prefix("key:") {
            return Ok(match store::channel_by_key(c, key)? {
                Some(ch) if ch.kind == ChannelKind::StorefrontChat => allowed(&ch),
                _ => true,
            });
        }
        let Some((s, id)) = resource
            .strip_prefix("conversation:")
            .and_then(|r| r.split_once(':'))
        else {
            return Ok(false);
        };
        let (Ok(s), Ok(id)) = (s.parse(), id.parse()) else {
            return Ok(false);
        };
        // Only a chat conversation's files are fetched by a widget; the team's are not.
        let Some(conversation) = store::get_conversation(c, s, id)? else {
            return Ok(false);
        };
        Ok(store::get_channel(c, s, conversation.channel_id)?
            .is_some_and(|ch| ch.kind == ChannelKind::StorefrontChat && allowed(&ch)))
    }
}
