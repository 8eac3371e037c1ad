//! The credential lookups behind `http::auth` (spec 5), as the [`CredentialTables`] that
//! `state.rs` registers: a bearer token to its caller, its use written down, a caller's role
//! in a store. They read other areas' tables (store API tokens, stores, members,
//! organizations) so that a caller is resolved in one round trip.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::sync::Arc;

use crate::error::AppError;
use crate::http::auth::{Credential, Credentials, Principal, Profile, Resolved, TokenKind};
use crate::http::permissions::{PermissionSet, Role};
use crate::ids::{StoreId, TenantId, UserId};
use crate::time;

/// Prefixes of store API token values, current and legacy. Clients must treat tokens as
/// opaque; the server may use its own formats to pick the table to look in.
const STORE_TOKEN_PREFIXES: [&str; 2] = [crate::api_tokens::store::PREFIX, "bod_"];

/// Holds nothing: the tables are the state.
pub struct CredentialTables;

impl Credentials for CredentialTables {
    fn kind(&self, token: &str) -> TokenKind {
        if STORE_TOKEN_PREFIXES.iter().any(|p| token.starts_with(p)) {
            TokenKind::StoreToken
        } else {
            TokenKind::Session
        }
    }

    fn resolve(
        &self,
        c: &Connection,
        kind: TokenKind,
        hash: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Option<Resolved>, AppError> {
        match kind {
            TokenKind::StoreToken => resolve_store_token(c, hash, now),
            TokenKind::Session => resolve_session(c, hash, now),
        }
    }

    /// A session's `last_used_at` only when `stale`; a store token's on every call (the
    /// middleware calls only when it is stale, as a store token has no first use).
    fn note_use(
        &self,
        tx: &Tx<'_>,
        credential: &Credential,
        first_use: bool,
        stale: bool,
        now: DateTime<Utc>,
    ) -> Result<(), AppError> {
        let now = time::format(now);
        let (session_id, pair_id) = match credential {
            Credential::Session {
                session_id,
                pair_id,
            } => (session_id, pair_id),
            Credential::StoreToken { token_id, .. } => {
                crate::db::exec(
                    tx,
                    "UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1",
                    params![token_id, now],
                )?;
                return Ok(());
            }
        };
        // The first use is written before the token counts as used: a refresh retry
        // must see it (spec 3).
        if first_use {
            crate::db::exec(
                tx,
                "UPDATE token_pairs SET access_used_at = ?2 WHERE id = ?1 AND access_used_at IS NULL",
                params![pair_id, now],
            )?;
        }
        if stale {
            crate::db::exec(
                tx,
                "UPDATE sessions SET last_used_at = ?2 WHERE id = ?1",
                params![session_id, now],
            )?;
        }
        Ok(())
    }

    fn store_role(
        &self,
        c: &Connection,
        store: StoreId,
        user: UserId,
    ) -> Result<Option<(TenantId, Role)>, AppError> {
        store_role(c, store, user)
    }
}

/// The account columns both lookups select, in this order from column `i` on:
/// `u.email, u.locale, u.totp_secret IS NOT NULL, u.msgapp_phone IS NOT NULL, u.created_at`.
fn profile(r: &Row<'_>, i: usize) -> rusqlite::Result<Arc<Profile>> {
    Ok(Arc::new(Profile {
        email: r.get(i)?,
        locale: r.get(i + 1)?,
        totp_enabled: r.get(i + 2)?,
        msgapp_enabled: r.get(i + 3)?,
        created_at: r.get(i + 4)?,
    }))
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
                    scopes: PermissionSet::from_scopes(&crate::db::json_column::<Vec<String>>(
                        r, 4,
                    )?),
                    role: crate::db::parse_column(r, 12, Role::parse)?,
                    tenant_id: r.get(11)?,
                },
                profile: profile(r, 6)?,
            },
            first_use: false,
            last_used_at: r.get(5)?,
            expires_at: r.get(13)?,
        })
    })
    .optional()?)
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
                profile: profile(r, 5)?,
            },
            first_use: r.get(3)?,
            last_used_at: r.get(4)?,
            expires_at: r.get(10)?,
        })
    })
    .optional()?)
}

/// The caller's role in a store, if they can see it. Owners of the organization own all of
/// its stores.
pub fn store_role(
    c: &Connection,
    store: StoreId,
    user: UserId,
) -> Result<Option<(TenantId, Role)>, AppError> {
    let row: Option<(TenantId, Option<Role>)> = c
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
        .query_row(params![store, user], |r| {
            // NULL: not a member. Anything else must be a role the code knows.
            let role = match r.get_ref(1)? {
                rusqlite::types::ValueRef::Null => None,
                _ => Some(crate::db::parse_column(r, 1, Role::parse)?),
            };
            Ok((r.get(0)?, role))
        })
        .optional()?;
    Ok(row.and_then(|(tenant, role)| role.map(|r| (tenant, r))))
}
