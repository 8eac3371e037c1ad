//! Notifications: the member's feed, read marks, preferences, e-mail and messaging-app
//! copies with their retries, each kind's producer, retention (issue 20 "Notifications").

use chrono::Duration;
use serde_json::{Value, json};

use crate::support::msgapp::{PHONE, cloud_config, start_fake};
use crate::support::smtp::SmtpReceiver;
use crate::support::{Shop, TestApp, post, spawn_app_with};

fn put() -> reqwest::Method {
    reqwest::Method::PUT
}

async fn quiet_app() -> TestApp {
    spawn_app_with(|c| c.workers = 0).await
}

impl TestApp {
    async fn feed(&self, store: &str, token: &str, query: &str) -> Value {
        let r = self
            .get_as(&format!("/v1/stores/{store}/notifications{query}"), token)
            .await;
        r.expect(200);
        r.body.clone()
    }

    async fn prefer(&self, token: &str, kinds: Value) {
        self.call(
            put(),
            "/v1/me/notification-preferences",
            token,
            Some(json!({ "kinds": kinds })),
        )
        .await
        .expect(200);
    }
}

fn kinds(feed: &Value) -> Vec<String> {
    feed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn ids(feed: &Value) -> Vec<String> {
    feed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect()
}

/// An order notifies the owner and the members whose role reads orders (every built-in
/// role does), as their preferences say: the admin who turned new orders off, and a member
/// of another store, see nothing. The entry points at the order.
#[tokio::test]
async fn an_order_notifies_the_members_as_their_preferences_say() {
    let shop = Shop::open(quiet_app().await, 100).await;
    let app = &shop.app;
    let (admin, admin_id) = app.member("admin@example.com").await;
    let (quiet, quiet_id) = app.member("quiet@example.com").await;
    let (viewer, viewer_id) = app.member("viewer@example.com").await;
    app.add_to_store(&shop.store, &admin_id, "admin").await;
    app.add_to_store(&shop.store, &quiet_id, "admin").await;
    app.add_to_store(&shop.store, &viewer_id, "viewer").await;
    let (stranger, _) = app.member("stranger@example.com").await;
    let elsewhere = app.open_store(&stranger, "Elsewhere").await;
    app.prefer(
        &quiet,
        json!({"new_order": {"in_app": false, "email": false, "msgapp": false}}),
    )
    .await;

    let order = shop.order(1).await;
    let owner_feed = app.feed(&shop.store, &shop.token, "").await;
    assert_eq!(kinds(&owner_feed), ["new_order"]);
    let n = &owner_feed["data"][0];
    assert_eq!(n["subject"], json!({"type": "order", "id": order["id"]}));
    assert_eq!(n["title"], format!("New order #{}", order["number"]));
    assert_eq!(n["read_at"], Value::Null);
    assert_eq!(n["store_id"], shop.store.as_str());
    assert_eq!(n["deliveries"], json!([]), "no copies by default");
    assert_eq!(
        kinds(&app.feed(&shop.store, &admin, "").await),
        ["new_order"]
    );
    assert_eq!(
        kinds(&app.feed(&shop.store, &viewer, "").await),
        ["new_order"]
    );
    assert!(kinds(&app.feed(&shop.store, &quiet, "").await).is_empty());
    assert!(kinds(&app.feed(&elsewhere, &stranger, "").await).is_empty());
    // Nobody reads a store they are not in, nor another member's entries.
    app.get_as(
        &format!("/v1/stores/{}/notifications", shop.store),
        &stranger,
    )
    .await
    .expect_error(404, "not_found");
    assert_ne!(
        ids(&app.feed(&shop.store, &admin, "").await),
        ids(&owner_feed)
    );
}

/// `unread=true` and the total are the badge; read marks by ids touch only the caller's own
/// (another member's id, another store's, an unknown one count nothing), `all` marks the
/// rest; repeating changes nothing. Keyset pages walk the feed newest first.
#[tokio::test]
async fn the_feed_pages_filters_unread_and_marks_read_by_ids_or_all() {
    let shop = Shop::open(quiet_app().await, 100).await;
    let app = &shop.app;
    let (admin, admin_id) = app.member("admin@example.com").await;
    app.add_to_store(&shop.store, &admin_id, "admin").await;
    for _ in 0..3 {
        shop.order(1).await;
        app.clock.advance(Duration::seconds(1));
    }
    let all = app.feed(&shop.store, &shop.token, "").await;
    assert_eq!(kinds(&all), ["new_order"; 3]);
    let mine = ids(&all);
    let first = app.feed(&shop.store, &shop.token, "?limit=2").await;
    assert_eq!(ids(&first), mine[..2]);
    assert_eq!(first["has_more"], true);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = app
        .feed(
            &shop.store,
            &shop.token,
            &format!("?limit=2&cursor={cursor}"),
        )
        .await;
    assert_eq!(ids(&second), mine[2..]);
    assert_eq!(second["has_more"], false);
    let newest = all["data"][0]["created_at"].as_str().unwrap();
    let oldest = all["data"][2]["created_at"].as_str().unwrap();
    assert!(newest > oldest, "newest first");

    let theirs = ids(&app.feed(&shop.store, &admin, "").await);
    let read = format!("{}/read", shop.path("notifications"));
    let r = app
        .call(
            post(),
            &read,
            &shop.token,
            Some(json!({"ids": [mine[0], theirs[1], uuid::Uuid::now_v7()]})),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body, json!({"marked": 1, "unread": 2}));
    // Again: nothing more to mark.
    let r = app
        .call(post(), &read, &shop.token, Some(json!({"ids": [mine[0]]})))
        .await;
    assert_eq!(r.body, json!({"marked": 0, "unread": 2}));
    let unread = app
        .feed(&shop.store, &shop.token, "?unread=true&include_total=true")
        .await;
    assert_eq!(ids(&unread), mine[1..]);
    assert_eq!(unread["total"], 2);
    let all = app.feed(&shop.store, &shop.token, "").await;
    assert!(all["data"][0]["read_at"].is_string());
    // The admin's stay unread.
    assert_eq!(
        app.feed(&shop.store, &admin, "?unread=true&include_total=true")
            .await["total"],
        3
    );

    let r = app
        .call(post(), &read, &shop.token, Some(json!({"all": true})))
        .await;
    assert_eq!(r.body, json!({"marked": 2, "unread": 0}));
    assert_eq!(
        app.feed(&shop.store, &admin, "?unread=true&include_total=true")
            .await["total"],
        3
    );

    // Malformed requests.
    for body in [
        json!({}),
        json!({"all": false}),
        json!({"ids": [mine[0]], "all": true}),
        json!({"ids": ["not-a-uuid"]}),
        json!({"ids": vec![mine[0].clone(); 201]}),
        json!({"all": true, "extra": 1}),
    ] {
        app.call(post(), &read, &shop.token, Some(body.clone()))
            .await
            .expect_error(422, "validation_failed");
    }
    app.get_as(
        &format!("{}?unread=maybe", shop.path("notifications")),
        &shop.token,
    )
    .await
    .expect_error(422, "validation_failed");
    // A store token has no member: refused, not an empty feed.
    let token = app
        .store_token(&shop.token, &shop.store, json!(["*"]))
        .await;
    app.get_as(&shop.path("notifications"), &token)
        .await
        .expect_error(403, "missing_permission");
    app.call(post(), &read, &token, Some(json!({"all": true})))
        .await
        .expect_error(403, "missing_permission");
}

/// Defaults for every kind (in the feed only); PUT changes the kinds it names and keeps the
/// others; an unknown kind, a missing channel or a non-boolean is 422 naming the path. They
/// are the caller's own and need a signed-in user.
#[tokio::test]
async fn preferences_default_to_in_app_and_validate_kinds_and_booleans() {
    let app = quiet_app().await;
    let (token, _) = app.member("ana@example.com").await;
    let (other, _) = app.member("bia@example.com").await;
    let path = "/v1/me/notification-preferences";
    let r = app.get_as(path, &token).await;
    r.expect(200);
    let off = json!({"in_app": true, "email": false, "msgapp": false});
    assert_eq!(
        r.body,
        json!({"kinds": {"low_stock": off, "new_conversation": off, "new_order": off,
                         "review_pending": off, "subscription_past_due": off}})
    );
    let r = app
        .call(
            put(),
            path,
            &token,
            Some(json!({"kinds": {"new_order": {"in_app": false, "email": true, "msgapp": true}}})),
        )
        .await;
    r.expect(200);
    assert_eq!(
        r.body["kinds"]["new_order"],
        json!({"in_app": false, "email": true, "msgapp": true})
    );
    assert_eq!(r.body["kinds"]["low_stock"], off);
    assert_eq!(app.get_as(path, &token).await.body, r.body);
    assert_eq!(
        app.get_as(path, &other).await.body["kinds"]["new_order"],
        off
    );

    for (body, field) in [
        (json!({"kinds": {"new_orders": off}}), "kinds.new_orders"),
        (
            json!({"kinds": {"new_order": {"in_app": "yes", "email": false, "msgapp": false}}}),
            "kinds.new_order.in_app",
        ),
    ] {
        let r = app.call(put(), path, &token, Some(body)).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"].get(field).is_some(),
            "{field}: {}",
            r.text
        );
    }
    for body in [
        json!({"kinds": {"new_order": {"in_app": true}}}),
        json!({"kinds": {"new_order": {"in_app": true, "email": false, "msgapp": false, "sms": true}}}),
        json!({}),
    ] {
        app.call(put(), path, &token, Some(body))
            .await
            .expect_error(422, "validation_failed");
    }
    assert_eq!(
        app.get_as(path, &token).await.body["kinds"]["new_order"]["email"],
        true,
        "a refused PUT changed nothing"
    );
    app.get(path).await.expect_error(401, "unauthorized");
}

async fn delivery(app: &TestApp, store: &str, token: &str) -> Value {
    app.feed(store, token, "").await["data"][0]["deliveries"][0].clone()
}

/// An e-mail copy reaches the member's address through the SMTP sender. While the server
/// refuses for now, each attempt is written on the delivery record
/// (`notification_send_failed` and the server's answer) and retried with backoff on the
/// test clock; then it is sent. A permanent refusal settles it `failed` at once.
#[tokio::test]
async fn email_copies_retry_with_backoff_and_record_each_failure() {
    let smtp = SmtpReceiver::start().await;
    let url = smtp.url();
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.smtp = Some(merchant_admin::mail::SmtpConfig::parse(&url).unwrap());
    })
    .await;
    let shop = Shop::open(app, 100).await;
    let app = &shop.app;
    app.prefer(
        &shop.token,
        json!({"new_order": {"in_app": true, "email": true, "msgapp": false}}),
    )
    .await;
    smtp.refuse_with(Some("451 4.3.0 try again later"));
    let order = shop.order(1).await;
    let d = delivery(app, &shop.store, &shop.token).await;
    assert_eq!(
        (
            d["channel"].as_str(),
            d["status"].as_str(),
            d["attempts"].as_i64()
        ),
        (Some("email"), Some("pending"), Some(0))
    );
    app.drain_jobs().await;
    let d = delivery(app, &shop.store, &shop.token).await;
    assert_eq!(d["status"], "pending");
    assert_eq!(d["attempts"], 1);
    assert_eq!(d["error_code"], "notification_send_failed");
    assert!(
        d["error"].as_str().unwrap().contains("try again later"),
        "{d}"
    );
    // Not before the backoff (10 s, up to 10% more).
    app.clock.advance(Duration::seconds(5));
    assert_eq!(app.drain_jobs().await, 0);
    assert_eq!(smtp.attempts(), 1);
    smtp.refuse_with(None);
    app.clock.advance(Duration::seconds(7));
    assert_eq!(app.drain_jobs().await, 1);
    let d = delivery(app, &shop.store, &shop.token).await;
    assert_eq!(d["status"], "sent");
    assert_eq!(d["attempts"], 2);
    assert!(d["sent_at"].is_string());
    let mails = smtp.mails();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].rcpt_to, ["owner@example.com"]);
    let subject = mails[0].header("Subject").unwrap();
    assert!(
        subject.contains(&format!("New order #{}", order["number"])),
        "{subject}"
    );

    // A refusal for good is settled at once, with the server's answer.
    smtp.refuse_with(Some("550 5.1.1 no such mailbox"));
    shop.order(1).await;
    app.drain_jobs().await;
    let d = delivery(app, &shop.store, &shop.token).await;
    assert_eq!(d["status"], "failed");
    assert_eq!(d["error_code"], "notification_send_failed");
    assert!(
        d["error"].as_str().unwrap().contains("no such mailbox"),
        "{d}"
    );
}

/// A copy whose provider fails every attempt ends `failed` after the last one, its error
/// kept: never lost silently.
#[tokio::test]
async fn a_copy_failing_every_attempt_ends_failed_with_its_error() {
    let smtp = SmtpReceiver::start().await;
    let url = smtp.url();
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.smtp = Some(merchant_admin::mail::SmtpConfig::parse(&url).unwrap());
    })
    .await;
    let shop = Shop::open(app, 100).await;
    let app = &shop.app;
    app.prefer(
        &shop.token,
        json!({"new_order": {"in_app": true, "email": true, "msgapp": false}}),
    )
    .await;
    smtp.refuse_with(Some("421 4.7.0 busy"));
    shop.order(1).await;
    for _ in 0..6 {
        app.drain_jobs().await;
        app.clock.advance(Duration::hours(1));
    }
    let d = delivery(app, &shop.store, &shop.token).await;
    assert_eq!(d["status"], "failed", "{d}");
    assert_eq!(d["attempts"], 6);
    assert_eq!(d["error_code"], "notification_send_failed");
    assert!(d["error"].as_str().unwrap().contains("busy"), "{d}");
    assert_eq!(smtp.attempts(), 6);
    assert!(smtp.mails().is_empty());
}

/// A messaging-app copy goes to the member's verified number (the second factor's) through
/// the Cloud API, as a template message from the platform's number; a member without one
/// gets no copy.
#[tokio::test]
async fn msgapp_copies_go_to_the_verified_number() {
    let (fake, addr) = start_fake().await;
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.msgapp = cloud_config(addr);
    })
    .await;
    let token = app.with_msgapp(&fake, "phone@example.com").await;
    let store = app.open_store(&token, "Org").await;
    let (other, other_id) = app.member("nophone@example.com").await;
    app.add_to_store(&store, &other_id, "admin").await;
    let on = json!({"review_pending": {"in_app": true, "email": false, "msgapp": true}});
    app.prefer(&token, on.clone()).await;
    app.prefer(&other, on).await;
    let product = app
        .call(
            post(),
            &format!("/v1/stores/{store}/products"),
            &token,
            Some(json!({"title": "Mug", "variants": [{"sku": "MUG", "price_cents": 1000}]})),
        )
        .await;
    product.expect(201);
    let sent_before = fake.count();
    app.call(
        post(),
        &format!("/v1/stores/{store}/reviews"),
        &token,
        Some(
            json!({"product_id": product.body["id"], "author_name": "Ana",
                    "author_email": "ana@example.com", "title": "Nice", "body": "Good mug.",
                    "rating": 4}),
        ),
    )
    .await
    .expect(201);
    app.drain_jobs().await;
    assert_eq!(fake.count(), sent_before + 1);
    let (phone_id, auth, body) = fake.received.lock().unwrap().last().unwrap().clone();
    assert_eq!(phone_id, "100000000001");
    assert_eq!(auth, "Bearer cloud-token");
    assert_eq!(body["to"], PHONE.trim_start_matches('+'));
    assert_eq!(body["template"]["name"], "store_notification");
    let params = &body["template"]["components"][0]["parameters"];
    assert_eq!(params[1]["text"], "Review waiting: Mug");
    let d = delivery(&app, &store, &token).await;
    assert_eq!(
        (d["channel"].as_str(), d["status"].as_str()),
        (Some("msgapp"), Some("sent"))
    );
    let theirs = app.feed(&store, &other, "").await;
    assert_eq!(kinds(&theirs), ["review_pending"]);
    assert_eq!(
        theirs["data"][0]["deliveries"],
        json!([]),
        "no number, no copy"
    );
}

/// Each kind comes from its store event: low stock (an order takes the variant to its
/// threshold), a conversation's first message (a chat opened but never written in notifies
/// nobody), and a review imported pending (an approved import does not).
#[tokio::test]
async fn each_store_kind_is_produced_by_its_event() {
    let shop = Shop::open(quiet_app().await, 10).await;
    let app = &shop.app;
    let p = format!("/v1/stores/{}", shop.store);
    let unread = || app.feed(&shop.store, &shop.token, "?unread=true");
    let read = format!("{p}/notifications/read");
    let read_all = || app.call(post(), &read, &shop.token, Some(json!({"all": true})));

    // 10 -> 4 available: past the default threshold of 5.
    shop.order(6).await;
    let feed = unread().await;
    let mut got = kinds(&feed);
    got.sort();
    assert_eq!(got, ["low_stock", "new_order"]);
    let low = feed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "low_stock")
        .unwrap();
    assert_eq!(
        low["subject"],
        json!({"type": "variant", "id": shop.variants[0]})
    );
    assert_eq!(low["title"], "Low stock: TEE-S");
    read_all().await.expect(200);

    let key = app.chat_channel(&shop.token, &p, json!([])).await;
    let visitor = app.visitor(&key, json!({"name": "Bia"})).await;
    assert!(
        kinds(&unread().await).is_empty(),
        "an empty chat is no news"
    );
    app.visitor_says(&visitor, "Do you ship to Recife?")
        .await
        .expect(201);
    app.visitor_says(&visitor, "Hello?").await.expect(201);
    let feed = unread().await;
    assert_eq!(kinds(&feed), ["new_conversation"]);
    assert_eq!(
        feed["data"][0]["subject"],
        json!({"type": "conversation", "id": visitor.conversation_id})
    );
    // The shopper's name and words are in the body, never in the title (an e-mail subject).
    assert_eq!(feed["data"][0]["title"], "New conversation");
    let body = feed["data"][0]["body"].as_str().unwrap();
    assert!(body.starts_with("Bia wrote through"), "{body}");
    assert!(body.contains("Do you ship to Recife?"), "{body}");
    read_all().await.expect(200);

    shop.review(json!({"status": "approved"})).await.expect(201);
    assert!(kinds(&unread().await).is_empty());
    let pending = shop.review(json!({})).await;
    pending.expect(201);
    let feed = unread().await;
    assert_eq!(kinds(&feed), ["review_pending"]);
    assert_eq!(
        feed["data"][0]["subject"],
        json!({"type": "review", "id": pending.body["id"]})
    );
}

/// A subscription falling past due notifies the organization's owner in each of its stores
/// (billing's daily run, after an unpaid trial).
#[tokio::test]
async fn a_subscription_past_due_is_notified_in_every_store() {
    let app = quiet_app().await;
    let (token, _) = app.member("owner@example.com").await;
    let org = app
        .call(
            post(),
            "/v1/tenants",
            &token,
            Some(json!({"name": "Org", "plan_code": "growth"})),
        )
        .await;
    org.expect(201);
    let tenant = org.body["id"].as_str().unwrap().to_owned();
    let mut stores = Vec::new();
    for name in ["Loja", "Outlet"] {
        let r = app
            .call(
                post(),
                "/v1/stores",
                &token,
                Some(json!({"tenant_id": tenant, "name": name})),
            )
            .await;
        r.expect(201);
        stores.push(r.body["id"].as_str().unwrap().to_owned());
    }
    let sub = app
        .get_as(&format!("/v1/tenants/{tenant}/subscription"), &token)
        .await;
    sub.expect(200);
    let trial_end =
        chrono::DateTime::parse_from_rfc3339(sub.body["trial_ends_at"].as_str().unwrap())
            .unwrap()
            .with_timezone(&chrono::Utc);
    let wait = trial_end + Duration::hours(1) - app.clock_now();
    app.settled().await;
    app.clock.advance(wait);
    app.run_billing_day().await;
    let token = app.login_as("owner@example.com", "again").await.body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let sub = app
        .get_as(&format!("/v1/tenants/{tenant}/subscription"), &token)
        .await;
    assert_eq!(sub.body["status"], "past_due");
    for store in &stores {
        let feed = app.feed(store, &token, "").await;
        assert_eq!(kinds(&feed), ["subscription_past_due"], "{store}");
        assert_eq!(
            feed["data"][0]["subject"],
            json!({"type": "subscription", "id": tenant})
        );
    }
    // The next day's run changes nothing and notifies nothing again.
    app.clock.advance(Duration::days(1));
    app.run_billing_day().await;
    let token = app.login_as("owner@example.com", "later").await.body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(kinds(&app.feed(&stores[0], &token, "").await).len(), 1);
}

/// Notifications older than 90 days are purged by the periodic cleanup, their deliveries
/// with them; younger ones stay.
#[tokio::test]
async fn old_notifications_are_purged() {
    let mut shop = Shop::open(quiet_app().await, 100).await;
    shop.order(1).await;
    shop.app.clock.advance(Duration::days(60));
    shop.token = shop.app.login_as("owner@example.com", "again").await.body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    shop.order(1).await;
    shop.app.clock.advance(Duration::days(31));
    let app = &shop.app;
    app.run_cleanup().await;
    let token = app.login_as("owner@example.com", "later").await.body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let feed = app.feed(&shop.store, &token, "").await;
    assert_eq!(kinds(&feed), ["new_order"]);
    assert_eq!(app.count("SELECT COUNT(*) FROM notifications").await, 1);
}
