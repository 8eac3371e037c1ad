//! Organization and store handlers (issue 4).

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{
    PermissionOut, StoreIn, StoreOut, StorePatch, TenantIn, TenantOut, TenantPatch,
};
use super::{settings, store};
use crate::audit::{self, Actor};
use crate::auth::model::Locale;
use crate::error::{AppError, ErrorCode};
use crate::http::auth::{Principal, StoreScope, UserSession, missing_permission};
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::http::trace::TraceId;
use crate::ids::TenantId;
use crate::state::AppState;

/// A name of 1 to 120 characters, trimmed.
fn clean_name(name: &str) -> Result<String, AppError> {
    let name = text("name", name, 1, 120)?;
    if crate::text::slugify(&name) == "store" && !name.to_lowercase().contains("store") {
        return Err(AppError::field(
            "name",
            "needs at least one letter or digit",
        ));
    }
    Ok(name)
}

/// An IANA zone name the built-in time zone database knows (`America/Sao_Paulo`, `UTC`).
fn valid_timezone(tz: &str) -> bool {
    tz.parse::<chrono_tz::Tz>().is_ok()
}

/// Creates an organization; the caller becomes its owner.
#[utoipa::path(post, path = "/tenants", tag = "organizations", security(("bearer" = [])),
    request_body = TenantIn,
    responses((status = 201, body = TenantOut), (status = 403, body = crate::error::ErrorBody),
              (status = 409, body = crate::error::ErrorBody, description = "`slug_taken`"), (status = 422, body = crate::error::ErrorBody)))]
pub async fn create_tenant(
    State(st): State<AppState>,
    p: Principal,
    trace: TraceId,
    Json(input): Json<TenantIn>,
) -> Result<(StatusCode, Json<TenantOut>), AppError> {
    if p.is_store_token() {
        // Spec 5 rule 2: there are no organization-wide tokens.
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "a store API token cannot create organizations",
        ));
    }
    let name = clean_name(&input.name)?;
    let plan = input
        .plan_code
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty());
    let plan = crate::billing::subscriptions::check_plan(&st.cfg.plans, plan.as_deref())?;
    let locale = Locale::stored(&p.profile.locale)?;
    let (user, now) = (p.user_id, st.clock.now());
    let tenant = st
        .db
        .write(move |tx| {
            let t = store::create_tenant(tx, user, &name, locale, plan.as_deref(), now)?;
            let actor = Actor::in_tenant(t.id, user, &trace.0);
            audit::record(
                tx,
                &actor,
                "tenant.created",
                "tenant",
                &t.id.to_string(),
                now,
            )?;
            Ok(t)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(tenant)))
}

/// The caller's organizations, newest first.
#[utoipa::path(get, path = "/tenants", tag = "organizations", security(("bearer" = [])),
    params(PageQuery), responses((status = 200, body = Page<TenantOut>)))]
pub async fn list_tenants(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    Paged(page, _): Paged,
) -> Result<Json<Page<TenantOut>>, AppError> {
    let user = p.user_id;
    let page = page
        .list(
            &st.db,
            &format!("tenants:{user}"),
            move |c, after, limit, offset| store::list_tenants(c, user, after, limit, offset),
            move |c| store::count_tenants(c, user),
            |t| (t.created_at.clone(), t.id.to_string()),
            |t| t,
        )
        .await?;
    Ok(Json(page))
}

/// One of the caller's organizations.
#[utoipa::path(get, path = "/tenants/{tenant_id}", tag = "organizations", security(("bearer" = [])),
    params(("tenant_id" = TenantId, Path)),
    responses((status = 200, body = TenantOut), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get_tenant(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    Path(id): Path<TenantId>,
) -> Result<Json<TenantOut>, AppError> {
    let user = p.user_id;
    let t = st.db.read(move |c| store::get_tenant(c, user, id)).await?;
    t.map(Json)
        .ok_or_else(|| AppError::not_found("organization"))
}

/// Changes an organization's name, time zone or language (its owners only).
#[utoipa::path(patch, path = "/tenants/{tenant_id}", tag = "organizations", security(("bearer" = [])),
    params(("tenant_id" = TenantId, Path)), request_body = TenantPatch,
    responses((status = 200, body = TenantOut), (status = 403, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn update_tenant(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    trace: TraceId,
    Path(id): Path<TenantId>,
    Json(patch): Json<TenantPatch>,
) -> Result<Json<TenantOut>, AppError> {
    let name = patch.name.as_deref().map(clean_name).transpose()?;
    let timezone = patch.timezone.map(|t| t.trim().to_owned());
    if timezone.as_deref().is_some_and(|t| !valid_timezone(t)) {
        return Err(AppError::field(
            "timezone",
            "must be an IANA zone such as America/Sao_Paulo",
        ));
    }
    let (user, now, locale) = (p.user_id, st.clock.now(), patch.locale);
    let t = st
        .db
        .write(move |tx| {
            if store::get_tenant(tx, user, id)?.is_none() {
                return Err(AppError::not_found("organization"));
            }
            if store::tenant_role(tx, id, user)?.as_deref() != Some("owner") {
                return Err(missing_permission(Permission::TenantsEdit));
            }
            store::update_tenant(tx, id, name.as_deref(), timezone.as_deref(), locale, now)?;
            let actor = Actor::in_tenant(id, user, &trace.0);
            audit::record(tx, &actor, "tenant.updated", "tenant", &id.to_string(), now)?;
            store::get_tenant(tx, user, id)
        })
        .await?;
    t.map(Json)
        .ok_or_else(|| AppError::not_found("organization"))
}

/// Creates a store in an organization; needs `stores.create` there (its owners have it).
#[utoipa::path(post, path = "/stores", tag = "stores", security(("bearer" = [])),
    request_body = StoreIn,
    responses((status = 201, body = StoreOut),
              (status = 402, body = crate::error::ErrorBody, description = "plan_limit_reached or subscription_inactive"),
              (status = 403, body = crate::error::ErrorBody),
              (status = 409, body = crate::error::ErrorBody, description = "`slug_taken`"), (status = 422, body = crate::error::ErrorBody)))]
pub async fn create_store(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    trace: TraceId,
    Json(input): Json<StoreIn>,
) -> Result<(StatusCode, Json<StoreOut>), AppError> {
    let name = clean_name(&input.name)?;
    let (user, now, tenant) = (p.user_id, st.clock.now(), input.tenant_id);
    let catalog = st.cfg.plans.clone();
    let store = st
        .db
        .write(move |tx| {
            if store::tenant_role(tx, tenant, user)?.as_deref() != Some("owner") {
                return Err(missing_permission(Permission::StoresCreate));
            }
            // 402 when the plan has no room or the subscription is inactive.
            crate::billing::limits::allow_one_more(
                tx,
                &catalog,
                tenant,
                crate::billing::limits::Limit::Stores,
                now,
            )?;
            let created = store::create_store(tx, tenant, user, &name, now)?;
            let mut actor = Actor::in_tenant(tenant, user, &trace.0);
            actor.store_id = Some(created.id);
            audit::record(
                tx,
                &actor,
                "store.created",
                "store",
                &created.id.to_string(),
                now,
            )?;
            Ok(created)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(store)))
}

/// The stores the caller can see, newest first.
#[utoipa::path(get, path = "/stores", tag = "stores", security(("bearer" = [])),
    params(PageQuery), responses((status = 200, body = Page<StoreOut>)))]
pub async fn list_stores(
    State(st): State<AppState>,
    UserSession(p): UserSession,
    Paged(page, _): Paged,
) -> Result<Json<Page<StoreOut>>, AppError> {
    let user = p.user_id;
    let page = page
        .list(
            &st.db,
            &format!("stores:{user}"),
            move |c, after, limit, offset| store::list_stores(c, user, after, limit, offset),
            move |c| store::count_stores(c, user),
            |s| (s.created_at.clone(), s.id.to_string()),
            |s| s,
        )
        .await?;
    Ok(Json(page))
}

/// A store the caller belongs to.
#[utoipa::path(get, path = "/stores/{store_id}", tag = "stores", security(("bearer" = [])),
    params(("store_id" = crate::ids::StoreId, Path)),
    responses((status = 200, body = StoreOut), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get_store(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Json<StoreOut>, AppError> {
    let id = scope.store_id;
    let s = st.db.read(move |c| store::get_store(c, id)).await?;
    s.map(Json).ok_or_else(|| AppError::not_found("store"))
}

/// Changes a store's name or settings (payment methods, shipping zones, custom domain);
/// needs `stores.edit`. Every field is checked before anything is written.
#[utoipa::path(patch, path = "/stores/{store_id}", tag = "stores", security(("bearer" = [])),
    params(("store_id" = crate::ids::StoreId, Path)), request_body = StorePatch,
    responses((status = 200, body = StoreOut), (status = 403, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody, description = "`slug_taken` or `conflict` (another store uses the domain)"),
              (status = 422, body = crate::error::ErrorBody)))]
pub async fn update_store(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(patch): Json<StorePatch>,
) -> Result<Json<StoreOut>, AppError> {
    scope.require(Permission::StoresEdit)?;
    let change = store::StoreChange {
        name: patch.name.as_deref().map(clean_name).transpose()?,
        payment_methods: patch
            .payment_methods
            .map(|m| settings::not_null("payment_methods", m))
            .transpose()?
            .map(settings::payment_methods),
        shipping_zones: patch
            .shipping_zones
            .map(|z| settings::not_null("shipping_zones", z))
            .transpose()?
            .map(settings::shipping_zones)
            .transpose()?,
        custom_domain: patch
            .custom_domain
            .map(|d| d.as_deref().map(settings::custom_domain).transpose())
            .transpose()?,
    };
    let (id, now, actor) = (scope.store_id, st.clock.now(), Actor::of(&scope));
    let s = st
        .db
        .write(move |tx| {
            if !change.is_empty() {
                store::update_store(tx, id, &change, now)?;
                audit::record(tx, &actor, "store.updated", "store", &id.to_string(), now)?;
            }
            store::get_store(tx, id)
        })
        .await?;
    s.map(Json).ok_or_else(|| AppError::not_found("store"))
}

/// Every permission code, with its area and what it allows.
#[utoipa::path(get, path = "/permissions/catalog", tag = "organizations", security(("bearer" = [])),
    responses((status = 200, body = Page<PermissionOut>)))]
pub async fn permission_catalog(_: Principal) -> Json<Page<PermissionOut>> {
    Json(Page::whole(
        Permission::ALL
            .iter()
            .map(|p| PermissionOut {
                code: p.code(),
                area: p.area(),
                description: p.description(),
            })
            .collect(),
    ))
}
