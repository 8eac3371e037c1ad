//! The auth area's answer to `http::auth::Credentials`: which table a bearer token is
//! looked up in, and the lookups themselves (`store::credentials`).

use chrono::{DateTime, Utc};
use rusqlite::{Connection, Transaction};

use super::store;
use crate::error::AppError;
use crate::http::auth::{Credential, Credentials, Resolved, TokenKind};
use crate::http::permissions::Role;
use crate::ids::{StoreId, TenantId, UserId};

/// Prefixes of store API token values, current and legacy. Clients must treat tokens as
/// opaque; the server may use its own formats to pick the table to look in.
const STORE_TOKEN_PREFIXES: [&str; 2] = [crate::api_tokens::store::PREFIX, "bod_"];

/// Registered in `AppState` (`state.rs`); holds nothing, the tables are the state.
pub struct Tables;

impl Credentials for Tables {
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
            TokenKind::StoreToken => store::resolve_store_token(c, hash, now),
            TokenKind::Session => store::resolve_session(c, hash, now),
        }
    }

    fn note_use(
        &self,
        tx: &Transaction<'_>,
        credential: &Credential,
        first_use: bool,
        stale: bool,
        now: DateTime<Utc>,
    ) -> Result<(), AppError> {
        store::note_use(tx, credential, first_use, stale, now)
    }

    fn store_role(
        &self,
        c: &Connection,
        store: StoreId,
        user: UserId,
    ) -> Result<Option<(TenantId, Role)>, AppError> {
        store::store_role(c, store, user)
    }
}
