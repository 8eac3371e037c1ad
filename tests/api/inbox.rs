//! The shared inbox (issue 15): channels, conversations, messages.

use serde_json::json;

use crate::support::{TestApp, patch, post, spawn_app};

/// An owner with a store, and the store's path.
async fn store(app: &TestApp) -> (String, String) {
    let (owner, _) = app.member("owner@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    (owner, format!("/v1/stores/{store}"))
}

#[tokio::test]
async fn channels_are_created_listed_changed_and_deleted() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let channels = format!("{p}/channels");

    let chat = app
        .call(
            post(),
            &channels,
            &owner,
            Some(json!({"kind": "storefront_chat", "name": "Site chat",
                        "allowed_origins": ["https://Shop.example/", "http://localhost:3000"]})),
        )
        .await;
    chat.expect(201);
    assert_eq!(chat.body["kind"], "storefront_chat");
    assert_eq!(chat.body["enabled"], true);
    assert!(chat.body["key"].as_str().unwrap().starts_with("chk_"));
    assert_eq!(
        chat.body["allowed_origins"],
        json!(["https://shop.example", "http://localhost:3000"])
    );

    // A messaging-app channel needs its three settings; the secrets are never shown.
    app.call(
        post(),
        &channels,
        &owner,
        Some(json!({"kind": "msgapp", "name": "WhatsApp",
                    "settings": {"phone_number_id": "123"}})),
    )
    .await
    .expect_error(422, "validation_failed");
    let msgapp = app
        .call(
            post(),
            &channels,
            &owner,
            Some(json!({"kind": "msgapp", "name": "Messaging app",
                        "settings": {"phone_number_id": "123", "app_secret": "s3cret-app",
                                     "verify_token": "v3rify"}})),
        )
        .await;
    msgapp.expect(201);
    assert_eq!(msgapp.body["key"], json!(null));
    assert_eq!(msgapp.body["settings"], json!({"phone_number_id": "123"}));
    for bad in [
        json!({"kind": "email", "name": "Mail", "settings": {"address": "not-mail", "inbound_secret": "x"}}),
        json!({"kind": "msgapp", "name": "M", "allowed_origins": ["https://a.example"],
               "settings": {"phone_number_id": "1", "app_secret": "a", "verify_token": "v"}}),
        json!({"kind": "storefront_chat", "name": "C", "allowed_origins": ["https://a.example/path"]}),
        json!({"kind": "storefront_chat", "name": ""}),
        json!({"kind": "sms", "name": "S"}),
    ] {
        app.call(post(), &channels, &owner, Some(bad.clone()))
            .await
            .expect_error(422, "validation_failed");
    }
    // The secrets are sealed at rest: the database never holds them in the clear.
    let raw: Vec<Vec<u8>> = app
        .state
        .db
        .read(|c| {
            let mut s = c.prepare("SELECT secrets FROM channels WHERE secrets IS NOT NULL")?;
            let rows = s.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
        .unwrap();
    assert_eq!(raw.len(), 1);
    assert!(!String::from_utf8_lossy(&raw[0]).contains("s3cret-app"));

    let list = app.get_as(&channels, &owner).await;
    list.expect(200);
    assert_eq!(list.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(
        list.body["data"][0]["id"], msgapp.body["id"],
        "newest first"
    );

    // Changing one secret keeps the others and the shown settings.
    let one = format!("{channels}/{}", msgapp.body["id"].as_str().unwrap());
    let changed = app
        .call(
            patch(),
            &one,
            &owner,
            Some(json!({"name": "Renamed", "enabled": false,
                        "settings": {"verify_token": "other"}})),
        )
        .await;
    changed.expect(200);
    assert_eq!(changed.body["name"], "Renamed");
    assert_eq!(changed.body["enabled"], false);
    assert_eq!(changed.body["settings"], json!({"phone_number_id": "123"}));
    app.call(
        patch(),
        &one,
        &owner,
        Some(json!({"settings": {"address": "a@b.example"}})),
    )
    .await
    .expect_error(422, "validation_failed");

    app.call(reqwest::Method::DELETE, &one, &owner, None)
        .await
        .expect(204);
    app.get_as(&one, &owner)
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn channels_need_store_edit_and_stay_in_their_store() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let store_id = p.rsplit('/').next().unwrap().to_owned();
    let (staff, staff_id) = app.member("staff@example.com").await;
    app.add_to_store(&store_id, &staff_id, "staff").await;
    let channels = format!("{p}/channels");
    let chat = app
        .call(
            post(),
            &channels,
            &owner,
            Some(json!({"kind": "storefront_chat", "name": "Chat"})),
        )
        .await;
    chat.expect(201);
    let one = format!("{channels}/{}", chat.body["id"].as_str().unwrap());
    app.get_as(&one, &staff)
        .await
        .expect_error(403, "missing_permission");
    app.call(
        post(),
        &channels,
        &staff,
        Some(json!({"kind": "storefront_chat", "name": "Mine"})),
    )
    .await
    .expect_error(403, "missing_permission");

    // Another store's owner does not see it, even with its id.
    let (other, _) = app.member("other@example.com").await;
    let other_store = app.open_store(&other, "Other").await;
    let theirs = format!(
        "/v1/stores/{other_store}/channels/{}",
        chat.body["id"].as_str().unwrap()
    );
    app.get_as(&theirs, &other)
        .await
        .expect_error(404, "not_found");
    app.call(patch(), &theirs, &other, Some(json!({"name": "Stolen"})))
        .await
        .expect_error(404, "not_found");
    app.call(reqwest::Method::DELETE, &theirs, &other, None)
        .await
        .expect_error(404, "not_found");
    assert_eq!(app.get_as(&one, &owner).await.body["name"], "Chat");
}
