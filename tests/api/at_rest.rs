//! Secrets at rest (issue 13, items 10-12 and 15): what someone holding a copy of the
//! database file, but not the key files beside it, can read.

use chrono::Duration;
use serde_json::json;

use crate::support::{TestApp, rfc6238, spawn_app, spawn_app_at, verify_recovery};

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

#[tokio::test]
async fn hmac_key_lives_beside_the_sealing_key_not_in_the_database() {
    let app = spawn_app().await;
    let (_, codes) = app.recovery_codes("ana@example.com").await;
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
    let (_, codes) = app.recovery_codes("ana@example.com").await;
    for i in 0..2 {
        app.seed_owner(&format!("t{i}@example.com"), &format!("T {i}"))
            .await;
    }
    let cursor = app.get("/v1/test/tenants?limit=1").await.body["next_cursor"]
        .as_str()
        .unwrap()
        .to_string();
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
    // A cursor handed out before the upgrade still reads its next page.
    app.get(&format!("/v1/test/tenants?limit=1&cursor={cursor}"))
        .await
        .expect(200);

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
        .call(reqwest::Method::GET, "/v1/me/2fa/totp/setup", &token, None)
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
    app.call(
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

/// Sends the same POST twice with one `Idempotency-Key`; asserts the second is a replay of
/// the first (same status and body, so the same secret) and that the stored record holds the
/// secret at `field` only sealed. Returns the first body.
async fn twice(
    app: &TestApp,
    token: &str,
    path: &str,
    key: &'static str,
    body: Option<serde_json::Value>,
    field: &str,
) -> serde_json::Value {
    let send = || {
        let mut req = app
            .client
            .post(app.url(path))
            .bearer_auth(token)
            .header("idempotency-key", key);
        if let Some(b) = &body {
            req = req.json(b);
        }
        app.send(req)
    };
    let first = send().await;
    assert!(first.status.is_success(), "{}", first.text);
    let second = send().await;
    assert_eq!(second.status, first.status, "{}", second.text);
    assert_eq!(second.header("idempotent-replayed"), Some("true"));
    assert_eq!(second.body, first.body, "the same secret, not a second one");
    assert_eq!(second.header("cache-control"), Some("no-store"));
    let secret = first.body[field].as_str().expect("a secret in the body");
    assert!(secret.len() >= 20, "{secret}");

    let (stored, sealed): (Vec<u8>, bool) = app
        .state
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT response_body, response_sealed FROM idempotency_keys WHERE key = ?1",
                [key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .unwrap();
    assert!(sealed);
    assert!(!contains(&stored, secret.as_bytes()), "stored in plain");
    assert!(
        !contains(&raw_db(app), secret.as_bytes()),
        "in the database file"
    );
    first.body
}

#[tokio::test]
async fn repeated_idempotency_key_on_api_token_create_returns_the_same_token_and_creates_one() {
    let app = spawn_app().await;
    let (owner, _) = app.member("ana@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    let path = format!("/v1/stores/{store}/api-tokens");
    let body = json!({"name": "ci", "scopes": ["*"]});
    let out = twice(&app, &owner, &path, "tok-1", Some(body), "value").await;
    assert_eq!(app.total(&owner, &path).await, 1);
    // The token replayed is the token that works.
    app.get_as(
        &format!("/v1/stores/{store}"),
        out["value"].as_str().unwrap(),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn repeated_idempotency_key_on_api_token_rotate_returns_the_same_token_and_rotates_once() {
    let app = spawn_app().await;
    let (owner, _) = app.member("ana@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    let created = app
        .call(
            reqwest::Method::POST,
            &format!("/v1/stores/{store}/api-tokens"),
            &owner,
            Some(json!({"name": "ci", "scopes": ["*"]})),
        )
        .await;
    created.expect(201);
    let id = created.body["id"].as_str().unwrap();
    let path = format!("/v1/stores/{store}/api-tokens/{id}/rotate");
    let out = twice(&app, &owner, &path, "rot-1", None, "value").await;
    // Stored rows: a second rotation would replace the secret, not add a listed token.
    assert_eq!(app.count("SELECT COUNT(*) FROM api_tokens").await, 1);
    app.get_as(
        &format!("/v1/stores/{store}"),
        out["value"].as_str().unwrap(),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn repeated_idempotency_key_on_webhook_create_returns_the_same_secret_and_creates_one() {
    let app = spawn_app().await;
    let (owner, _) = app.member("ana@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    let path = format!("/v1/stores/{store}/webhooks");
    let body = json!({"url": "http://127.0.0.1:9/hook", "events": ["orders.created"]});
    twice(&app, &owner, &path, "hook-1", Some(body), "secret").await;
    assert_eq!(app.total(&owner, &path).await, 1);
}

#[tokio::test]
async fn repeated_idempotency_key_on_invite_create_returns_the_same_invite_and_creates_one() {
    // Not the `log` provider, which keeps invite links readable for `dev outbox`.
    let app = crate::support::spawn_app_with(|c| {
        c.msgapp = merchant_admin::config::MsgappConfig::Cloud {
            api_base: "http://127.0.0.1:9/".into(),
            phone_number_id: "PNID".into(),
            token: "cloud-token".into(),
            otp_template: "login_code".into(),
            timeout: std::time::Duration::from_millis(500),
        };
    })
    .await;
    let (owner, _) = app.member("ana@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    let path = format!("/v1/stores/{store}/invites");
    let body = json!({"email": "bo@example.com", "role": "staff"});
    let out = twice(&app, &owner, &path, "inv-1", Some(body), "token").await;
    // No endpoint lists invites.
    assert_eq!(app.count("SELECT COUNT(*) FROM invites").await, 1);
    app.post_json(
        &format!("/v1/invites/{}/accept", out["token"].as_str().unwrap()),
        &json!({"password": "a good new password"}),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn sealed_idempotent_responses_end_with_the_24_hour_window() {
    let app = crate::support::spawn_app_with(|c| c.workers = 0).await;
    let (owner, _) = app.member("ana@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    let path = format!("/v1/stores/{store}/api-tokens");
    let body = json!({"name": "ci", "scopes": ["*"]});
    twice(&app, &owner, &path, "tok-1", Some(body), "value").await;

    app.clock
        .advance(Duration::hours(24) + Duration::seconds(1));
    app.run_cleanup().await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM idempotency_keys WHERE key = 'tok-1'")
            .await,
        0,
        "purged when the window ends"
    );
}

#[tokio::test]
async fn sign_in_endpoints_document_their_own_retry_rules_and_are_never_stored() {
    let app = spawn_app().await;
    let doc = app.get("/v1/openapi/admin.json").await;
    doc.expect(200);
    let text = doc.body["info"]["description"].as_str().unwrap();
    for needle in [
        "Idempotency-Key",
        "/auth/login",
        "/auth/refresh",
        "/auth/otp/verify",
        "sealed",
    ] {
        assert!(text.contains(needle), "{needle} missing from: {text}");
    }

    app.register("ana@example.com").await.expect(201);
    let body = json!({"email": "ana@example.com", "password": "correct horse battery"});
    let a = app.post_idem("/v1/auth/login", "login-1", &body).await;
    let b = app.post_idem("/v1/auth/login", "login-1", &body).await;
    a.expect(200);
    b.expect(200);
    assert_eq!(b.header("idempotent-replayed"), None);
    assert_ne!(
        a.body["token"], b.body["token"],
        "a second sign-in, not a replay"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM idempotency_keys").await, 0);
}

#[tokio::test]
async fn a_database_whose_hmac_key_file_is_missing_is_refused_not_given_new_keys() {
    let app = spawn_app().await;
    let (stopped, dir) = app.stop().await;
    stopped.unwrap();
    std::fs::remove_file(dir.path().join("hmac.key")).unwrap();
    std::fs::remove_file(dir.path().join("secrets.key")).unwrap();
    let cfg = crate::support::test_config(dir.path());
    let clock = merchant_admin::clock::ManualClock::new(crate::support::start_time());
    let opened =
        tokio::task::spawn_blocking(move || merchant_admin::AppState::open(cfg, clock).map(|_| ()))
            .await
            .unwrap();
    let err = format!("{:#}", opened.unwrap_err());
    assert!(err.contains("hmac.key is missing"), "{err}");
    assert!(
        !dir.path().join("secrets.key").exists(),
        "no new sealing key in place of the lost one"
    );
}
