//! One-time codes of the messaging-app factor: send limits, storing, checking, the phone.

use crate::db::Tx;
use chrono::{DateTime, Duration, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::AppError;
use crate::ids::UserId;
use crate::time;

pub const CODE_TTL: Duration = Duration::seconds(300);
pub const CODE_ATTEMPTS: u32 = 5;
/// At most one send per challenge in this interval (and `--code-sends-per-hour` per user).
pub const SEND_INTERVAL: Duration = Duration::seconds(30);

/// What a code is for, and whose it is.
#[derive(Debug, Clone, Copy)]
pub enum CodeOwner<'a> {
    SignIn { challenge_id: &'a str },
    Enable,
}

impl CodeOwner<'_> {
    fn purpose(&self) -> &'static str {
        match self {
            CodeOwner::SignIn { .. } => "sign_in",
            CodeOwner::Enable => "enable",
        }
    }

    fn challenge(&self) -> Option<&str> {
        match self {
            CodeOwner::SignIn { challenge_id } => Some(challenge_id),
            CodeOwner::Enable => None,
        }
    }
}

/// A fresh six-digit code.
pub fn new_code() -> String {
    format!("{:06}", rand::random_range(0..1_000_000u32))
}

/// Seconds to wait before another code may be sent, if the send limits say so (one per
/// challenge in [`SEND_INTERVAL`], `per_hour` per user).
pub fn send_wait(
    c: &Connection,
    user: UserId,
    owner: CodeOwner<'_>,
    now: DateTime<Utc>,
    per_hour: u32,
) -> Result<Option<i64>, AppError> {
    if let Some(ch) = owner.challenge() {
        let last: Option<String> = c.query_row(
            "SELECT MAX(created_at) FROM one_time_codes WHERE challenge_id = ?1",
            [ch],
            |r| r.get(0),
        )?;
        if let Some(last) = last.and_then(|l| time::parse(&l)) {
            let left = (last + SEND_INTERVAL - now).num_seconds();
            if left > 0 {
                return Ok(Some(left));
            }
        }
    }
    let (sent, oldest): (u32, Option<String>) = c.query_row(
        "SELECT COUNT(*), MIN(created_at) FROM one_time_codes WHERE user_id = ?1 AND created_at > ?2",
        params![user, time::format(now - Duration::hours(1))],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if sent >= per_hour {
        let oldest = oldest.and_then(|o| time::parse(&o)).unwrap_or(now);
        return Ok(Some(
            (oldest + Duration::hours(1) - now).num_seconds().max(1),
        ));
    }
    Ok(None)
}

/// Stores a new pending code; any earlier pending code of the same owner is replaced, so
/// only the newest is accepted. Returns the code's id.
pub fn insert_code(
    tx: &Tx<'_>,
    user: UserId,
    owner: CodeOwner<'_>,
    phone: &str,
    code_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<String, AppError> {
    crate::db::exec(
        tx,
        "UPDATE one_time_codes SET state = 'replaced'
         WHERE state = 'pending' AND purpose = ?1 AND user_id = ?2
           AND (?3 IS NULL OR challenge_id = ?3)",
        params![owner.purpose(), user, owner.challenge()],
    )?;
    let id = uuid::Uuid::now_v7().to_string();
    crate::db::exec(
        tx,
        "INSERT INTO one_time_codes (id, purpose, challenge_id, user_id, phone, code_hash,
                                     created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            id,
            owner.purpose(),
            owner.challenge(),
            user,
            phone,
            code_hash,
            time::format(now),
            time::format(now + CODE_TTL)
        ],
    )?;
    Ok(id)
}

/// A code the provider did not take: never accepted, but still counted by the send limits.
pub fn mark_undelivered(tx: &Tx<'_>, id: &str) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE one_time_codes SET state = 'undelivered' WHERE id = ?1",
        [id],
    )?;
    Ok(())
}

#[derive(Debug)]
pub struct CodeRow {
    pub id: String,
    pub phone: String,
    pub code_hash: Vec<u8>,
    pub expires_at: DateTime<Utc>,
    pub state: String,
}

/// The newest code of an owner (pending, used or burned; replaced ones are never newest).
pub fn newest_code(
    c: &Connection,
    user: UserId,
    owner: CodeOwner<'_>,
) -> Result<Option<CodeRow>, AppError> {
    Ok(c.query_row(
        "SELECT id, phone, code_hash, expires_at, state FROM one_time_codes
         WHERE purpose = ?1 AND user_id = ?2 AND (?3 IS NULL OR challenge_id = ?3)
         ORDER BY created_at DESC, id DESC LIMIT 1",
        params![owner.purpose(), user, owner.challenge()],
        |r| {
            Ok(CodeRow {
                id: r.get(0)?,
                phone: r.get(1)?,
                code_hash: r.get(2)?,
                expires_at: crate::db::parse_column(r, 3, time::parse)?,
                state: r.get(4)?,
            })
        },
    )
    .optional()?)
}

/// Counts a wrong answer; the fifth burns the code. Returns true when it just burned.
pub fn wrong_code(tx: &Tx<'_>, id: &str) -> Result<bool, AppError> {
    let attempts: u32 = tx.query_row(
        "UPDATE one_time_codes SET attempts = attempts + 1,
                state = CASE WHEN attempts + 1 >= ?2 THEN 'burned' ELSE state END
         WHERE id = ?1 RETURNING attempts",
        params![id, CODE_ATTEMPTS],
        |r| r.get(0),
    )?;
    Ok(attempts >= CODE_ATTEMPTS)
}

pub fn use_code(tx: &Tx<'_>, id: &str) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE one_time_codes SET state = 'used' WHERE id = ?1",
        [id],
    )?;
    Ok(())
}

/// Sets the confirmed phone of the messaging-app factor, which turns it on (off is
/// `disable_factor`).
pub fn set_msgapp_phone(
    tx: &Tx<'_>,
    user: UserId,
    phone: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE users SET msgapp_phone = ?2, updated_at = ?3 WHERE id = ?1",
        params![user, phone, time::format(now)],
    )?;
    Ok(())
}
