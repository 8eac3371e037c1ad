//! `GET /metrics` (issue 21): the Prometheus text format on a listener of its own
//! (`--metrics-addr`), never on the API's port, so it is neither public nor rate limited
//! nor counted in its own request series. Queue figures are sampled when scraped, through
//! the database read pool (never on an async thread).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// How often histogram samples are folded into buckets between scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

#[derive(Clone)]
struct Scraper {
    st: AppState,
    /// Every (kind, queue) reported once: one that has emptied is reported as zero rather
    /// than left at its last value.
    seen: Arc<Mutex<BTreeSet<(String, String)>>>,
}

/// Serves `GET /metrics` on `listener` until `stop`.
pub async fn serve(st: AppState, listener: TcpListener, stop: CancellationToken) {
    let upkeep = {
        let (st, stop) = (st.clone(), stop.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP_EVERY);
            loop {
                tokio::select! {
                    _ = tick.tick() => st.metrics.upkeep(),
                    () = stop.cancelled() => return,
                }
            }
        })
    };
    let app = Router::new()
        .route("/metrics", get(scrape))
        .with_state(Scraper {
            st,
            seen: Arc::default(),
        });
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await;
    if let Err(e) = served {
        tracing::warn!(error = %e, "the metrics listener failed");
    }
    upkeep.abort();
}

async fn scrape(State(s): State<Scraper>) -> impl IntoResponse {
    let st = &s.st;
    let m = &st.metrics;
    let clock = st.clock.clone();
    let sampled = st
        .db
        .read(move |c| {
            let jobs = crate::jobs::stats(c, clock.now())?;
            Ok((jobs, crate::telemetry::resident_bytes()))
        })
        .await;
    match sampled {
        Ok((jobs, rss)) => {
            let mut seen = s.seen.lock().unwrap_or_else(PoisonError::into_inner);
            let now: BTreeSet<(String, String)> = jobs
                .iter()
                .map(|j| (j.kind.clone(), j.queue.clone()))
                .collect();
            for (kind, queue) in seen.difference(&now) {
                let labels = [("kind", kind.as_str()), ("queue", queue.as_str())];
                m.gauge("jobs_queued", &labels).set(0.0);
                m.gauge("jobs_running", &labels).set(0.0);
                m.gauge("jobs_oldest_due_seconds", &labels).set(0.0);
            }
            for j in &jobs {
                let labels = [("kind", j.kind.as_str()), ("queue", j.queue.as_str())];
                m.gauge("jobs_queued", &labels).set(j.queued as f64);
                m.gauge("jobs_running", &labels).set(j.running as f64);
                let late = j.oldest_due.num_milliseconds() as f64 / 1000.0;
                m.gauge("jobs_oldest_due_seconds", &labels).set(late);
            }
            seen.extend(now);
            if let Some(rss) = rss {
                m.gauge("process_resident_memory_bytes", &[])
                    .set(rss as f64);
            }
            m.gauge("scrape_database_ok", &[]).set(1.0);
        }
        Err(e) => {
            // The database's own figures below still say why (a full read queue).
            tracing::warn!(error = %e, "metrics could not sample the job queue");
            m.gauge("scrape_database_ok", &[]).set(0.0);
        }
    }
    let (reads, writes) = st.db.queue_depths();
    m.gauge("db_queue_depth", &[("pool", "read")])
        .set(reads as f64);
    m.gauge("db_queue_depth", &[("pool", "write")])
        .set(writes as f64);
    // Stays 0 while the checkpointer works: a rise says its thread died or is stuck.
    m.counter("db_writer_checkpoints_total", &[])
        .absolute(st.db.writer_checkpoints());
    let (agents, widgets) = st.hub.open_sockets();
    m.gauge("open_sockets", &[("kind", "agent")])
        .set(agents as f64);
    m.gauge("open_sockets", &[("kind", "widget")])
        .set(widgets as f64);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        m.render(),
    )
}
