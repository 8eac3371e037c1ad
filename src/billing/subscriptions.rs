//! An organization's subscription (spec 2.12, 3): the plan it is on, its state and period,
//! and what it uses against the plan's limits. A new organization starts a 14-day trial
//! (spec 8) on the plan `POST /tenants` named, else the catalog's default.

use crate::db::Tx;
use axum::extract::State;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::invoices::{self, PixView};
use super::lifecycle::{self, Ctx, Sub};
use super::plans::{Catalog, Limits};
use crate::audit::Actor;
use crate::error::{AppError, ErrorBody};
use crate::http::auth::Principal;
use crate::http::extract::{Json, Path};
use crate::http::permissions::Permission;
use crate::http::trace::TraceId;
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
    /// A downgrade waiting for the period's end (upgrades take effect at once).
    pub pending_plan_code: Option<String>,
    /// A new billing cycle, from the next period.
    pub pending_billing_cycle: Option<BillingCycle>,
    /// When it was canceled (null unless `canceled`).
    pub canceled_at: Option<String>,
    /// The invoice to pay first (the open one due first), if any, with its Pix data.
    pub open_invoice: Option<super::invoices::InvoiceOut>,
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
    tx: &Tx<'_>,
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
                    current_period_end, cancel_at_period_end, pending_plan_code,
                    pending_billing_cycle, canceled_at
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
                (
                    r.get::<_, Option<String>>(7)?,
                    r.get::<_, Option<BillingCycle>>(8)?,
                    r.get::<_, Option<String>>(9)?,
                ),
            ))
        })
        .optional()?;
    let Some((code, cycle, status, trial, start, end, cancel, (pending, pending_cycle, canceled))) =
        row
    else {
        return Ok(None);
    };
    let plan = catalog.plan_or_default(code.as_deref())?;
    Ok(Some(SubscriptionOut {
        tenant_id: tenant,
        plan_code: code.unwrap_or_else(|| catalog.default_code.clone()),
        billing_cycle: cycle,
        status,
        trial_ends_at: trial,
        current_period_start: start,
        current_period_end: end,
        cancel_at_period_end: cancel,
        pending_plan_code: pending,
        pending_billing_cycle: pending_cycle,
        canceled_at: canceled,
        open_invoice: None,
        usage: usage(c, tenant, now)?,
        limits: plan.limits.clone(),
    }))
}

/// The subscription with its open invoice, as the API and the events show it.
pub fn show(
    c: &Connection,
    catalog: &Catalog,
    view: &PixView<'_>,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<SubscriptionOut, AppError> {
    let mut out =
        get(c, catalog, tenant, now)?.ok_or_else(|| AppError::not_found("subscription"))?;
    out.open_invoice = invoices::open(c, tenant)?
        .into_iter()
        .next()
        .map(|i| i.out(view));
    Ok(out)
}

/// The organization's subscription: plan, state, period, usage, limits and the invoice to
/// pay. Needs `billing.read` in the organization (its owners, or a store role that grants
/// it); a store API token is refused (403 `missing_permission`, spec 5 rule 2).
#[utoipa::path(get, path = "/tenants/{tenant_id}/subscription", tag = "billing",
    security(("bearer" = [])), params(("tenant_id" = TenantId, Path)),
    responses((status = 200, body = SubscriptionOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn get_subscription(
    State(st): State<AppState>,
    p: Principal,
    Path(id): Path<TenantId>,
) -> Result<Json<SubscriptionOut>, AppError> {
    let (now, cfg, origin) = (st.clock.now(), st.cfg.clone(), st.public_url().to_owned());
    st.db
        .read(move |c| {
            invoices::require(c, &p, id, Permission::BillingRead)?;
            show(c, &cfg.plans, &super::pix_view(&cfg, &origin), id, now)
        })
        .await
        .map(Json)
}

/// A change of plan or billing cycle (`PUT .../subscription`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionChange {
    /// A plan of the catalog. A dearer one takes effect at once, with a prorated invoice
    /// for the rest of a paid period; a cheaper one at the period's end.
    pub plan_code: Option<String>,
    /// Takes effect at the period's end (the next invoice bills the new cycle).
    pub billing_cycle: Option<BillingCycle>,
}

/// One limit the organization would pass on another plan.
#[derive(Debug, Serialize)]
struct Exceeded {
    limit: &'static str,
    max: i64,
    used: i64,
}

/// 422 `usage_exceeds_plan` when what the organization uses now does not fit `plan`.
fn check_fits(u: &Usage, plan: &super::plans::Plan) -> Result<(), AppError> {
    let l = &plan.limits;
    let over: Vec<Exceeded> = [
        ("stores", l.stores, u.stores),
        ("members_per_store", l.members_per_store, u.members),
        ("products", l.products, u.products),
        ("orders_per_month", l.orders_per_month, u.orders_this_month),
        (
            "assistant_messages_per_store_per_month",
            l.assistant_messages_per_store_per_month,
            u.assistant_messages_this_month,
        ),
    ]
    .into_iter()
    .filter(|(_, max, used)| used > max)
    .map(|(limit, max, used)| Exceeded { limit, max, used })
    .collect();
    if over.is_empty() {
        return Ok(());
    }
    let names: Vec<_> = over.iter().map(|e| e.limit.replace('_', " ")).collect();
    Err(AppError::new(
        crate::error::ErrorCode::UsageExceedsPlan,
        format!(
            "the organization uses more than the {} plan allows: {}",
            plan.code,
            names.join(", ")
        ),
    )
    .with_details(serde_json::json!({ "plan": plan.code, "exceeded": over })))
}

/// Runs `f` on the organization's subscription in a write transaction, for a caller with
/// `billing.write` (owners), then answers the subscription as it is afterwards.
async fn change(
    st: &AppState,
    p: Principal,
    trace: &TraceId,
    tenant: TenantId,
    f: impl FnOnce(&Tx<'_>, &Ctx<'_>, Sub) -> Result<Sub, AppError> + Send + 'static,
) -> Result<Json<SubscriptionOut>, AppError> {
    let (now, cfg, origin, trace) = (
        st.clock.now(),
        st.cfg.clone(),
        st.public_url().to_owned(),
        trace.0.clone(),
    );
    st.db
        .write(move |tx| {
            invoices::require(tx, &p, tenant, Permission::BillingWrite)?;
            let actor = Actor::in_tenant(tenant, p.user_id, &trace);
            let ctx = Ctx {
                catalog: &cfg.plans,
                view: super::pix_view(&cfg, &origin),
                actor: &actor,
                now,
            };
            let before =
                lifecycle::load(tx, tenant)?.ok_or_else(|| AppError::not_found("subscription"))?;
            let after = f(tx, &ctx, before.clone())?;
            lifecycle::save(tx, &ctx, &before, &after)?;
            show(tx, ctx.catalog, &ctx.view, tenant, now)
        })
        .await
        .map(Json)
}

/// Changes the plan or the billing cycle; organization owners only (`billing.write`).
/// A dearer plan takes effect now: an open invoice is re-issued at its price, and a paid
/// period gets a prorated invoice for what is left of it (due in 3 days). A cheaper plan
/// and a new cycle wait for the period's end (`pending_plan_code`,
/// `pending_billing_cycle`). During a trial, or once canceled, both take effect at once.
/// 422 `usage_exceeds_plan` (`details.exceeded`: `[{limit, max, used}]`) when the
/// organization would not fit the plan.
#[utoipa::path(put, path = "/tenants/{tenant_id}/subscription", tag = "billing",
    security(("bearer" = [])), params(("tenant_id" = TenantId, Path)),
    request_body = SubscriptionChange,
    responses((status = 200, body = SubscriptionOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody, description = "usage_exceeds_plan, or a plan not in the catalog")))]
pub async fn update_subscription(
    State(st): State<AppState>,
    p: Principal,
    trace: TraceId,
    Path(id): Path<TenantId>,
    Json(input): Json<SubscriptionChange>,
) -> Result<Json<SubscriptionOut>, AppError> {
    let code = input.plan_code.map(|c| c.trim().to_owned());
    let cycle = input.billing_cycle;
    change(&st, p, &trace, id, move |tx, ctx, mut s| {
        if let Some(c) = &code {
            check_plan(ctx.catalog, Some(c))?;
        }
        let current = ctx.catalog.plan_or_default(s.plan_code.as_deref())?;
        let wanted = match &code {
            Some(c) => ctx.catalog.plan_or_default(Some(c))?,
            None => ctx
                .catalog
                .plan_or_default(s.pending_plan_code.as_deref().or(s.plan_code.as_deref()))?,
        };
        // Only a move to another plan is checked: undoing a pending downgrade, or a new
        // cycle, is never refused for what the organization uses now.
        if wanted.code != current.code {
            check_fits(&usage(tx, s.tenant, ctx.now)?, wanted)?;
        }
        let now_applies = matches!(
            s.status,
            SubscriptionStatus::Trialing | SubscriptionStatus::Canceled
        );
        if now_applies {
            s.plan_code = Some(wanted.code.clone());
            s.cycle = cycle.unwrap_or(s.cycle);
            s.pending_plan_code = None;
            s.pending_cycle = None;
        } else {
            if let Some(c) = cycle {
                s.pending_cycle = (c != s.cycle).then_some(c);
            }
            let (old, new) = (
                lifecycle::price(current, s.cycle),
                lifecycle::price(wanted, s.cycle),
            );
            if wanted.code == current.code {
                s.pending_plan_code = None;
            } else if new > old {
                s.plan_code = Some(wanted.code.clone());
                s.pending_plan_code = None;
                lifecycle::prorate(tx, ctx, &s, current, wanted)?;
            } else {
                s.pending_plan_code = Some(wanted.code.clone());
            }
        }
        lifecycle::reprice_open(tx, ctx, &s)?;
        Ok(s)
    })
    .await
}

/// Cancels at the period's end (a trial: at its end); owners only. An invoice issued for
/// the next period is voided. 409 when it is canceled already.
#[utoipa::path(post, path = "/tenants/{tenant_id}/subscription/cancel", tag = "billing",
    security(("bearer" = [])), params(("tenant_id" = TenantId, Path)),
    responses((status = 200, body = SubscriptionOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`conflict`")))]
pub async fn cancel_subscription(
    State(st): State<AppState>,
    p: Principal,
    trace: TraceId,
    Path(id): Path<TenantId>,
) -> Result<Json<SubscriptionOut>, AppError> {
    change(&st, p, &trace, id, |tx, ctx, mut s| {
        if s.status == SubscriptionStatus::Canceled {
            return Err(AppError::conflict(
                crate::error::ErrorCode::Conflict,
                "the subscription is canceled already",
            ));
        }
        s.cancel_at_period_end = true;
        for inv in invoices::open(tx, s.tenant)? {
            if time::parse(&inv.period_start).is_some_and(|start| start >= s.period_end) {
                lifecycle::void(tx, ctx, &inv)?;
            }
        }
        Ok(s)
    })
    .await
}

/// Undoes a pending cancellation; for a canceled subscription, issues the invoice that
/// reactivates it (a period from now; it is active again once that invoice is paid).
/// Owners only. 409 when there is nothing to resume.
#[utoipa::path(post, path = "/tenants/{tenant_id}/subscription/resume", tag = "billing",
    security(("bearer" = [])), params(("tenant_id" = TenantId, Path)),
    responses((status = 200, body = SubscriptionOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`conflict`")))]
pub async fn resume_subscription(
    State(st): State<AppState>,
    p: Principal,
    trace: TraceId,
    Path(id): Path<TenantId>,
) -> Result<Json<SubscriptionOut>, AppError> {
    change(&st, p, &trace, id, |tx, ctx, mut s| {
        if s.status == SubscriptionStatus::Canceled {
            lifecycle::issue_resume(tx, ctx, &s)?;
        } else if s.cancel_at_period_end {
            s.cancel_at_period_end = false;
        } else {
            return Err(AppError::conflict(
                crate::error::ErrorCode::Conflict,
                "the subscription is neither canceled nor set to cancel",
            ));
        }
        Ok(s)
    })
    .await
}

/// The invoice to pay now, with its Pix code: the open one due first, else one issued
/// for the next period (after a trial: the first; once canceled: a reactivation). Owners
/// only. 503 when the operator set no Pix key; 409 when nothing is left to pay (the next
/// period is paid, or the subscription ends at the period's end).
#[utoipa::path(post, path = "/tenants/{tenant_id}/subscription/pay", tag = "billing",
    security(("bearer" = [])), params(("tenant_id" = TenantId, Path)),
    responses((status = 200, body = super::invoices::InvoiceOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`conflict`"),
              (status = 503, body = ErrorBody, description = "no Pix key is configured")))]
pub async fn pay_subscription(
    State(st): State<AppState>,
    p: Principal,
    trace: TraceId,
    Path(id): Path<TenantId>,
) -> Result<Json<super::invoices::InvoiceOut>, AppError> {
    let (now, cfg, origin, trace) = (
        st.clock.now(),
        st.cfg.clone(),
        st.public_url().to_owned(),
        trace.0,
    );
    st.db
        .write(move |tx| {
            invoices::require(tx, &p, id, Permission::BillingWrite)?;
            if cfg.billing.pix.is_none() {
                return Err(AppError::unavailable(
                    "invoices cannot be paid here yet: the operator has not set a Pix key \
                     (--pix-key)",
                ));
            }
            let actor = Actor::in_tenant(id, p.user_id, &trace);
            let ctx = Ctx {
                catalog: &cfg.plans,
                view: super::pix_view(&cfg, &origin),
                actor: &actor,
                now,
            };
            if let Some(inv) = invoices::open(tx, id)?.into_iter().next() {
                return Ok(inv.out(&ctx.view));
            }
            let s = lifecycle::load(tx, id)?.ok_or_else(|| AppError::not_found("subscription"))?;
            let inv = match s.status {
                SubscriptionStatus::Canceled => lifecycle::issue_resume(tx, &ctx, &s)?,
                _ if s.cancel_at_period_end => {
                    return Err(AppError::conflict(
                        crate::error::ErrorCode::Conflict,
                        "the subscription ends with this period: resume it first",
                    ));
                }
                _ if invoices::for_period(tx, id, s.period_end)?.is_some() => {
                    return Err(AppError::conflict(
                        crate::error::ErrorCode::Conflict,
                        "nothing to pay: the next period is paid already",
                    ));
                }
                _ => lifecycle::issue_next(tx, &ctx, &s)?,
            };
            Ok(inv.out(&ctx.view))
        })
        .await
        .map(Json)
}
