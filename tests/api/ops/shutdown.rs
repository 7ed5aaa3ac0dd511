//! SIGTERM under load: requests in flight are answered, event streams and
//! long-polls end at once, the write-ahead log is folded into the database
//! and the process exits 0, all within a bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::db::corruption::{api_token, check};
use crate::helpers::{Daemon, client};

/// How long a clean stop may take under this load.
const BOUND: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_answers_in_flight_requests_and_leaves_a_clean_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut daemon = Daemon::start(&dir, tmp.path(), "term");
    let token = api_token(&dir);
    let http = client();
    let body: Value = http
        .post(format!("{}/api/v1/sessions", daemon.url))
        .bearer_auth(&token)
        .json(&json!({ "title": "term" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = body["session_id"].as_str().unwrap().to_owned();

    // An event stream and a long-poll, open when the signal comes.
    let events = http
        .get(format!("{}/api/v1/sessions/{session}/events", daemon.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    let stream = tokio::spawn(async move {
        let mut events = events;
        loop {
            match events.chunk().await {
                Ok(Some(_)) => continue,
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    });
    let poll = tokio::spawn({
        let (http, url, token, session) = (
            http.clone(),
            daemon.url.clone(),
            token.clone(),
            session.clone(),
        );
        async move {
            http.get(format!("{url}/api/v1/sessions/{session}/prompts?wait=120"))
                .bearer_auth(&token)
                .send()
                .await
                .map(|r| r.status())
        }
    });

    // Writers that stop at the first request the daemon no longer takes.
    let (answered, bad) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (http, url, token) = (http.clone(), daemon.url.clone(), token.clone());
            let (answered, bad) = (answered.clone(), bad.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let r = http
                        .put(format!("{url}/api/v1/env/TERM_{w}_{n}"))
                        .bearer_auth(&token)
                        .json(&json!({ "value": "v", "scope": "global" }))
                        .send()
                        .await;
                    match r {
                        Ok(r) if r.status() == StatusCode::NO_CONTENT => {
                            answered.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(_) => {
                            bad.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                        // Refused or closed before an answer: the daemon
                        // stopped taking requests.
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while answered.load(Ordering::SeqCst) < 100 {
        assert!(
            Instant::now() < deadline,
            "the daemon answered {} writes in 60 s, not 100",
            answered.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let signalled = Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &daemon.child.id().to_string()])
        .status()
        .unwrap();
    let status = loop {
        if let Some(status) = daemon.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < BOUND,
            "still running {BOUND:?} after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = signalled.elapsed();
    assert!(status.success(), "exit status {status:?}");
    for w in writers {
        w.await.unwrap();
    }
    assert_eq!(
        bad.load(Ordering::SeqCst),
        0,
        "a request in flight got an error answer"
    );
    assert!(stream.await.unwrap(), "the event stream ended cleanly");
    assert_eq!(
        poll.await.unwrap().unwrap(),
        StatusCode::OK,
        "the long-poll was answered"
    );
    let log = std::fs::read_to_string(&daemon.err_log).unwrap();
    assert!(log.contains("stopped"), "{log}");
    // Background jobs stop before the pool closes: none meets a closed pool.
    assert!(!log.contains("ERROR"), "{log}");
    let wal = dir.join(format!("{}-wal", widgetd_domain::db::DB_FILE));
    assert!(
        std::fs::metadata(&wal).map_or(true, |m| m.len() == 0),
        "the write-ahead log was left behind"
    );
    println!(
        "SIGTERM under load: {} writes answered, stopped in {} ms",
        answered.load(Ordering::SeqCst),
        took.as_millis()
    );

    // Every answered write is there, and the data dir checks clean.
    let (code, report, printed) = check(&dir);
    assert_eq!(code, 0, "{printed}");
    let values = report["sections"][4]["checked"].as_u64().unwrap() as usize;
    assert!(values >= answered.load(Ordering::SeqCst), "{values} stored");
}
