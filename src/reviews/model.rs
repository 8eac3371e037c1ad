//! Review DTOs.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ids::{CustomerId, OrderId, ProductId, ReviewId, StoreId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    Pending,
    /// Shown on the storefront.
    Approved,
    Rejected,
}

impl ReviewStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReviewOut {
    pub id: ReviewId,
    pub store_id: StoreId,
    pub product_id: ProductId,
    pub customer_id: Option<CustomerId>,
    pub order_id: Option<OrderId>,
    pub author_name: String,
    pub author_email: String,
    pub title: String,
    pub body: String,
    pub rating: i64,
    pub status: ReviewStatus,
    pub is_verified_purchase: bool,
    pub created_at: String,
    pub updated_at: String,
    pub product_slug: String,
    pub product_title: String,
    /// The store's public reply; null without one.
    pub reply: Option<String>,
    /// When the reply was last set; null without one.
    pub replied_at: Option<String>,
}

/// A review imported from elsewhere (another platform, an e-mail campaign).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewIn {
    pub product_id: ProductId,
    pub customer_id: Option<CustomerId>,
    /// Makes the review a verified purchase when that order bought the product.
    pub order_id: Option<OrderId>,
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub author_name: String,
    #[schema(format = Email, max_length = 254)]
    pub author_email: String,
    #[schema(max_length = 255)]
    pub title: String,
    #[schema(max_length = 10000)]
    pub body: String,
    /// 1 to 5.
    #[schema(minimum = 1, maximum = 5)]
    pub rating: i64,
    /// Default `pending`.
    pub status: Option<ReviewStatus>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewPatch {
    /// Required.
    pub status: ReviewStatus,
    /// The store's public reply, at most 2,000 characters after trimming; `""` or null
    /// removes it, leaving it out keeps it.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schema(value_type = Option<String>)]
    pub reply: Option<Option<String>>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReviewFilter {
    pub status: Option<ReviewStatus>,
    pub product_id: Option<ProductId>,
}
