//! The shopper chat widget's static files (issue 15; spec 4.9, 6.3, 6.4): `GET /widget.js`,
//! the script a store pastes into its pages, and `GET /widget/demo?key=...`, a fake shop page
//! carrying it, for trying a channel locally. The widget talks to `/v1/widget/{key}/...` and
//! `/v1/ws/widget`, which the inbox area serves.
//!
//! Invariants:
//! - The files are embedded from `assets/widget/` (rust-embed): the binary needs nothing on
//!   disk. widget.js is plain JavaScript, no build step, under 30 KB.
//! - Both paths live at the root only (`versioning::ROOT_PATHS`): not under `/v1`, never
//!   deprecated, and not in the OpenAPI document, which describes the API.
//! - The demo page HTML-escapes the key wherever it appears, and its CSP allows scripts and
//!   connections to its own origin only (plus `ws:`/`wss:` to the same host).

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use rust_embed::{EmbeddedFile, RustEmbed};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::AppError;
use crate::http::assets;
use crate::http::extract::Query;
use crate::state::AppState;

#[derive(RustEmbed)]
#[folder = "assets/widget/"]
struct Assets;

/// Short, so a fixed widget reaches shoppers within minutes; the ETag makes revalidation cheap.
const SCRIPT_CACHE: &str = "public, max-age=300";
/// Longest channel key the demo page accepts; keys are short tokens.
const MAX_KEY_LEN: usize = 200;

/// The widget's routes, at the root.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/widget.js", get(widget_js))
        .route("/widget/demo", get(demo_page))
}

fn asset(name: &str) -> EmbeddedFile {
    Assets::get(name).unwrap_or_else(|| panic!("assets/widget/{name} is embedded"))
}

/// The widget script, revalidated by ETag.
async fn widget_js(req: Request) -> Response {
    let mut res = assets::serve(
        asset("widget.js"),
        "application/javascript; charset=utf-8",
        SCRIPT_CACHE,
        req.headers(),
    );
    // Shops whose pages set COEP can still load it.
    res.headers_mut().insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("cross-origin"),
    );
    res
}

#[derive(Debug, Deserialize)]
struct DemoQuery {
    key: String,
}

/// A fake shop page with the widget on it, for the channel `key`.
async fn demo_page(
    Query(q): Query<DemoQuery>,
    req_headers: HeaderMap,
) -> Result<Response, AppError> {
    if q.key.is_empty() || q.key.len() > MAX_KEY_LEN {
        return Err(AppError::validation([(
            "key",
            format!("a channel key of 1 to {MAX_KEY_LEN} characters"),
        )]));
    }
    let template = asset("demo.html");
    let css = asset("demo.css");
    let (template, css) = (
        String::from_utf8_lossy(&template.data),
        String::from_utf8_lossy(&css.data),
    );
    // The style goes in first: an escaped key may read `{{style}}` but never `<`.
    let page = template
        .replace("{{style}}", &css)
        .replace("{{key}}", &escape_html(&q.key));
    let host = req_headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| plain_host(h));
    let csp = demo_csp(&css, host);
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    let csp = HeaderValue::from_str(&csp).map_err(AppError::internal)?;
    headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    Ok((headers, page).into_response())
}

/// Scripts and connections to this origin only; the page's one inline style by its hash.
/// Older browsers do not count `ws:` as `'self'`, so the socket's origin is spelled out.
fn demo_csp(css: &str, host: Option<&str>) -> String {
    let style = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(css.as_bytes()));
    let sockets = host.map_or(String::new(), |h| format!(" ws://{h} wss://{h}"));
    format!(
        "default-src 'none'; script-src 'self'; connect-src 'self'{sockets}; \
         style-src 'sha256-{style}'; img-src 'self' data:; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'"
    )
}

/// A Host header fit to repeat inside the CSP: name or address and port, nothing else.
fn plain_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 255
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
}

/// Text safe in element content and in quoted attribute values.
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{escape_html, plain_host};

    #[test]
    fn html_escaping_covers_markup_and_both_quotes() {
        assert_eq!(
            escape_html(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn only_plain_hosts_reach_the_csp() {
        assert!(plain_host("127.0.0.1:8080"));
        assert!(plain_host("[::1]:80"));
        assert!(plain_host("shop.example"));
        assert!(!plain_host("evil; script-src *"));
        assert!(!plain_host(""));
    }
}
