//! The OpenAPI document is generated from the code and covers every routed path.

use std::collections::BTreeSet;

use crate::support::spawn_app;

/// The paths axum actually routes, read from the router's own description of itself.
fn routed_paths() -> BTreeSet<String> {
    let (router, _) = merchant_admin::api();
    let debug = format!("{router:?}");
    let mut paths = BTreeSet::new();
    // The router lists `RouteId(n): "/path"` for each registered path.
    for part in debug.split("RouteId(").skip(1) {
        if let Some((_, rest)) = part.split_once("): \"")
            && let Some((path, _)) = rest.split_once('"')
            // axum adds catch-all routes of its own for nested routers' fallbacks.
            && !path.contains("__private__axum")
            && path != "/"
        {
            paths.insert(path.to_string());
        }
    }
    assert!(!paths.is_empty(), "could not read the routes from {debug}");
    paths
}

/// The paths a served document describes, as routed (`/v1` prefixed, root paths as they are).
fn documented_paths(doc: &serde_json::Value) -> BTreeSet<String> {
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(
        doc["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["url"] == "/v1"),
        "servers include /v1: {}",
        doc["servers"]
    );
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, item)| {
            // Root paths carry their own server; the rest are relative to /v1.
            let at_root = item["servers"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["url"] == "/"));
            if at_root {
                path.clone()
            } else {
                format!("/v1{path}")
            }
        })
        .collect()
}

/// Spec 9.1: two descriptions, admin and storefront. Every routed path is in exactly one:
/// the storefront's (`/v1/storefront-api/...`) in the storefront document, the rest in the
/// admin one.
#[tokio::test]
async fn every_routed_path_is_documented_and_every_documented_path_is_routed() {
    let app = spawn_app().await;
    let r = app.get("/v1/openapi/admin.json").await;
    r.expect(200);
    let admin = documented_paths(&r.body);
    let r = app.get("/v1/openapi/storefront.json").await;
    r.expect(200);
    assert_eq!(r.body["info"]["title"], "merchant-admin storefront API");
    let storefront = documented_paths(&r.body);
    assert!(
        storefront
            .iter()
            .all(|p| p.starts_with("/v1/storefront-api/")),
        "{storefront:?}"
    );
    assert!(
        !admin.iter().any(|p| p.starts_with("/v1/storefront-api/")),
        "{admin:?}"
    );
    assert!(storefront.contains("/v1/storefront-api/{key}/carts/{cart_id}/checkout"));

    let documented: BTreeSet<String> = admin.union(&storefront).cloned().collect();
    let routed = routed_paths();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(
        undocumented.is_empty(),
        "routed but missing from the OpenAPI documents: {undocumented:?}"
    );
    assert!(
        unrouted.is_empty(),
        "documented but not routed: {unrouted:?}"
    );
    assert!(routed.contains("/v1/openapi/admin.json") && routed.contains("/healthz"));
    assert!(routed.contains("/v1/openapi/storefront.json"));
}

#[tokio::test]
async fn the_document_describes_the_error_shape() {
    let app = spawn_app().await;
    let doc = app.get("/v1/openapi/admin.json").await.body;
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["ErrorBody"]["properties"]["code"].is_object(),
        "{schemas}"
    );
    let codes = schemas["ErrorCode"]["enum"].as_array().unwrap();
    for code in [
        "validation_failed",
        "route_not_found",
        "rate_limited",
        "idempotency_key_reused",
    ] {
        assert!(codes.iter().any(|c| c == code), "{code} missing");
    }
}

#[tokio::test]
async fn public_operations_need_no_token_in_the_document() {
    let app = spawn_app().await;
    let doc = app.get("/v1/openapi/admin.json").await.body;
    // Spec 5 rule 9 (the plan list is not served yet).
    for (path, method) in [
        ("/auth/register", "post"),
        ("/auth/login", "post"),
        ("/auth/2fa/totp/verify", "post"),
        ("/auth/otp/send", "post"),
        ("/auth/otp/verify", "post"),
        ("/auth/refresh", "post"),
        ("/auth/logout", "post"),
        ("/docs/ask", "post"),
        ("/docs/{slug}", "get"),
        // The one-click unsubscribe link of marketing mail (RFC 8058).
        ("/unsubscribe/{token}", "get"),
        ("/unsubscribe/{token}", "post"),
    ] {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is documented");
        assert!(op["security"].is_null(), "{method} {path}: {op}");
    }
    assert!(doc["paths"]["/stores/{store_id}"]["get"]["security"].is_array());
    let ask = &doc["paths"]["/docs/ask"]["post"];
    assert_eq!(ask["tags"], serde_json::json!(["docs"]));
    assert!(
        ask["responses"]["200"]["content"]["text/event-stream"].is_object(),
        "{ask}"
    );
    assert!(
        ask["description"]
            .as_str()
            .is_some_and(|d| d.contains("visitor_id") && d.contains("daily")),
        "the limits are explained: {ask}"
    );
}
