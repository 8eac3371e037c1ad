//! The shared inbox (issue 15; spec 2.8, 3 "Message delivery", 4.8, 4.9, 5 rule 8, 6.2–6.4).
//!
//! Invariants:
//! - Every query is scoped by store; another store's channel or conversation is 404.
//! - Channel secrets (`app_secret`, `verify_token`, `inbound_secret`) are sealed with
//!   `secrets.key` and never returned; a chat channel's `key` is public by design.
//! - Messages are ordered by `seq`, assigned by the single writer in commit order, so the
//!   catch-up recipe (`after=<last id>`, then `cursor`) loses and repeats nothing.
//! - A message and its conversation's counters (unread, waiting since, last activity) change
//!   in one transaction.
//! - A team member's reply is [`writes::send_agent_text`] (with files, the route's
//!   multipart form), which the handler and the assistant call alike: one path for the
//!   checks, the delivery job and the frames published after commit.

pub mod attachments;
pub mod channels;
pub mod conversations;
pub mod email_channel;
pub mod events;
pub mod hub;
pub mod model;
pub mod msgapp_channel;
pub mod outbound;
pub mod snooze;
pub mod sockets;
pub mod store;
pub mod visitor;
pub mod writes;

use axum::extract::DefaultBodyLimit;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(channels::list_channels, channels::create_channel))
        .routes(routes!(
            channels::get_channel,
            channels::update_channel,
            channels::delete_channel
        ))
        .routes(routes!(conversations::list_conversations))
        .routes(routes!(conversations::counts))
        .routes(routes!(
            conversations::get_conversation,
            conversations::update_conversation
        ))
        .merge(
            // A send may carry files: its own body limit, past the JSON default.
            OpenApiRouter::new()
                .routes(routes!(
                    conversations::list_messages,
                    conversations::send_message
                ))
                .layer(DefaultBodyLimit::max(attachments::SEND_BODY_LIMIT)),
        )
        .routes(routes!(attachments::get_attachment))
        .routes(routes!(conversations::add_note))
        .routes(routes!(conversations::mark_read))
        .routes(routes!(conversations::typing))
        .routes(routes!(visitor::open_conversation))
        .routes(routes!(visitor::list_messages, visitor::send_message))
        .routes(routes!(visitor::mark_read))
        .routes(routes!(
            msgapp_channel::verify_webhook,
            msgapp_channel::receive_webhook
        ))
        .routes(routes!(sockets::ws_ticket))
        .routes(routes!(sockets::agent_socket))
        .routes(routes!(sockets::widget_socket))
        .merge(
            // A mail with its files is larger than the server's default body limit.
            OpenApiRouter::new()
                .routes(routes!(email_channel::receive_email))
                .layer(DefaultBodyLimit::max(email_channel::INBOUND_BODY_LIMIT)),
        )
}
