//! Message attachments (issue 15; spec 2.8): a team reply sent as multipart keeps its files,
//! lists them with absolute links, and serves each back to the team or to the widget that
//! holds the conversation's visitor token; limits answer 413/422 and store nothing.

use serde_json::json;

use crate::support::{TestApp, Visitor, spawn_app};

/// A PNG's first bytes: enough for a type check, not a real image.
fn png() -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..3000u32).map(|i| (i % 251).to_le_bytes()[0]));
    v
}

/// An owner's store with a shopper's conversation in it: (owner, store path, visitor,
/// the team's messages path).
async fn conversation(app: &TestApp) -> (String, String, Visitor, String) {
    let (owner, _) = app.member("owner@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    let p = format!("/v1/stores/{store}");
    let key = app.chat_channel(&owner, &p, json!([])).await;
    let v = app.visitor(&key, json!({"name": "Ana"})).await;
    app.visitor_says(&v, "Can you send a photo?")
        .await
        .expect(201);
    let messages = format!("{p}/conversations/{}/messages", v.conversation_id);
    (owner, p, v, messages)
}

async fn message_count(app: &TestApp, owner: &str, messages: &str) -> usize {
    let r = app.get_as(messages, owner).await;
    r.expect(200);
    r.body["data"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_reply_with_files_keeps_them_and_serves_each_with_its_type() {
    let app = spawn_app().await;
    let (owner, _, v, messages) = conversation(&app).await;
    let store_id = messages.split('/').nth(3).unwrap().to_owned();
    let mut team = app.team_socket(&owner, &store_id).await;
    let page = b"<html><script>alert(1)</script></html>".to_vec();

    let r = app
        .send_files(
            &owner,
            &messages,
            Some("Here it is, and the size chart."),
            &[
                ("../jacket.png", "image/png", png()),
                ("size chart.html", "text/html", page.clone()),
            ],
        )
        .await;
    r.expect(201);
    let m = &r.body["message"];
    assert_eq!(m["text"], "Here it is, and the size chart.");
    let files = m["attachments"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["index"], 0);
    assert_eq!(files[0]["kind"], "image");
    assert_eq!(files[0]["name"], "jacket.png", "no directory in a name");
    assert_eq!(files[0]["mime_type"], "image/png");
    assert_eq!(files[0]["size"], png().len());
    assert_eq!(files[1]["kind"], "file");
    let path = files[0]["path"].as_str().unwrap().to_owned();
    assert_eq!(
        path,
        format!("{messages}/{}/attachments/0", m["id"].as_str().unwrap())
    );
    assert_eq!(
        files[0]["url"].as_str().unwrap(),
        format!("http://{}{path}", app.addr),
        "absolute on the server's address"
    );

    // The socket and the list carry the same files.
    let frame = team.next_of("message:new").await;
    assert_eq!(frame["data"]["attachments"], m["attachments"]);
    let list = app.get_as(&messages, &owner).await;
    let listed = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == m["id"])
        .cloned();
    assert_eq!(listed.unwrap()["attachments"], m["attachments"]);

    // The team reads a file back byte for byte, with its type; an image shows inline.
    let got = app
        .send(app.client.get(app.url(&path)).bearer_auth(&owner))
        .await;
    got.expect(200);
    assert_eq!(got.header("content-type"), Some("image/png"));
    assert!(
        got.header("content-disposition")
            .unwrap()
            .starts_with("inline")
    );
    let bytes = app
        .client
        .get(app.url(&path))
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(bytes.as_ref(), png().as_slice());

    // A page someone uploads is a download that runs nothing if opened.
    let html = files[1]["path"].as_str().unwrap();
    let got = app
        .send(app.client.get(app.url(html)).bearer_auth(&owner))
        .await;
    got.expect(200);
    assert_eq!(got.text.as_bytes(), page.as_slice());
    assert!(
        got.header("content-disposition")
            .unwrap()
            .starts_with("attachment")
    );
    assert!(
        got.header("content-disposition")
            .unwrap()
            .contains("filename*=UTF-8''size%20chart.html")
    );
    assert_eq!(got.header("x-content-type-options"), Some("nosniff"));
    assert!(
        got.header("content-security-policy")
            .unwrap()
            .starts_with("sandbox")
    );

    // The widget fetches it with its visitor token, in either header.
    let got = app
        .send(
            app.client
                .get(app.url(&path))
                .header("x-visitor-token", &v.token),
        )
        .await;
    got.expect(200);
    let got = app
        .send(app.client.get(app.url(&path)).bearer_auth(&v.token))
        .await;
    got.expect(200);
}

#[tokio::test]
async fn files_are_refused_without_the_right_credentials_and_beyond_the_message() {
    let app = spawn_app().await;
    let (owner, p, v, messages) = conversation(&app).await;
    let r = app
        .send_files(&owner, &messages, None, &[("a.png", "image/png", png())])
        .await;
    r.expect(201);
    assert_eq!(r.body["message"]["text"], "", "a file needs no text");
    let path = r.body["message"]["attachments"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();

    let anonymous = app.send(app.client.get(app.url(&path))).await;
    anonymous.expect(401);
    let wrong = app
        .send(
            app.client
                .get(app.url(&path))
                .header("x-visitor-token", "vt_not-it"),
        )
        .await;
    wrong.expect(401);
    // Another shopper's token opens only their own conversation.
    let key = app.get_as(&format!("{p}/channels"), &owner).await.body["data"][0]["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let other = app.visitor(&key, json!({})).await;
    let theirs = app
        .send(
            app.client
                .get(app.url(&path))
                .header("x-visitor-token", &other.token),
        )
        .await;
    theirs.expect(401);
    // Another store's owner does not learn it exists; a missing index is 404.
    let (stranger, _) = app.member("stranger@example.com").await;
    app.open_store(&stranger, "Other").await;
    app.send(app.client.get(app.url(&path)).bearer_auth(&stranger))
        .await
        .expect(404);
    let beyond = path.replace("/attachments/0", "/attachments/1");
    app.send(app.client.get(app.url(&beyond)).bearer_auth(&owner))
        .await
        .expect(404);
    // The same file under another conversation of the store is not found.
    let moved = path.replace(&v.conversation_id, &other.conversation_id);
    app.send(app.client.get(app.url(&moved)).bearer_auth(&owner))
        .await
        .expect(404);
}

#[tokio::test]
async fn too_large_too_many_or_empty_sends_store_nothing() {
    let app = spawn_app().await;
    let (owner, _, _, messages) = conversation(&app).await;
    let before = message_count(&app, &owner, &messages).await;

    let big = vec![7u8; 16 * 1024 * 1024 + 1];
    let r = app
        .send_files(
            &owner,
            &messages,
            Some("big"),
            &[("big.bin", "application/zip", big)],
        )
        .await;
    r.expect_error(413, "payload_too_large");
    // Exactly 16 MiB is allowed.
    let r = app
        .send_files(
            &owner,
            &messages,
            None,
            &[("max.bin", "application/zip", vec![1u8; 16 * 1024 * 1024])],
        )
        .await;
    r.expect(201);
    assert_eq!(
        r.body["message"]["attachments"][0]["size"],
        16 * 1024 * 1024
    );

    let five: Vec<_> = (0..5)
        .map(|i| (["a", "b", "c", "d", "e"][i], "image/png", png()))
        .collect();
    let r = app.send_files(&owner, &messages, Some("five"), &five).await;
    r.expect(422);
    let r = app.send_files(&owner, &messages, Some("  "), &[]).await;
    r.expect_error(422, "empty_message");
    let long = "x".repeat(4097);
    let r = app
        .send_files(
            &owner,
            &messages,
            Some(&long),
            &[("a.png", "image/png", png())],
        )
        .await;
    r.expect_error(422, "message_too_long");
    assert_eq!(message_count(&app, &owner, &messages).await, before + 1);
}
