//! An organization's subscription (spec 2.12, 3): the plan it is on, its state and period,
//! and what it uses against the plan's limits. A new organization starts a 14-day trial
//! (spec 8) on the plan `POST /tenants` named, else the catalog's default.

use axum::extract::State;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::Serialize;
use utoipa::ToSchema;

use super::plans::{Catalog, Limits};
use crate::error::{AppError, ErrorBody};
use crate::http::auth::Principal;
use crate::http::extract::{Json, Path};
use crate::http::permissions::Permission;
use crate::ids::TenantId;
use crate::state::AppState;
use crate::text_enum;
use crate::time;

/// How long a new organization's trial lasts (spec 8).
pub const TRIAL_DAYS: i64 = 14;

text_enum! {
    /// Spec 3: `trialing` until the first invoice is paid; `past_due` when a period ended
    /// unpaid; `suspended` after the grace days; `canceled` at last.
    pub enum SubscriptionStatus {
        Trialing = "trialing",
        Active = "active",
        PastDue = "past_due",
        Suspended = "suspended",
        Canceled = "canceled",
    }
}

text_enum! {
    pub enum BillingCycle {
        Monthly = "monthly",
        Annual = "annual",
    }
}

/// What an organization uses, against its plan's limits.
#[derive(Debug, Serialize, ToSchema)]
pub struct Usage {
    pub stores: i64,
    /// Members of its largest store.
    pub members: i64,
    pub products: i64,
    /// Orders created this calendar month (UTC), all stores.
    pub orders_this_month: i64,
    /// Assistant messages this month in its busiest store.
    pub assistant_messages_this_month: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionOut {
    pub tenant_id: TenantId,
    pub plan_code: String,
    pub billing_cycle: BillingCycle,
    pub status: SubscriptionStatus,
    pub trial_ends_at: Option<String>,
    pub current_period_start: String,
    pub current_period_end: String,
    /// Ends at `current_period_end` instead of renewing.
    pub cancel_at_period_end: bool,
    /// The invoice waiting to be paid, if any.
    #[schema(value_type = Option<Object>)]
    pub open_invoice: Option<serde_json::Value>,
    pub usage: Usage,
    pub limits: Limits,
}

/// A plan code as `POST /tenants` gives it: one of the catalog's (422 otherwise).
pub fn check_plan(catalog: &Catalog, code: Option<&str>) -> Result<Option<String>, AppError> {
    match code {
        None => Ok(None),
        Some(c) if catalog.get(c).is_some() => Ok(Some(c.to_owned())),
        Some(_) => Err(AppError::field("plan_code", "is not a plan of the catalog")),
    }
}

/// Starts a new organization's trial, in its creation's transaction.
pub fn start_trial(
    tx: &Transaction<'_>,
    tenant: TenantId,
    plan_code: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let (at, ends) = (
        time::format(now),
        time::format(now + chrono::Duration::days(TRIAL_DAYS)),
    );
    crate::db::exec(
        tx,
        "INSERT INTO subscriptions (tenant_id, plan_code, billing_cycle, status, trial_ends_at,
             current_period_start, current_period_end, created_at, updated_at)
         VALUES (?1, ?2, 'monthly', 'trialing', ?3, ?4, ?3, ?4, ?4)",
        params![tenant, plan_code, ends, at],
    )?;
    Ok(())
}

/// What the organization uses now.
pub fn usage(c: &Connection, tenant: TenantId, now: DateTime<Utc>) -> Result<Usage, AppError> {
    let (period, month_start, _) = crate::assistant::store::period(now);
    Ok(c.prepare_cached(
        "SELECT
           (SELECT COUNT(*) FROM stores WHERE tenant_id = ?1),
           (SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM store_members m
              JOIN stores s ON s.id = m.store_id WHERE s.tenant_id = ?1 GROUP BY m.store_id)),
           (SELECT COUNT(*) FROM products p JOIN stores s ON s.id = p.store_id WHERE s.tenant_id = ?1),
           (SELECT COUNT(*) FROM orders o JOIN stores s ON s.id = o.store_id
              WHERE s.tenant_id = ?1 AND o.created_at >= ?2),
           (SELECT COALESCE(MAX(u.used), 0) FROM assistant_usage u JOIN stores s ON s.id = u.store_id
              WHERE s.tenant_id = ?1 AND u.period = ?3)",
    )?
    .query_row(params![tenant, time::format(month_start), period], |r| {
        Ok(Usage {
            stores: r.get(0)?,
            members: r.get(1)?,
            products: r.get(2)?,
            orders_this_month: r.get(3)?,
            assistant_messages_this_month: r.get(4)?,
        })
    })?)
}

/// The organization's subscription as the API shows it.
pub fn get(
    c: &Connection,
    catalog: &Catalog,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<Option<SubscriptionOut>, AppError> {
    let row = c
        .prepare_cached(
            "SELECT plan_code, billing_cycle, status, trial_ends_at, current_period_start,
                    current_period_end, cancel_at_period_end
             FROM subscriptions WHERE tenant_id = ?1",
        )?
        .query_row([tenant], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, BillingCycle>(1)?,
                r.get::<_, SubscriptionStatus>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, bool>(6)?,
            ))
        })
        .optional()?;
    let Some((code, cycle, status, trial, start, end, cancel)) = row else {
        return Ok(None);
    };
    // A plan the operator has since taken out of the catalog reads as the default's limits.
    let plan = code
        .as_deref()
        .and_then(|c| catalog.get(c))
        .or_else(|| catalog.get(&catalog.default_code))
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("the catalog has no default plan")))?;
    Ok(Some(SubscriptionOut {
        tenant_id: tenant,
        plan_code: code.unwrap_or_else(|| catalog.default_code.clone()),
        billing_cycle: cycle,
        status,
        trial_ends_at: trial,
        current_period_start: start,
        current_period_end: end,
        cancel_at_period_end: cancel,
        open_invoice: None,
        usage: usage(c, tenant, now)?,
        limits: plan.limits.clone(),
    }))
}

/// The organization's subscription: plan, state, period, usage and limits. Needs
/// `billing.read` in the organization (its owners, or a store role that grants it); a store
/// API token is refused (403 `missing_permission`, spec 5 rule 2).
#[utoipa::path(get, path = "/tenants/{tenant_id}/subscription", tag = "billing",
    security(("bearer" = [])), params(("tenant_id" = TenantId, Path)),
    responses((status = 200, body = SubscriptionOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn get_subscription(
    State(st): State<AppState>,
    p: Principal,
    Path(id): Path<TenantId>,
) -> Result<Json<SubscriptionOut>, AppError> {
    if p.is_store_token() {
        return Err(crate::http::auth::missing_permission(
            Permission::BillingRead,
        ));
    }
    let (user, now, catalog) = (p.user_id, st.clock.now(), st.cfg.plans.clone());
    st.db
        .read(move |c| {
            let Some(perms) = crate::tenants::store::tenant_permissions(c, id, user)? else {
                return Err(AppError::not_found("organization"));
            };
            if !perms.contains(Permission::BillingRead) {
                return Err(crate::http::auth::missing_permission(
                    Permission::BillingRead,
                ));
            }
            get(c, &catalog, id, now)?.ok_or_else(|| AppError::not_found("subscription"))
        })
        .await
        .map(Json)
}
