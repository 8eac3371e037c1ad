//! merchant-admin: the library behind the binary. [`app`] builds the HTTP service and
//! [`serve`] runs it with the job workers and the scheduler until shutdown, so tests start
//! exactly what production runs.

pub mod admin;
pub mod ads;
pub mod analytics;
pub mod api_tokens;
pub mod assistant;
pub mod audit;
pub mod auth;
#[cfg(feature = "bench-routes")]
pub mod bench_routes;
pub mod billing;
pub mod brand;
pub mod carts;
pub mod catalog;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod customers;
pub mod db;
pub mod docs;
pub mod error;
pub mod events;
pub mod http;
pub mod ids;
pub mod inbox;
pub mod inventory;
pub mod jobs;
pub mod json;
pub mod mail;
pub mod marketing;
pub mod msgapp;
pub mod notifications;
pub mod orders;
pub mod pages;
pub mod purchasing;
pub mod reference;
pub mod reviews;
pub mod secrets;
pub mod setup;
pub mod state;
pub mod storefront;
pub mod system;
pub mod telemetry;
pub mod tenants;
pub mod text;
pub mod threads;
pub mod time;
pub mod webhooks;
pub mod widget;
pub mod workflows;

use std::future::Future;

use axum::Router;
use axum::body::Bytes;
use axum::middleware::from_fn_with_state;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::Layer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::http::openapi::ApiDoc;
use crate::http::versioning::{self, PREFIX};
pub use crate::state::AppState;

/// The two machine-readable descriptions (spec 9.1): the admin API and the storefront API.
pub struct ApiDocs {
    pub admin: serde_json::Value,
    pub storefront: serde_json::Value,
}

/// Every routed path and the OpenAPI documents describing them. Each area contributes its
/// `routes()`; paths are relative to `/v1`, except `root` ones. The storefront's routes
/// have a document of their own.
pub fn api() -> (Router<AppState>, ApiDocs) {
    let v1 = OpenApiRouter::with_openapi(ApiDoc::openapi());
    // Undocumented on purpose: they exist only in benchmark builds.
    #[cfg(feature = "bench-routes")]
    let v1 = v1.merge(bench_routes::routes());
    let (v1, mut doc) = v1
        .merge(system::routes())
        .merge(auth::routes())
        .merge(tenants::routes())
        .merge(api_tokens::routes())
        .merge(audit::routes())
        .merge(webhooks::routes())
        .merge(catalog::routes())
        .merge(customers::routes())
        .merge(orders::routes())
        .merge(carts::routes())
        .merge(inventory::routes())
        .merge(purchasing::routes())
        .merge(marketing::routes())
        .merge(pages::routes())
        .merge(ads::routes())
        .merge(notifications::routes())
        .merge(analytics::routes())
        .merge(reviews::routes())
        .merge(workflows::routes())
        .merge(brand::routes())
        .merge(inbox::routes())
        .merge(assistant::routes())
        .merge(docs::routes())
        .merge(billing::routes())
        .split_for_parts();
    let (root, root_doc) = OpenApiRouter::new()
        .merge(system::root_routes())
        .split_for_parts();
    http::openapi::merge_root_paths(&mut doc, root_doc);
    let (storefront, mut storefront_doc) = storefront::routes().split_for_parts();
    http::openapi::tidy_summaries(&mut doc);
    http::openapi::tidy_summaries(&mut storefront_doc);
    let docs = ApiDocs {
        admin: http::openapi::finish(&doc),
        storefront: http::openapi::finish(&storefront_doc),
    };
    (
        Router::new().nest(PREFIX, v1.merge(storefront)).merge(root),
        docs,
    )
}

/// The API's routes, with the OpenAPI document stored in the state for serving.
pub fn routes(st: &AppState) -> Router<AppState> {
    let (router, docs) = api();
    for (doc, slot) in [
        (&docs.admin, &st.openapi_json),
        (&docs.storefront, &st.storefront_openapi_json),
    ] {
        let json = serde_json::to_vec(doc).expect("the OpenAPI document serializes");
        let _ = slot.set(Bytes::from(json));
    }
    // Static files, not API: they stay out of `api()` and so out of the document.
    router
        .merge(widget::router())
        .merge(reference::router())
        .merge(admin::router())
}

/// `routes` with every shared layer and the fallbacks, before path versioning.
pub fn app(st: &AppState, routes: Router<AppState>) -> Router {
    http::apply_layers(routes, st).with_state(st.clone())
}

/// Runs the API on `listener`, the job workers and the scheduler, until `shutdown`
/// completes; then stops accepting, lets in-flight requests, running jobs and webhook
/// deliveries finish for the drain period, puts back what did not, and returns within the
/// shutdown timeout.
pub async fn serve(
    st: AppState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let router = routes(&st);
    serve_routes(st, router, listener, shutdown).await
}

/// [`serve`] with the routes given: tests add probe routes to the real ones, so the shared
/// layers are exercised over real HTTP exactly as production runs them.
pub async fn serve_routes(
    st: AppState,
    routes: Router<AppState>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let token = CancellationToken::new();

    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..st.cfg.workers {
        tasks.spawn(jobs::worker::work(st.clone(), token.clone()));
    }
    tasks.spawn(jobs::scheduler::run(st.clone(), token.clone()));
    tasks.spawn(webhooks::delivery::run(st.clone(), token.clone()));
    tasks.spawn(system::backups::run(st.clone(), token.clone()));
    tasks.spawn(inbox::sockets::watch(
        st.clone(),
        st.cfg.ws_recheck_poll,
        token.clone(),
    ));

    if let Some(addr) = st.cfg.metrics_addr {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow::anyhow!("binding the metrics address {addr}: {e}"))?;
        let bound = listener.local_addr()?;
        let _ = st.metrics_bound.set(bound);
        tracing::info!(addr = %bound, "metrics at /metrics");
        tasks.spawn(system::metrics::serve(st.clone(), listener, token.clone()));
    }

    let service = from_fn_with_state(st.clone(), versioning::versioning).layer(app(&st, routes));
    let stop = token.clone();
    let st_stop = st.clone();
    tokio::spawn(async move {
        shutdown.await;
        // Before anything stops: a load balancer polling /readyz stops sending traffic.
        st_stop
            .shutting_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        stop.cancel();
    });
    let bound = listener.local_addr()?;
    let _ = st
        .public_url
        .set(st.cfg.public_url.clone().unwrap_or_else(|| {
            // A wildcard address is not one to link to: the machine's own name for itself.
            if bound.ip().is_unspecified() {
                format!("http://localhost:{}", bound.port())
            } else {
                format!("http://{bound}")
            }
        }));
    tracing::info!(addr = %bound, public_url = st.public_url(), "listening");
    let limits = http::server::Limits {
        header_read_timeout: st.cfg.header_read_timeout,
        request_deadline: st.cfg.request_deadline,
        max_connections: st.cfg.max_connections,
        drain: st.cfg.shutdown_drain(),
    };
    let server = tokio::spawn(http::server::run(listener, service, token.clone(), limits));
    token.cancelled().await;
    // In-flight requests, jobs and deliveries get the drain period, after which each part
    // puts back what it had not finished; at the shutdown timeout, stop regardless.
    let drain = async {
        let served = server.await;
        while tasks.join_next().await.is_some() {}
        served
    };
    match tokio::time::timeout(st.cfg.shutdown_grace, drain).await {
        Ok(served) => served?,
        Err(_) => tracing::warn!("shutdown timeout over; exiting with work in flight"),
    }
    tracing::info!("stopped");
    Ok(())
}
