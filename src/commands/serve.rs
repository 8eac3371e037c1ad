//! `merchant-admin serve`: opens the database and runs the API until SIGTERM or Ctrl-C.

use std::sync::Arc;

use anyhow::Context;

use crate::AppState;
use crate::cli::ServeArgs;
use crate::clock::SystemClock;
use crate::config::Config;

/// Runs the server on its own runtime until a shutdown signal, then drains.
pub fn serve(args: &ServeArgs) -> anyhow::Result<()> {
    let cfg = Config::from_serve_args(args)?;
    raise_open_files_limit();
    let rt = tokio::runtime::Runtime::new()?;
    let served = rt.block_on(async {
        // Opening migrates the database: blocking work, kept off the async workers.
        let st = tokio::task::spawn_blocking(move || AppState::open(cfg, Arc::new(SystemClock)))
            .await??;
        let listener = tokio::net::TcpListener::bind(st.cfg.addr)
            .await
            .with_context(|| format!("binding {}", st.cfg.addr))?;
        crate::serve(st, listener, shutdown_signal()).await
    });
    // Dropping the runtime would wait for blocking work still running (a webhook
    // request to a receiver that holds the connection open); its delivery was put
    // back for the next start, so it must not hold the exit.
    rt.shutdown_background();
    served
}

/// Every connection and socket is a file descriptor, and the usual soft limit (1,024) is far
/// below `--max-connections` plus `--max-sockets`: raise it to the hard limit the operator set.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::info!(max_open_files = limit, "open-files limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the open-files limit"),
    }
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
