//! Sending a campaign: freezing its recipients, the batch jobs that mail them over SMTP,
//! and the job that starts a scheduled campaign at its time.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use lettre::message::Mailbox;
use serde::{Deserialize, Serialize};

use super::model::{CampaignOut, CampaignStatus};
use super::store::{self, Pending};
use crate::error::{AppError, ErrorCode};
use crate::ids::{CampaignId, StoreId};
use crate::inbox::model::{ChannelKind, ChannelOut};
use crate::jobs::{self, JobKind};
use crate::mail::{self, Extras, Outgoing, SendError};
use crate::state::AppState;

/// Recipients per batch job: one SMTP connection each, short enough that a retry repeats
/// little and a cancel stops soon.
pub const BATCH: i64 = 50;

/// With the queue's backoff (10 s doubling), the last attempt comes about 5 minutes after
/// the first: a relay restart is ridden out, a recipient the server keeps refusing is
/// settled as failed the same hour.
pub const BATCH_ATTEMPTS: u32 = 6;

/// Mails the pending recipients of positions `first..=last` of a sending campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignBatch {
    pub store_id: StoreId,
    pub campaign_id: CampaignId,
    pub first: i64,
    pub last: i64,
}

impl JobKind for CampaignBatch {
    const KIND: &'static str = "campaign_batch";

    fn max_attempts(&self) -> u32 {
        BATCH_ATTEMPTS
    }
}

/// Starts a scheduled campaign at its `scheduled_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignFire {
    pub store_id: StoreId,
    pub campaign_id: CampaignId,
}

impl JobKind for CampaignFire {
    const KIND: &'static str = "campaign_fire";

    fn max_attempts(&self) -> u32 {
        5
    }
}

/// The address a store's campaigns go out from: its first enabled e-mail channel's, as a
/// workflow's `send_email` step uses.
pub fn sender(c: &rusqlite::Connection, store: StoreId) -> Result<Option<Mailbox>, AppError> {
    let channel = crate::inbox::store::first_enabled_channel(c, store, ChannelKind::Email)?;
    Ok(channel.as_ref().and_then(mailbox))
}

fn mailbox(ch: &ChannelOut) -> Option<Mailbox> {
    let address = ch.settings.get("address")?.as_str()?.parse().ok()?;
    Some(Mailbox::new(Some(ch.name.clone()), address))
}

/// 409 `no_email_channel`: nothing to send from.
pub fn no_channel() -> AppError {
    AppError::conflict(
        ErrorCode::NoEmailChannel,
        "the store has no enabled e-mail channel to send campaigns from",
    )
}

/// Moves a scheduled (or, sent now, draft) campaign to `sending`: writes its recipients and
/// enqueues one batch job per [`BATCH`] of them, in the caller's transaction, so the
/// recipients and their jobs commit together. No recipient: the campaign is `sent` at once.
pub fn start(
    tx: &Tx<'_>,
    store: StoreId,
    campaign: &CampaignOut,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    if !store::set_status(
        tx,
        store,
        campaign.id,
        campaign.status,
        CampaignStatus::Sending,
        None,
        now,
    )? {
        return Err(AppError::conflict(
            ErrorCode::InvalidStatusTransition,
            "the campaign changed meanwhile",
        ));
    }
    let segment = store::get_segment(tx, store, campaign.segment_id)?
        .ok_or_else(|| AppError::not_found("segment"))?;
    let n = store::freeze_recipients(tx, store, campaign.id, &segment.filter, now)?;
    let mut first = 0;
    while first < n {
        let job = CampaignBatch {
            store_id: store,
            campaign_id: campaign.id,
            first,
            last: (first + BATCH - 1).min(n - 1),
        };
        jobs::enqueue(tx, &job, now)?;
        first += BATCH;
    }
    store::finish_if_done(tx, store, campaign.id, now)?;
    Ok(())
}

/// The [`CampaignFire`] handler: starts the campaign if it is still scheduled and due (a
/// cancelled one stays cancelled).
pub async fn fire(st: &AppState, job: CampaignFire) -> anyhow::Result<()> {
    let now = st.clock.now();
    st.db
        .write(move |tx| {
            let Some(c) = store::get_campaign(tx, job.store_id, job.campaign_id)? else {
                return Ok(());
            };
            let due = c
                .scheduled_at
                .as_deref()
                .and_then(crate::time::parse)
                .is_some_and(|at| at <= now);
            if c.status == CampaignStatus::Scheduled && due {
                start(tx, job.store_id, &c, now)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}

/// What one campaign mail is made of, fixed for every recipient.
struct Content {
    from: Mailbox,
    subject: String,
    text: String,
    html: String,
}

/// The [`CampaignBatch`] handler. Each pending recipient of the batch is mailed and then
/// marked sent in its own transaction, so a crash repeats at most the one mail in flight
/// and a retry mails only who is still pending. A failed attempt records
/// `email_send_failed` and the server's answer on the recipient; a refusal (5xx) or the
/// job's last attempt fails the recipient, anything else is retried with the batch after
/// the queue's backoff. A campaign no longer `sending` (cancelled) stops the batch.
#[tracing::instrument(skip_all, fields(campaign_id = %job.campaign_id, first = job.first))]
pub async fn send_batch(st: &AppState, job: CampaignBatch) -> anyhow::Result<()> {
    let (store, id) = (job.store_id, job.campaign_id);
    let now = st.clock.now();
    let (campaign, pending, from) = st
        .db
        .read(move |c| {
            let campaign = store::get_campaign(c, store, id)?;
            let pending = store::pending_in(c, id, job.first, job.last)?;
            Ok((campaign, pending, sender(c, store)?))
        })
        .await?;
    let Some(campaign) = campaign.filter(|c| c.status == CampaignStatus::Sending) else {
        return Ok(());
    };
    let last_attempt = jobs::attempt().is_none_or(jobs::Attempt::is_last);
    // Rendering is CPU work: off the async runtime.
    let markdown = campaign.body_markdown.clone();
    let html = crate::threads::run_blocking(move || super::render::html(&markdown)).await;
    let content = match (&st.cfg.smtp, from) {
        (None, _) => Err(SendError::NoRelay),
        (Some(_), None) => Err(SendError::Build(
            "the store has no enabled e-mail channel to send from".into(),
        )),
        (Some(_), Some(from)) => Ok(Content {
            from,
            subject: campaign.subject.clone(),
            text: campaign.body_markdown.clone(),
            html,
        }),
    };
    let mut retry = None;
    for p in pending {
        let outcome = match &content {
            Err(e) => Err(SendError::Build(e.to_string())),
            Ok(content) => send_one(st, &campaign, content, &p).await?,
        };
        // Sent, or skipped (a cancel or an unsubscribe since): settled by send_one.
        let Err(outcome) = outcome else {
            continue;
        };
        let settle = outcome.is_permanent() || last_attempt;
        let error: String = outcome.to_string().chars().take(500).collect();
        let pos = p.position;
        // Settles an attempt already made: never refused for a full queue.
        st.db
            .write_to_finish(move |tx| {
                let code = "email_send_failed";
                store::mark_attempt_failed(tx, store, id, pos, (code, &error), settle, now)?;
                store::finish_if_done(tx, store, id, now)
            })
            .await?;
        tracing::warn!(error = %outcome, position = pos, settled = settle, "campaign mail failed");
        if !settle {
            retry = Some(outcome);
        }
    }
    match retry {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Mails one recipient and marks them sent. Ok(Ok) when sent or skipped (the campaign was
/// cancelled, the customer unsubscribed since: they are failed with a reason, never
/// mailed); Ok(Err) when the mail server did not take it.
async fn send_one(
    st: &AppState,
    campaign: &CampaignOut,
    content: &Content,
    p: &Pending,
) -> anyhow::Result<Result<(), SendError>> {
    let (store, id, customer, pos) = (campaign.store_id, campaign.id, p.customer_id, p.position);
    let (status, accepts) = st
        .db
        .read(move |c| {
            let status = store::get_campaign(c, store, id)?.map(|c| c.status);
            Ok((status, store::still_accepts(c, store, customer)?))
        })
        .await?;
    if status != Some(CampaignStatus::Sending) {
        return Ok(Ok(()));
    }
    let now = st.clock.now();
    if !accepts {
        st.db
            .write_to_finish(move |tx| {
                let why = (
                    "unsubscribed",
                    "the customer no longer accepts marketing e-mail",
                );
                store::mark_attempt_failed(tx, store, id, pos, why, true, now)?;
                store::finish_if_done(tx, store, id, now)
            })
            .await?;
        return Ok(Ok(()));
    }
    let Ok(address) = p.email.parse() else {
        return Ok(Err(SendError::Build(format!(
            "{:?} is not a usable address",
            p.email
        ))));
    };
    let unsubscribe = super::unsubscribe::link(&st.hmac_key, st.public_url(), store, customer);
    let domain = content.from.email.domain().to_owned();
    let mail = Outgoing {
        hello_name: domain.clone(),
        from: content.from.clone(),
        to: Mailbox::new(p.name.clone(), address),
        subject: content.subject.clone(),
        text: format!(
            "{}\n\n--\nUnsubscribe: {unsubscribe}\n",
            content.text.trim_end()
        ),
        // The same on every attempt: a repeat after a crash is recognizable.
        message_id: format!("<{id}.{customer}@{domain}>"),
        in_reply_to: None,
        references: Vec::new(),
        date: now,
    };
    let extras = Extras {
        html: Some(super::render::with_footer(&content.html, &unsubscribe)),
        headers: vec![
            ("List-Unsubscribe", format!("<{unsubscribe}>")),
            (
                "List-Unsubscribe-Post",
                "List-Unsubscribe=One-Click".to_owned(),
            ),
        ],
    };
    let Some(smtp) = st.cfg.smtp.clone() else {
        return Ok(Err(SendError::NoRelay));
    };
    let sent = crate::threads::run_blocking(move || mail::send_with(&smtp, &mail, &extras)).await;
    if let Err(e) = sent {
        return Ok(Err(e));
    }
    // The server took the mail: a refused write here would mail them again on the retry.
    st.db
        .write_to_finish(move |tx| {
            store::mark_sent(tx, store, id, pos, now)?;
            store::finish_if_done(tx, store, id, now)
        })
        .await?;
    Ok(Ok(()))
}
