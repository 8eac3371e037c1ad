//! Store API token DTOs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ids::{ApiTokenId, UserId};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenIn {
    /// A label, recorded in the audit trail next to the issuing user.
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: String,
    /// Permission codes, or `["*"]` for everything the issuing user can do in the store.
    pub scopes: Vec<String>,
    /// Optional expiry (RFC 3339); null or absent means until revoked.
    pub expires_at: Option<String>,
}

/// A store API token. `value` is present only in the create and rotate responses.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenOut {
    pub id: ApiTokenId,
    pub name: String,
    pub scopes: Vec<String>,
    /// The last four characters of the value.
    pub last4: String,
    pub created_by: UserId,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}
