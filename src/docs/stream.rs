//! The UI message stream (spec 6.5; the AI SDK's `uiMessageChunkSchema`, protocol `v1`):
//! server-sent events whose `data:` is one JSON part, ending with `data: [DONE]`.

use std::collections::VecDeque;
use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Serialize;

use super::answer::Deltas;

/// The header that names the stream's protocol, as the AI SDK's clients expect it.
pub const PROTOCOL_HEADER: &str = "x-vercel-ai-ui-message-stream";

/// One part of the stream. Field names are the SDK's (camelCase).
#[derive(Debug, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Part {
    Start {
        message_id: String,
    },
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    TextEnd {
        id: String,
    },
    SourceUrl {
        source_id: String,
        url: String,
        title: String,
    },
    Finish,
    Error {
        error_text: String,
    },
}

/// A cited page: where it is served and what it is called.
#[derive(Debug, Clone)]
pub struct Citation {
    pub id: String,
    pub url: String,
    pub title: String,
}

fn frame(part: &Part) -> Bytes {
    // Serializing these plain structs cannot fail.
    let json = serde_json::to_string(part).unwrap_or_default();
    Bytes::from(format!("data: {json}\n\n"))
}

const DONE: &[u8] = b"data: [DONE]\n\n";

/// The response: `start` and `text-start`, a `text-delta` per delta, then `text-end`, a
/// `source-url` per citation and `finish`; or, when a delta fails, `error` in place of
/// the rest. Always `[DONE]` last.
pub fn respond(message_id: String, deltas: Deltas, citations: Vec<Citation>) -> Response {
    let text_id = format!("{message_id}-text");
    let mut tail: VecDeque<Bytes> = VecDeque::new();
    tail.push_back(frame(&Part::TextEnd {
        id: text_id.clone(),
    }));
    for c in citations {
        tail.push_back(frame(&Part::SourceUrl {
            source_id: c.id,
            url: c.url,
            title: c.title,
        }));
    }
    tail.push_back(frame(&Part::Finish));
    tail.push_back(Bytes::from_static(DONE));
    let state = Encoder {
        pending: VecDeque::from([
            frame(&Part::Start { message_id }),
            frame(&Part::TextStart {
                id: text_id.clone(),
            }),
        ]),
        deltas: Some(deltas),
        text_id,
        tail,
    };
    let body = futures_util::stream::unfold(state, |mut s| async move {
        let next = s.next().await?;
        Some((Ok::<_, Infallible>(next), s))
    });
    let mut res = Body::from_stream(body).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(PROTOCOL_HEADER, HeaderValue::from_static("v1"));
    // Proxies (nginx) would otherwise hold the parts back until the answer is whole.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    res
}

struct Encoder {
    /// Frames ready to go out.
    pending: VecDeque<Bytes>,
    /// None once the deltas ended or failed.
    deltas: Option<Deltas>,
    text_id: String,
    /// What follows the last delta when all went well.
    tail: VecDeque<Bytes>,
}

impl Encoder {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(f) = self.pending.pop_front() {
                return Some(f);
            }
            let deltas = self.deltas.as_mut()?;
            match deltas.next().await {
                Some(Ok(delta)) if delta.is_empty() => {}
                Some(Ok(delta)) => {
                    return Some(frame(&Part::TextDelta {
                        id: self.text_id.clone(),
                        delta,
                    }));
                }
                Some(Err(error_text)) => {
                    self.deltas = None;
                    self.pending.push_back(frame(&Part::Error { error_text }));
                    self.pending.push_back(Bytes::from_static(DONE));
                }
                None => {
                    self.deltas = None;
                    self.pending.append(&mut self.tail);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(deltas: Vec<Result<String, String>>, citations: Vec<Citation>) -> String {
        let res = respond(
            "m1".into(),
            Box::pin(futures_util::stream::iter(deltas)),
            citations,
        );
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn parts_come_in_the_protocol_order_with_its_field_names() {
        let body = body_of(
            vec![Ok("Hello".into()), Ok(String::new()), Ok(" world".into())],
            vec![Citation {
                id: "webhooks".into(),
                url: "http://x/v1/docs/webhooks".into(),
                title: "Webhooks".into(),
            }],
        )
        .await;
        assert_eq!(
            body,
            "data: {\"type\":\"start\",\"messageId\":\"m1\"}\n\n\
             data: {\"type\":\"text-start\",\"id\":\"m1-text\"}\n\n\
             data: {\"type\":\"text-delta\",\"id\":\"m1-text\",\"delta\":\"Hello\"}\n\n\
             data: {\"type\":\"text-delta\",\"id\":\"m1-text\",\"delta\":\" world\"}\n\n\
             data: {\"type\":\"text-end\",\"id\":\"m1-text\"}\n\n\
             data: {\"type\":\"source-url\",\"sourceId\":\"webhooks\",\"url\":\"http://x/v1/docs/webhooks\",\"title\":\"Webhooks\"}\n\n\
             data: {\"type\":\"finish\"}\n\n\
             data: [DONE]\n\n"
        );
    }

    #[tokio::test]
    async fn a_failed_delta_ends_with_error_and_done() {
        let body = body_of(
            vec![Ok("Half".into()), Err("the answer failed".into())],
            vec![],
        )
        .await;
        assert!(
            body.ends_with(
                "data: {\"type\":\"error\",\"errorText\":\"the answer failed\"}\n\ndata: [DONE]\n\n"
            ),
            "{body}"
        );
        assert!(!body.contains("finish"), "{body}");
    }
}
