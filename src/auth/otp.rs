//! The messaging-app factor (spec 3 messaging-app code rows; issue 3): turning it on with a
//! confirmed phone, and signing in with a six-digit code sent to it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::model::{
    ChallengeIn, CodeIn, CodeSentOut, MsgappEnableIn, OtpVerifyIn, PasswordConfirmIn, SessionOut,
};
use super::session::{account_disabled, require_recent_sign_in};
use super::store::{self, CHALLENGE_ATTEMPTS, CODE_TTL, CodeOwner};
use super::two_factor::{
    Check, Method, invalid_challenge, invalid_code, msgapp_not_enabled, turn_factor_off,
    verify_challenge,
};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::UserSession;
use crate::http::extract::Json;
use crate::http::trace::ClientAddr;
use crate::ids::UserId;
use crate::msgapp::{self, CodeMessage, mask_phone};
use crate::secrets;
use crate::state::AppState;

/// `+` and 8 to 15 digits, the first not 0.
fn is_e164(phone: &str) -> bool {
    phone.strip_prefix('+').is_some_and(|d| {
        (8..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()) && !d.starts_with('0')
    })
}

/// Stores a code (within the send limits) and sends it; a code that could not be delivered
/// is forgotten again. `failed` is the error a delivery failure answers with.
async fn send_new_code(
    st: &AppState,
    user: &store::UserRow,
    owner_challenge: Option<String>,
    phone: String,
    failed: fn() -> AppError,
) -> Result<CodeSentOut, AppError> {
    let (now, code) = (st.clock.now(), store::new_code());
    let code_hash = secrets::keyed_hash(&st.hmac_key, code.as_bytes());
    let (user_id, p, per_hour) = (user.id, phone.clone(), st.cfg.code_sends_per_hour);
    let code_id = st
        .db
        .write(move |tx| {
            let owner = owner_of(owner_challenge.as_deref());
            if let Some(wait) = store::send_wait(tx, user_id, owner, now, per_hour)? {
                return Err(AppError::rate_limited(u64::try_from(wait).unwrap_or(1)));
            }
            store::insert_code(tx, user_id, owner, &p, &code_hash, now)
        })
        .await?;
    let msg = CodeMessage {
        to: &phone,
        code: &code,
        locale: user.locale,
    };
    if msgapp::send_code(&st.cfg.msgapp, &st.db, msg, now)
        .await
        .is_err()
    {
        // Kept as undelivered: it cannot be used, but it still counts against the limits.
        st.db
            .write_to_finish(move |tx| store::mark_undelivered(tx, &code_id))
            .await?;
        return Err(failed());
    }
    Ok(CodeSentOut {
        sent_to: mask_phone(&phone),
        expires_in: CODE_TTL.num_seconds(),
    })
}

fn owner_of(challenge_id: Option<&str>) -> CodeOwner<'_> {
    match challenge_id {
        Some(challenge_id) => CodeOwner::SignIn { challenge_id },
        None => CodeOwner::Enable,
    }
}

/// Starts turning the messaging-app factor on: sends a code to the phone.
#[utoipa::path(post, path = "/me/2fa/msgapp/enable", tag = "me", security(("bearer" = [])),
    request_body = MsgappEnableIn,
    responses((status = 200, body = CodeSentOut),
              (status = 401, description = "`reauthentication_required`: signed in over 10 minutes ago and no (right) `password`", body = crate::error::ErrorBody),
              (status = 409, body = crate::error::ErrorBody, description = "`conflict`"),
              (status = 422, body = crate::error::ErrorBody), (status = 429, body = crate::error::ErrorBody),
              (status = 502, body = crate::error::ErrorBody, description = "`otp_delivery_failed`")))]
pub async fn msgapp_enable(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    ClientAddr(addr): ClientAddr,
    Json(input): Json<MsgappEnableIn>,
) -> Result<Json<CodeSentOut>, AppError> {
    let phone = input.phone_e164.trim().to_owned();
    if !is_e164(&phone) {
        return Err(AppError::field(
            "phone_e164",
            "must be E.164, e.g. +5511987654321",
        ));
    }
    let user = require_recent_sign_in(&st, &p, addr, input.password).await?;
    if user.msgapp_phone.is_some() {
        return Err(AppError::conflict(
            ErrorCode::Conflict,
            "the messaging-app factor is already on; turn it off to change the phone",
        ));
    }
    Ok(Json(
        send_new_code(&st, &user, None, phone, delivery_failed).await?,
    ))
}

/// Confirms the phone with the code it received; the factor is then on.
#[utoipa::path(post, path = "/me/2fa/msgapp/confirm", tag = "me", security(("bearer" = [])),
    request_body = CodeIn,
    responses((status = 204, description = "Enabled"), (status = 422, body = crate::error::ErrorBody)))]
pub async fn msgapp_confirm(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    Json(input): Json<CodeIn>,
) -> Result<StatusCode, AppError> {
    let given = secrets::keyed_hash(&st.hmac_key, input.code.trim().as_bytes());
    let (user, now) = (p.user_id, st.clock.now());
    let outcome = st
        .db
        .write(move |tx| {
            let wrong = || {
                AppError::new(
                    ErrorCode::InvalidVerificationCode,
                    "the code is wrong, expired or used up; request a new one",
                )
            };
            let Some(code) = store::newest_code(tx, user, CodeOwner::Enable)? else {
                return Ok(Err(wrong()));
            };
            if code.state != "pending" || code.expires_at <= now {
                return Ok(Err(wrong()));
            }
            if !secrets::same(&code.code_hash, &given) {
                store::wrong_code(tx, &code.id)?;
                return Ok(Err(wrong()));
            }
            store::use_code(tx, &code.id)?;
            store::set_msgapp_phone(tx, user, &code.phone, now)?;
            Ok(Ok(()))
        })
        .await?;
    outcome?; // a wrong code's attempt stays counted
    Ok(StatusCode::NO_CONTENT)
}

/// Turns the messaging-app factor off; needs the account password.
#[utoipa::path(delete, path = "/me/2fa/msgapp", tag = "me", security(("bearer" = [])),
    request_body = PasswordConfirmIn,
    responses((status = 204, description = "Disabled"), (status = 400, body = crate::error::ErrorBody)))]
pub async fn msgapp_disable(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    ClientAddr(addr): ClientAddr,
    Json(input): Json<PasswordConfirmIn>,
) -> Result<StatusCode, AppError> {
    turn_factor_off(&st, &p, addr, input.password, store::Factor::Msgapp).await
}

/// Sends a sign-in code for a challenge to the account's phone. Sending again replaces the
/// code; only the newest is accepted.
#[utoipa::path(post, path = "/auth/otp/send", tag = "auth", request_body = ChallengeIn,
    responses((status = 200, body = CodeSentOut), (status = 400, body = crate::error::ErrorBody),
              (status = 401, body = crate::error::ErrorBody, description = "`invalid_challenge`"), (status = 429, body = crate::error::ErrorBody),
              (status = 502, body = crate::error::ErrorBody, description = "`otp_delivery_failed`")))]
pub async fn otp_send(
    State(st): State<AppState>,
    Json(input): Json<ChallengeIn>,
) -> Result<Json<CodeSentOut>, AppError> {
    let (now, raw) = (st.clock.now(), input.challenge);
    let (window, limit) = (st.cfg.sign_in_window, st.cfg.sign_in_failures);
    let (ch, user) = st
        .db
        .read(move |c| {
            let ch = store::live_challenge(c, &raw, now)?.ok_or_else(invalid_challenge)?;
            let user = store::get_user(c, ch.user_id)?.ok_or_else(invalid_challenge)?;
            // No code is sent (and paid for) while every answer would be refused.
            if let Some(wait) = store::second_factor_wait(c, &user.email, now, window, limit)? {
                return Err(AppError::rate_limited(u64::try_from(wait).unwrap_or(1)));
            }
            Ok((ch, user))
        })
        .await?;
    if user.disabled {
        return Err(account_disabled());
    }
    let phone = user.msgapp_phone.clone().ok_or_else(msgapp_not_enabled)?;
    if ch.attempts >= CHALLENGE_ATTEMPTS {
        // No answer could be accepted any more: sign in again instead.
        let wait = (ch.expires_at - now).num_seconds().max(1);
        return Err(AppError::rate_limited(u64::try_from(wait).unwrap_or(1)));
    }
    Ok(Json(
        send_new_code(&st, &user, Some(ch.id), phone, delivery_failed).await?,
    ))
}

/// 502 when the provider did not take a code (the issue names one code for every send).
fn delivery_failed() -> AppError {
    AppError::new(
        ErrorCode::OtpDeliveryFailed,
        "the code could not be delivered; try again",
    )
}

fn no_pending_code() -> AppError {
    AppError::new(
        ErrorCode::NoPendingCode,
        "no code was sent for this challenge; call /auth/otp/send first",
    )
}

fn too_many_attempts() -> AppError {
    AppError::new(
        ErrorCode::TooManyAttempts,
        "too many wrong codes; request a new one",
    )
}

/// Finishes a sign-in with the code sent over the messaging app.
#[utoipa::path(post, path = "/auth/otp/verify", tag = "auth", request_body = OtpVerifyIn,
    responses((status = 200, body = SessionOut), (status = 400, body = crate::error::ErrorBody),
              (status = 401, body = crate::error::ErrorBody, description = "`invalid_challenge` or `invalid_code`"), (status = 403, body = crate::error::ErrorBody, description = "`account_disabled`"),
              (status = 429, body = crate::error::ErrorBody)))]
pub async fn otp_verify(
    State(st): State<AppState>,
    Json(input): Json<OtpVerifyIn>,
) -> Result<Response, AppError> {
    let given = secrets::keyed_hash(&st.hmac_key, input.code.trim().as_bytes());
    verify_challenge(
        &st,
        input.challenge,
        Method::Msgapp,
        move |tx, ch, user, now| {
            let owner = CodeOwner::SignIn {
                challenge_id: &ch.id,
            };
            let code = newest_sign_in_code(tx, user.id, owner)?;
            match code.state.as_str() {
                // Nothing to try against: these answers do not use up an attempt.
                "burned" => return Err(too_many_attempts()),
                "pending" => {}
                _ => return Err(no_pending_code()),
            }
            if code.expires_at <= now {
                return Ok(Check::Wrong(invalid_code()));
            }
            if secrets::same(&code.code_hash, &given) {
                store::use_code(tx, &code.id)?;
                return Ok(Check::Passed);
            }
            let burned = store::wrong_code(tx, &code.id)?;
            Ok(Check::Wrong(if burned {
                too_many_attempts()
            } else {
                invalid_code()
            }))
        },
    )
    .await
}

fn newest_sign_in_code(
    tx: &crate::db::Tx<'_>,
    user: UserId,
    owner: CodeOwner<'_>,
) -> Result<store::CodeRow, AppError> {
    store::newest_code(tx, user, owner)?.ok_or_else(no_pending_code)
}

#[cfg(test)]
mod tests {
    #[test]
    fn e164_numbers() {
        assert!(super::is_e164("+5511987654321"));
        assert!(super::is_e164("+14155550123"));
        for bad in [
            "5511987654321",
            "+0123456789",
            "+55 11 98765",
            "+1234567",
            "+1234567890123456",
        ] {
            assert!(!super::is_e164(bad), "{bad}");
        }
    }
}
