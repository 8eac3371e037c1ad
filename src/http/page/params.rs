//! A list's query parameters: `limit`, `cursor`, `offset`, `include_total`, validated, and
//! the list's own filters beside them.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::IntoParams;

use super::CursorKey;
use crate::error::{AppError, ErrorCode};
use crate::http::extract::parse_query;
use crate::state::AppState;

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 200;

/// Paging parameters of every list, validated: `limit` 1–200 (default 50), `cursor`,
/// `offset` ≥ 0 (ignored when `cursor` is set), `include_total`.
#[derive(Debug, Clone)]
pub struct PageParams {
    pub limit: u32,
    pub cursor: Option<String>,
    offset: u64,
    pub include_total: bool,
    pub(super) key: CursorKey,
}

/// The paging parameters as the OpenAPI document shows them.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
    /// Opaque cursor from a previous page's `next_cursor`.
    pub cursor: Option<String>,
    /// Rows to skip; ignored when `cursor` is set.
    pub offset: Option<u64>,
    /// Also return `total` (costs an extra query). With no filter, or one status, kind or id
    /// filter, it is a kept count, as cheap as the page; with a text search or two filters at
    /// once it counts at most 10,000 rows, so 10000 then means "10,000 or more".
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

    pub(super) fn parse(query: &str, key: CursorKey) -> Result<(Self, String), AppError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CursorKey {
        CursorKey::new(vec![7; 32])
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
