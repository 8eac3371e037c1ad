//! A fake of the messaging app's Cloud API (a small local server, so ureq's real path runs)
//! and the messaging-app sign-in steps.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use merchant_admin::config::MsgappConfig;
use serde_json::{Value, json};

use super::client::Reply;
use super::{PASSWORD, TestApp, spawn_app_with};

pub const PHONE: &str = "+5511987654321";

/// What the fake Cloud API received: (path id, authorization header, JSON body).
pub type Received = Arc<Mutex<Vec<(String, String, Value)>>>;

#[derive(Clone)]
pub struct Fake {
    pub received: Received,
    pub status: Arc<Mutex<StatusCode>>,
    pub delay: Arc<Mutex<StdDuration>>,
}

/// Answers as the Cloud API does: the new message's id (`wamid.fake<n>`, n counting from 1)
/// on success, its error object otherwise.
async fn fake_messages(
    State(f): State<Fake>,
    Path(phone_id): Path<String>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, axum::Json<Value>) {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let n = {
        let mut received = f.received.lock().unwrap();
        received.push((
            phone_id,
            auth,
            serde_json::from_str(&body).unwrap_or(Value::Null),
        ));
        received.len()
    };
    let delay = *f.delay.lock().unwrap();
    tokio::time::sleep(delay).await;
    let status = *f.status.lock().unwrap();
    let answer = if status.is_success() {
        json!({"messaging_product": "whatsapp", "messages": [{"id": format!("wamid.fake{n}")}]})
    } else {
        json!({"error": {"message": "Re-engagement message", "type": "OAuthException",
                         "code": 131_047, "error_data": {"details": "outside the reply window"}}})
    };
    (status, axum::Json(answer))
}

pub async fn start_fake() -> (Fake, SocketAddr) {
    let fake = Fake {
        received: Received::default(),
        status: Arc::new(Mutex::new(StatusCode::OK)),
        delay: Arc::new(Mutex::new(StdDuration::ZERO)),
    };
    let app = Router::new()
        .route("/v20.0/{phone_id}/messages", post(fake_messages))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (fake, addr)
}

impl Fake {
    /// How many requests the fake received.
    pub fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }

    /// Makes the fake answer `status` from now on.
    pub fn answer(&self, status: StatusCode) {
        *self.status.lock().unwrap() = status;
    }

    pub fn last_code(&self) -> String {
        let r = self.received.lock().unwrap();
        let body = &r.last().expect("a message was sent").2;
        body["template"]["components"][0]["parameters"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// The `cloud` provider pointed at a fake listening on `addr`.
pub fn cloud_config(addr: SocketAddr) -> MsgappConfig {
    MsgappConfig::Cloud {
        api_base: format!("http://{addr}/v20.0/"),
        phone_number_id: "100000000001".into(),
        token: "cloud-token".into(),
        otp_template: "login_code".into(),
        timeout: StdDuration::from_millis(500),
    }
}

pub async fn cloud_app() -> (TestApp, Fake) {
    let (fake, addr) = start_fake().await;
    let app = spawn_app_with(move |c| c.msgapp = cloud_config(addr)).await;
    (app, fake)
}

impl TestApp {
    pub async fn as_user(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Value,
    ) -> Reply {
        self.send(
            self.client
                .request(method, self.url(path))
                .bearer_auth(token)
                .json(&body),
        )
        .await
    }

    /// Signs up, signs in and turns the messaging-app factor on through the Cloud API fake.
    pub async fn with_msgapp(&self, fake: &Fake, email: &str) -> String {
        let s = self.signed_in(email).await;
        let token = s["token"].as_str().unwrap().to_string();
        self.as_user(
            reqwest::Method::POST,
            "/v1/me/2fa/msgapp/enable",
            &token,
            json!({"phone_e164": PHONE}),
        )
        .await
        .expect(200);
        self.as_user(
            reqwest::Method::POST,
            "/v1/me/2fa/msgapp/confirm",
            &token,
            json!({"code": fake.last_code()}),
        )
        .await
        .expect(204);
        token
    }

    pub async fn msgapp_challenge(&self, email: &str) -> String {
        let r = self
            .post_json(
                "/v1/auth/login",
                &json!({"email": email, "password": PASSWORD}),
            )
            .await;
        assert_eq!(r.body["status"], "two_factor_required", "{}", r.text);
        r.body["challenge"].as_str().unwrap().to_string()
    }

    pub async fn otp_send(&self, challenge: &str) -> Reply {
        self.post_json("/v1/auth/otp/send", &json!({"challenge": challenge}))
            .await
    }

    pub async fn otp_verify(&self, challenge: &str, code: &str) -> Reply {
        self.post_json(
            "/v1/auth/otp/verify",
            &json!({"challenge": challenge, "code": code}),
        )
        .await
    }
}
