//! The areas' shared write paths (issue 16 groundwork): what the REST routes do, called as
//! the assistant calls them once a user approves a proposal. They check what the routes
//! check, write the same events, and their audit entries name the approving user and
//! `via: "assistant"`.

use merchant_admin::audit::Actor;
use merchant_admin::error::{AppError, ErrorCode};
use merchant_admin::ids::{StoreId, TenantId, UserId};
use serde_json::{Value, json};

use crate::support::{Receiver, Shop, TestApp, get, spawn_app, spawn_app_with};

/// The store owner's write through the assistant, as its approval makes it.
async fn assistant_actor(shop: &Shop) -> Actor {
    let store: StoreId = shop.store.parse().unwrap();
    let (user, tenant): (UserId, TenantId) = shop
        .app
        .state
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT m.user_id, s.tenant_id FROM store_members m
                 JOIN stores s ON s.id = m.store_id
                 WHERE m.store_id = ?1 AND m.role = 'owner'",
                [store],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .unwrap();
    Actor {
        store_id: Some(store),
        tenant_id: tenant,
        user_id: user,
        token_name: None,
        trace_id: "approval-1".into(),
        via: None,
        on_record: merchant_admin::audit::OnRecord::default(),
    }
    .via_assistant()
}

/// The store's audit trail, newest first.
async fn audit_log(shop: &Shop) -> Vec<Value> {
    let r = shop
        .app
        .call(get(), &shop.path("audit-log?limit=100"), &shop.token, None)
        .await;
    r.expect(200);
    r.body["data"].as_array().unwrap().clone()
}

async fn events_named(app: &TestApp, name: &'static str) -> i64 {
    app.state
        .db
        .read(move |c| {
            Ok(
                c.query_row("SELECT COUNT(*) FROM events WHERE name = ?1", [name], |r| {
                    r.get(0)
                })?,
            )
        })
        .await
        .unwrap()
}

fn field_error(e: &AppError, field: &str) {
    assert_eq!(e.code, ErrorCode::ValidationFailed, "{e:?}");
    let fields = &e.details.as_ref().expect("details")["fields"];
    assert!(fields.get(field).is_some(), "{field}: {e:?}");
}

#[tokio::test]
async fn writes_through_the_assistant_check_publish_and_audit_as_the_routes_do() {
    use merchant_admin::{catalog, inbox, inventory, orders, reviews};
    let shop = Shop::open(spawn_app().await, 10).await;
    let st = shop.app.state.clone();
    let actor = assistant_actor(&shop).await;
    let store = actor.store_id.unwrap();
    let product = shop.product().await;
    let product_id = product["id"].as_str().unwrap().parse().unwrap();
    let variant = shop.variants[0].parse().unwrap();
    let order = shop.order(1).await;
    let order_id = order["id"].as_str().unwrap().parse().unwrap();
    let review = shop.review(json!({})).await.body.clone();
    let review_id = review["id"].as_str().unwrap().parse().unwrap();
    let store_path = format!("/v1/stores/{}", shop.store);
    let key = shop
        .app
        .chat_channel(&shop.token, &store_path, json!(["https://shop.example"]))
        .await;
    let visitor = shop.app.visitor(&key, json!({"name": "Ana"})).await;
    let conversation = visitor.conversation_id.parse().unwrap();
    let ours = audit_log(&shop).await.len();
    assert!(audit_log(&shop).await.iter().all(|e| e["via"].is_null()));

    // What the routes refuse, the shared paths refuse alike, writing nothing.
    let patch = |title: &str| catalog::model::ProductPatch {
        title: Some(title.into()),
        ..Default::default()
    };
    let e = catalog::writes::update_product(&st, &actor, store, product_id, patch(" "))
        .await
        .unwrap_err();
    field_error(&e, "title");
    let e = inventory::writes::adjust_stock(
        &st,
        &actor,
        store,
        variant,
        inventory::model::AdjustmentIn {
            delta: 0,
            reason: "recount".into(),
        },
    )
    .await
    .unwrap_err();
    field_error(&e, "delta");
    let e = reviews::writes::update_review(
        &st,
        &actor,
        store,
        review_id,
        reviews::model::ReviewPatch {
            status: reviews::model::ReviewStatus::Approved,
            reply: Some(Some("x".repeat(2001))),
        },
    )
    .await
    .unwrap_err();
    field_error(&e, "reply");
    for (text, code) in [
        ("  ", ErrorCode::EmptyMessage),
        (&*"x".repeat(4097), ErrorCode::MessageTooLong),
    ] {
        let e = inbox::writes::send_agent_text(&st, &actor, store, conversation, text.into())
            .await
            .unwrap_err();
        assert_eq!(e.code, code);
    }
    let e = orders::writes::update_order(
        &st,
        &actor,
        store,
        order_id,
        orders::model::OrderPatch {
            status: Some(orders::model::OrderStatus::Delivered),
            note: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidStatusTransition);
    let e = orders::writes::refund(
        &st,
        &actor,
        store,
        order_id,
        orders::model::RefundIn {
            amount_cents: 0,
            reason: None,
        },
        None,
    )
    .await
    .unwrap_err();
    field_error(&e, "amount_cents");
    assert_eq!(audit_log(&shop).await.len(), ours);

    // Each write, as an approval makes it.
    let updated_before = events_named(&shop.app, "products.updated").await;
    let p = catalog::writes::update_product(&st, &actor, store, product_id, patch("Tee Shirt"))
        .await
        .unwrap();
    assert_eq!(p.title, "Tee Shirt");
    assert_eq!(
        events_named(&shop.app, "products.updated").await,
        updated_before + 1
    );
    let o = orders::writes::update_order(
        &st,
        &actor,
        store,
        order_id,
        orders::model::OrderPatch {
            status: Some(orders::model::OrderStatus::Paid),
            note: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(o.status, orders::model::OrderStatus::Paid);
    assert_eq!(events_named(&shop.app, "orders.paid").await, 1);
    let refund = orders::writes::refund(
        &st,
        &actor,
        store,
        order_id,
        orders::model::RefundIn {
            amount_cents: 500,
            reason: Some("  damaged  ".into()),
        },
        Some("proposal-7".into()),
    )
    .await
    .unwrap();
    let orders::writes::RefundOutcome::Settled(settled) = &refund else {
        panic!("a manual payment refunds at once: {refund:?}");
    };
    assert_eq!(
        (settled.status.as_str(), settled.reason.as_deref()),
        ("succeeded", Some("damaged"))
    );
    // The key makes a repeat the same refund.
    let again = orders::writes::refund(
        &st,
        &actor,
        store,
        order_id,
        orders::model::RefundIn {
            amount_cents: 500,
            reason: None,
        },
        Some("proposal-7".into()),
    )
    .await
    .unwrap();
    assert_eq!(again.refund().id, settled.id);
    let level = inventory::writes::adjust_stock(
        &st,
        &actor,
        store,
        variant,
        inventory::model::AdjustmentIn {
            delta: 5,
            reason: "received".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(level.on_hand, 15);
    let r = reviews::writes::update_review(
        &st,
        &actor,
        store,
        review_id,
        reviews::model::ReviewPatch {
            status: reviews::model::ReviewStatus::Approved,
            reply: Some(Some("Thank you!".into())),
        },
    )
    .await
    .unwrap();
    assert_eq!(r.reply.as_deref(), Some("Thank you!"));
    let sent =
        inbox::writes::send_agent_text(&st, &actor, store, conversation, "It is in stock.".into())
            .await
            .unwrap();
    assert_eq!(sent.message.text, "It is in stock.");
    assert_eq!(
        sent.message.agent_user_id.map(|u| u.to_string()),
        Some(actor.user_id.to_string())
    );
    // The REST reads show what the shared paths wrote.
    assert_eq!(
        shop.read(&format!("reviews/{review_id}")).await["reply"],
        "Thank you!"
    );
    assert_eq!(
        shop.read(&format!("orders/{order_id}")).await["refunded_cents"],
        500
    );

    // Each audit entry names the approving user and the assistant.
    let log = audit_log(&shop).await;
    let new: Vec<(&str, &str)> = log[..log.len() - ours]
        .iter()
        .map(|e| {
            assert_eq!(e["via"], "assistant", "{e}");
            assert_eq!(
                e["actor_user_id"],
                actor.user_id.to_string().as_str(),
                "{e}"
            );
            assert_eq!(e["trace_id"], "approval-1", "{e}");
            (
                e["action"].as_str().unwrap(),
                e["resource_type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        new,
        [
            ("review.updated", "review"),
            ("inventory.adjusted", "variant"),
            ("order.refunded", "order"),
            ("order.updated", "order"),
            ("product.updated", "product"),
        ],
        "newest first"
    );
    assert!(log[log.len() - ours..].iter().all(|e| e["via"].is_null()));
}

/// A refund whose outcome is not known yet settles later, by the background check; its audit
/// entry still names the user who approved it and the assistant.
#[tokio::test]
async fn a_refund_settled_by_the_background_check_keeps_its_via() {
    use merchant_admin::orders;
    let provider = Receiver::start().await;
    let base = provider.base.clone();
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.payments = orders::payments::PaymentsConfig::Http {
            api_base: base,
            api_key: None,
            timeout: std::time::Duration::from_millis(300),
        };
    })
    .await;
    let shop = Shop::open(app, 10).await;
    let actor = assistant_actor(&shop).await;
    let store = actor.store_id.unwrap();
    let order = shop.order(1).await;
    shop.set_status(&order, "paid").await;
    let order_id = order["id"].as_str().unwrap().parse().unwrap();

    // The provider says nothing for sure: pending, the REST route's 202.
    provider.answer(&[503]);
    let out = orders::writes::refund(
        &shop.app.state,
        &actor,
        store,
        order_id,
        orders::model::RefundIn {
            amount_cents: 1000,
            reason: None,
        },
        Some("proposal-9".into()),
    )
    .await
    .unwrap();
    let orders::writes::RefundOutcome::Pending(pending) = &out else {
        panic!("an uncertain answer leaves the refund pending: {out:?}");
    };
    assert_eq!(pending.status, "pending");

    // The check asks again after the lease, and the provider confirms it (200).
    let lease = orders::payments::ask_lease(&shop.app.state.cfg.payments);
    shop.app
        .clock
        .advance(chrono::Duration::from_std(lease).unwrap() + chrono::Duration::seconds(1));
    assert_eq!(
        merchant_admin::jobs::run_once(&shop.app.state)
            .await
            .unwrap(),
        merchant_admin::jobs::Outcome::Ran
    );
    assert_eq!(
        shop.read(&format!("orders/{order_id}")).await["refunded_cents"],
        1000
    );
    let log = audit_log(&shop).await;
    let entry = log
        .iter()
        .find(|e| e["action"] == "order.refunded")
        .expect("the settlement's entry");
    assert_eq!(entry["via"], "assistant");
    assert_eq!(entry["actor_user_id"], actor.user_id.to_string().as_str());
    assert_eq!(entry["trace_id"], "approval-1");
    // The owner's own status change, through the route, went through no assistant.
    let paid = log.iter().find(|e| e["action"] == "order.updated").unwrap();
    assert_eq!(paid["via"], Value::Null);
}
