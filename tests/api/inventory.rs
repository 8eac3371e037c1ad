//! Stock: the inventory list and adjustments (issue 6).

use serde_json::json;

use crate::support::{Receiver, Shop, get, post, spawn_app};

#[tokio::test]
async fn adjustments_change_on_hand_and_fire_threshold_events_once_per_crossing() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let (app, token) = (&shop.app, &shop.token);
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["inventory.low_stock", "inventory.back_in_stock"])
        .await;
    let v = &shop.variants[0];
    let adjust = |delta: i64| {
        let path = shop.path(&format!("inventory/{v}/adjustments"));
        async move {
            app.call(
                post(),
                &path,
                token,
                Some(json!({"delta": delta, "reason": "recount"})),
            )
            .await
        }
    };

    let list = app.call(get(), &shop.path("inventory"), token, None).await;
    list.expect(200);
    // By SKU: M before S.
    assert_eq!(list.body["data"][0]["sku"], "TEE-M");
    let product = list.body["data"][1]["product_id"].clone();
    assert_eq!(
        list.body["data"][1],
        json!({"variant_id": v, "product_id": product, "sku": "TEE-S",
               "on_hand": 10, "reserved": 0, "available": 10, "low_stock_threshold": 5})
    );

    let r = adjust(-4).await;
    r.expect(201);
    assert_eq!(
        (
            r.body["delta"].as_i64(),
            r.body["reason"].as_str(),
            r.body["on_hand"].as_i64(),
            r.body["available"].as_i64(),
            r.body["variant_id"].as_str()
        ),
        (
            Some(-4),
            Some("recount"),
            Some(6),
            Some(6),
            Some(v.as_str())
        )
    );
    assert!(r.body["id"].is_string() && r.body["created_at"].is_string());
    // 6 -> 5 crosses into low stock; 5 -> 4 stays low; 4 -> 7 crosses back; 7 -> 8 stays.
    for (delta, on_hand) in [(-1, 5), (-1, 4), (3, 7), (1, 8)] {
        let r = adjust(delta).await;
        r.expect(201);
        assert_eq!(r.body["on_hand"], on_hand);
    }
    let hits = rx.events_in_order(2).await;
    assert_eq!(hits[0].json()["event"], "inventory.low_stock");
    assert_eq!(
        hits[0].json()["data"],
        json!({"variant_id": v, "product_id": product, "sku": "TEE-S",
               "on_hand": 5, "reserved": 0, "available": 5, "low_stock_threshold": 5})
    );
    assert_eq!(hits[1].json()["event"], "inventory.back_in_stock");
    assert_eq!(hits[1].json()["data"]["available"], 7);
    rx.expect_no_more_than(app, 2).await;

    // Reserved units are promised to orders: taking more than is available is 409, and
    // nothing changes.
    shop.order(6).await;
    assert_eq!(shop.stock(0).await, (8, 6, 2));
    let short = adjust(-3).await;
    short.expect_error(409, "insufficient_stock");
    assert_eq!(short.body["details"]["available"], 2);
    assert_eq!(shop.stock(0).await, (8, 6, 2));
    // No endpoint lists the adjustment log.
    assert_eq!(app.count("SELECT COUNT(*) FROM stock_adjustments").await, 5);

    // Bad input is 422; an unknown variant is 404.
    for body in [
        json!({"delta": 0, "reason": "x"}),
        json!({"delta": 1}),
        json!({"delta": 1, "reason": ""}),
        json!({"delta": 1.5, "reason": "x"}),
    ] {
        app.call(
            post(),
            &shop.path(&format!("inventory/{v}/adjustments")),
            token,
            Some(body),
        )
        .await
        .expect_error(422, "validation_failed");
    }
    app.call(
        post(),
        &shop.path(&format!("inventory/{}/adjustments", uuid::Uuid::now_v7())),
        token,
        Some(json!({"delta": 1, "reason": "x"})),
    )
    .await
    .expect_error(404, "not_found");

    let low = app
        .call(get(), &shop.path("inventory?low_stock=true"), token, None)
        .await;
    low.expect(200);
    assert_eq!(low.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(low.body["data"][0]["sku"], "TEE-S");
    let other = app
        .call(
            get(),
            &shop.path(&format!(
                "inventory?product_id={}&include_total=true&limit=1",
                low.body["data"][0]["product_id"].as_str().unwrap()
            )),
            token,
            None,
        )
        .await;
    assert_eq!(other.body["total"], 2);
    assert_eq!(other.body["has_more"], true);
}

#[tokio::test]
async fn concurrent_adjustments_never_lose_an_update() {
    let shop = Shop::open(spawn_app().await, 100).await;
    let path = shop.path(&format!("inventory/{}/adjustments", shop.variants[0]));
    let calls = (0..60).map(|i| {
        let delta = if i % 3 == 0 { -1 } else { 2 };
        shop.app.call(
            post(),
            &path,
            &shop.token,
            Some(json!({"delta": delta, "reason": "race"})),
        )
    });
    let replies = futures::future::join_all(calls).await;
    assert!(replies.iter().all(|r| r.status == 201));
    // 20 × -1 and 40 × +2.
    assert_eq!(shop.stock(0).await, (160, 0, 160));
    assert_eq!(
        shop.app
            .count("SELECT COALESCE(SUM(delta), 0) FROM stock_adjustments")
            .await,
        60
    );
}
