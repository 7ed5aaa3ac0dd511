//! A loopback fake of the model APIs, scripted per test: it decides which
//! tool the "model" calls with which input, then ends the turn. It speaks
//! the Anthropic Messages API (`POST /v1/messages`, Claude Code through
//! `ANTHROPIC_BASE_URL`) and the OpenAI Responses API (`POST
//! /v1/responses`, Codex through a `model_providers` entry), both streamed
//! as server-sent events; everything else (the CLI's MCP client, hooks,
//! permission logic) is the real CLI's.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// One reply of the "model".
#[derive(Debug, Clone)]
pub enum Step {
    /// Calls `name` with `input` (the turn goes on with its result).
    Tool { name: String, input: Value },
    /// Ends the turn with this text.
    Say(String),
    /// Ends the turn saying what the last tool result said.
    SayLastResult,
}

impl Step {
    pub fn tool(name: &str, input: Value) -> Self {
        Self::Tool {
            name: name.to_owned(),
            input,
        }
    }
}

#[derive(Default)]
pub(super) struct Shared {
    script: Mutex<VecDeque<Step>>,
    /// The bodies of the requests that consumed a step, in order.
    requests: Mutex<Vec<Value>>,
}

/// The fake, served on 127.0.0.1 until dropped.
pub struct FakeModel {
    pub url: String,
    shared: Arc<Shared>,
    _shutdown: oneshot::Sender<()>,
}

impl FakeModel {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/responses", post(super::fake_responses::responses))
            .route(
                "/v1beta/models/{call}",
                post(super::fake_responses::generate_content),
            )
            .with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
        Self {
            url,
            shared,
            _shutdown: tx,
        }
    }

    /// Adds the replies of the coming model calls, in order.
    pub fn script(&self, steps: impl IntoIterator<Item = Step>) {
        self.shared.script.lock().unwrap().extend(steps);
    }

    /// How many steps are still to be played.
    pub fn left(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }

    /// The request bodies that the steps answered.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// What the fake played, for a failure message: how many steps are
    /// left, and each answered request's last message, shortened.
    pub fn describe(&self) -> String {
        let mut out = format!("the fake model: {} steps left\n", self.left());
        for (i, request) in self.requests().iter().enumerate() {
            let last = request["messages"]
                .as_array()
                .and_then(|m| m.last())
                .or_else(|| request["input"].as_array().and_then(|m| m.last()))
                .map(Value::to_string)
                .unwrap_or_default();
            let last: String = last.chars().take(300).collect();
            out.push_str(&format!("request {i}: {last}\n"));
        }
        out
    }

    /// The `tool_result` blocks Claude Code sent back, as text, in order.
    pub fn tool_results(&self) -> Vec<String> {
        let mut seen = Vec::new();
        for request in self.requests() {
            if let Some(text) = last_tool_result(&request)
                && seen.last() != Some(&text)
            {
                seen.push(text);
            }
        }
        seen
    }
}

/// The text of the last tool result of a request: a `tool_result` block
/// of its last message (Messages API) or its last `function_call_output`
/// item (Responses API).
pub(super) fn last_tool_result(request: &Value) -> Option<String> {
    if let Some(input) = request["input"].as_array() {
        let output = input
            .iter()
            .rev()
            .find(|i| i["type"] == "function_call_output")?;
        return Some(match &output["output"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        });
    }
    if let Some(contents) = request["contents"].as_array() {
        let part = contents
            .iter()
            .flat_map(|c| c["parts"].as_array().into_iter().flatten())
            .rfind(|p| p.get("functionResponse").is_some())?;
        return Some(part["functionResponse"]["response"].to_string());
    }
    let last = request["messages"].as_array()?.last()?;
    let block = last["content"]
        .as_array()?
        .iter()
        .rev()
        .find(|b| b["type"] == "tool_result")?;
    Some(match &block["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    })
}

impl Shared {
    /// The step that answers `request`. Side calls (no tools: titles,
    /// summaries) get a plain answer and play no step.
    pub(super) fn next(&self, request: &Value) -> Step {
        let has_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
        let step = if has_tools {
            let step = self.script.lock().unwrap().pop_front();
            self.requests.lock().unwrap().push(request.clone());
            step.unwrap_or_else(|| Step::Say("Nothing more to do.".into()))
        } else {
            Step::Say("none".into())
        };
        match step {
            Step::SayLastResult => Step::Say(format!(
                "The tool said: {}",
                last_tool_result(request).unwrap_or_default()
            )),
            step => step,
        }
    }
}

async fn messages(State(shared): State<Arc<Shared>>, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let step = shared.next(&request);
    let model = request["model"]
        .as_str()
        .unwrap_or("claude-fake")
        .to_owned();
    let body = stream(&model, &step);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// The server-sent events of one reply, as the Messages API streams it.
fn stream(model: &str, step: &Step) -> String {
    let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
    let message = json!({
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": { "input_tokens": 10, "output_tokens": 1 },
    });
    let (block, delta, stop) = match step {
        Step::Tool { name, input } => (
            json!({ "type": "tool_use", "id": format!("toolu_{}", uuid::Uuid::new_v4().simple()),
                    "name": name, "input": {} }),
            json!({ "type": "input_json_delta", "partial_json": input.to_string() }),
            "tool_use",
        ),
        Step::Say(text) => (
            json!({ "type": "text", "text": "" }),
            json!({ "type": "text_delta", "text": text }),
            "end_turn",
        ),
        Step::SayLastResult => unreachable!("resolved before"),
    };
    let events = [
        (
            "message_start",
            json!({ "type": "message_start", "message": message }),
        ),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": block }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": delta }),
        ),
        (
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": 0 }),
        ),
        (
            "message_delta",
            json!({ "type": "message_delta", "delta": { "stop_reason": stop, "stop_sequence": null },
                    "usage": { "output_tokens": 5 } }),
        ),
        ("message_stop", json!({ "type": "message_stop" })),
    ];
    events
        .iter()
        .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
        .collect()
}
