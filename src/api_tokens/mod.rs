//! Store API tokens (spec 2.5, 3 token rows, 4.2, 5 rules 1–4; issue 4).
//!
//! Invariants:
//! - The value is shown once (create, rotate): `svc_st_` + 43 URL-safe characters from 32
//!   random bytes. Only its sha256 is stored; lists show `last4`.
//! - A token acts for its issuer in one store: its permissions are the issuer's there
//!   intersected with its scopes (`["*"]` = all of the issuer's), computed on every request,
//!   so a demoted or removed issuer narrows or kills the token at once.
//! - A scope the issuer does not hold cannot be granted (422).

pub mod handlers;
pub mod model;
pub mod store;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::create_token, handlers::list_tokens))
        .routes(routes!(handlers::rotate_token))
        .routes(routes!(handlers::delete_token))
}
