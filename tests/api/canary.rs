//! The security invariant, end to end on the real binary: a unique value set
//! through the API reaches the executor path and nothing else: not the
//! database file or its WAL in any common encoding, not a log line at TRACE,
//! not a response an agent token can get.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use reqwest::Client;
use serde_json::{Value, json};

use crate::helpers::{canary, stderr, stdout, widgetd};

/// Text forms the value could take if it leaked: as is, hex, and base64 at
/// each of the three alignments it could have inside a longer encoding.
fn leak_forms(value: &str) -> Vec<Vec<u8>> {
    let bytes = value.as_bytes();
    let mut forms = vec![
        bytes.to_vec(),
        hex(bytes).into_bytes(),
        hex(bytes).to_uppercase().into_bytes(),
    ];
    for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
        for offset in 0..3 {
            let mut padded = vec![b'x'; offset];
            padded.extend_from_slice(bytes);
            let encoded = engine.encode(&padded);
            let skip = (offset * 4).div_ceil(3);
            forms.push(encoded.as_bytes()[skip..encoded.len() - 4].to_vec());
        }
    }
    forms
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn assert_absent(what: &str, haystack: &[u8], value: &str) {
    for form in leak_forms(value) {
        assert!(
            !haystack.windows(form.len()).any(|w| w == form.as_slice()),
            "{what} contains the canary (as {:?})",
            String::from_utf8_lossy(&form)
        );
    }
}

fn wait_for_url(stdout_file: &Path, daemon: &mut Child) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(stdout_file).unwrap_or_default();
        if let Some(rest) = text.split("listening on ").nth(1) {
            return rest.lines().next().unwrap().trim().to_owned();
        }
        assert!(
            daemon.try_wait().unwrap().is_none(),
            "the daemon exited: {text}"
        );
        assert!(
            Instant::now() < deadline,
            "the daemon did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read_if_exists(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

#[tokio::test]
async fn a_canary_reaches_only_the_executor_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let (out_log, err_log) = (tmp.path().join("serve.out"), tmp.path().join("serve.err"));
    let mut daemon = widgetd(&dir)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("RUST_LOG", "trace")
        .env("WIDGETD_ADMIN_PASSWORD", "an admin password for tests")
        .stdout(File::create(&out_log).unwrap())
        .stderr(File::create(&err_log).unwrap())
        .spawn()
        .unwrap();
    let url = wait_for_url(&out_log, &mut daemon);
    let mut cli_output = Vec::new();

    let minted = widgetd(&dir)
        .args([
            "token",
            "create",
            "--user",
            "admin",
            "--scope",
            "sessions,env:read,env:write",
            "--json",
        ])
        .env("RUST_LOG", "trace")
        .output()
        .unwrap();
    cli_output.extend_from_slice(&minted.stderr);
    let token: Value = serde_json::from_slice(&minted.stdout).unwrap();
    let token = token["token"].as_str().unwrap().to_owned();

    let client = Client::new();
    let session: Value = client
        .post(format!("{url}/api/v1/sessions"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (session_id, agent) = (
        session["session_id"].as_str().unwrap(),
        session["agent_token"].as_str().unwrap(),
    );

    let (global, scoped) = (canary("global"), canary("session"));
    for body in [
        json!({ "value": global }),
        json!({ "value": scoped, "scope": "session", "session_id": session_id }),
    ] {
        let name = if body.get("scope").is_some() {
            "SESSION_KEY"
        } else {
            "GLOBAL_KEY"
        };
        let r = client
            .put(format!("{url}/api/v1/env/{name}"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
    }

    // The executor path is the one place the values come out.
    let env: Value = client
        .get(format!("{url}/api/v1/sessions/{session_id}/env"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        env["env"],
        json!({ "GLOBAL_KEY": global, "SESSION_KEY": scoped })
    );

    // Everything an agent token can ask for.
    let mut agent_responses = Vec::new();
    for (method, path) in [
        ("GET", format!("/api/v1/sessions/{session_id}/env")),
        ("GET", "/api/v1/env".to_owned()),
        ("POST", "/api/v1/sessions".to_owned()),
        ("PUT", "/api/v1/env/GLOBAL_KEY".to_owned()),
        ("DELETE", "/api/v1/env/GLOBAL_KEY".to_owned()),
    ] {
        let request = client
            .request(method.parse().unwrap(), format!("{url}{path}"))
            .bearer_auth(agent);
        let response = request.json(&json!({})).send().await.unwrap();
        assert!(response.status().is_client_error(), "{method} {path}");
        agent_responses.extend_from_slice(&response.bytes().await.unwrap());
    }
    let list = client
        .get(format!("{url}/api/v1/env"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    agent_responses.extend_from_slice(&list.bytes().await.unwrap());

    let mut exec = Command::new(env!("CARGO_BIN_EXE_widgetd"));
    exec.args([
        "exec",
        "--session",
        session_id,
        "--url",
        &url,
        "--",
        "sh",
        "-c",
        r#"echo "$GLOBAL_KEY $SESSION_KEY""#,
    ])
    .env("WIDGETD_TOKEN", &token)
    .env("RUST_LOG", "trace");
    let exec = tokio::task::spawn_blocking(move || exec.output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        stdout(&exec),
        "<concealed by widgetd> <concealed by widgetd>\n",
        "{}",
        stderr(&exec)
    );
    cli_output.extend_from_slice(&exec.stdout);
    cli_output.extend_from_slice(&exec.stderr);

    let db_path = dir.join("widgetd.db");
    let live_db = read_if_exists(&db_path);
    let live_wal = read_if_exists(&dir.join("widgetd.db-wal"));
    assert!(
        !live_wal.is_empty(),
        "the WAL should hold the recent writes while the daemon runs"
    );

    Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(
        daemon.wait().unwrap().success(),
        "the daemon did not shut down cleanly on SIGTERM"
    );
    let closed_db = read_if_exists(&db_path);
    let logs = [read_if_exists(&out_log), read_if_exists(&err_log)].concat();
    assert!(
        String::from_utf8_lossy(&logs).contains("TRACE"),
        "the daemon did not log at TRACE"
    );
    assert!(String::from_utf8_lossy(&logs).contains("shutting down"));

    for value in [&global, &scoped] {
        assert_absent("the database file while running", &live_db, value);
        assert_absent("the WAL", &live_wal, value);
        assert_absent("the database file after shutdown", &closed_db, value);
        assert_absent("the daemon's output at TRACE", &logs, value);
        assert_absent("the CLI's output at TRACE", &cli_output, value);
        assert_absent(
            "a response to an agent token or a listing",
            &agent_responses,
            value,
        );
    }
}
