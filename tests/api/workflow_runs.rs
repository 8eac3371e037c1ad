//! Workflow runs (issue 18): what starts a run (an event, a schedule, a manual request), its
//! steps on the job queue, waits across a restart, retries, and the version a run follows.
//! Apps here have no workers: the test drains the queue at the test clock's time.

use chrono::Duration;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::msgapp::{Fake, cloud_config, start_fake};
use crate::support::smtp::SmtpReceiver;
use crate::support::{Receiver, Shop, TestApp, get, patch, post, spawn_app_at, spawn_app_with};

const PHONE: &str = "+55 11 98765-4321";

/// A stocked shop on an app with no workers whose messaging app is `fake`, with a
/// messaging-app channel, Ana's phone, and a store token that outlives clock jumps.
async fn shop(fake_addr: Option<std::net::SocketAddr>) -> Shop {
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        if let Some(addr) = fake_addr {
            c.msgapp = cloud_config(addr);
        }
    })
    .await;
    let mut s = Shop::open(app, 10).await;
    s.app
        .call(
            post(),
            &s.path("channels"),
            &s.token,
            Some(json!({"kind": "msgapp", "name": "WhatsApp",
                        "settings": {"phone_number_id": "555000111", "app_secret": "app-secret",
                                     "verify_token": "verify"}})),
        )
        .await
        .expect(201);
    s.app
        .call(
            patch(),
            &s.path(&format!("customers/{}", s.customer)),
            &s.token,
            Some(json!({"phone": PHONE})),
        )
        .await
        .expect(200);
    s.token = s
        .app
        .store_token(
            &s.token,
            &s.store,
            json!([
                "workflows.read",
                "workflows.write",
                "orders.read",
                "orders.write",
                "customers.read",
                "customers.write",
                "webhooks.read",
                "webhooks.write"
            ]),
        )
        .await;
    s
}

impl Shop {
    /// Creates and publishes a workflow; its body after publishing.
    async fn published(&self, graph: Value, trigger: Value) -> Value {
        let r = self
            .app
            .call(
                post(),
                &self.path("workflows"),
                &self.token,
                Some(json!({"name": "Journey", "graph": graph, "trigger": trigger})),
            )
            .await;
        r.expect(201);
        let id = r.body["id"].as_str().unwrap().to_owned();
        let p = self
            .app
            .call(
                post(),
                &self.path(&format!("workflows/{id}/publish")),
                &self.token,
                None,
            )
            .await;
        p.expect(200);
        p.body.clone()
    }

    /// `GET` of one run of `w` (a run's body as `POST .../run` answered it).
    async fn get_run(&self, w: &Value, run: &Value) -> crate::support::Reply {
        let path = self.wf(w, &format!("/runs/{}", run["id"].as_str().unwrap()));
        self.app.call(get(), &path, &self.token, None).await
    }

    fn wf(&self, w: &Value, rest: &str) -> String {
        self.path(&format!("workflows/{}{rest}", w["id"].as_str().unwrap()))
    }

    async fn runs(&self, w: &Value) -> Vec<Value> {
        self.read(&format!("workflows/{}/runs", w["id"].as_str().unwrap()))
            .await["data"]
            .as_array()
            .unwrap()
            .clone()
    }

    async fn deliver(&self, order: &Value) {
        for s in ["paid", "fulfilled", "shipped", "delivered"] {
            self.set_status(order, s).await;
        }
    }
}

fn node(id: &str, kind: &str, config: Value) -> Value {
    let mut n = json!({"id": id, "type": kind, "position": {"x": 0, "y": 0}});
    n["config"] = config;
    n
}

fn edge(from: &str, to: &str) -> Value {
    json!({"from": from, "to": to})
}

/// "When an order is delivered, wait 7 days, then ask for a review": orders of at least
/// R$ 20 get the template, a tag and a webhook step; smaller ones end at once.
fn review_request() -> Value {
    json!({
        "nodes": [
            node("wait", "wait", json!({"seconds": 604_800})),
            node("big", "condition", json!({"field": "order.total_cents", "op": "gte", "value": 2000})),
            node("ask", "send_message", json!({"template": "review_request",
                  "parameters": ["{{customer.name}}", "{{order.number}}"]})),
            node("tag", "tag_customer", json!({"tag": "review-asked"})),
            node("hook", "webhook", json!({})),
            node("end", "end", json!({})),
            node("skip", "end", json!({}))
        ],
        "edges": [edge("wait", "big"),
                  {"from": "big", "to": "ask", "branch": "true"},
                  {"from": "big", "to": "skip", "branch": "false"},
                  edge("ask", "tag"), edge("tag", "hook"), edge("hook", "end")]
    })
}

fn sent(fake: &Fake) -> Vec<(String, Value)> {
    fake.received
        .lock()
        .unwrap()
        .iter()
        .map(|(id, _, body)| (id.clone(), body.clone()))
        .collect()
}

#[tokio::test]
async fn an_event_workflow_runs_once_per_event_through_wait_message_tag_and_webhook() {
    let (fake, addr) = start_fake().await;
    let s = shop(Some(addr)).await;
    let rx = Receiver::start().await;
    s.subscribe(&rx, &["workflow.step", "customers.updated"])
        .await;
    let w = s
        .published(
            review_request(),
            json!({"type": "event", "event": "orders.delivered"}),
        )
        .await;

    // Delivering one order starts one run about it; other events of the order start none.
    let order = s.order(1).await;
    s.deliver(&order).await;
    let runs = s.runs(&w).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(run["status"], "running");
    assert_eq!(run["started_by"], "event");
    assert_eq!(run["version"], 1);
    assert_eq!(run["subject"], json!({"type": "order", "id": order["id"]}));
    assert_eq!(run["current_node"], "wait");
    assert!(run["finished_at"].is_null() && run["error"].is_null());
    let started = s
        .read(&format!("workflows/{}", w["id"].as_str().unwrap()))
        .await;
    assert_eq!(started["last_run_at"], run["started_at"]);

    // The wait parks the run for seven days: nothing is sent before.
    s.app.drain_jobs().await;
    let waiting = s.runs(&w).await;
    assert_eq!(
        (&waiting[0]["status"], &waiting[0]["current_node"]),
        (&json!("waiting"), &json!("wait"))
    );
    s.app
        .clock
        .advance(Duration::days(7) - Duration::seconds(1));
    s.app.drain_jobs().await;
    assert_eq!(fake.count(), 0);
    assert_eq!(s.runs(&w).await[0]["status"], "waiting");

    s.app.clock.advance(Duration::seconds(1));
    s.app.drain_jobs().await;
    let done = &s.runs(&w).await[0];
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["current_node"].is_null());
    assert!(done["finished_at"].is_string());

    // The template went to Ana's phone from the store's number, its fields filled in, in
    // the store's language.
    let messages = sent(&fake);
    assert_eq!(messages.len(), 1);
    let (number, body) = &messages[0];
    assert_eq!(number, "555000111");
    assert_eq!(body["to"], "55 11 98765-4321");
    assert_eq!(body["type"], "template");
    assert_eq!(body["template"]["name"], "review_request");
    assert_eq!(body["template"]["language"]["code"], "pt_BR");
    let params: Vec<&str> = body["template"]["components"][0]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(params, ["Ana", order["number"].to_string().as_str()]);

    // Tagged (a customers.updated event), then the webhook step.
    let customer = s.read(&format!("customers/{}", s.customer)).await;
    assert_eq!(customer["tags"], json!(["review-asked"]));
    let hits = rx.wait_for(2).await;
    let of = |name: &str| {
        hits.iter()
            .map(crate::support::Hit::json)
            .find(|b| b["event"] == name)
            .unwrap_or_else(|| panic!("no {name} delivered"))
    };
    assert_eq!(
        of("customers.updated")["data"]["tags"],
        json!(["review-asked"])
    );
    let step = of("workflow.step");
    assert_eq!(
        step["data"],
        json!({"workflow_id": w["id"], "version": 1, "run_id": run["id"], "node_id": "hook",
               "subject": {"type": "order", "id": order["id"]}})
    );

    // A second delivered order is a second event: a second run.
    let again = s.order(2).await;
    s.deliver(&again).await;
    assert_eq!(s.runs(&w).await.len(), 2);
    // (Workers would start the wait at once; this app's queue is drained by hand.)
    s.app.drain_jobs().await;
    s.app.clock.advance(Duration::days(7));
    s.app.drain_jobs().await;
    assert_eq!(fake.count(), 2);
    // Ana has the tag already: no second customers.updated, so the run's own tag cannot
    // start anything that listens for it.
    rx.expect_no_more_than(&s.app, 3).await;
    let runs = s.runs(&w).await;
    assert!(runs.iter().all(|r| r["status"] == "completed"), "{runs:?}");
}

#[tokio::test]
async fn conditions_and_event_filters_read_the_subject() {
    let (fake, addr) = start_fake().await;
    let s = shop(Some(addr)).await;
    // Only orders of 2 or more units start this one; the condition sends the small ones
    // (under R$ 60) to the end without a message.
    let graph = json!({
        "nodes": [
            node("big", "condition", json!({"field": "order.total_cents", "op": "gt", "value": 6000})),
            node("ask", "send_message", json!({"template": "thanks"})),
            node("done", "end", json!({})),
            node("small", "end", json!({}))
        ],
        "edges": [{"from": "big", "to": "ask", "branch": "true"},
                  {"from": "big", "to": "small", "branch": "false"}, edge("ask", "done")]
    });
    let filter = json!({"field": "order.items.0.quantity", "op": "gte", "value": 2});
    let w = s
        .published(
            graph,
            json!({"type": "event", "event": "orders.created", "filter": filter}),
        )
        .await;
    s.order(1).await;
    assert!(s.runs(&w).await.is_empty(), "the filter keeps one unit out");
    s.order(2).await; // 5000 cents
    s.order(3).await; // 7500 cents
    s.app.drain_jobs().await;
    let runs = s.runs(&w).await;
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["status"] == "completed"));
    assert_eq!(fake.count(), 1, "only the R$ 75 order was thanked");
}

#[tokio::test]
async fn a_schedule_fires_at_next_fire_at_on_the_test_clock() {
    let s = shop(None).await;
    let rx = Receiver::start().await;
    s.subscribe(&rx, &["workflow.step"]).await;
    let graph = json!({"nodes": [node("hook", "webhook", json!({})), node("end", "end", json!({}))],
                       "edges": [edge("hook", "end")]});
    // Mondays at 9 in the store's zone (São Paulo, UTC-3); the clock starts on Monday
    // 2026-11-02 at 12:00 UTC, 9:00 there, so the first fire is a week later.
    let w = s
        .published(graph, json!({"type": "schedule", "cron": "0 9 * * 1"}))
        .await;
    assert_eq!(w["next_fire_at"], "2026-11-09T12:00:00.000000Z");
    s.app.drain_jobs().await;
    assert!(s.runs(&w).await.is_empty());

    s.app
        .clock
        .advance(Duration::days(7) - Duration::seconds(1));
    s.app.drain_jobs().await;
    assert!(s.runs(&w).await.is_empty(), "not before its time");
    s.app.clock.advance(Duration::seconds(1));
    s.app.drain_jobs().await;
    let runs = s.runs(&w).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (
            &runs[0]["started_by"],
            &runs[0]["status"],
            &runs[0]["subject"]
        ),
        (&json!("schedule"), &json!("completed"), &Value::Null)
    );
    rx.wait_for(1).await;
    let now = s
        .read(&format!("workflows/{}", w["id"].as_str().unwrap()))
        .await;
    assert_eq!(now["next_fire_at"], "2026-11-16T12:00:00.000000Z");
    assert_eq!(now["last_run_at"], "2026-11-09T12:00:00.000000Z");

    // Paused over a fire time: nothing fires, then or after resuming.
    s.app
        .call(post(), &s.wf(&w, "/pause"), &s.token, None)
        .await
        .expect(200);
    s.app.clock.advance(Duration::days(7));
    s.app.drain_jobs().await;
    assert_eq!(s.runs(&w).await.len(), 1);
    let resumed = s
        .app
        .call(post(), &s.wf(&w, "/resume"), &s.token, None)
        .await;
    resumed.expect(200);
    assert_eq!(resumed.body["next_fire_at"], "2026-11-23T12:00:00.000000Z");
    s.app.drain_jobs().await;
    assert_eq!(s.runs(&w).await.len(), 1);
    s.app.clock.advance(Duration::days(7));
    s.app.drain_jobs().await;
    assert_eq!(s.runs(&w).await.len(), 2, "one fire per fire time");
    rx.expect_no_more_than(&s.app, 2).await;
}

#[tokio::test]
async fn a_wait_survives_a_restart_and_a_run_follows_the_version_it_started_on() {
    let s = shop(None).await;
    let rx = Receiver::start().await;
    s.subscribe(&rx, &["workflow.step"]).await;
    let graph = |hook: &str| {
        json!({"nodes": [node("wait", "wait", json!({"seconds": 3600})),
                         node(hook, "webhook", json!({})), node("end", "end", json!({}))],
               "edges": [edge("wait", hook), edge(hook, "end")]})
    };
    let w = s.published(graph("first"), json!({"type": "manual"})).await;
    let run = s
        .app
        .call(
            post(),
            &s.wf(&w, "/run"),
            &s.token,
            Some(json!({"subject": {"type": "customer", "id": s.customer}})),
        )
        .await;
    run.expect(201);
    assert_eq!(run.body["version"], 1);
    assert_eq!(run.body["started_by"], "manual");
    s.app.drain_jobs().await;

    // Version 2 is published while the run waits.
    s.app
        .call(
            patch(),
            &s.wf(&w, ""),
            &s.token,
            Some(json!({"graph": graph("second")})),
        )
        .await
        .expect(200);
    s.app
        .call(post(), &s.wf(&w, "/publish"), &s.token, None)
        .await
        .expect(200);

    // The server stops (as on SIGTERM) and starts again two hours later.
    let Shop {
        app, token, store, ..
    } = s;
    let later = app.clock_now() + Duration::hours(2);
    let (stopped, dir) = app.stop().await;
    stopped.unwrap();
    let app: TestApp = spawn_app_at(dir, later, |c| c.workers = 0).await;
    app.drain_jobs().await;

    let base = format!("/v1/stores/{store}/workflows/{}", w["id"].as_str().unwrap());
    let runs = app.call(get(), &format!("{base}/runs"), &token, None).await;
    runs.expect(200);
    let first = &runs.body["data"][0];
    assert_eq!(first["id"], run.body["id"]);
    assert_eq!(first["status"], "completed");
    let hit = rx.wait_for(1).await[0].json();
    assert_eq!(
        (&hit["data"]["node_id"], &hit["data"]["version"]),
        (&json!("first"), &json!(1)),
        "the run kept to version 1"
    );

    // A run started now follows version 2.
    let next = app.call(post(), &format!("{base}/run"), &token, None).await;
    next.expect(201);
    assert_eq!(next.body["version"], 2);
    assert!(next.body["subject"].is_null());
    app.drain_jobs().await;
    app.clock.advance(Duration::hours(1));
    app.drain_jobs().await;
    let hits = rx.wait_for(2).await;
    assert_eq!(hits[1].json()["data"]["node_id"], "second");
    let one = app
        .call(
            get(),
            &format!("{base}/runs/{}", next.body["id"].as_str().unwrap()),
            &token,
            None,
        )
        .await;
    one.expect(200);
    assert_eq!(one.body["status"], "completed");
}

#[tokio::test]
async fn a_failing_step_is_retried_with_backoff_then_the_run_fails() {
    let (fake, addr) = start_fake().await;
    let s = shop(Some(addr)).await;
    let graph = json!({"nodes": [node("ask", "send_message", json!({"template": "hello"})),
                                 node("end", "end", json!({}))],
                       "edges": [edge("ask", "end")]});
    let w = s.published(graph, json!({"type": "manual"})).await;
    let subject = json!({"subject": {"type": "customer", "id": s.customer}});

    // The messaging app is down: each attempt waits for the backoff (10 s, doubling).
    fake.answer(StatusCode::SERVICE_UNAVAILABLE);
    let run = s
        .app
        .call(post(), &s.wf(&w, "/run"), &s.token, Some(subject.clone()))
        .await;
    run.expect(201);
    let one = s.wf(&w, &format!("/runs/{}", run.body["id"].as_str().unwrap()));
    s.app.drain_jobs().await;
    assert_eq!(fake.count(), 1);
    let r = s.app.call(get(), &one, &s.token, None).await;
    assert_eq!(r.body["status"], "running", "still retried");
    let unavailable = |r: &crate::support::Reply| {
        r.body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("the messaging app answered 503"))
    };
    assert!(unavailable(&r), "{}", r.body);
    s.app.drain_jobs().await;
    assert_eq!(fake.count(), 1, "no retry before the backoff");
    s.app.clock.advance(Duration::seconds(12));
    s.app.drain_jobs().await;
    assert_eq!(fake.count(), 2);
    for _ in 0..10 {
        s.app.clock.advance(Duration::hours(1));
        s.app.drain_jobs().await;
    }
    assert_eq!(fake.count(), 8, "eight attempts in all");
    let r = s.app.call(get(), &one, &s.token, None).await;
    assert_eq!(
        (&r.body["status"], &r.body["current_node"]),
        (&json!("failed"), &json!("ask"))
    );
    assert!(unavailable(&r), "{}", r.body);
    assert!(r.body["finished_at"].is_string());

    // A refusal cannot be retried away: the run fails at once.
    fake.answer(StatusCode::BAD_REQUEST);
    let run = s
        .app
        .call(post(), &s.wf(&w, "/run"), &s.token, Some(subject.clone()))
        .await;
    s.app.drain_jobs().await;
    assert_eq!(fake.count(), 9);
    let r = s.get_run(&w, &run.body).await;
    assert_eq!(r.body["status"], "failed");
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .starts_with("the messaging app answered 400"),
        "{}",
        r.body
    );

    // No subject, no phone: failed without calling anyone.
    let run = s.app.call(post(), &s.wf(&w, "/run"), &s.token, None).await;
    s.app.drain_jobs().await;
    assert_eq!(fake.count(), 9);
    let r = s.get_run(&w, &run.body).await;
    assert_eq!(
        (&r.body["status"], &r.body["error"]),
        (
            &json!("failed"),
            &json!("the run's customer has no phone number")
        )
    );
}

#[tokio::test]
async fn send_email_goes_from_the_stores_email_channel() {
    let smtp = SmtpReceiver::start().await;
    let url = smtp.url();
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.smtp = Some(merchant_admin::mail::SmtpConfig::parse(&url).unwrap());
    })
    .await;
    let s = Shop::open(app, 10).await;
    let graph = json!({"nodes": [node("mail", "send_email",
                                      json!({"subject": "Obrigado, {{customer.name}}",
                                             "body": "Seu pedido #{{order.number}} chegou."}))],
                       "edges": []});
    let w = s.published(graph, json!({"type": "manual"})).await;
    let order = s.order(1).await;
    let subject = json!({"subject": {"type": "order", "id": order["id"]}});

    // Without an e-mail channel to send from, the run fails and says why.
    let run = s
        .app
        .call(post(), &s.wf(&w, "/run"), &s.token, Some(subject.clone()))
        .await;
    run.expect(201);
    s.app.drain_jobs().await;
    let r = s.get_run(&w, &run.body).await;
    assert_eq!(
        r.body["error"],
        "the store has no enabled e-mail channel to send from"
    );
    s.app
        .call(
            post(),
            &s.path("channels"),
            &s.token,
            Some(json!({"kind": "email", "name": "Loja da Ana",
                        "settings": {"address": "oi@loja.example", "inbound_secret": "s3cret-in"}})),
        )
        .await
        .expect(201);
    s.app
        .call(post(), &s.wf(&w, "/run"), &s.token, Some(subject))
        .await
        .expect(201);
    s.app.drain_jobs().await;
    let mails = smtp.mails();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].rcpt_to, ["ana@example.com"]);
    assert_eq!(mails[0].header("Subject").as_deref(), Some("Obrigado, Ana"));
    assert!(mails[0].header("From").unwrap().contains("oi@loja.example"));
    assert!(
        mails[0]
            .body()
            .contains(&format!("Seu pedido #{} chegou.", order["number"]))
    );
}

#[tokio::test]
async fn manual_runs_need_a_published_workflow_and_a_subject_of_the_store() {
    let s = shop(None).await;
    let graph = json!({"nodes": [node("end", "end", json!({}))], "edges": []});
    let draft = s
        .app
        .call(
            post(),
            &s.path("workflows"),
            &s.token,
            Some(json!({"name": "Draft", "graph": graph})),
        )
        .await;
    draft.expect(201);
    s.app
        .call(post(), &s.wf(&draft.body, "/run"), &s.token, None)
        .await
        .expect_error(409, "conflict");
    let w = s.published(graph, json!({"type": "manual"})).await;

    // Another store's customer, a made-up id, a wrong type, unknown fields: 422, no run.
    let (other_token, _) = s.app.member("other@example.com").await;
    let other_store = s.app.open_store(&other_token, "Other").await;
    let theirs = s
        .app
        .call(
            post(),
            &format!("/v1/stores/{other_store}/customers"),
            &other_token,
            Some(json!({"name": "Bia"})),
        )
        .await;
    theirs.expect(201);
    for bad in [
        json!({"subject": {"type": "customer", "id": theirs.body["id"]}}),
        json!({"subject": {"type": "order", "id": s.customer}}),
        json!({"subject": {"type": "order", "id": "not-an-id"}}),
        json!({"subject": {"type": "customer", "id": "0190a0b0-0000-7000-8000-000000000000"}}),
        json!({"subject": {"type": "product", "id": s.customer}}),
        json!({"subject": {"type": "customer", "id": s.customer}, "extra": 1}),
    ] {
        let r = s
            .app
            .call(post(), &s.wf(&w, "/run"), &s.token, Some(bad.clone()))
            .await;
        assert_eq!(r.status, 422, "{bad}: {}", r.body);
    }
    assert!(s.runs(&w).await.is_empty());

    // Paused: 409. Another store's workflow, or a run of another workflow: 404.
    s.app
        .call(post(), &s.wf(&w, "/pause"), &s.token, None)
        .await
        .expect(200);
    s.app
        .call(post(), &s.wf(&w, "/run"), &s.token, None)
        .await
        .expect_error(409, "conflict");
    s.app
        .call(post(), &s.wf(&w, "/resume"), &s.token, None)
        .await
        .expect(200);
    let run = s.app.call(post(), &s.wf(&w, "/run"), &s.token, None).await;
    run.expect(201);
    let foreign = format!(
        "/v1/stores/{other_store}/workflows/{}/runs",
        w["id"].as_str().unwrap()
    );
    s.app
        .call(get(), &foreign, &other_token, None)
        .await
        .expect_error(404, "not_found");
    s.app
        .call(
            get(),
            &s.wf(
                &draft.body,
                &format!("/runs/{}", run.body["id"].as_str().unwrap()),
            ),
            &s.token,
            None,
        )
        .await
        .expect_error(404, "not_found");
    // The list is a Page with a total.
    let page = s
        .read(&format!(
            "workflows/{}/runs?include_total=true",
            w["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(page["total"], 1);
    assert_eq!(page["data"][0]["id"], run.body["id"]);
}

/// Runs the hourly sweep now (as the scheduler's hourly check would enqueue it).
async fn sweep(app: &TestApp) {
    let now = app.clock_now();
    app.state
        .db
        .write(move |tx| merchant_admin::workflows::runner::ensure_sweep(tx, now))
        .await
        .unwrap();
    app.drain_jobs().await;
}

/// SQL on the test's own database, for what only a crash or a lost job would leave.
async fn exec(app: &TestApp, sql: &'static str) -> usize {
    app.state
        .db
        .write(move |tx| Ok(tx.execute(sql, [])?))
        .await
        .unwrap()
}

#[tokio::test]
async fn pausing_holds_runs_in_flight_and_deleting_ends_them() {
    let s = shop(None).await;
    let rx = Receiver::start().await;
    s.subscribe(&rx, &["workflow.step"]).await;
    let graph = json!({"nodes": [node("wait", "wait", json!({"seconds": 3600})),
                                 node("hook", "webhook", json!({}))],
                       "edges": [edge("wait", "hook")]});
    let w = s.published(graph.clone(), json!({"type": "manual"})).await;
    let run = s.app.call(post(), &s.wf(&w, "/run"), &s.token, None).await;
    run.expect(201);
    let one = s.wf(&w, &format!("/runs/{}", run.body["id"].as_str().unwrap()));
    s.app.drain_jobs().await;

    // Paused while it waits: its time comes and goes, and it holds.
    s.app
        .call(post(), &s.wf(&w, "/pause"), &s.token, None)
        .await
        .expect(200);
    s.app.clock.advance(Duration::hours(2));
    s.app.drain_jobs().await;
    let r = s.app.call(get(), &one, &s.token, None).await;
    assert_eq!(
        (&r.body["status"], &r.body["current_node"]),
        (&json!("waiting"), &json!("wait"))
    );
    sweep(&s.app).await; // a held run is not a lost one
    assert_eq!(
        s.app.call(get(), &one, &s.token, None).await.body["status"],
        "waiting"
    );
    rx.expect_no_more_than(&s.app, 0).await;

    // Resumed: it goes on at its next look (every 10 minutes).
    s.app
        .call(post(), &s.wf(&w, "/resume"), &s.token, None)
        .await
        .expect(200);
    s.app.clock.advance(Duration::minutes(10));
    s.app.drain_jobs().await;
    assert_eq!(
        s.app.call(get(), &one, &s.token, None).await.body["status"],
        "completed"
    );
    rx.wait_for(1).await;

    // Deleting a workflow ends its runs in flight: they are gone, and their jobs do nothing.
    let w2 = s.published(graph, json!({"type": "manual"})).await;
    s.app
        .call(post(), &s.wf(&w2, "/run"), &s.token, None)
        .await
        .expect(201);
    s.app.drain_jobs().await;
    s.app
        .call(reqwest::Method::DELETE, &s.wf(&w2, ""), &s.token, None)
        .await
        .expect(204);
    s.app.clock.advance(Duration::hours(2));
    s.app.drain_jobs().await;
    assert_eq!(s.app.count("SELECT COUNT(*) FROM workflow_runs").await, 1);
    rx.expect_no_more_than(&s.app, 1).await;
}

#[tokio::test]
async fn a_step_that_runs_again_does_nothing_twice_and_lost_steps_fail_their_run() {
    let (fake, addr) = start_fake().await;
    let s = shop(Some(addr)).await;
    let graph = json!({"nodes": [node("ask", "send_message", json!({"template": "hello"})),
                                 node("end", "end", json!({}))],
                       "edges": [edge("ask", "end")]});
    let w = s.published(graph, json!({"type": "manual"})).await;
    let subject = json!({"subject": {"type": "customer", "id": s.customer}});
    let run = s
        .app
        .call(post(), &s.wf(&w, "/run"), &s.token, Some(subject.clone()))
        .await;
    let run_id: merchant_admin::ids::WorkflowRunId =
        run.body["id"].as_str().unwrap().parse().unwrap();
    s.app.drain_jobs().await;
    assert_eq!(fake.count(), 1);

    // The same step's job again (as after a crash between its commit and its job's end):
    // the run has moved on, so nothing is sent again.
    let now = s.app.clock_now();
    s.app
        .state
        .db
        .write(move |tx| {
            let again = merchant_admin::workflows::runner::WorkflowStep {
                run_id,
                node_id: "ask".into(),
                waited: false,
            };
            merchant_admin::jobs::enqueue(tx, &again, now).map(|_| ())
        })
        .await
        .unwrap();
    assert_eq!(s.app.drain_jobs().await, 1);
    assert_eq!(fake.count(), 1);

    // A step whose last attempt died with the server (its job is dead, never handled): the
    // hourly sweep fails the run instead of leaving it running.
    fake.answer(StatusCode::SERVICE_UNAVAILABLE);
    let lost = s
        .app
        .call(post(), &s.wf(&w, "/run"), &s.token, Some(subject))
        .await;
    s.app.drain_jobs().await;
    exec(
        &s.app,
        "UPDATE jobs SET state = 'dead' WHERE kind = 'workflow_step' AND state = 'queued'",
    )
    .await;
    let path = s.wf(&w, &format!("/runs/{}", lost.body["id"].as_str().unwrap()));
    assert_eq!(
        s.app.call(get(), &path, &s.token, None).await.body["status"],
        "running"
    );
    sweep(&s.app).await;
    let r = s.app.call(get(), &path, &s.token, None).await;
    assert_eq!(r.body["status"], "failed");
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .contains("the step's job stopped for good"),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn the_sweep_rearms_a_schedule_whose_fire_was_lost() {
    let s = shop(None).await;
    let graph = json!({"nodes": [node("end", "end", json!({}))], "edges": []});
    let w = s
        .published(graph, json!({"type": "schedule", "every_seconds": 3600}))
        .await;
    assert_eq!(
        exec(&s.app, "DELETE FROM jobs WHERE kind = 'workflow_fire'").await,
        1
    );
    s.app.clock.advance(Duration::hours(2));
    s.app.drain_jobs().await;
    assert!(s.runs(&w).await.is_empty(), "no fire job, no run");
    sweep(&s.app).await;
    let runs = s.runs(&w).await;
    assert_eq!(runs.len(), 1, "the missed fire runs once when re-armed");
    let now = s
        .read(&format!("workflows/{}", w["id"].as_str().unwrap()))
        .await;
    assert_eq!(now["next_fire_at"], "2026-11-02T15:00:00.000000Z");
}

#[tokio::test]
async fn a_customer_event_runs_about_the_customer_and_a_run_has_a_step_cap() {
    let s = shop(None).await;
    let graph = json!({"nodes": [node("tag", "tag_customer", json!({"tag": "new"}))], "edges": []});
    let w = s
        .published(
            graph,
            json!({"type": "event", "event": "customers.created"}),
        )
        .await;
    let c = s
        .app
        .call(
            post(),
            &s.path("customers"),
            &s.token,
            Some(json!({"name": "Bia"})),
        )
        .await;
    c.expect(201);
    s.app.drain_jobs().await;
    let runs = s.runs(&w).await;
    assert_eq!(
        runs[0]["subject"],
        json!({"type": "customer", "id": c.body["id"]})
    );
    assert_eq!(runs[0]["status"], "completed");
    let bia = s
        .read(&format!("customers/{}", c.body["id"].as_str().unwrap()))
        .await;
    assert_eq!(bia["tags"], json!(["new"]));

    // A loop paced by an hour runs until the cap: 1000 steps, then the run fails.
    let looped = json!({"nodes": [node("start", "webhook", json!({})),
                                  node("pause", "wait", json!({"seconds": 3600})),
                                  node("hook", "webhook", json!({}))],
                        "edges": [edge("start", "pause"), edge("pause", "hook"),
                                  edge("hook", "pause")]});
    let l = s.published(looped, json!({"type": "manual"})).await;
    let run = s.app.call(post(), &s.wf(&l, "/run"), &s.token, None).await;
    let path = s.wf(&l, &format!("/runs/{}", run.body["id"].as_str().unwrap()));
    s.app.drain_jobs().await;
    s.app.clock.advance(Duration::hours(1));
    s.app.drain_jobs().await;
    // The rest of the way to the cap is written in, not waited through.
    assert_eq!(
        exec(
            &s.app,
            "UPDATE workflow_runs SET steps = 998 WHERE status = 'waiting'"
        )
        .await,
        1
    );
    s.app.clock.advance(Duration::hours(1));
    s.app.drain_jobs().await;
    let r = s.app.call(get(), &path, &s.token, None).await;
    assert_eq!(r.body["status"], "failed", "{}", r.body);
    assert_eq!(r.body["error"], "the run took 1000 steps without ending");
}

#[tokio::test]
async fn a_store_has_at_most_fifty_event_workflows() {
    let s = shop(None).await;
    let graph = json!({"nodes": [node("end", "end", json!({}))], "edges": []});
    let trigger = json!({"type": "event", "event": "orders.created"});
    for _ in 0..50 {
        s.published(graph.clone(), trigger.clone()).await;
    }
    let r = s
        .app
        .call(
            post(),
            &s.path("workflows"),
            &s.token,
            Some(json!({"name": "One more", "graph": graph, "trigger": trigger})),
        )
        .await;
    r.expect(201);
    let p = s
        .app
        .call(post(), &s.wf(&r.body, "/publish"), &s.token, None)
        .await;
    p.expect_error(422, "workflow_invalid");
    assert!(
        p.body["details"]["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("at most 50")
    );
    // One order starts the fifty, in its own transaction.
    s.order(1).await;
    assert_eq!(s.app.count("SELECT COUNT(*) FROM workflow_runs").await, 50);
}
