//! Sign-in primitives that handlers here and in other areas share (invites sign a new member
//! in): the password check under the lockout, the session body, re-authentication guards.

use super::model::SessionOut;
use super::store::{self, FailureKind, IssuedPair, Lifetimes, UserRow};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::{Principal, unauthorized};
use crate::http::trace::ClientAddr;
use crate::state::AppState;

/// The token lifetimes the configuration sets.
pub fn lifetimes(st: &AppState) -> Lifetimes {
    Lifetimes {
        access: st.cfg.access_token_ttl,
        refresh: st.cfg.refresh_token_ttl,
    }
}

/// The body of a successful sign-in: the new pair, its lifetimes and the user.
pub fn session_out(st: &AppState, pair: IssuedPair, user: &UserRow) -> SessionOut {
    let life = lifetimes(st);
    SessionOut {
        token: pair.access,
        token_type: "Bearer",
        expires_in: life.access.num_seconds(),
        refresh_token: pair.refresh,
        refresh_token_expires_in: life.refresh.num_seconds(),
        session_id: pair.session_id,
        user: user.to_out(),
    }
}

/// 403 `account_disabled`: the account was deactivated with `users deactivate`.
pub fn account_disabled() -> AppError {
    AppError::new(ErrorCode::AccountDisabled, "this account is deactivated")
}

/// The signed-in user, once their password is confirmed (under the sign-in lockout): for
/// changes that need it again (password change, turning a second factor off).
pub(super) async fn confirm_password(
    st: &AppState,
    p: &Principal,
    addr: std::net::IpAddr,
    password: String,
) -> Result<UserRow, AppError> {
    let user = load_user(st, p).await?;
    let phc = Some(user.password_hash.clone());
    let budget = ClientAddr(addr).budget_key();
    if !guarded_password_check(st, &user.email, &budget, password, phc).await? {
        return Err(incorrect_password());
    }
    Ok(user)
}

/// How recent a session's password step must be to add a second factor without the
/// password again.
pub const REAUTH_WINDOW: chrono::Duration = chrono::Duration::minutes(10);

/// Guards a change that adds a way to sign in (a second factor, recovery codes): the session
/// passed its password step within [`REAUTH_WINDOW`], or `password` is given and right
/// (checked under the sign-in lockout). Else 401 `reauthentication_required`, so a stolen
/// access token alone cannot plant the thief's own factor.
pub(super) async fn require_recent_sign_in(
    st: &AppState,
    p: &Principal,
    addr: std::net::IpAddr,
    password: Option<String>,
) -> Result<UserRow, AppError> {
    let user = load_user(st, p).await?;
    let fresh = || {
        AppError::new(
            ErrorCode::ReauthenticationRequired,
            "sign in again, or send the account password, to change how this account signs in",
        )
    };
    if let Some(password) = password {
        let phc = Some(user.password_hash.clone());
        let budget = ClientAddr(addr).budget_key();
        if !guarded_password_check(st, &user.email, &budget, password, phc).await? {
            return Err(fresh());
        }
        return Ok(user);
    }
    let session = p.session_id().ok_or_else(fresh)?;
    let since = st.clock.now() - REAUTH_WINDOW;
    let at = st
        .db
        .read(move |c| store::session_password_at(c, session))
        .await?;
    if at.is_some_and(|at| at >= since) {
        Ok(user)
    } else {
        Err(fresh())
    }
}

/// 400 `incorrect_password`, for a confirmation whose password is wrong.
pub fn incorrect_password() -> AppError {
    AppError::new(ErrorCode::IncorrectPassword, "the password is wrong")
}

/// Checks a password under the sign-in lockout (429 once the e-mail or the address has
/// `sign_in_failures` failures in the window). The attempt is counted, in the same
/// transaction as the limit check, before the slow hash runs, then cleared when the password
/// is right or kept as a failure: concurrent guesses cannot all slip past the count.
/// `address` is the client's budget key.
pub async fn guarded_password_check(
    st: &AppState,
    email: &str,
    address: &str,
    password: String,
    phc: Option<String>,
) -> Result<bool, AppError> {
    let (now, window, limit) = (
        st.clock.now(),
        st.cfg.sign_in_window,
        st.cfg.sign_in_failures,
    );
    let (e, a) = (email.to_owned(), address.to_owned());
    let attempt = st
        .db
        .write(move |tx| {
            if let Some(wait) = store::lockout_wait(tx, &e, &a, now, window, limit)? {
                return Err(AppError::rate_limited(u64::try_from(wait).unwrap_or(1)));
            }
            store::record_failure(tx, &e, &a, FailureKind::Checking, now)
        })
        .await?;
    let checked = st.hasher.verify(password, phc).await;
    // A right password is no failure, and neither is one never checked (the hashing queue
    // was full: 503).
    let cleared = !matches!(checked, Ok(false));
    st.db
        .write_to_finish(move |tx| store::settle_attempt(tx, attempt, cleared))
        .await?;
    checked
}

/// The signed-in user's row; 401 when the account is gone.
pub(super) async fn load_user(st: &AppState, p: &Principal) -> Result<UserRow, AppError> {
    let id = p.user_id;
    st.db
        .read(move |c| store::get_user(c, id))
        .await?
        .ok_or_else(unauthorized)
}
