//! Marketing handlers: segments and campaigns (the public unsubscribe routes are in
//! `unsubscribe`).

use axum::extract::State;
use axum::http::StatusCode;
use lettre::message::Mailbox;

use super::model::{
    CampaignFilter, CampaignIn, CampaignOut, CampaignPatch, CampaignStatus, RecipientFilter,
    RecipientOut, RecipientStatus, ScheduleIn, SegmentIn, SegmentOut, SegmentPatch, SendTestIn,
};
use super::store::{self, CampaignFields};
use super::writes::{self, campaign_not_found, segment_not_found};
use crate::audit::{self, Actor};
use crate::customers::model::CustomerOut;
use crate::error::{AppError, ErrorCode};
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{CampaignId, SegmentId, StoreId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

fn subject(v: &str) -> Result<String, AppError> {
    let s = text("subject", v, 1, 255)?;
    if s.contains(['\r', '\n']) {
        return Err(AppError::field("subject", "must be one line"));
    }
    Ok(s)
}

fn body(v: &str) -> Result<String, AppError> {
    if v.trim().is_empty() || v.chars().count() > writes::MAX_BODY {
        return Err(AppError::field(
            "body_markdown",
            "must be 1 to 100000 characters",
        ));
    }
    Ok(v.to_owned())
}

/// The store's segments, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/segments", tag = "marketing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery),
    responses((status = 200, body = Page<SegmentOut>), (status = 403, body = ErrorBody)))]
pub async fn list_segments(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<SegmentOut>>, AppError> {
    scope.require(Permission::MarketingRead)?;
    let store = scope.store_id;
    let page = page
        .list(
            &st.db,
            &format!("segments:{store}"),
            move |c, after, limit, offset| store::list_segments(c, store, after, limit, offset),
            move |c| store::count_segments(c, store),
            |s| (s.created_at.clone(), s.id.to_string()),
            |s| s,
        )
        .await?;
    Ok(Json(page))
}

/// Saves a customer filter. Unknown filter fields are 422 naming them.
#[utoipa::path(post, path = "/stores/{store_id}/segments", tag = "marketing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = SegmentIn,
    responses((status = 201, body = SegmentOut), (status = 422, body = ErrorBody)))]
pub async fn create_segment(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<SegmentIn>,
) -> Result<(StatusCode, Json<SegmentOut>), AppError> {
    scope.require(Permission::MarketingWrite)?;
    let name = text("name", &input.name, 1, 255)?;
    let filter = writes::check_filter(input.filter, "filter.")?;
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let s = writes::create_segment(tx, store, &name, &filter, now)?;
            audit::record(
                tx,
                &actor,
                "segment.created",
                "segment",
                &s.id.to_string(),
                now,
            )?;
            Ok(s)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One segment.
#[utoipa::path(get, path = "/stores/{store_id}/segments/{segment_id}", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("segment_id" = SegmentId, Path)),
    responses((status = 200, body = SegmentOut), (status = 404, body = ErrorBody)))]
pub async fn get_segment(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, SegmentId)>,
) -> Result<Json<SegmentOut>, AppError> {
    scope.require(Permission::MarketingRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_segment(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(segment_not_found)
}

/// Renames a segment or replaces its filter. Campaigns already sending keep the
/// recipients they froze.
#[utoipa::path(patch, path = "/stores/{store_id}/segments/{segment_id}", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("segment_id" = SegmentId, Path)),
    request_body = SegmentPatch,
    responses((status = 200, body = SegmentOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn update_segment(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, SegmentId)>,
    Json(input): Json<SegmentPatch>,
) -> Result<Json<SegmentOut>, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let name = input
        .name
        .as_deref()
        .map(|n| text("name", n, 1, 255))
        .transpose()?;
    let filter = input
        .filter
        .map(|f| writes::check_filter(f, "filter."))
        .transpose()?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            if !store::update_segment(tx, store, id, name.as_deref(), filter.as_ref(), now)? {
                return Err(segment_not_found());
            }
            audit::record(
                tx,
                &actor,
                "segment.updated",
                "segment",
                &id.to_string(),
                now,
            )?;
            store::get_segment(tx, store, id)?.ok_or_else(segment_not_found)
        })
        .await?;
    Ok(Json(out))
}

/// Deletes a segment no campaign names (409 `conflict` otherwise).
#[utoipa::path(delete, path = "/stores/{store_id}/segments/{segment_id}", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("segment_id" = SegmentId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`conflict`: campaigns use the segment")))]
pub async fn delete_segment(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, SegmentId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if store::get_segment(tx, store, id)?.is_none() {
                return Err(segment_not_found());
            }
            let n = store::segment_campaigns(tx, store, id)?;
            if n > 0 {
                return Err(AppError::conflict(
                    ErrorCode::Conflict,
                    "campaigns name this segment; it is kept while they do",
                )
                .with_details(serde_json::json!({ "campaigns": n })));
            }
            store::delete_segment(tx, store, id)?;
            audit::record(
                tx,
                &actor,
                "segment.deleted",
                "segment",
                &id.to_string(),
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The customers the segment's filter matches now, newest first (`include_total=true`
/// counts them). Campaigns mail only those of them who accept marketing and have an
/// e-mail.
#[utoipa::path(get, path = "/stores/{store_id}/segments/{segment_id}/customers", tag = "marketing",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("segment_id" = SegmentId, Path), PageQuery),
    responses((status = 200, body = Page<CustomerOut>), (status = 404, body = ErrorBody)))]
pub async fn list_segment_customers(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, SegmentId)>,
    Paged(page, _): Paged,
) -> Result<Json<Page<CustomerOut>>, AppError> {
    scope.require(Permission::MarketingRead)?;
    // The rows are customers' names and e-mails: a marketing-only token does not see them.
    scope.require(Permission::CustomersRead)?;
    let (store, id) = (scope.store_id, ids.1);
    let segment = st
        .db
        .read(move |c| store::get_segment(c, store, id))
        .await?
        .ok_or_else(segment_not_found)?;
    let (f, g) = (segment.filter.clone(), segment.filter);
    // The cursor is bound to the segment and its last change: an edited filter starts over.
    let scope_key = format!("segment-customers:{store}:{id}:{}", segment.updated_at);
    let page = page
        .list(
            &st.db,
            &scope_key,
            move |c, after, limit, offset| {
                store::segment_customers(c, store, &f, after, limit, offset)
            },
            move |c| store::count_segment_customers(c, store, &g),
            |c| (c.created_at.clone(), c.id.to_string()),
            |c| c,
        )
        .await?;
    Ok(Json(page))
}

/// The store's campaigns, newest first; filter `status`.
#[utoipa::path(get, path = "/stores/{store_id}/campaigns", tag = "marketing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, CampaignFilter),
    responses((status = 200, body = Page<CampaignOut>), (status = 403, body = ErrorBody)))]
pub async fn list_campaigns(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<CampaignFilter>,
) -> Result<Json<Page<CampaignOut>>, AppError> {
    scope.require(Permission::MarketingRead)?;
    let (store, status) = (scope.store_id, f.status);
    let scope_key = format!(
        "campaigns:{store}:{}",
        status.map(CampaignStatus::as_str).unwrap_or_default()
    );
    let page = page
        .list(
            &st.db,
            &scope_key,
            move |c, after, limit, offset| {
                store::list_campaigns(c, store, status, after, limit, offset)
            },
            move |c| store::count_campaigns(c, store, status),
            |c| (c.created_at.clone(), c.id.to_string()),
            |c| c,
        )
        .await?;
    Ok(Json(page))
}

/// Creates a draft campaign to a segment of the store.
#[utoipa::path(post, path = "/stores/{store_id}/campaigns", tag = "marketing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = CampaignIn,
    responses((status = 201, body = CampaignOut), (status = 422, body = ErrorBody)))]
pub async fn create_campaign(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<CampaignIn>,
) -> Result<(StatusCode, Json<CampaignOut>), AppError> {
    scope.require(Permission::MarketingWrite)?;
    let f = CampaignFields {
        name: Some(text("name", &input.name, 1, 255)?),
        subject: Some(subject(&input.subject)?),
        body_markdown: Some(body(&input.body_markdown)?),
        segment_id: Some(input.segment_id),
    };
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let c = writes::create_campaign(tx, store, &f, now)?;
            audit::record(
                tx,
                &actor,
                "campaign.created",
                "campaign",
                &c.id.to_string(),
                now,
            )?;
            Ok(c)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One campaign, with its sending stats.
#[utoipa::path(get, path = "/stores/{store_id}/campaigns/{campaign_id}", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("campaign_id" = CampaignId, Path)),
    responses((status = 200, body = CampaignOut), (status = 404, body = ErrorBody)))]
pub async fn get_campaign(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CampaignId)>,
) -> Result<Json<CampaignOut>, AppError> {
    scope.require(Permission::MarketingRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_campaign(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(campaign_not_found)
}

/// Changes a draft; past draft it is 409 `invalid_status_transition`.
#[utoipa::path(patch, path = "/stores/{store_id}/campaigns/{campaign_id}", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("campaign_id" = CampaignId, Path)),
    request_body = CampaignPatch,
    responses((status = 200, body = CampaignOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`invalid_status_transition`"), (status = 422, body = ErrorBody)))]
pub async fn update_campaign(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CampaignId)>,
    Json(input): Json<CampaignPatch>,
) -> Result<Json<CampaignOut>, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let f = CampaignFields {
        name: input
            .name
            .as_deref()
            .map(|n| text("name", n, 1, 255))
            .transpose()?,
        subject: input.subject.as_deref().map(subject).transpose()?,
        body_markdown: input.body_markdown.as_deref().map(body).transpose()?,
        segment_id: input.segment_id,
    };
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let c = writes::update_campaign(tx, store, id, &f, now)?;
            audit::record(
                tx,
                &actor,
                "campaign.updated",
                "campaign",
                &id.to_string(),
                now,
            )?;
            Ok(c)
        })
        .await?;
    Ok(Json(out))
}

/// Deletes a draft; past draft it is 409 `invalid_status_transition` (the record of what
/// was sent stays).
#[utoipa::path(delete, path = "/stores/{store_id}/campaigns/{campaign_id}", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("campaign_id" = CampaignId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`invalid_status_transition`")))]
pub async fn delete_campaign(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CampaignId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            let c = store::get_campaign(tx, store, id)?.ok_or_else(campaign_not_found)?;
            if c.status != CampaignStatus::Draft {
                return Err(writes::invalid_transition(c.status, "deleted"));
            }
            store::delete_campaign(tx, store, id)?;
            audit::record(
                tx,
                &actor,
                "campaign.deleted",
                "campaign",
                &id.to_string(),
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Schedules a draft for `scheduled_at`, or sends it now when that is absent or past: the
/// segment's customers who accept marketing and have an e-mail are frozen as recipients
/// and mailed in batches by background jobs. 503 `service_unavailable` when this server
/// has no `--smtp-url`; 409 `no_email_channel` when the store has no enabled e-mail
/// channel to send from; 409 `invalid_status_transition` past draft.
#[utoipa::path(post, path = "/stores/{store_id}/campaigns/{campaign_id}/schedule", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("campaign_id" = CampaignId, Path)),
    request_body = ScheduleIn,
    responses((status = 200, body = CampaignOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`invalid_status_transition` or `no_email_channel`"), (status = 422, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
pub async fn schedule_campaign(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CampaignId)>,
    Json(input): Json<ScheduleIn>,
) -> Result<Json<CampaignOut>, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let at = input
        .scheduled_at
        .as_deref()
        .map(|s| {
            crate::time::parse(s)
                .ok_or_else(|| AppError::field("scheduled_at", "must be an RFC 3339 timestamp"))
        })
        .transpose()?;
    if st.cfg.smtp.is_none() {
        return Err(AppError::unavailable(
            "this server sends no e-mail: it was started without --smtp-url",
        ));
    }
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let c = writes::schedule(tx, store, id, at, now)?;
            let action = if c.status == CampaignStatus::Scheduled {
                "campaign.scheduled"
            } else {
                "campaign.sending"
            };
            audit::record(tx, &actor, action, "campaign", &id.to_string(), now)?;
            Ok(c)
        })
        .await?;
    Ok(Json(out))
}

/// Cancels a draft, scheduled or sending campaign (a sending one stops before its next
/// mail; who was mailed stays mailed). Sent or cancelled: 409 `invalid_status_transition`.
#[utoipa::path(post, path = "/stores/{store_id}/campaigns/{campaign_id}/cancel", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("campaign_id" = CampaignId, Path)),
    responses((status = 200, body = CampaignOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`invalid_status_transition`")))]
pub async fn cancel_campaign(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CampaignId)>,
) -> Result<Json<CampaignOut>, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let c = writes::cancel(tx, store, id, now)?;
            audit::record(
                tx,
                &actor,
                "campaign.cancelled",
                "campaign",
                &id.to_string(),
                now,
            )?;
            Ok(c)
        })
        .await?;
    Ok(Json(out))
}

/// Mails one copy of the campaign to `email` now, marked `[Test]`, with no working
/// unsubscribe link. 502 `email_send_failed` when the mail server does not take it.
#[utoipa::path(post, path = "/stores/{store_id}/campaigns/{campaign_id}/send-test", tag = "marketing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("campaign_id" = CampaignId, Path)),
    request_body = SendTestIn,
    responses((status = 204), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`no_email_channel`"),
              (status = 422, body = ErrorBody), (status = 502, body = ErrorBody, description = "`email_send_failed`"),
              (status = 503, body = ErrorBody)))]
pub async fn send_test_campaign(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CampaignId)>,
    Json(input): Json<SendTestIn>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let to: Mailbox = crate::customers::model::email(&input.email)?
        .and_then(|e| e.parse().ok())
        .map(|a| Mailbox::new(None, a))
        .ok_or_else(|| AppError::field("email", "is not an e-mail address"))?;
    let Some(smtp) = st.cfg.smtp.clone() else {
        return Err(AppError::unavailable(
            "this server sends no e-mail: it was started without --smtp-url",
        ));
    };
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let (campaign, from) = st
        .db
        .read(move |c| {
            let campaign = store::get_campaign(c, store, id)?.ok_or_else(campaign_not_found)?;
            Ok((campaign, super::sending::sender(c, store)?))
        })
        .await?;
    let from = from.ok_or_else(super::sending::no_channel)?;
    let domain = from.email.domain().to_owned();
    let mail = crate::mail::Outgoing {
        hello_name: domain.clone(),
        message_id: format!("<test.{}@{domain}>", uuid::Uuid::now_v7()),
        from,
        to,
        subject: format!("[Test] {}", campaign.subject),
        text: campaign.body_markdown.clone(),
        in_reply_to: None,
        references: Vec::new(),
        date: now,
    };
    let markdown = campaign.body_markdown.clone();
    // Rendering and the SMTP exchange are blocking work: off the async runtime.
    crate::threads::run_blocking(move || {
        let extras = crate::mail::Extras {
            html: Some(super::render::with_footer(
                &super::render::html(&markdown),
                "#",
            )),
            headers: Vec::new(),
        };
        crate::mail::send_with(&smtp, &mail, &extras)
    })
    .await
    .map_err(|e| {
        AppError::new(
            ErrorCode::EmailSendFailed,
            format!("the mail server did not take the test e-mail: {e}"),
        )
    })?;
    // The mail went: its audit entry is never refused for a full queue.
    st.db
        .write_to_finish(move |tx| {
            audit::record(
                tx,
                &actor,
                "campaign.test_sent",
                "campaign",
                &id.to_string(),
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The campaign's recipients in sending order (empty before sending starts), with each
/// one's status, attempts and last error; filter `status`.
#[utoipa::path(get, path = "/stores/{store_id}/campaigns/{campaign_id}/recipients", tag = "marketing",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("campaign_id" = CampaignId, Path), PageQuery, RecipientFilter),
    responses((status = 200, body = Page<RecipientOut>), (status = 404, body = ErrorBody)))]
pub async fn list_campaign_recipients(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CampaignId)>,
    Paged(page, f): Paged<RecipientFilter>,
) -> Result<Json<Page<RecipientOut>>, AppError> {
    scope.require(Permission::MarketingRead)?;
    // The rows are customers' names and e-mails: a marketing-only token does not see them.
    scope.require(Permission::CustomersRead)?;
    let (store, id, status) = (scope.store_id, ids.1, f.status);
    let exists = st
        .db
        .read(move |c| store::get_campaign(c, store, id))
        .await?
        .is_some();
    if !exists {
        return Err(campaign_not_found());
    }
    let scope_key = format!(
        "campaign-recipients:{id}:{}",
        status.map(RecipientStatus::as_str).unwrap_or_default()
    );
    let page = page
        .list(
            &st.db,
            &scope_key,
            move |c, after, limit, offset| {
                let after = after.and_then(|(p, _)| p.parse::<i64>().ok());
                store::list_recipients(c, id, status, after, limit, offset)
            },
            move |c| store::count_recipients(c, id, status),
            |(pos, r)| (pos.to_string(), r.customer_id.to_string()),
            |(_, r)| r,
        )
        .await?;
    Ok(Json(page))
}
