//! The plan's limits (issue 17 "Limits (402)"; spec 4.4, 4.10, 7): what an organization may
//! add while its subscription allows it, checked in the transaction that adds it.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::plans::Catalog;
use super::subscriptions::{SubscriptionStatus, get};
use crate::error::AppError;
use crate::ids::TenantId;
use crate::time;

/// What one more of would count against a plan limit.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    Stores,
    /// A member (or a pending invite) of this store.
    MembersOf(crate::ids::StoreId),
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
    let Some(sub) = get(c, catalog, tenant, now)? else {
        return Ok(()); // no subscription row: nothing to hold it to
    };
    if matches!(
        sub.status,
        SubscriptionStatus::Suspended | SubscriptionStatus::Canceled
    ) {
        return Err(AppError::new(
            crate::error::ErrorCode::SubscriptionInactive,
            format!("the organization's subscription is {}", sub.status.as_str()),
        )
        .with_details(serde_json::json!({ "status": sub.status })));
    }
    let (limit, max, used) = match what {
        Limit::Stores => ("stores", sub.limits.stores, sub.usage.stores),
        Limit::MembersOf(store) => {
            let used: i64 = c.query_row(
                "SELECT (SELECT COUNT(*) FROM store_members WHERE store_id = ?1)
                      + (SELECT COUNT(*) FROM invites WHERE store_id = ?1
                           AND accepted_at IS NULL AND expires_at > ?2)",
                params![store, time::format(now)],
                |r| r.get(0),
            )?;
            ("members_per_store", sub.limits.members_per_store, used)
        }
    };
    if used >= max {
        return Err(AppError::new(
            crate::error::ErrorCode::PlanLimitReached,
            format!(
                "the {} plan allows {max} {}",
                sub.plan_code,
                limit.replace('_', " ")
            ),
        )
        .with_details(serde_json::json!({
            "limit": limit, "max": max, "used": used, "plan": sub.plan_code})));
    }
    Ok(())
}
