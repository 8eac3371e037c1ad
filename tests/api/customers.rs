//! Customers (issue 6).

use serde_json::json;

use crate::support::{Receiver, get, patch, post, spawn_app};

#[tokio::test]
async fn customers_are_created_searched_changed_and_deleted_with_their_events() {
    let app = spawn_app().await;
    let (token, _) = app.member("owner@example.com").await;
    let store = app.open_store(&token, "Org").await;
    let rx = Receiver::start().await;
    app.call(
        post(),
        &format!("/v1/stores/{store}/webhooks"),
        &token,
        Some(json!({"url": rx.url, "events": ["customers.created", "customers.updated", "customers.deleted"]})),
    )
    .await
    .expect(201);
    let base = format!("/v1/stores/{store}/customers");

    let ana = app
        .call(
            post(),
            &base,
            &token,
            Some(json!({"name": " Ana Souza ", "email": "Ana@Example.com", "phone": "+55 11 91234-5678",
                        "addresses": [{"line1": "Rua A, 1", "city": "São Paulo", "country": "BR"}]})),
        )
        .await;
    ana.expect(201);
    let a = &ana.body;
    assert_eq!(a["name"], "Ana Souza");
    assert_eq!(a["email"], "ana@example.com");
    assert_eq!(a["addresses"][0]["city"], "São Paulo");
    assert_eq!(
        (
            a["accepts_marketing"].as_bool(),
            a["orders_count"].as_i64(),
            a["total_spent_cents"].as_i64()
        ),
        (Some(false), Some(0), Some(0))
    );
    let created = rx.wait_for(1).await;
    assert_eq!(created[0].json()["event"], "customers.created");
    assert_eq!(created[0].json()["data"], *a);

    // Without e-mail is fine (twice); the same e-mail in any case is 409; bad input is 422.
    app.clock.advance(chrono::Duration::seconds(1));
    for name in ["Bruno", "Carla"] {
        app.call(
            post(),
            &base,
            &token,
            Some(json!({"name": name, "phone": "11 3333-4444"})),
        )
        .await
        .expect(201);
        app.clock.advance(chrono::Duration::seconds(1));
    }
    app.call(
        post(),
        &base,
        &token,
        Some(json!({"name": "Dup", "email": "ANA@example.com"})),
    )
    .await
    .expect_error(409, "conflict");
    for body in [
        json!({"name": ""}),
        json!({"name": "X", "email": "not-an-email"}),
        json!({"name": "X", "phone": "call me"}),
        json!({"name": "X", "orders_count": 5}),
        json!({"name": "X", "addresses": [{"street": "?"}]}),
    ] {
        app.call(post(), &base, &token, Some(body))
            .await
            .expect_error(422, "validation_failed");
    }
    assert_eq!(app.total(&token, &base).await, 3);

    // Newest first; search by name, e-mail or phone.
    let names = |q: &'static str| {
        let (app, token, base) = (&app, token.clone(), base.clone());
        async move {
            let r = app.call(get(), &format!("{base}?{q}"), &token, None).await;
            r.expect(200);
            r.body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(names("").await, ["Carla", "Bruno", "Ana Souza"]);
    assert_eq!(names("search=souza").await, ["Ana Souza"]);
    assert_eq!(names("search=EXAMPLE.COM").await, ["Ana Souza"]);
    assert_eq!(names("search=3333").await, ["Carla", "Bruno"]);
    let paged = app
        .call(
            get(),
            &format!("{base}?limit=2&include_total=true"),
            &token,
            None,
        )
        .await;
    assert_eq!(
        (
            paged.body["total"].as_i64(),
            paged.body["has_more"].as_bool()
        ),
        (Some(3), Some(true))
    );

    // PATCH: a subset; an empty e-mail clears it; a taken one is 409 and changes nothing.
    let id = a["id"].as_str().unwrap();
    let path = format!("{base}/{id}");
    let r = app
        .call(
            patch(),
            &path,
            &token,
            Some(json!({"accepts_marketing": true, "phone": ""})),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["accepts_marketing"], true);
    assert!(r.body["phone"].is_null());
    assert_eq!(r.body["email"], "ana@example.com");
    let bruno = app
        .call(get(), &format!("{base}?search=Bruno"), &token, None)
        .await;
    let bruno_path = format!("{base}/{}", bruno.body["data"][0]["id"].as_str().unwrap());
    app.call(
        patch(),
        &bruno_path,
        &token,
        Some(json!({"name": "Bruno Lima", "email": "ana@example.com"})),
    )
    .await
    .expect_error(409, "conflict");
    let unchanged = app.call(get(), &bruno_path, &token, None).await;
    assert_eq!(unchanged.body["name"], "Bruno");
    let updated = rx.events_in_order(4).await;
    let last = updated
        .iter()
        .map(crate::support::Hit::json)
        .filter(|b| b["event"] == "customers.updated")
        .last()
        .unwrap();
    assert_eq!(last["data"]["accepts_marketing"], true);

    // Delete, then gone; another store never sees it.
    let (other, _) = app.member("other@example.com").await;
    let theirs = app.open_store(&other, "Other").await;
    let foreign = format!("/v1/stores/{theirs}/customers/{id}");
    app.call(get(), &foreign, &other, None)
        .await
        .expect_error(404, "not_found");
    app.call(patch(), &foreign, &other, Some(json!({"name": "X"})))
        .await
        .expect_error(404, "not_found");
    app.call(reqwest::Method::DELETE, &foreign, &other, None)
        .await
        .expect_error(404, "not_found");
    app.call(reqwest::Method::DELETE, &path, &token, None)
        .await
        .expect(204);
    app.call(get(), &path, &token, None)
        .await
        .expect_error(404, "not_found");
    let all = rx.events_in_order(5).await;
    let deleted = all
        .iter()
        .map(crate::support::Hit::json)
        .find(|b| b["event"] == "customers.deleted")
        .unwrap();
    assert_eq!(deleted["data"], json!({"id": id}));
    // The viewer may read but not delete.
    let (viewer, viewer_id) = app.member("viewer@example.com").await;
    app.add_to_store(&store, &viewer_id, "viewer").await;
    app.call(get(), &bruno_path, &viewer, None)
        .await
        .expect(200);
    app.call(reqwest::Method::DELETE, &bruno_path, &viewer, None)
        .await
        .expect_error(403, "missing_permission");
}

#[tokio::test]
async fn tags_are_trimmed_kept_once_and_checked() {
    let app = spawn_app().await;
    let (token, _) = app.member("owner@example.com").await;
    let store = app.open_store(&token, "Org").await;
    let base = format!("/v1/stores/{store}/customers");
    let c = app
        .call(
            post(),
            &base,
            &token,
            Some(json!({"name": "Ana", "tags": [" vip ", "vip", "atacado"]})),
        )
        .await;
    c.expect(201);
    assert_eq!(c.body["tags"], json!(["vip", "atacado"]));
    let one = format!("{base}/{}", c.body["id"].as_str().unwrap());

    // A bad tag names its place; too many tags is refused; nothing changes.
    let r = app
        .call(patch(), &one, &token, Some(json!({"tags": ["ok", "  "]})))
        .await;
    r.expect_error(422, "validation_failed");
    assert!(r.body["details"]["fields"]["tags[1]"].is_string());
    let many: Vec<String> = (0..51).map(|i| format!("t{i}")).collect();
    app.call(patch(), &one, &token, Some(json!({"tags": many})))
        .await
        .expect_error(422, "validation_failed");
    let long = "x".repeat(65);
    app.call(patch(), &one, &token, Some(json!({"tags": [long]})))
        .await
        .expect_error(422, "validation_failed");
    // No control characters, not even at an end that trimming would drop (the documents'
    // pattern says none anywhere).
    let r = app
        .call(patch(), &one, &token, Some(json!({"tags": ["\tvip"]})))
        .await;
    r.expect_error(422, "validation_failed");
    assert_eq!(
        r.body["details"]["fields"]["tags[0]"],
        "must not contain control characters"
    );
    let now = app.call(get(), &one, &token, None).await;
    assert_eq!(now.body["tags"], json!(["vip", "atacado"]));

    // PATCH replaces them; other fields leave them alone.
    let r = app
        .call(patch(), &one, &token, Some(json!({"tags": ["novo"]})))
        .await;
    assert_eq!(r.body["tags"], json!(["novo"]));
    let r = app
        .call(patch(), &one, &token, Some(json!({"name": "Ana Lima"})))
        .await;
    assert_eq!(r.body["tags"], json!(["novo"]));
}
