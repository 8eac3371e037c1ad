//! Identity handlers: register, sign-in, refresh, logout, the account and its devices.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use super::model::{
    ChallengeOut, DeviceSessionOut, Locale, LoginIn, LoginOut, MePatch, PasswordIn, RefreshIn,
    RegisterIn, SessionOut, TwoFactorOut, UserOut,
};
use super::session::{
    account_disabled, confirm_password, guarded_password_check, lifetimes, load_user, session_out,
};
use super::store::{self, Refreshed};
use super::{device, password};
use crate::error::{AppError, ErrorCode};
use crate::events::Event;
use crate::http::auth::UserSession;
use crate::http::extract::{Json, Path};
use crate::http::idempotency::no_store;
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::trace::ClientAddr;
use crate::ids::SessionId;
use crate::state::AppState;
use crate::text::{looks_like_email, normalize_email};
use crate::webhooks;

/// Creates an account. It has no stores and is not signed in.
#[utoipa::path(post, path = "/auth/register", tag = "auth", request_body = RegisterIn,
    responses((status = 201, body = UserOut), (status = 409, body = crate::error::ErrorBody, description = "`email_taken`"),
              (status = 422, body = crate::error::ErrorBody), (status = 429, body = crate::error::ErrorBody)))]
pub async fn register(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    headers: HeaderMap,
    Json(input): Json<RegisterIn>,
) -> Result<(StatusCode, Json<UserOut>), AppError> {
    if let Some(wait) = st.limits.check_registration(addr).retry_after_secs {
        return Err(AppError::rate_limited(wait));
    }
    let email = normalize_email(&input.email);
    let mut fields = Vec::new();
    if !looks_like_email(&email) {
        fields.push(("email", "is not a valid e-mail address"));
    }
    if let Err(m) = password::check_rules(&input.password) {
        fields.push(("password", m));
    }
    if !fields.is_empty() {
        return Err(AppError::validation(fields));
    }
    let locale = Locale::from_accept_language(
        headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
    );
    let hash = st.hasher.hash(input.password).await?;
    let now = st.clock.now();
    let user = st
        .db
        .write(move |tx| {
            let user = store::insert_user(tx, now, &email, &hash, locale)?;
            webhooks::publish(tx, None, Event::UserCreated, &user.to_out(), now)?;
            Ok(user)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(user.to_out())))
}

/// Signs in with e-mail and password.
#[utoipa::path(post, path = "/auth/login", tag = "auth", request_body = LoginIn,
    responses((status = 200, body = LoginOut), (status = 401, body = crate::error::ErrorBody, description = "`invalid_credentials`"),
              (status = 403, body = crate::error::ErrorBody, description = "`account_disabled`"), (status = 429, body = crate::error::ErrorBody)))]
pub async fn login(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    headers: HeaderMap,
    Json(input): Json<LoginIn>,
) -> Result<Response, AppError> {
    let email = normalize_email(&input.email);
    let (address, budget) = (addr.to_string(), ClientAddr(addr).budget_key());
    let e = email.clone();
    let user = st
        .db
        .read(move |c| store::find_user_by_email(c, &e))
        .await?;
    // An unknown e-mail is verified against a dummy hash: same time, same answer.
    let phc = user.as_ref().map(|u| u.password_hash.clone());
    let ok = guarded_password_check(&st, &email, &budget, input.password, phc).await?;
    let Some(user) = user.filter(|_| ok) else {
        return Err(AppError::new(
            ErrorCode::InvalidCredentials,
            "the e-mail or the password is wrong",
        ));
    };
    if user.disabled {
        return Err(account_disabled());
    }
    let device_name = input
        .device_name
        .map(|d| d.trim().chars().take(120).collect::<String>())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            device::name_from_user_agent(
                headers
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok()),
            )
        });
    let (life, now, id) = (lifetimes(&st), st.clock.now(), user.id);
    if user.has_second_factor() {
        let challenge = st
            .db
            .write(move |tx| store::create_challenge(tx, id, &device_name, &address, now))
            .await?;
        let mut methods = Vec::new();
        if user.totp_enabled {
            methods.push("totp");
        }
        if user.msgapp_phone.is_some() {
            methods.push("msgapp");
        }
        return Ok(no_store(Json(LoginOut::TwoFactorRequired(ChallengeOut {
            challenge,
            methods,
            expires_in: store::CHALLENGE_TTL.num_seconds(),
        }))));
    }
    let pair = st
        .db
        .write(move |tx| store::create_session(tx, id, &device_name, &address, now, now, life))
        .await?;
    Ok(no_store(Json(LoginOut::Authenticated(session_out(
        &st, pair, &user,
    )))))
}

/// Trades a refresh token for a new pair (spec 3: first use rotates; a retry within 30 s
/// whose replacement is unused gets a fresh pair; any other reuse ends the session).
#[utoipa::path(post, path = "/auth/refresh", tag = "auth", request_body = RefreshIn,
    responses((status = 200, body = SessionOut), (status = 401, body = crate::error::ErrorBody, description = "`invalid_refresh_token` or `refresh_token_reused`")))]
pub async fn refresh(
    State(st): State<AppState>,
    Json(input): Json<RefreshIn>,
) -> Result<Response, AppError> {
    let (now, life) = (st.clock.now(), lifetimes(&st));
    let token = input.refresh_token;
    let outcome = st
        .db
        .write(move |tx| store::refresh(tx, &token, now, life))
        .await?;
    match outcome {
        Refreshed::Issued(pair) => {
            let id = pair.user_id;
            let user = st
                .db
                .read(move |c| store::get_user(c, id))
                .await?
                .ok_or_else(|| AppError::internal(anyhow::anyhow!("session of a missing user")))?;
            Ok(no_store(Json(session_out(&st, pair, &user))))
        }
        Refreshed::Invalid => Err(AppError::new(
            ErrorCode::InvalidRefreshToken,
            "the refresh token is unknown, expired or its session has ended; sign in again",
        )),
        Refreshed::Reused => Err(AppError::new(
            ErrorCode::RefreshTokenReused,
            "the refresh token was already used; the session has been ended on every device",
        )),
    }
}

/// Ends the session the refresh token belongs to. Always 204.
#[utoipa::path(post, path = "/auth/logout", tag = "auth", request_body = RefreshIn,
    responses((status = 204, description = "Signed out (also for unknown or revoked tokens)")))]
pub async fn logout(
    State(st): State<AppState>,
    Json(input): Json<RefreshIn>,
) -> Result<StatusCode, AppError> {
    let now = st.clock.now();
    let token = input.refresh_token;
    st.db
        .write(move |tx| store::logout(tx, &token, now))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The signed-in user.
#[utoipa::path(get, path = "/me", tag = "me", security(("bearer" = [])),
    responses((status = 200, body = UserOut), (status = 401, body = crate::error::ErrorBody)))]
pub async fn get_me(UserSession(p): UserSession) -> Result<Json<UserOut>, AppError> {
    // The token lookup already read the account, in this same request.
    let u = &p.profile;
    Ok(Json(UserOut {
        id: p.user_id,
        email: u.email.clone(),
        locale: Locale::stored(&u.locale)?,
        two_factor: TwoFactorOut {
            totp: u.totp_enabled,
            msgapp: u.msgapp_enabled,
        },
        created_at: u.created_at.clone(),
    }))
}

/// Updates the signed-in user's settings.
#[utoipa::path(patch, path = "/me", tag = "me", security(("bearer" = [])), request_body = MePatch,
    responses((status = 200, body = UserOut), (status = 422, body = crate::error::ErrorBody)))]
pub async fn update_me(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    Json(patch): Json<MePatch>,
) -> Result<Json<UserOut>, AppError> {
    if let Some(locale) = patch.locale {
        let (id, now) = (p.user_id, st.clock.now());
        st.db
            .write(move |tx| store::set_locale(tx, id, locale, now))
            .await?;
    }
    Ok(Json(load_user(&st, &p).await?.to_out()))
}

/// Changes the password and signs out every other session.
#[utoipa::path(post, path = "/me/password", tag = "me", security(("bearer" = [])), request_body = PasswordIn,
    responses((status = 204, description = "Changed"), (status = 400, body = crate::error::ErrorBody),
              (status = 422, body = crate::error::ErrorBody)))]
pub async fn change_password(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    ClientAddr(addr): ClientAddr,
    Json(input): Json<PasswordIn>,
) -> Result<StatusCode, AppError> {
    if let Err(m) = password::check_rules(&input.new_password) {
        return Err(AppError::validation([("new_password", m)]));
    }
    let user = confirm_password(&st, &p, addr, input.current_password).await?;
    let hash = st.hasher.hash(input.new_password).await?;
    let (id, keep, now) = (user.id, p.session_id(), st.clock.now());
    st.db
        .write(move |tx| {
            store::set_password(tx, id, &hash, now)?;
            store::revoke_user_sessions(tx, id, keep, "password_changed", now)?;
            Ok(())
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The signed-in devices, most recently used first.
#[utoipa::path(get, path = "/me/sessions", tag = "me", security(("bearer" = [])), params(PageQuery),
    responses((status = 200, body = Page<DeviceSessionOut>)))]
pub async fn list_sessions(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    Paged(page, _): Paged,
) -> Result<Json<Page<DeviceSessionOut>>, AppError> {
    let (user, now, current) = (p.user_id, st.clock.now(), p.session_id());
    let page = page
        .list(
            &st.db,
            &format!("sessions:{user}"),
            move |c, after, limit, offset| store::list_sessions(c, user, now, after, limit, offset),
            move |c| store::count_sessions(c, user, now),
            |r| (r.last_used_at.clone(), r.id.to_string()),
            |r| DeviceSessionOut {
                current: Some(r.id) == current,
                id: r.id,
                device_name: r.device_name,
                created_at: r.created_at,
                last_used_at: r.last_used_at,
            },
        )
        .await?;
    Ok(Json(page))
}

/// Signs a device out.
#[utoipa::path(delete, path = "/me/sessions/{session_id}", tag = "me", security(("bearer" = [])),
    params(("session_id" = SessionId, Path)),
    responses((status = 204, description = "Signed out"), (status = 404, body = crate::error::ErrorBody)))]
pub async fn delete_session(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    Path(id): Path<SessionId>,
) -> Result<StatusCode, AppError> {
    let (user, now) = (p.user_id, st.clock.now());
    if st
        .db
        .write(move |tx| store::revoke_own_session(tx, user, id, now))
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::not_found("session"))
    }
}
