//! The admin web app (issue 23): served from the binary at `/` and `/admin/`, compressed and
//! revalidated, under 300 KB; and driven end to end in headless Chromium against a demo
//! store, with axe-core's check on every screen and screenshots at desktop and phone sizes
//! (`target/browser-shots/admin-*.png`).

use std::io::Read;
use std::path::Path;

use chrono::Duration;
use serde_json::{Value, json};

use crate::support::browser::{Browser, url};
use crate::support::{PASSWORD, TestApp, rfc6238, spawn_app};

const OWNER: &str = "owner@demo.example";

async fn raw(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = app.client.get(app.url(path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("request")
}

#[tokio::test]
async fn the_app_is_served_from_the_binary_compressed_revalidated_and_under_a_strict_csp() {
    let app = spawn_app().await;

    // The same page at the root and at /admin/; /admin redirects there.
    let root = raw(&app, "/", &[]).await;
    assert_eq!(root.status(), 200);
    let h = root.headers().clone();
    assert_eq!(h["content-type"], "text/html; charset=utf-8");
    assert_eq!(h["cache-control"], "no-cache");
    assert!(h.get("deprecation").is_none(), "not an API path");
    let csp = h["content-security-policy"].to_str().unwrap().to_owned();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self' 'sha256-"),
        "{csp}"
    );
    assert!(csp.contains("connect-src 'self'") && csp.contains("frame-ancestors 'none'"));
    let page = root.text().await.unwrap();
    assert!(page.contains("<script type=\"importmap\">") && page.contains("/admin/js/main.js"));
    let admin = raw(&app, "/admin/", &[]).await;
    assert_eq!(admin.status(), 200);
    assert_eq!(admin.text().await.unwrap(), page);
    let bare = app.client.get(app.url("/admin")).send().await.unwrap();
    assert_eq!(bare.url().path(), "/admin/", "redirected to the folder");

    // A module, compressed as asked, revalidated by its representation's ETag.
    let plain = raw(&app, "/admin/js/api.js", &[]).await;
    assert_eq!(plain.status(), 200);
    assert_eq!(
        plain.headers()["content-type"],
        "application/javascript; charset=utf-8"
    );
    assert_eq!(plain.headers()["vary"], "accept-encoding");
    let plain_tag = plain.headers()["etag"].to_str().unwrap().to_owned();
    let source = plain.bytes().await.unwrap();
    for (encoding, token) in [("gzip, deflate, br", "br"), ("gzip", "gzip")] {
        // The compressed copy is made once, in the background; until then the plain file
        // goes out, with its own ETag.
        let mut r = raw(&app, "/admin/js/api.js", &[("accept-encoding", encoding)]).await;
        for _ in 0..500 {
            if r.headers().contains_key("content-encoding") {
                break;
            }
            assert_eq!(r.headers()["etag"].to_str().unwrap(), plain_tag);
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            r = raw(&app, "/admin/js/api.js", &[("accept-encoding", encoding)]).await;
        }
        assert_eq!(r.headers()["content-encoding"], token);
        let tag = r.headers()["etag"].to_str().unwrap().to_owned();
        assert_ne!(tag, plain_tag, "each representation has its own ETag");
        let body = r.bytes().await.unwrap();
        assert!(body.len() * 2 < source.len(), "{token} shrinks the module");
        let mut back = Vec::new();
        if token == "br" {
            brotli::Decompressor::new(&body[..], 4096)
                .read_to_end(&mut back)
                .unwrap();
        } else {
            flate2::read::GzDecoder::new(&body[..])
                .read_to_end(&mut back)
                .unwrap();
        }
        assert_eq!(back, source, "{token} decodes to the file");
        let again = raw(
            &app,
            "/admin/js/api.js",
            &[("accept-encoding", encoding), ("if-none-match", &tag)],
        )
        .await;
        assert_eq!(again.status(), 304);
    }
    let again = raw(&app, "/admin/js/api.js", &[("if-none-match", &plain_tag)]).await;
    assert_eq!(again.status(), 304);
    // A proxy that compresses marks the tag weak; it still matches.
    let weak = format!("W/{plain_tag}");
    let again = raw(&app, "/admin/js/api.js", &[("if-none-match", &weak)]).await;
    assert_eq!(again.status(), 304);

    // Nothing outside the folder, nothing unknown; answers in the API's error shape.
    for path in [
        "/admin/..%2fCargo.toml",
        "/admin/js/..%2f..%2fCargo.toml",
        "/admin/nope.js",
        "/admin/js",
        "/admin/vendor/preact.mjs.map",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status, 404, "{path}: {}", r.text);
        assert_eq!(r.body["code"], "not_found", "{path}");
    }
    let r = app.get("/admin/vendor/preact.LICENSE.txt").await;
    assert_eq!(r.status, 200, "the vendored licences ship with the app");
}

#[tokio::test]
async fn opening_the_app_does_not_spend_the_anonymous_budget() {
    let app = crate::support::spawn_app_with(|c| c.rate_limit_anonymous = 3).await;
    for _ in 0..3 {
        for path in ["/", "/admin/", "/admin/js/app.js", "/admin/app.css"] {
            let r = app.get(path).await;
            assert_eq!(r.status, 200, "{path}");
            assert!(
                r.header("ratelimit-limit").is_none(),
                "{path} is not charged"
            );
        }
    }
    // The budget is intact for the API's anonymous calls, and still applies to them.
    for left in ["2", "1", "0"] {
        let r = app.get("/v1/billing/plans").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("ratelimit-remaining"), Some(left));
    }
    assert_eq!(app.get("/v1/billing/plans").await.status, 429);
}

/// Every file the binary embeds for the app, in bytes, uncompressed.
fn app_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                app_size(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

#[test]
fn the_whole_app_is_under_300_kb_uncompressed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/admin");
    let size = app_size(&dir);
    println!("assets/admin: {size} bytes");
    // 300 KB read strictly: 300,000 bytes, not 300 KiB.
    assert!(size < 300_000, "the app is {size} bytes");
}

/// A demo store whose owner signs in with TOTP; returns (token, store id, TOTP secret).
async fn demo(app: &TestApp) -> (String, String, String) {
    let out = app.seed_demo(OWNER, "Loja Demo").await;
    let r = app.login_as(OWNER, "setup").await;
    r.expect(200);
    let token = r.body["token"].as_str().unwrap().to_owned();
    let secret = app.enable_totp(&token).await;
    // Past the step of the code used to turn it on: each code signs in once.
    app.clock.advance(Duration::seconds(60));
    (token, out.store_id.to_string(), secret)
}

/// Signs in through the app's form with the password, then the TOTP code.
async fn sign_in(app: &TestApp, browser: &Browser, secret: &str) {
    sign_in_as(app, browser, secret, "admin").await;
}

/// [`sign_in`], its screenshots named `<prefix>-signin...`.
async fn sign_in_as(app: &TestApp, browser: &Browser, secret: &str, prefix: &str) {
    browser.open(&url(app.addr, "/")).await;
    browser.wait_visible("#signin-email").await;
    check_accessibility(browser, &format!("{prefix}-sign-in")).await;
    browser.screenshots(&format!("{prefix}-signin")).await;
    browser.type_into("#signin-email", OWNER).await;
    browser.type_into("#signin-password", PASSWORD).await;
    browser.click("button[type=submit]").await;
    browser.wait_visible("#signin-code").await;
    browser.screenshots(&format!("{prefix}-signin-totp")).await;
    let code = rfc6238(secret, app.now_unix());
    browser.type_into("#signin-code", &code).await;
    browser.click("button[type=submit]").await;
    browser.wait_visible("#stat-orders").await;
}

async fn check_accessibility(browser: &Browser, screen: &str) {
    // A word the app asked for and never defined shows as its key: `orders.title`.
    let missing = browser
        .eval("return [...(window.__missingWords || [])];")
        .await;
    assert_eq!(
        missing,
        json!([]),
        "{screen}: words asked for but not defined"
    );
    let violations = browser.accessibility_violations().await;
    if !violations.is_empty() {
        let shot = browser.screenshot(&format!("axe-{screen}")).await;
        panic!(
            "{screen}: serious or critical accessibility violations ({}):\n{}",
            shot.display(),
            violations.join("\n")
        );
    }
}

/// Opens `#/route` and waits for `ready` (a JavaScript condition) before checking and
/// photographing the screen.
async fn visit(browser: &Browser, app: &TestApp, route: &str, ready: &str, name: &str) {
    browser.open(&url(app.addr, &format!("/#{route}"))).await;
    browser.wait_for(name, ready).await;
    check_accessibility(browser, name).await;
    browser.screenshots(&format!("admin-{name}")).await;
}

/// The screens with the most colors, in the dark theme: contrast holds there too.
const DARK_SCREENS: [(&str, &str, &str); 6] = [
    ("/", "document.querySelector('#stat-orders')", "dark-home"),
    (
        "/orders",
        "document.querySelector('table.table tbody tr')",
        "dark-orders",
    ),
    (
        "/reviews",
        "document.querySelector('.review')",
        "dark-reviews",
    ),
    (
        "/inbox",
        "document.querySelector('.conv-row')",
        "dark-inbox",
    ),
    (
        "/products",
        "document.querySelector('#products-table tbody tr')",
        "dark-products",
    ),
    (
        "/settings/billing",
        "document.querySelector('#subscription')",
        "dark-billing",
    ),
];

/// The first UUID written anywhere in `s`.
fn first_uuid(s: &str) -> Option<String> {
    (0..s.len().saturating_sub(35))
        .filter_map(|i| s.get(i..i + 36))
        .find(|c| uuid::Uuid::try_parse(c).is_ok() && c.as_bytes()[8] == b'-')
        .map(str::to_owned)
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_merchant_signs_in_with_totp_refunds_an_order_and_moderates_reviews_from_the_keyboard() {
    let app = spawn_app().await;
    let (token, store, secret) = demo(&app).await;
    let browser = Browser::start().await;
    sign_in(&app, &browser, &secret).await;

    // Home shows today's numbers from the API.
    browser
        .wait_for(
            "the home numbers",
            "document.querySelector('#stat-reviews .value').textContent.trim() !== '—'",
        )
        .await;
    let pending = app
        .total(
            &token,
            &format!("/v1/stores/{store}/reviews?status=pending"),
        )
        .await;
    assert_eq!(
        browser.text("#stat-reviews .value").await.trim(),
        pending.to_string()
    );
    check_accessibility(&browser, "home").await;
    browser.screenshots("admin-home").await;

    // The tokens live in this tab only: the refresh token in sessionStorage, none in
    // localStorage, and a reload resumes the session.
    assert!(browser.local_storage().await.is_empty());
    let stored = browser
        .eval("return sessionStorage.getItem('ma.refresh_token');")
        .await;
    assert!(text(&stored).starts_with("svc_rt_"), "{stored}");
    browser.reload().await;
    browser.wait_visible("#stat-orders").await;

    // A tab opened from this one starts with a copy of its sessionStorage: it asks for a
    // sign-in of its own instead of refreshing the same token (which would end the session).
    let first_tab = browser.windows().await.remove(0);
    browser
        .eval("window.open(location.href, '_blank'); return true;")
        .await;
    let tabs = browser.windows().await;
    assert_eq!(tabs.len(), 2);
    let copy = tabs.into_iter().find(|w| *w != first_tab).unwrap();
    browser.switch_to(copy).await;
    browser.wait_visible("#signin-email").await;
    browser.eval("window.close(); return true;").await;
    browser.switch_to(first_tab).await;
    browser.reload().await;
    browser.wait_visible("#stat-orders").await;

    // A paid order with nothing refunded yet.
    let orders = app
        .get_as(
            &format!("/v1/stores/{store}/orders?status=paid&limit=1"),
            &token,
        )
        .await;
    orders.expect(200);
    let order = &orders.body["data"][0];
    let (id, total) = (text(&order["id"]), order["total_cents"].as_i64().unwrap());
    assert_eq!(order["refunded_cents"], 0);
    visit(
        &browser,
        &app,
        "/orders",
        "document.querySelectorAll('table.table tbody tr').length > 0",
        "orders",
    )
    .await;
    // Found by its number, as a customer quotes it.
    let number = order["number"].as_i64().unwrap();
    browser
        .type_into("#orders-search", &format!("#{number}"))
        .await;
    browser.click("form[role=search] button[type=submit]").await;
    browser
        .wait_for(
            "the order found by its number",
            &format!(
                "document.querySelectorAll('table.table tbody tr').length === 1
                 && document.querySelector('table.table tbody tr a').getAttribute('href') === '#/orders/{id}'"
            ),
        )
        .await;
    browser.screenshots("admin-orders-by-number").await;
    browser.click("table.table tbody tr a").await;
    browser
        .wait_for(
            "the order page",
            "document.querySelector('.page-head .badge')",
        )
        .await;
    check_accessibility(&browser, "order").await;
    browser.screenshots("admin-order").await;

    // Refund part of it through the dialog: 10.00 typed the pt-BR way.
    browser.click(".page-head .actions .btn").await;
    browser.wait_visible("#refund-amount").await;
    let field = browser.find("#refund-amount").await;
    field.clear().await.unwrap();
    browser.type_into("#refund-amount", "10,00").await;
    browser
        .type_into("#refund-reason", "Produto com defeito")
        .await;
    check_accessibility(&browser, "refund-dialog").await;
    browser.screenshots("admin-refund-dialog").await;
    browser.click("#refund-dialog button[type=submit]").await;
    browser
        .wait_for(
            "the refund to show",
            "document.querySelector('#order-refunded')",
        )
        .await;
    let after = app
        .get_as(&format!("/v1/stores/{store}/orders/{id}"), &token)
        .await;
    after.expect(200);
    assert_eq!(after.body["refunded_cents"], 1000, "{}", after.text);
    assert!(total > 1000);
    assert_eq!(after.body["status"], "partially_refunded");
    assert!(browser.text(".flash").await.contains("R$"));
    browser.screenshots("admin-order-refunded").await;

    // Reviews: A approves the first pending review, R rejects the next, from the keyboard.
    let first = app
        .get_as(
            &format!("/v1/stores/{store}/reviews?status=pending&limit=2"),
            &token,
        )
        .await;
    let (a, b) = (
        text(&first.body["data"][0]["id"]),
        text(&first.body["data"][1]["id"]),
    );
    visit(
        &browser,
        &app,
        "/reviews",
        "document.querySelectorAll('.review').length > 1",
        "reviews",
    )
    .await;
    assert_eq!(
        browser
            .eval("return document.querySelector('.review.focused').dataset.reviewId;")
            .await,
        json!(a)
    );
    let press = |key: &'static str| {
        format!(
            "document.dispatchEvent(new KeyboardEvent('keydown', {{ key: '{key}', bubbles: true }})); return true;"
        )
    };
    browser.eval(&press("a")).await;
    browser
        .wait_for(
            "the approved review to leave the queue",
            &format!("!document.querySelector('[data-review-id=\"{a}\"]')"),
        )
        .await;
    browser
        .wait_for(
            "the next review to take focus",
            &format!("document.querySelector('.review.focused').dataset.reviewId === '{b}'"),
        )
        .await;
    browser.eval(&press("r")).await;
    browser
        .wait_for(
            "the rejected review to leave the queue",
            &format!("!document.querySelector('[data-review-id=\"{b}\"]')"),
        )
        .await;
    for (id, status) in [(&a, "approved"), (&b, "rejected")] {
        let r = app
            .get_as(&format!("/v1/stores/{store}/reviews/{id}"), &token)
            .await;
        assert_eq!(r.body["status"], status, "{}", r.text);
    }

    // Signing out ends the session on the server too.
    browser.click(".top-tools .btn.ghost").await;
    browser.wait_visible("#signin-email").await;
    let sessions = app.get_as("/v1/me/sessions", &token).await;
    sessions.expect(200);
    assert_eq!(
        sessions.body["data"].as_array().unwrap().len(),
        1,
        "only the test's own session is left: {}",
        sessions.text
    );
}

const BUBBLE: &str = "[data-testid=widget-bubble]";
const INPUT: &str = "[data-testid=widget-input]";
const SEND: &str = "[data-testid=widget-send]";

/// The demo store's site-chat channel key.
async fn chat_key(app: &TestApp, token: &str, store: &str) -> String {
    let r = app
        .get_as(&format!("/v1/stores/{store}/channels"), token)
        .await;
    r.expect(200);
    let chat = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "storefront_chat")
        .expect("the demo has a site chat");
    text(&chat["key"])
}

#[tokio::test]
async fn a_merchant_answers_a_shopper_live_and_creates_an_api_token_shown_once() {
    let app = spawn_app().await;
    let (token, store, secret) = demo(&app).await;
    let key = chat_key(&app, &token, &store).await;
    let browser = Browser::start().await;
    sign_in(&app, &browser, &secret).await;

    // The inbox is live over the agent socket.
    visit(
        &browser,
        &app,
        "/inbox",
        "document.querySelectorAll('.conv-row').length > 0
         && /Ao vivo|Live/.test(document.querySelector('#inbox-conn').textContent)",
        "inbox",
    )
    .await;
    let app_tab = browser.windows().await.remove(0);

    // A shopper writes from the shop's page, in a second tab.
    browser
        .eval(&format!(
            "window.open('/widget/demo?key={key}', '_blank'); return true;"
        ))
        .await;
    let shop_tab = browser
        .windows()
        .await
        .into_iter()
        .find(|w| *w != app_tab)
        .unwrap();
    browser.switch_to(shop_tab.clone()).await;
    browser.wait_visible(BUBBLE).await;
    browser.click(BUBBLE).await;
    browser.wait_visible(INPUT).await;
    let question = "Olá! Vocês entregam em Recife?";
    browser.type_into(INPUT, question).await;
    browser.click(SEND).await;
    browser
        .wait_for(
            "the widget to remember its conversation",
            "Object.values(localStorage).some(v => /[0-9a-f]{8}-[0-9a-f]{4}-/.test(v))",
        )
        .await;
    let stored = browser.local_storage().await;
    let conversation = stored
        .values()
        .filter_map(Value::as_str)
        .find_map(first_uuid)
        .expect("a conversation id in the widget's storage");

    // It appears in the inbox without a reload; the merchant opens it and answers.
    browser.switch_to(app_tab.clone()).await;
    let row = format!(".conv-row[data-conversation-id=\"{conversation}\"]");
    browser
        .wait_for(
            "the new conversation to arrive live",
            &format!("document.querySelector('{row}')"),
        )
        .await;
    browser
        .eval(&format!(
            "document.querySelector('{row} a, {row}').click(); return true;"
        ))
        .await;
    browser
        .wait_for(
            "the shopper's message in the thread",
            &format!(
                "[...document.querySelectorAll('#inbox-thread [data-sender=visitor]')]
                   .some(e => e.textContent.includes({}))",
                json!(question)
            ),
        )
        .await;
    let answer = "Sim! Entregamos em todo o Brasil.";
    browser.type_into("#inbox-reply", answer).await;
    browser.click("#inbox-send").await;
    browser
        .wait_for(
            "the reply in the thread",
            &format!(
                "[...document.querySelectorAll('#inbox-thread [data-sender=agent]')]
                   .some(e => e.textContent.includes({}))",
                json!(answer)
            ),
        )
        .await;
    check_accessibility(&browser, "inbox-thread").await;
    browser.screenshots("admin-inbox-thread").await;

    // The shopper sees it on the shop's page.
    browser.switch_to(shop_tab).await;
    browser
        .wait_for(
            "the merchant's reply on the widget",
            &format!(
                "[...document.querySelectorAll('[data-sender=agent]')]
                   .some(e => e.textContent.includes({}))",
                json!(answer)
            ),
        )
        .await;
    browser.screenshot("admin-inbox-reply-on-widget").await;
    browser.eval("window.close(); return true;").await;
    browser.switch_to(app_tab).await;

    // An API token: its value shown once, working, and never shown again.
    visit(
        &browser,
        &app,
        "/settings/tokens",
        "document.querySelector('#token-new')",
        "settings-tokens",
    )
    .await;
    browser.click("#token-new").await;
    browser.wait_visible("#token-name").await;
    browser
        .type_into("#token-name", "Planilha de pedidos")
        .await;
    check_accessibility(&browser, "token-dialog").await;
    browser.click("#token-create").await;
    browser
        .wait_for(
            "the new token's value",
            "document.querySelector('#token-value') && document.querySelector('#token-value').value",
        )
        .await;
    browser.screenshots("admin-token-created").await;
    let value = browser.value("#token-value").await;
    assert!(value.starts_with("svc_st_"), "{value}");
    let used = app
        .get_as(&format!("/v1/stores/{store}/orders?limit=1"), &value)
        .await;
    used.expect(200);
    browser.reload().await;
    browser
        .wait_for(
            "the token in the list",
            "document.body.textContent.includes('Planilha de pedidos')",
        )
        .await;
    let shown = browser
        .eval("return document.documentElement.outerHTML;")
        .await;
    assert!(
        !text(&shown).contains(&value),
        "the raw value is never shown again"
    );
}

#[tokio::test]
async fn every_screen_passes_the_accessibility_check_on_a_desktop_and_a_phone() {
    let app = crate::support::spawn_app_with(|c| {
        c.billing.pix = Some(merchant_admin::billing::pix::Merchant {
            key: "financeiro@operadora.com.br".into(),
            name: "Operadora Ltda".into(),
            city: "São Paulo".into(),
        });
    })
    .await;
    let (token, store, secret) = demo(&app).await;
    let products = app
        .get_as(&format!("/v1/stores/{store}/products?limit=1"), &token)
        .await;
    let product = text(&products.body["data"][0]["id"]);
    let customers = app
        .get_as(&format!("/v1/stores/{store}/customers?limit=1"), &token)
        .await;
    let customer = text(&customers.body["data"][0]["id"]);
    let browser = Browser::start().await;
    sign_in(&app, &browser, &secret).await;

    let (product_page, customer_page) = (
        format!("/products/{product}"),
        format!("/customers/{customer}"),
    );
    let screens = [
        ("/products", "#products-table tbody tr", "products"),
        (product_page.as_str(), "#product-stock tbody tr", "product"),
        ("/products/new", "#product-form", "product-new"),
        (
            "/products/categories",
            "#categories-table tr[data-id]",
            "categories",
        ),
        ("/customers", "#customers-table tbody tr", "customers"),
        (customer_page.as_str(), "#customer-facts", "customer"),
        ("/settings/store", "#store-form", "settings-store"),
        (
            "/settings/team",
            "#members tr[data-user-id]",
            "settings-team",
        ),
        ("/settings/webhooks", "#webhook-new", "settings-webhooks"),
        (
            "/settings/channels",
            "#channels article[data-channel-id]",
            "settings-channels",
        ),
        ("/settings/billing", "#subscription", "settings-billing"),
        (
            "/settings/assistant",
            "#assistant-usage",
            "settings-assistant",
        ),
        (
            "/settings/account",
            "#sessions tr[data-session-id]",
            "settings-account",
        ),
        ("/reviews?status=all", ".review", "reviews-all"),
    ];
    for (route, ready, name) in screens {
        let ready = format!("document.querySelector({})", json!(ready));
        visit(&browser, &app, route, &ready, name).await;
    }

    // Billing: the open invoice's Pix copy-and-paste code and its QR image (the pay button
    // issues one when none is open).
    browser.open(&url(app.addr, "/#/settings/billing")).await;
    browser
        .wait_for(
            "the payment card",
            "document.querySelector('#pix-code') || document.querySelector('#billing-pay')",
        )
        .await;
    if browser.count("#pix-code").await == 0 {
        browser.click("#billing-pay").await;
    }
    browser
        .wait_for(
            "the Pix code and QR",
            "document.querySelector('#pix-code') && document.querySelector('#pix-code').value
             && document.querySelector('#pix-qr') && document.querySelector('#pix-qr').naturalWidth > 0",
        )
        .await;
    let pix = browser.value("#pix-code").await;
    assert!(pix.starts_with("000201"), "a BR Code: {pix}");
    check_accessibility(&browser, "billing-pix").await;
    browser.screenshots("admin-billing-pix").await;
    drop(browser);

    // The same checks with the system in dark mode.
    let dark = Browser::start_dark().await;
    app.clock.advance(Duration::seconds(60));
    sign_in_as(&app, &dark, &secret, "admin-dark").await;
    assert_eq!(
        dark.eval("return matchMedia('(prefers-color-scheme: dark)').matches;")
            .await,
        Value::Bool(true)
    );
    for (route, ready, name) in DARK_SCREENS {
        visit(&dark, &app, route, ready, name).await;
    }
}

#[tokio::test]
async fn the_assistant_panel_streams_a_turn_and_applies_an_approved_change_once_confirmed() {
    use crate::support::model::{FakeModel, call, text as said};
    let model = FakeModel::start().await;
    let base = model.base.clone();
    let app = crate::support::spawn_app_with(move |c| {
        c.assistant = Some(merchant_admin::assistant::provider::ModelConfig::new(
            &base,
            "fake-model",
        ));
    })
    .await;
    let (token, store, secret) = demo(&app).await;
    let products = app
        .get_as(&format!("/v1/stores/{store}/products?limit=1"), &token)
        .await;
    let product = text(&products.body["data"][0]["id"]);
    let variant = text(&products.body["data"][0]["variants"][0]["id"]);
    let browser = Browser::start().await;
    sign_in(&app, &browser, &secret).await;
    visit(
        &browser,
        &app,
        "/settings/assistant",
        "document.querySelector('#chat-text')",
        "settings-assistant-chat",
    )
    .await;

    model.answer(vec![
        said("I can set it to R$ 27,00. "),
        call(
            "change_price",
            json!({"variant_id": variant, "price_cents": 2700}),
        ),
    ]);
    browser
        .type_into("#chat-text", "Mude o preço para 27 reais")
        .await;
    browser.click("#chat-send").await;
    browser
        .wait_for(
            "the streamed answer and its proposal",
            "document.querySelector('#chat-log [data-who=assistant]')
             && document.querySelector('#chat-log [data-proposal-id] [data-action=approve]')",
        )
        .await;
    assert!(
        browser
            .text("#chat-log [data-who=assistant]")
            .await
            .contains("R$ 27,00")
    );
    check_accessibility(&browser, "assistant-proposal").await;
    browser.screenshots("admin-assistant-proposal").await;

    // A money change asks once more; the second approval applies it.
    browser
        .click("#chat-log [data-proposal-id] [data-action=approve]")
        .await;
    browser
        .wait_for(
            "the confirmation",
            "document.querySelector('#chat-log [data-proposal-id] .note')",
        )
        .await;
    let path = format!("/v1/stores/{store}/products/{product}");
    let before = app.get_as(&path, &token).await;
    assert_ne!(
        before.body["variants"][0]["price_cents"], 2700,
        "nothing applied before the confirmation"
    );
    model.answer(vec![said("Pronto: agora custa R$ 27,00.")]);
    browser
        .click("#chat-log [data-proposal-id] [data-action=approve]")
        .await;
    browser
        .wait_for(
            "the follow-up after the change",
            "[...document.querySelectorAll('#chat-log [data-who=assistant]')]
               .some(e => e.textContent.includes('Pronto'))
             && !document.querySelector('#chat-log [data-action=approve]')",
        )
        .await;
    let after = app.get_as(&path, &token).await;
    assert_eq!(after.body["variants"][0]["price_cents"], 2700);
    check_accessibility(&browser, "assistant-applied").await;
    browser.screenshots("admin-assistant-applied").await;
}
