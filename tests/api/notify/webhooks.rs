//! Notifications: a real receiver on a real port checks the Standard
//! Webhooks signature, answers 500 once to force a retry, and never sees a
//! value; the outbox survives a restart of the real binary.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use reqwest::StatusCode as Status;
use secrecy::SecretString;
use serde_json::{Value, json};
use widgetd_notify::webhooks::decode_secret;
use widgetd_notify::webhooks::delivery::sign_with;

use crate::helpers::{
    COMMAND_LIMIT, Daemon, OutputWithin, Scene, add_webhook, canary, client, scene, spawn_app_with,
    stdout, widgetd,
};

/// One request as the receiver got it.
#[derive(Clone, Debug)]
struct Received {
    headers: HeaderMap,
    body: String,
}

/// An HTTP receiver on 127.0.0.1:0 that keeps what it gets and answers with
/// the next status of its script (200 once the script is used up).
#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<Vec<u16>>>,
}

impl Receiver {
    async fn start(script: &[u16]) -> (Receiver, String) {
        let receiver = Receiver::default();
        receiver.script.lock().unwrap().extend(script.iter().rev());
        let state = receiver.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: String| {
                let state = state.clone();
                async move {
                    state.got.lock().unwrap().push(Received { headers, body });
                    let status = state.script.lock().unwrap().pop().unwrap_or(200);
                    StatusCode::from_u16(status).unwrap()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (receiver, url)
    }

    fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Waits (at most 30 s) until `n` requests came in.
    async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = self.got();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} notices arrived",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn header<'a>(r: &'a Received, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Checks the Standard Webhooks signature of `r` with the secret shown once.
fn assert_signed(r: &Received, secret: &str) {
    let key = decode_secret(&SecretString::from(secret.to_owned())).expect("a whsec_ secret");
    let id = header(r, "webhook-id");
    let ts: i64 = header(r, "webhook-timestamp").parse().unwrap();
    assert!(id.starts_with("msg_"), "{id}");
    assert_eq!(
        header(r, "webhook-signature"),
        sign_with(&key, id, ts, r.body.as_bytes())
    );
    let wrong = sign_with(b"another key", id, ts, r.body.as_bytes());
    assert_ne!(header(r, "webhook-signature"), wrong);
}

#[tokio::test]
async fn notices_are_signed_retried_and_never_carry_a_value() {
    // The receivers are on loopback, which only the operator's flag allows.
    let app = spawn_app_with(|s| {
        s.webhooks.retry_base_ms = 100;
        s.webhooks.allow_private = true;
    })
    .await;
    tokio::spawn(widgetd_notify::webhooks::delivery::run(
        app.state.core.clone(),
        app.state.config.webhooks.clone(),
    ));
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let (receiver, url) = Receiver::start(&[500]).await;
    let (slack, slack_url) = Receiver::start(&[]).await;
    let created = add_webhook(&app, &host, &url, "standard").await;
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{created}");
    add_webhook(&app, &host, &slack_url, "slack").await;
    let listed: Value = app
        .get("/api/v1/webhooks", &host)
        .await
        .json()
        .await
        .unwrap();
    assert!(
        !listed.to_string().contains(&secret),
        "the secret is shown only once"
    );

    // The agent asks: the first attempt gets a 500, the retry a 200, with
    // the same webhook-id both times.
    let r = app
        .request_env_vars(
            &agent,
            &session,
            &json!({ "names": ["HUBSPOT_API_KEY"], "reason": "sync" }),
        )
        .await;
    let widget = r.json::<Value>().await.unwrap()["widget_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = receiver.wait_for(2).await;
    assert_eq!(header(&got[0], "webhook-id"), header(&got[1], "webhook-id"));
    for r in &got {
        assert_signed(r, &secret);
    }
    let notice: Value = serde_json::from_str(&got[1].body).unwrap();
    assert_eq!(notice["type"], "widget.created");
    assert_eq!(notice["data"]["names"], json!(["HUBSPOT_API_KEY"]));
    assert_eq!(notice["data"]["widget_id"], widget.as_str());
    assert_eq!(
        notice["data"]["widget_url"],
        format!("{}/sessions/{session}#w-{widget}", app.url)
    );
    let text: Value = serde_json::from_str(&slack.wait_for(1).await[0].body).unwrap();
    assert!(
        text["text"]
            .as_str()
            .unwrap()
            .contains("asks for HUBSPOT_API_KEY"),
        "{text}"
    );

    // The person answers with a value: the notice says so, without it.
    let value = canary("webhook");
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{widget}/submit"),
            &[("value.HUBSPOT_API_KEY", &value)],
        )
        .await;
    assert_eq!(r.status(), Status::SEE_OTHER);
    let got = receiver.wait_for(3).await;
    let resolved: Value = serde_json::from_str(&got[2].body).unwrap();
    assert_eq!(resolved["type"], "widget.resolved");
    assert_eq!(resolved["data"]["status"], "submitted");
    assert_signed(&got[2], &secret);
    for r in got.iter().chain(slack.wait_for(2).await.iter()) {
        assert!(!r.body.contains(&value), "a notice carried the value");
        assert!(!format!("{:?}", r.headers).contains(&value));
    }

    // The delivery log shows both attempts of the first notice.
    let log: Value = app
        .get("/api/v1/webhooks/deliveries", &host)
        .await
        .json()
        .await
        .unwrap();
    let first = log["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["msg_id"] == header(&got[0], "webhook-id"))
        .unwrap();
    assert_eq!(first["attempts"], 2, "{log}");
    assert_eq!(first["state"], "delivered", "{log}");
    // Only delivered or not: never what the receiver answered.
    assert!(
        first.get("last_status").is_none() && first.get("last_error").is_none(),
        "{log}"
    );
    assert!(first["delivered_at"].is_i64(), "{log}");
    assert!(!log.to_string().contains(&value));

    // A bad address is refused with a stable code and nothing is stored.
    let r = app
        .post_json(
            "/api/v1/webhooks",
            &host,
            &json!({ "url": "file:///etc/passwd" }),
        )
        .await;
    assert_eq!(r.status(), Status::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "invalid_url"
    );
}

/// A notice that could not be delivered before the daemon stopped is
/// delivered after it starts again: the outbox is on disk.
#[tokio::test]
async fn an_undelivered_notice_is_sent_after_a_restart() {
    let dir = crate::helpers::test_dir();
    let data = dir.path().join("data");
    let allow = ["--webhooks-allow-private"];
    let daemon = Daemon::start_with(&data, dir.path(), "webhooks-1", &allow);
    let token = stdout(
        &widgetd(&data)
            .args(["token", "create", "--user", "admin", "--scope", "sessions"])
            .output_within(COMMAND_LIMIT),
    )
    .trim()
    .to_owned();
    // Refuses everything until the daemon has stopped.
    let (receiver, url) = Receiver::start(&[503; 20]).await;
    let http = client();
    let post = |path: &str, token: &str, body: Value| {
        http.post(format!("{}{path}", daemon.url))
            .bearer_auth(token.to_owned())
            .json(&body)
            .send()
    };
    let r = post("/api/v1/webhooks", &token, json!({ "url": url }))
        .await
        .unwrap();
    assert_eq!(r.status(), Status::CREATED);
    let created: Value = post("/api/v1/sessions", &token, json!({}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (session, agent) = (
        created["session_id"].as_str().unwrap().to_owned(),
        created["agent_token"].as_str().unwrap().to_owned(),
    );
    let r = post(
        &format!("/api/v1/sessions/{session}/widgets/env-vars"),
        &agent,
        json!({ "names": ["A_KEY"], "reason": "r" }),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), Status::CREATED);
    receiver.wait_for(1).await;
    daemon.stop();
    let before = receiver.got().len();
    receiver.script.lock().unwrap().clear();

    let daemon = Daemon::start_with(&data, dir.path(), "webhooks-2", &allow);
    let got = receiver.wait_for(before + 1).await;
    let last: Value = serde_json::from_str(&got.last().unwrap().body).unwrap();
    assert_eq!(last["type"], "widget.created");
    assert_eq!(last["data"]["session_id"], session.as_str());
    daemon.stop();
}

/// A loopback listener that counts the connections it accepts and holds
/// each open without a word (a receiver that never answers).
struct Silent {
    accepted: Arc<std::sync::atomic::AtomicUsize>,
    url: String,
}

impl Silent {
    async fn start() -> Silent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(stream);
            }
        });
        Silent { accepted, url }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Loopback, link-local (cloud metadata), IPv4-mapped IPv6 and a name of
/// a loopback address are refused when added (a clear error with a stable
/// code, nothing stored), and at delivery when an endpoint's address is
/// private by then (here: changed in the database, as a DNS answer can
/// change after the check): nothing reaches the listener, and the log says
/// only "not delivered".
#[tokio::test]
async fn private_addresses_are_refused_and_nothing_is_sent() {
    let app = spawn_app_with(|s| s.webhooks.retry_base_ms = 100).await;
    tokio::spawn(widgetd_notify::webhooks::delivery::run(
        app.state.core.clone(),
        app.state.config.webhooks.clone(),
    ));
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let silent = Silent::start().await;
    let port = silent.url.rsplit(':').next().unwrap().to_owned();
    for url in [
        format!("{}/admin/users/add", silent.url),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        format!("http://[::1]:{port}/hook"),
        format!("http://localhost:{port}/hook"),
        "http://10.0.0.8/hook".to_owned(),
        "http://100.64.0.1/hook".to_owned(),
        // 127.0.0.1 translated, 169.254.169.254 through a local-use NAT64,
        // a Teredo client 192.168.1.1.
        format!("http://[::ffff:0:7f00:1]:{port}/hook"),
        "http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data/".to_owned(),
        "http://[2001:0:4136:e378:8000:63bf:3f57:fefe]/hook".to_owned(),
    ] {
        let r = app
            .post_json("/api/v1/webhooks", &host, &json!({ "url": url }))
            .await;
        assert_eq!(r.status(), Status::UNPROCESSABLE_ENTITY, "{url}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "webhook_address_refused", "{url}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--webhooks-allow-private"),
            "{body}"
        );
    }
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            "/settings/webhooks",
            &[("url", &format!("{}/hook", silent.url)), ("format", "")],
        )
        .await;
    assert_eq!(r.status(), Status::UNPROCESSABLE_ENTITY);
    assert_eq!(app.count("SELECT count(*) FROM webhook_endpoints").await, 0);

    // Two endpoints whose address became private after they were added.
    for _ in 0..2 {
        let created = add_webhook(&app, &host, "http://192.0.2.1:9/never-used", "standard").await;
        assert_eq!(created["url"], "http://192.0.2.1:9/never-used");
    }
    let mut tx = app.state.db.begin_write().await.unwrap();
    for (n, url) in [
        format!("http://localhost:{port}/by-name"),
        format!("{}/by-address", silent.url),
    ]
    .iter()
    .enumerate()
    {
        sqlx::query(
            "UPDATE webhook_endpoints SET url = $1 WHERE id = \
             (SELECT id FROM webhook_endpoints ORDER BY created_at, id LIMIT 1 OFFSET $2)",
        )
        .bind(url)
        .bind(n as i64)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let r = app
        .request_env_vars(
            &agent,
            &session,
            &json!({ "names": ["A_KEY"], "reason": "r" }),
        )
        .await;
    assert_eq!(r.status(), Status::CREATED);
    let deadline = Instant::now() + Duration::from_secs(20);
    let log = loop {
        let log: Value = app
            .get("/api/v1/webhooks/deliveries", &host)
            .await
            .json()
            .await
            .unwrap();
        let rows = log["deliveries"].as_array().unwrap().clone();
        if rows.len() == 2 && rows.iter().all(|d| d["state"] == "not_delivered") {
            break rows;
        }
        assert!(Instant::now() < deadline, "not given up: {log}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for row in &log {
        assert_eq!(
            row["attempts"], 1,
            "a refused address is not retried: {row}"
        );
        assert!(row.get("last_status").is_none() && row.get("last_error").is_none());
    }
    assert_eq!(silent.accepted(), 0, "a private address got a connection");
}

/// One user's ten receivers that accept and never answer do not hold up
/// another user's notice: it arrives within seconds, while they hang.
#[tokio::test]
async fn one_users_hanging_receivers_do_not_delay_another_users_notice() {
    let app = spawn_app_with(|s| s.webhooks.allow_private = true).await;
    tokio::spawn(widgetd_notify::webhooks::delivery::run(
        app.state.core.clone(),
        app.state.config.webhooks.clone(),
    ));
    let alice = scene(&app, "alice").await;
    let bob = scene(&app, "bob").await;
    let silent = Silent::start().await;
    for n in 0..10 {
        add_webhook(
            &app,
            &alice.host,
            &format!("{}/hook/{n}", silent.url),
            "standard",
        )
        .await;
    }
    let (receiver, url) = Receiver::start(&[]).await;
    add_webhook(&app, &bob.host, &url, "standard").await;

    // Alice's agent asks three times: thirty notices to hanging receivers.
    for n in 0..3 {
        let r = app
            .request_env_vars(
                &alice.agent,
                &alice.session,
                &json!({ "names": [format!("KEY_{n}")], "reason": "r" }),
            )
            .await;
        assert_eq!(r.status(), Status::CREATED);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while silent.accepted() == 0 {
        assert!(Instant::now() < deadline, "alice's notices were never sent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let asked = Instant::now();
    let r = app
        .request_env_vars(
            &bob.agent,
            &bob.session,
            &json!({ "names": ["B_KEY"], "reason": "r" }),
        )
        .await;
    assert_eq!(r.status(), Status::CREATED);
    let got = receiver.wait_for(1).await;
    let took = asked.elapsed();
    eprintln!("bob's notice arrived in {took:?} while alice's receivers hung");
    assert!(
        took < Duration::from_secs(5),
        "bob's notice took {took:?} behind alice's hanging receivers"
    );
    let notice: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(notice["data"]["names"], json!(["B_KEY"]));
}

/// An ntfy notice carries one `view` action that opens the widget's own
/// page (where the person logs in), and no action that could answer.
#[tokio::test]
async fn an_ntfy_notice_has_a_view_action_to_the_widgets_page_and_nothing_that_answers() {
    let app = spawn_app_with(|s| s.webhooks.allow_private = true).await;
    tokio::spawn(widgetd_notify::webhooks::delivery::run(
        app.state.core.clone(),
        app.state.config.webhooks.clone(),
    ));
    let alice = scene(&app, "alice").await;
    let (receiver, url) = Receiver::start(&[]).await;
    add_webhook(&app, &alice.host, &url, "ntfy").await;
    let id = app
        .pending_widget(&alice.agent, &alice.session, &["NTFY_KEY"])
        .await;
    let got = receiver.wait_for(1).await;
    let actions = header(&got[0], "actions");
    assert_eq!(
        actions,
        format!("view, Open in widgetd, {}/widgets/{id}", app.url)
    );
    assert!(
        !actions.contains("http,") && !actions.contains("broadcast"),
        "{actions}"
    );
    assert!(
        header(&got[0], "click").ends_with(&format!("#w-{id}")),
        "{:?}",
        got[0].headers
    );
    assert!(got[0].body.contains("NTFY_KEY"), "{}", got[0].body);
}
