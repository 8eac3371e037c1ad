//! The shopper chat widget (issue 15): its files over HTTP, and the widget itself in a real
//! headless Chromium against the real server: the bubble and panel, a first send that fails
//! (an unknown channel key) without losing the shopper's text, and a whole conversation with
//! the team on the other end of the agent socket.

use serde_json::json;

use crate::support::browser::{Browser, url};
use crate::support::{post, spawn_app};

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
    let auth = format!("Bearer {owner}");
    let mut team = app
        .ws(
            &format!("/v1/ws/conversations?store_id={store_id}"),
            &[("authorization", &auth)],
        )
        .await
        .expect("agent socket");

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
