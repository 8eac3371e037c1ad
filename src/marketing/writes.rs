//! Marketing's checks and writes as functions over the caller's transaction, shared by the
//! handlers (which add the permission check and the audit entry) and `setup --demo`.

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::model::{CampaignOut, CampaignStatus, SegmentFilter, SegmentOut};
use super::store::{self, CampaignFields};
use crate::error::{AppError, ErrorCode};
use crate::ids::{CampaignId, SegmentId, StoreId};

/// Most tags in one `tags_any`.
pub const MAX_FILTER_TAGS: usize = 20;
/// Longest campaign body, in characters.
pub const MAX_BODY: usize = 100_000;

pub fn segment_not_found() -> AppError {
    AppError::not_found("segment")
}

pub fn campaign_not_found() -> AppError {
    AppError::not_found("campaign")
}

/// 409 `invalid_status_transition`, naming both statuses, as orders answer it.
pub fn invalid_transition(from: CampaignStatus, to: &str) -> AppError {
    AppError::conflict(
        ErrorCode::InvalidStatusTransition,
        format!("a campaign that is {} cannot be {to}", from.as_str()),
    )
    .with_details(serde_json::json!({ "from": from, "to": to }))
}

fn at(field: &str, v: Option<&str>) -> Result<Option<String>, AppError> {
    v.map(|s| {
        crate::time::parse(s)
            .map(crate::time::format)
            .ok_or_else(|| AppError::field(field, "must be an RFC 3339 timestamp"))
    })
    .transpose()
}

/// The filter as stored: tags checked as customer tags are (and kept once each), amounts
/// 0 to 10^12 cents with min <= max, timestamps normalized (so they compare as stored
/// order times do). `prefix` names the field in errors (`filter.`).
pub fn check_filter(f: SegmentFilter, prefix: &str) -> Result<SegmentFilter, AppError> {
    let name = |s: &str| format!("{prefix}{s}");
    let tags_any = match f.tags_any {
        None => None,
        Some(tags) => {
            if tags.is_empty() || tags.len() > MAX_FILTER_TAGS {
                return Err(AppError::field(name("tags_any"), "must have 1 to 20 tags"));
            }
            let mut out: Vec<String> = Vec::with_capacity(tags.len());
            for (i, t) in tags.iter().enumerate() {
                let t = crate::customers::model::tag(t)
                    .map_err(|m| AppError::field(name(&format!("tags_any[{i}]")), m))?;
                if !out.contains(&t) {
                    out.push(t);
                }
            }
            Some(out)
        }
    };
    for (field, v) in [
        ("total_spent_min_cents", f.total_spent_min_cents),
        ("total_spent_max_cents", f.total_spent_max_cents),
    ] {
        if v.is_some_and(|v| !(0..=1_000_000_000_000).contains(&v)) {
            return Err(AppError::field(name(field), "must be 0 to 1000000000000"));
        }
    }
    if let (Some(min), Some(max)) = (f.total_spent_min_cents, f.total_spent_max_cents)
        && min > max
    {
        return Err(AppError::field(
            name("total_spent_max_cents"),
            "must not be less than total_spent_min_cents",
        ));
    }
    Ok(SegmentFilter {
        tags_any,
        total_spent_min_cents: f.total_spent_min_cents,
        total_spent_max_cents: f.total_spent_max_cents,
        last_order_before: at(&name("last_order_before"), f.last_order_before.as_deref())?,
        last_order_after: at(&name("last_order_after"), f.last_order_after.as_deref())?,
        accepts_marketing: f.accepts_marketing,
    })
}

/// Creates a segment from a checked name and filter.
pub fn create_segment(
    tx: &Tx<'_>,
    store: StoreId,
    name: &str,
    filter: &SegmentFilter,
    now: DateTime<Utc>,
) -> Result<SegmentOut, AppError> {
    let id = SegmentId::new();
    store::insert_segment(tx, store, id, name, filter, now)?;
    store::get_segment(tx, store, id)?.ok_or_else(segment_not_found)
}

fn check_segment(tx: &Tx<'_>, store: StoreId, id: SegmentId) -> Result<(), AppError> {
    if store::get_segment(tx, store, id)?.is_some() {
        Ok(())
    } else {
        Err(AppError::field(
            "segment_id",
            "is not a segment of this store",
        ))
    }
}

/// Creates a draft campaign from checked fields (all set).
pub fn create_campaign(
    tx: &Tx<'_>,
    store: StoreId,
    f: &CampaignFields,
    now: DateTime<Utc>,
) -> Result<CampaignOut, AppError> {
    if let Some(s) = f.segment_id {
        check_segment(tx, store, s)?;
    }
    let id = CampaignId::new();
    store::insert_campaign(tx, store, id, f, now)?;
    store::get_campaign(tx, store, id)?.ok_or_else(campaign_not_found)
}

/// Changes a draft (409 `invalid_status_transition` once it is not one).
pub fn update_campaign(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    f: &CampaignFields,
    now: DateTime<Utc>,
) -> Result<CampaignOut, AppError> {
    let c = store::get_campaign(tx, store, id)?.ok_or_else(campaign_not_found)?;
    if c.status != CampaignStatus::Draft {
        return Err(invalid_transition(c.status, "edited"));
    }
    if let Some(s) = f.segment_id {
        check_segment(tx, store, s)?;
    }
    store::update_campaign(tx, store, id, f, now)?;
    store::get_campaign(tx, store, id)?.ok_or_else(campaign_not_found)
}

/// Schedules a draft: at `at` in the future it becomes `scheduled` with a job for that
/// time; otherwise it starts sending now (recipients frozen, batch jobs enqueued). The
/// caller checked that e-mail can be sent at all.
pub fn schedule(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<CampaignOut, AppError> {
    let c = store::get_campaign(tx, store, id)?.ok_or_else(campaign_not_found)?;
    if c.status != CampaignStatus::Draft {
        return Err(invalid_transition(c.status, "scheduled"));
    }
    if super::sending::sender(tx, store)?.is_none() {
        return Err(super::sending::no_channel());
    }
    match at.filter(|t| *t > now) {
        Some(t) => {
            let when = crate::time::format(t);
            let (from, to) = (CampaignStatus::Draft, CampaignStatus::Scheduled);
            store::set_status(tx, store, id, from, to, Some(&when), now)?;
            let job = super::sending::CampaignFire {
                store_id: store,
                campaign_id: id,
            };
            crate::jobs::enqueue_at(tx, &job, t, now)?;
        }
        None => {
            let when = crate::time::format(now);
            let (from, to) = (CampaignStatus::Draft, CampaignStatus::Draft);
            store::set_status(tx, store, id, from, to, Some(&when), now)?;
            super::sending::start(tx, store, &c, now)?;
        }
    }
    store::get_campaign(tx, store, id)?.ok_or_else(campaign_not_found)
}

/// Cancels a draft, scheduled or sending campaign; batches not yet sent stop (their
/// recipients stay pending). A sent or cancelled one is 409.
pub fn cancel(
    tx: &Tx<'_>,
    store: StoreId,
    id: CampaignId,
    now: DateTime<Utc>,
) -> Result<CampaignOut, AppError> {
    let c = store::get_campaign(tx, store, id)?.ok_or_else(campaign_not_found)?;
    if matches!(c.status, CampaignStatus::Sent | CampaignStatus::Cancelled) {
        return Err(invalid_transition(c.status, "cancelled"));
    }
    store::set_status(
        tx,
        store,
        id,
        c.status,
        CampaignStatus::Cancelled,
        None,
        now,
    )?;
    store::get_campaign(tx, store, id)?.ok_or_else(campaign_not_found)
}

/// `setup --demo`: 2 segments and 3 campaigns, one draft, one scheduled a week out (its
/// fire job enqueued as scheduling does) and one sent 10 days ago, whose recipients and
/// stats are written through the same store functions the batch jobs use, without
/// mailing anyone.
pub fn seed_demo(tx: &Tx<'_>, store: StoreId, now: DateTime<Utc>) -> Result<(), AppError> {
    let vips = SegmentFilter {
        tags_any: Some(vec!["vip".to_owned()]),
        ..SegmentFilter::default()
    };
    let lapsed = SegmentFilter {
        last_order_before: Some(crate::time::format(now - chrono::Duration::days(30))),
        accepts_marketing: Some(true),
        ..SegmentFilter::default()
    };
    let sent_at = now - chrono::Duration::days(10);
    let vip = create_segment(
        tx,
        store,
        "Clientes VIP",
        &vips,
        now - chrono::Duration::days(20),
    )?;
    let away = create_segment(tx, store, "Sem comprar há 30 dias", &lapsed, now)?;
    let fields = |name: &str, subject: &str, body: &str, segment: SegmentId| CampaignFields {
        name: Some(name.to_owned()),
        subject: Some(subject.to_owned()),
        body_markdown: Some(body.to_owned()),
        segment_id: Some(segment),
    };
    let sent = create_campaign(
        tx,
        store,
        &fields(
            "Pré-venda VIP",
            "Sua pré-venda exclusiva começou",
            "# Pré-venda VIP\n\nOs clientes **VIP** compram a coleção nova antes de todo mundo.",
            vip.id,
        ),
        sent_at - chrono::Duration::days(1),
    )?;
    let (draft, sending) = (CampaignStatus::Draft, CampaignStatus::Sending);
    store::set_status(tx, store, sent.id, draft, sending, None, sent_at)?;
    let n = store::freeze_recipients(tx, store, sent.id, &vips, sent_at)?;
    for position in 0..n {
        store::mark_sent(tx, store, sent.id, position, sent_at)?;
    }
    store::finish_if_done(tx, store, sent.id, sent_at)?;
    let later = create_campaign(
        tx,
        store,
        &fields(
            "Volte a comprar",
            "Sentimos sua falta: 10% de desconto",
            "Faz tempo que você não passa por aqui. Use o cupom **VOLTA10** até domingo.",
            away.id,
        ),
        now,
    )?;
    let at = now + chrono::Duration::days(7);
    let when = crate::time::format(at);
    store::set_status(
        tx,
        store,
        later.id,
        draft,
        CampaignStatus::Scheduled,
        Some(&when),
        now,
    )?;
    let job = super::sending::CampaignFire {
        store_id: store,
        campaign_id: later.id,
    };
    crate::jobs::enqueue_at(tx, &job, at, now)?;
    create_campaign(
        tx,
        store,
        &fields(
            "Black Friday",
            "Black Friday: até 40% off",
            "## Black Friday\n\nDescontos em toda a loja, só nesta sexta.",
            vip.id,
        ),
        now,
    )?;
    Ok(())
}
