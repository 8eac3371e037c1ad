//! The storefront API (issue 19; spec 9.1: "a separate Storefront API under
//! `/v1/storefront-api/...`", described by its own OpenAPI document): what a shop's pages
//! call from the shopper's browser, with no account.
//!
//! Invariants:
//! - A store is named by its public key, the key of one of its `storefront_chat` channels
//!   (the one the chat widget's `data-key` already carries): one key per site, with the
//!   channel's `enabled` switch and `allowed_origins` (CORS and the `Origin` check, as the
//!   widget's routes). An unknown key is 404; a channel turned off or a site it does not
//!   allow, 403. Anonymous calls spend the per-address budget (spec 8).
//! - Shoppers see only `active` products, availability as a yes or no (never a stock
//!   count, not even in a 409), approved reviews without e-mails, and nothing of another
//!   store: every query is scoped by the key's store, and another store's product or cart
//!   is 404.
//! - Every active product has one stored row, its JSON as shoppers see it
//!   (`storefront_products`), equal to what `store::build` makes from the catalog now: every
//!   write that changes it (product writes, category deletes, stock moves that cross zero,
//!   review moderation) rewrites it in its own transaction (`store::refresh`). Product reads
//!   and lists copy those rows; nothing is built per request.
//! - Pages (the pages area's) show only while `published`: a draft's slug is 404.
//! - Carts answer only to their token (`X-Cart-Token`); their rules and the checkout are the
//!   carts area's (`carts::writes`), which these handlers call in one transaction each.

pub mod handlers;
pub mod model;
pub mod pages;
pub mod store;

use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ErrorBody, ErrorCode};
use crate::state::AppState;

/// The storefront's OpenAPI document, served at `GET /v1/openapi/storefront.json`.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "merchant-admin storefront API",
        description = "What a shop's pages call from the shopper's browser, with no account. \
Every path starts with the store's public key: the `key` of one of its chat channels \
(`storefront_chat`, the widget's `data-key`). Calls from a browser are answered to the \
channel's `allowed_origins` only (CORS); anonymous calls share a per-address budget \
(`RateLimit-*` headers, 429 `rate_limited`). Lists are pages (`data`, `has_more`, \
`next_cursor`); errors are `{error, code, details?}` as in the admin API.

A cart answers to the `token` it was created with, sent as `X-Cart-Token`; a wrong token \
or another store's cart is 404. Checkout places a `pending` order the store then takes \
payment for.",
    ),
    servers((url = "/v1", description = "API version 1")),
    components(schemas(ErrorBody, ErrorCode)),
)]
pub struct StorefrontDoc;

/// The storefront routes (relative to `/v1`), to be split off with their own document.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(StorefrontDoc::openapi())
        .routes(routes!(handlers::list_products))
        .routes(routes!(handlers::get_product))
        .routes(routes!(handlers::list_reviews))
        .routes(routes!(handlers::list_categories))
        .routes(routes!(handlers::create_cart))
        .routes(routes!(handlers::get_cart))
        .routes(routes!(handlers::add_item))
        .routes(routes!(handlers::update_item, handlers::remove_item))
        .routes(routes!(handlers::set_customer))
        .routes(routes!(handlers::checkout))
        .routes(routes!(handlers::recover_cart))
        .routes(routes!(pages::list_pages))
        .routes(routes!(pages::get_page))
}
