//! Per-request tracing: a trace id on every response (`x-trace-id`) and in every log line of
//! the request, and one structured line per request (method, matched route, status, duration).
//! The cause of a 5xx is logged here, with the trace id, and never sent to the client.
//! Also the header-size guard.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use super::error::ErrorSource;
use crate::error::{AppError, ErrorCode};
use crate::state::AppState;

pub const TRACE_HEADER: &str = "x-trace-id";
/// Total header bytes a request may carry before it is refused with 431.
const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses requests whose headers add up to more than `MAX_HEADER_BYTES` (hyper's own,
/// larger limits answer a bare 431 before any of this runs).
pub async fn limit_headers(req: Request, next: Next) -> Response {
    let bytes: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if bytes > MAX_HEADER_BYTES {
        return AppError::new(
            ErrorCode::RequestHeaderFieldsTooLarge,
            "the request headers are too large",
        )
        .into_response();
    }
    next.run(req).await
}

#[derive(Debug, Clone)]
pub struct TraceId(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for TraceId {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, AppError> {
        set_by_layers(parts)
    }
}

/// A request extension the outer layers set on every request. Missing, a route was mounted
/// outside them: an internal error rather than a made-up value a budget would be charged to.
fn set_by_layers<T: Clone + Send + Sync + 'static>(
    parts: &axum::http::request::Parts,
) -> Result<T, AppError> {
    parts.extensions.get::<T>().cloned().ok_or_else(|| {
        AppError::internal(anyhow::anyhow!(
            "{} is missing: the route is outside the request layers",
            std::any::type_name::<T>()
        ))
    })
}

/// The client's address: the socket peer, or the last `X-Forwarded-For` hop with
/// `--trust-proxy` (the entry our own proxy appended; earlier ones are client-controlled).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The key per-address budgets and counters charge: the address itself for IPv4, the /64
    /// prefix for IPv6, since one host is routinely given a whole /64 to rotate through.
    pub fn budget_key(&self) -> String {
        budget_key(self.0)
    }
}

/// See [`ClientAddr::budget_key`]; an IPv4-mapped IPv6 address counts as its IPv4 address.
pub fn budget_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                let net = std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                format!("{net}/64")
            }
        },
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientAddr {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, AppError> {
        set_by_layers(parts)
    }
}

fn client_addr(req: &Request, trust_proxy: bool) -> IpAddr {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([127, 0, 0, 1]), |c| c.0.ip());
    if !trust_proxy {
        return peer;
    }
    // Only the last hop counts: if it is not an address, the peer is all we know.
    req.headers()
        .get_all("x-forwarded-for")
        .iter()
        .next_back()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit(',').next())
        .and_then(|s| s.trim().parse::<IpAddr>().ok())
        .unwrap_or(peer)
}

pub async fn trace(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "-".to_owned(), |m| m.as_str().to_owned());
    let addr = client_addr(&req, st.cfg.trust_proxy);
    req.extensions_mut().insert(TraceId(trace_id.clone()));
    req.extensions_mut().insert(ClientAddr(addr));

    let span =
        tracing::info_span!("request", trace_id = %trace_id, method = %method, route = %route);
    let mut res = next.run(req).instrument(span.clone()).await;
    if let Ok(v) = HeaderValue::from_str(&trace_id) {
        res.headers_mut().insert(TRACE_HEADER, v);
    }

    let status = res.status().as_u16();
    let took = started.elapsed();
    // A path no route matched is counted as one series, never by its raw text.
    let template = if route == "-" { "unmatched" } else { &route };
    st.metrics.request(method.as_str(), template, status, took);
    let duration_ms = took.as_secs_f64() * 1000.0;
    // The line itself stands outside the span so its fields are not printed twice.
    let route = route.as_str();
    if let Some(ErrorSource(source)) = res.extensions().get::<ErrorSource>() {
        tracing::error!(%trace_id, %method, route, status, duration_ms, error = ?source, "request failed");
    } else if res.status().is_server_error() {
        tracing::error!(%trace_id, %method, route, status, duration_ms, "request failed");
    } else {
        tracing::info!(%trace_id, %method, route, status, duration_ms, "request");
    }
    res
}

#[cfg(test)]
mod tests {
    #[test]
    fn ipv6_clients_are_keyed_by_their_64_prefix() {
        let key = |s: &str| super::budget_key(s.parse().unwrap());
        assert_eq!(key("192.0.2.7"), "192.0.2.7");
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
    }
}
