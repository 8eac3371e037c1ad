//! The messaging-app channel of the inbox (issue 15; spec 2.8, 3 "Message delivery", 4.8,
//! 6.2, 7): the provider's webhook and the team's replies through the Cloud API fake.

use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use merchant_admin::inbox::msgapp_channel::SEND_ATTEMPTS;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::support::msgapp::{Fake, cloud_app};
use crate::support::{Reply, TestApp, Ws, patch, post, spawn_app};

const APP_SECRET: &str = "app-secret-1";
const VERIFY_TOKEN: &str = "verify-me-1";
/// The channel's own number at the provider (the config's sign-in number is `100000000001`).
const NUMBER_ID: &str = "106540352242922";
/// The contact, as the provider names them (`wa_id`) and as the inbox shows them.
const WA_ID: &str = "5511987654321";
const PHONE: &str = "+5511987654321";

/// A store with a messaging-app channel.
struct Chan {
    owner: String,
    store_id: String,
    /// `/v1/stores/{id}`.
    p: String,
    channel_id: String,
    /// `/v1/channels/msgapp/{id}/webhook`.
    hook: String,
}

async fn channel(app: &TestApp, email: &str, secret: &str) -> Chan {
    // A number serves one channel: another store's channel has its own.
    let number = if email == "owner@example.com" {
        NUMBER_ID
    } else {
        "106540352242999"
    };
    let (owner, _) = app.member(email).await;
    let store_id = app.open_store(&owner, email).await;
    let p = format!("/v1/stores/{store_id}");
    let r = app
        .call(
            post(),
            &format!("{p}/channels"),
            &owner,
            Some(json!({"kind": "msgapp", "name": "Messaging app",
                        "settings": {"phone_number_id": number, "app_secret": secret,
                                     "verify_token": VERIFY_TOKEN}})),
        )
        .await;
    r.expect(201);
    let channel_id = r.body["id"].as_str().unwrap().to_owned();
    Chan {
        hook: format!("/v1/channels/msgapp/{channel_id}/webhook"),
        owner,
        store_id,
        p,
        channel_id,
    }
}

/// `sha256=<hex HMAC-SHA256 of body>`, as the provider signs.
fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

/// POSTs `body` to the webhook with `signature` (None: no header).
async fn post_raw(app: &TestApp, hook: &str, body: &[u8], signature: Option<&str>) -> Reply {
    let mut req = app
        .client
        .post(app.url(hook))
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(s) = signature {
        req = req.header("x-hub-signature-256", s);
    }
    app.send(req).await
}

/// Delivers `payload` signed with the channel's app secret, and expects 200.
async fn deliver(app: &TestApp, c: &Chan, payload: &Value) {
    let body = payload.to_string();
    post_raw(
        app,
        &c.hook,
        body.as_bytes(),
        Some(&sign(APP_SECRET, body.as_bytes())),
    )
    .await
    .expect(200);
}

/// The Cloud API envelope around one `messages` change.
fn change(value: Value) -> Value {
    let mut value = value;
    value["messaging_product"] = json!("whatsapp");
    value["metadata"] =
        json!({"display_phone_number": "15550001111", "phone_number_id": NUMBER_ID});
    json!({"object": "whatsapp_business_account",
           "entry": [{"id": "WABA-1", "changes": [{"field": "messages", "value": value}]}]})
}

/// A text message from the contact, sent at `at`.
fn text_from(from: &str, id: &str, at: DateTime<Utc>, text: &str) -> Value {
    change(json!({
        "contacts": [{"profile": {"name": "Ana Souza"}, "wa_id": from}],
        "messages": [{"from": from, "id": id, "timestamp": at.timestamp().to_string(),
                      "type": "text", "text": {"body": text}}],
    }))
}

/// A delivery status of the store's message `id`.
fn status_of(id: &str, status: &str, at: DateTime<Utc>) -> Value {
    let mut s = json!({"id": id, "status": status, "timestamp": at.timestamp().to_string(),
                       "recipient_id": WA_ID});
    if status == "failed" {
        s["errors"] = json!([{"code": 131_026, "title": "Message undeliverable"}]);
    }
    change(json!({"statuses": [s]}))
}

async fn agent(app: &TestApp, c: &Chan) -> Ws {
    let mut ws = app.team_socket(&c.owner, &c.store_id).await;
    assert_eq!(ws.next().await.unwrap()["type"], "hello");
    ws
}

/// The next frame that is not presence.
async fn next_event(ws: &mut Ws) -> Value {
    loop {
        let f = ws.next().await.expect("socket open");
        if f["type"] != "presence" {
            return f;
        }
    }
}

/// The store's conversations (inbox rows), newest activity first.
async fn conversations(app: &TestApp, c: &Chan) -> Vec<Value> {
    let r = app
        .get_as(&format!("{}/conversations", c.p), &c.owner)
        .await;
    r.expect(200);
    r.body["data"].as_array().unwrap().clone()
}

/// A conversation's messages, oldest first.
async fn messages(app: &TestApp, c: &Chan, conversation: &str) -> Vec<Value> {
    let r = app
        .get_as(
            &format!("{}/conversations/{conversation}/messages", c.p),
            &c.owner,
        )
        .await;
    r.expect(200);
    let mut list = r.body["data"].as_array().unwrap().clone();
    list.reverse();
    list
}

async fn reply(app: &TestApp, c: &Chan, conversation: &str, text: &str) -> Reply {
    app.call(
        post(),
        &format!("{}/conversations/{conversation}/messages", c.p),
        &c.owner,
        Some(json!({"text": text})),
    )
    .await
}

fn at(app: &TestApp) -> DateTime<Utc> {
    app.clock_now()
}

fn rfc3339(t: DateTime<Utc>) -> String {
    merchant_admin::time::format(t)
}

#[tokio::test]
async fn the_verification_handshake_echoes_the_challenge_for_the_verify_token_only() {
    let app = spawn_app().await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    let verify = |mode: &str, token: &str| {
        format!(
            "{}?hub.mode={mode}&hub.verify_token={token}&hub.challenge=1158201444",
            c.hook
        )
    };

    let ok = app.get(&verify("subscribe", VERIFY_TOKEN)).await;
    ok.expect(200);
    assert_eq!(ok.text, "1158201444");
    assert!(
        ok.header("content-type").unwrap().starts_with("text/plain"),
        "{:?}",
        ok.headers
    );

    app.get(&verify("subscribe", "wrong-token"))
        .await
        .expect_error(403, "forbidden");
    app.get(&verify("unsubscribe", VERIFY_TOKEN))
        .await
        .expect_error(403, "forbidden");
    app.get(&format!("{}?hub.challenge=1", c.hook))
        .await
        .expect_error(403, "forbidden");

    // Only a messaging-app channel has this webhook: a chat channel's id, an unknown id and
    // a malformed one are all 404.
    let key = app.chat_channel(&c.owner, &c.p, json!([])).await;
    let chat = app
        .get_as(&format!("{}/channels", c.p), &c.owner)
        .await
        .body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|ch| ch["key"] == key.as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for id in [
        chat.as_str(),
        "0195f3a0-0000-7000-8000-000000000000",
        "not-an-id",
    ] {
        app.get(&format!(
            "/v1/channels/msgapp/{id}/webhook?hub.mode=subscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=1"
        ))
        .await
        .expect_error(404, "not_found");
    }

    // A channel turned off does not subscribe.
    app.call(
        patch(),
        &format!("{}/channels/{}", c.p, c.channel_id),
        &c.owner,
        Some(json!({"enabled": false})),
    )
    .await
    .expect(200);
    app.get(&verify("subscribe", VERIFY_TOKEN))
        .await
        .expect_error(403, "forbidden");
}

#[tokio::test]
async fn unsigned_or_wrongly_signed_deliveries_are_refused_and_store_nothing() {
    let app = spawn_app().await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    let other = channel(&app, "other@example.com", "other-store-secret").await;
    let body = text_from(WA_ID, "wamid.A1", at(&app), "hello").to_string();
    let b = body.as_bytes();

    let right = sign(APP_SECRET, b);
    let tampered = text_from(WA_ID, "wamid.A1", at(&app), "hello!").to_string();
    for signature in [
        None,
        Some("sha256=".to_owned()),
        Some("sha256=zz".to_owned()),
        Some(right.replace("sha256=", "sha1=")),
        Some(right[..right.len() - 2].to_owned()),
        // Signed with another secret (another store's channel, here).
        Some(sign("other-store-secret", b)),
        // The signature of another body.
        Some(sign(APP_SECRET, tampered.as_bytes())),
    ] {
        post_raw(&app, &c.hook, b, signature.as_deref())
            .await
            .expect_error(401, "unauthorized");
    }
    // A body signed for one store's channel does not go into another store's.
    post_raw(&app, &other.hook, b, Some(&right))
        .await
        .expect_error(401, "unauthorized");
    // Past the body limit: 413 with the error shape, before any parsing.
    let big = vec![b' '; 1024 * 1024 + 1];
    post_raw(&app, &c.hook, &big, Some(&sign(APP_SECRET, &big)))
        .await
        .expect_error(413, "payload_too_large");
    // Signed but not JSON: refused, nothing stored.
    post_raw(
        &app,
        &c.hook,
        b"{not json",
        Some(&sign(APP_SECRET, b"{not json")),
    )
    .await
    .expect_error(400, "bad_request");

    assert_eq!(app.count("SELECT COUNT(*) FROM conversations").await, 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM messages").await, 0);

    // The same bytes, rightly signed, are taken.
    post_raw(&app, &c.hook, b, Some(&right)).await.expect(200);
    assert_eq!(app.count("SELECT COUNT(*) FROM messages").await, 1);
}

#[tokio::test]
async fn contact_messages_open_one_conversation_per_contact_and_reach_the_team_live() {
    let app = spawn_app().await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    // The contact is a customer of the store: the conversation is linked to them.
    let customer = app
        .call(
            post(),
            &format!("{}/customers", c.p),
            &c.owner,
            Some(json!({"name": "Ana S.", "phone": PHONE})),
        )
        .await;
    customer.expect(201);
    let mut team = agent(&app, &c).await;

    let sent_at = at(&app) - Duration::minutes(5);
    deliver(
        &app,
        &c,
        &text_from(WA_ID, "wamid.A1", sent_at, "Oi, tem em estoque?"),
    )
    .await;
    let new = next_event(&mut team).await;
    assert_eq!(new["type"], "conversation:new", "{new}");
    assert_eq!(new["data"]["display_name"], "Ana Souza");
    assert_eq!(new["data"]["channel_kind"], "msgapp");
    assert_eq!(new["data"]["contact"]["phone"], PHONE);
    assert_eq!(new["data"]["customer_id"], customer.body["id"]);
    assert_eq!(new["data"]["customer_name"], "Ana S.");
    let conversation = new["conversation_id"].as_str().unwrap().to_owned();
    let msg = next_event(&mut team).await;
    assert_eq!(msg["type"], "message:new");
    assert_eq!(msg["conversation_id"], conversation.as_str());
    assert_eq!(msg["data"]["sender"], "visitor");
    assert_eq!(msg["data"]["text"], "Oi, tem em estoque?");
    assert_eq!(msg["data"]["external_id"], "wamid.A1");
    let updated = next_event(&mut team).await;
    assert_eq!(updated["type"], "conversation:updated");
    assert_eq!(
        updated["data"]["reply_window_expires_at"],
        rfc3339(sent_at + Duration::hours(24)),
        "24 h from the message's own time"
    );

    // Over REST: the conversation waits for the team, with the message.
    let rows = conversations(&app, &c).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], conversation.as_str());
    assert_eq!(rows[0]["status"], "open");
    assert_eq!(rows[0]["unread_for_agents"], 1);
    let list = messages(&app, &c, &conversation).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["external_id"], "wamid.A1");

    // The same contact again: the same conversation, announced no more.
    deliver(&app, &c, &text_from(WA_ID, "wamid.A2", at(&app), "Alô?")).await;
    let again = next_event(&mut team).await;
    assert_eq!(again["type"], "message:new", "{again}");
    assert_eq!(again["conversation_id"], conversation.as_str());
    assert_eq!(next_event(&mut team).await["type"], "conversation:updated");

    // A repeated delivery (same provider id) stores and pushes nothing: the next frame the
    // team gets is the following message's.
    deliver(&app, &c, &text_from(WA_ID, "wamid.A2", at(&app), "Alô?")).await;
    deliver(&app, &c, &text_from(WA_ID, "wamid.A3", at(&app), "third")).await;
    let third = next_event(&mut team).await;
    assert_eq!(third["type"], "message:new");
    assert_eq!(third["data"]["external_id"], "wamid.A3");
    assert_eq!(next_event(&mut team).await["type"], "conversation:updated");
    assert_eq!(messages(&app, &c, &conversation).await.len(), 3);

    // Another contact gets their own conversation.
    deliver(
        &app,
        &c,
        &text_from("14155550123", "wamid.B1", at(&app), "hi"),
    )
    .await;
    assert_eq!(next_event(&mut team).await["type"], "conversation:new");
    assert_eq!(conversations(&app, &c).await.len(), 2);

    // Once resolved, the contact's next message opens a new conversation; a late repeat of
    // a message already stored in the resolved one still stores nothing.
    app.call(
        patch(),
        &format!("{}/conversations/{conversation}", c.p),
        &c.owner,
        Some(json!({"status": "resolved"})),
    )
    .await
    .expect(200);
    deliver(
        &app,
        &c,
        &text_from(WA_ID, "wamid.A1", sent_at, "Oi, tem em estoque?"),
    )
    .await;
    assert_eq!(conversations(&app, &c).await.len(), 2);
    deliver(
        &app,
        &c,
        &text_from(WA_ID, "wamid.A4", at(&app), "back again"),
    )
    .await;
    let rows = conversations(&app, &c).await;
    assert_eq!(rows.len(), 3);
    assert_ne!(rows[0]["id"], conversation.as_str());
    assert_eq!(rows[0]["contact"]["phone"], PHONE);
    let old = app
        .get_as(&format!("{}/conversations/{conversation}", c.p), &c.owner)
        .await;
    assert_eq!(old.body["status"], "resolved");
    assert_eq!(messages(&app, &c, &conversation).await.len(), 3);
}

#[tokio::test]
async fn a_delivery_carries_many_changes_and_skips_what_is_not_for_the_channel() {
    let app = spawn_app().await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    let now = at(&app);
    let mut for_other_number = text_from(WA_ID, "wamid.X1", now, "not ours");
    for_other_number["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] =
        json!("ANOTHER-NUMBER");
    let payload = json!({"object": "whatsapp_business_account", "entry": [
        {"id": "WABA-1", "changes": [
            {"field": "account_update", "value": {"event": "VERIFIED_ACCOUNT"}},
            for_other_number["entry"][0]["changes"][0].clone(),
            change(json!({
                "contacts": [{"profile": {"name": "Ana"}, "wa_id": WA_ID}],
                "messages": [
                    {"from": WA_ID, "id": "wamid.M1", "timestamp": now.timestamp().to_string(),
                     "type": "image", "image": {"id": "media-1", "mime_type": "image/jpeg"}},
                    {"from": WA_ID, "id": "wamid.M2", "timestamp": now.timestamp().to_string(),
                     "type": "interactive",
                     "interactive": {"type": "button_reply",
                                     "button_reply": {"id": "b1", "title": "Yes please"}}},
                    {"from": "not-a-number", "id": "wamid.M3",
                     "timestamp": now.timestamp().to_string(), "type": "text",
                     "text": {"body": "dropped"}},
                ],
                "statuses": [{"id": "wamid.unknown", "status": "delivered",
                              "timestamp": now.timestamp().to_string(),
                              "recipient_id": WA_ID}],
            }))["entry"][0]["changes"][0].clone(),
        ]}
    ]});
    deliver(&app, &c, &payload).await;
    let rows = conversations(&app, &c).await;
    assert_eq!(rows.len(), 1, "one contact, one conversation");
    let texts: Vec<Value> = messages(&app, &c, rows[0]["id"].as_str().unwrap())
        .await
        .iter()
        .map(|m| m["text"].clone())
        .collect();
    assert_eq!(
        texts,
        vec![
            json!("[unsupported message type: image]"),
            json!("Yes please")
        ]
    );

    // A channel turned off takes signed deliveries (so the provider stops retrying) and
    // drops them.
    app.call(
        patch(),
        &format!("{}/channels/{}", c.p, c.channel_id),
        &c.owner,
        Some(json!({"enabled": false})),
    )
    .await
    .expect(200);
    deliver(&app, &c, &text_from(WA_ID, "wamid.M9", now, "anyone?")).await;
    assert_eq!(app.count("SELECT COUNT(*) FROM messages").await, 2);
}

#[tokio::test]
async fn replies_are_taken_within_24_hours_of_the_contact_message_time_only() {
    let app = spawn_app().await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    // Sent an hour before it arrived: the window closes 23 hours from now.
    let sent_at = at(&app) - Duration::hours(1);
    deliver(&app, &c, &text_from(WA_ID, "wamid.W1", sent_at, "hello")).await;
    let conversation = conversations(&app, &c).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let closes = rfc3339(sent_at + Duration::hours(24));
    let ok = reply(&app, &c, &conversation, "Hi! How can we help?").await;
    ok.expect(201);
    assert_eq!(ok.body["conversation"]["reply_window_expires_at"], closes);

    app.clock
        .advance(Duration::hours(23) - Duration::seconds(1));
    reply(&app, &c, &conversation, "still open")
        .await
        .expect(201);
    app.clock.advance(Duration::seconds(1));
    let closed = reply(&app, &c, &conversation, "too late").await;
    closed.expect_error(422, "msgapp_window_closed");
    assert_eq!(closed.body["details"]["window_expired_at"], closes);
    assert_eq!(
        messages(&app, &c, &conversation).await.len(),
        3,
        "nothing stored"
    );

    // A message delivered late (sent 30 hours ago) neither reopens nor moves the window.
    let late = at(&app) - Duration::hours(30);
    deliver(
        &app,
        &c,
        &text_from(WA_ID, "wamid.W0", late, "from yesterday"),
    )
    .await;
    let r = reply(&app, &c, &conversation, "hello?").await;
    r.expect_error(422, "msgapp_window_closed");
    assert_eq!(r.body["details"]["window_expired_at"], closes);

    // A fresh message opens it again.
    deliver(
        &app,
        &c,
        &text_from(WA_ID, "wamid.W2", at(&app), "are you there?"),
    )
    .await;
    reply(&app, &c, &conversation, "Yes!").await.expect(201);
    app.settled().await;
    assert_eq!(messages(&app, &c, &conversation).await.len(), 6);

    // A new contact whose only message was delayed past 24 hours cannot be answered freely.
    deliver(
        &app,
        &c,
        &text_from(
            "14155550123",
            "wamid.V1",
            at(&app) - Duration::hours(25),
            "old",
        ),
    )
    .await;
    let stale = conversations(&app, &c)
        .await
        .into_iter()
        .find(|r| r["contact"]["phone"] == "+14155550123")
        .unwrap();
    reply(&app, &c, stale["id"].as_str().unwrap(), "hi")
        .await
        .expect_error(422, "msgapp_window_closed");
}

/// The Cloud API app, the channel and one contact conversation; the agent socket.
async fn cloud_conversation() -> (TestApp, Fake, Chan, String, Ws) {
    let (app, fake) = cloud_app().await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    deliver(&app, &c, &text_from(WA_ID, "wamid.C1", at(&app), "hello")).await;
    let conversation = conversations(&app, &c).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let team = agent(&app, &c).await;
    (app, fake, c, conversation, team)
}

#[tokio::test]
async fn replies_go_out_through_the_provider_and_its_statuses_move_them_forward() {
    let (app, fake, c, conversation, mut team) = cloud_conversation().await;
    let r = reply(&app, &c, &conversation, "Yes, it is in stock.").await;
    r.expect(201);
    assert_eq!(r.body["message"]["delivery_status"], "sent");
    let id = r.body["message"]["id"].as_str().unwrap().to_owned();
    app.settled().await;

    let received = fake.received.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    let (number, auth, body) = &received[0];
    assert_eq!(number, NUMBER_ID, "sent from the channel's own number");
    assert_eq!(auth, "Bearer cloud-token");
    assert_eq!(
        body,
        &json!({"messaging_product": "whatsapp", "to": WA_ID, "type": "text",
                "text": {"body": "Yes, it is in stock."}})
    );
    let stored = messages(&app, &c, &conversation).await;
    let mine = stored.iter().find(|m| m["id"] == id.as_str()).unwrap();
    assert_eq!(mine["external_id"], "wamid.fake1");
    assert_eq!(mine["delivery_status"], "sent");

    // Delivered, then read: each pushes message:updated.
    while next_event(&mut team).await["type"] != "conversation:updated" {}
    deliver(&app, &c, &status_of("wamid.fake1", "delivered", at(&app))).await;
    let d = next_event(&mut team).await;
    assert_eq!(d["type"], "message:updated", "{d}");
    assert_eq!(d["data"]["id"], id.as_str());
    assert_eq!(d["data"]["delivery_status"], "delivered");
    let read_at = at(&app) + Duration::seconds(1);
    app.clock.advance(Duration::seconds(5));
    deliver(&app, &c, &status_of("wamid.fake1", "read", read_at)).await;
    let rd = next_event(&mut team).await;
    assert_eq!(rd["type"], "message:updated");
    assert_eq!(rd["data"]["delivery_status"], "read");
    assert_eq!(rd["data"]["read_at"], rfc3339(read_at));

    // Late or repeated statuses never move it back, and push nothing; unknown ids are
    // ignored. The next frame is the next message's.
    for late in ["delivered", "sent", "failed", "read"] {
        deliver(&app, &c, &status_of("wamid.fake1", late, at(&app))).await;
    }
    deliver(&app, &c, &status_of("wamid.nobody", "read", at(&app))).await;
    deliver(&app, &c, &text_from(WA_ID, "wamid.C2", at(&app), "thanks")).await;
    assert_eq!(next_event(&mut team).await["type"], "message:new");
    let stored = messages(&app, &c, &conversation).await;
    let mine = stored.iter().find(|m| m["id"] == id.as_str()).unwrap();
    assert_eq!(mine["delivery_status"], "read");
    assert_eq!(mine["delivery_error"], Value::Null);

    // A failure reported by the provider marks the message failed, with why.
    reply(&app, &c, &conversation, "second").await.expect(201);
    app.settled().await;
    deliver(&app, &c, &status_of("wamid.fake2", "failed", at(&app))).await;
    let f = loop {
        let f = next_event(&mut team).await;
        if f["type"] == "message:updated" {
            break f;
        }
    };
    assert_eq!(f["data"]["delivery_status"], "failed");
    assert_eq!(
        f["data"]["delivery_error"],
        "(#131026) Message undeliverable"
    );
}

#[tokio::test]
async fn a_reply_the_provider_refuses_is_kept_and_marked_failed() {
    let (app, fake, c, conversation, mut team) = cloud_conversation().await;
    fake.answer(StatusCode::BAD_REQUEST);
    let r = reply(&app, &c, &conversation, "Are you still there?").await;
    r.expect(201);
    let id = r.body["message"]["id"].as_str().unwrap().to_owned();
    let failed = loop {
        let f = next_event(&mut team).await;
        if f["type"] == "message:updated" {
            break f;
        }
    };
    assert_eq!(failed["data"]["id"], id.as_str());
    assert_eq!(failed["data"]["delivery_status"], "failed");
    let why = failed["data"]["delivery_error"].as_str().unwrap();
    assert!(why.contains("400") && why.contains("131047"), "{why}");
    app.settled().await;
    assert_eq!(fake.count(), 1, "a refusal is not retried");
    // Never lost: the reply stays in the conversation.
    let stored = messages(&app, &c, &conversation).await;
    let mine = stored.iter().find(|m| m["id"] == id.as_str()).unwrap();
    assert_eq!(mine["text"], "Are you still there?");
    assert_eq!(mine["delivery_status"], "failed");
    assert_eq!(mine["external_id"], Value::Null);
}

#[tokio::test]
async fn a_reply_is_retried_after_provider_outages_and_failed_after_the_last_attempt() {
    let (app, fake, c, conversation, mut team) = cloud_conversation().await;
    let retry = || async {
        app.clock.advance(Duration::hours(1));
        app.settled().await;
    };

    // Down twice, then up: sent on the third attempt, with the provider's id.
    fake.answer(StatusCode::SERVICE_UNAVAILABLE);
    let first = reply(&app, &c, &conversation, "one").await;
    first.expect(201);
    app.settled().await;
    assert_eq!(fake.count(), 1);
    retry().await;
    assert_eq!(fake.count(), 2);
    fake.answer(StatusCode::OK);
    retry().await;
    assert_eq!(fake.count(), 3);
    let stored = messages(&app, &c, &conversation).await;
    let one = stored
        .iter()
        .find(|m| m["id"] == first.body["message"]["id"])
        .unwrap();
    assert_eq!(one["external_id"], "wamid.fake3");
    assert_eq!(one["delivery_status"], "sent");

    // Down for good: every attempt is made, then the reply is marked failed.
    fake.answer(StatusCode::SERVICE_UNAVAILABLE);
    deliver(&app, &c, &text_from(WA_ID, "wamid.C2", at(&app), "hello?")).await;
    let second = reply(&app, &c, &conversation, "two").await;
    second.expect(201);
    app.settled().await;
    for _ in 1..SEND_ATTEMPTS {
        let stored = messages(&app, &c, &conversation).await;
        let two = stored
            .iter()
            .find(|m| m["id"] == second.body["message"]["id"])
            .unwrap();
        assert_eq!(two["delivery_status"], "sent", "still being retried");
        retry().await;
    }
    assert_eq!(fake.count(), 3 + SEND_ATTEMPTS as usize);
    let failed = loop {
        let f = next_event(&mut team).await;
        if f["type"] == "message:updated" {
            break f;
        }
    };
    assert_eq!(failed["data"]["id"], second.body["message"]["id"]);
    assert_eq!(failed["data"]["delivery_status"], "failed");
    assert!(
        failed["data"]["delivery_error"]
            .as_str()
            .unwrap()
            .contains("503"),
        "{failed}"
    );
    retry().await;
    assert_eq!(fake.count(), 3 + SEND_ATTEMPTS as usize, "no more attempts");
}

#[tokio::test]
async fn with_the_log_provider_replies_are_recorded_locally() {
    let app = spawn_app().await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    deliver(&app, &c, &text_from(WA_ID, "wamid.L1", at(&app), "hello")).await;
    let conversation = conversations(&app, &c).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = reply(&app, &c, &conversation, "logged reply").await;
    r.expect(201);
    app.settled().await;
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM outbound_messages
             WHERE template = 'inbox_reply' AND recipient = '+5511987654321'
               AND body = 'logged reply'"
        )
        .await,
        1
    );
    let stored = messages(&app, &c, &conversation).await;
    assert!(
        stored[1]["external_id"]
            .as_str()
            .unwrap()
            .starts_with("log."),
        "{}",
        stored[1]
    );
}

#[tokio::test]
async fn a_number_serves_one_channel_and_never_the_servers_sign_in_number() {
    let (app, _fake) = cloud_app().await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    let (thief, _) = app.member("thief@example.com").await;
    let store = app.open_store(&thief, "Thief").await;
    let sign_in = match &app.state.cfg.msgapp {
        merchant_admin::config::MsgappConfig::Cloud {
            phone_number_id, ..
        } => phone_number_id.clone(),
        merchant_admin::config::MsgappConfig::Log => unreachable!("a cloud server"),
    };
    for number in [NUMBER_ID.to_owned(), sign_in] {
        app.call(
            post(),
            &format!("/v1/stores/{store}/channels"),
            &thief,
            Some(json!({"kind": "msgapp", "name": "Mine",
                        "settings": {"phone_number_id": number, "app_secret": "a", "verify_token": "v"}})),
        )
        .await
        .expect_error(422, "validation_failed");
    }
    // The channel that has it may say it again.
    app.call(
        patch(),
        &format!("{}/channels/{}", c.p, c.channel_id),
        &c.owner,
        Some(json!({"settings": {"phone_number_id": NUMBER_ID}})),
    )
    .await
    .expect(200);
}

/// A team member verifies their phone for the assistant (a code over the messaging app);
/// from then on that phone's messages on the store's channel are assistant turns, not inbox
/// conversations: answered on the messaging app, each proposal with "reply YES or NO", and
/// a YES approves it. A repeated delivery runs no second turn.
#[tokio::test]
async fn a_verified_phone_talks_to_the_assistant_and_approves_with_a_yes() {
    use crate::support::model::{FakeModel, call, text};
    let model = FakeModel::start().await;
    let (fake, addr) = crate::support::msgapp::start_fake().await;
    let base = model.base.clone();
    let app = crate::support::spawn_app_with(move |c| {
        c.msgapp = crate::support::msgapp::cloud_config(addr);
        c.assistant = Some(merchant_admin::assistant::provider::ModelConfig::new(
            &base, "m",
        ));
    })
    .await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    let product = app
        .call(
            post(),
            &format!("{}/products", c.p),
            &c.owner,
            Some(json!({"title": "Tee", "variants": [{"sku": "T", "price_cents": 1000}]})),
        )
        .await;
    product.expect(201);
    let variant = product.body["variants"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Verification: a well-formed number, a code sent to it, 422 for a wrong one.
    let phones = format!("{}/assistant/phones", c.p);
    // A phone acts with the user's whole role: a store API token may not add one.
    let token = app
        .store_token(&c.owner, &c.store_id, json!(["assistant.use"]))
        .await;
    app.call(post(), &phones, &token, Some(json!({"phone_e164": PHONE})))
        .await
        .expect_error(403, "forbidden");
    app.call(
        post(),
        &phones,
        &c.owner,
        Some(json!({"phone_e164": "5511"})),
    )
    .await
    .expect_error(422, "validation_failed");
    fake.answer(StatusCode::INTERNAL_SERVER_ERROR);
    app.call(
        post(),
        &phones,
        &c.owner,
        Some(json!({"phone_e164": PHONE})),
    )
    .await
    .expect_error(502, "msgapp_send_failed");
    fake.answer(StatusCode::OK);
    let r = app
        .call(
            post(),
            &phones,
            &c.owner,
            Some(json!({"phone_e164": PHONE})),
        )
        .await;
    r.expect(200);
    assert_eq!(
        r.body,
        json!({"phone_e164": PHONE, "expires_in_seconds": 300})
    );
    let code = fake.last_code();
    let wrong = if code == "000000" { "000001" } else { "000000" };
    let verify = format!("{phones}/verify");
    app.call(post(), &verify, &c.owner, Some(json!({"code": wrong})))
        .await
        .expect_error(422, "invalid_verification_code");
    let r = app
        .call(post(), &verify, &c.owner, Some(json!({"code": code})))
        .await;
    r.expect(200);
    assert_eq!(r.body["phone_e164"], PHONE);
    // Codes are sent at most five times an hour (two were sent above).
    let (other, other_id) = app.member("staff@example.com").await;
    app.add_to_store(&c.store_id, &other_id, "admin").await;
    for _ in 0..5 {
        app.call(
            post(),
            &phones,
            &other,
            Some(json!({"phone_e164": "+5511900000001"})),
        )
        .await
        .expect(200);
    }
    let r = app
        .call(
            post(),
            &phones,
            &other,
            Some(json!({"phone_e164": "+5511900000001"})),
        )
        .await;
    r.expect_error(429, "rate_limited");
    assert!(r.body["details"]["retry_after_seconds"].as_i64().unwrap() > 0);
    // A number another member verified is theirs.
    app.call(post(), &phones, &other, Some(json!({"phone_e164": PHONE})))
        .await
        .expect_error(429, "rate_limited");
    app.clock.advance(Duration::hours(1));
    app.call(post(), &phones, &other, Some(json!({"phone_e164": PHONE})))
        .await
        .expect(200);
    let stolen = fake.last_code();
    app.call(post(), &verify, &other, Some(json!({"code": stolen})))
        .await
        .expect_error(409, "conflict");
    let sent_before = fake.count();

    // A message from that phone is an assistant turn, answered on the messaging app.
    model.answer(vec![
        text("Sure."),
        call(
            "change_price",
            json!({"variant_id": variant, "price_cents": 1500}),
        ),
    ]);
    let ask = text_from(WA_ID, "wamid.A1", at(&app), "make the tee 15");
    deliver(&app, &c, &ask).await;
    deliver(&app, &c, &ask).await; // the provider repeats itself
    crate::support::wait_until("the assistant's reply", || async {
        fake.count() > sent_before
    })
    .await;
    let reply = fake.received.lock().unwrap().last().unwrap().2.clone();
    assert_eq!(reply["to"], WA_ID);
    let body = reply["text"]["body"].as_str().unwrap().to_owned();
    assert!(body.starts_with("Sure."), "{body}");
    let code = body
        .split("Reply YES ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a code to approve with")
        .to_owned();
    assert!(
        body.contains(&format!("to approve or NO {code} to decline")),
        "{body}"
    );
    assert!(
        conversations(&app, &c).await.is_empty(),
        "not an inbox conversation"
    );

    // A bare "yes" names no proposal: it is a message like any other.
    model.answer(vec![text("Which one? Use its code.")]);
    deliver(&app, &c, &text_from(WA_ID, "wamid.A2", at(&app), "yes")).await;
    crate::support::wait_until("the answer to a bare yes", || async {
        fake.count() > sent_before + 1
    })
    .await;
    let product_path = format!("{}/products/{}", c.p, product.body["id"].as_str().unwrap());
    assert_eq!(
        app.get_as(&product_path, &c.owner).await.body["variants"][0]["price_cents"],
        1000
    );

    // YES and the code approve that proposal; the follow-up is sent back.
    model.answer(vec![text("Done, it costs 15 now.")]);
    let yes = format!("Yes {}", code.to_lowercase());
    deliver(&app, &c, &text_from(WA_ID, "wamid.A3", at(&app), &yes)).await;
    crate::support::wait_until("the approval's reply", || async {
        fake.count() > sent_before + 2
    })
    .await;
    let body = fake.received.lock().unwrap().last().unwrap().2["text"]["body"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(body.contains("Applied.") && body.contains("Done"), "{body}");
    let p = app
        .get_as(
            &format!("{}/products/{}", c.p, product.body["id"].as_str().unwrap()),
            &c.owner,
        )
        .await;
    assert_eq!(p.body["variants"][0]["price_cents"], 1500);
    assert_eq!(
        model.requests().len(),
        3,
        "one turn per message, the repeat ran none"
    );
}

/// While the organization's subscription is suspended, a verified phone's message gets a
/// short text saying the assistant is paused (issue 17): no turn, nothing counted.
#[tokio::test]
async fn a_phone_hears_the_assistant_is_paused_while_the_subscription_is_suspended() {
    use crate::support::model::FakeModel;
    let model = FakeModel::start().await;
    let (fake, addr) = crate::support::msgapp::start_fake().await;
    let base = model.base.clone();
    let app = crate::support::spawn_app_with(move |c| {
        c.msgapp = crate::support::msgapp::cloud_config(addr);
        c.assistant = Some(merchant_admin::assistant::provider::ModelConfig::new(
            &base, "m",
        ));
    })
    .await;
    let c = channel(&app, "owner@example.com", APP_SECRET).await;
    let phones = format!("{}/assistant/phones", c.p);
    app.call(
        post(),
        &phones,
        &c.owner,
        Some(json!({"phone_e164": PHONE})),
    )
    .await
    .expect(200);
    let code = fake.last_code();
    app.call(
        post(),
        &format!("{phones}/verify"),
        &c.owner,
        Some(json!({"code": code})),
    )
    .await
    .expect(200);
    let store = c.store_id.clone();
    app.state
        .db
        .write(move |tx| {
            tx.execute(
                "UPDATE subscriptions SET status = 'suspended'
                 WHERE tenant_id = (SELECT tenant_id FROM stores WHERE id = ?1)",
                [store],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let sent_before = fake.count();
    deliver(&app, &c, &text_from(WA_ID, "wamid.P1", at(&app), "hello")).await;
    crate::support::wait_until("the paused reply", || async { fake.count() > sent_before }).await;
    let reply = fake.received.lock().unwrap().last().unwrap().2.clone();
    assert_eq!(reply["to"], WA_ID);
    assert_eq!(
        reply["text"]["body"],
        "The assistant is paused: the organization's subscription is suspended. \
         An owner can renew it in the back office."
    );
    assert!(model.requests().is_empty(), "the model is not asked");
    let usage = app
        .get_as(&format!("{}/assistant/usage", c.p), &c.owner)
        .await;
    assert_eq!(usage.body["used"], 0);
}
