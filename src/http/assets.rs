//! Embedded static files (rust-embed) answered with a content type, a cache policy and an
//! ETag, so a browser revalidates with `If-None-Match` and gets 304 when nothing changed.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rust_embed::EmbeddedFile;

/// A strong ETag from the file's content hash (which rust-embed computes at build time).
pub fn etag(file: &EmbeddedFile) -> String {
    let hash = file.metadata.sha256_hash();
    let hex: String = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// `file` as `content_type` with `cache` as its Cache-Control, or 304 when the request's
/// `If-None-Match` names its ETag.
pub fn serve(
    file: EmbeddedFile,
    content_type: &'static str,
    cache: &'static str,
    request: &HeaderMap,
) -> Response {
    let etag = etag(&file);
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if fresh {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (headers, file.data.into_owned()).into_response()
}
