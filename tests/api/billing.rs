//! Billing (issue 17; spec 2.12, 4.4): the plan catalog.

use std::sync::Arc;

use merchant_admin::billing::plans::Catalog;
use serde_json::json;

use crate::support::{spawn_app, spawn_app_with};

#[tokio::test]
async fn the_plan_catalog_is_public_and_priced_in_brl_cents() {
    let app = spawn_app().await;
    let r = app.get("/v1/billing/plans").await;
    r.expect(200);
    assert_eq!(r.body["has_more"], false);
    let plans = r.body["data"].as_array().unwrap();
    let codes: Vec<&str> = plans.iter().map(|p| p["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["starter", "growth", "scale"]);
    for p in plans {
        assert_eq!(p["currency"], "BRL");
        assert!(p["monthly_price_cents"].as_i64().unwrap() > 0);
        assert!(p["annual_price_cents"].as_i64().unwrap() > 0);
        for limit in [
            "stores",
            "members_per_store",
            "products",
            "orders_per_month",
            "assistant_messages_per_store_per_month",
        ] {
            assert!(p["limits"][limit].as_i64().unwrap() >= 1, "{limit}");
        }
    }
    // Plans differ in size: each is at least as big as the one before.
    let stores: Vec<i64> = plans
        .iter()
        .map(|p| p["limits"]["stores"].as_i64().unwrap())
        .collect();
    assert!(stores.windows(2).all(|w| w[0] <= w[1]), "{stores:?}");
    // Unversioned too, like every route.
    app.get("/billing/plans").await.expect(200);
}

#[tokio::test]
async fn an_operators_plans_file_replaces_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plans.json");
    std::fs::write(
        &path,
        json!({"default": "pro", "plans": [{"code": "pro", "name": "Pro", "description": "All",
            "monthly_price_cents": 9_900, "annual_price_cents": 99_000,
            "limits": {"stores": 5, "members_per_store": 5, "products": 5,
                       "orders_per_month": 5, "assistant_messages_per_store_per_month": 5}}]})
        .to_string(),
    )
    .unwrap();
    let catalog = Catalog::load(&path).unwrap();
    let app = spawn_app_with(move |c| c.plans = Arc::new(catalog)).await;
    let r = app.get("/v1/billing/plans").await;
    r.expect(200);
    assert_eq!(
        r.body["data"],
        json!([{"code": "pro", "name": "Pro", "description": "All", "currency": "BRL",
                "monthly_price_cents": 9_900, "annual_price_cents": 99_000,
                "limits": {"stores": 5, "members_per_store": 5, "products": 5,
                           "orders_per_month": 5, "assistant_messages_per_store_per_month": 5}}])
    );
}
