//! Marketing e-mail (issue 20 "Marketing e-mail"; spec 4.10, permissions per spec 5, error
//! codes per spec 7): segments (saved customer filters), campaigns mailed to a segment over
//! the SMTP sender (`--smtp-url`), and the signed one-click unsubscribe link.
//!
//! Invariants:
//! - A campaign moves draft -> scheduled -> sending -> sent (draft -> sending when sent
//!   now), or to cancelled from draft, scheduled or sending; anything else is 409
//!   `invalid_status_transition`. Only a draft is edited or deleted.
//! - Recipients are frozen in the transaction that starts sending, with the batch jobs
//!   that mail them: the segment's customers with `accepts_marketing = true` and an e-mail,
//!   whatever the segment's own filter says. Nobody else is ever mailed, and a customer who
//!   unsubscribes after the freeze is skipped (failed, `unsubscribed`), not mailed.
//! - A recipient is marked sent in its own transaction right after the mail server took
//!   the mail, so a retried batch mails only who is still pending; a crash between the two
//!   repeats at most that one mail (same Message-ID). A failed attempt writes
//!   `email_send_failed` and the server's answer on the recipient; a refusal or the batch
//!   job's last attempt fails it. The campaign is `sent` once every recipient is sent or
//!   failed; its stats are counters kept in those same transactions.
//! - Every mail carries `List-Unsubscribe` (the signed link) and
//!   `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058). The link's token is an
//!   HMAC under the server key over store and customer; a forged one is 404.
//! - Reads need `marketing.read`, writes `marketing.write`; every query is scoped by store
//!   and every write records an audit entry in its transaction.

pub mod handlers;
pub mod model;
pub mod render;
pub mod sending;
pub mod store;
pub mod unsubscribe;
pub mod writes;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(handlers::list_segments, handlers::create_segment))
        .routes(routes!(
            handlers::get_segment,
            handlers::update_segment,
            handlers::delete_segment
        ))
        .routes(routes!(handlers::list_segment_customers))
        .routes(routes!(handlers::list_campaigns, handlers::create_campaign))
        .routes(routes!(
            handlers::get_campaign,
            handlers::update_campaign,
            handlers::delete_campaign
        ))
        .routes(routes!(handlers::schedule_campaign))
        .routes(routes!(handlers::cancel_campaign))
        .routes(routes!(handlers::send_test_campaign))
        .routes(routes!(handlers::list_campaign_recipients))
        .routes(routes!(
            unsubscribe::unsubscribe_page,
            unsubscribe::unsubscribe
        ))
}
