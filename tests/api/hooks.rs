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
async fn an_unanswered_check_is_denied_or_falls_back_and_its_card_ends() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let r = app
        .post_json(
            &hook_path(&s.session, 1),
            &s.agent,
            &tool_call("PreToolUse", "make deploy"),
        )
        .await;
    let out: Value = r.json().await.unwrap();
    // Under `claude -p` there is no dialog to fall back to: nobody approved it.
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("No decision in widgetd within 1 seconds"),
        "{reason}"
    );

    let r = app
        .post_json(
            &hook_path(&s.session, 0),
            &s.agent,
            &tool_call("PermissionRequest", "make deploy"),
        )
        .await;
    let out: Value = r.json().await.unwrap();
    // No decision at all: Claude Code shows its dialog.
    assert!(out.get("hookSpecificOutput").is_none(), "{out}");
    assert!(out["systemMessage"].as_str().unwrap().contains("0 seconds"));
    // Both cards ended: nobody can answer a check nobody waits for.
    let ended = app
        .count("SELECT COUNT(*) FROM widgets WHERE kind = 'approval' AND status = 'expired'")
        .await;
    assert_eq!(ended, 2);
    assert!(app.prompts(&s.host, &s.session, 0).await.is_empty());
}

/// Polls until the session has no undelivered prompt (the hook's answer
/// marks its prompt delivered once the response is sent); fails after 10 s.
async fn no_prompt_left(app: &TestApp, s: &Scene) {
    for _ in 0..200 {
        if app.prompts(&s.host, &s.session, 0).await.is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let left = app.prompts(&s.host, &s.session, 0).await;
    panic!("a prompt is still queued for an answer the hook delivered: {left:?}");
}

#[tokio::test]
async fn an_answer_the_hook_delivered_queues_no_resume_prompt() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let once = [("decision", "once")];
    let out = decided(&app, &s, &browser, tool_call("PreToolUse", "make"), &once).await;
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    no_prompt_left(&app, &s).await;
    let deny = [("decision", "deny"), ("reason", "not today")];
    let out = decided(&app, &s, &browser, tool_call("PreToolUse", "make"), &deny).await;
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    no_prompt_left(&app, &s).await;
    // The answers themselves are kept, as any answer is.
    let answered = app
        .count("SELECT COUNT(*) FROM widgets WHERE kind = 'approval' AND status = 'submitted'")
        .await;
    assert_eq!(answered, 2);
}

#[tokio::test]
async fn a_hook_that_stops_waiting_ends_its_card_and_later_answers_are_refused() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    // Claude Code's own hook timeout: the request is dropped mid-wait.
    let impatient = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(1))
        .build()
        .unwrap();
    let dropped = impatient
        .post(format!("{}{}", app.url, hook_path(&s.session, 60)))
        .bearer_auth(&s.agent)
        .json(&tool_call("PreToolUse", "make clean"))
        .send()
        .await;
    assert!(dropped.is_err(), "the request should have timed out");
    let id = {
        let mut id = None;
        for _ in 0..200 {
            id = sqlx::query_scalar::<_, String>(
                "SELECT id FROM widgets WHERE session_id = $1 AND status = 'expired'",
            )
            .bind(&s.session)
            .fetch_optional(&app.state.db.read)
            .await
            .unwrap();
            if id.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        id.expect("the card of a dropped hook request ended")
    };
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "once")],
        )
        .await;
    assert_ne!(r.status(), StatusCode::SEE_OTHER, "a late answer was taken");
    let status: String = sqlx::query_scalar("SELECT status FROM widgets WHERE id = $1")
        .bind(&id)
        .fetch_one(&app.state.db.read)
        .await
        .unwrap();
    assert_eq!(status, "expired");
    // No "You can run it now" for a call Claude Code already settled.
    assert!(app.prompts(&s.host, &s.session, 0).await.is_empty());
    let page = app
        .page(&browser, &format!("/sessions/{}", s.session))
        .await;
    assert!(page.contains("Claude Code stopped waiting"), "{page}");
}

#[tokio::test]
async fn a_check_that_matches_no_session_is_denied_loudly() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let other = scene(&app, "bob").await;
    let path = hook_path(&s.session, 5);
    let send = |token: Option<String>, body: Value| {
        let mut request = app.client.post(format!("{}{path}", app.url)).json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    // No token (WIDGETD_AGENT_TOKEN unset), an unknown one, another session's.
    for token in [
        None,
        Some("wda_unknown".to_owned()),
        Some(other.agent.clone()),
    ] {
        let r = send(token.clone(), tool_call("PreToolUse", "rm -rf build"))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{token:?}");
        let out: Value = r.json().await.unwrap();
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
        let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(reason.contains("widgetd host --session"), "{reason}");
        assert_eq!(out["systemMessage"].as_str(), Some(reason));
        let r = send(
            token.clone(),
            tool_call("PermissionRequest", "rm -rf build"),
        )
        .await
        .unwrap();
        let out: Value = r.json().await.unwrap();
        assert!(out.get("hookSpecificOutput").is_none(), "{out}");
        assert!(
            out["systemMessage"]
                .as_str()
                .unwrap()
                .contains("WIDGETD_AGENT_TOKEN")
        );
    }
    // Lines that decide nothing keep their plain refusal.
    let note = json!({ "hook_event_name": "Notification", "message": "hi" });
    let r = send(None, note).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.count("SELECT COUNT(*) FROM widgets").await, 0);
}

#[tokio::test]
async fn notifications_and_stops_are_the_agents_tools_lines_and_limited_as_such() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let note = json!({ "hook_event_name": "Notification", "message": "Claude needs your permission to use Bash", "session_id": "x" });
    let stop = json!({ "hook_event_name": "Stop", "stop_hook_active": false, "session_id": "x" });
    for body in [&note, &stop] {
        let r = app
            .post_json(&hook_path(&s.session, 0), &s.agent, body)
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.json::<Value>().await.unwrap(), json!({}));
    }
    // From the host's token the same is the host's (system) line.
    let r = app
        .post_json(&hook_path(&s.session, 0), &s.host, &stop)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let lines: Vec<(String, String)> = sqlx::query_as(
        "SELECT role, body FROM messages WHERE session_id = $1 AND kind = 'text' ORDER BY id",
    )
    .bind(&s.session)
    .fetch_all(&app.state.db.read)
    .await
    .unwrap();
    let owned = |role: &str, text: &str| (role.to_owned(), text.to_owned());
    assert_eq!(
        lines,
        [
            owned(
                "agent",
                "Claude Code notification: Claude needs your permission to use Bash"
            ),
            owned("agent", "Claude Code finished its turn."),
            owned("system", "Claude Code finished its turn."),
        ]
    );
    // The agent's bucket: a loop of notices meets the limit `/messages` has.
    let mut limited = false;
    for _ in 0..40 {
        let r = app
            .post_json(&hook_path(&s.session, 0), &s.agent, &note)
            .await;
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = true;
            break;
        }
        assert_eq!(r.status(), StatusCode::OK);
    }
    assert!(limited, "40 notifications in a row were all taken");
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
    // Another session's agent does not learn that this session exists: it
    // is told what an unknown session's URL is told.
    let r = app
        .post_json(&path, &other.agent, &tool_call("PreToolUse", "ls"))
        .await;
    let said = r.text().await.unwrap();
    let r = app
        .post_json(
            &hook_path(&uuid::Uuid::new_v4().to_string(), 0),
            &other.agent,
            &tool_call("PreToolUse", "ls"),
        )
        .await;
    assert_eq!(r.text().await.unwrap(), said);
    let r = app
        .post_json(&path, &other.agent, &json!({ "hook_event_name": "Stop" }))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;
    let after = (
        app.count("SELECT COUNT(*) FROM widgets").await,
        app.count("SELECT COUNT(*) FROM messages").await,
    );
    assert_eq!(before, after);
}
