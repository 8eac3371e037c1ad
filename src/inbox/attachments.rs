//! Message attachments (spec 2.8): a team reply sent as `multipart/form-data` keeps its
//! files in the database, so `backup` carries them, and each file is served back at its
//! `path` to the team (`conversations.read`) or to the widget holding the conversation's
//! visitor token.
//!
//! Invariants: at most [`MAX_FILES`] files of [`MAX_FILE_BYTES`] each (413 past it, nothing
//! stored); a file is served with `nosniff` and a sandboxing CSP, and only the media types a
//! browser shows without running anything are served `inline`.

use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::conversations::not_found;
use super::model::{MessageIn, NewFile};
use super::store;
use super::visitor::visitor_token;
use crate::error::{AppError, ErrorCode};
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::permissions::Permission;
use crate::ids::{ConversationId, MessageId, StoreId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The largest file a message may carry (spec: 16 MiB each, 413 over).
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;
/// Files per message: enough for a few photos, while one request stays a bounded amount of
/// memory on a small server.
pub const MAX_FILES: usize = 4;
/// The body limit of a team send: its files, and room for the text and the framing.
pub const SEND_BODY_LIMIT: usize = MAX_FILES * MAX_FILE_BYTES + 256 * 1024;

/// The OpenAPI shape of a multipart send.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(
    dead_code,
    reason = "documents the multipart form; read by MessageBody"
)]
pub struct MessageUpload {
    /// May be empty when files are attached; at most 4,096 characters.
    #[schema(max_length = 4096)]
    pub text: Option<String>,
    /// Any number of file parts up to 4 (each with a file name), 16 MiB each.
    #[schema(value_type = Vec<String>, format = Binary)]
    pub files: Vec<String>,
}

/// A send's body: JSON `{text}`, or multipart with a `text` field and file parts (counted and
/// sized here, as they stream). The text is as sent: [`super::writes`] checks it as for any
/// message (422 `empty_message`, `message_too_long`), except that a message with files may
/// have none.
pub struct MessageBody {
    pub text: String,
    pub files: Vec<NewFile>,
}

impl<S: Send + Sync> FromRequest<S> for MessageBody {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, AppError> {
        let multipart = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("multipart/form-data")
            });
        if !multipart {
            let Json(m) = Json::<MessageIn>::from_request(req, state).await?;
            return Ok(Self {
                text: m.text,
                files: Vec::new(),
            });
        }
        let mut form = Multipart::from_request(req, state)
            .await
            .map_err(|e| AppError::bad_request(e.body_text()))?;
        let (mut text, mut files) = (None, Vec::new());
        while let Some(mut field) = form.next_field().await.map_err(multipart_error)? {
            let Some(file_name) = field.file_name().map(clean_name) else {
                let name = field.name().unwrap_or_default().to_owned();
                if name != "text" || text.is_some() {
                    return Err(AppError::field(
                        name,
                        "unknown field: send one `text` field and file parts",
                    ));
                }
                text = Some(field.text().await.map_err(multipart_error)?);
                continue;
            };
            if files.len() == MAX_FILES {
                return Err(AppError::field(
                    "files",
                    format!("at most {MAX_FILES} files per message"),
                ));
            }
            let mime_type = field.content_type().map_or_else(octet_stream, mime_type);
            let mut data = Vec::new();
            while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
                if data.len() + chunk.len() > MAX_FILE_BYTES {
                    return Err(AppError::new(
                        ErrorCode::PayloadTooLarge,
                        "each file may be at most 16 MiB",
                    ));
                }
                data.extend_from_slice(&chunk);
            }
            files.push(NewFile {
                name: file_name,
                mime_type,
                data,
            });
        }
        Ok(Self {
            text: text.unwrap_or_default(),
            files,
        })
    }
}

#[expect(clippy::needless_pass_by_value, reason = "the shape map_err passes")]
fn multipart_error(e: axum::extract::multipart::MultipartError) -> AppError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        AppError::payload_too_large()
    } else {
        AppError::bad_request(format!("malformed multipart body: {}", e.body_text()))
    }
}

fn octet_stream() -> String {
    "application/octet-stream".to_owned()
}

/// The part's declared type as `type/subtype` (parameters dropped), or
/// `application/octet-stream` when it is not one.
fn mime_type(v: &str) -> String {
    let essence = v
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    match essence.split_once('/') {
        Some((t, s)) if token(t) && token(s) => essence,
        _ => octet_stream(),
    }
}

/// A file name as the sender's device had it, without any directory, control characters
/// or excess length; `None` when nothing is left.
fn clean_name(v: &str) -> Option<String> {
    let base = v.rsplit(['/', '\\']).next().unwrap_or_default();
    let name: String = base.chars().filter(|c| !c.is_control()).take(255).collect();
    let name = name.trim();
    (!name.is_empty() && name != "." && name != "..").then(|| name.to_owned())
}

/// Types a browser displays without running anything; every other file is a download.
fn shown_inline(mime: &str) -> bool {
    matches!(
        mime,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp" | "application/pdf" | "text/plain"
    ) || mime.starts_with("audio/")
        || mime.starts_with("video/")
}

/// One file of a message, with its own type. The team needs `conversations.read`; the widget
/// sends its conversation's visitor token instead (`X-Visitor-Token`, or `Authorization:
/// Bearer vt_...`).
#[utoipa::path(get,
    path = "/stores/{store_id}/conversations/{conversation_id}/messages/{message_id}/attachments/{index}",
    tag = "inbox", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("conversation_id" = ConversationId, Path),
           ("message_id" = MessageId, Path), ("index" = i64, Path)),
    responses((status = 200, description = "The file, with its media type",
               content_type = "*/*", body = inline(crate::http::openapi::Binary)),
              (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn get_attachment(
    State(st): State<AppState>,
    Path((store_id, id, message, index)): Path<(StoreId, ConversationId, MessageId, i64)>,
    headers: HeaderMap,
    scope: Result<StoreScope, AppError>,
) -> Result<Response, AppError> {
    // Visitor tokens carry the `vt_` prefix, so one never passes for an account's token.
    let token = visitor_token(&headers).filter(|t| t.starts_with("vt_"));
    if token.is_none() {
        scope?.require(Permission::ConversationsRead)?;
    }
    let file = st
        .db
        .read(move |c| {
            let conversation = store::get_conversation(c, store_id, id)?.ok_or_else(not_found)?;
            if let Some(token) = token {
                let hash = store::visitor_token_hash(c, store_id, conversation.channel_id, id)?
                    .flatten()
                    .unwrap_or_default();
                if !crate::secrets::same(&hash, &crate::secrets::hash(&token)) {
                    return Err(AppError::new(
                        ErrorCode::Unauthorized,
                        "missing or wrong visitor token",
                    ));
                }
            }
            store::attachment(c, store_id, id, message, index)?
                .ok_or_else(|| AppError::not_found("attachment"))
        })
        .await?;
    let disposition = if shown_inline(&file.mime_type) {
        "inline"
    } else {
        "attachment"
    };
    let name = file.name.as_deref().unwrap_or("file");
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded = url::form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>();
    let mut res = file.data.into_response();
    let h = res.headers_mut();
    let set = |v: String| HeaderValue::from_str(&v).unwrap_or(HeaderValue::from_static("file"));
    h.insert(header::CONTENT_TYPE, set(file.mime_type));
    h.insert(
        header::CONTENT_DISPOSITION,
        set(format!(
            "{disposition}; filename=\"{ascii}\"; filename*=UTF-8''{}",
            encoded.replace('+', "%20")
        )),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // A file opened in the browser runs nothing and reaches nothing, whatever its type says.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'; img-src 'self'; media-src 'self'"),
    );
    // A message's files never change.
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=86400, immutable"),
    );
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::{clean_name, mime_type};

    #[test]
    fn declared_types_and_names_are_kept_only_when_sane() {
        assert_eq!(mime_type("image/PNG; charset=x"), "image/png");
        assert_eq!(mime_type("text/html\r\nx: y"), "application/octet-stream");
        assert_eq!(mime_type("nonsense"), "application/octet-stream");
        assert_eq!(
            clean_name("C:\\Users\\me\\photo.jpg").as_deref(),
            Some("photo.jpg")
        );
        assert_eq!(clean_name("../../etc/passwd").as_deref(), Some("passwd"));
        assert_eq!(clean_name("a\u{0}b\nc.txt").as_deref(), Some("abc.txt"));
        assert_eq!(clean_name("dir/"), None);
    }
}
