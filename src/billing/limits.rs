//! The plan's limits (issue 17 "Limits (402)"; spec 4.4, 4.10, 7): what an organization may
//! add while its subscription allows it. Each check runs in the transaction that adds the
//! thing, so two requests cannot both take the last place, and reads the subscription by
//! its key and one indexed count.
//!
//! - Stores, members (pending invites included), products and this month's orders (all the
//!   organization's stores, calendar month UTC): one more past the plan is 402
//!   `plan_limit_reached` `{limit, max, used, plan}`; anything added while the subscription
//!   is suspended or canceled is 402 `subscription_inactive` `{status}`.
//! - An order the storefront takes is never refused here: it is counted, and the first one
//!   past the limit in a month leaves a `billing.limit_exceeded` audit entry for the owners.
//! - The assistant's monthly cap is the plan's, lowered to the operator's
//!   `--assistant-monthly-cap` when one is set; it answers nothing while inactive.

use crate::db::{Tx, counts};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::json;

use super::plans::{Catalog, Limits};
use super::subscriptions::SubscriptionStatus;
use crate::audit::Actor;
use crate::error::{AppError, ErrorCode};
use crate::ids::{StoreId, TenantId};
use crate::time;

/// What one more of would count against a plan limit.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    Stores,
    /// A member (or a pending invite) of this store.
    MembersOf(StoreId),
    /// A product in any of the organization's stores.
    Products,
    /// An order created this calendar month (UTC) in any of its stores.
    OrdersThisMonth,
}

impl Limit {
    /// The limit's name, as the plan and the 402's `details.limit` spell it.
    fn name(self) -> &'static str {
        match self {
            Self::Stores => "stores",
            Self::MembersOf(_) => "members_per_store",
            Self::Products => "products",
            Self::OrdersThisMonth => "orders_per_month",
        }
    }

    fn max(self, l: &Limits) -> i64 {
        match self {
            Self::Stores => l.stores,
            Self::MembersOf(_) => l.members_per_store,
            Self::Products => l.products,
            Self::OrdersThisMonth => l.orders_per_month,
        }
    }

    /// How many the organization has now. Stores and members are counted over an index (an
    /// organization has few); products and this month's orders are summed from the stores'
    /// counters (`list_counts`, migrations V36 and V37), so a check costs the same at a
    /// million orders as at ten.
    fn used(self, c: &Connection, tenant: TenantId, now: DateTime<Utc>) -> Result<i64, AppError> {
        let count = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> Result<i64, AppError> {
            Ok(c.prepare_cached(sql)?.query_row(p, |r| r.get(0))?)
        };
        match self {
            Self::Stores => count(
                "SELECT COUNT(*) FROM stores WHERE tenant_id = ?1",
                &[&tenant],
            ),
            Self::MembersOf(store) => count(
                "SELECT (SELECT COUNT(*) FROM store_members WHERE store_id = ?1)
                      + (SELECT COUNT(*) FROM invites WHERE store_id = ?1
                           AND accepted_at IS NULL AND expires_at > ?2)",
                &[&store, &time::format(now)],
            ),
            Self::Products => counts::tenant_sum(c, tenant, "products", ""),
            Self::OrdersThisMonth => {
                let month = format!("month:{}", now.format("%Y-%m"));
                counts::tenant_sum(c, tenant, "orders", &month)
            }
        }
    }
}

/// The organization's plan and state, as the limits read them.
struct Terms<'a> {
    /// The plan's code as the subscription names it (the default's when it names none).
    plan: String,
    limits: &'a Limits,
    status: SubscriptionStatus,
}

/// Terms from a subscription row's `(status, plan_code)`; none (an organization that has
/// somehow lost its row) reads as a trial on the default plan. A plan the operator has since
/// taken out of the catalog holds the organization to the default's limits, as
/// `subscriptions::get` shows them.
fn terms_of(
    catalog: &Catalog,
    row: Option<(SubscriptionStatus, Option<String>)>,
) -> Result<Terms<'_>, AppError> {
    let (status, code) = row.unwrap_or((SubscriptionStatus::Trialing, None));
    let plan = catalog.plan_or_default(code.as_deref())?;
    Ok(Terms {
        plan: code.unwrap_or_else(|| catalog.default_code.clone()),
        limits: &plan.limits,
        status,
    })
}

fn tenant_terms<'a>(
    c: &Connection,
    catalog: &'a Catalog,
    tenant: TenantId,
) -> Result<Terms<'a>, AppError> {
    let row = c
        .prepare_cached("SELECT status, plan_code FROM subscriptions WHERE tenant_id = ?1")?
        .query_row([tenant], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    terms_of(catalog, row)
}

/// 402 `subscription_inactive` (`details {status}`) while suspended or canceled.
fn require_active(status: SubscriptionStatus) -> Result<(), AppError> {
    if matches!(
        status,
        SubscriptionStatus::Suspended | SubscriptionStatus::Canceled
    ) {
        return Err(AppError::new(
            ErrorCode::SubscriptionInactive,
            format!("the organization's subscription is {}", status.as_str()),
        )
        .with_details(json!({ "status": status })));
    }
    Ok(())
}

/// Refuses what the organization's subscription does not allow now: 402
/// `subscription_inactive` while it is suspended or canceled, 402 `plan_limit_reached`
/// (`details {limit, max, used, plan}`) when one more would pass the plan's limit. Run in
/// the transaction that adds it, so two requests cannot both take the last place.
pub fn allow_one_more(
    c: &Connection,
    catalog: &Catalog,
    tenant: TenantId,
    what: Limit,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let terms = tenant_terms(c, catalog, tenant)?;
    require_active(terms.status)?;
    let (limit, max) = (what.name(), what.max(terms.limits));
    let used = what.used(c, tenant, now)?;
    if used >= max {
        return Err(AppError::new(
            ErrorCode::PlanLimitReached,
            format!(
                "the {} plan allows {max} {}",
                terms.plan,
                limit.replace('_', " ")
            ),
        )
        .with_details(json!({"limit": limit, "max": max, "used": used, "plan": terms.plan})));
    }
    Ok(())
}

/// The audit action left when something that is never refused passed the plan's limit.
pub const LIMIT_EXCEEDED: &str = "billing.limit_exceeded";

/// Counts one more that must not be refused (an order the storefront took: a shopper is
/// never turned away for the merchant's plan), in the transaction that adds it. When it
/// passes the plan's limit, the owners are told once a month per organization: an audit
/// entry `billing.limit_exceeded` (`details {limit, max, used}`, `used` counting this one,
/// in the store's audit log) and a warning in the server's log. Nothing else is sent.
pub fn count_one_more(
    tx: &Tx<'_>,
    catalog: &Catalog,
    actor: &Actor,
    what: Limit,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let tenant = actor.tenant_id;
    let terms = tenant_terms(tx, catalog, tenant)?;
    let (limit, max) = (what.name(), what.max(terms.limits));
    let used = what.used(tx, tenant, now)? + 1;
    if used <= max {
        return Ok(());
    }
    let (_, month_start, _) = crate::assistant::store::period(now);
    // The partial index `audit_log_limit_exceeded` (V23) answers this without a scan.
    let told: bool = tx
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM audit_log
                WHERE action = 'billing.limit_exceeded' AND tenant_id = ?1 AND created_at >= ?2)",
        )?
        .query_row(params![tenant, time::format(month_start)], |r| r.get(0))?;
    if told {
        return Ok(());
    }
    tracing::warn!(tenant_id = %tenant, limit, max, used, plan = %terms.plan,
        "an organization passed its plan's limit with something that is never refused");
    crate::audit::record_with_details(
        tx,
        actor,
        LIMIT_EXCEEDED,
        "subscription",
        &tenant.to_string(),
        &json!({"limit": limit, "max": max, "used": used}),
        now,
    )
}

/// The assistant's terms for a store's organization, read by the store's key and the
/// subscription's: cheap enough for every message.
#[derive(Debug, Clone, Copy)]
pub struct AssistantTerms {
    pub status: SubscriptionStatus,
    /// Messages a store may send a calendar month (UTC): the plan's
    /// `assistant_messages_per_store_per_month`, at most the operator's ceiling.
    pub cap: i64,
}

impl AssistantTerms {
    /// The cap, or 402 `subscription_inactive` while suspended or canceled.
    pub fn active_cap(self) -> Result<i64, AppError> {
        require_active(self.status)?;
        Ok(self.cap)
    }
}

/// The assistant's terms for `store`: `ceiling` is `--assistant-monthly-cap`, when set.
pub fn assistant_terms(
    c: &Connection,
    catalog: &Catalog,
    ceiling: Option<u32>,
    store: StoreId,
) -> Result<AssistantTerms, AppError> {
    let row = c
        .prepare_cached(
            "SELECT sub.status, sub.plan_code FROM stores s
             JOIN subscriptions sub ON sub.tenant_id = s.tenant_id WHERE s.id = ?1",
        )?
        .query_row([store], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let terms = terms_of(catalog, row)?;
    let plan = terms.limits.assistant_messages_per_store_per_month;
    Ok(AssistantTerms {
        status: terms.status,
        cap: ceiling.map_or(plan, |c| plan.min(i64::from(c))),
    })
}
