//! The webhooks themselves: list, create, read, change and delete, with the checks of a
//! webhook's URL and secret.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore;

use super::{Edit, ErrorBody, check_events, find, not_found, out};
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::idempotency::{no_store, sealed_store};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{StoreId, WebhookId};
use crate::state::AppState;
use crate::threads::run_blocking;
use crate::webhooks::model::{WebhookFilter, WebhookIn, WebhookOut, WebhookUpdate};
use crate::webhooks::store::{self, WebhookPatch};
use crate::webhooks::target;

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
    let edit = Edit::new(&st, &scope, id);
    let active = input.is_active.unwrap_or(true);
    let row = st
        .db
        .write(move |tx| {
            let (store, now) = (edit.store, edit.now);
            let w = store::insert(tx, id, store, &url, &sealed, active, &events, now)?;
            edit.audit(tx, "webhook.created")?;
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
    let patch = WebhookPatch {
        url,
        sealed_secret: input
            .secret
            .as_deref()
            .map(|s| st.secret_box.seal(s, &id.to_string())),
        is_active: input.is_active,
    };
    let edit = Edit::new(&st, &scope, id);
    let row = st
        .db
        .write(move |tx| {
            edit.save(tx, &patch)?;
            edit.finish(tx, "webhook.updated")
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
    let edit = Edit::new(&st, &scope, id);
    st.db
        .write(move |tx| {
            if !store::delete(tx, edit.store, id)? {
                return Err(not_found());
            }
            edit.audit(tx, "webhook.deleted")
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
