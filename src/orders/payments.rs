//! The payment provider interface (issue 6 "Payments and refunds").
//!
//! `manual` (default) needs no outside service: marking an order paid records an approved
//! manual payment, and refunding it is recorded at once. `http` (`--payments-api-base`)
//! refunds through the provider: `POST {base}/payments/{payment_id}/refunds` with
//! `{amount_cents}` and the client's `Idempotency-Key`, with ureq off the async runtime.

use std::time::Duration;

use crate::ids::PaymentId;
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

/// Why the provider did not confirm a refund.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the payment provider answered {0}")]
    Status(u16),
    #[error("could not reach the payment provider: {0}")]
    Transport(String),
    #[error("the payment holds no provider configuration (provider {0})")]
    NotConfigured(String),
}

/// Refunds `amount_cents` of a payment at its provider. Manual payments need no call.
pub async fn refund(
    cfg: &PaymentsConfig,
    provider: &str,
    payment: PaymentId,
    amount_cents: i64,
    idempotency_key: &str,
) -> Result<(), ProviderError> {
    if provider == "manual" {
        return Ok(());
    }
    let PaymentsConfig::Http {
        api_base,
        api_key,
        timeout,
    } = cfg
    else {
        // An http payment recorded while the provider was configured, refunded after it
        // was switched off: refuse rather than record a refund no one made.
        return Err(ProviderError::NotConfigured(provider.to_owned()));
    };
    let url = format!(
        "{}/payments/{payment}/refunds",
        api_base.trim_end_matches('/')
    );
    let body = serde_json::json!({ "amount_cents": amount_cents }).to_string();
    let (key, api_key, timeout) = (idempotency_key.to_owned(), api_key.clone(), *timeout);
    let result = run_blocking(move || {
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
        let res = req
            .send(body)
            .map_err(|e| ProviderError::Transport(e.to_string()))?;
        let status = res.status().as_u16();
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(ProviderError::Status(status))
        }
    })
    .await;
    match &result {
        Ok(()) => tracing::info!(%payment, amount_cents, "refund confirmed by the provider"),
        Err(e) => {
            tracing::warn!(%payment, amount_cents, error = %e, "refund failed at the provider");
        }
    }
    result
}
