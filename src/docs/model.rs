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
