//! Customer DTOs.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::AppError;
use crate::ids::{CustomerId, StoreId};

/// A postal address. Every field is optional text; `country` is an ISO 3166-1 alpha-2 code.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Address {
    pub name: Option<String>,
    pub line1: Option<String>,
    pub line2: Option<String>,
    pub city: Option<String>,
    pub region: Option<String>,
    pub postal_code: Option<String>,
    pub country: Option<String>,
    pub phone: Option<String>,
}

/// A customer tag as stored: trimmed, 1 to 64 characters, no control characters (none
/// anywhere, a tab or a line break at an end included, as the documents say).
pub fn tag(raw: &str) -> Result<String, &'static str> {
    let t = raw.trim();
    if raw.chars().any(char::is_control) {
        Err("must not contain control characters")
    } else if t.is_empty() || t.chars().count() > 64 {
        Err("must be 1 to 64 characters")
    } else {
        Ok(t.to_owned())
    }
}

/// A tag in the documents, as [`tag`] takes it: no control characters, something that is
/// not a space, at most 64 characters.
pub fn tag_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    const NO_CONTROL: &str = r"\u0000-\u001F\u007F-\u009F";
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(64))
        .pattern(Some(format!(
            r"^[^{NO_CONTROL}]*[^\s{NO_CONTROL}][^{NO_CONTROL}]*$"
        )))
        .build()
}

/// A customer's tags: up to 50 (`null` or absent: none given). `schema_with` drops the
/// field's doc comment, so the description is here.
fn tags_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, SchemaType, Type};
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .description(Some(
            "Up to 50 tags of 1 to 64 characters (trimmed), no control characters; repeats \
             are kept once. A change replaces the tags.",
        ))
        .items(tag_schema())
        .max_items(Some(50))
        .examples([serde_json::json!(["vip"])])
        .build()
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomerIn {
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
    pub addresses: Option<Vec<Address>>,
    /// Default false.
    pub accepts_marketing: Option<bool>,
    /// Up to 50 tags of 1 to 64 characters; repeats are kept once.
    #[schema(schema_with = tags_schema)]
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomerPatch {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: Option<String>,
    #[schema(
        max_length = 254,
        pattern = r"^$|^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$"
    )]
    pub email: Option<String>,
    #[schema(pattern = r"^$|^\+?([ ().-]*[0-9]){6,15}[ ().-]*$")]
    pub phone: Option<String>,
    pub addresses: Option<Vec<Address>>,
    pub accepts_marketing: Option<bool>,
    /// Replaces the tags (up to 50 of 1 to 64 characters).
    #[schema(schema_with = tags_schema)]
    pub tags: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CustomerOut {
    pub id: CustomerId,
    pub store_id: StoreId,
    pub name: String,
    /// An e-mail address as stored: any the loose check took (inputs describe their ASCII
    /// subset), so no pattern here.
    #[schema(max_length = 254)]
    pub email: Option<String>,
    /// 6 to 15 digits, an optional leading `+` and the separators ` -().`.
    #[schema(pattern = r"^$|^\+?([ ().-]*[0-9]){6,15}[ ().-]*$")]
    pub phone: Option<String>,
    pub addresses: Vec<Address>,
    pub accepts_marketing: bool,
    /// Labels the merchant or a workflow's `tag_customer` step put on the customer.
    pub tags: Vec<String>,
    pub orders_count: i64,
    pub total_spent_cents: i64,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CustomerFilter {
    /// Part of a name, e-mail or phone, case-insensitive.
    pub search: Option<String>,
}

/// The e-mail as accounts store it (trimmed, lowercased, the same loose check); empty clears
/// it. The storefront's cart contact is checked the same way.
pub fn email(v: &str) -> Result<Option<String>, AppError> {
    let e = crate::text::normalize_email(v);
    if e.is_empty() {
        Ok(None)
    } else if crate::text::looks_like_email(&e) {
        Ok(Some(e))
    } else {
        Err(AppError::field("email", "is not an e-mail address"))
    }
}

/// Digits with an optional leading `+` and common separators; empty clears it.
pub fn phone(v: &str) -> Result<Option<String>, AppError> {
    let p = v.trim();
    if p.is_empty() {
        return Ok(None);
    }
    let digits = p.chars().filter(char::is_ascii_digit).count();
    let ok = (6..=15).contains(&digits)
        && p.chars()
            .enumerate()
            .all(|(i, c)| c.is_ascii_digit() || " -().".contains(c) || (c == '+' && i == 0));
    if ok {
        Ok(Some(p.to_owned()))
    } else {
        Err(AppError::field(
            "phone",
            "must be a phone number (6 to 15 digits)",
        ))
    }
}
