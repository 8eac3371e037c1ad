//! Organization and store DTOs (issue 4).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::model::Locale;
use crate::ids::{StoreId, TenantId};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantIn {
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: String,
    /// A plan of the catalog; the billing area checks it.
    pub plan_code: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantPatch {
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: Option<String>,
    /// An IANA time zone name such as `America/Sao_Paulo`.
    pub timezone: Option<String>,
    pub locale: Option<Locale>,
}

/// An organization (tenant).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TenantOut {
    pub id: TenantId,
    pub name: String,
    pub slug: String,
    pub currency: String,
    pub timezone: String,
    pub locale: Locale,
    pub created_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreIn {
    pub tenant_id: TenantId,
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: String,
}

/// Any of a store's name and settings; a field left out is kept. The settings are what the
/// onboarding checklist reads.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StorePatch {
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: Option<String>,
    /// The payment methods the store accepts; duplicates are dropped, the first occurrence's
    /// order kept. `[]` clears them (null is refused).
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schema(value_type = Vec<PaymentMethod>)]
    pub payment_methods: Option<Option<Vec<PaymentMethod>>>,
    /// Where the store delivers and at what price: at most 50 zones, each Brazilian state in
    /// at most one of them. `[]` clears them (null is refused).
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schema(value_type = Vec<ShippingZoneIn>, max_items = 50)]
    pub shipping_zones: Option<Option<Vec<ShippingZoneIn>>>,
    /// The store's own host name, lowercase, with at least one dot and no scheme, port or
    /// path (`shop.example.com.br`), at most 253 characters; null removes it. One store per
    /// domain: 409 `conflict` when another store has it.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schema(
        value_type = Option<String>,
        max_length = 253,
        pattern = r"^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$",
        example = "shop.example.com.br"
    )]
    pub custom_domain: Option<Option<String>>,
}

/// A way a store's customers can pay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PaymentMethod {
    Pix,
    CreditCard,
    Boleto,
    BankTransfer,
    CashOnDelivery,
}

/// The schema of a zone's `regions`: one or more of the codes the handler takes (as it
/// stores them; it also takes them in lower case).
fn uf_codes() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(super::settings::UF_CODES)),
        )
        .min_items(Some(1))
        .build()
}

/// A shipping zone as sent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ShippingZoneIn {
    /// 1 to 80 characters, unique among the store's zones (ignoring case).
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
    /// Brazilian state codes (UF) such as `SP` or `RJ`; at least one. Sent in any case,
    /// stored uppercase, duplicates dropped.
    #[schema(schema_with = uf_codes)]
    pub regions: Vec<String>,
    /// The freight price in the zone, in cents.
    #[schema(minimum = 0)]
    pub price_cents: i64,
    /// Orders of at least this subtotal ship free; none when absent or null.
    #[schema(minimum = 0)]
    pub free_over_cents: Option<i64>,
}

/// A shipping zone as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ShippingZone {
    pub name: String,
    /// Uppercase Brazilian state codes (UF).
    pub regions: Vec<String>,
    pub price_cents: i64,
    /// Null when the zone never ships free.
    #[schema(required = true)]
    pub free_over_cents: Option<i64>,
}

/// A store.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StoreOut {
    pub id: StoreId,
    pub tenant_id: TenantId,
    pub name: String,
    pub slug: String,
    /// Empty until set.
    pub payment_methods: Vec<PaymentMethod>,
    /// Empty until set.
    pub shipping_zones: Vec<ShippingZone>,
    /// Null until set.
    #[schema(required = true)]
    pub custom_domain: Option<String>,
    pub created_at: String,
}

/// One permission of the catalog.
#[derive(Debug, Serialize, ToSchema)]
pub struct PermissionOut {
    pub code: &'static str,
    pub area: &'static str,
    pub description: &'static str,
}

/// A step of the onboarding checklist, in the order the checklist lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnboardingStepKey {
    /// At least one active product with stock available.
    Products,
    /// The store's `payment_methods` are set.
    Payments,
    /// The store's `shipping_zones` are set.
    Freight,
    /// The merchant saved a brand system (the brand area, issue 18).
    Brand,
    /// An enabled inbox channel of the messaging-app kind (`msgapp`).
    MessagingApp,
    /// A second store member, or an invite still pending and unexpired.
    Team,
    /// The store's `custom_domain` is set.
    CustomDomain,
    /// A payment recorded on one of the store's orders.
    FirstOrder,
}

/// One step of the onboarding checklist.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OnboardingStep {
    pub key: OnboardingStepKey,
    /// What to do, as a short sentence.
    pub title: &'static str,
    pub done: bool,
    /// When the step became done, as the data records it: the oldest qualifying product's
    /// creation, when the setting was set, the first qualifying channel's creation, the
    /// second member's joining or the first pending invite's creation, the first payment.
    /// Present only when `done` is true (omitted, never null).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub done_at: Option<String>,
    /// The admin API path (under `/v1`) whose call does the step.
    pub action_path: String,
}

/// The store's onboarding checklist, computed from its data when asked.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OnboardingOut {
    /// Every step, always in the same order.
    pub steps: Vec<OnboardingStep>,
    /// How many steps are done.
    pub completed: i64,
    /// How many steps there are.
    pub total: i64,
}
