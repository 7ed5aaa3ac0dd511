//! Several daemons on one PostgreSQL database, as behind a load balancer:
//! whatever one daemon changes wakes the others' streams and long-polls,
//! the first answer wins across daemons, the audit chain stays one chain,
//! login limits are shared, and a daemon with another master key changes
//! nothing. These tests run on PostgreSQL whatever the rest of the suite
//! runs on (`WIDGETD_TEST_POSTGRES`, else the server on 127.0.0.1:5432).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::db::throughput::{Acknowledged, Driver, assert_all_kept, assert_chain_verifies};
use crate::helpers::wait::eventually;
use crate::helpers::{
    Daemon, Scene, TestApp, add_webhook, answer_in_turn, assert_error, keep_reading, scene,
    spawn_postgres_app, widget_status,
};

/// Two daemons of one deployment: `a` and its peer `b`.
async fn two_daemons() -> (TestApp, TestApp) {
    let a = spawn_postgres_app().await;
    let b = a.spawn_peer().await;
    (a, b)
}

/// Reads an event stream until `needle` arrives; returns how long it took.
async fn wait_for_event(mut stream: reqwest::Response, needle: &str) -> Duration {
    let started = Instant::now();
    let mut seen = String::new();
    while !seen.contains(needle) {
        let chunk = tokio::time::timeout(Duration::from_secs(20), stream.chunk())
            .await
            .expect("the event stream stayed silent")
            .unwrap()
            .expect("the event stream ended");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    started.elapsed()
}

#[tokio::test]
async fn a_widget_created_on_one_daemon_is_answered_on_the_other_and_wakes_the_first() {
    let (a, b) = two_daemons().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&a, "alice").await;
    let stream = a
        .client
        .get(format!("{}/api/v1/sessions/{session}/events", a.url))
        .bearer_auth(&host)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let id = a.pending_widget(&agent, &session, &["SHARED_KEY"]).await;

    // A long-poll on daemon A, waiting while the person answers on B.
    let polls = a.held_open("addr:127.0.0.1");
    let poll = {
        let (client, url, host, session) = (
            a.client.clone(),
            a.url.clone(),
            host.clone(),
            session.clone(),
        );
        tokio::spawn(async move {
            let started = Instant::now();
            let body: Value = client
                .get(format!("{url}/api/v1/sessions/{session}/prompts?wait=60"))
                .bearer_auth(&host)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (started.elapsed(), body)
        })
    };
    eventually(
        "the long-poll to wait on A",
        Duration::from_secs(20),
        || async { a.held_open("addr:127.0.0.1") > polls },
    )
    .await;
    let browser = b.login("alice").await;
    let r = b
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("value.SHARED_KEY", "typed-on-b"), ("scope", "global")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    let (waited, body) = poll.await.unwrap();
    let prompts = body["prompts"].as_array().unwrap();
    assert_eq!(prompts.len(), 1, "{body}");
    assert!(
        prompts[0]["text"]
            .as_str()
            .unwrap()
            .contains("User submitted SHARED_KEY (scope: global)")
    );
    // Woken by B's change, not by the end of its 60 s wait.
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    let heard = wait_for_event(stream, "widget:resolved").await;
    assert!(heard < Duration::from_secs(20));
    // And the value typed on B is in the store that A serves.
    assert_eq!(a.env_of(&session, &host).await["SHARED_KEY"], "typed-on-b");
}

#[tokio::test]
async fn fifty_racing_answers_over_two_daemons_have_exactly_one_winner() {
    let (a, b) = two_daemons().await;
    let Scene { session, agent, .. } = scene(&a, "alice").await;
    let id = a.pending_widget(&agent, &session, &["RACE_KEY"]).await;
    let (on_a, on_b) = (a.login("alice").await, b.login("alice").await);
    let attempts = (0..50).map(|i| {
        let (app, browser) = if i % 2 == 0 { (&a, &on_a) } else { (&b, &on_b) };
        let path = if i % 4 < 2 {
            format!("/widgets/{id}/submit")
        } else {
            format!("/widgets/{id}/dismiss")
        };
        async move {
            app.post_form(
                browser,
                &path,
                &[("value.RACE_KEY", "v"), ("scope", "session")],
            )
            .await
            .status()
        }
    });
    let statuses = futures_util::future::join_all(attempts).await;
    let won = statuses
        .iter()
        .filter(|s| **s == StatusCode::SEE_OTHER)
        .count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::CONFLICT)
        .count();
    assert_eq!((won, refused), (1, 49), "{statuses:?}");
    let one = |sql: &str| sql.replace("$1", &format!("'{id}'"));
    assert_eq!(
        a.count(&one("SELECT count(*) FROM prompts WHERE widget_id = $1"))
            .await,
        1
    );
    assert_eq!(
        b.count(&one("SELECT count(*) FROM audit_log WHERE widget_id = $1 \
             AND action IN ('widget.submit', 'widget.dismiss')"))
            .await,
        1
    );
}

#[tokio::test]
async fn concurrent_appends_from_two_daemons_keep_one_audit_chain() {
    let (a, b) = two_daemons().await;
    // Two agents: each may add 30 at once (the shared rate limit).
    let first = scene(&a, "alice").await;
    let (session, agent) = b.session(&first.host).await;
    let agents = [(first.session, first.agent), (session, agent)];
    let before = a.count("SELECT count(*) FROM audit_log").await;
    let requests = (0..40).map(|i| {
        let app = if i % 2 == 0 { &a } else { &b };
        let (session, agent) = &agents[i / 20];
        async move {
            let name = format!("CHAIN_KEY_{i}");
            app.request_env_vars(
                agent,
                session,
                &json!({ "names": [name], "reason": "chain" }),
            )
            .await
            .status()
        }
    });
    let statuses = futures_util::future::join_all(requests).await;
    assert!(
        statuses.iter().all(|s| *s == StatusCode::CREATED),
        "{statuses:?}"
    );
    assert_eq!(a.count("SELECT count(*) FROM audit_log").await, before + 40);
    let mut conn = b.state.db.read.acquire().await.unwrap();
    let verified = widgetd_domain::audit::verify(&mut conn).await.unwrap();
    assert!(verified.is_ok(), "the chain forked: {verified:?}");
}

/// Each daemon caches who a token is and what it may do; what is taken
/// away through one daemon is refused by the other from the next request.
#[tokio::test]
async fn a_credential_taken_away_on_one_daemon_is_refused_by_the_other_at_once() {
    let (a, b) = two_daemons().await;
    a.user("root", Role::Admin).await;
    let alice = scene(&a, "alice").await;
    let carol = scene(&a, "carol").await;
    let widget = a
        .pending_widget(&alice.agent, &alice.session, &["KEY"])
        .await;
    let widget = format!("/api/v1/widgets/{widget}");
    let sharing = format!("/api/v1/sessions/{}/sharing", carol.session);
    for _ in 0..2 {
        assert_eq!(a.get(&widget, &alice.agent).await.status(), StatusCode::OK);
        assert_eq!(a.get(&sharing, &carol.host).await.status(), StatusCode::OK);
    }

    // Alice's agent token, revoked through B.
    let r = b
        .client
        .delete(format!(
            "{}/api/v1/sessions/{}/agent-token",
            b.url, alice.session
        ))
        .bearer_auth(&alice.host)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = a.get(&widget, &alice.agent).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;

    // Carol, disabled by an admin signed in on B.
    let root = b.login("root").await;
    let r = b
        .post_form(&root, "/admin/users/disable", &[("name", "carol")])
        .await;
    assert!(r.status().is_redirection(), "{}", r.status());
    let r = a.get(&sharing, &carol.host).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;
}

/// Each daemon keeps the widget rows it read in memory, under the stamp of
/// the snapshot it read them in (`src/db/changes.rs`). An answer given on
/// one daemon shows in the other's very next read, over REST and over MCP
/// (whose tools run under the request's arrival, `src/mcp/tools.rs`),
/// while a third party keeps the other reading all along (so its reads
/// share one epoch read). With a stamp that missed another daemon's
/// commit, the read would say `pending`.
#[tokio::test]
async fn a_widget_answered_on_one_daemon_shows_in_the_others_very_next_read() {
    let (a, b) = two_daemons().await;
    let Scene { session, agent, .. } = scene(&a, "alice").await;
    let browser = b.login("alice").await;
    let mcp = crate::helpers::mcp::connect(&a, Some(&agent))
        .await
        .unwrap();
    let mcp_status = |id: String| {
        let mcp = &mcp;
        async move {
            let args = json!({ "widget_id": id });
            let result = crate::helpers::mcp::call(mcp, "get_widget_status", args).await;
            crate::helpers::mcp::structured(result)["status"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let busy = a.pending_widget(&agent, &session, &["BUSY_KEY"]).await;
    let reader = keep_reading(&a, &agent, &busy);
    for n in 0..10 {
        let name = format!("READ_KEY_{n}");
        let id = a.pending_widget(&agent, &session, &[&name]).await;
        for _ in 0..2 {
            assert_eq!(widget_status(&a, &agent, &id).await, "pending");
            assert_eq!(mcp_status(id.clone()).await, "pending");
        }
        let (path, expected) = answer_in_turn(&b, &browser, &id, &name, n).await;
        // Over MCP first for half the widgets, over REST first for the
        // other half, each half with submits and dismissals: the first
        // read after the answer is the one a kept row would fool.
        let (first, second) = match n % 4 < 2 {
            true => (
                mcp_status(id.clone()).await,
                widget_status(&a, &agent, &id).await,
            ),
            false => (
                widget_status(&a, &agent, &id).await,
                mcp_status(id.clone()).await,
            ),
        };
        for (via, seen) in [("the first", first), ("the second", second)] {
            assert_eq!(
                seen, expected,
                "{via} read on daemon A after the {path} on B (widget {n})"
            );
        }
    }
    reader.abort();
}

#[tokio::test]
async fn a_webhook_added_on_one_daemon_gets_the_others_very_next_widget() {
    let (a, b) = two_daemons().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&a, "alice").await;
    let notices = |widget: &str| {
        format!(
            "SELECT count(*) FROM webhook_outbox WHERE event = 'widget.created' \
             AND payload LIKE '%{widget}%'"
        )
    };
    // No endpoint yet: daemon A notes that a change goes nowhere else.
    let before = a.pending_widget(&agent, &session, &["FIRST_KEY"]).await;
    assert_eq!(a.count(&notices(&before)).await, 0);
    // Added on B, which moves the auth epoch: A's note is not trusted after.
    add_webhook(&b, &host, "https://93.184.215.14/hook", "standard").await;
    let after = a.pending_widget(&agent, &session, &["SECOND_KEY"]).await;
    assert_eq!(a.count(&notices(&after)).await, 1);
}

#[tokio::test]
async fn login_limits_hold_across_daemons() {
    let (a, b) = two_daemons().await;
    a.user("alice", Role::Member).await;
    // Five attempts at one name are allowed at once, wherever they land.
    for i in 0..5 {
        let app = if i % 2 == 0 { &a } else { &b };
        assert!(
            app.login_with("alice", "wrong password", None)
                .await
                .is_none()
        );
    }
    for app in [&a, &b] {
        let r = app
            .client
            .post(format!("{}/login", app.url))
            .form(&[
                ("username", "alice"),
                ("password", crate::helpers::PASSWORD),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    }
}

#[tokio::test]
async fn a_daemon_with_another_master_key_refuses_to_start_and_changes_nothing() {
    let a = spawn_postgres_app().await;
    let Scene { session, agent, .. } = scene(&a, "alice").await;
    a.pending_widget(&agent, &session, &["SOME_KEY"]).await;
    let url = crate::helpers::backend::postgres_url(&a.data_dir()).unwrap();
    let before = crate::helpers::backend::dump_rows(&url);

    let other = tempfile::tempdir().unwrap();
    widgetd_domain::crypto::MasterKey::generate()
        .write_new_file(&other.path().join(widgetd_domain::crypto::MASTER_KEY_FILE))
        .unwrap();
    let database = widgetd_domain::db::DatabaseUrl::parse(&url).unwrap();
    let refused = widgetd_domain::startup::open(other.path(), Some(&database)).await;
    let message = refused
        .err()
        .expect("another key must not start")
        .to_string();
    assert!(message.contains("master key"), "{message}");
    assert_eq!(
        crate::helpers::backend::dump_rows(&url),
        before,
        "the database changed"
    );
}

/// Waits until `seen` holds at least `acks` acknowledged acks.
async fn until_acked(seen: &Arc<Mutex<Acknowledged>>, acks: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while seen.lock().unwrap().acked.len() < acks {
        assert!(Instant::now() < deadline, "the load made no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_one_daemon_under_load_leaves_the_other_serving_and_loses_nothing() {
    let tmp = crate::helpers::backend::postgres_dir();
    let dir = tmp.path().join("data");
    let mut a = Daemon::start(&dir, tmp.path(), "a");
    let b = Daemon::start(&dir, tmp.path(), "b");
    let (seen_a, seen_b) = (Arc::default(), Arc::default());
    let mut workers = Vec::new();
    for (daemon, seen) in [(&a, &seen_a), (&b, &seen_b)] {
        let driver = Driver::start(&daemon.url, &dir).await;
        for _ in 0..6 {
            let (session, agent) = driver.session().await;
            let worker = driver.clone().round_trips(session, agent, Arc::clone(seen));
            workers.push(tokio::spawn(worker));
        }
    }
    until_acked(&seen_a, 20).await;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    // B goes on serving, its own load and new work alike.
    let after_kill = seen_b.lock().unwrap().acked.len();
    until_acked(&seen_b, after_kill + 20).await;
    b.stop();
    for worker in workers {
        worker.await.unwrap();
    }
    let mut seen = std::mem::take(&mut *seen_a.lock().unwrap());
    let on_b = std::mem::take(&mut *seen_b.lock().unwrap());
    seen.submitted.extend(on_b.submitted);
    seen.acked.extend(on_b.acked);

    let c = Daemon::start(&dir, tmp.path(), "c");
    assert_all_kept(&c.url, &dir, &seen).await;
    c.stop();
    assert_chain_verifies(&dir, &seen).await;
}

#[tokio::test]
async fn a_daemon_that_lost_its_listening_connection_catches_up() {
    let (a, b) = two_daemons().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&a, "alice").await;
    let id = a.pending_widget(&agent, &session, &["LATE_KEY"]).await;
    let polls = a.held_open("addr:127.0.0.1");
    let poll = {
        let (client, url) = (a.client.clone(), a.url.clone());
        let (host, session) = (host.clone(), session.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let body: Value = client
                .get(format!("{url}/api/v1/sessions/{session}/prompts?wait=60"))
                .bearer_auth(&host)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (started.elapsed(), body)
        })
    };
    eventually(
        "the long-poll to wait on A",
        Duration::from_secs(20),
        || async { a.held_open("addr:127.0.0.1") > polls },
    )
    .await;
    // Every daemon's listening connection is cut, and the answer comes at
    // once: its notification may reach nobody.
    let cut: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN%'",
    )
    .fetch_all(&a.state.db.read)
    .await
    .unwrap();
    assert!(cut.len() >= 2, "both daemons listen: {cut:?}");
    let browser = b.login("alice").await;
    let r = b
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("value.LATE_KEY", "v"), ("scope", "session")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (waited, body) = poll.await.unwrap();
    assert_eq!(body["prompts"].as_array().unwrap().len(), 1, "{body}");
    assert!(waited < Duration::from_secs(30), "{waited:?}");
}
