//! Cross-origin reads, for the chat widget a store embeds on its own site (issue 15) and the
//! storefront API its pages call (issue 19). Only the paths an area claims answer CORS at
//! all; every other route stays same-origin. The area decides which origins may read a claimed path: `http` names no area, so the inbox
//! implements [`CrossOrigin`] and `state.rs` registers it (as it registers `Credentials`).
//! tower-http's `CorsLayer` does the protocol (preflight, `Vary: Origin`); no credentials.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderName, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rusqlite::Connection;
use tower::{Layer, ServiceExt};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::error::AppError;
use crate::state::AppState;

/// Which paths may be read cross-origin, and by whom.
pub trait CrossOrigin: Send + Sync {
    /// The resource a path belongs to when its answers may be read cross-origin (a chat
    /// channel's key), `None` for every other path. Cheap: it runs on every request.
    fn resource(&self, path: &str) -> Option<String>;

    /// Whether pages served from `origin` may read the answers about `resource`. Runs on a
    /// database thread.
    fn allows(&self, c: &Connection, resource: &str, origin: &str) -> Result<bool, AppError>;
}

/// The middleware's state: the app and the one CORS policy built from it.
#[derive(Clone)]
pub struct Cors {
    st: AppState,
    layer: CorsLayer,
}

impl Cors {
    pub fn new(st: &AppState) -> Self {
        let app = st.clone();
        let allow = AllowOrigin::async_predicate(move |origin, parts| {
            let st = app.clone();
            let resource = st.cross_origin.resource(parts.uri.path());
            async move {
                let (Some(resource), Ok(origin)) = (resource, origin.to_str()) else {
                    return false;
                };
                let (origin, policy) = (origin.to_owned(), st.cross_origin.clone());
                // A lookup that fails denies: the browser then refuses to show the answer.
                st.db
                    .read(move |c| policy.allows(c, &resource, &origin))
                    .await
                    .unwrap_or(false)
            }
        });
        let layer = CorsLayer::new()
            .allow_origin(allow)
            // PUT, PATCH and DELETE: the storefront's cart lines and contact.
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
            ])
            .allow_headers([
                header::CONTENT_TYPE,
                header::AUTHORIZATION,
                HeaderName::from_static("x-visitor-token"),
                HeaderName::from_static("x-cart-token"),
                HeaderName::from_static("idempotency-key"),
            ])
            // What a script needs to back off and to report a problem.
            .expose_headers([
                header::RETRY_AFTER,
                HeaderName::from_static("ratelimit-limit"),
                HeaderName::from_static("ratelimit-remaining"),
                HeaderName::from_static("ratelimit-reset"),
                HeaderName::from_static(super::trace::TRACE_HEADER),
            ])
            .max_age(Duration::from_secs(600));
        Self {
            st: st.clone(),
            layer,
        }
    }
}

/// Answers preflights and adds `Access-Control-Allow-Origin` to every answer (errors too, so
/// the widget can read a 401 or 404) of the paths an area claims; passes the rest through.
pub async fn cors(State(cors): State<Cors>, req: Request, next: Next) -> Response {
    if cors.st.cross_origin.resource(req.uri().path()).is_none() {
        return next.run(req).await;
    }
    match cors.layer.layer(next).oneshot(req).await {
        Ok(res) => res,
        Err(never) => match never {},
    }
    .into_response()
}
