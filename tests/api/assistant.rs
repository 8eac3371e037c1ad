//! The assistant (issue 16; spec 3, 4.3, 6.5, 7, 8) against a fake model that streams
//! scripted answers over real HTTP: turns, read tools, proposals, approval and undo, stop,
//! provider failures, the cap, and who may see and decide what.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::model::{FakeModel, Part, call, event, names, said, text};
use crate::support::{Shop, get, patch, post, spawn_app, spawn_app_with};

async fn shop_with(model: &FakeModel) -> Shop {
    let base = model.base.clone();
    let app = spawn_app_with(move |c| {
        c.assistant = Some(merchant_admin::assistant::provider::ModelConfig::new(
            &base,
            "fake-model",
        ));
    })
    .await;
    Shop::open(app, 10).await
}

/// The id of the turn's first proposal.
fn proposal_id(events: &[(String, Value)]) -> String {
    event(events, "proposal")["proposal_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The id of the turn's conversation.
fn conversation_id(events: &[(String, Value)]) -> String {
    event(events, "conversation")["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

impl Shop {
    async fn chat(&self, body: Value) -> Vec<(String, Value)> {
        match self
            .app
            .stream(&self.path("assistant/chat"), &self.token, Some(body))
            .await
        {
            Ok(events) => events.rest().await,
            Err(r) => panic!("no stream: {} {}", r.status, r.text),
        }
    }

    /// POSTs a streaming assistant route under the store (an approval, a decline): its
    /// events to the end, or the refusal.
    async fn streamed(&self, rest: &str) -> Result<Vec<(String, Value)>, crate::support::Reply> {
        match self.app.stream(&self.path(rest), &self.token, None).await {
            Ok(events) => Ok(events.rest().await),
            Err(refused) => Err(refused),
        }
    }

    /// `POST .../assistant/actions/{action}/undo` as the owner.
    async fn undo(&self, action: &str) -> crate::support::Reply {
        let path = self.path(&format!("assistant/actions/{action}/undo"));
        self.app.call(post(), &path, &self.token, None).await
    }

    async fn price(&self, i: usize) -> i64 {
        let p = self.read("products?limit=1").await;
        p["data"][0]["variants"][i]["price_cents"].as_i64().unwrap()
    }
}

#[tokio::test]
async fn without_a_model_the_assistant_is_unavailable() {
    let app = spawn_app().await;
    let (token, _) = app.member("owner@example.com").await;
    let store = app.open_store(&token, "Org").await;
    let r = app
        .stream(
            &format!("/v1/stores/{store}/assistant/chat"),
            &token,
            Some(json!({"message": "hi"})),
        )
        .await
        .err()
        .expect("refused");
    r.expect_error(503, "assistant_unavailable");
    // Reading what exists needs no model.
    app.get_as(
        &format!("/v1/stores/{store}/assistant/conversations"),
        &token,
    )
    .await
    .expect(200);
    let usage = app
        .get_as(&format!("/v1/stores/{store}/assistant/usage"), &token)
        .await;
    usage.expect(200);
    assert_eq!(usage.body["used"], 0, "a refused message is not counted");
    assert_eq!(
        usage.body["cap"], 1000,
        "the trial plan's (growth) allowance"
    );
}

/// A whole turn: a read tool runs at once, a write tool becomes a proposal that changes
/// nothing until approved; approving applies it through the product route's own path (audit
/// names the assistant), the follow-up turn streams, and the action undoes once.
#[tokio::test]
async fn a_turn_reads_proposes_and_an_approved_write_can_be_undone_once() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let variant = shop.variants[0].clone();
    model.answer(vec![call("search_products", json!({"query": "Tee"}))]);
    model.answer(vec![
        text("The S tee costs 25.00. "),
        text("I can raise it."),
        call(
            "change_price",
            json!({"variant_id": variant, "price_cents": 2700}),
        ),
    ]);
    let events = shop
        .chat(json!({"message": "Raise the price of the small tee to 27"}))
        .await;
    assert_eq!(
        names(&events),
        [
            "conversation",
            "tool_call",
            "tool_result",
            "text",
            "text",
            "tool_call",
            "proposal",
            "done"
        ]
    );
    let conv = conversation_id(&events);
    let read = event(&events, "tool_result");
    assert_eq!(read["ok"], true);
    assert_eq!(read["result"][0]["variants"][0]["sku"], "TEE-S");
    assert_eq!(said(&events), "The S tee costs 25.00. I can raise it.");
    let proposal = event(&events, "proposal").clone();
    assert_eq!(proposal["tool"], "change_price");
    assert_eq!(proposal["risk"], "money", "what customers pay");
    let summary = proposal["summary"].as_str().unwrap();
    assert!(
        summary.contains("25.00") && summary.contains("27.00"),
        "{summary}"
    );
    assert_eq!(
        shop.price(0).await,
        2500,
        "nothing is written during the turn"
    );

    // The model saw the tool's result on its second request, and only the tools this caller
    // may use (the owner: all of them).
    let sent = model.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["model"], "fake-model");
    assert_eq!(sent[0]["stream"], true);
    let tool_msg = sent[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool result is sent back");
    assert_eq!(tool_msg["tool_call_id"], "call_0");
    assert!(tool_msg["content"].as_str().unwrap().contains("TEE-S"));

    // The transcript is lossless, and the proposal awaits a decision.
    let t = shop
        .read(&format!("assistant/conversations/{conv}/messages"))
        .await;
    let roles: Vec<&str> = t["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "tool"]);
    assert_eq!(t["data"][1]["tool_calls"][0]["tool"], "search_products");
    assert_eq!(
        t["data"][3]["content"],
        "The S tee costs 25.00. I can raise it."
    );
    assert_eq!(t["data"][4]["proposal"]["status"], "pending");
    let c = shop.read(&format!("assistant/conversations/{conv}")).await;
    assert_eq!(c["pending_proposals"][0]["id"], proposal["proposal_id"]);

    // Approve: applied through the product route's path, then the follow-up turn.
    model.answer(vec![text("Done: it now costs 27.00.")]);
    let pid = proposal["proposal_id"].as_str().unwrap();
    shop.streamed(&format!("assistant/proposals/{pid}/approve"))
        .await
        .expect_err("refused")
        .expect_error(428, "confirmation_required");
    let events = shop
        .streamed(&format!("assistant/proposals/{pid}/approve?confirmed=true"))
        .await
        .expect("a stream");
    assert_eq!(
        names(&events),
        ["conversation", "tool_result", "text", "done"]
    );
    let applied = event(&events, "tool_result");
    assert_eq!(applied["applied"], true);
    assert_eq!(applied["undoable"], true);
    assert_eq!(shop.price(0).await, 2700);
    assert_eq!(shop.price(1).await, 3000, "the other variant is untouched");
    let last = model.requests().pop().unwrap();
    let note = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "system")
        .unwrap();
    assert!(
        note["content"].as_str().unwrap().contains("approved"),
        "{note}"
    );

    // The audit entry names the approving user and the assistant.
    let audit = shop.read("audit-log").await;
    let entry = &audit["data"][0];
    assert_eq!(entry["action"], "product.updated");
    assert_eq!(entry["via"], "assistant");

    // Undo restores the price through the same path, once.
    let actions = shop.read("assistant/actions").await;
    assert_eq!(actions["data"][0]["undoable"], true);
    let action = actions["data"][0]["id"].as_str().unwrap().to_owned();
    let r = shop.undo(&action).await;
    r.expect(200);
    assert!(r.body["undone_at"].is_string());
    assert_eq!(shop.price(0).await, 2500);
    shop.undo(&action)
        .await
        .expect_error(409, "action_already_undone");
    assert_eq!(shop.price(0).await, 2500);
    // The proposal was decided: approving again finds nothing.
    shop.streamed(&format!("assistant/proposals/{pid}/approve"))
        .await
        .expect_err("refused")
        .expect_error(404, "not_found");
}

/// Destructive, money and external proposals wait for `confirmed=true`; a change the
/// order lifecycle cannot take back is applied but not undoable.
#[tokio::test]
async fn a_destructive_proposal_needs_confirmation_and_cannot_be_undone() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let order = shop.order(1).await;
    model.answer(vec![call(
        "change_order_status",
        json!({"order_id": order["id"], "status": "cancelled"}),
    )]);
    let events = shop.chat(json!({"message": "cancel it"})).await;
    let proposal = event(&events, "proposal");
    assert_eq!(proposal["risk"], "destructive");
    let pid = proposal["proposal_id"].as_str().unwrap();
    let path = shop.path(&format!("assistant/proposals/{pid}/approve"));
    let r = shop
        .app
        .stream(&path, &shop.token, None)
        .await
        .err()
        .expect("refused");
    r.expect_error(428, "confirmation_required");
    let o = shop
        .read(&format!("orders/{}", order["id"].as_str().unwrap()))
        .await;
    assert_eq!(o["status"], "pending", "nothing applied");

    model.answer(vec![text("Cancelled.")]);
    let events = shop
        .app
        .stream(&format!("{path}?confirmed=true"), &shop.token, None)
        .await
        .expect("a stream")
        .rest()
        .await;
    let applied = event(&events, "tool_result");
    assert_eq!(applied["applied"], true, "{applied}");
    assert_eq!(applied["undoable"], false);
    let o = shop
        .read(&format!("orders/{}", order["id"].as_str().unwrap()))
        .await;
    assert_eq!(o["status"], "cancelled");
    let action = applied["action_id"].as_str().unwrap();
    shop.undo(action)
        .await
        .expect_error(422, "undo_not_supported");
}

/// A write the area refuses when approved (its own validation) fails the proposal, tells
/// the model, and changes nothing.
#[tokio::test]
async fn an_approved_write_the_area_refuses_changes_nothing() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    model.answer(vec![call(
        "adjust_stock",
        json!({"variant_id": shop.variants[0], "delta": -50, "reason": "broken"}),
    )]);
    let events = shop.chat(json!({"message": "take 50 off"})).await;
    let pid = proposal_id(&events);
    model.answer(vec![text("That did not work.")]);
    let events = shop
        .streamed(&format!("assistant/proposals/{pid}/approve?confirmed=true"))
        .await
        .expect("a stream");
    let result = event(&events, "tool_result");
    assert_eq!(result["applied"], false);
    assert_eq!(result["error"]["code"], "insufficient_stock");
    assert_eq!(shop.stock(0).await.0, 10);
    assert!(
        shop.read("assistant/actions").await["data"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_stopped_turn_keeps_its_text_and_a_busy_conversation_refuses_another() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let hold = Arc::new(Notify::new());
    model.answer(vec![text("Let me think"), Part::Hold(hold.clone())]);
    let mut events = shop
        .app
        .stream(
            &shop.path("assistant/chat"),
            &shop.token,
            Some(json!({"message": "a long question"})),
        )
        .await
        .expect("a stream");
    let seen = events.until("text").await;
    let conv = event(&seen, "conversation")["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // While it runs, the conversation takes no second turn (and the refusal is not counted).
    let r = shop
        .app
        .stream(
            &shop.path("assistant/chat"),
            &shop.token,
            Some(json!({"conversation_id": conv, "message": "again"})),
        )
        .await
        .err()
        .expect("refused");
    r.expect_error(409, "assistant_busy");

    // Stop: the stream ends with `stopped` then `done`, the text so far is kept.
    shop.app
        .call(
            post(),
            &shop.path(&format!("assistant/conversations/{conv}/stop")),
            &shop.token,
            None,
        )
        .await
        .expect(204);
    assert_eq!(names(&events.rest().await), ["stopped", "done"]);
    hold.notify_one();
    let t = shop
        .read(&format!("assistant/conversations/{conv}/messages"))
        .await;
    assert_eq!(t["data"][1]["content"], "Let me think");
    assert_eq!(t["data"][1]["ended"], "stopped");
    assert_eq!(shop.read("assistant/usage").await["used"], 1);
    // Stopping again, or another's conversation, is 204 and does nothing.
    shop.app
        .call(
            post(),
            &shop.path(&format!("assistant/conversations/{conv}/stop")),
            &shop.token,
            None,
        )
        .await
        .expect(204);
}

#[tokio::test]
async fn a_model_failure_ends_the_stream_with_an_error_and_keeps_what_was_said() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    model.answer(vec![text("Half an ans"), Part::Break]);
    let events = shop.chat(json!({"message": "q"})).await;
    assert_eq!(names(&events), ["conversation", "text", "error", "done"]);
    assert_eq!(event(&events, "error")["code"], "assistant_unavailable");
    let conv = conversation_id(&events);
    let t = shop
        .read(&format!("assistant/conversations/{conv}/messages"))
        .await;
    assert_eq!(t["data"][1]["content"], "Half an ans");
    assert_eq!(t["data"][1]["ended"], "error");

    // A model server that refuses: an error event, the turn over, the conversation free.
    model.refuse(500, "overloaded");
    let events = shop
        .chat(json!({"conversation_id": conv, "message": "again"}))
        .await;
    assert_eq!(names(&events), ["conversation", "error", "done"]);
    let message = event(&events, "error")["message"].as_str().unwrap();
    assert!(message.contains("500"), "{message}");
    assert!(
        !message.contains("overloaded"),
        "the model server's own words stay in the log: {message}"
    );
}

#[tokio::test]
async fn the_monthly_cap_refuses_past_it_and_renews_with_the_month() {
    let model = FakeModel::start().await;
    let base = model.base.clone();
    // The cap is the plan's: every plan of this catalog allows two messages a month.
    let mut plans = merchant_admin::billing::plans::Catalog::default();
    for p in &mut plans.plans {
        p.limits.assistant_messages_per_store_per_month = 2;
    }
    let app = spawn_app_with(move |c| {
        c.assistant = Some(merchant_admin::assistant::provider::ModelConfig::new(
            &base, "m",
        ));
        c.plans = Arc::new(plans);
    })
    .await;
    let shop = Shop::open(app, 1).await;
    for _ in 0..2 {
        model.answer(vec![text("ok")]);
        shop.chat(json!({"message": "hi"})).await;
    }
    let r = shop
        .app
        .stream(
            &shop.path("assistant/chat"),
            &shop.token,
            Some(json!({"message": "one more"})),
        )
        .await
        .err()
        .expect("refused");
    r.expect_error(429, "assistant_cap_reached");
    let usage = shop.read("assistant/usage").await;
    assert_eq!(
        (usage["used"].as_i64(), usage["cap"].as_i64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        model.requests().len(),
        2,
        "a refused message never reaches the model"
    );
    // Next month.
    let next = usage["period_end"].as_str().unwrap();
    let next = chrono::DateTime::parse_from_rfc3339(next).unwrap().to_utc();
    shop.app
        .clock
        .advance(next - shop.app.clock_now() + chrono::Duration::seconds(1));
    // (The session's access token has expired meanwhile: a new sign-in.)
    let login = shop.app.login_as("owner@example.com", "phone").await;
    let token = login.body["token"].as_str().unwrap().to_owned();
    model.answer(vec![text("ok")]);
    shop.app
        .stream(
            &shop.path("assistant/chat"),
            &token,
            Some(json!({"message": "new month"})),
        )
        .await
        .expect("a stream")
        .rest()
        .await;
    let usage = shop.app.get_as(&shop.path("assistant/usage"), &token).await;
    assert_eq!(usage.body["used"], 1);
}

/// The permission a write needs is checked when it is approved: a member demoted after the
/// proposal cannot approve it, and it stays pending.
#[tokio::test]
async fn permission_is_checked_at_approval_time() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let (admin, admin_id) = shop.app.member("admin@example.com").await;
    shop.app.add_to_store(&shop.store, &admin_id, "admin").await;
    model.answer(vec![call(
        "change_price",
        json!({"variant_id": shop.variants[0], "price_cents": 1}),
    )]);
    let events = shop
        .app
        .stream(
            &shop.path("assistant/chat"),
            &admin,
            Some(json!({"message": "make it cheap"})),
        )
        .await
        .expect("a stream")
        .rest()
        .await;
    let pid = proposal_id(&events);
    // The owner cannot decide the admin's proposal: it is not theirs.
    shop.streamed(&format!("assistant/proposals/{pid}/approve"))
        .await
        .expect_err("refused")
        .expect_error(404, "not_found");
    shop.app
        .call(
            patch(),
            &shop.path(&format!("members/{admin_id}")),
            &shop.token,
            Some(json!({"role": "viewer"})),
        )
        .await
        .expect(204);
    shop.app
        .stream(
            &shop.path(&format!("assistant/proposals/{pid}/approve")),
            &admin,
            None,
        )
        .await
        .err()
        .expect("refused")
        .expect_error(403, "missing_permission");
    assert_eq!(shop.price(0).await, 2500);
    let r = shop
        .app
        .get_as("/v1/assistant/conversations/x/messages", &admin)
        .await;
    assert!(r.status.is_client_error());
}

/// A caller who may not change prices is not offered the tool, and a call to it anyway is
/// refused as a tool result.
#[tokio::test]
async fn tools_follow_the_callers_permissions() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let scoped = shop
        .app
        .store_token(
            &shop.token,
            &shop.store,
            json!(["assistant.use", "products.read"]),
        )
        .await;
    model.answer(vec![call(
        "change_price",
        json!({"variant_id": shop.variants[0], "price_cents": 1}),
    )]);
    model.answer(vec![text("I cannot.")]);
    let events = shop
        .app
        .stream(
            &shop.path("assistant/chat"),
            &scoped,
            Some(json!({"message": "cheaper"})),
        )
        .await
        .expect("a stream")
        .rest()
        .await;
    assert_eq!(event(&events, "tool_result")["ok"], false);
    assert!(!names(&events).contains(&"proposal"));
    let offered: Vec<String> = model.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(offered, ["search_products"]);
    // Without assistant.use, no chat at all.
    let other = shop
        .app
        .store_token(&shop.token, &shop.store, json!(["products.read"]))
        .await;
    shop.app
        .stream(
            &shop.path("assistant/chat"),
            &other,
            Some(json!({"message": "hi"})),
        )
        .await
        .err()
        .expect("refused")
        .expect_error(403, "missing_permission");
}

/// Conversations are their owner's alone; rename, search, delete, the unscoped paths,
/// declining, and expiry.
#[tokio::test]
async fn conversations_belong_to_their_user() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    model.answer(vec![call(
        "change_price",
        json!({"variant_id": shop.variants[1], "price_cents": 3100}),
    )]);
    let events = shop
        .chat(json!({"message": "Price of the medium tee"}))
        .await;
    let conv = conversation_id(&events);
    let pid = proposal_id(&events);

    // Another member of the store sees none of it.
    let (other, other_id) = shop.app.member("staff@example.com").await;
    shop.app.add_to_store(&shop.store, &other_id, "admin").await;
    for path in [
        shop.path(&format!("assistant/conversations/{conv}")),
        shop.path(&format!("assistant/conversations/{conv}/messages")),
        format!("/v1/assistant/conversations/{conv}/messages"),
    ] {
        shop.app
            .get_as(&path, &other)
            .await
            .expect_error(404, "not_found");
    }
    assert_eq!(
        shop.app
            .get_as(&shop.path("assistant/conversations"), &other)
            .await
            .body["data"],
        json!([])
    );

    // Rename: 1 to 120 characters.
    for bad in ["", "   ", &"x".repeat(121)] {
        shop.app
            .call(
                patch(),
                &format!("/v1/assistant/conversations/{conv}"),
                &shop.token,
                Some(json!({"name": bad})),
            )
            .await
            .expect_error(422, "validation_failed");
    }
    let r = shop
        .app
        .call(
            patch(),
            &format!("/v1/assistant/conversations/{conv}"),
            &shop.token,
            Some(json!({"name": "Pricing"})),
        )
        .await;
    r.expect(200);
    assert_eq!(r.body["name"], "Pricing");
    let found = shop.read("assistant/conversations?search=medium").await;
    assert_eq!(found["data"][0]["id"], conv.as_str());
    let none = shop.read("assistant/conversations?search=zebra").await;
    assert_eq!(none["data"], json!([]));

    // Decline through the unscoped path: nothing applied, the model told.
    model.answer(vec![text("Fine, left as is.")]);
    let events = shop
        .app
        .stream(
            &format!("/v1/assistant/proposals/{pid}/decline"),
            &shop.token,
            None,
        )
        .await
        .expect("a stream")
        .rest()
        .await;
    assert_eq!(names(&events), ["conversation", "text", "done"]);
    assert_eq!(shop.price(1).await, 3000);
    let t = shop
        .app
        .get_as(
            &format!("/v1/assistant/conversations/{conv}/messages"),
            &shop.token,
        )
        .await;
    t.expect(200);
    let msgs = t.body["data"].as_array().unwrap();
    assert!(msgs.iter().any(|m| m["role"] == "decision"));
    assert_eq!(msgs[2]["proposal"]["status"], "declined");

    // A proposal left for an hour expires.
    model.answer(vec![call(
        "change_price",
        json!({"variant_id": shop.variants[1], "price_cents": 3200}),
    )]);
    let events = shop
        .chat(json!({"conversation_id": conv, "message": "then 32"}))
        .await;
    let late = proposal_id(&events);
    shop.app.clock.advance(chrono::Duration::minutes(61));
    shop.app
        .stream(
            &format!("/v1/assistant/proposals/{late}/approve"),
            &shop.token,
            None,
        )
        .await
        .err()
        .expect("refused")
        .expect_error(404, "not_found");
    let c = shop.read(&format!("assistant/conversations/{conv}")).await;
    assert_eq!(c["pending_proposals"], json!([]));

    // Delete, through the unscoped path: gone for good.
    shop.app
        .call(
            axum::http::Method::DELETE,
            &format!("/v1/assistant/conversations/{conv}"),
            &other,
            None,
        )
        .await
        .expect_error(404, "not_found");
    shop.app
        .call(
            axum::http::Method::DELETE,
            &format!("/v1/assistant/conversations/{conv}"),
            &shop.token,
            None,
        )
        .await
        .expect(204);
    shop.app
        .call(
            get(),
            &shop.path(&format!("assistant/conversations/{conv}")),
            &shop.token,
            None,
        )
        .await
        .expect_error(404, "not_found");
}

/// A member removed from the store meets 403 `not_a_member` on their own conversation's
/// unscoped paths.
#[tokio::test]
async fn a_removed_member_is_not_a_member() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let (admin, admin_id) = shop.app.member("admin@example.com").await;
    shop.app.add_to_store(&shop.store, &admin_id, "admin").await;
    model.answer(vec![text("hi")]);
    let events = shop
        .app
        .stream(
            &shop.path("assistant/chat"),
            &admin,
            Some(json!({"message": "hello"})),
        )
        .await
        .expect("a stream")
        .rest()
        .await;
    let conv = conversation_id(&events);
    shop.app
        .call(
            axum::http::Method::DELETE,
            &shop.path(&format!("members/{admin_id}")),
            &shop.token,
            None,
        )
        .await
        .expect(204);
    shop.app
        .get_as(
            &format!("/v1/assistant/conversations/{conv}/messages"),
            &admin,
        )
        .await
        .expect_error(403, "not_a_member");
}

#[tokio::test]
async fn a_chat_message_is_validated() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    for body in [
        json!({"message": ""}),
        json!({"message": " "}),
        json!({"message": "x".repeat(8001)}),
        json!({}),
    ] {
        shop.app
            .stream(&shop.path("assistant/chat"), &shop.token, Some(body))
            .await
            .err()
            .expect("refused")
            .expect_error(422, "validation_failed");
    }
    shop.app
        .stream(
            &shop.path("assistant/chat"),
            &shop.token,
            Some(json!({"message": "hi", "conversation_id": uuid::Uuid::new_v4()})),
        )
        .await
        .err()
        .expect("refused")
        .expect_error(404, "not_found");
    assert_eq!(shop.read("assistant/usage").await["used"], 0);
    assert!(model.requests().is_empty());
}

/// A proposal outlives a restart, but deciding it streams a turn: without a model it is
/// 503 `assistant_unavailable`, and the proposal stays pending.
#[tokio::test]
async fn deciding_without_a_model_is_unavailable_and_changes_nothing() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    model.answer(vec![call(
        "change_price",
        json!({"variant_id": shop.variants[0], "price_cents": 1}),
    )]);
    let events = shop.chat(json!({"message": "cheaper"})).await;
    let pid = proposal_id(&events);
    let (token, store) = (shop.token.clone(), shop.store.clone());
    let now = shop.app.clock_now();
    let (result, dir) = shop.app.stop().await;
    result.unwrap();
    let app = crate::support::spawn_app_at(dir, now, |_| {}).await;
    for action in ["approve", "decline"] {
        app.stream(
            &format!("/v1/stores/{store}/assistant/proposals/{pid}/{action}"),
            &token,
            None,
        )
        .await
        .err()
        .expect("refused")
        .expect_error(503, "assistant_unavailable");
    }
    let pending = app
        .get_as(
            &format!(
                "/v1/stores/{store}/assistant/conversations/{}",
                event(&events, "conversation")["conversation_id"]
                    .as_str()
                    .unwrap()
            ),
            &token,
        )
        .await;
    assert_eq!(pending.body["pending_proposals"][0]["id"], pid.as_str());
}

/// A reply to a customer is external: it waits for `confirmed=true`, goes out through the
/// inbox's own send path, is audited as the assistant's (the route keeps no audit entry of
/// its own) and cannot be undone.
#[tokio::test]
async fn a_reply_to_a_customer_goes_out_through_the_inbox_once_confirmed() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let key = shop
        .app
        .chat_channel(
            &shop.token,
            &format!("/v1/stores/{}", shop.store),
            json!([]),
        )
        .await;
    let shopper = shop.app.visitor(&key, json!({"name": "Bia"})).await;
    shop.app
        .visitor_says(&shopper, "Is the tee in stock?")
        .await
        .expect(201);
    model.answer(vec![call(
        "reply_to_conversation",
        json!({"conversation_id": shopper.conversation_id, "text": "Yes, 10 left!"}),
    )]);
    let events = shop.chat(json!({"message": "answer Bia"})).await;
    let proposal = event(&events, "proposal");
    assert_eq!(proposal["risk"], "external");
    assert!(proposal["summary"].as_str().unwrap().contains("Bia"));
    let pid = proposal["proposal_id"].as_str().unwrap();
    let path = shop.path(&format!("assistant/proposals/{pid}/approve"));
    shop.app
        .stream(&path, &shop.token, None)
        .await
        .err()
        .expect("refused")
        .expect_error(428, "confirmation_required");
    model.answer(vec![text("Sent.")]);
    let events = shop
        .app
        .stream(&format!("{path}?confirmed=true"), &shop.token, None)
        .await
        .expect("a stream")
        .rest()
        .await;
    let applied = event(&events, "tool_result");
    assert_eq!(applied["applied"], true, "{applied}");
    assert_eq!(applied["result"]["text"], "Yes, 10 left!");
    let thread = shop
        .read(&format!(
            "conversations/{}/messages",
            shopper.conversation_id
        ))
        .await;
    let texts: Vec<&str> = thread["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Yes, 10 left!", "Is the tee in stock?"],
        "newest first"
    );
    let audit = shop.read("audit-log").await;
    assert_eq!(audit["data"][0]["action"], "message.sent");
    assert_eq!(audit["data"][0]["via"], "assistant");
    let action = applied["action_id"].as_str().unwrap();
    shop.undo(action)
        .await
        .expect_error(422, "undo_not_supported");
}

/// An approval a crash interrupted (the proposal taken, the server gone before it finished)
/// does not stay `applying`: the cleanup marks it failed after ten minutes.
#[tokio::test]
async fn an_interrupted_approval_is_failed_by_the_cleanup() {
    let model = FakeModel::start().await;
    let base = model.base.clone();
    // The cleanup is run by hand: no workers to take it first.
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.assistant = Some(merchant_admin::assistant::provider::ModelConfig::new(
            &base, "m",
        ));
    })
    .await;
    let shop = Shop::open(app, 10).await;
    model.answer(vec![call(
        "change_price",
        json!({"variant_id": shop.variants[0], "price_cents": 1}),
    )]);
    let events = shop.chat(json!({"message": "cheaper"})).await;
    let conv = conversation_id(&events);
    // As a crash leaves it: taken for approval, never finished.
    let at = merchant_admin::time::format(shop.app.clock_now());
    shop.app
        .state
        .db
        .write(move |tx| {
            tx.execute(
                "UPDATE assistant_proposals SET status = 'applying', decided_at = ?1",
                [at],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let path = format!("assistant/conversations/{conv}/messages");
    shop.app.run_cleanup().await;
    let t = shop.read(&path).await;
    assert_eq!(
        t["data"][2]["proposal"]["status"], "applying",
        "not before ten minutes"
    );
    shop.app.clock.advance(chrono::Duration::minutes(11));
    shop.app.run_cleanup().await;
    let t = shop.read(&path).await;
    assert_eq!(t["data"][2]["proposal"]["status"], "failed");
}

/// While a turn of the conversation runs, its proposal cannot be decided (409
/// `assistant_busy`, still pending); the unscoped stop ends the turn.
#[tokio::test]
async fn a_proposal_waits_while_its_conversation_is_busy() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    model.answer(vec![call(
        "adjust_stock",
        json!({"variant_id": shop.variants[0], "delta": 5, "reason": "found"}),
    )]);
    let events = shop.chat(json!({"message": "we found 5"})).await;
    let conv = conversation_id(&events);
    let pid = proposal_id(&events);
    let hold = Arc::new(Notify::new());
    model.answer(vec![text("thinking"), Part::Hold(hold.clone())]);
    let mut running = shop
        .app
        .stream(
            &shop.path("assistant/chat"),
            &shop.token,
            Some(json!({"conversation_id": conv, "message": "and more?"})),
        )
        .await
        .expect("a stream");
    running.until("text").await;
    for action in ["approve", "decline"] {
        shop.streamed(&format!("assistant/proposals/{pid}/{action}"))
            .await
            .expect_err("refused")
            .expect_error(409, "assistant_busy");
    }
    shop.app
        .call(
            post(),
            &format!("/v1/assistant/conversations/{conv}/stop"),
            &shop.token,
            None,
        )
        .await
        .expect(204);
    assert_eq!(names(&running.rest().await), ["stopped", "done"]);
    hold.notify_one();
    model.answer(vec![text("Added.")]);
    let events = shop
        .streamed(&format!("assistant/proposals/{pid}/approve"))
        .await
        .expect("still pending, now decided");
    assert_eq!(event(&events, "tool_result")["applied"], true);
    assert_eq!(shop.stock(0).await.0, 15);
}

/// Undo puts the old price back only while the price is still the one the action set: a
/// later change by someone else is not overwritten (409 `conflict`, the action stays
/// undoable).
#[tokio::test]
async fn undo_does_not_overwrite_a_later_change() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    model.answer(vec![call(
        "change_price",
        json!({"variant_id": shop.variants[0], "price_cents": 2700}),
    )]);
    let events = shop.chat(json!({"message": "27"})).await;
    let pid = proposal_id(&events);
    let events = shop
        .streamed(&format!("assistant/proposals/{pid}/approve?confirmed=true"))
        .await
        .expect("a stream");
    let action = event(&events, "tool_result")["action_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Someone sets another price by hand.
    let product = shop.read("products?limit=1").await["data"][0].clone();
    let mut variants = product["variants"].clone();
    variants[0]["price_cents"] = json!(2900);
    shop.app
        .call(
            patch(),
            &shop.path(&format!("products/{}", product["id"].as_str().unwrap())),
            &shop.token,
            Some(json!({"variants": variants})),
        )
        .await
        .expect(200);
    shop.undo(&action).await.expect_error(409, "conflict");
    assert_eq!(shop.price(0).await, 2900);
    let actions = shop.read("assistant/actions").await;
    assert!(actions["data"][0]["undone_at"].is_null(), "still undoable");
}

/// Deleting a conversation keeps what it applied, still undoable: a stock adjustment is
/// taken back through the stock route's own path (an adjustment the other way).
#[tokio::test]
async fn a_deleted_conversations_actions_stay_undoable() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    model.answer(vec![call(
        "adjust_stock",
        json!({"variant_id": shop.variants[1], "delta": 7, "reason": "delivery"}),
    )]);
    let events = shop.chat(json!({"message": "7 more M tees arrived"})).await;
    let conv = conversation_id(&events);
    let pid = proposal_id(&events);
    assert_eq!(event(&events, "proposal")["risk"], "none", "adding stock");
    model.answer(vec![text("Added.")]);
    let events = shop
        .streamed(&format!("assistant/proposals/{pid}/approve"))
        .await
        .expect("a stream");
    let action = event(&events, "tool_result")["action_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(shop.stock(1).await.0, 17);
    shop.app
        .call(
            axum::http::Method::DELETE,
            &shop.path(&format!("assistant/conversations/{conv}")),
            &shop.token,
            None,
        )
        .await
        .expect(204);
    let actions = shop.read("assistant/actions").await;
    assert_eq!(actions["data"][0]["id"], action.as_str());
    assert!(actions["data"][0]["conversation_id"].is_null());
    let r = shop.undo(&action).await;
    r.expect(200);
    assert_eq!(shop.stock(1).await.0, 10);
    let adjustments = shop.read("audit-log").await;
    assert_eq!(adjustments["data"][0]["action"], "inventory.adjusted");
    assert_eq!(adjustments["data"][0]["via"], "assistant");
}

/// A turn waits for one of the server's model slots; a stop ends the wait.
#[tokio::test]
async fn a_turn_waits_for_a_model_slot_and_a_stop_ends_the_wait() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let held = shop
        .app
        .state
        .assistant
        .model_slots
        .clone()
        .acquire_many_owned(32)
        .await
        .unwrap();
    let mut events = shop
        .app
        .stream(
            &shop.path("assistant/chat"),
            &shop.token,
            Some(json!({"message": "hello"})),
        )
        .await
        .expect("a stream");
    let conv = events.next().await.unwrap().1["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    shop.app
        .call(
            post(),
            &shop.path(&format!("assistant/conversations/{conv}/stop")),
            &shop.token,
            None,
        )
        .await
        .expect(204);
    assert_eq!(names(&events.rest().await), ["stopped", "done"]);
    assert!(model.requests().is_empty(), "the model was never asked");
    drop(held);
    model.answer(vec![text("hi")]);
    let events = shop
        .chat(json!({"conversation_id": conv, "message": "again"}))
        .await;
    assert_eq!(said(&events), "hi");
}
