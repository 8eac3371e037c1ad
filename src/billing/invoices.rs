//! Invoices (spec 2.12, 4.4): one plan billed for one period, paid by Pix. An open
//! invoice carries its BR Code (copy and paste) and a link to its QR code; a paid or void
//! one never changes again.

use crate::db::Tx;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;
use utoipa::ToSchema;

use super::plans::Plan;
use super::subscriptions::BillingCycle;
use crate::error::{AppError, ErrorBody};
use crate::http::auth::Principal;
use crate::http::extract::{Json, Path};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{InvoiceId, TenantId};
use crate::state::AppState;
use crate::text_enum;
use crate::time;

text_enum! {
    /// `open` until paid (`paid`) or withdrawn (`void`: the price changed, or the
    /// subscription was canceled before it was paid).
    pub enum InvoiceStatus {
        Open = "open",
        Paid = "paid",
        Void = "void",
    }
}

text_enum! {
    /// Why it was issued (Stripe's `billing_reason`).
    pub enum InvoiceReason {
        /// The first period after the trial.
        Create = "subscription_create",
        /// A renewal.
        Cycle = "subscription_cycle",
        /// An upgrade's prorated difference for the rest of the period.
        Update = "subscription_update",
        /// Reactivating a canceled subscription.
        Resume = "subscription_resume",
    }
}

/// An invoice as stored.
#[derive(Debug, Clone)]
pub struct Invoice {
    pub id: InvoiceId,
    pub tenant_id: TenantId,
    pub number: String,
    pub status: InvoiceStatus,
    pub reason: InvoiceReason,
    pub plan_code: String,
    pub billing_cycle: BillingCycle,
    pub amount_cents: i64,
    pub currency: String,
    pub period_start: String,
    pub period_end: String,
    pub due_at: String,
    pub txid: String,
    pub paid_at: Option<String>,
    pub voided_at: Option<String>,
    pub created_at: String,
}

const COLUMNS: &str =
    "id, tenant_id, number, status, reason, plan_code, billing_cycle, amount_cents,
    currency, period_start, period_end, due_at, txid, paid_at, voided_at, created_at";

fn row(r: &Row<'_>) -> rusqlite::Result<Invoice> {
    Ok(Invoice {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        number: r.get(2)?,
        status: r.get(3)?,
        reason: r.get(4)?,
        plan_code: r.get(5)?,
        billing_cycle: r.get(6)?,
        amount_cents: r.get(7)?,
        currency: r.get(8)?,
        period_start: r.get(9)?,
        period_end: r.get(10)?,
        due_at: r.get(11)?,
        txid: r.get(12)?,
        paid_at: r.get(13)?,
        voided_at: r.get(14)?,
        created_at: r.get(15)?,
    })
}

/// How to pay an open invoice by Pix.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PixOut {
    /// The BR Code to paste into a bank app ("Pix copia e cola").
    pub copy_paste: String,
    /// The same code as a QR PNG (needs `billing.read`, like the invoice).
    pub qr_png_url: String,
    /// The latest the invoice can be paid: when an unpaid subscription would be canceled and
    /// the invoice voided (due date, grace days, then 30 days suspended).
    pub expires_at: String,
}

/// An invoice as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InvoiceOut {
    pub id: InvoiceId,
    pub tenant_id: TenantId,
    /// `INV-000001`: sequential over the server, what `billing mark-paid` takes.
    pub number: String,
    pub status: InvoiceStatus,
    pub billing_reason: InvoiceReason,
    pub plan_code: String,
    pub billing_cycle: BillingCycle,
    pub amount_cents: i64,
    /// Always `BRL`.
    pub currency: String,
    pub period_start: String,
    pub period_end: String,
    pub due_at: String,
    pub paid_at: Option<String>,
    /// The Pix transaction id the payment names (field 62-05 of the BR Code).
    pub txid: String,
    /// Open invoices only, and only when the operator set a Pix key.
    pub pix: Option<PixOut>,
    pub created_at: String,
}

/// What showing an invoice's Pix data needs: the operator's Pix identity, where the API
/// is reached, and the grace days (for `expires_at`).
#[derive(Debug, Clone, Copy)]
pub struct PixView<'a> {
    pub merchant: Option<&'a super::pix::Merchant>,
    pub origin: &'a str,
    pub grace_days: u32,
}

/// How long a suspended subscription waits before it is canceled.
pub const SUSPENDED_DAYS: i64 = 30;

impl Invoice {
    pub fn out(self, view: &PixView<'_>) -> InvoiceOut {
        let pix = match (self.status, view.merchant) {
            (InvoiceStatus::Open, Some(m)) => super::pix::br_code(m, self.amount_cents, &self.txid)
                .ok()
                .map(|code| PixOut {
                    copy_paste: code,
                    qr_png_url: format!(
                        "{}/v1/tenants/{}/invoices/{}/pix.png",
                        view.origin, self.tenant_id, self.id
                    ),
                    expires_at: time::parse(&self.due_at).map_or_else(
                        || self.due_at.clone(),
                        |due| {
                            time::format(
                                due + chrono::Duration::days(
                                    i64::from(view.grace_days) + SUSPENDED_DAYS,
                                ),
                            )
                        },
                    ),
                }),
            _ => None,
        };
        InvoiceOut {
            id: self.id,
            tenant_id: self.tenant_id,
            number: self.number,
            status: self.status,
            billing_reason: self.reason,
            plan_code: self.plan_code,
            billing_cycle: self.billing_cycle,
            amount_cents: self.amount_cents,
            currency: self.currency,
            period_start: self.period_start,
            period_end: self.period_end,
            due_at: self.due_at,
            paid_at: self.paid_at,
            txid: self.txid,
            pix,
            created_at: self.created_at,
        }
    }
}

/// What a new invoice bills.
#[derive(Debug, Clone)]
pub struct NewInvoice<'a> {
    pub tenant: TenantId,
    pub reason: InvoiceReason,
    pub plan: &'a Plan,
    pub cycle: BillingCycle,
    pub amount_cents: i64,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    pub due_at: DateTime<Utc>,
}

/// Issues an open invoice, numbered next in the server's sequence.
pub fn issue(tx: &Tx<'_>, n: &NewInvoice<'_>, now: DateTime<Utc>) -> Result<Invoice, AppError> {
    // One writer at a time (SQLite), so MAX + 1 cannot be taken twice.
    let seq: i64 = tx.query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM invoices", [], |r| {
        r.get(0)
    })?;
    let number = format!("INV-{seq:06}");
    // The txid names the invoice in the payment: letters and digits only, at most 25.
    let seq_part = format!("MA{seq:06}");
    let random = uuid::Uuid::new_v4().simple().to_string().to_uppercase();
    let txid = format!(
        "{seq_part}{}",
        &random[..25usize.saturating_sub(seq_part.len()).max(8)]
    );
    let id = InvoiceId::new();
    crate::db::exec(
        tx,
        "INSERT INTO invoices (id, tenant_id, seq, number, status, reason, plan_code,
             billing_cycle, amount_cents, currency, period_start, period_end, due_at, txid,
             created_at)
         VALUES (?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7, ?8, 'BRL', ?9, ?10, ?11, ?12, ?13)",
        params![
            id,
            n.tenant,
            seq,
            number,
            n.reason,
            n.plan.code,
            n.cycle,
            n.amount_cents,
            time::format(n.period_start),
            time::format(n.period_end),
            time::format(n.due_at),
            txid,
            time::format(now)
        ],
    )?;
    get(tx, id)?.ok_or_else(|| AppError::internal(anyhow::anyhow!("the new invoice is gone")))
}

pub fn get(c: &Connection, id: InvoiceId) -> Result<Option<Invoice>, AppError> {
    Ok(
        c.prepare_cached(&format!("SELECT {COLUMNS} FROM invoices WHERE id = ?1"))?
            .query_row([id], row)
            .optional()?,
    )
}

pub fn by_txid(c: &Connection, txid: &str) -> Result<Option<Invoice>, AppError> {
    Ok(
        c.prepare_cached(&format!("SELECT {COLUMNS} FROM invoices WHERE txid = ?1"))?
            .query_row([txid], row)
            .optional()?,
    )
}

pub fn by_number(c: &Connection, number: &str) -> Result<Option<Invoice>, AppError> {
    Ok(
        c.prepare_cached(&format!("SELECT {COLUMNS} FROM invoices WHERE number = ?1"))?
            .query_row([number], row)
            .optional()?,
    )
}

/// The organization's open invoices, the one due first first.
pub fn open(c: &Connection, tenant: TenantId) -> Result<Vec<Invoice>, AppError> {
    Ok(c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM invoices WHERE tenant_id = ?1 AND status = 'open'
             ORDER BY due_at, seq"
    ))?
    .query_map([tenant], row)?
    .collect::<Result<_, _>>()?)
}

/// The invoice (open or paid) that bills the period starting at `start`, renewals and
/// first invoices only (a proration bills part of a period).
pub fn for_period(
    c: &Connection,
    tenant: TenantId,
    start: DateTime<Utc>,
) -> Result<Option<Invoice>, AppError> {
    Ok(c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM invoices WHERE tenant_id = ?1 AND period_start = ?2
               AND status IN ('open', 'paid') AND reason <> 'subscription_update'
             ORDER BY seq DESC LIMIT 1"
    ))?
    .query_row(params![tenant, time::format(start)], row)
    .optional()?)
}

/// Withdraws an open invoice; false when it was not open.
pub fn void(tx: &Tx<'_>, id: InvoiceId, now: DateTime<Utc>) -> Result<bool, AppError> {
    Ok(crate::db::exec(
        tx,
        "UPDATE invoices SET status = 'void', voided_at = ?2 WHERE id = ?1 AND status = 'open'",
        params![id, time::format(now)],
    )? == 1)
}

/// Records an open invoice as paid; false when it was not open (paid already, or void).
pub fn mark_paid(
    tx: &Tx<'_>,
    id: InvoiceId,
    paid_at: DateTime<Utc>,
    amount_cents: i64,
    via: &str,
) -> Result<bool, AppError> {
    Ok(crate::db::exec(
        tx,
        "UPDATE invoices SET status = 'paid', paid_at = ?2, paid_amount_cents = ?3, paid_via = ?4
         WHERE id = ?1 AND status = 'open'",
        params![id, time::format(paid_at), amount_cents, via],
    )? == 1)
}

fn list(
    c: &Connection,
    tenant: TenantId,
    after: Option<&(String, String)>,
    limit: i64,
    offset: i64,
) -> Result<Vec<Invoice>, AppError> {
    let (at, id) = after.map_or(("9999".into(), String::new()), |(a, i)| {
        (a.clone(), i.clone())
    });
    Ok(c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM invoices WHERE tenant_id = ?1 AND (created_at, id) < (?2, ?3)
             ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?4"
    ))?
    .query_map(params![tenant, at, id, offset], row)?
    .collect::<Result<_, _>>()?)
}

fn count(c: &Connection, tenant: TenantId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM invoices WHERE tenant_id = ?1",
        [tenant],
        |r| r.get(0),
    )?)
}

/// Checks that the caller may do `needed` in the organization: 403 for a store API token
/// (spec 5 rule 2) or a member without it, 404 for an outsider.
pub fn require(
    c: &Connection,
    p: &Principal,
    tenant: TenantId,
    needed: Permission,
) -> Result<(), AppError> {
    if p.is_store_token() {
        return Err(crate::http::auth::missing_permission(needed));
    }
    let Some(perms) = crate::tenants::store::tenant_permissions(c, tenant, p.user_id)? else {
        return Err(AppError::not_found("organization"));
    };
    if perms.contains(needed) {
        Ok(())
    } else {
        Err(crate::http::auth::missing_permission(needed))
    }
}

/// The organization's invoices, newest first. Needs `billing.read`.
#[utoipa::path(get, path = "/tenants/{tenant_id}/invoices", tag = "billing",
    security(("bearer" = [])), params(("tenant_id" = TenantId, Path), PageQuery),
    responses((status = 200, body = Page<InvoiceOut>), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn list_invoices(
    State(st): State<AppState>,
    p: Principal,
    Path(id): Path<TenantId>,
    Paged(page, _): Paged,
) -> Result<Json<Page<InvoiceOut>>, AppError> {
    st.db
        .read(move |c| require(c, &p, id, Permission::BillingRead))
        .await?;
    let cfg = st.cfg.clone();
    let origin = st.public_url().to_owned();
    let page = page
        .list(
            &st.db,
            &format!("invoices:{id}"),
            move |c, after, limit, offset| list(c, id, after, limit, offset),
            move |c| count(c, id),
            |i| (i.created_at.clone(), i.id.to_string()),
            move |i| i.out(&super::pix_view(&cfg, &origin)),
        )
        .await?;
    Ok(Json(page))
}

/// An open invoice's Pix code as a QR PNG. Needs `billing.read`; 404 once it is paid or void.
#[utoipa::path(get, path = "/tenants/{tenant_id}/invoices/{invoice_id}/pix.png", tag = "billing",
    security(("bearer" = [])),
    params(("tenant_id" = TenantId, Path), ("invoice_id" = InvoiceId, Path)),
    responses((status = 200, content_type = "image/png", description = "The QR code"),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn invoice_qr(
    State(st): State<AppState>,
    p: Principal,
    Path((tenant, id)): Path<(TenantId, InvoiceId)>,
) -> Result<Response, AppError> {
    let merchant = st.cfg.billing.pix.clone();
    let png = st
        .db
        .read(move |c| {
            require(c, &p, tenant, Permission::BillingRead)?;
            let inv = get(c, id)?
                .filter(|i| i.tenant_id == tenant && i.status == InvoiceStatus::Open)
                .ok_or_else(|| AppError::not_found("open invoice"))?;
            let m = merchant.ok_or_else(|| AppError::not_found("open invoice"))?;
            let code =
                super::pix::br_code(&m, inv.amount_cents, &inv.txid).map_err(AppError::internal)?;
            Ok(super::pix::qr_png(&code))
        })
        .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "private, no-store"),
        ],
        png,
    )
        .into_response())
}
