//! rmcp's JSON-RPC errors repeat what the client sent (an unknown method's
//! name, serde's "invalid type: string \"…\"" for malformed params). Every
//! error `/mcp` sends, as a JSON body or as an event of a session's SSE
//! stream, gets a fixed message for its code instead.

use axum::body::{Body, Bytes};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::Value;

/// Largest JSON response body rewritten.
const MAX_JSON_BYTES: usize = 4 * 1024 * 1024;

/// The response with every JSON-RPC error message replaced.
pub(super) async fn without_echo(response: Response) -> Response {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.as_bytes().to_ascii_lowercase())
        .unwrap_or_default();
    if content_type.starts_with(b"application/json") {
        json_body(response).await
    } else if content_type.starts_with(b"text/event-stream") {
        event_stream(response)
    } else {
        response
    }
}

/// The fixed error object for `code`, or `None` if `message` is no
/// JSON-RPC error.
fn scrubbed(message: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Reply {
        #[serde(default)]
        id: Value,
        error: Option<ErrorCode>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorCode {
        code: i64,
    }
    let Reply {
        id,
        error: Some(ErrorCode { code }),
    } = serde_json::from_slice(message).ok()?
    else {
        return None;
    };
    let message = match code {
        -32700 => "parse error: the body is not valid JSON",
        -32600 => "invalid request: not a JSON-RPC 2.0 request this server accepts",
        -32601 => "method not found",
        -32602 => "invalid params: check them against the method's schema",
        _ => "the request was refused",
    };
    Some(
        serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }),
    )
}

async fn json_body(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_JSON_BYTES).await else {
        return Response::from_parts(parts, Body::empty());
    };
    match scrubbed(&bytes) {
        Some(error) => {
            parts.headers.remove(CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(error.to_string()))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// An SSE body, rewritten line by line as it streams: a `data:` line that
/// holds a JSON-RPC error is replaced (rmcp writes each message on one
/// line); every other line passes unchanged and at once.
fn event_stream(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    let mut pending: Vec<u8> = Vec::new();
    let lines = body.into_data_stream().map(move |frame| {
        let frame = frame?;
        pending.extend_from_slice(&frame);
        let Some(end) = pending.iter().rposition(|&b| b == b'\n') else {
            return Ok::<_, axum::Error>(Bytes::new());
        };
        let rest = pending.split_off(end + 1);
        let complete = std::mem::replace(&mut pending, rest);
        Ok(Bytes::from(rewrite_lines(&complete)))
    });
    Response::from_parts(parts, Body::from_stream(lines))
}

/// Complete SSE lines (each ending in `\n`), with error events replaced.
fn rewrite_lines(lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines.split_inclusive(|&b| b == b'\n') {
        let data = line
            .strip_prefix(b"data:")
            .map(|d| d.trim_ascii())
            .and_then(scrubbed);
        match data {
            Some(error) => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(error.to_string().as_bytes());
                out.push(b'\n');
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::rewrite_lines;

    #[test]
    fn an_error_event_loses_its_message_and_other_lines_pass() {
        let input = b"id: 0\nretry: 3000\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,\"message\":\"invalid type: string \\\"sk-CANARY\\\"\"}}\n\n: ping\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n";
        let out = String::from_utf8(rewrite_lines(input)).unwrap();
        assert!(!out.contains("CANARY"), "{out}");
        assert!(out.contains("\"code\":-32602"), "{out}");
        assert!(out.contains("invalid params: check them"), "{out}");
        assert!(out.starts_with("id: 0\nretry: 3000\ndata: "), "{out}");
        assert!(
            out.ends_with("\n\n: ping\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n"),
            "{out}"
        );
    }
}
