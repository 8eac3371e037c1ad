//! The command line (issue 2 §3). Every flag can also be set as `MERCHANT_ADMIN_<FLAG>`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::defaults;

#[derive(Debug, Parser)]
#[command(
    name = "merchant-admin",
    version,
    about = "Self-hosted merchant back office API"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API, the job workers and the scheduler until SIGTERM or Ctrl-C.
    Serve(Box<ServeArgs>),
    /// Create the first user, organization and store (the user becomes owner); prints
    /// `{"user_id", "tenant_id", "store_id"}` as one JSON object.
    Setup(SetupArgs),
    /// Write a consistent copy of the database to PATH (safe while `serve` runs), then check it.
    Backup(BackupArgs),
    /// Replace the database with the copy at PATH; refused while a server uses the data directory.
    Restore(RestoreArgs),
    /// Apply pending database migrations and exit.
    Migrate(DataDirArgs),
    /// Print the version and the database schema version this binary expects.
    Version,
    /// GET /readyz from the server at --addr and exit 0 only on 200: a container's HEALTHCHECK
    /// where the image has no curl (FROM scratch).
    Healthcheck(HealthcheckArgs),
    /// Manage user accounts.
    #[command(subcommand)]
    Users(UsersCommand),
    /// The operator's billing tools.
    #[command(subcommand)]
    Billing(BillingCommand),
    /// Tools for local development.
    #[command(subcommand)]
    Dev(DevCommand),
}

#[derive(Debug, Subcommand)]
pub enum BillingCommand {
    /// Record an open invoice as paid (a Pix payment reconciled by hand): the subscription
    /// moves as with a confirmed payment, and `invoice.paid` goes to the platform webhook.
    MarkPaid(MarkPaidArgs),
    /// List the signed Pix payments no open invoice took (an unknown txid, a voided
    /// invoice, less than the amount), one JSON object a line, oldest first.
    Unapplied(DataDirArgs),
}

#[derive(Debug, Clone, Args)]
pub struct MarkPaidArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// The plans file `serve` uses, if any (the subscription event shows the plan's limits).
    #[arg(long, env = "MERCHANT_ADMIN_PLANS_FILE")]
    pub plans_file: Option<PathBuf>,
    /// The invoice's number, such as INV-000042.
    pub invoice_number: String,
}

#[derive(Debug, Subcommand)]
pub enum DevCommand {
    /// Print the latest messages the `log` messaging-app provider "sent" (sign-in codes...).
    Outbox(OutboxArgs),
}

#[derive(Debug, Clone, Args)]
pub struct OutboxArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// How many messages, newest first.
    #[arg(long, default_value_t = 10)]
    pub limit: u32,
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Deactivate an account: every session ends at once and sign-in answers 403.
    Deactivate(UserArgs),
    /// Reactivate a deactivated account.
    Activate(UserArgs),
}

#[derive(Debug, Clone, Args)]
pub struct UserArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// The account's e-mail.
    pub email: String,
}

#[derive(Debug, Clone, Args)]
pub struct DataDirArgs {
    /// Directory holding merchant-admin.db; created if missing.
    #[arg(long, env = "MERCHANT_ADMIN_DATA_DIR", default_value = defaults::DATA_DIR)]
    pub data_dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MsgappProvider {
    Log,
    Cloud,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AssistantProvider {
    None,
    Openai,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, env = "MERCHANT_ADMIN_ADDR", default_value_t = defaults::ADDR)]
    pub addr: SocketAddr,

    #[command(flatten)]
    pub data: DataDirArgs,

    /// Log line format: human-readable or one JSON object per line.
    #[arg(
        long,
        env = "MERCHANT_ADMIN_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Pretty
    )]
    pub log_format: LogFormat,

    /// Requests per minute allowed to one credential (token or session).
    #[arg(long, env = "MERCHANT_ADMIN_RATE_LIMIT_AUTHENTICATED", default_value_t = defaults::RATE_LIMIT_AUTHENTICATED,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_authenticated: u32,

    /// Requests per minute allowed to one client address without credentials.
    #[arg(long, env = "MERCHANT_ADMIN_RATE_LIMIT_ANONYMOUS", default_value_t = defaults::RATE_LIMIT_ANONYMOUS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_anonymous: u32,

    /// The address clients reach the server at, such as `https://admin.shop.example`: the
    /// origin of absolute links (message attachments). Default: the address it listens on.
    #[arg(long, env = "MERCHANT_ADMIN_PUBLIC_URL", value_parser = crate::config::parse_public_url)]
    pub public_url: Option<String>,

    /// Take the client address from the last X-Forwarded-For entry (only behind a proxy you run).
    #[arg(long, env = "MERCHANT_ADMIN_TRUST_PROXY")]
    pub trust_proxy: bool,

    /// Seconds a request may take to arrive whole, head and body, from its first byte: a
    /// late head closes the connection, a late body is answered 408.
    #[arg(long, env = "MERCHANT_ADMIN_REQUEST_DEADLINE_SECS", default_value_t = defaults::REQUEST_DEADLINE_SECS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub request_deadline_secs: u32,

    /// Connections open at once; further clients wait in the accept queue.
    #[arg(long, env = "MERCHANT_ADMIN_MAX_CONNECTIONS", default_value_t = defaults::MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// WebSockets (team and chat widget) open at once, apart from --max-connections (an
    /// upgraded socket gives its connection slot back); past it the handshake answers 503
    /// with Retry-After. Each open socket is a file descriptor: `serve` raises its soft
    /// open-files limit to the hard one at start.
    #[arg(long, env = "MERCHANT_ADMIN_MAX_SOCKETS", default_value_t = defaults::MAX_SOCKETS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sockets: u32,

    /// Serve Prometheus metrics at `GET /metrics` on this address, its own listener apart
    /// from the API's (e.g. 127.0.0.1:9100). Unset: no metrics are kept.
    #[arg(long, env = "MERCHANT_ADMIN_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,

    /// `/readyz` answers 503 once the oldest due background job has waited this many
    /// seconds (the workers are stuck or cannot keep up).
    #[arg(long, env = "MERCHANT_ADMIN_READY_MAX_JOB_LAG_SECS", default_value_t = defaults::READY_MAX_JOB_LAG_SECS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub ready_max_job_lag_secs: u32,

    /// Write a verified backup into this directory every --backup-every, keeping the newest
    /// --backup-keep (files named merchant-admin-backup-<UTC time>.db; no other file there
    /// is touched). Unset: no scheduled backups.
    #[arg(long, env = "MERCHANT_ADMIN_BACKUP_DIR")]
    pub backup_dir: Option<PathBuf>,

    /// How often the scheduled backup runs, e.g. `6h`, `30m`, `1d` (from 1m to 30d).
    #[arg(long, env = "MERCHANT_ADMIN_BACKUP_EVERY", default_value = "6h",
          value_parser = crate::config::parse_backup_every)]
    pub backup_every: std::time::Duration,

    /// How many scheduled backups to keep; older ones are deleted.
    #[arg(long, env = "MERCHANT_ADMIN_BACKUP_KEEP", default_value_t = 14,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub backup_keep: u32,

    /// Number of background job workers.
    #[arg(long, env = "MERCHANT_ADMIN_WORKERS", default_value_t = defaults::WORKERS)]
    pub workers: usize,

    /// Seconds a worker holds a job before another process may take it over.
    #[arg(long, env = "MERCHANT_ADMIN_JOB_LEASE_SECS", default_value_t = defaults::JOB_LEASE_SECS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub job_lease_secs: u32,

    /// Seconds between the scheduler's cleanup runs (expired idempotency keys, old jobs, ...).
    #[arg(long, env = "MERCHANT_ADMIN_CLEANUP_INTERVAL_SECS", default_value_t = defaults::CLEANUP_INTERVAL_SECS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub cleanup_interval_secs: u32,

    /// Seconds from SIGTERM to exit. In-flight requests, jobs and webhook deliveries get
    /// this long (less a second); what is left is dropped, and its jobs and deliveries put
    /// back to run after the next start.
    #[arg(
        long,
        alias = "shutdown-grace-secs",
        env = "MERCHANT_ADMIN_SHUTDOWN_TIMEOUT_SECS",
        default_value_t = defaults::SHUTDOWN_TIMEOUT_SECS
    )]
    pub shutdown_timeout_secs: u32,

    /// Lifetime of a session access token, in seconds.
    #[arg(long, env = "MERCHANT_ADMIN_ACCESS_TOKEN_TTL_SECS", default_value_t = defaults::ACCESS_TOKEN_TTL_SECS,
          value_parser = clap::value_parser!(u32).range(60..))]
    pub access_token_ttl_secs: u32,

    /// Lifetime of an unused refresh token, in seconds (default 30 days).
    #[arg(long, env = "MERCHANT_ADMIN_REFRESH_TOKEN_TTL_SECS", default_value_t = defaults::REFRESH_TOKEN_TTL_SECS,
          value_parser = clap::value_parser!(u32).range(60..))]
    pub refresh_token_ttl_secs: u32,

    /// Registrations allowed per client address per hour.
    #[arg(long, env = "MERCHANT_ADMIN_REGISTER_RATE_LIMIT", default_value_t = defaults::REGISTER_RATE_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub register_rate_limit: u32,

    /// Documentation questions (`POST /docs/ask`) answered per day, all visitors together;
    /// each visitor may also ask at most 20 an hour.
    #[arg(long, env = "MERCHANT_ADMIN_DOCS_DAILY_LIMIT", default_value_t = defaults::DOCS_DAILY_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub docs_daily_limit: u32,

    /// Failed sign-ins allowed per e-mail and per client address in 15 minutes.
    #[arg(long, env = "MERCHANT_ADMIN_SIGN_IN_FAILURE_LIMIT", default_value_t = defaults::SIGN_IN_FAILURE_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub sign_in_failure_limit: u32,

    /// Messaging-app codes an account may be sent per hour: sign-in codes and the codes that
    /// turn the factor on (together, over the last hour), and assistant phone codes (per
    /// store, in an hour from the first). Each costs a message; each code allows 5 tries, so
    /// raising this raises the guesses an hour at a code someone else's phone received.
    #[arg(long, env = "MERCHANT_ADMIN_CODE_SENDS_PER_HOUR", default_value_t = defaults::CODE_SENDS_PER_HOUR,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub code_sends_per_hour: u32,

    /// Password hashes computed at once (default: half the cores, at least one).
    #[arg(long, env = "MERCHANT_ADMIN_HASH_WORKERS")]
    pub hash_workers: Option<usize>,

    /// Password hashes that may wait for a hashing thread; past that, sign-ins and password
    /// changes answer 503 with Retry-After.
    #[arg(long, env = "MERCHANT_ADMIN_HASH_QUEUE_LIMIT", default_value_t = defaults::HASH_QUEUE_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub hash_queue_limit: u32,

    /// Database reads (and, separately, writes) that may wait for a database thread; past
    /// that, requests answer 503 with Retry-After.
    #[arg(long, env = "MERCHANT_ADMIN_DB_QUEUE_LIMIT", default_value_t = defaults::DB_QUEUE_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub db_queue_limit: u32,

    /// Where messaging-app messages (sign-in codes) go: `log` (the outbound_messages table,
    /// read with `merchant-admin dev outbox`) or `cloud` (the messaging app's Cloud API).
    #[arg(
        long,
        env = "MERCHANT_ADMIN_MSGAPP_PROVIDER",
        value_enum,
        default_value_t = MsgappProvider::Log
    )]
    pub msgapp_provider: MsgappProvider,

    /// Cloud API base URL, e.g. https://graph.example.com/v20.0 (cloud provider).
    #[arg(long, env = "MERCHANT_ADMIN_MSGAPP_API_BASE")]
    pub msgapp_api_base: Option<String>,

    /// The sending phone number's id at the messaging app (cloud provider).
    #[arg(long, env = "MERCHANT_ADMIN_MSGAPP_PHONE_NUMBER_ID")]
    pub msgapp_phone_number_id: Option<String>,

    /// Access token for the Cloud API (cloud provider).
    #[arg(long, env = "MERCHANT_ADMIN_MSGAPP_TOKEN", hide_env_values = true)]
    pub msgapp_token: Option<String>,

    /// Name of the approved template that carries sign-in codes.
    #[arg(
        long,
        env = "MERCHANT_ADMIN_MSGAPP_OTP_TEMPLATE",
        default_value = defaults::MSGAPP_OTP_TEMPLATE
    )]
    pub msgapp_otp_template: String,

    /// First webhook retry delay in seconds; later retries double it (10, 20, 40, 80 s).
    #[arg(long, env = "MERCHANT_ADMIN_WEBHOOK_RETRY_BASE_SECS", default_value_t = defaults::WEBHOOK_RETRY_BASE_SECS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_retry_base_secs: u32,

    /// Webhook deliveries in flight at once, in all.
    #[arg(long, env = "MERCHANT_ADMIN_WEBHOOK_CONCURRENCY", default_value_t = defaults::WEBHOOK_CONCURRENCY,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub webhook_concurrency: u16,

    /// Webhook deliveries in flight at once to any one webhook, so a slow receiver cannot
    /// hold up the others.
    #[arg(long, env = "MERCHANT_ADMIN_WEBHOOK_ENDPOINT_CONCURRENCY", default_value_t = defaults::WEBHOOK_ENDPOINT_CONCURRENCY,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub webhook_endpoint_concurrency: u16,

    /// Let webhooks target loopback, private, link-local and metadata addresses (local
    /// development and tests only).
    #[arg(long, env = "MERCHANT_ADMIN_ALLOW_PRIVATE_WEBHOOK_TARGETS")]
    pub allow_private_webhook_targets: bool,

    /// The operator's webhook for platform events (`user.created`), which belong to no store.
    #[arg(long, env = "MERCHANT_ADMIN_PLATFORM_WEBHOOK_URL")]
    pub platform_webhook_url: Option<String>,

    /// The secret that signs deliveries to --platform-webhook-url.
    #[arg(
        long,
        env = "MERCHANT_ADMIN_PLATFORM_WEBHOOK_SECRET",
        hide_env_values = true
    )]
    pub platform_webhook_secret: Option<String>,

    /// The payment provider's API base URL. Set, API orders are paid through it and refunded
    /// with `POST {base}/payments/{payment_id}/refunds`; unset, payments are recorded by hand.
    #[arg(long, env = "MERCHANT_ADMIN_PAYMENTS_API_BASE")]
    pub payments_api_base: Option<String>,

    /// The ad network's catalog API base URL. Set, stores with catalog settings push their
    /// products to `POST {base}/catalogs/{catalog_id}/items_batch` (manually and every 6
    /// hours); unset, `POST .../ads/sync` answers 503.
    #[arg(long, env = "MERCHANT_ADMIN_ADNET_API_BASE")]
    pub adnet_api_base: Option<String>,

    /// Bearer token for --payments-api-base.
    #[arg(long, env = "MERCHANT_ADMIN_PAYMENTS_API_KEY", hide_env_values = true)]
    pub payments_api_key: Option<String>,

    /// The operator's Pix key (CPF, CNPJ, e-mail, +55 phone or random key) that invoices ask
    /// payment to. Unset, `POST .../subscription/pay` answers 503.
    #[arg(long, env = "MERCHANT_ADMIN_PIX_KEY")]
    pub pix_key: Option<String>,

    /// The name Pix shows the payer (folded to ASCII, at most 25 characters). Needed with --pix-key.
    #[arg(long, env = "MERCHANT_ADMIN_PIX_MERCHANT_NAME")]
    pub pix_merchant_name: Option<String>,

    /// The operator's city as Pix shows it (folded to ASCII, at most 15 characters). Needed with --pix-key.
    #[arg(long, env = "MERCHANT_ADMIN_PIX_MERCHANT_CITY")]
    pub pix_merchant_city: Option<String>,

    /// The secret the payment provider signs `POST /v1/billing/pix/webhook` with
    /// (`X-Signature`: hex HMAC-SHA256 of the raw body). Unset, the webhook answers 503.
    #[arg(
        long,
        env = "MERCHANT_ADMIN_PIX_WEBHOOK_SECRET",
        hide_env_values = true
    )]
    pub pix_webhook_secret: Option<String>,

    /// Days a past-due subscription keeps working before it is suspended.
    #[arg(long, env = "MERCHANT_ADMIN_BILLING_GRACE_DAYS",
          default_value_t = defaults::BILLING_GRACE_DAYS,
          value_parser = clap::value_parser!(u32).range(0..=90))]
    pub billing_grace_days: u32,

    /// Minutes a storefront cart with a contact and items may go untouched before it is
    /// marked abandoned and `carts.abandoned` fires (with a signed recovery link).
    #[arg(long, env = "MERCHANT_ADMIN_CART_ABANDON_AFTER_MINUTES",
          default_value_t = defaults::CART_ABANDON_AFTER_MINUTES,
          value_parser = clap::value_parser!(u32).range(1..=43_200))]
    pub cart_abandon_after_minutes: u32,

    /// Hours an unpaid storefront order holds its stock; then it is cancelled
    /// (`orders.cancelled`) and the stock is free again.
    #[arg(long, env = "MERCHANT_ADMIN_STOREFRONT_ORDER_HOLD_HOURS",
          default_value_t = defaults::STOREFRONT_ORDER_HOLD_HOURS,
          value_parser = clap::value_parser!(u32).range(1..=720))]
    pub storefront_order_hold_hours: u32,

    /// Storefront checkouts allowed per client address per hour (on top of the anonymous
    /// budget), so one address cannot hold the store's stock with unpaid orders.
    #[arg(long, env = "MERCHANT_ADMIN_CHECKOUTS_PER_HOUR",
          default_value_t = defaults::CHECKOUTS_PER_HOUR,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub checkouts_per_hour: u32,

    /// Where the e-mail channel's replies are handed over: `smtp://user:pass@host:port`
    /// (STARTTLS when the server offers it; `?tls=required` insists on it) or
    /// `smtps://...` (TLS from the start). Unset, e-mail replies are refused (503).
    #[arg(long, env = "MERCHANT_ADMIN_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,

    /// The language model behind the assistant: `none` (its routes answer 503
    /// `assistant_unavailable`) or `openai`, any server speaking the OpenAI Chat Completions
    /// API with streaming and tool calls (a hosted one, Ollama, llama.cpp's server, vLLM).
    #[arg(long, env = "MERCHANT_ADMIN_ASSISTANT_PROVIDER", value_enum,
          default_value_t = AssistantProvider::None)]
    pub assistant_provider: AssistantProvider,

    /// The model server's API base, up to and including its version segment
    /// (`https://api.openai.com/v1`, Ollama's `http://127.0.0.1:11434/v1`).
    #[arg(long, env = "MERCHANT_ADMIN_ASSISTANT_API_BASE")]
    pub assistant_api_base: Option<String>,

    /// Bearer token for --assistant-api-base (local servers usually need none).
    #[arg(long, env = "MERCHANT_ADMIN_ASSISTANT_API_KEY", hide_env_values = true)]
    pub assistant_api_key: Option<String>,

    /// The model to ask (`gpt-4o-mini`, `llama3.1`, ...); required with `openai`.
    #[arg(long, env = "MERCHANT_ADMIN_ASSISTANT_MODEL")]
    pub assistant_model: Option<String>,

    /// The plan catalog to sell instead of the built-in one: a TOML file (or `.json`) with
    /// `default = "<code>"` and `[[plans]]` entries (code, name, description,
    /// monthly_price_cents, annual_price_cents, limits); checked at start.
    #[arg(long, env = "MERCHANT_ADMIN_PLANS_FILE")]
    pub plans_file: Option<std::path::PathBuf>,

    /// A ceiling on the messages each store may send the assistant per calendar month (UTC):
    /// a store gets its plan's `assistant_messages_per_store_per_month`, at most this. Unset:
    /// the plan's.
    #[arg(long, env = "MERCHANT_ADMIN_ASSISTANT_MONTHLY_CAP")]
    pub assistant_monthly_cap: Option<u32>,

    /// When unversioned paths were deprecated (RFC 3339); sent as the `Deprecation` header.
    #[arg(
        long,
        env = "MERCHANT_ADMIN_DEPRECATION_DATE",
        default_value = defaults::DEPRECATION_DATE
    )]
    pub deprecation_date: String,

    /// When unversioned paths stop working (RFC 3339); sent as `Sunset` once set.
    #[arg(long, env = "MERCHANT_ADMIN_SUNSET_DATE")]
    pub sunset_date: Option<String>,
}

#[derive(Clone, Args)]
pub struct SetupArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// E-mail of the first user (prompted for when missing and stdin is a terminal).
    #[arg(long, env = "MERCHANT_ADMIN_EMAIL")]
    pub email: Option<String>,
    /// Password of the first user, at least 8 characters (prompted for without echo).
    #[arg(long, env = "MERCHANT_ADMIN_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Name of the organization (tenant).
    #[arg(long, env = "MERCHANT_ADMIN_ORG_NAME")]
    pub org_name: Option<String>,
    /// Name of the first store.
    #[arg(long, env = "MERCHANT_ADMIN_STORE_NAME")]
    pub store_name: Option<String>,
    /// Also seed realistic demo data for local development.
    #[arg(long, env = "MERCHANT_ADMIN_DEMO")]
    pub demo: bool,
}

impl std::fmt::Debug for SetupArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetupArgs")
            .field("data", &self.data)
            .field("email", &self.email)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("org_name", &self.org_name)
            .field("store_name", &self.store_name)
            .field("demo", &self.demo)
            .finish()
    }
}

#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Where to write the copy; must not exist yet.
    pub path: PathBuf,
    /// Run the full `PRAGMA integrity_check` on the copy (slower on a large database);
    /// without it, the quicker `quick_check` runs.
    #[arg(long)]
    pub verify: bool,
}

#[derive(Debug, Clone, Args)]
pub struct HealthcheckArgs {
    /// The address `serve` listens on (the same variable); an unspecified one (0.0.0.0, [::])
    /// is probed on loopback.
    #[arg(long, env = "MERCHANT_ADMIN_ADDR", default_value_t = defaults::ADDR)]
    pub addr: SocketAddr,
    /// Seconds to wait for the whole answer.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub timeout_secs: u64,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// The backup file to restore from.
    pub path: PathBuf,
}
