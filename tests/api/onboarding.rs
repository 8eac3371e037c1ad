//! The onboarding checklist and the store settings it reads (issue 17; spec 4.4).

use chrono::Duration;
use serde_json::{Value, json};

use crate::support::{Reply, TestApp, patch, post, spawn_app};

const KEYS: [&str; 8] = [
    "products",
    "payments",
    "freight",
    "brand",
    "messaging_app",
    "team",
    "custom_domain",
    "first_order",
];

/// A signed-in owner and their store's path.
async fn shop(app: &TestApp, email: &str) -> (String, String) {
    let (owner, _) = app.member(email).await;
    let store_id = app.open_store(&owner, email).await;
    (owner, format!("/v1/stores/{store_id}"))
}

async fn checklist(app: &TestApp, token: &str, p: &str) -> Value {
    let r = app.get_as(&format!("{p}/onboarding"), token).await;
    r.expect(200);
    r.body
}

/// The keys of the steps that are done, in checklist order.
fn done(list: &Value) -> Vec<&str> {
    list["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["done"] == true)
        .map(|s| s["key"].as_str().unwrap())
        .collect()
}

/// The `done_at` of a step (Null when the key is absent).
fn done_at<'a>(list: &'a Value, key: &str) -> &'a Value {
    list["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .map_or(&Value::Null, |s| &s["done_at"])
}

async fn patch_store(app: &TestApp, token: &str, p: &str, body: Value) -> Reply {
    app.call(patch(), p, token, Some(body)).await
}

fn now(app: &TestApp) -> String {
    merchant_admin::time::format(app.clock_now())
}

#[tokio::test]
async fn every_step_flips_to_done_as_its_data_appears() {
    let app = spawn_app().await;
    let (owner, p) = shop(&app, "ana@example.com").await;
    let tick = || app.clock.advance(Duration::minutes(5));

    // A new store: nothing done, every step in order with its path and no done_at.
    let list = checklist(&app, &owner, &p).await;
    assert_eq!(list["total"], 8);
    assert_eq!(list["completed"], 0);
    let steps = list["steps"].as_array().unwrap();
    let keys: Vec<&str> = steps.iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys, KEYS);
    for s in steps {
        assert_eq!(s["done"], false, "{s}");
        assert!(s.get("done_at").is_none(), "omitted while not done: {s}");
        assert!(s["title"].as_str().unwrap().ends_with('.'), "{s}");
    }
    let paths: Vec<&str> = steps
        .iter()
        .map(|s| s["action_path"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = [
        "/products",
        "",
        "",
        "/brand-system",
        "/channels",
        "/invites",
        "",
        "/orders",
    ]
    .iter()
    .map(|tail| format!("{p}{tail}"))
    .collect();
    assert_eq!(paths, expected);

    // products: a draft with stock and an active product without stock do not count.
    let make = |body: Value| {
        let (app, owner, path) = (&app, owner.clone(), format!("{p}/products"));
        async move {
            let r = app.call(post(), &path, &owner, Some(body)).await;
            r.expect(201);
            r.body
        }
    };
    make(json!({"title": "Draft", "status": "draft",
                "variants": [{"sku": "D", "price_cents": 100, "on_hand": 5}]}))
    .await;
    make(json!({"title": "Empty", "variants": [{"sku": "E", "price_cents": 100}]})).await;
    assert!(done(&checklist(&app, &owner, &p).await).is_empty());
    tick();
    let stocked = make(json!({"title": "Stocked",
                              "variants": [{"sku": "S", "price_cents": 5000, "on_hand": 3}]}))
    .await;
    let list = checklist(&app, &owner, &p).await;
    assert_eq!(done(&list), ["products"]);
    assert_eq!(done_at(&list, "products"), &stocked["created_at"]);

    // payments, freight and custom domain: when each setting was set.
    tick();
    let at = now(&app);
    patch_store(&app, &owner, &p, json!({"payment_methods": ["pix"]}))
        .await
        .expect(200);
    tick();
    // Changing a set value keeps the moment it was first set.
    patch_store(
        &app,
        &owner,
        &p,
        json!({"payment_methods": ["pix", "boleto"]}),
    )
    .await
    .expect(200);
    let list = checklist(&app, &owner, &p).await;
    assert_eq!(done(&list), ["products", "payments"]);
    assert_eq!(done_at(&list, "payments"), &json!(at));

    tick();
    let at = now(&app);
    patch_store(
        &app,
        &owner,
        &p,
        json!({"shipping_zones": [{"name": "Sudeste", "regions": ["SP", "RJ"],
                                   "price_cents": 1500}]}),
    )
    .await
    .expect(200);
    let list = checklist(&app, &owner, &p).await;
    assert_eq!(done(&list), ["products", "payments", "freight"]);
    assert_eq!(done_at(&list, "freight"), &json!(at));

    // messaging_app: a chat channel does not count, a messaging-app channel does, and a
    // disabled one does not.
    tick();
    app.call(
        post(),
        &format!("{p}/channels"),
        &owner,
        Some(json!({"kind": "storefront_chat", "name": "Chat"})),
    )
    .await
    .expect(201);
    assert!(!done(&checklist(&app, &owner, &p).await).contains(&"messaging_app"));
    let channel = app
        .call(
            post(),
            &format!("{p}/channels"),
            &owner,
            Some(json!({"kind": "msgapp", "name": "Messaging app",
                        "settings": {"phone_number_id": "123", "app_secret": "s3cret-app",
                                     "verify_token": "v3rify"}})),
        )
        .await;
    channel.expect(201);
    let list = checklist(&app, &owner, &p).await;
    assert!(done(&list).contains(&"messaging_app"));
    assert_eq!(done_at(&list, "messaging_app"), &channel.body["created_at"]);
    let channel_path = format!("{p}/channels/{}", channel.body["id"].as_str().unwrap());
    app.call(
        patch(),
        &channel_path,
        &owner,
        Some(json!({"enabled": false})),
    )
    .await
    .expect(200);
    assert!(!done(&checklist(&app, &owner, &p).await).contains(&"messaging_app"));
    app.call(
        patch(),
        &channel_path,
        &owner,
        Some(json!({"enabled": true})),
    )
    .await
    .expect(200);

    // team: a pending invite counts until it expires; a second member counts for good.
    tick();
    let at = now(&app);
    app.call(
        post(),
        &format!("{p}/invites"),
        &owner,
        Some(json!({"email": "bia@example.com", "role": "staff"})),
    )
    .await
    .expect(201);
    let list = checklist(&app, &owner, &p).await;
    assert!(done(&list).contains(&"team"));
    assert_eq!(done_at(&list, "team"), &json!(at));
    app.clock.advance(Duration::days(8));
    // Sessions do not last that long: sign in again.
    let login = app.login_as("ana@example.com", "again").await;
    login.expect(200);
    let owner = login.body["token"].as_str().unwrap().to_owned();
    assert!(!done(&checklist(&app, &owner, &p).await).contains(&"team"));
    let at = now(&app);
    let (_, bia) = app.member("bia@example.com").await;
    let store_id = p.rsplit('/').next().unwrap();
    app.add_to_store(store_id, &bia, "staff").await;
    let list = checklist(&app, &owner, &p).await;
    assert!(done(&list).contains(&"team"));
    assert_eq!(done_at(&list, "team"), &json!(at));

    tick();
    let at = now(&app);
    patch_store(
        &app,
        &owner,
        &p,
        json!({"custom_domain": "loja.example.com.br"}),
    )
    .await
    .expect(200);
    let list = checklist(&app, &owner, &p).await;
    assert!(done(&list).contains(&"custom_domain"));
    assert_eq!(done_at(&list, "custom_domain"), &json!(at));

    // first_order: an order counts once it is paid.
    tick();
    let customer = app
        .call(
            post(),
            &format!("{p}/customers"),
            &owner,
            Some(json!({"name": "Cliente"})),
        )
        .await;
    customer.expect(201);
    let order = app
        .call(
            post(),
            &format!("{p}/orders"),
            &owner,
            Some(json!({"customer_id": customer.body["id"],
                        "items": [{"variant_id": stocked["variants"][0]["id"], "quantity": 1}]})),
        )
        .await;
    order.expect(201);
    assert!(!done(&checklist(&app, &owner, &p).await).contains(&"first_order"));
    tick();
    let order_path = format!("{p}/orders/{}", order.body["id"].as_str().unwrap());
    let paid = app
        .call(
            patch(),
            &order_path,
            &owner,
            Some(json!({"status": "paid"})),
        )
        .await;
    paid.expect(200);
    let list = checklist(&app, &owner, &p).await;
    assert_eq!(
        done(&list),
        [
            "products",
            "payments",
            "freight",
            "messaging_app",
            "team",
            "custom_domain",
            "first_order"
        ]
    );
    assert_eq!(
        done_at(&list, "first_order"),
        &paid.body["payments"][0]["created_at"]
    );
    // The default brand system a store starts with is not the merchant's: undone.
    assert_eq!(list["completed"], 7);
    assert!(done_at(&list, "brand").is_null());

    // Settings cleared: their steps are undone again, and done_at goes with them.
    patch_store(
        &app,
        &owner,
        &p,
        json!({"payment_methods": [], "shipping_zones": [], "custom_domain": null}),
    )
    .await
    .expect(200);
    let list = checklist(&app, &owner, &p).await;
    assert_eq!(
        done(&list),
        ["products", "messaging_app", "team", "first_order"]
    );
    assert_eq!(list["completed"], 4);
    tick();
    let at = now(&app);
    patch_store(
        &app,
        &owner,
        &p,
        json!({"payment_methods": ["cash_on_delivery"]}),
    )
    .await
    .expect(200);
    let list = checklist(&app, &owner, &p).await;
    assert_eq!(done_at(&list, "payments"), &json!(at), "a fresh done_at");

    // Any member reads it, as they read the store, and so does the store's own token.
    let (viewer, viewer_id) = app.member("vi@example.com").await;
    app.add_to_store(store_id, &viewer_id, "viewer").await;
    assert_eq!(checklist(&app, &viewer, &p).await["completed"], 5);
    let token = app
        .store_token(&owner, store_id, json!(["orders.read"]))
        .await;
    assert_eq!(checklist(&app, &token, &p).await["completed"], 5);
}

#[tokio::test]
async fn the_settings_round_trip() {
    let app = spawn_app().await;
    let (owner, p) = shop(&app, "ana@example.com").await;

    // Defaults: empty arrays and a null domain, present on every read.
    let s = app.get_as(&p, &owner).await;
    s.expect(200);
    assert_eq!(s.body["payment_methods"], json!([]));
    assert_eq!(s.body["shipping_zones"], json!([]));
    assert!(s.body.get("custom_domain").is_some_and(Value::is_null));

    let r = patch_store(
        &app,
        &owner,
        &p,
        json!({
            "name": "Loja Nova",
            "payment_methods": ["pix", "credit_card", "pix", "boleto", "bank_transfer",
                                "cash_on_delivery", "boleto"],
            "shipping_zones": [
                {"name": " Sudeste ", "regions": ["sp", "RJ", "SP", "mg", "ES"],
                 "price_cents": 1500, "free_over_cents": 20000},
                {"name": "Sul", "regions": ["RS", "SC", "PR"], "price_cents": 0}
            ],
            "custom_domain": "loja.example.com.br"
        }),
    )
    .await;
    r.expect(200);
    let expected_methods = json!([
        "pix",
        "credit_card",
        "boleto",
        "bank_transfer",
        "cash_on_delivery"
    ]);
    let expected_zones = json!([
        {"name": "Sudeste", "regions": ["SP", "RJ", "MG", "ES"], "price_cents": 1500,
         "free_over_cents": 20000},
        {"name": "Sul", "regions": ["RS", "SC", "PR"], "price_cents": 0,
         "free_over_cents": null}
    ]);
    for body in [
        &r.body,
        &app.get_as(&p, &owner).await.body,
        &app.get_as("/v1/stores", &owner).await.body["data"][0],
    ] {
        assert_eq!(body["name"], "Loja Nova");
        assert_eq!(body["payment_methods"], expected_methods);
        assert_eq!(body["shipping_zones"], expected_zones);
        assert_eq!(body["custom_domain"], "loja.example.com.br");
    }
    // One audit entry per change, as a rename has.
    let audit = app.get_as(&format!("{p}/audit-log"), &owner).await;
    assert_eq!(audit.body["data"][0]["action"], "store.updated");

    // Fields left out are kept; one setting changes alone.
    let r = patch_store(&app, &owner, &p, json!({"payment_methods": ["boleto"]})).await;
    r.expect(200);
    assert_eq!(r.body["payment_methods"], json!(["boleto"]));
    assert_eq!(r.body["shipping_zones"], expected_zones);
    assert_eq!(r.body["custom_domain"], "loja.example.com.br");
    assert_eq!(r.body["name"], "Loja Nova");

    // null removes the domain; [] clears an array.
    let r = patch_store(
        &app,
        &owner,
        &p,
        json!({"custom_domain": null, "shipping_zones": []}),
    )
    .await;
    r.expect(200);
    assert!(r.body["custom_domain"].is_null());
    assert_eq!(r.body["shipping_zones"], json!([]));
    assert_eq!(r.body["payment_methods"], json!(["boleto"]));

    // A domain belongs to one store: another store asking for it is 409, and gets it once freed.
    patch_store(
        &app,
        &owner,
        &p,
        json!({"custom_domain": "loja.example.com.br"}),
    )
    .await
    .expect(200);
    let (other, q) = shop(&app, "bia@example.com").await;
    patch_store(
        &app,
        &other,
        &q,
        json!({"custom_domain": "loja.example.com.br"}),
    )
    .await
    .expect_error(409, "conflict");
    // Setting its own domain again is not a conflict.
    patch_store(
        &app,
        &owner,
        &p,
        json!({"custom_domain": "loja.example.com.br"}),
    )
    .await
    .expect(200);
    patch_store(&app, &owner, &p, json!({"custom_domain": null}))
        .await
        .expect(200);
    patch_store(
        &app,
        &other,
        &q,
        json!({"custom_domain": "loja.example.com.br"}),
    )
    .await
    .expect(200);

    // Only stores.edit changes settings.
    let (staff, staff_id) = app.member("staff@example.com").await;
    app.add_to_store(p.rsplit('/').next().unwrap(), &staff_id, "staff")
        .await;
    patch_store(&app, &staff, &p, json!({"payment_methods": ["pix"]}))
        .await
        .expect_error(403, "missing_permission");
}

#[tokio::test]
async fn each_bad_setting_is_422_naming_the_field_and_nothing_changes() {
    let app = spawn_app().await;
    let (owner, p) = shop(&app, "ana@example.com").await;
    let good = json!({
        "payment_methods": ["pix"],
        "shipping_zones": [{"name": "Sudeste", "regions": ["SP"], "price_cents": 1000}],
        "custom_domain": "loja.example.com"
    });
    patch_store(&app, &owner, &p, good).await.expect(200);
    let before = app.get_as(&p, &owner).await.body;
    let audits = app.total(&owner, &format!("{p}/audit-log")).await;

    let zone = |extra: Value| {
        let mut z = json!({"name": "Sul", "regions": ["RS"], "price_cents": 500});
        for (k, v) in extra.as_object().unwrap() {
            z[k] = v.clone();
        }
        z
    };
    let many: Vec<Value> = (0..51)
        .map(|i| json!({"name": format!("Z{i}"), "regions": ["AC"], "price_cents": 0}))
        .collect();
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"payment_methods": ["pix", "paypal"]}),
            "payment_methods[1]",
        ),
        (json!({"payment_methods": "pix"}), "payment_methods"),
        (json!({"payment_methods": null}), "payment_methods"),
        (json!({"shipping_zones": null}), "shipping_zones"),
        (json!({"shipping_zones": many}), "shipping_zones"),
        (
            json!({"shipping_zones": [zone(json!({"name": ""}))]}),
            "shipping_zones[0].name",
        ),
        (
            json!({"shipping_zones": [zone(json!({"name": "x".repeat(81)}))]}),
            "shipping_zones[0].name",
        ),
        (
            json!({"shipping_zones": [zone(json!({})), zone(json!({"name": "SUL", "regions": ["SC"]}))]}),
            "shipping_zones[1].name",
        ),
        (
            json!({"shipping_zones": [zone(json!({"regions": []}))]}),
            "shipping_zones[0].regions",
        ),
        (
            json!({"shipping_zones": [zone(json!({"regions": ["XX"]}))]}),
            "shipping_zones[0].regions",
        ),
        (
            json!({"shipping_zones": [zone(json!({})), zone(json!({"name": "Outra", "regions": ["rs"]}))]}),
            "shipping_zones[1].regions",
        ),
        (
            json!({"shipping_zones": [zone(json!({"price_cents": -1}))]}),
            "shipping_zones[0].price_cents",
        ),
        (
            json!({"shipping_zones": [zone(json!({"price_cents": 1.5}))]}),
            "shipping_zones[0].price_cents",
        ),
        (
            json!({"shipping_zones": [zone(json!({"free_over_cents": -5}))]}),
            "shipping_zones[0].free_over_cents",
        ),
        (
            json!({"shipping_zones": [zone(json!({"weight": 1}))]}),
            "shipping_zones[0].weight",
        ),
        (
            json!({"shipping_zones": [{"name": "Sul", "regions": ["RS"]}]}),
            "shipping_zones[0].price_cents",
        ),
        (json!({"custom_domain": ""}), "custom_domain"),
        (json!({"custom_domain": "localhost"}), "custom_domain"),
        (
            json!({"custom_domain": "https://loja.example.com"}),
            "custom_domain",
        ),
        (
            json!({"custom_domain": "loja.example.com:8443"}),
            "custom_domain",
        ),
        (
            json!({"custom_domain": "loja.example.com/shop"}),
            "custom_domain",
        ),
        (
            json!({"custom_domain": "Loja.Example.com"}),
            "custom_domain",
        ),
        (json!({"custom_domain": "192.168.0.1"}), "custom_domain"),
        (
            json!({"custom_domain": format!("{}.com", "a".repeat(250))}),
            "custom_domain",
        ),
        (json!({"custom_domain": 42}), "custom_domain"),
        // A good field next to a bad one is not written either.
        (
            json!({"name": "Renamed", "payment_methods": ["boleto"], "custom_domain": "no dots"}),
            "custom_domain",
        ),
    ];
    for (body, field) in cases {
        let r = patch_store(&app, &owner, &p, body.clone()).await;
        r.expect_error(422, "validation_failed");
        let fields = &r.body["details"]["fields"];
        assert!(
            fields[field].is_string(),
            "{body}: expected {field} in {}",
            r.text
        );
    }
    assert_eq!(app.get_as(&p, &owner).await.body, before, "nothing changed");
    assert_eq!(
        app.total(&owner, &format!("{p}/audit-log")).await,
        audits,
        "no audit entry"
    );
}

#[tokio::test]
async fn another_store_is_404() {
    let app = spawn_app().await;
    let (owner, p) = shop(&app, "ana@example.com").await;
    let (stranger, _) = shop(&app, "eve@example.com").await;
    app.get_as(&format!("{p}/onboarding"), &stranger)
        .await
        .expect_error(404, "not_found");
    patch_store(&app, &stranger, &p, json!({"payment_methods": ["pix"]}))
        .await
        .expect_error(404, "not_found");
    let fake = format!("/v1/stores/{}/onboarding", uuid::Uuid::now_v7());
    app.get_as(&fake, &owner)
        .await
        .expect_error(404, "not_found");
    app.get(&format!("{p}/onboarding"))
        .await
        .expect_error(401, "unauthorized");
    // The stranger's attempt changed nothing.
    assert_eq!(
        app.get_as(&p, &owner).await.body["payment_methods"],
        json!([])
    );
}

#[tokio::test]
async fn the_document_describes_the_checklist_and_the_settings_exactly() {
    let app = spawn_app().await;
    let doc = app.get("/v1/openapi/admin.json").await.body;
    let schemas = &doc["components"]["schemas"];
    let required = |name: &str| -> Vec<String> {
        let mut r: Vec<String> = schemas[name]["required"]
            .as_array()
            .unwrap_or(&Vec::new())
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        r.sort();
        r
    };
    // done_at is left out, never null, when a step is not done.
    assert_eq!(
        required("OnboardingStep"),
        ["action_path", "done", "key", "title"]
    );
    assert_eq!(
        schemas["OnboardingStep"]["properties"]["done_at"]["type"],
        "string"
    );
    assert_eq!(
        schemas["OnboardingStepKey"]["enum"],
        json!(KEYS),
        "{}",
        schemas["OnboardingStepKey"]
    );
    assert_eq!(required("OnboardingOut"), ["completed", "steps", "total"]);
    // Every store read shows the settings; the domain is null until set.
    assert_eq!(
        required("StoreOut"),
        [
            "created_at",
            "custom_domain",
            "id",
            "name",
            "payment_methods",
            "shipping_zones",
            "slug",
            "tenant_id"
        ]
    );
    assert_eq!(
        schemas["StoreOut"]["properties"]["custom_domain"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        schemas["PaymentMethod"]["enum"],
        json!([
            "pix",
            "credit_card",
            "boleto",
            "bank_transfer",
            "cash_on_delivery"
        ])
    );
    // A patch requires nothing; the arrays are never null, the domain may be.
    assert!(required("StorePatch").is_empty());
    let props = &schemas["StorePatch"]["properties"];
    assert_eq!(props["payment_methods"]["type"], "array", "{props}");
    assert_eq!(props["shipping_zones"]["type"], "array", "{props}");
    assert_eq!(props["shipping_zones"]["maxItems"], 50, "{props}");
    assert_eq!(props["custom_domain"]["type"], json!(["string", "null"]));
    assert_eq!(
        required("ShippingZoneIn"),
        ["name", "price_cents", "regions"]
    );
    assert_eq!(
        required("ShippingZone"),
        ["free_over_cents", "name", "price_cents", "regions"]
    );
    let op = &doc["paths"]["/stores/{store_id}/onboarding"]["get"];
    assert_eq!(
        op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/OnboardingOut"
    );
}
