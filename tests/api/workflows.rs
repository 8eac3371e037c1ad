//! Workflows (issue 18; spec 2.10, 4.7): the drafts, their validation, publishing, versions
//! and restore. Running them is the runner's, not tested here.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, get, patch, post, spawn_app, spawn_app_with};

/// wait 7 days -> send a template -> end.
fn journey() -> Value {
    json!({
        "nodes": [
            {"id": "wait", "type": "wait", "config": {"seconds": 604_800}, "position": {"x": 0, "y": 0}},
            {"id": "ask", "type": "send_message",
             "config": {"template": "review_request", "language": "pt_BR", "parameters": ["{{customer.name}}"]},
             "position": {"x": 0, "y": 100}},
            {"id": "end", "type": "end", "config": {}, "position": {"x": 0, "y": 200}}
        ],
        "edges": [{"from": "wait", "to": "ask"}, {"from": "ask", "to": "end"}]
    })
}

fn one_node(kind: &str) -> Value {
    json!({"nodes": [{"id": "only", "type": kind, "config": {}, "position": {"x": 0, "y": 0}}], "edges": []})
}

struct Shop {
    app: TestApp,
    token: String,
    base: String,
}

async fn shop_on(app: TestApp) -> Shop {
    let (token, _) = app.member("owner@example.com").await;
    let store = app.open_store(&token, "Org").await;
    let base = format!("/v1/stores/{store}/workflows");
    Shop { app, token, base }
}

impl Shop {
    async fn call(&self, m: Method, path: &str, body: Option<Value>) -> crate::support::Reply {
        self.app.call(m, path, &self.token, body).await
    }

    async fn create(&self, body: Value) -> Value {
        let r = self.call(post(), &self.base, Some(body)).await;
        r.expect(201);
        r.body.clone()
    }

    fn path(&self, w: &Value, rest: &str) -> String {
        format!("{}/{}{rest}", self.base, w["id"].as_str().unwrap())
    }

    /// The problems of a `workflow_invalid` answer to saving `graph` (and `trigger`).
    async fn problems(&self, graph: Value, trigger: Option<Value>) -> Vec<Value> {
        let mut body = json!({"name": "W", "graph": graph});
        if let Some(t) = trigger {
            body["trigger"] = t;
        }
        let r = self.call(post(), &self.base, Some(body)).await;
        r.expect_error(422, "workflow_invalid");
        r.body["details"]["problems"].as_array().unwrap().clone()
    }
}

#[tokio::test]
async fn a_workflow_is_created_listed_saved_and_deleted() {
    let s = shop_on(spawn_app().await).await;
    let w = s
        .create(json!({"name": " Review request ", "description": "After delivery", "graph": journey()}))
        .await;
    // Every field of 2.10.
    let keys = [
        "id",
        "store_id",
        "created_by",
        "name",
        "description",
        "kind",
        "status",
        "version",
        "graph",
        "trigger",
        "published_graph",
        "published_trigger",
        "published_at",
        "last_run_at",
        "next_fire_at",
        "created_at",
        "updated_at",
    ];
    let mut got: Vec<&str> = w.as_object().unwrap().keys().map(String::as_str).collect();
    got.sort_unstable();
    let mut want = keys.to_vec();
    want.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(w["name"], "Review request");
    assert_eq!(
        (w["kind"].as_str(), w["status"].as_str()),
        (Some("journey"), Some("draft"))
    );
    assert_eq!(w["version"], 0);
    assert_eq!(w["trigger"], json!({"type": "manual"}));
    assert_eq!(
        w["graph"]["nodes"][1]["config"]["template"],
        "review_request"
    );
    assert_eq!(
        w["graph"]["edges"][0],
        json!({"from": "wait", "to": "ask", "branch": null})
    );
    for k in [
        "published_graph",
        "published_trigger",
        "published_at",
        "last_run_at",
        "next_fire_at",
    ] {
        assert!(w[k].is_null(), "{k}");
    }

    s.app.clock.advance(chrono::Duration::seconds(1));
    let second = s
        .create(json!({"name": "Second", "graph": one_node("webhook")}))
        .await;
    let list = s
        .call(
            get(),
            &format!("{}?limit=1&include_total=true", s.base),
            None,
        )
        .await;
    list.expect(200);
    assert_eq!(list.body["total"], 2);
    assert_eq!(list.body["data"][0]["id"], second["id"]);
    let cursor = list.body["next_cursor"].as_str().unwrap();
    let next = s
        .call(get(), &format!("{}?limit=1&cursor={cursor}", s.base), None)
        .await;
    next.expect(200);
    assert_eq!(next.body["data"][0]["id"], w["id"]);
    assert_eq!(next.body["has_more"], false);

    let one = s.call(get(), &s.path(&w, ""), None).await;
    one.expect(200);
    assert_eq!(one.body, w);

    // PATCH saves the draft; a partial patch keeps the rest.
    let saved = s
        .call(patch(), &s.path(&w, ""), Some(json!({"name": "Renamed", "trigger": {"type": "event", "event": "orders.delivered"}})))
        .await;
    saved.expect(200);
    assert_eq!(saved.body["name"], "Renamed");
    assert_eq!(saved.body["graph"], w["graph"]);
    assert_eq!(
        saved.body["trigger"],
        json!({"type": "event", "event": "orders.delivered"})
    );
    // A wrong JSON shape outside `config` is the API's usual 422.
    s.call(
        patch(),
        &s.path(&w, ""),
        Some(json!({"graph": {"nodes": 3}})),
    )
    .await
    .expect_error(422, "validation_failed");
    s.call(patch(), &s.path(&w, ""), Some(json!({"name": ""})))
        .await
        .expect_error(422, "validation_failed");

    s.call(Method::DELETE, &s.path(&w, ""), None)
        .await
        .expect(204);
    s.call(get(), &s.path(&w, ""), None)
        .await
        .expect_error(404, "not_found");
    s.call(Method::DELETE, &s.path(&w, ""), None)
        .await
        .expect_error(404, "not_found");
    s.call(patch(), &s.path(&w, ""), Some(json!({"name": "x"})))
        .await
        .expect_error(404, "not_found");
    s.call(get(), &format!("{}/not-a-uuid", s.base), None)
        .await
        .expect_error(404, "not_found");

    let audit = s
        .call(get(), &s.base.replace("/workflows", "/audit-log"), None)
        .await;
    audit.expect(200);
    let actions: Vec<&str> = audit.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .filter(|a| a.starts_with("workflow."))
        .collect();
    assert_eq!(
        actions,
        [
            "workflow.deleted",
            "workflow.updated",
            "workflow.created",
            "workflow.created"
        ]
    );
}

#[tokio::test]
async fn each_validation_problem_is_listed_and_nothing_is_saved() {
    let s = shop_on(spawn_app().await).await;
    let node =
        |id: &str, kind: &str, config: Value| json!({"id": id, "type": kind, "config": config});
    let msg = |p: &Vec<Value>| -> Vec<String> {
        p.iter()
            .map(|x| x["message"].as_str().unwrap().to_owned())
            .collect()
    };

    // Unknown node type; missing config; a config of the wrong shape (named on its node,
    // not a 400); an invalid value.
    let p = s
        .problems(
            json!({"nodes": [
                node("a", "wait", json!({"seconds": 60})),
                node("b", "teleport", json!({})),
                {"id": "c", "type": "tag_customer"},
                node("d", "condition", json!("not an object")),
                node("e", "tag_customer", json!({"tag": ""})),
                node("f", "end", json!({}))
            ], "edges": [
                {"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "d"},
                {"from": "d", "to": "e", "branch": "true"}, {"from": "d", "to": "f", "branch": "false"},
                {"from": "e", "to": "f"}
            ]}),
            None,
        )
        .await;
    let on = |id: &str| -> Vec<String> {
        p.iter()
            .filter(|x| x["node_id"] == id)
            .map(|x| x["message"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(
        on("b")[0].contains("unknown node type \"teleport\""),
        "{p:?}"
    );
    assert!(on("c")[0].contains("needs a config"), "{p:?}");
    assert!(on("d")[0].starts_with("config:"), "{p:?}");
    assert!(on("e")[0].contains("config.tag"), "{p:?}");
    assert_eq!(p.len(), 4, "{p:?}");

    // An edge to a missing node (named by its index); a node unreachable from the start; a
    // condition without both branches.
    let p = s
        .problems(
            json!({"nodes": [
                node("start", "condition", json!({"field": "order.total_cents", "op": "gt", "value": 100})),
                node("yes", "end", json!({})),
                node("island", "wait", json!({"seconds": 5})),
                node("lost", "webhook", json!({}))
            ], "edges": [
                {"from": "start", "to": "yes", "branch": "true"},
                {"from": "start", "to": "nowhere", "branch": "false"},
                {"from": "island", "to": "lost"},
                {"from": "lost", "to": "island"}
            ]}),
            None,
        )
        .await;
    assert!(
        p.iter().any(|x| x["edge"] == 1
            && x["message"]
                .as_str()
                .unwrap()
                .contains("missing node \"nowhere\"")),
        "{p:?}"
    );
    assert!(
        p.iter().any(|x| x["node_id"] == "start"
            && x["message"]
                .as_str()
                .unwrap()
                .contains("the false branch is missing")),
        "{p:?}"
    );
    for id in ["island", "lost"] {
        assert!(
            p.iter()
                .any(|x| x["node_id"] == id
                    && x["message"].as_str().unwrap().contains("unreachable")),
            "{p:?}"
        );
    }
    // island <-> lost loops through a wait, so that cycle is allowed, but a 5-second wait
    // cannot pace a loop.
    assert!(!msg(&p).iter().any(|m| m.contains("cycle")), "{p:?}");
    assert!(
        p.iter().any(|x| x["node_id"] == "island"
            && x["message"]
                .as_str()
                .unwrap()
                .starts_with("a wait on a loop needs config.seconds of at least 3600")),
        "{p:?}"
    );
    // A loop paced by an hour's wait is fine; by a wait `until` a time, not.
    let looped = |wait: Value| {
        json!({"nodes": [
            node("s", "webhook", json!({})),
            node("pause", "wait", wait),
            node("again", "condition", json!({"field": "order.status", "op": "eq", "value": "pending"})),
            node("e", "end", json!({}))
        ], "edges": [
            {"from": "s", "to": "pause"}, {"from": "pause", "to": "again"},
            {"from": "again", "to": "pause", "branch": "true"}, {"from": "again", "to": "e", "branch": "false"}
        ]})
    };
    let ok = s
        .create(json!({"name": "Reminder", "graph": looped(json!({"seconds": 3600}))}))
        .await;
    s.call(reqwest::Method::DELETE, &s.path(&ok, ""), None)
        .await
        .expect(204);
    let p = s
        .problems(looped(json!({"until": "2027-01-01T00:00:00Z"})), None)
        .await;
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0]["node_id"], "pause");

    // A cycle without a wait.
    let p = s
        .problems(
            json!({"nodes": [
                node("s", "webhook", json!({})),
                node("a", "tag_customer", json!({"tag": "vip"})),
                node("b", "condition", json!({"field": "customer.tags", "op": "contains", "value": "vip"})),
                node("e", "end", json!({}))
            ], "edges": [
                {"from": "s", "to": "a"}, {"from": "a", "to": "b"},
                {"from": "b", "to": "a", "branch": "true"}, {"from": "b", "to": "e", "branch": "false"}
            ]}),
            None,
        )
        .await;
    assert_eq!(msg(&p), ["a cycle without a wait: a -> b"], "{p:?}");
    assert_eq!(p[0]["node_id"], "a");

    // Duplicate ids; no start (every node has an edge in); more than one start.
    let p = s
        .problems(
            json!({"nodes": [node("x", "end", json!({})), node("x", "end", json!({}))], "edges": []}),
            None,
        )
        .await;
    assert!(msg(&p).contains(&"duplicate node id".to_owned()), "{p:?}");
    let p = s
        .problems(
            json!({"nodes": [node("a", "wait", json!({"seconds": 1})), node("b", "wait", json!({"seconds": 1}))],
                   "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]}),
            None,
        )
        .await;
    assert!(
        msg(&p).iter().any(|m| m.starts_with("no start node")),
        "{p:?}"
    );
    let p = s
        .problems(
            json!({"nodes": [node("a", "end", json!({})), node("b", "end", json!({}))], "edges": []}),
            None,
        )
        .await;
    assert!(
        msg(&p)
            .iter()
            .any(|m| m.starts_with("more than one start node (a, b)")),
        "{p:?}"
    );

    // More than 200 nodes.
    let many: Vec<Value> = (0..201)
        .map(|i| node(&format!("n{i}"), "end", json!({})))
        .collect();
    let p = s.problems(json!({"nodes": many, "edges": []}), None).await;
    assert_eq!(msg(&p), ["at most 200 nodes"]);

    // send_email without an SMTP sender; a bad wait and a bad template.
    let p = s
        .problems(
            json!({"nodes": [
                node("w", "wait", json!({"seconds": 5, "until": "2027-01-01T00:00:00Z"})),
                node("m", "send_message", json!({"template": "Not A Name"})),
                node("e", "send_email", json!({"subject": "Hi", "body": "Thanks"}))
            ], "edges": [{"from": "w", "to": "m"}, {"from": "m", "to": "e"}]}),
            None,
        )
        .await;
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(msg(&p)[0].contains("exactly one of seconds or until"));
    assert!(msg(&p)[1].contains("config.template"));
    assert!(msg(&p)[2].contains("e-mail sending is not available"));

    // Triggers: a wrong shape, a bad cron, an event outside the store catalog, a bad filter.
    for (trigger, want) in [
        (
            json!({"type": "sometimes"}),
            "trigger.type: unknown variant",
        ),
        (
            json!({"type": "schedule", "cron": "* * * *"}),
            "trigger.cron: must have 5 fields",
        ),
        (
            json!({"type": "schedule", "cron": "61 * * * *"}),
            "trigger.cron:",
        ),
        (
            json!({"type": "schedule", "cron": "0 9 * * 1", "every_seconds": 3600}),
            "exactly one of cron or every_seconds",
        ),
        (
            json!({"type": "schedule", "every_seconds": 5}),
            "trigger.every_seconds must be",
        ),
        (
            json!({"type": "event", "event": "user.created"}),
            "not a store event",
        ),
        (
            json!({"type": "event", "event": "workflow.step"}),
            "not a store event",
        ),
        (
            json!({"type": "event", "event": "orders.paid", "filter": {"field": "total_cents", "op": "gt", "value": "x"}}),
            "value must be a number",
        ),
    ] {
        let p = s.problems(one_node("end"), Some(trigger.clone())).await;
        assert_eq!(p.len(), 1, "{trigger}: {p:?}");
        assert!(
            p[0]["message"].as_str().unwrap().contains(want),
            "{trigger}: {p:?}"
        );
    }

    // Graph and trigger problems are listed together; nothing was saved by any of these.
    let p = s
        .problems(
            one_node("teleport"),
            Some(json!({"type": "event", "event": "nope"})),
        )
        .await;
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!(s.app.count("SELECT COUNT(*) FROM workflows").await, 0);

    // A PATCH that would break a saved draft is refused and leaves it as it was.
    let w = s.create(json!({"name": "Ok", "graph": journey()})).await;
    let path = s.path(&w, "");
    let r = s
        .call(
            patch(),
            &path,
            Some(json!({"name": "Broken", "graph": one_node("teleport")})),
        )
        .await;
    r.expect_error(422, "workflow_invalid");
    assert_eq!(r.body["details"]["problems"][0]["node_id"], "only");
    let same = s.call(get(), &path, None).await;
    assert_eq!(same.body, w);
}

/// JSON Schema's `integer` admits `60.0`, and the contract check generates integers that way:
/// a node's config and the trigger, kept as raw JSON and read later, take such a number as
/// the integer it is (the body extractor's rule); a real fraction is still refused.
#[tokio::test]
async fn a_whole_number_written_with_a_fraction_is_an_integer_in_a_graph_and_a_trigger() {
    let s = shop_on(spawn_app().await).await;
    let graph = |seconds: Value| {
        json!({"nodes": [
            {"id": "wait", "type": "wait", "config": {"seconds": seconds}},
            {"id": "end", "type": "end", "config": {}}
        ], "edges": [{"from": "wait", "to": "end"}]})
    };
    let w = s
        .create(json!({"name": "Whole", "graph": graph(json!(60.0)),
                       "trigger": {"type": "schedule", "every_seconds": 3600.0}}))
        .await;
    assert_eq!(w["trigger"]["every_seconds"], json!(3600), "{w}");
    // Stored as read: the integer the schema says, for every later reader of the graph.
    assert_eq!(
        w["graph"]["nodes"][0]["config"]["seconds"],
        json!(60),
        "{w}"
    );
    let saved = s
        .call(
            reqwest::Method::PATCH,
            &s.path(&w, ""),
            Some(json!({"graph": graph(json!(120.0))})),
        )
        .await;
    saved.expect(200);
    assert_eq!(
        saved.body["graph"]["nodes"][0]["config"]["seconds"],
        json!(120),
        "{}",
        saved.body
    );
    let p = s.problems(graph(json!(60.5)), None).await;
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0]["node_id"], "wait", "{p:?}");
    let p = s
        .problems(
            graph(json!(60)),
            Some(json!({"type": "schedule", "every_seconds": 3600.5})),
        )
        .await;
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0]["message"].as_str().unwrap().starts_with("trigger: "),
        "{p:?}"
    );
    assert!(
        p[0]["message"].as_str().unwrap().contains("3600.5"),
        "{p:?}"
    );
}

#[tokio::test]
async fn send_email_is_accepted_when_the_server_has_an_smtp_sender() {
    let app = spawn_app_with(|c| {
        c.smtp = Some(merchant_admin::mail::SmtpConfig::parse("smtp://127.0.0.1:9").unwrap());
    })
    .await;
    let s = shop_on(app).await;
    let graph = json!({"nodes": [{"id": "e", "type": "send_email", "config": {"subject": "Hi", "body": "Thanks"}}]});
    let w = s.create(json!({"name": "Mail", "graph": graph})).await;
    assert_eq!(w["graph"]["nodes"][0]["config"]["subject"], "Hi");
    let bad = json!({"nodes": [{"id": "e", "type": "send_email", "config": {"subject": ""}}]});
    let p = s.problems(bad, None).await;
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0]["message"]
            .as_str()
            .unwrap()
            .contains("missing field `body`"),
        "{p:?}"
    );
}

#[tokio::test]
async fn publishing_keeps_every_version_and_restore_changes_only_the_draft() {
    let s = shop_on(spawn_app().await).await;
    let w = s
        .create(json!({"name": "Journey", "graph": journey()}))
        .await;
    let (publish, versions) = (s.path(&w, "/publish"), s.path(&w, "/versions"));

    // Pause and resume do not apply to a draft.
    s.call(post(), &s.path(&w, "/pause"), None)
        .await
        .expect_error(409, "conflict");
    s.call(post(), &s.path(&w, "/resume"), None)
        .await
        .expect_error(409, "conflict");

    let v1 = s.call(post(), &publish, None).await;
    v1.expect(200);
    assert_eq!(
        (v1.body["status"].as_str(), v1.body["version"].as_i64()),
        (Some("published"), Some(1))
    );
    assert_eq!(v1.body["published_graph"], w["graph"]);
    assert_eq!(v1.body["published_trigger"], json!({"type": "manual"}));
    assert_eq!(v1.body["published_at"], v1.body["updated_at"]);
    assert!(
        v1.body["next_fire_at"].is_null(),
        "a manual trigger has no fire time"
    );

    // Saving the draft leaves the live copy alone; publishing again makes version 2.
    s.app.clock.advance(chrono::Duration::minutes(5));
    let second = one_node("webhook");
    let saved = s
        .call(patch(), &s.path(&w, ""), Some(json!({"graph": second})))
        .await;
    saved.expect(200);
    assert_eq!(saved.body["published_graph"], w["graph"]);
    assert_eq!(saved.body["version"], 1);
    let v2 = s.call(post(), &publish, None).await;
    v2.expect(200);
    assert_eq!(v2.body["version"], 2);
    assert_eq!(v2.body["published_graph"]["nodes"][0]["type"], "webhook");

    let list = s.call(get(), &versions, None).await;
    list.expect(200);
    let rows = list.body["data"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["version"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [2, 1]
    );
    assert_eq!(rows[1]["published_at"], v1.body["published_at"]);
    assert_eq!(rows[1]["published_by"], w["created_by"]);
    assert_eq!(rows[0].as_object().unwrap().len(), 3);
    let paged = s.call(get(), &format!("{versions}?limit=1"), None).await;
    let cursor = paged.body["next_cursor"].as_str().unwrap();
    let rest = s
        .call(get(), &format!("{versions}?limit=1&cursor={cursor}"), None)
        .await;
    assert_eq!(rest.body["data"][0]["version"], 1);

    let one = s.call(get(), &format!("{versions}/1"), None).await;
    one.expect(200);
    assert_eq!(one.body["graph"], w["graph"]);
    assert_eq!(one.body["trigger"], json!({"type": "manual"}));
    s.call(get(), &format!("{versions}/3"), None)
        .await
        .expect_error(404, "not_found");
    for bad in ["one", "1.5", "2147483648"] {
        let r = s.call(get(), &format!("{versions}/{bad}"), None).await;
        r.expect_error(422, "validation_failed");
        assert!(r.body["details"]["fields"]["version"].is_string());
        s.call(post(), &format!("{versions}/{bad}/restore"), None)
            .await
            .expect_error(422, "validation_failed");
    }

    // Restore copies version 1 into the draft; the live copy stays version 2 until publish.
    s.app.clock.advance(chrono::Duration::minutes(5));
    let restored = s.call(post(), &format!("{versions}/1/restore"), None).await;
    restored.expect(200);
    assert_eq!(restored.body["graph"], w["graph"]);
    assert_eq!(restored.body["version"], 2);
    assert_eq!(restored.body["published_graph"], v2.body["published_graph"]);
    assert_eq!(restored.body["status"], "published");
    s.call(post(), &format!("{versions}/9/restore"), None)
        .await
        .expect_error(404, "not_found");
    let v3 = s.call(post(), &publish, None).await;
    v3.expect(200);
    assert_eq!(
        (v3.body["version"].as_i64(), &v3.body["published_graph"]),
        (Some(3), &w["graph"])
    );

    // Versions are immutable: the stored rows refuse changes, and version 2 reads as it was.
    let err = s
        .app
        .state
        .db
        .write(|tx| Ok(tx.execute("UPDATE workflow_versions SET graph = '{}'", [])?))
        .await;
    assert!(err.is_err());
    let two = s.call(get(), &format!("{versions}/2"), None).await;
    assert_eq!(two.body["graph"]["nodes"][0]["type"], "webhook");

    // Pause and resume.
    let paused = s.call(post(), &s.path(&w, "/pause"), None).await;
    paused.expect(200);
    assert_eq!(paused.body["status"], "paused");
    s.call(post(), &s.path(&w, "/pause"), None)
        .await
        .expect_error(409, "conflict");
    let resumed = s.call(post(), &s.path(&w, "/resume"), None).await;
    resumed.expect(200);
    assert_eq!(resumed.body["status"], "published");
    s.call(post(), &s.path(&w, "/resume"), None)
        .await
        .expect_error(409, "conflict");

    let audit = s
        .call(get(), &s.base.replace("/workflows", "/audit-log"), None)
        .await;
    let actions: Vec<&str> = audit.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    for a in [
        "workflow.published",
        "workflow.restored",
        "workflow.paused",
        "workflow.resumed",
    ] {
        assert!(actions.contains(&a), "{a}: {actions:?}");
    }

    // Deleting takes its versions with it.
    s.call(Method::DELETE, &s.path(&w, ""), None)
        .await
        .expect(204);
    assert_eq!(
        s.app.count("SELECT COUNT(*) FROM workflow_versions").await,
        0
    );
    s.call(get(), &versions, None)
        .await
        .expect_error(404, "not_found");
    s.call(post(), &publish, None)
        .await
        .expect_error(404, "not_found");
    s.call(post(), &s.path(&w, "/pause"), None)
        .await
        .expect_error(404, "not_found");
    s.call(post(), &format!("{versions}/1/restore"), None)
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn a_schedule_sets_next_fire_at_on_the_test_clock_while_published() {
    let mut s = shop_on(spawn_app().await).await;
    // A store token outlives the session over the weeks the clock moves.
    let store = s.base.split('/').nth(3).unwrap().to_owned();
    s.token = s
        .app
        .store_token(
            &s.token,
            &store,
            json!(["workflows.read", "workflows.write"]),
        )
        .await;
    // The clock starts at Monday 2026-11-02 12:00 UTC.
    let w = s
        .create(json!({"name": "Weekly", "graph": one_node("webhook"),
                       "trigger": {"type": "schedule", "cron": "0  9 * * 1", "timezone": "Mars/Base"}}))
        .await;
    // The store's zone replaces what was sent; the draft does not fire.
    assert_eq!(
        w["trigger"],
        json!({"type": "schedule", "cron": "0 9 * * 1", "timezone": "America/Sao_Paulo"})
    );
    assert!(w["next_fire_at"].is_null());
    let p = s.call(post(), &s.path(&w, "/publish"), None).await;
    p.expect(200);
    assert_eq!(
        p.body["next_fire_at"], "2026-11-09T12:00:00.000000Z",
        "9:00 in São Paulo"
    );

    // Paused: no fire time. Resumed two weeks later: the next one after then.
    s.call(post(), &s.path(&w, "/pause"), None)
        .await
        .expect(200);
    let paused = s.call(get(), &s.path(&w, ""), None).await;
    assert!(paused.body["next_fire_at"].is_null());
    s.app.clock.advance(chrono::Duration::days(14));
    let r = s.call(post(), &s.path(&w, "/resume"), None).await;
    r.expect(200);
    assert_eq!(r.body["next_fire_at"], "2026-11-23T12:00:00.000000Z");

    // every_seconds counts from the publish.
    let e = s
        .create(json!({"name": "Hourly", "graph": one_node("webhook"),
                       "trigger": {"type": "schedule", "every_seconds": 3600}}))
        .await;
    let p = s.call(post(), &s.path(&e, "/publish"), None).await;
    assert_eq!(p.body["next_fire_at"], "2026-11-16T13:00:00.000000Z");
}

#[tokio::test]
async fn another_stores_workflow_is_not_found_and_reads_need_the_permission() {
    let app = spawn_app().await;
    let s = shop_on(app).await;
    let w = s.create(json!({"name": "Mine", "graph": journey()})).await;
    s.call(post(), &s.path(&w, "/publish"), None)
        .await
        .expect(200);
    let (other, _) = s.app.member("other@example.com").await;
    let theirs = s.app.open_store(&other, "Theirs").await;
    let foreign = format!(
        "/v1/stores/{theirs}/workflows/{}",
        w["id"].as_str().unwrap()
    );
    for (m, rest) in [
        (get(), ""),
        (patch(), ""),
        (Method::DELETE, ""),
        (post(), "/publish"),
        (post(), "/pause"),
        (get(), "/versions"),
        (get(), "/versions/1"),
        (post(), "/versions/1/restore"),
    ] {
        let body = (m == patch()).then(|| json!({"name": "x"}));
        s.app
            .call(m.clone(), &format!("{foreign}{rest}"), &other, body)
            .await
            .expect_error(404, "not_found");
    }
    let list = s
        .app
        .call(
            get(),
            &format!("/v1/stores/{theirs}/workflows"),
            &other,
            None,
        )
        .await;
    assert_eq!(list.body["data"], json!([]));
    // Still there, unchanged, for its own store.
    let mine = s.call(get(), &s.path(&w, ""), None).await;
    assert_eq!(mine.body["status"], "published");
}
