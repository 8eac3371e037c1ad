//! Cart DTOs: what the storefront, the admin routes and the recovery events show of a cart.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ids::{CartId, ConversationId, OrderId, ProductId, StoreId, VariantId};

crate::text_enum! {
    /// `open` while the shopper fills it; `abandoned` once untouched for the abandonment
    /// delay with a contact and items (`carts.abandoned`); `converted` once checked out, or
    /// `recovered` when that checkout came after abandonment (`carts.recovered`).
    pub enum CartStatus {
        Open = "open",
        Abandoned = "abandoned",
        Recovered = "recovered",
        Converted = "converted",
    }
}

impl CartStatus {
    /// Whether the cart can still change (items, contact, checkout).
    pub fn is_editable(self) -> bool {
        matches!(self, Self::Open | Self::Abandoned)
    }
}

/// A line at the catalog's current price (the checkout copies the price into the order).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CartItemOut {
    pub variant_id: VariantId,
    pub product_id: ProductId,
    /// The product's title.
    pub title: String,
    pub variant_title: String,
    pub sku: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
    pub total_cents: i64,
    /// Whether `quantity` can be bought now (the product is on sale and enough units are
    /// in stock); never how many there are.
    pub available: bool,
}

/// How to reach the shopper: what recovery writes to.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct CartCustomer {
    pub email: Option<String>,
    pub phone: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CartOut {
    pub id: CartId,
    pub store_id: StoreId,
    pub status: CartStatus,
    pub items: Vec<CartItemOut>,
    /// The lines' totals at current prices.
    pub subtotal_cents: i64,
    pub currency: String,
    pub customer: CartCustomer,
    /// The order the checkout created; null before.
    pub order_id: Option<OrderId>,
    pub created_at: String,
    /// The last change; abandonment counts from it.
    pub updated_at: String,
    pub abandoned_at: Option<String>,
}

/// A cart with the shopper's secret, shown only when the cart is created or recovered.
#[derive(Debug, Serialize, ToSchema)]
pub struct CartWithToken {
    #[serde(flatten)]
    pub cart: CartOut,
    /// Send it back as `X-Cart-Token` on every call about this cart; it is shown only here.
    pub token: String,
}

/// `carts.abandoned`'s data.
#[derive(Debug, Serialize, ToSchema)]
pub struct CartAbandoned {
    pub cart: CartOut,
    pub customer: CartCustomer,
    /// Opens the cart again (`GET /storefront-api/{key}/carts/{id}/recover?...`), signed;
    /// null when the cart has no chat channel to name.
    pub recovery_url: Option<String>,
}

/// `carts.recovered`'s data.
#[derive(Debug, Serialize, ToSchema)]
pub struct CartRecovered {
    pub cart: CartOut,
    pub order_id: OrderId,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CartFilter {
    pub status: Option<CartStatus>,
}

/// `POST /stores/{id}/conversations/{conversation_id}/cart`: with `cart_id`, attach that open
/// cart of the store (a shopper's from the storefront, say) instead of opening a new one.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationCartIn {
    pub cart_id: Option<CartId>,
}

/// One line of an assisted-sale cart, as the team sets it.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CartLineIn {
    pub variant_id: VariantId,
    /// 1 to 10000: the line's quantity.
    #[schema(minimum = 1, maximum = 10_000)]
    pub quantity: i64,
}

/// `PUT .../cart/items`: the cart's whole list of lines, in order (an empty list empties it).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CartLinesIn {
    /// Up to 100 lines, each variant once.
    #[schema(max_items = 100)]
    pub items: Vec<CartLineIn>,
}

/// `POST .../cart/send`: the text before the link; a short default without it.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CartLinkIn {
    pub text: Option<String>,
}

/// `cart:updated`'s data on both sockets (spec 6.2, 6.3): the conversation's cart as it now
/// is, or null once detached. No cart carries its token.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CartUpdated {
    pub conversation_id: ConversationId,
    pub cart: Option<CartOut>,
}
