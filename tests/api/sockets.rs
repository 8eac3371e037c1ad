//! The inbox's realtime sockets (issue 15; spec 4.9, 5 rule 8, 6.2–6.4, 7).

use std::time::Duration;

use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::{TestApp, Visitor, Ws, patch, post, spawn_app, spawn_app_with};

struct Inbox {
    owner: String,
    store_id: String,
    p: String,
    key: String,
}

async fn inbox(app: &TestApp) -> Inbox {
    let (owner, _) = app.member("owner@example.com").await;
    let store_id = app.open_store(&owner, "Org").await;
    let p = format!("/v1/stores/{store_id}");
    let key = app.chat_channel(&owner, &p, json!([])).await;
    Inbox {
        owner,
        store_id,
        p,
        key,
    }
}

/// Turns the store's chat channel off.
async fn turn_off_chat(app: &TestApp, i: &Inbox) {
    let ch = app.get_as(&format!("{}/channels", i.p), &i.owner).await;
    let channel = format!(
        "{}/channels/{}",
        i.p,
        ch.body["data"][0]["id"].as_str().unwrap()
    );
    app.call(patch(), &channel, &i.owner, Some(json!({"enabled": false})))
        .await
        .expect(200);
}

async fn agent(app: &TestApp, i: &Inbox) -> Ws {
    agent_as(app, i, &i.owner).await
}

/// A team socket on the store with `token` (a session's or a store token), past its hello.
async fn agent_as(app: &TestApp, i: &Inbox, token: &str) -> Ws {
    let mut ws = app.team_socket(token, &i.store_id).await;
    let hello = ws.next().await.unwrap();
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["store_id"], i.store_id.as_str());
    ws
}

/// A fresh ticket's socket path.
async fn ticket_url(app: &TestApp, i: &Inbox) -> String {
    let t = app
        .call(
            post(),
            &format!("{}/conversations/ws-ticket", i.p),
            &i.owner,
            None,
        )
        .await;
    t.expect(201);
    format!(
        "/v1/ws/conversations?ticket={}",
        t.body["ticket"].as_str().unwrap()
    )
}

async fn widget(app: &TestApp, i: &Inbox, v: &Visitor) -> Ws {
    let mut ws = app
        .ws(
            &format!(
                "/ws/widget?key={}&conversation_id={}&token={}",
                i.key, v.conversation_id, v.token
            ),
            &[],
        )
        .await
        .expect("widget socket opens");
    assert_eq!(ws.next().await.unwrap()["type"], "hello");
    ws
}

#[tokio::test]
async fn events_reach_the_team_and_the_shopper_as_the_spec_shapes_them() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let mut team = agent(&app, &i).await;
    assert_eq!(
        team.next_of("presence").await["data"]["online"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // A conversation that never gets a message announces nothing; its first message
    // announces it once, just before that message.
    let v = app.visitor(&i.key, json!({"name": "Ana"})).await;
    let mut shopper = widget(&app, &i, &v).await;
    let online = team.next_of("presence").await;
    assert_eq!(online["data"]["visitor_online"], true);
    app.visitor_says(&v, "hello").await.expect(201);
    let new = team.next().await.unwrap();
    assert_eq!(new["type"], "conversation:new");
    assert_eq!(new["data"]["display_name"], "Ana");
    assert_eq!(new["conversation_id"], v.conversation_id.as_str());
    for field in ["store_id", "audience", "origin"] {
        assert!(new.get(field).is_some(), "{field} in the envelope");
    }
    let msg = team.next().await.unwrap();
    assert_eq!(msg["type"], "message:new");
    assert_eq!(msg["data"]["text"], "hello");
    assert_eq!(team.next().await.unwrap()["type"], "conversation:updated");
    app.visitor_says(&v, "again").await.expect(201);
    assert_eq!(
        team.next().await.unwrap()["type"],
        "message:new",
        "announced once"
    );
    // The shopper sees their own messages too.
    assert_eq!(
        shopper.next_of("message:new").await["data"]["text"],
        "hello"
    );
    assert_eq!(
        shopper.next_of("message:new").await["data"]["text"],
        "again"
    );

    // The team's reply reaches the shopper; the widget's conversation:updated carries four
    // fields only. Notes never reach the shopper.
    let one = format!("{}/conversations/{}", i.p, v.conversation_id);
    app.call(
        post(),
        &format!("{one}/notes"),
        &i.owner,
        Some(json!({"text": "secret"})),
    )
    .await
    .expect(201);
    assert_eq!(team.next_of("note:new").await["data"]["text"], "secret");
    app.call(
        post(),
        &format!("{one}/messages"),
        &i.owner,
        Some(json!({"text": "hi Ana"})),
    )
    .await
    .expect(201);
    let reply = shopper.next_of("message:new").await;
    assert_eq!(reply["data"]["text"], "hi Ana");
    let updated = shopper.next_of("conversation:updated").await;
    let mut fields: Vec<&str> = updated["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "assignee_user_id",
            "bot_active",
            "status",
            "unread_for_visitor"
        ]
    );

    // A change by the team reaches both: the whole conversation to the team, four fields to
    // the shopper.
    app.call(
        patch(),
        &one,
        &i.owner,
        Some(json!({"status": "pending", "labels": ["vip"]})),
    )
    .await
    .expect(200);
    // Earlier updates (the reply's) may still be queued: read up to this one.
    let mut mine = team.next_of("conversation:updated").await;
    while mine["data"]["status"] != "pending" {
        mine = team.next_of("conversation:updated").await;
    }
    assert_eq!(mine["data"]["labels"], json!(["vip"]));
    let mut theirs = shopper.next_of("conversation:updated").await;
    while theirs["data"]["status"] != "pending" {
        theirs = shopper.next_of("conversation:updated").await;
    }
    assert!(theirs["data"].get("labels").is_none());

    // Typing both ways; the shopper does not see its own.
    shopper
        .send(json!({"type": "typing", "typing": true}))
        .await;
    let t = team.next_of("typing").await;
    assert_eq!(t["data"]["from"], "visitor");
    team.send(json!({"type": "typing", "conversation_id": v.conversation_id, "typing": true}))
        .await;
    let t = shopper.next_of("typing").await;
    assert_eq!(t["data"]["from"], "agent");
    assert!(t["data"].get("user_id").is_none());
    app.call(
        post(),
        &format!("{one}/typing"),
        &i.owner,
        Some(json!({"typing": false})),
    )
    .await
    .expect(204);
    assert_eq!(shopper.next_of("typing").await["data"]["typing"], false);

    // The shopper reads: the team hears it.
    app.call(post(), &format!("{}/read", v.path), &v.token, None)
        .await
        .expect(204);
    let read = team.next_of("messages:read").await;
    assert_eq!(read["data"]["by"], "visitor");

    // Pings are answered; the shopper leaving is presence for the team.
    shopper.send(json!({"type": "ping"})).await;
    assert_eq!(shopper.next_of("pong").await["type"], "pong");
    drop(shopper);
    let gone = team.next_of("presence").await;
    assert_eq!(gone["data"]["visitor_online"], false);
}

#[tokio::test]
async fn handshake_failures_answer_before_the_upgrade() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let refused = |r: Result<Ws, (u16, serde_json::Value)>| match r {
        Ok(_) => panic!("the socket opened"),
        Err((status, body)) => (status, body["code"].as_str().unwrap_or("").to_owned()),
    };
    let auth = format!("Bearer {}", i.owner);
    let bearer = [("authorization", auth.as_str())];
    assert_eq!(
        refused(
            app.ws(
                &format!("/v1/ws/conversations?store_id={}", i.store_id),
                &[]
            )
            .await
        ),
        (401, "unauthorized".into())
    );
    assert_eq!(
        refused(app.ws("/v1/ws/conversations", &bearer).await),
        (400, "store_id_required".into())
    );
    assert_eq!(
        refused(app.ws("/v1/ws/conversations?ticket=wst_nope", &[]).await),
        (401, "invalid_ticket".into())
    );
    // A store token without conversations.read.
    let token = app
        .store_token(&i.owner, &i.store_id, json!(["orders.read"]))
        .await;
    let auth = format!("Bearer {token}");
    assert_eq!(
        refused(
            app.ws(
                &format!("/v1/ws/conversations?store_id={}", i.store_id),
                &[("authorization", &auth)]
            )
            .await
        ),
        (403, "missing_permission".into())
    );

    // Tickets: single use, 60 seconds.
    let ticket_path = format!("{}/conversations/ws-ticket", i.p);
    let t = app.call(post(), &ticket_path, &i.owner, None).await;
    t.expect(201);
    assert_eq!(t.body["expires_in"], 60);
    let ticket = t.body["ticket"].as_str().unwrap().to_owned();
    let url = format!("/ws/conversations?ticket={ticket}");
    let mut ws = app.ws(&url, &[]).await.expect("a fresh ticket opens");
    assert_eq!(ws.next().await.unwrap()["type"], "hello");
    assert_eq!(
        refused(app.ws(&url, &[]).await),
        (401, "invalid_ticket".into())
    );
    let late = app.call(post(), &ticket_path, &i.owner, None).await;
    app.clock.advance(chrono::Duration::seconds(61));
    let url = format!(
        "/ws/conversations?ticket={}",
        late.body["ticket"].as_str().unwrap()
    );
    assert_eq!(
        refused(app.ws(&url, &[]).await),
        (401, "invalid_ticket".into())
    );

    // The widget's socket: unknown key 404, bad token 401, a turned-off channel 403.
    let v = app.visitor(&i.key, json!({})).await;
    let w = |key: &str, token: &str| {
        format!(
            "/v1/ws/widget?key={key}&conversation_id={}&token={token}",
            v.conversation_id
        )
    };
    assert_eq!(
        refused(app.ws(&w("chk_nope", &v.token), &[]).await),
        (404, "not_found".into())
    );
    assert_eq!(
        refused(app.ws(&w(&i.key, "vt_bad"), &[]).await),
        (401, "unauthorized".into())
    );
    turn_off_chat(&app, &i).await;
    assert_eq!(
        refused(app.ws(&w(&i.key, &v.token), &[]).await),
        (403, "forbidden".into())
    );
}

#[tokio::test]
async fn a_team_socket_outlives_its_token_but_not_its_session_or_membership() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let (staff, staff_id) = app.member("staff@example.com").await;
    app.add_to_store(&i.store_id, &staff_id, "staff").await;

    let mut staff_ws = agent_as(&app, &i, &staff).await;
    // The access tokens expire; the sockets stay, and still get events.
    let mut owner_ws = agent(&app, &i).await;
    app.clock.advance(chrono::Duration::days(2));
    let v = app.visitor(&i.key, json!({})).await;
    app.visitor_says(&v, "still there?").await.expect(201);
    assert_eq!(
        owner_ws.next_of("message:new").await["data"]["text"],
        "still there?"
    );
    assert_eq!(
        staff_ws.next_of("message:new").await["data"]["text"],
        "still there?"
    );

    // Removing a member closes their socket.
    let fresh = app.login_as("owner@example.com", "second device").await;
    let fresh = fresh.body.clone();
    let owner_now = fresh["token"].as_str().unwrap().to_owned();
    app.call(
        reqwest::Method::DELETE,
        &format!("{}/members/{staff_id}", i.p),
        &owner_now,
        None,
    )
    .await
    .expect(204);
    staff_ws.until_closed().await;

    // Ending the session (a device revoked from another one) closes its socket.
    let sessions = app.get_as("/v1/me/sessions", &owner_now).await;
    sessions.expect(200);
    let first = sessions.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["current"] == false)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call(
        reqwest::Method::DELETE,
        &format!("/v1/me/sessions/{first}"),
        &owner_now,
        None,
    )
    .await
    .expect(204);
    owner_ws.until_closed().await;
}

#[tokio::test]
async fn a_silent_socket_is_closed_after_the_idle_timeout() {
    let app = spawn_app_with(|c| {
        c.ws_ping_interval = Duration::from_millis(50);
        c.ws_idle_timeout = Duration::from_millis(200);
    })
    .await;
    let i = inbox(&app).await;
    let auth = format!("Bearer {}", i.owner);
    let ws = app
        .ws(
            &format!("/v1/ws/conversations?store_id={}", i.store_id),
            &[("authorization", &auth)],
        )
        .await
        .expect("opens");
    // A client that never reads never answers the pings: the server gives up on it.
    crate::support::wait_until("the idle socket to be dropped", || async {
        app.state.hub.open_sockets().0 == 0
    })
    .await;
    drop(ws);
}

#[tokio::test]
async fn turning_a_channel_off_closes_its_shoppers_sockets() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let v = app.visitor(&i.key, json!({})).await;
    let mut shopper = widget(&app, &i, &v).await;
    turn_off_chat(&app, &i).await;
    shopper.until_closed().await;
    crate::support::wait_until("the hub to forget the socket", || async {
        app.state.hub.open_sockets().1 == 0
    })
    .await;
}

#[tokio::test]
async fn only_a_member_who_may_write_is_shown_typing() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let (viewer, viewer_id) = app.member("viewer@example.com").await;
    app.add_to_store(&i.store_id, &viewer_id, "viewer").await;
    let v = app.visitor(&i.key, json!({})).await;
    let mut shopper = widget(&app, &i, &v).await;
    let mut watching = app.team_socket(&viewer, &i.store_id).await;
    watching
        .send(json!({"type": "typing", "conversation_id": v.conversation_id, "typing": true}))
        .await;
    // Frames of one socket are handled in order: once the pong is back, the typing frame
    // has been dealt with.
    watching.send(json!({"type": "ping"})).await;
    watching.next_of("pong").await;
    app.call(
        post(),
        &format!("{}/conversations/{}/typing", i.p, v.conversation_id),
        &i.owner,
        Some(json!({"typing": false})),
    )
    .await
    .expect(204);
    let first = shopper.next_of("typing").await;
    assert_eq!(
        first["data"]["typing"], false,
        "the viewer's frame went nowhere"
    );
}

#[tokio::test]
async fn a_flood_of_client_frames_is_cut_to_the_sockets_budget() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let v = app.visitor(&i.key, json!({})).await;
    let mut shopper = widget(&app, &i, &v).await;
    let mut team = agent(&app, &i).await;
    for _ in 0..200 {
        team.send(json!({"type": "typing", "conversation_id": v.conversation_id, "typing": true}))
            .await;
    }
    // Each typing frame the server passed on reaches the shopper; count them until quiet.
    let mut passed = 0;
    while let Ok(Some(f)) =
        tokio::time::timeout(std::time::Duration::from_millis(700), shopper.next()).await
    {
        if f["type"] == "typing" {
            passed += 1;
        }
    }
    assert!(
        (1..=25).contains(&passed),
        "{passed} of 200 typing frames passed (budget: 20 at once, 10 a second)"
    );
}

#[tokio::test]
async fn a_ticket_is_not_spent_on_a_request_that_cannot_upgrade_and_widget_params_are_checked() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let url = ticket_url(&app, &i).await;
    app.send(app.client.get(app.url(&url)))
        .await
        .expect_error(400, "bad_request");
    let mut ws = app
        .ws(&url, &[])
        .await
        .expect("the ticket still opens a socket");
    assert_eq!(ws.next().await.unwrap()["type"], "hello");

    // A widget socket without its key or conversation answers the error shape.
    for path in ["/v1/ws/widget", &format!("/v1/ws/widget?key={}", i.key)] {
        match app.ws(path, &[]).await {
            Ok(_) => panic!("opened without its parameters"),
            Err((status, body)) => {
                assert_eq!(status, 404, "{path}");
                assert_eq!(body["code"], "not_found", "{path}");
            }
        }
    }
}

#[tokio::test]
async fn a_store_token_socket_closes_when_the_token_is_revoked_or_expires() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let now = merchant_admin::clock::Clock::now(&*app.clock);
    let tokens = format!("{}/api-tokens", i.p);
    let mut made = Vec::new();
    for expires in [None, Some((now + chrono::Duration::hours(1)).to_rfc3339())] {
        let r = app
            .call(
                post(),
                &tokens,
                &i.owner,
                Some(
                    json!({"name": "inbox bot", "scopes": ["conversations.read"],
                            "expires_at": expires}),
                ),
            )
            .await;
        r.expect(201);
        made.push((
            r.body["id"].as_str().unwrap().to_owned(),
            r.body["value"].as_str().unwrap().to_owned(),
        ));
    }
    let app = &app;
    let open = |value: &str| {
        let auth = format!("Bearer {value}");
        let path = format!("/v1/ws/conversations?store_id={}", i.store_id);
        async move {
            let mut ws = app
                .ws(&path, &[("authorization", &auth)])
                .await
                .expect("a token with conversations.read opens a socket");
            assert_eq!(ws.next().await.unwrap()["type"], "hello");
            ws
        }
    };
    let mut revoked = open(&made[0].1).await;
    let mut expiring = open(&made[1].1).await;

    app.call(
        reqwest::Method::DELETE,
        &format!("{tokens}/{}", made[0].0),
        &i.owner,
        None,
    )
    .await
    .expect(204);
    revoked.until_closed().await;

    // Nothing changes in the tables when a token reaches its expiry: the periodic check
    // closes it (the test's clock jumps past both the expiry and the check's minute).
    app.clock.advance(chrono::Duration::hours(2));
    expiring.until_closed().await;
}

#[tokio::test]
async fn a_ticket_opens_one_socket_even_when_used_at_once() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let url = ticket_url(&app, &i).await;
    let tries = futures::future::join_all((0..8).map(|_| app.ws(&url, &[]))).await;
    let opened = tries.iter().filter(|r| r.is_ok()).count();
    assert_eq!(opened, 1);
    for r in tries.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!((r.0, r.1["code"].as_str()), (401, Some("invalid_ticket")));
    }
}

#[tokio::test]
async fn a_reply_that_rolls_back_is_never_published() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let v = app.visitor(&i.key, json!({})).await;
    app.visitor_says(&v, "hello?").await.expect(201);
    let mut team = agent(&app, &i).await;
    let mut shopper = widget(&app, &i, &v).await;
    let messages = format!("{}/conversations/{}/messages", i.p, v.conversation_id);
    fail::cfg("inbox::reply_before_commit", "return(doomed reply)").unwrap();
    let r = app
        .call(
            post(),
            &messages,
            &i.owner,
            Some(json!({"text": "doomed reply"})),
        )
        .await;
    fail::remove("inbox::reply_before_commit");
    r.expect_error(500, "internal_error");
    app.call(
        post(),
        &messages,
        &i.owner,
        Some(json!({"text": "kept reply"})),
    )
    .await
    .expect(201);
    // The first message either side sees is the one that was committed.
    assert_eq!(
        team.next_of("message:new").await["data"]["text"],
        "kept reply"
    );
    assert_eq!(
        shopper.next_of("message:new").await["data"]["text"],
        "kept reply"
    );
    let list = app.get_as(&messages, &i.owner).await;
    let texts: Vec<&str> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(!texts.contains(&"doomed reply"), "{texts:?}");
}

#[tokio::test]
async fn a_reader_too_slow_for_its_queue_gets_resync_instead_of_a_growing_backlog() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let v = app.visitor(&i.key, json!({})).await;
    app.visitor_says(&v, "hi").await.expect(201);
    // A client that stops reading, with a tiny receive buffer so the kernel holds little.
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let stream = sock.connect(app.addr).await.unwrap();
    let mut req = format!(
        "ws://{}/v1/ws/conversations?store_id={}",
        app.addr, i.store_id
    )
    .into_client_request()
    .unwrap();
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", i.owner).parse().unwrap(),
    );
    let (mut slow, _) = tokio_tungstenite::client_async(req, stream).await.unwrap();

    // 800 replies of 4,000 characters: far more than the socket's queue (256 frames) and
    // the kernel's buffers hold.
    let messages = format!("{}/conversations/{}/messages", i.p, v.conversation_id);
    let text = "x".repeat(4000);
    let sends = (0..8).map(|_| {
        let (app, messages, owner, text) = (&app, &messages, &i.owner, &text);
        async move {
            for _ in 0..100 {
                app.call(post(), messages, owner, Some(json!({"text": text})))
                    .await
                    .expect(201);
            }
        }
    });
    futures::future::join_all(sends).await;

    // Reading again: a resync comes, and far fewer than the 800 messages (the backlog was
    // dropped, not kept).
    let (mut resync, mut delivered) = (false, 0);
    while let Ok(Some(Ok(frame))) = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        futures::StreamExt::next(&mut slow),
    )
    .await
    {
        let tokio_tungstenite::tungstenite::Message::Text(t) = frame else {
            continue;
        };
        let f: serde_json::Value = serde_json::from_str(&t).unwrap();
        match f["type"].as_str() {
            Some("resync") => resync = true,
            Some("message:new") => delivered += 1,
            _ => {}
        }
    }
    assert!(resync, "the slow reader was told to resync");
    assert!(
        delivered < 800,
        "{delivered} of 800 delivered: the backlog was kept"
    );
}

#[tokio::test]
async fn a_deactivated_users_socket_is_closed() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let (staff, staff_id) = app.member("staff@example.com").await;
    app.add_to_store(&i.store_id, &staff_id, "staff").await;
    let mut ws = agent_as(&app, &i, &staff).await;
    // The operator's CLI is another process writing the same database file.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_merchant-admin"))
        .args(["users", "deactivate", "staff@example.com", "--data-dir"])
        .arg(app.data_dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ws.until_closed().await;
}

/// An upgraded socket gives its connection slot back: with room for two HTTP connections
/// (the test client keeps one), three sockets open one after the other and a new
/// connection is still served.
#[tokio::test]
async fn an_open_socket_holds_no_connection_slot() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app_with(|c| c.max_connections = 2).await;
    let i = inbox(&app).await;
    let mut open = Vec::new();
    for _ in 0..3 {
        let ws = tokio::time::timeout(Duration::from_secs(10), agent(&app, &i))
            .await
            .expect("no open socket holds a connection slot");
        open.push(ws);
    }
    let mut fresh = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    fresh
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), fresh.read_to_end(&mut buf))
        .await
        .expect("a new connection is served while the sockets are open")
        .unwrap();
    let res = String::from_utf8_lossy(&buf);
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
}

/// Past `--max-sockets` (team and widget sockets together) the handshake answers 503
/// `service_unavailable` with `Retry-After`, before any upgrade; a socket that closes makes
/// room again.
#[tokio::test]
async fn sockets_past_max_sockets_are_refused_with_retry_after() {
    let app = spawn_app_with(|c| c.max_sockets = 2).await;
    let i = inbox(&app).await;
    let team = agent(&app, &i).await;
    let v = app.visitor(&i.key, json!({})).await;
    let _shopper = widget(&app, &i, &v).await;

    let auth = format!("Bearer {}", i.owner);
    let mut req = format!(
        "ws://{}/v1/ws/conversations?store_id={}",
        app.addr, i.store_id
    )
    .into_client_request()
    .unwrap();
    req.headers_mut()
        .insert("authorization", auth.parse().unwrap());
    let Err(tokio_tungstenite::tungstenite::Error::Http(refused)) =
        tokio_tungstenite::connect_async(req).await
    else {
        panic!("a third socket was not refused");
    };
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    let body: serde_json::Value =
        serde_json::from_slice(refused.body().as_deref().unwrap()).unwrap();
    assert_eq!(body["code"], "service_unavailable");
    // A ticket is not burned by a refusal (unversioned path, as clients may use).
    let by_ticket = ticket_url(&app, &i)
        .await
        .trim_start_matches("/v1")
        .to_owned();
    let (status, body) = app.ws(&by_ticket, &[]).await.err().expect("refused");
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("service_unavailable"))
    );
    let (status, _) = app
        .ws(
            &format!(
                "/ws/widget?key={}&conversation_id={}&token={}",
                i.key, v.conversation_id, v.token
            ),
            &[],
        )
        .await
        .err()
        .expect("a widget socket counts too");
    assert_eq!(status, 503);

    // One closes: its slot is free once the server has seen it go.
    drop(team);
    let mut again = None;
    for _ in 0..1000 {
        match app.ws(&by_ticket, &[]).await {
            Ok(ws) => {
                again = Some(ws);
                break;
            }
            Err((503, _)) => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(other) => panic!("refused: {other:?}"),
        }
    }
    let mut again = again.expect("the closed socket gave its slot back");
    assert_eq!(again.next().await.unwrap()["type"], "hello");
}

/// Sockets opened with one credential are re-checked together (once): removing the member
/// closes every one of them.
#[tokio::test]
async fn every_socket_of_a_removed_member_is_closed() {
    let app = spawn_app().await;
    let i = inbox(&app).await;
    let (staff, staff_id) = app.member("staff@example.com").await;
    app.add_to_store(&i.store_id, &staff_id, "staff").await;
    let auth = format!("Bearer {staff}");
    let path = format!("/v1/ws/conversations?store_id={}", i.store_id);
    let mut tabs = Vec::new();
    for _ in 0..3 {
        tabs.push(
            app.ws(&path, &[("authorization", &auth)])
                .await
                .expect("opens"),
        );
    }
    let _owner = agent(&app, &i).await;
    app.call(
        reqwest::Method::DELETE,
        &format!("{}/members/{staff_id}", i.p),
        &i.owner,
        None,
    )
    .await
    .expect(204);
    for tab in &mut tabs {
        tab.until_closed().await;
    }
    crate::support::wait_until("only the owner's socket to be left", || async {
        app.state.hub.open_sockets().0 == 1
    })
    .await;
}
