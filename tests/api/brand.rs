//! The brand system (issue 18; spec 2.11, 3 "Brand system", 4.7): the default a new store
//! starts with, saving and restoring immutable versions, what a save checks, generation as
//! an assistant proposal (against the fake model), its event, the onboarding step and who
//! may do what.

use serde_json::{Value, json};

use crate::support::model::{FakeModel, event, text};
use crate::support::{Receiver, Shop, get, post, spawn_app, spawn_app_with};

/// Every key of 2.11's `system`, with the keys of its objects.
const KEYS: &[(&str, &[&str])] = &[
    (
        "assets",
        &[
            "favicon_url",
            "logo_url",
            "logo_dark_url",
            "images",
            "logo_width",
        ],
    ),
    ("changelog", &[]),
    (
        "colors",
        &["accents", "aliases", "brand", "rules", "scales", "semantic"],
    ),
    ("components", &[]),
    (
        "effects",
        &[
            "borders",
            "durations",
            "easing",
            "rings",
            "rules",
            "shadows",
        ],
    ),
    ("email", &["button_shape", "width"]),
    ("footer", &["address", "company", "extra", "social"]),
    ("guide_md", &[]),
    ("iconography", &["glyphs", "notes", "set", "stroke"]),
    (
        "identity",
        &[
            "audience",
            "name",
            "origin",
            "since",
            "story",
            "tagline",
            "wordmark",
            "wordmark_rules",
            "values",
        ],
    ),
    (
        "imagery",
        &["avoid", "frame_radius", "style", "subjects", "treatment"],
    ),
    ("open_questions", &[]),
    ("radii", &[]),
    ("schema_version", &[]),
    ("sources", &[]),
    (
        "spacing",
        &["base_px", "container_max", "gutters", "rules", "scale"],
    ),
    (
        "typography",
        &[
            "base_size_px",
            "families",
            "font_sources",
            "heading_transform",
            "heading_weight",
            "leading",
            "rules",
            "scale",
            "tracking",
            "weights",
        ],
    ),
    ("updated_at", &[]),
    (
        "voice",
        &[
            "casing",
            "conventions",
            "do",
            "dont",
            "emoji",
            "language",
            "person",
            "signoff",
            "sample_copy",
            "tone",
        ],
    ),
];

const ALIASES: [&str; 20] = [
    "action_primary",
    "action_primary_hover",
    "action_primary_text",
    "action_secondary",
    "action_secondary_text",
    "border",
    "border_strong",
    "error",
    "link",
    "sale",
    "success",
    "surface_card",
    "surface_inverse",
    "surface_muted",
    "surface_page",
    "text_body",
    "text_caption",
    "text_inverse",
    "text_muted",
    "text_strong",
];

impl Shop {
    async fn brand(&self) -> Value {
        self.read("brand-system").await
    }

    async fn save_brand(&self, body: Value) -> crate::support::Reply {
        self.app
            .call(
                reqwest::Method::PUT,
                &self.path("brand-system"),
                &self.token,
                Some(body),
            )
            .await
    }

    async fn restore_brand(&self, version: &str) -> crate::support::Reply {
        let path = self.path(&format!("brand-system/versions/{version}/restore"));
        self.app.call(post(), &path, &self.token, None).await
    }

    async fn generate_brand(&self, prompt: &str) -> crate::support::Reply {
        self.app
            .call(
                post(),
                &self.path("brand-system/generate"),
                &self.token,
                Some(json!({ "prompt": prompt })),
            )
            .await
    }

    /// The `brand` step of the onboarding checklist.
    async fn brand_step(&self) -> Value {
        let list = self.read("onboarding").await;
        list["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == "brand")
            .unwrap()
            .clone()
    }
}

/// The system without `updated_at`, which every save sets.
fn without_time(system: &Value) -> Value {
    let mut s = system.clone();
    s.as_object_mut().unwrap().remove("updated_at");
    s
}

/// `system` with the primary action color changed.
fn recolored(system: &Value, color: &str) -> Value {
    let mut s = system.clone();
    s["colors"]["aliases"]["action_primary"] = json!(color);
    s
}

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

#[tokio::test]
async fn a_new_store_starts_with_a_default_brand_system_named_after_it() {
    let shop = Shop::open(spawn_app().await, 1).await;
    let b = shop.brand().await;
    assert_eq!(b["version"], 1);
    let versions = b["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0]["version"], 1);
    assert_eq!(versions[0]["prompt"], "");
    assert_eq!(versions[0]["summary"], "The default brand system");
    assert!(versions[0]["created_at"].is_string());
    // Every key of 2.11, each object with exactly its keys.
    let system = b["system"].as_object().unwrap();
    assert_eq!(system.len(), KEYS.len(), "{system:?}");
    for (key, inner) in KEYS {
        let v = &system[*key];
        if inner.is_empty() {
            assert!(!v.is_null() && !v.is_object(), "{key}: {v}");
        } else {
            let o = v.as_object().unwrap_or_else(|| panic!("{key}: {v}"));
            assert_eq!(o.len(), inner.len(), "{key}: {v}");
            for k in *inner {
                assert!(o.contains_key(*k), "{key}.{k} missing");
            }
        }
    }
    let aliases = b["system"]["colors"]["aliases"].as_object().unwrap();
    assert_eq!(aliases.len(), ALIASES.len());
    for a in ALIASES {
        let c = aliases[a].as_str().unwrap();
        assert!(c.len() == 7 && c.starts_with('#'), "{a}: {c}");
    }
    assert_eq!(b["system"]["identity"]["name"], "Loja");
    assert_eq!(b["system"]["schema_version"], 1);
    assert!(b["system"]["assets"]["logo_url"].is_null());
    // The default is not the merchant's: the onboarding step stays undone.
    assert_eq!(shop.brand_step().await["done"], false);
}

#[tokio::test]
async fn a_save_is_a_new_immutable_version_with_its_event() {
    let shop = Shop::open(spawn_app().await, 1).await;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["brand_system.updated"]).await;
    let first = shop.brand().await;
    shop.app.clock.advance(chrono::Duration::seconds(60));

    let mut system = recolored(&first["system"], "#0F766E");
    system["updated_at"] = json!("whatever the client says");
    let saved = shop
        .save_brand(json!({"system": system, "prompt": "  Teal, please ", "summary": "Teal"}))
        .await;
    saved.expect(200);
    let b = &saved.body;
    assert_eq!(b["version"], 2);
    assert_eq!(
        b["system"]["colors"]["aliases"]["action_primary"],
        "#0F766E"
    );
    // The server says when the version was saved.
    assert_eq!(b["system"]["updated_at"], b["versions"][0]["created_at"]);
    assert_ne!(b["system"]["updated_at"], first["system"]["updated_at"]);
    let listed: Vec<_> = b["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_i64().unwrap(),
                v["prompt"].as_str().unwrap(),
                v["summary"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (2, "Teal, please", "Teal"),
            (1, "", "The default brand system")
        ]
    );
    assert_eq!(&shop.brand().await, b);

    // The webhook receives the version saved.
    let hit = rx.wait_for(1).await;
    let e = hit[0].json();
    assert_eq!(e["event"], "brand_system.updated");
    assert_eq!(e["store_id"], shop.store.as_str());
    assert_eq!(e["data"]["version"], 2);
    assert_eq!(e["data"]["system"], b["system"]);
    assert_eq!(e["data"]["prompt"], "Teal, please");

    // The audit trail has it; the onboarding step is done as of the save.
    let audit = shop.read("audit-log").await;
    assert_eq!(audit["data"][0]["action"], "brand_system.updated");
    let step = shop.brand_step().await;
    assert_eq!(step["done"], true);
    assert_eq!(step["done_at"], b["versions"][0]["created_at"]);

    // A saved version never changes: the database refuses it.
    let changed = shop
        .app
        .state
        .db
        .write(|tx| {
            Ok(tx.execute(
                "UPDATE brand_versions SET summary = 'edited' WHERE version = 1",
                [],
            ))
        })
        .await
        .unwrap();
    assert!(
        changed
            .unwrap_err()
            .to_string()
            .contains("brand versions are immutable")
    );

    // No prompt or summary is fine: they list as "".
    let third = shop.save_brand(json!({"system": b["system"]})).await;
    third.expect(200);
    assert_eq!(third.body["version"], 3);
    assert_eq!(
        (
            &third.body["versions"][0]["prompt"],
            &third.body["versions"][0]["summary"]
        ),
        (&json!(""), &json!(""))
    );
    assert_eq!(rx.wait_for(2).await[1].json()["data"]["version"], 3);
}

/// A change that makes a valid system invalid.
type Spoil = Box<dyn Fn(&mut Value)>;

#[tokio::test]
async fn a_save_checks_every_type_and_value_naming_its_path() {
    let shop = Shop::open(spawn_app().await, 1).await;
    let good = shop.brand().await["system"].clone();
    let cases: Vec<(&str, Spoil)> = vec![
        (
            "system.colors.aliases.link",
            Box::new(|s| s["colors"]["aliases"]["link"] = json!(5)),
        ),
        (
            "system.colors.aliases.link",
            Box::new(|s| s["colors"]["aliases"]["link"] = json!("blue")),
        ),
        (
            "system.colors.aliases.sale",
            Box::new(|s| s["colors"]["aliases"]["sale"] = json!("#12345")),
        ),
        (
            "system.assets.logo_width",
            Box::new(|s| s["assets"]["logo_width"] = json!("wide")),
        ),
        (
            "system.assets.logo_width",
            Box::new(|s| s["assets"]["logo_width"] = json!(0)),
        ),
        (
            "system.assets.logo_url",
            Box::new(|s| s["assets"]["logo_url"] = json!("ftp://example.com/logo.png")),
        ),
        (
            "system.voice.emoji",
            Box::new(|s| s["voice"]["emoji"] = json!("yes")),
        ),
        (
            "system.voice.tone",
            Box::new(|s| s["voice"]["tone"] = json!("warm")),
        ),
        (
            "system.typography.heading_weight",
            Box::new(|s| s["typography"]["heading_weight"] = json!(450)),
        ),
        (
            "system.typography.heading_transform",
            Box::new(|s| s["typography"]["heading_transform"] = json!("shout")),
        ),
        (
            "system.email.button_shape",
            Box::new(|s| s["email"]["button_shape"] = json!("blob")),
        ),
        (
            "system.schema_version",
            Box::new(|s| s["schema_version"] = json!(2)),
        ),
        (
            "system.identity.name",
            Box::new(|s| s["identity"]["name"] = json!("  ")),
        ),
        // A key of 2.11 left out, and one it does not have.
        (
            "system.voice",
            Box::new(|s| {
                s.as_object_mut().unwrap().remove("voice");
            }),
        ),
        (
            "system.assets.favicon_url",
            Box::new(|s| {
                s["assets"].as_object_mut().unwrap().remove("favicon_url");
            }),
        ),
        ("system.colours", Box::new(|s| s["colours"] = json!({}))),
    ];
    for (path, spoil) in cases {
        let mut system = good.clone();
        spoil(&mut system);
        let r = shop.save_brand(json!({ "system": system })).await;
        r.expect_error(422, "validation_failed");
        assert!(
            r.body["details"]["fields"][path].is_string(),
            "{path}: {}",
            r.text
        );
    }
    // The request's own fields.
    shop.save_brand(json!({"system": good, "summary": "x".repeat(501)}))
        .await
        .expect_error(422, "validation_failed");
    let r = shop.save_brand(json!({"prompt": "no system"})).await;
    r.expect_error(422, "validation_failed");
    assert!(
        r.body["details"]["fields"]["system"].is_string(),
        "{}",
        r.text
    );
    // Not JSON at all.
    let r = shop
        .app
        .send(
            shop.app
                .client
                .put(shop.app.url(&shop.path("brand-system")))
                .bearer_auth(&shop.token)
                .header("content-type", "application/json")
                .body("{"),
        )
        .await;
    r.expect_error(400, "bad_request");
    // Nothing was saved.
    assert_eq!(shop.brand().await["version"], 1);
}

#[tokio::test]
async fn a_restore_saves_the_old_system_as_a_new_version() {
    let shop = Shop::open(spawn_app().await, 1).await;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["brand_system.updated"]).await;
    let v1 = shop.brand().await["system"].clone();
    let v2 = recolored(&v1, "#9A3412");
    shop.save_brand(json!({ "system": v2 })).await.expect(200);

    let r = shop.restore_brand("1").await;
    r.expect(200);
    assert_eq!(r.body["version"], 3);
    assert_eq!(without_time(&r.body["system"]), without_time(&v1));
    assert_eq!(r.body["versions"][0]["summary"], "Restored version 1");
    assert_eq!(r.body["versions"].as_array().unwrap().len(), 3);
    assert_eq!(&shop.brand().await, &r.body);
    // Version 2 is still there, as it was: restoring it brings its color back.
    let again = shop.restore_brand("2").await;
    again.expect(200);
    assert_eq!(again.body["version"], 4);
    assert_eq!(
        again.body["system"]["colors"]["aliases"]["action_primary"],
        "#9A3412"
    );
    // Deliveries may arrive out of order (as Stripe's); the events' ids keep their order.
    let events: Vec<i64> = rx
        .events_in_order(3)
        .await
        .iter()
        .map(|h| h.json()["data"]["version"].as_i64().unwrap())
        .collect();
    assert_eq!(events, [2, 3, 4]);

    // Unknown versions are 404, versions that are not int32s 422 (as on the workflow
    // routes); nothing is saved.
    for v in ["99", "0", "-1"] {
        shop.restore_brand(v).await.expect_error(404, "not_found");
    }
    for v in ["abc", "1.5", "2147483648"] {
        let r = shop.restore_brand(v).await;
        r.expect_error(422, "validation_failed");
        assert!(r.body["details"]["fields"]["version"].is_string());
    }
    assert_eq!(shop.brand().await["version"], 4);
}

#[tokio::test]
async fn another_store_and_roles_without_brand_permissions_are_refused() {
    let shop = Shop::open(spawn_app().await, 1).await;
    let app = &shop.app;
    let (viewer, viewer_id) = app.member("viewer@example.com").await;
    app.add_to_store(&shop.store, &viewer_id, "viewer").await;
    let (stranger, _) = app.member("stranger@example.com").await;
    app.open_store(&stranger, "Elsewhere").await;
    let system = shop.brand().await["system"].clone();

    // A viewer reads but does not write.
    app.call(get(), &shop.path("brand-system"), &viewer, None)
        .await
        .expect(200);
    app.call(
        reqwest::Method::PUT,
        &shop.path("brand-system"),
        &viewer,
        Some(json!({ "system": system })),
    )
    .await
    .expect_error(403, "missing_permission");
    for rest in ["brand-system/versions/1/restore", "brand-system/generate"] {
        app.call(
            post(),
            &shop.path(rest),
            &viewer,
            Some(json!({"prompt": "x"})),
        )
        .await
        .expect_error(403, "missing_permission");
    }
    // Another store's member never learns this one exists.
    app.call(get(), &shop.path("brand-system"), &stranger, None)
        .await
        .expect_error(404, "not_found");
    app.call(
        post(),
        &shop.path("brand-system/versions/1/restore"),
        &stranger,
        None,
    )
    .await
    .expect_error(404, "not_found");
    assert_eq!(shop.brand().await["version"], 1);
}

#[tokio::test]
async fn generating_without_a_model_is_unavailable() {
    let shop = Shop::open(spawn_app().await, 1).await;
    shop.generate_brand("Bold and bright")
        .await
        .expect_error(503, "assistant_unavailable");
    assert_eq!(shop.brand().await["version"], 1);
}

#[tokio::test]
async fn a_generated_system_is_a_proposal_saved_when_approved() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let rx = Receiver::start().await;
    shop.subscribe(&rx, &["brand_system.updated"]).await;
    let current = shop.brand().await["system"].clone();
    let mut proposed = recolored(&current, "#7C3AED");
    proposed["identity"]["tagline"] = json!("Bold and bright");
    // Models wrap JSON in words and fences; the system inside is what counts.
    model.answer(vec![text(&format!(
        "Here you go:\n```json\n{proposed}\n```"
    ))]);

    let r = shop.generate_brand("Bold and bright, in purple").await;
    r.expect(201);
    let p = &r.body;
    assert!(p["id"].is_string() && p["expires_at"].is_string());
    assert_eq!(p["status"], "pending");
    assert_eq!(p["tool"], "save_brand_system");
    assert_eq!(p["risk"], "none");
    assert!(
        p["summary"]
            .as_str()
            .unwrap()
            .contains("Bold and bright, in purple"),
        "{p}"
    );
    // The model was given the request and the current system.
    let asked = model.requests().pop().unwrap();
    let said = asked["messages"][1]["content"].as_str().unwrap();
    assert!(said.contains("Bold and bright, in purple") && said.contains("action_primary"));
    // Nothing is saved until the merchant approves.
    assert_eq!(shop.brand().await["version"], 1);
    assert!(rx.hits().is_empty());
    let conv = p["conversation_id"].as_str().unwrap();
    let c = shop.read(&format!("assistant/conversations/{conv}")).await;
    assert_eq!(c["pending_proposals"][0]["id"], p["id"]);

    // Approve: saved as a new version through the PUT's path; the follow-up turn streams.
    model.answer(vec![text("Your new brand is saved.")]);
    let pid = p["id"].as_str().unwrap();
    let events = match shop
        .app
        .stream(
            &shop.path(&format!("assistant/proposals/{pid}/approve")),
            &shop.token,
            None,
        )
        .await
    {
        Ok(e) => e.rest().await,
        Err(r) => panic!("no stream: {} {}", r.status, r.text),
    };
    let applied = event(&events, "tool_result");
    assert_eq!(applied["applied"], true, "{events:?}");
    assert_eq!(applied["result"]["version"], 2);
    let b = shop.brand().await;
    assert_eq!(b["version"], 2);
    assert_eq!(without_time(&b["system"]), without_time(&proposed));
    assert_eq!(b["versions"][0]["prompt"], "Bold and bright, in purple");
    assert_eq!(b["versions"][0]["summary"], "Generated by the assistant");
    let hit = rx.wait_for(1).await;
    assert_eq!(hit[0].json()["data"]["version"], 2);
    let audit = shop.read("audit-log").await;
    assert_eq!(audit["data"][0]["action"], "brand_system.updated");
    assert_eq!(audit["data"][0]["via"], "assistant");
    assert_eq!(shop.brand_step().await["done"], true);
}

#[tokio::test]
async fn a_declined_generation_changes_nothing() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let current = shop.brand().await;
    model.answer(vec![text(
        &recolored(&current["system"], "#000000").to_string(),
    )]);
    let r = shop.generate_brand("Darker").await;
    r.expect(201);
    let pid = r.body["id"].as_str().unwrap();
    model.answer(vec![text("Kept as it was.")]);
    let events = shop
        .app
        .stream(
            &shop.path(&format!("assistant/proposals/{pid}/decline")),
            &shop.token,
            None,
        )
        .await
        .expect("a stream")
        .rest()
        .await;
    assert!(events.iter().any(|(n, _)| n == "done"), "{events:?}");
    assert_eq!(shop.brand().await, current);
    assert_eq!(shop.brand_step().await["done"], false);
    // Decided: it can no longer be approved.
    let again = shop
        .app
        .stream(
            &shop.path(&format!("assistant/proposals/{pid}/approve")),
            &shop.token,
            None,
        )
        .await;
    match again {
        Ok(_) => panic!("a decided proposal was approved"),
        Err(r) => {
            r.expect_error(404, "not_found");
        }
    }
}

#[tokio::test]
async fn a_model_answer_that_is_not_a_valid_system_proposes_nothing() {
    let model = FakeModel::start().await;
    let shop = shop_with(&model).await;
    let current = shop.brand().await["system"].clone();

    // Not JSON at all.
    model.answer(vec![text("I like purple.")]);
    shop.generate_brand("Purple")
        .await
        .expect_error(502, "model_answer_invalid");
    // JSON with a wrong value: the problem's path is named.
    model.answer(vec![text(&recolored(&current, "purple").to_string())]);
    let r = shop.generate_brand("Purple").await;
    r.expect_error(502, "model_answer_invalid");
    assert!(
        r.body["details"]["fields"]["system.colors.aliases.action_primary"].is_string(),
        "{}",
        r.text
    );
    // A key left out.
    let mut partial = current.clone();
    partial.as_object_mut().unwrap().remove("voice");
    model.answer(vec![text(&partial.to_string())]);
    shop.generate_brand("Purple")
        .await
        .expect_error(502, "model_answer_invalid");
    // The model server failing is the assistant being unavailable.
    model.refuse(500, "overloaded");
    shop.generate_brand("Purple")
        .await
        .expect_error(503, "assistant_unavailable");
    // An empty prompt is the caller's mistake.
    shop.generate_brand("  ")
        .await
        .expect_error(422, "validation_failed");
    // No proposal was made, nothing saved.
    let convs = shop.read("assistant/conversations").await;
    assert_eq!(convs["data"], json!([]));
    assert_eq!(shop.brand().await["version"], 1);
}
