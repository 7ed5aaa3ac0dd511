//! rmcp's JSON-RPC errors repeat what the client sent (an unknown method's
//! name, serde's "invalid type: string \"…\"" for malformed params). Every
//! error `/mcp` sends, as a JSON body or as an event of a session's SSE
//! stream, gets a fixed message for its code instead.
//!
//! A result, as rmcp writes one, starts `{"jsonrpc":"2.0","id":…,"result":`
//! (its message types are Rust structs serialised field by field): it holds
//! no error, so it passes as it is, after a look at its first bytes, and
//! only the rest (errors, and anything not written that way) is parsed.

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

/// The message of a call of an unknown tool: `Unknown tool: NAME` when the
/// name is a plain identifier (letters, digits, `_`, `-`, at most 64), else
/// `Unknown tool`; nothing else the client sent is repeated.
pub(super) fn unknown_tool(name: &str) -> String {
    match plain_identifier(name) {
        true => format!("{UNKNOWN_TOOL}: {name}"),
        false => UNKNOWN_TOOL.to_owned(),
    }
}

/// The start of [`unknown_tool`]'s message.
const UNKNOWN_TOOL: &str = "Unknown tool";

/// Letters, digits, `_` and `-`, starting with a letter or `_`, 1 to 64.
fn plain_identifier(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `message` is one `unknown_tool` writes.
fn unknown_tool_message(message: &str) -> bool {
    match message.strip_prefix(UNKNOWN_TOOL) {
        Some("") => true,
        Some(rest) => rest.strip_prefix(": ").is_some_and(plain_identifier),
        None => false,
    }
}

/// Whether `message` starts as rmcp writes a JSON-RPC result:
/// `{"jsonrpc":"2.0","id":` then a number or a string, then `,"result":`.
/// Such a message has no error to replace.
fn is_result(message: &[u8]) -> bool {
    let Some(rest) = message.strip_prefix(br#"{"jsonrpc":"2.0","id":"#) else {
        return false;
    };
    let id_len = match rest.first() {
        Some(b'"') => {
            let mut i = 1;
            loop {
                match rest.get(i) {
                    Some(b'\\') => i += 2,
                    Some(b'"') => break i + 1,
                    Some(_) => i += 1,
                    None => return false,
                }
            }
        }
        Some(b'-' | b'0'..=b'9') => rest
            .iter()
            .position(|b| !matches!(b, b'-' | b'0'..=b'9'))
            .unwrap_or(rest.len()),
        _ => return false,
    };
    rest.get(id_len..)
        .is_some_and(|after| after.starts_with(br#","result":"#))
}

/// The fixed error object for `code`, or `None` if `message` is no
/// JSON-RPC error.
fn scrubbed(message: &[u8]) -> Option<Value> {
    if is_result(message) {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Reply {
        #[serde(default)]
        id: Value,
        error: Option<ErrorCode>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorCode {
        code: i64,
        #[serde(default)]
        message: String,
    }
    let Reply {
        id,
        error: Some(ErrorCode { code, message }),
    } = serde_json::from_slice(message).ok()?
    else {
        return None;
    };
    let message = match code {
        -32700 => "parse error: the body is not valid JSON",
        -32600 => "invalid request: not a JSON-RPC 2.0 request this server accepts",
        -32601 => "method not found",
        // An unknown tool, named only if its name is a plain identifier
        // (`unknown_tool` made the message).
        -32602 if unknown_tool_message(&message) => message.as_str(),
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
/// line); every other line passes unchanged and at once. A last line
/// without its newline is passed on when the body ends.
fn event_stream(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    let frames = body
        .into_data_stream()
        .map(Some)
        .chain(futures_util::stream::once(async { None }));
    let lines = frames.scan(Vec::new(), |pending: &mut Vec<u8>, frame| {
        let out = match frame {
            Some(Ok(frame)) => {
                pending.extend_from_slice(&frame);
                match pending.iter().rposition(|&b| b == b'\n') {
                    Some(end) => {
                        let rest = pending.split_off(end + 1);
                        let complete = std::mem::replace(pending, rest);
                        Ok(Bytes::from(rewrite_lines(&complete)))
                    }
                    None => Ok(Bytes::new()),
                }
            }
            Some(Err(err)) => Err(err),
            None => Ok(Bytes::from(rewrite_lines(&std::mem::take(pending)))),
        };
        std::future::ready(Some(out))
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
    use axum::body::Body;
    use axum::response::Response;

    use super::{event_stream, is_result, rewrite_lines, scrubbed};

    #[test]
    fn only_a_result_as_rmcp_writes_it_skips_the_parse() {
        for result in [
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-12,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b\\","result":{}}"#,
        ] {
            assert!(is_result(result.as_bytes()), "{result}");
            assert!(scrubbed(result.as_bytes()).is_none(), "{result}");
        }
        // Errors, whatever their id says, are still rewritten.
        for error in [
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"sk-CANARY"}}"#,
            r#"{"jsonrpc":"2.0","id":"x\",\"result\":","error":{"code":-32601,"message":"sk-CANARY"}}"#,
            r#"{"jsonrpc":"2.0","id":"x\\","error":{"code":-32602,"message":"sk-CANARY"},"result":1}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"sk-CANARY"}}"#,
            r#"{"error":{"code":-32600,"message":"sk-CANARY"},"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#" {"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"sk-CANARY"}}"#,
        ] {
            assert!(!is_result(error.as_bytes()), "{error}");
            let fixed = scrubbed(error.as_bytes()).expect(error).to_string();
            assert!(!fixed.contains("CANARY"), "{fixed}");
        }
    }

    #[tokio::test]
    async fn a_stream_is_rewritten_across_frames_and_keeps_a_last_line_without_newline() {
        let frames: Vec<Result<&'static str, std::io::Error>> = vec![
            Ok("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,"),
            Ok("\"message\":\"sk-CANARY\"}}\n\n: ping\n"),
            Ok("data: tail"),
        ];
        let response = Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from_stream(futures_util::stream::iter(frames)))
            .unwrap();
        let body = axum::body::to_bytes(event_stream(response).into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(!text.contains("CANARY"), "{text}");
        assert!(text.contains("\"message\":\"method not found\""), "{text}");
        assert!(text.ends_with("\n\n: ping\ndata: tail"), "{text}");
    }

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
