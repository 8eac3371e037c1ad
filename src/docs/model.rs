//! Documentation question DTOs.

use serde::Deserialize;
use utoipa::ToSchema;

/// A question about the product.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AskIn {
    /// 1 to 1000 characters, not all blank.
    pub question: String,
    /// Who is asking, as the client knows them (1 to 128 characters, for example an id kept in
    /// the browser): questions are counted per visitor id, else per client address.
    pub visitor_id: Option<String>,
}

/// The schema of a documentation page's name: one of the guides ([`super::pages::SLUGS`]).
pub struct DocSlug;

impl utoipa::PartialSchema for DocSlug {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(super::pages::SLUGS))
            .into()
    }
}

impl utoipa::ToSchema for DocSlug {}
