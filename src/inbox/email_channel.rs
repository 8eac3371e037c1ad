//! The e-mail channel (issue 15): an inbound-parse service posts each mail that reaches the
//! channel's address to `POST /channels/email/{channel_id}/inbound`; team replies leave over
//! SMTP ([`reply`]).
//!
//! Invariants:
//! - The caller is proven by the channel's `inbound_secret` in `X-Inbound-Secret`, compared
//!   in constant time before the body is read: 401 otherwise, nothing stored. Unknown
//!   channel or another kind 404; a channel turned off 403 (after the secret).
//! - A mail is stored once per channel, whatever its conversation (de-duplicated by its
//!   Message-ID, the message's `external_id`): a repeated delivery answers 200 and announces
//!   nothing.
//! - A mail joins the conversation of this channel that holds its In-Reply-To or one of its
//!   References, but only one with the same sender address: knowing a Message-ID is not
//!   enough to write into someone else's conversation. Otherwise it opens a new one, linked
//!   to the store's customer with that e-mail.

pub mod reply;
mod store;

use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::channels::open_secrets;
use super::conversations::{MAX_MESSAGE_CHARS, sent};
use super::events;
use super::model::{ChannelKind, ChannelOut, Contact, DeliveryStatus, Sender};
use super::store::{self as inbox_store, NewConversation, NewMessage};
use crate::error::{AppError, ErrorCode};
use crate::http::extract::{Json, Path};
use crate::ids::{ChannelId, ConversationId, MessageId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The header the inbound-parse service sends the channel's `inbound_secret` in.
pub const INBOUND_SECRET_HEADER: &str = "x-inbound-secret";

/// Largest inbound body: a mail with its files, base64 in JSON (the server's default is
/// 1 MiB). Only a caller holding the secret gets this far.
pub const INBOUND_BODY_LIMIT: usize = 10 * 1024 * 1024;

const MAX_ATTACHMENTS: usize = 20;
/// The most References kept: the newest, enough to thread on.
const MAX_REFERENCES: usize = 20;
/// RFC 5322's longest header line, the bound of a subject or a `to` list.
const MAX_HEADER_CHARS: usize = 998;

/// A mail as an inbound-parse service posts it. Fields not listed are ignored, so a
/// provider that sends more (headers, spam scores) is not refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct InboundEmail {
    /// The sender: `Name <address>` or a bare address.
    #[schema(example = "Ana <ana@example.com>")]
    pub from: String,
    /// The recipients as the mail lists them (kept in the message's `payload.to`).
    #[schema(example = "support@shop.example.com")]
    pub to: String,
    #[schema(example = "Where is my order?")]
    pub subject: String,
    /// The plain-text body; when blank, the text of `html` is used.
    #[schema(example = "Hello! It has not arrived yet.")]
    pub text: String,
    #[schema(example = "<p>Hello! It has not arrived yet.</p>")]
    pub html: Option<String>,
    /// The mail's Message-ID, with or without angle brackets.
    #[schema(example = "<CAF2b1d@mail.example.com>")]
    pub message_id: String,
    #[schema(example = "<CAE11aa@shop.example.com>")]
    pub in_reply_to: Option<String>,
    #[schema(example = "<CAE11aa@shop.example.com>")]
    pub references: Option<References>,
    /// At most 20 files.
    #[schema(max_items = 20)]
    pub attachments: Option<Vec<InboundAttachment>>,
}

/// The References header: one string of ids separated by spaces, or a list of ids.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum References {
    Header(String),
    List(Vec<String>),
}

/// A file of the mail.
#[derive(Debug, Deserialize, ToSchema)]
pub struct InboundAttachment {
    /// At most 255 characters.
    #[schema(example = "receipt.txt", max_length = 255)]
    pub filename: Option<String>,
    /// `image/png`, `application/pdf`...: a type and a subtype, parameters after `;`.
    #[schema(
        example = "text/plain",
        max_length = 255,
        pattern = r"^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+(;.*)?$"
    )]
    pub content_type: String,
    /// The file, standard base64 with its padding (line breaks are also taken; the pattern
    /// describes the unbroken form).
    #[schema(
        example = "aGVsbG8=",
        pattern = r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$"
    )]
    pub content: String,
}

/// Where the mail went.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmailReceived {
    pub conversation_id: ConversationId,
    pub message_id: MessageId,
    /// True when this Message-ID was already stored: nothing changed.
    pub duplicate: bool,
}

/// A mail, checked, as it will be stored.
struct Mail {
    contact: Contact,
    /// Lowercased, as conversations match it.
    address: String,
    text: String,
    message_id: String,
    /// In-Reply-To first, then References: what the mail may thread on.
    thread_ids: Vec<String>,
    payload: serde_json::Value,
    attachments: Vec<File>,
}

struct File {
    kind: &'static str,
    name: Option<String>,
    mime_type: String,
    data: Vec<u8>,
}

/// Receives one mail for an e-mail channel from the inbound-parse service. Answers 201 with
/// where it was stored, or 200 when the same Message-ID was stored already (nothing
/// changes). Files in `attachments` are kept with the message.
#[utoipa::path(post, path = "/channels/email/{channel_id}/inbound", tag = "inbox",
    params(("channel_id" = ChannelId, Path),
           ("X-Inbound-Secret" = String, Header, description = "The channel's inbound_secret")),
    request_body = InboundEmail,
    responses((status = 201, body = EmailReceived), (status = 200, body = EmailReceived),
              (status = 401, body = ErrorBody, description = "`unauthorized`: the signature does not match"), (status = 403, body = ErrorBody, description = "`forbidden`: the channel is turned off"),
              (status = 404, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn receive_email(
    State(st): State<AppState>,
    Path(id): Path<ChannelId>,
    headers: HeaderMap,
    req: Request,
) -> Result<Response, AppError> {
    let given = headers
        .get(INBOUND_SECRET_HEADER)
        .map(|v| crate::secrets::hash(&String::from_utf8_lossy(v.as_bytes())));
    let sb = st.secret_box.clone();
    // The secret is checked before the body is read: a stranger cannot make us take 10 MiB.
    st.db
        .read(move |c| authorize(c, &sb, id, given.as_deref()))
        .await?;
    let Json(input) = Json::<InboundEmail>::from_request(req, &st).await?;
    let mail = check(&input)?;
    let (clock, hub, link) = (st.clock.clone(), st.hub.clone(), st.public_url().to_owned());
    let stored = st
        .db
        .write_publish(
            move |tx| {
                let stored = file_mail(tx, id, &mail, clock.now())?;
                let frames = match &stored {
                    Stored::Duplicate(_) => Vec::new(),
                    Stored::New(sent, first) => {
                        let m = sent.message.clone().linked(&link);
                        events::sent(first.as_deref(), &m, &sent.conversation)
                    }
                };
                Ok((stored, frames))
            },
            move |frames| hub.publish(&frames),
        )
        .await?;
    match stored {
        Stored::Duplicate(out) => {
            tracing::info!(channel_id = %id, message_id = %out.message_id, "repeated e-mail ignored");
            Ok((StatusCode::OK, Json(out)).into_response())
        }
        Stored::New(sent, _) => {
            tracing::info!(channel_id = %id, message_id = %sent.message.id, "e-mail received");
            let out = EmailReceived {
                conversation_id: sent.conversation.id,
                message_id: sent.message.id,
                duplicate: false,
            };
            Ok((StatusCode::CREATED, Json(out)).into_response())
        }
    }
}

/// Whether the caller may post to channel `id`: 404 no such e-mail channel, 401 a missing or
/// wrong secret (`given` is its hash), 403 the channel is turned off.
fn authorize(
    c: &rusqlite::Connection,
    sb: &crate::secrets::SecretBox,
    id: ChannelId,
    given: Option<&[u8]>,
) -> Result<(), AppError> {
    let ch = email_channel(c, id)?;
    let sealed = inbox_store::channel_secrets(c, ch.store_id, id)?;
    let expected = open_secrets(sb, id, sealed.as_deref())?
        .get("inbound_secret")
        .and_then(|v| v.as_str())
        .map(crate::secrets::hash);
    // Hashes of equal length, compared in constant time.
    match (expected, given) {
        (Some(e), Some(g)) if crate::secrets::same(&e, g) => {}
        _ => {
            return Err(AppError::new(
                ErrorCode::Unauthorized,
                "missing or wrong X-Inbound-Secret",
            ));
        }
    }
    if !ch.enabled {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "this e-mail channel is turned off",
        ));
    }
    Ok(())
}

/// Stores `mail` on channel `id`: nothing when its Message-ID is there already, else in the
/// thread it answers or a new conversation, with its files.
fn file_mail(
    tx: &crate::db::Tx<'_>,
    id: ChannelId,
    mail: &Mail,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Stored, AppError> {
    let ch = email_channel(tx, id)?;
    // On the single writer, so two deliveries of one mail cannot both pass this check.
    if let Some((conversation_id, message_id)) =
        store::message_by_external(tx, id, &mail.message_id)?
    {
        return Ok(Stored::Duplicate(EmailReceived {
            conversation_id,
            message_id,
            duplicate: true,
        }));
    }
    let conversation = match store::thread_of(tx, id, &mail.address, &mail.thread_ids)? {
        Some(c) => c,
        None => {
            let c = ConversationId::new();
            inbox_store::insert_conversation(
                tx,
                &NewConversation {
                    id: c,
                    store: ch.store_id,
                    channel: id,
                    kind: ChannelKind::Email,
                    contact: &mail.contact,
                    visitor_token_hash: None,
                },
                now,
            )?;
            c
        }
    };
    let mid = MessageId::new();
    // Cannot meet its unique index: the channel-wide check above found no such Message-ID.
    inbox_store::insert_message(
        tx,
        &NewMessage {
            id: mid,
            conversation,
            store: ch.store_id,
            sender: Sender::Visitor,
            agent: None,
            text: &mail.text,
            external_id: Some(&mail.message_id),
            delivery_status: DeliveryStatus::Sent,
        },
        now,
    )?;
    store::set_mail_fields(tx, mid, None, &mail.payload)?;
    for (i, f) in mail.attachments.iter().enumerate() {
        store::insert_attachment(
            tx,
            mid,
            &store::NewAttachment {
                index: i64::try_from(i).map_err(AppError::internal)?,
                kind: f.kind,
                name: f.name.as_deref(),
                mime_type: &f.mime_type,
                data: &f.data,
            },
        )?;
    }
    // The first message announces the conversation to the team.
    let first = if inbox_store::message_count(tx, conversation)? == 1 {
        inbox_store::get_row(tx, ch.store_id, conversation)?
    } else {
        None
    };
    Ok(Stored::New(
        Box::new(sent(tx, ch.store_id, conversation, mid)?),
        first.map(Box::new),
    ))
}

enum Stored {
    Duplicate(EmailReceived),
    New(Box<super::model::Sent>, Option<Box<super::model::InboxRow>>),
}

/// The e-mail channel `id` names: 404 when there is none (or it is another kind).
fn email_channel(c: &rusqlite::Connection, id: ChannelId) -> Result<ChannelOut, AppError> {
    store::channel_by_id_unscoped(c, id)?
        .filter(|ch| ch.kind == ChannelKind::Email)
        .ok_or_else(|| AppError::not_found("channel"))
}

/// Checks a mail and puts it in the form it is stored in; 422 names the bad field, nothing
/// is stored.
fn check(input: &InboundEmail) -> Result<Mail, AppError> {
    let from: lettre::message::Mailbox = input
        .from
        .trim()
        .parse()
        .map_err(|_| AppError::field("from", "is not an e-mail address"))?;
    let address = crate::text::normalize_email(from.email.as_ref());
    let name = from
        .name
        .as_deref()
        .map(one_line)
        .filter(|n| !n.is_empty())
        .map(|n| n.chars().take(120).collect());
    let message_id = parse_message_id(&input.message_id)
        .ok_or_else(|| AppError::field("message_id", "is not a Message-ID"))?;
    let subject = header_text("subject", &input.subject)?;
    let to = header_text("to", &input.to)?;
    let mut references: Vec<String> = match &input.references {
        None => Vec::new(),
        Some(References::Header(h)) => h
            .split_whitespace()
            .flat_map(|t| t.split_inclusive('>'))
            .filter_map(parse_message_id)
            .collect(),
        Some(References::List(l)) => l.iter().filter_map(|r| parse_message_id(r)).collect(),
    };
    references.drain(..references.len().saturating_sub(MAX_REFERENCES));
    let in_reply_to = input.in_reply_to.as_deref().and_then(parse_message_id);
    let given = input.attachments.as_deref().unwrap_or_default();
    if given.len() > MAX_ATTACHMENTS {
        return Err(AppError::field(
            "attachments",
            format!("at most {MAX_ATTACHMENTS} files"),
        ));
    }
    let attachments = given
        .iter()
        .enumerate()
        .map(|(i, a)| file(i, a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut text = input.text.trim().to_owned();
    if text.is_empty() {
        text = input.html.as_deref().map(html_to_text).unwrap_or_default();
    }
    if text.is_empty() && attachments.is_empty() {
        return Err(AppError::new(
            ErrorCode::EmptyMessage,
            "the mail has no text and no files",
        ));
    }
    // Messages hold at most 4096 characters; a long mail (mostly quoted history) is cut.
    let truncated = text.chars().count() > MAX_MESSAGE_CHARS;
    if truncated {
        text = text.chars().take(MAX_MESSAGE_CHARS).collect();
    }
    let mut payload = json!({"subject": subject, "to": to, "references": references});
    if truncated {
        payload["truncated"] = json!(true);
    }
    let thread_ids = in_reply_to.into_iter().chain(references).collect();
    Ok(Mail {
        contact: Contact {
            name,
            email: Some(address.clone()),
            phone: None,
        },
        address,
        text,
        message_id,
        thread_ids,
        payload,
        attachments,
    })
}

fn file(i: usize, a: &InboundAttachment) -> Result<File, AppError> {
    let field = |f: &str| format!("attachments[{i}].{f}");
    let mime_type = a.content_type.trim().to_ascii_lowercase();
    let (top, sub) = mime_type.split_once('/').unwrap_or(("", ""));
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    if !token(top) || !token(sub.split(';').next().unwrap_or("").trim()) || mime_type.len() > 255 {
        return Err(AppError::field(field("content_type"), "is not a MIME type"));
    }
    let mime_type = mime_type.split(';').next().unwrap_or("").trim().to_owned();
    let name = a
        .filename
        .as_deref()
        .map(one_line)
        .filter(|n| !n.is_empty());
    if name.as_ref().is_some_and(|n| n.chars().count() > 255) {
        return Err(AppError::field(field("filename"), "at most 255 characters"));
    }
    let b64: String = a
        .content
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let data = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| AppError::field(field("content"), "is not base64"))?;
    let kind = match top {
        "image" => "image",
        "video" => "video",
        "audio" => "audio",
        _ => "file",
    };
    Ok(File {
        kind,
        name,
        mime_type,
        data,
    })
}

/// `<id>` from `id` or `<id>`; None when it cannot be a Message-ID (empty, spaces, control
/// characters, brackets inside, too long), so nothing unsafe reaches a header we send.
fn parse_message_id(raw: &str) -> Option<String> {
    let s = raw.trim();
    let inner = s
        .strip_prefix('<')
        .and_then(|x| x.strip_suffix('>'))
        .unwrap_or(s);
    let ok = !inner.is_empty()
        && inner.len() <= 250
        && inner
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>');
    ok.then(|| format!("<{inner}>"))
}

/// Text that goes back into a header (a reply's subject): on one line, at most 998
/// characters.
fn header_text(field: &str, v: &str) -> Result<String, AppError> {
    let t = one_line(v);
    if t.chars().count() > MAX_HEADER_CHARS {
        return Err(AppError::field(
            field,
            format!("at most {MAX_HEADER_CHARS} characters"),
        ));
    }
    Ok(t)
}

/// Control characters (line breaks included) become spaces; trimmed.
fn one_line(v: &str) -> String {
    v.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// How much of an HTML body is read for its text: far more than a message keeps.
const MAX_HTML_SCAN: usize = 256 * 1024;

/// The readable text of an HTML body, for a mail sent without a text part: tags dropped
/// (scripts and styles with their content), block ends as line breaks, common entities
/// decoded. Not a renderer; enough to read the mail in the inbox.
fn html_to_text(html: &str) -> String {
    // Only the start can show in a message (4,096 characters): reading further is work an
    // outside sender could make us do for nothing.
    let mut cut = html.len().min(MAX_HTML_SCAN);
    while !html.is_char_boundary(cut) {
        cut -= 1;
    }
    let html = &html[..cut];
    // Lowercased once (ASCII only, so offsets agree) to find end tags without copying the
    // rest of the body again at every <script>: that made the time grow with the square of
    // the size.
    let lower = html.to_ascii_lowercase();
    let mut out = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else {
            out.push('<');
            rest = after;
            break;
        };
        let tag = after[..close].trim().to_ascii_lowercase();
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect();
        rest = &after[close + 1..];
        if !tag.starts_with('/') && matches!(name.as_str(), "script" | "style" | "head") {
            // Skip to the matching end tag; a missing one drops the rest.
            let end = format!("</{name}");
            let at = html.len() - rest.len();
            rest = lower[at..]
                .find(&end)
                .and_then(|i| rest.get(i..))
                .map_or("", |r| r.find('>').map_or("", |j| &r[j + 1..]));
            continue;
        }
        if matches!(
            name.as_str(),
            "br" | "p"
                | "div"
                | "li"
                | "tr"
                | "h1"
                | "h2"
                | "h3"
                | "h4"
                | "h5"
                | "h6"
                | "blockquote"
        ) {
            out.push('\n');
        }
    }
    out.push_str(rest);
    let decoded = decode_entities(&out);
    let mut lines: Vec<String> = Vec::new();
    for line in decoded.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if !(line.is_empty() && lines.last().is_none_or(String::is_empty)) {
            lines.push(line);
        }
    }
    lines.join("\n").trim().to_owned()
}

fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let entity = rest
            .get(1..)
            .and_then(|r| r.find(';').filter(|&i| i <= 10).map(|i| &r[..i]));
        let ch = entity.and_then(|e| match e {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            _ => e
                .strip_prefix("#x")
                .or_else(|| e.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| e.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        });
        match (ch, entity) {
            (Some(c), Some(e)) => {
                out.push(c);
                rest = &rest[e.len() + 2..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::{html_to_text, parse_message_id as message_id};

    #[test]
    fn message_ids_are_bracketed_and_nothing_unsafe_passes() {
        assert_eq!(
            message_id(" abc@x.example ").as_deref(),
            Some("<abc@x.example>")
        );
        assert_eq!(
            message_id("<abc@x.example>").as_deref(),
            Some("<abc@x.example>")
        );
        for bad in [
            "",
            "<>",
            "a b@x",
            "<a@x>\r\nBcc: e@x",
            "a<b@x",
            &"a".repeat(251),
        ] {
            assert_eq!(message_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn html_turns_into_readable_text() {
        let html = "<html><head><title>t</title><style>p{color:red}</style></head><body>\
                    <p>Hello&nbsp;<b>Ana</b>,</p><p>Order &#35;12 &amp; &lt;more&gt;</p>\
                    <script>alert(1)</script>Bye<br>Shop</body></html>";
        assert_eq!(
            html_to_text(html),
            "Hello Ana,\n\nOrder #12 & <more>\nBye\nShop"
        );
        assert_eq!(html_to_text("a &bogus; b < c"), "a &bogus; b < c");
    }

    #[test]
    fn a_huge_html_body_with_many_scripts_is_read_once_and_only_its_start() {
        let html = "<script>x</script>é".repeat(2_000_000);
        let text = html_to_text(&html);
        // The cut may end inside a tag, whose start then reads as text.
        let whole = text.trim_end_matches(|c| c != 'é');
        assert!(
            whole.len() > 1000 && whole.chars().all(|c| c == 'é'),
            "scripts dropped"
        );
        assert!(text.len() <= super::MAX_HTML_SCAN, "only the start is read");
    }
}
