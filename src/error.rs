//! The one error type (spec 2.3, 7), used by every layer: a stable snake_case `code` that
//! knows its status, a message, optional `details`, and the cause of a 5xx (never shown to
//! the client). How it answers over HTTP is `http::error`.

use std::panic::Location;

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

/// Stable error codes. A typo here fails to compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    InvalidCursor,
    InvalidLimit,
    InvalidOffset,
    StoreIdRequired,
    TotpNotEnabled,
    #[serde(rename = "msgapp_2fa_not_enabled")]
    Msgapp2faNotEnabled,
    NoPendingCode,
    TooManyAttempts,
    IncorrectPassword,
    Unauthorized,
    PlanLimitReached,
    SubscriptionInactive,
    UsageExceedsPlan,
    PaymentAmountMismatch,
    InvalidCredentials,
    InvalidChallenge,
    InvalidTicket,
    InvalidCode,
    InvalidRefreshToken,
    RefreshTokenReused,
    ReauthenticationRequired,
    Forbidden,
    MissingPermission,
    AccountDisabled,
    NotTokenOwner,
    NotAMember,
    NotFound,
    RouteNotFound,
    /// The conversation has no cart attached (an assisted sale's routes).
    NoCart,
    MethodNotAllowed,
    Conflict,
    IdempotencyRequestInProgress,
    EmailTaken,
    SlugTaken,
    TotpAlreadyEnabled,
    InvalidStatusTransition,
    InsufficientStock,
    NoRefundablePayment,
    AssistantBusy,
    ActionAlreadyUndone,
    /// The store has no enabled e-mail channel to send a campaign from.
    NoEmailChannel,
    RequestTimeout,
    PayloadTooLarge,
    ValidationFailed,
    IdempotencyKeyReused,
    RefundExceedsRefundable,
    WorkflowInvalid,
    InvalidVerificationCode,
    EmptyMessage,
    MessageTooLong,
    MsgappWindowClosed,
    UndoNotSupported,
    ConfirmationRequired,
    RequestHeaderFieldsTooLarge,
    RateLimited,
    AssistantCapReached,
    InternalError,
    OtpDeliveryFailed,
    PaymentProviderFailed,
    MsgappSendFailed,
    /// The mail server did not take an e-mail (a marketing recipient's record, a test send).
    EmailSendFailed,
    /// The ad network refused or could not take a catalog push.
    AdnetSyncFailed,
    /// Recorded on a notification's delivery record when a copy could not be sent.
    NotificationSendFailed,
    /// The assistant's model answered something the request cannot use (a brand system
    /// that is not valid).
    ModelAnswerInvalid,
    ServiceUnavailable,
    AssistantUnavailable,
}

impl ErrorCode {
    /// The HTTP status every error with this code answers (spec 7's table).
    pub fn status(self) -> StatusCode {
        match self {
            Self::BadRequest
            | Self::InvalidCursor
            | Self::InvalidLimit
            | Self::InvalidOffset
            | Self::StoreIdRequired
            | Self::TotpNotEnabled
            | Self::Msgapp2faNotEnabled
            | Self::NoPendingCode
            | Self::TooManyAttempts
            | Self::IncorrectPassword => StatusCode::BAD_REQUEST,
            Self::Unauthorized
            | Self::InvalidCredentials
            | Self::InvalidChallenge
            | Self::InvalidTicket
            | Self::InvalidCode
            | Self::InvalidRefreshToken
            | Self::RefreshTokenReused
            | Self::ReauthenticationRequired => StatusCode::UNAUTHORIZED,
            Self::PlanLimitReached | Self::SubscriptionInactive => StatusCode::PAYMENT_REQUIRED,
            Self::Forbidden
            | Self::MissingPermission
            | Self::AccountDisabled
            | Self::NotTokenOwner
            | Self::NotAMember => StatusCode::FORBIDDEN,
            Self::NotFound | Self::RouteNotFound | Self::NoCart => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict
            | Self::IdempotencyRequestInProgress
            | Self::EmailTaken
            | Self::SlugTaken
            | Self::TotpAlreadyEnabled
            | Self::InvalidStatusTransition
            | Self::InsufficientStock
            | Self::NoRefundablePayment
            | Self::AssistantBusy
            | Self::ActionAlreadyUndone
            | Self::NoEmailChannel => StatusCode::CONFLICT,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::ValidationFailed
            | Self::IdempotencyKeyReused
            | Self::RefundExceedsRefundable
            | Self::WorkflowInvalid
            | Self::InvalidVerificationCode
            | Self::EmptyMessage
            | Self::MessageTooLong
            | Self::MsgappWindowClosed
            | Self::UndoNotSupported
            | Self::UsageExceedsPlan
            | Self::PaymentAmountMismatch => StatusCode::UNPROCESSABLE_ENTITY,
            Self::ConfirmationRequired => StatusCode::PRECONDITION_REQUIRED,
            Self::RequestHeaderFieldsTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::RateLimited | Self::AssistantCapReached => StatusCode::TOO_MANY_REQUESTS,
            Self::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::OtpDeliveryFailed
            | Self::PaymentProviderFailed
            | Self::MsgappSendFailed
            | Self::EmailSendFailed
            | Self::AdnetSyncFailed
            | Self::NotificationSendFailed
            | Self::ModelAnswerInvalid => StatusCode::BAD_GATEWAY,
            Self::ServiceUnavailable | Self::AssistantUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }
}

/// The error body every failing response carries.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Human-readable message; wording can change.
    pub error: String,
    /// Stable snake_case code to branch on.
    pub code: ErrorCode,
    /// Structured context; its shape is fixed per code.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<Value>,
}

#[derive(Debug)]
pub struct AppError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Value>,
    pub source: Option<anyhow::Error>,
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    /// An error with `code`, answered with the code's status.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status: code.status(),
            code,
            message: message.into(),
            details: None,
            source: None,
        }
    }

    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("{what} not found"))
    }

    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(code, message)
    }

    /// 422 `validation_failed` with `details.fields` mapping each field to its message.
    /// 422 `validation_failed` naming one field.
    pub fn field(name: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation([(name.into(), message.into())])
    }

    pub fn validation<K: Into<String>, V: Into<String>>(
        fields: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let fields: Map<String, Value> = fields
            .into_iter()
            .map(|(k, v)| (k.into(), Value::String(v.into())))
            .collect();
        Self::new(
            ErrorCode::ValidationFailed,
            "the request has invalid fields",
        )
        .with_details(json!({ "fields": fields }))
    }

    /// 429 `rate_limited`; the response also carries `Retry-After`.
    pub fn rate_limited(retry_after_seconds: u64) -> Self {
        Self::new(ErrorCode::RateLimited, "too many requests; retry later")
            .with_details(json!({ "retry_after_seconds": retry_after_seconds }))
    }

    pub fn payload_too_large() -> Self {
        Self::new(
            ErrorCode::PayloadTooLarge,
            "the request body is larger than this endpoint accepts",
        )
    }

    /// A server fault. The caller's location is kept so the log says where it came from.
    #[track_caller]
    pub fn internal(e: impl Into<anyhow::Error>) -> Self {
        let loc = Location::caller();
        let source = e
            .into()
            .context(format!("at {}:{}", loc.file(), loc.line()));
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: ErrorCode::InternalError,
            message: "internal error".into(),
            details: None,
            source: Some(source),
        }
    }

    /// 408 `request_timeout`: the request's body did not arrive within the request deadline.
    pub fn request_timeout() -> Self {
        Self::new(
            ErrorCode::RequestTimeout,
            "the request did not arrive in time",
        )
    }

    /// 503 `service_unavailable` with `Retry-After`: a work queue (database, password
    /// hashing) is full, so the request is turned away rather than queued without bound.
    pub fn overloaded() -> Self {
        Self::unavailable("the server is busy; retry shortly")
            .with_details(json!({ "retry_after_seconds": 1 }))
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ServiceUnavailable, message)
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl std::error::Error for AppError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(AsRef::as_ref)
    }
}

impl From<crate::threads::QueueFull> for AppError {
    fn from(e: crate::threads::QueueFull) -> Self {
        tracing::warn!(error = %e, "turned a request away");
        Self::overloaded()
    }
}

impl From<rusqlite::Error> for AppError {
    #[track_caller]
    fn from(e: rusqlite::Error) -> Self {
        Self::internal(e)
    }
}

impl From<r2d2::Error> for AppError {
    #[track_caller]
    fn from(e: r2d2::Error) -> Self {
        Self::internal(e)
    }
}

/// Maps a SQLite constraint violation to a client error (STYLE 3, realworld `ResultExt`).
pub trait ResultExt<T> {
    /// `constraint` is what SQLite names in its message, e.g. `users.email` for
    /// `UNIQUE constraint failed: users.email`.
    fn on_constraint(
        self,
        constraint: &str,
        map: impl FnOnce(rusqlite::Error) -> AppError,
    ) -> Result<T, AppError>;
}

impl<T> ResultExt<T> for Result<T, rusqlite::Error> {
    #[track_caller]
    fn on_constraint(
        self,
        constraint: &str,
        map: impl FnOnce(rusqlite::Error) -> AppError,
    ) -> Result<T, AppError> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => {
                let hit = matches!(
                    &e,
                    rusqlite::Error::SqliteFailure(f, Some(msg))
                        if f.code == rusqlite::ErrorCode::ConstraintViolation
                            && msg.split(": ").nth(1).is_some_and(|cols| {
                                cols.split(", ").any(|c| c == constraint)
                            })
                );
                if hit {
                    Err(map(e))
                } else {
                    Err(AppError::internal(e))
                }
            }
        }
    }
}
