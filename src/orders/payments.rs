//! The payment provider interface (issue 6 "Payments and refunds").
//!
//! `manual` (default) needs no outside service: marking an order paid records an approved
//! manual payment, and refunding it is recorded at once. `http` (`--payments-api-base`)
//! refunds through the provider: `POST {base}/payments/{payment_id}/refunds` with
//! `{amount_cents}` and an `Idempotency-Key` derived from the client's ([`provider_key`]),
//! with ureq off the async runtime.

use std::fmt::Write as _;
use std::time::Duration;

use crate::ids::{PaymentId, StoreId};
use crate::threads::run_blocking;

/// Where payments of API orders are taken and refunded.
#[derive(Debug, Clone, Default)]
pub enum PaymentsConfig {
    #[default]
    Manual,
    Http {
        api_base: String,
        /// Sent as `Authorization: Bearer`; never logged.
        api_key: Option<String>,
        timeout: Duration,
    },
}

impl PaymentsConfig {
    /// The provider that holds the payment of an order marked paid: manual orders are
    /// settled by hand (a sale over the messaging app), API orders by the configured one.
    pub fn provider_for(&self, manual_order: bool) -> &'static str {
        match self {
            Self::Http { .. } if !manual_order => "http",
            _ => "manual",
        }
    }
}

/// What the provider's answer to a refund request tells us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A 2xx: the refund is made (or was, by an earlier request with the same key).
    Refunded,
    /// A definite refusal of the refund itself (400, 402, 422): nothing was or will be
    /// refunded.
    Refused(u16),
    /// No answer, or one that does not say: 5xx; 408, 409, 425 and 429, which a provider sends
    /// for a request still running or one to try later; and the other 4xx (401, 403, 404,
    /// ...), which speak of our configuration (a rotated key, a wrong base URL), not of the
    /// refund. The refund may have been made, so it stays pending and is asked about again
    /// with the same key.
    Uncertain(String),
}

impl Answer {
    fn of_status(status: u16) -> Self {
        match status {
            200..=299 => Self::Refunded,
            400 | 402 | 422 => Self::Refused(status),
            _ => Self::Uncertain(format!("the payment provider answered {status}")),
        }
    }
}

/// Whether a payment held by `provider` can be refunded with this configuration: an http
/// payment recorded while the provider was configured cannot once it is switched off.
pub fn can_refund(cfg: &PaymentsConfig, provider: &str) -> bool {
    provider == "manual" || matches!(cfg, PaymentsConfig::Http { .. })
}

/// The `Idempotency-Key` the provider is sent for a refund: an HMAC of the store, the payment
/// and the client's key, so two stores (or two payments) using the same client key never
/// meet at a provider all stores share, and the client's key is not handed on.
pub fn provider_key(
    hmac_key: &[u8],
    store: StoreId,
    payment: PaymentId,
    client_key: &str,
) -> String {
    // Ids are fixed-length UUIDs, so the fields cannot run into each other.
    let msg = format!("refund\n{store}\n{payment}\n{client_key}");
    // Hex: safe in any provider's key alphabet, 64 characters.
    crate::secrets::keyed_hash(hmac_key, msg.as_bytes())
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// How long one ask of the provider may take, with room for the blocking pool's queue: no
/// second ask of the same refund starts before it ends.
pub fn ask_lease(cfg: &PaymentsConfig) -> Duration {
    let timeout = match cfg {
        PaymentsConfig::Http { timeout, .. } => *timeout,
        PaymentsConfig::Manual => Duration::ZERO,
    };
    timeout + Duration::from_secs(30)
}

/// Asks the provider to refund `amount_cents` of a payment. Manual payments need no call.
pub async fn refund(
    cfg: &PaymentsConfig,
    provider: &str,
    payment: PaymentId,
    amount_cents: i64,
    idempotency_key: &str,
) -> Answer {
    if provider == "manual" {
        return Answer::Refunded;
    }
    let PaymentsConfig::Http {
        api_base,
        api_key,
        timeout,
    } = cfg
    else {
        // Switched off after an earlier ask may have reached it: only the provider can say,
        // so keep asking once it is configured again.
        return Answer::Uncertain(format!(
            "no payment provider is configured for provider {provider}"
        ));
    };
    let url = format!(
        "{}/payments/{payment}/refunds",
        api_base.trim_end_matches('/')
    );
    let body = serde_json::json!({ "amount_cents": amount_cents }).to_string();
    let (key, api_key, timeout) = (idempotency_key.to_owned(), api_key.clone(), *timeout);
    let answer = run_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let mut req = agent
            .post(&url)
            .header("Idempotency-Key", &key)
            .content_type("application/json");
        if let Some(k) = api_key {
            req = req.header("Authorization", &format!("Bearer {k}"));
        }
        // A transport error may come after the request was sent: uncertain, never a refusal.
        req.send(body).map_or_else(
            |e| Answer::Uncertain(format!("could not reach the payment provider: {e}")),
            |res| Answer::of_status(res.status().as_u16()),
        )
    })
    .await;
    match &answer {
        Answer::Refunded => {
            tracing::info!(%payment, amount_cents, "refund confirmed by the provider");
        }
        Answer::Refused(status) => {
            tracing::warn!(%payment, amount_cents, status, "refund refused by the provider");
        }
        Answer::Uncertain(why) => {
            tracing::warn!(%payment, amount_cents, error = %why, "refund outcome unknown; it stays pending");
        }
    }
    answer
}
