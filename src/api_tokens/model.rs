//! Store API token DTOs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::http::permissions::Permission;
use crate::ids::{ApiTokenId, UserId};

/// The schema of one requested scope: a permission code ([`Permission::ALL`]) or `*`, the
/// set `check_scopes` knows.
pub struct ScopeCode;

impl utoipa::PartialSchema for ScopeCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let codes = std::iter::once("*").chain(Permission::ALL.iter().map(|p| p.code()));
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(codes))
            .into()
    }
}

impl ToSchema for ScopeCode {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ScopeCode")
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenIn {
    /// A label, recorded in the audit trail next to the issuing user.
    #[schema(min_length = 1, max_length = 120, pattern = r"\S")]
    pub name: String,
    /// Permission codes, or `["*"]` for everything the issuing user can do in the store
    /// (`*` stands alone; a code the issuer does not hold here is 422).
    #[schema(value_type = Vec<ScopeCode>, min_items = 1)]
    pub scopes: Vec<String>,
    /// Optional expiry (RFC 3339, in the future); null or absent means until revoked.
    #[schema(format = DateTime)]
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
