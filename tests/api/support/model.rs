//! A fake language model: an OpenAI-compatible `POST /v1/chat/completions` on loopback that
//! streams scripted answers (text deltas and tool calls, in the Chat Completions chunk
//! shapes), so the assistant's real provider client runs against it. And a reader of
//! server-sent events for the assistant's own streams.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

use super::TestApp;
use super::client::Reply;

/// One piece of a scripted answer.
pub enum Part {
    Text(String),
    /// A tool call, its arguments streamed in two pieces as real servers do.
    Call(String, Value),
    /// Waits until the test releases it (a model still thinking).
    Hold(Arc<Notify>),
    /// Ends the connection without finishing the answer.
    Break,
}

pub fn text(s: &str) -> Part {
    Part::Text(s.to_owned())
}

pub fn call(name: &str, args: Value) -> Part {
    Part::Call(name.to_owned(), args)
}

enum Answer {
    Stream(Vec<Part>),
    Status(u16, String),
}

#[derive(Default)]
struct Inner {
    requests: Mutex<Vec<Value>>,
    script: Mutex<VecDeque<Answer>>,
}

pub struct FakeModel {
    /// What `--assistant-api-base` is set to.
    pub base: String,
    inner: Arc<Inner>,
}

impl FakeModel {
    pub async fn start() -> Self {
        let inner = Arc::new(Inner::default());
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(complete))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            base: format!("http://{addr}/v1"),
            inner,
        }
    }

    /// Queues the next answer.
    pub fn answer(&self, parts: Vec<Part>) {
        self.inner
            .script
            .lock()
            .unwrap()
            .push_back(Answer::Stream(parts));
    }

    /// Queues an error answer.
    pub fn refuse(&self, status: u16, message: &str) {
        self.inner
            .script
            .lock()
            .unwrap()
            .push_back(Answer::Status(status, message.to_owned()));
    }

    /// Every request body the model was sent, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.inner.requests.lock().unwrap().clone()
    }
}

fn chunk(delta: &Value, finish: Option<&str>) -> Bytes {
    let c = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    Bytes::from(format!("data: {c}\n\n"))
}

async fn complete(State(inner): State<Arc<Inner>>, body: Bytes) -> Response {
    inner
        .requests
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap_or_default());
    let answer = inner.script.lock().unwrap().pop_front();
    let parts = match answer {
        Some(Answer::Stream(parts)) => parts,
        Some(Answer::Status(status, message)) => {
            return (
                StatusCode::from_u16(status).unwrap(),
                axum::Json(json!({"error": {"message": message}})),
            )
                .into_response();
        }
        None => vec![text("(no scripted answer)")],
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut calls = 0;
        for part in parts {
            let sent = match part {
                Part::Text(t) => tx.send(Ok(chunk(&json!({"content": t}), None))).await,
                Part::Call(name, args) => {
                    let args = args.to_string();
                    let (a, b) = args.split_at(args.len() / 2);
                    let first = json!({"tool_calls": [{"index": calls, "id": format!("call_{calls}"),
                        "type": "function", "function": {"name": name, "arguments": a}}]});
                    let second =
                        json!({"tool_calls": [{"index": calls, "function": {"arguments": b}}]});
                    calls += 1;
                    let _ = tx.send(Ok(chunk(&first, None))).await;
                    tx.send(Ok(chunk(&second, None))).await
                }
                Part::Hold(n) => {
                    n.notified().await;
                    Ok(())
                }
                Part::Break => return, // dropping the sender ends the body unfinished
            };
            if sent.is_err() {
                return;
            }
        }
        let finish = if calls > 0 { "tool_calls" } else { "stop" };
        let _ = tx.send(Ok(chunk(&json!({}), Some(finish)))).await;
        let _ = tx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// A server-sent event stream being read.
pub struct Events {
    res: reqwest::Response,
    buf: String,
}

impl Events {
    /// The next event (name, JSON data); None when the stream ended.
    pub async fn next(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..at + 2).collect();
                let (mut name, mut data) = (String::from("message"), String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some((
                    name,
                    serde_json::from_str(&data).expect("event data is JSON"),
                ));
            }
            let more = tokio::time::timeout(std::time::Duration::from_secs(20), self.res.chunk())
                .await
                .expect("the stream went quiet")
                .expect("the stream broke")?;
            self.buf.push_str(std::str::from_utf8(&more).unwrap());
        }
    }

    /// Reads up to and including the next event named `name`.
    pub async fn until(&mut self, name: &str) -> Vec<(String, Value)> {
        let mut seen = Vec::new();
        while let Some(e) = self.next().await {
            let last = e.0 == name;
            seen.push(e);
            if last {
                return seen;
            }
        }
        panic!("the stream ended before {name}: {seen:?}");
    }

    /// Every remaining event.
    pub async fn rest(mut self) -> Vec<(String, Value)> {
        let mut all = Vec::new();
        while let Some(e) = self.next().await {
            all.push(e);
        }
        all
    }
}

/// The names of `events`, in order.
pub fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

/// The text deltas of `events`, joined.
pub fn said(events: &[(String, Value)]) -> String {
    events
        .iter()
        .filter(|(n, _)| n == "text")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect()
}

/// The first event named `name`.
pub fn event<'a>(events: &'a [(String, Value)], name: &str) -> &'a Value {
    &events
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} event in {events:?}"))
        .1
}

impl TestApp {
    /// A POST that answers a stream: the stream, or the error reply.
    pub async fn stream(
        &self,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Result<Events, Reply> {
        let mut req = self.client.post(self.url(path)).bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let streaming = res
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if res.status() == StatusCode::OK && streaming {
            return Ok(Events {
                res,
                buf: String::new(),
            });
        }
        let (status, headers) = (res.status(), res.headers().clone());
        let text = res.text().await.unwrap();
        Err(Reply {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        })
    }
}
