//! Connections that open with an event stream, served without hyper.
//!
//! hyper keeps two 8 KiB buffers per HTTP/1 connection for as long as it
//! lives (the read buffer the request head was read into, and the buffer
//! response heads are written into), whichever request it serves; neither
//! size can be set for a server. An event stream holds its connection for
//! up to an hour and never reads another request on it, so with 10,000
//! open streams those buffers were most of the daemon's memory.
//!
//! A connection whose first request, already whole in the socket when it
//! is accepted, is `GET /api/v1/sessions/{id}/events` (a head of at most
//! [`HEAD_MAX`] bytes, no body) is therefore served here: the head is
//! parsed with `httparse` (as hyper parses it) from a look at the socket,
//! the request goes through the same router as any other, and the response
//! is written as HTTP/1.1 with `Connection: close`, its body ending when
//! the connection closes (RFC 9112, 6.3). While the body streams, the
//! connection is read (one byte at a time, into nothing kept) only to
//! notice a client that hangs up, which ends the stream at once, as hyper
//! does. Every other connection goes to hyper.

use std::net::SocketAddr;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use axum::http::{Method, Request, Version};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest request head served here; a longer one goes to hyper.
pub(super) const HEAD_MAX: usize = 4096;

/// Most header fields in a head served here (hyper's default limit too).
const FIELDS_MAX: usize = 100;

/// A first request to serve here, and how many bytes its head takes.
pub(super) struct First {
    request: Request<Body>,
    head_len: usize,
}

/// The connection's first request, if it is an event stream's whose head
/// is already whole in the socket. Looks without taking: when the answer
/// is `None`, hyper reads the same bytes.
pub(super) async fn first_request(socket: &TcpStream) -> Option<First> {
    // On the heap, and gone once looked at: a connection task keeps the
    // largest state its future ever had.
    let mut seen = vec![0u8; HEAD_MAX];
    let n = socket.peek(&mut seen).await.ok()?;
    parse(&seen[..n])
}

/// [`first_request`] on the bytes seen.
fn parse(bytes: &[u8]) -> Option<First> {
    let mut fields = [httparse::EMPTY_HEADER; FIELDS_MAX];
    let mut head = httparse::Request::new(&mut fields);
    let httparse::Status::Complete(head_len) = head.parse(bytes).ok()? else {
        return None;
    };
    if head.method? != "GET" || !event_stream(head.path?) {
        return None;
    }
    let version = match head.version? {
        0 => Version::HTTP_10,
        _ => Version::HTTP_11,
    };
    let mut request = Request::builder()
        .method(Method::GET)
        .uri(head.path?)
        .version(version);
    for field in head.headers.iter() {
        // A body (or a length that says so) is not an event stream's.
        if field.name.eq_ignore_ascii_case(TRANSFER_ENCODING.as_str())
            || (field.name.eq_ignore_ascii_case(CONTENT_LENGTH.as_str()) && field.value != b"0")
        {
            return None;
        }
        request = request.header(field.name, field.value);
    }
    let request = request.body(Body::empty()).ok()?;
    Some(First { request, head_len })
}

/// Whether `target` (path and query) is a session's event stream.
fn event_stream(target: &str) -> bool {
    let path = target.split('?').next().unwrap_or_default();
    path.strip_prefix("/api/v1/sessions/")
        .and_then(|rest| rest.strip_suffix("/events"))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// Serves `first` on `socket`, then closes it.
pub(super) async fn serve(mut socket: TcpStream, first: First, peer: SocketAddr, app: Router) {
    let First {
        mut request,
        head_len,
    } = first;
    if consume(&mut socket, head_len).await.is_err() {
        return;
    }
    request.extensions_mut().insert(ConnectInfo(peer));
    let Ok(response) = tower::ServiceExt::oneshot(app, request).await;
    let (parts, body) = response.into_parts();
    let (mut reader, mut writer) = socket.split();
    let hung_up = async {
        let mut byte = [0u8; 1];
        // Anything the client sends is not read further (as hyper leaves
        // it); the end of the connection or an error is a hang-up.
        if let Ok(1..) = reader.read(&mut byte).await {
            std::future::pending::<()>().await;
        }
    };
    let send = async {
        writer.write_all(&response_head(&parts)).await?;
        let mut body = body.into_data_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(std::io::Error::other)?;
            writer.write_all(&chunk).await?;
        }
        writer.shutdown().await
    };
    tokio::select! {
        () = hung_up => {}
        sent = send => if let Err(err) = sent {
            tracing::trace!(error = %err, "an event stream's connection failed");
        },
    }
}

/// Reads and drops the `len` bytes of the head already parsed.
async fn consume(socket: &mut TcpStream, mut len: usize) -> std::io::Result<()> {
    let mut buf = vec![0u8; len.min(HEAD_MAX)];
    while len > 0 {
        let n = socket.read(&mut buf[..len]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        len -= n;
    }
    Ok(())
}

/// The status line and header fields of `parts`, with `Connection: close`
/// and a `Date` (hyper's are left out: transfer coding and connection
/// fields are this connection's to say).
fn response_head(parts: &axum::http::response::Parts) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(parts.status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(
        parts
            .status
            .canonical_reason()
            .unwrap_or_default()
            .as_bytes(),
    );
    out.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        if name == CONNECTION || name == TRANSFER_ENCODING || name.as_str() == "keep-alive" {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !parts.headers.contains_key(DATE) {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(http_date().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"connection: close\r\n\r\n");
    out
}

/// Now as an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date() -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    time::OffsetDateTime::now_utc()
        .format(&format)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{event_stream, parse, response_head};

    #[test]
    fn only_a_whole_event_stream_head_is_served_here() {
        let head =
            b"GET /api/v1/sessions/abc/events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 4\r\n\r\n";
        let first = parse(head).expect("an event stream");
        assert_eq!(first.head_len, head.len());
        assert_eq!(first.request.headers()["last-event-id"], "4");
        assert_eq!(first.request.uri().path(), "/api/v1/sessions/abc/events");
        for other in [
            &b"GET /api/v1/sessions/abc/events HTTP/1.1\r\nHost: x\r\n"[..],
            b"POST /api/v1/sessions/abc/events HTTP/1.1\r\n\r\n",
            b"GET /api/v1/sessions/abc/events HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
            b"GET /api/v1/sessions/abc/events HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"GET /api/v1/sessions/abc/prompts HTTP/1.1\r\n\r\n",
            b"GET /api/v1/widgets/abc HTTP/1.1\r\n\r\n",
            b"",
        ] {
            assert!(parse(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
        assert!(event_stream("/api/v1/sessions/abc/events?x=1"));
        for other in [
            "/api/v1/sessions//events",
            "/api/v1/sessions/a/b/events",
            "/api/v1/sessions/abc/events/",
        ] {
            assert!(!event_stream(other), "{other}");
        }
    }

    #[test]
    fn the_response_head_closes_the_connection_and_drops_hop_fields() {
        let response = axum::http::Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .header("transfer-encoding", "chunked")
            .header("connection", "keep-alive")
            .body(())
            .unwrap();
        let (parts, ()) = response.into_parts();
        let head = String::from_utf8(response_head(&parts)).unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(
            head.contains("content-type: text/event-stream\r\n"),
            "{head}"
        );
        assert!(head.contains("\r\ndate: "), "{head}");
        assert!(
            !head.contains("chunked") && !head.contains("keep-alive"),
            "{head}"
        );
        assert!(head.ends_with("connection: close\r\n\r\n"), "{head}");
    }
}
