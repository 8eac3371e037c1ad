//! The assistant (issue 16; spec 3 "Assistant proposal" and "Assistant turn", 4.3, 6.5, 7, 8):
//! a streamed chat with a language model (`provider`) that reads the store through tools
//! and proposes every write for the user to approve.
//!
//! Invariants:
//! - Nothing the model asks to change is written during a turn: a write tool becomes a
//!   proposal, applied only when its user approves it, with the permission the write needs
//!   checked at approval time, and `confirmed=true` for destructive, money or external ones.
//! - An approved write runs through its area's own write path (`<area>::writes`), so its
//!   validation, events and audit entry (naming the assistant and the approver) are the REST
//!   route's; it is recorded as an action, undoable where the write can be taken back.
//! - A proposal is decided once: approvals and declines race through one conditional update.
//! - Conversations, proposals and actions are their user's alone (404 for anyone else).
//! - Every message (a chat, a decision's follow-up, a phone's) counts against the store's
//!   monthly cap, the plan's under the operator's ceiling, in the transaction that reads the
//!   subscription: none is taken while it is suspended or canceled (402).
//! - One turn runs per conversation (409 `assistant_busy`); a stopped or failed turn keeps
//!   what was said.

pub mod handlers;
pub mod model;
pub mod phones;
pub mod proposals;
pub mod provider;
pub mod store;
pub mod tools;
pub mod turn;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::chat))
        .routes(routes!(handlers::list_conversations))
        .routes(routes!(
            handlers::get_conversation,
            handlers::rename_conversation,
            handlers::delete_conversation
        ))
        .routes(routes!(handlers::transcript))
        .routes(routes!(handlers::stop))
        .routes(routes!(handlers::approve))
        .routes(routes!(handlers::decline))
        .routes(routes!(handlers::list_actions))
        .routes(routes!(handlers::undo_action))
        .routes(routes!(handlers::usage))
        .routes(routes!(phones::start_phone))
        .routes(routes!(phones::verify_phone))
        .routes(routes!(
            handlers::rename_conversation_unscoped,
            handlers::delete_conversation_unscoped
        ))
        .routes(routes!(handlers::transcript_unscoped))
        .routes(routes!(handlers::stop_unscoped))
        .routes(routes!(handlers::approve_unscoped))
        .routes(routes!(handlers::decline_unscoped))
}
