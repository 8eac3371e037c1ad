//! Purchasing DTOs.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::extract::present;
use crate::ids::{PurchaseOrderId, StoreId, SupplierId, VariantId};

/// A supplier's contact card (Shopify's "supplier" of a purchase order).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SupplierOut {
    pub id: SupplierId,
    pub store_id: StoreId,
    pub name: String,
    /// An e-mail address as stored: any the loose check took (inputs describe their ASCII
    /// subset), so no pattern here.
    #[schema(max_length = 254)]
    pub email: Option<String>,
    /// 6 to 15 digits, an optional leading `+` and the separators ` -().`.
    #[schema(pattern = r"^$|^\+?([ ().-]*[0-9]){6,15}[ ().-]*$")]
    pub phone: Option<String>,
    pub contact_name: Option<String>,
    pub notes: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SupplierIn {
    /// 1 to 255 characters.
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: String,
    /// An e-mail address (an empty string is none); the pattern is its plain ASCII subset.
    #[schema(
        max_length = 254,
        pattern = r"^$|^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$"
    )]
    pub email: Option<String>,
    /// 6 to 15 digits, an optional leading `+` and the separators ` -().`.
    #[schema(pattern = r"^$|^\+?([ ().-]*[0-9]){6,15}[ ().-]*$")]
    pub phone: Option<String>,
    /// Up to 255 characters.
    #[schema(max_length = 255)]
    pub contact_name: Option<String>,
    /// Up to 5,000 characters.
    #[schema(max_length = 5000)]
    pub notes: Option<String>,
}

/// Changes any subset; `null` (or an empty string) clears an optional field.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SupplierPatch {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(
        value_type = Option<String>,
        max_length = 254,
        pattern = r"^$|^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$"
    )]
    pub email: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(
        value_type = Option<String>,
        pattern = r"^$|^\+?([ ().-]*[0-9]){6,15}[ ().-]*$"
    )]
    pub phone: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 255)]
    pub contact_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 5000)]
    pub notes: Option<Option<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PurchaseOrderStatus {
    Draft,
    Ordered,
    PartiallyReceived,
    Received,
    Cancelled,
}

impl PurchaseOrderStatus {
    pub const ALL: [Self; 5] = [
        Self::Draft,
        Self::Ordered,
        Self::PartiallyReceived,
        Self::Received,
        Self::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Ordered => "ordered",
            Self::PartiallyReceived => "partially_received",
            Self::Received => "received",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether stock may be received against an order in this status.
    pub fn receivable(self) -> bool {
        matches!(self, Self::Ordered | Self::PartiallyReceived)
    }
}

/// One line: what was ordered of a variant, at what cost, and how much has arrived.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PurchaseOrderItem {
    pub variant_id: VariantId,
    pub quantity: i64,
    pub unit_cost_cents: i64,
    pub received_quantity: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PurchaseOrderOut {
    pub id: PurchaseOrderId,
    pub store_id: StoreId,
    /// Per-store sequence from 1001, as orders are numbered.
    pub number: i64,
    pub supplier_id: SupplierId,
    pub status: PurchaseOrderStatus,
    pub items: Vec<PurchaseOrderItem>,
    /// Sum of `quantity * unit_cost_cents` over the lines.
    pub total_cost_cents: i64,
    pub expected_at: Option<String>,
    pub note: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PurchaseOrderItemIn {
    pub variant_id: VariantId,
    /// 1 to 1,000,000 units.
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub quantity: i64,
    /// 0 to 100,000,000 cents.
    #[schema(minimum = 0, maximum = 100_000_000)]
    pub unit_cost_cents: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PurchaseOrderIn {
    pub supplier_id: SupplierId,
    /// 1 to 250 lines, one per variant of the store.
    #[schema(min_items = 1, max_items = 250)]
    pub items: Vec<PurchaseOrderItemIn>,
    /// RFC 3339 timestamp.
    #[schema(format = DateTime)]
    pub expected_at: Option<String>,
    /// Up to 5,000 characters.
    #[schema(max_length = 5000)]
    pub note: Option<String>,
}

/// Changes a draft; `items` replaces every line; `null` clears `expected_at` or `note`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PurchaseOrderPatch {
    pub supplier_id: Option<SupplierId>,
    #[schema(min_items = 1, max_items = 250)]
    pub items: Option<Vec<PurchaseOrderItemIn>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expected_at: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 5000)]
    pub note: Option<Option<String>>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiveItemIn {
    pub variant_id: VariantId,
    /// 1 or more units, at most what is left to receive on the line.
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub quantity: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiveIn {
    /// 1 to 250 lines of the order, each variant once.
    #[schema(min_items = 1, max_items = 250)]
    pub items: Vec<ReceiveItemIn>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PurchaseOrderFilter {
    pub status: Option<PurchaseOrderStatus>,
    pub supplier_id: Option<SupplierId>,
}
