//! Store members (issue 4): list, change a role, remove. The last owner of a store cannot
//! be demoted or removed (409 `conflict`), and only owners grant or take the owner role.
//! Removing a member kills every API token they issued there at once (the token lookup
//! requires its issuer to still be in the store).

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::store;
use crate::audit::{self, Actor};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::{StoreScope, missing_permission};
use crate::http::extract::{Json, Path};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::{Permission, Role};
use crate::ids::{StoreId, UserId};
use crate::state::AppState;

/// A member of the store.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemberOut {
    pub user_id: UserId,
    pub email: String,
    pub role: Role,
    pub created_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberPatch {
    /// `owner`, `admin`, `staff` or `viewer`.
    pub role: RoleIn,
}

/// A role as a request names it.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoleIn {
    Owner,
    Admin,
    Staff,
    Viewer,
}

impl From<RoleIn> for Role {
    fn from(r: RoleIn) -> Self {
        match r {
            RoleIn::Owner => Role::Owner,
            RoleIn::Admin => Role::Admin,
            RoleIn::Staff => Role::Staff,
            RoleIn::Viewer => Role::Viewer,
        }
    }
}

/// A role change or removal never grants more than the caller holds: `role` (the new one,
/// or the member's current one) must hold no permission outside the caller's effective
/// permissions (a store API token's are its scopes, whoever issued it), and the owner role is
/// given or taken only by an owner's user session.
fn may_touch(scope: &StoreScope, role: Role) -> Result<(), AppError> {
    if role == Role::Owner && (scope.role != Role::Owner || scope.principal.is_store_token()) {
        return Err(missing_permission(Permission::MembersWrite));
    }
    match role
        .permissions()
        .iter()
        .find(|p| !scope.permissions.contains(*p))
    {
        Some(p) => Err(missing_permission(p)),
        None => Ok(()),
    }
}

fn last_owner() -> AppError {
    AppError::conflict(ErrorCode::Conflict, "a store keeps at least one owner")
}

/// An owner of the organization owns every store in it; a store-level change would not
/// take effect, so it is refused instead of answering 204 for nothing.
fn organization_owner() -> AppError {
    AppError::conflict(
        ErrorCode::Conflict,
        "this member owns the organization, and so every store in it; change that in the organization",
    )
}

/// Whether the caller may give `user` the role `to` (None: remove them): not an owner of the
/// organization, a member the caller may touch, and never the store's last owner leaving.
fn may_change(
    tx: &crate::db::Tx<'_>,
    scope: &StoreScope,
    user: UserId,
    to: Option<Role>,
) -> Result<(), AppError> {
    let store_id = scope.store_id;
    if store::is_organization_owner(tx, store_id, user)? {
        return Err(organization_owner());
    }
    let current = member_role(tx, store_id, user)?;
    may_touch(scope, current)?;
    if current == Role::Owner && to != Some(Role::Owner) && store::count_owners(tx, store_id)? <= 1
    {
        return Err(last_owner());
    }
    Ok(())
}

/// A member's role in the store; 404 when they are not a member.
fn member_role(tx: &crate::db::Tx<'_>, store_id: StoreId, user: UserId) -> Result<Role, AppError> {
    let role =
        store::member_role(tx, store_id, user)?.ok_or_else(|| AppError::not_found("member"))?;
    Role::parse(&role)
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("stored role {role:?} is unknown")))
}

/// The store's members, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/members", tag = "members", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery),
    responses((status = 200, body = Page<MemberOut>), (status = 403, body = crate::error::ErrorBody)))]
pub async fn list_members(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<MemberOut>>, AppError> {
    scope.require(Permission::MembersRead)?;
    let store_id = scope.store_id;
    let page = page
        .list(
            &st.db,
            &format!("members:{store_id}"),
            move |c, after, limit, offset| store::list_members(c, store_id, after, limit, offset),
            move |c| store::count_members(c, store_id),
            |m| (m.created_at.clone(), m.user_id.to_string()),
            |m| MemberOut {
                user_id: m.user_id,
                email: m.email,
                role: m.role,
                created_at: m.created_at,
            },
        )
        .await?;
    Ok(Json(page))
}

/// Changes a member's role.
#[utoipa::path(patch, path = "/stores/{store_id}/members/{user_id}", tag = "members",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("user_id" = UserId, Path)),
    request_body = MemberPatch,
    responses((status = 204, description = "Changed"), (status = 403, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody, description = "`conflict`: the last owner stays")))]
pub async fn update_member(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, UserId)>,
    Json(patch): Json<MemberPatch>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::MembersWrite)?;
    let (store_id, user, role, now) = (
        scope.store_id,
        ids.1,
        Role::from(patch.role),
        st.clock.now(),
    );
    may_touch(&scope, role)?;
    let actor = Actor::of(&scope);
    st.db
        .write(move |tx| {
            may_change(tx, &scope, user, Some(role))?;
            store::set_member_role(tx, store_id, user, role.as_str())?;
            audit::record(
                tx,
                &actor,
                "member.role_changed",
                "member",
                &user.to_string(),
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a member; every API token they issued in this store stops working.
#[utoipa::path(delete, path = "/stores/{store_id}/members/{user_id}", tag = "members",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("user_id" = UserId, Path)),
    responses((status = 204, description = "Removed"), (status = 403, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody, description = "`conflict`: the last owner stays")))]
pub async fn remove_member(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, UserId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::MembersWrite)?;
    let (store_id, user, now) = (scope.store_id, ids.1, st.clock.now());
    let actor = Actor::of(&scope);
    st.db
        .write(move |tx| {
            may_change(tx, &scope, user, None)?;
            store::remove_member(tx, store_id, user)?;
            audit::record(
                tx,
                &actor,
                "member.removed",
                "member",
                &user.to_string(),
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
