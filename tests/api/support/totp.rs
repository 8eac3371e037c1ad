//! TOTP as an authenticator app computes it (RFC 6238, written here rather than borrowed
//! from the server), and the second-factor sign-in steps.

use hmac::{Hmac, Mac};
use serde_json::json;

use super::client::Reply;
use super::{PASSWORD, TestApp};

/// RFC 4648 base32 (no padding), as authenticator apps read the secret.
fn base32_decode(s: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let (mut bits, mut acc, mut out) = (0u32, 0u64, Vec::new());
    for c in s.trim_end_matches('=').bytes() {
        let v = ALPHABET
            .iter()
            .position(|&a| a == c.to_ascii_uppercase())
            .expect("base32") as u64;
        acc = (acc << 5) | v;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).unwrap());
        }
    }
    out
}

/// RFC 6238 TOTP: HOTP (RFC 4226) over the 30 s time step, SHA-1, 6 digits.
pub fn rfc6238(secret_b32: &str, unix: i64) -> String {
    let counter = u64::try_from(unix / 30).unwrap();
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(&base32_decode(secret_b32)).unwrap();
    mac.update(&counter.to_be_bytes());
    let h = mac.finalize().into_bytes();
    let offset = (h[19] & 0x0f) as usize;
    let bin = u32::from_be_bytes([
        h[offset] & 0x7f,
        h[offset + 1],
        h[offset + 2],
        h[offset + 3],
    ]);
    format!("{:06}", bin % 1_000_000)
}

impl TestApp {
    pub fn now_unix(&self) -> i64 {
        self.clock_now().timestamp()
    }

    /// Signs up, signs in and turns TOTP on; returns (session token, TOTP secret).
    /// Signs in with TOTP on and regenerates the recovery codes: (session token, codes).
    pub async fn recovery_codes(&self, email: &str) -> (String, Vec<String>) {
        let (token, _) = self.with_totp(email).await;
        let r = self
            .call(
                reqwest::Method::POST,
                "/v1/me/2fa/recovery-codes",
                &token,
                None,
            )
            .await;
        r.expect(200);
        let codes = r.body["codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        (token, codes)
    }

    pub async fn with_totp(&self, email: &str) -> (String, String) {
        let s = self.signed_in(email).await;
        let token = s["token"].as_str().unwrap().to_string();
        let secret = self.enable_totp(&token).await;
        (token, secret)
    }

    /// Turns TOTP on for the user signed in as `token`; returns the secret.
    pub async fn enable_totp(&self, token: &str) -> String {
        let setup = self
            .call(reqwest::Method::GET, "/v1/me/2fa/totp/setup", token, None)
            .await;
        setup.expect(200);
        let secret = setup.body["secret"].as_str().unwrap().to_string();
        let code = rfc6238(&secret, self.now_unix());
        self.call(
            reqwest::Method::POST,
            "/v1/me/2fa/totp/enable",
            token,
            Some(json!({"totp_code": code})),
        )
        .await
        .expect(204);
        secret
    }

    /// Password step of a sign-in that needs a second factor; returns the challenge.
    pub async fn challenge(&self, email: &str) -> String {
        let r = self
            .post_json(
                "/v1/auth/login",
                &json!({"email": email, "password": PASSWORD}),
            )
            .await;
        r.expect(200);
        assert_eq!(r.body["status"], "two_factor_required", "{}", r.text);
        r.body["challenge"].as_str().unwrap().to_string()
    }

    pub async fn verify_totp(&self, challenge: &str, code: &str) -> Reply {
        self.post_json(
            "/v1/auth/2fa/totp/verify",
            &json!({"challenge": challenge, "totp_code": code}),
        )
        .await
    }
}

pub async fn verify_recovery(app: &TestApp, challenge: &str, code: &str) -> Reply {
    app.post_json(
        "/v1/auth/2fa/recovery/verify",
        &json!({"challenge": challenge, "recovery_code": code}),
    )
    .await
}
