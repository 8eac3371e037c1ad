//! The storefront API (issue 19): browsing, carts and checkout by a shopper with no
//! account, named by the store's public key (a chat channel's).

use serde_json::{Value, json};

use crate::support::{Receiver, Reply, Shop, TestApp, get, patch, post, spawn_app};

/// A shopper on one store's storefront: the key and the cart calls.
pub struct Front<'a> {
    pub app: &'a TestApp,
    pub key: String,
}

/// A cart as the shopper holds it.
pub struct Cart {
    pub id: String,
    pub token: String,
}

impl<'a> Front<'a> {
    /// Opens the storefront of `shop` (a chat channel that allows any site).
    pub async fn of(shop: &'a Shop) -> Front<'a> {
        let key = shop
            .app
            .chat_channel(&shop.token, shop.path("").trim_end_matches('/'), json!([]))
            .await;
        Front {
            app: &shop.app,
            key,
        }
    }

    pub fn path(&self, rest: &str) -> String {
        format!("/v1/storefront-api/{}/{rest}", self.key)
    }

    pub async fn get(&self, rest: &str) -> Reply {
        self.app.get(&self.path(rest)).await
    }

    pub async fn new_cart(&self) -> Cart {
        let r = self
            .app
            .send(self.app.client.post(self.app.url(&self.path("carts"))))
            .await;
        r.expect(201);
        assert_eq!(r.header("cache-control"), Some("no-store"));
        Cart {
            id: r.body["id"].as_str().unwrap().to_owned(),
            token: r.body["token"].as_str().unwrap().to_owned(),
        }
    }

    /// A call about `cart` with its token.
    pub async fn cart_call(
        &self,
        method: reqwest::Method,
        cart: &Cart,
        rest: &str,
        body: Option<Value>,
    ) -> Reply {
        let path = self.path(&format!("carts/{}{rest}", cart.id));
        let mut req = self
            .app
            .client
            .request(method, self.app.url(&path))
            .header("x-cart-token", &cart.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        self.app.send(req).await
    }

    pub async fn add(&self, cart: &Cart, variant: &str, quantity: i64) -> Reply {
        self.cart_call(
            post(),
            cart,
            "/items",
            Some(json!({"variant_id": variant, "quantity": quantity})),
        )
        .await
    }

    pub async fn contact(&self, cart: &Cart, contact: Value) -> Reply {
        self.cart_call(reqwest::Method::PUT, cart, "/customer", Some(contact))
            .await
    }

    pub async fn checkout(&self, cart: &Cart) -> Reply {
        self.cart_call(post(), cart, "/checkout", None).await
    }

    /// A cart with `quantity` of `variant` and an e-mail, ready to check out.
    pub async fn filled_cart(&self, variant: &str, quantity: i64, email: &str) -> Cart {
        let cart = self.new_cart().await;
        self.add(&cart, variant, quantity).await.expect(200);
        self.contact(&cart, json!({"email": email}))
            .await
            .expect(200);
        cart
    }
}

/// Creates a product in the shop's store with `status` and stock; its body.
async fn product(shop: &Shop, title: &str, sku: &str, status: &str, body: Value) -> Value {
    let mut b = json!({"title": title, "status": status,
                       "variants": [{"sku": sku, "price_cents": 1000, "on_hand": 3}]});
    for (k, v) in body.as_object().unwrap() {
        b[k] = v.clone();
    }
    let r = shop
        .app
        .call(post(), &shop.path("products"), &shop.token, Some(b))
        .await;
    r.expect(201);
    r.body.clone()
}

#[tokio::test]
async fn a_shopper_browses_fills_a_cart_and_checks_out_through_the_admin_order_path() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let app = &shop.app;
    let rx = Receiver::start().await;
    shop.subscribe(
        &rx,
        &["orders.created", "carts.abandoned", "carts.recovered"],
    )
    .await;
    let front = Front::of(&shop).await;
    let category = app
        .call(
            post(),
            &shop.path("categories"),
            &shop.token,
            Some(json!({"name": "Mugs"})),
        )
        .await;
    category.expect(201);
    let cat = category.body["id"].as_str().unwrap();
    let mug = product(
        &shop,
        "Mug",
        "MUG",
        "active",
        json!({"category_ids": [cat]}),
    )
    .await;
    product(&shop, "Secret", "SECRET", "draft", json!({})).await;
    product(&shop, "Old", "OLD", "archived", json!({})).await;

    // Browse: active products only, newest first, with availability as a yes or no.
    let list = front.get("products?limit=1").await;
    list.expect(200);
    assert_eq!(list.body["data"][0]["title"], "Mug");
    assert_eq!(list.body["has_more"], true);
    let next = list.body["next_cursor"].as_str().unwrap();
    let rest = front.get(&format!("products?limit=50&cursor={next}")).await;
    rest.expect(200);
    let titles: Vec<&str> = rest.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Tee"], "no draft or archived product");
    assert_eq!(rest.body["has_more"], false);
    let tee = &rest.body["data"][0];
    assert_eq!(tee["available"], true);
    assert_eq!(tee["variants"][0]["sku"], "TEE-S");
    assert_eq!(tee["variants"][0]["price_cents"], 2500);
    assert_eq!(tee["variants"][0]["available"], true);
    let by_category = front.get(&format!("products?category_id={cat}")).await;
    assert_eq!(by_category.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(by_category.body["data"][0]["id"], mug["id"]);
    let one = front
        .get(&format!("products/{}", tee["id"].as_str().unwrap()))
        .await;
    one.expect(200);
    assert_eq!(one.body, *tee);
    let cats = front.get("categories").await;
    cats.expect(200);
    assert_eq!(
        cats.body["data"],
        json!([{"id": cat, "parent_id": null, "name": "Mugs",
                                          "slug": "mugs"}])
    );

    // Reviews: the approved ones, without e-mails; the rating is the product's.
    let good = shop.review(json!({"rating": 4})).await;
    good.expect(201);
    shop.moderate(&good.body, "approved").await;
    shop.review(json!({"title": "Pending"})).await.expect(201);
    let tee_id = tee["id"].as_str().unwrap();
    let reviews = front.get(&format!("products/{tee_id}/reviews")).await;
    reviews.expect(200);
    let data = reviews.body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    assert_eq!(data[0]["rating"], 4);
    assert_eq!(data[0]["author_name"], "Ana");
    assert!(data[0].get("author_email").is_none(), "{}", data[0]);
    let rated = front.get(&format!("products/{tee_id}")).await;
    assert_eq!(
        (&rated.body["rating_average"], &rated.body["rating_count"]),
        (&json!(4.0), &json!(1))
    );

    // The cart: lines at current prices, quantities added up, edited, removed.
    let cart = front.new_cart().await;
    let r = front.add(&cart, &shop.variants[0], 2).await;
    r.expect(200);
    assert_eq!(r.body["status"], "open");
    assert_eq!(r.body["currency"], "BRL");
    assert!(r.body.get("token").is_none(), "the token is shown once");
    let r = front.add(&cart, &shop.variants[0], 1).await;
    assert_eq!(r.body["items"][0]["quantity"], 3);
    assert_eq!(r.body["items"][0]["total_cents"], 7500);
    assert_eq!(r.body["items"][0]["available"], true);
    front.add(&cart, &shop.variants[1], 1).await.expect(200);
    let line = format!("/items/{}", shop.variants[1]);
    let r = front
        .cart_call(patch(), &cart, &line, Some(json!({"quantity": 2})))
        .await;
    r.expect(200);
    assert_eq!(r.body["subtotal_cents"], 7500 + 6000);
    let r = front
        .cart_call(reqwest::Method::DELETE, &cart, &line, None)
        .await;
    r.expect(200);
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["subtotal_cents"], 7500);
    front
        .cart_call(reqwest::Method::DELETE, &cart, &line, None)
        .await
        .expect_error(404, "not_found");
    let r = front
        .contact(
            &cart,
            json!({"email": " Bia@Example.com ", "phone": "+55 11 99999-0000"}),
        )
        .await;
    r.expect(200);
    assert_eq!(
        r.body["customer"],
        json!({"email": "bia@example.com", "phone": "+55 11 99999-0000"})
    );
    let held = front.cart_call(get(), &cart, "", None).await;
    held.expect(200);
    assert_eq!(held.body["subtotal_cents"], 7500);

    // Checkout: the admin route's order, stock reserved, orders.created delivered.
    let done = front
        .cart_call(
            post(),
            &cart,
            "/checkout",
            Some(json!({"note": "ring twice"})),
        )
        .await;
    done.expect(201);
    let order = &done.body["order"];
    assert_eq!(order["number"], 1001);
    assert_eq!(order["status"], "pending");
    assert_eq!(order["total_cents"], 7500);
    assert_eq!(done.body["cart"]["status"], "converted");
    assert_eq!(done.body["cart"]["order_id"], order["id"]);
    let id = order["id"].as_str().unwrap();
    let admin = shop.read(&format!("orders/{id}")).await;
    assert_eq!(admin["source"], "storefront");
    assert_eq!(admin["note"], "ring twice");
    assert_eq!(admin["items"][0]["quantity"], 3);
    assert_eq!(admin["items"][0]["unit_price_cents"], 2500);
    assert_eq!(shop.stock(0).await, (10, 3, 7));
    // The buyer became a customer of the store, with the cart's contact.
    let buyer = shop
        .read(&format!(
            "customers/{}",
            admin["customer_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(buyer["email"], "bia@example.com");
    assert_eq!(buyer["orders_count"], 1);
    let hits = rx.wait_for(1).await;
    assert_eq!(hits[0].json()["event"], "orders.created");
    assert_eq!(hits[0].json()["data"], admin);
    // A converted cart is not a recovered one, and it no longer changes.
    front
        .add(&cart, &shop.variants[0], 1)
        .await
        .expect_error(409, "conflict");
    front.checkout(&cart).await.expect_error(409, "conflict");
    let admin_cart = shop.read(&format!("carts/{}", cart.id)).await;
    assert_eq!(admin_cart["status"], "converted");
    assert_eq!(admin_cart["order_id"], order["id"]);
    rx.expect_no_more_than(app, 1).await;

    // A second shopper with the same e-mail buys as the same customer.
    let again = front
        .filled_cart(&shop.variants[1], 1, "BIA@example.com")
        .await;
    let second = front.checkout(&again).await;
    second.expect(201);
    let o2 = shop
        .read(&format!(
            "orders/{}",
            second.body["order"]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(o2["customer_id"], admin["customer_id"]);
}

#[tokio::test]
async fn the_storefront_never_leaks_stock_unpublished_products_or_another_stores_data() {
    let shop = Shop::open(spawn_app().await, 2).await;
    let app = &shop.app;
    let front = Front::of(&shop).await;
    let draft = product(&shop, "Secret", "SECRET", "draft", json!({})).await;
    let draft_id = draft["id"].as_str().unwrap();
    let draft_variant = draft["variants"][0]["id"].as_str().unwrap();

    // No stock count anywhere: not in the list, not in a product, not in a cart, not in a 409.
    let list = front.get("products").await;
    list.expect(200);
    for word in ["on_hand", "reserved", "low_stock", "\"stock", "weight"] {
        assert!(!list.text.contains(word), "{word} in {}", list.text);
    }
    assert!(!list.text.contains("Secret"));
    front
        .get(&format!("products/{draft_id}"))
        .await
        .expect_error(404, "not_found");
    front
        .get(&format!("products/{draft_id}/reviews"))
        .await
        .expect_error(404, "not_found");
    let cart = front.new_cart().await;
    let short = front.add(&cart, &shop.variants[0], 3).await;
    short.expect_error(409, "insufficient_stock");
    assert_eq!(
        short.body["details"],
        json!({"variant_id": shop.variants[0], "requested": 3})
    );
    assert!(!short.text.contains("available"), "{}", short.text);
    front
        .add(&cart, draft_variant, 1)
        .await
        .expect_error(422, "validation_failed");
    // Sold out at checkout: the orders area's 409 reaches the shopper without the count.
    front.add(&cart, &shop.variants[0], 2).await.expect(200);
    front
        .contact(&cart, json!({"phone": "+55 11 90000-0000"}))
        .await
        .expect(200);
    shop.order(1).await;
    let sold = front.checkout(&cart).await;
    sold.expect_error(409, "insufficient_stock");
    assert!(!sold.text.contains("available\""), "{}", sold.text);
    assert_eq!(
        sold.body["details"],
        json!({"variant_id": shop.variants[0], "requested": 2})
    );
    let still = front.cart_call(get(), &cart, "", None).await;
    assert_eq!(
        still.body["status"], "open",
        "a failed checkout leaves the cart open"
    );
    assert_eq!(still.body["items"][0]["available"], false);
    assert!(!still.text.contains("on_hand") && !still.text.contains("reserved"));

    // Another store: its key does not open this store's products or carts.
    let (other_owner, _) = app.member("other@example.com").await;
    let other_store = app.open_store(&other_owner, "Other").await;
    let other_key = app
        .chat_channel(
            &other_owner,
            &format!("/v1/stores/{other_store}"),
            json!([]),
        )
        .await;
    let other = Front {
        app,
        key: other_key,
    };
    let tee = front.get("products").await.body["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    other
        .get(&format!("products/{tee}"))
        .await
        .expect_error(404, "not_found");
    assert_eq!(other.get("products").await.body["data"], json!([]));
    // The cart's own token, through the other store's key: 404, as a wrong token is.
    other
        .cart_call(get(), &cart, "", None)
        .await
        .expect_error(404, "not_found");
    other
        .add(&cart, &shop.variants[1], 1)
        .await
        .expect_error(404, "not_found");
    let theirs = other.new_cart().await;
    front
        .add(&theirs, &shop.variants[1], 1)
        .await
        .expect_error(404, "not_found");
    other
        .add(&theirs, &shop.variants[1], 1)
        .await
        .expect_error(422, "validation_failed");
    let wrong = Cart {
        id: cart.id.clone(),
        token: theirs.token.clone(),
    };
    front
        .cart_call(get(), &wrong, "", None)
        .await
        .expect_error(404, "not_found");
    let none = app.get(&front.path(&format!("carts/{}", cart.id))).await;
    none.expect_error(404, "not_found");
    app.get("/v1/storefront-api/chk_nope/products")
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn the_storefront_answers_cors_to_the_channels_sites_only() {
    let shop = Shop::open(spawn_app().await, 2).await;
    let app = &shop.app;
    let key = app
        .chat_channel(
            &shop.token,
            &format!("/v1/stores/{}", shop.store),
            json!(["https://shop.example"]),
        )
        .await;
    let path = format!("/v1/storefront-api/{key}/products");
    let ok = app
        .send(
            app.client
                .get(app.url(&path))
                .header("origin", "https://shop.example"),
        )
        .await;
    ok.expect(200);
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some("https://shop.example")
    );
    let other = app
        .send(
            app.client
                .get(app.url(&path))
                .header("origin", "https://evil.example"),
        )
        .await;
    other.expect_error(403, "forbidden");
    assert!(other.header("access-control-allow-origin").is_none());
    // A preflight for a cart line's change from the shop's site.
    let pre = app
        .send(
            app.client
                .request(reqwest::Method::OPTIONS, app.url(&path))
                .header("origin", "https://shop.example")
                .header("access-control-request-method", "PATCH")
                .header(
                    "access-control-request-headers",
                    "x-cart-token,content-type",
                ),
        )
        .await;
    assert!(pre.status.is_success(), "{}", pre.status);
    let methods = pre.header("access-control-allow-methods").unwrap_or("");
    assert!(
        methods.contains("PATCH") && methods.contains("DELETE"),
        "{methods}"
    );
    let headers = pre.header("access-control-allow-headers").unwrap_or("");
    assert!(headers.contains("x-cart-token"), "{headers}");
    // Anonymous calls carry the per-address budget.
    assert!(ok.header("ratelimit-limit").is_some());
}

#[tokio::test]
async fn bad_bodies_are_422_and_write_nothing() {
    let shop = Shop::open(spawn_app().await, 5).await;
    let app = &shop.app;
    let front = Front::of(&shop).await;
    let cart = front.new_cart().await;
    let before = front.cart_call(get(), &cart, "", None).await.body;
    let v = &shop.variants[0];
    for (body, field) in [
        (json!({"variant_id": v, "quantity": 0}), "quantity"),
        (json!({"variant_id": v, "quantity": 10_001}), "quantity"),
        (
            json!({"variant_id": uuid::Uuid::now_v7(), "quantity": 1}),
            "variant_id",
        ),
    ] {
        let r = front.cart_call(post(), &cart, "/items", Some(body)).await;
        r.expect_error(422, "validation_failed");
        assert!(r.body["details"]["fields"][field].is_string(), "{}", r.text);
    }
    let r = front
        .cart_call(post(), &cart, "/items", Some(json!({"variant_id": v})))
        .await;
    r.expect_error(422, "validation_failed");
    let r = front
        .cart_call(
            post(),
            &cart,
            "/items",
            Some(json!({"variant_id": v, "quantity": 1, "price_cents": 1})),
        )
        .await;
    r.expect_error(422, "validation_failed");
    let raw = app
        .send(
            app.client
                .post(app.url(&front.path(&format!("carts/{}/items", cart.id))))
                .header("x-cart-token", &cart.token)
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    raw.expect_error(400, "bad_request");
    front
        .contact(&cart, json!({"email": "not an address"}))
        .await
        .expect_error(422, "validation_failed");
    front
        .contact(&cart, json!({"phone": "12"}))
        .await
        .expect_error(422, "validation_failed");
    // Checkout needs lines and a contact.
    let empty = front.checkout(&cart).await;
    empty.expect_error(422, "validation_failed");
    assert!(empty.body["details"]["fields"]["items"].is_string());
    front.add(&cart, v, 1).await.expect(200);
    let anonymous = front.checkout(&cart).await;
    anonymous.expect_error(422, "validation_failed");
    assert!(anonymous.body["details"]["fields"]["customer"].is_string());
    let long = front
        .cart_call(
            post(),
            &cart,
            "/checkout",
            Some(json!({"note": "x".repeat(5001)})),
        )
        .await;
    long.expect_error(422, "validation_failed");
    // Nothing written by any of them: no order, no customer, no stock held; the cart holds
    // the one line added and nothing else.
    assert_eq!(app.count("SELECT COUNT(*) FROM orders").await, 0);
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 1);
    assert_eq!(shop.stock(0).await, (5, 0, 5));
    let after = front.cart_call(get(), &cart, "", None).await.body;
    assert_eq!(after["customer"], before["customer"]);
    assert_eq!(after["items"].as_array().unwrap().len(), 1);
    assert_eq!(after["items"][0]["quantity"], 1);
}

/// Fifty shoppers check out the last five units at once: exactly five orders, the others
/// 409 `insufficient_stock`, and stock never below zero.
#[tokio::test]
async fn fifty_concurrent_checkouts_of_the_last_units_never_oversell() {
    // One address checks out fifty times: past the per-address checkout budget.
    let app = crate::support::spawn_app_with(|c| c.checkouts_per_hour = 1_000).await;
    let shop = Shop::open(app, 5).await;
    let front = Front::of(&shop).await;
    let mut carts = Vec::new();
    for i in 0..50 {
        carts.push(
            front
                .filled_cart(&shop.variants[0], 1, &format!("s{i}@example.com"))
                .await,
        );
    }
    let answers = futures::future::join_all(carts.iter().map(|c| front.checkout(c))).await;
    let placed = answers.iter().filter(|r| r.status == 201).count();
    let refused: Vec<_> = answers.iter().filter(|r| r.status != 201).collect();
    assert_eq!(placed, 5);
    assert_eq!(refused.len(), 45);
    for r in refused {
        r.expect_error(409, "insufficient_stock");
    }
    assert_eq!(shop.stock(0).await, (5, 5, 0));
    assert_eq!(
        shop.app
            .count("SELECT COUNT(*) FROM orders WHERE source = 'storefront'")
            .await,
        5
    );
    assert_eq!(
        shop.app
            .count("SELECT COUNT(*) FROM carts WHERE status = 'converted'")
            .await,
        5
    );
}
