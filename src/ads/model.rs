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

/// Sets (both fields) or clears (both null) the catalog the push sync writes to. Its
/// schema is [`AdsSettingsBody`], which says that the two go together.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AdsSettingsFields)]
pub struct AdsSettingsIn {
    /// 1 to 128 of letters, digits, `-`, `_` and `.`.
    #[schema(pattern = r"^\s*[A-Za-z0-9._-]{1,128}\s*$", example = "catalog-1")]
    pub catalog_id: Option<String>,
    /// 1 to 4,096 printable ASCII characters, no spaces (it is sent as a bearer token);
    /// stored sealed and never returned.
    #[schema(pattern = r"^\s*[!-~]{1,4096}\s*$", example = "adnet-token-123")]
    pub access_token: Option<String>,
}

/// [`AdsSettingsIn`] as the handler takes it: both fields set, or both null (or absent).
pub struct AdsSettingsBody;

impl utoipa::PartialSchema for AdsSettingsBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
        let fields = || match <AdsSettingsIn as utoipa::PartialSchema>::schema() {
            RefOr::T(Schema::Object(o)) => o,
            _ => unreachable!("a struct's schema is an object"),
        };
        let mut set = fields();
        for field in ["catalog_id", "access_token"] {
            if let Some(RefOr::T(Schema::Object(f))) = set.properties.get_mut(field) {
                f.schema_type = Type::String.into();
            }
        }
        set.required = vec!["catalog_id".to_owned(), "access_token".to_owned()];
        set.description = Some("Sets the catalog and its access token.".to_owned());
        let mut clear = fields();
        for field in ["catalog_id", "access_token"] {
            clear.properties.insert(
                field.to_owned(),
                ObjectBuilder::new().schema_type(Type::Null).into(),
            );
        }
        clear.description = Some("Clears them.".to_owned());
        OneOfBuilder::new()
            .description(Some(
                "Sets (both fields) or clears (both null) the catalog the push sync writes to.",
            ))
            .item(set)
            .item(clear)
            .into()
    }
}

impl ToSchema for AdsSettingsBody {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("AdsSettingsIn")
    }
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
