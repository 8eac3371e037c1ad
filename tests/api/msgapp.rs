//! The messaging-app factor and sign-in codes (spec 3 messaging-app code rows; issue 3).
//! The Cloud API is a small local server (`support::msgapp`), so ureq's real path runs.

use std::time::Duration as StdDuration;

use axum::http::StatusCode;
use chrono::Duration;
use serde_json::json;

use crate::support::msgapp::{PHONE, cloud_app, cloud_config, start_fake};
use crate::support::{PASSWORD, TestApp, spawn_app, spawn_app_with};

fn other_code(code: &str) -> String {
    format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000)
}

#[tokio::test]
async fn enabling_with_the_log_provider_and_reading_the_code_locally() {
    let app = spawn_app().await;
    let s = app.signed_in("ana@example.com").await;
    let token = s["token"].as_str().unwrap();
    let enable = |phone: &str| {
        app.as_user(
            reqwest::Method::POST,
            "/v1/me/2fa/msgapp/enable",
            token,
            json!({"phone_e164": phone}),
        )
    };
    let r = enable("11 98765-4321").await;
    r.expect_error(422, "validation_failed");
    assert!(r.body["details"]["fields"]["phone_e164"].is_string());
    let r = enable(PHONE).await;
    r.expect(200);
    assert_eq!(
        r.body,
        json!({"sent_to": "+55*******4321", "expires_in": 300})
    );

    // `merchant-admin dev outbox` shows what the log provider "sent".
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_merchant-admin"))
        .args(["dev", "outbox", "--data-dir"])
        .arg(app.data_dir.path())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success() && shown.contains(PHONE), "{shown}");
    let code: String = shown
        .trim()
        .chars()
        .rev()
        .take(6)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(code.chars().all(|c| c.is_ascii_digit()), "{shown}");

    let confirm = |code: String| {
        app.as_user(
            reqwest::Method::POST,
            "/v1/me/2fa/msgapp/confirm",
            token,
            json!({"code": code}),
        )
    };
    confirm(other_code(&code))
        .await
        .expect_error(422, "invalid_verification_code");
    confirm(code.clone()).await.expect(204);
    let me = app.get_as("/v1/me", token).await;
    assert_eq!(
        me.body["two_factor"],
        json!({"totp": false, "msgapp": true})
    );
    enable(PHONE).await.expect_error(409, "conflict");
}

#[tokio::test]
async fn the_cloud_provider_sends_a_template_message() {
    let (app, fake) = cloud_app().await;
    let s = app.signed_in("ana@example.com").await;
    let token = s["token"].as_str().unwrap();
    app.as_user(
        reqwest::Method::PATCH,
        "/v1/me",
        token,
        json!({"locale": "en-US"}),
    )
    .await
    .expect(200);
    app.as_user(
        reqwest::Method::POST,
        "/v1/me/2fa/msgapp/enable",
        token,
        json!({"phone_e164": PHONE}),
    )
    .await
    .expect(200);
    let (phone_id, auth, body) = fake.received.lock().unwrap().last().cloned().unwrap();
    assert_eq!(phone_id, "100000000001");
    assert_eq!(auth, "Bearer cloud-token");
    assert_eq!(body["to"], PHONE);
    assert_eq!(body["type"], "template");
    assert_eq!(body["template"]["name"], "login_code");
    assert_eq!(body["template"]["language"]["code"], "en_US");
    assert_eq!(fake.last_code().len(), 6);
}

#[tokio::test]
async fn sign_in_with_a_messaging_app_code() {
    let (app, fake) = cloud_app().await;
    app.with_msgapp(&fake, "ana@example.com").await;
    app.clock.advance(Duration::seconds(60));
    let r = app
        .post_json(
            "/v1/auth/login",
            &json!({"email": "ana@example.com", "password": PASSWORD}),
        )
        .await;
    assert_eq!(r.body["methods"], json!(["msgapp"]));
    let ch = r.body["challenge"].as_str().unwrap().to_string();

    app.otp_verify(&ch, "123456")
        .await
        .expect_error(400, "no_pending_code");
    let sent = app.otp_send(&ch).await;
    sent.expect(200);
    assert_eq!(
        sent.body,
        json!({"sent_to": "+55*******4321", "expires_in": 300})
    );
    let first = fake.last_code();
    app.otp_verify(&ch, &other_code(&first))
        .await
        .expect_error(401, "invalid_code");

    // Sending again is limited to once per 30 s per challenge, then replaces the code.
    let r = app.otp_send(&ch).await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some());
    app.clock.advance(Duration::seconds(31));
    app.otp_send(&ch).await.expect(200);
    let second = fake.last_code();
    if second != first {
        app.otp_verify(&ch, &first)
            .await
            .expect_error(401, "invalid_code");
    }
    let ok = app.otp_verify(&ch, &second).await;
    ok.expect(200);
    app.get_as("/v1/me", ok.body["token"].as_str().unwrap())
        .await
        .expect(200);
    app.otp_verify(&ch, &second)
        .await
        .expect_error(401, "invalid_challenge");
}

#[tokio::test]
async fn five_wrong_codes_burn_it_and_then_the_challenge_is_spent() {
    let (app, fake) = cloud_app().await;
    app.with_msgapp(&fake, "ana@example.com").await;
    let ch = app.msgapp_challenge("ana@example.com").await;
    app.otp_send(&ch).await.expect(200);
    let code = fake.last_code();
    for _ in 0..4 {
        app.otp_verify(&ch, &other_code(&code))
            .await
            .expect_error(401, "invalid_code");
    }
    app.otp_verify(&ch, &other_code(&code))
        .await
        .expect_error(400, "too_many_attempts");
    // The challenge's five attempts are used up too, even for the right code.
    app.otp_verify(&ch, &code)
        .await
        .expect_error(429, "rate_limited");
}

#[tokio::test]
async fn codes_need_the_factor_on() {
    let (app, fake) = cloud_app().await;
    let token = app.with_msgapp(&fake, "ana@example.com").await;
    let ch = app.msgapp_challenge("ana@example.com").await;
    app.as_user(
        reqwest::Method::DELETE,
        "/v1/me/2fa/msgapp",
        &token,
        json!({"password": "not it at all"}),
    )
    .await
    .expect_error(400, "incorrect_password");
    app.as_user(
        reqwest::Method::DELETE,
        "/v1/me/2fa/msgapp",
        &token,
        json!({"password": PASSWORD}),
    )
    .await
    .expect(204);
    app.otp_send(&ch)
        .await
        .expect_error(400, "msgapp_2fa_not_enabled");
    app.otp_verify(&ch, "123456")
        .await
        .expect_error(400, "msgapp_2fa_not_enabled");
    app.otp_send("svc_ch_nope")
        .await
        .expect_error(401, "invalid_challenge");
}

#[tokio::test]
async fn failed_deliveries_are_502_and_leave_no_code() {
    let (app, fake) = cloud_app().await;
    app.with_msgapp(&fake, "ana@example.com").await;
    let ch = app.msgapp_challenge("ana@example.com").await;
    *fake.status.lock().unwrap() = StatusCode::INTERNAL_SERVER_ERROR;
    app.otp_send(&ch)
        .await
        .expect_error(502, "otp_delivery_failed");
    app.otp_verify(&ch, &fake.last_code())
        .await
        .expect_error(400, "no_pending_code");

    // A receiver slower than the timeout is a failure too.
    *fake.status.lock().unwrap() = StatusCode::OK;
    *fake.delay.lock().unwrap() = StdDuration::from_secs(3);
    app.clock.advance(Duration::seconds(31));
    app.otp_send(&ch)
        .await
        .expect_error(502, "otp_delivery_failed");

    let bia = app.signed_in("bia@example.com").await;
    app.as_user(
        reqwest::Method::POST,
        "/v1/me/2fa/msgapp/enable",
        bia["token"].as_str().unwrap(),
        json!({"phone_e164": PHONE}),
    )
    .await
    .expect_error(502, "otp_delivery_failed");
}

#[tokio::test]
async fn five_sends_per_hour_per_user() {
    let (app, fake) = cloud_app().await;
    app.with_msgapp(&fake, "ana@example.com").await; // the enable code is send 1
    sends_then_refuses(&app, 4).await;
    app.clock.advance(Duration::hours(1));
    let ch = app.msgapp_challenge("ana@example.com").await;
    app.otp_send(&ch).await.expect(200);
}

#[tokio::test]
async fn the_operator_sets_how_many_codes_an_hour() {
    let (fake, addr) = start_fake().await;
    let app = spawn_app_with(move |c| {
        c.msgapp = cloud_config(addr);
        c.code_sends_per_hour = 2;
    })
    .await;
    app.with_msgapp(&fake, "ana@example.com").await; // the enable code is send 1
    sends_then_refuses(&app, 1).await;
}

/// `sends` more sign-in codes go out to ana (each on a fresh challenge, 31 s apart), and
/// the next is refused with 429.
async fn sends_then_refuses(app: &TestApp, sends: usize) {
    for _ in 0..sends {
        app.clock.advance(Duration::seconds(31));
        let ch = app.msgapp_challenge("ana@example.com").await;
        app.otp_send(&ch).await.expect(200);
    }
    app.clock.advance(Duration::seconds(31));
    let ch = app.msgapp_challenge("ana@example.com").await;
    let r = app.otp_send(&ch).await;
    r.expect_error(429, "rate_limited");
    assert!(r.headers.contains_key("retry-after"), "{:?}", r.headers);
}

#[tokio::test]
async fn undelivered_codes_still_count_and_spent_challenges_get_no_code() {
    let (app, fake) = cloud_app().await;
    app.with_msgapp(&fake, "ana@example.com").await; // send 1
    *fake.status.lock().unwrap() = StatusCode::SERVICE_UNAVAILABLE;
    for _ in 0..4 {
        app.clock.advance(Duration::seconds(31));
        let ch = app.msgapp_challenge("ana@example.com").await;
        app.otp_send(&ch)
            .await
            .expect_error(502, "otp_delivery_failed");
    }
    *fake.status.lock().unwrap() = StatusCode::OK;
    app.clock.advance(Duration::seconds(31));
    let ch = app.msgapp_challenge("ana@example.com").await;
    app.otp_send(&ch).await.expect_error(429, "rate_limited");

    // A challenge whose five attempts are spent gets no more codes.
    app.clock.advance(Duration::hours(1));
    let ch = app.msgapp_challenge("ana@example.com").await;
    app.otp_send(&ch).await.expect(200);
    let code = fake.last_code();
    for _ in 0..5 {
        app.otp_verify(&ch, &other_code(&code)).await;
    }
    app.clock.advance(Duration::seconds(31));
    app.otp_send(&ch).await.expect_error(429, "rate_limited");
}

#[tokio::test]
async fn an_unconfirmed_phone_code_expires_after_five_minutes() {
    let (app, fake) = cloud_app().await;
    let s = app.signed_in("ana@example.com").await;
    let token = s["token"].as_str().unwrap();
    app.as_user(
        reqwest::Method::POST,
        "/v1/me/2fa/msgapp/enable",
        token,
        json!({"phone_e164": PHONE}),
    )
    .await
    .expect(200);
    app.clock.advance(Duration::seconds(301));
    app.as_user(
        reqwest::Method::POST,
        "/v1/me/2fa/msgapp/confirm",
        token,
        json!({"code": fake.last_code()}),
    )
    .await
    .expect_error(422, "invalid_verification_code");
}

#[tokio::test]
async fn a_deactivated_account_cannot_finish_with_a_code() {
    let (app, fake) = cloud_app().await;
    app.with_msgapp(&fake, "ana@example.com").await;
    let ch = app.msgapp_challenge("ana@example.com").await;
    app.otp_send(&ch).await.expect(200);
    app.state
        .db
        .write(move |tx| {
            merchant_admin::auth::store::set_disabled(
                tx,
                "ana@example.com",
                true,
                chrono::Utc::now(),
            )
        })
        .await
        .unwrap();
    app.otp_verify(&ch, &fake.last_code())
        .await
        .expect_error(403, "account_disabled");
}

/// Every body in `outbound_messages`, and the raw database file and WAL.
async fn outbox_and_raw(app: &TestApp) -> (Vec<String>, Vec<u8>) {
    let bodies = app
        .state
        .db
        .read(|c| {
            let mut s = c.prepare("SELECT body FROM outbound_messages")?;
            let rows = s
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
        .unwrap();
    let dir = app.data_dir.path();
    let mut raw = std::fs::read(dir.join("merchant-admin.db")).unwrap();
    raw.extend(std::fs::read(dir.join("merchant-admin.db-wal")).unwrap_or_default());
    (bodies, raw)
}

/// As a new owner of a new store, invites someone; returns the invite token.
async fn invite_someone(app: &TestApp) -> String {
    let (owner, _) = app.member("owner@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    let r = app
        .call(
            reqwest::Method::POST,
            &format!("/v1/stores/{store}/invites"),
            &owner,
            Some(json!({"email": "new@example.com", "role": "staff"})),
        )
        .await;
    r.expect(201);
    r.body["token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn outbound_messages_keep_no_usable_secret_with_the_cloud_provider() {
    let (app, fake) = cloud_app().await;
    app.with_msgapp(&fake, "ana@example.com").await;
    app.clock.advance(Duration::seconds(60));
    let ch = app.msgapp_challenge("ana@example.com").await;
    app.otp_send(&ch).await.expect(200);
    let invite = invite_someone(&app).await;

    let codes: Vec<String> = fake
        .received
        .lock()
        .unwrap()
        .iter()
        .map(|(_, _, b)| {
            b["template"]["components"][0]["parameters"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(codes.len(), 2, "the enable code and the sign-in code");
    let (bodies, raw) = outbox_and_raw(&app).await;
    for body in &bodies {
        assert!(!body.contains(&invite), "invite token kept: {body}");
        for code in &codes {
            assert!(!body.contains(code.as_str()), "code kept: {body}");
        }
    }
    assert!(
        !raw.windows(invite.len()).any(|w| w == invite.as_bytes()),
        "invite token in the database file"
    );
    // The invite itself still works: its link was handed to the inviter.
    app.otp_verify(&ch, &fake.last_code()).await.expect(200);
    app.post_json(
        &format!("/v1/invites/{invite}/accept"),
        &json!({"password": "a good new password"}),
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn outbound_messages_the_log_provider_left_are_blanked_on_a_start_with_cloud() {
    let app = spawn_app().await;
    let invite = invite_someone(&app).await;
    let (bodies, _) = outbox_and_raw(&app).await;
    assert!(
        bodies.iter().any(|b| b.contains(&invite)),
        "the log provider shows the link for `dev outbox`"
    );
    let now = app.clock_now();
    let (stopped, dir) = app.stop().await;
    stopped.unwrap();

    let (_fake, addr) = start_fake().await;
    let app = crate::support::spawn_app_at(dir, now, move |c| {
        c.msgapp = crate::support::msgapp::cloud_config(addr);
    })
    .await;
    let (bodies, raw) = outbox_and_raw(&app).await;
    assert_eq!(bodies.len(), 1, "the row stays, without its secret");
    assert!(!bodies[0].contains(&invite), "{}", bodies[0]);
    assert!(
        !raw.windows(invite.len()).any(|w| w == invite.as_bytes()),
        "invite token in the database file"
    );
}
