//! A team reply on an e-mail conversation leaves over SMTP as a durable job.
//!
//! Invariants:
//! - Everything the mail carries is fixed in the reply's own transaction: its Message-ID
//!   (`<message id@channel domain>`, stored as the message's `external_id`, so the contact's
//!   answer threads back), subject, In-Reply-To and References (in `payload`). Every attempt
//!   sends the same mail; a repeat after a crash is recognizable by its Message-ID.
//! - A refusal (5xx) fails the reply at once; anything else is retried with the queue's
//!   backoff, and the last failed attempt fails it. Failing sets `delivery_status: failed`
//!   with `delivery_error` and announces `message:updated`, once.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use lettre::message::Mailbox;
use serde_json::{Value, json};

use super::store;
use crate::error::AppError;
use crate::ids::MessageId;
use crate::inbox::model::{ChannelOut, ConversationOut, DeliveryStatus};
use crate::inbox::{events, store as inbox_store};
use crate::jobs::{self, JobKind};
use crate::mail::{self, Outgoing, SendError};
use crate::state::AppState;

/// Sends one team reply of an e-mail conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmailReply {
    pub message_id: MessageId,
}

/// With the queue's backoff (10 s doubling), the last attempt is about 20 minutes after the
/// first: long enough to ride out a relay restart, short enough that the team learns of a
/// reply that did not go out while the conversation is still on their screen.
pub const REPLY_ATTEMPTS: u32 = 8;

impl JobKind for EmailReply {
    const KIND: &'static str = "email_reply";

    fn max_attempts(&self) -> u32 {
        REPLY_ATTEMPTS
    }
}

/// The most References a reply carries (the newest ones): enough to thread anywhere, short
/// enough to keep the header sane.
const MAX_REFERENCES: usize = 20;

/// Fixes the mail reply `message` will be and enqueues its sending, in the reply's
/// transaction.
pub fn enqueue(
    tx: &Tx<'_>,
    conversation: &ConversationOut,
    message: MessageId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let channel = inbox_store::get_channel(tx, conversation.store_id, conversation.channel_id)?
        .ok_or_else(|| AppError::not_found("channel"))?;
    let address = address(&channel).unwrap_or_default();
    let domain = address.rsplit_once('@').map_or("localhost", |(_, d)| d);
    let own_id = format!("<{message}@{domain}>");
    let parent = store::latest_inbound(tx, conversation.id)?;
    let (subject, in_reply_to, references) = match &parent {
        Some((parent_id, payload)) => {
            let mut refs: Vec<String> = payload["references"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str().map(str::to_owned))
                .collect();
            refs.push(parent_id.clone());
            let skip = refs.len().saturating_sub(MAX_REFERENCES);
            (
                reply_subject(payload["subject"].as_str().unwrap_or("")),
                Some(parent_id.clone()),
                refs.split_off(skip),
            )
        }
        None => (reply_subject(""), None, Vec::new()),
    };
    let payload = json!({"subject": subject, "in_reply_to": in_reply_to, "references": references});
    store::set_mail_fields(tx, message, Some(&own_id), &payload)?;
    jobs::enqueue(
        tx,
        &EmailReply {
            message_id: message,
        },
        now,
    )?;
    Ok(())
}

/// `Re: <subject>`, without stacking a second `Re:`.
fn reply_subject(subject: &str) -> String {
    let s = subject.trim();
    if s.is_empty() {
        "Re: (no subject)".to_owned()
    } else if s.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("re:")) {
        s.to_owned()
    } else {
        format!("Re: {s}")
    }
}

fn address(channel: &ChannelOut) -> Option<String> {
    channel.settings.get("address")?.as_str().map(str::to_owned)
}

/// The [`EmailReply`] handler: hands the reply to the relay. An error has the queue try
/// again after its backoff; a refusal, or the last attempt failing, fails the reply.
#[tracing::instrument(skip_all, fields(message_id = %id))]
pub async fn deliver(st: &AppState, id: MessageId) -> anyhow::Result<()> {
    let now = st.clock.now();
    let Some(pending) = st.db.read(move |c| to_send(c, id, now)).await? else {
        return Ok(()); // deleted with its conversation, or already failed
    };
    let result = match (&st.cfg.smtp, pending) {
        // Refused when the reply was sent; the server restarted without it since.
        (None, _) => Err(SendError::NoRelay),
        (Some(_), Err(e)) => Err(e),
        (Some(smtp), Ok(mail)) => {
            let smtp = smtp.clone();
            crate::threads::run_blocking(move || mail::send(&smtp, &mail)).await
        }
    };
    let Err(e) = result else {
        tracing::info!("e-mail reply handed to the mail server");
        return Ok(());
    };
    let last = jobs::attempt().is_none_or(jobs::Attempt::is_last);
    if !e.is_permanent() && !last {
        return Err(e.into());
    }
    let error: String = e.to_string().chars().take(500).collect();
    let failed = st
        .db
        .write(move |tx| {
            if !store::mark_failed(tx, id, &error)? {
                return Ok(None);
            }
            inbox_store::get_message(tx, id)
        })
        .await?;
    if let Some(m) = failed {
        st.hub.publish(&events::message(
            "message:updated",
            &m.linked(st.public_url()),
        ));
    }
    tracing::warn!(error = %e, permanent = e.is_permanent(), "e-mail reply failed");
    // A refusal is settled (retrying cannot help); a last failed attempt stays an error.
    if e.is_permanent() {
        Ok(())
    } else {
        Err(e.into())
    }
}

/// The mail of reply `id`, if it is still to send; a reply that cannot become a mail (no
/// usable address) is an error that retrying will not fix.
fn to_send(
    c: &rusqlite::Connection,
    id: MessageId,
    now: DateTime<Utc>,
) -> Result<Option<Result<Outgoing, SendError>>, AppError> {
    let Some(m) = inbox_store::get_message(c, id)? else {
        return Ok(None);
    };
    if m.delivery_status == DeliveryStatus::Failed {
        return Ok(None);
    }
    let Some(conv) = inbox_store::get_conversation(c, m.store_id, m.conversation_id)? else {
        return Ok(None);
    };
    let Some(channel) = inbox_store::get_channel(c, m.store_id, conv.channel_id)? else {
        return Ok(None);
    };
    let bad = |what: &str| SendError::Build(format!("no usable {what} address"));
    let from = address(&channel)
        .and_then(|a| a.parse().ok())
        .map(|a| Mailbox::new(Some(channel.name.clone()), a))
        .ok_or_else(|| bad("channel"));
    let to = conv
        .contact
        .email
        .as_deref()
        .and_then(|a| a.parse().ok())
        .map(|a| Mailbox::new(conv.contact.name.clone(), a))
        .ok_or_else(|| bad("contact"));
    let (from, to) = match (from, to) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return Ok(Some(Err(e))),
    };
    let p = &m.payload;
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let mail = Outgoing {
        hello_name: from.email.domain().to_owned(),
        from,
        to,
        subject: text(&p["subject"]).unwrap_or_else(|| reply_subject("")),
        text: m.text,
        message_id: m.external_id.unwrap_or_else(|| format!("<{id}@localhost>")),
        in_reply_to: text(&p["in_reply_to"]),
        references: p["references"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(text)
            .collect(),
        date: now,
    };
    Ok(Some(Ok(mail)))
}

#[cfg(test)]
mod tests {
    use super::reply_subject;

    #[test]
    fn a_reply_subject_gets_one_re() {
        assert_eq!(
            reply_subject("Where is my order?"),
            "Re: Where is my order?"
        );
        assert_eq!(
            reply_subject("RE: Where is my order?"),
            "RE: Where is my order?"
        );
        assert_eq!(reply_subject("  "), "Re: (no subject)");
        assert_eq!(reply_subject("Ré"), "Re: Ré");
    }
}
