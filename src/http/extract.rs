//! Our extractors wrap axum's so every rejection is an [`AppError`] (STYLE 4). Handlers never
//! take `axum::Json`, `axum::extract::Query` or `axum::extract::Path` directly.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, header, request::Parts};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::AppError;

/// A JSON body: 400 `bad_request` for a wrong content type or malformed JSON, 413
/// `payload_too_large` past the body limit, 422 `validation_failed` naming the field for
/// wrong types, unknown enum values and missing fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, AppError> {
        if !is_json(req.headers()) {
            return Err(AppError::bad_request(
                "expected a JSON body with Content-Type: application/json",
            ));
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|r| body_rejection(&r))?;
        parse_json(&bytes).map(Json)
    }
}

/// `Option<Json<T>>`: `None` for a request with no body at all or a JSON `null` (the
/// documents describe an optional body as `null` or `T`), else as `Json<T>`.
impl<T, S> axum::extract::OptionalFromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, AppError> {
        let empty = req.headers().get(header::CONTENT_TYPE).is_none()
            && req
                .headers()
                .get(header::CONTENT_LENGTH)
                .is_none_or(|v| v.as_bytes() == b"0");
        if empty {
            return Ok(None);
        }
        <Json<Option<T>> as FromRequest<S>>::from_request(req, state)
            .await
            .map(|Json(body)| body.map(Json))
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

pub(crate) fn body_rejection(r: &BytesRejection) -> AppError {
    if r.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        AppError::payload_too_large()
    } else {
        AppError::bad_request("the request body could not be read")
    }
}

/// An int32 path parameter such as a `{version}` (spec 4.7): anything else is 422 naming it,
/// the same on every route, rather than the 404 of a path that matches nothing.
pub fn int32_param(name: &str, v: &str) -> Result<i32, AppError> {
    v.parse()
        .map_err(|_| AppError::field(name, "must be an integer (int32)"))
}

/// Trimmed text of `min..=max` characters, or 422 on `field`.
pub fn text(field: &str, v: &str, min: usize, max: usize) -> Result<String, AppError> {
    let t = v.trim();
    let n = t.chars().count();
    if n < min || n > max {
        return Err(AppError::validation([(
            field.to_owned(),
            format!("must be {min} to {max} characters"),
        )]));
    }
    Ok(t.to_owned())
}

/// Deserializes JSON, telling a syntax error (400) from a field error (422).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de)
        .or_else(|e| {
            // JSON has one kind of number and JSON Schema's `integer` admits `2.0`: a body that
            // writes a whole number with a fraction is read once more with the integer it means.
            // Every other refusal (and its message) stays as it was.
            if let Some(value) = whole_numbers_as_integers(bytes)
                && let Ok(t) = serde_path_to_error::deserialize(value)
            {
                return Ok(t);
            }
            Err(e)
        })
        .map_err(|e| {
            let inner = e.inner();
            // serde_json files some type mismatches (a number where an enum goes) under syntax
            // errors, so "malformed" is decided by whether the bytes are JSON at all.
            let well_formed =
                inner.is_data() || serde_json::from_slice::<serde_json::Value>(bytes).is_ok();
            if well_formed {
                field_error(&e.path().to_string(), &inner.to_string())
            } else {
                AppError::bad_request(format!("malformed JSON: {inner}"))
            }
        })
}

/// The body with each whole number written as a float made an integer; `None` when it is
/// not JSON or has none.
fn whole_numbers_as_integers(bytes: &[u8]) -> Option<serde_json::Value> {
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    crate::json::whole_numbers_as_integers(&mut value).then_some(value)
}

/// Turns a serde message at `path` into `details.fields`. serde reports a missing field at
/// its parent's path, so the field's own name is taken from the message.
fn field_error(path: &str, msg: &str) -> AppError {
    let parent = if path == "." { "" } else { path };
    // A missing field is reported at its parent; its name is in the message.
    let missing = msg
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    // serde_json appends " at line L column C"; the field name already says where.
    let msg = msg.split(" at line ").next().unwrap_or(msg);
    let field = match (missing, parent) {
        (Some(name), "") => name.to_string(),
        (Some(name), p) => format!("{p}.{name}"),
        (None, "") => "body".to_string(),
        (None, p) => p.to_string(),
    };
    AppError::validation([(field, msg.to_string())])
}

/// Query parameters; any problem is 422 `validation_failed` naming the parameter. Query DTOs
/// use `#[serde(deny_unknown_fields)]` so a misspelt filter is an error, not a silent no-op.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<T, S> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, AppError> {
        parse_query(parts.uri.query().unwrap_or("")).map(Query)
    }
}

pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, AppError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let msg = e.inner().to_string();
        let unknown = msg
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next());
        match unknown {
            Some(name) => AppError::validation([(name.to_string(), "unknown query parameter")]),
            None => field_error(&e.path().to_string(), &msg),
        }
    })
}

/// Path parameters. A malformed id can never name an existing resource, so it is 404
/// `not_found` (as if it did not exist) rather than a hint about the id format.
#[derive(Debug, Clone, Copy, Default)]
pub struct Path<T>(pub T);

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(Path(v)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => {
                tracing::debug!(error = %e, "path parameter rejected");
                Err(AppError::not_found("resource"))
            }
            Err(e) => Err(AppError::internal(anyhow::anyhow!("path extraction: {e}"))),
        }
    }
}

/// For `#[serde(default, deserialize_with = "present")]` on an `Option<Option<T>>` field:
/// tells a field sent as null (`Some(None)`: clear it) from one left out (`None`: keep it).
pub fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::parse_json;

    #[derive(Debug, serde::Deserialize)]
    struct Line {
        quantity: i64,
        price: Option<f64>,
    }

    #[test]
    fn a_whole_number_written_as_a_float_is_that_integer() {
        let l: Line = parse_json(br#"{"quantity": 239.0, "price": 2.0}"#).unwrap();
        assert_eq!((l.quantity, l.price), (239, Some(2.0)));
        let l: Line = parse_json(br#"{"quantity": 3}"#).unwrap();
        assert_eq!(l.quantity, 3);
    }

    #[test]
    fn a_fraction_or_a_float_past_2_pow_53_is_still_refused() {
        for body in [r#"{"quantity": 2.5}"#, r#"{"quantity": 1e300}"#] {
            let e = parse_json::<Line>(body.as_bytes()).unwrap_err();
            assert_eq!(e.status.as_u16(), 422, "{body}");
        }
    }
}
