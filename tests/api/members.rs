//! Store members and the audit trail (issue 4).

use serde_json::json;

use crate::helpers::{TestApp, spawn_app};
use crate::tenants::{get, patch, post};

/// An owner's store with an admin and a staff member: (owner, admin, staff tokens, ids).
struct Team {
    store: String,
    owner: String,
    owner_id: String,
    admin: String,
    admin_id: String,
    staff: String,
    staff_id: String,
}

async fn team(app: &TestApp) -> Team {
    let (owner, owner_id) = app.member("owner@example.com").await;
    let org = app
        .call(post(), "/v1/tenants", &owner, Some(json!({"name": "Org"})))
        .await
        .body;
    let store = app
        .call(
            post(),
            "/v1/stores",
            &owner,
            Some(json!({"tenant_id": org["id"], "name": "Loja"})),
        )
        .await
        .body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (admin, admin_id) = app.member("admin@example.com").await;
    app.add_to_store(&store, &admin_id, "admin").await;
    let (staff, staff_id) = app.member("staff@example.com").await;
    app.add_to_store(&store, &staff_id, "staff").await;
    Team {
        store,
        owner,
        owner_id,
        admin,
        admin_id,
        staff,
        staff_id,
    }
}

#[tokio::test]
async fn listing_and_changing_roles() {
    let app = spawn_app().await;
    let t = team(&app).await;
    let members = format!("/v1/stores/{}/members", t.store);
    let r = app.call(get(), &members, &t.staff, None).await;
    r.expect(200);
    let roles: Vec<(String, String)> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["email"].as_str().unwrap().to_string(),
                m["role"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(roles.len(), 3);
    assert!(roles.contains(&("owner@example.com".into(), "owner".into())));

    let staff_path = format!("{members}/{}", t.staff_id);
    app.call(
        patch(),
        &staff_path,
        &t.staff,
        Some(json!({"role": "admin"})),
    )
    .await
    .expect_error(403, "missing_permission");
    app.call(
        patch(),
        &staff_path,
        &t.admin,
        Some(json!({"role": "viewer"})),
    )
    .await
    .expect(204);
    app.call(
        patch(),
        &staff_path,
        &t.admin,
        Some(json!({"role": "boss"})),
    )
    .await
    .expect_error(422, "validation_failed");
    // Only owners make owners.
    app.call(
        patch(),
        &staff_path,
        &t.admin,
        Some(json!({"role": "owner"})),
    )
    .await
    .expect_error(403, "missing_permission");
    let admin_path = format!("{members}/{}", t.admin_id);
    app.call(
        patch(),
        &admin_path,
        &t.owner,
        Some(json!({"role": "owner"})),
    )
    .await
    .expect(204);
    // With two owners one may step down; the last one may not.
    let owner_path = format!("{members}/{}", t.owner_id);
    app.call(
        patch(),
        &admin_path,
        &t.admin,
        Some(json!({"role": "admin"})),
    )
    .await
    .expect(204);
    app.call(
        patch(),
        &owner_path,
        &t.owner,
        Some(json!({"role": "admin"})),
    )
    .await
    .expect_error(409, "conflict");
    let nobody = format!("{members}/{}", uuid::Uuid::now_v7());
    app.call(patch(), &nobody, &t.owner, Some(json!({"role": "staff"})))
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn removing_a_member_ends_their_tokens_and_never_the_last_owner() {
    let app = spawn_app().await;
    let t = team(&app).await;
    let store_path = format!("/v1/stores/{}", t.store);
    let token = app
        .call(
            post(),
            &format!("{store_path}/api-tokens"),
            &t.admin,
            Some(json!({"name": "a", "scopes": ["*"]})),
        )
        .await
        .body["value"]
        .as_str()
        .unwrap()
        .to_string();
    app.call(get(), &store_path, &token, None).await.expect(200);

    let members = format!("{store_path}/members");
    app.call(
        reqwest::Method::DELETE,
        &format!("{members}/{}", t.admin_id),
        &t.staff,
        None,
    )
    .await
    .expect_error(403, "missing_permission");
    app.call(
        reqwest::Method::DELETE,
        &format!("{members}/{}", t.admin_id),
        &t.owner,
        None,
    )
    .await
    .expect(204);
    app.call(get(), &store_path, &token, None)
        .await
        .expect_error(401, "unauthorized");
    app.call(get(), &store_path, &t.admin, None)
        .await
        .expect_error(404, "not_found");
    app.call(
        reqwest::Method::DELETE,
        &format!("{members}/{}", t.owner_id),
        &t.owner,
        None,
    )
    .await
    .expect_error(409, "conflict");
}

#[tokio::test]
async fn every_store_write_is_in_the_audit_trail() {
    let app = spawn_app().await;
    let t = team(&app).await;
    let store_path = format!("/v1/stores/{}", t.store);
    let renamed = app
        .call(
            patch(),
            &store_path,
            &t.owner,
            Some(json!({"name": "Loja Nova"})),
        )
        .await;
    renamed.expect(200);
    let token = app
        .call(
            post(),
            &format!("{store_path}/api-tokens"),
            &t.owner,
            Some(json!({"name": "erp sync", "scopes": ["*"]})),
        )
        .await
        .body["value"]
        .as_str()
        .unwrap()
        .to_string();
    // A write made with the token names the token.
    app.call(
        patch(),
        &format!("{store_path}/members/{}", t.staff_id),
        &token,
        Some(json!({"role": "viewer"})),
    )
    .await
    .expect(204);

    let log = app
        .call(
            get(),
            &format!("{store_path}/audit-log?include_total=true"),
            &t.staff,
            None,
        )
        .await;
    log.expect(200);
    assert_eq!(log.body["total"], 3);
    let entries = log.body["data"].as_array().unwrap();
    let actions: Vec<&str> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        vec!["member.role_changed", "api_token.created", "store.updated"],
        "newest first"
    );
    assert_eq!(entries[0]["token_name"], "erp sync");
    assert_eq!(entries[0]["actor_user_id"], t.owner_id.as_str());
    assert_eq!(entries[0]["resource_id"], t.staff_id.as_str());
    assert!(entries[2]["token_name"].is_null());
    assert_eq!(
        entries[2]["trace_id"],
        renamed.header("x-trace-id").unwrap()
    );
    assert_eq!(entries[2]["resource_type"], "store");
}
