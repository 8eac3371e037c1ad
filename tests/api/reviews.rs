//! Reviews (issue 6; spec 2.9, 4.6).

use serde_json::{Value, json};

use crate::support::{Shop, get, patch, post, spawn_app};

#[tokio::test]
async fn reviews_are_imported_moderated_and_rate_their_product() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let product = shop.product().await;
    assert_eq!(product["rating_average"], Value::Null);
    assert_eq!(product["rating_count"], 0);

    let first = shop.review(json!({})).await;
    first.expect(201);
    let r = &first.body;
    assert_eq!(r["status"], "pending");
    assert_eq!(r["store_id"], shop.store.as_str());
    assert_eq!(r["product_id"], product["id"]);
    assert_eq!(r["product_slug"], product["slug"]);
    assert_eq!(r["product_title"], "Tee");
    assert_eq!(r["author_email"], "ana@example.com");
    assert_eq!(r["is_verified_purchase"], false);
    assert_eq!(r["customer_id"], Value::Null);
    assert_eq!(r["order_id"], Value::Null);
    for k in ["id", "created_at", "updated_at"] {
        assert!(r[k].is_string(), "{k}");
    }
    let got = shop
        .app
        .call(
            get(),
            &shop.path(&format!("reviews/{}", r["id"].as_str().unwrap())),
            &shop.token,
            None,
        )
        .await;
    assert_eq!(got.body, *r);
    // Renaming the product reaches its reviews (the list and one review alike).
    shop.app
        .call(
            patch(),
            &shop.path(&format!("products/{}", product["id"].as_str().unwrap())),
            &shop.token,
            Some(json!({"title": "Tee Shirt", "slug": "tee-shirt"})),
        )
        .await
        .expect(200);
    let renamed = shop
        .read(&format!("reviews/{}", r["id"].as_str().unwrap()))
        .await;
    assert_eq!(
        (
            renamed["product_title"].as_str(),
            renamed["product_slug"].as_str()
        ),
        (Some("Tee Shirt"), Some("tee-shirt"))
    );
    let listed = shop.read("reviews").await;
    assert_eq!(listed["data"][0], renamed);
    shop.app.clock.advance(chrono::Duration::seconds(1));
    let second = shop.review(json!({"rating": 4})).await.body.clone();
    shop.app.clock.advance(chrono::Duration::seconds(1));
    let third = shop.review(json!({"rating": 2})).await.body.clone();
    assert_eq!(shop.badge().await, 3);

    // Only approved reviews count toward the rating.
    let approved = shop.moderate(r, "approved").await;
    assert_eq!(approved["status"], "approved");
    shop.moderate(&second, "approved").await;
    shop.moderate(&third, "rejected").await;
    let p = shop.product().await;
    assert_eq!(
        (p["rating_average"].as_f64(), p["rating_count"].as_i64()),
        (Some(4.5), Some(2))
    );
    assert_eq!(shop.badge().await, 0);
    shop.moderate(r, "rejected").await;
    let p = shop.product().await;
    assert_eq!(
        (p["rating_average"].as_f64(), p["rating_count"].as_i64()),
        (Some(4.0), Some(1))
    );
    // Imported as approved: counted at once.
    shop.review(json!({"rating": 3, "status": "approved"}))
        .await
        .expect(201);
    let p = shop.product().await;
    assert_eq!(
        (p["rating_average"].as_f64(), p["rating_count"].as_i64()),
        (Some(3.5), Some(2))
    );
    let approved_list = shop
        .app
        .call(
            get(),
            &shop.path("reviews?status=approved&include_total=true"),
            &shop.token,
            None,
        )
        .await;
    assert_eq!(approved_list.body["total"], 2);

    // PATCH needs a known status; nothing changes otherwise.
    let path = shop.path(&format!("reviews/{}", second["id"].as_str().unwrap()));
    for body in [
        json!({}),
        json!({"status": "hidden"}),
        json!({"status": null}),
        json!({"status": "approved", "rating": 1}),
    ] {
        shop.app
            .call(patch(), &path, &shop.token, Some(body))
            .await
            .expect_error(422, "validation_failed");
    }
    // Bad imports are 422 and write nothing.
    let before = shop.app.total(&shop.token, &shop.path("reviews")).await;
    for (extra, field) in [
        (json!({"rating": 0}), "rating"),
        (json!({"rating": 6}), "rating"),
        (json!({"author_name": " "}), "author_name"),
        (json!({"author_email": "nope"}), "author_email"),
        (json!({"product_id": uuid::Uuid::now_v7()}), "product_id"),
        (json!({"customer_id": uuid::Uuid::now_v7()}), "customer_id"),
        (json!({"order_id": uuid::Uuid::now_v7()}), "order_id"),
        (json!({"status": "hidden"}), "status"),
        (
            json!({"is_verified_purchase": true}),
            "is_verified_purchase",
        ),
    ] {
        let r = shop.review(extra.clone()).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"].get(field).is_some(),
            "{extra}: {}",
            r.text
        );
    }
    assert_eq!(
        shop.app.total(&shop.token, &shop.path("reviews")).await,
        before
    );

    // Another store's review is not found.
    let (other, _) = shop.app.member("other@example.com").await;
    let theirs = shop.app.open_store(&other, "Other").await;
    let id = r["id"].as_str().unwrap();
    let their_path = format!("/v1/stores/{theirs}/reviews/{id}");
    shop.app
        .call(get(), &their_path, &other, None)
        .await
        .expect_error(404, "not_found");
    shop.app
        .call(
            patch(),
            &their_path,
            &other,
            Some(json!({"status": "approved"})),
        )
        .await
        .expect_error(404, "not_found");
    let listed = shop
        .app
        .call(
            get(),
            &format!("/v1/stores/{theirs}/reviews?include_total=true"),
            &other,
            None,
        )
        .await;
    assert_eq!(listed.body["total"], 0);
    assert_eq!(shop.moderate(r, "rejected").await["status"], "rejected");

    // Deleting the product takes its reviews, and the counts, with it.
    shop.review(json!({})).await.expect(201);
    assert_eq!(shop.badge().await, 1);
    shop.app
        .call(
            reqwest::Method::DELETE,
            &shop.path(&format!("products/{}", product["id"].as_str().unwrap())),
            &shop.token,
            None,
        )
        .await
        .expect(204);
    assert_eq!(shop.badge().await, 0);
    let all = shop
        .app
        .call(
            get(),
            &shop.path("reviews?include_total=true"),
            &shop.token,
            None,
        )
        .await;
    assert_eq!(all.body["total"], 0);
}

#[tokio::test]
async fn a_verified_purchase_is_a_paid_order_of_the_product() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let pending = shop.order(1).await;
    let paid = shop.order(1).await;
    shop.set_status(&paid, "paid").await;
    let cancelled = shop.order(1).await;
    shop.set_status(&cancelled, "cancelled").await;
    let other_product = shop
        .app
        .call(
            post(),
            &shop.path("products"),
            &shop.token,
            Some(json!({"title": "Mug", "variants": [{"sku": "MUG", "price_cents": 900, "on_hand": 5}]})),
        )
        .await;
    other_product.expect(201);

    let verified = shop.review(json!({"order_id": paid["id"]})).await;
    verified.expect(201);
    assert_eq!(verified.body["is_verified_purchase"], true);
    // The reviewer is the order's customer.
    assert_eq!(verified.body["customer_id"], shop.customer.as_str());
    assert_eq!(verified.body["order_id"], paid["id"]);
    for (order, why) in [(&pending, "not paid"), (&cancelled, "cancelled")] {
        let r = shop.review(json!({"order_id": order["id"]})).await;
        r.expect(201);
        assert_eq!(r.body["is_verified_purchase"], false, "{why}");
    }
    // The order did not buy this product.
    let mug = shop
        .review(json!({"order_id": paid["id"], "product_id": other_product.body["id"]}))
        .await;
    mug.expect(201);
    assert_eq!(mug.body["is_verified_purchase"], false);
    // Someone else's order does not verify this reviewer.
    let bruno = shop
        .app
        .call(
            post(),
            &shop.path("customers"),
            &shop.token,
            Some(json!({"name": "Bruno"})),
        )
        .await;
    let r = shop
        .review(json!({"order_id": paid["id"], "customer_id": bruno.body["id"]}))
        .await;
    r.expect(201);
    assert_eq!(r.body["is_verified_purchase"], false);
    assert_eq!(r.body["customer_id"], bruno.body["id"]);
    // A client cannot claim it.
    shop.review(json!({"is_verified_purchase": true}))
        .await
        .expect_error(422, "validation_failed");
}

#[tokio::test]
async fn the_review_list_filters_and_pages_stably_while_reviews_arrive() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let mug = shop
        .app
        .call(
            post(),
            &shop.path("products"),
            &shop.token,
            Some(json!({"title": "Mug", "variants": [{"sku": "MUG", "price_cents": 900}]})),
        )
        .await;
    let mut made = Vec::new();
    for i in 0..6 {
        let extra = if i % 2 == 0 {
            json!({"title": format!("r{i}")})
        } else {
            json!({"title": format!("r{i}"), "product_id": mug.body["id"]})
        };
        made.push(shop.review(extra).await.body.clone());
        shop.app.clock.advance(chrono::Duration::seconds(1));
    }
    let titles = |p: &Value| -> Vec<String> {
        p["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["title"].as_str().unwrap().to_owned())
            .collect()
    };
    let page1 = shop
        .app
        .call(get(), &shop.path("reviews?limit=2"), &shop.token, None)
        .await;
    page1.expect(200);
    assert_eq!(titles(&page1.body), ["r5", "r4"]);
    assert_eq!(page1.body["has_more"], true);
    // A review imported between pages does not shift the next page.
    shop.review(json!({"title": "late"})).await.expect(201);
    let cursor = page1.body["next_cursor"].as_str().unwrap();
    let page2 = shop
        .app
        .call(
            get(),
            &shop.path(&format!("reviews?limit=2&cursor={cursor}")),
            &shop.token,
            None,
        )
        .await;
    assert_eq!(titles(&page2.body), ["r3", "r2"]);

    let by_mug = shop
        .app
        .call(
            get(),
            &shop.path(&format!(
                "reviews?product_id={}&include_total=true",
                mug.body["id"].as_str().unwrap()
            )),
            &shop.token,
            None,
        )
        .await;
    assert_eq!(titles(&by_mug.body), ["r5", "r3", "r1"]);
    assert_eq!(by_mug.body["total"], 3);
    shop.moderate(&made[3], "approved").await;
    let approved_mug = shop
        .app
        .call(
            get(),
            &shop.path(&format!(
                "reviews?product_id={}&status=approved",
                mug.body["id"].as_str().unwrap()
            )),
            &shop.token,
            None,
        )
        .await;
    assert_eq!(titles(&approved_mug.body), ["r3"]);
    // A cursor is bound to its filters; unknown filters and statuses are refused.
    shop.app
        .call(
            get(),
            &shop.path(&format!("reviews?status=pending&cursor={cursor}")),
            &shop.token,
            None,
        )
        .await
        .expect_error(400, "invalid_cursor");
    for q in ["status=hidden", "rating=5", "product_id=nope"] {
        shop.app
            .call(
                get(),
                &shop.path(&format!("reviews?{q}")),
                &shop.token,
                None,
            )
            .await
            .expect_error(422, "validation_failed");
    }
}

#[tokio::test]
async fn the_store_replies_to_a_review_changes_and_removes_the_reply() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let review = shop.review(json!({})).await.body.clone();
    assert_eq!(review["reply"], Value::Null);
    assert_eq!(review["replied_at"], Value::Null);
    let path = shop.path(&format!("reviews/{}", review["id"].as_str().unwrap()));
    let audited = || async {
        let log = shop
            .app
            .call(
                get(),
                &shop.path("audit-log?include_total=true"),
                &shop.token,
                None,
            )
            .await;
        log.expect(200);
        let entries = log.body["data"].as_array().unwrap().clone();
        let updated: Vec<Value> = entries
            .into_iter()
            .filter(|e| e["action"] == "review.updated")
            .collect();
        updated
    };
    let events = || shop.app.count("SELECT COUNT(*) FROM events");
    let before = events().await;

    // A status change: audited, and no event (reviews have none in the catalog).
    shop.moderate(&review, "approved").await;
    assert_eq!(audited().await.len(), 1);

    // Set (trimmed), with the status it already has.
    shop.app.clock.advance(chrono::Duration::seconds(5));
    let set = shop
        .app
        .call(
            patch(),
            &path,
            &shop.token,
            Some(json!({"status": "approved", "reply": "  Thank you, Ana!  "})),
        )
        .await;
    set.expect(200);
    let at = merchant_admin::time::format(shop.app.clock_now());
    assert_eq!(set.body["reply"], "Thank you, Ana!");
    assert_eq!(set.body["replied_at"], at.as_str());
    assert_eq!(set.body["updated_at"], at.as_str());
    assert_eq!(set.body["status"], "approved");
    // Reads show what the write answered, one review and the list alike.
    assert_eq!(
        shop.read(&format!("reviews/{}", review["id"].as_str().unwrap()))
            .await,
        set.body
    );
    assert_eq!(shop.read("reviews").await["data"][0], set.body);
    let entries = audited().await;
    assert_eq!(entries.len(), 2, "a reply is audited as a status change is");
    assert_eq!(entries[0]["resource_id"], review["id"]);
    assert_eq!(entries[0]["resource_type"], "review");
    assert_eq!(entries[0]["via"], Value::Null);

    // The same reply again changes nothing and records nothing.
    shop.app.clock.advance(chrono::Duration::seconds(5));
    let same = shop
        .app
        .call(
            patch(),
            &path,
            &shop.token,
            Some(json!({"status": "approved", "reply": "Thank you, Ana!"})),
        )
        .await;
    same.expect(200);
    assert_eq!(same.body["replied_at"], at.as_str());
    assert_eq!(audited().await.len(), 2);

    // Changed, with a new status: one change, one entry; leaving `reply` out keeps it.
    let changed = shop
        .app
        .call(
            patch(),
            &path,
            &shop.token,
            Some(json!({"status": "rejected", "reply": "Thanks, we fixed the sizes."})),
        )
        .await;
    changed.expect(200);
    let later = merchant_admin::time::format(shop.app.clock_now());
    assert_eq!(changed.body["reply"], "Thanks, we fixed the sizes.");
    assert_eq!(changed.body["replied_at"], later.as_str());
    assert_eq!(changed.body["status"], "rejected");
    assert_eq!(audited().await.len(), 3);
    let kept = shop.moderate(&review, "approved").await;
    assert_eq!(kept["reply"], "Thanks, we fixed the sizes.");
    assert_eq!(kept["replied_at"], later.as_str());
    assert_eq!(audited().await.len(), 4);

    // Too long, after trimming: 422 on `reply`, nothing written.
    let at_limit = "é".repeat(2000);
    for (reply, ok) in [
        (format!("  {at_limit}  "), true),
        (format!("{at_limit}x"), false),
    ] {
        let r = shop
            .app
            .call(
                patch(),
                &path,
                &shop.token,
                Some(json!({"status": "rejected", "reply": reply})),
            )
            .await;
        if ok {
            r.expect(200);
            assert_eq!(r.body["reply"], at_limit.as_str());
        } else {
            r.expect_error(422, "validation_failed");
            assert!(
                r.body["details"]["fields"]["reply"].is_string(),
                "{}",
                r.text
            );
        }
    }
    let after = shop
        .read(&format!("reviews/{}", review["id"].as_str().unwrap()))
        .await;
    assert_eq!(
        (after["status"].as_str(), after["reply"].as_str()),
        (Some("rejected"), Some(at_limit.as_str()))
    );
    assert_eq!(audited().await.len(), 5);
    for bad in [
        json!({"reply": "hi"}),
        json!({"status": "approved", "reply": 5}),
    ] {
        shop.app
            .call(patch(), &path, &shop.token, Some(bad))
            .await
            .expect_error(422, "validation_failed");
    }

    // Removed by "" (blank after trimming) and by null.
    for removal in [json!("   "), Value::Null] {
        shop.app
            .call(
                patch(),
                &path,
                &shop.token,
                Some(json!({"status": "rejected", "reply": "Back soon."})),
            )
            .await
            .expect(200);
        let removed = shop
            .app
            .call(
                patch(),
                &path,
                &shop.token,
                Some(json!({"status": "rejected", "reply": removal})),
            )
            .await;
        removed.expect(200);
        assert_eq!(removed.body["reply"], Value::Null, "{removal}");
        assert_eq!(removed.body["replied_at"], Value::Null, "{removal}");
        assert_eq!(
            shop.read(&format!("reviews/{}", review["id"].as_str().unwrap()))
                .await,
            removed.body
        );
    }
    assert_eq!(audited().await.len(), 9);
    // Neither moderation nor replies emit an event: the same for both.
    assert_eq!(events().await, before);
}
