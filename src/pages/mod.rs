//! Storefront pages (issue 20 "Storefront pages (CMS)"; spec 4.10, permissions per spec 5
//! rule 10): a store's content pages (About, Shipping policy...), written in markdown and
//! published on the storefront API.
//!
//! Invariants:
//! - A slug is 1 to 100 of `[a-z0-9-]` and names one page of the store: the unique index
//!   `pages_by_slug` decides (409 `slug_taken`), so concurrent creates cannot both take
//!   it. Omitted, it is derived from the title with a free `-N` suffix (Shopify's handle).
//! - `body_html` is rendered from `body_markdown` and sanitised (ammonia's allow-list) when
//!   the page is saved, never per request: no scripts, event handlers or `javascript:`
//!   links reach a shopper.
//! - A save that changes the slug, title, body or seo keeps the content it replaces as a
//!   version and bumps `version`; the last 20 versions are kept, pruned in the same
//!   transaction. A restore is such a save.
//! - `published_at` is set the first time a page is published; shoppers see a page only
//!   while its status is `published` (a draft, or another store's page, is 404 there).
//! - Reads need `cms.read`, writes `cms.write`; every query is scoped by store, and every
//!   write publishes `pages.created|updated|deleted` with its audit entry in its
//!   transaction.

pub mod handlers;
pub mod model;
pub mod store;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_pages, handlers::create_page))
        .routes(routes!(
            handlers::get_page,
            handlers::update_page,
            handlers::delete_page
        ))
        .routes(routes!(handlers::list_page_versions))
        .routes(routes!(handlers::restore_page_version))
}
