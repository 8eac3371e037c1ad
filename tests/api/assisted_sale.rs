//! Assisted sales (issue 19, phase B; spec 6.2–6.3 `cart:updated`, 7 `no_cart`): the team
//! builds a cart for a conversation from the inbox, both sockets hear each change, and the
//! checkout link the team sends opens the cart on the storefront.

use serde_json::{Value, json};

use crate::storefront::{Cart, Front};
use crate::support::{Reply, Shop, Visitor, Ws, get, post, spawn_app};

fn delete() -> reqwest::Method {
    reqwest::Method::DELETE
}

fn put() -> reqwest::Method {
    reqwest::Method::PUT
}

/// A shop with a chat channel, and a shopper (with an e-mail) who said hello on it.
struct Sale<'a> {
    shop: &'a Shop,
    front: Front<'a>,
    visitor: Visitor,
    /// `/v1/stores/{id}/conversations/{conversation_id}/cart`.
    cart: String,
}

impl<'a> Sale<'a> {
    async fn open(shop: &'a Shop) -> Sale<'a> {
        let front = Front::of(shop).await;
        let visitor = shop
            .app
            .visitor(
                &front.key,
                json!({"name": "Bia", "email": "Bia@Example.com"}),
            )
            .await;
        shop.app
            .visitor_says(&visitor, "do you have it in M?")
            .await
            .expect(201);
        let cart = shop.path(&format!("conversations/{}/cart", visitor.conversation_id));
        Sale {
            shop,
            front,
            visitor,
            cart,
        }
    }

    async fn call(&self, method: reqwest::Method, rest: &str, body: Option<Value>) -> Reply {
        let app = &self.shop.app;
        app.call(
            method,
            &format!("{}{rest}", self.cart),
            &self.shop.token,
            body,
        )
        .await
    }

    async fn set_items(&self, items: Value) -> Reply {
        self.call(put(), "/items", Some(json!({ "items": items })))
            .await
    }

    /// The team's socket on the store, past its hello.
    async fn team(&self) -> Ws {
        let mut ws = self
            .shop
            .app
            .team_socket(&self.shop.token, &self.shop.store)
            .await;
        assert_eq!(ws.next().await.unwrap()["type"], "hello");
        ws
    }

    /// The shopper's widget socket on the conversation, past its hello.
    async fn widget(&self) -> Ws {
        let v = &self.visitor;
        let mut ws = self
            .shop
            .app
            .ws(
                &format!(
                    "/v1/ws/widget?key={}&conversation_id={}&token={}",
                    self.front.key, v.conversation_id, v.token
                ),
                &[],
            )
            .await
            .expect("the widget socket opens");
        assert_eq!(ws.next().await.unwrap()["type"], "hello");
        ws
    }
}

/// The next `cart:updated` on `ws`: its envelope names the conversation, its data the cart
/// (or null), and no token is anywhere in it.
async fn cart_updated(ws: &mut Ws, conversation: &str) -> Value {
    let f = ws.next_of("cart:updated").await;
    assert_eq!(f["conversation_id"], conversation);
    assert_eq!(f["data"]["conversation_id"], conversation);
    assert!(
        !f.to_string().contains("token"),
        "a cart frame never carries a token: {f}"
    );
    f["data"]["cart"].clone()
}

fn quantities(cart: &Value) -> Vec<(String, i64)> {
    cart["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["variant_id"].as_str().unwrap().to_owned(),
                i["quantity"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_team_builds_a_cart_both_sockets_hear_it_and_the_link_opens_it_on_the_storefront() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let app = &shop.app;
    let sale = Sale::open(&shop).await;
    let conv = sale.visitor.conversation_id.as_str();
    let [s, m] = &shop.variants;
    let mut team = sale.team().await;
    let mut widget = sale.widget().await;

    // No cart yet: GET is 404 no_cart (an unknown conversation is plain not_found).
    sale.call(get(), "", None)
        .await
        .expect_error(404, "no_cart");
    let unknown = shop.path(&format!("conversations/{}/cart", uuid::Uuid::now_v7()));
    app.get_as(&unknown, &shop.token)
        .await
        .expect_error(404, "not_found");

    // Create: a team cart for the contact (their e-mail as customers keep it), no token.
    let made = sale.call(post(), "", None).await;
    made.expect(201);
    let cart_id = made.body["id"].as_str().unwrap().to_owned();
    assert_eq!(made.body["status"], "open");
    assert_eq!(made.body["customer"]["email"], "bia@example.com");
    assert!(made.body.get("token").is_none(), "{}", made.text);
    for ws in [&mut team, &mut widget] {
        let cart = cart_updated(ws, conv).await;
        assert_eq!(cart["id"], cart_id.as_str());
        assert_eq!(cart["items"], json!([]));
    }
    // Again: the same cart, 200, and nothing is published.
    let again = sale.call(post(), "", Some(json!({}))).await;
    again.expect(200);
    assert_eq!(again.body["id"], cart_id.as_str());

    // Edit: the whole list, in order.
    let edited = sale
        .set_items(json!([{"variant_id": m, "quantity": 1}, {"variant_id": s, "quantity": 2}]))
        .await;
    edited.expect(200);
    assert_eq!(edited.body["subtotal_cents"], 3000 + 2 * 2500);
    let want = vec![(m.clone(), 1), (s.clone(), 2)];
    assert_eq!(quantities(&edited.body), want);
    for ws in [&mut team, &mut widget] {
        let cart = cart_updated(ws, conv).await;
        assert_eq!(
            cart["id"],
            cart_id.as_str(),
            "the edit's frame, not a stale one"
        );
        assert_eq!(quantities(&cart), want);
    }
    let read = sale.call(get(), "", None).await;
    read.expect(200);
    assert_eq!(quantities(&read.body), want);
    // The store's cart list shows it like any other.
    let listed = app
        .get_as(&shop.path(&format!("carts/{cart_id}")), &shop.token)
        .await;
    listed.expect(200);
    assert_eq!(listed.body["subtotal_cents"], 8000);

    // The checkout link is a team message: it reaches the widget like any reply.
    let sent = sale
        .call(post(), "/send", Some(json!({"text": "Here is your cart"})))
        .await;
    sent.expect(201);
    assert_eq!(sent.body["message"]["sender"], "agent");
    let msg = widget.next_of("message:new").await;
    let text = msg["data"]["text"].as_str().unwrap().to_owned();
    assert_eq!(text, sent.body["message"]["text"].as_str().unwrap());
    assert!(text.starts_with("Here is your cart\n"), "{text}");
    assert_eq!(
        team.next_of("message:new").await["data"]["id"],
        sent.body["message"]["id"]
    );
    // It opens the cart on the storefront with a token of the shopper's own.
    let url = text.lines().last().unwrap();
    let base = app.url("");
    let path = url.strip_prefix(&base).unwrap_or_else(|| panic!("{url}"));
    assert!(
        path.starts_with(&format!(
            "/v1/storefront-api/{}/carts/{cart_id}/recover?",
            sale.front.key
        )),
        "{path}"
    );
    let opened = app.get(path).await;
    opened.expect(200);
    assert_eq!(opened.body["id"], cart_id.as_str());
    assert_eq!(quantities(&opened.body), want);
    let mine = Cart {
        id: cart_id.clone(),
        token: opened.body["token"].as_str().unwrap().to_owned(),
    };
    let on_front = sale.front.cart_call(get(), &mine, "", None).await;
    on_front.expect(200);
    assert_eq!(on_front.body["subtotal_cents"], 8000);
    // A tampered link opens nothing.
    app.get(&path.replace("signature=", "signature=A"))
        .await
        .expect_error(404, "not_found");

    // The shopper's own change on the storefront reaches the team (and their widget) too.
    sale.front.add(&mine, s, 1).await.expect(200);
    for ws in [&mut team, &mut widget] {
        let cart = cart_updated(ws, conv).await;
        assert_eq!(quantities(&cart), vec![(m.clone(), 1), (s.clone(), 3)]);
    }

    // Detach: both sockets hear a null cart; GET is no_cart again; DELETE is repeatable.
    sale.call(delete(), "", None).await.expect(204);
    for ws in [&mut team, &mut widget] {
        assert_eq!(cart_updated(ws, conv).await, Value::Null);
    }
    sale.call(get(), "", None)
        .await
        .expect_error(404, "no_cart");
    sale.call(delete(), "", None).await.expect(204);
    sale.call(post(), "/send", None)
        .await
        .expect_error(404, "no_cart");
    sale.set_items(json!([])).await.expect_error(404, "no_cart");
    // The cart itself stays, and the shopper can still check it out.
    sale.front
        .contact(&mine, json!({"email": "bia@example.com"}))
        .await
        .expect(200);
    let done = sale.front.checkout(&mine).await;
    done.expect(201);
    assert_eq!(done.body["cart"]["status"], "converted");

    // Attaching it back (checked out) is 409; a new POST opens a new cart.
    sale.call(post(), "", Some(json!({"cart_id": cart_id})))
        .await
        .expect_error(409, "conflict");
    let fresh = sale.call(post(), "", None).await;
    fresh.expect(201);
    assert_ne!(fresh.body["id"], cart_id.as_str());
}

#[tokio::test]
async fn refused_edits_answer_the_storefront_errors_and_change_nothing() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let app = &shop.app;
    let sale = Sale::open(&shop).await;
    let conv = sale.visitor.conversation_id.as_str();
    let [s, m] = &shop.variants;
    sale.call(post(), "", None).await.expect(201);
    let kept = sale
        .set_items(json!([{"variant_id": s, "quantity": 2}]))
        .await;
    kept.expect(200);
    let before = sale.call(get(), "", None).await.body.clone();
    let mut team = sale.team().await;

    // A product not on sale, and one of the store's variants it does not have.
    let draft = app
        .call(
            post(),
            &shop.path("products"),
            &shop.token,
            Some(json!({"title": "Soon", "status": "draft",
                        "variants": [{"sku": "SOON", "price_cents": 100, "on_hand": 5}]})),
        )
        .await;
    draft.expect(201);
    let soon = draft.body["variants"][0]["id"].as_str().unwrap();

    // The first line is fine each time; the second is refused, so neither is written.
    let fine = json!({"variant_id": m, "quantity": 1});
    let over = sale
        .set_items(json!([fine, {"variant_id": s, "quantity": 11}]))
        .await;
    over.expect_error(409, "insufficient_stock");
    assert_eq!(
        over.body["details"],
        json!({"variant_id": s, "requested": 11})
    );
    for (line, field) in [
        (
            json!({"variant_id": soon, "quantity": 1}),
            "items[1].variant_id",
        ),
        (
            json!({"variant_id": uuid::Uuid::now_v7(), "quantity": 1}),
            "items[1].variant_id",
        ),
        (json!({"variant_id": s, "quantity": 0}), "items[1].quantity"),
        (
            json!({"variant_id": m, "quantity": 2}),
            "items[1].variant_id",
        ),
    ] {
        let r = sale.set_items(json!([fine, line])).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"].get(field).is_some(),
            "{field}: {}",
            r.text
        );
    }
    sale.call(put(), "/items", Some(json!({"lines": []})))
        .await
        .expect_error(422, "validation_failed");

    let after = sale.call(get(), "", None).await;
    after.expect(200);
    assert_eq!(after.body, before, "nothing was written");
    // Nor published: the next frame the team sees is the next accepted change.
    sale.set_items(json!([fine])).await.expect(200);
    let cart = cart_updated(&mut team, conv).await;
    assert_eq!(quantities(&cart), vec![(m.clone(), 1)]);
}

#[tokio::test]
async fn another_stores_conversation_or_cart_is_not_found_and_a_cart_has_one_conversation() {
    let shop = Shop::open(spawn_app().await, 10).await;
    let app = &shop.app;
    let sale = Sale::open(&shop).await;

    // Another store of another owner, with its own shopper and cart.
    let (other, _) = app.member("other@example.com").await;
    let elsewhere = app.open_store(&other, "Elsewhere").await;
    let ep = format!("/v1/stores/{elsewhere}");
    let their_key = app.chat_channel(&other, &ep, json!([])).await;
    let theirs = app.visitor(&their_key, json!({})).await;
    let their_cart = app
        .send(
            app.client
                .post(app.url(&format!("/v1/storefront-api/{their_key}/carts"))),
        )
        .await;
    their_cart.expect(201);
    let their_cart_id = their_cart.body["id"].as_str().unwrap();

    // Their conversation under our store's path: not found, for every method.
    let foreign = shop.path(&format!("conversations/{}/cart", theirs.conversation_id));
    for (method, path, body) in [
        (get(), foreign.clone(), None),
        (post(), foreign.clone(), None),
        (
            put(),
            format!("{foreign}/items"),
            Some(json!({"items": []})),
        ),
        (delete(), foreign.clone(), None),
        (post(), format!("{foreign}/send"), None),
    ] {
        app.call(method.clone(), &path, &shop.token, body)
            .await
            .expect_error(404, "not_found");
    }
    // Their cart into our conversation: not found, and nothing attached.
    sale.call(post(), "", Some(json!({"cart_id": their_cart_id})))
        .await
        .expect_error(404, "not_found");
    sale.call(get(), "", None)
        .await
        .expect_error(404, "no_cart");
    // Our conversation through their store: they are not members of ours, ours not of theirs.
    app.get_as(&sale.cart, &other)
        .await
        .expect_error(404, "not_found");

    // A shopper's own cart of this store can be attached; it keeps its contact and token.
    let shopper_cart = sale
        .front
        .filled_cart(&shop.variants[0], 1, "own@example.com")
        .await;
    let attached = sale
        .call(post(), "", Some(json!({"cart_id": shopper_cart.id})))
        .await;
    attached.expect(201);
    assert_eq!(attached.body["customer"]["email"], "own@example.com");
    sale.front
        .cart_call(get(), &shopper_cart, "", None)
        .await
        .expect(200);
    // One cart per conversation, one conversation per cart.
    let second = sale.front.new_cart().await;
    sale.call(post(), "", Some(json!({"cart_id": second.id})))
        .await
        .expect_error(409, "conflict");
    let next = app.visitor(&sale.front.key, json!({"name": "Caio"})).await;
    let next_cart = shop.path(&format!("conversations/{}/cart", next.conversation_id));
    app.call(
        post(),
        &next_cart,
        &shop.token,
        Some(json!({"cart_id": shopper_cart.id})),
    )
    .await
    .expect_error(409, "conflict");
}
