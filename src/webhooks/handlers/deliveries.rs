//! A webhook's deliveries: the attempts made, and the sends a caller asks for (retry one
//! failed delivery, a test event, recover everything that failed since a time).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{ErrorBody, find};
use crate::error::{AppError, ErrorCode};
use crate::events::{self, Event};
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{AttemptId, StoreId, WebhookId};
use crate::jobs;
use crate::state::AppState;
use crate::time;
use crate::webhooks::WebhookDelivery;
use crate::webhooks::model::{AttemptOut, Queued, RecoverIn};
use crate::webhooks::store::{self, ResendRefused};

/// 202 with what was queued.
fn accepted(enqueued: u64, event_id: Option<crate::ids::EventId>) -> Response {
    (StatusCode::ACCEPTED, Json(Queued { enqueued, event_id })).into_response()
}

/// How far back `recover` reaches.
const RECOVER_WINDOW: chrono::Duration = chrono::Duration::days(14);

/// Every delivery attempt to the webhook, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/webhooks/{webhook_id}/deliveries", tag = "webhooks",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path), PageQuery),
    responses((status = 200, body = Page<AttemptOut>), (status = 404, body = ErrorBody)))]
pub async fn list_deliveries(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId)>,
    Paged(page, _): Paged,
) -> Result<Json<Page<AttemptOut>>, AppError> {
    let id = ids.1;
    find(&st, &scope, Permission::WebhooksRead, id).await?;
    let page = page
        .list(
            &st.db,
            &format!("webhook_deliveries:{id}"),
            move |c, after, limit, offset| store::attempts(c, id, after, limit, offset),
            move |c| store::count_attempts(c, id),
            |a| (a.created_at.clone(), a.id.to_string()),
            |a| a,
        )
        .await?;
    Ok(Json(page))
}

/// Re-sends a failed delivery now: same event id and body, one attempt.
#[utoipa::path(post, path = "/stores/{store_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
    tag = "webhooks", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path), ("delivery_id" = AttemptId, Path)),
    responses((status = 202, body = Queued), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`")))]
pub async fn retry_delivery(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId, AttemptId)>,
) -> Result<Response, AppError> {
    let (id, attempt) = (ids.1, ids.2);
    find(&st, &scope, Permission::WebhooksWrite, id).await?;
    let now = st.clock.now();
    let queued = st
        .db
        .write(move |tx| store::resend(tx, id, attempt, now))
        .await?;
    match queued {
        Ok(event_id) => Ok(accepted(1, Some(event_id))),
        Err(ResendRefused::NotFound) => Err(AppError::not_found("delivery")),
        Err(ResendRefused::NotFailed(why)) => Err(AppError::conflict(
            ErrorCode::Conflict,
            format!("only a failed delivery can be re-sent; this one {why}"),
        )),
    }
}

/// Sends a `webhook.test` event to this webhook only, whatever it subscribes to; an inactive
/// webhook is 409 (activate it first).
#[utoipa::path(post, path = "/stores/{store_id}/webhooks/{webhook_id}/test", tag = "webhooks",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path)),
    responses((status = 202, body = Queued), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`: the endpoint is disabled")))]
pub async fn send_test(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId)>,
) -> Result<Response, AppError> {
    let id = ids.1;
    if !find(&st, &scope, Permission::WebhooksWrite, id)
        .await?
        .is_active
    {
        return Err(AppError::conflict(
            ErrorCode::Conflict,
            "the webhook is not active; activate it before sending a test event",
        ));
    }
    let (store, now) = (scope.store_id, st.clock.now());
    let event_id = st
        .db
        .write(move |tx| {
            let data = serde_json::json!({
                "webhook_id": id,
                "message": "This is a test event sent from the webhook settings."
            });
            let event = events::record(tx, Some(store), Event::WebhookTest, &data, now)?;
            let job = WebhookDelivery {
                event_id: event,
                webhook_id: Some(id),
                manual: false,
            };
            jobs::enqueue(tx, &job, now)?;
            Ok(event)
        })
        .await?;
    Ok(accepted(1, Some(event_id)))
}

/// Re-sends every failed delivery since `since` (at most 14 days back), one attempt each:
/// for a receiver that was down longer than the retries span.
#[utoipa::path(post, path = "/stores/{store_id}/webhooks/{webhook_id}/recover", tag = "webhooks",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path)),
    request_body = RecoverIn,
    responses((status = 202, body = Queued), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn recover(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId)>,
    Json(input): Json<RecoverIn>,
) -> Result<Response, AppError> {
    let id = ids.1;
    find(&st, &scope, Permission::WebhooksWrite, id).await?;
    let now = st.clock.now();
    let since = match time::parse(&input.since) {
        Some(t) if t >= now - RECOVER_WINDOW && t <= now => t,
        _ => {
            return Err(AppError::field(
                "since",
                "must be an RFC 3339 time within the last 14 days",
            ));
        }
    };
    let n = st
        .db
        .write(move |tx| store::recover(tx, id, since, now))
        .await?;
    Ok(accepted(n, None))
}
