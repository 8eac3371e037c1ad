//! Secrets at rest (issue 13, items 10-12 and 15): what someone holding a copy of the
//! database file, but not the key files beside it, can read.

use chrono::Duration;
use serde_json::json;

use crate::helpers::{TestApp, spawn_app, spawn_app_at};
use crate::two_factor::{rfc6238, verify_recovery};

/// The database file and its WAL, as an attacker with a copy of the directory sees them.
fn raw_db(app: &TestApp) -> Vec<u8> {
    let dir = app.data_dir.path();
    let mut raw = std::fs::read(dir.join("merchant-admin.db")).unwrap();
    raw.extend(std::fs::read(dir.join("merchant-admin.db-wal")).unwrap_or_default());
    raw
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Signs in with TOTP, regenerates the recovery codes and returns them.
async fn recovery_codes(app: &TestApp, email: &str) -> Vec<String> {
    let (token, _) = app.with_totp(email).await;
    let r = app
        .authed(
            reqwest::Method::POST,
            "/v1/me/2fa/recovery-codes",
            &token,
            None,
        )
        .await;
    r.expect(200);
    r.body["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn hmac_key_lives_beside_the_sealing_key_not_in_the_database() {
    let app = spawn_app().await;
    let codes = recovery_codes(&app, "ana@example.com").await;
    let file = app.data_dir.path().join("hmac.key");
    let keys = std::fs::read(&file).expect("hmac.key beside secrets.key");
    assert_eq!(keys.len(), 64, "the cursor key and the hmac key");
    assert_eq!(app.count("SELECT COUNT(*) FROM server_keys").await, 0);
    let raw = raw_db(&app);
    for key in keys.chunks(32) {
        assert!(!contains(&raw, key), "a server key is in the database file");
    }
    let ch = app.challenge("ana@example.com").await;
    verify_recovery(&app, &ch, &codes[0]).await.expect(200);
}

#[tokio::test]
async fn hmac_key_of_an_upgraded_database_moves_to_the_file_and_recovery_codes_stay_valid() {
    let app = spawn_app().await;
    let codes = recovery_codes(&app, "ana@example.com").await;
    let now = app.clock_now();
    let (stopped, dir) = app.stop().await;
    stopped.unwrap();

    // What the release before this one left: the keys in server_keys, no hmac.key.
    let file = dir.path().join("hmac.key");
    let keys = std::fs::read(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    let c = rusqlite::Connection::open(dir.path().join("merchant-admin.db")).unwrap();
    c.execute(
        "INSERT INTO server_keys (name, key) VALUES ('cursor', ?1), ('hmac', ?2)",
        [&keys[..32], &keys[32..]],
    )
    .unwrap();
    drop(c);

    let app = spawn_app_at(dir, now, |_| {}).await;
    assert_eq!(app.count("SELECT COUNT(*) FROM server_keys").await, 0);
    assert_eq!(std::fs::read(&file).unwrap(), keys, "the same keys, moved");
    let raw = raw_db(&app);
    for key in keys.chunks(32) {
        assert!(
            !contains(&raw, key),
            "a server key is still in the database file"
        );
    }
    let ch = app.challenge("ana@example.com").await;
    verify_recovery(&app, &ch, &codes[0]).await.expect(200);
    let ch = app.challenge("ana@example.com").await;
    verify_recovery(&app, &ch, &codes[1]).await.expect(200);

    // A crash after the file was written but before the rows were deleted: both copies.
    let now = app.clock_now();
    let (stopped, dir) = app.stop().await;
    stopped.unwrap();
    let c = rusqlite::Connection::open(dir.path().join("merchant-admin.db")).unwrap();
    c.execute(
        "INSERT INTO server_keys (name, key) VALUES ('cursor', ?1), ('hmac', ?2)",
        [&keys[..32], &keys[32..]],
    )
    .unwrap();
    drop(c);
    let app = spawn_app_at(dir, now, |_| {}).await;
    assert_eq!(app.count("SELECT COUNT(*) FROM server_keys").await, 0);
    assert_eq!(std::fs::read(&file).unwrap(), keys);
    let ch = app.challenge("ana@example.com").await;
    verify_recovery(&app, &ch, &codes[2]).await.expect(200);
}

/// The stored type of each TOTP column of a user ("blob" once sealed, "text" when plain).
async fn totp_types(app: &TestApp, email: &'static str) -> (String, String) {
    app.state
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT typeof(totp_secret), typeof(totp_pending_secret) FROM users
                 WHERE email = ?1",
                [email],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .unwrap()
}

/// Starts TOTP setup without enabling it; returns the session token and pending secret.
async fn pending_totp(app: &TestApp, email: &str) -> (String, String) {
    let s = app.signed_in(email).await;
    let token = s["token"].as_str().unwrap().to_string();
    let r = app
        .authed(reqwest::Method::GET, "/v1/me/2fa/totp/setup", &token, None)
        .await;
    r.expect(200);
    (token, r.body["secret"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn totp_secrets_are_sealed_at_rest_and_sign_in_with_totp_still_works() {
    let app = spawn_app().await;
    let (_, enabled) = app.with_totp("ana@example.com").await;
    let (_, pending) = pending_totp(&app, "bo@example.com").await;
    let raw = raw_db(&app);
    for s in [&enabled, &pending] {
        assert!(!contains(&raw, s.as_bytes()), "a TOTP secret stored plain");
    }
    assert_eq!(totp_types(&app, "ana@example.com").await.0, "blob");
    assert_eq!(totp_types(&app, "bo@example.com").await.1, "blob");

    app.clock.advance(Duration::seconds(60)); // past the code used to enable
    let ch = app.challenge("ana@example.com").await;
    app.verify_totp(&ch, &rfc6238(&enabled, app.now_unix()))
        .await
        .expect(200);
}

#[tokio::test]
async fn totp_secrets_stored_plain_by_an_older_release_are_sealed_on_start_and_still_verify() {
    let app = spawn_app().await;
    let (_, enabled) = app.with_totp("ana@example.com").await;
    let (_, _) = pending_totp(&app, "bo@example.com").await;
    let now = app.clock_now();
    let (stopped, dir) = app.stop().await;
    stopped.unwrap();

    // What the release before this one wrote: the base32 secrets as text.
    let pending = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP";
    let c = rusqlite::Connection::open(dir.path().join("merchant-admin.db")).unwrap();
    c.execute(
        "UPDATE users SET totp_secret = ?1 WHERE email = 'ana@example.com'",
        [&enabled],
    )
    .unwrap();
    c.execute(
        "UPDATE users SET totp_pending_secret = ?1 WHERE email = 'bo@example.com'",
        [pending],
    )
    .unwrap();
    drop(c);

    let app = spawn_app_at(dir, now, |_| {}).await;
    assert_eq!(totp_types(&app, "ana@example.com").await.0, "blob");
    assert_eq!(totp_types(&app, "bo@example.com").await.1, "blob");
    let raw = raw_db(&app);
    for s in [enabled.as_str(), pending] {
        assert!(!contains(&raw, s.as_bytes()), "{s} still stored plain");
    }

    app.clock.advance(Duration::seconds(60));
    let ch = app.challenge("ana@example.com").await;
    app.verify_totp(&ch, &rfc6238(&enabled, app.now_unix()))
        .await
        .expect(200);
    // The pending secret still confirms setup.
    let bo = app.login_as("bo@example.com", "test device").await;
    bo.expect(200);
    app.authed(
        reqwest::Method::POST,
        "/v1/me/2fa/totp/enable",
        bo.body["token"].as_str().unwrap(),
        Some(json!({"totp_code": rfc6238(pending, app.now_unix())})),
    )
    .await
    .expect(204);

    // A second start finds nothing left to seal and changes nothing.
    let before = std::fs::read(app.data_dir.path().join("hmac.key")).unwrap();
    let now = app.clock_now();
    let (stopped, dir) = app.stop().await;
    stopped.unwrap();
    let app = spawn_app_at(dir, now, |_| {}).await;
    assert_eq!(
        std::fs::read(app.data_dir.path().join("hmac.key")).unwrap(),
        before
    );
    app.clock.advance(Duration::seconds(60));
    let ch = app.challenge("ana@example.com").await;
    app.verify_totp(&ch, &rfc6238(&enabled, app.now_unix()))
        .await
        .expect(200);
}
