//! The `merchant-admin` binary: parses the command line, sets up logging, and dispatches to
//! the library's [`commands`](merchant_admin::commands).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use merchant_admin::cli::{Cli, Command, LogFormat};
use merchant_admin::commands;
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
    let done = match &cli.command {
        Command::Serve(args) => commands::serve(args),
        Command::Setup(args) => commands::setup(args),
        Command::Backup(args) => commands::backup(args),
        Command::Restore(args) => commands::restore(args),
        Command::Migrate(args) => commands::migrate(args),
        Command::Users(cmd) => commands::users(cmd),
        Command::Billing(cmd) => commands::billing(cmd),
        Command::Dev(cmd) => commands::dev(cmd),
        Command::Version => commands::version(),
        Command::Healthcheck(args) => commands::healthcheck(args),
    };
    match done {
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
