//! Webhook management handlers (spec 4.5; retry, test and recover are issue 5's).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore;

use super::model::{
    AttemptOut, CatalogEntry, EventsIn, Queued, RecoverIn, RootEventsIn, RootUnsubscribe,
    RootWebhookQuery, SubscriptionOut, WebhookFilter, WebhookIn, WebhookOut, WebhookUpdate,
};
use super::store::{self, ResendRefused, WebhookRow};
use super::{event_types, target};
use crate::audit::{self, Actor};
use crate::error::{AppError, ErrorCode};
use crate::events;
use crate::events::Event;
use crate::http::auth::{Principal, StoreScope};
use crate::http::extract::{Json, Path, parse_json, parse_query};
use crate::http::idempotency::{no_store, sealed_store};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::http::trace::TraceId;
use crate::ids::{AttemptId, StoreId, WebhookId};
use crate::jobs;
use crate::state::AppState;
use crate::threads::run_blocking;
use crate::time;

type ErrorBody = crate::error::ErrorBody;

/// 202 with what was queued.
fn accepted(enqueued: u64, event_id: Option<crate::ids::EventId>) -> Response {
    (StatusCode::ACCEPTED, Json(Queued { enqueued, event_id })).into_response()
}

/// How far back `recover` reaches.
const RECOVER_WINDOW: chrono::Duration = chrono::Duration::days(14);

/// `whsec_` + standard base64 of 32 random bytes (the Standard Webhooks form).
fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("whsec_{}", STANDARD.encode(bytes))
}

fn check_secret(secret: &str) -> Result<(), AppError> {
    let ok = (16..=255).contains(&secret.len()) && secret.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(AppError::field(
            "secret",
            "must be 16 to 255 printable ASCII characters without spaces",
        ))
    }
}

/// Checks a URL's shape, then (off the runtime: it resolves the host) where it points.
async fn check_url(st: &AppState, raw: &str) -> Result<String, AppError> {
    let url = target::parse_url(raw).map_err(|m| AppError::validation([("url", m)]))?;
    if !st.cfg.allow_private_webhook_targets {
        let u = url.clone();
        run_blocking(move || target::check_destination(&u))
            .await
            .map_err(|m| AppError::validation([("url", m)]))?;
    }
    Ok(url.into())
}

/// Event names a store webhook may subscribe to: the catalog's, but not platform events.
fn check_events(events: &[String]) -> Result<Vec<String>, AppError> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        let Some(event) = Event::from_name(e) else {
            return Err(AppError::field(
                "events",
                format!("{e} is not an event name (see GET /v1/webhook-events/catalog)"),
            ));
        };
        if event.is_platform() {
            return Err(AppError::field(
                "events",
                format!("{e} belongs to no store; the operator's platform webhook receives it"),
            ));
        }
        if !out.contains(e) {
            out.push(e.clone());
        }
    }
    Ok(out)
}

/// The response form of a webhook; the secret only for those who may change it.
fn out(st: &AppState, w: WebhookRow, reveal: bool) -> WebhookOut {
    let secret = reveal
        .then(|| {
            st.secret_box
                .open_sealed(&w.sealed_secret, &w.id.to_string())
        })
        .flatten();
    WebhookOut {
        id: w.id,
        store_id: w.store_id,
        url: w.url,
        secret,
        is_active: w.is_active,
        events: w.events,
        created_at: w.created_at,
        updated_at: w.updated_at,
    }
}

fn not_found() -> AppError {
    AppError::not_found("webhook")
}

/// The webhook, in the caller's store, once the caller is known to hold `needs` there.
async fn find(
    st: &AppState,
    scope: &StoreScope,
    needs: Permission,
    id: WebhookId,
) -> Result<WebhookRow, AppError> {
    scope.require(needs)?;
    let store = scope.store_id;
    st.db
        .read(move |c| store::get(c, store, id))
        .await?
        .ok_or_else(not_found)
}

/// The store's webhooks, newest first; `event` keeps those subscribed to it.
#[utoipa::path(get, path = "/stores/{store_id}/webhooks", tag = "webhooks", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, WebhookFilter),
    responses((status = 200, body = Page<WebhookOut>), (status = 403, body = ErrorBody)))]
pub async fn list_webhooks(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, filter): Paged<WebhookFilter>,
) -> Result<Response, AppError> {
    scope.require(Permission::WebhooksRead)?;
    let reveal = scope.permissions.contains(Permission::WebhooksEdit);
    let store = scope.store_id;
    let event = filter.event;
    let list_scope = format!("webhooks:{store}:{}", event.as_deref().unwrap_or(""));
    let e2 = event.clone();
    let page = page
        .list(
            &st.db,
            &list_scope,
            move |c, after, limit, offset| {
                store::list(c, store, event.as_deref(), after, limit, offset)
            },
            move |c| store::count(c, store, e2.as_deref()),
            |w| (w.created_at.clone(), w.id.to_string()),
            |w| out(&st, w, reveal),
        )
        .await?;
    Ok(no_store(Json(page)))
}

/// Creates a webhook; the response carries its secret.
#[utoipa::path(post, path = "/stores/{store_id}/webhooks", tag = "webhooks", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = WebhookIn,
    responses((status = 201, body = WebhookOut), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn create_webhook(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<WebhookIn>,
) -> Result<Response, AppError> {
    scope.require(Permission::WebhooksWrite)?;
    let url = check_url(&st, &input.url).await?;
    let secret = match input.secret {
        Some(s) => {
            check_secret(&s)?;
            s
        }
        None => new_secret(),
    };
    let events = check_events(input.events.as_deref().unwrap_or_default())?;
    let id = WebhookId::new();
    let sealed = st.secret_box.seal(&secret, &id.to_string());
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let active = input.is_active.unwrap_or(true);
    let row = st
        .db
        .write(move |tx| {
            let w = store::insert(tx, id, store, &url, &sealed, active, &events, now)?;
            audit::record(
                tx,
                &actor,
                "webhook.created",
                "webhook",
                &id.to_string(),
                now,
            )?;
            Ok(w)
        })
        .await?;
    let mut body = out(&st, row, false);
    body.secret = Some(secret);
    Ok(sealed_store((StatusCode::CREATED, Json(body))))
}

/// One webhook.
#[utoipa::path(get, path = "/stores/{store_id}/webhooks/{webhook_id}", tag = "webhooks",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path)),
    responses((status = 200, body = WebhookOut), (status = 404, body = ErrorBody)))]
pub async fn get_webhook(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId)>,
) -> Result<Response, AppError> {
    let id = ids.1;
    let reveal = scope.permissions.contains(Permission::WebhooksEdit);
    let w = find(&st, &scope, Permission::WebhooksRead, id).await?;
    Ok(no_store(Json(out(&st, w, reveal))))
}

/// Changes any of `url`, `secret` and `is_active`.
#[utoipa::path(put, path = "/stores/{store_id}/webhooks/{webhook_id}", tag = "webhooks",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path)),
    request_body = WebhookUpdate,
    responses((status = 200, body = WebhookOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn update_webhook(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId)>,
    Json(input): Json<WebhookUpdate>,
) -> Result<Response, AppError> {
    let id = ids.1;
    // Another store's webhook is 404 before any of its input is judged.
    find(&st, &scope, Permission::WebhooksEdit, id).await?;
    let url = match input.url.as_deref() {
        Some(u) => Some(check_url(&st, u).await?),
        None => None,
    };
    if let Some(s) = input.secret.as_deref() {
        check_secret(s)?;
    }
    let sealed = input
        .secret
        .as_deref()
        .map(|s| st.secret_box.seal(s, &id.to_string()));
    let (store, actor, now, active) = (
        scope.store_id,
        Actor::of(&scope),
        st.clock.now(),
        input.is_active,
    );
    let row = st
        .db
        .write(move |tx| {
            if !store::update(
                tx,
                store,
                id,
                url.as_deref(),
                sealed.as_deref(),
                active,
                now,
            )? {
                return Err(not_found());
            }
            audit::record(
                tx,
                &actor,
                "webhook.updated",
                "webhook",
                &id.to_string(),
                now,
            )?;
            store::get(tx, store, id)?.ok_or_else(not_found)
        })
        .await?;
    Ok(no_store(Json(out(&st, row, true))))
}

/// Deletes a webhook with its subscriptions and delivery history; queued deliveries to it
/// are dropped.
#[utoipa::path(delete, path = "/stores/{store_id}/webhooks/{webhook_id}", tag = "webhooks",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn delete_webhook(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, WebhookId)>,
) -> Result<StatusCode, AppError> {
    let id = ids.1;
    scope.require(Permission::WebhooksDelete)?;
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::delete(tx, store, id)? {
                return Err(not_found());
            }
            audit::record(
                tx,
                &actor,
                "webhook.deleted",
                "webhook",
                &id.to_string(),
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

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
              (status = 409, body = ErrorBody)))]
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
              (status = 409, body = ErrorBody)))]
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
            let job = crate::webhooks::WebhookDelivery {
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

async fn subscriptions_page(
    st: &AppState,
    page: crate::http::page::PageParams,
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
    let (store, actor, now) = (scope.store_id, Actor::of(scope), st.clock.now());
    let row = st
        .db
        .write(move |tx| {
            // Touching it also checks it still exists: it may have been deleted since.
            if !store::update(tx, store, id, None, None, None, now)? {
                return Err(not_found());
            }
            store::subscribe(tx, store, id, &events, now)?;
            audit::record(
                tx,
                &actor,
                "webhook.subscribed",
                "webhook",
                &id.to_string(),
                now,
            )?;
            store::get(tx, store, id)?.ok_or_else(not_found)
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
    let (store, actor, now) = (scope.store_id, Actor::of(scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::unsubscribe(tx, store, id, &event)? {
                return Err(AppError::not_found("subscription"));
            }
            store::update(tx, store, id, None, None, None, now)?;
            audit::record(
                tx,
                &actor,
                "webhook.unsubscribed",
                "webhook",
                &id.to_string(),
                now,
            )
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
    params(("store_id" = StoreId, Path), ("webhook_id" = WebhookId, Path), ("event" = String, Path)),
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

/// Every event name the service can emit, with what fires it.
#[utoipa::path(get, path = "/webhook-events/catalog", tag = "webhooks", security(("bearer" = [])),
    responses((status = 200, body = Page<CatalogEntry>)))]
pub async fn catalog(_: Principal) -> Json<Page<CatalogEntry>> {
    Json(Page::whole(
        event_types::EVENTS
            .iter()
            .map(|e| CatalogEntry {
                event: e.as_str(),
                description: e.description(),
            })
            .collect(),
    ))
}

/// The same catalog under the webhooks path.
#[utoipa::path(get, path = "/webhooks/events/catalog", tag = "webhooks", security(("bearer" = [])),
    responses((status = 200, body = Page<CatalogEntry>)))]
pub async fn catalog_alias(p: Principal) -> Json<Page<CatalogEntry>> {
    catalog(p).await
}
