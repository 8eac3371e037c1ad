//! The reviews' writes, shared by their REST handlers and the assistant (issue 16).
//! Permission checks stay with the callers (the handler's `scope.require`, the assistant's
//! at approval time).

use super::model::{ReviewOut, ReviewPatch};
use super::store;
use crate::audit::{self, Actor};
use crate::error::AppError;
use crate::http::extract::text;
use crate::ids::{ReviewId, StoreId};
use crate::state::AppState;

/// The longest reply, in characters after trimming.
pub const MAX_REPLY_CHARS: usize = 2000;

/// Moderates a review and sets or removes the store's reply, as `PATCH .../reviews/{id}`
/// does: `status` is required; `reply` is at most 2,000 characters after trimming (422
/// `validation_failed` on `reply`), `Some(None)` or blank removes it, `None` keeps it. An
/// unknown review is 404. A patch that changes something records one `review.updated` audit
/// entry with it; one that changes nothing records nothing.
pub async fn update_review(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    id: ReviewId,
    input: ReviewPatch,
) -> Result<ReviewOut, AppError> {
    let reply = input
        .reply
        .map(|r| {
            r.map(|t| text("reply", &t, 0, MAX_REPLY_CHARS))
                .transpose()
                .map(|t| t.filter(|t| !t.is_empty()))
        })
        .transpose()?;
    let (actor, now) = (actor.clone(), st.clock.now());
    st.db
        .write(move |tx| {
            let at = crate::time::format(now);
            // Setting what it already has changes nothing and records nothing.
            let moved = store::set_status(tx, store, id, input.status, &at)?;
            let replied = match &reply {
                Some(r) => store::set_reply(tx, store, id, r.as_deref(), &at)?,
                None => false,
            };
            if moved || replied {
                audit::record(tx, &actor, "review.updated", "review", &id.to_string(), now)?;
            }
            store::get(tx, store, id)?.ok_or_else(|| AppError::not_found("review"))
        })
        .await
}
