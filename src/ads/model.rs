//! Ad-network catalog DTOs.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The store's ad-network settings as the API shows them: whether a feed token and an
/// access token exist, never the tokens themselves.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdsSettingsOut {
    /// A feed token exists (`POST .../ads/feed-token` makes or rotates it).
    pub feed_token_set: bool,
    pub feed_token_created_at: Option<String>,
    /// The ad network's catalog the push sync writes to.
    pub catalog_id: Option<String>,
    /// An access token for the catalog is stored (sealed; it is never returned).
    pub access_token_set: bool,
    /// The server has an ad network to push to (`--adnet-api-base`).
    pub sync_available: bool,
    /// When the last push (manual or scheduled) ran.
    pub last_sync_at: Option<String>,
    /// Items that push sent.
    pub last_sync_items: Option<i64>,
    /// The provider's error when the last push failed; null when it succeeded.
    pub last_sync_error: Option<String>,
}

/// Sets (both fields) or clears (both null) the catalog the push sync writes to.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdsSettingsIn {
    /// 1 to 128 of letters, digits, `-`, `_` and `.`.
    #[schema(pattern = r"^\s*[A-Za-z0-9._-]{1,128}\s*$", example = "catalog-1")]
    pub catalog_id: Option<String>,
    /// 1 to 4,096 printable ASCII characters, no spaces (it is sent as a bearer token);
    /// stored sealed and never returned.
    #[schema(pattern = r"^\s*[!-~]{1,4096}\s*$", example = "adnet-token-123")]
    pub access_token: Option<String>,
}

/// A new feed token: shown only in this answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FeedTokenOut {
    pub token: String,
    /// The feed's full address with the token, to give the ad network.
    pub feed_url: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FeedQuery {
    /// The store's feed token.
    pub token: Option<String>,
}

/// What a push sent.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SyncOut {
    pub catalog_id: String,
    /// Items sent (one per variant of an active product).
    pub items: i64,
    /// Requests it took (at most 500 items each).
    pub batches: i64,
    pub synced_at: String,
}

/// One item of the feed and of a push: Google Merchant Center's product attributes.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FeedItem {
    /// The variant's id.
    pub id: String,
    /// The product's id, shared by its variants.
    pub item_group_id: String,
    pub title: String,
    pub description: String,
    pub link: String,
    pub image_link: String,
    /// `in_stock` or `out_of_stock`.
    pub availability: String,
    /// `129.90 BRL`.
    pub price: String,
    /// Always `new`.
    pub condition: String,
    pub sku: String,
}
