//! The push sync: the store's feed items sent to the ad network's catalog API
//! (`--adnet-api-base`) with the store's access token, by `POST .../ads/sync` and by the
//! scheduled [`AdsSyncSweep`].
//!
//! Our adapter's contract (README "Ad-network catalog"): `POST {base}/catalogs/{catalog_id}/
//! items_batch` with `Authorization: Bearer {access_token}` and the JSON body
//! `{"items": [FeedItem, ...]}`, at most [`BATCH`] items per request; any 2xx is success.

use crate::db::Tx;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::model::{FeedItem, SyncOut};
use super::store;
use crate::error::{AppError, ErrorCode};
use crate::ids::StoreId;
use crate::jobs::JobKind;
use crate::state::AppState;
use crate::threads::run_blocking;
use crate::time;

/// Items per request to the ad network.
pub const BATCH: usize = 500;
/// How long a provider has to answer one request.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// A configured store is pushed again this long after its last push.
pub const SYNC_EVERY: Duration = Duration::hours(6);
/// How often the sweep looks for stores due.
pub const SWEEP_EVERY: Duration = Duration::hours(1);
/// Stores pushed per sweep run (the rest wait for the next run).
const STORES_PER_RUN: i64 = 100;
/// Most of a provider's error kept (in the 502 and in `last_sync_error`).
const MAX_ERROR: usize = 500;

/// The access token's sealing context: the store it belongs to.
pub fn token_aad(store: StoreId) -> String {
    format!("ads_settings:{store}")
}

/// A store's push, ready to send: where, with what, and the items.
pub struct Push {
    pub catalog_id: String,
    access_token: String,
    pub items: Vec<FeedItem>,
}

/// Why a push could not be made or failed.
pub enum PushError {
    /// No `--adnet-api-base`: 503.
    NoServer,
    /// The store has no catalog settings (or its token cannot be opened): 409.
    NotConfigured(&'static str),
    /// The ad network refused or could not be reached: 502 `adnet_sync_failed`.
    Provider(String),
}

impl PushError {
    pub fn message(&self) -> String {
        match self {
            Self::NoServer => {
                "no ad network is configured on this server (--adnet-api-base)".into()
            }
            Self::NotConfigured(why) => (*why).to_owned(),
            Self::Provider(e) => e.clone(),
        }
    }

    pub fn into_app_error(self) -> AppError {
        match self {
            Self::NoServer => AppError::unavailable(self.message()),
            Self::NotConfigured(_) => AppError::conflict(ErrorCode::Conflict, self.message()),
            Self::Provider(e) => AppError::new(
                ErrorCode::AdnetSyncFailed,
                "the ad network did not accept the catalog",
            )
            .with_details(serde_json::json!({ "provider_error": e })),
        }
    }
}

/// Reads what a push of the store sends (its settings, opened token and feed items).
fn prepare(
    st: &AppState,
    c: &rusqlite::Connection,
    store: StoreId,
) -> Result<Result<Push, PushError>, AppError> {
    let s = store::get(c, store)?;
    let (Some(catalog_id), Some(sealed)) = (s.catalog_id, s.access_token_sealed) else {
        return Ok(Err(PushError::NotConfigured(
            "set the ad network catalog first (PUT .../ads/settings)",
        )));
    };
    let Some(access_token) = st.secret_box.open_sealed(&sealed, &token_aad(store)) else {
        return Ok(Err(PushError::NotConfigured(
            "the stored access token cannot be opened (restored without its secrets.key?); set it again",
        )));
    };
    let site = store::site_base(c, store, st.public_url())?;
    let items = store::feed_items(c, store, &site)?;
    Ok(Ok(Push {
        catalog_id,
        access_token,
        items,
    }))
}

fn cut(mut s: String) -> String {
    if s.len() > MAX_ERROR {
        let mut end = MAX_ERROR;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// Sends the items in batches; the number of requests, or the first failure.
async fn send(base: &str, push: Push) -> Result<(i64, i64), PushError> {
    #[derive(Serialize)]
    struct Body<'a> {
        items: &'a [FeedItem],
    }
    let url = format!(
        "{}/catalogs/{}/items_batch",
        base.trim_end_matches('/'),
        url::form_urlencoded::byte_serialize(push.catalog_id.as_bytes()).collect::<String>()
    );
    let total = i64::try_from(push.items.len()).unwrap_or(i64::MAX);
    run_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .build()
            .into();
        let mut batches = 0;
        // An empty catalog still sends one (empty) batch: the provider learns it is empty.
        let chunks: Vec<&[FeedItem]> = if push.items.is_empty() {
            vec![&[]]
        } else {
            push.items.chunks(BATCH).collect()
        };
        for chunk in chunks {
            let body = serde_json::to_string(&Body { items: chunk })
                .map_err(|e| PushError::Provider(e.to_string()))?;
            let res = agent
                .post(&url)
                .header("Authorization", &format!("Bearer {}", push.access_token))
                .content_type("application/json")
                .send(body)
                .map_err(|e| PushError::Provider(format!("could not reach the ad network: {e}")))?;
            let status = res.status().as_u16();
            if !(200..300).contains(&status) {
                let text = res
                    .into_body()
                    .with_config()
                    .limit(64 * 1024)
                    .read_to_string()
                    .unwrap_or_default();
                return Err(PushError::Provider(cut(format!(
                    "HTTP {status}: {}",
                    text.trim()
                ))));
            }
            batches += 1;
        }
        Ok((total, batches))
    })
    .await
}

/// Pushes the store's catalog now and records the outcome in its settings (a failure too).
/// The caller decides what a failure answers: the manual route a 502, the sweep nothing.
pub async fn push(st: &AppState, store: StoreId) -> Result<Result<SyncOut, PushError>, AppError> {
    let Some(base) = st.cfg.adnet_api_base.clone() else {
        return Ok(Err(PushError::NoServer));
    };
    let st2 = st.clone();
    let prepared = st.db.read(move |c| prepare(&st2, c, store)).await?;
    let push = match prepared {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let catalog_id = push.catalog_id.clone();
    let sent = send(&base, push).await;
    let now = st.clock.now();
    let outcome = match &sent {
        Ok((items, _)) => Ok(*items),
        Err(e) => Err(e.message()),
    };
    // The push happened: its outcome is recorded even when the writer's queue is full.
    st.db
        .write_to_finish(move |tx| {
            store::record_sync(
                tx,
                store,
                outcome.as_ref().map(|n| *n).map_err(String::as_str),
                now,
            )
        })
        .await?;
    match sent {
        Ok((items, batches)) => {
            tracing::info!(%store, items, batches, "ad network catalog pushed");
            Ok(Ok(SyncOut {
                catalog_id,
                items,
                batches,
                synced_at: time::format(now),
            }))
        }
        Err(e) => {
            tracing::warn!(%store, error = %e.message(), "ad network catalog push failed");
            Ok(Err(e))
        }
    }
}

/// The scheduled sync: every [`SWEEP_EVERY`] it pushes each configured store whose last
/// push is [`SYNC_EVERY`] old (or that never pushed), records each outcome, and enqueues its
/// next run. A provider's failure is recorded on the store, never retried here: the store
/// is due again [`SYNC_EVERY`] later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdsSyncSweep;

impl JobKind for AdsSyncSweep {
    const KIND: &'static str = "ads_sync_sweep";

    fn max_attempts(&self) -> u32 {
        3
    }
}

fn schedule(
    tx: &Tx<'_>,
    run_at: DateTime<Utc>,
    now: DateTime<Utc>,
    also_running: bool,
) -> Result<(), AppError> {
    crate::jobs::enqueue_once(tx, &AdsSyncSweep, run_at, now, also_running).map(|_| ())
}

/// The scheduler's check: a run now unless one is waiting or running.
pub fn ensure_scheduled(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    schedule(tx, now, now, true)
}

/// One run of the sweep.
pub async fn sweep(st: &AppState) -> anyhow::Result<()> {
    let now = st.clock.now();
    let mut pushed = 0;
    if st.cfg.adnet_api_base.is_some() {
        let due = st
            .db
            .read(move |c| store::due_unscoped(c, now - SYNC_EVERY, STORES_PER_RUN))
            .await?;
        for store in due {
            // Recorded on the store either way; a failure here is the provider's, not ours.
            // A provider's failure is recorded by `push`; one that never reached it (the
            // token no longer opens) is recorded here.
            if let Err(e @ (PushError::NotConfigured(_) | PushError::NoServer)) =
                push(st, store).await?
            {
                let msg = e.message();
                st.db
                    .write(move |tx| store::record_sync(tx, store, Err(&msg), now))
                    .await?;
            }
            pushed += 1;
        }
    }
    st.db
        .write(move |tx| schedule(tx, now + SWEEP_EVERY, now, false))
        .await?;
    tracing::info!(stores = pushed, "ad network sync sweep ran");
    Ok(())
}
