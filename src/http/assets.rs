//! Embedded static files (rust-embed) answered with a content type, a cache policy and an
//! ETag, so a browser revalidates with `If-None-Match` and gets 304 when nothing changed.
//! Text files go out brotli- or gzip-compressed when the client accepts it: each file is
//! compressed once, in the background on a blocking thread, then served from memory; until
//! that copy is ready the plain file goes out, so no request waits for (or can cancel) it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

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

/// One compressed copy: started at most once, filled when its compression ends.
#[derive(Default)]
struct Slot {
    started: AtomicBool,
    done: OnceLock<Bytes>,
}

/// Compressed copies by (content hash, encoding): a handful of files, each a few KB to a
/// few hundred, bounded by what the binary embeds.
type Slots = HashMap<(String, Encoding), Arc<Slot>>;
static COMPRESSED: LazyLock<Mutex<Slots>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn compressible(content_type: &str) -> bool {
    content_type.starts_with("text/")
        || content_type.starts_with("application/javascript")
        || content_type.starts_with("application/json")
        || content_type.starts_with("image/svg+xml")
}

/// The encoding to answer with: the one of brotli and gzip with the higher q-value that
/// `Accept-Encoding` gives it (by name or through `*`), brotli on a tie; none at q=0. An
/// item whose q-value does not parse is ignored.
fn negotiate(request: &HeaderMap) -> Option<Encoding> {
    let (mut br, mut gzip, mut star) = (None, None, None);
    for value in request.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = match parts.find_map(|p| p.trim().strip_prefix("q=")) {
                None => 1.0,
                Some(q) => match q.trim().parse::<f32>() {
                    Ok(q) if (0.0..=1.0).contains(&q) => q,
                    _ => continue,
                },
            };
            match name.as_str() {
                "br" => br = Some(q),
                "gzip" | "x-gzip" => gzip = Some(q),
                "*" => star = Some(q),
                _ => {}
            }
        }
    }
    let (br, gzip) = (br.or(star).unwrap_or(0.0), gzip.or(star).unwrap_or(0.0));
    if br > 0.0 && br >= gzip {
        Some(Encoding::Brotli)
    } else if gzip > 0.0 {
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

/// The compressed copy of `file` if it is ready. The first ask starts its one compression
/// on a blocking thread, which runs to the end whatever happens to the request.
fn compressed(file: &EmbeddedFile, key: String, encoding: Encoding) -> Option<Bytes> {
    let slot = COMPRESSED
        .lock()
        .ok()?
        .entry((key, encoding))
        .or_default()
        .clone();
    if let Some(done) = slot.done.get() {
        return Some(done.clone());
    }
    if !slot.started.swap(true, Ordering::AcqRel) {
        let data = file.data.clone().into_owned();
        tokio::task::spawn_blocking(move || {
            if let Ok(out) = compress(&data, encoding) {
                let _ = slot.done.set(Bytes::from(out));
            }
        });
    }
    None
}

/// `file` as `content_type` with `cache` as its Cache-Control, compressed when the client
/// accepts it and the copy is ready, or 304 when the request's `If-None-Match` names the
/// representation's ETag (weak comparison, as RFC 9110 13.1.2 says: a proxy that compresses
/// marks the tag weak).
pub fn serve(
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
    let body = encoding.and_then(|e| compressed(&file, hash.clone(), e).map(|b| (e, b)));
    // Each representation has its own strong ETag (RFC 9110 8.8.3).
    let etag = match &body {
        Some((e, _)) => format!("\"{hash}-{}\"", e.token()),
        None => format!("\"{hash}\""),
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',').any(|t| {
                let t = t.trim();
                t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag
            })
        });
    if fresh {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    if let Some((e, body)) = body {
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(e.token()),
        );
        return (headers, body).into_response();
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
        assert_eq!(
            negotiate(&accept("gzip;q=1, br;q=0.1")),
            Some(Encoding::Gzip)
        );
        assert_eq!(
            negotiate(&accept("br;q=banana, gzip")),
            Some(Encoding::Gzip)
        );
        assert_eq!(negotiate(&accept("br;q=2")), None);
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
