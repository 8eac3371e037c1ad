//! The two signatures every delivery carries (spec 6.1 and Standard Webhooks), computed over
//! the exact body bytes sent. A [`Signer`] holds both keys already absorbed into HMAC state,
//! made once per webhook secret: an attempt clones that state (no allocation, no key
//! hashing) and writes each signature into one right-sized string.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Base64 of a SHA-256 MAC: 44 characters.
const MAC_B64: usize = 44;

/// A webhook secret's two signing keys, ready to sign.
#[derive(Clone)]
pub struct Signer {
    /// Keyed with the secret string's bytes (spec 6.1).
    spec: HmacSha256,
    /// Keyed with the base64-decoded part after `whsec_`, or the raw bytes of a secret not
    /// of that form (Standard Webhooks).
    standard: HmacSha256,
}

impl Signer {
    pub fn new(secret: &str) -> Self {
        let key = secret
            .strip_prefix("whsec_")
            .and_then(|k| STANDARD.decode(k).ok());
        let raw = secret.as_bytes();
        Self {
            spec: HmacSha256::new_from_slice(raw).expect("any key size"),
            standard: HmacSha256::new_from_slice(key.as_deref().unwrap_or(raw))
                .expect("any key size"),
        }
    }

    /// The `X-Webhook-Signature` value: HMAC-SHA256 over the raw body.
    pub fn signature(&self, body: &[u8]) -> String {
        let mut mac = self.spec.clone();
        mac.update(body);
        encoded("sha256=", mac)
    }

    /// The Standard Webhooks `webhook-signature` value: `v1,` + HMAC-SHA256 over
    /// `{id}.{timestamp}.{body}`.
    pub fn standard_signature(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut mac = self.standard.clone();
        mac.update(id.as_bytes());
        mac.update(b".");
        let mut digits = [0u8; 20];
        let n = {
            let mut w = &mut digits[..];
            // An i64 has at most 20 characters: this cannot fail.
            let _ = std::io::Write::write_fmt(&mut w, format_args!("{timestamp}"));
            20 - w.len()
        };
        mac.update(&digits[..n]);
        mac.update(b".");
        mac.update(body);
        encoded("v1,", mac)
    }
}

fn encoded(prefix: &str, mac: HmacSha256) -> String {
    let mut out = String::with_capacity(prefix.len() + MAC_B64);
    out.push_str(prefix);
    STANDARD.encode_string(mac.finalize().into_bytes(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_signature_uses_the_decoded_secret() {
        // The example of the Standard Webhooks specification.
        let sig = Signer::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").standard_signature(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    /// The spec 6.1 signature is keyed with the secret string as it is, `whsec_` included,
    /// and the same signer signs any number of bodies independently.
    #[test]
    fn the_spec_signature_is_keyed_with_the_secret_string() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let signer = Signer::new(secret);
        for body in [&b"{}"[..], br#"{"a":1}"#, b""] {
            let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).unwrap();
            mac.update(body);
            let want = format!("sha256={}", STANDARD.encode(mac.finalize().into_bytes()));
            assert_eq!(signer.signature(body), want);
        }
        let plain = Signer::new("not-whsec");
        let mut mac = HmacSha256::new_from_slice(b"not-whsec").unwrap();
        mac.update(b"i.7.{}");
        let want = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
        assert_eq!(plain.standard_signature("i", 7, b"{}"), want);
    }
}
