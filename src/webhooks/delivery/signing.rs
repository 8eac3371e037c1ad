//! The two signatures every delivery carries (spec 6.1 and Standard Webhooks), computed over
//! the exact body bytes sent.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The `X-Webhook-Signature` value: HMAC-SHA256 keyed with the secret string's bytes over
/// the raw body (spec 6.1).
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key size");
    mac.update(body);
    format!("sha256={}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The Standard Webhooks `webhook-signature` value: `v1,` + HMAC-SHA256 over
/// `{id}.{timestamp}.{body}`, keyed with the base64-decoded part after `whsec_` (or the raw
/// bytes of a secret not of that form).
pub fn standard_signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|k| STANDARD.decode(k).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec());
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("any key size");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_signature_uses_the_decoded_secret() {
        // The example of the Standard Webhooks specification.
        let sig = standard_signature(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
