//! Failed sign-in steps (`sign_in_failures`) and the lockouts they add up to.

use crate::db::Tx;
use chrono::{DateTime, Duration, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::AppError;
use crate::time;

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
    tx: &Tx<'_>,
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
pub fn settle_attempt(tx: &Tx<'_>, id: i64, right: bool) -> Result<(), AppError> {
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
