//! What makes widgetd fast must not cost correctness: reads write nothing,
//! and what the daemon acknowledged survives `kill -9`.

use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd::db::Backend;

use crate::helpers::{Daemon, session_cookie, spawn_app};

async fn session_row(app: &crate::helpers::TestApp) -> (String, i64) {
    sqlx::query_as("SELECT data, expires_at FROM web_sessions")
        .fetch_one(&app.state.db.read)
        .await
        .unwrap()
}

#[tokio::test]
async fn signed_in_reads_do_not_rewrite_the_session_until_it_is_due_a_touch() {
    let app = spawn_app().await;
    app.user("alice", widgetd::auth::Role::Member).await;
    let browser = app.login("alice").await;
    let after_login = session_row(&app).await;
    for _ in 0..3 {
        let r = app
            .client
            .get(format!("{}/api/v1/me", app.url))
            .header("cookie", &browser.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(session_cookie(&r).is_none(), "a read re-sent the cookie");
    }
    assert_eq!(
        session_row(&app).await,
        after_login,
        "a read rewrote the session"
    );

    // Once the last touch is old, the next request moves the expiry forward.
    let age = match app.state.db.backend() {
        Backend::Sqlite => {
            "UPDATE web_sessions SET data = json_set(data, '$.touched_at', 0), \
             expires_at = expires_at - 1000"
        }
        Backend::Postgres => {
            "UPDATE web_sessions SET data = jsonb_set(CAST(data AS jsonb), '{touched_at}', '0')::text, \
             expires_at = expires_at - 1000"
        }
    };
    sqlx::query(age).execute(&app.state.db.write).await.unwrap();
    let aged = session_row(&app).await;
    let r = app
        .client
        .get(format!("{}/api/v1/me", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        session_cookie(&r).is_some(),
        "the touch sends the cookie again"
    );
    let touched = session_row(&app).await;
    assert!(touched.1 > aged.1, "the idle expiry moved forward");
}

/// One person's view of a running daemon for the kill tests.
#[derive(Clone)]
pub struct Driver {
    url: String,
    client: reqwest::Client,
    pub host: String,
    cookie: String,
    csrf: String,
}

/// What the daemon answered 2xx to before it died.
#[derive(Default)]
pub struct Acknowledged {
    /// (agent token, widget id) of every submit answered 303.
    pub submitted: Vec<(String, String)>,
    /// (session id, prompt id) of every ack answered 200.
    pub acked: Vec<(String, String)>,
}

impl Driver {
    pub async fn start(url: &str, data_dir: &std::path::Path) -> Driver {
        let output = crate::helpers::widgetd(data_dir)
            .args(["token", "create", "--user", "admin", "--json"])
            .args(["--scope", "sessions,env:read,env:write"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let host = serde_json::from_slice::<Value>(&output.stdout).unwrap()["token"]
            .as_str()
            .unwrap()
            .to_owned();
        let client = crate::helpers::client();
        let r = client
            .post(format!("{url}/login"))
            .form(&[
                ("username", "admin"),
                ("password", crate::helpers::PASSWORD),
            ])
            .send()
            .await
            .unwrap();
        let cookie = session_cookie(&r).expect("logged in");
        let me: Value = client
            .get(format!("{url}/api/v1/me"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        Driver {
            url: url.to_owned(),
            client,
            host,
            cookie,
            csrf: me["csrf_token"].as_str().unwrap().to_owned(),
        }
    }

    pub async fn session(&self) -> (String, String) {
        let body: Value = self
            .client
            .post(format!("{}/api/v1/sessions", self.url))
            .bearer_auth(&self.host)
            .json(&json!({ "title": "kill" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (
            body["session_id"].as_str().unwrap().to_owned(),
            body["agent_token"].as_str().unwrap().to_owned(),
        )
    }

    /// Round trips until the daemon stops answering; records every 2xx.
    pub async fn round_trips(self, session: String, agent: String, seen: Arc<Mutex<Acknowledged>>) {
        for round in 0.. {
            // A fresh name each time: one already set would be answered at once.
            let name = format!("KILL_KEY_{round}");
            let Ok(r) = self
                .client
                .post(format!(
                    "{}/api/v1/sessions/{session}/widgets/env-vars",
                    self.url
                ))
                .bearer_auth(&agent)
                .json(&json!({ "names": [name], "reason": "to test durability" }))
                .send()
                .await
            else {
                return;
            };
            let Ok(body) = r.json::<Value>().await else {
                return;
            };
            let Some(widget) = body["widget_id"].as_str().map(str::to_owned) else {
                return;
            };
            let submitted = self
                .client
                .post(format!("{}/widgets/{widget}/submit", self.url))
                .header("cookie", &self.cookie)
                .header("origin", &self.url)
                .header("sec-fetch-site", "same-origin")
                .form(&[
                    ("csrf_token", self.csrf.as_str()),
                    (&format!("value.{name}"), "kill-value"),
                    ("scope", "session"),
                ])
                .send()
                .await;
            match submitted {
                Ok(r) if r.status() == StatusCode::SEE_OTHER => {
                    seen.lock().unwrap().submitted.push((agent.clone(), widget));
                }
                _ => return,
            }
            let Ok(r) = self
                .client
                .get(format!(
                    "{}/api/v1/sessions/{session}/prompts?wait=5",
                    self.url
                ))
                .bearer_auth(&self.host)
                .send()
                .await
            else {
                return;
            };
            let Ok(body) = r.json::<Value>().await else {
                return;
            };
            for prompt in body["prompts"].as_array().cloned().unwrap_or_default() {
                let id = prompt["prompt_id"].to_string();
                let acked = self
                    .client
                    .post(format!(
                        "{}/api/v1/sessions/{session}/prompts/{id}/ack",
                        self.url
                    ))
                    .bearer_auth(&self.host)
                    .json(&json!({}))
                    .send()
                    .await;
                match acked {
                    Ok(r) if r.status() == StatusCode::OK => {
                        seen.lock().unwrap().acked.push((session.clone(), id));
                    }
                    _ => return,
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_under_load_loses_no_acknowledged_submit_ack_or_audit_row() {
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    let mut daemon = Daemon::start(&dir, tmp.path(), "first");
    let driver = Driver::start(&daemon.url, &dir).await;
    let seen = Arc::new(Mutex::new(Acknowledged::default()));
    let mut workers = Vec::new();
    for _ in 0..16 {
        let (session, agent) = driver.session().await;
        let worker = driver.clone().round_trips(session, agent, seen.clone());
        workers.push(tokio::spawn(worker));
    }
    // Liveness guard only: kill once enough has been acknowledged.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while seen.lock().unwrap().acked.len() < 40 {
        assert!(
            std::time::Instant::now() < deadline,
            "the load made no progress"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    for worker in workers {
        worker.await.unwrap();
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());

    let daemon = Daemon::start(&dir, tmp.path(), "second");
    assert_all_kept(&daemon.url, &dir, &seen).await;
    daemon.stop();
    assert_chain_verifies(&dir, &seen).await;
}

/// Every submit and ack in `seen` is still there, as the daemon at `url`
/// (on the data dir `dir`) serves them.
pub async fn assert_all_kept(url: &str, dir: &std::path::Path, seen: &Acknowledged) {
    let client = crate::helpers::client();
    let host = Driver::start(url, dir).await.host;
    for (agent, widget) in &seen.submitted {
        let body: Value = client
            .get(format!("{url}/api/v1/widgets/{widget}"))
            .bearer_auth(agent)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            body["status"], "submitted",
            "an acknowledged submit was lost"
        );
    }
    for (session, prompt) in &seen.acked {
        let body: Value = client
            .get(format!("{url}/api/v1/sessions/{session}/prompts?wait=0"))
            .bearer_auth(&host)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let pending: Vec<String> = body["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["prompt_id"].to_string())
            .collect();
        assert!(!pending.contains(prompt), "an acknowledged ack was lost");
    }
}

/// Each acknowledged submit has its one audit row, and the chain verifies.
pub async fn assert_chain_verifies(dir: &std::path::Path, seen: &Acknowledged) {
    let db = crate::helpers::open_data(dir).await.db;
    for (_, widget) in &seen.submitted {
        let rows: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM audit_log WHERE action = 'widget.submit' AND widget_id = $1",
        )
        .bind(widget)
        .fetch_one(&db.read)
        .await
        .unwrap();
        assert_eq!(rows, 1, "the audit row of an acknowledged submit");
    }
    db.close().await;
    let verify = crate::helpers::widgetd(dir)
        .args(["audit", "verify"])
        .output()
        .unwrap();
    assert!(verify.status.success(), "{verify:?}");
}
