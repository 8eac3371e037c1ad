//! The Page envelope and its parameters (spec 2.2).

use std::collections::HashSet;

use crate::support::spawn_app;

#[tokio::test]
async fn keyset_pages_walk_every_row_once_newest_first() {
    let app = spawn_app().await;
    for i in 0..7 {
        app.seed_owner(&format!("owner{i}@example.com"), &format!("Org {i}"))
            .await;
        app.clock.advance(chrono::Duration::seconds(1));
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/test/tenants?limit=3&cursor={c}"),
            None => "/v1/test/tenants?limit=3".to_string(),
        };
        let r = app.get(&path).await;
        r.expect(200);
        pages += 1;
        assert!(r.body.get("total").is_none(), "total only when asked");
        for row in r.body["data"].as_array().unwrap() {
            seen.push(row["name"].as_str().unwrap().to_string());
        }
        if r.body["has_more"] == true {
            cursor = Some(r.body["next_cursor"].as_str().unwrap().to_string());
        } else {
            assert!(r.body["next_cursor"].is_null());
            break;
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..7).rev().map(|i| format!("Org {i}")).collect();
    assert_eq!(seen, expected);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 7);
}

#[tokio::test]
async fn total_offset_and_defaults() {
    let app = spawn_app().await;
    for i in 0..4 {
        app.seed_owner(&format!("o{i}@example.com"), &format!("Acme {i}"))
            .await;
        app.clock.advance(chrono::Duration::seconds(1));
    }
    let r = app.get("/v1/test/tenants?include_total=true&limit=1").await;
    r.expect(200);
    assert_eq!(r.body["total"], 4);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["has_more"], true);

    let r = app.get("/v1/test/tenants?offset=3").await;
    assert_eq!(r.body["data"][0]["name"], "Acme 0");
    assert_eq!(r.body["has_more"], false);

    let r = app.get("/v1/test/tenants").await;
    assert_eq!(
        r.body["data"].as_array().unwrap().len(),
        4,
        "default limit is 50"
    );
}

#[tokio::test]
async fn bad_paging_parameters_have_their_own_codes() {
    let app = spawn_app().await;
    for q in [
        "limit=0",
        "limit=201",
        "limit=-5",
        "limit=ten",
        "limit=99999999999999999999",
    ] {
        app.get(&format!("/v1/test/tenants?{q}"))
            .await
            .expect_error(400, "invalid_limit");
    }
    for q in ["offset=-1", "offset=x", "offset=1.5"] {
        app.get(&format!("/v1/test/tenants?{q}"))
            .await
            .expect_error(400, "invalid_offset");
    }
    app.get("/v1/test/tenants?limit=200&offset=0")
        .await
        .expect(200);
}

#[tokio::test]
async fn tampered_or_foreign_cursors_are_invalid() {
    let app = spawn_app().await;
    for i in 0..3 {
        app.seed_owner(&format!("t{i}@example.com"), &format!("T {i}"))
            .await;
    }
    let r = app.get("/v1/test/tenants?limit=1").await;
    let cursor = r.body["next_cursor"].as_str().unwrap().to_string();
    app.get(&format!("/v1/test/tenants?limit=1&cursor={cursor}"))
        .await
        .expect(200);

    let mut bytes = cursor.clone().into_bytes();
    bytes[2] = if bytes[2] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    for bad in [tampered.as_str(), "abc", "x.y", "%00"] {
        app.get(&format!("/v1/test/tenants?cursor={bad}"))
            .await
            .expect_error(400, "invalid_cursor");
    }

    // A cursor signed by another server (another data directory) is foreign here.
    let other = spawn_app().await;
    for i in 0..2 {
        other
            .seed_owner(&format!("x{i}@example.com"), &format!("X {i}"))
            .await;
    }
    let foreign = other.get("/v1/test/tenants?limit=1").await.body["next_cursor"]
        .as_str()
        .unwrap()
        .to_string();
    app.get(&format!("/v1/test/tenants?cursor={foreign}"))
        .await
        .expect_error(400, "invalid_cursor");
}
