//! Two real daemons on PostgreSQL under load while an administrator cuts
//! every one of their database connections (`pg_terminate_backend`): the
//! requests caught by the cut are answered `503 storage_unavailable` with
//! `Retry-After`, never `500`; the daemons reconnect by themselves;
//! nothing acknowledged is lost; the audit chain verifies.
//!
//! The same load while the server itself restarts (`pg_ctl restart -m
//! fast`): the same promises hold.
//!
//! The cut runs on the server of `WIDGETD_TEST_POSTGRES` (else the one on
//! 127.0.0.1:5432) whatever the other tests run on; the restart on a
//! server of the test's own (`crate::db::pg_server`), since restarting the
//! shared one would disturb every other test using it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::db::pg_server::PrivateServer;
use crate::db::throughput::Driver;
use crate::helpers::backend::TestDir;
use crate::helpers::{COMMAND_LIMIT, Daemon, OutputWithin, client, event_stream, widgetd};

/// What the load saw.
#[derive(Default)]
struct Seen {
    /// Widgets whose creation was answered 201.
    acknowledged: Vec<String>,
    /// 503 answers, and how many of them lacked `Retry-After` or the code.
    unavailable: usize,
    malformed_503: Vec<String>,
    /// Any other answer that is not a success (status and body).
    other: Vec<String>,
}

/// The body of the first 201 to `request`, retried while the database is
/// away (at most a minute).
async fn created(what: &str, request: impl Fn() -> reqwest::RequestBuilder) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = request().send().await
            && r.status() == StatusCode::CREATED
        {
            return r.json().await.unwrap();
        }
        assert!(Instant::now() < deadline, "no {what} could be created");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An agent's session, retried while the database is cut off.
async fn session(http: &reqwest::Client, url: &str, host: &str) -> (String, String) {
    let body = created("session", || {
        http.post(format!("{url}/api/v1/sessions"))
            .bearer_auth(host)
            .json(&json!({ "title": "fault" }))
    })
    .await;
    (
        body["session_id"].as_str().unwrap().to_owned(),
        body["agent_token"].as_str().unwrap().to_owned(),
    )
}

/// Creates widgets on the daemon at `url` until `stop`, recording every
/// answer in `seen`.
async fn create_until(url: String, host: String, seen: Arc<Mutex<Seen>>, stop: Arc<Mutex<bool>>) {
    let http = client();
    let mut made = 0usize;
    let mut current = None;
    while !*stop.lock().unwrap() {
        // An agent may add 30 widgets at once: a fresh session before that.
        if made.is_multiple_of(25) {
            current = Some(session(&http, &url, &host).await);
        }
        let (session, agent) = current.as_ref().unwrap();
        made += 1;
        let Ok(r) = http
            .post(format!("{url}/api/v1/sessions/{session}/widgets/env-vars"))
            .bearer_auth(agent)
            .json(&json!({ "names": [format!("CUT_{made}")], "reason": "to test faults" }))
            .send()
            .await
        else {
            continue;
        };
        let status = r.status();
        let retry_after = r.headers().get("retry-after").cloned();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        let mut seen = seen.lock().unwrap();
        match status {
            StatusCode::CREATED => seen
                .acknowledged
                .push(body["widget_id"].as_str().unwrap().to_owned()),
            StatusCode::SERVICE_UNAVAILABLE => {
                seen.unavailable += 1;
                if retry_after.is_none() || body["error"]["code"] != "storage_unavailable" {
                    seen.malformed_503.push(format!("{retry_after:?} {body}"));
                }
            }
            _ => seen.other.push(format!("{status} {body}")),
        }
    }
}

async fn acknowledged(seen: &Mutex<Seen>) -> usize {
    seen.lock().unwrap().acknowledged.len()
}

async fn until_acknowledged(seen: &Mutex<Seen>, n: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while acknowledged(seen).await < n {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Two daemons on the database of `tmp` under load from 8 creators while
/// `fault` strikes the server; then what every fault must leave true:
/// only 201 or `503 storage_unavailable` with `Retry-After` was answered,
/// at least one request was caught, writes resumed by themselves, an event
/// stream opened before the fault stays open and hears a widget created on
/// the other daemon after it (the `LISTEN` wake-ups resumed), nothing
/// acknowledged was lost, and the audit chain verifies.
async fn under_load<F: Future<Output = ()>>(
    tmp: TestDir,
    fault: impl FnOnce(PathBuf, Arc<Mutex<Seen>>) -> F,
) {
    let dir = tmp.path().join("data");
    let a = Daemon::start(&dir, tmp.path(), "a");
    let b = Daemon::start(&dir, tmp.path(), "b");
    let log = || {
        let read = |d: &Daemon| std::fs::read_to_string(&d.err_log).unwrap_or_default();
        let tail = |s: String| s.lines().rev().take(40).collect::<Vec<_>>().join("\n");
        format!("{}\n---\n{}", tail(read(&a)), tail(read(&b)))
    };
    let host = Driver::start(&a.url, &dir).await.host;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(Mutex::new(false));
    let mut workers = Vec::new();
    for daemon in [&a, &b] {
        for _ in 0..4 {
            let load = create_until(daemon.url.clone(), host.clone(), seen.clone(), stop.clone());
            workers.push(tokio::spawn(load));
        }
    }
    until_acknowledged(&seen, 40, "the load made no progress").await;
    // A person watching a session on daemon B.
    let http = client();
    let (watched, agent) = session(&http, &a.url, &host).await;
    let stream = event_stream(&http, &b.url, &watched, &host).await;

    fault(dir.clone(), seen.clone()).await;

    // Writes resume by themselves.
    let after = acknowledged(&seen).await;
    until_acknowledged(&seen, after + 40, "writes did not resume after the fault").await;
    // And so do the wake-ups: a widget created on A reaches a stream
    // opened on B now at once, well before the stream's own re-read (10 s
    // after it opened) would find it; the stream opened before the fault
    // hears it too.
    let fresh = event_stream(&http, &b.url, &watched, &host).await;
    let created = create_on(&http, &a.url, &watched, &agent).await;
    let heard = heard_within(fresh, &created, Duration::from_secs(5)).await;
    assert!(heard, "B was not woken by {created}\n{}", log());
    match listen(stream, &created, Duration::from_secs(20)).await {
        Heard::Yes => {}
        // While the database could not be reached, the stream's access
        // re-check could decide nothing: it sends nothing and stays open.
        Heard::Ended(last) => panic!(
            "B's stream from before the fault ended (after event {last:?}) instead of waiting \
             for the database\n{}",
            log()
        ),
        Heard::No => panic!(
            "B's stream from before the fault did not hear {created}\n{}",
            log()
        ),
    }
    *stop.lock().unwrap() = true;
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(60), worker)
            .await
            .expect("the load stopped within a minute")
            .unwrap();
    }
    let logs = log();
    a.stop();
    b.stop();

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    eprintln!(
        "{} acknowledged, {} answered 503",
        seen.acknowledged.len(),
        seen.unavailable
    );
    assert!(
        seen.other.is_empty(),
        "answers other than 201 or 503: {:?}\n{logs}",
        seen.other
    );
    assert!(
        seen.malformed_503.is_empty(),
        "503 without Retry-After or storage_unavailable: {:?}",
        seen.malformed_503
    );
    assert!(
        seen.unavailable > 0,
        "no request was caught by the fault; the test proved nothing"
    );

    // Nothing acknowledged was lost, and the chain verifies.
    let data = crate::helpers::open_data(&dir).await;
    let stored: HashSet<String> = sqlx::query_scalar("SELECT id FROM widgets")
        .fetch_all(&data.db.read)
        .await
        .unwrap()
        .into_iter()
        .collect();
    data.db.close().await;
    let lost: Vec<&String> = seen
        .acknowledged
        .iter()
        .filter(|w| !stored.contains(*w))
        .collect();
    assert!(lost.is_empty(), "acknowledged widgets lost: {lost:?}");
    let verify = widgetd(&dir)
        .args(["audit", "verify"])
        .output_within(COMMAND_LIMIT);
    assert!(verify.status.success(), "{verify:?}");
}

/// Creates a widget in `session`, retrying while the database is away.
async fn create_on(http: &reqwest::Client, url: &str, session: &str, agent: &str) -> String {
    let body = created("widget", || {
        http.post(format!("{url}/api/v1/sessions/{session}/widgets/env-vars"))
            .bearer_auth(agent)
            .json(&json!({ "names": ["WATCHED_KEY"], "reason": "to be seen on B" }))
    })
    .await;
    body["widget_id"].as_str().unwrap().to_owned()
}

/// Whether `needle` comes on the event stream within `limit`.
async fn heard_within(stream: reqwest::Response, needle: &str, limit: Duration) -> bool {
    matches!(listen(stream, needle, limit).await, Heard::Yes)
}

/// What an event stream did within a time limit.
enum Heard {
    /// It sent the awaited text.
    Yes,
    /// It ended first, after the event with this id (if any).
    Ended(Option<String>),
    /// Neither.
    No,
}

/// Reads `stream` until `needle` comes, the stream ends, or `limit` passes.
async fn listen(mut stream: reqwest::Response, needle: &str, limit: Duration) -> Heard {
    let deadline = tokio::time::Instant::now() + limit;
    let mut text = String::new();
    while !text.contains(needle) {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => text.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(Ok(None) | Err(_)) => {
                let last = text
                    .lines()
                    .filter_map(|line| line.strip_prefix("id:"))
                    .map(|id| id.trim().to_owned())
                    .next_back();
                return Heard::Ended(last);
            }
            Err(_) => return Heard::No,
        }
    }
    Heard::Yes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_database_connections_answer_503_and_the_daemons_reconnect_losing_nothing() {
    under_load(
        crate::helpers::backend::postgres_dir(),
        |dir, _| async move {
            // An administrator cuts every connection of both daemons, a few
            // times over so that requests in flight are caught.
            let admin = crate::helpers::open_data(&dir).await.db;
            for _ in 0..3 {
                // The administrator's own pooled connections are cut too (all
                // but the one running the statement), and the pool pings only
                // a connection idle for a second or more as it hands it out:
                // a cut one fails its statement once and is replaced.
                let mut attempts = 0;
                let cut: Vec<bool> = loop {
                    let cut = sqlx::query_scalar(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid() \
                     AND backend_type = 'client backend'",
                    )
                    .fetch_all(&admin.write)
                    .await;
                    match cut {
                        Ok(cut) => break cut,
                        Err(e) if attempts < 20 && widgetd_domain::db::connection_lost(&e) => {
                            attempts += 1
                        }
                        Err(e) => panic!("the administrator's statement failed: {e}"),
                    }
                };
                assert!(cut.len() >= 2, "both daemons were connected: {cut:?}");
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            admin.close().await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_under_load_answers_503_and_the_daemons_reconnect_losing_nothing() {
    // A server of the test's own: restarting the shared one would cut
    // every other test.
    let server = PrivateServer::start();
    let tmp = crate::helpers::backend::postgres_dir_on(server.url());
    let restarting = &server;
    under_load(tmp, |_, seen| async move {
        // Until a request in flight was caught (twice at least, at most
        // ten times).
        for restart in 1..=10 {
            let started = Instant::now();
            tokio::task::block_in_place(|| restarting.restart());
            eprintln!("restart {restart} took {:?}", started.elapsed());
            tokio::time::sleep(Duration::from_millis(300)).await;
            if restart >= 2 && seen.lock().unwrap().unavailable > 0 {
                break;
            }
        }
    })
    .await;
    // The first start and every restart: the server really went down.
    let log = server.log();
    let starts = log
        .matches("database system is ready to accept connections")
        .count();
    assert!(starts >= 3, "{starts} starts in the server's log:\n{log}");
}

/// An event stream open while the server is down for longer than its
/// access re-check takes to fail stays open: the re-check, which cannot
/// reach the database, decides nothing and sends nothing; once the server
/// is back, access is checked and the stream hears what happens next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_waits_out_a_stopped_server_and_hears_what_follows() {
    let server = PrivateServer::start();
    let tmp = crate::helpers::backend::postgres_dir_on(server.url());
    let dir = tmp.path().join("data");
    let daemon = Daemon::start(&dir, tmp.path(), "a");
    let host = Driver::start(&daemon.url, &dir).await.host;
    let http = client();
    let (watched, agent) = session(&http, &daemon.url, &host).await;
    let stream = event_stream(&http, &daemon.url, &watched, &host).await;
    tokio::task::block_in_place(|| server.stop());
    // Past the stream's re-check of access (10 s after it opened), whose
    // epoch read and token read each wait up to the pool's 10 s for a
    // connection and fail (a check that began 30 s in would wait for the
    // server to come back, and pass).
    tokio::time::sleep(Duration::from_secs(36)).await;
    tokio::task::block_in_place(|| server.start_again());
    let created = create_on(&http, &daemon.url, &watched, &agent).await;
    let log = || std::fs::read_to_string(&daemon.err_log).unwrap_or_default();
    match listen(stream, &created, Duration::from_secs(10)).await {
        Heard::Yes => {}
        Heard::Ended(last) => panic!(
            "the stream ended (after event {last:?}) while the server was down\n{}",
            log()
        ),
        Heard::No => panic!("the stream did not hear {created}\n{}", log()),
    }
    daemon.stop();
}
