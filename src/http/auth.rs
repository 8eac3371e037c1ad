//! Authentication (spec 5): who is calling. The `authenticate` middleware resolves a bearer
//! token once per request into a [`Principal`] (and the [`CredentialId`] that rate limits and
//! idempotency keys are charged to); handlers ask for it with the `Principal` extractor
//! (401 when absent) or `MaybePrincipal`. A resolved token is remembered in [`TokenCache`]
//! only until a credential table changes (`Db::credentials_epoch`) or the token expires, so
//! a revoked, expired or retired token is still refused on its very next use. The tables
//! are read through [`Credentials`], which the auth area implements (http names no area).

use crate::db::Tx;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use std::sync::PoisonError;

use super::rate_limit::CredentialId;
use crate::error::{AppError, ErrorCode};
use crate::ids::{PairId, SessionId, UserId};
use crate::state::AppState;
use crate::{secrets, time};

/// How often a credential's `last_used_at` is written at most.
const LAST_USED_GRANULARITY: chrono::Duration = chrono::Duration::seconds(60);

/// The kind of credential behind a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A signed-in session's access token.
    Session {
        session_id: SessionId,
        pair_id: PairId,
    },
    /// A store API token: held to its store, and to its scopes there.
    StoreToken {
        token_id: crate::ids::ApiTokenId,
        store_id: crate::ids::StoreId,
        name: String,
        scopes: super::permissions::PermissionSet,
        /// The issuer's role in the store and the store's organization, read with the
        /// token itself so a store route needs no second lookup.
        role: super::permissions::Role,
        tenant_id: crate::ids::TenantId,
    },
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Principal {
    pub user_id: UserId,
    pub credential: Credential,
    /// The caller's account as it was read while resolving the token, this request.
    pub profile: std::sync::Arc<Profile>,
}

/// The account fields the token lookup reads anyway; enough to answer `GET /me` without
/// another round trip.
#[derive(Debug, Clone)]
pub struct Profile {
    pub email: String,
    pub locale: String,
    pub totp_enabled: bool,
    pub msgapp_enabled: bool,
    pub created_at: String,
}

impl Credential {
    /// What budgets, idempotency keys and open sockets are charged to: `session:<id>` or
    /// `api_token:<id>`, the same for every token a session rotates through.
    pub fn key(&self) -> String {
        match self {
            Self::Session { session_id, .. } => format!("session:{session_id}"),
            Self::StoreToken { token_id, .. } => format!("api_token:{token_id}"),
        }
    }
}

impl Principal {
    pub fn session_id(&self) -> Option<SessionId> {
        match &self.credential {
            Credential::Session { session_id, .. } => Some(*session_id),
            Credential::StoreToken { .. } => None,
        }
    }

    /// True when the caller used a store API token rather than a session.
    pub fn is_store_token(&self) -> bool {
        matches!(self.credential, Credential::StoreToken { .. })
    }
}

/// A caller signed in as a user, not through a store API token: user-level and
/// organization-level routes take this (spec 5 rule 2: a store token is held to its store).
#[derive(Debug, Clone)]
pub struct UserSession(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for UserSession {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, st: &S) -> Result<Self, AppError> {
        let p = Principal::from_request_parts(parts, st).await?;
        if p.is_store_token() {
            return Err(AppError::new(
                ErrorCode::MissingPermission,
                "a store API token works only on its own store's routes",
            ));
        }
        Ok(UserSession(p))
    }
}

/// A caller who may or may not be authenticated.
#[derive(Debug, Clone)]
pub struct MaybePrincipal(pub Option<Principal>);

pub fn unauthorized() -> AppError {
    AppError::new(
        ErrorCode::Unauthorized,
        "missing, expired or revoked credentials",
    )
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, AppError> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(unauthorized)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for MaybePrincipal {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(MaybePrincipal(parts.extensions.get::<Principal>().cloned()))
    }
}

/// What a bearer token resolved to, as [`Credentials::resolve`] read it.
#[derive(Clone)]
pub struct Resolved {
    pub principal: Principal,
    /// An access token used for the first time (a store token never is).
    pub first_use: bool,
    pub last_used_at: Option<String>,
    /// When the token stops working by itself; `None` for a store token without expiry.
    pub expires_at: Option<String>,
}

/// Which table a bearer token is looked up in, told by its format alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Session,
    StoreToken,
}

/// The credential tables behind the middleware and extractors here. `http` names no area,
/// so the auth area implements this and `state.rs` registers it in `AppState` (as it
/// registers job kinds). Each call but `kind` runs on a database thread, given its connection.
pub trait Credentials: Send + Sync {
    fn kind(&self, token: &str) -> TokenKind;

    /// The live credential whose token hashes to `hash`, with its active user; `None` when
    /// there is none.
    fn resolve(
        &self,
        c: &Connection,
        kind: TokenKind,
        hash: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Option<Resolved>, AppError>;

    /// Records a use: the access token's first (`first_use`), and the credential's
    /// `last_used_at` (`stale`).
    fn note_use(
        &self,
        tx: &Tx<'_>,
        credential: &Credential,
        first_use: bool,
        stale: bool,
        now: DateTime<Utc>,
    ) -> Result<(), AppError>;

    /// The organization of `store` and `user`'s role there; `None` when they cannot see it.
    fn store_role(
        &self,
        c: &Connection,
        store: crate::ids::StoreId,
        user: UserId,
    ) -> Result<Option<(crate::ids::TenantId, super::permissions::Role)>, AppError>;
}

/// Bearer tokens resolved recently, by the sha256 of their value. Resolving a token is a
/// database round trip on its own blocking hop; a list request spent a fifth of its time
/// there. An entry answers only while [`crate::db::Db::credentials_epoch`] is the one it
/// was read at and the token has not expired; anything else goes back to the database.
#[derive(Default)]
pub struct TokenCache {
    entries: std::sync::Mutex<std::collections::HashMap<Vec<u8>, Cached>>,
}

struct Cached {
    epoch: u64,
    resolved: Resolved,
    expires_at: Option<DateTime<Utc>>,
}

/// Entries kept at most; past that the cache starts again empty (tokens in use come back
/// with their next request).
const TOKEN_CACHE_ENTRIES: usize = 10_000;

impl TokenCache {
    fn get(&self, hash: &[u8], epoch: u64, now: DateTime<Utc>) -> Option<Resolved> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let hit = entries.get(hash)?;
        let live = hit.epoch == epoch && hit.expires_at.is_none_or(|at| now < at);
        live.then(|| hit.resolved.clone())
    }

    /// Remembers `resolved`, read at `epoch`. A first use is not kept: it is written down
    /// before the token counts as used (refresh retries depend on it).
    fn put(&self, hash: Vec<u8>, epoch: u64, resolved: &Resolved) {
        if resolved.first_use {
            return;
        }
        let expires_at = match &resolved.expires_at {
            None => None,
            Some(at) => match time::parse(at) {
                Some(at) => Some(at),
                None => return, // unreadable: let the database decide every time
            },
        };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= TOKEN_CACHE_ENTRIES {
            entries.clear();
        }
        entries.insert(
            hash,
            Cached {
                epoch,
                resolved: resolved.clone(),
                expires_at,
            },
        );
    }
}

fn bearer(req: &Request) -> Option<&str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Resolves the bearer token, if any, into request extensions. Never rejects: an invalid
/// token leaves the request anonymous, and the `Principal` extractor answers 401.
pub async fn authenticate(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    if let Some(token) = bearer(&req) {
        let (hash, now) = (secrets::hash(token), st.clock.now());
        let kind = st.credentials.kind(token);
        // Read before the database: a change committed after this moves it on.
        let epoch = st.db.credentials_epoch();
        let found = match st.tokens.get(&hash, epoch, now) {
            Some(hit) => Ok(Some(hit)),
            None => {
                let (key, credentials) = (hash.clone(), st.credentials.clone());
                let found = st
                    .db
                    .read(move |c| credentials.resolve(c, kind, &hash, now))
                    .await;
                if let Ok(Some(found)) = &found {
                    st.tokens.put(key, epoch, found);
                }
                found
            }
        };
        match found {
            Ok(Some(found)) => {
                note_use(&st, &found, now).await;
                let credential = found.principal.credential.key();
                req.extensions_mut().insert(CredentialId(credential));
                req.extensions_mut().insert(found.principal);
            }
            Ok(None) => tracing::debug!("bearer token did not resolve"),
            // A database that cannot answer (503 when its queue is full) is not a bad
            // token: a 401 would send the client to sign in again.
            Err(e) => return e.into_response(),
        }
    }
    next.run(req).await
}

/// Records the first use of an access token (a refresh retry must see it) and, at most once
/// a minute, the session's `last_used_at`.
async fn note_use(st: &AppState, found: &Resolved, now: DateTime<Utc>) {
    let stale = found
        .last_used_at
        .as_deref()
        .and_then(time::parse)
        .is_none_or(|t| now - t >= LAST_USED_GRANULARITY);
    if !found.first_use && !stale {
        return;
    }
    let (credential, first_use) = (found.principal.credential.clone(), found.first_use);
    let credentials = st.credentials.clone();
    let res = st
        .db
        .write(move |tx| credentials.note_use(tx, &credential, first_use, stale, now))
        .await;
    if let Err(e) = res {
        tracing::warn!(error = ?e, "could not record a token's use");
    }
}

/// A caller inside one store (spec 5; issue 4): the `{store_id}` of the path, the caller's
/// role there (a store member's role, or owner for an owner of the store's organization) and
/// the permissions it grants. A store the caller cannot see is 404, never a hint that it
/// exists. Handlers then ask [`StoreScope::require`]: the one permission check.
#[derive(Debug, Clone)]
pub struct StoreScope {
    pub store_id: crate::ids::StoreId,
    pub tenant_id: crate::ids::TenantId,
    pub principal: Principal,
    pub role: super::permissions::Role,
    pub permissions: super::permissions::PermissionSet,
    /// The request's trace id, for the audit trail.
    pub trace_id: String,
}

impl StoreScope {
    /// 403 `missing_permission` unless the caller holds `p` in this store.
    pub fn require(&self, p: super::permissions::Permission) -> Result<(), AppError> {
        if self.permissions.contains(p) {
            Ok(())
        } else {
            Err(missing_permission(p))
        }
    }
}

pub fn missing_permission(p: super::permissions::Permission) -> AppError {
    AppError::new(
        ErrorCode::MissingPermission,
        format!("this needs the {} permission", p.code()),
    )
    .with_details(serde_json::json!({ "permission": p.code() }))
}

impl FromRequestParts<AppState> for StoreScope {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, AppError> {
        let principal = Principal::from_request_parts(parts, st).await?;
        let not_found = || AppError::not_found("store");
        let params = axum::extract::RawPathParams::from_request_parts(parts, st)
            .await
            .map_err(|_| not_found())?;
        let store_id: crate::ids::StoreId = params
            .iter()
            .find(|(k, _)| *k == "store_id")
            .and_then(|(_, v)| v.parse().ok())
            .ok_or_else(not_found)?;
        let trace_id = parts
            .extensions
            .get::<super::trace::TraceId>()
            .map_or_else(String::new, |t| t.0.clone());
        StoreScope::resolve(st, principal, store_id, trace_id).await
    }
}

impl StoreScope {
    /// The caller's standing in `store_id`: 404 when they cannot see the store, 403 when
    /// their store token belongs to another. Routes that name a store only indirectly (the
    /// root `/webhook-events` forms) call this with the store they looked up.
    pub async fn resolve(
        st: &AppState,
        principal: Principal,
        store_id: crate::ids::StoreId,
        trace_id: String,
    ) -> Result<Self, AppError> {
        let not_found = || AppError::not_found("store");
        let (tenant_id, role, scopes) = match &principal.credential {
            // A store token carries its issuer's role, read with the token: no lookup.
            Credential::StoreToken {
                store_id: own,
                scopes,
                role,
                tenant_id,
                ..
            } => {
                if *own != store_id {
                    return Err(AppError::new(
                        ErrorCode::MissingPermission,
                        "this store API token belongs to another store",
                    ));
                }
                (*tenant_id, *role, *scopes)
            }
            Credential::Session { .. } => {
                let (user, credentials) = (principal.user_id, st.credentials.clone());
                let (tenant_id, role) = st
                    .db
                    .read(move |c| credentials.store_role(c, store_id, user))
                    .await?
                    .ok_or_else(not_found)?;
                (tenant_id, role, super::permissions::PermissionSet::all())
            }
        };
        // A token never does more than its user (spec 5 rule 1).
        let permissions = role.permissions().intersect(scopes);
        Ok(StoreScope {
            store_id,
            tenant_id,
            principal,
            role,
            permissions,
            trace_id,
        })
    }
}
