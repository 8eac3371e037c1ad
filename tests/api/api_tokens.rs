//! Store API tokens (spec 2.5, 3 token rows, 4.2, 5 rules 1–4; issue 4).

use chrono::Duration;
use serde_json::{Value, json};

use crate::support::{Reply, TestApp, get, patch, post, spawn_app};

/// An owner with an organization and a store: (owner token, store id).
async fn shop(app: &TestApp, email: &str) -> (String, String) {
    let (owner, _) = app.member(email).await;
    let store = app.open_store(&owner, &format!("{email} org")).await;
    (owner, store)
}

async fn issue(app: &TestApp, token: &str, store: &str, scopes: Value) -> Reply {
    app.call(
        post(),
        &format!("/v1/stores/{store}/api-tokens"),
        token,
        Some(json!({"name": "integration", "scopes": scopes})),
    )
    .await
}

fn value(r: &Reply) -> String {
    r.body["value"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_token_is_shown_once_and_stored_as_a_hash() {
    let app = spawn_app().await;
    let (owner, store) = shop(&app, "ana@example.com").await;
    let r = issue(&app, &owner, &store, json!(["orders.read"])).await;
    r.expect(201);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let v = value(&r);
    let body = v.strip_prefix("svc_st_").expect("svc_st_ prefix");
    assert_eq!(body.len(), 43);
    assert!(
        body.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "{v}"
    );
    assert_eq!(r.body["last4"], &v[v.len() - 4..]);
    assert_eq!(r.body["scopes"], json!(["orders.read"]));
    assert!(r.body["last_used_at"].is_null() && r.body["expires_at"].is_null());

    let list = app
        .call(
            get(),
            &format!("/v1/stores/{store}/api-tokens"),
            &owner,
            None,
        )
        .await;
    list.expect(200);
    assert!(list.body["data"][0].get("value").is_none());
    assert!(!list.text.contains(&v));
    let mut raw = std::fs::read(app.data_dir.path().join("merchant-admin.db")).unwrap();
    raw.extend(
        std::fs::read(app.data_dir.path().join("merchant-admin.db-wal")).unwrap_or_default(),
    );
    assert!(
        !raw.windows(v.len()).any(|w| w == v.as_bytes()),
        "the value is not stored"
    );
}

#[tokio::test]
async fn a_token_can_do_its_scopes_within_its_users_permissions() {
    let app = spawn_app().await;
    let (owner, store) = shop(&app, "ana@example.com").await;
    let path = format!("/v1/stores/{store}");
    let edit = json!({"name": "Loja"});
    let all = app.store_token(&owner, &store, json!(["*"])).await;
    let narrow = app
        .store_token(&owner, &store, json!(["products.read"]))
        .await;
    let editor = app
        .store_token(&owner, &store, json!(["stores.edit"]))
        .await;
    app.call(patch(), &path, &all, Some(edit.clone()))
        .await
        .expect(200);
    app.call(patch(), &path, &editor, Some(edit.clone()))
        .await
        .expect(200);
    let r = app.call(patch(), &path, &narrow, Some(edit.clone())).await;
    r.expect_error(403, "missing_permission");
    app.call(get(), &path, &narrow, None).await.expect(200);

    // Demoting the issuer narrows even a "*" token at once.
    let (admin, admin_id) = app.member("admin@example.com").await;
    app.add_to_store(&store, &admin_id, "admin").await;
    let admins = app.store_token(&admin, &store, json!(["*"])).await;
    app.call(patch(), &path, &admins, Some(edit.clone()))
        .await
        .expect(200);
    let (s, u) = (store.clone(), admin_id.clone());
    app.state
        .db
        .write(move |tx| {
            tx.execute(
                "UPDATE store_members SET role = 'viewer' WHERE store_id = ?1 AND user_id = ?2",
                [&s, &u],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.call(patch(), &path, &admins, Some(edit.clone()))
        .await
        .expect_error(403, "missing_permission");

    // Removing the issuer from the store kills their tokens.
    let (s, u) = (store.clone(), admin_id);
    app.state
        .db
        .write(move |tx| {
            tx.execute(
                "DELETE FROM store_members WHERE store_id = ?1 AND user_id = ?2",
                [&s, &u],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.call(get(), &path, &admins, None)
        .await
        .expect_error(401, "unauthorized");
}

#[tokio::test]
async fn a_token_is_held_to_its_store() {
    let app = spawn_app().await;
    let (owner, store) = shop(&app, "ana@example.com").await;
    let t = app.store_token(&owner, &store, json!(["*"])).await;
    let other_org =
        app.call(get(), "/v1/tenants", &owner, None).await.body["data"][0]["id"].clone();
    let second = app
        .call(
            post(),
            "/v1/stores",
            &owner,
            Some(json!({"tenant_id": other_org, "name": "Norte"})),
        )
        .await
        .body;
    let second_path = format!("/v1/stores/{}", second["id"].as_str().unwrap());
    app.call(get(), &second_path, &t, None)
        .await
        .expect_error(403, "missing_permission");
    app.call(
        post(),
        "/v1/tenants",
        &t,
        Some(json!({"name": "Token Org"})),
    )
    .await
    .expect_error(403, "forbidden");
    app.call(
        post(),
        "/v1/stores",
        &t,
        Some(json!({"tenant_id": other_org, "name": "Sul"})),
    )
    .await
    .expect_error(403, "missing_permission");
    app.call(get(), "/v1/me", &t, None)
        .await
        .expect_error(403, "missing_permission");
    app.call(get(), "/v1/tenants", &t, None)
        .await
        .expect_error(403, "missing_permission");
}

#[tokio::test]
async fn scopes_are_checked_against_the_issuer() {
    let app = spawn_app().await;
    let (owner, store) = shop(&app, "ana@example.com").await;
    let (admin, admin_id) = app.member("admin@example.com").await;
    app.add_to_store(&store, &admin_id, "admin").await;
    let cases = [
        json!(["billing.write"]),
        json!(["orders.reed"]),
        json!([]),
        json!(["*", "orders.read"]),
    ];
    for scopes in cases {
        let r = issue(&app, &admin, &store, scopes.clone()).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"]["scopes"].is_string(),
            "{scopes}"
        );
    }
    issue(&app, &admin, &store, json!(["orders.read", "stores.edit"]))
        .await
        .expect(201);
    let past = json!({"name": "old", "scopes": ["*"], "expires_at": "2020-01-01T00:00:00Z"});
    app.call(
        post(),
        &format!("/v1/stores/{store}/api-tokens"),
        &owner,
        Some(past),
    )
    .await
    .expect_error(422, "validation_failed");
    let (viewer, viewer_id) = app.member("viewer@example.com").await;
    app.add_to_store(&store, &viewer_id, "viewer").await;
    issue(&app, &viewer, &store, json!(["orders.read"]))
        .await
        .expect_error(403, "missing_permission");
}

#[tokio::test]
async fn rotation_revocation_and_expiry() {
    let app = spawn_app().await;
    let (owner, store) = shop(&app, "ana@example.com").await;
    let path = format!("/v1/stores/{store}");
    let created = issue(&app, &owner, &store, json!(["*"])).await;
    let (id, old) = (
        created.body["id"].as_str().unwrap().to_string(),
        value(&created),
    );

    // Each value is used before it dies, so the server has it resolved and remembered.
    app.call(get(), &path, &old, None).await.expect(200);
    let (admin, admin_id) = app.member("admin@example.com").await;
    app.add_to_store(&store, &admin_id, "admin").await;
    let rotate = format!("/v1/stores/{store}/api-tokens/{id}/rotate");
    app.call(post(), &rotate, &admin, None)
        .await
        .expect_error(403, "not_token_owner");
    let rotated = app.call(post(), &rotate, &owner, None).await;
    rotated.expect(200);
    let new = value(&rotated);
    assert_eq!(rotated.body["id"], id.as_str());
    assert!(new.starts_with("svc_st_") && new != old);
    app.call(get(), &path, &old, None)
        .await
        .expect_error(401, "unauthorized");
    app.call(get(), &path, &new, None).await.expect(200);

    let del = format!("/v1/stores/{store}/api-tokens/{id}");
    app.call(reqwest::Method::DELETE, &del, &owner, None)
        .await
        .expect(204);
    app.call(get(), &path, &new, None)
        .await
        .expect_error(401, "unauthorized");
    app.call(reqwest::Method::DELETE, &del, &owner, None)
        .await
        .expect_error(404, "not_found");

    let expiring = json!({"name": "temp", "scopes": ["*"], "expires_at": merchant_admin::time::format(app.clock_now() + Duration::hours(1))});
    let t = app
        .call(
            post(),
            &format!("/v1/stores/{store}/api-tokens"),
            &owner,
            Some(expiring),
        )
        .await;
    let t = value(&t);
    app.call(get(), &path, &t, None).await.expect(200);
    app.clock.advance(Duration::hours(2));
    app.call(get(), &path, &t, None)
        .await
        .expect_error(401, "unauthorized");
}

#[tokio::test]
async fn another_stores_token_ids_are_not_found() {
    let app = spawn_app().await;
    let (ana, ana_store) = shop(&app, "ana@example.com").await;
    let (bia, bia_store) = shop(&app, "bia@example.com").await;
    let created = issue(&app, &bia, &bia_store, json!(["*"])).await;
    let id = created.body["id"].as_str().unwrap();
    // Through Ana's own store, Bia's token id names nothing.
    app.call(
        reqwest::Method::DELETE,
        &format!("/v1/stores/{ana_store}/api-tokens/{id}"),
        &ana,
        None,
    )
    .await
    .expect_error(404, "not_found");
    app.call(
        post(),
        &format!("/v1/stores/{ana_store}/api-tokens/{id}/rotate"),
        &ana,
        None,
    )
    .await
    .expect_error(404, "not_found");
    // And Bia's store itself is invisible to Ana.
    app.call(
        get(),
        &format!("/v1/stores/{bia_store}/api-tokens"),
        &ana,
        None,
    )
    .await
    .expect_error(404, "not_found");
}

#[tokio::test]
async fn legacy_bod_tokens_work_until_rotated_and_use_is_recorded() {
    let app = spawn_app().await;
    let (owner, store) = shop(&app, "ana@example.com").await;
    let created = issue(&app, &owner, &store, json!(["*"])).await;
    let id = created.body["id"].as_str().unwrap().to_string();
    // Imported data: the same token under its older value.
    let legacy = "bod_9f8e7d6c5b4a39281706f5e4d3c2b1a0";
    let (i, h) = (id.clone(), merchant_admin::secrets::hash(legacy));
    app.state
        .db
        .write(move |tx| {
            tx.execute(
                "UPDATE api_tokens SET token_hash = ?2 WHERE id = ?1",
                rusqlite::params![i, h],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let path = format!("/v1/stores/{store}");
    app.call(get(), &path, legacy, None).await.expect(200);
    let list = app
        .call(
            get(),
            &format!("/v1/stores/{store}/api-tokens"),
            &owner,
            None,
        )
        .await;
    let used = list.body["data"][0]["last_used_at"]
        .as_str()
        .unwrap()
        .to_string();
    app.clock.advance(Duration::seconds(30));
    app.call(get(), &path, legacy, None).await.expect(200);
    let list = app
        .call(
            get(),
            &format!("/v1/stores/{store}/api-tokens"),
            &owner,
            None,
        )
        .await;
    assert_eq!(
        list.body["data"][0]["last_used_at"],
        used.as_str(),
        "at most once a minute"
    );

    let rotated = app
        .call(
            post(),
            &format!("/v1/stores/{store}/api-tokens/{id}/rotate"),
            &owner,
            None,
        )
        .await;
    assert!(value(&rotated).starts_with("svc_st_"));
    app.call(get(), &path, legacy, None)
        .await
        .expect_error(401, "unauthorized");
}

#[tokio::test]
async fn a_narrow_token_cannot_mint_or_take_over_a_broader_one() {
    let app = spawn_app().await;
    let (owner, store) = shop(&app, "ana@example.com").await;
    let broad = issue(&app, &owner, &store, json!(["*"])).await;
    let broad_id = broad.body["id"].as_str().unwrap().to_string();
    let narrow = app
        .store_token(
            &owner,
            &store,
            json!(["api_tokens.write", "api_tokens.read"]),
        )
        .await;

    let r = issue(&app, &narrow, &store, json!(["*"])).await;
    r.expect_error(422, "validation_failed");
    issue(&app, &narrow, &store, json!(["orders.read"]))
        .await
        .expect_error(422, "validation_failed");
    issue(&app, &narrow, &store, json!(["api_tokens.read"]))
        .await
        .expect(201);

    let rotate = format!("/v1/stores/{store}/api-tokens/{broad_id}/rotate");
    app.call(post(), &rotate, &narrow, None)
        .await
        .expect_error(403, "missing_permission");
    // The owner's session, which holds everything the token can do, may.
    app.call(post(), &rotate, &owner, None).await.expect(200);
}

/// Issue 13 item 5, found in review: a token acting on tokens never reaches past itself. A
/// narrow token cannot revoke a broader one, and a token made by a token ends no later than
/// its maker, so a leaked short-lived token cannot leave a lasting heir.
#[tokio::test]
async fn a_token_cannot_revoke_a_broader_one_or_outlive_itself() {
    let app = spawn_app().await;
    let (owner, store) = shop(&app, "ana@example.com").await;
    let broad = issue(&app, &owner, &store, json!(["*"])).await;
    let broad_id = broad.body["id"].as_str().unwrap().to_string();
    let ends = merchant_admin::time::format(app.clock_now() + Duration::hours(1));
    let maker = app
        .call(
            post(),
            &format!("/v1/stores/{store}/api-tokens"),
            &owner,
            Some(
                json!({"name": "short", "scopes": ["api_tokens.write", "api_tokens.read"],
                        "expires_at": ends}),
            ),
        )
        .await;
    maker.expect(201);
    let maker = value(&maker);

    app.call(
        reqwest::Method::DELETE,
        &format!("/v1/stores/{store}/api-tokens/{broad_id}"),
        &maker,
        None,
    )
    .await
    .expect_error(403, "missing_permission");
    let list = format!("/v1/stores/{store}/api-tokens");
    app.call(get(), &list, &value(&broad), None)
        .await
        .expect(200);

    let heir = issue(&app, &maker, &store, json!(["api_tokens.read"])).await;
    heir.expect(201);
    assert_eq!(heir.body["expires_at"], ends.as_str());
    let later = merchant_admin::time::format(app.clock_now() + Duration::days(30));
    app.call(
        post(),
        &format!("/v1/stores/{store}/api-tokens"),
        &maker,
        Some(json!({"name": "heir", "scopes": ["api_tokens.read"], "expires_at": later})),
    )
    .await
    .expect_error(422, "validation_failed");
    // The owner's session may revoke anything.
    app.call(
        reqwest::Method::DELETE,
        &format!("/v1/stores/{store}/api-tokens/{broad_id}"),
        &owner,
        None,
    )
    .await
    .expect(204);
}
