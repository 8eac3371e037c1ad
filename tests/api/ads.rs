//! Ad-network catalog (issue 20 "Ad-network catalog"): the Merchant Center RSS feed behind
//! its token, and the catalog push to a local fake ad network, manual and scheduled.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::{Receiver, Reply, Shop, TestApp, get, patch, post, spawn_app, spawn_app_with};

const G_NS: &str = "http://base.google.com/ns/1.0";

fn put() -> reqwest::Method {
    reqwest::Method::PUT
}

/// The feed's items, each as `g:` element name -> text, after checking the document as
/// RSS 2.0: well-formed (quick-xml refuses mismatched tags), an `<rss version="2.0">` root
/// with one `<channel>`, and every `g:` element bound to Google's namespace.
fn parse_feed(xml: &str) -> Vec<BTreeMap<String, String>> {
    use quick_xml::events::Event;
    use quick_xml::name::ResolveResult;
    let mut r = quick_xml::NsReader::from_str(xml);
    let (mut items, mut stack, mut text) = (Vec::new(), Vec::<String>::new(), String::new());
    let mut current: Option<BTreeMap<String, String>> = None;
    let mut channels = 0;
    loop {
        let (ns, ev) = r.read_resolved_event().expect("well-formed XML");
        let ns_is_g = matches!(ns, ResolveResult::Bound(n) if n.as_ref() == G_NS);
        match ev {
            Event::Start(e) => {
                let name = e.name().as_ref().to_owned();
                match (stack.len(), name.as_str()) {
                    (0, "rss") => {
                        let v = e.try_get_attribute("version").unwrap().unwrap();
                        assert_eq!(&*v.value, "2.0");
                    }
                    (0, other) => panic!("root is {other}, not rss"),
                    (1, "channel") => channels += 1,
                    (2, "item") => current = Some(BTreeMap::new()),
                    _ => {}
                }
                if name.starts_with("g:") {
                    assert!(ns_is_g, "{name} is not in Google's namespace");
                    assert_eq!(stack.last().map(String::as_str), Some("item"));
                }
                stack.push(name);
                text.clear();
            }
            Event::Text(t) => text.push_str(&t.xml10_content()),
            Event::GeneralRef(g) => {
                let entity = format!("&{};", &*g);
                text.push_str(&quick_xml::escape::unescape(&entity).unwrap());
            }
            Event::End(_) => {
                let name = stack.pop().unwrap();
                if name == "item" {
                    items.push(current.take().unwrap());
                } else if let Some(item) = current.as_mut() {
                    item.insert(name, text.clone());
                }
                text.clear();
            }
            Event::Empty(e) => panic!("empty element {:?}", e.name()),
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(stack.is_empty());
    assert_eq!(channels, 1);
    items
}

const REQUIRED: [&str; 8] = [
    "g:id",
    "g:title",
    "g:description",
    "g:link",
    "g:image_link",
    "g:availability",
    "g:price",
    "g:condition",
];

impl Shop {
    async fn feed_token(&self) -> Value {
        let r = self
            .app
            .call(post(), &self.path("ads/feed-token"), &self.token, None)
            .await;
        r.expect(201);
        r.body.clone()
    }

    async fn feed(&self, token: &str) -> Reply {
        self.app
            .get(&self.path(&format!("ads/feed.xml?token={token}")))
            .await
    }

    async fn ads_settings(&self, body: Value) -> Reply {
        self.app
            .call(put(), &self.path("ads/settings"), &self.token, Some(body))
            .await
    }

    async fn sync(&self) -> Reply {
        self.app
            .call(post(), &self.path("ads/sync"), &self.token, None)
            .await
    }
}

#[tokio::test]
async fn the_feed_is_merchant_center_rss_with_every_required_element() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let (app, token) = (&shop.app, &shop.token);
    let tricky = r#"Caneca <&> "Café" 'Ç' ]]>"#;
    let r = app
        .call(
            post(),
            &shop.path("products"),
            token,
            Some(
                json!({"title": tricky, "description": "<b>Bold</b> & \u{1}tea",
                        "variants": [{"sku": "MUG", "price_cents": 12990, "on_hand": 0}]}),
            ),
        )
        .await;
    r.expect(201);
    let mug = r.body.clone();
    app.call(
        post(),
        &shop.path("products"),
        token,
        Some(json!({"title": "Rascunho", "status": "draft",
                    "variants": [{"sku": "DRAFT", "price_cents": 100, "on_hand": 5}]})),
    )
    .await
    .expect(201);
    let settings = app.get_as(&shop.path("ads/settings"), token).await;
    settings.expect(200);
    assert_eq!(settings.body["feed_token_set"], false);

    let t = shop.feed_token().await;
    let raw = t["token"].as_str().unwrap();
    assert!(raw.starts_with("svc_feed_"));
    let url = t["feed_url"].as_str().unwrap();
    assert!(url.ends_with(&format!(
        "/v1/stores/{}/ads/feed.xml?token={raw}",
        shop.store
    )));
    let settings = app.get_as(&shop.path("ads/settings"), token).await;
    assert_eq!(settings.body["feed_token_set"], true);
    assert!(!settings.text.contains(raw));

    // Fetched with the address handed out, as the ad network would.
    let res = app.client.get(url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"],
        "application/rss+xml; charset=utf-8"
    );
    assert_eq!(res.headers()["cache-control"], "no-store");
    let xml = res.text().await.unwrap();
    assert!(xml.starts_with(r#"<?xml version="1.0" encoding="UTF-8"?>"#));
    assert!(xml.contains(r#"xmlns:g="http://base.google.com/ns/1.0""#));
    let items = parse_feed(&xml);
    // One item per variant of an active product: the tee's two, the mug; no draft.
    assert_eq!(items.len(), 3, "{xml}");
    for it in &items {
        for el in REQUIRED {
            assert!(
                it.get(el).is_some_and(|v| !v.is_empty()),
                "{el} missing in {it:?}"
            );
        }
    }
    let by_id = |id: &Value| {
        items
            .iter()
            .find(|i| i["g:id"] == id.as_str().unwrap())
            .unwrap()
            .clone()
    };
    let small = by_id(&json!(shop.variants[0]));
    assert_eq!(small["g:title"], "Tee - S");
    assert_eq!(small["g:price"], "25.00 BRL");
    assert_eq!(small["g:availability"], "in_stock");
    assert_eq!(small["g:condition"], "new");
    assert_eq!(small["g:description"], "Tee");
    let m = by_id(&mug["variants"][0]["id"]);
    // Escaped by the writer and read back as written; the stray control character dropped.
    assert_eq!(m["g:title"], tricky);
    assert_eq!(m["g:description"], "<b>Bold</b> & tea");
    assert_eq!(m["g:price"], "129.90 BRL");
    assert_eq!(m["g:availability"], "out_of_stock");
    assert_eq!(m["g:item_group_id"], mug["id"].as_str().unwrap());
    let slug = mug["slug"].as_str().unwrap();
    assert_eq!(
        m["g:link"],
        format!(
            "{}/products/{slug}?variant={}",
            app.url("").trim_end_matches('/'),
            m["g:id"]
        )
    );

    // With a custom domain the links point at the shop's own site.
    app.call(
        patch(),
        &format!("/v1/stores/{}", shop.store),
        token,
        Some(json!({"custom_domain": "loja.example.com.br"})),
    )
    .await
    .expect(200);
    let items = parse_feed(&shop.feed(raw).await.text);
    let m = items.iter().find(|i| i["g:price"] == "129.90 BRL").unwrap();
    assert!(
        m["g:link"].starts_with(&format!("https://loja.example.com.br/products/{slug}")),
        "{m:?}"
    );
    assert_eq!(
        m["g:image_link"],
        format!("https://loja.example.com.br/products/{slug}/image")
    );
}

#[tokio::test]
async fn the_feed_opens_only_with_the_current_token() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let app = &shop.app;
    // No token made yet: nothing opens it.
    shop.feed("anything").await.expect_error(404, "not_found");
    app.get(&shop.path("ads/feed.xml"))
        .await
        .expect_error(404, "not_found");
    let first = shop.feed_token().await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    shop.feed(&first).await.expect(200);
    app.get(&shop.path("ads/feed.xml"))
        .await
        .expect_error(404, "not_found");
    shop.feed(&format!("{first}x"))
        .await
        .expect_error(404, "not_found");
    shop.feed("").await.expect_error(404, "not_found");

    // Rotating stops the old token at once.
    let second = shop.feed_token().await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first, second);
    shop.feed(&first).await.expect_error(404, "not_found");
    shop.feed(&second).await.expect(200);

    // Another store's token opens only its own feed; an unknown store is 404 alike.
    let other = Shop::open(spawn_app().await, 1).await;
    let theirs = other.feed_token().await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    other.feed(&theirs).await.expect(200);
    shop.feed(&theirs).await.expect_error(404, "not_found");
    app.get(&format!(
        "/v1/stores/{}/ads/feed.xml?token={second}",
        uuid::Uuid::now_v7()
    ))
    .await
    .expect_error(404, "not_found");

    // The token is kept hashed: its text is nowhere in the database.
    let store = shop.store.clone();
    let stored: Vec<u8> = app
        .state
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT feed_token_hash FROM ads_settings WHERE store_id = ?1",
                [store],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(stored.len(), 32);
    assert!(!String::from_utf8_lossy(&stored).contains(&second));
}

async fn adnet_shop() -> (Shop, Receiver) {
    let adnet = Receiver::start().await;
    let base = adnet.base.clone();
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.adnet_api_base = Some(base);
    })
    .await;
    (Shop::open(app, 10).await, adnet)
}

#[tokio::test]
async fn a_manual_sync_pushes_the_catalog_or_answers_the_providers_error() {
    let (shop, adnet) = adnet_shop().await;
    let app = &shop.app;
    // No catalog settings yet: 409, and nothing is sent.
    shop.sync().await.expect_error(409, "conflict");
    assert!(adnet.hits().is_empty());

    for (body, field) in [
        (json!({"catalog_id": "cat-1"}), "access_token"),
        (json!({"access_token": "t"}), "catalog_id"),
        (
            json!({"catalog_id": "a/b", "access_token": "t"}),
            "catalog_id",
        ),
        (
            json!({"catalog_id": "c", "access_token": " "}),
            "access_token",
        ),
        // It is sent as a bearer token: a header takes printable ASCII only.
        (
            json!({"catalog_id": "c", "access_token": "tok\u{e9}n"}),
            "access_token",
        ),
        (
            json!({"catalog_id": "c", "access_token": "two words"}),
            "access_token",
        ),
        (json!({"catalog_id": "c", "access_token": "t", "x": 1}), "x"),
    ] {
        let r = shop.ads_settings(body).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"].get(field).is_some(),
            "{}",
            r.text
        );
    }
    let secret = "adnet-secret-token-123";
    let r = shop
        .ads_settings(json!({"catalog_id": "cat-1", "access_token": secret}))
        .await;
    r.expect(200);
    assert_eq!(r.body["catalog_id"], "cat-1");
    assert_eq!(r.body["access_token_set"], true);
    assert_eq!(r.body["sync_available"], true);
    assert!(!r.text.contains(secret));
    // Sealed at rest: the token's text is not in the database.
    let store = shop.store.clone();
    let sealed: Vec<u8> = app
        .state
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT access_token_sealed FROM ads_settings WHERE store_id = ?1",
                [store],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains(secret));

    let r = shop.sync().await;
    r.expect(200);
    assert_eq!(r.body["items"], 2);
    assert_eq!(r.body["batches"], 1);
    assert_eq!(r.body["catalog_id"], "cat-1");
    let hits = adnet.hits();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].path, "/catalogs/cat-1/items_batch");
    assert_eq!(hits[0].header("authorization"), format!("Bearer {secret}"));
    let sent = hits[0].json();
    let items = sent["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["id"], shop.variants[0].as_str());
    assert_eq!(items[0]["price"], "25.00 BRL");
    assert_eq!(items[0]["availability"], "in_stock");
    let settings = shop.read("ads/settings").await;
    assert_eq!(settings["last_sync_items"], 2);
    assert_eq!(settings["last_sync_error"], Value::Null);
    assert!(settings["last_sync_at"].is_string());

    // The provider fails: 502 with its error, recorded on the store.
    adnet.answer(&[500]);
    let r = shop.sync().await;
    r.expect_error(502, "adnet_sync_failed");
    let provider = r.body["details"]["provider_error"].as_str().unwrap();
    assert!(
        provider.contains("HTTP 500") && provider.contains("answered 500"),
        "{provider}"
    );
    let settings = shop.read("ads/settings").await;
    assert_eq!(settings["last_sync_error"], provider);
    assert_eq!(settings["last_sync_items"], Value::Null);
    // Cleared settings: 409 again; GET shows nothing set.
    let r = shop
        .ads_settings(json!({"catalog_id": null, "access_token": null}))
        .await;
    r.expect(200);
    assert_eq!(r.body["access_token_set"], false);
    shop.sync().await.expect_error(409, "conflict");
}

#[tokio::test]
async fn without_an_ad_network_the_sync_is_503() {
    let shop = Shop::open(spawn_app().await, 1).await;
    shop.ads_settings(json!({"catalog_id": "c", "access_token": "t"}))
        .await
        .expect(200);
    assert_eq!(shop.read("ads/settings").await["sync_available"], false);
    shop.sync().await.expect_error(503, "service_unavailable");
}

#[tokio::test]
async fn an_unreachable_ad_network_is_502() {
    let app = spawn_app_with(|c| {
        c.workers = 0;
        // A closed local port: the connection is refused at once.
        c.adnet_api_base = Some("http://127.0.0.1:9".into());
    })
    .await;
    let shop = Shop::open(app, 1).await;
    shop.ads_settings(json!({"catalog_id": "c", "access_token": "t"}))
        .await
        .expect(200);
    let r = shop.sync().await;
    r.expect_error(502, "adnet_sync_failed");
    assert!(
        r.body["details"]["provider_error"]
            .as_str()
            .unwrap()
            .contains("could not reach")
    );
}

async fn run_sweep(app: &TestApp) {
    use merchant_admin::ads::sync::AdsSyncSweep;
    let now = app.clock_now();
    app.state
        .db
        .write(move |tx| merchant_admin::jobs::enqueue(tx, &AdsSyncSweep, now))
        .await
        .unwrap();
    assert!(app.drain_jobs().await >= 1);
}

#[tokio::test]
async fn the_scheduled_sync_pushes_every_6_hours_and_records_failures() {
    let (shop, adnet) = adnet_shop().await;
    let app = &shop.app;
    // A store with no catalog is never pushed.
    run_sweep(app).await;
    assert!(adnet.hits().is_empty());
    shop.ads_settings(json!({"catalog_id": "cat-9", "access_token": "t"}))
        .await
        .expect(200);
    run_sweep(app).await;
    assert_eq!(adnet.hits().len(), 1);
    let first = shop.read("ads/settings").await;
    assert_eq!(first["last_sync_items"], 2);
    assert_eq!(first["last_sync_error"], Value::Null);
    // The sweep enqueued its next run; not due again for 6 hours.
    app.clock.advance(chrono::Duration::hours(5));
    app.drain_jobs().await;
    assert_eq!(adnet.hits().len(), 1);

    // Six hours on, the provider fails: recorded on the store, and the job itself succeeds.
    adnet.answer(&[500]);
    app.clock
        .advance(chrono::Duration::hours(1) + chrono::Duration::minutes(1));
    let ran = app.drain_jobs().await;
    assert!(ran >= 1);
    assert_eq!(adnet.hits().len(), 2);
    let failed = shop.read("ads/settings").await;
    assert!(
        failed["last_sync_error"]
            .as_str()
            .unwrap()
            .contains("HTTP 500"),
        "{failed}"
    );
    assert_ne!(failed["last_sync_at"], first["last_sync_at"]);
    let dead: i64 = app
        .state
        .db
        .read(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM jobs WHERE kind = 'ads_sync_sweep' AND state = 'dead'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(dead, 0);
}

#[tokio::test]
async fn another_stores_ads_routes_are_404() {
    let shop = Shop::open(spawn_app().await, 1).await;
    let (stranger, _) = shop.app.member("stranger@example.com").await;
    shop.app.open_store(&stranger, "Theirs").await;
    let app = &shop.app;
    for (method, rest, body) in [
        (get(), "ads/settings", None),
        (
            put(),
            "ads/settings",
            Some(json!({"catalog_id": "c", "access_token": "t"})),
        ),
        (post(), "ads/feed-token", None),
        (post(), "ads/sync", None),
    ] {
        app.call(method, &shop.path(rest), &stranger, body)
            .await
            .expect_error(404, "not_found");
    }
    assert_eq!(shop.read("ads/settings").await["catalog_id"], Value::Null);
}
