//! PostgreSQL's write transactions run side by side (`src/db/pg_write.rs`):
//! what the deployment-wide lock used to guarantee must still hold when two
//! daemons write one session at once. A session's events reach a live
//! stream in order with none skipped; a rate-limit bucket loses no take;
//! the audit chain, sealed after each commit, stays one chain with every
//! row. These tests run on PostgreSQL whatever the rest of the suite runs
//! on (`WIDGETD_TEST_POSTGRES`, else the server on 127.0.0.1:5432).

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::wait::eventually;
use crate::helpers::{Daemon, TestApp, open_data, scene, spawn_postgres_app};

/// The `id:` of every event in `text` (a stream's bytes so far), in order.
fn event_ids(text: &str) -> Vec<i64> {
    text.lines()
        .filter_map(|line| line.strip_prefix("id:"))
        .filter_map(|id| id.trim().parse().ok())
        .collect()
}

/// Asks for `count` env_vars widgets in `session` at once (the names
/// `{prefix}_0`, `{prefix}_1`, …), alternately on `a` and `b`; returns each
/// answer's status and body.
async fn request_at_once(
    a: &TestApp,
    b: &TestApp,
    token: &str,
    session: &str,
    prefix: &str,
    count: usize,
) -> Vec<(StatusCode, Value)> {
    let requests = (0..count).map(|i| {
        let app = if i % 2 == 0 { a } else { b };
        async move {
            let body = json!({ "names": [format!("{prefix}_{i}")], "reason": "race" });
            let r = app.request_env_vars(token, session, &body).await;
            let status = r.status();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    });
    futures_util::future::join_all(requests).await
}

/// Creates `count` env_vars widgets in `session` at once, alternately on
/// `a` and `b`; returns the statuses and the ids of those created.
async fn create_at_once(
    a: &TestApp,
    b: &TestApp,
    agent: &str,
    session: &str,
    count: usize,
) -> (Vec<StatusCode>, Vec<String>) {
    let answers = request_at_once(a, b, agent, session, "RACE_KEY", count).await;
    let ids = answers
        .iter()
        .filter_map(|(_, body)| body["widget_id"].as_str().map(str::to_owned))
        .collect();
    (answers.into_iter().map(|(status, _)| status).collect(), ids)
}

/// Opens the session's event stream on `app`.
async fn open_stream(app: &TestApp, session: &str, host: &str) -> reqwest::Response {
    crate::helpers::event_stream(&app.client, &app.url, session, host).await
}

/// Reads `stream` until the event `last` arrives; returns the ids seen.
async fn read_until(mut stream: reqwest::Response, last: i64) -> Vec<i64> {
    let mut text = String::new();
    while !event_ids(&text).contains(&last) {
        let chunk = tokio::time::timeout(Duration::from_secs(20), stream.chunk())
            .await
            .expect("the event stream stayed silent")
            .unwrap()
            .expect("the event stream ended");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    event_ids(&text)
}

#[tokio::test]
async fn a_sessions_events_written_by_two_daemons_at_once_reach_every_stream_in_order_with_none_skipped()
 {
    let a = spawn_postgres_app().await;
    let b = a.spawn_peer().await;
    let scene = scene(&a, "alice").await;
    let mut streams = Vec::new();
    for app in [&a, &b, &a, &b, &a, &b] {
        streams.push(open_stream(app, &scene.session, &scene.host).await);
    }

    // Each widget is created, then dismissed by the person, all at once
    // over both daemons: two events per widget, written side by side.
    let (statuses, ids) = create_at_once(&a, &b, &scene.agent, &scene.session, 30).await;
    assert!(
        statuses.iter().all(|s| *s == StatusCode::CREATED),
        "{statuses:?}"
    );
    let browsers = [a.login("alice").await, b.login("alice").await];
    let dismissals = ids.iter().enumerate().map(|(i, id)| {
        let (app, browser) = if i % 2 == 0 {
            (&a, &browsers[0])
        } else {
            (&b, &browsers[1])
        };
        async move {
            app.post_json_as(browser, &format!("/widgets/{id}/dismiss"), &json!({}))
                .await
                .status()
        }
    });
    let dismissed = futures_util::future::join_all(dismissals).await;
    assert!(dismissed.iter().all(|s| s.is_success()), "{dismissed:?}");

    let stored: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM events WHERE session_id = $1 ORDER BY id")
            .bind(&scene.session)
            .fetch_all(&a.state.db.read)
            .await
            .unwrap();
    assert!(stored.len() >= 60, "{} events stored", stored.len());
    let last = *stored.last().unwrap();
    // A live stream, woken as each commit lands on either daemon, reads
    // "after the last id I sent": an id that committed after a higher one
    // would be skipped for good.
    let seen =
        futures_util::future::join_all(streams.into_iter().map(|s| read_until(s, last))).await;
    for (n, seen) in seen.iter().enumerate() {
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "stream {n} out of order: {seen:?}"
        );
        let missed: BTreeSet<i64> = stored
            .iter()
            .copied()
            .filter(|id| !seen.contains(id))
            .collect();
        assert!(missed.is_empty(), "stream {n} skipped events {missed:?}");
    }
}

#[tokio::test]
async fn an_agents_rate_limit_loses_no_take_when_two_daemons_race() {
    let a = spawn_postgres_app().await;
    let b = a.spawn_peer().await;
    let scene = scene(&a, "alice").await;
    // The agent's bucket holds 30 (`src/limits.rs`, PER_AGENT) and regains
    // one every 2 s; 45 at once, over both daemons, must find 30 in it, and
    // one more per 2 s the race took (on a slow machine it may take them).
    let started = std::time::Instant::now();
    let (statuses, _) = create_at_once(&a, &b, &scene.agent, &scene.session, 45).await;
    let regained = (started.elapsed().as_secs_f64() * 0.5).floor() as usize;
    let created = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    let limited = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(created + limited, 45, "{statuses:?}");
    assert!(
        (30..=30 + regained).contains(&created),
        "{created} created with {regained} regained: {statuses:?}"
    );
}

/// A creation takes the common case for granted and checks it in the guard
/// of its one statement of writes (`src/widgets/optimistic.rs`), with no
/// read before: creations racing for a session's last places under the
/// pending cap, over two daemons, must still find exactly those places.
#[tokio::test]
async fn the_pending_cap_holds_when_creations_race_over_two_daemons() {
    let a = spawn_postgres_app().await;
    let b = a.spawn_peer().await;
    let scene = scene(&a, "alice").await;
    // The host is not rate-limited: 45 first, then 20 at once for the
    // last 5 places.
    let (statuses, _) = create_at_once(&a, &b, &scene.host, &scene.session, 45).await;
    assert!(
        statuses.iter().all(|s| *s == StatusCode::CREATED),
        "{statuses:?}"
    );
    let answers = request_at_once(&a, &b, &scene.host, &scene.session, "LAST_PLACE", 20).await;
    let created = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .count();
    let capped = answers
        .iter()
        .filter(|(s, body)| {
            *s == StatusCode::CONFLICT && body["error"]["code"] == "too_many_pending"
        })
        .count();
    assert_eq!((created, capped), (5, 15), "{answers:?}");
    assert_eq!(
        a.count("SELECT count(*) FROM widgets WHERE status = 'pending'")
            .await,
        50
    );
}

/// Creations of many sessions at once are written in groups, one
/// transaction and one statement each (`src/db/pg_group.rs`), and each
/// gets the answer it would get alone: a member its group's statement
/// leaves out (an archived session, a full cap, an empty bucket, every
/// name stored already) is made again alone, with its true answer, and
/// its neighbours are written all the same.
#[tokio::test]
async fn creations_written_in_groups_each_get_the_answer_they_would_get_alone() {
    let app = spawn_postgres_app().await;
    let alice = app.user("alice", widgetd_domain::auth::Role::Member).await;
    let host = app.token(&alice, "sessions,env:read,env:write").await;
    let mut plain = Vec::new();
    for _ in 0..12 {
        plain.push(app.session(&host).await);
    }
    // Archived, the session's agent token is no longer valid: its host asks.
    let (archived, _) = app.session(&host).await;
    let (capped, capped_agent) = app.session(&host).await;
    let (limited, limited_agent) = app.session(&host).await;
    let (stored, stored_agent) = app.session(&host).await;
    let response = app
        .post_json(
            &format!("/api/v1/sessions/{archived}/archive"),
            &host,
            &json!({}),
        )
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    // The host is not rate-limited: it fills the cap; the agent of
    // `limited` empties its bucket (30, `src/limits.rs`).
    let (statuses, _) = create_at_once(&app, &app, &host, &capped, 50).await;
    assert!(statuses.iter().all(|s| *s == StatusCode::CREATED));
    let (statuses, _) = create_at_once(&app, &app, &limited_agent, &limited, 30).await;
    assert!(statuses.iter().all(|s| *s == StatusCode::CREATED));
    // It regains one every 2 s; dated ahead, it regains none while the test
    // runs, however slow the machine.
    sqlx::query("UPDATE rate_limits SET updated_at = $1 WHERE key = $2")
        .bind(i64::MAX / 2)
        .bind(format!("agent:{limited}"))
        .execute(&app.state.db.read)
        .await
        .unwrap();
    let response = app
        .put_env(&host, "GROUP_STORED", &json!({ "value": "v" }))
        .await;
    assert!(response.status().is_success(), "{}", response.status());
    // One creation alone learns that there is no webhook or Slack to
    // tell; after it, creations may be grouped.
    let (session, agent) = &plain[0];
    let warm = json!({ "names": ["GROUP_WARM"], "reason": "warm" });
    let response = app.request_env_vars(agent, session, &warm).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let before = app.state.db.group_counts();

    // Held back by the write lock, the requests queue for the runners, so
    // the groups they form do not depend on the machine's speed.
    let holder = hold_write_lock(&app).await;
    let mut asked: Vec<(&str, &str, &str)> = plain
        .iter()
        .map(|(session, agent)| (session.as_str(), agent.as_str(), "GROUP_NEW"))
        .collect();
    // A second creation in a session waits for a later group.
    asked.push((&plain[1].0, &plain[1].1, "GROUP_SECOND"));
    asked.push((&archived, &host, "GROUP_NEW"));
    asked.push((&capped, &capped_agent, "GROUP_NEW"));
    asked.push((&limited, &limited_agent, "GROUP_NEW"));
    asked.push((&stored, &stored_agent, "GROUP_STORED"));
    let requests = asked.iter().map(|&(session, agent, name)| {
        let app = &app;
        async move {
            let body = json!({ "names": [name], "reason": "grouped" });
            let response = app.request_env_vars(agent, session, &body).await;
            let status = response.status();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    });
    let release = async {
        let waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                       AND wait_event = 'advisory' AND pid <> pg_backend_pid()";
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while app.count(waiting).await < 2 {
            assert!(std::time::Instant::now() < deadline, "no group waited");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The rest arrive behind the two groups waiting.
        tokio::time::sleep(Duration::from_millis(300)).await;
        release_write_lock(holder).await;
    };
    let (answers, ()) = tokio::join!(futures_util::future::join_all(requests), release);

    let (grouped, rest) = answers.split_at(plain.len() + 1);
    for (status, body) in grouped {
        assert_eq!(*status, StatusCode::CREATED, "{body}");
        assert_eq!(body["status"], "pending", "{body}");
    }
    let code = |(status, body): &(StatusCode, Value)| (*status, body["error"]["code"].clone());
    assert_eq!(
        code(&rest[0]),
        (StatusCode::CONFLICT, json!("session_archived")),
        "{}",
        rest[0].1
    );
    assert_eq!(
        code(&rest[1]),
        (StatusCode::CONFLICT, json!("too_many_pending"))
    );
    assert_eq!(
        code(&rest[2]).0,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        rest[2].1
    );
    assert_eq!(rest[3].0, StatusCode::CREATED, "{}", rest[3].1);
    assert_eq!(rest[3].1["status"], "already_present");
    // The queued requests were written several to a group.
    let after = app.state.db.group_counts();
    let (groups, members) = (after.0 - before.0, after.1 - before.1);
    assert!(
        members >= asked.len() as u64 - 1,
        "{groups} groups, {members} members"
    );
    assert!(groups <= 5, "{groups} groups, {members} members");

    // Each widget written in a group has its line, its event and its
    // sealed audit row, and the chain verifies.
    for table in [
        "messages WHERE kind = 'widget'",
        "events WHERE kind = 'widget:created'",
    ] {
        assert_eq!(
            app.count(&format!("SELECT count(*) FROM {table}")).await,
            app.count("SELECT count(*) FROM widgets").await,
            "{table}"
        );
    }
    assert_eq!(app.count("SELECT count(*) FROM audit_pending").await, 0);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'widget.create'")
            .await,
        app.count("SELECT count(*) FROM widgets").await
    );
    let mut conn = app.state.db.read.acquire().await.unwrap();
    assert!(
        widgetd_domain::audit::verify(&mut conn)
            .await
            .unwrap()
            .is_ok()
    );
}

#[tokio::test]
async fn audit_rows_of_concurrent_commits_are_all_sealed_into_one_chain_before_each_reply() {
    let a = spawn_postgres_app().await;
    let b = a.spawn_peer().await;
    let first = scene(&a, "alice").await;
    let second = scene(&b, "bob").await;
    let before = a.count("SELECT count(*) FROM audit_log").await;
    let (one, two) = tokio::join!(
        create_at_once(&a, &b, &first.agent, &first.session, 25),
        create_at_once(&b, &a, &second.agent, &second.session, 25),
    );
    let (one, two) = (one.0, two.0);
    assert!(
        one.iter().chain(&two).all(|s| *s == StatusCode::CREATED),
        "{one:?} {two:?}"
    );
    // Every reply came after its row was sealed: nothing is left staged,
    // and the chain holds all 50.
    assert_eq!(a.count("SELECT count(*) FROM audit_pending").await, 0);
    assert_eq!(a.count("SELECT count(*) FROM audit_log").await, before + 50);
    let mut conn = b.state.db.read.acquire().await.unwrap();
    let verified = widgetd_domain::audit::verify(&mut conn).await.unwrap();
    let verified = verified.expect("the chain verifies");
    assert_eq!(verified.rows as i64, before + 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_a_killed_daemon_left_staged_are_sealed_by_a_running_daemons_sweep() {
    let tmp = crate::helpers::backend::postgres_dir();
    let dir = tmp.path().join("data");
    let data = open_data(&dir).await;
    data.db.migrate().await.unwrap();
    // A running daemon, its start-up writes done and sealed; then what a
    // daemon killed between its commit and its seal leaves behind, which
    // only the running daemon's background sweep can seal.
    let daemon = Daemon::start_with(&dir, tmp.path(), "sealer", &["--sweep-secs", "1"]);
    eventually(
        "the daemon's start-up writes to be sealed",
        Duration::from_secs(30),
        || async {
            let staged: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_pending")
                .fetch_one(&data.db.read)
                .await
                .unwrap();
            staged == 0
        },
    )
    .await;
    sqlx::query(
        "INSERT INTO audit_pending (at, actor, action, detail) \
         VALUES (1, 'system', 'test.staged', 'left behind')",
    )
    .execute(&data.db.write)
    .await
    .unwrap();
    let count = |sql: &'static str| {
        let pool = data.db.read.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while count("SELECT count(*) FROM audit_pending").await > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the staged row was never sealed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    daemon.stop();
    assert_eq!(
        count("SELECT count(*) FROM audit_log WHERE action = 'test.staged'").await,
        1
    );
    let mut conn = data.db.read.acquire().await.unwrap();
    assert!(
        widgetd_domain::audit::verify(&mut conn)
            .await
            .unwrap()
            .is_ok()
    );
}

/// The deployment's write lock (`WRITE_LOCK` in `src/db/pg_write.rs`).
const WRITE_LOCK: i64 = 0x7769_6467_6574_6401;

/// Holds the deployment's write lock alone on a connection of `app`'s own
/// read pool, as `keys rotate` does: every write transaction waits for it.
async fn hold_write_lock(app: &TestApp) -> sqlx::pool::PoolConnection<sqlx::Any> {
    let mut holder = app.state.db.read.acquire().await.unwrap();
    sqlx::query("SELECT 1 FROM (SELECT pg_advisory_lock($1)) AS held")
        .bind(WRITE_LOCK)
        .execute(&mut *holder)
        .await
        .unwrap();
    holder
}

async fn release_write_lock(mut holder: sqlx::pool::PoolConnection<sqlx::Any>) {
    sqlx::query("SELECT 1 FROM (SELECT pg_advisory_unlock($1)) AS released")
        .bind(WRITE_LOCK)
        .execute(&mut *holder)
        .await
        .unwrap();
}

#[tokio::test]
async fn writes_cancelled_while_waiting_for_their_lock_leave_every_connection_usable() {
    let app = spawn_postgres_app().await;
    let scene = scene(&app, "alice").await;
    // Another process holds the write lock alone (as `keys rekey` does):
    // every write transaction waits for it as it begins. Were the lock
    // taken in the same simple query as a `BEGIN` before it, a cancelled
    // wait would leave the connection in an aborted transaction that sqlx
    // does not know of, and later queries on it would fail.
    let holder = hold_write_lock(&app).await;
    let waiting = (0..8).map(|i| {
        let (app, scene) = (&app, &scene);
        async move {
            let body = json!({ "names": [format!("WAITING_{i}")], "reason": "waits" });
            refusal(
                app.request_env_vars(&scene.agent, &scene.session, &body)
                    .await,
            )
            .await
        }
    });
    let waiting = futures_util::future::join_all(waiting);
    // Cancelled as they wait (a `statement_timeout` would do the same).
    let cancel = async {
        let waiters = "FROM pg_stat_activity WHERE datname = current_database() \
                       AND wait_event = 'advisory' AND pid <> pg_backend_pid()";
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while app.count(&format!("SELECT count(*) {waiters}")).await < 8 {
            assert!(
                std::time::Instant::now() < deadline,
                "the writes never waited"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        app.count(&format!(
            "SELECT count(*) FROM (SELECT pg_cancel_backend(pid) {waiters}) AS cancelled"
        ))
        .await
    };
    let (refusals, cancelled) = tokio::join!(waiting, cancel);
    assert!(cancelled >= 8, "{cancelled} cancelled");
    // A cancelled statement passes: 503 with a short Retry-After, never a
    // 500 that reads as widgetd's own failure.
    for refusal in &refusals {
        assert_retry_soon(refusal);
    }
    release_write_lock(holder).await;

    // No connection of the pool was left inside an aborted transaction:
    // writes and reads on all of them succeed.
    for round in 0..2 {
        let writes = (0..10).map(|i| {
            let (app, scene) = (&app, &scene);
            async move {
                let body = json!({ "names": [format!("AFTER_{round}_{i}")], "reason": "after" });
                app.request_env_vars(&scene.agent, &scene.session, &body)
                    .await
                    .status()
            }
        });
        let statuses = futures_util::future::join_all(writes).await;
        assert!(
            statuses.iter().all(|s| *s == StatusCode::CREATED),
            "{statuses:?}"
        );
    }
    let path = format!("/api/v1/sessions/{}/widgets", scene.session);
    let reads = (0..40).map(|_| app.get(&path, &scene.host));
    for read in futures_util::future::join_all(reads).await {
        assert_eq!(read.status(), StatusCode::OK);
    }
    assert_eq!(
        app.count("SELECT count(*) FROM widgets WHERE kind = 'env_vars'")
            .await,
        20,
        "the cancelled writes left nothing behind"
    );
}

/// A refusal as the client sees it: status, `Retry-After`, error code and
/// message.
async fn refusal(response: reqwest::Response) -> (StatusCode, Option<String>, Value) {
    let status = response.status();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.json::<Value>().await.unwrap_or(Value::Null);
    (status, retry, body)
}

/// The database stopped the request, which the client may retry at once.
fn assert_retry_soon((status, retry, body): &(StatusCode, Option<String>, Value)) {
    assert_eq!(*status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(retry.as_deref(), Some("1"), "{body}");
    assert_eq!(body["error"]["code"], "storage_unavailable", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Retry in a moment"), "{message}");
}

#[tokio::test]
async fn a_write_past_the_operators_lock_timeout_is_a_503_and_changes_nothing() {
    // An operator who sets `lock_timeout` on widgetd's role or in its URL
    // (`?options=-c lock_timeout=…`) bounds how long a write waits.
    let first = spawn_postgres_app().await;
    let url = crate::helpers::backend::postgres_url(&first.dir.path().join("data")).unwrap();
    let bounded = format!("{url}?options=-c%20lock_timeout%3D200ms");
    let app = crate::helpers::spawn_app_on(first.dir.clone(), &bounded).await;
    let scene = scene(&app, "alice").await;
    let body = json!({ "names": ["BEFORE"], "reason": "before" });
    let before = app
        .request_env_vars(&scene.agent, &scene.session, &body)
        .await;
    assert_eq!(before.status(), StatusCode::CREATED);

    let holder = hold_write_lock(&app).await;
    let body = json!({ "names": ["BLOCKED"], "reason": "waits" });
    let blocked = refusal(
        app.request_env_vars(&scene.agent, &scene.session, &body)
            .await,
    )
    .await;
    assert_retry_soon(&blocked);
    release_write_lock(holder).await;

    // The same request succeeds once the lock is let go, and the refused
    // one left nothing behind.
    let retried = app
        .request_env_vars(&scene.agent, &scene.session, &body)
        .await;
    assert_eq!(retried.status(), StatusCode::CREATED);
    assert_eq!(
        app.count("SELECT count(*) FROM widgets WHERE kind = 'env_vars'")
            .await,
        2
    );
}
