//! Orders, their lifecycle, payments and refunds (issue 6).

use serde_json::{Value, json};

use crate::support::{Receiver, Shop, get, patch, post, spawn_app, spawn_app_with, wait_until};

#[tokio::test]
async fn orders_are_priced_from_variants_numbered_and_reserve_stock() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let (app, token) = (&shop.app, &shop.token);
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["orders.created"]).await;

    let r = app
        .call(
            post(),
            &shop.path("orders"),
            token,
            Some(
                json!({"customer_id": shop.customer, "shipping_cents": 1000, "discount_cents": 500,
                        "note": " gift wrap ",
                        "items": [{"variant_id": shop.variants[0], "quantity": 2},
                                  {"variant_id": shop.variants[1], "quantity": 1}]}),
            ),
        )
        .await;
    r.expect(201);
    let o = &r.body;
    assert_eq!(o["number"], 1001);
    assert_eq!(o["store_id"], shop.store.as_str());
    assert_eq!(o["customer_id"], shop.customer.as_str());
    assert_eq!(o["status"], "pending");
    assert_eq!(
        o["allowed_status_transitions"],
        json!(["paid", "cancelled"])
    );
    assert_eq!(o["payments"], json!([]));
    assert_eq!(o["currency"], "BRL");
    assert_eq!(o["note"], "gift wrap");
    let line = &o["items"][0];
    assert_eq!(
        (
            line["variant_id"].as_str(),
            line["title"].as_str(),
            line["sku"].as_str(),
            line["quantity"].as_i64(),
            line["unit_price_cents"].as_i64(),
            line["total_cents"].as_i64()
        ),
        (
            Some(shop.variants[0].as_str()),
            Some("Tee"),
            Some("TEE-S"),
            Some(2),
            Some(2500),
            Some(5000)
        )
    );
    assert!(line["product_id"].is_string());
    assert_eq!(
        [
            "subtotal_cents",
            "shipping_cents",
            "discount_cents",
            "total_cents",
            "refunded_cents"
        ]
        .map(|k| o[k].as_i64().unwrap()),
        [8000, 1000, 500, 8500, 0]
    );
    assert_eq!(shop.stock(0).await, (10, 2, 8));
    assert_eq!(shop.stock(1).await, (10, 1, 9));
    let hit = &rx.wait_for(1).await[0];
    assert_eq!(hit.json()["event"], "orders.created");
    assert_eq!(hit.json()["data"], *o);
    // The stored order is what GET shows.
    let id = o["id"].as_str().unwrap();
    let got = app
        .call(get(), &shop.path(&format!("orders/{id}")), token, None)
        .await;
    got.expect(200);
    assert_eq!(got.body, *o);
    let customer = shop.read(&format!("customers/{}", shop.customer)).await;
    assert_eq!(customer["orders_count"], 1);

    // A manual order may set its own prices; it is the next number.
    let manual = app
        .call(
            post(),
            &shop.path("orders/manual"),
            token,
            Some(json!({"customer_id": shop.customer,
                        "items": [{"variant_id": shop.variants[1], "quantity": 3, "unit_price_cents": 2000}]})),
        )
        .await;
    manual.expect(201);
    assert_eq!(manual.body["number"], 1002);
    assert_eq!(manual.body["source"], "manual");
    assert_eq!(manual.body["total_cents"], 6000);
    assert_eq!(shop.stock(1).await, (10, 4, 6));

    // Not enough stock: 409, and nothing at all is written (the first line's reservation
    // is rolled back with the rest).
    let orders_before = app.total(token, &shop.path("orders")).await;
    let short = app
        .call(
            post(),
            &shop.path("orders"),
            token,
            Some(json!({"customer_id": shop.customer,
                        "items": [{"variant_id": shop.variants[0], "quantity": 1},
                                  {"variant_id": shop.variants[1], "quantity": 7}]})),
        )
        .await;
    short.expect_error(409, "insufficient_stock");
    assert_eq!(short.body["details"]["available"], 6);
    assert_eq!(short.body["details"]["requested"], 7);
    assert_eq!(short.body["details"]["sku"], "TEE-M");
    assert_eq!(app.total(token, &shop.path("orders")).await, orders_before);
    assert_eq!(shop.stock(0).await, (10, 2, 8));
    assert_eq!(shop.stock(1).await, (10, 4, 6));

    // Bad bodies are 422 and write nothing either.
    let other_shop_customer = {
        let (t2, _) = app.member("other@example.com").await;
        let s2 = app.open_store(&t2, "Other").await;
        let c = app
            .call(
                post(),
                &format!("/v1/stores/{s2}/customers"),
                &t2,
                Some(json!({"name": "Z"})),
            )
            .await;
        c.body["id"].as_str().unwrap().to_owned()
    };
    let v0 = &shop.variants[0];
    let c = &shop.customer;
    for (body, field) in [
        (json!({"customer_id": c, "items": []}), "items"),
        (
            json!({"customer_id": c, "items": [{"variant_id": v0, "quantity": 0}]}),
            "items[0].quantity",
        ),
        (
            json!({"customer_id": c, "items": [{"variant_id": v0, "quantity": 1, "unit_price_cents": 1}]}),
            "items[0].unit_price_cents",
        ),
        (
            json!({"customer_id": c, "items": [{"variant_id": v0, "quantity": 1}, {"variant_id": v0, "quantity": 1}]}),
            "items[1].variant_id",
        ),
        (
            json!({"customer_id": c, "items": [{"variant_id": uuid::Uuid::now_v7(), "quantity": 1}]}),
            "items[0].variant_id",
        ),
        (
            json!({"customer_id": other_shop_customer, "items": [{"variant_id": v0, "quantity": 1}]}),
            "customer_id",
        ),
        (
            json!({"customer_id": c, "discount_cents": 2501, "items": [{"variant_id": v0, "quantity": 1}]}),
            "discount_cents",
        ),
        (
            json!({"customer_id": c, "shipping_cents": -1, "items": [{"variant_id": v0, "quantity": 1}]}),
            "shipping_cents",
        ),
        (
            json!({"items": [{"variant_id": v0, "quantity": 1}]}),
            "customer_id",
        ),
    ] {
        let r = app
            .call(post(), &shop.path("orders"), token, Some(body.clone()))
            .await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"].get(field).is_some(),
            "{body}: {}",
            r.text
        );
    }
    assert_eq!(app.total(token, &shop.path("orders")).await, orders_before);
    assert_eq!(shop.stock(0).await, (10, 2, 8));
}

/// The lifecycle of the issue, written out: from each status, where PATCH may go.
const LIFECYCLE: [(&str, &[&str]); 8] = [
    ("pending", &["paid", "cancelled"]),
    ("paid", &["fulfilled", "cancelled"]),
    ("fulfilled", &["shipped"]),
    ("shipped", &["delivered"]),
    ("delivered", &[]),
    ("cancelled", &[]),
    ("partially_refunded", &[]),
    ("refunded", &[]),
];

/// An order brought to `status` the way a merchant would.
async fn order_in(shop: &Shop, status: &str) -> Value {
    let o = shop.order(1).await;
    let path = |s: &str| -> &'static [&'static str] {
        match s {
            "pending" => &[],
            // Refunded orders are paid first; the refund follows below.
            "paid" | "partially_refunded" | "refunded" => &["paid"],
            "fulfilled" => &["paid", "fulfilled"],
            "shipped" => &["paid", "fulfilled", "shipped"],
            "delivered" => &["paid", "fulfilled", "shipped", "delivered"],
            "cancelled" => &["cancelled"],
            _ => unreachable!(),
        }
    };
    let mut o = o;
    for s in path(status) {
        o = shop.set_status(&o, s).await;
    }
    if status.ends_with("refunded") {
        let amount = if status == "refunded" { 2500 } else { 100 };
        shop.refund(&o, amount).await.expect(201);
        o = shop
            .app
            .call(
                get(),
                &shop.path(&format!("orders/{}", o["id"].as_str().unwrap())),
                &shop.token,
                None,
            )
            .await
            .body
            .clone();
    }
    assert_eq!(o["status"], status);
    o
}

#[tokio::test]
async fn the_lifecycle_allows_exactly_its_transitions_for_every_pair_of_statuses() {
    let shop = Shop::open(spawn_app().await, 1000).await;
    for (from, allowed) in LIFECYCLE {
        for (to, _) in LIFECYCLE {
            let o = order_in(&shop, from).await;
            assert_eq!(o["allowed_status_transitions"], json!(allowed), "{from}");
            let path = shop.path(&format!("orders/{}", o["id"].as_str().unwrap()));
            let r = shop
                .app
                .call(patch(), &path, &shop.token, Some(json!({ "status": to })))
                .await;
            if allowed.contains(&to) {
                r.expect(200);
                assert_eq!(r.body["status"], to, "{from} -> {to}");
            } else {
                r.expect_error(409, "invalid_status_transition");
                assert_eq!(r.body["details"]["from"], from);
                assert_eq!(
                    r.body["details"]["allowed_status_transitions"],
                    json!(allowed)
                );
                let after = shop.app.call(get(), &path, &shop.token, None).await;
                assert_eq!(after.body, o, "{from} -> {to} changed the order");
            }
        }
    }
    // An unknown status is a validation error, not a transition error.
    let o = shop.order(1).await;
    shop.app
        .call(
            patch(),
            &shop.path(&format!("orders/{}", o["id"].as_str().unwrap())),
            &shop.token,
            Some(json!({"status": "lost"})),
        )
        .await
        .expect_error(422, "validation_failed");
}

#[tokio::test]
async fn status_changes_move_stock_record_the_payment_and_fire_their_events() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let rx = Receiver::start().await;
    shop.subscribe(
        &rx,
        &[
            "orders.created",
            "orders.paid",
            "orders.fulfilled",
            "orders.shipped",
            "orders.delivered",
            "orders.cancelled",
            "orders.updated",
        ],
    )
    .await;

    let cancelled = shop.order(3).await;
    assert_eq!(shop.stock(0).await, (10, 3, 7));
    let c = shop.set_status(&cancelled, "cancelled").await;
    assert_eq!(c["allowed_status_transitions"], json!([]));
    assert_eq!(shop.stock(0).await, (10, 0, 10));

    let o = shop.order(2).await;
    let paid = shop.set_status(&o, "paid").await;
    let pay = &paid["payments"][0];
    assert_eq!(
        (
            pay["provider"].as_str(),
            pay["amount_cents"].as_i64(),
            pay["refunded_cents"].as_i64(),
            pay["status"].as_str()
        ),
        (Some("manual"), Some(5000), Some(0), Some("approved"))
    );
    assert_eq!(shop.stock(0).await, (10, 2, 8));
    let fulfilled = shop.set_status(&o, "fulfilled").await;
    // Fulfilment takes the reserved units off hand; available does not move.
    assert_eq!(shop.stock(0).await, (8, 0, 8));
    assert_eq!(fulfilled["payments"], paid["payments"]);
    shop.set_status(&o, "shipped").await;
    let delivered = shop.set_status(&o, "delivered").await;
    let noted = shop
        .app
        .call(
            patch(),
            &shop.path(&format!("orders/{}", o["id"].as_str().unwrap())),
            &shop.token,
            Some(json!({"note": "left with the neighbour"})),
        )
        .await;
    noted.expect(200);
    assert_eq!(noted.body["status"], "delivered");

    let customer = shop.read(&format!("customers/{}", shop.customer)).await;
    assert_eq!(customer["orders_count"], 2);
    assert_eq!(customer["total_spent_cents"], 5000);

    let hits = rx.events_in_order(8).await;
    let seen: Vec<(String, String, i64)> = hits
        .iter()
        .map(|h| {
            let j = h.json();
            (
                j["event"].as_str().unwrap().to_owned(),
                j["data"]["status"].as_str().unwrap().to_owned(),
                j["data"]["number"].as_i64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("orders.created", "pending", 1001),
        ("orders.cancelled", "cancelled", 1001),
        ("orders.created", "pending", 1002),
        ("orders.paid", "paid", 1002),
        ("orders.fulfilled", "fulfilled", 1002),
        ("orders.shipped", "shipped", 1002),
        ("orders.delivered", "delivered", 1002),
        ("orders.updated", "delivered", 1002),
    ]
    .map(|(e, s, n)| (e.to_owned(), s.to_owned(), n));
    assert_eq!(seen, want);
    assert_eq!(hits[6].json()["data"], delivered);
    assert_eq!(hits[7].json()["data"], noted.body);
    rx.expect_no_more_than(&shop.app, 8).await;
}

/// The `Idempotency-Key` the provider is sent for a client's key on a payment of the shop.
fn provider_key(shop: &Shop, payment: &str, client_key: &str) -> String {
    merchant_admin::orders::payments::provider_key(
        &shop.app.state.hmac_key,
        shop.store.parse().unwrap(),
        payment.parse().unwrap(),
        client_key,
    )
}

/// The fake provider's refund requests: (path, Idempotency-Key, amount).
fn provider_calls(provider: &Receiver) -> Vec<(String, String, i64)> {
    provider
        .hits()
        .iter()
        .map(|h| {
            (
                h.path.clone(),
                h.header("idempotency-key").to_owned(),
                h.json()["amount_cents"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn refunds_go_through_the_provider_once_per_key_and_never_exceed_the_payment() {
    let provider = Receiver::start().await;
    let base = provider.base.clone();
    let app = spawn_app_with(move |c| {
        c.payments = merchant_admin::orders::payments::PaymentsConfig::Http {
            api_base: base,
            api_key: Some("pk_test".into()),
            timeout: std::time::Duration::from_secs(5),
        };
    })
    .await;
    let shop = Shop::open(app, 10).await;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["orders.refunded", "orders.updated"])
        .await;

    // Nothing paid yet: nothing to refund.
    let o = shop.order(2).await;
    shop.refund(&o, 100)
        .await
        .expect_error(409, "no_refundable_payment");
    let paid = shop.set_status(&o, "paid").await;
    let payment = paid["payments"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(paid["payments"][0]["provider"], "http");
    let refund_path = shop.path(&format!("orders/{}/refund", o["id"].as_str().unwrap()));

    // Part of it, with a key: the provider sees the key derived from it and the amount once,
    // however often the client replays.
    let body = json!({"amount_cents": 1500, "reason": "damaged"});
    let first = shop
        .app
        .post_idem_as(&refund_path, &shop.token, "rf-1", &body)
        .await;
    first.expect(201);
    assert_eq!(first.body["amount_cents"], 1500);
    assert_eq!(first.body["status"], "succeeded");
    assert_eq!(first.body["order_id"], o["id"]);
    assert_eq!(first.body["payment_id"], payment.as_str());
    for _ in 0..2 {
        let again = shop
            .app
            .post_idem_as(&refund_path, &shop.token, "rf-1", &body)
            .await;
        again.expect(201);
        assert_eq!(again.body, first.body);
    }
    let refunds_path = format!("/payments/{payment}/refunds");
    assert_eq!(
        provider_calls(&provider),
        vec![(
            refunds_path.clone(),
            provider_key(&shop, &payment, "rf-1"),
            1500
        )]
    );
    assert_eq!(provider.hits()[0].header("authorization"), "Bearer pk_test");
    let order_path = shop.path(&format!("orders/{}", o["id"].as_str().unwrap()));
    let after = shop.app.call(get(), &order_path, &shop.token, None).await;
    assert_eq!(after.body["status"], "partially_refunded");
    assert_eq!(after.body["refunded_cents"], 1500);
    assert_eq!(after.body["payments"][0]["refunded_cents"], 1500);
    assert_eq!(after.body["allowed_status_transitions"], json!([]));
    // Refunded before fulfilment, the order will not ship: its reserved units are back on sale.
    assert_eq!(shop.stock(0).await, (10, 0, 10));

    // Beyond the balance (3500 left), or below 1: refused before the provider is asked.
    let over = shop.refund(&o, 3501).await;
    over.expect_error(422, "refund_exceeds_refundable");
    assert_eq!(over.body["details"]["refundable_cents"], 3500);
    for amount in [0, -5] {
        shop.refund(&o, amount)
            .await
            .expect_error(422, "validation_failed");
    }
    assert_eq!(provider.hits().len(), 1);

    // The provider fails with a 500, which does not say whether it refunded: 202 with the
    // refund pending, nothing recorded as refunded. The client repeats the request with the
    // same key (a 202 is not remembered) once the provider is back.
    provider.answer(&[500]);
    let body = json!({"amount_cents": 3500});
    let pending = shop
        .app
        .post_idem_as(&refund_path, &shop.token, "rf-2", &body)
        .await;
    pending.expect(202);
    assert_eq!(pending.body["status"], "pending");
    let unchanged = shop.app.call(get(), &order_path, &shop.token, None).await;
    assert_eq!(unchanged.body, after.body);
    assert_eq!(
        shop.app
            .count("SELECT COUNT(*) FROM refunds WHERE status = 'pending'")
            .await,
        1
    );
    let rest = shop
        .app
        .post_idem_as(&refund_path, &shop.token, "rf-2", &body)
        .await;
    rest.expect(201);
    assert_eq!(rest.body["id"], pending.body["id"]);
    let rf2 = provider_key(&shop, &payment, "rf-2");
    assert_eq!(
        provider_calls(&provider)[1..],
        [
            (refunds_path.clone(), rf2.clone(), 3500),
            (refunds_path.clone(), rf2, 3500)
        ]
    );
    let done = shop.app.call(get(), &order_path, &shop.token, None).await;
    assert_eq!(done.body["status"], "refunded");
    assert_eq!(done.body["refunded_cents"], 5000);
    shop.refund(&o, 1)
        .await
        .expect_error(422, "refund_exceeds_refundable");

    // Without a key, the refund's own id stands in for the client's.
    let o2 = shop.order(1).await;
    let p2 = shop.set_status(&o2, "paid").await["payments"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = shop.refund(&o2, 100).await;
    r.expect(201);
    assert_eq!(
        provider.hits().last().unwrap().header("idempotency-key"),
        provider_key(&shop, &p2, r.body["id"].as_str().unwrap())
    );

    // A manual order's payment was taken by hand: refunding it asks no provider.
    let calls = provider.hits().len();
    let manual = shop
        .app
        .call(
            post(),
            &shop.path("orders/manual"),
            &shop.token,
            Some(json!({"customer_id": shop.customer, "items": [{"variant_id": shop.variants[1], "quantity": 1}]})),
        )
        .await;
    manual.expect(201);
    let mp = shop.set_status(&manual.body, "paid").await;
    assert_eq!(mp["payments"][0]["provider"], "manual");
    shop.refund(&manual.body, 3000).await.expect(201);
    assert_eq!(provider.hits().len(), calls);

    // Events: partial refunds are updates; a full refund is orders.refunded, once.
    let events: Vec<(String, String)> = rx
        .events_in_order(4)
        .await
        .iter()
        .map(|h| {
            let j = h.json();
            (
                j["event"].as_str().unwrap().to_owned(),
                j["data"]["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("orders.updated", "partially_refunded"),
            ("orders.refunded", "refunded"),
            ("orders.updated", "partially_refunded"),
            ("orders.refunded", "refunded"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    rx.expect_no_more_than(&shop.app, 4).await;
    let customer = shop.read(&format!("customers/{}", shop.customer)).await;
    // Paid 5000 + 2500 + 3000, refunded 5000 + 100 + 3000.
    assert_eq!(customer["total_spent_cents"], 2400);
}

#[tokio::test]
async fn creating_an_order_is_idempotent() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let body = json!({"customer_id": shop.customer,
                      "items": [{"variant_id": shop.variants[0], "quantity": 4}]});
    let first = shop
        .app
        .post_idem_as(&shop.path("orders"), &shop.token, "order-1", &body)
        .await;
    first.expect(201);
    let again = shop
        .app
        .post_idem_as(&shop.path("orders"), &shop.token, "order-1", &body)
        .await;
    again.expect(201);
    assert_eq!(again.body, first.body);
    assert_eq!(shop.app.total(&shop.token, &shop.path("orders")).await, 1);
    assert_eq!(shop.stock(0).await, (10, 4, 6));
    // The same key with another body is refused.
    let other = json!({"customer_id": shop.customer,
                       "items": [{"variant_id": shop.variants[0], "quantity": 5}]});
    shop.app
        .post_idem_as(&shop.path("orders"), &shop.token, "order-1", &other)
        .await
        .expect_error(422, "idempotency_key_reused");
}

#[tokio::test]
async fn fifty_concurrent_orders_for_the_last_ten_units_never_oversell() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["inventory.low_stock", "inventory.back_in_stock"])
        .await;
    let orders = shop.path("orders");
    let calls = (0..50).map(|_| {
        shop.app.call(
            post(),
            &orders,
            &shop.token,
            Some(json!({"customer_id": shop.customer,
                        "items": [{"variant_id": shop.variants[0], "quantity": 1}]})),
        )
    });
    let replies = futures::future::join_all(calls).await;
    let created = replies.iter().filter(|r| r.status == 201).count();
    let refused = replies
        .iter()
        .filter(|r| r.status == 409 && r.body["code"] == "insufficient_stock")
        .count();
    assert_eq!((created, refused), (10, 40));
    assert_eq!(shop.stock(0).await, (10, 10, 0));
    assert_eq!(shop.app.total(&shop.token, &shop.path("orders")).await, 10);
    let mut numbers: Vec<i64> = replies
        .iter()
        .filter(|r| r.status == 201)
        .map(|r| r.body["number"].as_i64().unwrap())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1001..=1010).collect::<Vec<_>>());
    // Available went 10 -> 0 past the threshold of 5: one low_stock, nothing else.
    let hits = rx.wait_for(1).await;
    assert_eq!(hits[0].json()["event"], "inventory.low_stock");
    assert_eq!(hits[0].json()["data"]["available"], 5);
    rx.expect_no_more_than(&shop.app, 1).await;
}

#[tokio::test]
async fn order_lists_filter_and_page_stably_while_orders_arrive() {
    let shop = Shop::open(spawn_app().await, 100).await;
    let mut made = Vec::new();
    for _ in 0..5 {
        made.push(shop.order(1).await);
        shop.app.clock.advance(chrono::Duration::seconds(1));
    }
    shop.set_status(&made[1], "paid").await;
    shop.set_status(&made[3], "paid").await;

    let page1 = shop
        .app
        .call(get(), &shop.path("orders?limit=2"), &shop.token, None)
        .await;
    page1.expect(200);
    assert_eq!(page1.body["data"][0]["number"], 1005);
    assert_eq!(page1.body["data"][1]["number"], 1004);
    // The list serves the same representation as GET one order.
    assert_eq!(page1.body["data"][1]["status"], "paid");
    assert_eq!(page1.body["data"][1]["payments"][0]["amount_cents"], 2500);
    // A new order between pages does not shift the next one.
    shop.order(1).await;
    let cursor = page1.body["next_cursor"].as_str().unwrap();
    let page2 = shop
        .app
        .call(
            get(),
            &shop.path(&format!("orders?limit=2&cursor={cursor}")),
            &shop.token,
            None,
        )
        .await;
    page2.expect(200);
    let numbers = |p: &Value| -> Vec<i64> {
        p["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["number"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(numbers(&page2.body), [1003, 1002]);

    let paid = shop
        .app
        .call(
            get(),
            &shop.path("orders?status=paid&include_total=true"),
            &shop.token,
            None,
        )
        .await;
    paid.expect(200);
    assert_eq!(numbers(&paid.body), [1004, 1002]);
    assert_eq!(paid.body["total"], 2);
    let by_customer = shop
        .app
        .call(
            get(),
            &shop.path(&format!(
                "orders?customer_id={}&include_total=true&limit=1",
                shop.customer
            )),
            &shop.token,
            None,
        )
        .await;
    assert_eq!(by_customer.body["total"], 6);
    // A cursor belongs to its filters.
    shop.app
        .call(
            get(),
            &shop.path(&format!("orders?status=paid&cursor={cursor}")),
            &shop.token,
            None,
        )
        .await
        .expect_error(400, "invalid_cursor");
    shop.app
        .call(get(), &shop.path("orders?status=lost"), &shop.token, None)
        .await
        .expect_error(422, "validation_failed");
}

#[tokio::test]
async fn another_stores_orders_and_stock_are_not_found() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let o = shop.order(1).await;
    shop.set_status(&o, "paid").await;
    let (other, _) = shop.app.member("other@example.com").await;
    let theirs = shop.app.open_store(&other, "Other").await;
    let id = o["id"].as_str().unwrap();
    let v = &shop.variants[0];
    // The other owner names our ids under their own store.
    for (method, path, body) in [
        (get(), format!("/v1/stores/{theirs}/orders/{id}"), None),
        (
            patch(),
            format!("/v1/stores/{theirs}/orders/{id}"),
            Some(json!({"status": "fulfilled"})),
        ),
        (
            post(),
            format!("/v1/stores/{theirs}/orders/{id}/refund"),
            Some(json!({"amount_cents": 1})),
        ),
        (
            post(),
            format!("/v1/stores/{theirs}/inventory/{v}/adjustments"),
            Some(json!({"delta": -1, "reason": "x"})),
        ),
    ] {
        shop.app
            .call(method, &path, &other, body)
            .await
            .expect_error(404, "not_found");
    }
    let theirs_orders = shop
        .app
        .call(
            post(),
            &format!("/v1/stores/{theirs}/orders"),
            &other,
            Some(
                json!({"customer_id": shop.customer, "items": [{"variant_id": v, "quantity": 1}]}),
            ),
        )
        .await;
    theirs_orders.expect_error(422, "validation_failed");
    let after = shop
        .app
        .call(
            get(),
            &shop.path(&format!("orders/{id}")),
            &shop.token,
            None,
        )
        .await;
    assert_eq!(after.body["status"], "paid");
    assert_eq!(after.body["refunded_cents"], 0);
    assert_eq!(shop.stock(0).await, (10, 1, 9));
}

#[tokio::test]
async fn a_refund_whose_client_hangs_up_is_still_recorded_once() {
    let provider = Receiver::start().await;
    let base = provider.base.clone();
    let app = spawn_app_with(move |c| {
        c.payments = merchant_admin::orders::payments::PaymentsConfig::Http {
            api_base: base,
            api_key: None,
            timeout: std::time::Duration::from_secs(5),
        };
    })
    .await;
    let shop = Shop::open(app, 10).await;
    let o = shop.order(1).await;
    shop.set_status(&o, "paid").await;
    let path = shop.path(&format!("orders/{}/refund", o["id"].as_str().unwrap()));
    let body = json!({"amount_cents": 1000});

    // The provider takes its time; the client gives up before it answers.
    let gate = provider.hold();
    let gave_up = shop
        .app
        .client
        .post(shop.app.url(&path))
        .bearer_auth(&shop.token)
        .header("idempotency-key", "hang-up")
        .json(&body)
        .timeout(std::time::Duration::from_millis(300))
        .send()
        .await;
    assert!(gave_up.is_err(), "the client timed out");
    provider.wait_for(1).await;
    gate.add_permits(100);
    // The refund is recorded all the same.
    let order = shop.path(&format!("orders/{}", o["id"].as_str().unwrap()));
    let mut refunded = 0;
    for _ in 0..200 {
        refunded = shop.app.call(get(), &order, &shop.token, None).await.body["refunded_cents"]
            .as_i64()
            .unwrap();
        if refunded > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(refunded, 1000);
    // Retrying with the key answers that refund, without asking the provider again.
    let retry = shop
        .app
        .post_idem_as(&path, &shop.token, "hang-up", &body)
        .await;
    retry.expect(201);
    assert_eq!(retry.body["status"], "succeeded");
    assert_eq!(retry.body["amount_cents"], 1000);
    assert_eq!(provider.hits().len(), 1);
    // No endpoint lists refunds; `refunded_cents` below shows only their sum.
    assert_eq!(shop.app.count("SELECT COUNT(*) FROM refunds").await, 1);
    let after = shop.app.call(get(), &order, &shop.token, None).await;
    assert_eq!(after.body["refunded_cents"], 1000);
}

/// A server whose API orders are paid and refunded through `provider`, its answers awaited
/// at most `timeout`; `workers` job workers (0: the test runs the queue itself).
async fn paying_app(
    provider: &Receiver,
    timeout_ms: u64,
    workers: usize,
) -> crate::support::TestApp {
    let base = provider.base.clone();
    spawn_app_with(move |c| {
        c.workers = workers;
        c.payments = merchant_admin::orders::payments::PaymentsConfig::Http {
            api_base: base,
            api_key: None,
            timeout: std::time::Duration::from_millis(timeout_ms),
        };
    })
    .await
}

/// The order's `refunded_cents`, its first payment's, and the status.
async fn refunded(shop: &Shop, order: &Value) -> (i64, i64, String) {
    let o = shop
        .read(&format!("orders/{}", order["id"].as_str().unwrap()))
        .await;
    (
        o["refunded_cents"].as_i64().unwrap(),
        o["payments"][0]["refunded_cents"].as_i64().unwrap(),
        o["status"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_refund_settles_exactly_once_however_many_identical_requests_race() {
    let provider = Receiver::start().await;
    // The provider answers slowly, so the duplicates arrive while the first is being asked.
    provider.delay(std::time::Duration::from_millis(500));
    let shop = Shop::open(paying_app(&provider, 5000, 1).await, 10).await;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["orders.refunded", "orders.updated"])
        .await;
    let o = shop.order(2).await;
    shop.set_status(&o, "paid").await;
    let path = shop.path(&format!("orders/{}/refund", o["id"].as_str().unwrap()));
    // Twenty clients of the store, each with its own token (so the idempotency layer, which
    // keys by credential, lets every one through), send the same refund with the same key.
    let mut tokens = Vec::new();
    for _ in 0..20 {
        tokens.push(
            shop.app
                .store_token(&shop.token, &shop.store, json!(["orders.refund"]))
                .await,
        );
    }

    for (round, (key, amount)) in [("refund-1", 1000), ("refund-2", 4000)]
        .into_iter()
        .enumerate()
    {
        let body = json!({ "amount_cents": amount });
        let replies = futures::future::join_all(
            tokens
                .iter()
                .map(|t| shop.app.post_idem_as(&path, t, key, &body)),
        )
        .await;
        let mut settled = 0;
        for r in &replies {
            match r.status.as_u16() {
                201 => {
                    settled += 1;
                    assert_eq!(r.body["status"], "succeeded");
                }
                // Another request with the key is asking the provider: the pending refund.
                202 => assert_eq!(r.body["status"], "pending", "{}", r.text),
                _ => panic!("unexpected reply: {} {}", r.status, r.text),
            }
            assert_eq!(r.body["id"], replies[0].body["id"]);
            assert_eq!(r.body["amount_cents"], amount);
        }
        assert!(
            settled >= 1,
            "the request that asked answers the settled refund"
        );
        // The provider was asked once per refund, and the refund counted once.
        assert_eq!(provider.hits().len(), round + 1);
        assert_eq!(
            shop.app
                .count("SELECT COUNT(*) FROM refunds WHERE status = 'succeeded'")
                .await,
            i64::try_from(round).unwrap() + 1
        );
    }
    assert_eq!(
        refunded(&shop, &o).await,
        (5000, 5000, "refunded".to_owned())
    );
    let customer = shop.read(&format!("customers/{}", shop.customer)).await;
    assert_eq!(customer["total_spent_cents"], 0);
    // One event per refund: the partial one an update, the rest the full refund.
    let events: Vec<String> = rx
        .events_in_order(2)
        .await
        .iter()
        .map(|h| h.json()["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(events, ["orders.updated", "orders.refunded"]);
    rx.expect_no_more_than(&shop.app, 2).await;
    // A late repeat asks nothing and answers the settled refund.
    let again = shop
        .app
        .post_idem_as(
            &path,
            &tokens[3],
            "refund-1",
            &json!({ "amount_cents": 1000 }),
        )
        .await;
    again.expect(201);
    assert_eq!(provider.hits().len(), 2);
}

/// Runs one due job of the default queue.
async fn run_job(shop: &Shop) -> merchant_admin::jobs::Outcome {
    merchant_admin::jobs::run_once(&shop.app.state)
        .await
        .unwrap()
}

async fn open_refund_checks(shop: &Shop) -> i64 {
    shop.app
        .count("SELECT COUNT(*) FROM jobs WHERE kind = 'refund_check' AND state <> 'done'")
        .await
}

/// Waits until every webhook delivery job has finished.
async fn deliveries_settled(shop: &Shop) {
    wait_until("webhook deliveries to finish", || async {
        shop.app
            .count("SELECT COUNT(*) FROM jobs WHERE queue = 'webhooks' AND state <> 'done'")
            .await
            == 0
    })
    .await;
}

#[tokio::test]
async fn uncertain_outcomes_stay_pending_until_the_provider_answers_for_sure() {
    use merchant_admin::jobs::Outcome;
    let provider = Receiver::start().await;
    let shop = Shop::open(paying_app(&provider, 300, 0).await, 10).await;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["orders.refunded", "orders.updated"])
        .await;
    let o = shop.order(2).await;
    let payment = shop.set_status(&o, "paid").await["payments"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = shop.path(&format!("orders/{}/refund", o["id"].as_str().unwrap()));
    let lease = merchant_admin::orders::payments::ask_lease(&shop.app.state.cfg.payments);
    let past_lease = chrono::Duration::from_std(lease).unwrap() + chrono::Duration::seconds(1);

    // The provider does not answer within our timeout: it may have refunded, so the client
    // hears 202 with the refund pending, and its amount stays held.
    provider.delay(std::time::Duration::from_secs(1));
    let first = shop
        .app
        .post_idem_as(
            &path,
            &shop.token,
            "rf-slow",
            &json!({"amount_cents": 3000}),
        )
        .await;
    first.expect(202);
    assert_eq!(first.body["status"], "pending");
    assert_eq!(refunded(&shop, &o).await, (0, 0, "paid".to_owned()));
    let over = shop.refund(&o, 2001).await;
    over.expect_error(422, "refund_exceeds_refundable");
    assert_eq!(over.body["details"]["refundable_cents"], 2000);
    provider.delay(std::time::Duration::ZERO);

    // The check asks again once the first ask's lease is over, with the same key. A 503
    // still does not say: it stays pending, and the queue tries again after its backoff.
    // Nor does a 401, which speaks of our API key (rotated?), not of the refund.
    provider.answer(&[503, 401]);
    shop.app.clock.advance(past_lease);
    assert_eq!(run_job(&shop).await, Outcome::Ran);
    assert_eq!(refunded(&shop, &o).await, (0, 0, "paid".to_owned()));
    assert_eq!(run_job(&shop).await, Outcome::Empty);
    shop.app.clock.advance(chrono::Duration::seconds(12));
    assert_eq!(run_job(&shop).await, Outcome::Ran);
    assert_eq!(refunded(&shop, &o).await, (0, 0, "paid".to_owned()));
    shop.app.clock.advance(chrono::Duration::seconds(23));
    assert_eq!(run_job(&shop).await, Outcome::Ran);
    assert_eq!(
        refunded(&shop, &o).await,
        (3000, 3000, "partially_refunded".to_owned())
    );
    let key = provider_key(&shop, &payment, "rf-slow");
    assert_eq!(
        provider_calls(&provider),
        vec![(format!("/payments/{payment}/refunds"), key, 3000); 4]
    );
    // Settled once; the client's repeat now answers it, and asks nothing.
    let repeat = shop
        .app
        .post_idem_as(
            &path,
            &shop.token,
            "rf-slow",
            &json!({"amount_cents": 3000}),
        )
        .await;
    repeat.expect(201);
    assert_eq!(repeat.body["status"], "succeeded");
    assert_eq!(repeat.body["id"], first.body["id"]);
    assert_eq!(provider.hits().len(), 4);
    // The check is done. Its event is delivered before the clock moves again (a delivery in
    // flight across a jump would be taken for a dead one and sent again).
    assert_eq!(open_refund_checks(&shop).await, 0);
    assert_eq!(rx.wait_for(1).await[0].json()["event"], "orders.updated");
    deliveries_settled(&shop).await;

    // Uncertain again, then definitely refused by the check: failed, the hold released.
    provider.delay(std::time::Duration::from_secs(1));
    let second = shop
        .app
        .post_idem_as(&path, &shop.token, "rf-no", &json!({"amount_cents": 2000}))
        .await;
    second.expect(202);
    shop.refund(&o, 1)
        .await
        .expect_error(422, "refund_exceeds_refundable");
    provider.delay(std::time::Duration::ZERO);
    provider.answer(&[402]);
    shop.app.clock.advance(past_lease);
    assert_eq!(run_job(&shop).await, Outcome::Ran);
    assert_eq!(provider.hits().len(), 6);
    let over = shop.refund(&o, 2001).await;
    over.expect_error(422, "refund_exceeds_refundable");
    assert_eq!(over.body["details"]["refundable_cents"], 2000);
    let refused = shop
        .app
        .post_idem_as(&path, &shop.token, "rf-no", &json!({"amount_cents": 2000}))
        .await;
    refused.expect_error(502, "payment_provider_failed");
    assert_eq!(refused.body["details"]["refund"]["status"], "failed");
    assert_eq!(refused.body["details"]["refund"]["id"], second.body["id"]);
    assert_eq!(provider.hits().len(), 6);
    assert_eq!(open_refund_checks(&shop).await, 0);

    // A refusal answered at once: 502, and nothing stays held.
    provider.answer(&[400]);
    shop.refund(&o, 500)
        .await
        .expect_error(502, "payment_provider_failed");
    assert_eq!(
        refunded(&shop, &o).await,
        (3000, 3000, "partially_refunded".to_owned())
    );
    shop.refund(&o, 2000).await.expect(201);
    assert_eq!(
        refunded(&shop, &o).await,
        (5000, 5000, "refunded".to_owned())
    );
    let events: Vec<String> = rx
        .events_in_order(2)
        .await
        .iter()
        .map(|h| h.json()["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(events, ["orders.updated", "orders.refunded"]);
    rx.expect_no_more_than(&shop.app, 2).await;
}

#[cfg(feature = "failpoints")]
#[tokio::test]
async fn uncertain_outcomes_stay_pending_and_a_hold_never_asked_about_is_resumed() {
    use merchant_admin::jobs::Outcome;
    let provider = Receiver::start().await;
    let shop = Shop::open(paying_app(&provider, 5000, 0).await, 10).await;
    let o = shop.order(2).await;
    let payment = shop.set_status(&o, "paid").await["payments"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = shop.path(&format!("orders/{}/refund", o["id"].as_str().unwrap()));
    let body = json!({"amount_cents": 1200});

    // The request stops after holding the amount and before asking the provider, as when
    // the process dies there. The fail point fires for this key only.
    fail::cfg("orders::refund_before_ask", "return(stopped-early)").unwrap();
    let stopped = shop
        .app
        .post_idem_as(&path, &shop.token, "stopped-early", &body)
        .await;
    fail::remove("orders::refund_before_ask");
    stopped.expect(500);
    assert!(provider.hits().is_empty());
    let over = shop.refund(&o, 3801).await;
    over.expect_error(422, "refund_exceeds_refundable");
    assert_eq!(over.body["details"]["refundable_cents"], 3800);

    // Nothing asks before the hold's lease is over; then the check does, with the key.
    assert_eq!(run_job(&shop).await, Outcome::Empty);
    let lease = merchant_admin::orders::payments::ask_lease(&shop.app.state.cfg.payments);
    shop.app
        .clock
        .advance(chrono::Duration::from_std(lease).unwrap() + chrono::Duration::seconds(1));
    assert_eq!(run_job(&shop).await, Outcome::Ran);
    assert_eq!(
        provider_calls(&provider),
        vec![(
            format!("/payments/{payment}/refunds"),
            provider_key(&shop, &payment, "stopped-early"),
            1200
        )]
    );
    assert_eq!(
        refunded(&shop, &o).await,
        (1200, 1200, "partially_refunded".to_owned())
    );
    let retry = shop
        .app
        .post_idem_as(&path, &shop.token, "stopped-early", &body)
        .await;
    retry.expect(201);
    assert_eq!(retry.body["status"], "succeeded");
    assert_eq!(provider.hits().len(), 1);
}

/// A second store on the same server with a paid API order of 2500: (token, store, order
/// path, payment id).
async fn other_store_with_paid_order(
    app: &crate::support::TestApp,
) -> (String, String, String, String) {
    let (token, _) = app.member("second@example.com").await;
    let store = app.open_store(&token, "Second").await;
    let call = |path: &str, body: Value| {
        let path = format!("/v1/stores/{store}/{path}");
        let token = token.clone();
        async move { app.call(post(), &path, &token, Some(body)).await }
    };
    let customer = call(
        "customers",
        json!({"name": "Bia", "email": "bia@example.com"}),
    )
    .await;
    customer.expect(201);
    let product = call(
        "products",
        json!({"title": "Cap", "variants": [{"sku": "CAP", "title": "One", "price_cents": 2500, "on_hand": 5}]}),
    )
    .await;
    product.expect(201);
    let order = call(
        "orders",
        json!({"customer_id": customer.body["id"],
               "items": [{"variant_id": product.body["variants"][0]["id"], "quantity": 1}]}),
    )
    .await;
    order.expect(201);
    let order_path = format!(
        "/v1/stores/{store}/orders/{}",
        order.body["id"].as_str().unwrap()
    );
    let paid = app
        .call(
            patch(),
            &order_path,
            &token,
            Some(json!({"status": "paid"})),
        )
        .await;
    paid.expect(200);
    let payment = paid.body["payments"][0]["id"].as_str().unwrap().to_owned();
    (token, store, order_path, payment)
}

#[tokio::test]
async fn provider_idempotency_keys_are_ours_so_two_stores_never_collide() {
    use hmac::{Hmac, Mac};
    let provider = Receiver::start().await;
    let shop = Shop::open(paying_app(&provider, 5000, 1).await, 10).await;
    let o = shop.order(1).await;
    let mine = shop.set_status(&o, "paid").await["payments"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (token, store, order_path, theirs) = other_store_with_paid_order(&shop.app).await;

    // Both stores' clients happen to use the same key.
    let body = json!({"amount_cents": 700});
    let a = shop
        .app
        .post_idem_as(
            &shop.path(&format!("orders/{}/refund", o["id"].as_str().unwrap())),
            &shop.token,
            "refund-1",
            &body,
        )
        .await;
    a.expect(201);
    let b = shop
        .app
        .post_idem_as(&format!("{order_path}/refund"), &token, "refund-1", &body)
        .await;
    b.expect(201);

    // The provider saw two keys, neither the client's: each an HMAC, with the server's key,
    // of the store, the payment and the client's key.
    let ours = |store: &str, payment: &str| {
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&shop.app.state.hmac_key).unwrap();
        mac.update(format!("refund\n{store}\n{payment}\nrefund-1").as_bytes());
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let keys: Vec<String> = provider
        .hits()
        .iter()
        .map(|h| h.header("idempotency-key").to_owned())
        .collect();
    assert_eq!(keys, [ours(&shop.store, &mine), ours(&store, &theirs)]);
    assert_ne!(keys[0], keys[1]);
    assert!(keys.iter().all(|k| !k.contains("refund-1")));
    // Each store's refund went through, on its own order.
    assert_eq!(refunded(&shop, &o).await.0, 700);
    let other = shop.app.call(get(), &order_path, &token, None).await;
    assert_eq!(other.body["refunded_cents"], 700);
}

#[tokio::test]
async fn an_order_is_found_by_its_number_in_its_own_store_only() {
    let app = crate::support::spawn_app().await;
    let out = app.seed_demo("owner@numbers.example", "Numeros").await;
    let login = app.login_as("owner@numbers.example", "t").await;
    let token = login.body["token"].as_str().unwrap().to_owned();
    let base = format!("/v1/stores/{}/orders", out.store_id);
    let any = app.get_as(&format!("{base}?limit=3"), &token).await;
    let order = &any.body["data"][2];
    let (number, status) = (order["number"].as_i64().unwrap(), &order["status"]);

    let found = app
        .get_as(
            &format!("{base}?number={number}&include_total=true"),
            &token,
        )
        .await;
    found.expect(200);
    assert_eq!(found.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(found.body["data"][0]["id"], order["id"]);
    assert_eq!(found.body["total"], 1);
    assert_eq!(found.body["has_more"], false);
    let same = app
        .get_as(
            &format!("{base}?number={number}&status={}", status.as_str().unwrap()),
            &token,
        )
        .await;
    assert_eq!(same.body["data"].as_array().unwrap().len(), 1);
    let other = if status == "cancelled" {
        "paid"
    } else {
        "cancelled"
    };
    let none = app
        .get_as(&format!("{base}?number={number}&status={other}"), &token)
        .await;
    assert_eq!(
        none.body["data"].as_array().unwrap().len(),
        0,
        "{}",
        none.text
    );
    let missing = app
        .get_as(&format!("{base}?number=999999&include_total=true"), &token)
        .await;
    assert_eq!(missing.body["total"], 0);

    // Another store has its own numbers: the same number there is not this order.
    let (stranger, _) = app.member("stranger@numbers.example").await;
    let theirs = app.open_store(&stranger, "Outra").await;
    let r = app
        .get_as(
            &format!("/v1/stores/{theirs}/orders?number={number}"),
            &stranger,
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 0);

    app.get_as(&format!("{base}?number=0"), &token)
        .await
        .expect_error(422, "validation_failed");
    let bad = app.get_as(&format!("{base}?number=abc"), &token).await;
    assert!(bad.status.is_client_error(), "{}", bad.text);
}
