//! All of identity's SQL, one file per table group: users, sessions and token pairs,
//! sign-in failures, second factors, one-time codes, and the credential lookups of every
//! request. Re-exported here, so callers name `auth::store::*` whatever file holds it.

mod credentials;
mod one_time_codes;
mod second_factors;
mod sessions;
mod sign_in_failures;
mod users;

pub use credentials::*;
pub use one_time_codes::*;
pub use second_factors::*;
pub use sessions::*;
pub use sign_in_failures::*;
pub use users::*;

use crate::db::Tx;
use chrono::{DateTime, Duration, Utc};
use rusqlite::params;

use crate::error::AppError;
use crate::time;

/// Removes what can never matter again: sign-in failures out of the window, token pairs
/// whose refresh token expired, challenges and codes a day past expiry, and sessions ended
/// 30 days ago (kept that long for the record). Returns the rows removed.
pub fn purge(tx: &Tx<'_>, now: DateTime<Utc>, window: Duration) -> Result<usize, AppError> {
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
