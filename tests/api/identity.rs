//! Identity (issue 3): accounts, sign-in, sessions and the refresh-token rows of spec 3.

use chrono::Duration;
use serde_json::{Value, json};

use crate::support::{PASSWORD, spawn_app, spawn_app_with};

fn token(s: &Value) -> &str {
    s["token"].as_str().unwrap()
}

fn refresh_token(s: &Value) -> &str {
    s["refresh_token"].as_str().unwrap()
}

#[tokio::test]
async fn register_creates_an_account_without_signing_in() {
    let app = spawn_app().await;
    let r = app
        .send(
            app.client
                .post(app.url("/v1/auth/register"))
                .header("accept-language", "en-US,en;q=0.8")
                .json(&json!({"email": "  Ana@Example.COM ", "password": PASSWORD})),
        )
        .await;
    r.expect(201);
    let u = &r.body;
    assert_eq!(u["email"], "ana@example.com");
    assert_eq!(u["locale"], "en-US");
    assert_eq!(u["two_factor"], json!({"totp": false, "msgapp": false}));
    assert!(u["id"].is_string() && u["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(u.get("token").is_none(), "registration does not sign in");

    let again = app.register("ANA@example.com").await;
    again.expect_error(409, "email_taken");

    // The password is stored as argon2id, and user.created is in the outbox.
    assert_eq!(
        app.count("SELECT COUNT(*) FROM users WHERE password_hash LIKE '$argon2id$%'")
            .await,
        1
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM events WHERE name = 'user.created' AND store_id IS NULL")
            .await,
        1
    );
    let default_locale = app.register("bia@example.com").await;
    assert_eq!(default_locale.body["locale"], "pt-BR");
}

#[tokio::test]
async fn register_validates_fields() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({"email": "not-an-email", "password": PASSWORD}),
            "email",
        ),
        (
            json!({"email": "a@example.com", "password": "short"}),
            "password",
        ),
        (
            json!({"email": "a@example.com", "password": "é".repeat(129)}),
            "password",
        ),
        (json!({"email": "a@example.com"}), "password"),
        (json!({"email": 5, "password": PASSWORD}), "email"),
    ];
    for (body, field) in cases {
        let r = app.post_json("/v1/auth/register", &body).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"][field].is_string(),
            "{body}: {}",
            r.text
        );
    }
    // No endpoint lists users.
    assert_eq!(app.count("SELECT COUNT(*) FROM users").await, 0);
}

#[tokio::test]
async fn registration_has_its_own_limit_per_address() {
    let app = spawn_app_with(|c| c.register_per_hour = 2).await;
    app.register("a1@example.com").await.expect(201);
    app.register("a2@example.com").await.expect(201);
    let r = app.register("a3@example.com").await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some());
    app.clock.advance(Duration::minutes(31));
    app.register("a3@example.com").await.expect(201);
}

#[tokio::test]
async fn login_returns_a_session_and_stores_only_hashes() {
    let app = spawn_app().await;
    app.register("ana@example.com").await.expect(201);
    let r = app.login_as("Ana@Example.com", "Ana's phone").await;
    r.expect(200);
    let s = &r.body;
    assert_eq!(s["status"], "authenticated");
    assert_eq!(s["token_type"], "Bearer");
    assert_eq!(s["expires_in"], 86_400);
    assert_eq!(s["refresh_token_expires_in"], 2_592_000);
    assert!(refresh_token(s).starts_with("svc_rt_"));
    assert!(token(s).len() >= 43, "256 random bits");
    assert_eq!(s["user"]["email"], "ana@example.com");
    assert!(s["session_id"].is_string());

    let me = app.get_as("/v1/me", token(s)).await;
    me.expect(200);
    assert_eq!(me.body["email"], "ana@example.com");

    // Only sha256 hashes of the tokens are in the database.
    let raw: Vec<u8> = std::fs::read(app.data_dir.path().join("merchant-admin.db")).unwrap();
    let wal = std::fs::read(app.data_dir.path().join("merchant-admin.db-wal")).unwrap_or_default();
    for secret in [token(s), refresh_token(s), PASSWORD] {
        let needle = secret.as_bytes();
        assert!(
            !raw.windows(needle.len()).any(|w| w == needle),
            "{secret} stored in the clear"
        );
        assert!(
            !wal.windows(needle.len()).any(|w| w == needle),
            "{secret} stored in the clear"
        );
    }
}

#[tokio::test]
async fn wrong_passwords_and_unknown_emails_look_the_same() {
    let app = spawn_app().await;
    app.register("ana@example.com").await.expect(201);
    let wrong = app
        .post_json(
            "/v1/auth/login",
            &json!({"email": "ana@example.com", "password": "wrong password"}),
        )
        .await;
    wrong.expect_error(401, "invalid_credentials");
    let unknown = app
        .post_json(
            "/v1/auth/login",
            &json!({"email": "nobody@example.com", "password": "wrong password"}),
        )
        .await;
    unknown.expect_error(401, "invalid_credentials");
    assert_eq!(wrong.body, unknown.body);
}

#[tokio::test]
async fn failed_sign_ins_lock_an_email_for_the_window() {
    let app = spawn_app_with(|c| c.sign_in_failures = 3).await;
    app.register("ana@example.com").await.expect(201);
    let bad = json!({"email": "ana@example.com", "password": "guess guess"});
    for _ in 0..3 {
        app.post_json("/v1/auth/login", &bad)
            .await
            .expect_error(401, "invalid_credentials");
    }
    let r = app.login_as("ana@example.com", "d").await;
    r.expect_error(429, "rate_limited");
    let wait: i64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=900).contains(&wait), "{wait}");
    app.clock
        .advance(Duration::minutes(15) + Duration::seconds(1));
    app.login_as("ana@example.com", "d").await.expect(200);
}

#[tokio::test]
async fn access_tokens_expire() {
    let app = spawn_app().await;
    let s = app.signed_in("ana@example.com").await;
    app.clock.advance(Duration::seconds(86_399));
    app.get_as("/v1/me", token(&s)).await.expect(200);
    app.clock.advance(Duration::seconds(2));
    app.get_as("/v1/me", token(&s))
        .await
        .expect_error(401, "unauthorized");
    app.get("/v1/me").await.expect_error(401, "unauthorized");
    app.get_as("/v1/me", "svc_at_not-a-real-token")
        .await
        .expect_error(401, "unauthorized");
}

#[tokio::test]
async fn first_refresh_rotates() {
    let app = spawn_app().await;
    let s0 = app.signed_in("ana@example.com").await;
    let r = app.refresh_with(refresh_token(&s0)).await;
    r.expect(200);
    let s1 = r.body;
    assert!(s1.get("status").is_none(), "a session has no status");
    assert_eq!(s1["session_id"], s0["session_id"]);
    assert_ne!(refresh_token(&s1), refresh_token(&s0));
    assert!(refresh_token(&s1).starts_with("svc_rt_"));
    app.get_as("/v1/me", token(&s1)).await.expect(200);
    // The next rotation works from the new token.
    app.clock.advance(Duration::minutes(5));
    app.refresh_with(refresh_token(&s1)).await.expect(200);
}

#[tokio::test]
async fn a_retry_within_30_seconds_gets_a_fresh_pair_and_retires_the_lost_one() {
    let app = spawn_app().await;
    let s0 = app.signed_in("ana@example.com").await;
    let lost = app.refresh_with(refresh_token(&s0)).await.body; // the client never got this
    app.clock.advance(Duration::seconds(29));
    let retry = app.refresh_with(refresh_token(&s0)).await;
    retry.expect(200);
    let s2 = retry.body;
    assert_ne!(refresh_token(&s2), refresh_token(&lost));
    // The pair the client never received is dead; the fresh one works.
    app.get_as("/v1/me", token(&lost))
        .await
        .expect_error(401, "unauthorized");
    app.get_as("/v1/me", token(&s2)).await.expect(200);
    app.refresh_with(refresh_token(&s2)).await.expect(200);
}

/// Issue 13 item 2: no legitimate client ever holds a retired pair's refresh token (it lost
/// the race to the retry), so presenting it is theft: 401 `refresh_token_reused` and the
/// session ends on every device.
#[tokio::test]
async fn a_retired_refresh_token_is_reuse_and_revokes_the_session() {
    let app = spawn_app().await;
    let s0 = app.signed_in("ana@example.com").await;
    let lost = app.refresh_with(refresh_token(&s0)).await.body; // the client never got this
    app.clock.advance(Duration::seconds(10));
    let s2 = app.refresh_with(refresh_token(&s0)).await;
    s2.expect(200);
    let s2 = s2.body;
    app.get_as("/v1/me", token(&s2)).await.expect(200);

    app.refresh_with(refresh_token(&lost))
        .await
        .expect_error(401, "refresh_token_reused");
    app.get_as("/v1/me", token(&s2))
        .await
        .expect_error(401, "unauthorized");
    app.refresh_with(refresh_token(&s2))
        .await
        .expect_error(401, "invalid_refresh_token");
}

#[tokio::test]
async fn a_retry_after_the_replacement_was_used_is_theft() {
    let app = spawn_app().await;
    let s0 = app.signed_in("ana@example.com").await;
    let s1 = app.refresh_with(refresh_token(&s0)).await.body;
    app.get_as("/v1/me", token(&s1)).await.expect(200); // the replacement is in use
    app.clock.advance(Duration::seconds(5));
    app.refresh_with(refresh_token(&s0))
        .await
        .expect_error(401, "refresh_token_reused");
    // Every device of the session is signed out.
    app.get_as("/v1/me", token(&s1))
        .await
        .expect_error(401, "unauthorized");
    app.refresh_with(refresh_token(&s1))
        .await
        .expect_error(401, "invalid_refresh_token");
}

#[tokio::test]
async fn reuse_outside_the_window_revokes_the_session() {
    let app = spawn_app().await;
    let s0 = app.signed_in("ana@example.com").await;
    let s1 = app.refresh_with(refresh_token(&s0)).await.body;
    app.clock.advance(Duration::seconds(31));
    app.refresh_with(refresh_token(&s0))
        .await
        .expect_error(401, "refresh_token_reused");
    app.get_as("/v1/me", token(&s1))
        .await
        .expect_error(401, "unauthorized");
    app.get_as("/v1/me", token(&s0))
        .await
        .expect_error(401, "unauthorized");
    app.refresh_with(refresh_token(&s1))
        .await
        .expect_error(401, "invalid_refresh_token");
    // Presenting the stolen token again changes nothing further.
    app.refresh_with(refresh_token(&s0))
        .await
        .expect_error(401, "invalid_refresh_token");
}

#[tokio::test]
async fn expired_and_unknown_refresh_tokens_are_invalid() {
    let app = spawn_app().await;
    let s0 = app.signed_in("ana@example.com").await;
    app.refresh_with("svc_rt_nope")
        .await
        .expect_error(401, "invalid_refresh_token");
    app.refresh_with("")
        .await
        .expect_error(401, "invalid_refresh_token");
    app.clock.advance(Duration::days(30) + Duration::seconds(1));
    app.refresh_with(refresh_token(&s0))
        .await
        .expect_error(401, "invalid_refresh_token");
}

#[tokio::test]
async fn a_legacy_bpr_refresh_token_is_answered_with_an_svc_rt_one() {
    let app = spawn_app().await;
    let s0 = app.signed_in("ana@example.com").await;
    // Imported data: a pair whose refresh token has the older prefix.
    let legacy = "bpr_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG";
    let session = s0["session_id"].as_str().unwrap().to_string();
    let hash = merchant_admin::secrets::hash(legacy);
    let access = merchant_admin::secrets::hash("legacy-access");
    app.state
        .db
        .write(move |tx| {
            tx.execute(
                "INSERT INTO token_pairs (id, session_id, access_hash, refresh_hash, created_at,
                     access_expires_at, refresh_expires_at)
                 VALUES ('0190f3a0-0000-7000-8000-000000000001', ?1, ?2, ?3, '2026-01-01T00:00:00.000000Z',
                     '2026-01-02T00:00:00.000000Z', '2027-01-01T00:00:00.000000Z')",
                rusqlite::params![session, access, hash],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let r = app.refresh_with(legacy).await;
    r.expect(200);
    assert!(refresh_token(&r.body).starts_with("svc_rt_"));
    app.get_as("/v1/me", token(&r.body)).await.expect(200);
}

#[tokio::test]
async fn twenty_parallel_refreshes_leave_exactly_one_live_pair() {
    let app = spawn_app().await;
    let s0 = app.signed_in("ana@example.com").await;
    let rt = refresh_token(&s0).to_string();
    let replies = futures::future::join_all((0..20).map(|_| app.refresh_with(&rt))).await;
    let sessions: Vec<&Value> = replies
        .iter()
        .map(|r| {
            r.expect(200); // all land inside the retry window with an unused replacement
            &r.body
        })
        .collect();
    // Exactly one of the issued pairs is still usable; the others were retired.
    let mut live = 0;
    for s in &sessions {
        if app.get_as("/v1/me", token(s)).await.status == 200 {
            live += 1;
        }
    }
    assert_eq!(live, 1, "never two live pairs");
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM token_pairs WHERE retired_at IS NULL AND refresh_used_at IS NULL"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn logout_ends_the_session_and_always_answers_204() {
    let app = spawn_app().await;
    let s = app.signed_in("ana@example.com").await;
    let r = app
        .post_json(
            "/v1/auth/logout",
            &json!({"refresh_token": refresh_token(&s)}),
        )
        .await;
    r.expect(204);
    assert!(r.text.is_empty());
    app.get_as("/v1/me", token(&s))
        .await
        .expect_error(401, "unauthorized");
    app.refresh_with(refresh_token(&s))
        .await
        .expect_error(401, "invalid_refresh_token");
    app.post_json(
        "/v1/auth/logout",
        &json!({"refresh_token": refresh_token(&s)}),
    )
    .await
    .expect(204);
    app.post_json(
        "/v1/auth/logout",
        &json!({"refresh_token": "svc_rt_unknown"}),
    )
    .await
    .expect(204);
}

#[tokio::test]
async fn the_device_list_and_signing_a_device_out() {
    let app = spawn_app().await;
    app.register("ana@example.com").await.expect(201);
    let laptop = app.login_as("ana@example.com", "Laptop").await.body;
    app.clock.advance(Duration::minutes(2));
    let phone = app.login_as("ana@example.com", "Phone").await.body;
    app.clock.advance(Duration::minutes(2));

    let r = app
        .get_as("/v1/me/sessions?include_total=true", token(&laptop))
        .await;
    r.expect(200);
    assert_eq!(r.body["total"], 2);
    let rows = r.body["data"].as_array().unwrap();
    // The laptop just made this call, so it is the most recently used.
    assert_eq!(rows[0]["device_name"], "Laptop", "{}", r.text);
    assert_eq!(rows[0]["current"], true);
    assert_eq!(rows[1]["device_name"], "Phone");
    assert_eq!(rows[1]["current"], false);
    for k in ["id", "device_name", "created_at", "last_used_at", "current"] {
        assert!(rows[0].get(k).is_some(), "{k}");
    }

    // Another user cannot see or end Ana's sessions.
    let bia = app.signed_in("bia@example.com").await;
    let phone_id = phone["session_id"].as_str().unwrap();
    let path = format!("/v1/me/sessions/{phone_id}");
    app.send(app.client.delete(app.url(&path)).bearer_auth(token(&bia)))
        .await
        .expect_error(404, "not_found");
    app.get_as("/v1/me", token(&phone)).await.expect(200);

    app.send(
        app.client
            .delete(app.url(&path))
            .bearer_auth(token(&laptop)),
    )
    .await
    .expect(204);
    app.get_as("/v1/me", token(&phone))
        .await
        .expect_error(401, "unauthorized");
    app.send(
        app.client
            .delete(app.url(&path))
            .bearer_auth(token(&laptop)),
    )
    .await
    .expect_error(404, "not_found");
    let r = app.get_as("/v1/me/sessions", token(&laptop)).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn last_used_at_is_written_at_most_once_a_minute() {
    let app = spawn_app().await;
    let s = app.signed_in("ana@example.com").await;
    let last_used =
        || app.count("SELECT CAST(strftime('%s', last_used_at) AS INTEGER) FROM sessions");
    let t0 = last_used().await;
    app.clock.advance(Duration::seconds(30));
    app.get_as("/v1/me", token(&s)).await.expect(200);
    assert_eq!(last_used().await, t0, "not within the minute");
    app.clock.advance(Duration::seconds(31));
    app.get_as("/v1/me", token(&s)).await.expect(200);
    assert_eq!(last_used().await, t0 + 61);
}

#[tokio::test]
async fn me_and_its_locale() {
    let app = spawn_app().await;
    let s = app.signed_in("ana@example.com").await;
    let patch = |body: Value| {
        app.client
            .patch(app.url("/v1/me"))
            .bearer_auth(token(&s))
            .json(&body)
    };
    let r = app.send(patch(json!({"locale": "en-US"}))).await;
    r.expect(200);
    assert_eq!(r.body["locale"], "en-US");
    for bad in [
        json!({"locale": "fr-FR"}),
        json!({"locale": 1}),
        json!({"name": "x"}),
    ] {
        app.send(patch(bad))
            .await
            .expect_error(422, "validation_failed");
    }
    assert_eq!(
        app.get_as("/v1/me", token(&s)).await.body["locale"],
        "en-US"
    );
    app.send(
        app.client
            .patch(app.url("/v1/me"))
            .json(&json!({"locale": "en-US"})),
    )
    .await
    .expect_error(401, "unauthorized");
}

#[tokio::test]
async fn changing_the_password_signs_out_every_other_session() {
    let app = spawn_app().await;
    app.register("ana@example.com").await.expect(201);
    let here = app.login_as("ana@example.com", "here").await.body;
    let there = app.login_as("ana@example.com", "there").await.body;
    let change = |current: &str, new: &str| {
        app.client
            .post(app.url("/v1/me/password"))
            .bearer_auth(token(&here))
            .json(&json!({"current_password": current, "new_password": new}))
    };
    app.send(change("wrong password", "a new password"))
        .await
        .expect_error(400, "incorrect_password");
    let r = app.send(change(PASSWORD, "short")).await;
    r.expect_error(422, "validation_failed");
    assert!(r.body["details"]["fields"]["new_password"].is_string());

    app.send(change(PASSWORD, "a brand new password"))
        .await
        .expect(204);
    app.get_as("/v1/me", token(&here)).await.expect(200);
    app.get_as("/v1/me", token(&there))
        .await
        .expect_error(401, "unauthorized");
    app.login_as("ana@example.com", "x")
        .await
        .expect_error(401, "invalid_credentials");
    app.post_json(
        "/v1/auth/login",
        &json!({"email": "ana@example.com", "password": "a brand new password"}),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn deactivation_from_the_cli_ends_sessions_at_once() {
    let app = spawn_app().await;
    let s = app.signed_in("ana@example.com").await;
    let run = |cmd: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_merchant-admin"))
            .args(["users", cmd, "ANA@example.com", "--data-dir"])
            .arg(app.data_dir.path())
            .output()
            .unwrap()
    };
    // Used first, so the server has the token resolved and remembered; the CLI is another
    // process, whose commit the server learns of only by watching the file
    // (twice: a first use is written down before it counts, and is not remembered).
    for _ in 0..2 {
        app.get_as("/v1/me", token(&s)).await.expect(200);
    }
    let out = run("deactivate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    app.get_as("/v1/me", token(&s))
        .await
        .expect_error(401, "unauthorized");
    app.refresh_with(refresh_token(&s))
        .await
        .expect_error(401, "invalid_refresh_token");
    // Only a correct password learns that the account is disabled.
    app.login_as("ana@example.com", "d")
        .await
        .expect_error(403, "account_disabled");
    app.post_json(
        "/v1/auth/login",
        &json!({"email": "ana@example.com", "password": "wrong one"}),
    )
    .await
    .expect_error(401, "invalid_credentials");

    assert!(run("activate").status.success());
    app.login_as("ana@example.com", "d").await.expect(200);
    let missing = std::process::Command::new(env!("CARGO_BIN_EXE_merchant-admin"))
        .args(["users", "deactivate", "nobody@example.com", "--data-dir"])
        .arg(app.data_dir.path())
        .output()
        .unwrap();
    assert!(!missing.status.success());
}

#[tokio::test]
async fn budgets_and_idempotency_keys_belong_to_the_credential() {
    let app = spawn_app_with(|c| c.rate_limit_authenticated = 1000).await;
    let ana = app.signed_in("ana@example.com").await;
    let bia = app.signed_in("bia@example.com").await;
    let r = app.get_as("/v1/me", token(&ana)).await;
    assert_eq!(
        r.header("ratelimit-limit"),
        Some("1000"),
        "charged to the session's budget"
    );
    assert_eq!(
        app.get("/healthz").await.header("ratelimit-limit"),
        Some("300")
    );

    // The same key from two users runs twice; each user's retry replays their own.
    let body = json!({"name": "same", "count": 1});
    let post = |t: &str| {
        app.client
            .post(app.url("/v1/test/echo"))
            .bearer_auth(t)
            .header("idempotency-key", "shared-key")
            .json(&body)
    };
    let a = app.send(post(token(&ana))).await;
    let b = app.send(post(token(&bia))).await;
    a.expect(201);
    b.expect(201);
    assert!(
        b.header("idempotent-replayed").is_none(),
        "one user's key never replays to another"
    );
    assert_ne!(a.body["call"], b.body["call"]);
    let a2 = app.send(post(token(&ana))).await;
    assert_eq!(a2.header("idempotent-replayed"), Some("true"));
    assert_eq!(a2.body["call"], a.body["call"]);
}

#[tokio::test]
async fn cleanup_removes_what_can_never_be_used_again() {
    let app = spawn_app_with(|c| c.workers = 0).await;
    let gone = app.signed_in("ana@example.com").await;
    app.post_json(
        "/v1/auth/logout",
        &json!({"refresh_token": refresh_token(&gone)}),
    )
    .await
    .expect(204);
    app.post_json(
        "/v1/auth/login",
        &json!({"email": "ana@example.com", "password": "nope nope"}),
    )
    .await
    .expect_error(401, "invalid_credentials");
    app.clock.advance(Duration::days(31));
    let live = app.login_as("ana@example.com", "still here").await.body;

    app.run_cleanup().await;
    // The cleanup deletes rows the API already hides (expired sessions, old failures).
    assert_eq!(app.count("SELECT COUNT(*) FROM sign_in_failures").await, 0);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM sessions").await,
        1,
        "only the live session"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM token_pairs").await, 1);
    app.get_as("/v1/me", token(&live)).await.expect(200);
}

#[tokio::test]
async fn failed_sign_ins_lock_an_address_too() {
    let app = spawn_app_with(|c| c.sign_in_failures = 3).await;
    app.register("ana@example.com").await.expect(201);
    // Three different e-mails from one address.
    for who in ["x@example.com", "y@example.com", "z@example.com"] {
        app.post_json(
            "/v1/auth/login",
            &json!({"email": who, "password": "guess guess"}),
        )
        .await
        .expect_error(401, "invalid_credentials");
    }
    app.login_as("ana@example.com", "d")
        .await
        .expect_error(429, "rate_limited");
}

#[tokio::test]
async fn a_session_without_a_device_name_is_named_from_the_user_agent() {
    let app = spawn_app().await;
    app.register("ana@example.com").await.expect(201);
    let ua = "Mozilla/5.0 (Windows NT 10.0; rv:121.0) Gecko/20100101 Firefox/121.0";
    let r = app
        .send(
            app.client
                .post(app.url("/v1/auth/login"))
                .header("user-agent", ua)
                .json(&json!({"email": "ana@example.com", "password": PASSWORD})),
        )
        .await;
    r.expect(200);
    let list = app.get_as("/v1/me/sessions", token(&r.body)).await;
    assert_eq!(list.body["data"][0]["device_name"], "Firefox on Windows");
    let address: String = app
        .state
        .db
        .read(|c| Ok(c.query_row("SELECT address FROM sessions", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(
        address, "127.0.0.1",
        "the session records the client address"
    );
}

#[tokio::test]
async fn concurrent_guesses_cannot_slip_past_the_lockout() {
    let app = spawn_app_with(|c| c.sign_in_failures = 3).await;
    app.register("ana@example.com").await.expect(201);
    let bad = json!({"email": "ana@example.com", "password": "guess guess"});
    let replies =
        futures::future::join_all((0..20).map(|_| app.post_json("/v1/auth/login", &bad))).await;
    let evaluated = replies.iter().filter(|r| r.status == 401).count();
    let refused = replies.iter().filter(|r| r.status == 429).count();
    assert_eq!(
        evaluated, 3,
        "only the budget's worth of guesses reach the hash"
    );
    assert_eq!(refused, 17);
}

#[tokio::test]
async fn credentials_are_never_stored_for_idempotent_replay() {
    let app = spawn_app().await;
    app.register("ana@example.com").await.expect(201);
    let body = json!({"email": "ana@example.com", "password": PASSWORD});
    let a = app.post_idem("/v1/auth/login", "login-key", &body).await;
    let b = app.post_idem("/v1/auth/login", "login-key", &body).await;
    a.expect(200);
    b.expect(200);
    assert!(b.header("idempotent-replayed").is_none());
    assert_ne!(
        token(&a.body),
        token(&b.body),
        "a second real sign-in, not a stored copy"
    );
    assert_eq!(a.header("cache-control"), Some("no-store"));
    assert_eq!(app.count("SELECT COUNT(*) FROM idempotency_keys").await, 0);

    // A keyed refresh replay is a real reuse, with spec 3's answer.
    let refresh_body = json!({"refresh_token": refresh_token(&a.body)});
    app.post_idem("/v1/auth/refresh", "refresh-key", &refresh_body)
        .await
        .expect(200);
    app.clock.advance(Duration::seconds(31));
    app.post_idem("/v1/auth/refresh", "refresh-key", &refresh_body)
        .await
        .expect_error(401, "refresh_token_reused");
}

#[tokio::test]
async fn ending_a_session_any_way_kills_its_refresh_token() {
    let app = spawn_app().await;
    app.register("ana@example.com").await.expect(201);
    let keep = app.login_as("ana@example.com", "keep").await.body;
    let revoked = app.login_as("ana@example.com", "revoked").await.body;
    let by_password = app.login_as("ana@example.com", "password").await.body;

    let path = format!(
        "/v1/me/sessions/{}",
        revoked["session_id"].as_str().unwrap()
    );
    app.send(app.client.delete(app.url(&path)).bearer_auth(token(&keep)))
        .await
        .expect(204);
    app.refresh_with(refresh_token(&revoked))
        .await
        .expect_error(401, "invalid_refresh_token");

    let change = json!({"current_password": PASSWORD, "new_password": "another password"});
    app.send(
        app.client
            .post(app.url("/v1/me/password"))
            .bearer_auth(token(&keep))
            .json(&change),
    )
    .await
    .expect(204);
    app.refresh_with(refresh_token(&by_password))
        .await
        .expect_error(401, "invalid_refresh_token");
    app.refresh_with(refresh_token(&keep)).await.expect(200);

    let long = json!({"current_password": "another password", "new_password": "é".repeat(129)});
    let r = app
        .send(
            app.client
                .post(app.url("/v1/me/password"))
                .bearer_auth(token(&keep))
                .json(&long),
        )
        .await;
    r.expect_error(422, "validation_failed");
}

#[tokio::test]
async fn sessions_whose_tokens_all_expired_leave_the_device_list() {
    let app = spawn_app_with(|c| c.refresh_token_ttl = Duration::days(2)).await;
    app.register("ana@example.com").await.expect(201);
    let old = app.login_as("ana@example.com", "old").await.body;
    assert_eq!(
        old["refresh_token_expires_in"], 172_800,
        "the lifetime is configurable"
    );
    app.clock.advance(Duration::days(3));
    let new = app.login_as("ana@example.com", "new").await.body;
    let r = app
        .get_as("/v1/me/sessions?include_total=true", token(&new))
        .await;
    assert_eq!(r.body["total"], 1);
    assert_eq!(r.body["data"][0]["device_name"], "new");
}

/// Issue 13 item 4: an IPv6 client is one budget per /64, so rotating addresses inside its
/// prefix buys no extra registrations or sign-in guesses (IPv4 stays per address).
#[tokio::test]
async fn ipv6_budgets_are_kept_per_64_prefix() {
    let app = spawn_app_with(|c| {
        c.trust_proxy = true;
        c.register_per_hour = 2;
        c.sign_in_failures = 3;
    })
    .await;
    let from = |addr: &str, path: &str, body: Value| {
        app.client
            .post(app.url(path))
            .header("x-forwarded-for", addr)
            .json(&body)
    };
    let register = |addr: &'static str, email: &'static str| {
        app.send(from(
            addr,
            "/v1/auth/register",
            json!({"email": email, "password": PASSWORD}),
        ))
    };
    register("2001:db8:7:1::1", "a1@example.com")
        .await
        .expect(201);
    register("2001:db8:7:1::2", "a2@example.com")
        .await
        .expect(201);
    register("2001:db8:7:1:ffff::3", "a3@example.com")
        .await
        .expect_error(429, "rate_limited");
    // Another /64, and IPv4 addresses, have budgets of their own.
    register("2001:db8:7:2::1", "b1@example.com")
        .await
        .expect(201);
    register("192.0.2.1", "c1@example.com").await.expect(201);
    register("192.0.2.2", "c2@example.com").await.expect(201);
    register("192.0.2.2", "c3@example.com").await.expect(201);

    // Three wrong passwords from three addresses of one /64 lock that prefix's sign-ins.
    for (i, addr) in ["2001:db8:9:1::a", "2001:db8:9:1::b", "2001:db8:9:1::c"]
        .into_iter()
        .enumerate()
    {
        let email = ["a1@example.com", "a2@example.com", "b1@example.com"][i];
        app.send(from(
            addr,
            "/v1/auth/login",
            json!({"email": email, "password": "wrong password"}),
        ))
        .await
        .expect_error(401, "invalid_credentials");
    }
    let locked = app
        .send(from(
            "2001:db8:9:1::d",
            "/v1/auth/login",
            json!({"email": "c1@example.com", "password": PASSWORD}),
        ))
        .await;
    locked.expect_error(429, "rate_limited");
    app.send(from(
        "2001:db8:9:2::d",
        "/v1/auth/login",
        json!({"email": "c1@example.com", "password": PASSWORD}),
    ))
    .await
    .expect(200);
}

/// Issue 13 item 19: sign-in attempts are counted before their hash runs, but a lock made
/// only of attempts still being checked lifts as soon as they finish: `Retry-After: 1`,
/// not the 15-minute figure kept for real failures.
#[tokio::test]
async fn a_lock_made_of_attempts_still_being_checked_answers_retry_after_1() {
    let app = spawn_app_with(|c| c.hash_workers = 1).await;
    app.register("ana@example.com").await.expect(201);
    // Hold the only hashing thread, so ten correct sign-ins sit counted but unchecked.
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let (started, running) = tokio::sync::oneshot::channel::<()>();
    let hasher = app.state.hasher.clone();
    let held = tokio::spawn(async move {
        hasher
            .run(move || {
                started.send(()).unwrap();
                gate.recv()
            })
            .await
    });
    running.await.unwrap();
    let logins: Vec<_> = (0..10)
        .map(|i| {
            let req = app.client.post(app.url("/v1/auth/login")).json(
                &json!({"email": "ana@example.com", "password": PASSWORD, "device_name": format!("d{i}")}),
            );
            tokio::spawn(req.send())
        })
        .collect();
    while app
        .count("SELECT COUNT(*) FROM sign_in_failures WHERE kind = 'checking'")
        .await
        < 10
    {
        tokio::task::yield_now().await;
    }
    let r = app.login_as("ana@example.com", "eleventh").await;
    r.expect_error(429, "rate_limited");
    assert_eq!(r.header("retry-after"), Some("1"), "{}", r.text);

    release.send(()).unwrap();
    held.await.unwrap().unwrap().unwrap();
    for l in logins {
        assert_eq!(l.await.unwrap().unwrap().status(), 200);
    }
    app.login_as("ana@example.com", "after").await.expect(200);

    // Real failures still lock for the window.
    for _ in 0..10 {
        app.post_json(
            "/v1/auth/login",
            &json!({"email": "ana@example.com", "password": "wrong password"}),
        )
        .await
        .expect_error(401, "invalid_credentials");
    }
    let r = app.login_as("ana@example.com", "locked").await;
    r.expect_error(429, "rate_limited");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((890..=900).contains(&wait), "{wait}");
}
