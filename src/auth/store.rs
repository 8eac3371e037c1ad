//! All of identity's SQL: users, sessions, token pairs, sign-in failures.

use chrono::{DateTime, Duration, Utc};
use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};

use super::model::{Locale, TwoFactorOut, UserOut};
use crate::error::{AppError, ErrorCode, ResultExt};
use crate::ids::{PairId, SessionId, UserId};
use crate::{secrets, time};

pub const ACCESS_PREFIX: &str = "svc_at_";
pub const REFRESH_PREFIX: &str = "svc_rt_";
/// A refresh token presented again this soon after its first use, while its replacement is
/// unused, is a client retry (spec 3), not theft.
pub const REFRESH_RETRY_WINDOW: Duration = Duration::seconds(30);

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
    tx: &Transaction<'_>,
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
    tx: &Transaction<'_>,
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
    tx: &Transaction<'_>,
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
    tx: &Transaction<'_>,
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

/// Lifetimes of the tokens a pair carries.
#[derive(Debug, Clone, Copy)]
pub struct Lifetimes {
    pub access: Duration,
    pub refresh: Duration,
}

/// A freshly issued pair; the raw values exist only here, on their way to the client.
#[derive(Debug)]
pub struct IssuedPair {
    pub session_id: SessionId,
    pub user_id: UserId,
    pub access: String,
    pub refresh: String,
}

/// Starts a session. `password_at` is when its password step passed (the challenge's start
/// for a two-step sign-in): adding a second factor needs it to be recent.
pub fn create_session(
    tx: &Transaction<'_>,
    user_id: UserId,
    device_name: &str,
    address: &str,
    password_at: DateTime<Utc>,
    now: DateTime<Utc>,
    life: Lifetimes,
) -> Result<IssuedPair, AppError> {
    let id = SessionId::new();
    let now_s = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO sessions (id, user_id, device_name, address, created_at, last_used_at,
                               password_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
        params![
            id,
            user_id,
            device_name,
            address,
            now_s,
            time::format(password_at)
        ],
    )?;
    let (_, pair) = issue_pair(tx, id, user_id, now, life)?;
    Ok(pair)
}

fn issue_pair(
    tx: &Transaction<'_>,
    session_id: SessionId,
    user_id: UserId,
    now: DateTime<Utc>,
    life: Lifetimes,
) -> Result<(PairId, IssuedPair), AppError> {
    let id = PairId::new();
    let (access, refresh) = (
        secrets::new_token(ACCESS_PREFIX),
        secrets::new_token(REFRESH_PREFIX),
    );
    crate::db::exec(
        tx,
        "INSERT INTO token_pairs (id, session_id, access_hash, refresh_hash, created_at,
                                  access_expires_at, refresh_expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            id,
            session_id,
            secrets::hash(&access),
            secrets::hash(&refresh),
            time::format(now),
            time::format(now + life.access),
            time::format(now + life.refresh),
        ],
    )?;
    Ok((
        id,
        IssuedPair {
            session_id,
            user_id,
            access,
            refresh,
        },
    ))
}

/// What presenting a refresh token led to (spec 3, refresh token rows).
#[derive(Debug)]
pub enum Refreshed {
    Issued(IssuedPair),
    /// Unknown, expired, or its session has ended.
    Invalid,
    /// Presented again outside the retry window, after its replacement was used, or from a
    /// retired pair: the session has been revoked (commit this!).
    Reused,
}

/// Rotates a refresh token. Runs in the single writer's transaction, so concurrent
/// presentations of one token are serialized and each lands on exactly one row of the table.
pub fn refresh(
    tx: &Transaction<'_>,
    presented: &str,
    now: DateTime<Utc>,
    life: Lifetimes,
) -> Result<Refreshed, AppError> {
    let now_s = time::format(now);
    let row = tx
        .query_row(
            "SELECT p.id, p.session_id, s.user_id, p.refresh_expires_at, p.refresh_used_at,
                    p.replaced_by, p.retired_at IS NOT NULL,
                    s.revoked_at IS NOT NULL OR u.disabled_at IS NOT NULL
             FROM token_pairs p
             JOIN sessions s ON s.id = p.session_id
             JOIN users u ON u.id = s.user_id
             WHERE p.refresh_hash = ?1",
            [secrets::hash(presented)],
            |r| {
                Ok((
                    r.get::<_, PairId>(0)?,
                    r.get::<_, SessionId>(1)?,
                    r.get::<_, UserId>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<PairId>>(5)?,
                    r.get::<_, bool>(6)?,
                    r.get::<_, bool>(7)?,
                ))
            },
        )
        .optional()?;
    let Some((pair, session, user, expires_at, used_at, replaced_by, retired, ended)) = row else {
        return Ok(Refreshed::Invalid);
    };
    if ended || expires_at <= now_s {
        return Ok(Refreshed::Invalid);
    }
    // A retired pair was never handed to the client (it lost the race to a retry), so no
    // legitimate client can hold its refresh token: whoever presents it stole it.
    if retired {
        revoke_session(tx, session, "refresh_token_reused", now)?;
        return Ok(Refreshed::Reused);
    }

    if let Some(used_at) = used_at {
        let within_window = time::parse(&used_at).is_some_and(|t| now - t <= REFRESH_RETRY_WINDOW);
        let replacement_unused = match replaced_by {
            Some(r) => tx.query_row(
                "SELECT access_used_at IS NULL AND refresh_used_at IS NULL AND retired_at IS NULL
                 FROM token_pairs WHERE id = ?1",
                [r],
                |row| row.get::<_, bool>(0),
            )?,
            None => false,
        };
        if !(within_window && replacement_unused) {
            revoke_session(tx, session, "refresh_token_reused", now)?;
            return Ok(Refreshed::Reused);
        }
        // A retry: the pair the client never received is retired, a fresh one replaces it.
        crate::db::exec(
            tx,
            "UPDATE token_pairs SET retired_at = ?2 WHERE id = ?1",
            params![replaced_by, now_s],
        )?;
    } else {
        crate::db::exec(
            tx,
            "UPDATE token_pairs SET refresh_used_at = ?2 WHERE id = ?1",
            params![pair, now_s],
        )?;
    }
    let (new_id, issued) = issue_pair(tx, session, user, now, life)?;
    crate::db::exec(
        tx,
        "UPDATE token_pairs SET replaced_by = ?2 WHERE id = ?1",
        params![pair, new_id],
    )?;
    Ok(Refreshed::Issued(issued))
}

/// When a session passed its password step; None for sessions from before that was kept.
pub fn session_password_at(
    c: &Connection,
    id: SessionId,
) -> Result<Option<DateTime<Utc>>, AppError> {
    let at: Option<Option<String>> = c
        .query_row(
            "SELECT password_at FROM sessions WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(at.flatten().as_deref().and_then(time::parse))
}

pub fn revoke_session(
    tx: &Transaction<'_>,
    id: SessionId,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE sessions SET revoked_at = ?2, revoke_reason = ?3 WHERE id = ?1 AND revoked_at IS NULL",
        params![id, time::format(now), reason],
    )?;
    Ok(n == 1)
}

/// Ends every live session of a user, except `keep`.
pub fn revoke_user_sessions(
    tx: &Transaction<'_>,
    user: UserId,
    keep: Option<SessionId>,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<usize, AppError> {
    Ok(crate::db::exec(
        tx,
        "UPDATE sessions SET revoked_at = ?3, revoke_reason = ?4
         WHERE user_id = ?1 AND revoked_at IS NULL AND (?2 IS NULL OR id <> ?2)",
        params![user, keep, time::format(now), reason],
    )?)
}

/// Ends the session a refresh token belongs to, whatever state the token is in.
pub fn logout(tx: &Transaction<'_>, presented: &str, now: DateTime<Utc>) -> Result<(), AppError> {
    let session: Option<SessionId> = tx
        .query_row(
            "SELECT session_id FROM token_pairs WHERE refresh_hash = ?1",
            [secrets::hash(presented)],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(s) = session {
        revoke_session(tx, s, "logout", now)?;
    }
    Ok(())
}

/// Ends one of the user's own sessions. False when it is not theirs or already ended.
pub fn revoke_own_session(
    tx: &Transaction<'_>,
    user: UserId,
    id: SessionId,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE sessions SET revoked_at = ?3, revoke_reason = 'device_revoked'
         WHERE id = ?1 AND user_id = ?2 AND revoked_at IS NULL",
        params![id, user, time::format(now)],
    )?;
    Ok(n == 1)
}

#[derive(Debug)]
pub struct SessionRow {
    pub id: SessionId,
    pub device_name: String,
    pub created_at: String,
    pub last_used_at: String,
}

/// A user's live sessions, most recently used first, keyset-paged on (last_used_at, id).
pub fn list_sessions(
    c: &Connection,
    user: UserId,
    now: DateTime<Utc>,
    after: Option<&(String, String)>,
    limit: i64,
    offset: i64,
) -> Result<Vec<SessionRow>, AppError> {
    let (at, id) = after.map_or(("9999".into(), String::new()), |(a, i)| {
        (a.clone(), i.clone())
    });
    let mut stmt = c.prepare_cached(&format!(
        "SELECT id, device_name, created_at, last_used_at FROM sessions s
         WHERE user_id = ?1 AND revoked_at IS NULL AND (last_used_at, id) < (?2, ?3)
           AND EXISTS (SELECT 1 FROM token_pairs p WHERE p.session_id = s.id
                         AND p.retired_at IS NULL AND p.refresh_expires_at > ?5)
         ORDER BY last_used_at DESC, id DESC LIMIT {limit} OFFSET ?4"
    ))?;
    let rows = stmt
        .query_map(params![user, at, id, offset, time::format(now)], |r| {
            Ok(SessionRow {
                id: r.get(0)?,
                device_name: r.get(1)?,
                created_at: r.get(2)?,
                last_used_at: r.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn count_sessions(c: &Connection, user: UserId, now: DateTime<Utc>) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM sessions s
         WHERE user_id = ?1 AND revoked_at IS NULL
           AND EXISTS (SELECT 1 FROM token_pairs p WHERE p.session_id = s.id
                         AND p.retired_at IS NULL AND p.refresh_expires_at > ?2)",
        params![user, time::format(now)],
        |r| r.get(0),
    )?)
}

/// What a `sign_in_failures` row records (migration V15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A password attempt whose hash is still running.
    Checking,
    Password,
    SecondFactor,
}

impl FailureKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Checking => "checking",
            Self::Password => "password",
            Self::SecondFactor => "second_factor",
        }
    }
}

/// A password hash takes well under a second; a check this old was abandoned.
const CHECK_STALE: Duration = Duration::seconds(60);

/// How long to wait after the `limit`-th newest row (`nth_at`) of a lock leaves the window.
fn lock_wait(nth_at: &str, now: DateTime<Utc>, window: Duration) -> Option<i64> {
    time::parse(nth_at).map(|at| (at + window - now).num_seconds().max(1))
}

/// Seconds until sign-in is allowed again for this e-mail and this address, if either has
/// `limit` failures in the window. The lock lifts when the `limit`-th newest failure leaves
/// the window, however many there are. A lock that needs attempts still being checked to
/// reach `limit` lifts as soon as they are: it answers 1 second, not the window. An attempt
/// still "checking" after `CHECK_STALE` was abandoned (a client that hung up, a crash) and
/// counts as a failure.
pub fn lockout_wait(
    c: &Connection,
    email: &str,
    address: &str,
    now: DateTime<Utc>,
    window: Duration,
    limit: u32,
) -> Result<Option<i64>, AppError> {
    let (since, stale) = (time::format(now - window), time::format(now - CHECK_STALE));
    let nth = |col: &str, value: &str, only_real: bool| -> Result<Option<String>, AppError> {
        let real = if only_real {
            "AND (kind <> 'checking' OR at <= ?4)"
        } else {
            "AND ?4 = ?4"
        };
        Ok(c.query_row(
            &format!(
                "SELECT at FROM sign_in_failures WHERE {col} = ?1 AND at > ?2 {real}
                 ORDER BY at DESC LIMIT 1 OFFSET ?3"
            ),
            params![value, since, limit.saturating_sub(1), stale],
            |r| r.get(0),
        )
        .optional()?)
    };
    let mut wait = None;
    for (col, value) in [("email", email), ("address", address)] {
        if nth(col, value, false)?.is_none() {
            continue;
        }
        let secs = match nth(col, value, true)? {
            Some(at) => lock_wait(&at, now, window).unwrap_or(1),
            None => 1,
        };
        wait = Some(wait.map_or(secs, |w: i64| w.max(secs)));
    }
    Ok(wait)
}

/// Seconds until this account may answer a second-factor challenge again, if it gave
/// `limit` wrong answers in the window, across all its challenges.
pub fn second_factor_wait(
    c: &Connection,
    email: &str,
    now: DateTime<Utc>,
    window: Duration,
    limit: u32,
) -> Result<Option<i64>, AppError> {
    let nth: Option<String> = c
        .query_row(
            "SELECT at FROM sign_in_failures
             WHERE email = ?1 AND kind = 'second_factor' AND at > ?2
             ORDER BY at DESC LIMIT 1 OFFSET ?3",
            params![email, time::format(now - window), limit.saturating_sub(1)],
            |r| r.get(0),
        )
        .optional()?;
    Ok(nth.and_then(|at| lock_wait(&at, now, window)))
}

/// Records a failed (or, as `Checking`, not yet checked) sign-in step; returns its id so
/// the check's outcome can clear or confirm it. `address` is the client's budget key
/// (its /64 for IPv6).
pub fn record_failure(
    tx: &Transaction<'_>,
    email: &str,
    address: &str,
    kind: FailureKind,
    now: DateTime<Utc>,
) -> Result<i64, AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO sign_in_failures (email, address, kind, at) VALUES (?1, ?2, ?3, ?4)",
        params![email, address, kind.as_str(), time::format(now)],
    )?;
    Ok(tx.last_insert_rowid())
}

/// Settles a `Checking` attempt: deleted when the password was right, a real failure if not.
pub fn settle_attempt(tx: &Transaction<'_>, id: i64, right: bool) -> Result<(), AppError> {
    if right {
        crate::db::exec(tx, "DELETE FROM sign_in_failures WHERE id = ?1", [id])?;
    } else {
        crate::db::exec(
            tx,
            "UPDATE sign_in_failures SET kind = 'password' WHERE id = ?1 AND kind = 'checking'",
            [id],
        )?;
    }
    Ok(())
}

/// Removes what can never matter again: sign-in failures out of the window, token pairs
/// whose refresh token expired, challenges and codes a day past expiry, and sessions ended
/// 30 days ago (kept that long for the record). Returns the rows removed.
pub fn purge(
    tx: &Transaction<'_>,
    now: DateTime<Utc>,
    window: Duration,
) -> Result<usize, AppError> {
    let day_ago = time::format(now - Duration::days(1));
    let mut removed = crate::db::exec(
        tx,
        "DELETE FROM sign_in_failures WHERE at <= ?1",
        [time::format(now - window)],
    )?;
    removed += crate::db::exec(
        tx,
        "DELETE FROM token_pairs WHERE refresh_expires_at <= ?1",
        [time::format(now)],
    )?;
    removed += crate::db::exec(
        tx,
        "DELETE FROM one_time_codes WHERE expires_at <= ?1",
        [&day_ago],
    )?;
    removed += crate::db::exec(
        tx,
        "DELETE FROM sign_in_challenges WHERE expires_at <= ?1",
        [&day_ago],
    )?;
    // Ended 30 days ago, or left with no token that could ever be used again.
    removed += crate::db::exec(
        tx,
        "DELETE FROM sessions WHERE revoked_at <= ?1
            OR (created_at <= ?2 AND NOT EXISTS
                  (SELECT 1 FROM token_pairs p WHERE p.session_id = sessions.id))",
        params![time::format(now - Duration::days(30)), day_ago],
    )?;
    Ok(removed)
}

// ---- second factors -------------------------------------------------------------------

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
    tx: &Transaction<'_>,
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
pub fn seal_plain_totp_secrets(
    tx: &Transaction<'_>,
    sb: &secrets::SecretBox,
) -> Result<usize, AppError> {
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
    tx: &Transaction<'_>,
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

pub fn disable_totp(
    tx: &Transaction<'_>,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE users SET totp_secret = NULL, totp_pending_secret = NULL, totp_last_step = NULL,
                          updated_at = ?2
         WHERE id = ?1",
        params![user, time::format(now)],
    )?;
    forget_recovery_codes_without_factor(tx, user)
}

/// Records that the code of `step` was accepted; false if it (or a later one) already was,
/// so a code is never accepted twice within its window.
pub fn accept_totp_step(tx: &Transaction<'_>, user: UserId, step: u64) -> Result<bool, AppError> {
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
    tx: &Transaction<'_>,
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

fn forget_recovery_codes_without_factor(
    tx: &Transaction<'_>,
    user: UserId,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "DELETE FROM recovery_codes WHERE user_id = ?1
           AND (SELECT totp_secret IS NULL AND msgapp_phone IS NULL FROM users WHERE id = ?1)",
        [user],
    )?;
    Ok(())
}

/// Uses up a recovery code; false when it is not one of the user's unused codes.
pub fn use_recovery_code(
    tx: &Transaction<'_>,
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
    tx: &Transaction<'_>,
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
                expires_at: time::parse(&r.get::<_, String>(5)?).unwrap_or_default(),
                created_at: time::parse(&r.get::<_, String>(6)?).unwrap_or_default(),
            })
        },
    )
    .optional()?)
}

pub fn count_challenge_attempt(tx: &Transaction<'_>, id: &str) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE sign_in_challenges SET attempts = attempts + 1 WHERE id = ?1",
        [id],
    )?;
    Ok(())
}

pub fn use_challenge(tx: &Transaction<'_>, id: &str, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE sign_in_challenges SET used_at = ?2 WHERE id = ?1",
        params![id, time::format(now)],
    )?;
    Ok(())
}

// ---- one-time codes (messaging-app factor) ---------------------------------------------

pub const CODE_TTL: Duration = Duration::seconds(300);
pub const CODE_ATTEMPTS: u32 = 5;
/// At most one send per challenge in this interval, and `SENDS_PER_HOUR` per user.
pub const SEND_INTERVAL: Duration = Duration::seconds(30);
pub const SENDS_PER_HOUR: u32 = 5;

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

/// Seconds to wait before another code may be sent, if the send limits say so.
pub fn send_wait(
    c: &Connection,
    user: UserId,
    owner: CodeOwner<'_>,
    now: DateTime<Utc>,
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
    if sent >= SENDS_PER_HOUR {
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
    tx: &Transaction<'_>,
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
pub fn mark_undelivered(tx: &Transaction<'_>, id: &str) -> Result<(), AppError> {
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
                expires_at: time::parse(&r.get::<_, String>(3)?).unwrap_or_default(),
                state: r.get(4)?,
            })
        },
    )
    .optional()?)
}

/// Counts a wrong answer; the fifth burns the code. Returns true when it just burned.
pub fn wrong_code(tx: &Transaction<'_>, id: &str) -> Result<bool, AppError> {
    let attempts: u32 = tx.query_row(
        "UPDATE one_time_codes SET attempts = attempts + 1,
                state = CASE WHEN attempts + 1 >= ?2 THEN 'burned' ELSE state END
         WHERE id = ?1 RETURNING attempts",
        params![id, CODE_ATTEMPTS],
        |r| r.get(0),
    )?;
    Ok(attempts >= CODE_ATTEMPTS)
}

pub fn use_code(tx: &Transaction<'_>, id: &str) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE one_time_codes SET state = 'used' WHERE id = ?1",
        [id],
    )?;
    Ok(())
}

/// Sets (or with None clears) the confirmed phone of the messaging-app factor.
pub fn set_msgapp_phone(
    tx: &Transaction<'_>,
    user: UserId,
    phone: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE users SET msgapp_phone = ?2, updated_at = ?3 WHERE id = ?1",
        params![user, phone, time::format(now)],
    )?;
    if phone.is_none() {
        forget_recovery_codes_without_factor(tx, user)?;
    }
    Ok(())
}
