//! Authentication (spec 5): who is calling. The `authenticate` middleware resolves a bearer
//! token once per request into a [`Principal`] (and the [`CredentialId`] that rate limits and
//! idempotency keys are charged to); handlers ask for it with the `Principal` extractor
//! (401 when absent) or `MaybePrincipal`. A resolved token is remembered in [`TokenCache`]
//! only until a credential table changes (`Db::credentials_epoch`) or the token expires, so
//! a revoked, expired or retired token is still refused on its very next use.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use std::sync::PoisonError;

use super::rate_limit::CredentialId;
use crate::error::{AppError, ErrorCode};
use crate::ids::{PairId, SessionId, UserId};
use crate::state::AppState;
use crate::{secrets, time};

/// How often `sessions.last_used_at` is written at most.
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

#[derive(Clone)]
struct Resolved {
    principal: Principal,
    first_use: bool,
    last_used_at: Option<String>,
    /// When the token stops working by itself; `None` for a store token without expiry.
    expires_at: Option<String>,
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

/// Prefixes of store API token values, current and legacy. Clients must treat tokens as
/// opaque; the server may use its own formats to pick the table to look in.
const STORE_TOKEN_PREFIXES: [&str; 2] = ["svc_st_", "bod_"];

pub fn scopes_from_json(json: &str) -> super::permissions::PermissionSet {
    use super::permissions::{Permission, PermissionSet};
    let codes: Vec<String> = serde_json::from_str(json).unwrap_or_default();
    if codes.iter().any(|c| c == "*") {
        return PermissionSet::all();
    }
    PermissionSet::of(codes.iter().filter_map(|c| Permission::parse(c)))
}

/// Looks a store API token up: live (not expired), its issuer active and still in the
/// store (a member, or an owner of its organization).
fn resolve_store_token(
    c: &Connection,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<Resolved>, AppError> {
    Ok(c.prepare_cached(
        "SELECT * FROM (
             SELECT t.created_by, t.id, t.store_id, t.name, t.scopes, t.last_used_at,
                    u.email, u.locale, u.totp_secret IS NOT NULL, u.msgapp_phone IS NOT NULL,
                    u.created_at, s.tenant_id,
                    CASE WHEN EXISTS (SELECT 1 FROM tenant_members tm
                                      WHERE tm.tenant_id = s.tenant_id
                                        AND tm.user_id = t.created_by AND tm.role = 'owner')
                         THEN 'owner'
                         ELSE (SELECT m.role FROM store_members m
                               WHERE m.store_id = t.store_id AND m.user_id = t.created_by)
                    END AS role,
                    t.expires_at
             FROM api_tokens t
             JOIN users u ON u.id = t.created_by
             JOIN stores s ON s.id = t.store_id
             WHERE t.token_hash = ?1 AND (t.expires_at IS NULL OR t.expires_at > ?2)
               AND u.disabled_at IS NULL)
         WHERE role IS NOT NULL",
    )?
    .query_row(params![hash, time::format(now)], |r| {
        Ok(Resolved {
            principal: Principal {
                user_id: r.get(0)?,
                credential: Credential::StoreToken {
                    token_id: r.get(1)?,
                    store_id: r.get(2)?,
                    name: r.get(3)?,
                    scopes: scopes_from_json(&r.get::<_, String>(4)?),
                    role: super::permissions::Role::parse(&r.get::<_, String>(12)?)
                        .unwrap_or(super::permissions::Role::Viewer),
                    tenant_id: r.get(11)?,
                },
                profile: std::sync::Arc::new(Profile {
                    email: r.get(6)?,
                    locale: r.get(7)?,
                    totp_enabled: r.get(8)?,
                    msgapp_enabled: r.get(9)?,
                    created_at: r.get(10)?,
                }),
            },
            first_use: false,
            last_used_at: r.get(5)?,
            expires_at: r.get(13)?,
        })
    })
    .optional()?)
}

fn bearer(req: &Request) -> Option<&str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Looks a session access token up; only a live token of a live session of an active user
/// resolves.
fn resolve_session(
    c: &Connection,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<Resolved>, AppError> {
    Ok(c.prepare_cached(
        "SELECT s.user_id, s.id, p.id, p.access_used_at IS NULL, s.last_used_at,
                u.email, u.locale, u.totp_secret IS NOT NULL, u.msgapp_phone IS NOT NULL,
                u.created_at, p.access_expires_at
         FROM token_pairs p
         JOIN sessions s ON s.id = p.session_id
         JOIN users u ON u.id = s.user_id
         WHERE p.access_hash = ?1 AND p.access_expires_at > ?2 AND p.retired_at IS NULL
           AND s.revoked_at IS NULL AND u.disabled_at IS NULL",
    )?
    .query_row(params![hash, time::format(now)], |r| {
        Ok(Resolved {
            principal: Principal {
                user_id: r.get(0)?,
                credential: Credential::Session {
                    session_id: r.get(1)?,
                    pair_id: r.get(2)?,
                },
                profile: std::sync::Arc::new(Profile {
                    email: r.get(5)?,
                    locale: r.get(6)?,
                    totp_enabled: r.get(7)?,
                    msgapp_enabled: r.get(8)?,
                    created_at: r.get(9)?,
                }),
            },
            first_use: r.get(3)?,
            last_used_at: r.get(4)?,
            expires_at: r.get(10)?,
        })
    })
    .optional()?)
}

/// Resolves the bearer token, if any, into request extensions. Never rejects: an invalid
/// token leaves the request anonymous, and the `Principal` extractor answers 401.
pub async fn authenticate(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    if let Some(token) = bearer(&req) {
        let (hash, now) = (secrets::hash(token), st.clock.now());
        let store_token = STORE_TOKEN_PREFIXES.iter().any(|p| token.starts_with(p));
        // Read before the database: a change committed after this moves it on.
        let epoch = st.db.credentials_epoch();
        let found = match st.tokens.get(&hash, epoch, now) {
            Some(hit) => Ok(Some(hit)),
            None => {
                let key = hash.clone();
                let found = st
                    .db
                    .read(move |c| {
                        if store_token {
                            resolve_store_token(c, &hash, now)
                        } else {
                            resolve_session(c, &hash, now)
                        }
                    })
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
                let credential = match &found.principal.credential {
                    Credential::Session { session_id, .. } => format!("session:{session_id}"),
                    Credential::StoreToken { token_id, .. } => format!("api_token:{token_id}"),
                };
                req.extensions_mut().insert(CredentialId(credential));
                req.extensions_mut().insert(found.principal);
            }
            Ok(None) => tracing::debug!("bearer token did not resolve"),
            Err(e) => tracing::error!(error = ?e, "could not resolve a bearer token"),
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
    let credential = found.principal.credential.clone();
    let first_use = found.first_use;
    let res = st
        .db
        .write(move |tx| {
            let now = time::format(now);
            let (session_id, pair_id) = match credential {
                Credential::Session { session_id, pair_id } => (session_id, pair_id),
                Credential::StoreToken { token_id, .. } => {
                    crate::db::exec(tx,
                        "UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1",
                        params![token_id, now],
                    )?;
                    return Ok(());
                }
            };
            if first_use {
                crate::db::exec(tx,
                    "UPDATE token_pairs SET access_used_at = ?2 WHERE id = ?1 AND access_used_at IS NULL",
                    params![pair_id, now],
                )?;
            }
            if stale {
                crate::db::exec(tx,
                    "UPDATE sessions SET last_used_at = ?2 WHERE id = ?1",
                    params![session_id, now],
                )?;
            }
            Ok(())
        })
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

/// The caller's role in a store, if they can see it. Owners of the organization own all of
/// its stores.
pub fn store_role(
    c: &Connection,
    store: crate::ids::StoreId,
    user: UserId,
) -> Result<Option<(crate::ids::TenantId, super::permissions::Role)>, AppError> {
    let row: Option<(crate::ids::TenantId, Option<String>)> = c
        .prepare_cached(
            "SELECT s.tenant_id,
                    CASE WHEN EXISTS (SELECT 1 FROM tenant_members tm
                                      WHERE tm.tenant_id = s.tenant_id AND tm.user_id = ?2
                                        AND tm.role = 'owner')
                         THEN 'owner'
                         ELSE (SELECT role FROM store_members sm
                               WHERE sm.store_id = s.id AND sm.user_id = ?2) END
             FROM stores s WHERE s.id = ?1",
        )?
        .query_row(params![store, user], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(row.and_then(|(tenant, role)| {
        role.and_then(|r| super::permissions::Role::parse(&r))
            .map(|r| (tenant, r))
    }))
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
                let user = principal.user_id;
                let (tenant_id, role) = st
                    .db
                    .read(move |c| store_role(c, store_id, user))
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
