//! Store invites (issue 4): a single-use link, valid 7 days, that makes its holder a member
//! with the invited role. For a new e-mail, accepting creates the account and signs it in;
//! for an existing account it needs that account's password, and an account with a second
//! factor gets `{status: "accepted"}` and no session (it signs in the usual way).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use chrono::Duration;
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::members::RoleIn;
use crate::audit::{self, Actor};
use crate::auth::model::{Locale, SessionOut};
use crate::auth::session::{account_disabled, guarded_password_check, lifetimes, session_out};
use crate::auth::{device, password, store as auth_store};
use crate::error::{AppError, ErrorCode};
use crate::events::Event;
use crate::http::auth::{StoreScope, missing_permission};
use crate::http::extract::{Json, Path};
use crate::http::idempotency::{no_store, sealed_store};
use crate::http::permissions::{Permission, Role};
use crate::http::trace::{ClientAddr, TraceId};
use crate::ids::{StoreId, UserId};
use crate::state::AppState;
use crate::tenants::store::add_store_member;
use crate::text::{looks_like_email, normalize_email};
use crate::{secrets, time, webhooks};

const INVITE_TTL: Duration = Duration::days(7);
const PREFIX: &str = "svc_inv_";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteIn {
    pub email: String,
    pub role: RoleIn,
}

/// An invite; `token` is shown in this response only.
#[derive(Debug, Serialize, ToSchema)]
pub struct InviteOut {
    pub id: String,
    pub email: String,
    pub role: Role,
    pub expires_at: String,
    pub token: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptIn {
    /// The password of the new account, or of the existing account with this e-mail: at
    /// least 8 characters, at most 256 bytes, as every account's (`maxLength` counts
    /// characters: a password of multi-byte characters can be refused below it).
    #[schema(min_length = 8, max_length = 256)]
    pub password: String,
}

/// The answer to accepting an invite, told apart by `status`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum AcceptOut {
    /// Signed in: the session fields of spec 2.4.
    Authenticated(SessionOut),
    /// A member now; the account has a second factor, so it signs in the usual way.
    Accepted {},
}

/// Invites someone to the store with a role; needs `members.write` (and being an owner to
/// invite an owner).
#[utoipa::path(post, path = "/stores/{store_id}/invites", tag = "members", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = InviteIn,
    responses((status = 201, body = InviteOut),
              (status = 402, body = crate::error::ErrorBody, description = "plan_limit_reached or subscription_inactive"),
              (status = 403, body = crate::error::ErrorBody),
              (status = 422, body = crate::error::ErrorBody)))]
pub async fn create_invite(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<InviteIn>,
) -> Result<Response, AppError> {
    scope.require(Permission::MembersWrite)?;
    if scope.principal.is_store_token() {
        // An invite is a credential (accepting it signs in): tokens may not mint them.
        return Err(missing_permission(Permission::MembersWrite));
    }
    let role = Role::from(input.role);
    if role == Role::Owner && scope.role != Role::Owner {
        return Err(missing_permission(Permission::MembersWrite));
    }
    let email = normalize_email(&input.email);
    if !looks_like_email(&email) {
        return Err(AppError::field("email", "is not a valid e-mail address"));
    }
    let (store, inviter, now, actor) = (
        scope.store_id,
        scope.principal.user_id,
        st.clock.now(),
        Actor::of(&scope),
    );
    let token = secrets::new_token(PREFIX);
    // The link is readable in the outbox only for local development (`log` provider).
    let message = if crate::msgapp::keeps_secrets(&st.cfg.msgapp) {
        format!("You are invited to a store. Accept at /v1/invites/{token}/accept")
    } else {
        crate::msgapp::WITHHELD_BODY.to_owned()
    };
    let (t, e, catalog) = (token.clone(), email.clone(), st.cfg.plans.clone());
    let out =
        st.db
            .write(move |tx| {
                // 402 when the plan has no room for another member, or is inactive.
                let tenant = crate::orders::store::tenant_of(tx, store)?;
                crate::billing::limits::allow_one_more(
                    tx,
                    &catalog,
                    tenant,
                    crate::billing::limits::Limit::MembersOf(store),
                    now,
                )?;
                let id = uuid::Uuid::now_v7().to_string();
                let expires_at = time::format(now + INVITE_TTL);
                crate::db::exec(
                    tx,
                    "INSERT INTO invites (id, store_id, email, role, token_hash, invited_by,
                                      created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        id,
                        store,
                        e,
                        role.as_str(),
                        secrets::hash(&t),
                        inviter,
                        time::format(now),
                        expires_at
                    ],
                )?;
                // The invite goes out through the outbound message log (the e-mail provider
                // arrives with its own issue); `merchant-admin dev outbox` shows it.
                crate::db::exec(tx,
                "INSERT INTO outbound_messages (id, channel, recipient, template, body, created_at)
                 VALUES (?1, 'email', ?2, 'store_invite', ?3, ?4)",
                params![
                    uuid::Uuid::now_v7().to_string(),
                    e,
                    message,
                    time::format(now)
                ],
            )?;
                audit::record(tx, &actor, "invite.created", "invite", &id, now)?;
                Ok(InviteOut {
                    id,
                    email: e,
                    role,
                    expires_at,
                    token: t,
                })
            })
            .await?;
    Ok(sealed_store((StatusCode::CREATED, Json(out))))
}

struct Pending {
    id: String,
    store: StoreId,
    email: String,
    role: String,
    invited_by: UserId,
}

/// Accepts an invite (public: the token is the credential).
#[utoipa::path(post, path = "/invites/{token}/accept", tag = "members", request_body = AcceptIn,
    params(("token" = String, Path)),
    responses((status = 200, body = AcceptOut), (status = 401, body = crate::error::ErrorBody, description = "`invalid_credentials`"),
              (status = 403, body = crate::error::ErrorBody, description = "`account_disabled`"), (status = 404, body = crate::error::ErrorBody),
              (status = 422, body = crate::error::ErrorBody)))]
pub async fn accept_invite(
    State(st): State<AppState>,
    ClientAddr(addr): ClientAddr,
    trace: TraceId,
    headers: HeaderMap,
    Path(token): Path<String>,
    Json(input): Json<AcceptIn>,
) -> Result<Response, AppError> {
    let now = st.clock.now();
    let hash = secrets::hash(&token);
    let invite = st
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT id, store_id, email, role, invited_by FROM invites
                 WHERE token_hash = ?1 AND accepted_at IS NULL AND expires_at > ?2",
                params![hash, time::format(now)],
                |r| {
                    Ok(Pending {
                        id: r.get(0)?,
                        store: r.get(1)?,
                        email: r.get(2)?,
                        role: r.get(3)?,
                        invited_by: r.get(4)?,
                    })
                },
            )
            .optional()?
            // The inviter must still be allowed to invite with that role: an invite does
            // not outlive its author's rights.
            .filter(|p| {
                crate::auth::store::store_role(c, p.store, p.invited_by)
                    .ok()
                    .flatten()
                    .is_some_and(|(_, r)| {
                        r.permissions().contains(Permission::MembersWrite)
                            && (p.role != "owner" || r == Role::Owner)
                    })
            }))
        })
        .await?
        .ok_or_else(|| AppError::not_found("invite"))?;

    let e = invite.email.clone();
    let existing = st
        .db
        .read(move |c| auth_store::find_user_by_email(c, &e))
        .await?;
    let address = addr.to_string();
    let user = if let Some(user) = existing {
        let phc = Some(user.password_hash.clone());
        let budget = ClientAddr(addr).budget_key();
        if !guarded_password_check(&st, &user.email, &budget, input.password, phc).await? {
            return Err(AppError::new(
                ErrorCode::InvalidCredentials,
                "the password of the invited account is wrong",
            ));
        }
        if user.disabled {
            return Err(account_disabled());
        }
        user
    } else {
        password::check_rules(&input.password)
            .map_err(|m| AppError::validation([("password", m)]))?;
        let hash = st.hasher.hash(input.password).await?;
        let locale = Locale::from_accept_language(
            headers
                .get(header::ACCEPT_LANGUAGE)
                .and_then(|v| v.to_str().ok()),
        );
        let email = invite.email.clone();
        st.db
            .write(move |tx| {
                let user = auth_store::insert_user(tx, now, &email, &hash, locale)?;
                webhooks::publish(tx, None, Event::UserCreated, &user.to_out(), now)?;
                Ok(user)
            })
            .await?
    };

    let signs_in = !user.has_second_factor();
    let device_name = device::name_from_user_agent(
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
    );
    let (user_id, life): (UserId, _) = (user.id, lifetimes(&st));
    let pair = st
        .db
        .write(move |tx| {
            let n = crate::db::exec(
                tx,
                "UPDATE invites SET accepted_at = ?2 WHERE id = ?1 AND accepted_at IS NULL",
                params![invite.id, time::format(now)],
            )?;
            if n == 0 {
                return Err(AppError::not_found("invite"));
            }
            let current: Option<String> = tx
                .query_row(
                    "SELECT role FROM store_members WHERE store_id = ?1 AND user_id = ?2",
                    params![invite.store, user_id],
                    |r| r.get(0),
                )
                .optional()?;
            if current.is_none() {
                add_store_member(tx, invite.store, user_id, &invite.role, &time::format(now))?;
            }
            let tenant_id = tx.query_row(
                "SELECT tenant_id FROM stores WHERE id = ?1",
                [invite.store],
                |r| r.get(0),
            )?;
            let actor = Actor {
                store_id: Some(invite.store),
                tenant_id,
                user_id,
                token_name: None,
                trace_id: trace.0,
                via: None,
                on_record: crate::audit::OnRecord::default(),
            };
            audit::record(tx, &actor, "invite.accepted", "invite", &invite.id, now)?;
            signs_in
                .then(|| {
                    auth_store::create_session(tx, user_id, &device_name, &address, now, now, life)
                })
                .transpose()
        })
        .await?;
    Ok(no_store(Json(match pair {
        Some(pair) => AcceptOut::Authenticated(session_out(&st, pair, &user)),
        None => AcceptOut::Accepted {},
    })))
}
