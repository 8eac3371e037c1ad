//! Organization and store DTOs (issue 4).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::model::Locale;
use crate::ids::{StoreId, TenantId};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantIn {
    pub name: String,
    /// A plan of the catalog; the billing area checks it.
    pub plan_code: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantPatch {
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
    pub name: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StorePatch {
    pub name: Option<String>,
}

/// A store.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StoreOut {
    pub id: StoreId,
    pub tenant_id: TenantId,
    pub name: String,
    pub slug: String,
    pub created_at: String,
}

/// One permission of the catalog.
#[derive(Debug, Serialize, ToSchema)]
pub struct PermissionOut {
    pub code: &'static str,
    pub area: &'static str,
    pub description: &'static str,
}
