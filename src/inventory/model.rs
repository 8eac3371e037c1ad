//! Stock DTOs.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ids::{AdjustmentId, ProductId, VariantId};

/// One variant's stock.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InventoryItem {
    pub variant_id: VariantId,
    pub product_id: ProductId,
    pub sku: String,
    pub on_hand: i64,
    pub reserved: i64,
    pub available: i64,
    pub low_stock_threshold: i64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct InventoryFilter {
    pub product_id: Option<ProductId>,
    /// Only variants at or below their low-stock threshold (`true`) or above it (`false`).
    pub low_stock: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdjustmentIn {
    /// Units to add (positive) or take off hand (negative); not zero.
    #[schema(minimum = -1_000_000, maximum = 1_000_000)]
    pub delta: i64,
    /// Why, e.g. "received", "damaged", "recount"; 1 to 255 characters.
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub reason: String,
}

/// A recorded adjustment and the variant's stock after it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdjustmentOut {
    pub id: AdjustmentId,
    pub variant_id: VariantId,
    pub delta: i64,
    pub reason: String,
    pub on_hand: i64,
    pub reserved: i64,
    pub available: i64,
    pub low_stock_threshold: i64,
    pub created_at: String,
}
