//! Talking HTTP to the app under test: requests, and replies whose status assertions print
//! the body on mismatch.

use axum::http::StatusCode;
use serde_json::Value;

use super::TestApp;

/// The response of a call: status, headers and the body as JSON (Null when empty or not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status, printing the body on mismatch.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text
        );
        self
    }

    /// Asserts the spec's error shape with the given status and code.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) -> &Self {
        self.expect(status);
        assert_eq!(self.body["code"], code, "body: {}", self.text);
        assert!(
            self.body["error"].is_string(),
            "error message missing: {}",
            self.text
        );
        assert!(self.header("x-trace-id").is_some(), "x-trace-id missing");
        self
    }
}

pub fn post() -> reqwest::Method {
    reqwest::Method::POST
}
pub fn get() -> reqwest::Method {
    reqwest::Method::GET
}
pub fn patch() -> reqwest::Method {
    reqwest::Method::PATCH
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let res = req.send().await.expect("request failed to send");
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(self.client.get(self.url(path))).await
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Reply {
        self.send(self.client.post(self.url(path)).json(body)).await
    }

    /// A POST with an `Idempotency-Key`.
    pub async fn post_idem(&self, path: &str, key: &str, body: &Value) -> Reply {
        self.send(
            self.client
                .post(self.url(path))
                .header("idempotency-key", key)
                .json(body),
        )
        .await
    }

    /// A signed-in POST with an `Idempotency-Key`.
    pub async fn post_idem_as(&self, path: &str, token: &str, key: &str, body: &Value) -> Reply {
        self.send(
            self.client
                .post(self.url(path))
                .bearer_auth(token)
                .header("idempotency-key", key)
                .json(body),
        )
        .await
    }

    /// A signed-in request with an optional JSON body.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Reply {
        let mut req = self
            .client
            .request(method, self.url(path))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        self.send(req).await
    }

    pub async fn get_as(&self, path: &str, token: &str) -> Reply {
        self.send(self.client.get(self.url(path)).bearer_auth(token))
            .await
    }
}
