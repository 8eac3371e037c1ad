//! A snoozed conversation comes back on its own: snoozing enqueues a [`Wake`] for
//! `snoozed_until` in the same transaction; at that time the conversation opens again and
//! the team sees `conversation:updated`. A wake whose snooze was changed or ended since
//! (another time, another status, a contact's message) does nothing: the conversation's
//! own `snoozed_until` must still be the one it was made for.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::events;
use super::store;
use crate::error::AppError;
use crate::ids::{ConversationId, StoreId};
use crate::jobs::{self, JobKind};
use crate::state::AppState;
use crate::time;

#[derive(Debug, Serialize, Deserialize)]
pub struct Wake {
    pub store_id: StoreId,
    pub conversation_id: ConversationId,
    /// The `snoozed_until` it wakes; a later snooze has its own job.
    pub snoozed_until: String,
}

impl JobKind for Wake {
    const KIND: &'static str = "conversation_wake";

    fn max_attempts(&self) -> u32 {
        10
    }
}

/// Schedules the wake of a conversation snoozed until `until` (an RFC 3339 time).
pub fn schedule(
    tx: &Tx<'_>,
    store_id: StoreId,
    conversation_id: ConversationId,
    until: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let at = time::parse(until)
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("unreadable snoozed_until")))?;
    let job = Wake {
        store_id,
        conversation_id,
        snoozed_until: until.to_owned(),
    };
    jobs::enqueue_at(tx, &job, at, now)?;
    Ok(())
}

/// Opens the conversation again if it is still snoozed until the job's time.
pub async fn wake(st: &AppState, job: Wake) -> anyhow::Result<()> {
    let clock = st.clock.clone();
    let woke = st
        .db
        .write(move |tx| {
            let now = clock.now();
            let n = crate::db::exec(
                tx,
                "UPDATE conversations SET status = 'open', snoozed_until = NULL, updated_at = ?4
                 WHERE store_id = ?1 AND id = ?2 AND status = 'snoozed' AND snoozed_until = ?3",
                params![
                    job.store_id,
                    job.conversation_id,
                    job.snoozed_until,
                    time::format(now)
                ],
            )?;
            if n == 0 {
                return Ok(None);
            }
            store::get_conversation(tx, job.store_id, job.conversation_id)
        })
        .await
        .map_err(|e| anyhow::anyhow!("waking a snoozed conversation: {e:?}"))?;
    if let Some(c) = woke {
        st.hub.publish(&events::conversation_updated(&c));
    }
    Ok(())
}
