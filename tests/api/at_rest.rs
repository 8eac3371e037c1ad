//! Secrets at rest (issue 13, items 10-12 and 15): what someone holding a copy of the
//! database file, but not the key files beside it, can read.

use crate::helpers::{TestApp, spawn_app, spawn_app_at};
use crate::two_factor::verify_recovery;

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
