//! Embedded static files (rust-embed) answered with a content type, a cache policy and an
//! ETag, so a browser revalidates with `If-None-Match` and gets 304 when nothing changed.
//! Text files go out brotli- or gzip-compressed when the client accepts it: each file is
//! compressed once (on a blocking thread), then served from memory.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rust_embed::EmbeddedFile;

/// The file's content hash (which rust-embed computes at build time), the stem of its ETags.
fn hash_hex(file: &EmbeddedFile) -> String {
    let hash = file.metadata.sha256_hash();
    hash[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Encoding {
    Brotli,
    Gzip,
}

impl Encoding {
    fn token(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gzip",
        }
    }
}

/// Smaller than this, compression saves less than its header costs.
const MIN_COMPRESS: usize = 1024;

/// Compressed copies by (content hash, encoding): a handful of files, each a few KB to a
/// few hundred, bounded by what the binary embeds. A cell per copy, so concurrent first
/// requests wait for one compression instead of each running their own.
type Cell = Arc<tokio::sync::OnceCell<Bytes>>;
static COMPRESSED: LazyLock<Mutex<HashMap<(String, Encoding), Cell>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn compressible(content_type: &str) -> bool {
    content_type.starts_with("text/")
        || content_type.starts_with("application/javascript")
        || content_type.starts_with("application/json")
        || content_type.starts_with("image/svg+xml")
}

/// The encoding to answer with: brotli before gzip, each only when `Accept-Encoding` names
/// it (or `*`) with a non-zero q-value.
fn negotiate(request: &HeaderMap) -> Option<Encoding> {
    let mut br = None;
    let mut gzip = None;
    let mut star = None;
    for value in request.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q=").map(str::trim))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            let accepted = q > 0.0;
            match name.as_str() {
                "br" => br = Some(accepted),
                "gzip" | "x-gzip" => gzip = Some(accepted),
                "*" => star = Some(accepted),
                _ => {}
            }
        }
    }
    let wants = |named: Option<bool>| named.or(star).unwrap_or(false);
    if wants(br) {
        Some(Encoding::Brotli)
    } else if wants(gzip) {
        Some(Encoding::Gzip)
    } else {
        None
    }
}

fn compress(data: &[u8], encoding: Encoding) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    match encoding {
        Encoding::Brotli => {
            let mut out = Vec::with_capacity(data.len() / 3);
            let params = brotli::enc::BrotliEncoderParams {
                quality: 11,
                lgwin: 22,
                ..Default::default()
            };
            brotli::BrotliCompress(&mut &data[..], &mut out, &params)?;
            Ok(out)
        }
        Encoding::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            enc.write_all(data)?;
            enc.finish()
        }
    }
}

/// The compressed copy of `file`, made on a blocking thread the first time it is asked for.
async fn compressed(file: &EmbeddedFile, key: String, encoding: Encoding) -> Option<Bytes> {
    let cell = COMPRESSED
        .lock()
        .ok()?
        .entry((key, encoding))
        .or_default()
        .clone();
    let data = file.data.clone();
    cell.get_or_try_init(|| async move {
        let data = data.into_owned();
        match tokio::task::spawn_blocking(move || compress(&data, encoding)).await {
            Ok(Ok(out)) => Ok(Bytes::from(out)),
            _ => Err(()),
        }
    })
    .await
    .ok()
    .cloned()
}

/// `file` as `content_type` with `cache` as its Cache-Control, compressed when the client
/// accepts it, or 304 when the request's `If-None-Match` names the representation's ETag.
pub async fn serve(
    file: EmbeddedFile,
    content_type: &'static str,
    cache: &'static str,
    request: &HeaderMap,
) -> Response {
    let hash = hash_hex(&file);
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let can_compress = compressible(content_type) && file.data.len() >= MIN_COMPRESS;
    if can_compress {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    let encoding = negotiate(request).filter(|_| can_compress);
    // Each representation has its own strong ETag (RFC 9110 8.8.3).
    let etag = match encoding {
        Some(e) => format!("\"{hash}-{}\"", e.token()),
        None => format!("\"{hash}\""),
    };
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
    if let Some(e) = encoding
        && let Some(body) = compressed(&file, hash.clone(), e).await
    {
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(e.token()),
        );
        return (headers, body).into_response();
    }
    if encoding.is_some() {
        // Compression failed (it cannot for in-memory data): the plain file is still right.
        if let Ok(v) = HeaderValue::from_str(&format!("\"{hash}\"")) {
            headers.insert(header::ETAG, v);
        }
    }
    (headers, file.data.into_owned()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn brotli_before_gzip_and_zero_q_refuses() {
        assert_eq!(
            negotiate(&accept("gzip, deflate, br")),
            Some(Encoding::Brotli)
        );
        assert_eq!(negotiate(&accept("gzip, br;q=0")), Some(Encoding::Gzip));
        assert_eq!(negotiate(&accept("br;q=0, gzip;q=0")), None);
        assert_eq!(negotiate(&accept("identity")), None);
        assert_eq!(negotiate(&accept("*")), Some(Encoding::Brotli));
        assert_eq!(negotiate(&accept("*;q=0, gzip")), Some(Encoding::Gzip));
        assert_eq!(negotiate(&HeaderMap::new()), None);
    }

    #[test]
    fn both_encodings_round_trip() {
        use std::io::Read;
        let text = "const a = 1;\n".repeat(500);
        let br = compress(text.as_bytes(), Encoding::Brotli).unwrap();
        let mut back = Vec::new();
        brotli::Decompressor::new(&br[..], 4096)
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, text.as_bytes());
        let gz = compress(text.as_bytes(), Encoding::Gzip).unwrap();
        let mut back = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, text);
        assert!(br.len() < text.len() / 10 && gz.len() < text.len() / 10);
    }
}
