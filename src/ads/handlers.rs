//! Ad-network catalog handlers.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::model::{
    AdsSettingsBody, AdsSettingsIn, AdsSettingsOut, FeedQuery, FeedTokenOut, SyncOut,
};
use super::{feed, store, sync};
use crate::audit::{self, Actor};
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, Query};
use crate::http::permissions::Permission;
use crate::ids::StoreId;
use crate::secrets;
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The feed token's prefix (the neutral `svc` stem, spec 1).
const FEED_TOKEN_PREFIX: &str = "svc_feed_";

fn settings_out(st: &AppState, s: store::Settings) -> AdsSettingsOut {
    AdsSettingsOut {
        feed_token_set: s.feed_token_hash.is_some(),
        feed_token_created_at: s.feed_token_created_at,
        catalog_id: s.catalog_id,
        access_token_set: s.access_token_sealed.is_some(),
        sync_available: st.cfg.adnet_api_base.is_some(),
        last_sync_at: s.last_sync_at,
        last_sync_items: s.last_sync_items,
        last_sync_error: s.last_sync_error,
    }
}

fn feed_not_found() -> AppError {
    AppError::not_found("feed")
}

/// The store's products as a Google Merchant Center RSS 2.0 feed (`xmlns:g`): one `<item>`
/// per variant of an active product, with `g:id`, `g:item_group_id`, `g:title`,
/// `g:description`, `g:link`, `g:image_link`, `g:availability`, `g:price` (`129.90 BRL`)
/// and `g:condition`. Opened by the store's feed token in `token`, no bearer: a missing or
/// wrong token (or an unknown store) is 404, so the address reveals nothing without it.
#[utoipa::path(get, path = "/stores/{store_id}/ads/feed.xml", tag = "ads",
    params(("store_id" = StoreId, Path), FeedQuery),
    responses((status = 200, content_type = "application/rss+xml", body = String),
              (status = 404, body = ErrorBody)))]
pub async fn get_feed(
    State(st): State<AppState>,
    Path(store): Path<StoreId>,
    Query(q): Query<FeedQuery>,
) -> Result<Response, AppError> {
    let token = q.token.ok_or_else(feed_not_found)?;
    let fallback = st.public_url().to_owned();
    let body = st
        .db
        .read(move |c| {
            let s = store::get(c, store)?;
            let given = secrets::hash(&token);
            // Constant time against the stored hash; a store with no token opens nothing.
            let ok = s
                .feed_token_hash
                .as_deref()
                .is_some_and(|h| secrets::same(h, &given));
            if !ok {
                return Err(feed_not_found());
            }
            let name = crate::tenants::store::get_store(c, store)?
                .ok_or_else(feed_not_found)?
                .name;
            let site = store::site_base(c, store, &fallback)?;
            let items = store::feed_items(c, store, &site)?;
            feed::write(&name, &site, &items).map_err(AppError::internal)
        })
        .await?;
    let mut res = (StatusCode::OK, body).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/rss+xml; charset=utf-8"),
    );
    // The address carries the token: no shared cache keeps a copy.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(res)
}

/// Makes the store's feed token, or replaces it (the old one stops opening the feed at
/// once). The token and the feed's address are shown only in this answer.
#[utoipa::path(post, path = "/stores/{store_id}/ads/feed-token", tag = "ads",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)),
    responses((status = 201, body = FeedTokenOut), (status = 403, body = ErrorBody)))]
pub async fn rotate_feed_token(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Response, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let token = secrets::new_token(FEED_TOKEN_PREFIX);
    let hash = secrets::hash(&token);
    st.db
        .write(move |tx| {
            store::set_feed_token(tx, store, &hash, now)?;
            audit::record(
                tx,
                &actor,
                "ads.feed_token_rotated",
                "ads",
                &store.to_string(),
                now,
            )
        })
        .await?;
    let feed_url = format!(
        "{}/v1/stores/{store}/ads/feed.xml?token={token}",
        st.public_url()
    );
    // Carries a secret: a retry replays this token (sealed at rest) rather than rotating
    // again, and nothing caches it.
    Ok(crate::http::idempotency::sealed_store((
        StatusCode::CREATED,
        Json(FeedTokenOut { token, feed_url }),
    )))
}

/// The store's ad-network settings: whether a feed token and a catalog are set, and the
/// last push's outcome (tokens are never shown).
#[utoipa::path(get, path = "/stores/{store_id}/ads/settings", tag = "ads",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)),
    responses((status = 200, body = AdsSettingsOut), (status = 403, body = ErrorBody)))]
pub async fn get_settings(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Json<AdsSettingsOut>, AppError> {
    scope.require(Permission::MarketingRead)?;
    let store = scope.store_id;
    let s = st.db.read(move |c| store::get(c, store)).await?;
    Ok(Json(settings_out(&st, s)))
}

/// A catalog id: 1 to 128 of letters, digits, `-`, `_`, `.`.
fn check_catalog_id(v: &str) -> Result<String, AppError> {
    let ok = (1..=128).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(v.to_owned())
    } else {
        Err(AppError::field(
            "catalog_id",
            "must be 1 to 128 letters, digits, '-', '_' or '.'",
        ))
    }
}

/// Sets the ad network catalog the push sync writes to and its access token (stored
/// sealed, never returned), or clears both with nulls; one without the other is 422.
#[utoipa::path(put, path = "/stores/{store_id}/ads/settings", tag = "ads",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)), request_body = AdsSettingsBody,
    responses((status = 200, body = AdsSettingsOut), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn put_settings(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<AdsSettingsIn>,
) -> Result<Json<AdsSettingsOut>, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let store = scope.store_id;
    let catalog = match (input.catalog_id, input.access_token) {
        (None, None) => None,
        (Some(id), Some(token)) => {
            let id = check_catalog_id(id.trim())?;
            let token = token.trim();
            // It goes out in an `Authorization` header, which takes printable ASCII only:
            // anything else could be stored but never sent (every sync a 502).
            if token.is_empty()
                || token.len() > 4096
                || !token.bytes().all(|b| b.is_ascii_graphic())
            {
                return Err(AppError::field(
                    "access_token",
                    "must be 1 to 4096 printable ASCII characters, no spaces",
                ));
            }
            Some((id, st.secret_box.seal(token, &sync::token_aad(store))))
        }
        (Some(_), None) => {
            return Err(AppError::field(
                "access_token",
                "is required with catalog_id",
            ));
        }
        (None, Some(_)) => {
            return Err(AppError::field(
                "catalog_id",
                "is required with access_token",
            ));
        }
    };
    let (actor, now) = (Actor::of(&scope), st.clock.now());
    let s = st
        .db
        .write(move |tx| {
            let set = catalog
                .as_ref()
                .map(|(id, sealed)| (id.as_str(), sealed.as_slice()));
            store::set_catalog(tx, store, set, now)?;
            audit::record(
                tx,
                &actor,
                "ads.settings_updated",
                "ads",
                &store.to_string(),
                now,
            )?;
            store::get(tx, store)
        })
        .await?;
    Ok(Json(settings_out(&st, s)))
}

/// Pushes the store's catalog to the ad network now: 200 with what was sent; 502
/// `adnet_sync_failed` with the provider's error (also recorded in the settings); 409
/// `conflict` when the store has no catalog settings; 503 `service_unavailable` when the
/// server has no `--adnet-api-base`.
#[utoipa::path(post, path = "/stores/{store_id}/ads/sync", tag = "ads",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)),
    responses((status = 200, body = SyncOut), (status = 403, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`conflict`: the ad network is not configured"), (status = 502, body = ErrorBody, description = "`adnet_sync_failed`"),
              (status = 503, body = ErrorBody)))]
pub async fn sync_now(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Json<SyncOut>, AppError> {
    scope.require(Permission::MarketingWrite)?;
    let (store, actor) = (scope.store_id, Actor::of(&scope));
    let out = sync::push(&st, store)
        .await?
        .map_err(sync::PushError::into_app_error)?;
    let now = st.clock.now();
    st.db
        .write(move |tx| audit::record(tx, &actor, "ads.synced", "ads", &store.to_string(), now))
        .await?;
    Ok(Json(out))
}
