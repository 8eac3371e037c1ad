//! The shopper chat widget (issue 15): its files over HTTP.

use crate::support::spawn_app;

#[tokio::test]
async fn the_widget_script_is_served_small_cacheable_and_not_deprecated() {
    let app = spawn_app().await;
    let r = app.get("/widget.js").await;
    r.expect(200);
    assert_eq!(
        r.header("content-type"),
        Some("application/javascript; charset=utf-8")
    );
    assert!(
        r.header("cache-control")
            .is_some_and(|c| c.contains("max-age=")),
        "{:?}",
        r.headers
    );
    assert!(
        r.text.len() < 30 * 1024,
        "widget.js is {} bytes",
        r.text.len()
    );
    assert!(r.text.contains("/v1/ws/widget"), "the real script");
    assert!(r.header("deprecation").is_none(), "a root path");

    // The ETag spares a returning shopper the download.
    let etag = r.header("etag").expect("an ETag").to_owned();
    let again = app
        .send(
            app.client
                .get(app.url("/widget.js"))
                .header("if-none-match", &etag),
        )
        .await;
    again.expect(304);
    assert!(again.text.is_empty());

    // Static files are not part of the API.
    app.get("/v1/widget.js")
        .await
        .expect_error(404, "route_not_found");
    let doc = app.get("/v1/openapi/admin.json").await;
    assert!(!doc.text.contains("widget.js") && !doc.text.contains("/widget/demo"));
}

#[tokio::test]
async fn the_demo_page_carries_the_key_escaped_under_a_strict_csp() {
    let app = spawn_app().await;
    let key = r#"k"><script>alert('x')</script>&"#;
    let r = app
        .send(
            app.client
                .get(app.url("/widget/demo"))
                .query(&[("key", key)]),
        )
        .await;
    r.expect(200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let escaped = "k&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;";
    assert!(
        r.text.contains(&format!(
            r#"<script src="/widget.js" data-key="{escaped}"></script>"#
        )),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains(&format!("<code data-testid=\"demo-key\">{escaped}</code>"))
    );
    assert!(!r.text.contains("<script>alert"), "{}", r.text);
    assert!(r.header("deprecation").is_none(), "a root path");

    let csp = r.header("content-security-policy").expect("a CSP");
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        &format!("connect-src 'self' ws://{0} wss://{0}", app.addr),
        "style-src 'sha256-",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{part} missing from {csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");

    // A page without a channel is useless: say so.
    let r = app.get("/widget/demo").await;
    assert_eq!(r.status.as_u16() / 100, 4, "{}", r.text);
    assert!(r.body["code"].is_string(), "{}", r.text);
}
