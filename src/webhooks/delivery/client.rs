//! The HTTP side of a delivery: the ureq agents (SSRF-guarded resolver, no redirects, no
//! proxy, the configured timeout) and the one signed POST of an attempt. Blocking: callers
//! run it on the blocking pool. An agent keeps its connections alive and pools them by
//! scheme and host, so a busy receiver costs no connection per delivery; a pooled
//! connection goes to the address the guard vetted when it was opened.

use std::io::Read;
use std::time::{Duration, Instant};

use super::signing::Signer;
use crate::config::Config;
use crate::ids::EventId;
use crate::webhooks::model::Outcome;
use crate::webhooks::target::GuardedResolver;

/// How much of a receiver's answer is kept.
const KEEP_BODY: u64 = 4096;

/// An agent for webhook requests; `allow_private` lifts the SSRF guard.
pub fn agent(cfg: &Config, allow_private: bool) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(cfg.webhook_timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .user_agent("Webhook/1.0")
        .max_idle_connections(cfg.webhook_concurrency)
        .max_idle_connections_per_host(cfg.webhook_endpoint_concurrency)
        .build();
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        GuardedResolver::new(allow_private),
    )
}

/// One POST.
#[allow(clippy::too_many_arguments)]
pub fn send(
    agent: &ureq::Agent,
    url: &str,
    signer: &Signer,
    event_id: EventId,
    name: &str,
    body: &str,
    timestamp: i64,
    timeout: Duration,
) -> Outcome {
    let id = event_id.to_string();
    let started = Instant::now();
    let result = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("User-Agent", "Webhook/1.0")
        .header("X-Webhook-Signature", signer.signature(body.as_bytes()))
        .header("X-Webhook-Event", name)
        .header("X-Webhook-Event-Id", &id)
        .header("webhook-id", &id)
        .header("webhook-timestamp", &timestamp.to_string())
        .header(
            "webhook-signature",
            signer.standard_signature(&id, timestamp, body.as_bytes()),
        )
        .send(body);
    let mut out = Outcome::default();
    match result {
        Ok(mut res) => {
            out.status = Some(res.status().as_u16());
            let mut kept = Vec::new();
            let read = res
                .body_mut()
                .as_reader()
                .take(KEEP_BODY)
                .read_to_end(&mut kept);
            out.body = Some(String::from_utf8_lossy(&kept).into_owned());
            if let Err(e) = read {
                out.error = Some(describe(&ureq::Error::Io(e), timeout));
            }
        }
        Err(e) => out.error = Some(describe(&e, timeout)),
    }
    out.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    out
}

fn describe(e: &ureq::Error, timeout: Duration) -> String {
    match e {
        ureq::Error::Timeout(_) => format!("no answer within {} s", timeout.as_secs_f64()),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            format!("no answer within {} s", timeout.as_secs_f64())
        }
        other => other.to_string(),
    }
}
