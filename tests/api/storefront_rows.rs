//! The storefront's stored product rows (issue 19, V29): whatever mix of catalog, stock,
//! order and review writes a store goes through, each active product's stored row is
//! exactly what the writer's code (`storefront::store::build`) makes from the catalog now,
//! and no other product has one; the list and the product read answer those rows.

use std::collections::BTreeMap;

use merchant_admin::ids::{ProductId, StoreId};
use merchant_admin::storefront::store as sf;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::storefront::Front;
use crate::support::{Reply, Shop, TestApp, patch, post, spawn_app, spawn_app_at, spawn_app_with};

/// Every stored row (product id -> JSON) and what `build` makes of every product now.
async fn stored_and_fresh(app: &TestApp) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    app.state
        .db
        .read(|c| {
            let stored = c
                .prepare("SELECT id, rendered FROM storefront_products")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<BTreeMap<String, String>, _>>()?;
            let products: Vec<(StoreId, ProductId)> = c
                .prepare("SELECT store_id, id FROM products")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            let mut fresh = BTreeMap::new();
            for (store, id) in products {
                if let Some(p) = sf::build(c, store, id)? {
                    fresh.insert(id.to_string(), sf::render(&p)?);
                }
            }
            Ok((stored, fresh))
        })
        .await
        .unwrap()
}

async fn assert_rows_current(app: &TestApp, when: &str) {
    let (stored, fresh) = stored_and_fresh(app).await;
    for (id, want) in &fresh {
        assert_eq!(
            stored.get(id),
            Some(want),
            "{when}: product {id}'s stored row is not what the catalog builds now"
        );
    }
    let extra: Vec<_> = stored
        .keys()
        .filter(|id| !fresh.contains_key(*id))
        .collect();
    assert!(
        extra.is_empty(),
        "{when}: rows of products not on sale: {extra:?}"
    );
}

/// The store under test: its ids, as the writes made them.
struct World {
    products: Vec<String>,
    variants: Vec<String>,
    categories: Vec<String>,
    orders: Vec<Value>,
    reviews: Vec<Value>,
    skus: usize,
}

impl World {
    fn sku(&mut self) -> String {
        self.skus += 1;
        format!("R{}", self.skus)
    }

    fn some_categories(&self, rng: &mut StdRng) -> Vec<String> {
        self.categories
            .iter()
            .filter(|_| rng.random_bool(0.4))
            .cloned()
            .collect()
    }
}

fn ok_or(r: &Reply, allowed: &[u16]) {
    assert!(
        r.status.is_success() || allowed.contains(&r.status.as_u16()),
        "unexpected {}: {}",
        r.status,
        r.text
    );
}

/// One random write, through the API as a merchant (or the storefront) makes it.
#[allow(clippy::too_many_lines)]
async fn random_write(shop: &Shop, front: &Front<'_>, w: &mut World, rng: &mut StdRng) {
    let app = &shop.app;
    let call = |m: reqwest::Method, path: String, body: Option<Value>| async move {
        app.call(m, &shop.path(&path), &shop.token, body).await
    };
    match rng.random_range(0..12) {
        // A product, active or not, with zero to three units per variant.
        0 | 1 => {
            let status = *["active", "active", "draft", "archived"]
                .choose(rng)
                .unwrap();
            let variants: Vec<Value> = (0..rng.random_range(1..=3))
                .map(|_| {
                    json!({"sku": w.sku(), "price_cents": rng.random_range(100..5000),
                           "on_hand": rng.random_range(0..=3)})
                })
                .collect();
            let r = call(
                post(),
                "products".into(),
                Some(json!({"title": format!("P{}", w.skus), "status": status,
                            "category_ids": w.some_categories(rng), "variants": variants})),
            )
            .await;
            r.expect(201);
            w.products.push(r.body["id"].as_str().unwrap().to_owned());
            for v in r.body["variants"].as_array().unwrap() {
                w.variants.push(v["id"].as_str().unwrap().to_owned());
            }
        }
        // A change to a product: status, text, categories or its variants.
        2 | 3 => {
            let Some(id) = w.products.choose(rng).cloned() else {
                return;
            };
            let body = match rng.random_range(0..5) {
                0 => {
                    let status = ["active", "draft", "archived"].choose(rng);
                    json!({ "status": status })
                }
                1 => json!({"title": format!("Renamed {}", rng.random::<u16>()),
                            "description": "Now with \"quotes\" and é", "tags": ["a", "b"]}),
                2 => json!({"category_ids": w.some_categories(rng)}),
                _ => {
                    let p = call(reqwest::Method::GET, format!("products/{id}"), None).await;
                    if p.status != 200 {
                        return;
                    }
                    // Reprice every variant, drop one now and then (409 when it holds
                    // stock), add one now and then.
                    let mut vs: Vec<Value> = p.body["variants"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| {
                            json!({"id": v["id"], "sku": v["sku"],
                                   "price_cents": rng.random_range(100..5000)})
                        })
                        .collect();
                    if vs.len() > 1 && rng.random_bool(0.3) {
                        vs.remove(0);
                    }
                    if rng.random_bool(0.4) {
                        vs.push(json!({"sku": w.sku(), "price_cents": 700,
                                       "on_hand": rng.random_range(0..=2)}));
                    }
                    json!({ "variants": vs })
                }
            };
            let r = call(patch(), format!("products/{id}"), Some(body)).await;
            ok_or(&r, &[404, 409]);
            if r.status == 200 {
                for v in r.body["variants"].as_array().unwrap() {
                    let v = v["id"].as_str().unwrap().to_owned();
                    if !w.variants.contains(&v) {
                        w.variants.push(v);
                    }
                }
            }
        }
        4 => {
            if rng.random_bool(0.3) {
                if let Some(id) = w.products.choose(rng).cloned() {
                    let r = call(reqwest::Method::DELETE, format!("products/{id}"), None).await;
                    ok_or(&r, &[404]);
                }
            } else if w.categories.len() > 1 && rng.random_bool(0.5) {
                let at = rng.random_range(0..w.categories.len());
                let id = w.categories.remove(at);
                call(reqwest::Method::DELETE, format!("categories/{id}"), None)
                    .await
                    .expect(204);
            } else {
                let r = call(
                    post(),
                    "categories".into(),
                    Some(json!({"name": format!("C{}", rng.random::<u32>())})),
                )
                .await;
                r.expect(201);
                w.categories.push(r.body["id"].as_str().unwrap().to_owned());
            }
        }
        // Stock adjustments either way (409 past what is available).
        5 | 6 => {
            let Some(v) = w.variants.choose(rng).cloned() else {
                return;
            };
            let delta = *[-2, -1, 1, 2, 3].choose(rng).unwrap();
            let r = call(
                post(),
                format!("inventory/{v}/adjustments"),
                Some(json!({"delta": delta, "reason": "count"})),
            )
            .await;
            ok_or(&r, &[404, 409]);
        }
        // An admin order reserves stock.
        7 => {
            let Some(v) = w.variants.choose(rng).cloned() else {
                return;
            };
            let r = call(
                post(),
                "orders".into(),
                Some(json!({"customer_id": shop.customer,
                            "items": [{"variant_id": v, "quantity": rng.random_range(1..=2)}]})),
            )
            .await;
            ok_or(&r, &[409, 422]);
            if r.status == 201 {
                w.orders.push(r.body.clone());
            }
        }
        // An order moves on: paid, fulfilled (units leave), cancelled or refunded (units
        // come back).
        8 => {
            let Some(at) = (!w.orders.is_empty()).then(|| rng.random_range(0..w.orders.len()))
            else {
                return;
            };
            let o = w.orders[at].clone();
            let next = match o["status"].as_str().unwrap() {
                "pending" => *["paid", "cancelled"].choose(rng).unwrap(),
                "paid" => *["fulfilled", "cancelled", "refund"].choose(rng).unwrap(),
                _ => return,
            };
            if next == "refund" {
                let total = o["total_cents"].as_i64().unwrap();
                shop.refund(&o, total).await.expect(201);
                w.orders.remove(at);
            } else {
                w.orders[at] = shop.set_status(&o, next).await;
            }
        }
        // Reviews: approved ones move the product's rating.
        9 => {
            if rng.random_bool(0.6) || w.reviews.is_empty() {
                let Some(p) = w.products.choose(rng).cloned() else {
                    return;
                };
                let status = *["approved", "pending"].choose(rng).unwrap();
                let r = call(
                    post(),
                    "reviews".into(),
                    Some(json!({"product_id": p, "author_name": "Ana",
                                "author_email": "ana@example.com", "title": "T", "body": "B",
                                "rating": rng.random_range(1..=5), "status": status})),
                )
                .await;
                ok_or(&r, &[422]);
                if r.status == 201 {
                    w.reviews.push(r.body.clone());
                }
            } else {
                let r = w.reviews.choose(rng).unwrap().clone();
                let status = ["approved", "pending", "rejected"].choose(rng).unwrap();
                let r = call(
                    patch(),
                    format!("reviews/{}", r["id"].as_str().unwrap()),
                    Some(json!({ "status": status })),
                )
                .await;
                ok_or(&r, &[404]);
            }
        }
        // Shoppers check out at once, several wanting the same few units.
        _ => {
            let mut carts = Vec::new();
            for i in 0..rng.random_range(2..=6) {
                let Some(v) = w.variants.choose(rng).cloned() else {
                    return;
                };
                let cart = front.new_cart().await;
                let added = front.add(&cart, &v, 1).await;
                ok_or(&added, &[409, 422]);
                if added.status == 200 {
                    front
                        .contact(&cart, json!({"email": format!("s{i}@example.com")}))
                        .await
                        .expect(200);
                    carts.push(cart);
                }
            }
            let answers = futures::future::join_all(carts.iter().map(|c| front.checkout(c))).await;
            for r in &answers {
                ok_or(r, &[409, 422]);
            }
        }
    }
}

/// A randomized run of writes (seeded, so a failure replays): after each batch, every
/// product's stored storefront row is the one the writer builds from the catalog now.
#[tokio::test]
async fn stored_storefront_rows_stay_what_the_catalog_builds_through_random_writes() {
    // Shoppers' calls spend the anonymous and checkout budgets, and the test clock never
    // refills them.
    let app = spawn_app_with(|c| {
        c.rate_limit_anonymous = 1_000_000;
        c.checkouts_per_hour = 1_000_000;
    })
    .await;
    let shop = Shop::open(app, 2).await;
    let front = Front::of(&shop).await;
    let mut w = World {
        products: Vec::new(),
        variants: shop.variants.to_vec(),
        categories: Vec::new(),
        orders: Vec::new(),
        reviews: Vec::new(),
        skus: 0,
    };
    for name in ["Shirts", "Hats"] {
        let r = shop
            .app
            .call(
                post(),
                &shop.path("categories"),
                &shop.token,
                Some(json!({ "name": name })),
            )
            .await;
        r.expect(201);
        w.categories.push(r.body["id"].as_str().unwrap().to_owned());
    }
    assert_rows_current(&shop.app, "at the start").await;
    for seed in [19_u64, 28] {
        let mut rng = StdRng::seed_from_u64(seed);
        for batch in 0..8 {
            for _ in 0..25 {
                random_write(&shop, &front, &mut w, &mut rng).await;
            }
            assert_rows_current(&shop.app, &format!("seed {seed}, after batch {batch}")).await;
        }
    }

    // The run reached what it means to test: products on and off sale, availability both
    // ways, ratings.
    let (_, fresh) = stored_and_fresh(&shop.app).await;
    let shown: Vec<Value> = fresh
        .values()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    assert!(shown.len() >= 5, "{} products on sale", shown.len());
    assert!(shown.iter().any(|p| p["available"] == true));
    assert!(shown.iter().any(|p| p["available"] == false));
    assert!(shown.iter().any(|p| p["rating_count"].as_i64() > Some(0)));
    assert!(
        shop.app
            .count("SELECT COUNT(*) FROM products WHERE status <> 'active'")
            .await
            > 0
    );

    // The list, paged, is the stored rows newest first; a product read is its row.
    let mut listed = Vec::new();
    let mut path = "products?limit=7".to_owned();
    loop {
        let r = front.get(&path).await;
        r.expect(200);
        listed.extend(r.body["data"].as_array().unwrap().iter().cloned());
        match r.body["next_cursor"].as_str() {
            Some(c) => path = format!("products?limit=7&cursor={c}"),
            None => break,
        }
    }
    let mut want = shown.clone();
    want.sort_by(|a, b| {
        (b["created_at"].as_str(), b["id"].as_str())
            .cmp(&(a["created_at"].as_str(), a["id"].as_str()))
    });
    assert_eq!(listed, want);
    let one = &want[want.len() / 2];
    let r = front
        .get(&format!("products/{}", one["id"].as_str().unwrap()))
        .await;
    r.expect(200);
    assert_eq!(&r.body, one);
}

/// A database V29 upgrades has products but no rows yet: the migration queues the active
/// ones, and the server renders them when it opens the database, before it serves; the
/// queue is then empty.
#[tokio::test]
async fn products_queued_by_the_migration_are_rendered_when_the_server_opens() {
    let shop = Shop::open(spawn_app().await, 2).await;
    let (before, _) = stored_and_fresh(&shop.app).await;
    assert_eq!(before.len(), 1);
    let product = before.keys().next().unwrap().clone();
    let now = shop.app.clock_now();
    let (stopped, dir) = shop.app.stop().await;
    stopped.unwrap();

    // As V29 leaves an upgraded database: no rows, every active product queued (and a
    // queued id whose product is gone by then).
    let c = rusqlite::Connection::open(dir.path().join("merchant-admin.db")).unwrap();
    c.execute_batch(
        "DELETE FROM storefront_products;
         INSERT INTO storefront_pending (product_id) SELECT id FROM products
             WHERE status = 'active';
         INSERT INTO storefront_pending (product_id) VALUES ('00000000-0000-4000-8000-000000000000');",
    )
    .unwrap();
    drop(c);

    let app = spawn_app_at(dir, now, |_| {}).await;
    let (after, _) = stored_and_fresh(&app).await;
    assert_eq!(after, before);
    assert_rows_current(&app, "after opening").await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM storefront_pending").await,
        0
    );
    assert!(after.contains_key(&product));
}
