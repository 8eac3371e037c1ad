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

use crate::db::Tx;
use chrono::{DateTime, Datelike, Duration, Months, Utc};
use rusqlite::{Connection, OptionalExtension, params};
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
    /// Where periods are counted from (Stripe's billing cycle anchor); None until the first
    /// paid period (the trial's end is used).
    pub anchor: Option<DateTime<Utc>>,
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
                    pending_billing_cycle, past_due_since, suspended_at, canceled_at,
                    billing_anchor
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
            anchor: at(r.get::<_, Option<String>>(12)?.as_deref()),
        })
    })
    .optional()?)
}

fn store(tx: &Tx<'_>, s: &Sub, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE subscriptions SET plan_code = ?2, billing_cycle = ?3, status = ?4,
             trial_ends_at = ?5, current_period_start = ?6, current_period_end = ?7,
             cancel_at_period_end = ?8, pending_plan_code = ?9, pending_billing_cycle = ?10,
             past_due_since = ?11, suspended_at = ?12, canceled_at = ?13, updated_at = ?14,
             billing_anchor = ?15
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
            time::format(now),
            fmt(s.anchor)
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
pub fn save(tx: &Tx<'_>, ctx: &Ctx<'_>, before: &Sub, after: &Sub) -> Result<bool, AppError> {
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
    if after.status == SubscriptionStatus::PastDue && before.status != SubscriptionStatus::PastDue {
        // The organization's members who see billing hear of it in each of its stores.
        let id = after.tenant.to_string();
        let n = crate::notifications::produce::Notice {
            kind: crate::notifications::model::Kind::SubscriptionPastDue,
            title: "Subscription past due",
            body: "An invoice of your subscription is past due. Pay it to keep the stores \
                   running.",
            subject_type: "subscription",
            subject_id: &id,
        };
        crate::notifications::produce::notify_tenant(tx, after.tenant, &n, ctx.now)?;
    }
    Ok(true)
}

pub fn price(plan: &Plan, cycle: BillingCycle) -> i64 {
    match cycle {
        BillingCycle::Monthly => plan.monthly_price_cents,
        BillingCycle::Annual => plan.annual_price_cents,
    }
}

/// The end of the period of `cycle` that starts at `start`: the first whole number of
/// cycles after `anchor` (Stripe's billing cycle anchor) past `start`, so a subscription
/// anchored on the 31st ends its periods on the last day of short months and on the 31st
/// again after them.
pub fn period_end(
    start: DateTime<Utc>,
    cycle: BillingCycle,
    anchor: DateTime<Utc>,
) -> DateTime<Utc> {
    let step: i32 = match cycle {
        BillingCycle::Monthly => 1,
        BillingCycle::Annual => 12,
    };
    let month = |t: DateTime<Utc>| t.year() * 12 + i32::try_from(t.month0()).unwrap_or(0);
    let mut k = ((month(start) - month(anchor)) / step).max(0);
    for _ in 0..4 {
        let end = u32::try_from(k * step)
            .ok()
            .and_then(|m| anchor.checked_add_months(Months::new(m)));
        match end {
            Some(end) if end > start => return end,
            Some(_) => k += 1,
            None => break,
        }
    }
    start + Duration::days(30 * i64::from(step))
}

/// Where the subscription's periods are counted from: set when it was first paid for, or
/// reactivated; until then the trial's end.
fn anchor(s: &Sub) -> DateTime<Utc> {
    s.anchor
        .or_else(|| s.trial_ends_at.as_deref().and_then(time::parse))
        .unwrap_or(s.period_start)
}

/// The next period, at `cycle`: a new cycle starts a new anchor.
fn next_period(s: &Sub, cycle: BillingCycle) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = s.period_end;
    let anchor = if cycle == s.cycle { anchor(s) } else { start };
    (start, period_end(start, cycle, anchor))
}

/// The plan and cycle the next period is billed at: a pending change, else today's.
pub fn next_terms<'c>(catalog: &'c Catalog, s: &Sub) -> Result<(&'c Plan, BillingCycle), AppError> {
    let code = s.pending_plan_code.as_deref().or(s.plan_code.as_deref());
    Ok((
        catalog.plan_or_default(code)?,
        s.pending_cycle.unwrap_or(s.cycle),
    ))
}

/// Issues an invoice, audited (`invoice.issued`) in the caller's transaction.
pub fn issue(tx: &Tx<'_>, ctx: &Ctx<'_>, n: &NewInvoice<'_>) -> Result<Invoice, AppError> {
    let inv = invoices::issue(tx, n, ctx.now)?;
    audit::record(
        tx,
        ctx.actor,
        "invoice.issued",
        "invoice",
        &inv.id.to_string(),
        ctx.now,
    )?;
    Ok(inv)
}

/// Withdraws an open invoice, audited (`invoice.voided`).
pub fn void(tx: &Tx<'_>, ctx: &Ctx<'_>, inv: &Invoice) -> Result<(), AppError> {
    if invoices::void(tx, inv.id, ctx.now)? {
        audit::record(
            tx,
            ctx.actor,
            "invoice.voided",
            "invoice",
            &inv.id.to_string(),
            ctx.now,
        )?;
    }
    Ok(())
}

/// Issues the invoice of the period after the current one (a first invoice after a trial, or
/// a renewal), due when the current period ends; the one already issued if there is one.
pub fn issue_next(tx: &Tx<'_>, ctx: &Ctx<'_>, s: &Sub) -> Result<Invoice, AppError> {
    if let Some(i) = invoices::for_period(tx, s.tenant, s.period_end)? {
        return Ok(i);
    }
    let (plan, cycle) = next_terms(ctx.catalog, s)?;
    let (start, end) = next_period(s, cycle);
    issue(
        tx,
        ctx,
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
            period_start: start,
            period_end: end,
            due_at: start,
        },
    )
}

/// Issues the invoice that reactivates a canceled subscription (its period starts when it
/// is paid), or returns the open one.
pub fn issue_resume(tx: &Tx<'_>, ctx: &Ctx<'_>, s: &Sub) -> Result<Invoice, AppError> {
    if let Some(i) = invoices::open(tx, s.tenant)?
        .into_iter()
        .find(|i| i.reason == InvoiceReason::Resume)
    {
        return Ok(i);
    }
    let plan = ctx.catalog.plan_or_default(s.plan_code.as_deref())?;
    issue(
        tx,
        ctx,
        &NewInvoice {
            tenant: s.tenant,
            reason: InvoiceReason::Resume,
            plan,
            cycle: s.cycle,
            amount_cents: price(plan, s.cycle),
            period_start: ctx.now,
            period_end: period_end(ctx.now, s.cycle, ctx.now),
            due_at: ctx.now,
        },
    )
}

/// Re-issues the open invoices that bill whole periods (not a proration) at the terms they
/// should have now: the old one is voided, the new one keeps its period start and due date.
pub fn reprice_open(tx: &Tx<'_>, ctx: &Ctx<'_>, s: &Sub) -> Result<(), AppError> {
    for inv in invoices::open(tx, s.tenant)? {
        if inv.reason == InvoiceReason::Update {
            continue;
        }
        let start = time::parse(&inv.period_start).unwrap_or(ctx.now);
        let next = start >= s.period_end && s.status != SubscriptionStatus::Canceled;
        let (plan, cycle) = if next {
            next_terms(ctx.catalog, s)?
        } else {
            (
                ctx.catalog.plan_or_default(s.plan_code.as_deref())?,
                s.cycle,
            )
        };
        let amount = price(plan, cycle);
        if inv.plan_code == plan.code && inv.billing_cycle == cycle && inv.amount_cents == amount {
            continue;
        }
        let end = match inv.reason {
            InvoiceReason::Resume => period_end(start, cycle, start),
            _ if next => next_period(s, cycle).1,
            _ => period_end(start, cycle, anchor(s)),
        };
        void(tx, ctx, &inv)?;
        issue(
            tx,
            ctx,
            &NewInvoice {
                tenant: s.tenant,
                reason: inv.reason,
                plan,
                cycle,
                amount_cents: amount,
                period_start: start,
                period_end: end,
                due_at: time::parse(&inv.due_at).unwrap_or(ctx.now),
            },
        )?;
    }
    Ok(())
}

/// An upgrade from `from` to `to`, which takes effect now: what was already paid at the old
/// price is billed the difference, prorated for what is left of the current period (not
/// for a trial, which is free) and in full for a next period paid in advance. Invoices not
/// yet paid are re-issued at the new price by [`reprice_open`] instead. Each upgrade's
/// difference stays owed until paid, so successive upgrades add up to the dearest price.
pub fn prorate(
    tx: &Tx<'_>,
    ctx: &Ctx<'_>,
    s: &Sub,
    from: &Plan,
    to: &Plan,
) -> Result<(), AppError> {
    let paid = |start| -> Result<Option<Invoice>, AppError> {
        Ok(invoices::for_period(tx, s.tenant, start)?.filter(|i| i.status == InvoiceStatus::Paid))
    };
    let in_trial = s
        .trial_ends_at
        .as_deref()
        .and_then(time::parse)
        .is_some_and(|t| t > ctx.now);
    let mut owed = Vec::new();
    if !in_trial && ctx.now < s.period_end && paid(s.period_start)?.is_some() {
        let whole = (s.period_end - s.period_start).num_seconds().max(1);
        let left = (s.period_end - ctx.now).num_seconds().clamp(0, whole);
        let diff = price(to, s.cycle) - price(from, s.cycle);
        // Rounded up to the cent: an invoice cannot ask for a fraction.
        let amount =
            (i128::from(diff) * i128::from(left) + i128::from(whole) - 1) / i128::from(whole);
        owed.push((
            i64::try_from(amount).unwrap_or(0),
            s.cycle,
            ctx.now,
            s.period_end,
        ));
    }
    if let Some(ahead) = paid(s.period_end)? {
        let (start, end) = (
            time::parse(&ahead.period_start).unwrap_or(s.period_end),
            time::parse(&ahead.period_end).unwrap_or(s.period_end),
        );
        let cycle = ahead.billing_cycle;
        owed.push((price(to, cycle) - price(from, cycle), cycle, start, end));
    }
    for (amount, cycle, start, end) in owed {
        if amount <= 0 {
            continue;
        }
        issue(
            tx,
            ctx,
            &NewInvoice {
                tenant: s.tenant,
                reason: InvoiceReason::Update,
                plan: to,
                cycle,
                amount_cents: amount,
                period_start: start,
                period_end: end,
                due_at: ctx.now + Duration::days(PRORATION_DUE_DAYS),
            },
        )?;
    }
    Ok(())
}

fn void_all_open(tx: &Tx<'_>, ctx: &Ctx<'_>, tenant: TenantId) -> Result<(), AppError> {
    for inv in invoices::open(tx, tenant)? {
        void(tx, ctx, &inv)?;
    }
    Ok(())
}

fn cancel_now(tx: &Tx<'_>, ctx: &Ctx<'_>, s: &mut Sub) -> Result<(), AppError> {
    s.status = SubscriptionStatus::Canceled;
    s.canceled_at = Some(ctx.now);
    s.cancel_at_period_end = false;
    s.pending_plan_code = None;
    s.pending_cycle = None;
    s.past_due_since = None;
    s.suspended_at = None;
    void_all_open(tx, ctx, s.tenant)
}

/// Moves one organization's subscription as far as `ctx.now` takes it (the daily job).
/// Idempotent: run twice at the same time, the second run changes nothing.
pub fn advance(
    tx: &Tx<'_>,
    ctx: &Ctx<'_>,
    tenant: TenantId,
    grace_days: u32,
) -> Result<bool, AppError> {
    let Some(before) = load(tx, tenant)? else {
        return Ok(false);
    };
    let now = ctx.now;
    let mut s = before.clone();
    // A server that was off for months catches up one paid period at a time.
    for _ in 0..36 {
        let ended = now >= s.period_end;
        match s.status {
            SubscriptionStatus::Trialing | SubscriptionStatus::Active if ended => {
                let paid = invoices::for_period(tx, tenant, s.period_end)?
                    .filter(|i| i.status == InvoiceStatus::Paid);
                if s.cancel_at_period_end && paid.is_none() {
                    cancel_now(tx, ctx, &mut s)?;
                    break;
                }
                if let Some(p) = paid {
                    // The next period is what was paid for: its cycle and its end. A pending
                    // downgrade applies (it costs less than what was paid).
                    let start = s.period_end;
                    if p.billing_cycle != s.cycle {
                        s.anchor = Some(start);
                    } else if s.anchor.is_none() {
                        s.anchor = Some(anchor(&s));
                    }
                    if let Some(code) = s.pending_plan_code.take() {
                        s.plan_code = Some(code);
                    }
                    s.cycle = p.billing_cycle;
                    if s.pending_cycle == Some(s.cycle) {
                        s.pending_cycle = None;
                    }
                    s.period_start = start;
                    s.period_end = time::parse(&p.period_end).unwrap_or(start);
                    s.status = SubscriptionStatus::Active;
                    continue;
                }
                let inv = issue_next(tx, ctx, &s)?;
                let (plan, cycle) = next_terms(ctx.catalog, &s)?;
                if cycle != s.cycle {
                    s.anchor = Some(s.period_end);
                } else if s.anchor.is_none() {
                    s.anchor = Some(anchor(&s));
                }
                s.plan_code = Some(plan.code.clone());
                s.cycle = cycle;
                s.pending_plan_code = None;
                s.pending_cycle = None;
                s.period_start = s.period_end;
                s.period_end = time::parse(&inv.period_end).unwrap_or(s.period_start);
                s.status = SubscriptionStatus::PastDue;
                s.past_due_since = Some(now);
                break;
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
                cancel_now(tx, ctx, &mut s)?;
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
                    cancel_now(tx, ctx, &mut s)?;
                }
                break;
            }
            SubscriptionStatus::Canceled => break,
        }
    }
    save(tx, ctx, &before, &s)
}

/// Applies a confirmed payment of `inv`: the invoice is paid, and the subscription moves
/// (trialing, past_due or suspended → active; canceled → active for a period from now when
/// it was a `subscription_resume` invoice). Audited, with `invoice.paid` and, when the
/// subscription changed, `subscription.updated`. False when the invoice was not open.
pub fn apply_payment(
    tx: &Tx<'_>,
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
            // The period starts when it is paid, however long ago the invoice was issued.
            s.status = SubscriptionStatus::Active;
            s.plan_code = Some(inv.plan_code.clone());
            s.cycle = inv.billing_cycle;
            s.anchor = Some(ctx.now);
            s.period_start = ctx.now;
            s.period_end = period_end(ctx.now, s.cycle, ctx.now);
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
    tx: &Tx<'_>,
    run_at: DateTime<Utc>,
    now: DateTime<Utc>,
    also_running: bool,
) -> Result<(), AppError> {
    crate::jobs::enqueue_once(tx, &BillingDay, run_at, now, also_running).map(|_| ())
}

/// The scheduler's hourly check: a run now, unless one is waiting or running (the first
/// start, or after a run that died for good).
pub fn ensure_scheduled(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
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
    let (mut moved, mut failed) = (0, 0);
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
            .await;
        // One organization that cannot move must not hold back the others.
        match changed {
            Ok(changed) => moved += usize::from(changed),
            Err(e) => {
                failed += 1;
                tracing::error!(tenant_id = %tenant, error = ?e, "could not move a subscription");
            }
        }
    }
    st.db
        .write(move |tx| schedule(tx, now + Duration::days(1), now, false))
        .await?;
    tracing::info!(moved, failed, "billing day ran");
    if failed > 0 {
        anyhow::bail!("{failed} subscriptions could not be moved");
    }
    Ok(())
}

/// `setup --demo`: the organization is on the default plan, monthly and active, two periods
/// paid (its first invoice after the trial, then a renewal) and the next renewal open.
pub fn seed_demo(tx: &Tx<'_>, tenant: TenantId, now: DateTime<Utc>) -> Result<(), AppError> {
    let catalog = Catalog::default();
    let plan = catalog.plan_or_default(None)?;
    let cycle = BillingCycle::Monthly;
    // The current period began 25 days ago, so its renewal is within the notice window.
    let start = now - Duration::days(25);
    let back = |t: DateTime<Utc>| {
        t.checked_sub_months(Months::new(1))
            .unwrap_or(t - Duration::days(30))
    };
    let first = back(start);
    let end = period_end(start, cycle, first);
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
                period_end: period_end(from, cycle, first),
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
    s.anchor = Some(first);
    s.period_start = start;
    s.period_end = end;
    store(tx, &s, now)
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::{BillingCycle, period_end};

    #[test]
    fn periods_keep_their_anchor_day_through_short_months() {
        let anchor = Utc.with_ymd_and_hms(2027, 1, 31, 12, 0, 0).unwrap();
        let mut t = anchor;
        let mut ends = Vec::new();
        for _ in 0..4 {
            t = period_end(t, BillingCycle::Monthly, anchor);
            ends.push(t.format("%m-%d").to_string());
        }
        assert_eq!(ends, ["02-28", "03-31", "04-30", "05-31"]);
        let leap = Utc.with_ymd_and_hms(2028, 2, 29, 0, 0, 0).unwrap();
        let end = period_end(leap, BillingCycle::Annual, leap);
        assert_eq!(end.format("%Y-%m-%d").to_string(), "2029-02-28");
        assert_eq!(
            period_end(end, BillingCycle::Annual, leap)
                .format("%Y-%m-%d")
                .to_string(),
            "2030-02-28"
        );
        // A new cycle from mid-period counts from its own start.
        let start = Utc.with_ymd_and_hms(2027, 6, 15, 0, 0, 0).unwrap();
        assert_eq!(
            period_end(start, BillingCycle::Annual, start)
                .format("%Y-%m-%d")
                .to_string(),
            "2028-06-15"
        );
    }
}
