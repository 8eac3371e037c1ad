//! A store stocked for order tests: an owner, a customer, and a product with two variants.

use serde_json::{Value, json};

use super::client::{Reply, get, patch, post};
use super::{Receiver, TestApp};

/// A store with an owner, one customer and one product with two variants in stock.
pub struct Shop {
    pub app: TestApp,
    pub token: String,
    pub store: String,
    pub customer: String,
    /// SKU "TEE-S" (2500 cents) and "TEE-M" (3000 cents).
    pub variants: [String; 2],
}

impl Shop {
    pub async fn open(app: TestApp, stock: i64) -> Self {
        let (token, _) = app.member("owner@example.com").await;
        let store = app.open_store(&token, "Org").await;
        let customer = app
            .call(
                post(),
                &format!("/v1/stores/{store}/customers"),
                &token,
                Some(json!({"name": "Ana", "email": "ana@example.com"})),
            )
            .await;
        customer.expect(201);
        let product = app
            .call(
                post(),
                &format!("/v1/stores/{store}/products"),
                &token,
                Some(json!({"title": "Tee", "variants": [
                    {"sku": "TEE-S", "title": "S", "price_cents": 2500, "on_hand": stock},
                    {"sku": "TEE-M", "title": "M", "price_cents": 3000, "on_hand": stock}]})),
            )
            .await;
        product.expect(201);
        let v = |i: usize| {
            product.body["variants"][i]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        Self {
            customer: customer.body["id"].as_str().unwrap().to_owned(),
            variants: [v(0), v(1)],
            app,
            token,
            store,
        }
    }

    pub fn path(&self, rest: &str) -> String {
        format!("/v1/stores/{}/{rest}", self.store)
    }

    /// Creates an order of `quantity` of the first variant; its body.
    pub async fn order(&self, quantity: i64) -> Value {
        let r = self
            .app
            .call(
                post(),
                &self.path("orders"),
                &self.token,
                Some(json!({"customer_id": self.customer,
                            "items": [{"variant_id": self.variants[0], "quantity": quantity}]})),
            )
            .await;
        r.expect(201);
        r.body.clone()
    }

    pub async fn set_status(&self, order: &Value, status: &str) -> Value {
        let r = self
            .app
            .call(
                patch(),
                &self.path(&format!("orders/{}", order["id"].as_str().unwrap())),
                &self.token,
                Some(json!({ "status": status })),
            )
            .await;
        r.expect(200);
        r.body.clone()
    }

    pub async fn refund(&self, order: &Value, amount: i64) -> Reply {
        self.app
            .call(
                post(),
                &self.path(&format!("orders/{}/refund", order["id"].as_str().unwrap())),
                &self.token,
                Some(json!({ "amount_cents": amount })),
            )
            .await
    }

    /// `GET` of a path under the store, which must answer 200; its body.
    pub async fn read(&self, rest: &str) -> Value {
        let r = self
            .app
            .call(get(), &self.path(rest), &self.token, None)
            .await;
        r.expect(200);
        r.body.clone()
    }

    /// (on_hand, reserved, available) of variant `i`.
    pub async fn stock(&self, i: usize) -> (i64, i64, i64) {
        let r = self
            .app
            .call(get(), &self.path("inventory?limit=200"), &self.token, None)
            .await;
        r.expect(200);
        let row = r.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["variant_id"] == self.variants[i].as_str())
            .unwrap()
            .clone();
        let n = |k: &str| row[k].as_i64().unwrap();
        (n("on_hand"), n("reserved"), n("available"))
    }

    pub async fn subscribe(&self, rx: &Receiver, events: &[&str]) {
        self.app
            .call(
                post(),
                &self.path("webhooks"),
                &self.token,
                Some(json!({"url": rx.url, "events": events})),
            )
            .await
            .expect(201);
    }
}

impl Shop {
    /// The product of the shop's variants (as `GET /products/{id}` shows it).
    pub async fn product(&self) -> Value {
        let inv = self
            .app
            .call(get(), &self.path("inventory?limit=200"), &self.token, None)
            .await;
        let row = inv.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["variant_id"] == self.variants[0].as_str())
            .unwrap();
        let id = row["product_id"].as_str().unwrap().to_owned();
        let r = self
            .app
            .call(
                get(),
                &self.path(&format!("products/{id}")),
                &self.token,
                None,
            )
            .await;
        r.expect(200);
        r.body.clone()
    }

    /// Imports a five-star review of the product, with `extra` fields set over the defaults.
    pub async fn review(&self, extra: Value) -> Reply {
        let product = self.product().await;
        let mut body = json!({"product_id": product["id"], "author_name": "Ana",
                              "author_email": "Ana@Example.com", "title": "Great",
                              "body": "Fits well.", "rating": 5});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        self.app
            .call(post(), &self.path("reviews"), &self.token, Some(body))
            .await
    }

    /// Sets a review's status, which must answer 200; its body.
    pub async fn moderate(&self, review: &Value, status: &str) -> Value {
        let r = self
            .app
            .call(
                patch(),
                &self.path(&format!("reviews/{}", review["id"].as_str().unwrap())),
                &self.token,
                Some(json!({ "status": status })),
            )
            .await;
        r.expect(200);
        r.body.clone()
    }

    pub async fn badge(&self) -> i64 {
        let r = self
            .app
            .call(
                get(),
                &self.path("reviews?status=pending&limit=1&include_total=true"),
                &self.token,
                None,
            )
            .await;
        r.expect(200);
        assert!(r.body["data"].as_array().unwrap().len() <= 1);
        r.body["total"].as_i64().unwrap()
    }
}
