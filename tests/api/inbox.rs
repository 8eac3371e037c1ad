//! The shared inbox (issue 15): channels, conversations, messages.

use serde_json::json;

use crate::support::{TestApp, patch, post, spawn_app};

/// An owner with a store, and the store's path.
async fn store(app: &TestApp) -> (String, String) {
    let (owner, _) = app.member("owner@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    (owner, format!("/v1/stores/{store}"))
}

#[tokio::test]
async fn channels_are_created_listed_changed_and_deleted() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let channels = format!("{p}/channels");

    let chat = app
        .call(
            post(),
            &channels,
            &owner,
            Some(json!({"kind": "storefront_chat", "name": "Site chat",
                        "allowed_origins": ["https://Shop.example/", "http://localhost:3000"]})),
        )
        .await;
    chat.expect(201);
    assert_eq!(chat.body["kind"], "storefront_chat");
    assert_eq!(chat.body["enabled"], true);
    assert!(chat.body["key"].as_str().unwrap().starts_with("chk_"));
    assert_eq!(
        chat.body["allowed_origins"],
        json!(["https://shop.example", "http://localhost:3000"])
    );

    // A messaging-app channel needs its three settings; the secrets are never shown.
    app.call(
        post(),
        &channels,
        &owner,
        Some(json!({"kind": "msgapp", "name": "WhatsApp",
                    "settings": {"phone_number_id": "123"}})),
    )
    .await
    .expect_error(422, "validation_failed");
    let msgapp = app
        .call(
            post(),
            &channels,
            &owner,
            Some(json!({"kind": "msgapp", "name": "Messaging app",
                        "settings": {"phone_number_id": "123", "app_secret": "s3cret-app",
                                     "verify_token": "v3rify"}})),
        )
        .await;
    msgapp.expect(201);
    assert_eq!(msgapp.body["key"], json!(null));
    assert_eq!(msgapp.body["settings"], json!({"phone_number_id": "123"}));
    for bad in [
        json!({"kind": "email", "name": "Mail", "settings": {"address": "not-mail", "inbound_secret": "x"}}),
        json!({"kind": "msgapp", "name": "M", "allowed_origins": ["https://a.example"],
               "settings": {"phone_number_id": "1", "app_secret": "a", "verify_token": "v"}}),
        json!({"kind": "storefront_chat", "name": "C", "allowed_origins": ["https://a.example/path"]}),
        json!({"kind": "storefront_chat", "name": ""}),
        json!({"kind": "sms", "name": "S"}),
    ] {
        app.call(post(), &channels, &owner, Some(bad.clone()))
            .await
            .expect_error(422, "validation_failed");
    }
    // The secrets are sealed at rest: the database never holds them in the clear.
    let raw: Vec<Vec<u8>> = app
        .state
        .db
        .read(|c| {
            let mut s = c.prepare("SELECT secrets FROM channels WHERE secrets IS NOT NULL")?;
            let rows = s.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
        .unwrap();
    assert_eq!(raw.len(), 1);
    assert!(!String::from_utf8_lossy(&raw[0]).contains("s3cret-app"));

    let list = app.get_as(&channels, &owner).await;
    list.expect(200);
    assert_eq!(list.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(
        list.body["data"][0]["id"], msgapp.body["id"],
        "newest first"
    );

    // Changing one secret keeps the others and the shown settings.
    let one = format!("{channels}/{}", msgapp.body["id"].as_str().unwrap());
    let changed = app
        .call(
            patch(),
            &one,
            &owner,
            Some(json!({"name": "Renamed", "enabled": false,
                        "settings": {"verify_token": "other"}})),
        )
        .await;
    changed.expect(200);
    assert_eq!(changed.body["name"], "Renamed");
    assert_eq!(changed.body["enabled"], false);
    assert_eq!(changed.body["settings"], json!({"phone_number_id": "123"}));
    app.call(
        patch(),
        &one,
        &owner,
        Some(json!({"settings": {"address": "a@b.example"}})),
    )
    .await
    .expect_error(422, "validation_failed");

    app.call(reqwest::Method::DELETE, &one, &owner, None)
        .await
        .expect(204);
    app.get_as(&one, &owner)
        .await
        .expect_error(404, "not_found");
}

#[tokio::test]
async fn channels_need_store_edit_and_stay_in_their_store() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let store_id = p.rsplit('/').next().unwrap().to_owned();
    let (staff, staff_id) = app.member("staff@example.com").await;
    app.add_to_store(&store_id, &staff_id, "staff").await;
    let channels = format!("{p}/channels");
    let chat = app
        .call(
            post(),
            &channels,
            &owner,
            Some(json!({"kind": "storefront_chat", "name": "Chat"})),
        )
        .await;
    chat.expect(201);
    let one = format!("{channels}/{}", chat.body["id"].as_str().unwrap());
    app.get_as(&one, &staff)
        .await
        .expect_error(403, "missing_permission");
    app.call(
        post(),
        &channels,
        &staff,
        Some(json!({"kind": "storefront_chat", "name": "Mine"})),
    )
    .await
    .expect_error(403, "missing_permission");

    // Another store's owner does not see it, even with its id.
    let (other, _) = app.member("other@example.com").await;
    let other_store = app.open_store(&other, "Other").await;
    let theirs = format!(
        "/v1/stores/{other_store}/channels/{}",
        chat.body["id"].as_str().unwrap()
    );
    app.get_as(&theirs, &other)
        .await
        .expect_error(404, "not_found");
    app.call(patch(), &theirs, &other, Some(json!({"name": "Stolen"})))
        .await
        .expect_error(404, "not_found");
    app.call(reqwest::Method::DELETE, &theirs, &other, None)
        .await
        .expect_error(404, "not_found");
    assert_eq!(app.get_as(&one, &owner).await.body["name"], "Chat");
}

/// Ids of a page's messages, in the order given.
fn ids(r: &crate::support::Reply) -> Vec<String> {
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_shopper_and_the_team_talk_through_a_conversation() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let key = app
        .chat_channel(&owner, &p, json!(["https://shop.example"]))
        .await;

    // The widget's routes check the channel and the site first.
    let open = format!("/v1/widget/{key}/conversations");
    let from = |origin: &'static str| {
        app.client
            .post(app.url(&open))
            .header("origin", origin)
            .json(&json!({}))
    };
    app.send(from("https://evil.example"))
        .await
        .expect_error(403, "forbidden");
    app.send(from("https://shop.example")).await.expect(201);
    app.post_json("/v1/widget/chk_nope/conversations", &json!({}))
        .await
        .expect_error(404, "not_found");

    let v = app
        .visitor(&key, json!({"name": "Ana", "email": "Ana@Example.com"}))
        .await;
    assert!(v.token.starts_with("vt_"));
    let opened = app.send(from("https://shop.example")).await;
    assert_eq!(
        opened.header("cache-control"),
        Some("no-store"),
        "a credential"
    );
    let hello = app.visitor_says(&v, "Hello, is this in stock?").await;
    hello.expect(201);
    assert_eq!(hello.body["message"]["sender"], "visitor");
    // The shopper gets the widget's view of the conversation, nothing internal.
    assert_eq!(
        hello.body["conversation"],
        json!({"status": "open", "bot_active": false, "assignee_user_id": null,
               "unread_for_visitor": 0})
    );
    let hello_id = hello.body["message"]["id"].as_str().unwrap().to_owned();

    // Bad input stores nothing: a wrong token, a blank or too long text.
    let wrong = crate::support::Visitor {
        token: "vt_wrong".into(),
        conversation_id: v.conversation_id.clone(),
        path: v.path.clone(),
    };
    app.visitor_says(&wrong, "hi")
        .await
        .expect_error(401, "unauthorized");
    app.visitor_says(&v, "   ")
        .await
        .expect_error(422, "empty_message");
    app.visitor_says(&v, &"x".repeat(4097))
        .await
        .expect_error(422, "message_too_long");
    app.visitor_says(&v, &"é".repeat(4096)).await.expect(201);

    // The team sees the conversation waiting, with the contact's name.
    let conversations = format!("{p}/conversations");
    let list = app.get_as(&conversations, &owner).await;
    list.expect(200);
    let rows = list.body["data"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["id"] == v.conversation_id.as_str())
        .unwrap();
    assert_eq!(row["contact"]["email"], "ana@example.com");
    assert_eq!(
        row["customer_id"],
        json!(null),
        "a typed e-mail proves nothing"
    );
    assert_eq!(row["display_name"], "Ana");
    assert_eq!(row["status"], "open");
    assert_eq!(row["unread_for_agents"], 2);
    assert!(row["waiting_since"].is_string());
    let counts = app.get_as(&format!("{conversations}/counts"), &owner).await;
    counts.expect(200);
    // The conversation opened from the shop page never got a message: not in the inbox.
    assert_eq!(rows.len(), 1);
    assert_eq!(counts.body["open"], 1);
    assert_eq!(counts.body["unassigned"], 1);
    assert_eq!(counts.body["mine"], 0);

    // The reply: the contact no longer waits, and has one unread message.
    let one = format!("{conversations}/{}", v.conversation_id);
    let reply = app
        .call(
            post(),
            &format!("{one}/messages"),
            &owner,
            Some(json!({"text": "Yes, it is."})),
        )
        .await;
    reply.expect(201);
    assert_eq!(reply.body["message"]["sender"], "agent");
    assert_eq!(reply.body["conversation"]["unread_for_visitor"], 1);
    let reply_id = reply.body["message"]["id"].as_str().unwrap().to_owned();
    let detail = app.get_as(&one, &owner).await;
    detail.expect(200);
    assert_eq!(detail.body["waiting_since"], json!(null));
    assert_eq!(detail.body["notes"], json!([]));

    // Newest first by default; `after` gives what follows, oldest first. The shopper reads
    // the same thread with the visitor token.
    let messages = app.get_as(&format!("{one}/messages"), &owner).await;
    messages.expect(200);
    assert_eq!(ids(&messages).len(), 3);
    assert_eq!(ids(&messages)[0], reply_id);
    assert_eq!(*ids(&messages).last().unwrap(), hello_id);
    let after = app
        .get_as(&format!("{one}/messages?after={hello_id}"), &owner)
        .await;
    after.expect(200);
    assert_eq!(ids(&after).len(), 2);
    assert_eq!(ids(&after)[1], reply_id);
    let theirs = app.get_as(&format!("{}/messages", v.path), &v.token).await;
    theirs.expect(200);
    assert_eq!(ids(&theirs), ids(&messages));
    app.get_as(&format!("{}/messages", v.path), "vt_wrong")
        .await
        .expect_error(401, "unauthorized");

    // Read marks: the team's clears the unread count and stamps the shopper's messages.
    app.call(post(), &format!("{one}/read"), &owner, None)
        .await
        .expect(204);
    let detail = app.get_as(&one, &owner).await;
    assert_eq!(detail.body["unread_for_agents"], 0);
    let messages = app.get_as(&format!("{one}/messages"), &owner).await;
    assert!(messages.body["data"][2]["read_at"].is_string());
    assert_eq!(messages.body["data"][0]["read_at"], json!(null));
    app.call(post(), &format!("{}/read", v.path), &v.token, None)
        .await
        .expect(204);
    assert_eq!(app.get_as(&one, &owner).await.body["unread_for_visitor"], 0);

    // Notes are the team's only.
    let note = app
        .call(
            post(),
            &format!("{one}/notes"),
            &owner,
            Some(json!({"text": "VIP customer"})),
        )
        .await;
    note.expect(201);
    let detail = app.get_as(&one, &owner).await;
    assert_eq!(detail.body["notes"][0]["text"], "VIP customer");
    assert_eq!(
        ids(&app.get_as(&format!("{}/messages", v.path), &v.token).await).len(),
        3
    );
}

#[tokio::test]
async fn conversations_are_assigned_snoozed_and_reopened() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let store_id = p.rsplit('/').next().unwrap().to_owned();
    let key = app.chat_channel(&owner, &p, json!([])).await;
    let v = app.visitor(&key, json!({})).await;
    app.visitor_says(&v, "hi").await.expect(201);
    let one = format!("{p}/conversations/{}", v.conversation_id);
    let owner_id = app.get_as("/v1/me", &owner).await.body["id"].clone();

    let (outsider, outsider_id) = app.member("outsider@example.com").await;
    app.open_store(&outsider, "Theirs").await;
    app.call(
        patch(),
        &one,
        &owner,
        Some(json!({"assignee_user_id": outsider_id})),
    )
    .await
    .expect_error(422, "validation_failed");
    app.call(patch(), &one, &owner, Some(json!({"status": "snoozed"})))
        .await
        .expect_error(422, "validation_failed");
    let changed = app
        .call(
            patch(),
            &one,
            &owner,
            Some(json!({"assignee_user_id": owner_id, "priority": "high",
                        "labels": ["vip", "vip", "refund"], "status": "snoozed",
                        "snoozed_until": "2030-01-01T00:00:00Z"})),
        )
        .await;
    changed.expect(200);
    assert_eq!(changed.body["assignee_user_id"], owner_id);
    assert_eq!(changed.body["labels"], json!(["vip", "refund"]));
    assert_eq!(changed.body["status"], "snoozed");
    assert_eq!(changed.body["snoozed_until"], "2030-01-01T00:00:00.000000Z");
    let counts = app
        .get_as(&format!("{p}/conversations/counts"), &owner)
        .await;
    assert_eq!(counts.body["snoozed"], 1);
    assert_eq!(counts.body["open"], 0);

    // The contact writes again: the conversation is open again, still assigned.
    app.visitor_says(&v, "any news?").await.expect(201);
    let row = app.get_as(&one, &owner).await;
    assert_eq!(row.body["status"], "open");
    assert_eq!(row.body["snoozed_until"], json!(null));
    assert_eq!(row.body["assignee_name"], "owner@example.com");
    let mine = app
        .get_as(&format!("{p}/conversations?assignee=me"), &owner)
        .await;
    assert_eq!(mine.body["data"].as_array().unwrap().len(), 1);
    let none = app
        .get_as(&format!("{p}/conversations?assignee=none"), &owner)
        .await;
    assert_eq!(none.body["data"].as_array().unwrap().len(), 0);
    app.get_as(&format!("{p}/conversations?assignee=someone"), &owner)
        .await
        .expect_error(422, "validation_failed");

    // Unassigning takes null.
    let back = app
        .call(
            patch(),
            &one,
            &owner,
            Some(json!({"assignee_user_id": null})),
        )
        .await;
    back.expect(200);
    assert_eq!(back.body["assignee_user_id"], json!(null));

    // Another store's owner sees none of it.
    let theirs = format!("/v1/stores/{store_id}/conversations/{}", v.conversation_id)
        .replace(&store_id, &app.open_store(&outsider, "Second").await);
    app.get_as(&theirs, &outsider)
        .await
        .expect_error(404, "not_found");
    app.call(
        post(),
        &format!("{theirs}/messages"),
        &outsider,
        Some(json!({"text": "x"})),
    )
    .await
    .expect_error(404, "not_found");
}

#[tokio::test]
async fn the_inbox_is_searched_filtered_and_sorted() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let key = app.chat_channel(&owner, &p, json!([])).await;
    let ana = app.visitor(&key, json!({"name": "Ana Souza"})).await;
    app.visitor_says(&ana, "Where is my parcel?")
        .await
        .expect(201);
    app.clock.advance(chrono::Duration::seconds(5));
    let bruno = app
        .visitor(&key, json!({"email": "bruno@example.com"}))
        .await;
    app.visitor_says(&bruno, "Do you ship abroad?")
        .await
        .expect(201);
    app.clock.advance(chrono::Duration::seconds(5));
    let quiet = app.visitor(&key, json!({})).await;
    app.visitor_says(&quiet, "hello").await.expect(201);
    app.call(
        post(),
        &format!("{p}/conversations/{}/messages", quiet.conversation_id),
        &owner,
        Some(json!({"text": "Hi!"})),
    )
    .await
    .expect(201);
    app.call(
        patch(),
        &format!("{p}/conversations/{}", bruno.conversation_id),
        &owner,
        Some(json!({"priority": "urgent"})),
    )
    .await
    .expect(200);

    let list = |q: &'static str| {
        let path = format!("{p}/conversations{q}");
        let owner = owner.clone();
        let app = &app;
        async move {
            let r = app.get_as(&path, &owner).await;
            r.expect(200);
            ids(&r)
        }
    };
    let (a, b, c) = (
        ana.conversation_id.as_str(),
        bruno.conversation_id.as_str(),
        quiet.conversation_id.as_str(),
    );
    assert_eq!(list("").await, [c, b, a]);
    assert_eq!(list("?search=parcel").await, [a]);
    assert_eq!(list("?search=BRUNO").await, [b]);
    assert_eq!(list("?search=souza").await, [a]);
    assert_eq!(list("?sort=oldest_waiting").await, [a, b, c]);
    assert_eq!(list("?sort=priority").await, [b, c, a]);
    assert_eq!(list("?priority=urgent").await, [b]);
    assert!(list("?channel_kind=email").await.is_empty());
    assert_eq!(
        list("?status=open&limit=1&include_total=true").await.len(),
        1
    );

    // Keyset pages follow each order to its end.
    for sort in ["newest_activity", "oldest_waiting", "priority"] {
        let mut seen = Vec::new();
        let mut path = format!("{p}/conversations?sort={sort}&limit=1");
        loop {
            let r = app.get_as(&path, &owner).await;
            r.expect(200);
            seen.extend(ids(&r));
            match r.body["next_cursor"].as_str() {
                Some(c) => path = format!("{p}/conversations?sort={sort}&limit=1&cursor={c}"),
                None => break,
            }
        }
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(sorted.len(), 3, "{sort}: {seen:?}");
        sorted.dedup();
        assert_eq!(sorted.len(), 3, "{sort}: {seen:?}");
    }
    app.get_as(&format!("{p}/conversations?sort=loudest"), &owner)
        .await
        .expect_error(422, "validation_failed");
}

#[tokio::test]
async fn the_catch_up_recipe_loses_and_repeats_nothing_while_messages_arrive() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let key = app.chat_channel(&owner, &p, json!([])).await;
    let v = app.visitor(&key, json!({})).await;
    let first = app.visitor_says(&v, "m0").await;
    let anchor = first.body["message"]["id"].as_str().unwrap().to_owned();
    let mut sent = Vec::new();
    for i in 1..=7 {
        let r = app.visitor_says(&v, &format!("m{i}")).await;
        sent.push(r.body["message"]["id"].as_str().unwrap().to_owned());
    }
    // Spec 6.4: after=<last id>&limit=100, then the same `after` with the cursor.
    let base = format!(
        "{p}/conversations/{}/messages?after={anchor}&limit=3",
        v.conversation_id
    );
    let mut got = Vec::new();
    let mut path = base.clone();
    let mut arrived = 8;
    loop {
        let r = app.get_as(&path, &owner).await;
        r.expect(200);
        got.extend(ids(&r));
        // A message arrives while the client pages.
        if arrived < 10 {
            let m = app.visitor_says(&v, &format!("m{arrived}")).await;
            sent.push(m.body["message"]["id"].as_str().unwrap().to_owned());
            arrived += 1;
        }
        match r.body["next_cursor"].as_str() {
            Some(c) => path = format!("{base}&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(got, sent, "every message once, in order");
}

#[tokio::test]
async fn a_snoozed_conversation_opens_again_at_its_time_and_a_later_snooze_wins() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    let store_id = p.rsplit('/').next().unwrap().to_owned();
    let key = app.chat_channel(&owner, &p, json!([])).await;
    let v = app.visitor(&key, json!({})).await;
    app.visitor_says(&v, "hi").await.expect(201);
    let one = format!("{p}/conversations/{}", v.conversation_id);
    let now = merchant_admin::clock::Clock::now(&*app.clock);
    let at = |h: i64| (now + chrono::Duration::hours(h)).to_rfc3339();
    let snooze = |until: String| json!({"status": "snoozed", "snoozed_until": until});
    app.call(patch(), &one, &owner, Some(snooze(at(1))))
        .await
        .expect(200);
    // Snoozed again, for longer: the first time passes without waking it.
    app.call(patch(), &one, &owner, Some(snooze(at(3))))
        .await
        .expect(200);
    let mut team = app.team_socket(&owner, &store_id).await;
    let drain = || async {
        while merchant_admin::jobs::run_once(&app.state).await.unwrap()
            != merchant_admin::jobs::Outcome::Empty
        {}
    };
    app.clock.advance(chrono::Duration::hours(2));
    drain().await;
    let row = app.get_as(&one, &owner).await;
    assert_eq!(row.body["status"], "snoozed");

    app.clock
        .advance(chrono::Duration::hours(1) + chrono::Duration::seconds(1));
    let updated = loop {
        drain().await;
        let f = team.next_of("conversation:updated").await;
        if f["data"]["status"] == "open" {
            break f;
        }
    };
    assert_eq!(updated["conversation_id"], v.conversation_id.as_str());
    assert_eq!(updated["data"]["snoozed_until"], json!(null));
    let row = app.get_as(&one, &owner).await;
    assert_eq!(row.body["status"], "open");
    let counts = app
        .get_as(&format!("{p}/conversations/counts"), &owner)
        .await;
    assert_eq!(
        (counts.body["snoozed"].clone(), counts.body["open"].clone()),
        (json!(0), json!(1))
    );
}

#[tokio::test]
async fn a_chat_conversation_nobody_wrote_in_is_deleted_a_day_later() {
    let app = crate::support::spawn_app_with(|c| c.workers = 0).await;
    let (owner, p) = store(&app).await;
    let key = app.chat_channel(&owner, &p, json!([])).await;
    let empty = app.visitor(&key, json!({})).await;
    let spoken = app.visitor(&key, json!({})).await;
    app.visitor_says(&spoken, "hi").await.expect(201);
    let read = |v: &crate::support::Visitor| {
        app.send(
            app.client
                .get(app.url(&format!("{}/messages", v.path)))
                .header("x-visitor-token", &v.token),
        )
    };
    app.clock.advance(chrono::Duration::hours(23));
    app.run_cleanup().await;
    read(&empty).await.expect(200);
    app.clock.advance(chrono::Duration::hours(2));
    app.run_cleanup().await;
    read(&empty).await.expect_error(404, "not_found");
    read(&spoken).await.expect(200);
}

#[tokio::test]
async fn a_messaging_app_number_id_is_digits_only() {
    let app = spawn_app().await;
    let (owner, p) = store(&app).await;
    for bad in ["123/other_edge?x=y#", "../1", "12 3", ""] {
        app.call(
            post(),
            &format!("{p}/channels"),
            &owner,
            Some(json!({"kind": "msgapp", "name": "M",
                        "settings": {"phone_number_id": bad, "app_secret": "a", "verify_token": "v"}})),
        )
        .await
        .expect_error(422, "validation_failed");
    }
    let list = app.get_as(&format!("{p}/channels"), &owner).await;
    assert_eq!(list.body["data"].as_array().unwrap().len(), 0);
}
