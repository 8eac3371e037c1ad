//! The browsable API reference (issue 21 "API reference"): `/docs/api` and
//! `/docs/api/storefront` render the two OpenAPI documents offline.

use crate::support::browser::{self, Browser};
use crate::support::spawn_app;

/// How long the viewer may take to fetch and draw a whole document on a busy CI machine.
const RENDER_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The rendered text of the RapiDoc element, through its shadow root and the nested ones of
/// its schema tables.
const RENDERED: &str = "(function deep(n) { if (!n) return ''; let t = ''; \
     for (const c of n.childNodes) { t += c.nodeType === 3 ? c.textContent : deep(c); } \
     return t + (n.shadowRoot ? deep(n.shadowRoot) : ''); })(document.querySelector('rapi-doc'))";

#[tokio::test]
async fn the_reference_pages_and_viewer_are_served_from_the_binary_under_a_strict_csp() {
    let app = spawn_app().await;
    for path in ["/docs/api", "/docs/api/storefront"] {
        let r = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let h = r.headers().clone();
        assert_eq!(h["content-type"], "text/html; charset=utf-8");
        // Root paths, never rewritten to /v1 or deprecated.
        assert!(h.get("deprecation").is_none(), "{path}");
        let csp = h["content-security-policy"].to_str().unwrap();
        for rule in [
            "default-src 'none'",
            "script-src 'self'",
            "connect-src 'self'",
            "font-src 'self'",
        ] {
            assert!(csp.contains(rule), "{csp}");
        }
        let html = r.text().await.unwrap();
        let spec = if path == "/docs/api" {
            "/v1/openapi/admin.json"
        } else {
            "/v1/openapi/storefront.json"
        };
        assert!(html.contains(&format!("spec-url=\"{spec}\"")), "{html}");
    }

    // The viewer is cached and revalidated by ETag.
    let r = app
        .client
        .get(app.url("/docs/api/rapidoc-min.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "application/javascript; charset=utf-8"
    );
    assert!(
        r.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age")
    );
    let etag = r.headers()["etag"].to_str().unwrap().to_owned();
    assert!(r.bytes().await.unwrap().len() > 100_000);
    let again = app
        .client
        .get(app.url("/docs/api/rapidoc-min.js"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);

    // Nothing else lives in the folder.
    let r = app
        .client
        .get(app.url("/docs/api/secret.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn the_reference_renders_an_operation_with_its_responses_and_asks_nothing_outside() {
    let app = spawn_app().await;
    let (browser, egress) = Browser::start_watching_egress().await;
    // RapiDoc's element id for an operation: method, then the path with {}: replaced by -.
    browser
        .open(&browser::url(
            app.addr,
            "/docs/api#post-/stores/-store_id-/orders/-order_id-/refund",
        ))
        .await;
    browser
        .wait_for_within(
            "the refund operation to render",
            &format!(
                "{RENDERED}.includes('Refunds part or all of the order') \
                 && {RENDERED}.includes('/stores/{{store_id}}/orders/{{order_id}}/refund')"
            ),
            RENDER_WAIT,
        )
        .await;
    let text = browser.eval(&format!("return {RENDERED};")).await;
    let text = text.as_str().unwrap();
    // Its parameters, its request body's fields and every documented response status.
    for needle in ["store_id", "order_id", "amount_cents"] {
        if !text.contains(needle) {
            browser.screenshot("reference-refund-missing").await;
            panic!("missing {needle}: {text}");
        }
    }
    for status in ["201", "202", "404", "409", "422", "502"] {
        assert!(text.contains(status), "missing the {status} response");
    }
    // ... and the error codes each can carry.
    for code in [
        "payment_provider_failed",
        "refund_exceeds_refundable",
        "no_refundable_payment",
    ] {
        assert!(text.contains(code), "missing the {code} code");
    }
    browser.screenshot("reference-refund").await;

    // The storefront's document renders on its own page.
    browser
        .open(&browser::url(app.addr, "/docs/api/storefront"))
        .await;
    browser
        .wait_for_within(
            "the storefront document to render",
            &format!(
                "{RENDERED}.includes('merchant-admin storefront API') \
                 && {RENDERED}.includes('Opens an empty cart')"
            ),
            RENDER_WAIT,
        )
        .await;
    browser.screenshot("reference-storefront").await;

    // Fonts, scripts and connections all came from the test server.
    let outside = egress.requests();
    assert!(outside.is_empty(), "the page asked outside: {outside:?}");
    let resources = browser
        .eval(
            "return performance.getEntriesByType('resource').map(e => e.name)
                .filter(n => !n.startsWith(location.origin));",
        )
        .await;
    assert_eq!(resources, serde_json::json!([]), "{resources}");
}
