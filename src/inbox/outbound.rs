//! Where a team reply leaves for its contact, per channel kind. The chat widget reads it
//! from the hub; the messaging app and e-mail send it through a durable job enqueued in the
//! reply's own transaction (so a reply is never stored without its delivery, nor sent
//! without being stored).

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::model::{ChannelKind, ConversationOut};
use crate::config::Config;
use crate::error::AppError;
use crate::ids::MessageId;

/// Refuses a reply the channel cannot deliver now (the messaging app's closed reply
/// window; e-mail on a server without `--smtp-url`: 503); nothing is stored when this fails.
pub fn check_reply(
    conversation: &ConversationOut,
    now: DateTime<Utc>,
    cfg: &Config,
) -> Result<(), AppError> {
    match conversation.channel_kind {
        ChannelKind::Msgapp => super::msgapp_channel::check_window(conversation, now),
        ChannelKind::Email if cfg.smtp.is_none() => Err(AppError::unavailable(
            "this server sends no e-mail: it was started without --smtp-url",
        )),
        ChannelKind::StorefrontChat | ChannelKind::Email => Ok(()),
    }
}

/// Enqueues the delivery of reply `message`, in the transaction that stored it.
pub fn enqueue_reply(
    tx: &Tx<'_>,
    conversation: &ConversationOut,
    message: MessageId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    match conversation.channel_kind {
        ChannelKind::Msgapp => super::msgapp_channel::enqueue_reply(tx, message, now),
        ChannelKind::Email => super::email_channel::reply::enqueue(tx, conversation, message, now),
        ChannelKind::StorefrontChat => Ok(()),
    }
}
