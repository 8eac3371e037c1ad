//! The messaging-app channel (issue 15; spec 2.8, 3 "Message delivery", 4.8, 6.2, 7): the
//! provider's webhook (verification handshake, contact messages, delivery statuses) and the
//! job that sends the team's replies. Public routes: the path's channel id names the store.
//!
//! Invariants:
//! - A webhook POST is believed only with a valid `X-Hub-Signature-256` (HMAC-SHA256 of the
//!   raw body with the channel's app secret), checked before the body is parsed; otherwise
//!   401 and nothing is stored.
//! - A provider message id is stored once per contact on a channel: a repeated delivery
//!   stores and publishes nothing, even when the first landed in a conversation resolved
//!   since. The whole payload is handled in one write, so concurrent duplicates serialize.
//! - The reply window closes 24 h after the newest contact message's own `timestamp` (not
//!   its arrival), and never earlier because an older message arrived late.
//! - A delivery status only moves forward: sent → delivered → read; `failed` from sent or
//!   delivered. Each change pushes `message:updated`.
//! - A reply is stored before it is sent and stays whatever happens: a refusal, or the last
//!   of [`SEND_ATTEMPTS`] failed sends, marks it `failed` with `delivery_error`.
//!
//! Where the issue was silent: a turned-off channel answers the handshake 403 and accepts
//! signed POSTs with 200 while dropping them (a provider retries a refusal for days); a
//! contact message after their conversation was resolved opens a new conversation; changes
//! for another `phone_number_id` than the channel's are skipped; message types other than
//! text, button and interactive replies are stored as a placeholder line (no media download).

use crate::db::Tx;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::channels::open_secrets;
use super::conversations::sent;
use super::events;
use super::hub::Frame;
use super::model::{ChannelKind, ChannelOut, Contact, ConversationOut, DeliveryStatus, Sender};
use super::store::{self, NewConversation, NewMessage};
use crate::error::{AppError, ErrorCode};
use crate::http::extract::{Path, Query, body_rejection, parse_json};
use crate::ids::{ChannelId, ConversationId, MessageId};
use crate::jobs::{self, JobKind};
use crate::msgapp::{self, TextMessage};
use crate::state::AppState;
use crate::time;

type ErrorBody = crate::error::ErrorBody;

/// The header carrying `sha256=<hex HMAC-SHA256 of the raw body>`.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// How long after a contact's message the team may answer with free-form text (spec 8).
pub const REPLY_WINDOW: Duration = Duration::hours(24);

fn not_found() -> AppError {
    AppError::not_found("channel")
}

// ---- the provider's payload (Cloud API webhook shape; unknown fields are ignored) ----------

/// A webhook delivery: `{object, entry: [{id, changes: [{field, value}]}]}`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappWebhook {
    pub object: Option<String>,
    pub entry: Vec<MsgappEntry>,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappEntry {
    pub id: Option<String>,
    pub changes: Vec<MsgappChange>,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappChange {
    /// Only `messages` changes are read.
    pub field: String,
    pub value: MsgappChangeValue,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappChangeValue {
    pub messaging_product: Option<String>,
    pub metadata: MsgappMetadata,
    pub contacts: Vec<MsgappContact>,
    pub messages: Vec<MsgappInbound>,
    pub statuses: Vec<MsgappStatus>,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappMetadata {
    pub display_phone_number: Option<String>,
    /// A change for another number than the channel's is skipped.
    pub phone_number_id: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappContact {
    pub wa_id: String,
    pub profile: MsgappProfile,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappProfile {
    pub name: Option<String>,
}

/// A contact's message.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappInbound {
    /// The contact's number, digits only.
    pub from: String,
    /// The provider's message id; a repeated delivery carries the same one.
    pub id: String,
    /// Unix seconds, as a string: when the contact sent it.
    #[schema(value_type = String)]
    pub timestamp: Value,
    /// `text`, `button` and `interactive` are read; others are stored as a placeholder.
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<MsgappText>,
    pub button: Option<MsgappButton>,
    pub interactive: Option<MsgappInteractive>,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappText {
    pub body: String,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappButton {
    pub text: String,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappInteractive {
    pub button_reply: Option<MsgappChoice>,
    pub list_reply: Option<MsgappChoice>,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappChoice {
    pub title: String,
}

/// A delivery status of a message the store sent.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappStatus {
    /// The provider's id of the store's message.
    pub id: String,
    /// `sent`, `delivered`, `read` or `failed`; others are ignored.
    pub status: String,
    #[schema(value_type = String)]
    pub timestamp: Value,
    pub recipient_id: String,
    pub errors: Vec<MsgappStatusError>,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappStatusError {
    pub code: Option<i64>,
    pub title: Option<String>,
    pub message: Option<String>,
    pub error_data: MsgappErrorData,
}

#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct MsgappErrorData {
    pub details: Option<String>,
}

// ---- the webhook routes ---------------------------------------------------------------

/// The provider's verification handshake.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VerifyQuery {
    /// `subscribe`.
    #[serde(rename = "hub.mode")]
    pub mode: Option<String>,
    /// The channel's `verify_token` setting.
    #[serde(rename = "hub.verify_token")]
    pub verify_token: Option<String>,
    /// Echoed back when the token matches.
    #[serde(rename = "hub.challenge")]
    pub challenge: Option<String>,
}

/// A channel's secret settings, opened. No `Debug`: it must never reach a log line.
struct Secrets {
    /// `None` when the channel was made without it (demo data): nothing verifies.
    app_secret: Option<String>,
    verify_token: Option<String>,
}

/// The messaging-app channel the path names (404 for another kind) and its secrets.
async fn msgapp_channel(st: &AppState, id: ChannelId) -> Result<(ChannelOut, Secrets), AppError> {
    let sb = st.secret_box.clone();
    st.db
        .read(move |c| {
            let ch = store::channel_by_id_unscoped(c, id)?
                .filter(|ch| ch.kind == ChannelKind::Msgapp)
                .ok_or_else(not_found)?;
            let sealed = store::channel_secrets(c, ch.store_id, id)?;
            let secrets = open_secrets(&sb, id, sealed.as_deref())?;
            let get = |name: &str| secrets.get(name).and_then(Value::as_str).map(str::to_owned);
            let secrets = Secrets {
                app_secret: get("app_secret"),
                verify_token: get("verify_token"),
            };
            Ok((ch, secrets))
        })
        .await
}

/// Answers the provider's verification handshake: `hub.challenge` echoed as text when
/// `hub.mode` is `subscribe` and `hub.verify_token` is the channel's; 403 otherwise, or
/// when the channel is turned off.
#[utoipa::path(get, path = "/channels/msgapp/{channel_id}/webhook", tag = "inbox",
    params(("channel_id" = ChannelId, Path), VerifyQuery),
    responses((status = 200, description = "The challenge", body = String, content_type = "text/plain"),
              (status = 400, body = ErrorBody), (status = 403, body = ErrorBody, description = "`forbidden`: a wrong verify token or a channel turned off"),
              (status = 404, body = ErrorBody)))]
pub async fn verify_webhook(
    State(st): State<AppState>,
    Path(id): Path<ChannelId>,
    Query(q): Query<VerifyQuery>,
) -> Result<Response, AppError> {
    let (ch, secrets) = msgapp_channel(&st, id).await?;
    if !ch.enabled {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "this messaging-app channel is turned off",
        ));
    }
    // Hashed first, so the comparison takes the same time whatever the lengths.
    let given = crate::secrets::hash(q.verify_token.as_deref().unwrap_or(""));
    let token_ok = secrets
        .verify_token
        .is_some_and(|t| crate::secrets::same(&given, &crate::secrets::hash(&t)));
    if q.mode.as_deref() != Some("subscribe") || !token_ok {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "hub.mode must be subscribe and hub.verify_token the channel's verify token",
        ));
    }
    let challenge = q
        .challenge
        .filter(|c| !c.is_empty() && c.len() <= 256)
        .ok_or_else(|| AppError::bad_request("hub.challenge must be 1 to 256 characters"))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        challenge,
    )
        .into_response())
}

/// Receives the provider's webhook: contact messages (a new conversation, or the
/// contact's unresolved one) and delivery statuses of the store's messages. Needs
/// `X-Hub-Signature-256`; a turned-off channel's deliveries are accepted and dropped.
#[utoipa::path(post, path = "/channels/msgapp/{channel_id}/webhook", tag = "inbox",
    params(("channel_id" = ChannelId, Path),
           ("X-Hub-Signature-256" = String, Header,
            description = "sha256=<hex HMAC-SHA256 of the raw body, keyed with the app secret>")),
    request_body = MsgappWebhook,
    responses((status = 200, description = "Received"), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody, description = "`unauthorized`: the signature does not match"), (status = 404, body = ErrorBody),
              (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn receive_webhook(
    State(st): State<AppState>,
    Path(id): Path<ChannelId>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<StatusCode, AppError> {
    let body = body.map_err(|r| body_rejection(&r))?;
    let (ch, secrets) = msgapp_channel(&st, id).await?;
    if !secrets
        .app_secret
        .is_some_and(|s| signed(&headers, &body, s.as_bytes()))
    {
        return Err(AppError::new(
            ErrorCode::Unauthorized,
            "missing or wrong X-Hub-Signature-256",
        ));
    }
    if !ch.enabled {
        tracing::info!(channel_id = %id, "dropped a webhook delivery: the channel is turned off");
        return Ok(StatusCode::OK);
    }
    let payload: MsgappWebhook = parse_json(&body)?;
    let (clock, origin, hub) = (st.clock.clone(), st.public_url().to_owned(), st.hub.clone());
    st.db
        .write_publish(
            move |tx| {
                // Read on the writer: message times follow commit order (`created_after`).
                let now = clock.now();
                Ok(((), ingest(tx, id, &payload, now, &origin)?))
            },
            move |frames| hub.publish(&frames),
        )
        .await?;
    Ok(StatusCode::OK)
}

/// Whether `X-Hub-Signature-256` is the HMAC of `body` with `secret`.
fn signed(headers: &HeaderMap, body: &[u8], secret: &[u8]) -> bool {
    headers
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("sha256="))
        .is_some_and(|tag| crate::secrets::hmac_sha256_hex_matches(secret, body, tag))
}

// ---- ingesting a payload ----------------------------------------------------------------

/// Stores what a verified payload carries; the frames to publish once it commits. A channel
/// turned off or deleted since the signature was checked takes nothing.
fn ingest(
    tx: &Tx<'_>,
    id: ChannelId,
    payload: &MsgappWebhook,
    now: DateTime<Utc>,
    origin: &str,
) -> Result<Vec<Frame>, AppError> {
    let Some(ch) = store::channel_by_id_unscoped(tx, id)?
        .filter(|ch| ch.kind == ChannelKind::Msgapp && ch.enabled)
    else {
        return Ok(Vec::new());
    };
    let number = ch.settings.get("phone_number_id").and_then(Value::as_str);
    let mut frames = Vec::new();
    for change in payload.entry.iter().flat_map(|e| &e.changes) {
        if change.field != "messages" {
            continue;
        }
        let v = &change.value;
        if let Some(theirs) = v.metadata.phone_number_id.as_deref()
            && Some(theirs) != number
        {
            tracing::warn!(channel_id = %id, "skipped a change for another phone number id");
            continue;
        }
        for m in &v.messages {
            frames.extend(inbound(tx, &ch, v, m, now)?);
        }
        for s in &v.statuses {
            frames.extend(status_update(tx, &ch, s, now, origin)?);
        }
    }
    Ok(frames)
}

/// `+` and the digits of a provider number (`wa_id`): E.164, 6 to 15 digits.
fn e164(digits: &str) -> Option<String> {
    let d = digits.trim().trim_start_matches('+');
    ((6..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit())).then(|| format!("+{d}"))
}

/// A provider time (Unix seconds, as text or a number), never later than `now`: a message
/// cannot have been sent after it arrived, so a skewed clock opens no longer window.
fn provider_time(v: &Value, now: DateTime<Utc>) -> DateTime<Utc> {
    let secs = match v {
        Value::String(s) => s.trim().parse::<i64>().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    };
    secs.and_then(|s| DateTime::from_timestamp(s, 0))
        .map_or(now, |t| t.min(now))
}

/// The text a contact message shows in the inbox.
fn inbound_text(m: &MsgappInbound) -> String {
    let text = match m.kind.as_str() {
        "text" => m.text.as_ref().map(|t| t.body.clone()),
        "button" => m.button.as_ref().map(|b| b.text.clone()),
        "interactive" => m.interactive.as_ref().and_then(|i| {
            i.button_reply
                .as_ref()
                .or(i.list_reply.as_ref())
                .map(|c| c.title.clone())
        }),
        _ => None,
    };
    text.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| {
        let kind: String = m.kind.chars().take(40).collect();
        format!("[unsupported message type: {kind}]")
    })
}

/// Stores a contact message once, in the contact's unresolved conversation or a new one,
/// and opens the reply window from the message's own time.
fn inbound(
    tx: &Tx<'_>,
    ch: &ChannelOut,
    v: &MsgappChangeValue,
    m: &MsgappInbound,
    now: DateTime<Utc>,
) -> Result<Vec<Frame>, AppError> {
    let usable_id = !m.id.is_empty() && m.id.len() <= 255;
    let Some(phone) = e164(&m.from).filter(|_| usable_id) else {
        tracing::warn!(channel_id = %ch.id, "skipped a message without a usable sender or id");
        return Ok(Vec::new());
    };
    if store::message_by_external_id(tx, ch.store_id, ch.id, &phone, &m.id)?.is_some() {
        return Ok(Vec::new()); // a repeated delivery
    }
    // A team member's verified phone talks to the assistant, not to the inbox.
    if crate::assistant::phones::take_inbound(
        tx,
        ch.store_id,
        ch.id,
        &phone,
        &m.id,
        &inbound_text(m),
        now,
    )? {
        return Ok(Vec::new());
    }
    let name = v
        .contacts
        .iter()
        .find(|c| c.wa_id.trim_start_matches('+') == &phone[1..])
        .and_then(|c| c.profile.name.as_deref())
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| n.chars().take(120).collect::<String>());
    let (conversation, is_new) =
        match store::unresolved_conversation_by_phone(tx, ch.store_id, ch.id, &phone)? {
            Some(id) => (id, false),
            None => {
                let id = ConversationId::new();
                store::insert_conversation(
                    tx,
                    &NewConversation {
                        id,
                        store: ch.store_id,
                        channel: ch.id,
                        kind: ChannelKind::Msgapp,
                        contact: &Contact {
                            name,
                            email: None,
                            phone: Some(phone.clone()),
                        },
                        visitor_token_hash: None,
                    },
                    now,
                )?;
                (id, true)
            }
        };
    let mid = MessageId::new();
    let text = inbound_text(m);
    if !store::insert_message(
        tx,
        &NewMessage {
            id: mid,
            conversation,
            store: ch.store_id,
            sender: Sender::Visitor,
            agent: None,
            text: &text,
            external_id: Some(&m.id),
            delivery_status: DeliveryStatus::Sent,
        },
        now,
    )? {
        return Ok(Vec::new());
    }
    store::extend_reply_window(
        tx,
        conversation,
        provider_time(&m.timestamp, now) + REPLY_WINDOW,
    )?;
    let first = if is_new {
        store::get_row(tx, ch.store_id, conversation)?
    } else {
        None
    };
    let sent = sent(tx, ch.store_id, conversation, mid)?;
    Ok(events::sent(
        first.as_ref(),
        &sent.message,
        &sent.conversation,
    ))
}

/// Whether a message at `current` may move to `next`.
fn moves_forward(current: DeliveryStatus, next: DeliveryStatus) -> bool {
    use DeliveryStatus::{Delivered, Failed, Read, Sent};
    matches!(
        (current, next),
        (Sent | Delivered, Failed) | (Sent, Delivered | Read) | (Delivered, Read)
    )
}

/// What a failed status says went wrong.
fn status_error(s: &MsgappStatus) -> String {
    let described = s.errors.first().map(|e| {
        [
            e.code.map(|c| format!("(#{c})")),
            e.title.clone(),
            e.message.clone().filter(|m| Some(m) != e.title.as_ref()),
            e.error_data.details.clone(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
    });
    described.filter(|d| !d.is_empty()).map_or_else(
        || "the messaging app reported the message as failed".to_owned(),
        |d| d.chars().take(500).collect(),
    )
}

/// Moves a store message's delivery status forward; unknown ids are ignored.
fn status_update(
    tx: &Tx<'_>,
    ch: &ChannelOut,
    s: &MsgappStatus,
    now: DateTime<Utc>,
    origin: &str,
) -> Result<Vec<Frame>, AppError> {
    let (Some(next), Some(phone)) = (DeliveryStatus::parse(&s.status), e164(&s.recipient_id))
    else {
        return Ok(Vec::new());
    };
    let Some(m) = store::message_by_external_id(tx, ch.store_id, ch.id, &phone, &s.id)?
        .filter(|m| m.sender != Sender::Visitor)
    else {
        return Ok(Vec::new());
    };
    if !moves_forward(m.delivery_status, next) {
        return Ok(Vec::new());
    }
    let error = (next == DeliveryStatus::Failed).then(|| status_error(s));
    let read_at = (next == DeliveryStatus::Read).then(|| provider_time(&s.timestamp, now));
    store::set_delivery(tx, m.id, next, error.as_deref(), read_at)?;
    let m = store::get_message(tx, m.id)?
        .ok_or_else(not_found)?
        .linked(origin);
    Ok(events::message("message:updated", &m).into())
}

// ---- replies ------------------------------------------------------------------------------

/// Refuses a reply outside the reply window: 422 `msgapp_window_closed` with
/// `details.window_expired_at` (null when no contact message ever opened it).
pub fn check_window(c: &ConversationOut, now: DateTime<Utc>) -> Result<(), AppError> {
    let open_until = c.reply_window_expires_at.as_deref().and_then(time::parse);
    if open_until.is_some_and(|t| t > now) {
        return Ok(());
    }
    Err(AppError::new(
        ErrorCode::MsgappWindowClosed,
        "the messaging app takes free-form replies only within 24 hours of the contact's last message",
    )
    .with_details(json!({ "window_expired_at": c.reply_window_expires_at })))
}

/// Sends one team reply through the messaging app. `attempt` counts sends of the message
/// (from 1); each failed send that may succeed later enqueues the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsgappReply {
    pub message_id: MessageId,
    #[serde(default = "first_attempt")]
    pub attempt: u32,
}

fn first_attempt() -> u32 {
    1
}

/// Sends of a reply before it is marked failed: with the queue's backoff, about five minutes.
pub const SEND_ATTEMPTS: u32 = 6;

impl JobKind for MsgappReply {
    const KIND: &'static str = "msgapp_reply";

    /// Runs of this one send: more than one only when a worker stopped mid-send (its lease
    /// ran out). A provider's failure is retried by the next job, which knows its number.
    fn max_attempts(&self) -> u32 {
        3
    }
}

/// Enqueues the first send of reply `message`, in the transaction that stored it.
pub fn enqueue_reply(tx: &Tx<'_>, message: MessageId, now: DateTime<Utc>) -> Result<(), AppError> {
    jobs::enqueue(
        tx,
        &MsgappReply {
            message_id: message,
            attempt: 1,
        },
        now,
    )?;
    Ok(())
}

/// A reply still to send, with where it goes.
struct Pending {
    text: String,
    to: Option<String>,
    phone_number_id: Option<String>,
}

/// The reply, unless it is gone (its conversation was deleted) or settled already (it has
/// the provider's id, or failed).
fn pending_reply(c: &Connection, id: MessageId) -> Result<Option<Pending>, AppError> {
    let Some(m) = store::get_message(c, id)? else {
        return Ok(None);
    };
    if m.external_id.is_some() || m.delivery_status != DeliveryStatus::Sent {
        return Ok(None);
    }
    let Some(conversation) = store::get_conversation(c, m.store_id, m.conversation_id)? else {
        return Ok(None);
    };
    let channel = store::get_channel(c, m.store_id, conversation.channel_id)?;
    Ok(Some(Pending {
        text: m.text,
        to: conversation.contact.phone,
        phone_number_id: channel
            .as_ref()
            .and_then(|ch| ch.settings.get("phone_number_id"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    }))
}

/// The [`MsgappReply`] handler: sends the reply and records the provider's id; a refusal
/// or the last failed send marks it failed (and pushes `message:updated`), any other
/// failure enqueues the next send after the queue's backoff.
#[tracing::instrument(skip_all, fields(message_id = %job.message_id, attempt = job.attempt))]
pub async fn send_reply(st: &AppState, job: MsgappReply) -> anyhow::Result<()> {
    let id = job.message_id;
    let Some(reply) = st.db.read(move |c| pending_reply(c, id)).await? else {
        return Ok(());
    };
    let (Some(to), Some(number)) = (reply.to, reply.phone_number_id) else {
        return mark_failed(st, id, "the conversation has no number to reply to".into()).await;
    };
    let now = st.clock.now();
    let msg = TextMessage {
        phone_number_id: &number,
        to: &to,
        body: &reply.text,
    };
    match msgapp::send_text(&st.cfg.msgapp, &st.db, msg, now).await {
        Ok(external) => {
            if let Some(external) = external
                && !st
                    .db
                    .write(move |tx| store::set_external_id(tx, id, &external))
                    .await?
            {
                tracing::warn!("the provider's id for a sent reply could not be recorded");
            }
            Ok(())
        }
        Err(e) if e.is_permanent() || job.attempt >= SEND_ATTEMPTS => {
            mark_failed(st, id, e.to_string()).await
        }
        Err(_) => {
            let next = MsgappReply {
                message_id: id,
                attempt: job.attempt + 1,
            };
            let at = now + Duration::from_std(jobs::backoff(job.attempt)).unwrap_or_default();
            st.db
                .write(move |tx| jobs::enqueue_at(tx, &next, at, now))
                .await?;
            Ok(())
        }
    }
}

/// Marks a reply failed with why, and tells the team; a reply settled meanwhile is kept.
async fn mark_failed(st: &AppState, id: MessageId, why: String) -> anyhow::Result<()> {
    let failed = st
        .db
        .write(move |tx| {
            let Some(m) = store::get_message(tx, id)? else {
                return Ok(None);
            };
            if m.delivery_status != DeliveryStatus::Sent || m.external_id.is_some() {
                return Ok(None);
            }
            store::set_delivery(tx, id, DeliveryStatus::Failed, Some(&why), None)?;
            store::get_message(tx, id)
        })
        .await?;
    if let Some(m) = failed {
        st.hub.publish(&events::message(
            "message:updated",
            &m.linked(st.public_url()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::DeliveryStatus::{Delivered, Failed, Read, Sent};
    use super::*;

    #[test]
    fn delivery_statuses_only_move_forward() {
        assert!(moves_forward(Sent, Delivered));
        assert!(moves_forward(Sent, Read));
        assert!(moves_forward(Delivered, Read));
        assert!(moves_forward(Delivered, Failed));
        for (from, to) in [
            (Read, Delivered),
            (Delivered, Sent),
            (Read, Failed),
            (Failed, Read),
            (Delivered, Delivered),
        ] {
            assert!(!moves_forward(from, to), "{from:?} -> {to:?}");
        }
    }

    #[test]
    fn provider_numbers_become_e164() {
        assert_eq!(e164("5511987654321").as_deref(), Some("+5511987654321"));
        assert_eq!(e164("+14155550123").as_deref(), Some("+14155550123"));
        for bad in ["", "12345", "1234567890123456", "55 11 9876", "abc123456"] {
            assert_eq!(e164(bad), None, "{bad}");
        }
    }
}
