//! Runtime configuration: a plain struct built from the CLI (or by tests), no global statics.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::cli::{LogFormat, ServeArgs};

/// Every default of `serve`, written once: the flags (`crate::cli`) and [`Config::new`] (what
/// tests and the other commands start from) both read these.
pub mod defaults {
    use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

    pub const ADDR: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080));
    pub const DATA_DIR: &str = "./data";
    pub const RATE_LIMIT_AUTHENTICATED: u32 = 1200;
    pub const RATE_LIMIT_ANONYMOUS: u32 = 300;
    pub const REQUEST_DEADLINE_SECS: u32 = 60;
    pub const MAX_CONNECTIONS: u32 = 4096;
    pub const MAX_SOCKETS: u32 = 20_000;
    pub const WORKERS: usize = 2;
    pub const JOB_LEASE_SECS: u32 = 60;
    pub const CLEANUP_INTERVAL_SECS: u32 = 3600;
    pub const SHUTDOWN_TIMEOUT_SECS: u32 = 10;
    pub const ACCESS_TOKEN_TTL_SECS: u32 = 86_400;
    /// 30 days.
    pub const REFRESH_TOKEN_TTL_SECS: u32 = 2_592_000;
    pub const REGISTER_RATE_LIMIT: u32 = 10;
    /// Documentation questions per visitor per hour (spec 8).
    pub const DOCS_HOURLY_LIMIT: u32 = 20;
    /// Documentation questions per day, all visitors together.
    pub const DOCS_DAILY_LIMIT: u32 = 2000;
    pub const SIGN_IN_FAILURE_LIMIT: u32 = 10;
    /// Messaging-app codes per account per hour (issue 3: "5 per hour per user").
    pub const CODE_SENDS_PER_HOUR: u32 = 5;
    pub const HASH_QUEUE_LIMIT: u32 = 256;
    pub const DB_QUEUE_LIMIT: u32 = crate::db::DEFAULT_QUEUE_LIMIT;
    pub const MSGAPP_OTP_TEMPLATE: &str = "login_code";
    pub const WEBHOOK_RETRY_BASE_SECS: u32 = 10;
    pub const WEBHOOK_CONCURRENCY: u16 = 64;
    pub const WEBHOOK_ENDPOINT_CONCURRENCY: u16 = 8;
    pub const BILLING_GRACE_DAYS: u32 = 7;
    /// Minutes a storefront cart with a contact and items waits untouched before it is
    /// abandoned (`carts.abandoned`).
    pub const CART_ABANDON_AFTER_MINUTES: u32 = 60;
    /// Hours an unpaid storefront order holds its stock before it is cancelled.
    pub const STOREFRONT_ORDER_HOLD_HOURS: u32 = 48;
    /// Storefront checkouts per client address per hour.
    pub const CHECKOUTS_PER_HOUR: u32 = 30;
    /// When unversioned paths were deprecated (RFC 3339).
    pub const DEPRECATION_DATE: &str = "2026-09-29T00:00:00Z";
    /// Seconds the oldest due job may wait before `/readyz` answers 503.
    pub const READY_MAX_JOB_LAG_SECS: u32 = 300;
}

#[derive(Debug, Clone)]
pub struct Config {
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
    pub log_format: LogFormat,
    pub rate_limit_authenticated: u32,
    pub rate_limit_anonymous: u32,
    pub trust_proxy: bool,
    /// The origin of absolute links; `None`: the address the server listens on.
    pub public_url: Option<String>,
    pub workers: usize,
    pub job_lease: Duration,
    pub cleanup_interval: Duration,
    /// From the shutdown signal to the exit (`--shutdown-timeout-secs`).
    pub shutdown_grace: Duration,
    pub deprecation_date: DateTime<Utc>,
    pub sunset_date: Option<DateTime<Utc>>,
    /// Where `GET /metrics` is served (`--metrics-addr`); None: no metrics are kept.
    pub metrics_addr: Option<SocketAddr>,
    /// `/readyz` answers 503 once the oldest due default-queue job has waited this long.
    pub ready_max_job_lag: Duration,
    /// Scheduled backups (`--backup-dir`); None: none.
    pub backups: Option<BackupSchedule>,
    /// How long an `Idempotency-Key` is remembered (spec 8: 24 hours).
    pub idempotency_ttl: chrono::Duration,
    /// Longest pause between two pieces of a request body before the read fails, so a
    /// client that stops sending cannot hold a request open forever.
    pub body_timeout: Duration,
    /// How long a client may take to send a request's head (line and headers).
    pub header_read_timeout: Duration,
    /// How long a request may take to arrive whole (head and body), from its first byte.
    pub request_deadline: Duration,
    /// Connections open at once; the next waits in the accept queue.
    pub max_connections: usize,
    /// WebSockets (team and widget) open at once: an upgraded socket no longer holds a
    /// connection slot, so it has its own cap; past it the handshake answers 503.
    pub max_sockets: usize,
    /// Lifetime of a session access token (`expires_in`).
    pub access_token_ttl: chrono::Duration,
    /// Lifetime of an unused refresh token (`refresh_token_expires_in`).
    pub refresh_token_ttl: chrono::Duration,
    /// Registrations allowed per client address per hour.
    pub register_per_hour: u32,
    /// `POST /docs/ask`: questions per visitor per hour, and per day in all.
    pub docs_hourly_limit: u32,
    pub docs_daily_limit: u32,
    /// Failed sign-ins allowed per e-mail and per address in `sign_in_window`.
    pub sign_in_failures: u32,
    /// Messaging-app codes an account is sent per hour: sign-in and 2FA codes, and (per
    /// store) assistant phone codes.
    pub code_sends_per_hour: u32,
    pub sign_in_window: chrono::Duration,
    /// Password hashes computed at once; the rest wait their turn without holding a thread.
    pub hash_workers: usize,
    /// Hashes that may wait for a hashing thread, and database reads (writes) that may wait
    /// for a database thread; past these, requests answer 503 instead of memory growing.
    pub hash_queue_limit: usize,
    pub db_queue_limit: usize,
    /// Where messaging-app messages (sign-in codes) go.
    pub msgapp: MsgappConfig,
    /// First webhook retry delay; later ones double (spec 6.1: about 10, 20, 40, 80 s).
    pub webhook_retry_base: Duration,
    /// How long a receiver has to answer a delivery (spec 8: 30 s).
    pub webhook_timeout: Duration,
    /// Longest the delivery dispatcher sleeps before looking for due retries again.
    pub webhook_poll: Duration,
    /// Deliveries in flight at once, in all; and per receiving webhook.
    pub webhook_concurrency: usize,
    pub webhook_endpoint_concurrency: usize,
    /// Lets webhooks target loopback, private and link-local addresses (development, tests).
    pub allow_private_webhook_targets: bool,
    /// The operator's webhook for platform events (`user.created`).
    pub platform_webhook: Option<PlatformWebhook>,
    /// Where API orders are paid and refunded.
    pub payments: crate::orders::payments::PaymentsConfig,
    /// The ad network's catalog API (`--adnet-api-base`); None: no push sync (503).
    pub adnet_api_base: Option<String>,
    /// A socket is pinged this often, and closed after `ws_idle_timeout` without a frame
    /// from its client (spec 6.4: 30 s and 75 s).
    pub ws_ping_interval: Duration,
    pub ws_idle_timeout: Duration,
    /// How soon an open team socket notices that its session, token or membership ended.
    pub ws_recheck_poll: Duration,
    /// The relay the e-mail channel's replies go through (`--smtp-url`); None refuses them.
    pub smtp: Option<crate::mail::SmtpConfig>,
    /// The assistant's language model (`--assistant-provider`); None: the assistant is
    /// unavailable (503).
    pub assistant: Option<crate::assistant::provider::ModelConfig>,
    /// The operator's ceiling on the messages a store may send the assistant per calendar
    /// month: each store gets its plan's allowance, at most this (none: the plan's).
    pub assistant_monthly_cap: Option<u32>,
    /// The plans on sale (`--plans-file`, else the built-in catalog).
    pub plans: std::sync::Arc<crate::billing::plans::Catalog>,
    /// Who invoices are paid to, how payments are confirmed, and the grace days.
    pub billing: BillingConfig,
    /// How long a cart with a contact and items stays untouched before it is abandoned.
    pub cart_abandon_after: chrono::Duration,
    /// How long an unpaid (`pending`) storefront order holds its stock before the cart sweep
    /// cancels it.
    pub storefront_order_hold: chrono::Duration,
    /// Storefront checkouts per client address per hour.
    pub checkouts_per_hour: u32,
}

/// Billing's settings (`--pix-*`, `--billing-grace-days`).
#[derive(Clone)]
pub struct BillingConfig {
    /// The operator's Pix key, name and city; None: invoices cannot be paid (503).
    pub pix: Option<crate::billing::pix::Merchant>,
    /// Signs the payment provider's webhook; None: the webhook answers 503.
    pub pix_webhook_secret: Option<String>,
    pub grace_days: u32,
}

impl std::fmt::Debug for BillingConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BillingConfig")
            .field("pix", &self.pix)
            .field(
                "pix_webhook_secret",
                &self.pix_webhook_secret.as_ref().map(|_| "<set>"),
            )
            .field("grace_days", &self.grace_days)
            .finish()
    }
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            pix: None,
            pix_webhook_secret: None,
            grace_days: defaults::BILLING_GRACE_DAYS,
        }
    }
}

/// Checks the Pix flags together: a key needs a name and a city, and must make a BR Code.
fn billing_config(a: &ServeArgs) -> anyhow::Result<BillingConfig> {
    let nonempty = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let pix = match (
        nonempty(&a.pix_key),
        nonempty(&a.pix_merchant_name),
        nonempty(&a.pix_merchant_city),
    ) {
        (None, _, _) => None,
        (Some(key), Some(name), Some(city)) => {
            let m = crate::billing::pix::Merchant { key, name, city };
            crate::billing::pix::br_code(&m, 100, "CHECK").map_err(|e| {
                anyhow::anyhow!("--pix-key, --pix-merchant-name, --pix-merchant-city: {e}")
            })?;
            Some(m)
        }
        _ => anyhow::bail!("--pix-key needs --pix-merchant-name and --pix-merchant-city"),
    };
    Ok(BillingConfig {
        pix,
        pix_webhook_secret: nonempty(&a.pix_webhook_secret),
        grace_days: a.billing_grace_days,
    })
}

/// Where platform events go, and the secret that signs them.
#[derive(Clone)]
pub struct PlatformWebhook {
    pub url: String,
    pub secret: String,
}

impl std::fmt::Debug for PlatformWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlatformWebhook")
            .field("url", &self.url)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The messaging-app provider: `log` writes messages to the `outbound_messages` table (read
/// them with `merchant-admin dev outbox`); `cloud` calls the messaging app's Cloud API.
/// `--backup-dir`, `--backup-every`, `--backup-keep`.
#[derive(Debug, Clone)]
pub struct BackupSchedule {
    pub dir: PathBuf,
    pub every: Duration,
    pub keep: usize,
    /// How often the schedule looks whether a backup is due (by the server's clock).
    pub poll: Duration,
}

/// The shortest `--backup-every`: a backup is a full copy, and one a minute is already a
/// copy running most of the time on a large database.
pub const BACKUP_EVERY_MIN: Duration = Duration::from_secs(60);
/// The longest `--backup-every`: 30 days. Longer is almost surely a typo (`6000h`), and a
/// schedule that never fires looks configured while it protects nothing.
pub const BACKUP_EVERY_MAX: Duration = Duration::from_secs(30 * 24 * 3600);

/// `--backup-every`: a human duration from 1m to 30d.
pub fn parse_backup_every(v: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(v).map_err(|e| format!("{e} (try 6h, 30m or 1d)"))?;
    if !(BACKUP_EVERY_MIN..=BACKUP_EVERY_MAX).contains(&d) {
        return Err("must be from 1m to 30d (e.g. 6h, 30m or 1d)".into());
    }
    Ok(d)
}

#[derive(Clone)]
pub enum MsgappConfig {
    Log,
    Cloud {
        api_base: String,
        phone_number_id: String,
        token: String,
        otp_template: String,
        timeout: Duration,
    },
}

impl Config {
    /// Defaults for a data directory; what `serve` uses when no flag is given.
    pub fn new(data_dir: PathBuf) -> Self {
        use defaults as d;
        let secs = |s: u32| Duration::from_secs(s.into());
        Self {
            addr: d::ADDR,
            data_dir,
            log_format: LogFormat::Pretty,
            rate_limit_authenticated: d::RATE_LIMIT_AUTHENTICATED,
            rate_limit_anonymous: d::RATE_LIMIT_ANONYMOUS,
            trust_proxy: false,
            public_url: None,
            workers: d::WORKERS,
            job_lease: secs(d::JOB_LEASE_SECS),
            cleanup_interval: secs(d::CLEANUP_INTERVAL_SECS),
            shutdown_grace: secs(d::SHUTDOWN_TIMEOUT_SECS),
            deprecation_date: parse_date("deprecation-date", d::DEPRECATION_DATE)
                .expect("the default deprecation date is RFC 3339"),
            sunset_date: None,
            metrics_addr: None,
            ready_max_job_lag: secs(d::READY_MAX_JOB_LAG_SECS),
            backups: None,
            idempotency_ttl: chrono::Duration::hours(24),
            body_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(30),
            request_deadline: secs(d::REQUEST_DEADLINE_SECS),
            max_connections: d::MAX_CONNECTIONS as usize,
            max_sockets: d::MAX_SOCKETS as usize,
            access_token_ttl: chrono::Duration::seconds(d::ACCESS_TOKEN_TTL_SECS.into()),
            refresh_token_ttl: chrono::Duration::seconds(d::REFRESH_TOKEN_TTL_SECS.into()),
            register_per_hour: d::REGISTER_RATE_LIMIT,
            docs_hourly_limit: d::DOCS_HOURLY_LIMIT,
            docs_daily_limit: d::DOCS_DAILY_LIMIT,
            sign_in_failures: d::SIGN_IN_FAILURE_LIMIT,
            code_sends_per_hour: d::CODE_SENDS_PER_HOUR,
            sign_in_window: chrono::Duration::minutes(15),
            hash_workers: default_hash_workers(),
            hash_queue_limit: d::HASH_QUEUE_LIMIT as usize,
            db_queue_limit: d::DB_QUEUE_LIMIT as usize,
            msgapp: MsgappConfig::Log,
            webhook_retry_base: secs(d::WEBHOOK_RETRY_BASE_SECS),
            webhook_timeout: Duration::from_secs(30),
            webhook_poll: Duration::from_secs(1),
            webhook_concurrency: d::WEBHOOK_CONCURRENCY.into(),
            webhook_endpoint_concurrency: d::WEBHOOK_ENDPOINT_CONCURRENCY.into(),
            allow_private_webhook_targets: false,
            platform_webhook: None,
            payments: crate::orders::payments::PaymentsConfig::Manual,
            adnet_api_base: None,
            ws_ping_interval: Duration::from_secs(30),
            ws_idle_timeout: Duration::from_secs(75),
            ws_recheck_poll: Duration::from_millis(250),
            smtp: None,
            assistant: None,
            assistant_monthly_cap: None,
            plans: std::sync::Arc::default(),
            billing: BillingConfig::default(),
            cart_abandon_after: chrono::Duration::minutes(d::CART_ABANDON_AFTER_MINUTES.into()),
            storefront_order_hold: chrono::Duration::hours(d::STOREFRONT_ORDER_HOLD_HOURS.into()),
            checkouts_per_hour: d::CHECKOUTS_PER_HOUR,
        }
    }

    pub fn from_serve_args(a: &ServeArgs) -> anyhow::Result<Self> {
        Ok(Self {
            addr: a.addr,
            log_format: a.log_format,
            rate_limit_authenticated: a.rate_limit_authenticated,
            rate_limit_anonymous: a.rate_limit_anonymous,
            trust_proxy: a.trust_proxy,
            public_url: a.public_url.clone(),
            metrics_addr: a.metrics_addr,
            ready_max_job_lag: Duration::from_secs(a.ready_max_job_lag_secs.into()),
            backups: a.backup_dir.clone().map(|dir| BackupSchedule {
                dir,
                every: a.backup_every,
                keep: a.backup_keep as usize,
                poll: Duration::from_secs(10),
            }),
            workers: a.workers,
            job_lease: Duration::from_secs(a.job_lease_secs.into()),
            cleanup_interval: Duration::from_secs(a.cleanup_interval_secs.into()),
            shutdown_grace: Duration::from_secs(a.shutdown_timeout_secs.into()),
            access_token_ttl: chrono::Duration::seconds(a.access_token_ttl_secs.into()),
            refresh_token_ttl: chrono::Duration::seconds(a.refresh_token_ttl_secs.into()),
            register_per_hour: a.register_rate_limit,
            docs_daily_limit: a.docs_daily_limit,
            sign_in_failures: a.sign_in_failure_limit,
            code_sends_per_hour: a.code_sends_per_hour,
            hash_workers: a.hash_workers.unwrap_or_else(default_hash_workers),
            request_deadline: Duration::from_secs(a.request_deadline_secs.into()),
            max_connections: a.max_connections as usize,
            max_sockets: a.max_sockets as usize,
            hash_queue_limit: a.hash_queue_limit as usize,
            db_queue_limit: a.db_queue_limit as usize,
            msgapp: msgapp_config(a)?,
            webhook_retry_base: Duration::from_secs(a.webhook_retry_base_secs.into()),
            webhook_concurrency: a.webhook_concurrency.into(),
            webhook_endpoint_concurrency: a.webhook_endpoint_concurrency.into(),
            allow_private_webhook_targets: a.allow_private_webhook_targets,
            platform_webhook: platform_webhook(a)?,
            payments: payments_config(a)?,
            adnet_api_base: a
                .adnet_api_base
                .as_deref()
                .filter(|b| !b.is_empty())
                .map(|b| http_base("--adnet-api-base", b))
                .transpose()?,
            smtp: a
                .smtp_url
                .as_deref()
                .filter(|u| !u.is_empty())
                .map(|u| {
                    // The message leaves the URL out: it may carry the password.
                    crate::mail::SmtpConfig::parse(u)
                        .map_err(|e| anyhow::anyhow!("--smtp-url: {e}"))
                })
                .transpose()?,
            assistant: crate::assistant::provider::ModelConfig::from_args(a)?,
            assistant_monthly_cap: a.assistant_monthly_cap,
            plans: std::sync::Arc::new(
                a.plans_file
                    .as_deref()
                    .map(crate::billing::plans::Catalog::load)
                    .transpose()?
                    .unwrap_or_default(),
            ),
            billing: billing_config(a)?,
            cart_abandon_after: chrono::Duration::minutes(a.cart_abandon_after_minutes.into()),
            storefront_order_hold: chrono::Duration::hours(a.storefront_order_hold_hours.into()),
            checkouts_per_hour: a.checkouts_per_hour,
            deprecation_date: parse_date("deprecation-date", &a.deprecation_date)?,
            sunset_date: a
                .sunset_date
                .as_deref()
                .map(|v| parse_date("sunset-date", v))
                .transpose()?,
            ..Self::new(a.data.data_dir.clone())
        })
    }

    /// How long in-flight work may run on once shutdown begins: the shutdown timeout less a
    /// moment (at most a second) kept for putting unfinished jobs back for the next start.
    pub fn shutdown_drain(&self) -> Duration {
        self.shutdown_grace - (self.shutdown_grace / 2).min(Duration::from_secs(1))
    }

    pub fn db_path(&self) -> PathBuf {
        crate::db::db_path(&self.data_dir)
    }
}

fn parse_date(flag: &str, v: &str) -> anyhow::Result<DateTime<Utc>> {
    crate::time::parse(v)
        .ok_or_else(|| anyhow::anyhow!("--{flag}: {v:?} is not an RFC 3339 timestamp"))
}

/// Half the cores (at least one): password hashing never takes the whole machine, so other
/// requests keep answering during a flood of sign-ins.
fn default_hash_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

impl std::fmt::Debug for MsgappConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Log => f.write_str("Log"),
            Self::Cloud {
                api_base,
                phone_number_id,
                otp_template,
                timeout,
                ..
            } => f
                .debug_struct("Cloud")
                .field("api_base", api_base)
                .field("phone_number_id", phone_number_id)
                .field("token", &"<redacted>")
                .field("otp_template", otp_template)
                .field("timeout", timeout)
                .finish(),
        }
    }
}

fn msgapp_config(a: &ServeArgs) -> anyhow::Result<MsgappConfig> {
    use crate::cli::MsgappProvider;
    Ok(match a.msgapp_provider {
        MsgappProvider::Log => MsgappConfig::Log,
        MsgappProvider::Cloud => {
            let need = |v: &Option<String>, flag: &str| {
                v.clone()
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| anyhow::anyhow!("--msgapp-provider cloud needs --{flag}"))
            };
            MsgappConfig::Cloud {
                api_base: need(&a.msgapp_api_base, "msgapp-api-base")?,
                phone_number_id: need(&a.msgapp_phone_number_id, "msgapp-phone-number-id")?,
                token: need(&a.msgapp_token, "msgapp-token")?,
                otp_template: a.msgapp_otp_template.clone(),
                timeout: Duration::from_secs(10),
            }
        }
    })
}

fn payments_config(a: &ServeArgs) -> anyhow::Result<crate::orders::payments::PaymentsConfig> {
    use crate::orders::payments::PaymentsConfig;
    match &a.payments_api_base {
        None => {
            if a.payments_api_key.is_some() {
                anyhow::bail!("--payments-api-key needs --payments-api-base");
            }
            Ok(PaymentsConfig::Manual)
        }
        Some(base) => {
            let url =
                url::Url::parse(base).map_err(|e| anyhow::anyhow!("--payments-api-base: {e}"))?;
            if !matches!(url.scheme(), "http" | "https") {
                anyhow::bail!("--payments-api-base must be an http(s) URL");
            }
            Ok(PaymentsConfig::Http {
                api_base: base.clone(),
                api_key: a.payments_api_key.clone().filter(|k| !k.is_empty()),
                timeout: Duration::from_secs(30),
            })
        }
    }
}

/// An http(s) base URL, kept without a trailing slash.
fn http_base(flag: &str, v: &str) -> anyhow::Result<String> {
    let url = url::Url::parse(v).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        anyhow::bail!("{flag} must be an http(s) URL");
    }
    Ok(v.trim_end_matches('/').to_owned())
}

fn platform_webhook(a: &ServeArgs) -> anyhow::Result<Option<PlatformWebhook>> {
    match (&a.platform_webhook_url, &a.platform_webhook_secret) {
        (None, None) => Ok(None),
        (Some(url), Some(secret)) if !secret.is_empty() => {
            crate::webhooks::target::parse_url(url)
                .map_err(|e| anyhow::anyhow!("--platform-webhook-url: {e}"))?;
            Ok(Some(PlatformWebhook {
                url: url.clone(),
                secret: secret.clone(),
            }))
        }
        (Some(_), _) => {
            anyhow::bail!("--platform-webhook-url needs --platform-webhook-secret")
        }
        (None, Some(_)) => {
            anyhow::bail!("--platform-webhook-secret needs --platform-webhook-url")
        }
    }
}

/// `--public-url`: an http(s) origin (a path is refused: links add their own), kept without
/// a trailing slash.
pub fn parse_public_url(v: &str) -> Result<String, String> {
    let url = url::Url::parse(v).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || !url.origin().is_tuple() {
        return Err("must be an http:// or https:// address".into());
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err("must be an origin such as https://admin.shop.example, without a path".into());
    }
    Ok(url.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    /// `serve` with no flag runs with exactly what `Config::new` gives tests and commands.
    #[test]
    fn serve_without_flags_is_config_new() {
        let Command::Serve(args) = Cli::try_parse_from(["merchant-admin", "serve"])
            .unwrap()
            .command
        else {
            panic!("not serve")
        };
        let from_flags = Config::from_serve_args(&args).unwrap();
        let new = Config::new(PathBuf::from(defaults::DATA_DIR));
        assert_eq!(format!("{from_flags:?}"), format!("{new:?}"));
    }

    #[test]
    fn backup_every_takes_1m_to_30d() {
        assert_eq!(parse_backup_every("1m"), Ok(BACKUP_EVERY_MIN));
        assert_eq!(parse_backup_every("30d"), Ok(BACKUP_EVERY_MAX));
        assert_eq!(parse_backup_every("6h"), Ok(Duration::from_secs(6 * 3600)));
        for bad in ["0s", "59s", "30d 1s", "31d", "nonsense", ""] {
            assert!(parse_backup_every(bad).is_err(), "{bad}");
        }
    }
}
