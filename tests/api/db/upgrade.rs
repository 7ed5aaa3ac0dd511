//! A data dir written by the previous release (migrations 0001–0006, made
//! by `tests/fixtures/previous-release/make.sh` with that release's binary)
//! opens with today's binary: it migrates at start, and every value,
//! widget, prompt, rule, webhook and audit row is still there and works.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::str::FromStr;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::{Connection, SqliteConnection};

use crate::db::corruption::check;
use crate::helpers::{COMMAND_LIMIT, OutputWithin};
use crate::helpers::{Daemon, client, login_at, stderr, widgetd};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/previous-release"
);

/// Writes the fixture's database and master key into `data`.
async fn unpack(data: &Path) {
    std::fs::create_dir_all(data).unwrap();
    std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let key = data.join("master.key");
    std::fs::copy(Path::new(FIXTURE).join("master.key"), &key).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dump = std::fs::read_to_string(Path::new(FIXTURE).join("widgetd.sql")).unwrap();
    let options = sqlx::sqlite::SqliteConnectOptions::from_str("sqlite://")
        .unwrap()
        .filename(data.join(widgetd_domain::db::DB_FILE))
        .create_if_missing(true);
    let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
    sqlx::raw_sql(&dump).execute(&mut conn).await.unwrap();
    // The fixture's pending widget was made with the default week to wait,
    // which has since passed, and the daemon's sweep would expire it at
    // start: it is due a week from today instead, as it was when made. Its
    // due time is in no audit row.
    let week_ahead = widgetd_domain::clock::now_ms() + 7 * 24 * 3600 * 1000;
    sqlx::query("UPDATE widgets SET expires_at = $1 WHERE status = 'pending'")
        .bind(week_ahead)
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

/// The migration versions recorded in the data dir's database.
async fn applied(data: &Path) -> Vec<i64> {
    let options = sqlx::sqlite::SqliteConnectOptions::from_str("sqlite://")
        .unwrap()
        .filename(data.join(widgetd_domain::db::DB_FILE));
    let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
    let versions = sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    versions
}

/// The migration versions today's binary ships for SQLite.
fn shipped() -> Vec<i64> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite");
    let mut versions: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.split('_').next().unwrap().parse().unwrap()
        })
        .collect();
    versions.sort_unstable();
    versions
}

#[tokio::test]
async fn a_data_dir_of_the_previous_release_migrates_with_nothing_lost() {
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURE).join("fixture.json")).unwrap(),
    )
    .unwrap();
    let s = |key: &str| meta[key].as_str().unwrap().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    unpack(&data).await;
    assert_eq!(
        applied(&data).await,
        vec![1, 2, 3, 4, 5, 6],
        "the fixture is the previous release's"
    );

    let daemon = Daemon::start(&data, tmp.path(), "upgraded");
    assert_eq!(
        applied(&data).await,
        shipped(),
        "every migration applied at start"
    );
    let http = client();
    let get = |path: String, token: String| {
        let http = http.clone();
        let url = daemon.url.clone();
        async move {
            let r = http
                .get(format!("{url}{path}"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            let status = r.status();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (token, agent, session) = (s("token"), s("agent_token"), s("session_id"));

    // Every value decrypts to what was stored, line ends and all, through
    // the old API token.
    let (status, env) = get(format!("/api/v1/sessions/{session}/env"), token.clone()).await;
    assert_eq!(status, StatusCode::OK, "{env}");
    assert_eq!(env["env"]["FIXTURE_GLOBAL_KEY"], "fixture-global-value-1");
    assert_eq!(
        env["env"]["FIXTURE_PEM"],
        "-----BEGIN FIXTURE-----\nline one\nline two\n-----END FIXTURE-----\n"
    );
    assert_eq!(env["env"]["FIXTURE_SESSION_KEY"], "fixture-session-value-2");
    assert_eq!(env["env"]["FIXTURE_TYPED_KEY"], "fixture-typed-value-3");

    // Widgets keep their states and results; the agent token still works.
    for (key, status) in [
        ("answered_env_widget", "submitted"),
        ("approval_widget", "submitted"),
        ("answered_ask_widget", "submitted"),
        ("dismissed_widget", "dismissed"),
        ("pending_widget", "pending"),
    ] {
        let (code, widget) = get(format!("/api/v1/widgets/{}", s(key)), agent.clone()).await;
        assert_eq!(code, StatusCode::OK, "{key}: {widget}");
        assert_eq!(widget["status"], status, "{key}: {widget}");
    }
    let (_, asked) = get(
        format!("/api/v1/widgets/{}", s("answered_ask_widget")),
        agent.clone(),
    )
    .await;
    assert!(asked.to_string().contains("SQLite"), "{asked}");

    // The prompts not acknowledged before the upgrade are delivered now;
    // the acknowledged one is not delivered again.
    let (_, queued) = get(format!("/api/v1/sessions/{session}/prompts"), token.clone()).await;
    let queued = queued["prompts"].as_array().unwrap().clone();
    assert_eq!(
        queued.len(),
        3,
        "approval, answer and dismissal: {queued:?}"
    );
    assert!(
        queued
            .iter()
            .all(|p| p["prompt_id"] != meta["acked_prompt"])
    );

    // The "Always" rule still answers the same request at once.
    let r = http
        .post(format!(
            "{}/api/v1/sessions/{session}/widgets/approval",
            daemon.url
        ))
        .bearer_auth(&agent)
        .json(&json!({"tool": "Bash", "input": {"command": "git status"}, "reason": "Again."}))
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "already_present", "{body}");

    // The webhook endpoint is still there.
    let (_, hooks) = get("/api/v1/webhooks".to_owned(), token.clone()).await;
    assert_eq!(hooks["webhooks"].as_array().unwrap().len(), 1, "{hooks}");

    // The pending widget can be answered in the page by today's code.
    let browser = login_at(&http, &daemon.url, "admin").await;
    let r = http
        .post(format!(
            "{}/widgets/{}/submit",
            daemon.url,
            s("pending_widget")
        ))
        .header("cookie", &browser.cookie)
        .header("origin", &daemon.url)
        .form(&[
            ("csrf_token", browser.csrf.as_str()),
            ("value.FIXTURE_PENDING_KEY", "fixture-after-upgrade-4"),
            ("scope", "global"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (_, env) = get(format!("/api/v1/sessions/{session}/env"), token.clone()).await;
    assert_eq!(env["env"]["FIXTURE_PENDING_KEY"], "fixture-after-upgrade-4");
    daemon.stop();

    // One audit chain across the upgrade, and every check passes.
    let out = widgetd(&data)
        .args(["audit", "verify"])
        .output_within(COMMAND_LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let (code, report, printed) = check(&data);
    assert_eq!(code, 0, "{printed}");
    assert_eq!(report["ok"], true);
}
