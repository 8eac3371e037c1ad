//! Accounts: the `users` row; creating, finding, and changing locale, password or active state.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::revoke_user_sessions;
use crate::auth::model::{Locale, TwoFactorOut, UserOut};
use crate::error::{AppError, ErrorCode, ResultExt};
use crate::ids::UserId;
use crate::time;

#[derive(Debug, Clone)]
pub struct UserRow {
    pub id: UserId,
    pub email: String,
    pub password_hash: String,
    pub locale: Locale,
    pub disabled: bool,
    pub created_at: String,
    pub totp_enabled: bool,
    pub msgapp_phone: Option<String>,
}

impl UserRow {
    const COLUMNS: &str = "id, email, password_hash, locale, disabled_at IS NOT NULL, created_at,
                           totp_secret IS NOT NULL, msgapp_phone";

    fn from_row(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            email: r.get(1)?,
            password_hash: r.get(2)?,
            locale: r.get(3)?,
            disabled: r.get(4)?,
            created_at: r.get(5)?,
            totp_enabled: r.get(6)?,
            msgapp_phone: r.get(7)?,
        })
    }

    pub fn has_second_factor(&self) -> bool {
        self.totp_enabled || self.msgapp_phone.is_some()
    }

    pub fn to_out(&self) -> UserOut {
        UserOut {
            id: self.id,
            email: self.email.clone(),
            locale: self.locale,
            two_factor: TwoFactorOut {
                totp: self.totp_enabled,
                msgapp: self.msgapp_phone.is_some(),
            },
            created_at: self.created_at.clone(),
        }
    }
}

/// Inserts a user; the e-mail must already be normalized (trimmed, lowercased).
pub fn insert_user(
    tx: &Tx<'_>,
    now: DateTime<Utc>,
    email: &str,
    password_hash: &str,
    locale: Locale,
) -> Result<UserRow, AppError> {
    let id = UserId::new();
    let now = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO users (id, email, password_hash, locale, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![id, email, password_hash, locale, now],
    )
    .on_constraint("users.email", |_| {
        AppError::conflict(
            ErrorCode::EmailTaken,
            "an account with this e-mail already exists",
        )
    })?;
    Ok(UserRow {
        id,
        email: email.to_owned(),
        password_hash: password_hash.to_owned(),
        locale,
        disabled: false,
        created_at: now,
        totp_enabled: false,
        msgapp_phone: None,
    })
}

pub fn find_user_by_email(c: &Connection, email: &str) -> Result<Option<UserRow>, AppError> {
    let sql = format!("SELECT {} FROM users WHERE email = ?1", UserRow::COLUMNS);
    Ok(c.prepare_cached(&sql)?
        .query_row([email], UserRow::from_row)
        .optional()?)
}

pub fn get_user(c: &Connection, id: UserId) -> Result<Option<UserRow>, AppError> {
    let sql = format!("SELECT {} FROM users WHERE id = ?1", UserRow::COLUMNS);
    Ok(c.prepare_cached(&sql)?
        .query_row([id], UserRow::from_row)
        .optional()?)
}

pub fn set_locale(
    tx: &Tx<'_>,
    id: UserId,
    locale: Locale,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE users SET locale = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, locale, time::format(now)],
    )?;
    Ok(())
}

pub fn set_password(
    tx: &Tx<'_>,
    id: UserId,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE users SET password_hash = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, hash, time::format(now)],
    )?;
    Ok(())
}

/// Deactivates (revoking every session) or reactivates an account. False when no such e-mail.
pub fn set_disabled(
    tx: &Tx<'_>,
    email: &str,
    disabled: bool,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let now_s = time::format(now);
    let id: Option<UserId> = tx
        .query_row("SELECT id FROM users WHERE email = ?1", [email], |r| {
            r.get(0)
        })
        .optional()?;
    let Some(id) = id else { return Ok(false) };
    crate::db::exec(
        tx,
        "UPDATE users SET disabled_at = CASE WHEN ?2 THEN COALESCE(disabled_at, ?3) END,
                          updated_at = ?3
         WHERE id = ?1",
        params![id, disabled, now_s],
    )?;
    if disabled {
        revoke_user_sessions(tx, id, None, "user_deactivated", now)?;
    }
    Ok(true)
}
