//! Storefront pages' DTOs.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::extract::present;
use crate::ids::PageId;

crate::text_enum! {
    /// Only `published` pages are shown on the storefront.
    pub enum PageStatus {
        Draft = "draft",
        Published = "published",
    }
}

/// What search engines show for the page; a missing field falls back to the page's own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Seo {
    /// Up to 70 characters.
    pub title: Option<String>,
    /// Up to 320 characters.
    pub description: Option<String>,
}

/// A storefront page (Shopify's online-store page): markdown in, sanitised HTML out.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PageOut {
    pub id: PageId,
    /// Lowercase letters, digits and hyphens; unique in the store (Shopify's handle).
    pub slug: String,
    pub title: String,
    pub body_markdown: String,
    /// Rendered from `body_markdown` and sanitised: no scripts, event handlers or
    /// `javascript:` links.
    pub body_html: String,
    pub status: PageStatus,
    /// When the page was first published; null until then.
    pub published_at: Option<String>,
    pub seo: Seo,
    /// 1 when created, +1 on each save that changes the slug, title, body or seo.
    pub version: i32,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PageIn {
    /// 1 to 255 characters.
    pub title: String,
    /// 1 to 100 of `[a-z0-9-]`; omitted, derived from the title (with `-2`, `-3`... when
    /// taken). A slug given and taken is 409 `slug_taken`.
    pub slug: Option<String>,
    /// Markdown, up to 256 KiB.
    #[serde(default)]
    pub body_markdown: String,
    /// Default `draft`.
    pub status: Option<PageStatus>,
    pub seo: Option<Seo>,
}

/// Changes any subset; `seo` replaces both fields (`null` clears them).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PagePatch {
    pub title: Option<String>,
    pub slug: Option<String>,
    pub body_markdown: Option<String>,
    pub status: Option<PageStatus>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Seo>)]
    pub seo: Option<Option<Seo>>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageFilter {
    pub status: Option<PageStatus>,
}

/// An earlier content of a page, as it was before a save replaced it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PageVersionOut {
    pub version: i32,
    pub slug: String,
    pub title: String,
    pub body_markdown: String,
    pub seo: Seo,
    /// When this content was saved.
    pub saved_at: String,
}

/// A published page as shoppers see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StorefrontPage {
    pub id: PageId,
    pub slug: String,
    pub title: String,
    pub body_html: String,
    pub seo: Seo,
    pub published_at: Option<String>,
    pub updated_at: String,
}

impl From<PageOut> for StorefrontPage {
    fn from(p: PageOut) -> Self {
        Self {
            id: p.id,
            slug: p.slug,
            title: p.title,
            body_html: p.body_html,
            seo: p.seo,
            published_at: p.published_at,
            updated_at: p.updated_at,
        }
    }
}
