//! Identity (spec 2.4, 2.6, 3, 4.1, 5; issue 3): accounts, sign-in, rotating sessions.
//!
//! Invariants:
//! - Secrets are stored as hashes only: passwords as argon2id PHC strings (computed on the
//!   bounded `Hasher` pool, never on an async worker), tokens as sha256.
//! - A session owns token pairs; ending the session (logout, device revoke, password change,
//!   deactivation, refresh-token reuse) kills every token of it on its next use.
//! - Refresh runs in one writer transaction, so concurrent presentations of one token each
//!   land on exactly one row of spec 3's table and at most one pair is ever live.
//! - An unknown e-mail costs the same as a wrong password and answers the same.
//! - Every request's bearer token is resolved here (`store::CredentialTables`, the
//!   `http::auth::Credentials` that `state.rs` registers), in one read with the account.

pub mod device;
pub mod handlers;
pub mod model;
pub mod otp;
pub mod password;
pub mod session;
pub mod store;
pub mod totp;
pub mod two_factor;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::register))
        .routes(routes!(handlers::login))
        .routes(routes!(handlers::refresh))
        .routes(routes!(handlers::logout))
        .routes(routes!(handlers::get_me, handlers::update_me))
        .routes(routes!(handlers::change_password))
        .routes(routes!(handlers::list_sessions))
        .routes(routes!(handlers::delete_session))
        .routes(routes!(two_factor::totp_setup))
        .routes(routes!(two_factor::totp_enable))
        .routes(routes!(two_factor::totp_disable))
        .routes(routes!(two_factor::regenerate_recovery_codes))
        .routes(routes!(two_factor::verify_totp))
        .routes(routes!(two_factor::verify_recovery))
        .routes(routes!(otp::msgapp_enable))
        .routes(routes!(otp::msgapp_confirm))
        .routes(routes!(otp::msgapp_disable))
        .routes(routes!(otp::otp_send))
        .routes(routes!(otp::otp_verify))
}
