//! Slack: a loopback fake of Slack's Web API records `chat.postMessage` and
//! `chat.update`; interaction and slash-command requests are signed as Slack
//! signs them (`v0`, HMAC-SHA256 over `v0:{timestamp}:{body}`). A valid
//! click answers as the linked person through the same transition as the
//! transcript; a stale, badly signed, unlinked, unauthorised or second one
//! changes nothing; a link is made only with a code from widgetd's settings.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use widgetd_domain::auth::Role;
use widgetd_notify::slack::verify::sign;

use crate::helpers::new_widget;
use crate::helpers::{Browser, Scene, TestApp, scene, spawn_app_with};

pub const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub const TEAM: &str = "T0WIDGETD";

/// One call the fake Slack got.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub auth: String,
    pub body: Value,
}

/// Slack's Web API on 127.0.0.1:0: answers `ok` with a channel and a fresh
/// `ts` to each post, `ok` to each update, and keeps every call.
#[derive(Clone, Default)]
pub struct FakeSlack {
    calls: Arc<Mutex<Vec<Call>>>,
}

impl FakeSlack {
    pub async fn start() -> (FakeSlack, String) {
        let fake = FakeSlack::default();
        let state = fake.clone();
        let app = axum::Router::new().route(
            "/api/{method}",
            axum::routing::post(
                move |axum::extract::Path(method): axum::extract::Path<String>,
                      headers: HeaderMap,
                      body: String| {
                    let state = state.clone();
                    async move {
                        let auth = headers
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned();
                        let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                        let mut calls = state.calls.lock().unwrap();
                        let ts = format!("1700000000.{:06}", calls.len());
                        let answer = json!({ "ok": true, "channel": format!("D{}", body["channel"].as_str().unwrap_or("X")), "ts": ts });
                        calls.push(Call { method, auth, body });
                        axum::Json(answer)
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/api", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (fake, base)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// Waits (at most 30 s) for a call of `method` matching `what`.
    pub async fn wait_for(&self, method: &str, what: impl Fn(&Call) -> bool) -> Call {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(call) = self
                .calls()
                .into_iter()
                .find(|c| c.method == method && what(c))
            {
                return call;
            }
            assert!(
                Instant::now() < deadline,
                "no {method} call as expected within 30 s; got {:#?}",
                self.calls()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A daemon whose Slack is the fake, connected by an admin on the admin
/// page, with its Slack sender running.
pub async fn slack_app() -> (TestApp, FakeSlack) {
    let (fake, base) = FakeSlack::start().await;
    let app = spawn_app_with(|s| s.slack.api_base = base).await;
    tokio::spawn(widgetd_notify::slack::delivery::run(
        app.state.core.clone(),
        app.state.config.slack.clone(),
    ));
    app.user("root", Role::Admin).await;
    let admin = app.login("root").await;
    let r = app
        .post_form(
            &admin,
            "/admin/slack/connect",
            &[
                ("bot_token", "xoxb-test-bot-token"),
                ("signing_secret", SIGNING_SECRET),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let page = app.page(&admin, "/admin/slack").await;
    assert!(page.contains("id=\"slack-connected\""), "{page}");
    assert!(!page.contains("xoxb-test-bot-token") && !page.contains(SIGNING_SECRET));
    (app, fake)
}

fn now() -> i64 {
    widgetd_domain::clock::now_ms() / 1000
}

/// Posts `body` to `path` signed with `secret` at `timestamp`, as Slack does.
pub async fn signed(
    app: &TestApp,
    path: &str,
    body: String,
    secret: &str,
    timestamp: i64,
) -> Response {
    let ts = timestamp.to_string();
    app.client
        .post(format!("{}{path}", app.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", &ts)
        .header(
            "x-slack-signature",
            sign(secret.as_bytes(), &ts, body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .unwrap()
}

fn form(fields: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(fields).unwrap()
}

/// `/widgetd link CODE` from `slack_user`, signed.
pub async fn send_link(app: &TestApp, slack_user: &str, code: &str) -> Value {
    let text = format!("link {code}");
    let body = form(&[
        ("team_id", TEAM),
        ("user_id", slack_user),
        ("command", "/widgetd"),
        ("text", &text),
    ]);
    let r = signed(app, "/slack/commands", body, SIGNING_SECRET, now()).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// A code made on `browser`'s Slack settings page.
pub async fn link_code(app: &TestApp, browser: &Browser) -> String {
    let r = app.post_form(browser, "/settings/slack/code", &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    let page = r.text().await.unwrap();
    let code = page
        .split("/widgetd link ")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_else(|| panic!("no code on the page: {page}"));
    code.trim().to_owned()
}

/// Links the widgetd user `name` to `slack_user`, from widgetd's settings.
pub async fn link(app: &TestApp, name: &str, slack_user: &str) {
    let browser = app.login(name).await;
    let code = link_code(app, &browser).await;
    let answer = send_link(app, slack_user, &code).await;
    assert!(
        answer["text"].as_str().unwrap().starts_with("Linked"),
        "{answer}"
    );
    let page = app.page(&browser, "/settings/slack").await;
    assert!(page.contains(slack_user), "{page}");
}

/// The interaction payload of a click on `action_id` / `value` of
/// `widget`'s message by `slack_user`.
fn click(slack_user: &str, widget: &str, action_id: &str, value: &str) -> String {
    let payload = json!({
        "type": "block_actions",
        "user": { "id": slack_user, "team_id": TEAM },
        "team": { "id": TEAM },
        "actions": [{ "action_id": action_id, "block_id": format!("widgetd:{widget}"),
                      "value": value, "type": "button" }],
    });
    form(&[("payload", &payload.to_string())])
}

async fn error_code(r: Response) -> String {
    let body: Value = r.json().await.unwrap();
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn status_of(app: &TestApp, host: &str, widget: &str) -> Value {
    app.get(&format!("/api/v1/widgets/{widget}"), host)
        .await
        .json()
        .await
        .unwrap()
}

async fn submits(app: &TestApp, widget: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) FROM audit_log WHERE action = 'widget.submit' AND widget_id = '{widget}'"
    ))
    .await
}

fn text_of(call: &Call) -> String {
    call.body["blocks"].to_string()
}

#[tokio::test]
async fn a_signed_click_of_a_linked_person_answers_once_and_nothing_else_does() {
    let (app, slack) = slack_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    app.user("carol", Role::Member).await;
    let share = |carol: &str| json!({ "others_can": "none", "grants": { "carol": carol } });
    let path = format!("/api/v1/sessions/{session}/sharing");
    let r = app
        .client
        .put(format!("{}{path}", app.url))
        .bearer_auth(&host);
    assert!(
        r.json(&share("prompt"))
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );
    link(&app, "alice", "UALICE").await;
    link(&app, "carol", "UCAROL").await;

    let id = new_widget(
        &app,
        &agent,
        &session,
        "ask",
        &json!({ "question": "Deploy <prod> & tell?" }),
    )
    .await;
    let posted = slack
        .wait_for("chat.postMessage", |c| c.body["channel"] == "UALICE")
        .await;
    assert_eq!(posted.auth, "Bearer xoxb-test-bot-token");
    let blocks = text_of(&posted);
    assert!(
        blocks.contains("Deploy &lt;prod&gt; &amp; tell?"),
        "{blocks}"
    );
    assert!(
        blocks.contains(&format!("widgetd:{id}")) && blocks.contains("option.1"),
        "{blocks}"
    );
    assert!(
        blocks.contains(&format!("{}/widgets/{id}", app.url)),
        "{blocks}"
    );
    slack
        .wait_for("chat.postMessage", |c| c.body["channel"] == "UCAROL")
        .await;
    // Carol may no longer answer once her grant is only `view`.
    let r = app
        .client
        .put(format!("{}{path}", app.url))
        .bearer_auth(&host);
    assert!(
        r.json(&share("view"))
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );

    let yes = click("UALICE", &id, "option.0", "0");
    let refusals = [
        (
            "stale",
            yes.clone(),
            SIGNING_SECRET,
            now() - 301,
            StatusCode::UNAUTHORIZED,
            "slack_request_stale",
        ),
        (
            "another secret",
            yes.clone(),
            "another-secret",
            now(),
            StatusCode::UNAUTHORIZED,
            "slack_signature_invalid",
        ),
        (
            "unlinked",
            click("UNOBODY", &id, "option.0", "0"),
            SIGNING_SECRET,
            now(),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            "view only",
            click("UCAROL", &id, "option.0", "0"),
            SIGNING_SECRET,
            now(),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
    ];
    for (what, body, secret, at, status, code) in refusals {
        let r = signed(&app, "/slack/interactions", body, secret, at).await;
        assert_eq!(r.status(), status, "{what}");
        assert_eq!(error_code(r).await, code, "{what}");
        assert_eq!(
            status_of(&app, &host, &id).await["status"],
            "pending",
            "{what}"
        );
        assert_eq!(submits(&app, &id).await, 0, "{what}");
    }

    let r = signed(&app, "/slack/interactions", yes, SIGNING_SECRET, now()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let view = status_of(&app, &host, &id).await;
    assert_eq!(view["status"], "submitted");
    assert_eq!(view["result"]["answered_by"], "alice");
    assert_eq!(view["result"]["answers"]["Deploy <prod> & tell?"], "Yes");

    let second = click("UALICE", &id, "option.1", "1");
    let r = signed(&app, "/slack/interactions", second, SIGNING_SECRET, now()).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(status_of(&app, &host, &id).await["result"], view["result"]);
    assert_eq!(submits(&app, &id).await, 1);
    let (actor, client): (String, String) = sqlx::query_as(
        "SELECT actor, client_addr FROM audit_log WHERE action = 'widget.submit' AND widget_id = $1",
    )
    .bind(&id)
    .fetch_one(&app.state.db.read)
    .await
    .unwrap();
    assert!(actor.starts_with("user:"), "{actor}");
    assert!(client.starts_with("slack"), "{client}");
    let prompts = app.prompts(&host, &session, 0).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");

    for person in ["UALICE", "UCAROL"] {
        let update = slack
            .wait_for("chat.update", |c| c.body["channel"] == format!("D{person}"))
            .await;
        let blocks = text_of(&update);
        assert!(blocks.contains("Answered by alice"), "{blocks}");
        assert!(!blocks.contains("option.0"), "{blocks}");
    }
}

#[tokio::test]
async fn an_approval_shows_its_exact_command_and_ends_in_slack_when_answered_in_widgetd() {
    let (app, slack) = slack_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    link(&app, "alice", "UALICE").await;
    let command = "rm -rf build && echo \"<b>\" > out";
    let id = new_widget(
        &app,
        &agent,
        &session,
        "approval",
        &json!({ "tool": "Bash", "input": { "command": command } }),
    )
    .await;
    let posted = slack.wait_for("chat.postMessage", |_| true).await;
    let text = posted.body["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("```rm -rf build &amp;&amp; echo \"&lt;b&gt;\" &gt; out```"),
        "{text}"
    );
    let blocks = text_of(&posted);
    assert!(
        blocks.contains("decision.deny") && blocks.contains("decision.once"),
        "{blocks}"
    );
    assert!(!blocks.contains("always"), "{blocks}");

    // Answered in the transcript first: the message ends, a click is late.
    let alice = app.login("alice").await;
    let r = app
        .post_form(
            &alice,
            &format!("/widgets/{id}/submit"),
            &[("decision", "deny")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let update = slack.wait_for("chat.update", |_| true).await;
    assert!(
        !text_of(&update).contains("decision.once"),
        "{}",
        text_of(&update)
    );
    let once = click("UALICE", &id, "decision.once", "once");
    let r = signed(&app, "/slack/interactions", once, SIGNING_SECRET, now()).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let view = status_of(&app, &host, &id).await;
    assert_eq!(view["result"]["decision"], "deny");
    assert_eq!(submits(&app, &id).await, 1);
}

#[tokio::test]
async fn a_link_is_made_only_with_a_code_from_widgetds_settings() {
    let (app, _slack) = slack_app().await;
    app.user("alice", Role::Member).await;
    let links = "SELECT count(*) FROM slack_links";
    // From Slack alone: no code, a made-up code.
    let answer = send_link(&app, "UMALLORY", "").await;
    assert!(
        !answer["text"].as_str().unwrap().starts_with("Linked"),
        "{answer}"
    );
    let answer = send_link(&app, "UMALLORY", "ABCDEFGHJK").await;
    assert!(
        answer["text"].as_str().unwrap().contains("unknown"),
        "{answer}"
    );
    assert_eq!(app.count(links).await, 0);

    // A real code, but not signed by Slack: refused, and not spent.
    let alice = app.login("alice").await;
    let code = link_code(&app, &alice).await;
    let body = form(&[
        ("team_id", TEAM),
        ("user_id", "UMALLORY"),
        ("text", &format!("link {code}")),
    ]);
    let r = signed(&app, "/slack/commands", body, "not-the-secret", now()).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.count(links).await, 0);

    let answer = send_link(&app, "UALICE", &code).await;
    assert!(
        answer["text"].as_str().unwrap().starts_with("Linked"),
        "{answer}"
    );
    // Used once: another Slack user cannot reuse it.
    let answer = send_link(&app, "UMALLORY", &code).await;
    assert!(
        answer["text"].as_str().unwrap().contains("unknown"),
        "{answer}"
    );
    let linked: Vec<String> = sqlx::query_scalar("SELECT slack_user_id FROM slack_links")
        .fetch_all(&app.state.db.read)
        .await
        .unwrap();
    assert_eq!(linked, ["UALICE"]);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'slack.link'")
            .await,
        1
    );
}

/// `widgetd slack connect|status|disconnect` on the real binary: the
/// credentials come from the environment, are stored sealed, and are never
/// printed again; a bot token of the wrong shape is refused.
#[test]
fn the_cli_connects_shows_and_disconnects_without_printing_a_credential() {
    use crate::helpers::{COMMAND_LIMIT, OutputWithin, stderr, stdout, widgetd};
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    crate::helpers::new_data_dir(&dir);
    let token = format!("xoxb-{}", uuid::Uuid::new_v4().simple());
    let wrong = widgetd(&dir)
        .args(["slack", "connect"])
        .env("WIDGETD_SLACK_BOT_TOKEN", "xoxp-a-user-token")
        .env("WIDGETD_SLACK_SIGNING_SECRET", SIGNING_SECRET)
        .output_within(COMMAND_LIMIT);
    assert!(!wrong.status.success());
    assert!(stderr(&wrong).contains("xoxb-"), "{}", stderr(&wrong));
    assert!(
        !stderr(&wrong).contains("xoxp-a-user-token"),
        "{}",
        stderr(&wrong)
    );

    let connect = widgetd(&dir)
        .args(["slack", "connect"])
        .env("WIDGETD_SLACK_BOT_TOKEN", &token)
        .env("WIDGETD_SLACK_SIGNING_SECRET", SIGNING_SECRET)
        .output_within(COMMAND_LIMIT);
    assert!(connect.status.success(), "{}", stderr(&connect));
    let status = widgetd(&dir)
        .args(["slack", "status", "--json"])
        .output_within(COMMAND_LIMIT);
    assert!(status.status.success(), "{}", stderr(&status));
    let shown: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(shown["connected"], true, "{shown}");
    for out in [&connect, &status] {
        let all = format!("{}{}", stdout(out), stderr(out));
        assert!(
            !all.contains(&token) && !all.contains(SIGNING_SECRET),
            "{all}"
        );
    }

    let check = widgetd(&dir)
        .args(["check", "--json"])
        .output_within(COMMAND_LIMIT);
    assert!(check.status.success(), "{}", stderr(&check));
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    let slack = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "slack_secrets")
        .unwrap_or_else(|| panic!("no slack_secrets in {report}"));
    assert_eq!(slack["checked"], 2, "{slack}");
    assert_eq!(slack["problems"], json!([]), "{slack}");
    let printed = format!("{}{}", stdout(&check), stderr(&check));
    assert!(!printed.contains(&token) && !printed.contains(SIGNING_SECRET));

    let disconnect = widgetd(&dir)
        .args(["slack", "disconnect"])
        .output_within(COMMAND_LIMIT);
    assert!(disconnect.status.success(), "{}", stderr(&disconnect));
    let status = widgetd(&dir)
        .args(["slack", "status", "--json"])
        .output_within(COMMAND_LIMIT);
    let shown: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(shown["connected"], false, "{shown}");
}

#[tokio::test]
async fn a_person_linked_after_a_widget_was_asked_gets_the_next_one_in_slack() {
    let (app, _slack) = slack_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    let messages =
        |widget: &str| format!("SELECT count(*) FROM slack_messages WHERE widget_id = '{widget}'");
    // Nobody is linked yet: the daemon notes that there is no one to tell.
    let before = new_widget(
        &app,
        &agent,
        &session,
        "ask",
        &json!({ "question": "One?" }),
    )
    .await;
    assert_eq!(app.count(&messages(&before)).await, 0);
    // The link moves the auth epoch, so that note is not trusted after it.
    link(&app, "alice", "UALICE").await;
    let after = new_widget(
        &app,
        &agent,
        &session,
        "ask",
        &json!({ "question": "Two?" }),
    )
    .await;
    assert_eq!(app.count(&messages(&after)).await, 1);
}
