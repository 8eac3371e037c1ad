//! How an [`AppError`] answers over HTTP: the JSON body, `Retry-After`, and the cause of a 5xx
//! kept in a response extension for the request log (never in the body).

use std::sync::Arc;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::error::{AppError, ErrorBody, ErrorCode};

/// The cause of a 5xx, kept out of the body and logged by the request log middleware.
#[derive(Debug, Clone)]
pub struct ErrorSource(pub Arc<anyhow::Error>);

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let server_fault = self.status.is_server_error();
        let body = ErrorBody {
            // A 5xx never leaks its cause or a handler's wording.
            error: if server_fault && self.code == ErrorCode::InternalError {
                "internal error".into()
            } else {
                self.message
            },
            code: self.code,
            details: self.details,
        };
        let retry_after = body
            .details
            .as_ref()
            .filter(|_| {
                matches!(
                    self.code,
                    ErrorCode::RateLimited | ErrorCode::ServiceUnavailable
                )
            })
            .and_then(|d| d.get("retry_after_seconds"))
            .and_then(Value::as_u64);
        let mut res = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = retry_after {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(source) = self.source {
            res.extensions_mut().insert(ErrorSource(Arc::new(source)));
        }
        res
    }
}
