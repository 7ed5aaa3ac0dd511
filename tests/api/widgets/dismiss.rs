//! Dismissing with a note, for every kind: the note reaches the agent in
//! the dismissal prompt and the result, the badge shows it, and a bad note
//! (too long, control characters, one of the creator's stored values) is
//! refused with a stable code, never echoed, changing nothing.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::chrome::Chrome;
use crate::helpers::{Browser, Scene, TestApp, assert_error, canary, scene, spawn_app};
use crate::helpers::{ask, created, prompt_of, widget};

/// A pending widget of each kind: (REST path, body, its dismissal prompt
/// without a note).
fn one_of_each() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        (
            "env-vars",
            json!({ "names": ["SLACK_TOKEN"], "reason": "to post" }),
            "[Agor] User dismissed the request for SLACK_TOKEN. Do not re-request immediately — ask whether to proceed without, or move on to other work.",
        ),
        (
            "ask-user",
            json!({ "questions": [{ "question": "Which?", "header": "Pick",
                "options": [{ "label": "a" }, { "label": "b" }] }] }),
            "[Agor] User dismissed your question without answering. Do not ask again immediately — decide how to proceed, or move on to other work.",
        ),
        (
            "ask",
            json!({ "question": "Deploy now?" }),
            "[Agor] User dismissed your question without answering. Do not ask again immediately — decide how to proceed, or move on to other work.",
        ),
        (
            "approval",
            json!({ "tool": "Bash", "input": { "command": "ls" } }),
            "[Agor] User dismissed the request to run Bash; it was not approved. Do not run it; ask the user how to proceed.",
        ),
    ]
}

async fn dismiss_json(app: &TestApp, browser: &Browser, id: &str, body: &Value) -> Response {
    app.post_json_as(browser, &format!("/widgets/{id}/dismiss"), body)
        .await
}

#[tokio::test]
async fn a_dismissal_note_reaches_the_prompt_and_the_result_of_every_kind() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let note = "Use the \"staging\" key instead,\r\nand ask me tomorrow";
    let as_sent = "Use the \"staging\" key instead,\nand ask me tomorrow";
    for (n, (path, body, prompt)) in one_of_each().into_iter().enumerate() {
        // By form and by JSON, with a note; and without one.
        let by_form = created(ask(&app, &agent, &session, path, &body).await).await;
        let r = app
            .post_form(
                &browser,
                &format!("/widgets/{by_form}/dismiss"),
                &[("note", note)],
            )
            .await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{path}");
        let by_json = created(ask(&app, &agent, &session, path, &body).await).await;
        let r = dismiss_json(&app, &browser, &by_json, &json!({ "note": note })).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let view: Value = r.json().await.unwrap();
        assert_eq!(view["result"]["note"], as_sent, "{path}: {view}");
        let plain = created(ask(&app, &agent, &session, path, &body).await).await;
        let r = dismiss_json(&app, &browser, &plain, &json!({})).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");

        let noted = format!(
            r#"{prompt} User's note: "Use the \"staging\" key instead,\nand ask me tomorrow""#
        );
        for id in [&by_form, &by_json] {
            let state = widget(&app, &agent, id).await;
            assert_eq!(state["status"], "dismissed", "{path}");
            assert_eq!(state["result"]["note"], as_sent, "{path}: {state}");
            assert_eq!(state["result"]["dismissed_by"], "alice", "{path}");
            assert_eq!(prompt_of(&app, &host, &session, id).await, noted, "{path}");
        }
        let state = widget(&app, &agent, &plain).await;
        assert!(state["result"].get("note").is_none(), "{path}: {state}");
        assert_eq!(
            prompt_of(&app, &host, &session, &plain).await,
            prompt,
            "{path}"
        );
        assert_eq!(
            app.count(
                "SELECT count(*) FROM events WHERE kind = 'widget:resolved' AND payload LIKE '%ask me tomorrow%'"
            )
            .await,
            2 * (n as i64 + 1),
            "the event carries the note"
        );
    }
    // The card's badge shows it.
    let page = app.page(&browser, &format!("/sessions/{session}")).await;
    assert!(
        page.contains("dismissed by alice <time") && page.contains("ask me tomorrow"),
        "{page}"
    );
}

#[tokio::test]
async fn bad_notes_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let secret = canary("note");
    let r = app
        .put_env(
            &host,
            "PAYMENT_KEY",
            &json!({ "value": secret, "scope": "global" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let browser = app.login("alice").await;
    let (path, body, _) = &one_of_each()[1];
    let id = created(ask(&app, &agent, &session, path, body).await).await;
    let holding = format!("the key is {secret}, use it");
    let too_long = "x".repeat(501);
    for (note, code) in [
        (holding.as_str(), "answer_contains_secret"),
        (too_long.as_str(), "note_too_long"),
        ("beep\u{7}", "invalid_note"),
    ] {
        let r = dismiss_json(&app, &browser, &id, &json!({ "note": note })).await;
        let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some(note)).await;
        assert!(!message.contains(&secret), "{message}");
        // The form shows the transcript again with the reason beside the card.
        let r = app
            .post_form(
                &browser,
                &format!("/widgets/{id}/dismiss"),
                &[("note", note)],
            )
            .await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let page = r.text().await.unwrap();
        assert!(page.contains(&format!(r#"data-code="{code}""#)), "{code}");
        assert!(!page.contains(&secret), "the refusal repeats the value");
    }
    let r = dismiss_json(&app, &browser, &id, &json!({ "reason": "x" })).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");
    assert!(app.prompts(&host, &session, 0).await.is_empty());
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'widget.dismiss'")
            .await,
        0
    );
}

#[tokio::test]
async fn a_note_typed_in_the_browser_goes_with_the_dismissal() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let (path, body, prompt) = &one_of_each()[0];
    let id = created(ask(&app, &agent, &session, path, body).await).await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!("{card} .dismiss-note summary"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{id}-note"))
        .await
        .send_keys("not this week")
        .await
        .unwrap();
    chrome
        .css(&format!("{card} button[form=\"dismiss-{id}\"]"))
        .await
        .click()
        .await
        .unwrap();
    let badge = chrome.wait_css(&format!("{card} .badge-dismissed")).await;
    let text = badge.text().await.unwrap();
    assert!(text.ends_with(": not this week"), "{text}");
    assert_eq!(
        prompt_of(&app, &host, &session, &id).await,
        format!(r#"{prompt} User's note: "not this week""#)
    );
    chrome.close().await;
}
