//! SQL of the e-mail channel: threading and de-duplication by RFC Message-ID (a message's
//! `external_id`), and what a mail adds to a message (its payload and files).

use crate::db::Tx;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use serde_json::Value;

use crate::error::AppError;
use crate::ids::{ChannelId, ConversationId, MessageId};
use crate::inbox::model::ChannelOut;

/// A channel by its id alone, whatever its store: the inbound route names only the channel
/// (its secret, checked next, is what proves the caller).
pub fn channel_by_id_unscoped(
    c: &Connection,
    id: ChannelId,
) -> Result<Option<ChannelOut>, AppError> {
    let Some(store) = c
        .prepare_cached("SELECT store_id FROM channels WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?
    else {
        return Ok(None);
    };
    crate::inbox::store::get_channel(c, store, id)
}

/// The message of `channel` with this Message-ID, in whichever of its conversations: one
/// mail delivered twice (or our own reply coming back) is stored once per channel, not once
/// per conversation as the unique index alone would allow.
pub fn message_by_external(
    c: &Connection,
    channel: ChannelId,
    external_id: &str,
) -> Result<Option<(ConversationId, MessageId)>, AppError> {
    Ok(c.prepare_cached(
        "SELECT m.conversation_id, m.id FROM conversations c
           JOIN messages m ON m.conversation_id = c.id AND m.external_id = ?2
         WHERE c.channel_id = ?1 LIMIT 1",
    )?
    .query_row(params![channel, external_id], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .optional()?)
}

/// The conversation of `channel` with `contact_email` that holds one of `ids` (In-Reply-To
/// and References), the most recent such message first.
pub fn thread_of(
    c: &Connection,
    channel: ChannelId,
    contact_email: &str,
    ids: &[String],
) -> Result<Option<ConversationId>, AppError> {
    if ids.is_empty() {
        return Ok(None);
    }
    let marks = (0..ids.len())
        .map(|i| format!("?{}", i + 3))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        // CROSS JOIN: messages first, found by their ids, not every conversation of the
        // channel walked.
        "SELECT c.id FROM messages m CROSS JOIN conversations c ON c.id = m.conversation_id
         WHERE c.channel_id = ?1 AND c.contact_email = ?2 AND m.external_id IN ({marks})
         ORDER BY m.seq DESC LIMIT 1"
    );
    let args: Vec<&dyn rusqlite::ToSql> = [&channel as &dyn rusqlite::ToSql, &contact_email]
        .into_iter()
        .chain(ids.iter().map(|i| i as &dyn rusqlite::ToSql))
        .collect();
    Ok(c.prepare_cached(&sql)?
        .query_row(params_from_iter(args), |r| r.get(0))
        .optional()?)
}

/// The contact's latest mail in a conversation: (Message-ID, payload), which a reply answers.
pub fn latest_inbound(
    c: &Connection,
    conversation: ConversationId,
) -> Result<Option<(String, Value)>, AppError> {
    c.prepare_cached(
        "SELECT external_id, payload FROM messages
         WHERE conversation_id = ?1 AND sender = 'visitor' AND external_id IS NOT NULL
         ORDER BY seq DESC LIMIT 1",
    )?
    .query_row([conversation], |r| {
        Ok((r.get(0)?, crate::db::json_column(r, 1)?))
    })
    .optional()
    .map_err(Into::into)
}

/// Sets what a message carries beside its text (and, for a reply, its own Message-ID).
pub fn set_mail_fields(
    tx: &Tx<'_>,
    message: MessageId,
    external_id: Option<&str>,
    payload: &Value,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE messages SET payload = ?2, external_id = COALESCE(?3, external_id) WHERE id = ?1",
        params![message, payload.to_string(), external_id],
    )?;
    Ok(())
}

/// A file of an inbound mail.
pub struct NewAttachment<'a> {
    pub index: i64,
    /// `image`, `video`, `audio` or `file`, from the MIME type.
    pub kind: &'a str,
    pub name: Option<&'a str>,
    pub mime_type: &'a str,
    pub data: &'a [u8],
}

pub fn insert_attachment(
    tx: &Tx<'_>,
    message: MessageId,
    a: &NewAttachment<'_>,
) -> Result<(), AppError> {
    let size = i64::try_from(a.data.len()).map_err(AppError::internal)?;
    crate::db::exec(
        tx,
        "INSERT INTO message_attachments (message_id, idx, kind, name, mime_type, size, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![message, a.index, a.kind, a.name, a.mime_type, size, a.data],
    )?;
    Ok(())
}

/// Marks a reply that will not go out `failed` with why; false when it already was (or is
/// gone), so the change is announced once.
pub fn mark_failed(tx: &Tx<'_>, message: MessageId, error: &str) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE messages SET delivery_status = 'failed', delivery_error = ?2
         WHERE id = ?1 AND delivery_status != 'failed'",
        params![message, error],
    )?;
    Ok(n == 1)
}
