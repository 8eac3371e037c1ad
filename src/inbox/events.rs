//! The socket events a write publishes once it has committed (spec 6.2, 6.3): built here so
//! every handler sends the same shapes.

use serde_json::json;

use super::hub::{Audience, Frame};
use super::model::{ConversationOut, InboxRow, MessageOut, NoteOut};

/// `message:new` (or `message:updated`) to the team and to the shopper.
pub fn message(kind: &str, m: &MessageOut) -> [Frame; 2] {
    [Audience::Agents, Audience::Widget]
        .map(|a| Frame::new(a, kind, m.store_id, Some(m.conversation_id), m))
}

/// `conversation:updated`: the bare conversation to the team, its four public fields to the
/// shopper.
pub fn conversation_updated(c: &ConversationOut) -> [Frame; 2] {
    let public = public_conversation(c);
    [
        Frame::new(
            Audience::Agents,
            "conversation:updated",
            c.store_id,
            Some(c.id),
            c,
        ),
        Frame::new(
            Audience::Widget,
            "conversation:updated",
            c.store_id,
            Some(c.id),
            &public,
        ),
    ]
}

/// The fields of a conversation a shopper may see (spec 6.3).
pub fn public_conversation(c: &ConversationOut) -> serde_json::Value {
    json!({"status": c.status, "bot_active": c.bot_active,
           "assignee_user_id": c.assignee_user_id, "unread_for_visitor": c.unread_for_visitor})
}

/// `conversation:new`: the inbox row, to the team, just before its first `message:new`.
pub fn conversation_new(row: &InboxRow) -> Frame {
    let c = &row.conversation;
    Frame::new(
        Audience::Agents,
        "conversation:new",
        c.store_id,
        Some(c.id),
        row,
    )
}

/// `cart:updated` (`{conversation_id, cart}`, an assisted sale's cart), to the team and to
/// the shopper alike: the caller's data carries no cart token.
pub fn cart_updated<T: serde::Serialize>(
    store: crate::ids::StoreId,
    conversation: crate::ids::ConversationId,
    data: &T,
) -> [Frame; 2] {
    [Audience::Agents, Audience::Widget]
        .map(|a| Frame::new(a, "cart:updated", store, Some(conversation), data))
}

/// `note:new`, to the team only.
pub fn note(store: crate::ids::StoreId, n: &NoteOut) -> Frame {
    Frame::new(
        Audience::Agents,
        "note:new",
        store,
        Some(n.conversation_id),
        n,
    )
}

/// A sent message with what it changed: the new conversation first when it is its first
/// message, then the message, then the conversation's counters.
pub fn sent(first: Option<&InboxRow>, m: &MessageOut, c: &ConversationOut) -> Vec<Frame> {
    let mut frames: Vec<Frame> = first.map(conversation_new).into_iter().collect();
    frames.extend(message("message:new", m));
    frames.extend(conversation_updated(c));
    frames
}
