//! `request_approval`: Deny / Once / Always, the standing rules that
//! "Always" leaves, and revoking them.
//!
//! The tests that drive Chromium are in `tests/slow/widgets/approval.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Scene, TestApp, assert_error, scene, spawn_app};

async fn request(app: &TestApp, agent: &str, session: &str, body: Value) -> Value {
    let r = ask(app, agent, session, "approval", &body).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
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
        .skip(1)
        .filter_map(|rest| rest.split("</pre>").next())
        .find(|block| block.contains("method"))
        .unwrap_or_default();
    // A path is shown on its own, and the rest of the input beside it:
    // "Always" would cover all of it.
    assert!(
        page.contains("With:") && page.contains("&#34;content&#34;: &#34;x&#34;"),
        "{page}"
    );
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

// ---------------------------------------------------------------------------
// Over MCP and in a real browser; denial after reload; unknown widget kinds.
// ---------------------------------------------------------------------------

use crate::helpers::ask;
use crate::helpers::last_prompt;

/// The `<section>` of widget `id` in a transcript page.
fn card_of<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!(r#"id="w-{id}""#))
        .unwrap_or_else(|| panic!("no card for {id} in {page}"));
    let end = page[start..].find("</section>").unwrap() + start;
    &page[start..end]
}

#[tokio::test]
async fn a_denied_request_shows_the_reason_after_reload() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let created = request(
        &app,
        &agent,
        &session,
        json!({ "tool": "Bash", "input": { "command": "cargo publish" }, "reason": "release" }),
    )
    .await;
    assert_eq!(created["status"], "pending");
    let id = created["widget_id"].as_str().unwrap();
    let page = app.page(&browser, &format!("/sessions/{session}")).await;
    assert!(
        card_of(&page, id).contains(&format!(r#"id="w-{id}-reason" name="reason""#)),
        "{page}"
    );

    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("reason", "not today"), ("decision", "deny")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        format!("/sessions/{session}#w-{id}")
    );

    // Loaded twice (a reload): the denial and its reason stay.
    for load in 0..2 {
        let page = app.page(&browser, &format!("/sessions/{session}")).await;
        let card = card_of(&page, id);
        assert!(
            card.contains(r#"data-status="submitted""#),
            "{load}: {card}"
        );
        assert!(!card.contains("<form"), "{load}: {card}");
        let badge = card
            .split(r#"<p class="badge badge-denied">"#)
            .nth(1)
            .and_then(|rest| rest.split("</p>").next())
            .unwrap_or_else(|| panic!("no denied badge on load {load}: {card}"));
        assert!(badge.contains("Denied by alice"), "{load}: {badge}");
        assert!(badge.contains("not today"), "{load}: {badge}");
        assert!(
            !card.contains("badge-submitted"),
            "a denial is not shown as approved: {card}"
        );
    }
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] User denied Bash. Reason: not today. Do not run it; ask the user how to proceed."
    );
    let view: Value = app
        .get(&format!("/api/v1/widgets/{id}"), &agent)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["result"]["decision"], "deny", "{view}");
    assert_eq!(view["result"]["reason"], "not today", "{view}");
}

#[tokio::test]
async fn an_unknown_widget_kind_renders_as_an_unsupported_card() {
    let app = spawn_app().await;
    let Scene {
        host: _,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    // A widget this version knows, created first…
    let env = app.pending_widget(&agent, &session, &["ANY_KEY"]).await;

    // …then one written by some newer version: a kind this one does not know.
    let future = uuid::Uuid::new_v4().to_string();
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let mut tx = app.state.db.write.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO widgets (id, session_id, kind, params, status, created_at, expires_at)
         VALUES ($1, $2, 'future_widget', '{}', 'pending', $3, $4)",
    )
    .bind(&future)
    .bind(&session)
    .bind(now)
    .bind(now + 3_600_000)
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO messages (session_id, kind, role, widget_id, created_at) VALUES ($1, 'widget', 'agent', $2, $3)",
    )
    .bind(&session)
    .bind(&future)
    .bind(now)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let page = app.page(&browser, &format!("/sessions/{session}")).await;
    let unknown = card_of(&page, &future);
    assert!(unknown.contains("<h2>Unsupported widget</h2>"), "{unknown}");
    assert!(unknown.contains("<code>future_widget</code>"), "{unknown}");
    assert!(
        page.contains(&format!(
            r#"class="card widget kind-future_widget status-pending" id="w-{future}""#
        )),
        "{page}"
    );
    assert!(!unknown.contains("<form"), "{unknown}");
    let known = card_of(&page, &env);
    assert!(known.contains("The agent needs ANY_KEY"), "{known}");
    assert!(known.contains(r#"name="value.ANY_KEY""#), "{known}");
    assert!(
        page.find(&format!(r#"id="w-{env}""#)) < page.find(&format!(r#"id="w-{future}""#)),
        "transcript order is kept"
    );

    // Answering it is refused, as a form and as JSON, and changes nothing.
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{future}/submit"),
            &[("decision", "once")],
        )
        .await;
    assert!(r.status().is_client_error(), "{}", r.status());
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let refused = r.text().await.unwrap();
    assert!(
        refused.contains("Unsupported widget"),
        "the refusal shows the transcript: {refused}"
    );
    assert!(
        refused.contains(r#"data-code="unsupported_widget""#),
        "the refused form answer carries its code (docs/api.md: `data-code`): {}",
        card_of(&refused, &future)
    );
    let r = app
        .client
        .post(format!("{}/widgets/{future}/submit", app.url))
        .header("cookie", &browser.cookie)
        .header("x-csrf-token", &browser.csrf)
        .json(&json!({ "decision": "once" }))
        .send()
        .await
        .unwrap();
    assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unsupported_widget",
        None,
    )
    .await;

    // The page still loads, both cards still there.
    let page = app.page(&browser, &format!("/sessions/{session}")).await;
    assert!(card_of(&page, &future).contains("Unsupported widget"));
    assert!(card_of(&page, &env).contains(r#"name="value.ANY_KEY""#));

    // The agent can still read it back.
    let r = app.get(&format!("/api/v1/widgets/{future}"), &agent).await;
    assert_eq!(r.status(), StatusCode::OK);
    let view: Value = r.json().await.unwrap();
    assert_eq!(view["kind"], "future_widget", "{view}");
    assert_eq!(view["status"], "pending", "{view}");
    assert_eq!(view["params"], json!({}), "{view}");
    assert_eq!(view["session_id"], session.as_str(), "{view}");
}

#[tokio::test]
async fn a_widget_of_an_unknown_kind_still_expires_without_holding_others_up() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let known = app.pending_widget(&agent, &session, &["KNOWN_KEY"]).await;
    let future = uuid::Uuid::new_v4().to_string();
    sqlx::query(
        "INSERT INTO widgets (id, session_id, kind, params, status, created_at, expires_at)
         VALUES ($1, $2, 'future_widget', 'not even json', 'pending', 0, 0)",
    )
    .bind(&future)
    .bind(&session)
    .execute(&app.state.db.write)
    .await
    .unwrap();
    sqlx::query("UPDATE widgets SET expires_at = 1 WHERE id = $1")
        .bind(&known)
        .execute(&app.state.db.write)
        .await
        .unwrap();

    assert_eq!(
        widgetd_domain::widgets::expire_due(&app.state)
            .await
            .unwrap(),
        2
    );
    let statuses: Vec<String> =
        sqlx::query_scalar("SELECT status FROM widgets ORDER BY expires_at")
            .fetch_all(&app.state.db.read)
            .await
            .unwrap();
    assert_eq!(statuses, ["expired", "expired"]);
    let texts: Vec<String> = app
        .prompts(&host, &session, 0)
        .await
        .iter()
        .map(|p| p["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts.len(), 2);
    assert!(
        texts
            .iter()
            .any(|t| t == "[Agor] A request ended without an answer (expired); nothing was given."),
        "{texts:?}"
    );
}

/// "Always allow commands like this": a pattern rule covers later plain
/// commands it matches (`git status *` covers `git status -sb`), never one
/// with shell metacharacters, and is listed and revocable like any rule.
#[tokio::test]
async fn a_command_pattern_rule_covers_matching_plain_commands_only() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let bash = |command: &str| json!({ "tool": "Bash", "input": { "command": command } });
    let first = request(&app, &agent, &session, bash("git status --short")).await;
    let id = first["widget_id"].as_str().unwrap().to_owned();

    let page = app
        .client
        .get(format!("{}/sessions/{session}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"name="pattern" value="git status *""#),
        "{page}"
    );

    // A pattern that does not cover the request is refused; nothing changes.
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "always_like"), ("pattern", "git log *")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.count("SELECT count(*) FROM approval_rules").await, 0);

    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "always_like"), ("pattern", "git status *")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let view: Value = app
        .get(&format!("/api/v1/widgets/{id}"), &agent)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["result"]["decision"], "always");
    assert_eq!(view["result"]["pattern"], "git status *");
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] User approved Bash for commands like `git status *`, now and in future requests. You can run it now."
    );

    let covered = request(&app, &agent, &session, bash("git status -sb")).await;
    assert_eq!(covered["status"], "already_present", "{covered}");
    assert_eq!(
        last_prompt(&app, &host, &session).await,
        "[Agor] Bash is pre-approved for commands like `git status *` (always allowed). You can run it now."
    );
    for hostile in [
        "git status; rm -rf ~",
        "git status $(id)",
        "git status | sh",
        "git log",
    ] {
        let asked = request(&app, &agent, &session, bash(hostile)).await;
        assert_eq!(asked["status"], "pending", "{hostile} must ask the person");
    }

    let page = app
        .client
        .get(format!("{}/settings/approvals", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("commands like</span> <code class=\"small\">git status *</code>"),
        "{page}"
    );
    let rule_id = page
        .split("id=\"rule-")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let r = app
        .post_form(&browser, "/settings/approvals/revoke", &[("id", &rule_id)])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let after = request(&app, &agent, &session, bash("git status -sb")).await;
    assert_eq!(after["status"], "pending", "after revoking, it asks again");
}

/// Invisible and direction-changing characters in what is to be approved
/// are shown, escaped, so the command on the card is the command that runs.
#[tokio::test]
async fn hidden_characters_in_an_approval_are_shown() {
    let app = spawn_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let command = "cat notes\u{202E}txt.sh\u{202C} && rm\u{200B} -rf tmp";
    request(
        &app,
        &agent,
        &session,
        json!({ "tool": "Bash\u{2066}", "input": { "command": command } }),
    )
    .await;
    let page = app
        .client
        .get(format!("{}/sessions/{session}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("cat notes⟨U+202E⟩txt.sh⟨U+202C⟩ &#38;&#38; rm⟨U+200B⟩ -rf tmp"),
        "{page}"
    );
    assert!(page.contains("Bash⟨U+2066⟩"), "{page}");
    for hidden in ['\u{202E}', '\u{202C}', '\u{200B}', '\u{2066}'] {
        assert!(!page.contains(hidden), "{:?} reached the page", hidden);
    }
}

/// The page a person answers on, as text.
async fn session_page(app: &TestApp, browser: &crate::helpers::Browser, session: &str) -> String {
    app.client
        .get(format!("{}/sessions/{session}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Claude Code writes a fresh `description` on every Bash call: an
/// "Always" rule ignores it, and only it. A flag that changes what runs,
/// an extra field, an `env` — anything else — must equal what was approved.
#[tokio::test]
async fn an_always_rule_ignores_the_description_and_nothing_else() {
    let app = spawn_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let bash = |input: Value| json!({ "tool": "Bash", "input": input });
    let first = request(
        &app,
        &agent,
        &session,
        bash(json!({ "command": "npm test", "description": "Run the tests" })),
    )
    .await;
    let id = first["widget_id"].as_str().unwrap();
    let page = session_page(&app, &browser, &session).await;
    assert!(
        page.contains("holds to everything shown except description"),
        "{page}"
    );
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "always")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    for same in [
        json!({ "command": "npm test", "description": "Run the unit tests again" }),
        json!({ "command": "npm test" }),
        json!({ "command": "npm test", "run_in_background": false }),
    ] {
        let again = request(&app, &agent, &session, bash(same.clone())).await;
        assert_eq!(again["status"], "already_present", "{same}");
    }
    for other in [
        json!({ "command": "npm test", "dangerouslyDisableSandbox": true }),
        json!({ "command": "npm test", "run_in_background": true }),
        json!({ "command": "npm test", "cmd": "rm -rf ~" }),
        json!({ "command": "npm test", "env": { "GIT_PAGER": "sh -c id" } }),
        json!({ "command": "npm test", "timeout": 600000, "description": "Run the tests" }),
    ] {
        let asked = request(&app, &agent, &session, bash(other.clone())).await;
        assert_eq!(asked["status"], "pending", "{other} must ask the person");
    }
    // Another tool of the same name in another agent's spelling (an MCP
    // tool) holds to its whole input: its description counts.
    let mcp = |d: &str| json!({ "tool": "mcp__shell__run", "input": { "command": "npm test", "description": d } });
    let first = request(&app, &agent, &session, mcp("one")).await;
    let id = first["widget_id"].as_str().unwrap();
    app.post_form(
        &browser,
        &format!("/widgets/{id}/submit"),
        &[("decision", "always")],
    )
    .await;
    assert_eq!(
        request(&app, &agent, &session, mcp("one")).await["status"],
        "already_present"
    );
    assert_eq!(
        request(&app, &agent, &session, mcp("two")).await["status"],
        "pending"
    );
}

/// Asks to run `command`, answers "Always allow commands like" `pattern`;
/// returns the pattern the card offered.
async fn approve_like(
    app: &TestApp,
    browser: &crate::helpers::Browser,
    session: &str,
    agent: &str,
    command: &str,
    pattern: &str,
) -> String {
    let bash = json!({ "tool": "Bash", "input": { "command": command } });
    let first = request(app, agent, session, bash).await;
    let id = first["widget_id"].as_str().unwrap().to_owned();
    let page = session_page(app, browser, session).await;
    let offered = card_of(&page, &id)
        .split(r#"name="pattern" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a pattern is offered")
        .to_owned();
    let r = app
        .post_form(
            browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "always_like"), ("pattern", pattern)],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{pattern}");
    offered
}

/// A pattern rule: the pre-filled pattern is one the check accepts (also
/// for a command with no arguments); every field but the command and the
/// description must equal what was approved; a pattern without `*` is the
/// command itself; `*` never spans a `/` or a `..`.
#[tokio::test]
async fn a_pattern_rule_covers_no_more_than_it_shows() {
    let app = spawn_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let bash = |input: Value| json!({ "tool": "Bash", "input": input });
    // `git status` has no arguments: the offered `git status *` covers it.
    let offered = approve_like(
        &app,
        &browser,
        &session,
        &agent,
        "git status",
        "git status *",
    )
    .await;
    assert_eq!(offered, "git status *");
    let covered = request(
        &app,
        &agent,
        &session,
        bash(json!({ "command": "git status -sb", "description": "Show the status" })),
    )
    .await;
    assert_eq!(covered["status"], "already_present");
    for other in [
        json!({ "command": "git status x", "cmd": "rm -rf ~" }),
        json!({ "command": "git status", "dangerouslyDisableSandbox": true }),
        json!({ "command": "git status", "env": { "GIT_PAGER": "sh -c id" } }),
    ] {
        let asked = request(&app, &agent, &session, bash(other.clone())).await;
        assert_eq!(asked["status"], "pending", "{other} must ask the person");
    }

    approve_like(
        &app,
        &browser,
        &session,
        &agent,
        "rm -rf build",
        "rm -rf build",
    )
    .await;
    let wider = request(
        &app,
        &agent,
        &session,
        bash(json!({ "command": "rm -rf build / /home" })),
    )
    .await;
    assert_eq!(wider["status"], "pending", "no implicit prefix");

    approve_like(
        &app,
        &browser,
        &session,
        &agent,
        "cat docs/guide.md",
        "cat docs/*",
    )
    .await;
    let inside = request(
        &app,
        &agent,
        &session,
        bash(json!({ "command": "cat docs/intro.md" })),
    )
    .await;
    assert_eq!(inside["status"], "already_present");
    for outside in ["cat docs/../../../etc/shadow", "cat docs/a /etc/shadow"] {
        let asked = request(&app, &agent, &session, bash(json!({ "command": outside }))).await;
        assert_eq!(asked["status"], "pending", "{outside} must ask the person");
    }
}
