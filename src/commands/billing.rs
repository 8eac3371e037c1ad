//! `merchant-admin billing mark-paid INVOICE_NUMBER`: for operators who reconcile Pix
//! payments by hand. The same settlement as the payment provider's webhook, once per
//! invoice; a running server sees the change at once and delivers the events.

use anyhow::{Context, bail};

use crate::audit::Actor;
use crate::billing::invoices::{self, InvoiceStatus, PixView};
use crate::billing::lifecycle::Ctx;
use crate::billing::payments::{Refused, settle};
use crate::billing::plans::Catalog;
use crate::cli::{BillingCommand, MarkPaidArgs};
use crate::clock::{Clock, SystemClock};
use crate::db::{self, Db};

pub fn billing(cmd: &BillingCommand) -> anyhow::Result<()> {
    match cmd {
        BillingCommand::MarkPaid(a) => mark_paid(a),
        BillingCommand::Unapplied(a) => unapplied(a),
    }
}

fn open_db(data_dir: &std::path::Path) -> anyhow::Result<Db> {
    let path = db::db_path(data_dir);
    if !path.exists() {
        bail!("no database at {}", path.display());
    }
    Db::open(&path).with_context(|| format!("opening {}", path.display()))
}

fn unapplied(a: &crate::cli::DataDirArgs) -> anyhow::Result<()> {
    let db = open_db(&a.data_dir)?;
    let rows = db
        .read_blocking(crate::billing::payments::unapplied)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for r in rows {
        println!("{}", serde_json::to_string(&r)?);
    }
    Ok(())
}

fn mark_paid(a: &MarkPaidArgs) -> anyhow::Result<()> {
    let catalog = a
        .plans_file
        .as_deref()
        .map(Catalog::load)
        .transpose()?
        .unwrap_or_default();
    let db = open_db(&a.data.data_dir)?;
    let number = a.invoice_number.trim().to_uppercase();
    let n = number.clone();
    let now = SystemClock.now();
    let (was_paid, result) = db
        .write_blocking(move |tx| {
            let inv = invoices::by_number(tx, &n)?;
            let was_paid = inv
                .as_ref()
                .is_some_and(|i| i.status == InvoiceStatus::Paid);
            let tenant = inv
                .as_ref()
                .map_or_else(crate::ids::TenantId::new, |i| i.tenant_id);
            let actor = Actor::system(tenant, "billing_mark_paid");
            let ctx = Ctx {
                catalog: &catalog,
                view: PixView {
                    merchant: None,
                    origin: "",
                    grace_days: crate::config::defaults::BILLING_GRACE_DAYS,
                },
                actor: &actor,
                now,
            };
            Ok((was_paid, settle(tx, &ctx, inv, None, now, "manual")?))
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    match result {
        Ok(inv) if was_paid => println!(
            "{number}: already paid at {}; nothing changed",
            inv.paid_at.unwrap_or_default()
        ),
        Ok(inv) => println!(
            "{number}: paid ({} cents, organization {})",
            inv.amount_cents, inv.tenant_id
        ),
        Err(Refused::NotFound) => bail!("no invoice numbered {number}"),
        Err(Refused::Void) => bail!("{number} was voided; nothing changed"),
        Err(Refused::Short { owed }) => bail!("{number} asks {owed} cents; nothing changed"),
    }
    Ok(())
}
