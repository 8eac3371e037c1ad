//! Cross-cutting HTTP (issue 2 §4): the layers every route gets, and the fallbacks.
//! This module imports no domain module.
//!
//! Per-route layers, outermost first: `trace` (trace id, client address, the log line) →
//! request deadline (408 for a body still arriving when it passes) → `authenticate` (bearer
//! token to principal) → `rate_limit` → `cors` (the widget's paths only; preflights and
//! their lookup count against the caller's budget) → header-size guard → body read timeout
//! → `idempotency` → catch-panic → handler. `versioning` wraps the whole router, because it
//! rewrites paths before routing.

pub mod assets;
pub mod auth;
pub mod cors;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod openapi;
pub mod openapi_examples;
pub mod page;
pub mod permissions;
pub mod rate_limit;
pub mod server;
pub mod trace;
pub mod versioning;

use std::any::Any;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;

use crate::error::{AppError, ErrorCode};
use crate::state::AppState;

/// Default body limit of JSON endpoints; an endpoint that takes uploads sets its own.
pub const BODY_LIMIT: usize = 1024 * 1024;

/// Adds the fallbacks and the shared layers to a fully routed router.
pub fn apply_layers(router: Router<AppState>, st: &AppState) -> Router<AppState> {
    router
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(from_fn_with_state(st.clone(), idempotency::idempotency))
        .layer(RequestBodyTimeoutLayer::new(st.cfg.body_timeout))
        .layer(from_fn(trace::limit_headers))
        .layer(from_fn_with_state(cors::Cors::new(st), cors::cors))
        .layer(from_fn_with_state(st.clone(), rate_limit::rate_limit))
        .layer(from_fn_with_state(st.clone(), auth::authenticate))
        .layer(from_fn(server::request_deadline))
        .layer(from_fn_with_state(st.clone(), trace::trace))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
}

async fn route_not_found() -> Response {
    let mut res = AppError::new(
        ErrorCode::RouteNotFound,
        "no such route; see /v1/openapi/admin.json",
    )
    .into_response();
    res.extensions_mut().insert(versioning::RouteNotFound);
    res
}

async fn method_not_allowed() -> AppError {
    AppError::new(
        ErrorCode::MethodNotAllowed,
        "this route does not accept that method",
    )
}

/// A panicking handler answers the opaque 500; the panic text goes to the log only (this
/// runs inside the request's span, so the log line carries the trace id).
#[expect(
    clippy::needless_pass_by_value,
    reason = "the signature CatchPanicLayer::custom requires"
)]
fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let text = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = text, "handler panicked");
    AppError::new(ErrorCode::InternalError, "internal error").into_response()
}
