//! The brand system (issue 18 "Brand system"; spec 2.11, 3 "Brand system", 4.7): a store's
//! colors, type, voice and assets, kept as versions.
//!
//! Invariants:
//! - Versions are immutable (a trigger refuses updates) and numbered 1, 2, … per store; the
//!   current system is the highest. A restore saves the old system as a new version, never
//!   moving back.
//! - A new store starts with version 1, a default built from its name, written in the
//!   transaction that creates the store (`tenants::store::create_store`); a store made
//!   before this area existed gets it on its first read or write.
//! - Every key of `system` is required and typed (`deny_unknown_fields`), and its values are
//!   checked ([`system::check`]); a stored version is always valid.
//! - Every version the merchant saves (PUT, restore, an approved generation) publishes
//!   `brand_system.updated` with its audit entry and sets `stores.brand_updated_at` (the
//!   onboarding checklist's `brand` step), in one transaction, through [`writes`]; the
//!   default version does neither.
//! - A generation writes nothing of the brand: the model's answer becomes an assistant
//!   proposal, applied through [`writes::save`] only when its user approves it.

pub mod generate;
pub mod handlers;
pub mod model;
pub mod store;
pub mod system;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(
            handlers::get_brand_system,
            handlers::save_brand_system
        ))
        .routes(routes!(handlers::restore_brand_version))
        .routes(routes!(handlers::generate_brand_system))
}
