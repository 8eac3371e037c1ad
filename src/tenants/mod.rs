//! Organizations (tenants), stores and permissions (spec 4.10, 5; issue 4).
//!
//! Invariants:
//! - Every store route takes a `StoreScope`: a store the caller cannot see is 404, and
//!   `scope.require(permission)` is the one permission check.
//! - Owners of an organization are owners of each of its stores; a store's creator is
//!   recorded as its owner too.
//! - Slugs are derived once, at creation, and are unique (organizations globally, stores
//!   within their organization): 409 `slug_taken`.
//! - A store's settings (payment methods, shipping zones, custom domain; issue 17) are all
//!   validated before one write; a custom domain belongs to one store. Each records when it
//!   was set, which the onboarding checklist ([`onboarding`], spec 4.4) reports; the
//!   checklist itself is never stored.

pub mod handlers;
pub mod invites;
pub mod members;
pub mod model;
pub mod onboarding;
pub mod settings;
pub mod store;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    let router = OpenApiRouter::new();
    router
        .routes(routes!(handlers::create_tenant, handlers::list_tenants))
        .routes(routes!(handlers::get_tenant, handlers::update_tenant))
        .routes(routes!(handlers::create_store, handlers::list_stores))
        .routes(routes!(handlers::get_store, handlers::update_store))
        .routes(routes!(handlers::permission_catalog))
        .routes(routes!(onboarding::get_onboarding))
        .routes(routes!(members::list_members))
        .routes(routes!(members::update_member, members::remove_member))
        .routes(routes!(invites::create_invite))
        .routes(routes!(invites::accept_invite))
}
