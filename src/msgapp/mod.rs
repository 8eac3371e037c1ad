//! The messaging-app provider (issue 3): how sign-in and confirmation codes reach a phone.
//!
//! Invariants:
//! - One interface, two implementations chosen by `--msgapp-provider`: `log` (default, no
//!   outside service) stores the message in `outbound_messages` for `merchant-admin dev
//!   outbox`; `cloud` posts a template message to the Cloud API with ureq, off the async
//!   runtime, with a 10 s timeout.
//! - A code never appears in a log line, whatever the provider.
//! - Inbox replies (issue 15) go out through the same provider as free-form text
//!   ([`send_text`]) from the channel's own phone number; `log` records them like codes.
//! - Only the `log` provider keeps a message's secret (a code, an invite link) readable in
//!   `outbound_messages`; with `cloud` the table keeps no usable secret (issue 13), and rows
//!   an earlier `log` run left are blanked on start.

use chrono::{DateTime, Utc};
use rusqlite::params;
use serde_json::json;

use crate::auth::model::Locale;
use crate::config::MsgappConfig;
use crate::db::Db;
use crate::threads::run_blocking;
use crate::time;

/// Why a message did not go out.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("the messaging app answered {0}")]
    Status(u16),
    /// The provider's answer with its own explanation (`error.message`, `error.code`).
    #[error("the messaging app answered {status}: {reason}")]
    Refused { status: u16, reason: String },
    #[error("could not reach the messaging app: {0}")]
    Transport(String),
    #[error("could not record the message: {0}")]
    Store(String),
}

impl SendError {
    /// Whether sending the same message again cannot help: a 4xx other than a timeout or a
    /// rate limit (a bad number, a closed window, a blocked contact).
    pub fn is_permanent(&self) -> bool {
        let status = match self {
            Self::Status(s) | Self::Refused { status: s, .. } => *s,
            Self::Transport(_) | Self::Store(_) => return false,
        };
        (400..500).contains(&status) && status != 408 && status != 429
    }
}

/// What a secret-bearing row of `outbound_messages` holds instead of its body when the
/// provider is not `log`.
pub const WITHHELD_BODY: &str = "(not kept: the message carried a secret)";

/// Whether `outbound_messages` may keep a message's secret readable, for `dev outbox`: only
/// with the `log` provider, which is for local development.
pub fn keeps_secrets(cfg: &MsgappConfig) -> bool {
    matches!(cfg, MsgappConfig::Log)
}

/// Blanks the bodies of rows that carry a secret (codes, invite links), for a start with a
/// provider other than `log`. Idempotent.
pub fn withhold_secret_bodies(tx: &crate::db::Tx<'_>) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE outbound_messages SET body = ?1
         WHERE template IN ('login_code', 'store_invite') AND body != ?1",
        [WITHHELD_BODY],
    )
}

/// One row of `outbound_messages`, as `dev outbox` lists it.
#[derive(Debug, Clone)]
pub struct OutboundMessage {
    pub created_at: String,
    pub channel: String,
    pub recipient: String,
    pub template: String,
    pub body: String,
}

/// The latest `limit` outbound messages, newest first (`merchant-admin dev outbox`).
pub fn recent_messages(
    c: &rusqlite::Connection,
    limit: u32,
) -> rusqlite::Result<Vec<OutboundMessage>> {
    let mut s = c.prepare(
        "SELECT created_at, channel, recipient, template, body FROM outbound_messages
         ORDER BY created_at DESC LIMIT ?1",
    )?;
    s.query_map([limit], |r| {
        Ok(OutboundMessage {
            created_at: r.get(0)?,
            channel: r.get(1)?,
            recipient: r.get(2)?,
            template: r.get(3)?,
            body: r.get(4)?,
        })
    })?
    .collect()
}

/// A one-time code to send with the code template.
pub struct CodeMessage<'a> {
    pub to: &'a str,
    pub code: &'a str,
    pub locale: Locale,
}

/// Shows only the country code and the last four digits: `+55******4321`.
pub fn mask_phone(phone: &str) -> String {
    let chars: Vec<char> = phone.chars().collect();
    if chars.len() <= 7 {
        return "*".repeat(chars.len());
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}{}{tail}", "*".repeat(chars.len() - 7))
}

fn language(locale: Locale) -> &'static str {
    match locale {
        Locale::PtBr => "pt_BR",
        Locale::EnUs => "en_US",
    }
}

/// Sends a code message with the configured provider.
pub async fn send_code(
    cfg: &MsgappConfig,
    db: &Db,
    msg: CodeMessage<'_>,
    now: DateTime<Utc>,
) -> Result<(), SendError> {
    let masked = mask_phone(msg.to);
    let result = match cfg {
        MsgappConfig::Log => {
            let (to, code) = (msg.to.to_owned(), msg.code.to_owned());
            let body = match msg.locale {
                Locale::PtBr => format!("Seu código de acesso: {code}"),
                Locale::EnUs => format!("Your sign-in code: {code}"),
            };
            record(db, &to, "login_code", body, now).await
        }
        MsgappConfig::Cloud {
            api_base,
            phone_number_id,
            token,
            otp_template,
            timeout,
        } => {
            let url = format!(
                "{}/{phone_number_id}/messages",
                api_base.trim_end_matches('/')
            );
            let body = json!({
                "messaging_product": CLOUD_PRODUCT,
                "to": msg.to,
                "type": "template",
                "template": {
                    "name": otp_template,
                    "language": {"code": language(msg.locale)},
                    "components": [{
                        "type": "body",
                        "parameters": [{"type": "text", "text": msg.code}],
                    }],
                },
            })
            .to_string();
            let (token, timeout) = (token.clone(), *timeout);
            run_blocking(move || post_json(&url, &token, &body, timeout)).await
        }
    };
    match &result {
        Ok(()) => tracing::info!(to = %masked, "msgapp code message sent"),
        Err(e) => tracing::warn!(to = %masked, error = %e, "msgapp code message failed"),
    }
    result
}

/// A free-form text message from one of the store's numbers (an inbox reply).
pub struct TextMessage<'a> {
    /// The channel's `phone_number_id` at the provider.
    pub phone_number_id: &'a str,
    /// E.164, with or without the `+`.
    pub to: &'a str,
    pub body: &'a str,
}

/// The product name the Cloud API requires in every send; it rejects any other value.
const CLOUD_PRODUCT: &str = "whatsapp";

/// Sends a text message with the configured provider; the provider's id for it (`log` makes
/// one up) or None when a 2xx answer named none.
pub async fn send_text(
    cfg: &MsgappConfig,
    db: &Db,
    msg: TextMessage<'_>,
    now: DateTime<Utc>,
) -> Result<Option<String>, SendError> {
    let masked = mask_phone(msg.to);
    let result = match cfg {
        MsgappConfig::Log => {
            let id = format!("log.{}", uuid::Uuid::now_v7());
            record(db, msg.to, "inbox_reply", msg.body.to_owned(), now)
                .await
                .map(|()| Some(id))
        }
        MsgappConfig::Cloud { .. } => {
            let body = json!({
                "messaging_product": CLOUD_PRODUCT,
                "to": msg.to.trim_start_matches('+'),
                "type": "text",
                "text": {"body": msg.body},
            });
            post_message(cfg, msg.phone_number_id, &body).await
        }
    };
    match &result {
        Ok(_) => tracing::info!(to = %masked, "msgapp text message sent"),
        Err(e) => tracing::warn!(to = %masked, error = %e, "msgapp text message failed"),
    }
    result
}

/// An approved template message from one of the store's numbers (a workflow's
/// `send_message` step): the only kind the provider lets a business start a conversation with.
pub struct TemplateMessage<'a> {
    /// The channel's `phone_number_id` at the provider.
    pub phone_number_id: &'a str,
    /// E.164, with or without the `+`.
    pub to: &'a str,
    /// The template's name at the provider.
    pub template: &'a str,
    /// Its language code (`pt_BR`).
    pub language: &'a str,
    /// The body's parameters, in order.
    pub parameters: &'a [String],
}

/// Sends a template message with the configured provider; the provider's id for it, as
/// [`send_text`] answers. `log` keeps the template's name and parameters.
pub async fn send_template(
    cfg: &MsgappConfig,
    db: &Db,
    msg: TemplateMessage<'_>,
    now: DateTime<Utc>,
) -> Result<Option<String>, SendError> {
    let masked = mask_phone(msg.to);
    let result = match cfg {
        MsgappConfig::Log => {
            let id = format!("log.{}", uuid::Uuid::now_v7());
            let body = format!("{} [{}]", msg.language, msg.parameters.join(" | "));
            record(db, msg.to, msg.template, body, now)
                .await
                .map(|()| Some(id))
        }
        MsgappConfig::Cloud { .. } => {
            let parameters: Vec<_> = msg
                .parameters
                .iter()
                .map(|p| json!({"type": "text", "text": p}))
                .collect();
            let body = json!({
                "messaging_product": CLOUD_PRODUCT,
                "to": msg.to.trim_start_matches('+'),
                "type": "template",
                "template": {
                    "name": msg.template,
                    "language": {"code": msg.language},
                    "components": [{"type": "body", "parameters": parameters}],
                },
            });
            post_message(cfg, msg.phone_number_id, &body).await
        }
    };
    match &result {
        Ok(_) => {
            tracing::info!(to = %masked, template = msg.template, "msgapp template message sent");
        }
        Err(e) => tracing::warn!(to = %masked, error = %e, "msgapp template message failed"),
    }
    result
}

/// Posts a message from the store's number `phone_number_id` with the `cloud` provider, off
/// the async runtime; the provider's id for it.
async fn post_message(
    cfg: &MsgappConfig,
    phone_number_id: &str,
    body: &serde_json::Value,
) -> Result<Option<String>, SendError> {
    let MsgappConfig::Cloud {
        api_base,
        token,
        timeout,
        ..
    } = cfg
    else {
        return Err(SendError::Transport("not the cloud provider".into()));
    };
    let url = format!(
        "{}/{phone_number_id}/messages",
        api_base.trim_end_matches('/')
    );
    let (token, timeout, body) = (token.clone(), *timeout, body.to_string());
    run_blocking(move || post_for_id(&url, &token, &body, timeout)).await
}

/// How much of the provider's answer is read: its id, or its error's explanation.
const KEEP_ANSWER: u64 = 64 * 1024;

/// POSTs `body`; the id of the message (`messages[0].id`) a 2xx answer names, or the
/// provider's explanation of a refusal.
fn post_for_id(
    url: &str,
    token: &str,
    body: &str,
    timeout: std::time::Duration,
) -> Result<Option<String>, SendError> {
    use std::io::Read;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut res = agent
        .post(url)
        .header("Authorization", &format!("Bearer {token}"))
        .content_type("application/json")
        .send(body)
        .map_err(|e| SendError::Transport(e.to_string()))?;
    let status = res.status().as_u16();
    let mut kept = Vec::new();
    // An unreadable answer is an empty one: the status alone decides.
    let _ = res
        .body_mut()
        .as_reader()
        .take(KEEP_ANSWER)
        .read_to_end(&mut kept);
    let answer: serde_json::Value = serde_json::from_slice(&kept).unwrap_or_default();
    if (200..300).contains(&status) {
        return Ok(answer["messages"][0]["id"].as_str().map(str::to_owned));
    }
    let e = &answer["error"];
    let reason = [
        e["code"].as_i64().map(|c| format!("(#{c})")),
        e["message"].as_str().map(str::to_owned),
        e["error_data"]["details"].as_str().map(str::to_owned),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    if reason.is_empty() {
        Err(SendError::Status(status))
    } else {
        Err(SendError::Refused {
            status,
            reason: reason.chars().take(500).collect(),
        })
    }
}

fn post_json(
    url: &str,
    token: &str,
    body: &str,
    timeout: std::time::Duration,
) -> Result<(), SendError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let res = agent
        .post(url)
        .header("Authorization", &format!("Bearer {token}"))
        .content_type("application/json")
        .send(body)
        .map_err(|e| SendError::Transport(e.to_string()))?;
    let status = res.status().as_u16();
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err(SendError::Status(status))
    }
}

/// The `log` provider's send: the message kept in `outbound_messages` for `dev outbox`.
async fn record(
    db: &Db,
    to: &str,
    template: &str,
    body: String,
    now: DateTime<Utc>,
) -> Result<(), SendError> {
    let (to, template) = (to.to_owned(), template.to_owned());
    db.write(move |tx| {
        crate::db::exec(
            tx,
            "INSERT INTO outbound_messages (id, channel, recipient, template, body, created_at)
             VALUES (?1, 'msgapp', ?2, ?3, ?4, ?5)",
            params![
                uuid::Uuid::now_v7().to_string(),
                to,
                template,
                body,
                time::format(now)
            ],
        )?;
        Ok(())
    })
    .await
    .map_err(|e| SendError::Store(e.to_string()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn phones_are_masked_to_country_code_and_last_four() {
        assert_eq!(super::mask_phone("+5511987654321"), "+55*******4321");
        assert_eq!(super::mask_phone("+1234"), "*****");
    }
}
