//! Confirmed payments: the payment provider's signed webhook, and the operator's
//! `billing mark-paid`. Both end in `lifecycle::apply_payment`, once per invoice.

use crate::db::Tx;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::ToSchema;

use super::invoices::{self, InvoiceOut, InvoiceStatus};
use super::lifecycle::{self, Ctx};
use crate::audit::Actor;
use crate::error::{AppError, ErrorBody, ErrorCode};
use crate::http::extract::{Json, parse_json};
use crate::state::AppState;
use crate::time;

const SIGNATURE_HEADER: &str = "x-signature";

/// What the payment provider reports of a Pix payment.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PixPayment {
    /// The invoice's `txid`, as the BR Code carried it.
    pub txid: String,
    pub amount_cents: i64,
    /// RFC 3339.
    pub paid_at: String,
}

/// Whether `X-Signature` is the hex HMAC-SHA256 of `body` keyed with `secret` (a `sha256=`
/// prefix is allowed).
fn signed(headers: &HeaderMap, body: &[u8], secret: &[u8]) -> bool {
    headers
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .is_some_and(|v| {
            let tag = v.strip_prefix("sha256=").unwrap_or(v);
            crate::secrets::hmac_sha256_hex_matches(secret, body, tag)
        })
}

/// Why a payment could not be applied.
#[derive(Debug)]
pub enum Refused {
    NotFound,
    Void,
    Short { owed: i64 },
}

impl Refused {
    fn reason(&self) -> &'static str {
        match self {
            Self::NotFound => "unknown_txid",
            Self::Void => "invoice_void",
            Self::Short { .. } => "amount_short",
        }
    }
}

/// Keeps a signed payment that could not be applied, once, for the operator: the money has
/// arrived (Pix cannot be recalled) even though no open invoice takes it.
fn keep_unapplied(
    tx: &Tx<'_>,
    p: &PixPayment,
    paid_at: DateTime<Utc>,
    invoice: Option<&str>,
    why: &Refused,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT OR IGNORE INTO pix_unapplied (txid, invoice_number, reason, amount_cents,
             paid_at, received_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        rusqlite::params![
            p.txid.trim(),
            invoice,
            why.reason(),
            p.amount_cents,
            time::format(paid_at),
            time::format(now)
        ],
    )?;
    tracing::warn!(txid = %p.txid.trim(), amount_cents = p.amount_cents, reason = why.reason(),
        "a Pix payment could not be applied: reconcile it (merchant-admin billing unapplied)");
    Ok(())
}

/// A payment the webhook kept unapplied, as `billing unapplied` lists it.
#[derive(Debug, serde::Serialize)]
pub struct Unapplied {
    pub txid: String,
    pub invoice_number: Option<String>,
    pub reason: String,
    pub amount_cents: i64,
    pub paid_at: String,
    pub received_at: String,
}

/// Every payment kept unapplied, oldest first.
pub fn unapplied(c: &rusqlite::Connection) -> Result<Vec<Unapplied>, AppError> {
    Ok(c.prepare(
        "SELECT txid, invoice_number, reason, amount_cents, paid_at, received_at
             FROM pix_unapplied ORDER BY id",
    )?
    .query_map([], |r| {
        Ok(Unapplied {
            txid: r.get(0)?,
            invoice_number: r.get(1)?,
            reason: r.get(2)?,
            amount_cents: r.get(3)?,
            paid_at: r.get(4)?,
            received_at: r.get(5)?,
        })
    })?
    .collect::<Result<_, _>>()?)
}

impl From<Refused> for AppError {
    fn from(r: Refused) -> Self {
        match r {
            Refused::NotFound => AppError::not_found("invoice"),
            Refused::Void => AppError::conflict(
                ErrorCode::Conflict,
                "the invoice was voided; the operator reconciles this payment by hand",
            ),
            Refused::Short { owed } => AppError::new(
                ErrorCode::PaymentAmountMismatch,
                format!("the payment is less than the invoice's {owed} cents"),
            )
            .with_details(serde_json::json!({ "amount_cents": owed })),
        }
    }
}

/// Applies a payment of the invoice `inv` (found by txid or number), once: a repeat of a
/// paid invoice's payment changes nothing and answers the invoice as it is.
pub fn settle(
    tx: &Tx<'_>,
    ctx: &Ctx<'_>,
    inv: Option<invoices::Invoice>,
    amount_cents: Option<i64>,
    paid_at: DateTime<Utc>,
    via: &str,
) -> Result<Result<InvoiceOut, Refused>, AppError> {
    let Some(inv) = inv else {
        return Ok(Err(Refused::NotFound));
    };
    match inv.status {
        InvoiceStatus::Paid => return Ok(Ok(inv.out(&ctx.view))),
        InvoiceStatus::Void => return Ok(Err(Refused::Void)),
        InvoiceStatus::Open => {}
    }
    let amount = amount_cents.unwrap_or(inv.amount_cents);
    if amount < inv.amount_cents {
        return Ok(Err(Refused::Short {
            owed: inv.amount_cents,
        }));
    }
    // A payment is no older than its invoice and no newer than now.
    let issued = time::parse(&inv.created_at).unwrap_or(ctx.now);
    let paid_at = paid_at.clamp(issued.min(ctx.now), ctx.now);
    lifecycle::apply_payment(tx, ctx, &inv, paid_at, amount, via)?;
    let paid = invoices::get(tx, inv.id)?
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("the paid invoice is gone")))?;
    Ok(Ok(paid.out(&ctx.view)))
}

/// The payment provider confirms a Pix payment. Signed: `X-Signature` is the hex
/// HMAC-SHA256 of the raw body keyed with `--pix-webhook-secret` (401 otherwise, nothing
/// changed). Idempotent by `txid`: a repeated delivery answers 200 and changes nothing.
/// 404 for an unknown txid, 409 for a voided invoice, 422 `payment_amount_mismatch` for
/// less than the invoice's amount: each is kept for the operator to reconcile
/// (`merchant-admin billing unapplied`). 503 when no secret is configured.
#[utoipa::path(post, path = "/billing/pix/webhook", tag = "billing",
    params(("X-Signature" = String, Header,
            description = "hex HMAC-SHA256 of the raw body, keyed with --pix-webhook-secret")),
    request_body = PixPayment,
    responses((status = 200, body = InvoiceOut), (status = 401, body = ErrorBody, description = "`unauthorized`: the signature does not match"),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`conflict`: the invoice was voided"),
              (status = 422, body = ErrorBody), (status = 503, body = ErrorBody, description = "`service_unavailable`: no webhook secret is configured")))]
pub async fn pix_webhook(
    State(st): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<InvoiceOut>, AppError> {
    let body = body.map_err(|r| crate::http::extract::body_rejection(&r))?;
    let Some(secret) = st.cfg.billing.pix_webhook_secret.clone() else {
        return Err(AppError::unavailable(
            "Pix payments are not confirmed here: no --pix-webhook-secret is configured",
        ));
    };
    if !signed(&headers, &body, secret.as_bytes()) {
        return Err(AppError::new(
            ErrorCode::Unauthorized,
            "missing or wrong X-Signature",
        ));
    }
    let payment: PixPayment = parse_json(&body)?;
    let paid_at = time::parse(&payment.paid_at)
        .or_else(|| {
            DateTime::parse_from_rfc3339(&payment.paid_at)
                .ok()
                .map(|t| t.with_timezone(&Utc))
        })
        .ok_or_else(|| AppError::field("paid_at", "must be an RFC 3339 time"))?;
    if payment.amount_cents <= 0 {
        return Err(AppError::field("amount_cents", "must be positive"));
    }
    let (cfg, origin, clock) = (st.cfg.clone(), st.public_url().to_owned(), st.clock.clone());
    let out = st
        .db
        .write(move |tx| {
            let now = clock.now();
            let inv = invoices::by_txid(tx, payment.txid.trim())?;
            let actor = Actor::system(
                inv.as_ref()
                    .map_or_else(crate::ids::TenantId::new, |i| i.tenant_id),
                "pix_webhook",
            );
            let ctx = Ctx {
                catalog: &cfg.plans,
                view: super::pix_view(&cfg, &origin),
                actor: &actor,
                now,
            };
            let number = inv.as_ref().map(|i| i.number.clone());
            let out = settle(
                tx,
                &ctx,
                inv,
                Some(payment.amount_cents),
                paid_at,
                "pix_webhook",
            )?;
            if let Err(why) = &out {
                keep_unapplied(tx, &payment, paid_at, number.as_deref(), why, now)?;
            }
            Ok(out)
        })
        .await??;
    Ok(Json(out))
}
