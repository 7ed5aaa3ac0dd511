//! The OpenAI Responses API side of the fake model (`POST /v1/responses`,
//! streamed), as Codex speaks it: a tool call is a `function_call` item;
//! an MCP tool is named inside its server's namespace (`mcp__widgetd`).
//! And the Gemini API side (`POST /v1beta/models/MODEL:generateContent`
//! or `:streamGenerateContent`), as Gemini CLI speaks it: a tool call is a
//! `functionCall` part.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::fake_model::{Shared, Step};

pub(super) async fn responses(State(shared): State<Arc<Shared>>, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let step = shared.next(&request);
    let id = format!("resp_{}", uuid::Uuid::new_v4().simple());
    let item = match &step {
        Step::Tool { name, input } => {
            // `mcp__widgetd__request_env_vars`: namespace and tool.
            let (namespace, tool) = name.rsplit_once("__").unwrap_or(("", name));
            let mut item = json!({
                "type": "function_call", "id": "fc_1",
                "call_id": format!("call_{}", uuid::Uuid::new_v4().simple()),
                "name": tool, "arguments": input.to_string(),
            });
            if !namespace.is_empty() {
                item["namespace"] = json!(namespace);
            }
            item
        }
        Step::Say(text) => json!({
            "type": "message", "id": "msg_1", "role": "assistant",
            "content": [{ "type": "output_text", "text": text, "annotations": [] }],
        }),
        Step::SayLastResult => unreachable!("resolved by next()"),
    };
    let usage = json!({ "input_tokens": 10, "input_tokens_details": null,
        "output_tokens": 5, "output_tokens_details": null, "total_tokens": 15 });
    let events = [
        json!({ "type": "response.created", "response": { "id": id } }),
        json!({ "type": "response.output_item.done", "output_index": 0, "item": item }),
        json!({ "type": "response.completed", "response": { "id": id, "usage": usage } }),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

pub(super) async fn generate_content(
    State(shared): State<Arc<Shared>>,
    Path(call): Path<String>,
    body: String,
) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    // Gemini CLI first asks a small model to rate the request (a JSON
    // answer); that plays no step.
    let step = if request["generationConfig"]["responseJsonSchema"].is_object() {
        let rating = json!({ "complexity_reasoning": "simple", "complexity_score": 10 });
        Step::Say(rating.to_string())
    } else {
        shared.next(&request)
    };
    let part = match &step {
        Step::Tool { name, input } => json!({ "functionCall": { "name": name, "args": input } }),
        Step::Say(text) => json!({ "text": text }),
        Step::SayLastResult => unreachable!("resolved by next()"),
    };
    let answer = json!({
        "candidates": [{ "content": { "role": "model", "parts": [part] },
                         "finishReason": "STOP", "index": 0 }],
        "usageMetadata": { "promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15 },
    });
    if call.contains(":streamGenerateContent") {
        let body = format!("data: {answer}\r\n\r\n");
        return ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    }
    (
        [(header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
        .into_response()
}
