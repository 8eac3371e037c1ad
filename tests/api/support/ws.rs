//! A WebSocket client for the socket tests: JSON frames in and out, with bounded waits.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::TestApp;

pub struct Ws {
    stream: WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>,
}

/// How long a test waits for a frame that should come.
const WAIT: Duration = Duration::from_secs(10);

impl TestApp {
    /// Opens a socket at `path_and_query` with these extra headers; the handshake's refusal
    /// as (status, JSON body) when it is refused.
    pub async fn ws(
        &self,
        path_and_query: &str,
        headers: &[(&str, &str)],
    ) -> Result<Ws, (u16, Value)> {
        let mut req = format!("ws://{}{path_and_query}", self.addr)
            .into_client_request()
            .unwrap();
        for (k, v) in headers {
            req.headers_mut().insert(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        match tokio_tungstenite::connect_async(req).await {
            Ok((stream, _)) => Ok(Ws { stream }),
            Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
                let body = res
                    .body()
                    .as_deref()
                    .and_then(|b| serde_json::from_slice(b).ok())
                    .unwrap_or(Value::Null);
                Err((res.status().as_u16(), body))
            }
            Err(e) => panic!("socket failed: {e}"),
        }
    }
}

impl Ws {
    /// The next JSON frame (pings are answered by the library and skipped).
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            match tokio::time::timeout(WAIT, self.stream.next()).await {
                Err(_) => panic!("no frame within {WAIT:?}"),
                Ok(None | Some(Err(_) | Ok(Message::Close(_)))) => return None,
                Ok(Some(Ok(Message::Text(t)))) => return Some(serde_json::from_str(&t).unwrap()),
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// The next frame of type `kind`, skipping others (presence, typing...).
    pub async fn next_of(&mut self, kind: &str) -> Value {
        loop {
            let f = self
                .next()
                .await
                .unwrap_or_else(|| panic!("closed before {kind}"));
            if f["type"] == kind {
                return f;
            }
        }
    }

    /// Frames until the socket closes; panics if it stays open past the wait.
    pub async fn until_closed(&mut self) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(f) = self.next().await {
            seen.push(f);
        }
        seen
    }

    pub async fn send(&mut self, v: Value) {
        self.stream
            .send(Message::Text(v.to_string().into()))
            .await
            .unwrap();
    }
}

impl TestApp {
    /// A team socket on `store_id` with the bearer `token` (its `hello` still to be read).
    pub async fn team_socket(&self, token: &str, store_id: &str) -> Ws {
        let auth = format!("Bearer {token}");
        self.ws(
            &format!("/v1/ws/conversations?store_id={store_id}"),
            &[("authorization", &auth)],
        )
        .await
        .expect("the team socket opens")
    }
}
