//! The browsable API reference (issue 21; spec 9.1): `GET /docs/api` shows the admin API's
//! OpenAPI document and `GET /docs/api/storefront` the storefront's, in RapiDoc (MIT, vendored
//! from the npm registry at 9.3.8, its licences beside it in `assets/reference/`).
//!
//! Invariants:
//! - Fully offline: the viewer, its stylesheet and the documents come from this server, and
//!   the page's CSP allows nothing else (no fonts, scripts or connections elsewhere), so a
//!   reader on a closed network sees the whole reference.
//! - The paths live at the root only (`versioning::ROOT_PATHS`), like the widget: they are
//!   pages about the API, not part of it, so they are not in the OpenAPI document.
//! - "Try it" requests go to this origin's `/v1` with the token the reader types in; the
//!   page keeps no token (`persist-auth="false"`).

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rust_embed::{EmbeddedFile, RustEmbed};

use crate::http::assets;
use crate::state::AppState;

#[derive(RustEmbed)]
#[folder = "assets/reference/"]
struct Assets;

/// The viewer changes only with a new build: a day's cache, revalidated by ETag.
const ASSET_CACHE: &str = "public, max-age=86400";

/// The page's CSP: its own origin for everything; RapiDoc styles its shadow DOM inline.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     connect-src 'self'; img-src 'self' data:; font-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The reference's routes, at the root.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/docs/api", get(admin))
        .route("/docs/api/storefront", get(storefront))
        .route("/docs/api/rapidoc-min.js", get(script))
        .route("/docs/api/reference.css", get(style))
}

fn asset(name: &str) -> EmbeddedFile {
    Assets::get(name).unwrap_or_else(|| panic!("assets/reference/{name} is embedded"))
}

async fn admin() -> Response {
    page("Admin API", "/v1/openapi/admin.json", true)
}

async fn storefront() -> Response {
    page("Storefront API", "/v1/openapi/storefront.json", false)
}

/// The viewer page for one document; the values filled in are constants, never input.
fn page(title: &str, spec: &str, admin: bool) -> Response {
    let template = asset("index.html");
    let current = |yes: bool| if yes { " aria-current=\"page\"" } else { "" };
    let html = String::from_utf8_lossy(&template.data)
        .replace("{{title}}", title)
        .replace("{{spec}}", spec)
        .replace("{{admin_current}}", current(admin))
        .replace("{{storefront_current}}", current(!admin));
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    (headers, html).into_response()
}

async fn script(req: HeaderMap) -> Response {
    assets::serve(
        asset("rapidoc-min.js"),
        "application/javascript; charset=utf-8",
        ASSET_CACHE,
        &req,
    )
}

async fn style(req: HeaderMap) -> Response {
    assets::serve(
        asset("reference.css"),
        "text/css; charset=utf-8",
        ASSET_CACHE,
        &req,
    )
}
