//! The two realtime sockets (spec 4.9, 5 rule 8, 6.2–6.4, 7): `/ws/conversations` for the
//! team, `/ws/widget` for a shopper. Handshake failures answer the error body before any
//! upgrade. A socket pings every `ws_ping_interval` and closes after `ws_idle_timeout`
//! without a frame from the client; a team socket outlives its access token but not its
//! session, its user or its membership (re-checked whenever a credential table changes).

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::json;

use super::hub::{Audience, Frame, Listener, SocketSlot};
use super::model::WsTicket;
use super::store;
use super::visitor::{chat_channel, origin, visitor_conversation, visitor_token};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::{MaybePrincipal, StoreScope};
use crate::http::extract::Query;
use crate::http::permissions::{Permission, PermissionSet};
use crate::http::trace::TraceId;
use crate::ids::{ConversationId, StoreId, UserId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// How long a ticket stays valid (spec 8).
const TICKET_SECS: i64 = 60;
/// The largest frame a client may send (its frames are a few hundred bytes of JSON).
const MAX_CLIENT_FRAME: usize = 16 * 1024;
/// A socket's read buffer, allocated for its whole life.
const READ_BUFFER: usize = 1024;
/// Outgoing frames gathered before a write to the network; the buffer keeps its size once
/// a burst has grown it, so this bounds what a busy socket keeps too.
const WRITE_BUFFER: usize = 8 * 1024;
/// What a socket may hold unsent: the batch plus one frame (the largest, a message of 4,096
/// characters with its attachments, is far below it). Past it the socket is closed.
const MAX_WRITE_BUFFER: usize = WRITE_BUFFER + 1024 * 1024;
/// Queued frames sent with one flush (at most the whole queue).
const BATCH: usize = super::hub::QUEUE;
/// A socket writes to the network at most this often: a frame queued sooner after the last
/// write waits out the rest of it, gathering what follows. A frame after a quiet spell goes
/// at once. Each write costs the kernel about as much as a few kilobytes of data, so a busy
/// store's fan-out is mostly writes: this bounds them at 100 a second per socket.
const COALESCE: Duration = Duration::from_millis(10);
/// How long a client refused for `--max-sockets` is asked to wait.
const SOCKETS_FULL_RETRY_SECS: u64 = 5;

/// A single-use ticket for `/ws/conversations`, valid 60 seconds: for clients that cannot
/// set headers on a WebSocket (browsers).
#[utoipa::path(post, path = "/stores/{store_id}/conversations/ws-ticket", tag = "inbox",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)),
    responses((status = 201, body = WsTicket), (status = 403, body = ErrorBody)))]
pub async fn ws_ticket(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Response, AppError> {
    scope.require(Permission::ConversationsRead)?;
    let ticket = crate::secrets::new_token("wst_");
    let hash = crate::secrets::hash(&ticket);
    let (user, store_id) = (scope.principal.user_id, scope.store_id);
    let credential = scope.principal.credential.key();
    let expires = st.clock.now() + chrono::Duration::seconds(TICKET_SECS);
    st.db
        .write(move |tx| store::insert_ticket(tx, &hash, user, store_id, &credential, expires))
        .await?;
    // A credential: never kept for an idempotent replay, never cached.
    Ok(crate::http::idempotency::no_store((
        StatusCode::CREATED,
        axum::Json(WsTicket {
            ticket,
            expires_in: TICKET_SECS,
        }),
    )))
}

/// What the credential that opened a team socket may now do in the store: None when its
/// session or token has ended or its user is gone from the store.
pub fn permissions_now(
    c: &rusqlite::Connection,
    credential: &str,
    user: UserId,
    store_id: StoreId,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<PermissionSet>, AppError> {
    let scopes = match credential.split_once(':') {
        Some(("session", id)) => match id.parse() {
            Ok(session) if crate::auth::store::session_live(c, session)? => PermissionSet::all(),
            _ => return Ok(None),
        },
        Some(("api_token", id)) => {
            let live = match id.parse() {
                Ok(token) => crate::api_tokens::store::live_scopes(c, token, now)?,
                Err(_) => None,
            };
            match live {
                Some(codes) => PermissionSet::from_scopes(&codes),
                None => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    Ok(crate::auth::store::store_role(c, store_id, user)?
        .map(|(_, role)| role.permissions().intersect(scopes)))
}

/// Whether what opened a team socket may still hold it (`conversations.read`).
pub fn still_allowed(
    c: &rusqlite::Connection,
    credential: &str,
    user: UserId,
    store_id: StoreId,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<bool, AppError> {
    Ok(permissions_now(c, credential, user, store_id, now)?
        .is_some_and(|p| p.contains(Permission::ConversationsRead)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AgentQuery {
    /// With the bearer header: the store whose conversations to follow.
    store_id: Option<String>,
    /// Instead of the header: a ticket from `POST .../conversations/ws-ticket`.
    ticket: Option<String>,
}

/// The team's realtime socket (a WebSocket upgrade): every conversation event of one store
/// (spec 6.2). Needs `conversations.read`. Frames are JSON text; `hello` comes first.
#[utoipa::path(get, path = "/ws/conversations", tag = "inbox", params(AgentQuery),
    responses((status = 101, description = "Switched to the WebSocket protocol"),
              (status = 400, body = ErrorBody, description = "store_id_required"),
              (status = 401, body = ErrorBody, description = "unauthorized or invalid_ticket"),
              (status = 403, body = ErrorBody, description = "missing_permission"),
              (status = 404, body = ErrorBody, description = "not_found: no such store")))]
pub async fn agent_socket(
    State(st): State<AppState>,
    MaybePrincipal(principal): MaybePrincipal,
    trace: TraceId,
    Query(q): Query<AgentQuery>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    // The slot first: a full server must not burn a single-use ticket.
    let Some(slot) = st.hub.reserve() else {
        return full().into_response();
    };
    let who = match agent_handshake(&st, principal, trace, q, upgrade.is_ok()).await {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(e) => return not_upgradable(&e).into_response(),
    };
    sized(upgrade).on_upgrade(move |ws| agent_session(st, ws, who, slot))
}

/// 400 for a request that is no WebSocket upgrade, in the error shape.
fn not_upgradable(e: &axum::extract::ws::rejection::WebSocketUpgradeRejection) -> AppError {
    AppError::bad_request(e.body_text())
}

/// 503 `service_unavailable` with `Retry-After`: `--max-sockets` are open.
fn full() -> AppError {
    AppError::unavailable("too many sockets are open; retry later")
        .with_details(json!({ "retry_after_seconds": SOCKETS_FULL_RETRY_SECS }))
}

/// Small buffers: thousands of idle sockets should cost little memory each (axum's defaults,
/// 128 KiB each way, cost about 130 KiB an idle socket: the read buffer is allocated and
/// zeroed at the first read). A client sends tiny JSON frames, so its read buffer is 1 KiB
/// (a larger frame grows it as needed). Outgoing frames are gathered up to
/// [`WRITE_BUFFER`] and flushed per batch (see [`send_queued`]).
fn sized(u: WebSocketUpgrade) -> WebSocketUpgrade {
    u.read_buffer_size(READ_BUFFER)
        .write_buffer_size(WRITE_BUFFER)
        .max_write_buffer_size(MAX_WRITE_BUFFER)
        .max_message_size(MAX_CLIENT_FRAME)
        .max_frame_size(MAX_CLIENT_FRAME)
}

struct AgentWho {
    store: StoreId,
    user: UserId,
    credential: String,
    /// Holds `conversations.write`: its typing frames are passed on (as REST typing needs).
    can_write: bool,
}

async fn agent_handshake(
    st: &AppState,
    principal: Option<crate::http::auth::Principal>,
    trace: TraceId,
    q: AgentQuery,
    upgradable: bool,
) -> Result<AgentWho, AppError> {
    if let Some(ticket) = q.ticket {
        // A ticket is single use: not spent on a request that cannot become a socket.
        if !upgradable {
            return Err(AppError::bad_request(
                "a socket ticket is spent only on a WebSocket upgrade request",
            ));
        }
        let hash = crate::secrets::hash(&ticket);
        let now = st.clock.now();
        let (user, store, credential) = st
            .db
            .write(move |tx| store::consume_ticket(tx, &hash, now))
            .await?
            .ok_or_else(|| {
                AppError::new(
                    ErrorCode::InvalidTicket,
                    "the socket ticket was used or has expired",
                )
            })?;
        let cred = credential.clone();
        let perms = st
            .db
            .read(move |c| permissions_now(c, &cred, user, store, now))
            .await?
            .filter(|p| p.contains(Permission::ConversationsRead))
            .ok_or_else(|| crate::http::auth::missing_permission(Permission::ConversationsRead))?;
        return Ok(AgentWho {
            store,
            user,
            credential,
            can_write: perms.contains(Permission::ConversationsWrite),
        });
    }
    let principal = principal.ok_or_else(crate::http::auth::unauthorized)?;
    let store = q
        .store_id
        .ok_or_else(|| {
            AppError::new(
                ErrorCode::StoreIdRequired,
                "store_id is required with a bearer token",
            )
        })?
        .parse::<StoreId>()
        .map_err(|_| AppError::not_found("store"))?;
    let scope = StoreScope::resolve(st, principal, store, trace.0).await?;
    scope.require(Permission::ConversationsRead)?;
    Ok(AgentWho {
        store,
        user: scope.principal.user_id,
        credential: scope.principal.credential.key(),
        can_write: scope.permissions.contains(Permission::ConversationsWrite),
    })
}

/// A frame a client sends.
#[derive(Debug, Deserialize)]
struct ClientFrame {
    #[serde(rename = "type")]
    kind: String,
    conversation_id: Option<ConversationId>,
    typing: Option<bool>,
    user_name: Option<String>,
}

async fn agent_session(st: AppState, ws: WebSocket, who: AgentWho, _slot: SocketSlot) {
    let joined = st.hub.join_agent(who.store, who.user, who.credential);
    let id = joined.listener.id;
    let hello = json!({"type": "hello", "store_id": who.store, "user_id": who.user}).to_string();
    let mut greeting = vec![Utf8Bytes::from(hello)];
    // The team hears of a user's first socket; a further one (another tab) is told alone.
    let now = presence(who.store, &joined.online);
    if joined.changed {
        st.hub.publish(&[now]);
    } else {
        greeting.push(now.text);
    }
    let (store, user, can_write) = (who.store, who.user, who.can_write);
    let st2 = st.clone();
    run(&st, ws, joined.listener, greeting, move |f| {
        let st = st2.clone();
        async move { agent_frame(&st, store, user, can_write, f).await }
    })
    .await;
    if let Some(online) = st.hub.leave_agent(store, id) {
        st.hub.publish(&[presence(store, &online)]);
    }
}

fn presence(store: StoreId, online: &[UserId]) -> Frame {
    Frame::new(
        Audience::Agents,
        "presence",
        store,
        None,
        &json!({ "online": online }),
    )
}

/// What a team socket's own frame does: typing goes to the team and the shopper, viewing to
/// the team. Frames naming another store's conversation are ignored.
async fn agent_frame(st: &AppState, store: StoreId, user: UserId, can_write: bool, f: ClientFrame) {
    match f.kind.as_str() {
        "typing" if can_write => {
            let (Some(conv), Some(typing)) = (f.conversation_id, f.typing) else {
                return;
            };
            if in_store(st, store, conv).await {
                st.hub
                    .publish(&typing_frames(store, conv, "agent", Some(user), typing));
            }
        }
        "viewing" => {
            if let Some(conv) = f.conversation_id
                && !in_store(st, store, conv).await
            {
                return;
            }
            // A display name the client gives: kept short.
            let name: Option<String> = f.user_name.map(|n| n.chars().take(120).collect());
            let data = json!({"conversation_id": f.conversation_id, "user_id": user,
                              "user_name": name, "viewing": f.conversation_id.is_some()});
            st.hub.publish(&[Frame::new(
                Audience::Agents,
                "viewing",
                store,
                f.conversation_id,
                &data,
            )]);
        }
        _ => {} // unknown frames are ignored, as clients ignore unknown events
    }
}

async fn in_store(st: &AppState, store: StoreId, conv: ConversationId) -> bool {
    st.db
        .read(move |c| store::get_conversation(c, store, conv))
        .await
        .is_ok_and(|c| c.is_some())
}

/// Typing, to the team (with who) and to the shopper (without).
pub fn typing_frames(
    store: StoreId,
    conv: ConversationId,
    from: &str,
    user: Option<UserId>,
    typing: bool,
) -> Vec<Frame> {
    let mut frames = vec![Frame::new(
        Audience::Agents,
        "typing",
        store,
        Some(conv),
        &json!({"conversation_id": conv, "from": from, "user_id": user, "typing": typing}),
    )];
    if from != "visitor" {
        frames.push(Frame::new(
            Audience::Widget,
            "typing",
            store,
            Some(conv),
            &json!({"conversation_id": conv, "from": from, "typing": typing}),
        ));
    }
    frames
}

fn pong() -> Utf8Bytes {
    Utf8Bytes::from_static(r#"{"type":"pong"}"#)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WidgetQuery {
    /// The chat channel's public key (missing: 404, as an unknown one).
    key: Option<String>,
    conversation_id: Option<String>,
    /// The visitor token (or header `X-Visitor-Token`).
    token: Option<String>,
}

/// The shopper's realtime socket (a WebSocket upgrade) on their conversation (spec 6.3).
#[utoipa::path(get, path = "/ws/widget", tag = "widget", params(WidgetQuery),
    responses((status = 101, description = "Switched to the WebSocket protocol"),
              (status = 401, body = ErrorBody, description = "`unauthorized` or `invalid_ticket`"),
              (status = 403, body = ErrorBody, description = "`forbidden`"),
              (status = 404, body = ErrorBody, description = "unknown key or conversation")))]
pub async fn widget_socket(
    State(st): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<WidgetQuery>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    let Some(slot) = st.hub.reserve() else {
        return full().into_response();
    };
    let origin = origin(&headers);
    let token = q.token.or_else(|| visitor_token(&headers));
    let Some(key) = q.key else {
        return AppError::not_found("channel").into_response();
    };
    let Some(Ok(conv)) = q.conversation_id.map(|c| c.parse::<ConversationId>()) else {
        return AppError::not_found("conversation").into_response();
    };
    let checked = st
        .db
        .read(move |c| {
            let ch = chat_channel(c, &key, origin.as_deref())?;
            visitor_conversation(c, &ch, conv, token.as_deref())?;
            Ok((ch.store_id, ch.id))
        })
        .await;
    let (store, channel) = match checked {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(e) => return not_upgradable(&e).into_response(),
    };
    sized(upgrade).on_upgrade(move |ws| widget_session(st, ws, (store, channel, conv), slot))
}

async fn widget_session(
    st: AppState,
    ws: WebSocket,
    (store, channel, conv): (StoreId, crate::ids::ChannelId, ConversationId),
    _slot: SocketSlot,
) {
    let listener = st.hub.join_widget(store, channel, conv);
    let id = listener.id;
    st.hub.publish(&[visitor_online(store, conv, true)]);
    let hello = json!({"type": "hello", "store_id": store, "conversation_id": conv}).to_string();
    let st2 = st.clone();
    run(&st, ws, listener, vec![hello.into()], move |f| {
        let st = st2.clone();
        async move {
            if f.kind == "typing"
                && let Some(typing) = f.typing
            {
                st.hub
                    .publish(&typing_frames(store, conv, "visitor", None, typing));
            }
        }
    })
    .await;
    let still = st.hub.leave_widget(store, conv, id);
    if !still {
        st.hub.publish(&[visitor_online(store, conv, false)]);
    }
}

fn visitor_online(store: StoreId, conv: ConversationId, online: bool) -> Frame {
    Frame::new(
        Audience::Agents,
        "presence",
        store,
        Some(conv),
        &json!({"conversation_id": conv, "visitor_online": online}),
    )
}

/// What a client may send: 10 frames a second, 20 at once (typing is sent every few
/// seconds, pings every 25).
const CLIENT_FRAME_QUOTA: governor::Quota =
    governor::Quota::per_second(std::num::NonZeroU32::new(10).unwrap())
        .allow_burst(std::num::NonZeroU32::new(20).unwrap());

/// One socket's life: `greeting` (`hello` first), then the hub's frames out and the
/// client's frames in, with the heartbeat of spec 6.4. A lagging socket's backlog is dropped
/// for one `resync`.
async fn run<F, Fut>(
    st: &AppState,
    ws: WebSocket,
    mut l: Listener,
    greeting: Vec<Utf8Bytes>,
    mut on_frame: F,
) where
    F: FnMut(ClientFrame) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (ping_every, idle) = (st.cfg.ws_ping_interval, st.cfg.ws_idle_timeout);
    let (mut tx, mut rx) = ws.split();
    for text in greeting {
        if !send(&mut tx, Message::Text(text), idle).await {
            return;
        }
    }
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every);
    let mut last_heard = tokio::time::Instant::now();
    // Each typing or viewing frame fans out to the whole store and reads the database: a
    // client's frames past the budget are dropped unread.
    let budget = governor::RateLimiter::direct(CLIENT_FRAME_QUOTA);
    let mut quiet_from = tokio::time::Instant::now();
    loop {
        tokio::select! {
            // A kicked socket sends nothing more.
            biased;
            () = l.kick.notified() => {
                let _ = send(&mut tx, Message::Close(None), idle).await;
                break;
            }
            out = l.rx.recv() => {
                let Some(text) = out else { break };
                if quiet_from > tokio::time::Instant::now() {
                    tokio::time::sleep_until(quiet_from).await;
                }
                if !send_queued(&mut tx, &mut l, text, idle).await {
                    break;
                }
                quiet_from = tokio::time::Instant::now() + COALESCE;
            }
            frame = rx.next() => {
                last_heard = tokio::time::Instant::now();
                match frame {
                    Some(Ok(Message::Text(t))) => {
                        if budget.check().is_err() {
                            continue;
                        }
                        if let Ok(f) = serde_json::from_str::<ClientFrame>(&t) {
                            if f.kind == "ping" {
                                if !send(&mut tx, Message::Text(pong()), idle).await {
                                    break;
                                }
                            } else {
                                on_frame(f).await;
                            }
                        }
                    }
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => {} // pongs and pings count as life; the library answers pings
                }
            }
            _ = ticker.tick() => {
                if last_heard.elapsed() >= idle {
                    let _ = send(&mut tx, Message::Close(None), idle).await;
                    break;
                }
                if !send(&mut tx, Message::Ping(Default::default()), idle).await {
                    break;
                }
            }
        }
    }
}

/// Sends `first` and what else is queued (up to [`BATCH`] frames) with one flush: a socket
/// that falls behind catches up with one write to the network per batch instead of one per
/// frame. A lagging socket's backlog is dropped for one `resync` (hub). False when the
/// client is gone, as for [`send`].
async fn send_queued(
    tx: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    l: &mut Listener,
    first: Utf8Bytes,
    limit: Duration,
) -> bool {
    let batch = async {
        let mut next = Some(first);
        let mut sent = 0;
        while let Some(text) = next {
            if l.lagged.swap(false, std::sync::atomic::Ordering::AcqRel) {
                while l.rx.try_recv().is_ok() {}
                tx.feed(Message::Text(Utf8Bytes::from_static(
                    r#"{"type":"resync"}"#,
                )))
                .await?;
                break;
            }
            // Buffered up to WRITE_BUFFER, written past it.
            tx.feed(Message::Text(text)).await?;
            sent += 1;
            next = if sent < BATCH {
                l.rx.try_recv().ok()
            } else {
                None
            };
        }
        tx.flush().await
    };
    matches!(tokio::time::timeout(limit, batch).await, Ok(Ok(())))
}

/// Sends one frame; false when the client is gone (a send that cannot finish within the
/// idle timeout counts as gone).
async fn send(
    tx: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    m: Message,
    limit: Duration,
) -> bool {
    matches!(tokio::time::timeout(limit, tx.send(m)).await, Ok(Ok(())))
}

/// How often every open team socket is checked even when no credential table changed: a
/// store token can expire on its own.
const RECHECK_EVERY: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// Closes team sockets whose session, user, token or membership no longer allows them:
/// looked at whenever a credential table changes, within `poll`, and once a minute for
/// tokens that expire. Sockets opened by the same credential are checked once.
pub async fn watch(st: AppState, poll: Duration, shutdown: tokio_util::sync::CancellationToken) {
    let mut seen = st.db.credentials_epoch();
    let mut next_full = st.clock.now() + RECHECK_EVERY;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => {
                st.hub.close_all();
                break;
            }
            () = tokio::time::sleep(poll) => {}
        }
        let (epoch, now) = (st.db.credentials_epoch(), st.clock.now());
        if epoch == seen && now < next_full {
            continue;
        }
        (seen, next_full) = (epoch, now + RECHECK_EVERY);
        let agents = st.hub.agents();
        if agents.is_empty() {
            continue;
        }
        // Sockets opened with one credential on one store stand or fall together: each such
        // holder is looked up once, however many tabs (or benchmark sockets) it has open.
        let mut holders: HashMap<(StoreId, UserId, String), Vec<u64>> = HashMap::new();
        for (store, id, user, credential) in agents {
            holders
                .entry((store, user, credential))
                .or_default()
                .push(id);
        }
        let gone = st
            .db
            .read(move |c| {
                let mut gone = Vec::new();
                for ((store, user, credential), ids) in holders {
                    if !still_allowed(c, &credential, user, store, now)? {
                        gone.extend(ids.into_iter().map(|id| (store, id)));
                    }
                }
                Ok(gone)
            })
            .await;
        match gone {
            Ok(gone) => {
                for (store, id) in gone {
                    st.hub.close_agent(store, id);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not re-check the open sockets"),
        }
    }
}
