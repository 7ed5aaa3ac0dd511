//! Archiving a session and revoking its agent token, from the page, the
//! REST API and the command line: revoking locks the agent out without
//! archiving, a new token is shown once, a session created in the browser
//! is created once (POST/redirect/GET), and every change is audited.
//!
//! The tests that drive Chromium are in `tests/slow/sessions/admin.rs`.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::chrome::WAIT;
use crate::helpers::{
    Browser, COMMAND_LIMIT, Daemon, OutputWithin, TestApp, client, scene, spawn_app, stderr,
    widgetd,
};

/// Whether `agent` may still act on `session` (asks for a widget).
async fn agent_works(app_url: &str, agent: &str, session: &str) -> StatusCode {
    client()
        .post(format!(
            "{app_url}/api/v1/sessions/{session}/widgets/env-vars"
        ))
        .bearer_auth(agent)
        .json(&json!({ "names": ["SOME_KEY"], "reason": "to check the token" }))
        .send()
        .await
        .unwrap()
        .status()
}

async fn audit_details(app: &TestApp, action: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT detail FROM audit_log WHERE action = $1 ORDER BY id")
        .bind(action)
        .fetch_all(&app.state.db.read)
        .await
        .unwrap()
}

#[tokio::test]
async fn revoking_an_agent_token_locks_the_agent_out_without_archiving() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let path = format!("/api/v1/sessions/{}/agent-token", s.session);
    // The agent follows the session's events: revoking ends the stream.
    let mut events = app
        .get(&format!("/api/v1/sessions/{}/events", s.session), &s.agent)
        .await;
    assert_eq!(events.status(), StatusCode::OK);

    let r = app
        .client
        .delete(format!("{}{path}", app.url))
        .bearer_auth(&s.host)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body, json!({ "session_id": s.session, "revoked": 1 }));
    assert_eq!(
        agent_works(&app.url, &s.agent, &s.session).await,
        StatusCode::UNAUTHORIZED
    );
    let ended = tokio::time::timeout(WAIT, async {
        while let Ok(Some(_)) = events.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the revoked agent's stream stayed open");
    // The session itself is open: its host still writes to the transcript.
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{}/messages", s.session),
            &s.host,
            &json!({ "role": "system", "text": "agent token revoked" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);

    // A new token, shown once, lets an agent back in; the old one stays out.
    let r = app.post_json(&path, &s.host, &json!({})).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    let new = body["agent_token"].as_str().unwrap();
    assert!(new.starts_with("wda_"), "{body}");
    assert_eq!(body["revoked"], 0);
    assert_eq!(body["mcp_url"], format!("{}/mcp", app.url));
    assert_eq!(
        agent_works(&app.url, new, &s.session).await,
        StatusCode::CREATED
    );
    assert_eq!(
        agent_works(&app.url, &s.agent, &s.session).await,
        StatusCode::UNAUTHORIZED
    );
    // An agent token cannot revoke itself or mint another.
    assert_eq!(
        app.post_json(&path, new, &json!({})).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        audit_details(&app, "session.revoke_agent_token").await,
        ["revoked=1; reissued=no", "revoked=0; reissued=yes"]
    );

    // An archived session gets no new token, but revoking still works.
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{}/archive", s.session),
            &s.host,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.post_json(&path, &s.host, &json!({})).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"]["code"],
        "session_archived"
    );
    let r = app
        .client
        .delete(format!("{}{path}", app.url))
        .bearer_auth(&s.host)
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["revoked"], 1);
}

/// `GET` of a page as `browser`; its status and text.
async fn page(app: &TestApp, browser: &Browser, path: &str) -> (StatusCode, String) {
    let r = app
        .client
        .get(format!("{}{path}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    (r.status(), r.text().await.unwrap())
}

/// The agent token shown on a page, if any.
fn shown_token(page: &str) -> Option<String> {
    let rest = page.split("id=\"agent-token\">").nth(1)?;
    Some(rest.split('<').next()?.to_owned())
}

#[tokio::test]
async fn the_settings_panel_creates_once_reissues_revokes_and_archives() {
    let app = spawn_app().await;
    app.user("alice", Role::Member).await;
    app.user("bob", Role::Member).await;
    app.user("carol", Role::Member).await;
    let alice = app.login("alice").await;

    // Creating: a redirect to the settings panel, which shows the token once.
    let r = app
        .post_form(&alice, "/sessions", &[("title", "Deploy the blog")])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    let session: String = sqlx::query_scalar("SELECT id FROM sessions")
        .fetch_one(&app.state.db.read)
        .await
        .unwrap();
    assert_eq!(to, format!("/sessions/{session}/settings?created=1#agent"));
    let (status, first) = page(&app, &alice, to.split('#').next().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(first.contains("Session created"), "{first}");
    // The hint names the daemon's URL: run as shown, it reaches this daemon.
    let hint = format!(
        "widgetd connect claude-code --url {} --session {session}",
        app.url
    );
    assert!(first.contains(&hint), "{first}");
    let token = shown_token(&first).expect("the token is shown");
    assert_eq!(
        agent_works(&app.url, &token, &session).await,
        StatusCode::CREATED
    );
    let (_, again) = page(&app, &alice, to.split('#').next().unwrap()).await;
    assert!(shown_token(&again).is_none(), "the token was shown twice");
    assert!(!again.contains(&token));
    assert_eq!(app.count("SELECT count(*) FROM sessions").await, 1);

    // Only the creator reaches the panel.
    let share = [
        ("others_can", "view"),
        ("grant_user", "bob"),
        ("grant_access", "prompt"),
    ];
    let r = app
        .post_form(&alice, &format!("/sessions/{session}/sharing"), &share)
        .await;
    assert_eq!(
        r.headers()["location"],
        format!("/sessions/{session}/settings#sharing").as_str()
    );
    let settings = format!("/sessions/{session}/settings");
    for (who, status) in [
        ("bob", StatusCode::FORBIDDEN),
        ("carol", StatusCode::FORBIDDEN),
    ] {
        let browser = app.login(who).await;
        assert_eq!(page(&app, &browser, &settings).await.0, status, "{who}");
        let r = app
            .post_form(
                &browser,
                &format!("/sessions/{session}/agent-token"),
                &[("action", "revoke")],
            )
            .await;
        assert_eq!(r.status(), status, "{who}");
    }

    // Revoke and issue a new one: the new one is shown once, the old is dead.
    let token_form = format!("/sessions/{session}/agent-token");
    let r = app
        .post_form(&alice, &token_form, &[("action", "reissue")])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (_, shown) = page(&app, &alice, &settings).await;
    assert!(shown.contains("New agent token"), "{shown}");
    let new = shown_token(&shown).unwrap();
    assert_ne!(new, token);
    assert_eq!(
        agent_works(&app.url, &token, &session).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        agent_works(&app.url, &new, &session).await,
        StatusCode::CREATED
    );

    // Revoke only: no token works, the panel says so, the session stays open.
    app.post_form(&alice, &token_form, &[("action", "revoke")])
        .await;
    let (_, revoked) = page(&app, &alice, &settings).await;
    assert!(revoked.contains("id=\"no-token\""), "{revoked}");
    assert_eq!(
        agent_works(&app.url, &new, &session).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        app.count("SELECT count(*) FROM sessions WHERE archived_at IS NULL")
            .await,
        1
    );
    // An unknown action is refused and changes nothing.
    let r = app
        .post_form(&alice, &token_form, &[("action", "steal")])
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);

    // Archive: the waiting widgets are cancelled, back to the transcript.
    let r = app
        .post_form(&alice, &format!("/sessions/{session}/archive"), &[])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        format!("/sessions/{session}").as_str()
    );
    assert_eq!(
        app.count("SELECT count(*) FROM widgets WHERE status = 'cancelled'")
            .await,
        2
    );
    let (_, archived) = page(&app, &alice, &settings).await;
    assert!(archived.contains("no agent token works"), "{archived}");
    assert!(!archived.contains(&format!("action=\"/sessions/{session}/archive\"")));
    assert_eq!(
        audit_details(&app, "session.revoke_agent_token").await,
        ["revoked=1; reissued=yes", "revoked=1; reissued=no"]
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'session.archive'")
            .await,
        1
    );
}

fn ok_json(command: &mut std::process::Command) -> Value {
    let out = command.output_within(COMMAND_LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn the_cli_lists_archives_and_revokes_beside_a_running_daemon() {
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    let daemon = Daemon::start(&dir, tmp.path(), "serve");
    let url = daemon.url.clone();
    let host = ok_json(widgetd(&dir).args([
        "token", "create", "--user", "admin", "--scope", "sessions", "--json",
    ]))["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = ok_json(widgetd(&dir).args(["session", "create", "--user", "admin"]));
    let session = created["session_id"].as_str().unwrap().to_owned();
    let agent = created["agent_token"].as_str().unwrap().to_owned();
    assert_eq!(
        agent_works(&url, &agent, &session).await,
        StatusCode::CREATED
    );

    let listed = ok_json(widgetd(&dir).args(["session", "list", "--json"]));
    assert_eq!(listed[0]["id"], session.as_str());
    assert_eq!(listed[0]["owner"], "admin");
    assert_eq!(listed[0]["pending"], 1);
    assert_eq!(listed[0]["archived_at"], Value::Null);
    assert!(listed[0]["created_at"].as_str().unwrap().ends_with('Z'));

    // Revoking locks the running daemon's agent out at once.
    let revoked = ok_json(widgetd(&dir).args([
        "session",
        "revoke-agent-token",
        &session,
        "--reissue",
        "--json",
    ]));
    assert_eq!(revoked["revoked"], 1);
    let new = revoked["agent_token"].as_str().unwrap();
    assert_eq!(
        agent_works(&url, &agent, &session).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(agent_works(&url, new, &session).await, StatusCode::CREATED);

    let archived = ok_json(widgetd(&dir).args(["session", "archive", &session, "--json"]));
    assert_eq!(
        archived,
        json!({ "session_id": session, "archived": true, "cancelled_widgets": 2 })
    );
    assert_eq!(
        agent_works(&url, new, &session).await,
        StatusCode::UNAUTHORIZED
    );
    // The agent host hears of the cancellations through the daemon.
    let prompts: Value = client()
        .get(format!("{url}/api/v1/sessions/{session}/prompts"))
        .bearer_auth(&host)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let texts: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 2, "{prompts}");
    assert!(
        texts
            .iter()
            .all(|t| t.starts_with("[Agor] The request for SOME_KEY was cancelled"))
    );
    let listed = ok_json(widgetd(&dir).args(["session", "list", "--json"]));
    assert_eq!(listed[0]["pending"], 0);
    assert!(listed[0]["archived_at"].is_string());

    let audit = ok_json(widgetd(&dir).args(["audit", "list", "--json"]));
    let actions: Vec<(&str, &str)> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["actor"].as_str().unwrap(), r["action"].as_str().unwrap()))
        .collect();
    for action in ["session.revoke_agent_token", "session.archive"] {
        assert!(actions.contains(&("cli", action)), "{actions:?}");
    }
    let unknown = widgetd(&dir)
        .args(["session", "archive", "not-a-session"])
        .output_within(COMMAND_LIMIT);
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("session list"),
        "{}",
        stderr(&unknown)
    );
    daemon.stop();
}
