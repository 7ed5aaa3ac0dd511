//! Claude Code's `http` hooks: permission checks decided in the browser,
//! notifications and stops in the transcript, refusals that change nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Browser, Scene, TestApp, assert_error, scene, spawn_app};

fn hook_path(session: &str, wait: u64) -> String {
    format!("/api/v1/sessions/{session}/hooks/claude-code?wait={wait}")
}

/// A tool call as Claude Code sends it to a hook, with the fields widgetd ignores.
fn tool_call(event: &str, command: &str) -> Value {
    json!({
        "session_id": "claude-session-1",
        "transcript_path": "transcript.jsonl",
        "cwd": "project",
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": { "command": command, "description": "clean up" },
        "tool_use_id": "toolu_01",
    })
}

/// The id of the session's one pending approval widget, once it exists.
async fn pending_approval(app: &TestApp, session: &str) -> String {
    for _ in 0..600 {
        let id: Option<String> = sqlx::query_scalar(
            "SELECT id FROM widgets WHERE session_id = $1 AND kind = 'approval' AND status = 'pending'",
        )
        .bind(session)
        .fetch_optional(&app.state.db.read)
        .await
        .unwrap();
        if let Some(id) = id {
            return id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no approval widget appeared");
}

/// Sends `body` to the hook while the person answers `decision` in the browser.
async fn decided(
    app: &TestApp,
    s: &Scene,
    browser: &Browser,
    body: Value,
    decision: &[(&str, &str)],
) -> Value {
    let path = hook_path(&s.session, 60);
    let call = app.post_json(&path, &s.agent, &body);
    let answer = async {
        let id = pending_approval(app, &s.session).await;
        let r = app
            .post_form(browser, &format!("/widgets/{id}/submit"), decision)
            .await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
    };
    let (response, ()) = tokio::join!(call, answer);
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

#[tokio::test]
async fn permission_checks_wait_for_the_person_and_always_answers_at_once() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;

    let out = decided(
        &app,
        &s,
        &browser,
        tool_call("PermissionRequest", "rm -rf build"),
        &[("decision", "once")],
    )
    .await;
    assert_eq!(
        out,
        json!({ "hookSpecificOutput": { "hookEventName": "PermissionRequest",
            "decision": { "behavior": "allow" } } })
    );

    let out = decided(
        &app,
        &s,
        &browser,
        tool_call("PreToolUse", "rm -rf build"),
        &[("decision", "deny"), ("reason", "not on Fridays")],
    )
    .await;
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecisionReason"],
        "Denied in widgetd by alice: not on Fridays"
    );

    let out = decided(
        &app,
        &s,
        &browser,
        tool_call("PreToolUse", "cargo test"),
        &[("decision", "always")],
    )
    .await;
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    // The rule answers the same call at once, without a widget.
    let widgets = app.count("SELECT COUNT(*) FROM widgets").await;
    for event in ["PreToolUse", "PermissionRequest"] {
        let r = app
            .post_json(
                &hook_path(&s.session, 300),
                &s.agent,
                &tool_call(event, "cargo test"),
            )
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        let out: Value = r.json().await.unwrap();
        let allowed = &out["hookSpecificOutput"];
        assert!(
            allowed["permissionDecision"] == "allow" || allowed["decision"]["behavior"] == "allow",
            "{out}"
        );
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM widgets").await, widgets);
}

#[tokio::test]
async fn an_unanswered_check_falls_back_to_claude_codes_own_prompt() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let r = app
        .post_json(
            &hook_path(&s.session, 0),
            &s.agent,
            &tool_call("PreToolUse", "make deploy"),
        )
        .await;
    let out: Value = r.json().await.unwrap();
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask");

    let r = app
        .post_json(
            &hook_path(&s.session, 1),
            &s.agent,
            &tool_call("PermissionRequest", "make deploy"),
        )
        .await;
    let out: Value = r.json().await.unwrap();
    // No decision at all: Claude Code shows its dialog.
    assert!(out.get("hookSpecificOutput").is_none(), "{out}");
    assert!(out["systemMessage"].as_str().unwrap().contains("1 seconds"));
    // Both requests are in the transcript for the person to see.
    let shown = app
        .count("SELECT COUNT(*) FROM widgets WHERE kind = 'approval' AND status = 'pending'")
        .await;
    assert_eq!(shown, 2);
}

#[tokio::test]
async fn notifications_and_stops_become_transcript_lines() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    for body in [
        json!({ "hook_event_name": "Notification", "message": "Claude needs your permission to use Bash", "session_id": "x" }),
        json!({ "hook_event_name": "Stop", "stop_hook_active": false, "session_id": "x" }),
    ] {
        let r = app
            .post_json(&hook_path(&s.session, 0), &s.agent, &body)
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.json::<Value>().await.unwrap(), json!({}));
    }
    let lines: Vec<String> = sqlx::query_scalar(
        "SELECT body FROM messages WHERE session_id = $1 AND role = 'system' ORDER BY id",
    )
    .bind(&s.session)
    .fetch_all(&app.state.db.read)
    .await
    .unwrap();
    assert_eq!(
        lines,
        [
            "Claude Code: Claude needs your permission to use Bash",
            "Claude Code finished its turn."
        ]
    );
}

#[tokio::test]
async fn bad_hook_calls_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let other = scene(&app, "bob").await;
    let before = (
        app.count("SELECT COUNT(*) FROM widgets").await,
        app.count("SELECT COUNT(*) FROM messages").await,
    );
    let path = hook_path(&s.session, 0);
    let unknown = json!({ "hook_event_name": "SessionStart", "source": "startup" });
    let r = app.post_json(&path, &s.agent, &unknown).await;
    assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unsupported_hook_event",
        None,
    )
    .await;
    let no_input = json!({ "hook_event_name": "PreToolUse", "tool_name": "Bash" });
    let r = app.post_json(&path, &s.agent, &no_input).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    let r = app
        .post_json(&path, &s.agent, &json!({ "tool_name": "Bash" }))
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    let r = app
        .client
        .post(format!("{}{path}", app.url))
        .bearer_auth(&s.agent)
        .header("content-type", "application/json")
        .body("{\"hook_event_name\": \"PreToolUse\", secret-ish")
        .send()
        .await
        .unwrap();
    assert_error(
        r,
        StatusCode::BAD_REQUEST,
        "invalid_body",
        Some("secret-ish"),
    )
    .await;
    let long =
        json!({ "hook_event_name": "PreToolUse", "tool_name": "x".repeat(101), "tool_input": {} });
    let r = app.post_json(&path, &s.agent, &long).await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_tool", None).await;
    let r = app
        .post_json(
            &hook_path(&s.session, 301),
            &s.agent,
            &tool_call("PreToolUse", "ls"),
        )
        .await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "wait_too_long", None).await;
    // Another session's agent does not learn that this session exists.
    let r = app
        .post_json(&path, &other.agent, &tool_call("PreToolUse", "ls"))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;
    let after = (
        app.count("SELECT COUNT(*) FROM widgets").await,
        app.count("SELECT COUNT(*) FROM messages").await,
    );
    assert_eq!(before, after);
}
