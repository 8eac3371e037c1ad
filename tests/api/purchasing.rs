//! Purchasing: suppliers, purchase orders and receiving stock (issue 20 "Purchasing").

use serde_json::{Value, json};

use crate::support::{Receiver, Reply, Shop, get, patch, post, spawn_app};

fn delete() -> reqwest::Method {
    reqwest::Method::DELETE
}

impl Shop {
    async fn supplier(&self, name: &str) -> String {
        let r = self
            .app
            .call(
                post(),
                &self.path("suppliers"),
                &self.token,
                Some(json!({ "name": name })),
            )
            .await;
        r.expect(201);
        r.body["id"].as_str().unwrap().to_owned()
    }

    /// A draft purchase order of `lines` (variant index, quantity) at 1000 cents a unit.
    async fn draft(&self, supplier: &str, lines: &[(usize, i64)]) -> Value {
        let items: Vec<Value> = lines
            .iter()
            .map(|(i, q)| json!({"variant_id": self.variants[*i], "quantity": q, "unit_cost_cents": 1000}))
            .collect();
        let r = self
            .app
            .call(
                post(),
                &self.path("purchase-orders"),
                &self.token,
                Some(json!({"supplier_id": supplier, "items": items})),
            )
            .await;
        r.expect(201);
        r.body.clone()
    }

    async fn po(&self, po: &Value, action: &str, body: Option<Value>) -> Reply {
        let id = po["id"].as_str().unwrap();
        self.app
            .call(
                post(),
                &self.path(&format!("purchase-orders/{id}/{action}")),
                &self.token,
                body,
            )
            .await
    }

    /// A receipt of (variant index, quantity) lines.
    async fn receive(&self, po: &Value, lines: &[(usize, i64)]) -> Reply {
        let items: Vec<Value> = lines
            .iter()
            .map(|(i, q)| json!({"variant_id": self.variants[*i], "quantity": q}))
            .collect();
        self.po(po, "receive", Some(json!({ "items": items })))
            .await
    }
}

#[tokio::test]
async fn suppliers_are_created_read_changed_listed_and_deleted() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let (app, token) = (&shop.app, &shop.token);
    let r = app
        .call(
            post(),
            &shop.path("suppliers"),
            token,
            Some(
                json!({"name": " Malharia Sul ", "email": "Vendas@Malharia.example",
                        "phone": "+55 11 4000-1000", "contact_name": "Rita", "notes": "Net 30"}),
            ),
        )
        .await;
    r.expect(201);
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (
            &r.body["name"],
            &r.body["email"],
            &r.body["phone"],
            &r.body["contact_name"],
            &r.body["notes"],
            &r.body["store_id"]
        ),
        (
            &json!("Malharia Sul"),
            &json!("vendas@malharia.example"),
            &json!("+55 11 4000-1000"),
            &json!("Rita"),
            &json!("Net 30"),
            &json!(shop.store)
        )
    );
    assert!(r.body["created_at"].is_string() && r.body["updated_at"].is_string());
    let one = shop.path(&format!("suppliers/{id}"));
    assert_eq!(shop.read(&format!("suppliers/{id}")).await, r.body);

    // null clears an optional field; a left-out one stays.
    let changed = app
        .call(
            patch(),
            &one,
            token,
            Some(json!({"name": "Malharia do Sul", "email": null})),
        )
        .await;
    changed.expect(200);
    assert_eq!(changed.body["name"], "Malharia do Sul");
    assert_eq!(changed.body["email"], Value::Null);
    assert_eq!(changed.body["contact_name"], "Rita");

    for (method, body) in [
        (post(), json!({"name": ""})),
        (post(), json!({"name": "X", "email": "not-an-email"})),
        (post(), json!({"name": "X", "phone": "12"})),
        (post(), json!({"name": "X", "website": "x"})),
        (patch(), json!({"name": " "})),
    ] {
        let path = if method == post() {
            shop.path("suppliers")
        } else {
            one.clone()
        };
        app.call(method, &path, token, Some(body))
            .await
            .expect_error(422, "validation_failed");
    }

    // Keyset paging, newest first.
    let second = shop.supplier("Tecelagem Norte").await;
    let page = shop.read("suppliers?limit=1&include_total=true").await;
    assert_eq!(page["data"][0]["id"], second.as_str());
    assert_eq!(
        (page["has_more"].clone(), page["total"].clone()),
        (json!(true), json!(2))
    );
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = shop
        .read(&format!("suppliers?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(rest["data"][0]["id"], id.as_str());
    assert_eq!(rest["has_more"], false);

    // A supplier with purchase orders is kept; one without goes.
    shop.draft(&id, &[(0, 1)]).await;
    app.call(delete(), &one, token, None)
        .await
        .expect_error(409, "conflict");
    let other = shop.path(&format!("suppliers/{second}"));
    app.call(delete(), &other, token, None).await.expect(204);
    app.call(get(), &other, token, None)
        .await
        .expect_error(404, "not_found");
    app.call(delete(), &other, token, None)
        .await
        .expect_error(404, "not_found");

    let audit = shop.read("audit-log?limit=100").await;
    let actions: Vec<&str> = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .filter(|a| a.starts_with("supplier."))
        .collect();
    assert_eq!(
        actions,
        [
            "supplier.deleted",
            "supplier.created",
            "supplier.updated",
            "supplier.created"
        ]
    );
}

#[tokio::test]
async fn purchase_orders_move_through_every_status_and_refuse_the_rest() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let (app, token) = (&shop.app, &shop.token);
    let supplier = shop.supplier("Malharia").await;
    let other_supplier = shop.supplier("Tecelagem").await;

    let a = shop.draft(&supplier, &[(0, 4)]).await;
    assert_eq!(a["number"], 1001);
    assert_eq!(a["status"], "draft");
    assert_eq!(a["supplier_id"], supplier.as_str());
    assert_eq!(
        a["items"],
        json!([{"variant_id": shop.variants[0], "quantity": 4, "unit_cost_cents": 1000,
                "received_quantity": 0}])
    );
    assert_eq!(a["total_cost_cents"], 4000);
    let a_path = shop.path(&format!("purchase-orders/{}", a["id"].as_str().unwrap()));
    assert_eq!(
        shop.read(&format!("purchase-orders/{}", a["id"].as_str().unwrap()))
            .await,
        a
    );

    // A draft changes: lines replaced, supplier, expected date (any offset, stored UTC), note.
    let edited = app
        .call(
            patch(),
            &a_path,
            token,
            Some(json!({"supplier_id": other_supplier,
                        "items": [{"variant_id": shop.variants[0], "quantity": 5, "unit_cost_cents": 900},
                                  {"variant_id": shop.variants[1], "quantity": 2, "unit_cost_cents": 1200}],
                        "expected_at": "2026-03-01T09:00:00-03:00", "note": "Lote de março"})),
        )
        .await;
    edited.expect(200);
    assert_eq!(edited.body["supplier_id"], other_supplier.as_str());
    assert_eq!(edited.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(edited.body["total_cost_cents"], 5 * 900 + 2 * 1200);
    assert_eq!(edited.body["expected_at"], "2026-03-01T12:00:00.000000Z");
    assert_eq!(edited.body["note"], "Lote de março");
    let cleared = app
        .call(patch(), &a_path, token, Some(json!({"note": null})))
        .await;
    cleared.expect(200);
    assert_eq!(cleared.body["note"], Value::Null);
    assert_eq!(cleared.body["expected_at"], "2026-03-01T12:00:00.000000Z");

    // A draft is not received.
    shop.receive(&a, &[(0, 1)])
        .await
        .expect_error(409, "invalid_status_transition");
    // draft -> ordered; then it no longer changes, and ordering twice is 409.
    let ordered = shop.po(&a, "order", None).await;
    ordered.expect(200);
    assert_eq!(ordered.body["status"], "ordered");
    app.call(patch(), &a_path, token, Some(json!({"note": "late"})))
        .await
        .expect_error(409, "invalid_status_transition");
    shop.po(&a, "order", None)
        .await
        .expect_error(409, "invalid_status_transition");

    // ordered -> partially_received -> received.
    let part = shop.receive(&a, &[(0, 5)]).await;
    part.expect(200);
    assert_eq!(part.body["status"], "partially_received");
    assert_eq!(part.body["items"][0]["received_quantity"], 5);
    assert_eq!(part.body["items"][1]["received_quantity"], 0);
    let done = shop.receive(&a, &[(1, 2)]).await;
    done.expect(200);
    assert_eq!(done.body["status"], "received");
    shop.receive(&a, &[(1, 1)])
        .await
        .expect_error(409, "invalid_status_transition");
    shop.po(&a, "cancel", None)
        .await
        .expect_error(409, "invalid_status_transition");

    // draft -> cancelled, and ordered -> cancelled; a cancelled one takes nothing more.
    let b = shop.draft(&supplier, &[(0, 1)]).await;
    assert_eq!(b["number"], 1002);
    let c = shop.draft(&supplier, &[(1, 1)]).await;
    let cancelled = shop.po(&b, "cancel", None).await;
    cancelled.expect(200);
    assert_eq!(cancelled.body["status"], "cancelled");
    shop.po(&c, "order", None).await.expect(200);
    shop.po(&c, "cancel", None).await.expect(200);
    for action in ["cancel", "order"] {
        let r = shop.po(&b, action, None).await;
        r.expect_error(409, "invalid_status_transition");
        assert_eq!(r.body["details"]["from"], "cancelled");
    }
    shop.receive(&b, &[(0, 1)])
        .await
        .expect_error(409, "invalid_status_transition");

    // A short shipment is closed by cancelling what is left: what came in stays on hand.
    let d = shop.draft(&supplier, &[(0, 4)]).await;
    shop.po(&d, "order", None).await.expect(200);
    shop.receive(&d, &[(0, 1)]).await.expect(200);
    let before = shop.stock(0).await;
    let closed = shop.po(&d, "cancel", None).await;
    closed.expect(200);
    assert_eq!(closed.body["status"], "cancelled");
    assert_eq!(closed.body["items"][0]["received_quantity"], 1);
    assert_eq!(shop.stock(0).await, before);
    shop.receive(&d, &[(0, 1)])
        .await
        .expect_error(409, "invalid_status_transition");

    // Filters; an unknown status is 422; newest first.
    let drafts = shop.read("purchase-orders?status=draft").await;
    assert_eq!(drafts["data"], json!([]));
    let cancelled = shop.read("purchase-orders?status=cancelled").await;
    let ids: Vec<&str> = cancelled["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            d["id"].as_str().unwrap(),
            c["id"].as_str().unwrap(),
            b["id"].as_str().unwrap()
        ]
    );
    let by_other = shop
        .read(&format!(
            "purchase-orders?supplier_id={other_supplier}&include_total=true"
        ))
        .await;
    assert_eq!(by_other["total"], 1);
    assert_eq!(by_other["data"][0]["status"], "received");
    let paged = shop.read("purchase-orders?limit=3").await;
    assert_eq!(paged["has_more"], true);
    let more = shop
        .read(&format!(
            "purchase-orders?limit=3&cursor={}",
            paged["next_cursor"].as_str().unwrap()
        ))
        .await;
    assert_eq!(more["data"][0]["number"], 1001);
    app.call(
        get(),
        &shop.path("purchase-orders?status=lost"),
        token,
        None,
    )
    .await
    .expect_error(422, "validation_failed");

    let audit = shop.read("audit-log?limit=100").await;
    let actions: Vec<&str> = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .filter(|a| a.starts_with("purchase_order."))
        .collect();
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "purchase_order.received")
            .count(),
        3
    );
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "purchase_order.cancelled")
            .count(),
        3
    );
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "purchase_order.ordered")
            .count(),
        3
    );
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "purchase_order.created")
            .count(),
        4
    );
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "purchase_order.updated")
            .count(),
        2
    );
}

#[tokio::test]
async fn receiving_adds_stock_and_fires_back_in_stock_when_it_crosses_the_threshold() {
    // No stock: both variants are low (threshold 5).
    let shop = Shop::open(spawn_app().await, 0).await;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["inventory.low_stock", "inventory.back_in_stock"])
        .await;
    let supplier = shop.supplier("Malharia").await;
    let po = shop.draft(&supplier, &[(0, 10), (1, 3)]).await;
    shop.po(&po, "order", None).await.expect(200);

    // 0 -> 3 and 0 -> 3: still low, no event.
    shop.receive(&po, &[(0, 3), (1, 3)]).await.expect(200);
    assert_eq!(shop.stock(0).await, (3, 0, 3));
    assert_eq!(shop.stock(1).await, (3, 0, 3));
    // 3 -> 10 crosses above 5: back in stock, once.
    let r = shop.receive(&po, &[(0, 7)]).await;
    r.expect(200);
    assert_eq!(r.body["status"], "received");
    assert_eq!(shop.stock(0).await, (10, 0, 10));
    let hits = rx.events_in_order(1).await;
    assert_eq!(hits[0].json()["event"], "inventory.back_in_stock");
    assert_eq!(
        hits[0].json()["data"]["variant_id"],
        shop.variants[0].as_str()
    );
    assert_eq!(hits[0].json()["data"]["available"], 10);
    rx.expect_no_more_than(&shop.app, 1).await;
    // Each received line is a stock adjustment with the reason purchase_order.
    assert_eq!(
        shop.app
            .count("SELECT COUNT(*) FROM stock_adjustments WHERE reason = 'purchase_order'")
            .await,
        3
    );
    assert_eq!(
        shop.app
            .count("SELECT SUM(delta) FROM stock_adjustments WHERE reason = 'purchase_order'")
            .await,
        13
    );
}

#[tokio::test]
async fn over_receiving_is_422_and_receives_nothing() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let supplier = shop.supplier("Malharia").await;
    let po = shop.draft(&supplier, &[(0, 5), (1, 5)]).await;
    shop.po(&po, "order", None).await.expect(200);
    shop.receive(&po, &[(1, 4)]).await.expect(200);

    // The first line fits; the second passes what is left (1): nothing of either is taken.
    let r = shop.receive(&po, &[(0, 2), (1, 2)]).await;
    r.expect_error(422, "validation_failed");
    assert!(r.text.contains("items[1].quantity"), "{}", r.text);
    assert_eq!(shop.stock(0).await, (10, 0, 10));
    assert_eq!(shop.stock(1).await, (14, 0, 14));
    let now = shop
        .read(&format!("purchase-orders/{}", po["id"].as_str().unwrap()))
        .await;
    assert_eq!(now["status"], "partially_received");
    assert_eq!(now["items"][0]["received_quantity"], 0);
    assert_eq!(now["items"][1]["received_quantity"], 4);
    assert_eq!(
        shop.app
            .count("SELECT COUNT(*) FROM stock_adjustments WHERE reason = 'purchase_order'")
            .await,
        1
    );

    // A variant not on the order, a repeated line, no lines, zero units: 422.
    let stranger = uuid::Uuid::now_v7().to_string();
    let v0 = shop.variants[0].clone();
    for body in [
        json!({"items": [{"variant_id": stranger, "quantity": 1}]}),
        json!({"items": [{"variant_id": v0, "quantity": 1}, {"variant_id": v0, "quantity": 1}]}),
        json!({"items": []}),
        json!({"items": [{"variant_id": v0, "quantity": 0}]}),
        json!({}),
    ] {
        shop.po(&po, "receive", Some(body))
            .await
            .expect_error(422, "validation_failed");
    }
    assert_eq!(shop.stock(0).await, (10, 0, 10));
}

#[tokio::test]
async fn purchase_order_input_is_checked_against_the_store() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let (app, token) = (&shop.app, &shop.token);
    let supplier = shop.supplier("Malharia").await;
    // Another store of the same owner, with its own supplier and variant.
    let other_store = app.open_store(token, "Org 2").await;
    let foreign = app
        .call(
            post(),
            &format!("/v1/stores/{other_store}/products"),
            token,
            Some(json!({"title": "X", "variants": [{"sku": "X-1", "price_cents": 100}]})),
        )
        .await;
    foreign.expect(201);
    let foreign_variant = foreign.body["variants"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let foreign_supplier = app
        .call(
            post(),
            &format!("/v1/stores/{other_store}/suppliers"),
            token,
            Some(json!({"name": "Elsewhere"})),
        )
        .await;
    foreign_supplier.expect(201);
    let foreign_supplier = foreign_supplier.body["id"].as_str().unwrap().to_owned();

    let v0 = shop.variants[0].clone();
    let line =
        |v: &str, q: i64, c: i64| json!({"variant_id": v, "quantity": q, "unit_cost_cents": c});
    for (body, field) in [
        (
            json!({"supplier_id": foreign_supplier, "items": [line(&v0, 1, 1)]}),
            "supplier_id",
        ),
        (
            json!({"supplier_id": supplier, "items": [line(&foreign_variant, 1, 1)]}),
            "items[0].variant_id",
        ),
        (
            json!({"supplier_id": supplier, "items": [line(&v0, 1, 1), line(&v0, 2, 1)]}),
            "items[1].variant_id",
        ),
        (
            json!({"supplier_id": supplier, "items": [line(&v0, 0, 1)]}),
            "items[0].quantity",
        ),
        (
            json!({"supplier_id": supplier, "items": [line(&v0, 1, -1)]}),
            "items[0].unit_cost_cents",
        ),
        (json!({"supplier_id": supplier, "items": []}), "items"),
        (
            json!({"supplier_id": supplier, "items": [line(&v0, 1, 1)], "expected_at": "soon"}),
            "expected_at",
        ),
    ] {
        let r = app
            .call(post(), &shop.path("purchase-orders"), token, Some(body))
            .await;
        r.expect_error(422, "validation_failed");
        assert!(r.text.contains(field), "{field}: {}", r.text);
    }
    assert_eq!(
        shop.app.count("SELECT COUNT(*) FROM purchase_orders").await,
        0
    );

    // Another store's ids are 404 through this store's paths, for every route.
    let theirs = app
        .call(
            post(),
            &format!("/v1/stores/{other_store}/purchase-orders"),
            token,
            Some(json!({"supplier_id": foreign_supplier, "items": [line(&foreign_variant, 2, 1)]})),
        )
        .await;
    theirs.expect(201);
    let po = shop.path(&format!(
        "purchase-orders/{}",
        theirs.body["id"].as_str().unwrap()
    ));
    let sup = shop.path(&format!("suppliers/{foreign_supplier}"));
    for (method, path, body) in [
        (get(), po.clone(), None),
        (patch(), po.clone(), Some(json!({"note": "x"}))),
        (post(), format!("{po}/order"), None),
        (post(), format!("{po}/cancel"), None),
        (
            post(),
            format!("{po}/receive"),
            Some(json!({"items": [{"variant_id": foreign_variant, "quantity": 1}]})),
        ),
        (get(), sup.clone(), None),
        (patch(), sup.clone(), Some(json!({"name": "x"}))),
        (delete(), sup.clone(), None),
    ] {
        app.call(method, &path, token, body)
            .await
            .expect_error(404, "not_found");
    }
    let theirs_now = app
        .call(
            get(),
            &format!(
                "/v1/stores/{other_store}/purchase-orders/{}",
                theirs.body["id"].as_str().unwrap()
            ),
            token,
            None,
        )
        .await;
    assert_eq!(theirs_now.body["status"], "draft");
    assert_eq!(theirs_now.body["note"], Value::Null);
}

#[tokio::test]
async fn a_repeated_receipt_with_its_idempotency_key_receives_once_and_viewers_only_read() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let app = &shop.app;
    let supplier = shop.supplier("Malharia").await;
    let po = shop.draft(&supplier, &[(0, 5)]).await;
    shop.po(&po, "order", None).await.expect(200);
    let path = shop.path(&format!(
        "purchase-orders/{}/receive",
        po["id"].as_str().unwrap()
    ));
    let body = json!({"items": [{"variant_id": shop.variants[0], "quantity": 2}]});
    let first = app.post_idem_as(&path, &shop.token, "rcv-1", &body).await;
    first.expect(200);
    let again = app.post_idem_as(&path, &shop.token, "rcv-1", &body).await;
    again.expect(200);
    assert_eq!(first.body, again.body);
    assert_eq!(shop.stock(0).await, (12, 0, 12));
    let changed = json!({"items": [{"variant_id": shop.variants[0], "quantity": 1}]});
    app.post_idem_as(&path, &shop.token, "rcv-1", &changed)
        .await
        .expect_error(422, "idempotency_key_reused");

    // A viewer reads purchasing but changes nothing.
    let (viewer, viewer_id) = app.member("viewer@example.com").await;
    app.add_to_store(&shop.store, &viewer_id, "viewer").await;
    app.call(get(), &shop.path("purchase-orders"), &viewer, None)
        .await
        .expect(200);
    app.call(get(), &shop.path("suppliers"), &viewer, None)
        .await
        .expect(200);
    for action in ["order", "cancel", "receive"] {
        let p = shop.path(&format!(
            "purchase-orders/{}/{action}",
            po["id"].as_str().unwrap()
        ));
        app.call(post(), &p, &viewer, Some(body.clone()))
            .await
            .expect_error(403, "missing_permission");
    }
    assert_eq!(shop.stock(0).await, (12, 0, 12));
}
