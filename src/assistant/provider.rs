//! The language model behind the assistant: any server that speaks the OpenAI Chat
//! Completions API with streaming and tool calls (a hosted model, Ollama, llama.cpp's
//! server, vLLM). The request runs with ureq on the blocking pool. Each streamed text delta
//! is handed to the turn as soon as it is read, so the turn never waits for the whole answer.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::cli::{AssistantProvider, ServeArgs};

/// Where the model is and which one to ask (`--assistant-*`).
#[derive(Clone)]
pub struct ModelConfig {
    /// Up to and including the version segment: `{api_base}/chat/completions` is asked.
    pub api_base: String,
    pub api_key: Option<String>,
    pub model: String,
    /// Longest wait for the answer's headers.
    pub first_byte_timeout: Duration,
    /// Longest a whole answer may stream.
    pub answer_timeout: Duration,
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("api_base", &self.api_base)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl ModelConfig {
    /// A model at `api_base` (tests point it at a fake server).
    pub fn new(api_base: &str, model: &str) -> Self {
        Self {
            api_base: api_base.trim_end_matches('/').to_owned(),
            api_key: None,
            model: model.to_owned(),
            first_byte_timeout: Duration::from_secs(60),
            answer_timeout: Duration::from_secs(300),
        }
    }

    /// The model `serve`'s flags name; None with `--assistant-provider none`.
    pub fn from_args(a: &ServeArgs) -> anyhow::Result<Option<Self>> {
        match a.assistant_provider {
            AssistantProvider::None => Ok(None),
            AssistantProvider::Openai => {
                let model = a
                    .assistant_model
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .ok_or_else(|| {
                        anyhow::anyhow!("--assistant-provider openai needs --assistant-model")
                    })?;
                let base = a
                    .assistant_api_base
                    .as_deref()
                    .unwrap_or("https://api.openai.com/v1");
                url::Url::parse(base)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .ok_or_else(|| {
                        anyhow::anyhow!("--assistant-api-base: {base:?} is not an http(s) URL")
                    })?;
                let mut cfg = Self::new(base, model);
                cfg.api_key = a.assistant_api_key.clone().filter(|k| !k.is_empty());
                Ok(Some(cfg))
            }
        }
    }
}

/// A tool call the model made, its arguments as the JSON text it wrote.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What the stream hands the turn, in order: text as it comes, then how the answer ended.
#[derive(Debug)]
pub enum Delta {
    Text(String),
    /// The answer is complete, with the tools it asked to run (possibly none).
    Done(Vec<ToolCall>),
    /// The model server failed; what was streamed before stands.
    Failed(String),
}

/// The most of an error answer kept for its message.
const KEEP_ERROR: u64 = 16 * 1024;

/// Asks the model for the next message of `messages` (OpenAI wire shapes) with `tools`
/// offered, and hands each delta to `out` as it is read. Blocking: run it on the blocking
/// pool. Returns early, quietly, once `stop` is set or `out` is closed.
pub fn stream(
    cfg: &ModelConfig,
    messages: &[Value],
    tools: &[Value],
    out: &mpsc::Sender<Delta>,
    stop: &Arc<AtomicBool>,
) {
    let end = match ask(cfg, messages, tools, out, stop) {
        Ok(Some(calls)) => Delta::Done(calls),
        Ok(None) => return,
        Err((public, detail)) => {
            // The server's own words stay in the log: they can name accounts or keys.
            tracing::warn!(reason = %detail, "the language model failed");
            Delta::Failed(public)
        }
    };
    let _ = out.blocking_send(end);
}

fn ask(
    cfg: &ModelConfig,
    messages: &[Value],
    tools: &[Value],
    out: &mpsc::Sender<Delta>,
    stop: &Arc<AtomicBool>,
) -> Result<Option<Vec<ToolCall>>, (String, String)> {
    let mut body = json!({"model": cfg.model, "stream": true, "messages": messages});
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools.to_vec());
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_recv_response(Some(cfg.first_byte_timeout))
        .timeout_global(Some(cfg.answer_timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut req = agent
        .post(format!("{}/chat/completions", cfg.api_base))
        .header("Accept", "text/event-stream");
    if let Some(key) = &cfg.api_key {
        req = req.header("Authorization", &format!("Bearer {key}"));
    }
    let mut res = req
        .content_type("application/json")
        .send(body.to_string())
        .map_err(|e| {
            (
                "the model server could not be reached".to_owned(),
                format!("the model server could not be reached: {e}"),
            )
        })?;
    let status = res.status().as_u16();
    let mut reader = res.body_mut().as_reader();
    if !(200..300).contains(&status) {
        let mut kept = Vec::new();
        let _ = (&mut reader).take(KEEP_ERROR).read_to_end(&mut kept);
        let answer: Value = serde_json::from_slice(&kept).unwrap_or_default();
        let why = answer["error"]["message"]
            .as_str()
            .map(|m| m.chars().take(300).collect::<String>())
            .unwrap_or_default();
        return Err((
            format!("the model server answered {status}"),
            format!("the model server answered {status} {why}"),
        ));
    }
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut finished = false;
    for line in BufReader::new(reader).lines() {
        if stop.load(Ordering::Acquire) {
            return Ok(None);
        }
        let line = line.map_err(|e| {
            (
                "the model's answer broke off".to_owned(),
                format!("the model's answer broke off: {e}"),
            )
        })?;
        let Some(data) = line.strip_prefix("data:") else {
            continue; // comments, `event:` lines and the blank lines between events
        };
        let data = data.trim();
        if data == "[DONE]" {
            finished = true;
            break;
        }
        let chunk: Value = serde_json::from_str(data).map_err(|_| {
            let why = "the model server sent something that is not JSON".to_owned();
            (why.clone(), why)
        })?;
        if let Some(e) = chunk.get("error") {
            let why = e["message"].as_str().unwrap_or("unknown error");
            return Err((
                "the model server failed".to_owned(),
                format!("the model server failed: {why}"),
            ));
        }
        let choice = &chunk["choices"][0];
        if let Some(text) = choice["delta"]["content"].as_str()
            && !text.is_empty()
            && out.blocking_send(Delta::Text(text.to_owned())).is_err()
        {
            return Ok(None);
        }
        for part in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            merge_call(&mut calls, part);
        }
        if choice["finish_reason"].is_string() {
            finished = true;
        }
    }
    if !finished {
        let why = "the model's answer ended before it was complete".to_owned();
        return Err((why.clone(), why));
    }
    Ok(Some(calls))
}

/// Adds one streamed piece of a tool call: the first piece of an index names it, the next
/// ones carry more of its arguments.
fn merge_call(calls: &mut Vec<ToolCall>, part: &Value) {
    let index = part["index"]
        .as_u64()
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(calls.len().saturating_sub(1));
    // A model asks for a handful of tools at most; a wild index is not a reason to allocate.
    if index > 64 {
        return;
    }
    while calls.len() <= index {
        calls.push(ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
    }
    let call = &mut calls[index];
    if let Some(id) = part["id"].as_str() {
        call.id = id.to_owned();
    }
    // The name comes whole, in the first piece (some servers repeat it in every piece).
    if let Some(name) = part["function"]["name"].as_str()
        && call.name.is_empty()
    {
        name.clone_into(&mut call.name);
    }
    if let Some(args) = part["function"]["arguments"].as_str() {
        call.arguments.push_str(args);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_are_assembled_from_their_streamed_pieces() {
        let mut calls = Vec::new();
        for part in [
            json!({"index": 0, "id": "call_1", "function": {"name": "get_order", "arguments": ""}}),
            json!({"index": 0, "function": {"arguments": "{\"order_id\":"}}),
            json!({"index": 1, "id": "call_2", "function": {"name": "list_orders", "arguments": "{}"}}),
            json!({"index": 0, "function": {"arguments": "\"x\"}"}}),
        ] {
            merge_call(&mut calls, &part);
        }
        assert_eq!(
            calls,
            [
                ToolCall {
                    id: "call_1".into(),
                    name: "get_order".into(),
                    arguments: r#"{"order_id":"x"}"#.into()
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "list_orders".into(),
                    arguments: "{}".into()
                }
            ]
        );
    }
}
