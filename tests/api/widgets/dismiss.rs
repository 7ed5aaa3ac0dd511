//! Dismissing with a note, for every kind: the note reaches the agent in
//! the dismissal prompt and the result, the badge shows it, and a bad note
//! (too long, control characters, one of the creator's stored values) is
//! refused with a stable code, never echoed, changing nothing.
//!
//! The tests that drive Chromium are in `tests/slow/widgets/dismiss.rs`.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::samples::one_of_each;
use crate::helpers::{
    Browser, Scene, TestApp, ask, assert_error, canary, created, prompt_of, scene, spawn_app,
    widget,
};

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
