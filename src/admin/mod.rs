//! The admin web app (issue 23): what a merchant opens after `serve`, at `/` and `/admin/`.
//! Plain ES modules from `assets/admin/` (no build step), with Preact and htm vendored from
//! the npm registry, their licences beside them in `assets/admin/vendor/`.
//!
//! Invariants:
//! - The app is a client of the public `/v1` API and nothing else: these routes serve files
//!   only, with no session, cookie or server-side rendering of user data, so the API's own
//!   authentication and permission checks are the only ones there are.
//! - Fully offline under a strict CSP: scripts, styles, images and connections come from
//!   this origin only; the one inline script is the import map, allowed by its hash.
//! - Every file is revalidated (`no-cache` plus a strong ETag): file names carry no version,
//!   so a new binary's app is picked up on the next load, and an unchanged file costs a 304.
//! - Paths live at the root (`versioning::ROOT_PATHS` and `ROOT_FOLDERS`): they are not part
//!   of the API and not in its OpenAPI document.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use base64::Engine;
use rust_embed::RustEmbed;
use sha2::{Digest, Sha256};

use crate::error::AppError;
use crate::http::assets;
use crate::state::AppState;

#[derive(RustEmbed)]
#[folder = "assets/admin/"]
struct Assets;

/// Revalidate every time: names carry no version, and a 304 is cheap.
const CACHE: &str = "no-cache";

/// The app's routes, at the root.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/admin", get(|| async { Redirect::permanent("/admin/") }))
        .route("/admin/", get(index))
        .route("/admin/{*path}", get(file))
}

/// The import map's text inside `index.html`, whose hash the CSP allows.
fn import_map(html: &str) -> Option<&str> {
    let open = "<script type=\"importmap\">";
    let start = html.find(open)? + open.len();
    let len = html[start..].find("</script>")?;
    Some(&html[start..start + len])
}

fn csp(html: &str) -> String {
    let map_hash = import_map(html)
        .map(|m| {
            let digest = Sha256::digest(m.as_bytes());
            format!(
                " 'sha256-{}'",
                base64::engine::general_purpose::STANDARD.encode(digest)
            )
        })
        .unwrap_or_default();
    // connect-src 'self' also allows this origin's ws:/wss: (CSP 3), for the inbox socket.
    format!(
        "default-src 'none'; script-src 'self'{map_hash}; style-src 'self'; \
         connect-src 'self'; img-src 'self' data: blob:; font-src 'self'; \
         media-src 'self' blob:; manifest-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
}

async fn index(req: HeaderMap) -> Response {
    let Some(page) = Assets::get("index.html") else {
        return AppError::not_found("admin app").into_response();
    };
    let policy = csp(&String::from_utf8_lossy(&page.data));
    let mut res = assets::serve(page, "text/html; charset=utf-8", CACHE, &req);
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&policy) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

fn content_type(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1;
    Some(match ext {
        "js" | "mjs" => "application/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        "json" => "application/json",
        _ => return None,
    })
}

async fn file(Path(path): Path<String>, req: HeaderMap) -> Response {
    // Debug builds read from disk: no way out of the folder, whatever rust-embed checks.
    let safe = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..");
    let found = safe
        .then(|| content_type(&path).zip(Assets::get(&path)))
        .flatten();
    match found {
        Some((kind, f)) => assets::serve(f, kind, CACHE, &req),
        None => AppError::not_found("file").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csp_allows_exactly_the_import_map() {
        let html = "<head><script type=\"importmap\">{\"imports\":{}}</script></head>";
        assert_eq!(import_map(html), Some("{\"imports\":{}}"));
        let digest = Sha256::digest(b"{\"imports\":{}}");
        let b64 = base64::engine::general_purpose::STANDARD.encode(digest);
        assert!(csp(html).contains(&format!("script-src 'self' 'sha256-{b64}';")));
        assert!(csp("<p>no map</p>").contains("script-src 'self';"));
    }
}
