//! The catalog (issue 6): products with variants, categories, their events.

use serde_json::{Value, json};

use crate::support::{Hit, Receiver, TestApp, get, patch, post, spawn_app};

async fn owner(app: &TestApp) -> (String, String) {
    let (token, _) = app.member("owner@example.com").await;
    let store = app.open_store(&token, "Org").await;
    (token, store)
}

async fn product(app: &TestApp, token: &str, store: &str, body: Value) -> Value {
    let r = app
        .call(
            post(),
            &format!("/v1/stores/{store}/products"),
            token,
            Some(body),
        )
        .await;
    r.expect(201);
    r.body
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn products_are_created_changed_and_deleted_with_their_events() {
    let app = spawn_app().await;
    let (token, store) = owner(&app).await;
    let rx = Receiver::start().await;
    let hook = app
        .call(
            post(),
            &format!("/v1/stores/{store}/webhooks"),
            &token,
            Some(json!({"url": rx.url, "events": ["products.created", "products.updated", "products.deleted"]})),
        )
        .await;
    hook.expect(201);
    let base = format!("/v1/stores/{store}/products");

    // The least a product needs: a title and one variant with SKU and price.
    let p = product(
        &app,
        &token,
        &store,
        json!({"title": "Camiseta Azul", "variants": [{"sku": "CAM-1", "price_cents": 4990}]}),
    )
    .await;
    assert_eq!(p["status"], "active");
    assert_eq!(p["slug"], "camiseta-azul");
    assert_eq!(p["store_id"], store.as_str());
    assert_eq!(p["description"], "");
    assert_eq!(p["tags"], json!([]));
    assert_eq!(p["category_ids"], json!([]));
    assert_eq!(p["rating_count"], 0);
    assert!(p["rating_average"].is_null());
    let v = &p["variants"][0];
    assert_eq!(
        (
            v["sku"].as_str(),
            v["title"].as_str(),
            v["price_cents"].as_i64()
        ),
        (Some("CAM-1"), Some("Default"), Some(4990))
    );
    assert!(
        v["compare_at_price_cents"].is_null() && v["weight_grams"].is_null() && v["id"].is_string()
    );
    let id = p["id"].as_str().unwrap();
    let created = rx.wait_for(1).await;
    assert_eq!(created[0].json()["event"], "products.created");
    assert_eq!(created[0].json()["data"], p);

    // Same title: the slug gets a suffix. A slug or SKU already used is 409, and nothing is
    // written.
    let twin = product(
        &app,
        &token,
        &store,
        json!({"title": "Camiseta Azul", "variants": [{"sku": "CAM-2", "price_cents": 1}]}),
    )
    .await;
    assert_eq!(twin["slug"], "camiseta-azul-2");
    let before = app.total(&token, &base).await;
    for body in [
        json!({"title": "X", "slug": "camiseta-azul", "variants": [{"sku": "NEW-1", "price_cents": 1}]}),
        json!({"title": "X", "variants": [{"sku": "CAM-1", "price_cents": 1}]}),
    ] {
        app.call(post(), &base, &token, Some(body))
            .await
            .expect_error(409, "conflict");
    }
    assert_eq!(app.total(&token, &base).await, before);
    // Rows, not the inventory list, which shows only the variants of stored products.
    assert_eq!(app.count("SELECT COUNT(*) FROM variants").await, 2);

    // Bad input: 422 and nothing written.
    for body in [
        json!({"title": "X", "variants": []}),
        json!({"title": "", "variants": [{"sku": "A", "price_cents": 1}]}),
        json!({"title": "X", "variants": [{"sku": "A", "price_cents": -1}]}),
        json!({"title": "X", "variants": [{"sku": "A", "price_cents": 1}, {"sku": "A", "price_cents": 2}]}),
        json!({"title": "X", "variants": [{"sku": "A"}]}),
        json!({"title": "X", "status": "sold", "variants": [{"sku": "A", "price_cents": 1}]}),
        json!({"title": "X", "slug": "Not A Slug", "variants": [{"sku": "A", "price_cents": 1}]}),
        json!({"title": "X", "category_ids": [uuid::Uuid::now_v7()], "variants": [{"sku": "A", "price_cents": 1}]}),
        json!({"title": "X", "colour": "red", "variants": [{"sku": "A", "price_cents": 1}]}),
    ] {
        app.call(post(), &base, &token, Some(body.clone()))
            .await
            .expect_error(422, "validation_failed");
    }
    assert_eq!(app.total(&token, &base).await, before);

    // PATCH changes only what it names; `variants` is the new list.
    let path = format!("{base}/{id}");
    let r = app
        .call(
            patch(),
            &path,
            &token,
            Some(json!({"title": "Camiseta Marinho", "tags": ["verão", "verão", "algodão"]})),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["title"], "Camiseta Marinho");
    assert_eq!(r.body["slug"], "camiseta-azul");
    assert_eq!(r.body["tags"], json!(["verão", "algodão"]));
    assert_eq!(r.body["variants"], p["variants"]);
    let vid = p["variants"][0]["id"].as_str().unwrap();
    let r = app
        .call(
            patch(),
            &path,
            &token,
            Some(json!({"variants": [
                {"id": vid, "sku": "CAM-1", "title": "P", "price_cents": 5990, "compare_at_price_cents": 6990},
                {"sku": "CAM-1-G", "title": "G", "price_cents": 5990, "weight_grams": 200}
            ]})),
        )
        .await;
    r.expect(200);
    let vs = r.body["variants"].as_array().unwrap();
    assert_eq!(vs.len(), 2);
    assert_eq!(
        (vs[0]["id"].as_str(), vs[0]["price_cents"].as_i64()),
        (Some(vid), Some(5990))
    );
    assert_eq!(vs[1]["sku"], "CAM-1-G");
    // Another product's variant, a SKU in use, no variants at all: refused, nothing changed.
    let other_vid = twin["variants"][0]["id"].as_str().unwrap();
    app.call(
        patch(),
        &path,
        &token,
        Some(json!({"variants": [{"id": other_vid, "sku": "Z", "price_cents": 1}]})),
    )
    .await
    .expect_error(422, "validation_failed");
    app.call(
        patch(),
        &path,
        &token,
        Some(json!({"title": "Changed", "variants": [{"sku": "CAM-2", "price_cents": 1}]})),
    )
    .await
    .expect_error(409, "conflict");
    app.call(patch(), &path, &token, Some(json!({"variants": []})))
        .await
        .expect_error(422, "validation_failed");
    let now = app.call(get(), &path, &token, None).await;
    assert_eq!(now.body["title"], "Camiseta Marinho");
    assert_eq!(now.body["variants"].as_array().unwrap().len(), 2);

    let updated = rx.events_in_order(3).await;
    assert_eq!(updated[1].json()["event"], "products.created");
    assert_eq!(updated[2].json()["event"], "products.updated");
    assert_eq!(updated[2].json()["data"]["title"], "Camiseta Marinho");

    // Delete: 204, then 404; the event carries the id.
    app.call(reqwest::Method::DELETE, &path, &token, None)
        .await
        .expect(204);
    app.call(get(), &path, &token, None)
        .await
        .expect_error(404, "not_found");
    app.call(reqwest::Method::DELETE, &path, &token, None)
        .await
        .expect_error(404, "not_found");
    let all = rx.events_in_order(5).await;
    let deleted = all
        .iter()
        .map(Hit::json)
        .find(|b| b["event"] == "products.deleted")
        .unwrap();
    assert_eq!(deleted["data"], json!({"id": id}));
    // The deleted product's variant rows are gone, not just hidden.
    assert_eq!(app.count("SELECT COUNT(*) FROM variants").await, 1);
}

#[tokio::test]
async fn the_product_list_filters_sorts_and_pages() {
    let app = spawn_app().await;
    let (token, store) = owner(&app).await;
    let cat = app
        .call(
            post(),
            &format!("/v1/stores/{store}/categories"),
            &token,
            Some(json!({"name": "Shirts"})),
        )
        .await;
    cat.expect(201);
    let cat_id = cat.body["id"].as_str().unwrap();
    let specs = [
        ("Banana 100%", "draft", "FR-1", false),
        ("Apple", "active", "FR-2", true),
        ("Cherry", "archived", "SPECIAL_9", false),
        ("Date", "active", "FR-4", true),
    ];
    for (i, (title, status, sku, in_cat)) in specs.iter().enumerate() {
        let cats = if *in_cat { json!([cat_id]) } else { json!([]) };
        product(&app, &token, &store, json!({"title": title, "status": status, "category_ids": cats, "variants": [{"sku": sku, "price_cents": i}]})).await;
        app.clock.advance(chrono::Duration::seconds(1));
    }
    let list = |q: String| {
        let app = &app;
        let token = token.clone();
        let store = store.clone();
        async move {
            let r = app
                .call(
                    get(),
                    &format!("/v1/stores/{store}/products?{q}"),
                    &token,
                    None,
                )
                .await;
            r.expect(200);
            r.body
        }
    };
    assert_eq!(
        ids(&list(String::new()).await),
        ["Date", "Cherry", "Apple", "Banana 100%"]
    );
    assert_eq!(
        ids(&list("sort=created_at".into()).await),
        ["Banana 100%", "Apple", "Cherry", "Date"]
    );
    assert_eq!(
        ids(&list("sort=title".into()).await),
        ["Apple", "Banana 100%", "Cherry", "Date"]
    );
    assert_eq!(
        ids(&list("sort=-title".into()).await),
        ["Date", "Cherry", "Banana 100%", "Apple"]
    );
    assert_eq!(ids(&list("status=active".into()).await), ["Date", "Apple"]);
    assert_eq!(
        ids(&list(format!("category_id={cat_id}&sort=title")).await),
        ["Apple", "Date"]
    );
    // Search: title or SKU, case-insensitive; % and _ are literal.
    assert_eq!(ids(&list("search=an".into()).await), ["Banana 100%"]);
    assert_eq!(ids(&list("search=fr-4".into()).await), ["Date"]);
    assert_eq!(ids(&list("search=100%25".into()).await), ["Banana 100%"]);
    assert_eq!(ids(&list("search=L_9".into()).await), ["Cherry"]);
    assert_eq!(ids(&list("search=%25".into()).await), ["Banana 100%"]);
    let counted = list("status=active&include_total=true".into()).await;
    assert_eq!(counted["total"], 2);

    // Pages by title, stable while a product is added in between.
    let first = list("sort=title&limit=2".into()).await;
    assert_eq!(ids(&first), ["Apple", "Banana 100%"]);
    product(
        &app,
        &token,
        &store,
        json!({"title": "Aardvark", "variants": [{"sku": "Z-1", "price_cents": 1}]}),
    )
    .await;
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = list(format!("sort=title&limit=2&cursor={cursor}")).await;
    assert_eq!(ids(&second), ["Cherry", "Date"]);
    assert_eq!(second["has_more"], false);
    // A cursor belongs to its order and filters.
    app.call(
        get(),
        &format!("/v1/stores/{store}/products?sort=-title&cursor={cursor}"),
        &token,
        None,
    )
    .await
    .expect_error(400, "invalid_cursor");

    for q in ["sort=price", "status=sold", "colour=red"] {
        app.call(
            get(),
            &format!("/v1/stores/{store}/products?{q}"),
            &token,
            None,
        )
        .await
        .expect_error(422, "validation_failed");
    }
}

#[tokio::test]
async fn categories_form_a_tree_without_loops() {
    let app = spawn_app().await;
    let (token, store) = owner(&app).await;
    let base = format!("/v1/stores/{store}/categories");
    let make = |body: Value| app.call(post(), &base, &token, Some(body));
    let top = make(json!({"name": "Roupas"})).await;
    top.expect(201);
    assert_eq!(top.body["slug"], "roupas");
    assert!(top.body["parent_id"].is_null());
    let top_id = top.body["id"].as_str().unwrap();
    let mid = make(json!({"name": "Camisetas", "parent_id": top_id})).await;
    mid.expect(201);
    let mid_id = mid.body["id"].as_str().unwrap();
    let leaf = make(json!({"name": "Regatas", "parent_id": mid_id})).await;
    let leaf_id = leaf.body["id"].as_str().unwrap();
    make(json!({"name": "Outra", "slug": "roupas"}))
        .await
        .expect_error(409, "conflict");
    make(json!({"name": "Outra", "parent_id": uuid::Uuid::now_v7()}))
        .await
        .expect_error(422, "validation_failed");
    make(json!({"name": ""}))
        .await
        .expect_error(422, "validation_failed");

    // No loops: itself, or a descendant, as parent.
    for parent in [top_id, mid_id, leaf_id] {
        app.call(
            patch(),
            &format!("{base}/{top_id}"),
            &token,
            Some(json!({"parent_id": parent})),
        )
        .await
        .expect_error(422, "validation_failed");
    }
    let still = app
        .call(get(), &format!("{base}/{top_id}"), &token, None)
        .await;
    assert!(still.body["parent_id"].is_null());
    // A category of another store is not a parent here.
    let (other, _) = app.member("other@example.com").await;
    let elsewhere = app.open_store(&other, "Other").await;
    let foreign = app
        .call(
            post(),
            &format!("/v1/stores/{elsewhere}/categories"),
            &other,
            Some(json!({"name": "X"})),
        )
        .await;
    app.call(
        patch(),
        &format!("{base}/{leaf_id}"),
        &token,
        Some(json!({"parent_id": foreign.body["id"]})),
    )
    .await
    .expect_error(422, "validation_failed");
    app.call(
        get(),
        &format!("/v1/stores/{elsewhere}/categories/{top_id}"),
        &other,
        None,
    )
    .await
    .expect_error(404, "not_found");

    // Moving to the top with null; renaming; the list is by name.
    let moved = app
        .call(
            patch(),
            &format!("{base}/{leaf_id}"),
            &token,
            Some(json!({"parent_id": null, "name": "Blusas"})),
        )
        .await;
    moved.expect(200);
    assert!(moved.body["parent_id"].is_null());
    assert_eq!(moved.body["name"], "Blusas");
    let list = app.call(get(), &base, &token, None).await;
    let names: Vec<&str> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Blusas", "Camisetas", "Roupas"]);

    // Deleting a parent moves its children to the top and takes it off products.
    let p = product(&app, &token, &store, json!({"title": "T", "category_ids": [top_id, mid_id], "variants": [{"sku": "T-1", "price_cents": 1}]})).await;
    app.call(
        reqwest::Method::DELETE,
        &format!("{base}/{top_id}"),
        &token,
        None,
    )
    .await
    .expect(204);
    let child = app
        .call(get(), &format!("{base}/{mid_id}"), &token, None)
        .await;
    assert!(child.body["parent_id"].is_null());
    let p = app
        .call(
            get(),
            &format!("/v1/stores/{store}/products/{}", p["id"].as_str().unwrap()),
            &token,
            None,
        )
        .await;
    assert_eq!(p.body["category_ids"], json!([mid_id]));
}

#[tokio::test]
async fn another_stores_products_are_not_found() {
    let app = spawn_app().await;
    let (token, store) = owner(&app).await;
    let p = product(
        &app,
        &token,
        &store,
        json!({"title": "Mine", "variants": [{"sku": "M-1", "price_cents": 1}]}),
    )
    .await;
    let (other, _) = app.member("other@example.com").await;
    let theirs = app.open_store(&other, "Other").await;
    let path = format!("/v1/stores/{theirs}/products/{}", p["id"].as_str().unwrap());
    app.call(get(), &path, &other, None)
        .await
        .expect_error(404, "not_found");
    app.call(patch(), &path, &other, Some(json!({"title": "Stolen"})))
        .await
        .expect_error(404, "not_found");
    app.call(reqwest::Method::DELETE, &path, &other, None)
        .await
        .expect_error(404, "not_found");
    // The same SKU is free in another store.
    product(
        &app,
        &other,
        &theirs,
        json!({"title": "Theirs", "variants": [{"sku": "M-1", "price_cents": 1}]}),
    )
    .await;
    let mine = app
        .call(
            get(),
            &format!("/v1/stores/{store}/products/{}", p["id"].as_str().unwrap()),
            &token,
            None,
        )
        .await;
    assert_eq!(mine.body["title"], "Mine");
}

/// Deleting is left out of the authorization table (it destroys its target).
#[tokio::test]
async fn deleting_needs_products_write_or_categories_write() {
    let app = spawn_app().await;
    let (token, store) = owner(&app).await;
    let (staff, staff_id) = app.member("staff@example.com").await;
    let (viewer, viewer_id) = app.member("viewer@example.com").await;
    app.add_to_store(&store, &staff_id, "staff").await;
    app.add_to_store(&store, &viewer_id, "viewer").await;
    let p = product(
        &app,
        &token,
        &store,
        json!({"title": "P", "variants": [{"sku": "P-1", "price_cents": 1}]}),
    )
    .await;
    let c = app
        .call(
            post(),
            &format!("/v1/stores/{store}/categories"),
            &token,
            Some(json!({"name": "C"})),
        )
        .await;
    let product_path = format!("/v1/stores/{store}/products/{}", p["id"].as_str().unwrap());
    let category_path = format!(
        "/v1/stores/{store}/categories/{}",
        c.body["id"].as_str().unwrap()
    );
    let del = reqwest::Method::DELETE;
    app.call(del.clone(), &product_path, &viewer, None)
        .await
        .expect_error(403, "missing_permission");
    app.call(del.clone(), &category_path, &staff, None)
        .await
        .expect_error(403, "missing_permission");
    app.call(del.clone(), &product_path, &staff, None)
        .await
        .expect(204);
    app.call(del, &category_path, &token, None)
        .await
        .expect(204);
}

/// Issue 13 item 9: a PATCH whose `variants` leave out a variant holding stock is 409
/// `conflict` naming it in `details.variant_ids`, and changes nothing (not even the other
/// fields of the same PATCH); a variant without stock can still be removed that way.
#[tokio::test]
async fn a_product_update_never_silently_deletes_stock() {
    let app = spawn_app().await;
    let (token, store) = owner(&app).await;
    let p = product(
        &app,
        &token,
        &store,
        json!({"title": "Caneca", "variants": [
            {"sku": "CAN-STOCK", "price_cents": 3000, "on_hand": 5},
            {"sku": "CAN-EMPTY", "price_cents": 3000}
        ]}),
    )
    .await;
    let path = format!("/v1/stores/{store}/products/{}", p["id"].as_str().unwrap());
    let stocked = p["variants"][0]["id"].clone();

    // The empty variant goes.
    let r = app
        .call(
            patch(),
            &path,
            &token,
            Some(json!({"variants": [{"id": stocked, "sku": "CAN-STOCK", "price_cents": 3000}]})),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["variants"].as_array().unwrap().len(), 1);

    // The stocked one does not, and the title change riding with it is not applied.
    let r = app
        .call(
            patch(),
            &path,
            &token,
            Some(json!({"title": "Caneca nova",
                        "variants": [{"sku": "CAN-NEW", "price_cents": 3500}]})),
        )
        .await;
    r.expect_error(409, "conflict");
    assert_eq!(r.body["details"]["variant_ids"], json!([stocked]));
    let now = app.call(get(), &path, &token, None).await;
    now.expect(200);
    assert_eq!(now.body["title"], "Caneca");
    let variants = now.body["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 1);
    assert_eq!(variants[0]["id"], stocked);
    let stock = app
        .call(
            get(),
            &format!("/v1/stores/{store}/inventory"),
            &token,
            None,
        )
        .await;
    assert_eq!(
        stock.body["data"][0]["variant_id"], stocked,
        "{}",
        stock.text
    );
    assert_eq!(stock.body["data"][0]["on_hand"], 5);
}
