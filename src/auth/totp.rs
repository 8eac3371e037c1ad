//! TOTP (RFC 6238 via totp-rs): SHA-1, 6 digits, 30 s steps, one step of skew either way.
//! Times come from the app clock, so tests move through steps without sleeping.

use base64::Engine;
use rand::RngCore;
use totp_rs::{Algorithm, Secret, TOTP};

pub const STEP_SECS: u64 = 30;
const ISSUER: &str = "merchant-admin";

/// A new random secret (160 bits), base32 as authenticator apps expect.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 20];
    rand::rng().fill_bytes(&mut bytes);
    Secret::Raw(bytes.to_vec()).to_encoded().to_string()
}

fn totp(secret_b32: &str, account: &str) -> anyhow::Result<TOTP> {
    let bytes = Secret::Encoded(secret_b32.to_owned())
        .to_bytes()
        .map_err(|e| anyhow::anyhow!("bad TOTP secret: {e:?}"))?;
    // totp-rs refuses ':' in the account label; e-mails never have one, but stay safe.
    let account = account.replace(':', "_");
    TOTP::new(
        Algorithm::SHA1,
        6,
        1,
        STEP_SECS,
        bytes,
        Some(ISSUER.into()),
        account,
    )
    .map_err(|e| anyhow::anyhow!("building TOTP: {e:?}"))
}

/// The `otpauth://` URL and a QR code of it as base64 PNG.
pub fn provisioning(secret_b32: &str, account: &str) -> anyhow::Result<(String, String)> {
    let t = totp(secret_b32, account)?;
    let png = t
        .get_qr_png()
        .map_err(|e| anyhow::anyhow!("rendering the QR code: {e}"))?;
    Ok((
        t.get_url(),
        base64::engine::general_purpose::STANDARD.encode(png),
    ))
}

/// The time step `code` is valid for at `unix_secs` (± one step), if any.
pub fn matching_step(secret_b32: &str, code: &str, unix_secs: u64) -> Option<u64> {
    let t = totp(secret_b32, "check").ok()?;
    let code = code.trim();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now_step = unix_secs / STEP_SECS;
    (now_step.saturating_sub(1)..=now_step + 1).find(|&step| {
        let expected = t.generate(step * STEP_SECS);
        crate::secrets::same(expected.as_bytes(), code.as_bytes())
    })
}
