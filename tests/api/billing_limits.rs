//! The plan's limits on products, monthly orders and the assistant (issue 17 "Limits (402)";
//! spec 4.10, 7), with an operator's plans file of tiny limits. The storefront's orders,
//! which are never refused, are shown by the in-crate test of `orders::writes::admit` (no
//! route takes them yet).

use std::sync::Arc;

use merchant_admin::billing::plans::Catalog;
use reqwest::Method;
use serde_json::json;

use crate::support::model::{FakeModel, call, text};
use crate::support::{Shop, TestApp, patch, post, spawn_app_with};

/// A one-plan catalog ("tiny"), loaded from a plans file as the operator's would be.
fn tiny(products: i64, orders: i64, assistant: i64) -> Arc<Catalog> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plans.toml");
    std::fs::write(
        &path,
        format!(
            r#"[[plans]]
code = "tiny"
name = "Tiny"
monthly_price_cents = 100
annual_price_cents = 1000
limits = {{ stores = 2, members_per_store = 5, products = {products}, orders_per_month = {orders}, assistant_messages_per_store_per_month = {assistant} }}
"#
        ),
    )
    .unwrap();
    Arc::new(Catalog::load(&path).unwrap())
}

/// Puts the store's organization in `status` directly: the transitions that get there (a
/// daily job, payments) are not built yet.
async fn set_status(app: &TestApp, store: &str, status: &'static str) {
    let store = store.to_owned();
    app.state
        .db
        .write(move |tx| {
            tx.execute(
                "UPDATE subscriptions SET status = ?2
                 WHERE tenant_id = (SELECT tenant_id FROM stores WHERE id = ?1)",
                rusqlite::params![store, status],
            )?;
            Ok(())
        })
        .await
        .unwrap();
}

/// Products are counted across the organization's stores: up to the plan's limit they are
/// made, one past it is 402 with what was reached and writes nothing; a deleted product
/// frees its place; concurrent creations never pass the limit; a suspended organization adds
/// none.
#[tokio::test]
async fn products_past_the_plan_are_refused_with_what_was_reached() {
    let app = spawn_app_with(|c| c.plans = tiny(3, 10, 10)).await;
    let (token, _) = app.member("owner@example.com").await;
    let one = app.open_store(&token, "Org").await;
    let org = app.get_as(&format!("/v1/stores/{one}"), &token).await.body["tenant_id"].clone();
    let two = app
        .call(
            post(),
            "/v1/stores",
            &token,
            Some(json!({"tenant_id": org, "name": "Two"})),
        )
        .await;
    two.expect(201);
    let two = two.body["id"].as_str().unwrap().to_owned();
    let (app, token) = (&app, &token);
    let create = |store: &str, sku: String| {
        let path = format!("/v1/stores/{store}/products");
        let body = json!({"title": sku, "variants": [{"sku": sku, "price_cents": 1000}]});
        async move { app.call(post(), &path, token, Some(body)).await }
    };
    let delete = |store: &str, id: &str| {
        let path = format!("/v1/stores/{store}/products/{id}");
        async move {
            app.call(Method::DELETE, &path, token, None)
                .await
                .expect(204);
        }
    };
    create(&one, "A".into()).await.expect(201);
    create(&two, "B".into()).await.expect(201);
    let third = create(&one, "C".into()).await;
    third.expect(201); // at the limit: the third of three
    let r = create(&two, "D".into()).await;
    r.expect_error(402, "plan_limit_reached");
    assert_eq!(
        r.body["details"],
        json!({"limit": "products", "max": 3, "used": 3, "plan": "tiny"})
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM products").await, 3);
    assert_eq!(app.count("SELECT COUNT(*) FROM variants").await, 3);

    // Deleting one makes room for one; of many at once, exactly one is made.
    let third = third.body["id"].as_str().unwrap().to_owned();
    delete(&one, &third).await;
    let racers = (0..6).map(|n| create(&one, format!("R{n}")));
    let statuses: Vec<u16> = futures::future::join_all(racers)
        .await
        .iter()
        .map(|r| r.status.as_u16())
        .collect();
    let made = statuses.iter().filter(|s| **s == 201).count();
    let refused = statuses.iter().filter(|s| **s == 402).count();
    assert_eq!((made, refused), (1, 5), "{statuses:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM products").await, 3);

    // Suspended, with room again: nothing is added all the same.
    let list = app
        .get_as(&format!("/v1/stores/{one}/products"), token)
        .await;
    delete(&one, list.body["data"][0]["id"].as_str().unwrap()).await;
    set_status(app, &one, "suspended").await;
    let r = create(&two, "E".into()).await;
    r.expect_error(402, "subscription_inactive");
    assert_eq!(r.body["details"], json!({"status": "suspended"}));
}

impl Shop {
    async fn try_order(&self, token: &str, rest: &str) -> crate::support::Reply {
        self.app
            .call(
                post(),
                &self.path(rest),
                token,
                Some(json!({"customer_id": self.customer,
                            "items": [{"variant_id": self.variants[0], "quantity": 1}]})),
            )
            .await
    }
}

/// Orders created this calendar month (UTC) are held to the plan, API and manual alike:
/// one past is 402 with what was reached and reserves no stock; the next month starts
/// over; a canceled subscription takes none.
#[tokio::test]
async fn monthly_orders_are_held_to_the_plan_and_renew_with_the_month() {
    let shop = Shop::open(spawn_app_with(|c| c.plans = tiny(10, 2, 10)).await, 10).await;
    let token = shop.token.clone();
    shop.try_order(&token, "orders").await.expect(201);
    shop.try_order(&token, "orders/manual").await.expect(201); // the second of two
    for rest in ["orders", "orders/manual"] {
        let r = shop.try_order(&token, rest).await;
        r.expect_error(402, "plan_limit_reached");
        assert_eq!(
            r.body["details"],
            json!({"limit": "orders_per_month", "max": 2, "used": 2, "plan": "tiny"})
        );
    }
    assert_eq!(shop.app.count("SELECT COUNT(*) FROM orders").await, 2);
    assert_eq!(
        shop.stock(0).await,
        (10, 2, 8),
        "a refused order reserves nothing"
    );
    // A cancelled order still counts: it was created this month.
    let orders = shop.read("orders").await;
    let first = orders["data"][0].clone();
    shop.set_status(&first, "cancelled").await;
    shop.try_order(&token, "orders")
        .await
        .expect_error(402, "plan_limit_reached");

    // The first instant of the next month (UTC) starts from nothing.
    let (_, _, end) = merchant_admin::assistant::store::period(shop.app.clock_now());
    shop.app.clock.advance(end - shop.app.clock_now());
    // (The session's access token has expired meanwhile: a new sign-in.)
    let login = shop.app.login_as("owner@example.com", "phone").await;
    let token = login.body["token"].as_str().unwrap().to_owned();
    shop.try_order(&token, "orders").await.expect(201);
    shop.try_order(&token, "orders").await.expect(201);
    shop.try_order(&token, "orders/manual")
        .await
        .expect_error(402, "plan_limit_reached");

    set_status(&shop.app, &shop.store, "canceled").await;
    let r = shop.try_order(&token, "orders/manual").await;
    r.expect_error(402, "subscription_inactive");
    assert_eq!(r.body["details"], json!({"status": "canceled"}));
    // Changing the orders it has is not adding one.
    let orders = shop.app.get_as(&shop.path("orders"), &token).await;
    let id = orders.body["data"][0]["id"].as_str().unwrap();
    shop.app
        .call(
            patch(),
            &shop.path(&format!("orders/{id}")),
            &token,
            Some(json!({"note": "still ours"})),
        )
        .await
        .expect(200);
}

/// While the organization's subscription is suspended the assistant answers nothing: a
/// chat and a decision (under the store and by the proposal alone) are 402
/// `subscription_inactive`, nothing is counted or decided and the model is not asked; the
/// usage still reads. Past due (not suspended yet), the same proposal can be approved.
#[tokio::test]
async fn the_assistant_is_off_while_the_subscription_is_inactive() {
    let model = FakeModel::start().await;
    let base = model.base.clone();
    let app = spawn_app_with(move |c| {
        c.assistant = Some(merchant_admin::assistant::provider::ModelConfig::new(
            &base, "m",
        ));
        c.plans = tiny(10, 10, 10);
    })
    .await;
    let shop = Shop::open(app, 5).await;
    model.answer(vec![call(
        "change_price",
        json!({"variant_id": shop.variants[0], "price_cents": 1}),
    )]);
    let chat = shop.path("assistant/chat");
    let events = shop
        .app
        .stream(&chat, &shop.token, Some(json!({"message": "cheaper"})))
        .await
        .expect("a stream")
        .rest()
        .await;
    let proposal = crate::support::model::event(&events, "proposal")["proposal_id"]
        .as_str()
        .unwrap()
        .to_owned();

    set_status(&shop.app, &shop.store, "suspended").await;
    let r = shop
        .app
        .stream(&chat, &shop.token, Some(json!({"message": "hello?"})))
        .await
        .err()
        .expect("refused");
    r.expect_error(402, "subscription_inactive");
    assert_eq!(r.body["details"], json!({"status": "suspended"}));
    for path in [
        shop.path(&format!(
            "assistant/proposals/{proposal}/approve?confirmed=true"
        )),
        shop.path(&format!("assistant/proposals/{proposal}/decline")),
        format!("/v1/assistant/proposals/{proposal}/approve?confirmed=true"),
        format!("/v1/assistant/proposals/{proposal}/decline"),
    ] {
        shop.app
            .stream(&path, &shop.token, None)
            .await
            .err()
            .expect("refused")
            .expect_error(402, "subscription_inactive");
    }
    let usage = shop.read("assistant/usage").await;
    assert_eq!(
        (usage["used"].as_i64(), usage["cap"].as_i64()),
        (Some(1), Some(10))
    );
    assert_eq!(model.requests().len(), 1, "the model was asked once");

    set_status(&shop.app, &shop.store, "past_due").await;
    model.answer(vec![text("Done.")]);
    shop.app
        .stream(
            &shop.path(&format!(
                "assistant/proposals/{proposal}/approve?confirmed=true"
            )),
            &shop.token,
            None,
        )
        .await
        .expect("a stream")
        .rest()
        .await;
    let p = shop.read("products?limit=1").await;
    assert_eq!(p["data"][0]["variants"][0]["price_cents"], 1);
}

/// The assistant's monthly cap is the plan's; `--assistant-monthly-cap` only lowers it.
#[tokio::test]
async fn the_assistant_cap_is_the_plans_under_the_operators_ceiling() {
    for (ceiling, cap) in [(None, 7), (Some(3), 3), (Some(50), 7)] {
        let app = spawn_app_with(move |c| {
            c.plans = tiny(10, 10, 7);
            c.assistant_monthly_cap = ceiling;
        })
        .await;
        let shop = Shop::open(app, 1).await;
        let usage = shop.read("assistant/usage").await;
        assert_eq!(usage["cap"], cap, "ceiling {ceiling:?}");
    }
}
