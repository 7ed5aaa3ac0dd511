//! `request_approval`: Deny / Once / Always, the standing rules that
//! "Always" leaves, and revoking them.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Scene, TestApp, assert_error, scene, spawn_app};

async fn request(app: &TestApp, agent: &str, session: &str, body: Value) -> Value {
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{session}/widgets/approval"),
            agent,
            &body,
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

async fn last_prompt(app: &TestApp, host: &str, session: &str) -> String {
    let prompts = app.prompts(host, session, 0).await;
    prompts.last().expect("a prompt is queued")["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn once_approves_one_request_and_deny_sends_the_reason_back() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let rm = json!({ "tool": "Bash", "input": { "command": "rm -rf build" }, "reason": "clean the build" });
    let first = request(&app, &agent, &session, rm.clone()).await;
    assert_eq!(first["status"], "pending");
    let page = app
        .client
        .get(format!("{}/sessions/{session}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    let page = page.text().await.unwrap();
    assert!(
        page.contains("<span aria-hidden=\"true\">$ </span>rm -rf build")
            && page.contains("clean the build"),
        "{page}"
    );
    let id = first["widget_id"].as_str().unwrap();
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "once")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] User approved Bash once. You can run it now."
    );

    // Once is once: the same request asks again, and this time is denied.
    let second = request(&app, &agent, &session, rm).await;
    assert_eq!(second["status"], "pending");
    let id = second["widget_id"].as_str().unwrap();
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "deny"), ("reason", "not on Fridays")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] User denied Bash. Reason: not on Fridays. Do not run it; ask the user how to proceed."
    );
    let view: Value = app
        .get(&format!("/api/v1/widgets/{id}"), &agent)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["result"]["decision"], "deny");
    assert_eq!(view["result"]["reason"], "not on Fridays");
    let page = app
        .client
        .get(format!("{}/sessions/{session}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert!(page.text().await.unwrap().contains("Denied by alice"));
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "once")],
        )
        .await;
    assert_eq!(
        r.status(),
        StatusCode::CONFLICT,
        "a second answer is refused"
    );
}

#[tokio::test]
async fn always_approves_identical_requests_until_revoked() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let bob = scene(&app, "bob").await;
    let browser = app.login("alice").await;
    let deploy = json!({ "tool": "deploy", "input": { "env": "staging", "replicas": 2 } });
    let first = request(&app, &agent, &session, deploy.clone()).await;
    let id = first["widget_id"].as_str().unwrap();
    app.post_form(
        &browser,
        &format!("/widgets/{id}/submit"),
        &[("decision", "always")],
    )
    .await;
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] User approved deploy for this exact input, now and in future requests. You can run it now."
    );

    // The same input, keys in another order: approved at once.
    let again = request(
        &app,
        &agent,
        &session,
        json!({ "tool": "deploy", "input": { "replicas": 2, "env": "staging" } }),
    )
    .await;
    assert_eq!(again["status"], "already_present");
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] deploy is pre-approved for this exact input (always allowed). You can run it now."
    );
    // Another input, or another user's agent, still asks.
    let other_input = request(
        &app,
        &agent,
        &session,
        json!({ "tool": "deploy", "input": { "env": "prod", "replicas": 2 } }),
    )
    .await;
    assert_eq!(other_input["status"], "pending");
    let bobs = request(&app, &bob.agent, &bob.session, deploy.clone()).await;
    assert_eq!(bobs["status"], "pending");

    // Visible and revocable on the settings page.
    let page = app
        .client
        .get(format!("{}/settings/approvals", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    let page = page.text().await.unwrap();
    let rule_id = page
        .split("id=\"rule-")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the rule is listed")
        .to_owned();
    assert!(
        page.contains("deploy") && page.contains("staging"),
        "{page}"
    );
    let r = app
        .post_form(&browser, "/settings/approvals/revoke", &[("id", &rule_id)])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let page = app
        .client
        .get(format!("{}/settings/approvals", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert!(page.text().await.unwrap().contains("id=\"no-rules\""));
    let after = request(&app, &agent, &session, deploy).await;
    assert_eq!(
        after["status"], "pending",
        "after revoking, the request asks again"
    );
    let revoked = app
        .count("SELECT count(*) FROM audit_log WHERE action = 'approval.revoke'")
        .await;
    assert_eq!(revoked, 1);
}

#[tokio::test]
async fn inputs_are_shown_readably_and_bad_requests_have_codes() {
    let app = spawn_app().await;
    let Scene {
        host: _,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    request(
        &app,
        &agent,
        &session,
        json!({ "tool": "write_file", "input": { "path": "/etc/hosts", "content": "x" } }),
    )
    .await;
    request(
        &app,
        &agent,
        &session,
        json!({ "tool": "http", "input": { "url": "https://example.com", "method": "POST" } }),
    )
    .await;
    let page = app
        .client
        .get(format!("{}/sessions/{session}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    let page = page.text().await.unwrap();
    assert!(page.contains("Path: <code>/etc/hosts</code>"), "{page}");
    let json_block = page
        .split("<pre class=\"json\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_default();
    assert!(
        json_block.starts_with("{\n  ")
            && json_block.contains("method")
            && json_block.contains("https://example.com"),
        "{page}"
    );

    let path = format!("/api/v1/sessions/{session}/widgets/approval");
    let cases = [
        (json!({ "tool": " ", "input": {} }), "invalid_tool"),
        (
            json!({ "tool": "t", "input": { "x": "y".repeat(17_000) } }),
            "input_too_large",
        ),
        (
            json!({ "tool": "t", "input": {}, "wait_seconds": 301 }),
            "wait_too_long",
        ),
    ];
    for (body, code) in cases {
        assert_error(
            app.post_json(&path, &agent, &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
            None,
        )
        .await;
    }
    let pending = request(&app, &agent, &session, json!({ "tool": "t", "input": {} })).await;
    let id = pending["widget_id"].as_str().unwrap();
    let r = app
        .client
        .post(format!("{}/widgets/{id}/submit", app.url))
        .header("cookie", &browser.cookie)
        .header("x-csrf-token", &browser.csrf)
        .json(&json!({ "decision": "maybe" }))
        .send()
        .await
        .unwrap();
    assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_decision",
        None,
    )
    .await;
}
