//! Idempotency keys (spec 8; svix `core/idempotency.rs`, zero2prod's table).
//!
//! Invariants:
//! - A POST with `Idempotency-Key` is remembered for 24 h per (credential, key); anonymous
//!   callers are scoped by client address, so one caller's key never replays to another.
//! - The handler runs in its own task: a client that disconnects cannot stop it between its
//!   commit and the stored response, so the retry replays instead of running it again.
//! - The first request writes a start marker; a duplicate while it runs is 409
//!   `idempotency_request_in_progress` (the single writer serializes the markers, so exactly
//!   one of two racing requests runs).
//! - A replay returns the first response's status, headers and body plus
//!   `Idempotent-Replayed: true`; the same key with another method, path or body is 422
//!   `idempotency_key_reused`.
//! - 5xx responses, streams and responses marked [`NoStore`] (sign-in answers: sessions,
//!   challenges, which have their own retry rules) are not stored: the marker is removed so
//!   the client can retry.
//! - Responses marked [`SealedStore`] carry a secret a create just made (an API token, a
//!   webhook signing secret, an invite link): they are stored with the body sealed under
//!   `secrets.key` (issue 13), so a retry replays the same secret instead of creating a second
//!   one, and the database alone does not reveal it. They expire and are purged like the rest.
//! - The request fingerprint is an HMAC with a server key: a body holding a password cannot
//!   be guessed back from it.
//! - Keys over 255 characters are 400; bodies over 1 MB and multipart uploads ignore the key.

use std::time::Duration;

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use http_body_util::BodyExt;

use super::rate_limit::CredentialId;
use super::trace::ClientAddr;
use crate::db::idempotency::{self as store, Begin, Stored};
use crate::error::{AppError, ErrorCode};
use crate::state::AppState;

pub const HEADER: &str = "idempotency-key";
pub const REPLAYED: &str = "idempotent-replayed";
const MAX_KEY_LEN: usize = 255;
/// Bodies up to this size are fingerprinted; larger ones pass through without the key.
pub const MAX_BODY: usize = 1024 * 1024;
/// A start marker older than this belongs to a request that died; a retry may take it over.
const STALE_MARKER: Duration = Duration::from_secs(60);
/// Headers a replay does not copy: framing, and ones the outer layers set per request.
const SKIPPED_HEADERS: [HeaderName; 3] = [
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::DATE,
];

/// Marks a response the layer must never store or replay: it carries credentials (tokens,
/// codes). Added by [`no_store`], which also sets `Cache-Control: no-store`.
#[derive(Debug, Clone, Copy)]
pub struct NoStore;

/// Wraps a response that carries credentials: never kept for replay, never cached.
pub fn no_store(res: impl IntoResponse) -> Response {
    let mut res = res.into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res.extensions_mut().insert(NoStore);
    res
}

/// Marks a response that carries a secret a create just made: kept for replay (so a retry
/// creates nothing), its body sealed at rest. Added by [`sealed_store`], which also sets
/// `Cache-Control: no-store`.
#[derive(Debug, Clone, Copy)]
pub struct SealedStore;

/// Wraps the response of a create that hands out a secret: replayable, never cached.
pub fn sealed_store(res: impl IntoResponse) -> Response {
    let mut res = res.into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res.extensions_mut().insert(SealedStore);
    res
}

/// The associated data of a sealed response: its record's key, so a sealed body cannot be
/// replayed under another caller's record.
fn sealed_aad(scope: &str, key: &str) -> String {
    format!("idempotency_keys:{scope}\n{key}")
}

pub async fn idempotency(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let Some(raw_key) = req.headers().get(HEADER) else {
        return next.run(req).await;
    };
    let key = match raw_key.to_str() {
        Ok(k) if !k.is_empty() && k.len() <= MAX_KEY_LEN => k.to_owned(),
        _ => {
            return AppError::bad_request(
                "Idempotency-Key must be 1 to 255 printable ASCII characters",
            )
            .into_response();
        }
    };
    if is_multipart(req.headers()) || declared_len(req.headers()).is_some_and(|n| n > MAX_BODY) {
        return next.run(req).await;
    }

    let scope = match req.extensions().get::<CredentialId>() {
        Some(c) => format!("cred:{}", c.0),
        None => format!(
            "anon:{}",
            req.extensions()
                .get::<ClientAddr>()
                .map_or_else(String::new, |a| a.0.to_string())
        ),
    };
    let (parts, body) = req.into_parts();
    let bytes = match buffer(body).await {
        Ok(Buffered::Whole(b)) => b,
        // Too big to fingerprint: the key is ignored and the endpoint's own limit decides.
        Ok(Buffered::TooLarge(body)) => return next.run(Request::from_parts(parts, body)).await,
        Err(e) => return e.into_response(),
    };
    let hash = fingerprint(
        &st.hmac_key,
        &parts.method,
        parts.uri.path_and_query().map_or("", |p| p.as_str()),
        &bytes,
    );

    let now = st.clock.now();
    let ttl = st.cfg.idempotency_ttl;
    let (s, k) = (scope.clone(), key.clone());
    let begun = st
        .db
        .write(move |tx| store::begin(tx, &s, &k, &hash, now, ttl, STALE_MARKER))
        .await;
    match begun {
        Err(e) => e.into_response(),
        Ok(Begin::InProgress) => AppError::conflict(
            ErrorCode::IdempotencyRequestInProgress,
            "a request with this Idempotency-Key is still running",
        )
        .into_response(),
        Ok(Begin::Mismatch) => AppError::new(
            ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was used with a different request",
        )
        .into_response(),
        Ok(Begin::Replay(mut stored)) => {
            if stored.sealed {
                let Some(body) = st
                    .secret_box
                    .open_bytes(&stored.body, &sealed_aad(&scope, &key))
                else {
                    // secrets.key was replaced: running the request again would create a
                    // second token, so say so rather than guess.
                    return AppError::internal(anyhow::anyhow!(
                        "a stored idempotent response does not open with secrets.key"
                    ))
                    .into_response();
                };
                stored.body = body;
            }
            replay(stored)
        }
        Ok(Begin::Started(token)) => {
            let guard = Marker {
                st: st.clone(),
                scope,
                key,
                token,
                armed: true,
            };
            let req = Request::from_parts(parts, Body::from(bytes));
            let run = tokio::spawn(async move {
                let mut guard = guard;
                let res = next.run(req).await;
                finish(&mut guard, res).await
            });
            run.await.unwrap_or_else(|e| {
                AppError::internal(anyhow::anyhow!("idempotent request task: {e}")).into_response()
            })
        }
    }
}

enum Buffered {
    Whole(Bytes),
    TooLarge(Body),
}

/// Reads up to `MAX_BODY` bytes; past that, hands back a body that replays what was read
/// followed by the rest, untouched.
async fn buffer(mut body: Body) -> Result<Buffered, AppError> {
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|_| AppError::bad_request("the request body could not be read"))?;
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
            if buf.len() > MAX_BODY {
                let head = stream::once(async move { Ok::<_, axum::Error>(Bytes::from(buf)) });
                return Ok(Buffered::TooLarge(Body::from_stream(
                    head.chain(body.into_data_stream()),
                )));
            }
        }
    }
    Ok(Buffered::Whole(Bytes::from(buf)))
}

/// Removes the start marker if the request ends without storing a response (an error, a
/// stream, or the client going away mid-request, which drops this guard).
struct Marker {
    st: AppState,
    scope: String,
    key: String,
    token: String,
    armed: bool,
}

impl Marker {
    /// Removes the marker (if still ours and unanswered), so the key can be used again.
    fn remove(&self) -> impl Future<Output = ()> + use<> {
        let (db, scope, key) = (self.st.db.clone(), self.scope.clone(), self.key.clone());
        let token = self.token.clone();
        async move {
            let res = db
                .write_to_finish(move |tx| store::remove_marker(tx, &scope, &key, &token))
                .await;
            if let Err(e) = res {
                tracing::warn!(error = %e, "could not remove an idempotency marker");
            }
        }
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        // A cancelled request or a stream: remove the marker in the background.
        if self.armed
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(self.remove());
        }
    }
}

async fn finish(guard: &mut Marker, res: Response) -> Response {
    let streaming = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let no_store = res.extensions().get::<NoStore>().is_some();
    let sealed = res.extensions().get::<SealedStore>().is_some();
    if streaming {
        return res; // the guard removes the marker when the stream ends
    }
    if res.status().is_server_error() || no_store {
        // Removed before answering, so a client retrying at once with the same key is
        // served rather than told the first request is still running.
        guard.remove().await;
        guard.armed = false;
        return res;
    }
    let (parts, body) = res.into_parts();
    let body = match to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            return AppError::internal(anyhow::anyhow!("reading a response body: {e}"))
                .into_response();
        }
    };
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .filter(|(name, _)| !SKIPPED_HEADERS.contains(name))
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let status = parts.status.as_u16();
    let (scope, key) = (guard.scope.clone(), guard.key.clone());
    let stored_body = if sealed {
        guard
            .st
            .secret_box
            .seal_bytes(&body, &sealed_aad(&scope, &key))
    } else {
        body.to_vec()
    };
    let token = guard.token.clone();
    let headers_json = serde_json::to_string(&headers).unwrap_or_else(|_| "[]".into());
    let saved = guard
        .st
        .db
        .write_to_finish(move |tx| {
            let response = store::Stored {
                status,
                headers: headers_json,
                body: stored_body,
                sealed,
            };
            store::save_response(tx, &scope, &key, &token, &response)
        })
        .await;
    match saved {
        Ok(true) => guard.armed = false,
        Ok(false) => tracing::warn!("idempotency marker was taken over; response not stored"),
        Err(e) => tracing::warn!(error = %e, "could not store an idempotent response"),
    }
    Response::from_parts(parts, Body::from(body))
}

fn replay(stored: Stored) -> Response {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let mut res = (status, Bytes::from(stored.body)).into_response();
    let headers = res.headers_mut();
    headers.remove(header::CONTENT_TYPE);
    let stored_headers: Vec<(String, String)> =
        serde_json::from_str(&stored.headers).unwrap_or_default();
    for (name, value) in stored_headers {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            headers.append(n, v);
        }
    }
    headers.insert(REPLAYED, HeaderValue::from_static("true"));
    res
}

fn fingerprint(key: &[u8], method: &Method, path_and_query: &str, body: &[u8]) -> Vec<u8> {
    let mut data =
        Vec::with_capacity(method.as_str().len() + path_and_query.len() + body.len() + 2);
    data.extend_from_slice(method.as_str().as_bytes());
    data.push(b'\n');
    data.extend_from_slice(path_and_query.as_bytes());
    data.push(b'\n');
    data.extend_from_slice(body);
    crate::secrets::keyed_hash(key, &data)
}

fn is_multipart(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/")
        })
}

fn declared_len(h: &HeaderMap) -> Option<usize> {
    h.get(header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}
