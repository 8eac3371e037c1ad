//! Marketing e-mail (issue 20 "Marketing e-mail"): segments, campaigns sent over SMTP to a
//! receiver in the test, the one-click unsubscribe link.

use chrono::Duration;
use merchant_admin::mail::SmtpConfig;
use serde_json::{Value, json};

use crate::support::smtp::{Mail, SmtpReceiver};
use crate::support::{Receiver, Reply, Shop, get, patch, post, spawn_app_with};

fn delete() -> reqwest::Method {
    reqwest::Method::DELETE
}

/// A shop on a server whose mail goes to `smtp`, with no job workers (the test runs the
/// batches), and, with `channel`, an e-mail channel to send from.
async fn shop(channel: bool) -> (Shop, SmtpReceiver) {
    let smtp = SmtpReceiver::start().await;
    let url = smtp.url();
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.smtp = Some(SmtpConfig::parse(&url).unwrap());
    })
    .await;
    let mut shop = Shop::open(app, 100).await;
    if channel {
        shop.app
            .call(
                post(),
                &shop.path("channels"),
                &shop.token,
                Some(json!({"kind": "email", "name": "Loja News",
                            "settings": {"address": "news@shop.example", "inbound_secret": "in-s3cret-value"}})),
            )
            .await
            .expect(201);
    }
    // A store token: the tests move the clock by hours, past a session's life.
    let scopes = json!([
        "customers.read",
        "customers.write",
        "orders.read",
        "orders.write",
        "marketing.read",
        "marketing.write",
        "webhooks.write",
        "stores.edit"
    ]);
    shop.token = shop.app.store_token(&shop.token, &shop.store, scopes).await;
    (shop, smtp)
}

/// The body with quoted-printable undone (soft line breaks joined, `=XX` decoded).
fn decoded(body: &str) -> String {
    let joined = body.replace("=\r\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'='
            && let Some(hex) = joined.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Shop {
    async fn customer(&self, body: Value) -> String {
        let r = self
            .app
            .call(post(), &self.path("customers"), &self.token, Some(body))
            .await;
        r.expect(201);
        r.body["id"].as_str().unwrap().to_owned()
    }

    /// A paid order of `quantity` TEE-S (2500 cents each) for `customer`.
    async fn paid_order(&self, customer: &str, quantity: i64) {
        let r = self
            .app
            .call(
                post(),
                &self.path("orders"),
                &self.token,
                Some(json!({"customer_id": customer,
                            "items": [{"variant_id": self.variants[0], "quantity": quantity}]})),
            )
            .await;
        r.expect(201);
        self.set_status(&r.body, "paid").await;
    }

    async fn segment(&self, filter: Value) -> String {
        let r = self
            .app
            .call(
                post(),
                &self.path("segments"),
                &self.token,
                Some(json!({"name": "Segment", "filter": filter})),
            )
            .await;
        r.expect(201);
        r.body["id"].as_str().unwrap().to_owned()
    }

    /// The names of a segment's customers, sorted, after checking `total` agrees.
    async fn members(&self, segment: &str) -> Vec<String> {
        let r = self
            .read(&format!("segments/{segment}/customers?include_total=true"))
            .await;
        let mut names: Vec<String> = r["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(r["total"], names.len(), "{r}");
        names.sort();
        names
    }

    async fn campaign(&self, segment: &str) -> String {
        let r = self
            .app
            .call(
                post(),
                &self.path("campaigns"),
                &self.token,
                Some(json!({"name": "Black Friday", "subject": "20% off everything",
                            "body_markdown": "# Sale\n\n**20%** off <script>alert(1)</script> at [the shop](https://shop.example).",
                            "segment_id": segment})),
            )
            .await;
        r.expect(201);
        assert_eq!(r.body["status"], "draft");
        r.body["id"].as_str().unwrap().to_owned()
    }

    async fn act(&self, campaign: &str, action: &str, body: Option<Value>) -> Reply {
        self.app
            .call(
                post(),
                &self.path(&format!("campaigns/{campaign}/{action}")),
                &self.token,
                body,
            )
            .await
    }

    async fn send_now(&self, campaign: &str) -> Value {
        let r = self.act(campaign, "schedule", Some(json!({}))).await;
        r.expect(200);
        r.body.clone()
    }

    async fn recipients(&self, campaign: &str) -> Vec<Value> {
        self.read(&format!("campaigns/{campaign}/recipients")).await["data"]
            .as_array()
            .unwrap()
            .clone()
    }
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn to(mails: &[Mail], address: &str) -> usize {
    mails
        .iter()
        .filter(|m| m.rcpt_to.iter().any(|r| r == address))
        .count()
}

#[tokio::test]
async fn each_segment_filter_picks_its_customers_from_customers_and_orders() {
    let (shop, _smtp) = shop(false).await;
    let app = &shop.app;
    // Ana (the shop's customer): no tags, no orders, no consent.
    let bia = shop
        .customer(json!({"name": "Bia", "email": "bia@example.com", "accepts_marketing": true, "tags": ["vip"]}))
        .await;
    shop.customer(json!({"name": "Caio", "email": "caio@example.com", "accepts_marketing": true, "tags": ["newsletter"]}))
        .await;
    let duda = shop
        .customer(json!({"name": "Duda", "email": "duda@example.com", "tags": ["vip", "late"]}))
        .await;
    shop.paid_order(&bia, 2).await; // 5000 cents, at the start
    app.clock.advance(Duration::days(10));
    shop.paid_order(&duda, 1).await; // 2500 cents, ten days later
    let start = crate::support::start_time();
    let mid = merchant_admin::time::format(start + Duration::days(5));

    let cases = [
        (json!({}), vec!["Ana", "Bia", "Caio", "Duda"]),
        (json!({"tags_any": ["vip"]}), vec!["Bia", "Duda"]),
        (
            json!({"tags_any": ["newsletter", "late"]}),
            vec!["Caio", "Duda"],
        ),
        (json!({"total_spent_min_cents": 4000}), vec!["Bia"]),
        (
            json!({"total_spent_max_cents": 4000}),
            vec!["Ana", "Caio", "Duda"],
        ),
        (
            json!({"total_spent_min_cents": 1, "total_spent_max_cents": 4000}),
            vec!["Duda"],
        ),
        (json!({"last_order_before": mid}), vec!["Bia"]),
        (json!({"last_order_after": mid}), vec!["Duda"]),
        (json!({"accepts_marketing": true}), vec!["Bia", "Caio"]),
        (json!({"accepts_marketing": false}), vec!["Ana", "Duda"]),
        (
            json!({"tags_any": ["vip"], "accepts_marketing": true}),
            vec!["Bia"],
        ),
    ];
    for (filter, want) in cases {
        let s = shop.segment(filter.clone()).await;
        assert_eq!(shop.members(&s).await, names(&want), "{filter}");
    }

    // A later order moves Bia's last order; the segment follows without being saved again.
    let before = shop.segment(json!({"last_order_before": mid})).await;
    shop.paid_order(&bia, 1).await;
    assert!(shop.members(&before).await.is_empty());

    // Keyset paging over a segment's customers.
    let all = shop.segment(json!({})).await;
    let first = shop
        .read(&format!("segments/{all}/customers?limit=3"))
        .await;
    assert_eq!(first["data"].as_array().unwrap().len(), 3);
    let cursor = first["next_cursor"].as_str().unwrap();
    let next = shop
        .read(&format!("segments/{all}/customers?limit=3&cursor={cursor}"))
        .await;
    assert_eq!(next["data"].as_array().unwrap().len(), 1);
    assert_eq!(next["has_more"], false);

    // Strict filters: unknown fields and bad values are 422 naming the field.
    for (filter, field) in [
        (json!({"tag": ["vip"]}), "filter.tag"),
        (json!({"tags_any": []}), "filter.tags_any"),
        (json!({"tags_any": ["  "]}), "filter.tags_any[0]"),
        (
            json!({"total_spent_min_cents": -1}),
            "filter.total_spent_min_cents",
        ),
        (
            json!({"total_spent_min_cents": 10, "total_spent_max_cents": 5}),
            "filter.total_spent_max_cents",
        ),
        (
            json!({"last_order_before": "yesterday"}),
            "filter.last_order_before",
        ),
        (
            json!({"accepts_marketing": "yes"}),
            "filter.accepts_marketing",
        ),
    ] {
        let r = app
            .call(
                post(),
                &shop.path("segments"),
                &shop.token,
                Some(json!({"name": "Bad", "filter": filter})),
            )
            .await;
        r.expect_error(422, "validation_failed");
        let fields = r.body["details"]["fields"].as_object().unwrap();
        assert!(fields.keys().any(|k| k == field), "{filter}: {}", r.text);
    }

    // CRUD: rename and refilter, then delete (a segment no campaign names).
    let r = app
        .call(
            patch(),
            &shop.path(&format!("segments/{all}")),
            &shop.token,
            Some(json!({"name": "VIPs", "filter": {"tags_any": ["vip"]}})),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["name"], "VIPs");
    assert_eq!(r.body["filter"], json!({"tags_any": ["vip"]}));
    assert_eq!(shop.members(&all).await, names(&["Bia", "Duda"]));
    let listed = shop.read("segments?include_total=true").await;
    assert!(listed["total"].as_i64().unwrap() >= 13);
    app.call(
        delete(),
        &shop.path(&format!("segments/{all}")),
        &shop.token,
        None,
    )
    .await
    .expect(204);
    app.get_as(&shop.path(&format!("segments/{all}")), &shop.token)
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn campaign_status_moves_and_the_409s_of_every_other_move() {
    let (shop, smtp) = shop(false).await;
    let app = &shop.app;
    shop.customer(json!({"name": "Bia", "email": "bia@example.com", "accepts_marketing": true}))
        .await;
    let seg = shop.segment(json!({})).await;
    let c = shop.campaign(&seg).await;
    let path = shop.path(&format!("campaigns/{c}"));

    // A draft is edited; bad input is 422.
    let r = app
        .call(
            patch(),
            &path,
            &shop.token,
            Some(json!({"subject": "30% off"})),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["subject"], "30% off");
    for bad in [
        json!({"subject": "two\nlines"}),
        json!({"body_markdown": " "}),
        json!({"segment_id": uuid::Uuid::now_v7()}),
        json!({"status": "sent"}),
    ] {
        app.call(patch(), &path, &shop.token, Some(bad))
            .await
            .expect_error(422, "validation_failed");
    }
    // Not a time; a time whose UTC year has five digits (it would be stored as `+10000-...`,
    // which sorts before today: the campaign would go out at once).
    for at in ["soon", "9999-12-31T23:59:59-03:00"] {
        shop.act(&c, "schedule", Some(json!({"scheduled_at": at})))
            .await
            .expect_error(422, "validation_failed");
    }

    // No e-mail channel to send from: 409, and still a draft.
    shop.act(&c, "schedule", Some(json!({})))
        .await
        .expect_error(409, "no_email_channel");
    app.call(
        post(),
        &shop.path("channels"),
        &shop.token,
        Some(json!({"kind": "email", "name": "News",
                    "settings": {"address": "news@shop.example", "inbound_secret": "in-s3cret-value"}})),
    )
    .await
    .expect(201);

    // draft -> scheduled -> cancelled; nothing moves a cancelled campaign.
    let at = merchant_admin::time::format(app.clock_now() + Duration::days(1));
    let r = shop
        .act(&c, "schedule", Some(json!({"scheduled_at": at})))
        .await;
    r.expect(200);
    assert_eq!(r.body["status"], "scheduled");
    assert_eq!(r.body["scheduled_at"], at);
    app.call(patch(), &path, &shop.token, Some(json!({"name": "x"})))
        .await
        .expect_error(409, "invalid_status_transition");
    app.call(delete(), &path, &shop.token, None)
        .await
        .expect_error(409, "invalid_status_transition");
    shop.act(&c, "schedule", Some(json!({})))
        .await
        .expect_error(409, "invalid_status_transition");
    let r = shop.act(&c, "cancel", None).await;
    r.expect(200);
    assert_eq!(r.body["status"], "cancelled");
    for (action, body) in [("cancel", None), ("schedule", Some(json!({})))] {
        shop.act(&c, action, body)
            .await
            .expect_error(409, "invalid_status_transition");
    }
    app.call(patch(), &path, &shop.token, Some(json!({"name": "x"})))
        .await
        .expect_error(409, "invalid_status_transition");
    // Its fire job finds it cancelled and sends nothing.
    app.clock.advance(Duration::days(2));
    app.drain_jobs().await;
    assert_eq!(
        shop.read(&format!("campaigns/{c}")).await["status"],
        "cancelled"
    );

    // draft -> sending -> sent; then nothing moves it.
    let s = shop.campaign(&seg).await;
    let r = shop.send_now(&s).await;
    assert_eq!(r["status"], "sending");
    assert_eq!(r["stats"]["recipients"], 1);
    let spath = shop.path(&format!("campaigns/{s}"));
    app.call(patch(), &spath, &shop.token, Some(json!({"name": "x"})))
        .await
        .expect_error(409, "invalid_status_transition");
    app.drain_jobs().await;
    let done = shop.read(&format!("campaigns/{s}")).await;
    assert_eq!(done["status"], "sent");
    assert_eq!(
        done["stats"],
        json!({"recipients": 1, "sent": 1, "failed": 0, "opened": null})
    );
    assert!(done["sent_at"].is_string());
    for (action, body) in [("cancel", None), ("schedule", Some(json!({})))] {
        shop.act(&s, action, body)
            .await
            .expect_error(409, "invalid_status_transition");
    }
    app.call(delete(), &spath, &shop.token, None)
        .await
        .expect_error(409, "invalid_status_transition");

    // sending -> cancelled stops the batches before they mail anyone.
    let k = shop.campaign(&seg).await;
    shop.send_now(&k).await;
    let r = shop.act(&k, "cancel", None).await;
    r.expect(200);
    assert_eq!(r.body["status"], "cancelled");
    let mailed = smtp.mails().len();
    app.drain_jobs().await;
    assert_eq!(
        smtp.mails().len(),
        mailed,
        "a cancelled campaign mails no one"
    );
    assert_eq!(shop.recipients(&k).await[0]["status"], "pending");

    // A draft is deleted; a segment that campaigns name is kept (409).
    let d = shop.campaign(&seg).await;
    app.call(
        delete(),
        &shop.path(&format!("campaigns/{d}")),
        &shop.token,
        None,
    )
    .await
    .expect(204);
    app.call(
        delete(),
        &shop.path(&format!("segments/{seg}")),
        &shop.token,
        None,
    )
    .await
    .expect_error(409, "conflict");
    let listed = shop
        .read("campaigns?status=cancelled&include_total=true")
        .await;
    assert_eq!(listed["total"], 2);

    // Without --smtp-url nothing can be sent: 503.
    let bare = Shop::open(spawn_app_with(|c| c.workers = 0).await, 1).await;
    let seg = bare.segment(json!({})).await;
    let c = bare.campaign(&seg).await;
    bare.act(&c, "schedule", Some(json!({})))
        .await
        .expect_error(503, "service_unavailable");
}

#[tokio::test]
async fn sending_retries_the_failing_recipient_and_mails_everyone_else_once() {
    let (shop, smtp) = shop(true).await;
    let app = &shop.app;
    for (name, email) in [
        ("Bia", "bia@example.com"),
        ("Caio", "caio@example.com"),
        ("Duda", "duda@example.com"),
    ] {
        shop.customer(json!({"name": name, "email": email, "accepts_marketing": true}))
            .await;
    }
    // Never mailed, whatever the segment says: no consent (Ana, Eli), no e-mail (Fabi).
    shop.customer(json!({"name": "Eli", "email": "eli@example.com", "accepts_marketing": false}))
        .await;
    shop.customer(json!({"name": "Fabi", "phone": "+55 11 91234-5678", "accepts_marketing": true}))
        .await;
    let everyone = shop.segment(json!({})).await;
    smtp.refuse_rcpt(
        "caio@example.com",
        Some("451 4.2.1 mailbox busy, try later"),
    );

    let c = shop.campaign(&everyone).await;
    let r = shop.send_now(&c).await;
    assert_eq!(r["status"], "sending");
    assert_eq!(r["stats"]["recipients"], 3);
    app.drain_jobs().await;

    let mails = smtp.mails();
    assert_eq!(to(&mails, "bia@example.com"), 1);
    assert_eq!(to(&mails, "duda@example.com"), 1);
    assert_eq!(to(&mails, "caio@example.com"), 0);
    let caio = shop
        .recipients(&c)
        .await
        .into_iter()
        .find(|r| r["email"] == "caio@example.com")
        .unwrap();
    assert_eq!(caio["status"], "pending");
    assert_eq!(caio["error_code"], "email_send_failed");
    assert!(caio["error"].as_str().unwrap().contains("451"), "{caio}");
    assert_eq!(caio["attempts"], 1);
    let mid = shop.read(&format!("campaigns/{c}")).await;
    assert_eq!(mid["status"], "sending");
    assert_eq!(mid["stats"]["sent"], 2);

    // The batch is retried after its backoff: only Caio is mailed again.
    smtp.refuse_rcpt("caio@example.com", None);
    app.clock.advance(Duration::minutes(10));
    app.drain_jobs().await;
    let mails = smtp.mails();
    assert_eq!(mails.len(), 3, "one mail each");
    for a in ["bia@example.com", "caio@example.com", "duda@example.com"] {
        assert_eq!(to(&mails, a), 1, "{a}");
    }
    let done = shop.read(&format!("campaigns/{c}")).await;
    assert_eq!(done["status"], "sent");
    assert_eq!(
        done["stats"],
        json!({"recipients": 3, "sent": 3, "failed": 0, "opened": null})
    );
    let sent = shop
        .read(&format!(
            "campaigns/{c}/recipients?status=sent&include_total=true"
        ))
        .await;
    assert_eq!(sent["total"], 3);

    // What the mail is: from the channel, to the customer, text and sanitised HTML, and the
    // RFC 8058 headers.
    let m = mails
        .iter()
        .find(|m| m.rcpt_to[0] == "bia@example.com")
        .unwrap();
    assert_eq!(m.mail_from, "news@shop.example");
    assert!(m.header("From").unwrap().contains("news@shop.example"));
    assert_eq!(m.header("Subject").unwrap(), "20% off everything");
    let link = m.header("List-Unsubscribe").unwrap();
    let base = app.url("/v1/unsubscribe/");
    assert!(
        link.starts_with(&format!("<{base}")) && link.ends_with('>'),
        "{link}"
    );
    assert_eq!(
        m.header("List-Unsubscribe-Post").unwrap(),
        "List-Unsubscribe=One-Click"
    );
    assert!(
        m.header("Content-Type")
            .unwrap()
            .starts_with("multipart/alternative")
    );
    let body = decoded(m.body());
    assert!(
        body.contains("text/plain") && body.contains("text/html"),
        "{body}"
    );
    // The text part is the markdown as written; the HTML part is rendered and sanitised.
    let html = body.split("text/html").nth(1).unwrap();
    assert!(html.contains("<strong>20%</strong>"), "{body}");
    assert!(!html.contains("<script"), "{body}");

    // A segment of only those who refused: a campaign to it has no recipient and is sent
    // at once, mailing no one.
    let refusers = shop.segment(json!({"accepts_marketing": false})).await;
    let none = shop.campaign(&refusers).await;
    let r = shop.send_now(&none).await;
    assert_eq!(r["status"], "sent");
    assert_eq!(r["stats"]["recipients"], 0);
    app.drain_jobs().await;
    assert_eq!(smtp.mails().len(), 3);

    // A test copy goes to the address given, now; a refusal is 502 email_send_failed.
    shop.act(&c, "send-test", Some(json!({"email": "QA@Shop.example"})))
        .await
        .expect(204);
    let mails = smtp.mails();
    assert_eq!(mails.len(), 4);
    assert_eq!(mails[3].rcpt_to, ["qa@shop.example"]);
    assert_eq!(
        mails[3].header("Subject").unwrap(),
        "[Test] 20% off everything"
    );
    smtp.refuse_with(Some("554 5.7.1 rejected"));
    shop.act(&c, "send-test", Some(json!({"email": "qa@shop.example"})))
        .await
        .expect_error(502, "email_send_failed");
    shop.act(&c, "send-test", Some(json!({"email": "nope"})))
        .await
        .expect_error(422, "validation_failed");
}

#[tokio::test]
async fn a_recipient_the_server_keeps_refusing_is_failed_after_the_last_attempt() {
    let (shop, smtp) = shop(true).await;
    let app = &shop.app;
    for (name, email) in [("Bia", "bia@example.com"), ("Caio", "caio@example.com")] {
        shop.customer(json!({"name": name, "email": email, "accepts_marketing": true}))
            .await;
    }
    smtp.refuse_rcpt(
        "caio@example.com",
        Some("451 4.2.1 mailbox busy, try later"),
    );
    let c = shop.campaign(&shop.segment(json!({})).await).await;
    shop.send_now(&c).await;
    for _ in 0..10 {
        app.drain_jobs().await;
        if shop.read(&format!("campaigns/{c}")).await["status"] == "sent" {
            break;
        }
        app.clock.advance(Duration::hours(1));
    }
    let done = shop.read(&format!("campaigns/{c}")).await;
    assert_eq!(done["status"], "sent");
    assert_eq!(
        done["stats"],
        json!({"recipients": 2, "sent": 1, "failed": 1, "opened": null})
    );
    let failed = shop
        .read(&format!("campaigns/{c}/recipients?status=failed"))
        .await;
    let caio = &failed["data"][0];
    assert_eq!(caio["email"], "caio@example.com");
    assert_eq!(caio["error_code"], "email_send_failed");
    assert_eq!(caio["attempts"], 6, "every attempt of the batch job");
    assert_eq!(to(&smtp.mails(), "bia@example.com"), 1, "never twice");

    // A refusal (5xx) fails at once: retrying cannot help.
    smtp.refuse_rcpt("caio@example.com", Some("550 5.1.1 no such user"));
    let c = shop.campaign(&shop.segment(json!({})).await).await;
    shop.send_now(&c).await;
    app.drain_jobs().await;
    let done = shop.read(&format!("campaigns/{c}")).await;
    assert_eq!(done["status"], "sent");
    assert_eq!(done["stats"]["failed"], 1);
    let caio = &shop
        .read(&format!("campaigns/{c}/recipients?status=failed"))
        .await["data"][0];
    assert_eq!(caio["attempts"], 1);
    assert!(caio["error"].as_str().unwrap().contains("550"), "{caio}");
}

#[tokio::test]
async fn the_unsubscribe_link_shows_a_page_and_one_click_unsubscribes_once() {
    let (shop, smtp) = shop(true).await;
    let app = &shop.app;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["customers.updated"]).await;
    let bia = shop
        .customer(json!({"name": "Bia", "email": "bia@example.com", "accepts_marketing": true}))
        .await;
    let c = shop.campaign(&shop.segment(json!({})).await).await;
    shop.send_now(&c).await;
    app.drain_jobs().await;
    let mail = &smtp.mails()[0];
    let link = mail.header("List-Unsubscribe").unwrap();
    let url = link
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_owned();
    assert!(decoded(mail.body()).contains(&url), "the body links it too");
    let path = url.strip_prefix(&app.url("")).unwrap().to_owned();

    // GET shows a page with a button; it changes nothing (mail scanners open links).
    let page = app.get(&path).await;
    page.expect(200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.text.contains("<form method=\"post\""), "{}", page.text);
    assert_eq!(
        shop.read(&format!("customers/{bia}")).await["accepts_marketing"],
        true
    );

    // The one-click POST (RFC 8058's body) unsubscribes and fires customers.updated, once.
    let one_click = || {
        app.client
            .post(app.url(&path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("List-Unsubscribe=One-Click")
    };
    app.send(one_click()).await.expect(200);
    assert_eq!(
        shop.read(&format!("customers/{bia}")).await["accepts_marketing"],
        false
    );
    let hits = rx.wait_for(1).await;
    let event = hits[0].json();
    assert_eq!(event["event"], "customers.updated");
    assert_eq!(event["data"]["accepts_marketing"], false);
    app.send(one_click()).await.expect(200);
    rx.expect_no_more_than(app, 1).await;
    assert!(!app.get(&path).await.text.contains("<form"));

    // Unsubscribed: the next campaign does not mail her.
    let next = shop.campaign(&shop.segment(json!({})).await).await;
    assert_eq!(shop.send_now(&next).await["stats"]["recipients"], 0);

    // A tampered or made-up token is 404, GET or POST.
    let token = path.rsplit('/').next().unwrap();
    let mut chars: Vec<char> = token.chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    let tampered: String = chars.into_iter().collect();
    for p in [
        format!("/v1/unsubscribe/{tampered}"),
        "/v1/unsubscribe/nonsense".to_owned(),
    ] {
        app.get(&p).await.expect_error(404, "not_found");
        app.send(app.client.post(app.url(&p)))
            .await
            .expect_error(404, "not_found");
    }
}

#[tokio::test]
async fn a_scheduled_campaign_is_not_sent_a_second_early() {
    let (shop, smtp) = shop(true).await;
    let app = &shop.app;
    shop.customer(json!({"name": "Bia", "email": "bia@example.com", "accepts_marketing": true}))
        .await;
    let c = shop.campaign(&shop.segment(json!({})).await).await;
    let at = app.clock_now() + Duration::hours(1);
    let r = shop
        .act(
            &c,
            "schedule",
            Some(json!({"scheduled_at": merchant_admin::time::format(at)})),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["status"], "scheduled");
    app.clock.advance(Duration::hours(1) - Duration::seconds(1));
    app.drain_jobs().await;
    assert_eq!(
        shop.read(&format!("campaigns/{c}")).await["status"],
        "scheduled"
    );
    assert!(smtp.mails().is_empty());
    app.clock.advance(Duration::seconds(1));
    app.drain_jobs().await;
    assert_eq!(shop.read(&format!("campaigns/{c}")).await["status"], "sent");
    assert_eq!(smtp.mails().len(), 1);
}

#[tokio::test]
async fn another_stores_segments_and_campaigns_are_404() {
    let (shop, _smtp) = shop(true).await;
    let app = &shop.app;
    let seg = shop.segment(json!({})).await;
    let c = shop.campaign(&seg).await;
    let (other, _) = app.member("other@example.com").await;
    let theirs = app.open_store(&other, "Other").await;
    let p = format!("/v1/stores/{theirs}");
    for path in [
        format!("{p}/segments/{seg}"),
        format!("{p}/segments/{seg}/customers"),
        format!("{p}/campaigns/{c}"),
        format!("{p}/campaigns/{c}/recipients"),
    ] {
        app.get_as(&path, &other)
            .await
            .expect_error(404, "not_found");
    }
    app.call(
        patch(),
        &format!("{p}/campaigns/{c}"),
        &other,
        Some(json!({"name": "x"})),
    )
    .await
    .expect_error(404, "not_found");
    app.call(post(), &format!("{p}/campaigns/{c}/cancel"), &other, None)
        .await
        .expect_error(404, "not_found");
    app.call(delete(), &format!("{p}/segments/{seg}"), &other, None)
        .await
        .expect_error(404, "not_found");
    // Another store's segment cannot be a campaign's audience.
    app.call(
        post(),
        &format!("{p}/campaigns"),
        &other,
        Some(json!({"name": "x", "subject": "x", "body_markdown": "x", "segment_id": seg})),
    )
    .await
    .expect_error(422, "validation_failed");
    // And the owner's store answers the stranger 403/404 as any store does.
    let r = app
        .call(get(), &shop.path(&format!("campaigns/{c}")), &other, None)
        .await;
    assert!(matches!(r.status.as_u16(), 403 | 404), "{}", r.text);
}
