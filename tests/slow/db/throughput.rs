//! What makes widgetd fast must not cost correctness: reads write nothing,
//! and what the daemon acknowledged survives `kill -9`.

use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::db::Backend;

use crate::helpers::{COMMAND_LIMIT, Daemon, OutputWithin, session_cookie, spawn_app};

async fn session_row(app: &crate::helpers::TestApp) -> (String, i64) {
    sqlx::query_as("SELECT data, expires_at FROM web_sessions")
        .fetch_one(&app.state.db.read)
        .await
        .unwrap()
}

#[tokio::test]
async fn signed_in_reads_do_not_rewrite_the_session_until_it_is_due_a_touch() {
    let app = spawn_app().await;
    app.user("alice", widgetd_domain::auth::Role::Member).await;
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
            .output_within(COMMAND_LIMIT);
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

/// Kills of the daemon under load, each at a seeded random point.
const KILLS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_under_load_loses_no_acknowledged_submit_ack_or_audit_row() {
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    let seen = Arc::new(Mutex::new(Acknowledged::default()));
    let mut sessions = Vec::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for kill in 0..KILLS {
        let mut daemon = Daemon::start(&dir, tmp.path(), &format!("run-{kill}"));
        let driver = Driver::start(&daemon.url, &dir).await;
        let mut workers = Vec::new();
        for _ in 0..16 {
            let (session, agent) = driver.session().await;
            sessions.push(session.clone());
            let worker = driver.clone().round_trips(session, agent, seen.clone());
            workers.push(tokio::spawn(worker));
        }
        // A random point: after 10 to 59 more acknowledged acks.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let until = seen.lock().unwrap().acked.len() + 10 + (seed % 50) as usize;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while seen.lock().unwrap().acked.len() < until {
            assert!(
                std::time::Instant::now() < deadline,
                "the load made no progress"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        daemon.child.kill().unwrap();
        daemon.child.wait().unwrap();
        for worker in workers {
            worker.await.unwrap();
        }
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    println!(
        "kill -9 under load: {KILLS} kills, {} submits and {} acks acknowledged",
        seen.submitted.len(),
        seen.acked.len()
    );

    let daemon = Daemon::start(&dir, tmp.path(), "after");
    assert_all_kept(&daemon.url, &dir, &seen).await;
    assert_nothing_stuck(&daemon.url, &dir, &sessions, seen.submitted.len()).await;
    daemon.stop();
    assert_chain_verifies(&dir, &seen).await;
}

/// After the kills: every widget is pending or ended with its prompt
/// queued, every prompt not acknowledged is delivered again, and every
/// stored value decrypts to what was submitted.
async fn assert_nothing_stuck(
    url: &str,
    dir: &std::path::Path,
    sessions: &[String],
    submits: usize,
) {
    let client = crate::helpers::client();
    let host = Driver::start(url, dir).await.host;
    let db = crate::helpers::open_data(dir).await.db;
    let mut values = 0;
    let ended_without_prompt: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM widgets w WHERE w.status <> 'pending'
         AND NOT EXISTS (SELECT 1 FROM prompts p WHERE p.widget_id = w.id)",
    )
    .fetch_one(&db.read)
    .await
    .unwrap();
    assert_eq!(ended_without_prompt, 0, "a widget ended without its prompt");
    for session in sessions {
        let mut queued: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM prompts WHERE session_id = $1 AND acked_at IS NULL ORDER BY id",
        )
        .bind(session)
        .fetch_all(&db.read)
        .await
        .unwrap();
        let body: Value = client
            .get(format!("{url}/api/v1/sessions/{session}/prompts?wait=0"))
            .bearer_auth(&host)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut delivered: Vec<i64> = body["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["prompt_id"].as_i64().unwrap())
            .collect();
        queued.sort_unstable();
        delivered.sort_unstable();
        assert_eq!(
            delivered, queued,
            "an unacknowledged prompt was not delivered again"
        );
        let env: Value = client
            .get(format!("{url}/api/v1/sessions/{session}/env"))
            .bearer_auth(&host)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for (name, value) in env["env"].as_object().unwrap() {
            assert_eq!(
                value, "kill-value",
                "{name} does not decrypt to what was sent"
            );
            values += 1;
        }
    }
    // A submit may commit and die before its answer: at least as many.
    assert!(
        values >= submits,
        "{values} values for {submits} acknowledged submits"
    );
    db.close().await;
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
        .output_within(COMMAND_LIMIT);
    assert!(verify.status.success(), "{verify:?}");
}
