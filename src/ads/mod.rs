//! Ad-network catalog (issue 20 "Ad-network catalog"; spec 4.10, 7 `adnet_sync_failed`):
//! the store's products as a Google Merchant Center RSS 2.0 feed, and a push of the same
//! items to an ad network's catalog API.
//!
//! Invariants:
//! - The feed (`GET .../ads/feed.xml?token=`) opens only with the store's feed token: 32
//!   random bytes, stored as its sha256, compared in constant time; a missing or wrong
//!   token is 404, as an unknown store is, so the address reveals nothing without it.
//!   Rotating it (`POST .../ads/feed-token`) stops the old one at once.
//! - The feed is XML written by quick-xml (every text escaped, characters XML cannot hold
//!   dropped): one item per variant of an active product, availability from stock.
//! - The catalog's access token is sealed with `secrets.key` (associated data: the store)
//!   and never returned. A push (manual or scheduled) records `last_sync_at`, its items or
//!   the provider's error on the store; a manual push that fails is 502
//!   `adnet_sync_failed`, a scheduled one is only recorded.
//! - Reads need `marketing.read`, writes `marketing.write`; every query is scoped by store,
//!   and every write records an audit entry.

pub mod feed;
pub mod handlers;
pub mod model;
pub mod store;
pub mod sync;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::get_feed))
        .routes(routes!(handlers::rotate_feed_token))
        .routes(routes!(handlers::get_settings, handlers::put_settings))
        .routes(routes!(handlers::sync_now))
}
