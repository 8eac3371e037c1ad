//! Sessions and their token pairs: signing in, refresh rotation (spec 3), revoking, listing.

use crate::db::Tx;
use chrono::{DateTime, Duration, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::AppError;
use crate::ids::{PairId, SessionId, UserId};
use crate::{secrets, time};

pub const ACCESS_PREFIX: &str = "svc_at_";
pub const REFRESH_PREFIX: &str = "svc_rt_";
/// A refresh token presented again this soon after its first use, while its replacement is
/// unused, is a client retry (spec 3), not theft.
pub const REFRESH_RETRY_WINDOW: Duration = Duration::seconds(30);

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
    tx: &Tx<'_>,
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
    tx: &Tx<'_>,
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
    tx: &Tx<'_>,
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
    tx: &Tx<'_>,
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
    tx: &Tx<'_>,
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
pub fn logout(tx: &Tx<'_>, presented: &str, now: DateTime<Utc>) -> Result<(), AppError> {
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
    tx: &Tx<'_>,
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

/// Whether a session is still live: not revoked, its user not deactivated. An open socket
/// asks this, not its access token's expiry (spec 5 rule 8).
pub fn session_live(c: &Connection, session: SessionId) -> Result<bool, AppError> {
    Ok(c.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM sessions s JOIN users u ON u.id = s.user_id
                        WHERE s.id = ?1 AND s.revoked_at IS NULL AND u.disabled_at IS NULL)",
    )?
    .query_row([session], |r| r.get(0))?)
}
