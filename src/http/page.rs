//! The one `Page<T>` envelope (spec 2.2) and its query parameters.
//!
//! Lists are keyset-paged: the cursor is the position of the last row shown, serialized and
//! signed with a server key together with the list's scope (e.g. `orders:<store_id>`), so a
//! tampered cursor, or one taken from another list or store, is 400 `invalid_cursor`.
//! Store functions fetch `limit + 1` rows; [`Page::from_rows`] (or [`RenderedRows`], for
//! rows stored rendered) derives `has_more`.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use utoipa::{IntoParams, ToSchema};

use super::extract::parse_query;
use crate::db::rendered::{Position, RenderedJson, RenderedRows};
use crate::error::{AppError, ErrorCode};
use crate::state::AppState;

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 200;
const MAC_LEN: usize = 16;

/// The key cursors are signed with (from `hmac.key`, see `db::keys`).
#[derive(Clone)]
pub struct CursorKey(Arc<[u8]>);

impl CursorKey {
    pub fn new(key: Vec<u8>) -> Self {
        Self(key.into())
    }

    fn mac(&self, scope: &str, payload: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key size");
        mac.update(scope.as_bytes());
        mac.update(&[0]);
        mac.update(payload.as_bytes());
        mac
    }

    pub fn encode<K: Serialize>(&self, scope: &str, position: &K) -> String {
        let json = serde_json::to_vec(position).expect("cursor positions serialize");
        let payload = URL_SAFE_NO_PAD.encode(json);
        let tag = self.mac(scope, &payload).finalize().into_bytes();
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode(&tag[..MAC_LEN]))
    }

    pub fn decode<K: DeserializeOwned>(&self, scope: &str, cursor: &str) -> Result<K, AppError> {
        let invalid = || {
            AppError::new(
                ErrorCode::InvalidCursor,
                "the cursor is not valid for this list; start again without it",
            )
        };
        let (payload, tag) = cursor.split_once('.').ok_or_else(invalid)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        // Constant-time comparison of the truncated tag.
        self.mac(scope, payload)
            .verify_truncated_left(&tag)
            .map_err(|_| invalid())?;
        let json = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid())?;
        serde_json::from_slice(&json).map_err(|_| invalid())
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

/// Paging parameters of every list, validated: `limit` 1–200 (default 50), `cursor`,
/// `offset` ≥ 0 (ignored when `cursor` is set), `include_total`.
#[derive(Debug, Clone)]
pub struct PageParams {
    pub limit: u32,
    pub cursor: Option<String>,
    offset: u64,
    pub include_total: bool,
    key: CursorKey,
}

/// The paging parameters as the OpenAPI document shows them.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size, 1 to 200 (default 50).
    pub limit: Option<u32>,
    /// Opaque cursor from a previous page's `next_cursor`.
    pub cursor: Option<String>,
    /// Rows to skip; ignored when `cursor` is set.
    pub offset: Option<u64>,
    /// Also return `total` (costs an extra query).
    pub include_total: Option<bool>,
}

impl PageParams {
    /// The rows to fetch: one more than the page, to learn whether another page follows.
    pub fn fetch_limit(&self) -> i64 {
        i64::from(self.limit) + 1
    }

    /// Rows to skip (0 when a cursor is given).
    pub fn offset(&self) -> i64 {
        if self.cursor.is_some() {
            0
        } else {
            i64::try_from(self.offset).unwrap_or(i64::MAX)
        }
    }

    /// The keyset position after which this page starts, checked against `scope`.
    pub fn position<K: DeserializeOwned>(&self, scope: &str) -> Result<Option<K>, AppError> {
        self.cursor
            .as_deref()
            .map(|c| self.key.decode(scope, c))
            .transpose()
    }

    fn parse(query: &str, key: CursorKey) -> Result<(Self, String), AppError> {
        let mut params = Self {
            limit: DEFAULT_LIMIT,
            cursor: None,
            offset: 0,
            include_total: false,
            key,
        };
        let mut rest = form_urlencoded::Serializer::new(String::new());
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "limit" => {
                    params.limit = v
                        .parse::<u32>()
                        .ok()
                        .filter(|l| (1..=MAX_LIMIT).contains(l))
                        .ok_or_else(|| {
                            AppError::new(
                                ErrorCode::InvalidLimit,
                                format!("limit must be an integer from 1 to {MAX_LIMIT}"),
                            )
                        })?;
                }
                "offset" => {
                    params.offset = v.parse::<u64>().ok().ok_or_else(|| {
                        AppError::new(
                            ErrorCode::InvalidOffset,
                            "offset must be an integer of 0 or more",
                        )
                    })?;
                }
                "cursor" if !v.is_empty() => params.cursor = Some(v.into_owned()),
                "cursor" => {}
                "include_total" => {
                    params.include_total = match &*v {
                        "true" | "1" => true,
                        "false" | "0" => false,
                        _ => {
                            return Err(AppError::field("include_total", "must be true or false"));
                        }
                    };
                }
                _ => {
                    rest.append_pair(&k, &v);
                }
            }
        }
        Ok((params, rest.finish()))
    }
}

/// No filters: the list takes only the paging parameters.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoFilter {}

/// A list's query: paging parameters plus the list's own filters `F`. Unknown parameters
/// are 422 `validation_failed` (filters use `#[serde(deny_unknown_fields)]`).
#[derive(Debug, Clone)]
pub struct Paged<F = NoFilter>(pub PageParams, pub F);

impl<F> FromRequestParts<AppState> for Paged<F>
where
    F: DeserializeOwned,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, AppError> {
        let (params, rest) =
            PageParams::parse(parts.uri.query().unwrap_or(""), st.cursor_key.clone())?;
        let filter = parse_query::<F>(&rest)?;
        Ok(Paged(params, filter))
    }
}

/// The envelope of every collection response.
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    /// Items of this page, in the order the endpoint defines.
    pub data: Vec<T>,
    /// Another page follows.
    pub has_more: bool,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// Present only when `include_total=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
}

impl<T> Page<T> {
    /// A short fixed list (a catalog) served whole as one page, in the envelope every list
    /// shares (spec 9.4).
    pub fn whole(data: Vec<T>) -> Self {
        Self {
            data,
            has_more: false,
            next_cursor: None,
            total: None,
        }
    }

    /// Builds a page from up to `limit + 1` rows in list order. `position` gives a row's
    /// keyset position, which becomes the signed `next_cursor`.
    pub fn from_rows<R, K: Serialize>(
        mut rows: Vec<R>,
        params: &PageParams,
        scope: &str,
        position: impl Fn(&R) -> K,
        map: impl FnMut(R) -> T,
    ) -> Self {
        let limit = params.limit as usize;
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        let next_cursor = if has_more {
            rows.last()
                .map(|last| params.key.encode(scope, &position(last)))
        } else {
            None
        };
        Self {
            data: rows.into_iter().map(map).collect(),
            has_more,
            next_cursor,
            total: None,
        }
    }

    #[must_use]
    pub fn with_total(mut self, total: Option<i64>) -> Self {
        self.total = total;
        self
    }
}

impl axum::response::IntoResponse for RenderedJson {
    fn into_response(self) -> axum::response::Response {
        json_response(self.0)
    }
}

fn json_response(body: impl Into<axum::body::Body>) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    let mut res = axum::response::Response::new(body.into());
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// A [`Page`] of [`RenderedRows`]: the same envelope, written without a serializer.
#[derive(Debug)]
pub struct RenderedPage {
    rows: RenderedRows,
    next_cursor: Option<String>,
    total: Option<i64>,
}

impl axum::response::IntoResponse for RenderedPage {
    fn into_response(self) -> axum::response::Response {
        let (mut body, has_more) = self.rows.finish();
        body.extend_from_slice(br#"],"has_more":"#);
        body.extend_from_slice(if has_more { b"true" } else { b"false" });
        body.extend_from_slice(br#","next_cursor":"#);
        match &self.next_cursor {
            // Cursors are base64url and '.': nothing to escape, but quote them properly.
            Some(c) => {
                body.extend_from_slice(serde_json::Value::from(c.as_str()).to_string().as_bytes());
            }
            None => body.extend_from_slice(b"null"),
        }
        if let Some(total) = self.total {
            body.extend_from_slice(format!(r#","total":{total}"#).as_bytes());
        }
        body.push(b'}');
        // The buffer was sized for rows of a KiB; a page of short rows gives the rest back
        // rather than holding it while the body is sent.
        if body.capacity() > 2 * body.len() {
            body.shrink_to_fit();
        }
        json_response(body)
    }
}

impl PageParams {
    /// Runs one keyset-paged list on a reader connection: `rows(conn, after, fetch_limit,
    /// offset)` fetches the page (plus one), `total(conn)` counts when `include_total` asks,
    /// and `position` gives the cursor of a row. `scope` binds cursors to this list.
    pub async fn list<R, T>(
        &self,
        db: &crate::db::Db,
        scope: &str,
        rows: impl FnOnce(
            &rusqlite::Connection,
            Option<&Position>,
            i64,
            i64,
        ) -> Result<Vec<R>, AppError>
        + Send
        + 'static,
        total: impl FnOnce(&rusqlite::Connection) -> Result<i64, AppError> + Send + 'static,
        position: impl Fn(&R) -> Position,
        map: impl FnMut(R) -> T,
    ) -> Result<Page<T>, AppError>
    where
        R: Send + 'static,
    {
        let (fetch, offset) = (self.fetch_limit(), self.offset());
        let (found, count) = self
            .read(
                db,
                scope,
                move |c, after| rows(c, after, fetch, offset),
                total,
            )
            .await?;
        Ok(Page::from_rows(found, self, scope, position, map).with_total(count))
    }

    /// The one reader-connection trip of a list: the rows after this page's cursor (checked
    /// against `scope`), and the total when `include_total` asks.
    async fn read<R: Send + 'static>(
        &self,
        db: &crate::db::Db,
        scope: &str,
        rows: impl FnOnce(&rusqlite::Connection, Option<&Position>) -> Result<R, AppError>
        + Send
        + 'static,
        total: impl FnOnce(&rusqlite::Connection) -> Result<i64, AppError> + Send + 'static,
    ) -> Result<(R, Option<i64>), AppError> {
        let after: Option<Position> = self.position(scope)?;
        let include_total = self.include_total;
        db.read(move |c| {
            let found = rows(c, after.as_ref())?;
            let count = include_total.then(|| total(c)).transpose()?;
            Ok((found, count))
        })
        .await
    }

    /// [`PageParams::list`] for rows stored rendered: `rows(conn, after, page, offset)`
    /// appends the page (plus one) to `page`; the rest is the same.
    pub async fn list_rendered(
        &self,
        db: &crate::db::Db,
        scope: &str,
        rows: impl FnOnce(
            &rusqlite::Connection,
            Option<&Position>,
            &mut RenderedRows,
            i64,
        ) -> Result<(), AppError>
        + Send
        + 'static,
        total: impl FnOnce(&rusqlite::Connection) -> Result<i64, AppError> + Send + 'static,
    ) -> Result<RenderedPage, AppError> {
        let (limit, offset) = (self.limit as usize, self.offset());
        let (found, total) = self
            .read(
                db,
                scope,
                move |c, after| {
                    let mut found = RenderedRows::new(limit);
                    rows(c, after, &mut found, offset)?;
                    Ok(found)
                },
                total,
            )
            .await?;
        let next_cursor = if found.has_more() {
            found.last().map(|p| self.key.encode(scope, p))
        } else {
            None
        };
        Ok(RenderedPage {
            rows: found,
            next_cursor,
            total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CursorKey {
        CursorKey::new(vec![7; 32])
    }

    #[tokio::test]
    async fn a_page_of_rendered_rows_is_the_same_json_as_a_serialized_page() {
        use axum::response::IntoResponse;
        let rows = [
            serde_json::json!({"id": "a", "n": 1, "s": "é\"q"}),
            serde_json::json!({"id": "b", "nested": {"x": [1, 2]}}),
            serde_json::json!({"id": "c"}),
        ];
        // (limit, rows fetched): 2 of 3 (one more follows), 1 of 2, all 3 on a last page,
        // and an empty list.
        for (limit, fetched, next_cursor, total) in [
            (2, 3, Some("abc.DEF-_".to_owned()), Some(7)),
            (1, 2, Some("x.y".to_owned()), None),
            (3, 3, None, None),
            (2, 0, None, Some(0)),
        ] {
            let mut found = RenderedRows::new(limit);
            let mut asked = Vec::new();
            for (i, r) in rows.iter().enumerate().take(fetched) {
                found
                    .push(r.to_string().as_bytes(), || {
                        asked.push(i);
                        Ok::<_, ()>((format!("t{i}"), format!("id{i}")))
                    })
                    .unwrap();
            }
            let last = (fetched >= limit).then_some(limit - 1);
            assert_eq!(
                asked,
                Vec::from_iter(last),
                "only the page's last row is asked its position"
            );
            assert_eq!(found.has_more(), next_cursor.is_some());
            let rendered = RenderedPage {
                rows: found,
                next_cursor: next_cursor.clone(),
                total,
            }
            .into_response();
            assert_eq!(
                rendered.headers()["content-type"],
                "application/json",
                "content type"
            );
            let bytes = axum::body::to_bytes(rendered.into_body(), usize::MAX)
                .await
                .unwrap();
            let got: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let want = serde_json::to_value(Page {
                data: rows[..limit.min(fetched)].to_vec(),
                has_more: next_cursor.is_some(),
                next_cursor,
                total,
            })
            .unwrap();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn cursor_round_trips_and_rejects_tampering_and_other_scopes() {
        let k = key();
        let c = k.encode("orders:1", &("2026-01-01T00:00:00.000000Z", "abc"));
        let back: (String, String) = k.decode("orders:1", &c).unwrap();
        assert_eq!(back.1, "abc");

        let other_scope = k.decode::<(String, String)>("orders:2", &c).unwrap_err();
        assert_eq!(other_scope.code, ErrorCode::InvalidCursor);

        let mut tampered = c.clone();
        tampered.replace_range(0..1, if c.starts_with('W') { "X" } else { "W" });
        let err = k
            .decode::<(String, String)>("orders:1", &tampered)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidCursor);

        let other_key = CursorKey::new(vec![8; 32]);
        assert!(
            other_key
                .decode::<(String, String)>("orders:1", &c)
                .is_err()
        );
        for junk in ["", ".", "abc", "a.b.c", "%%%.%%%"] {
            assert!(
                k.decode::<(String, String)>("orders:1", junk).is_err(),
                "{junk}"
            );
        }
    }

    #[test]
    fn page_params_validate_limits_and_offsets() {
        let parse = |q: &str| PageParams::parse(q, key());
        let (p, rest) = parse("limit=200&offset=3&status=paid").unwrap();
        assert_eq!(
            (p.limit, p.offset(), rest.as_str()),
            (200, 3, "status=paid")
        );
        assert_eq!(parse("").unwrap().0.limit, DEFAULT_LIMIT);
        for bad in ["limit=0", "limit=201", "limit=-1", "limit=abc", "limit=1e3"] {
            assert_eq!(
                parse(bad).unwrap_err().code,
                ErrorCode::InvalidLimit,
                "{bad}"
            );
        }
        for bad in ["offset=-1", "offset=x", "offset=99999999999999999999999"] {
            assert_eq!(
                parse(bad).unwrap_err().code,
                ErrorCode::InvalidOffset,
                "{bad}"
            );
        }
        let (p, _) = parse("cursor=abc&offset=5").unwrap();
        assert_eq!(p.offset(), 0, "offset is ignored when a cursor is set");
    }
}
