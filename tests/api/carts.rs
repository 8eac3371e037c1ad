//! Cart recovery (issue 19): carts left with a contact and items are abandoned by the
//! recovery job on the test clock, each firing `carts.abandoned` once; checking one out
//! fires `carts.recovered` once. The team reads carts under `/stores/{id}/carts`.

use chrono::Duration;
use serde_json::json;

use crate::storefront::{Cart, Front};
use crate::support::{Receiver, Shop, TestApp, get, spawn_app_with};

/// Runs the recovery job once at the test clock's time (the app has no workers).
async fn run_sweep(app: &TestApp) {
    use merchant_admin::carts::recovery::CartSweep;
    let now = app.clock_now();
    app.state
        .db
        .write(move |tx| merchant_admin::jobs::enqueue(tx, &CartSweep, now))
        .await
        .unwrap();
    let ran = merchant_admin::jobs::run_once(&app.state).await.unwrap();
    assert_eq!(ran, merchant_admin::jobs::Outcome::Ran);
}

#[tokio::test]
async fn an_untouched_cart_is_abandoned_once_and_its_checkout_recovers_it_once() {
    let shop = Shop::open(spawn_app_with(|c| c.workers = 0).await, 10).await;
    let app = &shop.app;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["carts.abandoned", "carts.recovered"])
        .await;
    let front = Front::of(&shop).await;

    let left = front
        .filled_cart(&shop.variants[0], 2, "left@example.com")
        .await;
    // Without a contact there is no one to follow up; without items, nothing to recover.
    let nameless = front.new_cart().await;
    front.add(&nameless, &shop.variants[0], 1).await.expect(200);
    let empty = front.new_cart().await;
    front
        .contact(&empty, json!({"email": "empty@example.com"}))
        .await
        .expect(200);
    // Touched later: its hour runs from its last change.
    let busy = front
        .filled_cart(&shop.variants[1], 1, "busy@example.com")
        .await;

    app.clock.advance(Duration::minutes(30));
    front.add(&busy, &shop.variants[1], 1).await.expect(200);
    app.clock.advance(Duration::minutes(29));
    run_sweep(app).await;
    rx.expect_no_more_than(app, 0).await;

    app.clock.advance(Duration::minutes(2));
    run_sweep(app).await;
    let hits = rx.wait_for(1).await;
    let event = hits[0].json();
    assert_eq!(event["event"], "carts.abandoned");
    let data = &event["data"];
    assert_eq!(data["cart"]["id"], left.id.as_str());
    assert_eq!(data["cart"]["status"], "abandoned");
    assert_eq!(data["cart"]["items"][0]["quantity"], 2);
    assert_eq!(
        data["customer"],
        json!({"email": "left@example.com", "phone": null})
    );
    assert!(data["cart"].get("token").is_none());
    let url = data["recovery_url"].as_str().unwrap();
    let base = app.url("");
    assert!(
        url.starts_with(&format!(
            "{base}/v1/storefront-api/{}/carts/{}/recover?",
            front.key, left.id
        )),
        "{url}"
    );

    // Once per cart: later runs find nothing new; the busy cart's hour ends later.
    run_sweep(app).await;
    rx.expect_no_more_than(app, 1).await;
    app.clock.advance(Duration::minutes(30));
    run_sweep(app).await;
    let hits = rx.wait_for(2).await;
    assert_eq!(hits[1].json()["data"]["cart"]["id"], busy.id.as_str());
    run_sweep(app).await;
    rx.expect_no_more_than(app, 2).await;

    // The team sees them by status.
    let abandoned = shop.read("carts?status=abandoned").await;
    let ids: Vec<&str> = abandoned["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [busy.id.as_str(), left.id.as_str()], "newest first");
    let open = shop.read("carts?status=open&include_total=true").await;
    assert_eq!(open["total"], 2);
    let all = shop.read("carts?limit=3").await;
    assert_eq!(all["has_more"], true);
    let next = all["next_cursor"].as_str().unwrap();
    let rest = shop.read(&format!("carts?limit=3&cursor={next}")).await;
    assert_eq!(rest["data"].as_array().unwrap().len(), 1);
    shop.app
        .call(get(), &shop.path("carts?status=lost"), &shop.token, None)
        .await
        .expect_error(422, "validation_failed");

    // The link opens the cart with a new token; the old one stops working. A tampered or
    // foreign link opens nothing.
    let path = &url[base.len()..];
    let tampered = path.replace("signature=", "signature=A");
    app.get(&tampered).await.expect_error(404, "not_found");
    let other = path.replace(&left.id, &busy.id);
    app.get(&other).await.expect_error(404, "not_found");
    let opened = app.get(path).await;
    opened.expect(200);
    assert_eq!(opened.header("cache-control"), Some("no-store"));
    assert_eq!(opened.body["id"], left.id.as_str());
    assert_eq!(opened.body["status"], "abandoned");
    let back = Cart {
        id: left.id.clone(),
        token: opened.body["token"].as_str().unwrap().to_owned(),
    };
    front
        .cart_call(get(), &left, "", None)
        .await
        .expect_error(404, "not_found");
    // Edits keep it abandoned (it is not abandoned twice), and its checkout recovers it.
    front.add(&back, &shop.variants[0], 1).await.expect(200);
    app.clock.advance(Duration::hours(2));
    run_sweep(app).await;
    rx.expect_no_more_than(app, 2).await;
    let done = front.checkout(&back).await;
    done.expect(201);
    assert_eq!(done.body["cart"]["status"], "recovered");
    let hits = rx.wait_for(3).await;
    let recovered = hits[2].json();
    assert_eq!(recovered["event"], "carts.recovered");
    assert_eq!(recovered["data"]["order_id"], done.body["order"]["id"]);
    assert_eq!(recovered["data"]["cart"]["status"], "recovered");
    assert_eq!(recovered["data"]["cart"]["items"][0]["quantity"], 3);
    front.checkout(&back).await.expect_error(409, "conflict");
    rx.expect_no_more_than(app, 3).await;
    let seen = shop.read(&format!("carts/{}", left.id)).await;
    assert_eq!(seen["status"], "recovered");
    assert_eq!(seen["order_id"], done.body["order"]["id"]);
    // Past its end, a link opens nothing.
    app.clock.advance(Duration::days(15));
    app.get(path).await.expect_error(404, "not_found");
}

#[tokio::test]
async fn the_abandonment_delay_is_the_operators() {
    let shop = Shop::open(
        spawn_app_with(|c| {
            c.workers = 0;
            c.cart_abandon_after = Duration::minutes(10);
        })
        .await,
        10,
    )
    .await;
    let app = &shop.app;
    let front = Front::of(&shop).await;
    let cart = front
        .filled_cart(&shop.variants[0], 1, "quick@example.com")
        .await;
    app.clock.advance(Duration::minutes(9));
    run_sweep(app).await;
    assert_eq!(
        shop.read(&format!("carts/{}", cart.id)).await["status"],
        "open"
    );
    app.clock.advance(Duration::minutes(1));
    run_sweep(app).await;
    assert_eq!(
        shop.read(&format!("carts/{}", cart.id)).await["status"],
        "abandoned"
    );
    // The job keeps itself scheduled: its next run waits five minutes.
    let queued = app
        .count("SELECT COUNT(*) FROM jobs WHERE kind = 'cart_sweep' AND state = 'queued'")
        .await;
    assert_eq!(queued, 1);
    // Another store's team cannot read it.
    let (other, _) = app.member("other@example.com").await;
    let other_store = app.open_store(&other, "Other").await;
    app.call(
        get(),
        &format!("/v1/stores/{other_store}/carts/{}", cart.id),
        &other,
        None,
    )
    .await
    .expect_error(404, "not_found");
    let theirs = app
        .call(
            get(),
            &format!("/v1/stores/{other_store}/carts"),
            &other,
            None,
        )
        .await;
    theirs.expect(200);
    assert_eq!(theirs.body["data"], json!([]));
}

#[tokio::test]
async fn an_unpaid_storefront_order_frees_its_stock_after_the_hold() {
    let shop = Shop::open(spawn_app_with(|c| c.workers = 0).await, 10).await;
    let app = &shop.app;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["orders.cancelled"]).await;
    let front = Front::of(&shop).await;
    // A store token outlives the session over the two days the clock moves.
    let reader = app
        .store_token(
            &shop.token,
            &shop.store,
            json!(["orders.read", "inventory.read"]),
        )
        .await;
    let stock = || async {
        let r = app
            .call(get(), &shop.path("inventory?limit=200"), &reader, None)
            .await;
        let row = r.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["variant_id"] == shop.variants[0].as_str())
            .unwrap()
            .clone();
        let n = |k: &str| row[k].as_i64().unwrap();
        (n("on_hand"), n("reserved"), n("available"))
    };
    let (shop_ref, reader_ref) = (&shop, &reader);
    let status = |id: String| async move {
        app.call(
            get(),
            &shop_ref.path(&format!("orders/{id}")),
            reader_ref,
            None,
        )
        .await
        .body["status"]
            .clone()
    };
    let unpaid = front
        .filled_cart(&shop.variants[0], 3, "unpaid@example.com")
        .await;
    let o1 = front.checkout(&unpaid).await;
    o1.expect(201);
    let paid = front
        .filled_cart(&shop.variants[0], 2, "paid@example.com")
        .await;
    let o2 = front.checkout(&paid).await;
    o2.expect(201);
    shop.set_status(&o2.body["order"], "paid").await;
    assert_eq!(stock().await, (10, 5, 5));

    // Within the 48 hours nothing moves; past them the unpaid one is cancelled, once.
    app.clock.advance(Duration::hours(47));
    run_sweep(app).await;
    assert_eq!(stock().await, (10, 5, 5));
    app.clock.advance(Duration::hours(2));
    run_sweep(app).await;
    let id = o1.body["order"]["id"].as_str().unwrap().to_owned();
    assert_eq!(status(id.clone()).await, "cancelled");
    assert_eq!(stock().await, (10, 2, 8));
    let hits = rx.wait_for(1).await;
    assert_eq!(hits[0].json()["data"]["id"], id.as_str());
    run_sweep(app).await;
    rx.expect_no_more_than(app, 1).await;
    let paid_order = o2.body["order"]["id"].as_str().unwrap().to_owned();
    assert_eq!(status(paid_order).await, "paid");
}

#[tokio::test]
async fn checkouts_have_a_budget_per_address() {
    let shop = Shop::open(spawn_app_with(|c| c.checkouts_per_hour = 2).await, 10).await;
    let front = Front::of(&shop).await;
    for i in 0..2 {
        let cart = front
            .filled_cart(&shop.variants[0], 1, &format!("b{i}@example.com"))
            .await;
        front.checkout(&cart).await.expect(201);
    }
    let cart = front
        .filled_cart(&shop.variants[0], 1, "b3@example.com")
        .await;
    let r = front.checkout(&cart).await;
    r.expect_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some());
    // Nothing was ordered by the refused one.
    assert_eq!(shop.stock(0).await, (10, 2, 8));
}
