//! What the storefront shows a shopper: the catalog as it is on sale (availability as a
//! yes or no, never a count), approved reviews without their authors' e-mails, and carts.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::carts::model::CartOut;
use crate::catalog::model::{CategoryOut, ProductOut};
use crate::ids::{CategoryId, OrderId, ProductId, ReviewId, VariantId};

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StorefrontVariant {
    pub id: VariantId,
    pub sku: String,
    pub title: String,
    pub price_cents: i64,
    pub compare_at_price_cents: Option<i64>,
    /// At least one unit can be bought now.
    pub available: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StorefrontProduct {
    pub id: ProductId,
    pub title: String,
    pub slug: String,
    pub description: String,
    pub category_ids: Vec<CategoryId>,
    pub tags: Vec<String>,
    pub variants: Vec<StorefrontVariant>,
    /// Any variant is available.
    pub available: bool,
    /// Mean of the approved reviews' ratings, two decimals; null without any.
    pub rating_average: Option<f64>,
    pub rating_count: i64,
    pub created_at: String,
}

impl StorefrontProduct {
    /// The product as shown to shoppers; `available(variant)` says whether a unit is free.
    pub fn from_product(p: ProductOut, available: impl Fn(VariantId) -> bool) -> Self {
        let variants: Vec<StorefrontVariant> = p
            .variants
            .into_iter()
            .map(|v| StorefrontVariant {
                available: available(v.id),
                id: v.id,
                sku: v.sku,
                title: v.title,
                price_cents: v.price_cents,
                compare_at_price_cents: v.compare_at_price_cents,
            })
            .collect();
        Self {
            id: p.id,
            title: p.title,
            slug: p.slug,
            description: p.description,
            category_ids: p.category_ids,
            tags: p.tags,
            available: variants.iter().any(|v| v.available),
            variants,
            rating_average: p.rating_average,
            rating_count: p.rating_count,
            created_at: p.created_at,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StorefrontProductFilter {
    pub category_id: Option<CategoryId>,
    /// Part of a title or SKU, case-insensitive.
    pub search: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StorefrontCategory {
    pub id: CategoryId,
    pub parent_id: Option<CategoryId>,
    pub name: String,
    pub slug: String,
}

impl From<CategoryOut> for StorefrontCategory {
    fn from(c: CategoryOut) -> Self {
        Self {
            id: c.id,
            parent_id: c.parent_id,
            name: c.name,
            slug: c.slug,
        }
    }
}

/// An approved review as shoppers see it (no e-mail, no customer or order).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StorefrontReview {
    pub id: ReviewId,
    pub author_name: String,
    pub title: String,
    pub body: String,
    /// 1 to 5.
    pub rating: i64,
    pub is_verified_purchase: bool,
    /// The store's public reply; null without one.
    pub reply: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CartItemIn {
    pub variant_id: VariantId,
    /// 1 to 10000, added to the line's quantity (which holds at most 10000).
    #[schema(minimum = 1, maximum = 10_000)]
    pub quantity: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CartItemPatch {
    /// 1 to 10000: the line's new quantity (remove a line with DELETE).
    #[schema(minimum = 1, maximum = 10_000)]
    pub quantity: i64,
}

/// The shopper's contact: at least one is needed to check out; an empty string clears it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CartCustomerIn {
    /// An e-mail address, or `""` to clear it.
    #[schema(max_length = 254, pattern = r"^$|^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$")]
    pub email: Option<String>,
    /// 6 to 15 digits, an optional leading `+` (the API also takes the separators ` -().`
    /// between digits), or `""` to clear it.
    #[schema(pattern = r"^$|^\+?[0-9]{6,15}$")]
    pub phone: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutIn {
    /// A note for the store (at most 5,000 characters).
    #[schema(max_length = 5000)]
    pub note: Option<String>,
}

/// The order a checkout placed, as the shopper may see it; payment follows (the store or
/// its payment provider marks it paid).
#[derive(Debug, Serialize, ToSchema)]
pub struct PlacedOrder {
    pub id: OrderId,
    /// The store's order number (from 1001).
    pub number: i64,
    /// `pending` until paid.
    pub status: String,
    pub subtotal_cents: i64,
    pub total_cents: i64,
    pub currency: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CheckoutOut {
    pub order: PlacedOrder,
    pub cart: CartOut,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RecoverQuery {
    /// Unix seconds the link ends at.
    pub expires: i64,
    pub signature: String,
}
