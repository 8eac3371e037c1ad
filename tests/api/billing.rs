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

/// A new organization starts a 14-day trial on the plan it named (else the catalog's
/// default); an unknown plan is 422 and creates nothing.
#[tokio::test]
async fn a_new_organization_starts_a_trial_on_its_plan() {
    use crate::support::post;
    let app = spawn_app().await;
    let (token, _) = app.member("owner@example.com").await;
    app.call(
        post(),
        "/v1/tenants",
        &token,
        Some(json!({"name": "Org", "plan_code": "platinum"})),
    )
    .await
    .expect_error(422, "validation_failed");
    assert_eq!(app.count("SELECT COUNT(*) FROM tenants").await, 0);

    let org = app
        .call(
            post(),
            "/v1/tenants",
            &token,
            Some(json!({"name": "Org", "plan_code": "starter"})),
        )
        .await;
    org.expect(201);
    let id = org.body["id"].as_str().unwrap();
    let s = app
        .get_as(&format!("/v1/tenants/{id}/subscription"), &token)
        .await;
    s.expect(200);
    assert_eq!(s.body["tenant_id"], id);
    assert_eq!(s.body["plan_code"], "starter");
    assert_eq!(s.body["status"], "trialing");
    assert_eq!(s.body["billing_cycle"], "monthly");
    assert_eq!(s.body["cancel_at_period_end"], false);
    assert!(s.body["open_invoice"].is_null());
    let trial_end = chrono::DateTime::parse_from_rfc3339(s.body["trial_ends_at"].as_str().unwrap())
        .unwrap()
        .to_utc();
    assert_eq!(trial_end - app.clock_now(), chrono::Duration::days(14));
    assert_eq!(s.body["limits"]["stores"], 1);

    let other = app
        .call(
            post(),
            "/v1/tenants",
            &token,
            Some(json!({"name": "Other"})),
        )
        .await;
    let other_id = other.body["id"].as_str().unwrap();
    let s = app
        .get_as(&format!("/v1/tenants/{other_id}/subscription"), &token)
        .await;
    assert_eq!(s.body["plan_code"], "growth", "the catalog's default");
}

/// The subscription shows what the organization uses; it needs `billing.read` there, a
/// store API token is refused, and an outsider learns nothing.
#[tokio::test]
async fn the_subscription_shows_usage_to_those_who_may_read_billing() {
    use crate::support::Shop;
    let shop = Shop::open(spawn_app().await, 5).await;
    shop.order(1).await;
    let app = &shop.app;
    let tenant: String = {
        let store = shop.store.clone();
        app.state
            .db
            .read(move |c| {
                Ok(
                    c.query_row("SELECT tenant_id FROM stores WHERE id = ?1", [store], |r| {
                        r.get(0)
                    })?,
                )
            })
            .await
            .unwrap()
    };
    let path = format!("/v1/tenants/{tenant}/subscription");
    let s = app.get_as(&path, &shop.token).await;
    s.expect(200);
    assert_eq!(
        s.body["usage"],
        json!({"stores": 1, "members": 1, "products": 1, "orders_this_month": 1,
               "assistant_messages_this_month": 0})
    );
    // A viewer of one of its stores reads billing (a read permission); an outsider does not
    // learn it exists; a store API token is refused whatever its scopes.
    let (viewer, viewer_id) = app.member("viewer@example.com").await;
    app.add_to_store(&shop.store, &viewer_id, "viewer").await;
    app.get_as(&path, &viewer).await.expect(200);
    let (outsider, _) = app.member("outsider@example.com").await;
    app.get_as(&path, &outsider)
        .await
        .expect_error(404, "not_found");
    let token = app
        .store_token(&shop.token, &shop.store, json!(["billing.read"]))
        .await;
    app.get_as(&path, &token)
        .await
        .expect_error(403, "missing_permission");
}

/// `setup` makes its organization through the same path: it has its trial too.
#[tokio::test]
async fn the_organization_setup_makes_is_on_a_trial() {
    let app = spawn_app().await;
    let out = app.seed_owner("owner@example.com", "Seeded").await;
    let login = app.login_as("owner@example.com", "laptop").await;
    let token = login.body["token"].as_str().unwrap();
    let s = app
        .get_as(
            &format!("/v1/tenants/{}/subscription", out.tenant_id),
            token,
        )
        .await;
    s.expect(200);
    assert_eq!(s.body["status"], "trialing");
    assert_eq!(s.body["plan_code"], "growth");
}

/// Stores and members are held to the plan: past its limit, 402 `plan_limit_reached` with
/// what was reached; a suspended subscription, 402 `subscription_inactive`.
#[tokio::test]
async fn stores_and_invites_are_held_to_the_plan() {
    use crate::support::post;
    let app = spawn_app().await;
    let (token, _) = app.member("owner@example.com").await;
    let org = app
        .call(
            post(),
            "/v1/tenants",
            &token,
            Some(json!({"name": "Small", "plan_code": "starter"})),
        )
        .await;
    let tenant = org.body["id"].as_str().unwrap().to_owned();
    let store = |name: &str| json!({"tenant_id": tenant, "name": name});
    let first = app
        .call(post(), "/v1/stores", &token, Some(store("One")))
        .await;
    first.expect(201);
    let r = app
        .call(post(), "/v1/stores", &token, Some(store("Two")))
        .await;
    r.expect_error(402, "plan_limit_reached");
    assert_eq!(
        r.body["details"],
        json!({"limit": "stores", "max": 1, "used": 1, "plan": "starter"})
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM stores").await, 1);

    // Starter: three members a store, pending invites included (the owner is one).
    let invites = format!("/v1/stores/{}/invites", first.body["id"].as_str().unwrap());
    for n in 0..2 {
        app.call(
            post(),
            &invites,
            &token,
            Some(json!({"email": format!("p{n}@example.com"), "role": "staff"})),
        )
        .await
        .expect(201);
    }
    let r = app
        .call(
            post(),
            &invites,
            &token,
            Some(json!({"email": "p3@example.com", "role": "staff"})),
        )
        .await;
    r.expect_error(402, "plan_limit_reached");
    assert_eq!(
        r.body["details"],
        json!({"limit": "members_per_store", "max": 3, "used": 3, "plan": "starter"})
    );

    // A suspended organization adds nothing.
    let t = tenant.clone();
    app.state
        .db
        .write(move |tx| {
            tx.execute(
                "UPDATE subscriptions SET status = 'suspended', plan_code = 'scale' WHERE tenant_id = ?1",
                [t],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let r = app
        .call(post(), "/v1/stores", &token, Some(store("Three")))
        .await;
    r.expect_error(402, "subscription_inactive");
    assert_eq!(r.body["details"]["status"], "suspended");
    app.call(
        post(),
        &invites,
        &token,
        Some(json!({"email": "p4@example.com", "role": "staff"})),
    )
    .await
    .expect_error(402, "subscription_inactive");
}
