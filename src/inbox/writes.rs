//! The inbox's writes, shared by its REST handlers and the assistant (issue 16). Permission
//! checks stay with the callers (the handler's `scope.require`, the assistant's at approval
//! time).

use super::conversations::{message_text, not_found, sent};
use super::model::{ChannelKind, DeliveryStatus, NewFile, Sender, Sent};
use super::store::{self, NewMessage};
use super::{events, outbound};
use crate::audit::Actor;
use crate::error::AppError;
use crate::ids::{ConversationId, MessageId, StoreId};
use crate::state::AppState;

/// A team member's text reply in a conversation, as `POST .../conversations/{id}/messages`
/// sends one: 422 `empty_message` when blank, `message_too_long` past 4,096 characters, 422
/// `msgapp_window_closed` when the messaging app's reply window has closed (503 for e-mail on
/// a server without SMTP); an unknown conversation is 404. The message and its delivery job
/// are one transaction, and the inbox's frames are published only after it commits. The
/// message is `actor.user_id`'s.
pub async fn send_agent_text(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    conv: ConversationId,
    text: String,
) -> Result<Sent, AppError> {
    send_agent_message(st, actor, store, conv, text, Vec::new()).await
}

/// [`send_agent_text`] with files (the REST route's multipart form), which chat conversations
/// alone take (422 on `files` elsewhere); with files the text may be blank. The files come
/// checked by [`super::attachments::MessageBody`], which counts and sizes them as they stream.
pub(super) async fn send_agent_message(
    st: &AppState,
    actor: &Actor,
    store_id: StoreId,
    id: ConversationId,
    text: String,
    files: Vec<NewFile>,
) -> Result<Sent, AppError> {
    let text = if files.is_empty() || !text.trim().is_empty() {
        message_text(&text)?
    } else {
        String::new()
    };
    let user = actor.user_id;
    let (clock, cfg, hub) = (st.clock.clone(), st.cfg.clone(), st.hub.clone());
    let link = st.public_url().to_owned();
    st.db
        .write_publish(
            move |tx| {
                // Read on the writer: message times follow commit order (`created_after`).
                let now = clock.now();
                let conversation =
                    store::get_conversation(tx, store_id, id)?.ok_or_else(not_found)?;
                outbound::check_reply(&conversation, now, &cfg)?;
                // The messaging app and e-mail send text only, so far: files would be dropped.
                if !files.is_empty() && conversation.channel_kind != ChannelKind::StorefrontChat {
                    return Err(AppError::field(
                        "files",
                        "files can be sent on chat conversations only",
                    ));
                }
                let mid = MessageId::new();
                store::insert_message(
                    tx,
                    &NewMessage {
                        id: mid,
                        conversation: id,
                        store: store_id,
                        sender: Sender::Agent,
                        agent: Some(user),
                        text: &text,
                        external_id: None,
                        delivery_status: DeliveryStatus::Sent,
                    },
                    now,
                )?;
                store::insert_attachments(tx, mid, &files)?;
                outbound::enqueue_reply(tx, &conversation, mid, now)?;
                // Tests fail a reply here, written but not committed: nothing may be published.
                #[cfg(feature = "failpoints")]
                if (|| {
                    fail::fail_point!("inbox::reply_before_commit", |arg| arg.as_deref()
                        == Some(text.as_str()));
                    false
                })() {
                    return Err(AppError::internal(anyhow::anyhow!(
                        "stopped before commit (fail point)"
                    )));
                }
                let sent = sent(tx, store_id, id, mid)?.linked(&link);
                let frames = events::sent(None, &sent.message, &sent.conversation);
                Ok((sent, frames))
            },
            move |frames| hub.publish(&frames),
        )
        .await
}
