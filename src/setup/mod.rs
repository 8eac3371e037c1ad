//! `merchant-admin setup` (issue 2 §3): the first user, organization (tenant) and store, with
//! the user as owner of both, in one transaction: a second run with the same e-mail fails and
//! changes nothing. `--demo` adds demo data; each area adds its part to [`demo`].

pub mod demo;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::auth::model::Locale;
use crate::auth::{password, store as auth_store};
use crate::db::Db;
use crate::error::{AppError, ErrorCode};
use crate::ids::{StoreId, TenantId, UserId};
use crate::tenants::store as tenants;
use crate::text;

#[derive(Clone)]
pub struct SetupInput {
    pub email: String,
    pub password: String,
    pub org_name: String,
    pub store_name: String,
    pub demo: bool,
}

impl std::fmt::Debug for SetupInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetupInput")
            .field("email", &self.email)
            .field("password", &"<redacted>")
            .field("org_name", &self.org_name)
            .field("store_name", &self.store_name)
            .field("demo", &self.demo)
            .finish()
    }
}

/// What `setup` prints, as one JSON object.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SetupOutput {
    pub user_id: UserId,
    pub tenant_id: TenantId,
    pub store_id: StoreId,
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    #[error("a user with the e-mail {0} already exists; nothing was changed")]
    EmailTaken(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Checks and normalizes the input: trimmed, e-mail lowercased.
fn validate(input: &SetupInput) -> Result<SetupInput, SetupError> {
    let invalid = |field, message: &str| SetupError::Invalid {
        field,
        message: message.into(),
    };
    let email = text::normalize_email(&input.email);
    if !text::looks_like_email(&email) {
        return Err(invalid("email", "is not a valid e-mail address"));
    }
    password::check_rules(&input.password).map_err(|m| invalid("password", m))?;
    let (org, store_name) = (input.org_name.trim(), input.store_name.trim());
    if org.is_empty() || org.chars().count() > 120 {
        return Err(invalid("org-name", "must be 1 to 120 characters"));
    }
    if store_name.is_empty() || store_name.chars().count() > 120 {
        return Err(invalid("store-name", "must be 1 to 120 characters"));
    }
    Ok(SetupInput {
        email,
        password: input.password.clone(),
        org_name: org.to_owned(),
        store_name: store_name.to_owned(),
        demo: input.demo,
    })
}

/// Runs setup. Blocking (argon2 and SQLite): call it from a blocking thread.
pub fn run(
    db: &Db,
    now: chrono::DateTime<chrono::Utc>,
    input: &SetupInput,
) -> Result<SetupOutput, SetupError> {
    let input = validate(input)?;
    let password_hash = password::hash(&input.password)?;
    let demo_hash = if input.demo {
        Some(password::hash(&input.password)?)
    } else {
        None
    };
    let email = input.email.clone();
    let result = db.write_blocking(|tx| {
        let out = create_owner(tx, now, &input, &password_hash)?;
        if let Some(h) = &demo_hash {
            demo::seed(tx, now, out, h)?;
        }
        Ok(out)
    });
    result.map_err(|e| {
        if e.code == ErrorCode::EmailTaken {
            SetupError::EmailTaken(email)
        } else {
            SetupError::Other(anyhow::anyhow!("{e}: {:?}", e.source))
        }
    })
}

/// The first user, as owner of a new organization and of its first store.
#[tracing::instrument(skip_all)]
fn create_owner(
    tx: &Tx<'_>,
    now: DateTime<Utc>,
    input: &SetupInput,
    password_hash: &str,
) -> Result<SetupOutput, AppError> {
    let user_id = auth_store::insert_user(tx, now, &input.email, password_hash, Locale::PtBr)?.id;
    // pt-BR and no plan: what the tenants table defaults to.
    let tenant_id = tenants::create_tenant(tx, user_id, &input.org_name, Locale::PtBr, None, now)
        .map_err(|e| {
            if e.code == ErrorCode::SlugTaken {
                AppError::conflict(
                    ErrorCode::SlugTaken,
                    "an organization with this name already exists",
                )
            } else {
                e
            }
        })?
        .id;
    let store_id = tenants::create_store(tx, tenant_id, user_id, &input.store_name, now)?.id;
    Ok(SetupOutput {
        user_id,
        tenant_id,
        store_id,
    })
}
