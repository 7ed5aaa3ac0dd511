//! `widgetd backup` while the daemon is busy, then `widgetd restore` into
//! a fresh data dir with the key: everything acknowledged before the backup
//! began is there and decrypts, and the audit chain verifies.

use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::db::corruption::{api_token, check};
use crate::helpers::{COMMAND_LIMIT, OutputWithin};
use crate::helpers::{Daemon, client, stderr, stdout, widgetd};

/// Values the daemon acknowledged, in order.
type Acked = Arc<Mutex<Vec<(String, String)>>>;

/// Sets fresh values until `stop`; records each 204.
async fn write_values(
    url: String,
    token: String,
    worker: usize,
    acked: Acked,
    stop: Arc<tokio::sync::Notify>,
) {
    let http = client();
    for n in 0.. {
        let (name, value) = (format!("LOAD_{worker}_{n}"), crate::helpers::canary("load"));
        let put = http
            .put(format!("{url}/api/v1/env/{name}"))
            .bearer_auth(&token)
            .json(&json!({ "value": value, "scope": "global" }))
            .send();
        tokio::select! {
            r = put => match r {
                Ok(r) if r.status() == StatusCode::NO_CONTENT => acked.lock().unwrap().push((name, value)),
                _ => return,
            },
            () = stop.notified() => return,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_restores_whole_into_a_fresh_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let daemon = Daemon::start(&dir, tmp.path(), "busy");
    let token = api_token(&dir);
    let body: Value = client()
        .post(format!("{}/api/v1/sessions", daemon.url))
        .bearer_auth(&token)
        .json(&json!({ "title": "backup" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = body["session_id"].as_str().unwrap().to_owned();
    let acked: Acked = Arc::default();
    let stop = Arc::new(tokio::sync::Notify::new());
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let work = write_values(
                daemon.url.clone(),
                token.clone(),
                w,
                acked.clone(),
                stop.clone(),
            );
            tokio::spawn(work)
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while acked.lock().unwrap().len() < 50 {
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon acknowledged {} writes in 60 s, not 50",
            acked.lock().unwrap().len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // What was acknowledged before the backup began must be in it.
    let before = acked.lock().unwrap().clone();
    let copy = tmp.path().join("copy.db");
    let out = tokio::task::spawn_blocking({
        let (dir, copy) = (dir.clone(), copy.clone());
        move || {
            widgetd(&dir)
                .arg("backup")
                .arg(&copy)
                .output_within(COMMAND_LIMIT)
        }
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let during = acked.lock().unwrap().len() - before.len();
    stop.notify_waiters();
    for w in workers {
        w.abort();
        let _ = w.await;
    }
    daemon.stop();
    println!(
        "backup under load: {} values before it, {during} more while it ran",
        before.len()
    );

    // Restored into a fresh data dir with the key of its time.
    let fresh = tmp.path().join("fresh");
    let out = widgetd(&fresh)
        .arg("restore")
        .arg(&copy)
        .arg("--key-file")
        .arg(dir.join("master.key"))
        .output_within(COMMAND_LIMIT);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("chain intact"), "{}", stdout(&out));
    let (code, report, printed) = check(&fresh);
    assert_eq!(code, 0, "{printed}");
    assert!(report["sections"][4]["checked"].as_i64().unwrap() >= before.len() as i64);

    let daemon = Daemon::start(&fresh, tmp.path(), "restored");
    let r = client()
        .get(format!("{}/api/v1/sessions/{session}/env", daemon.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let env: Value = r.json().await.unwrap();
    for (name, value) in &before {
        assert_eq!(env["env"][name], value.as_str(), "{name} after the restore");
    }
    daemon.stop();
}

#[tokio::test]
async fn restore_refuses_a_data_dir_in_use_and_a_backup_that_does_not_check_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    crate::helpers::new_data_dir(&dir);
    let added = crate::helpers::run_with_stdin(
        widgetd(&dir).args(["user", "add", "bob", "--password-stdin"]),
        crate::helpers::PASSWORD,
    );
    assert!(added.status.success());
    let set = crate::helpers::run_with_stdin(
        widgetd(&dir).args(["env", "set", "KEPT", "--user", "bob"]),
        "kept-value",
    );
    assert!(set.status.success(), "{}", stderr(&set));
    let copy = tmp.path().join("copy.db");
    assert!(
        widgetd(&dir)
            .arg("backup")
            .arg(&copy)
            .status()
            .unwrap()
            .success()
    );

    // Over a data dir with a database: refused, then moved aside with --force.
    let out = widgetd(&dir)
        .arg("restore")
        .arg(&copy)
        .output_within(COMMAND_LIMIT);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("already holds a database (widgetd.db)"),
        "{}",
        stderr(&out)
    );
    let out = widgetd(&dir)
        .arg("restore")
        .arg(&copy)
        .arg("--force")
        .output_within(COMMAND_LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let aside: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("widgetd.db.before-restore-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");

    // With another key: the check fails, nothing is restored.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let key = other.join("master.key");
    widgetd_domain::crypto::MasterKey::generate()
        .write_new_file(&key)
        .unwrap();
    let fresh = tmp.path().join("fresh");
    let out = widgetd(&fresh)
        .arg("restore")
        .arg(&copy)
        .arg("--key-file")
        .arg(&key)
        .output_within(COMMAND_LIMIT);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("nothing was restored"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("does not unwrap"), "{}", stdout(&out));
    assert!(!fresh.join("widgetd.db").exists() && !fresh.join("master.key").exists());
    // Without any key: told how to give one.
    let out = widgetd(&fresh)
        .arg("restore")
        .arg(&copy)
        .output_within(COMMAND_LIMIT);
    assert!(stderr(&out).contains("--key-file"), "{}", stderr(&out));
}
