//! Documentation questions (issue 16; spec 4.4, 6.5, 8): `POST /docs/ask` streams an answer
//! from the embedded guides as a UI message stream citing `GET /docs/{slug}` pages; both are
//! public; questions are limited per visitor and per day. The stream is also read by the AI
//! SDK's own parser (`tests/node/check-ui-stream.mjs`), a client nobody here wrote.

use std::process::Command;

use chrono::Duration;
use serde_json::{Value, json};

use crate::support::{Reply, TestApp, spawn_app, spawn_app_with};

const ASK: &str = "/v1/docs/ask";
const SIGNATURE_QUESTION: &str = "How do I verify a webhook signature?";
/// Shares no word with the guides once stop words are dropped.
const NOTHING_MATCHES: &str = "What is the airspeed velocity of an unladen swallow?";

async fn ask(app: &TestApp, body: Value) -> Reply {
    app.post_json(ASK, &body).await
}

/// The stream's parts in order, checking the framing: each event one `data:` line, the last
/// one `[DONE]`.
fn parts(r: &Reply) -> Vec<Value> {
    let events: Vec<&str> = r.text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events.last(), Some(&"data: [DONE]"), "{}", r.text);
    assert!(r.text.ends_with("\n\n"), "{}", r.text);
    events[..events.len() - 1]
        .iter()
        .map(|e| {
            let data = e
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data line: {e:?}"));
            assert!(!data.contains('\n'), "one line per event: {e:?}");
            serde_json::from_str(data).unwrap_or_else(|err| panic!("{err}: {data}"))
        })
        .collect()
}

fn types(parts: &[Value]) -> Vec<&str> {
    parts.iter().map(|p| p["type"].as_str().unwrap()).collect()
}

fn text_of(parts: &[Value]) -> String {
    parts
        .iter()
        .filter(|p| p["type"] == "text-delta")
        .map(|p| p["delta"].as_str().unwrap())
        .collect()
}

fn sources_of(parts: &[Value]) -> Vec<Value> {
    parts
        .iter()
        .filter(|p| p["type"] == "source-url")
        .cloned()
        .collect()
}

/// Asserts the stream's headers and its parts' order: start, text-start, deltas, text-end,
/// sources, finish. Returns the parts.
#[track_caller]
fn assert_ui_stream(r: &Reply) -> Vec<Value> {
    r.expect(200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-vercel-ai-ui-message-stream"), Some("v1"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    let parts = parts(r);
    let t = types(&parts);
    assert_eq!(t[..2], ["start", "text-start"], "{t:?}");
    let deltas = t.iter().take_while(|x| **x != "text-end").count() - 2;
    assert!(deltas >= 1, "{t:?}");
    assert!(t[2..2 + deltas].iter().all(|x| *x == "text-delta"), "{t:?}");
    let rest = &t[2 + deltas..];
    assert_eq!(rest.first(), Some(&"text-end"), "{t:?}");
    assert_eq!(rest.last(), Some(&"finish"), "{t:?}");
    assert!(
        rest[1..rest.len() - 1].iter().all(|x| *x == "source-url"),
        "{t:?}"
    );
    assert!(
        parts[0]["messageId"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let id = &parts[1]["id"];
    assert!(id.as_str().is_some_and(|s| !s.is_empty()));
    for p in &parts[2..=2 + deltas] {
        assert_eq!(&p["id"], id, "one text part: {p}");
    }
    parts
}

#[tokio::test]
async fn a_question_streams_an_answer_citing_the_pages_it_used() {
    let app = spawn_app().await;
    let r = ask(&app, json!({"question": SIGNATURE_QUESTION})).await;
    let parts = assert_ui_stream(&r);
    assert!(
        types(&parts).iter().filter(|t| **t == "text-delta").count() >= 3,
        "streamed as several deltas: {}",
        r.text
    );
    let text = text_of(&parts);
    assert!(text.contains("HMAC-SHA256"), "{text}");
    assert!(text.contains("Webhooks"), "names the page: {text}");

    let sources = sources_of(&parts);
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert_eq!(sources[0]["sourceId"], "webhooks");
    assert_eq!(sources[0]["title"], "Webhooks");
    assert_eq!(
        sources[0]["url"],
        app.url("/v1/docs/webhooks"),
        "absolute, at the public URL"
    );
}

#[tokio::test]
async fn every_cited_url_serves_its_page_as_html() {
    let app = spawn_app().await;
    let mut seen = std::collections::BTreeSet::new();
    for q in [
        SIGNATURE_QUESTION,
        "How do I back up the database and restore it?",
        "How can I refund an order that is pending?",
        "Which flags turn on the assistant with Ollama?",
        "How do I add the chat widget to my site?",
        "My refresh token was reused and the session ended",
    ] {
        let r = ask(&app, json!({"question": q, "visitor_id": "tour"})).await;
        for s in sources_of(&assert_ui_stream(&r)) {
            let url = s["url"].as_str().unwrap();
            let page = app.send(app.client.get(url)).await;
            page.expect(200);
            assert_eq!(
                page.header("content-type"),
                Some("text/html; charset=utf-8")
            );
            let title = s["title"].as_str().unwrap();
            assert!(
                page.text.contains(&format!(
                    "<title>{title} · merchant-admin documentation</title>"
                )),
                "{}",
                page.text
            );
            assert!(page.text.contains(&format!("<h1>{title}</h1>")));
            seen.insert(s["sourceId"].as_str().unwrap().to_owned());
        }
    }
    for slug in [
        "webhooks",
        "backups",
        "orders-and-refunds",
        "assistant",
        "inbox-and-widget",
        "sign-in-and-tokens",
    ] {
        assert!(seen.contains(slug), "{slug} never cited: {seen:?}");
    }
}

#[tokio::test]
async fn every_page_is_served_and_unknown_ones_are_not_found() {
    let app = spawn_app().await;
    for slug in [
        "getting-started",
        "sign-in-and-tokens",
        "webhooks",
        "orders-and-refunds",
        "inbox-and-widget",
        "assistant",
        "backups",
    ] {
        let r = app.get(&format!("/v1/docs/{slug}")).await;
        r.expect(200);
        assert!(r.text.starts_with("<!doctype html>"), "{}", r.text);
        // Each page links to every guide.
        assert!(r.text.contains("<a href=\"backups\""), "{}", r.text);
        let csp = r.header("content-security-policy").expect("a CSP");
        assert!(csp.starts_with("default-src 'none'"), "{csp}");
        assert!(!csp.contains("script-src"), "no script: {csp}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    app.get("/v1/docs/nope")
        .await
        .expect_error(404, "not_found");
    app.get("/v1/docs/..%2Fsecrets.key")
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn a_question_nothing_matches_gets_a_short_answer_and_no_citation() {
    let app = spawn_app().await;
    for q in [NOTHING_MATCHES, "how do I?", "?!"] {
        let r = ask(&app, json!({"question": q})).await;
        let parts = assert_ui_stream(&r);
        assert_eq!(
            types(&parts),
            ["start", "text-start", "text-delta", "text-end", "finish"]
        );
        assert!(
            text_of(&parts).starts_with("I could not find that in the documentation."),
            "{}",
            r.text
        );
    }
}

#[tokio::test]
async fn malformed_questions_are_refused_with_the_error_shape() {
    let app = spawn_app().await;
    let long = "a".repeat(1001);
    let long_id = "v".repeat(129);
    for (body, field) in [
        (json!({}), "question"),
        (json!({"question": ""}), "question"),
        (json!({"question": "   \n "}), "question"),
        (json!({"question": long}), "question"),
        (json!({"question": 42}), "question"),
        (
            json!({"question": "refunds", "visitor_id": ""}),
            "visitor_id",
        ),
        (
            json!({"question": "refunds", "visitor_id": long_id}),
            "visitor_id",
        ),
    ] {
        let r = ask(&app, body.clone()).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"][field].is_string(),
            "{body}: {}",
            r.text
        );
    }
    ask(&app, json!({"question": "refunds", "extra": 1}))
        .await
        .expect_error(422, "validation_failed");
    app.send(
        app.client
            .post(app.url(ASK))
            .header("content-type", "application/json")
            .body("{\"question\": "),
    )
    .await
    .expect_error(400, "bad_request");
    // Limits count characters, not bytes.
    let r = ask(
        &app,
        json!({"question": "é".repeat(1000), "visitor_id": "ü".repeat(128)}),
    )
    .await;
    assert_ui_stream(&r);
}

#[tokio::test]
async fn a_visitor_may_ask_twenty_questions_an_hour() {
    let app = spawn_app().await;
    let as_ana = json!({"question": "refunds", "visitor_id": "ana"});
    for left in (0..20).rev() {
        let r = ask(&app, as_ana.clone()).await;
        assert_ui_stream(&r);
        assert_eq!(r.header("ratelimit-limit"), Some("20"), "the docs budget");
        assert_eq!(
            r.header("ratelimit-remaining"),
            Some(left.to_string().as_str())
        );
    }
    let r = ask(&app, as_ana.clone()).await;
    r.expect_error(429, "rate_limited");
    assert_eq!(r.header("ratelimit-limit"), Some("20"));
    assert_eq!(r.header("ratelimit-remaining"), Some("0"));
    assert_eq!(r.header("ratelimit-reset"), Some("3600"));
    assert_eq!(
        r.header("retry-after"),
        Some("180"),
        "one question per 3 min"
    );
    assert_eq!(r.body["details"]["retry_after_seconds"], 180);

    // Another visitor, and the same address without a visitor id, have budgets of their own.
    assert_ui_stream(&ask(&app, json!({"question": "refunds", "visitor_id": "bia"})).await);
    assert_ui_stream(&ask(&app, json!({"question": "refunds"})).await);

    // One question comes back every three minutes; all twenty after an hour.
    app.clock.advance(Duration::seconds(180));
    assert_ui_stream(&ask(&app, as_ana.clone()).await);
    ask(&app, as_ana.clone())
        .await
        .expect_error(429, "rate_limited");
    app.clock.advance(Duration::hours(1));
    let r = ask(&app, as_ana).await;
    assert_ui_stream(&r);
    assert_eq!(r.header("ratelimit-remaining"), Some("19"));
}

#[tokio::test]
async fn without_a_visitor_id_questions_are_counted_per_client_address() {
    let app = spawn_app_with(|c| c.trust_proxy = true).await;
    let from = |ip: &'static str| {
        app.client
            .post(app.url(ASK))
            .header("x-forwarded-for", ip)
            .json(&json!({"question": "webhook retries"}))
    };
    for _ in 0..20 {
        assert_ui_stream(&app.send(from("203.0.113.7")).await);
    }
    app.send(from("203.0.113.7"))
        .await
        .expect_error(429, "rate_limited");
    // An IPv6 client is counted by its /64, as every per-address budget is.
    for _ in 0..20 {
        assert_ui_stream(&app.send(from("2001:db8:1:2::1")).await);
    }
    app.send(from("2001:db8:1:2::ffff"))
        .await
        .expect_error(429, "rate_limited");
    assert_ui_stream(&app.send(from("203.0.113.8")).await);
}

#[tokio::test]
async fn the_daily_total_bounds_all_visitors_together() {
    let app = spawn_app_with(|c| {
        c.docs_daily_limit = 3;
        c.docs_hourly_limit = 1;
    })
    .await;
    let by = |v: &str| json!({"question": "refunds", "visitor_id": v});
    assert_ui_stream(&ask(&app, by("a")).await);
    // Refused by its own budget, a question is not charged to the total.
    for _ in 0..5 {
        let r = ask(&app, by("a")).await;
        r.expect_error(429, "rate_limited");
        assert_eq!(r.header("ratelimit-limit"), Some("1"));
    }
    assert_ui_stream(&ask(&app, by("b")).await);
    assert_ui_stream(&ask(&app, by("c")).await);
    let r = ask(&app, by("d")).await;
    r.expect_error(429, "rate_limited");
    assert_eq!(r.header("ratelimit-limit"), Some("3"), "the daily budget");
    assert_eq!(r.header("ratelimit-remaining"), Some("0"));
    assert_eq!(r.header("ratelimit-reset"), Some("86400"));
    assert_eq!(r.header("retry-after"), Some("28800"), "a third of a day");
    assert_eq!(r.body["details"]["retry_after_seconds"], 28800);

    app.clock.advance(Duration::hours(8));
    assert_ui_stream(&ask(&app, by("d")).await);
    ask(&app, by("e")).await.expect_error(429, "rate_limited");
}

#[tokio::test]
async fn the_unversioned_paths_answer_too() {
    let app = spawn_app().await;
    let r = app
        .post_json("/docs/ask", &json!({"question": SIGNATURE_QUESTION}))
        .await;
    let parts = assert_ui_stream(&r);
    assert!(r.header("deprecation").is_some());
    assert!(
        r.header("link")
            .is_some_and(|l| l.contains("</v1/docs/ask>; rel=\"successor-version\"")),
        "{:?}",
        r.header("link")
    );
    assert_eq!(sources_of(&parts)[0]["url"], app.url("/v1/docs/webhooks"));
    let page = app.get("/docs/webhooks").await;
    page.expect(200);
    assert!(page.header("deprecation").is_some());
}

/// Runs the AI SDK's own parser (node, `tests/node`) on a live answer. Fails, never skips,
/// when node or the `ai` package is missing: `.ci/run` installs the package.
fn read_with_the_ai_sdk(url: &str, question: &str) -> Value {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node");
    let out = Command::new("node")
        .arg(format!("{dir}/check-ui-stream.mjs"))
        .args([url, question])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("could not run `node` ({e}): install Node.js 18 or newer to run this test")
        });
    assert!(
        out.status.success(),
        "the AI SDK's parser failed ({}); if `ai` is missing run \
         `npm ci --prefix tests/node`:\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script prints one JSON object")
}

#[tokio::test]
async fn the_ai_sdk_reads_the_stream_as_we_wrote_it() {
    let app = spawn_app().await;
    for question in [SIGNATURE_QUESTION, NOTHING_MATCHES] {
        // Ours first: the extractive answer is the same for the same question.
        let ours = assert_ui_stream(&ask(&app, json!({"question": question})).await);
        let url = app.url(ASK);
        let q = question.to_owned();
        let theirs = tokio::task::spawn_blocking(move || read_with_the_ai_sdk(&url, &q))
            .await
            .unwrap();
        assert_eq!(theirs["text"], text_of(&ours), "{theirs}");
        assert!(!text_of(&ours).is_empty());
        let sources: Vec<Value> = sources_of(&ours)
            .into_iter()
            .map(|s| json!({"sourceId": s["sourceId"], "url": s["url"], "title": s["title"]}))
            .collect();
        assert_eq!(theirs["sources"], json!(sources), "{theirs}");
        let types: Vec<&str> = types(&ours);
        assert_eq!(theirs["types"], json!(types), "{theirs}");
    }
}

/// With a language model configured the answer is the model's, written from the passages
/// retrieval found and relayed as it streams; the same pages are cited. A model that fails
/// ends the stream with an `error` part, without the model server's own words.
#[tokio::test]
async fn with_a_model_the_answer_is_written_from_the_passages() {
    use crate::support::model::{FakeModel, Part, text};
    let model = FakeModel::start().await;
    let base = model.base.clone();
    let app = spawn_app_with(move |c| {
        c.assistant = Some(merchant_admin::assistant::provider::ModelConfig::new(
            &base, "m",
        ));
    })
    .await;
    model.answer(vec![
        text("Compute the HMAC-SHA256 "),
        text("of the raw body and compare."),
    ]);
    let r = ask(&app, json!({"question": SIGNATURE_QUESTION})).await;
    let parts = assert_ui_stream(&r);
    assert_eq!(
        text_of(&parts),
        "Compute the HMAC-SHA256 of the raw body and compare."
    );
    assert_eq!(sources_of(&parts)[0]["sourceId"], "webhooks");
    let sent = &model.requests()[0];
    assert!(
        sent.get("tools").is_none(),
        "no tools for documentation answers"
    );
    let prompt = sent["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("Webhooks") && prompt.contains(SIGNATURE_QUESTION),
        "{prompt}"
    );

    // With every model slot taken (the assistant's turns hold them), a public question does
    // not queue: it gets the extractive answer.
    let slots = app.state.assistant.model_slots.clone();
    let held = slots.acquire_many_owned(32).await.unwrap();
    let r = ask(&app, json!({"question": SIGNATURE_QUESTION})).await;
    let quoted = text_of(&assert_ui_stream(&r));
    assert!(
        quoted.starts_with("Here is what the documentation says"),
        "{quoted}"
    );
    assert_eq!(model.requests().len(), 1, "the model was not asked");
    drop(held);

    model.answer(vec![text("Half"), Part::Break]);
    let r = ask(&app, json!({"question": SIGNATURE_QUESTION})).await;
    r.expect(200);
    let failed = self::parts(&r);
    let error = failed
        .iter()
        .find(|p| p["type"] == "error")
        .expect("an error part");
    assert_eq!(
        error["errorText"],
        "the answer could not be generated; try again"
    );
}
