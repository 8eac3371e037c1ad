//! How a subscription moves (spec 3 "Subscription"; issue 17): the daily job, payments,
//! and the owner's changes. Every change is saved with an audit entry and a
//! `subscription.updated` platform event in one transaction.
//!
//! - trialing → active when its first invoice is paid; → past_due when the trial ends
//!   unpaid.
//! - active → past_due when an invoice's due date passes unpaid (a renewal is due when the
//!   period ends; it is issued [`RENEWAL_NOTICE_DAYS`] before).
//! - past_due → active when paid; → suspended after the grace days.
//! - suspended → active when paid; → canceled after [`SUSPENDED_DAYS`] more.
//! - `cancel_at_period_end` → canceled when the period ends; a canceled subscription is
//!   reactivated by paying a `subscription_resume` invoice.

use chrono::{DateTime, Duration, Months, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};

use super::invoices::{self, Invoice, InvoiceReason, InvoiceStatus, NewInvoice, SUSPENDED_DAYS};
use super::plans::{Catalog, Plan};
use super::subscriptions::{BillingCycle, SubscriptionStatus};
use crate::audit::{self, Actor};
use crate::error::AppError;
use crate::events::Event;
use crate::ids::TenantId;
use crate::jobs::JobKind;
use crate::time;
use crate::webhooks;

/// A renewal invoice is issued this long before the period ends, so it can be paid in time.
pub const RENEWAL_NOTICE_DAYS: i64 = 7;
/// An upgrade's prorated invoice is due this long after the change.
pub const PRORATION_DUE_DAYS: i64 = 3;

/// A subscription as stored, with what moves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sub {
    pub tenant: TenantId,
    /// None: the catalog's default plan.
    pub plan_code: Option<String>,
    pub cycle: BillingCycle,
    pub status: SubscriptionStatus,
    pub trial_ends_at: Option<String>,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub cancel_at_period_end: bool,
    pub pending_plan_code: Option<String>,
    pub pending_cycle: Option<BillingCycle>,
    pub past_due_since: Option<DateTime<Utc>>,
    pub suspended_at: Option<DateTime<Utc>>,
    pub canceled_at: Option<DateTime<Utc>>,
}

fn at(s: Option<&str>) -> Option<DateTime<Utc>> {
    s.and_then(time::parse)
}

fn fmt(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(time::format)
}

pub fn load(c: &Connection, tenant: TenantId) -> Result<Option<Sub>, AppError> {
    Ok(c.prepare_cached(
        "SELECT plan_code, billing_cycle, status, trial_ends_at, current_period_start,
                    current_period_end, cancel_at_period_end, pending_plan_code,
                    pending_billing_cycle, past_due_since, suspended_at, canceled_at
             FROM subscriptions WHERE tenant_id = ?1",
    )?
    .query_row([tenant], |r| {
        Ok(Sub {
            tenant,
            plan_code: r.get(0)?,
            cycle: r.get(1)?,
            status: r.get(2)?,
            trial_ends_at: r.get(3)?,
            period_start: at(r.get::<_, Option<String>>(4)?.as_deref()).unwrap_or_default(),
            period_end: at(r.get::<_, Option<String>>(5)?.as_deref()).unwrap_or_default(),
            cancel_at_period_end: r.get(6)?,
            pending_plan_code: r.get(7)?,
            pending_cycle: r.get(8)?,
            past_due_since: at(r.get::<_, Option<String>>(9)?.as_deref()),
            suspended_at: at(r.get::<_, Option<String>>(10)?.as_deref()),
            canceled_at: at(r.get::<_, Option<String>>(11)?.as_deref()),
        })
    })
    .optional()?)
}

fn store(tx: &Transaction<'_>, s: &Sub, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE subscriptions SET plan_code = ?2, billing_cycle = ?3, status = ?4,
             trial_ends_at = ?5, current_period_start = ?6, current_period_end = ?7,
             cancel_at_period_end = ?8, pending_plan_code = ?9, pending_billing_cycle = ?10,
             past_due_since = ?11, suspended_at = ?12, canceled_at = ?13, updated_at = ?14
         WHERE tenant_id = ?1",
        params![
            s.tenant,
            s.plan_code,
            s.cycle,
            s.status,
            s.trial_ends_at,
            time::format(s.period_start),
            time::format(s.period_end),
            s.cancel_at_period_end,
            s.pending_plan_code,
            s.pending_cycle,
            fmt(s.past_due_since),
            fmt(s.suspended_at),
            fmt(s.canceled_at),
            time::format(now)
        ],
    )?;
    Ok(())
}

/// What publishing a change needs besides the transaction.
pub struct Ctx<'a> {
    pub catalog: &'a Catalog,
    pub view: invoices::PixView<'a>,
    pub actor: &'a Actor,
    pub now: DateTime<Utc>,
}

/// Saves `after` if it differs from `before`, with an audit entry (`subscription.<status>`
/// for a new state, else `subscription.updated`) and the `subscription.updated` event.
pub fn save(
    tx: &Transaction<'_>,
    ctx: &Ctx<'_>,
    before: &Sub,
    after: &Sub,
) -> Result<bool, AppError> {
    if before == after {
        return Ok(false);
    }
    store(tx, after, ctx.now)?;
    let action = if before.status == after.status {
        "subscription.updated".to_owned()
    } else {
        format!("subscription.{}", after.status.as_str())
    };
    audit::record(
        tx,
        ctx.actor,
        &action,
        "subscription",
        &after.tenant.to_string(),
        ctx.now,
    )?;
    let out = super::subscriptions::show(tx, ctx.catalog, &ctx.view, after.tenant, ctx.now)?;
    webhooks::publish(tx, None, Event::SubscriptionUpdated, &out, ctx.now)?;
    Ok(true)
}

/// The plan a code names, else the catalog's default (a plan since taken out of the
/// catalog bills as the default).
pub fn plan_of<'c>(catalog: &'c Catalog, code: Option<&str>) -> Result<&'c Plan, AppError> {
    code.and_then(|c| catalog.get(c))
        .or_else(|| catalog.get(&catalog.default_code))
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("the catalog has no default plan")))
}

pub fn price(plan: &Plan, cycle: BillingCycle) -> i64 {
    match cycle {
        BillingCycle::Monthly => plan.monthly_price_cents,
        BillingCycle::Annual => plan.annual_price_cents,
    }
}

/// The end of a period of `cycle` starting at `start` (same day of the month, clamped).
pub fn period_end(start: DateTime<Utc>, cycle: BillingCycle) -> DateTime<Utc> {
    let months = match cycle {
        BillingCycle::Monthly => 1,
        BillingCycle::Annual => 12,
    };
    start
        .checked_add_months(Months::new(months))
        .unwrap_or(start + Duration::days(30 * i64::from(months)))
}

/// The plan and cycle the next period is billed at: a pending change, else today's.
pub fn next_terms<'c>(catalog: &'c Catalog, s: &Sub) -> Result<(&'c Plan, BillingCycle), AppError> {
    let code = s.pending_plan_code.as_deref().or(s.plan_code.as_deref());
    Ok((plan_of(catalog, code)?, s.pending_cycle.unwrap_or(s.cycle)))
}

/// Issues the invoice of the period after the current one (a first invoice after a trial, or
/// a renewal), due when the current period ends; the one already issued if there is one.
pub fn issue_next(tx: &Transaction<'_>, ctx: &Ctx<'_>, s: &Sub) -> Result<Invoice, AppError> {
    if let Some(i) = invoices::for_period(tx, s.tenant, s.period_end)? {
        return Ok(i);
    }
    let (plan, cycle) = next_terms(ctx.catalog, s)?;
    invoices::issue(
        tx,
        &NewInvoice {
            tenant: s.tenant,
            reason: if s.status == SubscriptionStatus::Trialing {
                InvoiceReason::Create
            } else {
                InvoiceReason::Cycle
            },
            plan,
            cycle,
            amount_cents: price(plan, cycle),
            period_start: s.period_end,
            period_end: period_end(s.period_end, cycle),
            due_at: s.period_end,
        },
        ctx.now,
    )
}

/// Issues the invoice that reactivates a canceled subscription for a period from now, or
/// returns the open one.
pub fn issue_resume(tx: &Transaction<'_>, ctx: &Ctx<'_>, s: &Sub) -> Result<Invoice, AppError> {
    if let Some(i) = invoices::open(tx, s.tenant)?
        .into_iter()
        .find(|i| i.reason == InvoiceReason::Resume)
    {
        return Ok(i);
    }
    let plan = plan_of(ctx.catalog, s.plan_code.as_deref())?;
    invoices::issue(
        tx,
        &NewInvoice {
            tenant: s.tenant,
            reason: InvoiceReason::Resume,
            plan,
            cycle: s.cycle,
            amount_cents: price(plan, s.cycle),
            period_start: ctx.now,
            period_end: period_end(ctx.now, s.cycle),
            due_at: ctx.now,
        },
        ctx.now,
    )
}

/// Re-issues the open invoices that bill whole periods (not a proration) at the terms they
/// should have now: the old one is voided, the new one keeps its period start and due date.
pub fn reprice_open(tx: &Transaction<'_>, ctx: &Ctx<'_>, s: &Sub) -> Result<(), AppError> {
    for inv in invoices::open(tx, s.tenant)? {
        let start = time::parse(&inv.period_start).unwrap_or(ctx.now);
        let (plan, cycle) = if inv.reason == InvoiceReason::Update {
            continue;
        } else if start >= s.period_end && s.status != SubscriptionStatus::Canceled {
            next_terms(ctx.catalog, s)?
        } else {
            (plan_of(ctx.catalog, s.plan_code.as_deref())?, s.cycle)
        };
        let amount = price(plan, cycle);
        if inv.plan_code == plan.code && inv.billing_cycle == cycle && inv.amount_cents == amount {
            continue;
        }
        invoices::void(tx, inv.id, ctx.now)?;
        invoices::issue(
            tx,
            &NewInvoice {
                tenant: s.tenant,
                reason: inv.reason,
                plan,
                cycle,
                amount_cents: amount,
                period_start: start,
                period_end: period_end(start, cycle),
                due_at: time::parse(&inv.due_at).unwrap_or(ctx.now),
            },
            ctx.now,
        )?;
    }
    Ok(())
}

fn void_all_open(
    tx: &Transaction<'_>,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    for inv in invoices::open(tx, tenant)? {
        invoices::void(tx, inv.id, now)?;
    }
    Ok(())
}

fn cancel_now(tx: &Transaction<'_>, s: &mut Sub, now: DateTime<Utc>) -> Result<(), AppError> {
    s.status = SubscriptionStatus::Canceled;
    s.canceled_at = Some(now);
    s.cancel_at_period_end = false;
    s.pending_plan_code = None;
    s.pending_cycle = None;
    s.past_due_since = None;
    s.suspended_at = None;
    void_all_open(tx, s.tenant, now)
}

/// Moves one organization's subscription as far as `ctx.now` takes it (the daily job).
/// Idempotent: run twice at the same time, the second run changes nothing.
pub fn advance(
    tx: &Transaction<'_>,
    ctx: &Ctx<'_>,
    tenant: TenantId,
    grace_days: u32,
) -> Result<bool, AppError> {
    let Some(before) = load(tx, tenant)? else {
        return Ok(false);
    };
    let now = ctx.now;
    let mut s = before.clone();
    // A server that was off for months catches up one period at a time.
    for _ in 0..36 {
        let ended = now >= s.period_end;
        match s.status {
            SubscriptionStatus::Trialing | SubscriptionStatus::Active if ended => {
                if s.cancel_at_period_end {
                    cancel_now(tx, &mut s, now)?;
                    break;
                }
                let paid = invoices::for_period(tx, tenant, s.period_end)?
                    .is_some_and(|i| i.status == InvoiceStatus::Paid);
                if !paid {
                    issue_next(tx, ctx, &s)?;
                }
                let (plan, cycle) = next_terms(ctx.catalog, &s)?;
                s.plan_code = Some(plan.code.clone());
                s.cycle = cycle;
                s.pending_plan_code = None;
                s.pending_cycle = None;
                s.period_start = s.period_end;
                s.period_end = period_end(s.period_start, cycle);
                if paid {
                    s.status = SubscriptionStatus::Active;
                } else {
                    s.status = SubscriptionStatus::PastDue;
                    s.past_due_since = Some(now);
                    break;
                }
            }
            SubscriptionStatus::Trialing | SubscriptionStatus::Active => {
                if !s.cancel_at_period_end
                    && now >= s.period_end - Duration::days(RENEWAL_NOTICE_DAYS)
                {
                    issue_next(tx, ctx, &s)?;
                }
                let overdue = invoices::open(tx, tenant)?
                    .iter()
                    .any(|i| time::parse(&i.due_at).is_some_and(|d| d <= now));
                if overdue && s.status == SubscriptionStatus::Active {
                    s.status = SubscriptionStatus::PastDue;
                    s.past_due_since = Some(now);
                    continue;
                }
                break;
            }
            SubscriptionStatus::PastDue | SubscriptionStatus::Suspended
                if s.cancel_at_period_end && ended =>
            {
                cancel_now(tx, &mut s, now)?;
                break;
            }
            SubscriptionStatus::PastDue => {
                let since = s.past_due_since.unwrap_or(now);
                if now >= since + Duration::days(i64::from(grace_days)) {
                    s.status = SubscriptionStatus::Suspended;
                    s.suspended_at = Some(now);
                    continue;
                }
                break;
            }
            SubscriptionStatus::Suspended => {
                let since = s.suspended_at.unwrap_or(now);
                if now >= since + Duration::days(SUSPENDED_DAYS) {
                    cancel_now(tx, &mut s, now)?;
                }
                break;
            }
            SubscriptionStatus::Canceled => break,
        }
    }
    save(tx, ctx, &before, &s)
}

/// Applies a confirmed payment of `inv`: the invoice is paid, and the subscription moves
/// (trialing, past_due or suspended → active; canceled → active for the invoice's period
/// when it was a `subscription_resume` invoice). Audited, with `invoice.paid` and, when the
/// subscription changed, `subscription.updated`. False when the invoice was not open.
pub fn apply_payment(
    tx: &Transaction<'_>,
    ctx: &Ctx<'_>,
    inv: &Invoice,
    paid_at: DateTime<Utc>,
    amount_cents: i64,
    via: &str,
) -> Result<bool, AppError> {
    if !invoices::mark_paid(tx, inv.id, paid_at, amount_cents, via)? {
        return Ok(false);
    }
    audit::record(
        tx,
        ctx.actor,
        "invoice.paid",
        "invoice",
        &inv.id.to_string(),
        ctx.now,
    )?;
    let paid = invoices::get(tx, inv.id)?
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("the paid invoice is gone")))?;
    webhooks::publish(tx, None, Event::InvoicePaid, &paid.out(&ctx.view), ctx.now)?;
    let Some(before) = load(tx, inv.tenant_id)? else {
        return Ok(true);
    };
    let mut s = before.clone();
    let still_overdue = invoices::open(tx, s.tenant)?
        .iter()
        .any(|i| time::parse(&i.due_at).is_some_and(|d| d <= ctx.now));
    match s.status {
        SubscriptionStatus::Canceled if inv.reason == InvoiceReason::Resume => {
            s.status = SubscriptionStatus::Active;
            s.plan_code = Some(inv.plan_code.clone());
            s.cycle = inv.billing_cycle;
            s.period_start = time::parse(&inv.period_start).unwrap_or(ctx.now);
            s.period_end = time::parse(&inv.period_end).unwrap_or(ctx.now);
            s.canceled_at = None;
        }
        SubscriptionStatus::Trialing => s.status = SubscriptionStatus::Active,
        SubscriptionStatus::PastDue | SubscriptionStatus::Suspended if !still_overdue => {
            s.status = SubscriptionStatus::Active;
            s.past_due_since = None;
            s.suspended_at = None;
        }
        _ => {}
    }
    save(tx, ctx, &before, &s)?;
    Ok(true)
}

/// The daily billing run: moves every subscription as far as now takes it, one organization
/// per transaction, then schedules the next run a day later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct BillingDay;

impl JobKind for BillingDay {
    const KIND: &'static str = "billing_day";

    fn max_attempts(&self) -> u32 {
        3
    }
}

/// Enqueues a daily run at `run_at` unless one is waiting (`also_running`: or running).
fn schedule(
    tx: &Transaction<'_>,
    run_at: DateTime<Utc>,
    now: DateTime<Utc>,
    also_running: bool,
) -> Result<(), AppError> {
    let pending: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = ?1
                          AND (state = 'queued' OR (?2 AND state = 'running')))",
        params![BillingDay::KIND, also_running],
        |r| r.get(0),
    )?;
    if !pending {
        crate::jobs::enqueue_at(tx, &BillingDay, run_at, now)?;
    }
    Ok(())
}

/// The scheduler's hourly check: a run now, unless one is waiting or running (the first
/// start, or after a run that died for good).
pub fn ensure_scheduled(tx: &Transaction<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    schedule(tx, now, now, true)
}

pub async fn run_day(st: &crate::state::AppState) -> anyhow::Result<()> {
    let now = st.clock.now();
    let tenants: Vec<TenantId> = st
        .db
        .read(|c| {
            Ok(
                c.prepare("SELECT tenant_id FROM subscriptions WHERE status <> 'canceled'")?
                    .query_map([], |r| r.get(0))?
                    .collect::<Result<_, _>>()?,
            )
        })
        .await?;
    let mut moved = 0;
    for tenant in tenants {
        let (cfg, origin) = (st.cfg.clone(), st.public_url().to_owned());
        let changed = st
            .db
            .write(move |tx| {
                let actor = Actor::system(tenant, "billing_day");
                let ctx = Ctx {
                    catalog: &cfg.plans,
                    view: super::pix_view(&cfg, &origin),
                    actor: &actor,
                    now,
                };
                advance(tx, &ctx, tenant, cfg.billing.grace_days)
            })
            .await?;
        moved += usize::from(changed);
    }
    st.db
        .write(move |tx| schedule(tx, now + Duration::days(1), now, false))
        .await?;
    tracing::info!(moved, "billing day ran");
    Ok(())
}

/// `setup --demo`: the organization is on the default plan, monthly and active, two periods
/// paid (its first invoice after the trial, then a renewal) and the next renewal open.
pub fn seed_demo(
    tx: &Transaction<'_>,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let catalog = Catalog::default();
    let plan = plan_of(&catalog, None)?;
    let cycle = BillingCycle::Monthly;
    // The current period began 25 days ago, so its renewal is within the notice window.
    let start = now - Duration::days(25);
    let back = |t: DateTime<Utc>| {
        t.checked_sub_months(Months::new(1))
            .unwrap_or(t - Duration::days(30))
    };
    let (first, end) = (back(start), period_end(start, cycle));
    for (from, reason, paid) in [
        (first, InvoiceReason::Create, true),
        (start, InvoiceReason::Cycle, true),
        (end, InvoiceReason::Cycle, false),
    ] {
        let inv = invoices::issue(
            tx,
            &NewInvoice {
                tenant,
                reason,
                plan,
                cycle,
                amount_cents: price(plan, cycle),
                period_start: from,
                period_end: period_end(from, cycle),
                due_at: from,
            },
            from - Duration::days(RENEWAL_NOTICE_DAYS),
        )?;
        if paid {
            invoices::mark_paid(
                tx,
                inv.id,
                from - Duration::days(2),
                inv.amount_cents,
                "pix_webhook",
            )?;
        }
    }
    let mut s = load(tx, tenant)?.ok_or_else(|| AppError::not_found("subscription"))?;
    s.plan_code = Some(plan.code.clone());
    s.cycle = cycle;
    s.status = SubscriptionStatus::Active;
    s.trial_ends_at = Some(time::format(first));
    s.period_start = start;
    s.period_end = end;
    store(tx, &s, now)
}
