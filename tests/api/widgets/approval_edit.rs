//! Approvals, issue 26 §3 and the quorum of §4: the person edits the input
//! before allowing it (only where the agent allowed it), a comment goes
//! with any decision, "Always" holds for this session or all of the
//! creator's sessions, and a request may need several approvers. Over
//! REST, the rmcp client, a Claude Code hook, plain form posts and a real
//! Chromium.
//!
//! The tests that drive Chromium are in
//! `tests/slow/widgets/approval_edit.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::mcp::{call, connect, error_code, structured};
use crate::helpers::samples::rm_build;
use crate::helpers::{
    Scene, TestApp, ask, created, prompt_texts, scene, spawn_app, spawn_postgres_app, submit_form,
    widget,
};

async fn code_of(r: reqwest::Response) -> (StatusCode, String) {
    let status = r.status();
    let body: Value = r.json().await.unwrap_or_default();
    (
        status,
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

async fn audit_details(app: &TestApp, action: &str, widget: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT COALESCE(detail, '') FROM audit_log WHERE action = $1 AND widget_id = $2 ORDER BY id",
    )
    .bind(action)
    .bind(widget)
    .fetch_all(&app.state.db.read)
    .await
    .unwrap()
}

#[tokio::test]
async fn the_person_edits_the_input_and_comments_and_the_agent_gets_both() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let alice = app.login("alice").await;

    // Editing needs the agent's `allow_edit`.
    let id = created(ask(&app, &agent, &session, "approval", &rm_build(false)).await).await;
    let page = app.page(&alice, &format!("/sessions/{session}")).await;
    assert!(
        !page.contains("name=\"edited_input\""),
        "no edit box without allow_edit"
    );
    let edited = r#"{"command": "rm -rf build/tmp", "timeout": 5}"#;
    let r = submit_form(
        &app,
        &alice,
        &id,
        &[("decision", "once"), ("edited_input", edited)],
    )
    .await;
    assert_eq!(code_of(r).await.0, StatusCode::UNPROCESSABLE_ENTITY);
    let r = app
        .post_json_as(
            &alice,
            &format!("/widgets/{id}/submit"),
            &json!({ "decision": "once", "edited_input": edited }),
        )
        .await;
    assert_eq!(
        code_of(r).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "edit_not_allowed".into())
    );
    // The same input sent back unchanged is no edit.
    let r = submit_form(
        &app,
        &alice,
        &id,
        &[
            ("decision", "once"),
            ("edited_input", r#"{"timeout":5,"command":"rm -rf build"}"#),
            ("comment", "go ahead"),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let done = widget(&app, &agent, &id).await;
    assert!(done["result"].get("edited_input").is_none(), "{done}");
    assert_eq!(done["result"]["comment"], "go ahead");
    assert_eq!(
        prompt_texts(&app, &host, &session).await,
        ["[Agor] User approved Bash once. You can run it now. User's comment: \"go ahead\""]
    );

    // With `allow_edit`: the edit box, refusals with codes, then the edit.
    let id = created(ask(&app, &agent, &session, "approval", &rm_build(true)).await).await;
    let page = app.page(&alice, &format!("/sessions/{session}")).await;
    assert!(
        page.contains(&format!("id=\"w-{id}-edit\" name=\"edited_input\"")),
        "the edit box"
    );
    for (text, code) in [
        ("{\"command\": CANARY", "invalid_edited_input"),
        ("[\"rm\"]", "invalid_edited_input"),
        (
            &*format!("{{\"command\": \"{}\"}}", "x".repeat(17_000)),
            "input_too_large",
        ),
    ] {
        let r = app
            .post_json_as(
                &alice,
                &format!("/widgets/{id}/submit"),
                &json!({ "decision": "once", "edited_input": text }),
            )
            .await;
        let status = r.status();
        let body = r.text().await.unwrap();
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body.contains(code) && !body.contains("CANARY"), "{body}");
    }
    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");
    let r = submit_form(
        &app,
        &alice,
        &id,
        &[
            ("decision", "once"),
            ("edited_input", edited),
            ("reason", "only the tmp dir"),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let done = widget(&app, &agent, &id).await;
    assert_eq!(
        done["result"]["edited_input"],
        json!({ "command": "rm -rf build/tmp", "timeout": 5 })
    );
    assert_eq!(
        done["result"]["original_input"],
        json!({ "command": "rm -rf build", "timeout": 5 })
    );
    assert_eq!(done["result"]["comment"], "only the tmp dir");
    let prompts = prompt_texts(&app, &host, &session).await;
    assert_eq!(
        prompts.last().unwrap(),
        "[Agor] User approved Bash once. You can run it now. The user edited the input before \
         allowing it: run Bash with exactly this input, not the one you asked for: \
         {\"command\":\"rm -rf build/tmp\",\"timeout\":5} User's comment: \"only the tmp dir\""
    );
    assert_eq!(
        audit_details(&app, "widget.submit", &id).await,
        [
            r#"decision=once; original_input={"command":"rm -rf build","timeout":5}; edited_input={"command":"rm -rf build/tmp","timeout":5}"#
        ]
    );
    let page = app.page(&alice, &format!("/sessions/{session}")).await;
    assert!(page.contains("Approved once by alice"), "badge");
    assert!(
        page.contains(", with the input edited: only the tmp dir"),
        "badge says edited"
    );
    assert!(
        page.contains("rm -rf build</pre>")
            && page.contains("&#34;command&#34;: &#34;rm -rf build/tmp&#34;"),
        "both versions on the card"
    );

    // A denial keeps its reason as before (and as a comment).
    let id = created(ask(&app, &agent, &session, "approval", &rm_build(true)).await).await;
    let r = submit_form(
        &app,
        &alice,
        &id,
        &[
            ("decision", "deny"),
            ("comment", "not today"),
            ("edited_input", edited),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let done = widget(&app, &agent, &id).await;
    assert_eq!(
        (
            done["result"]["reason"].as_str(),
            done["result"]["comment"].as_str()
        ),
        (Some("not today"), Some("not today"))
    );
    assert!(
        done["result"].get("edited_input").is_none(),
        "a denial runs nothing"
    );

    // Over MCP, with the rmcp client: `allow_edit` and `approvers` are in
    // the tool's schema, and the decision comes back in a waiting call.
    let client = connect(&app, Some(&agent)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.iter().find(|t| t.name == "request_approval").unwrap();
    let schema = Value::Object((*tool.input_schema).clone());
    assert!(schema["properties"]["allow_edit"].is_object(), "{schema}");
    assert!(schema["properties"]["approvers"].is_object(), "{schema}");
    let refused = call(
        &client,
        "request_approval",
        json!({ "tool": "Bash", "input": {}, "approvers": 2 }),
    )
    .await;
    assert_eq!(error_code(&refused), "too_many_approvers");
    let body = json!({ "tool": "deploy", "input": { "env": "prod" }, "allow_edit": true, "wait_seconds": 30 });
    let person = async {
        let id = wait_pending_approval(&app, &session).await;
        let r = submit_form(
            &app,
            &alice,
            &id,
            &[
                ("decision", "once"),
                ("edited_input", r#"{"env":"staging"}"#),
            ],
        )
        .await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
    };
    let (got, ()) = tokio::join!(call(&client, "request_approval", body), person);
    let got = structured(got);
    assert_eq!(got["status"], "submitted", "{got}");
    assert_eq!(
        got["result"]["edited_input"],
        json!({ "env": "staging" }),
        "{got}"
    );
}

/// The id of the session's pending approval, once there is one.
async fn wait_pending_approval(app: &TestApp, session: &str) -> String {
    let sql = format!(
        "SELECT COUNT(*) FROM widgets WHERE session_id = '{session}' AND kind = 'approval' AND status = 'pending'"
    );
    crate::helpers::chrome::wait_for("a pending approval", || async {
        app.count(&sql).await == 1
    })
    .await;
    sqlx::query_scalar(
        "SELECT id FROM widgets WHERE session_id = $1 AND kind = 'approval' AND status = 'pending'",
    )
    .bind(session)
    .fetch_one(&app.state.db.read)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_hook_gets_the_edited_input_as_updated_input_and_the_comment() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let alice = app.login("alice").await;
    for (event, edit) in [
        ("PreToolUse", true),
        ("PermissionRequest", true),
        ("PreToolUse", false),
    ] {
        let path = format!(
            "/api/v1/sessions/{}/hooks/claude-code?wait=60{}",
            s.session,
            if edit { "&allow_edit=true" } else { "" }
        );
        let body = json!({ "hook_event_name": event, "tool_name": "Bash",
            "tool_input": { "command": "rm -rf build", "description": "clean" }, "tool_use_id": "toolu_1" });
        let hook = app.post_json(&path, &s.agent, &body);
        let person = async {
            let id = wait_pending_approval(&app, &s.session).await;
            let mut fields = vec![("decision", "once"), ("comment", "tmp only")];
            let edited = r#"{"command":"rm -rf build/tmp","description":"clean"}"#;
            if edit {
                fields.push(("edited_input", edited));
            }
            let r = submit_form(&app, &alice, &id, &fields).await;
            assert_eq!(r.status(), StatusCode::SEE_OTHER);
        };
        let (response, ()) = tokio::join!(hook, person);
        assert_eq!(response.status(), StatusCode::OK);
        let out: Value = response.json().await.unwrap();
        let updated = json!({ "command": "rm -rf build/tmp", "description": "clean" });
        match event {
            "PreToolUse" => {
                let o = &out["hookSpecificOutput"];
                assert_eq!(o["permissionDecision"], "allow", "{out}");
                assert_eq!(
                    o["permissionDecisionReason"],
                    "Allowed in widgetd by alice: tmp only"
                );
                match edit {
                    true => assert_eq!(o["updatedInput"], updated, "{out}"),
                    false => assert!(o.get("updatedInput").is_none(), "{out}"),
                }
            }
            _ => assert_eq!(
                out,
                json!({ "hookSpecificOutput": { "hookEventName": "PermissionRequest",
                    "decision": { "behavior": "allow", "updatedInput": updated } } })
            ),
        }
    }
}

#[tokio::test]
async fn always_holds_for_this_session_or_for_all_and_the_settings_page_says_which() {
    always_scopes_on(spawn_app().await).await;
}

/// The same on PostgreSQL, whatever the suite runs on: the rule's session
/// column and its unique index (`COALESCE(session_id, '')`) there.
#[tokio::test]
async fn always_scopes_and_several_approvers_on_postgres() {
    always_scopes_on(spawn_postgres_app().await).await;
    several_approvers_on(spawn_postgres_app().await).await;
}

async fn always_scopes_on(app: TestApp) {
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let (other, other_agent) = app.session(&host).await;
    let alice = app.login("alice").await;
    let ls = json!({ "tool": "Bash", "input": { "command": "ls -la" } });
    let id = created(ask(&app, &agent, &session, "approval", &ls).await).await;
    let r = submit_form(
        &app,
        &alice,
        &id,
        &[("decision", "always"), ("scope", "session")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let done = widget(&app, &agent, &id).await;
    assert_eq!(done["result"]["scope"], "session", "{done}");
    assert_eq!(
        prompt_texts(&app, &host, &session).await,
        [
            "[Agor] User approved Bash for this exact input, now and in future requests of this session. You can run it now."
        ]
    );
    // This session: at once. Another session of alice's: asks again.
    let again: Value = ask(&app, &agent, &session, "approval", &ls)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again["status"], "already_present", "{again}");
    let elsewhere = created(ask(&app, &other_agent, &other, "approval", &ls).await).await;
    let page = app.page(&alice, "/settings/approvals").await;
    assert!(
        page.contains(&format!(
            "this session only: <a href=\"/sessions/{session}\">"
        )),
        "{page}"
    );
    let page = app.page(&alice, &format!("/sessions/{session}")).await;
    assert!(page.contains("Always approved (this session only) by alice"));

    // All sessions: the other session's request is covered too.
    let r = submit_form(
        &app,
        &alice,
        &elsewhere,
        &[("decision", "always"), ("scope", "all")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (third, third_agent) = app.session(&host).await;
    let covered: Value = ask(&app, &third_agent, &third, "approval", &ls)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(covered["status"], "already_present", "{covered}");
    let page = app.page(&alice, "/settings/approvals").await;
    assert!(page.contains("all my sessions"), "{page}");
    let r = submit_form(
        &app,
        &alice,
        &created(
            ask(
                &app,
                &agent,
                &session,
                "approval",
                &json!({ "tool": "x", "input": {} }),
            )
            .await,
        )
        .await,
        &[("decision", "always"), ("scope", "forever")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn several_approvers_each_audited_and_the_first_denial_ends_it() {
    several_approvers_on(spawn_app().await).await;
}

async fn several_approvers_on(app: TestApp) {
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    app.user("bob", Role::Member).await;
    app.user("carol", Role::Member).await;
    let deploy = json!({ "tool": "deploy", "input": { "env": "prod" }, "approvers": 2 });
    let r = ask(&app, &agent, &session, "approval", &deploy).await;
    assert_eq!(
        code_of(r).await,
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "too_many_approvers".into()
        )
    );
    let r = ask(
        &app,
        &agent,
        &session,
        "approval",
        &json!({ "tool": "deploy", "input": {}, "approvers": 9 }),
    )
    .await;
    assert_eq!(
        code_of(r).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_approvers".into())
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM widgets").await, 0);
    let r = app
        .client
        .put(format!("{}/api/v1/sessions/{session}/sharing", app.url))
        .bearer_auth(&host)
        .json(&json!({ "grants": { "bob": "prompt", "carol": "view" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    let id = created(ask(&app, &agent, &session, "approval", &deploy).await).await;
    let (alice, bob) = (app.login("alice").await, app.login("bob").await);
    let r = submit_form(&app, &alice, &id, &[("decision", "always")]).await;
    assert_eq!(
        r.status(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "always needs one approver"
    );
    let r = submit_form(&app, &alice, &id, &[("decision", "once")]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let half = widget(&app, &agent, &id).await;
    assert_eq!(half["status"], "pending", "{half}");
    assert!(
        prompt_texts(&app, &host, &session).await.is_empty(),
        "no prompt until it is decided"
    );
    let page = app.page(&bob, &format!("/sessions/{session}")).await;
    assert!(
        page.contains("1 of 2 approved (alice): needs 2 different people"),
        "the card counts"
    );
    let r = app
        .post_json_as(
            &alice,
            &format!("/widgets/{id}/submit"),
            &json!({ "decision": "once" }),
        )
        .await;
    assert_eq!(
        code_of(r).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "already_approved".into())
    );
    let r = submit_form(
        &app,
        &bob,
        &id,
        &[("decision", "once"), ("comment", "looks fine")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let done = widget(&app, &agent, &id).await;
    assert_eq!(done["status"], "submitted");
    assert_eq!(
        done["result"]["approvers"],
        json!(["alice", "bob"]),
        "{done}"
    );
    assert_eq!(done["result"]["answered_by"], "bob");
    assert_eq!(
        audit_details(&app, "widget.vote", &id).await,
        ["decision=once; approvals=1/2"]
    );
    assert_eq!(
        audit_details(&app, "widget.submit", &id).await,
        ["decision=once"]
    );
    assert_eq!(
        prompt_texts(&app, &host, &session).await,
        [
            "[Agor] User approved deploy once. You can run it now. Approvers' comments: \"bob: looks fine\""
        ]
    );
    let page = app.page(&alice, &format!("/sessions/{session}")).await;
    assert!(
        page.contains("(approved by alice and bob)"),
        "the badge names both"
    );

    // The first denial ends it at once; a viewer cannot vote.
    let id = created(ask(&app, &agent, &session, "approval", &deploy).await).await;
    let carol = app.login("carol").await;
    let r = submit_form(&app, &carol, &id, &[("decision", "once")]).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = submit_form(&app, &bob, &id, &[("decision", "once")]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = submit_form(
        &app,
        &alice,
        &id,
        &[("decision", "deny"), ("reason", "not now")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let done = widget(&app, &agent, &id).await;
    assert_eq!(
        (done["status"].as_str(), done["result"]["decision"].as_str()),
        (Some("submitted"), Some("deny"))
    );
    assert_eq!(
        audit_details(&app, "widget.vote", &id).await,
        ["decision=once; approvals=1/2"]
    );
}
