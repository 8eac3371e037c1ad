//! A webhook's subscriptions: list, subscribe, unsubscribe, under the webhook's path and in
//! the root `/webhook-events` forms that name only the webhook.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::{Edit, ErrorBody, check_events, find, not_found, out};
use crate::error::AppError;
use crate::http::auth::{Principal, StoreScope};
use crate::http::extract::{Json, Path, parse_json, parse_query};
use crate::http::idempotency::no_store;
use crate::http::page::{Page, PageParams, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::http::trace::TraceId;
use crate::ids::{StoreId, WebhookId};
use crate::state::AppState;
use crate::webhooks::model::{
    EventsIn, RootEventsIn, RootUnsubscribe, RootWebhookQuery, SubscriptionOut, WebhookOut,
};
use crate::webhooks::store::{self, WebhookPatch};

async fn subscriptions_page(
    st: &AppState,
    page: PageParams,
    id: WebhookId,
) -> Result<Page<SubscriptionOut>, AppError> {
    page.list(
        &st.db,
        &format!("webhook_events:{id}"),
        move |c, after, limit, offset| store::subscriptions(c, id, after, limit, offset),
        move |c| store::count_subscriptions(c, id),
        |s| (s.event.clone(), String::new()),
        |s| s,
    )
    .await
}

/// The events the webhook is subscribed to, by name.
#[utoipa::path(get, path = "/stores/{store_id}/webhooks/{webhook_id}/events", tag = "webhooks",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path), PageQuery),
    responses((status = 200, body = Page<SubscriptionOut>), (status = 404, body = ErrorBody)))]
pub async fn list_events(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId)>,
    Paged(page, _): Paged,
) -> Result<Json<Page<SubscriptionOut>>, AppError> {
    let id = ids.1;
    find(&st, &scope, Permission::WebhooksRead, id).await?;
    Ok(Json(subscriptions_page(&st, page, id).await?))
}

async fn do_subscribe(
    st: &AppState,
    scope: &StoreScope,
    id: WebhookId,
    events: &[String],
) -> Result<Response, AppError> {
    find(st, scope, Permission::WebhooksWrite, id).await?;
    if events.is_empty() {
        return Err(AppError::field("events", "name at least one event"));
    }
    let events = check_events(events)?;
    let reveal = scope.permissions.contains(Permission::WebhooksEdit);
    let edit = Edit::new(st, scope, id);
    let row = st
        .db
        .write(move |tx| {
            // Touching it first also checks it still exists: it may have been deleted since.
            edit.save(tx, &WebhookPatch::default())?;
            store::subscribe(tx, edit.store, id, &events, edit.now)?;
            edit.finish(tx, "webhook.subscribed")
        })
        .await?;
    Ok(no_store(Json(out(st, row, reveal))))
}

async fn do_unsubscribe(
    st: &AppState,
    scope: &StoreScope,
    id: WebhookId,
    event: String,
) -> Result<StatusCode, AppError> {
    find(st, scope, Permission::WebhooksDelete, id).await?;
    let edit = Edit::new(st, scope, id);
    st.db
        .write(move |tx| {
            if !store::unsubscribe(tx, edit.store, id, &event)? {
                return Err(AppError::not_found("subscription"));
            }
            edit.save(tx, &WebhookPatch::default())?;
            edit.audit(tx, "webhook.unsubscribed")
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Subscribes the webhook to more events; answers the webhook.
#[utoipa::path(post, path = "/stores/{store_id}/webhooks/{webhook_id}/events", tag = "webhooks",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path)),
    request_body = EventsIn,
    responses((status = 200, body = WebhookOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn subscribe(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId)>,
    Json(input): Json<EventsIn>,
) -> Result<Response, AppError> {
    let id = ids.1;
    do_subscribe(&st, &scope, id, &input.events).await
}

/// Unsubscribes the webhook from one event.
#[utoipa::path(delete, path = "/stores/{store_id}/webhooks/{webhook_id}/events/{event}", tag = "webhooks",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path), ("event" = inline(crate::webhooks::model::StoreEventName), Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn unsubscribe(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId, String)>,
) -> Result<StatusCode, AppError> {
    let (id, event) = (ids.1, ids.2);
    do_unsubscribe(&st, &scope, id, event).await
}

/// The caller's standing in the store of a webhook named only by id (root forms). A webhook
/// the caller cannot see is 404, exactly like one that does not exist.
async fn scope_of(
    st: &AppState,
    principal: Principal,
    trace: TraceId,
    id: WebhookId,
) -> Result<StoreScope, AppError> {
    let store = st
        .db
        .read(move |c| store::store_of(c, id))
        .await?
        .ok_or_else(not_found)?;
    if let crate::http::auth::Credential::StoreToken { store_id, .. } = &principal.credential
        && *store_id != store
    {
        return Err(not_found());
    }
    StoreScope::resolve(st, principal, store, trace.0)
        .await
        .map_err(|e| {
            if e.status == StatusCode::NOT_FOUND {
                not_found()
            } else {
                e
            }
        })
}

/// Root form of GET .../webhooks/{webhook_id}/events.
#[utoipa::path(get, path = "/webhook-events", tag = "webhooks", security(("bearer" = [])),
    params(RootWebhookQuery, PageQuery),
    responses((status = 200, body = Page<SubscriptionOut>), (status = 404, body = ErrorBody)))]
pub async fn root_list_events(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    Paged(page, q): Paged<RootWebhookQuery>,
) -> Result<Json<Page<SubscriptionOut>>, AppError> {
    let scope = scope_of(&st, principal, trace, q.webhook_id).await?;
    scope.require(Permission::WebhooksRead)?;
    Ok(Json(subscriptions_page(&st, page, q.webhook_id).await?))
}

/// Root form of POST .../webhooks/{webhook_id}/events.
#[utoipa::path(post, path = "/webhook-events", tag = "webhooks", security(("bearer" = [])),
    request_body = RootEventsIn,
    responses((status = 200, body = WebhookOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn root_subscribe(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    Json(input): Json<RootEventsIn>,
) -> Result<Response, AppError> {
    let scope = scope_of(&st, principal, trace, input.webhook_id).await?;
    do_subscribe(&st, &scope, input.webhook_id, &input.events).await
}

/// Root form of DELETE .../webhooks/{webhook_id}/events/{event}: `webhook_id` and `event` in
/// the query string, or in a JSON body.
#[utoipa::path(delete, path = "/webhook-events", tag = "webhooks", security(("bearer" = [])),
    params(RootUnsubscribe),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn root_unsubscribe(
    State(st): State<AppState>,
    principal: Principal,
    trace: TraceId,
    RawQuery(query): RawQuery,
    req: axum::extract::Request,
) -> Result<StatusCode, AppError> {
    let body = axum::body::to_bytes(req.into_body(), 64 * 1024)
        .await
        .map_err(|_| AppError::payload_too_large())?;
    let input: RootUnsubscribe = match query.as_deref() {
        Some(q) if !q.is_empty() => parse_query(q)?,
        _ if !body.is_empty() => parse_json(&body)?,
        _ => parse_query("")?,
    };
    let scope = scope_of(&st, principal, trace, input.webhook_id).await?;
    do_unsubscribe(&st, &scope, input.webhook_id, input.event).await
}
