//! The assistant's relay (issue 16): what the server adds to each streamed delta between a
//! language model and the client. A fake OpenAI-compatible model in this process streams
//! N small deltas as fast as it can; the same answer is read straight from the fake and
//! through `POST /v1/stores/{id}/assistant/chat`, for N = 1 and N = 2,000. The slope
//! between the two sizes is the cost of a delta; the difference of the slopes is the relay's
//! per-delta overhead (the fixed cost of a turn, its writes, cancels out).

use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use serde_json::{Value, json};

/// Turns measured per size and path; the median is reported.
const RUNS: usize = 15;
const MANY: usize = 2_000;

/// Binds the fake model; its API base for `--assistant-api-base`. The listener is served by
/// [`serve`] once the harness's runtime runs.
pub fn bind() -> (std::net::TcpListener, String) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let base = format!("http://{}/v1", l.local_addr().unwrap());
    (l, base)
}

/// The fake: answers `deltas:N` (the last message) with N deltas of "word " and `[DONE]`.
pub async fn serve(listener: std::net::TcpListener) {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|body: Bytes| async move {
            let req: Value = serde_json::from_slice(&body).unwrap_or_default();
            let n: usize = req["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
                .and_then(|m| m["content"].as_str())
                .and_then(|c| c.strip_prefix("deltas:"))
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
            let chunk = |delta: &Value, finish: Option<&str>| {
                Bytes::from(format!(
                    "data: {}\n\n",
                    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                ))
            };
            let mut parts: Vec<Result<Bytes, std::io::Error>> = (0..n)
                .map(|_| Ok(chunk(&json!({"content": "word "}), None)))
                .collect();
            parts.push(Ok(chunk(&json!({}), Some("stop"))));
            parts.push(Ok(Bytes::from_static(b"data: [DONE]\n\n")));
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(futures::stream::iter(parts)))
                .unwrap()
        }),
    );
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    axum::serve(listener, app).await.unwrap();
}

/// Reads a streamed response to its end; (time to the first `needle`, time to the end,
/// how many `needle`s).
async fn read(
    res: reqwest::Response,
    started: Instant,
    needle: &str,
) -> (Duration, Duration, usize) {
    let (mut first, mut count, mut res) = (None, 0usize, res);
    let mut tail = String::new();
    while let Some(bytes) = res.chunk().await.unwrap() {
        tail.push_str(std::str::from_utf8(&bytes).unwrap());
        let found = tail.matches(needle).count();
        if found > 0 && first.is_none() {
            first = Some(started.elapsed());
        }
        count += found;
        // Keep what could be the start of a needle cut in two.
        let keep = tail.len().saturating_sub(needle.len());
        let keep = (keep..=tail.len())
            .find(|i| tail.is_char_boundary(*i))
            .unwrap();
        tail.drain(..keep);
    }
    (first.unwrap_or_default(), started.elapsed(), count)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

pub async fn run(client: &reqwest::Client, base: &str, model_base: &str, session: &str) {
    let (store, token) = super::store_token(client, base, session, "Assistant").await;
    println!("\nassistant relay (fake model streaming \"word \" deltas, {RUNS} turns each)");
    let mut slopes = Vec::new();
    for (label, through) in [
        ("straight from the model", false),
        ("through the assistant", true),
    ] {
        let mut at = Vec::new();
        for n in [1, MANY] {
            let (mut ttfb, mut total) = (Vec::new(), Vec::new());
            for _ in 0..RUNS {
                let message = format!("deltas:{n}");
                let started = Instant::now();
                let (res, needle) = if through {
                    let res = client
                        .post(format!("{base}/v1/stores/{store}/assistant/chat"))
                        .bearer_auth(&token)
                        .json(&json!({ "message": message }))
                        .send()
                        .await
                        .unwrap();
                    (res, "event: text")
                } else {
                    let res = client
                        .post(format!("{model_base}/chat/completions"))
                        .json(&json!({"model": "bench", "stream": true,
                                      "messages": [{"role": "user", "content": message}]}))
                        .send()
                        .await
                        .unwrap();
                    (res, "\"content\"")
                };
                assert!(res.status().is_success(), "{label}: {}", res.status());
                let (first, end, count) = read(res, started, needle).await;
                assert_eq!(count, n, "{label}: every delta arrives");
                ttfb.push(first);
                total.push(end);
            }
            let (t, f) = (median(total), median(ttfb));
            println!(
                "  {label}, {n} delta(s): first delta after {:.2} ms, whole answer {:.2} ms (medians)",
                f.as_secs_f64() * 1e3,
                t.as_secs_f64() * 1e3
            );
            at.push(t);
        }
        #[expect(clippy::cast_precision_loss, reason = "a ratio")]
        let per = (at[1].as_secs_f64() - at[0].as_secs_f64()) / (MANY - 1) as f64;
        println!("  {label}: {:.2} µs per delta", per * 1e6);
        slopes.push(per);
    }
    println!(
        "  the relay adds {:.2} µs per delta",
        (slopes[1] - slopes[0]) * 1e6
    );
}
