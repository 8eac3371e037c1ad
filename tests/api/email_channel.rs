//! The e-mail channel of the shared inbox (issue 15): mail in through the inbound-parse
//! route, replies out over SMTP to a receiver in the test process.

use chrono::Duration;
use merchant_admin::jobs::{self, Outcome};
use merchant_admin::mail::SmtpConfig;
use serde_json::{Value, json};

use crate::support::smtp::SmtpReceiver;
use crate::support::{Reply, TestApp, Ws, patch, post, spawn_app_with};

const SECRET: &str = "in-s3cret-value";

/// A store with an e-mail channel, on a server whose replies go to `smtp`. No job workers:
/// the test runs each delivery attempt itself.
struct Inbox {
    app: TestApp,
    owner: String,
    store_id: String,
    p: String,
    channel: String,
    smtp: SmtpReceiver,
}

async fn inbox() -> Inbox {
    inbox_with_smtp(true).await
}

async fn inbox_with_smtp(configured: bool) -> Inbox {
    let smtp = SmtpReceiver::start().await;
    let url = smtp.url();
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.smtp = configured.then(|| SmtpConfig::parse(&url).unwrap());
    })
    .await;
    let (owner, _) = app.member("owner@example.com").await;
    let store_id = app.open_store(&owner, "Org").await;
    let p = format!("/v1/stores/{store_id}");
    let ch = app
        .call(
            post(),
            &format!("{p}/channels"),
            &owner,
            Some(json!({"kind": "email", "name": "Shop support",
                        "settings": {"address": "support@shop.example", "inbound_secret": SECRET}})),
        )
        .await;
    ch.expect(201);
    let channel = ch.body["id"].as_str().unwrap().to_owned();
    Inbox {
        app,
        owner,
        store_id,
        p,
        channel,
        smtp,
    }
}

/// A mail from Ana with Message-ID `<id>`.
fn mail(id: &str) -> Value {
    json!({"from": "Ana Souza <Ana@Example.com>", "to": "support@shop.example",
           "subject": "Where is my order?", "text": "Hi, where is order 12?",
           "message_id": format!("<{id}>")})
}

impl Inbox {
    /// Posts `body` to a channel's inbound route with `secret` in `X-Inbound-Secret`.
    async fn post_to(&self, channel: &str, secret: Option<&str>, body: &Value) -> Reply {
        let mut req = self
            .app
            .client
            .post(
                self.app
                    .url(&format!("/v1/channels/email/{channel}/inbound")),
            )
            .json(body);
        if let Some(s) = secret {
            req = req.header("x-inbound-secret", s);
        }
        self.app.send(req).await
    }

    /// The inbound-parse service delivers `body` to the channel.
    async fn deliver(&self, body: &Value) -> Reply {
        self.post_to(&self.channel, Some(SECRET), body).await
    }

    async fn agent(&self) -> Ws {
        let mut ws = self.app.team_socket(&self.owner, &self.store_id).await;
        assert_eq!(ws.next().await.unwrap()["type"], "hello");
        ws
    }

    /// A conversation's messages, oldest first.
    async fn messages(&self, conversation: &str) -> Vec<Value> {
        let r = self
            .app
            .get_as(
                &format!("{}/conversations/{conversation}/messages", self.p),
                &self.owner,
            )
            .await;
        r.expect(200);
        let mut list = r.body["data"].as_array().unwrap().clone();
        list.reverse();
        list
    }

    async fn reply(&self, conversation: &str, text: &str) -> Reply {
        self.app
            .call(
                post(),
                &format!("{}/conversations/{conversation}/messages", self.p),
                &self.owner,
                Some(json!({"text": text})),
            )
            .await
    }

    async fn stored(&self) -> (i64, i64) {
        (
            self.app.count("SELECT COUNT(*) FROM conversations").await,
            self.app.count("SELECT COUNT(*) FROM messages").await,
        )
    }

    async fn run_job(&self) -> Outcome {
        jobs::run_once(&self.app.state).await.unwrap()
    }
}

#[tokio::test]
async fn a_missing_or_wrong_secret_is_401_and_stores_nothing() {
    let i = inbox().await;
    let m = mail("m1@example.com");
    for secret in [None, Some("wrong"), Some(""), Some("in-s3cret-valu")] {
        i.post_to(&i.channel, secret, &m)
            .await
            .expect_error(401, "unauthorized");
    }
    // Nor does a bad body get looked at before the secret.
    i.post_to(&i.channel, Some("wrong"), &json!({"from": 1}))
        .await
        .expect_error(401, "unauthorized");
    assert_eq!(i.stored().await, (0, 0));
    i.deliver(&m).await.expect(201);
    assert_eq!(i.stored().await, (1, 1));
}

#[tokio::test]
async fn unknown_channels_and_other_kinds_are_404_and_a_turned_off_channel_403() {
    let i = inbox().await;
    let m = mail("m1@example.com");
    let chat_key = i.app.chat_channel(&i.owner, &i.p, json!([])).await;
    let channels = i.app.get_as(&format!("{}/channels", i.p), &i.owner).await;
    let chat = channels.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == chat_key.as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for channel in [
        chat.as_str(),
        "0190a000-0000-7000-8000-000000000000",
        "not-an-id",
    ] {
        i.post_to(channel, Some(SECRET), &m)
            .await
            .expect_error(404, "not_found");
    }

    i.app
        .call(
            patch(),
            &format!("{}/channels/{}", i.p, i.channel),
            &i.owner,
            Some(json!({"enabled": false})),
        )
        .await
        .expect(200);
    // The secret is still checked first: a stranger learns nothing about the channel.
    i.post_to(&i.channel, Some("wrong"), &m)
        .await
        .expect_error(401, "unauthorized");
    i.deliver(&m).await.expect_error(403, "forbidden");
    assert_eq!(i.stored().await, (0, 0));
}

#[tokio::test]
async fn a_mail_opens_a_conversation_seen_over_rest_and_on_the_team_socket() {
    let i = inbox().await;
    let customer = i
        .app
        .call(
            post(),
            &format!("{}/customers", i.p),
            &i.owner,
            Some(json!({"name": "Ana Souza", "email": "ana@example.com"})),
        )
        .await;
    customer.expect(201);
    let mut team = i.agent().await;

    let mut m = mail("m1@example.com");
    m["references"] = json!("<r0@example.com>");
    m["spam_score"] = json!(0.1); // fields the service adds are ignored
    let r = i.deliver(&m).await;
    r.expect(201);
    assert_eq!(r.body["duplicate"], false);
    let conversation = r.body["conversation_id"].as_str().unwrap().to_owned();

    let new = team.next_of("conversation:new").await;
    assert_eq!(new["conversation_id"], conversation.as_str());
    assert_eq!(new["data"]["channel_kind"], "email");
    assert_eq!(new["data"]["display_name"], "Ana Souza");
    assert_eq!(
        new["data"]["contact"],
        json!({"name": "Ana Souza", "email": "ana@example.com", "phone": null})
    );
    assert_eq!(new["data"]["customer_id"], customer.body["id"]);
    let msg = team.next_of("message:new").await;
    assert_eq!(msg["data"]["id"], r.body["message_id"]);
    assert_eq!(msg["data"]["sender"], "visitor");
    assert_eq!(msg["data"]["text"], "Hi, where is order 12?");
    assert_eq!(msg["data"]["external_id"], "<m1@example.com>");
    assert_eq!(
        msg["data"]["payload"],
        json!({"subject": "Where is my order?", "to": "support@shop.example",
               "references": ["<r0@example.com>"]})
    );

    let list = i
        .app
        .get_as(
            &format!("{}/conversations?channel_kind=email", i.p),
            &i.owner,
        )
        .await;
    list.expect(200);
    assert_eq!(list.body["data"][0]["id"], conversation.as_str());
    assert_eq!(list.body["data"][0]["unread_for_agents"], 1);
    let messages = i.messages(&conversation).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["external_id"], "<m1@example.com>");
}

#[tokio::test]
async fn replies_thread_by_in_reply_to_and_references_from_the_same_sender_only() {
    let i = inbox().await;
    let first = i.deliver(&mail("m1@example.com")).await;
    first.expect(201);
    let conversation = first.body["conversation_id"].as_str().unwrap();

    let mut by_parent = mail("m2@example.com");
    by_parent["in_reply_to"] = json!("m1@example.com"); // brackets are optional
    let mut by_header = mail("m3@example.com");
    by_header["references"] = json!("<unknown@x.example>\r\n <m2@example.com>");
    let mut by_list = mail("m4@example.com");
    by_list["references"] = json!(["<m1@example.com>", "<other@x.example>"]);
    for m in [by_parent, by_header, by_list] {
        let r = i.deliver(&m).await;
        r.expect(201);
        assert_eq!(r.body["conversation_id"], conversation, "{m}");
    }
    assert_eq!(i.messages(conversation).await.len(), 4);

    // A mail naming no known message, or someone else's, opens a conversation of its own.
    let fresh = i.deliver(&mail("m5@example.com")).await;
    fresh.expect(201);
    assert_ne!(fresh.body["conversation_id"], conversation);
    let mut stranger = mail("m6@example.com");
    stranger["from"] = json!("mallory@evil.example");
    stranger["in_reply_to"] = json!("<m1@example.com>");
    let r = i.deliver(&stranger).await;
    r.expect(201);
    assert_ne!(r.body["conversation_id"], conversation);
    assert_eq!(i.messages(conversation).await.len(), 4);
    assert_eq!(i.stored().await, (3, 6));
}

#[tokio::test]
async fn the_same_message_id_is_stored_once_even_when_delivered_at_once() {
    let i = inbox().await;
    let mut team = i.agent().await;
    let m = mail("dup@example.com");
    let first = i.deliver(&m).await;
    first.expect(201);
    // Again, and again naming a thread it is not in: the same message, nothing new.
    let again = i.deliver(&m).await;
    again.expect(200);
    assert_eq!(again.body["duplicate"], true);
    assert_eq!(again.body["message_id"], first.body["message_id"]);
    assert_eq!(again.body["conversation_id"], first.body["conversation_id"]);
    i.deliver(&mail("other@example.com")).await.expect(201);
    let mut threaded = m.clone();
    threaded["in_reply_to"] = json!("<other@example.com>");
    i.deliver(&threaded).await.expect(200);
    assert_eq!(i.stored().await, (2, 2));

    // Concurrent duplicates: one stores, the others see it stored.
    let m = mail("race@example.com");
    let replies = futures::future::join_all((0..6).map(|_| i.deliver(&m))).await;
    let created = replies.iter().filter(|r| r.status == 201).count();
    let repeated = replies.iter().filter(|r| r.status == 200).count();
    assert_eq!((created, repeated), (1, 5));
    assert_eq!(i.stored().await, (3, 3));

    // The team heard of each stored mail once.
    let mut news = 0;
    loop {
        let f = team.next_of("message:new").await;
        news += 1;
        if f["data"]["external_id"] == "<race@example.com>" {
            break;
        }
    }
    assert_eq!(news, 3);
}

#[tokio::test]
async fn a_bad_mail_is_refused_with_the_field_and_stores_nothing() {
    let i = inbox().await;
    let with = |k: &str, v: Value| {
        let mut m = mail("bad@example.com");
        m[k] = v;
        m
    };
    for (m, field) in [
        (with("from", json!("not an address")), "from"),
        (with("message_id", json!("<a b@x>")), "message_id"),
        (
            with("message_id", json!("<m@x>\r\nBcc: x@evil.example")),
            "message_id",
        ),
        (with("subject", json!("s".repeat(999))), "subject"),
        (with("text", json!(7)), "text"),
        (
            with(
                "attachments",
                json!([{"filename": "a.txt", "content_type": "text/plain",
                                        "content": "***"}]),
            ),
            "attachments[0].content",
        ),
        (
            with(
                "attachments",
                json!([{"content_type": "nonsense", "content": ""}]),
            ),
            "attachments[0].content_type",
        ),
    ] {
        let r = i.deliver(&m).await;
        r.expect_error(422, "validation_failed");
        assert!(r.body["details"]["fields"][field].is_string(), "{}", r.text);
    }
    let mut missing = mail("bad@example.com");
    missing.as_object_mut().unwrap().remove("message_id");
    i.deliver(&missing)
        .await
        .expect_error(422, "validation_failed");
    i.deliver(&with("text", json!("  ")))
        .await
        .expect_error(422, "empty_message");
    let r = i
        .app
        .send(
            i.app
                .client
                .post(
                    i.app
                        .url(&format!("/v1/channels/email/{}/inbound", i.channel)),
                )
                .header("x-inbound-secret", SECRET)
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    r.expect_error(400, "bad_request");
    assert_eq!(i.stored().await, (0, 0));
}

#[tokio::test]
async fn an_html_mail_keeps_its_text_its_files_and_may_be_larger_than_a_json_call() {
    let i = inbox().await;
    let mut m = mail("html@example.com");
    m["text"] = json!("");
    m["html"] = json!("<p>Hello&nbsp;<b>team</b></p><script>x()</script><p>Photo attached</p>");
    let photo = vec![7_u8; 2 * 1024 * 1024]; // over the 1 MiB of an ordinary call
    let b64 = |b: &[u8]| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(b)
    };
    m["attachments"] = json!([
        {"filename": "photo.png", "content_type": "image/png", "content": b64(&photo)},
        {"filename": "note.txt", "content_type": "text/plain; charset=utf-8",
         "content": "aGVs\r\nbG8="},
    ]);
    let r = i.deliver(&m).await;
    r.expect(201);
    let messages = i
        .messages(r.body["conversation_id"].as_str().unwrap())
        .await;
    assert_eq!(messages[0]["text"], "Hello team\n\nPhoto attached");
    let files = &messages[0]["attachments"];
    assert_eq!(files[0]["kind"], "image");
    assert_eq!(files[0]["name"], "photo.png");
    assert_eq!(files[0]["mime_type"], "image/png");
    assert_eq!(files[0]["size"], 2 * 1024 * 1024);
    assert_eq!(files[1]["kind"], "file");
    assert_eq!(files[1]["mime_type"], "text/plain");
    assert_eq!(files[1]["size"], 5);
    let data: Vec<u8> = i
        .app
        .state
        .db
        .read(|c| {
            Ok(c.query_row(
                "SELECT data FROM message_attachments WHERE idx = 1",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(data, b"hello");

    // A long mail is cut to a message's 4096 characters, and says so.
    let mut long = mail("long@example.com");
    long["text"] = json!("x".repeat(5000));
    let r = i.deliver(&long).await;
    r.expect(201);
    let last = i
        .messages(r.body["conversation_id"].as_str().unwrap())
        .await
        .pop()
        .unwrap();
    assert_eq!(last["text"].as_str().unwrap().len(), 4096);
    assert_eq!(last["payload"]["truncated"], true);

    // Past the route's 10 MiB the body is refused.
    let mut huge = mail("huge@example.com");
    huge["attachments"] = json!([{"content_type": "application/octet-stream",
                                  "content": "A".repeat(11 * 1024 * 1024)}]);
    i.deliver(&huge)
        .await
        .expect_error(413, "payload_too_large");
    assert_eq!(
        i.app
            .count("SELECT COUNT(*) FROM messages WHERE external_id = '<huge@example.com>'")
            .await,
        0
    );
}

#[tokio::test]
async fn a_team_reply_goes_out_over_smtp_threaded_to_the_mail() {
    let i = inbox().await;
    let mut m = mail("m1@example.com");
    m["references"] = json!("<r0@example.com>");
    let first = i.deliver(&m).await;
    first.expect(201);
    let conversation = first.body["conversation_id"].as_str().unwrap().to_owned();

    let sent = i.reply(&conversation, "It ships today.").await;
    sent.expect(201);
    let reply = &sent.body["message"];
    let own_id = format!("<{}@shop.example>", reply["id"].as_str().unwrap());
    assert_eq!(reply["external_id"], own_id.as_str());
    assert_eq!(reply["delivery_status"], "sent");
    assert_eq!(reply["payload"]["subject"], "Re: Where is my order?");
    assert!(
        i.smtp.mails().is_empty(),
        "sent by the job, not the request"
    );

    assert_eq!(i.run_job().await, Outcome::Ran);
    let mails = i.smtp.mails();
    assert_eq!(mails.len(), 1);
    let out = &mails[0];
    assert_eq!(out.mail_from, "support@shop.example");
    assert_eq!(out.rcpt_to, ["ana@example.com"]);
    assert_eq!(
        out.header("From").unwrap(),
        "\"Shop support\" <support@shop.example>"
    );
    assert_eq!(out.header("To").unwrap(), "\"Ana Souza\" <ana@example.com>");
    assert_eq!(out.header("Subject").unwrap(), "Re: Where is my order?");
    assert_eq!(out.header("In-Reply-To").unwrap(), "<m1@example.com>");
    assert_eq!(
        out.header("References").unwrap(),
        "<r0@example.com> <m1@example.com>"
    );
    assert_eq!(out.header("Message-ID").unwrap(), own_id);
    assert!(out.body().contains("It ships today."), "{}", out.data);
    assert_eq!(i.run_job().await, Outcome::Empty, "sent once");
    let stored = i.messages(&conversation).await.pop().unwrap();
    assert_eq!(stored["delivery_status"], "sent");
    assert_eq!(stored["delivery_error"], Value::Null);

    // Ana answers our mail: it threads back by our Message-ID.
    let mut answer = mail("m2@example.com");
    answer["in_reply_to"] = json!(own_id);
    let r = i.deliver(&answer).await;
    r.expect(201);
    assert_eq!(r.body["conversation_id"], conversation.as_str());

    // The next reply answers her latest mail.
    i.reply(&conversation, "Tracking: 123").await.expect(201);
    assert_eq!(i.run_job().await, Outcome::Ran);
    let next = i.smtp.mails().pop().unwrap();
    assert_eq!(next.header("In-Reply-To").unwrap(), "<m2@example.com>");
    assert_eq!(next.header("Subject").unwrap(), "Re: Where is my order?");
}

#[tokio::test]
async fn a_relay_that_keeps_failing_gets_every_retry_then_the_reply_fails() {
    let i = inbox().await;
    let conversation = i.deliver(&mail("m1@example.com")).await.body["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    i.smtp.refuse_with(Some("451 4.3.0 try again later"));
    let mut team = i.agent().await;
    let sent = i.reply(&conversation, "It ships today.").await;
    sent.expect(201);
    let id = sent.body["message"]["id"].as_str().unwrap().to_owned();

    let attempts = merchant_admin::inbox::email_channel::reply::REPLY_ATTEMPTS;
    for attempt in 1..=attempts {
        assert_eq!(i.run_job().await, Outcome::Ran, "attempt {attempt}");
        assert_eq!(i.smtp.attempts(), attempt as usize);
        let m = i.messages(&conversation).await.pop().unwrap();
        if attempt < attempts {
            assert_eq!(m["delivery_status"], "sent", "attempt {attempt}");
            assert_eq!(m["delivery_error"], Value::Null);
            // Nothing before the backoff has passed.
            assert_eq!(i.run_job().await, Outcome::Empty);
            i.app.clock.advance(Duration::hours(2));
        } else {
            assert_eq!(m["delivery_status"], "failed");
            assert!(m["delivery_error"].as_str().unwrap().contains("451"), "{m}");
        }
    }
    let updated = team.next_of("message:updated").await;
    assert_eq!(updated["data"]["id"], id.as_str());
    assert_eq!(updated["data"]["delivery_status"], "failed");
    i.app.clock.advance(Duration::hours(2));
    assert_eq!(
        i.run_job().await,
        Outcome::Empty,
        "no attempt after the last"
    );
    assert_eq!(
        i.app
            .count("SELECT COUNT(*) FROM jobs WHERE kind = 'email_reply' AND state = 'dead'")
            .await,
        1
    );
    assert!(i.smtp.mails().is_empty());
}

#[tokio::test]
async fn a_refusal_fails_the_reply_at_once_and_a_passing_fault_is_retried() {
    let i = inbox().await;
    let conversation = i.deliver(&mail("m1@example.com")).await.body["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut team = i.agent().await;

    i.smtp.refuse_with(Some("550 5.1.1 no such mailbox"));
    i.reply(&conversation, "First").await.expect(201);
    assert_eq!(i.run_job().await, Outcome::Ran);
    let updated = team.next_of("message:updated").await;
    assert_eq!(updated["data"]["delivery_status"], "failed");
    assert!(
        updated["data"]["delivery_error"]
            .as_str()
            .unwrap()
            .contains("550")
    );
    i.app.clock.advance(Duration::hours(2));
    assert_eq!(
        i.run_job().await,
        Outcome::Empty,
        "a refusal is not retried"
    );
    assert_eq!(i.smtp.attempts(), 1);

    // A relay down for a moment: the retry sends the same mail, and the reply stays sent.
    i.smtp.refuse_with(Some("421 4.7.0 busy"));
    let second = i.reply(&conversation, "Second").await;
    second.expect(201);
    assert_eq!(i.run_job().await, Outcome::Ran);
    i.smtp.refuse_with(None);
    assert_eq!(i.run_job().await, Outcome::Empty, "waits for its backoff");
    i.app.clock.advance(Duration::seconds(30));
    assert_eq!(i.run_job().await, Outcome::Ran);
    let mails = i.smtp.mails();
    assert_eq!(mails.len(), 1);
    assert_eq!(
        mails[0].header("Message-ID").unwrap(),
        second.body["message"]["external_id"].as_str().unwrap()
    );
    let m = i.messages(&conversation).await.pop().unwrap();
    assert_eq!(m["delivery_status"], "sent");
    assert_eq!(m["delivery_error"], Value::Null);
}

#[tokio::test]
async fn without_an_smtp_url_an_email_reply_is_refused_and_nothing_is_stored() {
    let i = inbox_with_smtp(false).await;
    let conversation = i.deliver(&mail("m1@example.com")).await.body["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    i.reply(&conversation, "It ships today.")
        .await
        .expect_error(503, "service_unavailable");
    assert_eq!(i.stored().await, (1, 1));
    assert_eq!(
        i.app
            .count("SELECT COUNT(*) FROM jobs WHERE kind = 'email_reply'")
            .await,
        0
    );
}

#[tokio::test]
async fn a_reply_with_files_is_refused_on_e_mail_which_sends_text_only() {
    let i = inbox().await;
    let conversation = i.deliver(&mail("m1@example.com")).await.body["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = i
        .app
        .send_files(
            &i.owner,
            &format!("{}/conversations/{conversation}/messages", i.p),
            Some("The invoice"),
            &[("invoice.pdf", "application/pdf", b"%PDF".to_vec())],
        )
        .await;
    r.expect_error(422, "validation_failed");
    assert_eq!(i.stored().await, (1, 1), "nothing stored");
}
