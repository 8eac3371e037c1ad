//! Second factors: TOTP secrets (sealed), recovery codes, and sign-in challenges.

use crate::db::Tx;
use chrono::{DateTime, Duration, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::AppError;
use crate::ids::UserId;
use crate::{secrets, time};

/// How long a sign-in challenge lasts, and how many verify attempts it allows in total.
pub const CHALLENGE_TTL: Duration = Duration::seconds(300);
pub const CHALLENGE_ATTEMPTS: u32 = 5;
const CHALLENGE_PREFIX: &str = "svc_ch_";

/// A user's TOTP secrets: the enabled one, and the one setup showed but enable has not
/// confirmed yet.
pub struct TotpState {
    pub enabled: Option<String>,
    pub pending: Option<String>,
}

/// Both TOTP columns are sealed with `secrets.key` (issue 13), so a copy of the database
/// alone does not give away the codes. One associated data for both, so enabling can move
/// the pending value as it is; the user id stops it being moved to another account.
fn totp_aad(user: UserId) -> String {
    format!("users.totp:{user}")
}

pub fn totp_state(
    c: &Connection,
    sb: &secrets::SecretBox,
    user: UserId,
) -> Result<TotpState, AppError> {
    let (enabled, pending) = c.query_row(
        "SELECT totp_secret, totp_pending_secret FROM users WHERE id = ?1",
        [user],
        |r| {
            Ok((
                r.get::<_, Option<Vec<u8>>>(0)?,
                r.get::<_, Option<Vec<u8>>>(1)?,
            ))
        },
    )?;
    let open = |sealed: Option<Vec<u8>>| {
        sealed
            .map(|v| {
                sb.open_sealed(&v, &totp_aad(user)).ok_or_else(|| {
                    AppError::internal(anyhow::anyhow!(
                        "a TOTP secret does not open with secrets.key (restored without it?)"
                    ))
                })
            })
            .transpose()
    };
    Ok(TotpState {
        enabled: open(enabled)?,
        pending: open(pending)?,
    })
}

pub fn set_totp_pending(
    tx: &Tx<'_>,
    sb: &secrets::SecretBox,
    user: UserId,
    secret: &str,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE users SET totp_pending_secret = ?2 WHERE id = ?1",
        params![user, sb.seal(secret, &totp_aad(user))],
    )?;
    Ok(())
}

/// Seals TOTP secrets still stored as text by releases before issue 13 (a sealed one is a
/// blob, so running it again changes nothing). Run at start, before anything reads them.
pub fn seal_plain_totp_secrets(tx: &Tx<'_>, sb: &secrets::SecretBox) -> Result<usize, AppError> {
    let rows: Vec<(UserId, Option<String>, Option<String>)> = tx
        .prepare(
            "SELECT id,
                    CASE typeof(totp_secret) WHEN 'text' THEN totp_secret END,
                    CASE typeof(totp_pending_secret) WHEN 'text' THEN totp_pending_secret END
             FROM users
             WHERE typeof(totp_secret) = 'text' OR typeof(totp_pending_secret) = 'text'",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    for (user, enabled, pending) in &rows {
        let aad = totp_aad(*user);
        if let Some(s) = enabled {
            crate::db::exec(
                tx,
                "UPDATE users SET totp_secret = ?2 WHERE id = ?1",
                params![user, sb.seal(s, &aad)],
            )?;
        }
        if let Some(s) = pending {
            crate::db::exec(
                tx,
                "UPDATE users SET totp_pending_secret = ?2 WHERE id = ?1",
                params![user, sb.seal(s, &aad)],
            )?;
        }
    }
    Ok(rows.len())
}

pub fn enable_totp(
    tx: &Tx<'_>,
    user: UserId,
    step: u64,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE users SET totp_secret = totp_pending_secret, totp_pending_secret = NULL,
                          totp_last_step = ?2, updated_at = ?3
         WHERE id = ?1",
        params![
            user,
            i64::try_from(step).unwrap_or(i64::MAX),
            time::format(now)
        ],
    )?;
    Ok(())
}

/// A second factor an account can turn off.
#[derive(Debug, Clone, Copy)]
pub enum Factor {
    Totp,
    Msgapp,
}

/// Turns a factor off; the recovery codes go with the last one.
pub fn disable_factor(
    tx: &Tx<'_>,
    user: UserId,
    factor: Factor,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let sql = match factor {
        Factor::Totp => {
            "UPDATE users SET totp_secret = NULL, totp_pending_secret = NULL,
                              totp_last_step = NULL, updated_at = ?2
             WHERE id = ?1"
        }
        Factor::Msgapp => "UPDATE users SET msgapp_phone = NULL, updated_at = ?2 WHERE id = ?1",
    };
    crate::db::exec(tx, sql, params![user, time::format(now)])?;
    crate::db::exec(
        tx,
        "DELETE FROM recovery_codes WHERE user_id = ?1
           AND (SELECT totp_secret IS NULL AND msgapp_phone IS NULL FROM users WHERE id = ?1)",
        [user],
    )?;
    Ok(())
}

/// Records that the code of `step` was accepted; false if it (or a later one) already was,
/// so a code is never accepted twice within its window.
pub fn accept_totp_step(tx: &Tx<'_>, user: UserId, step: u64) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE users SET totp_last_step = ?2
         WHERE id = ?1 AND (totp_last_step IS NULL OR totp_last_step < ?2)",
        params![user, i64::try_from(step).unwrap_or(i64::MAX)],
    )?;
    Ok(n == 1)
}

/// Replaces the user's recovery codes with these hashes.
pub fn replace_recovery_codes(
    tx: &Tx<'_>,
    user: UserId,
    hashes: &[Vec<u8>],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(tx, "DELETE FROM recovery_codes WHERE user_id = ?1", [user])?;
    let now = time::format(now);
    for h in hashes {
        crate::db::exec(
            tx,
            "INSERT INTO recovery_codes (id, user_id, code_hash, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![uuid::Uuid::now_v7().to_string(), user, h, now],
        )?;
    }
    Ok(())
}

/// Uses up a recovery code; false when it is not one of the user's unused codes.
pub fn use_recovery_code(
    tx: &Tx<'_>,
    user: UserId,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE recovery_codes SET used_at = ?3
         WHERE user_id = ?1 AND code_hash = ?2 AND used_at IS NULL",
        params![user, hash, time::format(now)],
    )?;
    Ok(n == 1)
}

#[derive(Debug, Clone)]
pub struct ChallengeRow {
    pub id: String,
    pub user_id: UserId,
    pub device_name: String,
    pub address: String,
    pub attempts: u32,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// Hands out a challenge for the second step of a sign-in; returns its raw value.
pub fn create_challenge(
    tx: &Tx<'_>,
    user: UserId,
    device_name: &str,
    address: &str,
    now: DateTime<Utc>,
) -> Result<String, AppError> {
    let raw = secrets::new_token(CHALLENGE_PREFIX);
    crate::db::exec(
        tx,
        "INSERT INTO sign_in_challenges (id, challenge_hash, user_id, device_name, address,
                                         created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            uuid::Uuid::now_v7().to_string(),
            secrets::hash(&raw),
            user,
            device_name,
            address,
            time::format(now),
            time::format(now + CHALLENGE_TTL)
        ],
    )?;
    Ok(raw)
}

/// A challenge that can still be answered: known, unused and not expired.
pub fn live_challenge(
    c: &Connection,
    raw: &str,
    now: DateTime<Utc>,
) -> Result<Option<ChallengeRow>, AppError> {
    Ok(c.query_row(
        "SELECT id, user_id, device_name, address, attempts, expires_at, created_at
         FROM sign_in_challenges
         WHERE challenge_hash = ?1 AND used_at IS NULL AND expires_at > ?2",
        params![secrets::hash(raw), time::format(now)],
        |r| {
            Ok(ChallengeRow {
                id: r.get(0)?,
                user_id: r.get(1)?,
                device_name: r.get(2)?,
                address: r.get(3)?,
                attempts: r.get(4)?,
                expires_at: crate::db::parse_column(r, 5, time::parse)?,
                created_at: crate::db::parse_column(r, 6, time::parse)?,
            })
        },
    )
    .optional()?)
}

pub fn count_challenge_attempt(tx: &Tx<'_>, id: &str) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE sign_in_challenges SET attempts = attempts + 1 WHERE id = ?1",
        [id],
    )?;
    Ok(())
}

pub fn use_challenge(tx: &Tx<'_>, id: &str, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE sign_in_challenges SET used_at = ?2 WHERE id = ?1",
        params![id, time::format(now)],
    )?;
    Ok(())
}
