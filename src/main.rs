//! The `merchant-admin` binary: parses the command line, sets up logging, calls the library.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use merchant_admin::auth::store as auth_store;
use merchant_admin::cli::{Cli, Command, DevCommand, LogFormat, SetupArgs, UsersCommand};
use merchant_admin::clock::{Clock, SystemClock};
use merchant_admin::config::Config;
use merchant_admin::db::{self, Db, backup, migrate};
use merchant_admin::{AppState, serve, setup};
use tracing_subscriber::EnvFilter;

// mimalloc: glibc malloc's arena locking and consolidation were an eighth of the server's
// time in list benchmarks (many small strings per row, freed on other threads).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    let cli = Cli::parse();
    let log_format = match &cli.command {
        Command::Serve(a) => a.log_format,
        _ => LogFormat::Pretty,
    };
    init_tracing(log_format);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: LogFormat) {
    let filter =
        EnvFilter::try_from_env("MERCHANT_ADMIN_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().with_current_span(true).init(),
        LogFormat::Pretty => builder.init(),
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => {
            let cfg = Config::from_serve_args(&args)?;
            let rt = tokio::runtime::Runtime::new()?;
            let served = rt.block_on(async {
                // Opening migrates the database: blocking work, kept off the async workers.
                let st =
                    tokio::task::spawn_blocking(move || AppState::open(cfg, Arc::new(SystemClock)))
                        .await??;
                let listener = tokio::net::TcpListener::bind(st.cfg.addr)
                    .await
                    .with_context(|| format!("binding {}", st.cfg.addr))?;
                serve(st, listener, shutdown_signal()).await
            });
            // Dropping the runtime would wait for blocking work still running (a webhook
            // request to a receiver that holds the connection open); its delivery was put
            // back for the next start, so it must not hold the exit.
            rt.shutdown_background();
            served
        }
        Command::Setup(args) => run_setup(&args),
        Command::Backup(args) => {
            let r = backup::backup(&args.data.data_dir, &args.path)?;
            println!(
                "backup written to {} ({} bytes) in {} ms; integrity check ok",
                r.path.display(),
                r.bytes,
                r.duration.as_millis()
            );
            let dir = &args.data.data_dir;
            let keys: Vec<String> = [
                merchant_admin::secrets::SEAL_KEY_FILE,
                merchant_admin::db::keys::HMAC_KEY_FILE,
            ]
            .iter()
            .map(|f| dir.join(f))
            .filter(|p| p.exists())
            .map(|p| p.display().to_string())
            .collect();
            if !keys.is_empty() {
                eprintln!(
                    "note: webhook and TOTP secrets are sealed, and codes hashed, with keys kept \
                     outside the database ({}); they are not in the backup: keep a copy of \
                     them with your backups",
                    keys.join(", ")
                );
            }
            Ok(())
        }
        Command::Restore(args) => {
            let kept = backup::restore(&args.data.data_dir, &args.path)?;
            println!(
                "restored {} into {}",
                args.path.display(),
                args.data.data_dir.display()
            );
            if let Some(k) = kept {
                println!("the replaced database was kept at {}", k.display());
            }
            Ok(())
        }
        Command::Migrate(args) => {
            db::create_data_dir(&args.data_dir)?;
            let mut c = db::open_connection(&db::db_path(&args.data_dir))?;
            migrate::run(&mut c)?;
            println!(
                "database at schema version {}",
                migrate::applied_version(&c)?
            );
            Ok(())
        }
        Command::Users(cmd) => {
            let (args, disable) = match &cmd {
                UsersCommand::Deactivate(a) => (a, true),
                UsersCommand::Activate(a) => (a, false),
            };
            let db = Db::open(&db::db_path(&args.data.data_dir))?;
            let email = merchant_admin::text::normalize_email(&args.email);
            let e = email.clone();
            let found = db
                .write_blocking(|tx| auth_store::set_disabled(tx, &e, disable, SystemClock.now()))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if !found {
                bail!("no account with the e-mail {email}");
            }
            if disable {
                // A running server notices another process's commit within one poll; waiting
                // ten means that once this returns, no request is served from what it
                // remembered. (Activation ends nothing, so it need not wait.)
                std::thread::sleep(db::OTHER_PROCESS_POLL * 10);
            }
            let what = if disable {
                "deactivated; every session was ended"
            } else {
                "activated"
            };
            println!("{email}: {what}");
            Ok(())
        }
        Command::Dev(DevCommand::Outbox(args)) => {
            let db = Db::open(&db::db_path(&args.data.data_dir))?;
            let limit = args.limit;
            let rows = db
                .read_blocking(|c| {
                    let mut s = c.prepare(
                        "SELECT created_at, channel, recipient, template, body FROM outbound_messages
                         ORDER BY created_at DESC LIMIT ?1",
                    )?;
                    let rows = s
                        .query_map([limit], |r| {
                            Ok(format!(
                                "{}  {} to {} ({}): {}",
                                r.get::<_, String>(0)?,
                                r.get::<_, String>(1)?,
                                r.get::<_, String>(2)?,
                                r.get::<_, String>(3)?,
                                r.get::<_, String>(4)?
                            ))
                        })?
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(rows)
                })
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if rows.is_empty() {
                println!("(no outbound messages)");
            }
            for r in rows {
                println!("{r}");
            }
            Ok(())
        }
        Command::Version => {
            println!(
                "merchant-admin {} (schema version {})",
                env!("CARGO_PKG_VERSION"),
                migrate::latest_version()
            );
            Ok(())
        }
    }
}

fn run_setup(args: &SetupArgs) -> anyhow::Result<()> {
    let input = setup::SetupInput {
        email: value_or_prompt(args.email.as_ref(), "email", "E-mail", false)?,
        password: value_or_prompt(args.password.as_ref(), "password", "Password", true)?,
        org_name: value_or_prompt(
            args.org_name.as_ref(),
            "org-name",
            "Organization name",
            false,
        )?,
        store_name: value_or_prompt(args.store_name.as_ref(), "store-name", "Store name", false)?,
        demo: args.demo,
    };
    db::create_data_dir(&args.data.data_dir)?;
    let db = Db::open(&db::db_path(&args.data.data_dir))?;
    let out = setup::run(&db, SystemClock.now(), &input)?;
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

/// A flag's value, or a prompt for it when stdin is a terminal (never in scripts).
fn value_or_prompt(
    v: Option<&String>,
    flag: &str,
    label: &str,
    secret: bool,
) -> anyhow::Result<String> {
    if let Some(v) = v {
        return Ok(v.clone());
    }
    if !std::io::stdin().is_terminal() {
        bail!("--{flag} is required (stdin is not a terminal, so it cannot be asked for)");
    }
    if secret {
        return Ok(rpassword::prompt_password(format!("{label}: "))?);
    }
    eprint!("{label}: ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim().to_owned())
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutdown signal received");
}
