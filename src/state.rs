//! The application state every handler, worker and test shares. `Clone` over `Arc`s; no
//! global statics (STYLE 10).

use std::sync::{Arc, OnceLock};

use anyhow::Context;
use axum::body::Bytes;

use crate::auth::password::Hasher;
use crate::clock::SharedClock;
use crate::config::Config;
use crate::db::Db;
use crate::db::backup::{DataDirLock, lock_data_dir};
use crate::http::page::CursorKey;
use crate::http::rate_limit::RateLimits;

/// Cloned by every layer of every request, so one reference count rather than one per field.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
    pub db: Db,
    /// What the background workers can run: each job kind's handler, the cleanup's purges.
    pub jobs: Arc<crate::jobs::Registry>,
    pub cfg: Arc<Config>,
    pub clock: SharedClock,
    pub cursor_key: CursorKey,
    /// Server key for `secrets::keyed_hash` (codes, idempotency fingerprints).
    pub hmac_key: Arc<[u8]>,
    pub limits: Arc<RateLimits>,
    /// Bearer tokens resolved recently (see `http::auth::TokenCache`).
    pub tokens: Arc<crate::http::auth::TokenCache>,
    /// The credential tables `http::auth` resolves tokens and store roles in.
    pub credentials: Arc<dyn crate::http::auth::Credentials>,
    /// The paths a browser may read from another origin, and which origins may.
    pub cross_origin: Arc<dyn crate::http::cors::CrossOrigin>,
    pub hasher: Hasher,
    /// Seals the secrets that must be read back (webhook signing secrets).
    pub secret_box: crate::secrets::SecretBox,
    /// The webhook delivery HTTP client and its limits.
    pub webhooks: crate::webhooks::delivery::Dispatcher,
    /// Where inbox events reach the open sockets.
    pub hub: Arc<crate::inbox::hub::Hub>,
    /// The assistant turns running now (one per conversation).
    pub assistant: Arc<crate::assistant::turn::Turns>,
    /// The serialized OpenAPI documents (admin, storefront), set once the router is built.
    pub openapi_json: Arc<OnceLock<Bytes>>,
    pub storefront_openapi_json: Arc<OnceLock<Bytes>>,
    /// The origin of absolute links: `--public-url`, else set from the listening address
    /// when serving starts.
    pub public_url: Arc<OnceLock<String>>,
    /// Prometheus series (`--metrics-addr`); a no-op when metrics are off.
    pub metrics: Arc<crate::telemetry::Metrics>,
    /// The address `GET /metrics` was bound to, once serving starts.
    pub metrics_bound: Arc<OnceLock<std::net::SocketAddr>>,
    /// The last scheduled backup's outcome (`--backup-dir`), for `/readyz`.
    pub backup_status: Arc<std::sync::Mutex<crate::system::backups::BackupStatus>>,
    /// Set once shutdown begins: `/readyz` answers 503 from then on.
    pub shutting_down: Arc<std::sync::atomic::AtomicBool>,
    /// The embedded guides and their search index (`POST /docs/ask`), built at open.
    pub docs: Arc<crate::docs::Docs>,
    /// Held while any part of the server runs, so `restore` cannot swap the file under it.
    _lock: Arc<DataDirLock>,
}

impl AppState {
    /// Creates the data directory if needed, takes its lock, opens (and migrates) the
    /// database and loads the server's keys. Blocking: call it off the async runtime.
    pub fn open(cfg: Config, clock: SharedClock) -> anyhow::Result<Self> {
        crate::db::create_data_dir(&cfg.data_dir)
            .with_context(|| format!("creating data directory {}", cfg.data_dir.display()))?;
        let lock = lock_data_dir(&cfg.data_dir)?;
        let (keys, secret_box) = prepare_at_rest(&cfg)?;
        let db = Db::open_with_queue(&cfg.db_path(), cfg.db_queue_limit)
            .with_context(|| format!("opening {}", cfg.db_path().display()))?;
        // The `users` CLI writes to the same file while the server runs.
        db.watch_other_processes(&cfg.db_path())?;
        let hmac_key: Arc<[u8]> = keys.hmac.into();
        let limits = RateLimits::new(&cfg, clock.clone());
        let hasher = Hasher::new(cfg.hash_workers, cfg.hash_queue_limit);
        let webhooks = crate::webhooks::delivery::Dispatcher::new(&cfg);
        let hub = Arc::new(crate::inbox::hub::Hub::new(cfg.max_sockets));
        let docs = crate::docs::Docs::load()?;
        let metrics = crate::telemetry::Metrics::new(cfg.metrics_addr.is_some());
        db.observe_waits(
            metrics.histogram("db_wait_seconds", &[("pool", "read")]),
            metrics.histogram("db_wait_seconds", &[("pool", "write")]),
        );
        db.observe_batches(metrics.histogram("db_write_batch_size", &[]));
        Ok(Self(Arc::new(Shared {
            db,
            jobs: Arc::new(job_registry()),
            cfg: Arc::new(cfg),
            clock,
            cursor_key: CursorKey::new(keys.cursor),
            hmac_key,
            limits: Arc::new(limits),
            tokens: Arc::default(),
            credentials: Arc::new(crate::auth::store::CredentialTables),
            cross_origin: Arc::new(crate::inbox::visitor::WidgetOrigins),
            hasher,
            secret_box,
            webhooks,
            hub,
            assistant: Arc::default(),
            openapi_json: Arc::new(OnceLock::new()),
            storefront_openapi_json: Arc::new(OnceLock::new()),
            public_url: Arc::new(OnceLock::new()),
            metrics: Arc::new(metrics),
            metrics_bound: Arc::new(OnceLock::new()),
            backup_status: Arc::default(),
            shutting_down: Arc::default(),
            docs: Arc::new(docs),
            _lock: Arc::new(lock),
        })))
    }

    /// The origin absolute links start with (no trailing slash).
    pub fn public_url(&self) -> &str {
        self.public_url.get().map_or("", String::as_str)
    }
}

/// Every area's background work: the job kinds the generic workers run, and what the
/// periodic cleanup deletes. (Webhook deliveries run on their own dispatcher.)
fn job_registry() -> crate::jobs::Registry {
    // What else reacts to store events, in their transaction: workflows start runs,
    // members are notified.
    crate::events::set_listeners(&[
        crate::workflows::runner::on_event,
        crate::notifications::produce::on_event,
    ]);
    let mut r = crate::jobs::Registry::new();
    r.handle(
        |st, job: crate::workflows::runner::WorkflowStep| async move {
            crate::workflows::runner::run_step(&st, job).await
        },
    );
    r.handle(
        |st, job: crate::workflows::runner::WorkflowFire| async move {
            crate::workflows::runner::fire(&st, job).await
        },
    );
    r.handle(|st, crate::workflows::runner::WorkflowSweep| async move {
        crate::workflows::runner::sweep(&st).await
    });
    r.recurring(
        "the workflow runs' sweep",
        crate::workflows::runner::ensure_sweep,
    );
    r.purge("stale carts", |tx, now, _| {
        crate::carts::store::purge_stale(tx, now - chrono::Duration::days(30))
    });
    r.purge("finished workflow runs", |tx, now, _| {
        crate::workflows::runs::purge_finished(tx, now - crate::workflows::runner::KEEP_RUNS)
    });
    r.handle(
        |st, job: crate::notifications::send::NotificationSend| async move {
            crate::notifications::send::send(&st, job).await
        },
    );
    r.purge("old notifications", |tx, now, _| {
        crate::notifications::store::purge_before(tx, now - crate::notifications::KEEP)
    });
    r.handle(|st, job: crate::orders::refunds::RefundCheck| async move {
        crate::orders::refunds::check(&st, job.refund_id).await
    });
    r.handle(
        |st, job: crate::inbox::msgapp_channel::MsgappReply| async move {
            crate::inbox::msgapp_channel::send_reply(&st, job).await
        },
    );
    r.handle(|st, job: crate::assistant::phones::PhoneTurn| async move {
        crate::assistant::phones::run_phone_turn(&st, job).await
    });
    r.handle(|st, crate::billing::lifecycle::BillingDay| async move {
        crate::billing::lifecycle::run_day(&st).await
    });
    r.recurring(
        "the daily billing run",
        crate::billing::lifecycle::ensure_scheduled,
    );
    r.handle(|st, crate::carts::recovery::CartSweep| async move {
        crate::carts::recovery::sweep(&st).await
    });
    r.recurring(
        "the abandoned-cart sweep",
        crate::carts::recovery::ensure_scheduled,
    );
    r.handle(|st, job: crate::inbox::snooze::Wake| async move {
        crate::inbox::snooze::wake(&st, job).await
    });
    r.handle(
        |st, job: crate::inbox::email_channel::reply::EmailReply| async move {
            crate::inbox::email_channel::reply::deliver(&st, job.message_id).await
        },
    );
    r.handle(
        |st, job: crate::marketing::sending::CampaignBatch| async move {
            crate::marketing::sending::send_batch(&st, job).await
        },
    );
    r.handle(
        |st, job: crate::marketing::sending::CampaignFire| async move {
            crate::marketing::sending::fire(&st, job).await
        },
    );
    r.handle(
        |st, crate::ads::sync::AdsSyncSweep| async move { crate::ads::sync::sweep(&st).await },
    );
    r.recurring(
        "the ad network catalog sync",
        crate::ads::sync::ensure_scheduled,
    );
    r.purge("idempotency keys", |tx, now, _| {
        crate::db::idempotency::purge_expired(tx, now)
    });
    r.purge("sign-in leftovers", |tx, now, cfg| {
        crate::auth::store::purge(tx, now, cfg.sign_in_window)
    });
    r.purge("empty chat conversations", |tx, now, _| {
        crate::inbox::store::purge_empty_conversations(tx, now)
    });
    r.purge("interrupted assistant approvals", |tx, now, _| {
        crate::assistant::store::fail_interrupted(tx, now)
    });
    r.purge("assistant phone message ids", |tx, now, _| {
        crate::assistant::phones::purge_inbound(tx, now)
    });
    r.purge("socket tickets", |tx, now, _| {
        crate::inbox::store::purge_tickets(tx, now)
    });
    r.purge("webhook history", |tx, now, _| {
        crate::webhooks::store::purge_history(tx, now)
    });
    r
}

/// Migrates the database and brings what it holds at rest up to date before anything else
/// opens it: the HMAC keys move out to their file, plain TOTP secrets are sealed, and
/// without the `log` provider secret-bearing outbound messages are blanked, and products a
/// migration queued get their storefront rows (rendered by our code, not SQL). On its own
/// connection, so that the bytes the old values sat in are zeroed (`secure_delete`) and the
/// WAL that still holds them is truncated. Each step is idempotent: a crash mid-way is
/// finished by the next start.
fn prepare_at_rest(
    cfg: &Config,
) -> anyhow::Result<(crate::db::keys::ServerKeys, crate::secrets::SecretBox)> {
    let path = cfg.db_path();
    let mut c =
        crate::db::open_connection(&path).with_context(|| format!("opening {}", path.display()))?;
    crate::db::migrate::run(&mut c)?;
    c.pragma_update(None, "secure_delete", true)?;
    let keys = crate::db::keys::load(&cfg.data_dir, &mut c)?;
    // Only after the HMAC keys were found: a database whose key files were left behind is
    // refused before a new secrets.key could be made in place of the lost one.
    let secret_box = crate::secrets::SecretBox::open(&cfg.data_dir)?;
    let tx = c.savepoint()?;
    let sealed = crate::auth::store::seal_plain_totp_secrets(&tx, &secret_box)
        .map_err(|e| anyhow::anyhow!("sealing TOTP secrets: {e:?}"))?;
    let withheld = if crate::msgapp::keeps_secrets(&cfg.msgapp) {
        0
    } else {
        crate::msgapp::withhold_secret_bodies(&tx)?
    };
    let storefront = crate::storefront::store::render_pending(&tx)
        .map_err(|e| anyhow::anyhow!("rendering storefront products: {e:?}"))?;
    tx.commit()?;
    if storefront > 0 {
        tracing::info!(products = storefront, "rendered the storefront's products");
    }
    if sealed > 0 {
        tracing::info!(
            users = sealed,
            "sealed TOTP secrets stored by an older release"
        );
    }
    if withheld > 0 {
        tracing::info!(
            messages = withheld,
            "blanked outbound messages that carried a secret (the provider is not `log`)"
        );
    }
    if sealed + withheld > 0 {
        crate::db::scrub(&c)?;
    }
    Ok((keys, secret_box))
}
