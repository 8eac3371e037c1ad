//! The shopper chat widget (issue 15): its files over HTTP, and the widget itself in a real
//! headless Chromium against the real server: the bubble and panel, a first send that fails
//! (an unknown channel key) without losing the shopper's text, and a whole conversation with
//! the team on the other end of the agent socket.

use serde_json::json;

use crate::support::browser::{Browser, url};
use crate::support::{Reply, post, spawn_app};

const BUBBLE: &str = "[data-testid=widget-bubble]";
const PANEL: &str = "[data-testid=widget-panel]";
const INPUT: &str = "[data-testid=widget-input]";
const SEND: &str = "[data-testid=widget-send]";
const ERROR: &str = "[data-testid=widget-error]";
const MESSAGE: &str = "[data-testid=widget-message]";

/// A browser on the demo shop page, with the widget of the chat channel `key`.
async fn demo_page(app: &crate::support::TestApp, key: &str) -> Browser {
    let browser = Browser::start().await;
    browser
        .open(&url(app.addr, &format!("/widget/demo?key={key}")))
        .await;
    browser
}

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
    // Reads right even where a proxy or the page drops the charset.
    assert!(r.text.is_ascii(), "widget.js keeps to ASCII");
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

#[tokio::test]
async fn the_bubble_opens_a_chat_panel_without_starting_a_conversation() {
    let app = spawn_app().await;
    let browser = demo_page(&app, "demo-key").await;
    browser.wait_visible(BUBBLE).await;
    assert!(
        !browser.is_displayed(PANEL).await,
        "the panel starts closed"
    );

    // Styled (the page's CSP lets the widget's styles through) and in the bottom-right corner.
    let place = browser
        .eval(
            "const r = document.querySelector('[data-testid=widget-bubble]').getBoundingClientRect();
             return { position: getComputedStyle(document.getElementById('ma-widget')).position,
                      right: innerWidth - r.right, bottom: innerHeight - r.bottom, width: r.width };",
        )
        .await;
    assert_eq!(place["position"], "fixed", "{place}");
    for side in ["right", "bottom"] {
        let gap = place[side].as_f64().unwrap();
        assert!((0.0..=40.0).contains(&gap), "{side} gap {gap}: {place}");
    }
    assert!(place["width"].as_f64().unwrap() >= 48.0, "{place}");

    browser.click(BUBBLE).await;
    browser.wait_visible(PANEL).await;
    assert!(browser.is_displayed(INPUT).await);
    assert!(browser.is_displayed(SEND).await);
    assert!(browser.text(PANEL).await.contains("Chat with us"));
    browser
        .wait_for(
            "the input to have focus",
            "document.activeElement === document.querySelector('[data-testid=widget-input]')",
        )
        .await;
    browser.screenshot("widget-open").await;

    // Opening is not talking: the conversation is created on the first message.
    assert!(browser.local_storage().await.is_empty());
    assert_eq!(browser.count(MESSAGE).await, 0);

    browser.click("[data-testid=widget-close]").await;
    browser
        .wait_for(
            "the panel to close",
            "document.querySelector('[data-testid=widget-panel]').hidden",
        )
        .await;
}

#[tokio::test]
async fn a_first_message_that_cannot_be_sent_shows_an_error_and_keeps_the_text() {
    let app = spawn_app().await;
    let browser = demo_page(&app, "demo-key").await;
    browser.click(BUBBLE).await;
    browser.wait_visible(INPUT).await;

    // No channel has this key: POST /v1/widget/demo-key/conversations answers 404.
    let text = "Hi! Is the trail jacket waterproof?";
    browser.type_into(INPUT, text).await;
    browser.click(SEND).await;
    browser.wait_visible(ERROR).await;
    assert!(
        browser.text(ERROR).await.contains("isn't available"),
        "{}",
        browser.text(ERROR).await
    );
    assert_eq!(browser.value(INPUT).await, text, "the text is kept");
    browser
        .wait_for(
            "the send button to be usable again",
            "!document.querySelector('[data-testid=widget-send]').disabled",
        )
        .await;
    assert_eq!(browser.count(MESSAGE).await, 0);
    assert!(
        browser.local_storage().await.is_empty(),
        "nothing is remembered for a conversation that does not exist"
    );
    browser.screenshot("widget-send-failed").await;

    // Nothing was stored, so a reload starts clean.
    browser.reload().await;
    browser.wait_visible(BUBBLE).await;
    assert!(!browser.is_displayed(PANEL).await);
}

#[tokio::test]
async fn a_shopper_and_the_team_talk_through_the_widget_and_a_reload_keeps_the_history() {
    let app = spawn_app().await;
    let (owner, _) = app.member("owner@example.com").await;
    let store_id = app.open_store(&owner, "Org").await;
    let p = format!("/v1/stores/{store_id}");
    let key = app.chat_channel(&owner, &p, json!([])).await;
    let mut team = app.team_socket(&owner, &store_id).await;

    let browser = demo_page(&app, &key).await;
    browser.click(BUBBLE).await;
    browser.wait_visible(INPUT).await;
    let text = "Hi! Is the trail jacket waterproof?";
    browser.type_into(INPUT, text).await;
    browser.click(SEND).await;

    // The shopper's message reaches the team's socket, announced as a new conversation.
    let new = team.next_of("conversation:new").await;
    let conversation = new["conversation_id"].as_str().unwrap().to_owned();
    let msg = team.next_of("message:new").await;
    assert_eq!(msg["data"]["text"], text);
    assert_eq!(msg["data"]["sender"], "visitor");
    let stored = browser.local_storage().await;
    assert!(
        stored
            .values()
            .any(|v| v.as_str().is_some_and(|s| s.contains(&conversation))),
        "the conversation is remembered: {stored:?}"
    );

    // The team's reply appears in the page, over the widget's socket.
    let reply = "Yes: fully taped seams, 20k mm.";
    app.call(
        post(),
        &format!("{p}/conversations/{conversation}/messages"),
        &owner,
        Some(json!({"text": reply})),
    )
    .await
    .expect(201);
    browser
        .wait_for(
            "the team's reply to show",
            &format!(
                "[...document.querySelectorAll('[data-sender=agent]')].some(e => e.textContent.includes({}))",
                json!(reply)
            ),
        )
        .await;
    browser.screenshot("widget-conversation").await;

    // A reload resumes the same conversation with its history.
    browser.reload().await;
    browser.wait_visible(BUBBLE).await;
    if !browser.is_displayed(PANEL).await {
        browser.click(BUBBLE).await;
    }
    browser
        .wait_for(
            "the history after a reload",
            &format!(
                "document.querySelectorAll('[data-testid=widget-message]').length >= 2
                 && document.body.textContent.includes({})",
                json!(reply)
            ),
        )
        .await;
    browser.screenshot("widget-after-reload").await;
    let list = app.get_as(&format!("{p}/conversations"), &owner).await;
    assert_eq!(
        list.body["data"].as_array().unwrap().len(),
        1,
        "no second conversation"
    );
}

/// A preflight from `origin` for a widget path: what a browser asks before the real request.
async fn preflight(app: &crate::support::TestApp, path: &str, origin: &str) -> Reply {
    app.send(
        app.client
            .request(reqwest::Method::OPTIONS, app.url(path))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type,x-visitor-token,idempotency-key",
            ),
    )
    .await
}

#[tokio::test]
async fn the_widget_routes_answer_cors_for_the_channels_allowed_origins_only() {
    let app = spawn_app().await;
    let (owner, _) = app.member("owner@example.com").await;
    let store_id = app.open_store(&owner, "Org").await;
    let p = format!("/v1/stores/{store_id}");
    let shop = "https://shop.example";
    let key = app.chat_channel(&owner, &p, json!([shop])).await;
    let open = format!("/v1/widget/{key}/conversations");

    // The preflight of an allowed site names it, and the headers the widget sends.
    let r = preflight(&app, &open, shop).await;
    assert!(r.status.is_success(), "{} {}", r.status, r.text);
    assert_eq!(r.header("access-control-allow-origin"), Some(shop));
    let allowed = r
        .header("access-control-allow-headers")
        .unwrap()
        .to_lowercase();
    for h in ["content-type", "x-visitor-token", "idempotency-key"] {
        assert!(allowed.contains(h), "{h} in {allowed}");
    }
    assert!(
        r.header("access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
    assert_eq!(r.header("access-control-allow-credentials"), None);
    assert!(
        r.header("vary")
            .unwrap_or("")
            .to_lowercase()
            .contains("origin")
    );
    // Unversioned, as every route also answers.
    let r = preflight(&app, &format!("/widget/{key}/conversations"), shop).await;
    assert_eq!(r.header("access-control-allow-origin"), Some(shop));

    // Another site gets no permission, and its request is refused with nothing stored.
    let other = "https://elsewhere.example";
    let r = preflight(&app, &open, other).await;
    assert_eq!(r.header("access-control-allow-origin"), None);
    let r = app
        .send(
            app.client
                .post(app.url(&open))
                .header("origin", other)
                .json(&json!({})),
        )
        .await;
    r.expect(403);
    assert_eq!(r.header("access-control-allow-origin"), None);

    // The allowed site reads its answers, errors included (a wrong token's 401).
    let r = app
        .send(
            app.client
                .post(app.url(&open))
                .header("origin", shop)
                .json(&json!({})),
        )
        .await;
    r.expect(201);
    assert_eq!(r.header("access-control-allow-origin"), Some(shop));
    let conversation = r.body["conversation_id"].as_str().unwrap();
    let r = app
        .send(
            app.client
                .get(app.url(&format!("{open}/{conversation}/messages")))
                .header("origin", shop)
                .header("x-visitor-token", "vt_wrong"),
        )
        .await;
    r.expect(401);
    assert_eq!(r.header("access-control-allow-origin"), Some(shop));
    assert!(
        r.header("access-control-expose-headers")
            .unwrap_or("")
            .to_lowercase()
            .contains("retry-after")
    );

    // A deleted channel's 404 is readable, so the widget can tell it is gone.
    let r = app
        .send(
            app.client
                .post(app.url("/v1/widget/chk_unknown/conversations"))
                .header("origin", other)
                .json(&json!({})),
        )
        .await;
    r.expect(404);
    assert_eq!(r.header("access-control-allow-origin"), Some(other));

    // Every other route stays same-origin: no CORS answer, and OPTIONS is still not a method.
    let r = app
        .send(
            app.client
                .get(app.url(&p))
                .header("origin", shop)
                .bearer_auth(&owner),
        )
        .await;
    r.expect(200);
    assert_eq!(r.header("access-control-allow-origin"), None);
    let r = preflight(&app, &format!("{p}/channels"), shop).await;
    r.expect(405);
    assert_eq!(r.header("access-control-allow-origin"), None);
}

#[tokio::test]
async fn a_channel_that_allows_any_site_answers_each_site_by_name() {
    let app = spawn_app().await;
    let (owner, _) = app.member("owner@example.com").await;
    let store_id = app.open_store(&owner, "Org").await;
    let key = app
        .chat_channel(&owner, &format!("/v1/stores/{store_id}"), json!([]))
        .await;
    let r = preflight(
        &app,
        &format!("/v1/widget/{key}/conversations"),
        "https://a.example",
    )
    .await;
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://a.example")
    );
}

/// A shop's own site, on another origin than the API (another port): `/?key=K` is a page
/// with the widget's tag pasted in for channel `K`.
async fn shop_site(api: std::net::SocketAddr) -> std::net::SocketAddr {
    let script = url(api, "/widget.js");
    let router = axum::Router::new().route(
        "/",
        axum::routing::get(
            move |q: axum::extract::Query<std::collections::HashMap<String, String>>| {
                let key: String = q
                    .get("key")
                    .map(|k| {
                        k.chars()
                            .filter(|c| c.is_ascii_alphanumeric() || "_-".contains(*c))
                            .collect()
                    })
                    .unwrap_or_default();
                let page = format!(
                    "<!doctype html><html><head><title>Trail shop</title></head><body>\
                     <h1>Trail shop</h1><script src=\"{script}\" data-key=\"{key}\">\
                     </script></body></html>"
                );
                async move { axum::response::Html(page) }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// The page of `site` with the widget of channel `key`.
fn shop_page(site: std::net::SocketAddr, key: &str) -> String {
    url(site, &format!("/?key={key}"))
}

#[tokio::test]
async fn the_widget_pasted_on_the_shops_own_site_talks_to_the_api_across_origins() {
    let app = spawn_app().await;
    let (owner, _) = app.member("owner@example.com").await;
    let store_id = app.open_store(&owner, "Org").await;
    let p = format!("/v1/stores/{store_id}");
    let (site, stranger) = (shop_site(app.addr).await, shop_site(app.addr).await);
    let origin = url(site, "/").trim_end_matches('/').to_owned();
    let key = app.chat_channel(&owner, &p, json!([origin])).await;
    let mut team = app.team_socket(&owner, &store_id).await;

    let browser = Browser::start().await;
    browser.open(&shop_page(site, &key)).await;
    browser.click(BUBBLE).await;
    browser.wait_visible(INPUT).await;
    browser.type_into(INPUT, "Do you ship to Lisbon?").await;
    browser.click(SEND).await;
    let msg = team.next_of("message:new").await;
    assert_eq!(msg["data"]["text"], "Do you ship to Lisbon?");
    let conversation = msg["conversation_id"].as_str().unwrap().to_owned();
    app.call(
        post(),
        &format!("{p}/conversations/{conversation}/messages"),
        &owner,
        Some(json!({"text": "We do, in 3 days."})),
    )
    .await
    .expect(201);
    browser
        .wait_for(
            "the team's reply on the shop's page",
            "document.body.textContent.includes('We do, in 3 days.')",
        )
        .await;
    // A file from the team shows in the page, and the page may fetch it with its token.
    let store_path = format!("{p}/conversations/{conversation}/messages");
    let sent = app
        .send_files(
            &owner,
            &store_path,
            None,
            &[("jacket.png", "image/png", vec![1, 2, 3])],
        )
        .await;
    sent.expect(201);
    browser
        .wait_for(
            "the team's file in the page",
            "[...document.querySelectorAll('.maw-att')].some(b => b.textContent.includes('jacket.png'))",
        )
        .await;
    // By its path on the API's origin, as the widget does (the test's browser reaches the
    // server as localhost).
    let path = sent.body["message"]["attachments"][0]["path"]
        .as_str()
        .unwrap();
    let url = url(app.addr, path);
    let fetched = browser
        .eval(&format!(
            "const c = JSON.parse(localStorage.getItem({}));
             return fetch({}, {{headers: {{'X-Visitor-Token': c.visitor_token}}}})
                 .then(r => r.arrayBuffer()).then(b => [...new Uint8Array(b)]);",
            json!(format!("merchant-admin-widget:{key}")),
            json!(url)
        ))
        .await;
    assert_eq!(fetched, json!([1, 2, 3]));
    browser.screenshot("widget-cross-origin").await;

    // The same tag on a site the channel does not allow cannot start a conversation.
    browser.open(&shop_page(stranger, &key)).await;
    browser.click(BUBBLE).await;
    browser.wait_visible(INPUT).await;
    browser.type_into(INPUT, "Hello from elsewhere").await;
    browser.click(SEND).await;
    browser.wait_visible(ERROR).await;
    browser.screenshot("widget-origin-not-allowed").await;
    assert_eq!(browser.value(INPUT).await, "Hello from elsewhere");
    let list = app.get_as(&format!("{p}/conversations"), &owner).await;
    assert_eq!(list.body["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn widget_preflights_count_against_the_anonymous_budget() {
    let app = crate::support::spawn_app_with(|c| c.rate_limit_anonymous = 3).await;
    let (owner, _) = app.member("owner@example.com").await;
    let store_id = app.open_store(&owner, "Org").await;
    let key = app
        .chat_channel(&owner, &format!("/v1/stores/{store_id}"), json!([]))
        .await;
    let path = format!("/v1/widget/{key}/conversations");
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(
            preflight(&app, &path, "https://a.example")
                .await
                .status
                .as_u16(),
        );
    }
    assert!(statuses.contains(&429), "{statuses:?}");
}
