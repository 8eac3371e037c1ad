//! Versioning (spec 9). Everything lives under `/v1`; the same routes answer unversioned
//! (`/stores/...`) by rewriting the path before routing, and such answers carry
//! `Deprecation` (RFC 9745 `@<unix seconds>`), `Link: </v1/...>; rel="successor-version"`
//! and, once a date is configured, `Sunset` (HTTP date).

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Uri};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;

pub const PREFIX: &str = "/v1";
/// Paths that live at the root only and are never deprecated: operational ones, and the chat
/// widget's static files (its pages embed `/widget.js`).
pub const ROOT_PATHS: [&str; 8] = [
    "/",
    "/admin",
    "/healthz",
    "/readyz",
    "/widget.js",
    "/widget/demo",
    "/docs/api",
    "/docs/api/storefront",
];
/// Folders of root-only static files (the API reference's viewer, the admin app).
pub const ROOT_FOLDERS: [&str; 2] = ["/docs/api/", "/admin/"];

/// Marks a response from the fallback, so an unknown unversioned path gets no successor link.
#[derive(Debug, Clone, Copy)]
pub struct RouteNotFound;

fn is_versioned(path: &str) -> bool {
    path == PREFIX
        || path
            .strip_prefix(PREFIX)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Runs before routing (it wraps the whole router, not each route).
pub async fn versioning(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    if is_versioned(&path)
        || ROOT_PATHS.contains(&path.as_str())
        || ROOT_FOLDERS.iter().any(|f| path.starts_with(f))
    {
        return next.run(req).await;
    }
    let successor = format!("{PREFIX}{path}");
    let new_uri = match req.uri().query() {
        Some(q) => format!("{successor}?{q}"),
        None => successor.clone(),
    };
    if let Ok(uri) = new_uri.parse::<Uri>() {
        *req.uri_mut() = uri;
    }
    let mut res = next.run(req).await;
    if res.extensions().get::<RouteNotFound>().is_some() {
        return res;
    }
    let h = res.headers_mut();
    let deprecation = format!("@{}", st.cfg.deprecation_date.timestamp());
    if let Ok(v) = HeaderValue::from_str(&deprecation) {
        h.insert("deprecation", v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("<{successor}>; rel=\"successor-version\"")) {
        h.append("link", v);
    }
    if let Some(sunset) = st.cfg.sunset_date {
        let date = sunset.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        if let Ok(v) = HeaderValue::from_str(&date) {
            h.insert("sunset", v);
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::is_versioned;

    #[test]
    fn only_the_v1_segment_counts_as_versioned() {
        assert!(is_versioned("/v1"));
        assert!(is_versioned("/v1/stores"));
        assert!(!is_versioned("/v10/stores"));
        assert!(!is_versioned("/v1stores"));
        assert!(!is_versioned("/stores"));
    }
}
