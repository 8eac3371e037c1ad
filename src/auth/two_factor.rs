//! Second factors (spec 3 challenge rows, 4.1; issue 3): TOTP, recovery codes, and the
//! verify step of a sign-in that a password step answered with `two_factor_required`.

use crate::db::Tx;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};

use super::model::{
    PasswordConfirmIn, ReauthIn, RecoveryCodesOut, RecoveryVerifyIn, SessionOut, TotpCodeIn,
    TotpSetupOut, TotpVerifyIn,
};
use super::session::{
    account_disabled, confirm_password, lifetimes, load_user, require_recent_sign_in, session_out,
};
use super::store::{self, CHALLENGE_ATTEMPTS, ChallengeRow, FailureKind, IssuedPair, UserRow};
use super::totp;
use crate::error::{AppError, ErrorCode};
use crate::http::auth::{Principal, UserSession};
use crate::http::extract::Json;
use crate::http::idempotency::no_store;
use crate::http::trace::{ClientAddr, budget_key};
use crate::secrets;
use crate::state::AppState;

const RECOVERY_CODES: usize = 10;

fn unix(t: DateTime<Utc>) -> u64 {
    u64::try_from(t.timestamp()).unwrap_or(0)
}

fn totp_already_enabled() -> AppError {
    AppError::conflict(ErrorCode::TotpAlreadyEnabled, "TOTP is already enabled")
}

/// Starts TOTP setup: a new pending secret (replacing any earlier one) to scan.
#[utoipa::path(get, path = "/me/2fa/totp/setup", tag = "me", security(("bearer" = [])),
    responses((status = 200, body = TotpSetupOut), (status = 409, body = crate::error::ErrorBody, description = "`totp_already_enabled`")))]
pub async fn totp_setup(
    State(st): State<AppState>,
    UserSession(p): UserSession,
) -> Result<Response, AppError> {
    let user = load_user(&st, &p).await?;
    if user.totp_enabled {
        return Err(totp_already_enabled());
    }
    let secret = totp::new_secret();
    let (url, qr) = totp::provisioning(&secret, &user.email).map_err(AppError::internal)?;
    let (id, s, sb) = (user.id, secret.clone(), st.secret_box.clone());
    st.db
        .write(move |tx| store::set_totp_pending(tx, &sb, id, &s))
        .await?;
    Ok(no_store(Json(TotpSetupOut {
        secret,
        otpauth_url: url,
        qr_png_base64: qr,
    })))
}

/// Turns TOTP on with a code from the pending secret; needs a sign-in within 10 minutes or
/// `password`. Also creates recovery codes (see them, freshly generated, with
/// `POST /me/2fa/recovery-codes`).
#[utoipa::path(post, path = "/me/2fa/totp/enable", tag = "me", security(("bearer" = [])),
    request_body = TotpCodeIn,
    responses((status = 204, description = "Enabled"),
              (status = 401, description = "`reauthentication_required`: signed in over 10 minutes ago and no (right) `password`", body = crate::error::ErrorBody),
              (status = 409, body = crate::error::ErrorBody, description = "`totp_already_enabled`"),
              (status = 422, body = crate::error::ErrorBody)))]
pub async fn totp_enable(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    ClientAddr(addr): ClientAddr,
    Json(input): Json<TotpCodeIn>,
) -> Result<StatusCode, AppError> {
    require_recent_sign_in(&st, &p, addr, input.password).await?;
    let (id, now) = (p.user_id, st.clock.now());
    let codes = new_recovery_codes(&st.hmac_key);
    let sb = st.secret_box.clone();
    st.db
        .write(move |tx| {
            let store::TotpState { enabled, pending } = store::totp_state(tx, &sb, id)?;
            if enabled.is_some() {
                return Err(totp_already_enabled());
            }
            let wrong = || AppError::field("totp_code", "the code does not match");
            let pending = pending
                .ok_or_else(|| AppError::field("totp_code", "call GET /me/2fa/totp/setup first"))?;
            let step =
                totp::matching_step(&pending, &input.totp_code, unix(now)).ok_or_else(wrong)?;
            store::enable_totp(tx, id, step, now)?;
            store::replace_recovery_codes(tx, id, &codes.1, now)
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Turns TOTP off; needs the account password.
#[utoipa::path(delete, path = "/me/2fa/totp", tag = "me", security(("bearer" = [])),
    request_body = PasswordConfirmIn,
    responses((status = 204, description = "Disabled"), (status = 400, body = crate::error::ErrorBody)))]
pub async fn totp_disable(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    ClientAddr(addr): ClientAddr,
    Json(input): Json<PasswordConfirmIn>,
) -> Result<StatusCode, AppError> {
    turn_factor_off(&st, &p, addr, input.password, store::Factor::Totp).await
}

/// Both factors' `DELETE`: the account password (under the sign-in lockout), then the
/// factor is off.
pub(super) async fn turn_factor_off(
    st: &AppState,
    p: &Principal,
    addr: std::net::IpAddr,
    password: String,
    factor: store::Factor,
) -> Result<StatusCode, AppError> {
    let user = confirm_password(st, p, addr, password).await?;
    let (id, now) = (user.id, st.clock.now());
    st.db
        .write(move |tx| store::disable_factor(tx, id, factor, now))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Ten fresh codes and their hashes. Codes are 12 base32 characters (60 bits) in groups.
fn new_recovery_codes(key: &[u8]) -> (Vec<String>, Vec<Vec<u8>>) {
    let codes: Vec<String> = (0..RECOVERY_CODES)
        .map(|_| {
            let raw = totp::new_secret().to_lowercase();
            format!("{}-{}-{}", &raw[0..4], &raw[4..8], &raw[8..12])
        })
        .collect();
    let hashes = codes.iter().map(|c| recovery_hash(key, c)).collect();
    (codes, hashes)
}

/// The stored form of a recovery code: keyed, compared without dashes, spaces or case.
fn recovery_hash(key: &[u8], code: &str) -> Vec<u8> {
    secrets::keyed_hash(key, normalize_recovery(code).as_bytes())
}

/// Codes compare without dashes, spaces or case.
fn normalize_recovery(code: &str) -> String {
    code.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Regenerates the recovery codes and shows them, once.
#[utoipa::path(post, path = "/me/2fa/recovery-codes", tag = "me", security(("bearer" = [])),
    request_body(content = Option<ReauthIn>, description = "Optional: the password, when the session signed in over 10 minutes ago"),
    responses((status = 200, body = RecoveryCodesOut),
              (status = 401, description = "`reauthentication_required`: signed in over 10 minutes ago and no (right) `password`", body = crate::error::ErrorBody),
              (status = 409, body = crate::error::ErrorBody, description = "`conflict`: no second factor is on")))]
pub async fn regenerate_recovery_codes(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    ClientAddr(addr): ClientAddr,
    input: Option<Json<ReauthIn>>,
) -> Result<Response, AppError> {
    let password = input.and_then(|Json(i)| i.password);
    let user = require_recent_sign_in(&st, &p, addr, password).await?;
    if !user.has_second_factor() {
        return Err(AppError::conflict(
            ErrorCode::Conflict,
            "turn on a second factor before creating recovery codes",
        ));
    }
    let (codes, hashes) = new_recovery_codes(&st.hmac_key);
    let (id, now) = (user.id, st.clock.now());
    st.db
        .write(move |tx| store::replace_recovery_codes(tx, id, &hashes, now))
        .await?;
    Ok(no_store(Json(RecoveryCodesOut { codes })))
}

/// How a verify step ended, once its attempt has been counted.
pub(super) enum Check {
    Passed,
    /// A wrong answer: the attempt stays counted and this error is returned.
    Wrong(AppError),
}

/// Which factor a verify call uses, for the "not enabled" answer.
#[derive(Clone, Copy)]
pub(super) enum Method {
    Totp,
    Msgapp,
    Recovery,
}

/// The part of every verify call that is the same: a live challenge (else 401
/// `invalid_challenge`), an active account (403), the factor on (400), an attempt left (429),
/// then `check`. The attempt is committed even when the answer is wrong; a `check` that
/// returns `Err` (nothing was really attempted) rolls it back.
pub(super) async fn verify_challenge<F>(
    st: &AppState,
    raw: String,
    method: Method,
    check: F,
) -> Result<Response, AppError>
where
    F: FnOnce(&Tx<'_>, &ChallengeRow, &UserRow, DateTime<Utc>) -> Result<Check, AppError>
        + Send
        + 'static,
{
    let (now, life) = (st.clock.now(), lifetimes(st));
    let (window, limit) = (st.cfg.sign_in_window, st.cfg.sign_in_failures);
    let outcome: Result<(IssuedPair, UserRow), AppError> = st
        .db
        .write(move |tx| {
            let ch = store::live_challenge(tx, &raw, now)?.ok_or_else(invalid_challenge)?;
            let user = store::get_user(tx, ch.user_id)?.ok_or_else(invalid_challenge)?;
            if user.disabled {
                return Err(account_disabled());
            }
            match method {
                Method::Totp if !user.totp_enabled => {
                    return Err(AppError::new(
                        ErrorCode::TotpNotEnabled,
                        "this account has no authenticator app",
                    ));
                }
                Method::Msgapp if user.msgapp_phone.is_none() => return Err(msgapp_not_enabled()),
                _ => {}
            }
            // Wrong answers are counted per account too, so fresh challenges do not buy an
            // attacker who knows the password fresh guesses.
            if let Some(wait) = store::second_factor_wait(tx, &user.email, now, window, limit)? {
                return Err(AppError::rate_limited(u64::try_from(wait).unwrap_or(1)));
            }
            if ch.attempts >= CHALLENGE_ATTEMPTS {
                let wait = (ch.expires_at - now).num_seconds().max(1);
                return Err(AppError::rate_limited(u64::try_from(wait).unwrap_or(1)));
            }
            store::count_challenge_attempt(tx, &ch.id)?;
            match check(tx, &ch, &user, now)? {
                Check::Wrong(e) => {
                    // Counted for the account's second-factor lock and, with the address,
                    // for the sign-in lockout.
                    let budget = ch
                        .address
                        .parse()
                        .map_or_else(|_| ch.address.clone(), budget_key);
                    let kind = FailureKind::SecondFactor;
                    store::record_failure(tx, &user.email, &budget, kind, now)?;
                    Ok(Err(e))
                }
                Check::Passed => {
                    store::use_challenge(tx, &ch.id, now)?;
                    let pair = store::create_session(
                        tx,
                        user.id,
                        &ch.device_name,
                        &ch.address,
                        ch.created_at,
                        now,
                        life,
                    )?;
                    Ok(Ok((pair, user)))
                }
            }
        })
        .await?;
    let (pair, user) = outcome?;
    Ok(no_store(Json(session_out(st, pair, &user))))
}

pub(super) fn msgapp_not_enabled() -> AppError {
    AppError::new(
        ErrorCode::Msgapp2faNotEnabled,
        "this account has no messaging-app factor",
    )
}

pub(super) fn invalid_challenge() -> AppError {
    AppError::new(
        ErrorCode::InvalidChallenge,
        "the challenge is unknown, used or expired; sign in again",
    )
}

pub(super) fn invalid_code() -> AppError {
    AppError::new(ErrorCode::InvalidCode, "the code is wrong or expired")
}

/// Finishes a sign-in with a code from the authenticator app.
#[utoipa::path(post, path = "/auth/2fa/totp/verify", tag = "auth", request_body = TotpVerifyIn,
    responses((status = 200, body = SessionOut), (status = 400, body = crate::error::ErrorBody),
              (status = 401, body = crate::error::ErrorBody, description = "`invalid_challenge` or `invalid_code`"), (status = 403, body = crate::error::ErrorBody, description = "`account_disabled`"),
              (status = 429, body = crate::error::ErrorBody)))]
pub async fn verify_totp(
    State(st): State<AppState>,
    Json(input): Json<TotpVerifyIn>,
) -> Result<Response, AppError> {
    let (code, sb) = (input.totp_code, st.secret_box.clone());
    verify_challenge(
        &st,
        input.challenge,
        Method::Totp,
        move |tx, _, user, now| {
            let secret = store::totp_state(tx, &sb, user.id)?.enabled;
            let step = secret.and_then(|s| totp::matching_step(&s, &code, unix(now)));
            match step {
                Some(step) if store::accept_totp_step(tx, user.id, step)? => Ok(Check::Passed),
                _ => Ok(Check::Wrong(invalid_code())),
            }
        },
    )
    .await
}

/// Finishes a sign-in with a single-use recovery code.
#[utoipa::path(post, path = "/auth/2fa/recovery/verify", tag = "auth", request_body = RecoveryVerifyIn,
    responses((status = 200, body = SessionOut), (status = 401, body = crate::error::ErrorBody, description = "`invalid_challenge` or `invalid_code`"),
              (status = 403, body = crate::error::ErrorBody, description = "`account_disabled`"), (status = 429, body = crate::error::ErrorBody)))]
pub async fn verify_recovery(
    State(st): State<AppState>,
    Json(input): Json<RecoveryVerifyIn>,
) -> Result<Response, AppError> {
    let hash = recovery_hash(&st.hmac_key, &input.recovery_code);
    verify_challenge(
        &st,
        input.challenge,
        Method::Recovery,
        move |tx, _, user, now| {
            if store::use_recovery_code(tx, user.id, &hash, now)? {
                Ok(Check::Passed)
            } else {
                Ok(Check::Wrong(invalid_code()))
            }
        },
    )
    .await
}
