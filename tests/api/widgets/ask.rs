//! Question widgets (`ask_user` and the simple `ask` widgets) end to end:
//! asked over MCP and REST, answered in the form (plain HTTP and a real
//! headless Chromium), the answer in the resume prompt or through a waiting
//! call, validation codes, and the prompts of unanswered questions.
//!
//! The tests that drive Chromium are in `tests/slow/widgets/ask.rs`.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::widgets;

use crate::helpers::mcp::{call, connect, error_code};
use crate::helpers::samples::{ANSWERED, question, two_questions};
use crate::helpers::wait::{eventually, until_waiting};
use crate::helpers::{
    Browser, Scene, TestApp, ask, assert_error, card, created_alone, prompt_of, prompt_texts,
    scene, spawn_app, submit_json, widget,
};

/// `two_questions` with `wait_seconds`.
fn two_questions_waiting(wait: u64) -> Value {
    let mut body = two_questions();
    body["wait_seconds"] = json!(wait);
    body
}

/// The transcript page as `browser` sees it.
async fn transcript_html(app: &TestApp, browser: &Browser, session: &str) -> String {
    let r = app
        .client
        .get(format!("{}/sessions/{session}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.text().await.unwrap()
}

/// Waits until the (only) widget row exists; returns its id.
/// Waits (at most 10 s) until the widget's prompt is acknowledged, which
/// happens just after the response carrying its answer was sent.
async fn acked_eventually(app: &TestApp, widget: &str) {
    let sql = format!(
        "SELECT count(*) FROM prompts WHERE widget_id = '{widget}' AND acked_at IS NOT NULL"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.count(&sql).await != 1 {
        assert!(
            Instant::now() < deadline,
            "the prompt of {widget} was never acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) async fn first_widget_id(app: &TestApp) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let id: Option<String> = sqlx::query_scalar("SELECT id FROM widgets")
            .fetch_optional(&app.state.db.read)
            .await
            .unwrap();
        if let Some(id) = id {
            return id;
        }
        assert!(Instant::now() < deadline, "the widget was never created");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn ask_user_over_mcp_then_answered_in_a_form() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let client = connect(&app, Some(&agent))
        .await
        .expect("the agent connects");

    let result = call(&client, "ask_user", two_questions()).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let returned = result.structured_content.expect("structured content");
    assert_eq!(returned["status"], "pending");
    assert_eq!(returned.as_object().unwrap().len(), 2, "{returned}");
    let id = returned["widget_id"].as_str().unwrap().to_owned();

    let stored = widget(&app, &agent, &id).await;
    assert_eq!(stored["kind"], "ask_user");
    assert_eq!(stored["status"], "pending");
    assert_eq!(stored["session_id"], session.as_str());
    let mut asked = two_questions()["questions"].clone();
    asked[0]["multi_select"] = json!(false);
    assert_eq!(stored["params"]["questions"], asked);
    assert!(app.prompts(&host, &session, 0).await.is_empty());

    let browser = app.login("alice").await;
    let page = transcript_html(&app, &browser, &session).await;
    let pending = card(&page, &id);
    for shown in [
        r#"<span class="chip">Database</span>"#,
        r#"<span class="chip">Regions</span>"#,
        &format!(r#"id="w-{id}-q0-o1" type="radio" name="answer.0" value="SQLite""#),
        &format!(r#"id="w-{id}-q1-o2" type="checkbox" name="answer.1" value="APAC""#),
        &format!(r#"id="w-{id}-q0-other" name="other.0""#),
        "One file next to the app",
        "<strong>DATABASE_URL</strong>",
        "needs-choice",
    ] {
        assert!(pending.contains(shown), "{shown} missing from {pending}");
    }

    let submit = format!("/widgets/{id}/submit");
    let r = app
        .post_form(
            &browser,
            &submit,
            &[
                ("answer.0", "SQLite"),
                ("other.0", ""),
                ("answer.1", "EU"),
                ("answer.1", "APAC"),
                ("other.1", ""),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        format!("/sessions/{session}#w-{id}")
    );

    let prompts = app.prompts(&host, &session, 0).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0]["widget_id"], id.as_str());
    assert_eq!(prompts[0]["text"], ANSWERED);

    let answered = widget(&app, &agent, &id).await;
    assert_eq!(answered["status"], "submitted");
    assert_eq!(
        answered["result"],
        json!({
            "answers": { "Which database?": "SQLite", "Regions?": ["EU", "APAC"] },
            "answered_by": "alice",
        })
    );

    // The page after the redirect: answers and the badge, no form left.
    let page = transcript_html(&app, &browser, &session).await;
    let done = card(&page, &id);
    assert!(done.contains(r#"data-status="submitted""#), "{done}");
    assert!(
        done.contains(
            r#"<dl class="answers"><dt>Regions?</dt><dd>EU, APAC</dd><dt>Which database?</dt><dd>SQLite</dd></dl>"#
        ),
        "{done}"
    );
    assert!(done.contains("badge-submitted"), "{done}");
    assert!(done.contains("Answered by alice"), "{done}");
    assert!(!done.contains("<form"), "{done}");

    // Exactly once: a second answer, as a form and as JSON, is refused.
    let r = app
        .post_form(
            &browser,
            &submit,
            &[("answer.0", "Postgres"), ("answer.1", "US")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let page = r.text().await.unwrap();
    assert!(page.contains(r#"data-code="widget_not_pending""#), "{page}");
    assert!(page.contains("badge-submitted"), "{page}");
    let r = submit_json(
        &app,
        &browser,
        &id,
        &json!({ "answer.0": "Postgres", "answer.1": ["US"] }),
    )
    .await;
    assert_error(r, StatusCode::CONFLICT, "widget_not_pending", None).await;
    assert_eq!(prompt_texts(&app, &host, &session).await, [ANSWERED]);
    assert_eq!(
        widget(&app, &agent, &id).await["result"],
        answered["result"],
        "the refused answers changed nothing"
    );
}

#[tokio::test]
async fn a_typed_other_answer_is_returned_as_typed() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let id = created_alone(ask(&app, &agent, &session, "ask-user", &two_questions()).await).await;
    let browser = app.login("alice").await;
    let typed = "  DuckDB — \"embedded\", please\t ";

    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("other.0", typed), ("answer.1", "US"), ("other.1", "  ")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    let answers = &widget(&app, &agent, &id).await["result"]["answers"];
    assert_eq!(answers["Which database?"].as_str().unwrap(), typed);
    assert_eq!(answers["Regions?"], json!(["US"]));
    assert_eq!(
        prompt_texts(&app, &host, &session).await,
        [
            r#"[Agor] User answered: {"Regions?":["US"],"Which database?":"  DuckDB — \"embedded\", please\t "}"#
        ]
    );
}

#[tokio::test]
async fn simple_widgets_answer_shapes() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;

    // No `widget`: a confirm, Yes / No as buttons named `answer.0`.
    let confirm = created_alone(
        ask(
            &app,
            &agent,
            &session,
            "ask",
            &json!({ "question": "Deploy now?" }),
        )
        .await,
    )
    .await;
    let params = &widget(&app, &agent, &confirm).await["params"];
    assert_eq!(params["questions"][0]["kind"], "confirm");
    assert_eq!(
        params["questions"][0]["options"],
        json!([{ "label": "Yes" }, { "label": "No" }])
    );
    let checkbox = created_alone(ask(&app, &agent, &session, "ask", &json!({ "question": "Which files?", "widget": "checkbox", "options": ["a", "b", "c"] }))
        .await)
    .await;
    let select = created_alone(ask(&app, &agent, &session, "ask", &json!({ "question": "Which one?", "widget": "select", "options": ["a", "b", "c"], "default": "b" }))
        .await)
    .await;

    let page = transcript_html(&app, &browser, &session).await;
    let buttons = card(&page, &confirm);
    for label in ["Yes", "No"] {
        let button = format!(r#"<button type="submit" name="answer.0" value="{label}""#);
        assert!(buttons.contains(&button), "{button} missing from {buttons}");
    }
    assert!(!buttons.contains("Send answer"), "{buttons}");
    assert!(!buttons.contains("needs-choice"), "{buttons}");
    assert!(!buttons.contains("other.0"), "a simple widget has no Other");
    let boxes = card(&page, &checkbox);
    for (n, label) in ["a", "b", "c"].iter().enumerate() {
        let input =
            format!(r#"id="w-{checkbox}-q0-o{n}" type="checkbox" name="answer.0" value="{label}""#);
        assert!(boxes.contains(&input), "{input} missing from {boxes}");
    }
    let dropdown = card(&page, &select);
    assert!(
        dropdown.contains(r#"<option value="b" selected>"#),
        "{dropdown}"
    );
    assert!(dropdown.contains(r#"<option value="a">"#), "{dropdown}");

    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{confirm}/submit"),
            &[("answer.0", "No")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        prompt_of(&app, &host, &session, &confirm).await,
        r#"[Agor] User answered: {"Deploy now?":"No"}"#
    );

    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{checkbox}/submit"),
            &[("answer.0", "b"), ("answer.0", "c")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        widget(&app, &agent, &checkbox).await["result"]["answers"],
        json!({ "Which files?": ["b", "c"] })
    );
    assert_eq!(
        prompt_of(&app, &host, &session, &checkbox).await,
        r#"[Agor] User answered: {"Which files?":["b","c"]}"#
    );

    // The preselected choice is sent as the browser would send it.
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{select}/submit"),
            &[("answer.0", "b")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        prompt_of(&app, &host, &session, &select).await,
        r#"[Agor] User answered: {"Which one?":"b"}"#
    );
}

#[tokio::test]
async fn wait_seconds_returns_the_answer_or_pending() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;

    // (a) Answered while the agent waits: the answer comes back in the call.
    let (url, token, sid) = (app.url.clone(), agent.clone(), session.clone());
    let waiting = tokio::spawn(async move {
        let r = reqwest::Client::new()
            .post(format!("{url}/api/v1/sessions/{sid}/widgets/ask-user"))
            .bearer_auth(token)
            .json(&two_questions_waiting(20))
            .send()
            .await
            .unwrap();
        (r.status(), r.json::<Value>().await.unwrap())
    });
    let id = first_widget_id(&app).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !waiting.is_finished(),
        "the call did not wait for the answer"
    );
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[
                ("answer.0", "SQLite"),
                ("answer.1", "EU"),
                ("answer.1", "APAC"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the waiting call returned once answered")
        .unwrap();
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(body["widget_id"], id.as_str(), "{body}");
    assert_eq!(body["status"], "submitted", "{body}");
    assert_eq!(
        body["answers"],
        json!({ "Which database?": "SQLite", "Regions?": ["EU", "APAC"] }),
        "{body}"
    );
    // Delivered through the call and acknowledged once the response was
    // sent: the host gets nothing.
    acked_eventually(&app, &id).await;
    assert!(app.prompts(&host, &session, 0).await.is_empty());

    // (b) Nobody answers in time: `pending`, never a default answer.
    let started = Instant::now();
    let r = ask(
        &app,
        &agent,
        &session,
        "ask-user",
        &two_questions_waiting(1),
    )
    .await;
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "it did not wait"
    );
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "pending", "{body}");
    assert!(body.get("answers").is_none(), "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("queued prompt"), "{body}");
    let late = body["widget_id"].as_str().unwrap().to_owned();
    assert_eq!(widget(&app, &agent, &late).await["status"], "pending");
    assert!(app.prompts(&host, &session, 0).await.is_empty());
    let answer = [("answer.0", "Postgres"), ("answer.1", "US")];
    let r = app
        .post_form(&browser, &format!("/widgets/{late}/submit"), &answer)
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let prompts = app.prompts(&host, &session, 0).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0]["widget_id"], late.as_str());
    assert_eq!(
        prompts[0]["text"],
        r#"[Agor] User answered: {"Regions?":["US"],"Which database?":"Postgres"}"#
    );
    let r = app
        .post_form(&browser, &format!("/widgets/{late}/submit"), &answer)
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(app.prompts(&host, &session, 0).await.len(), 1);

    // (c) Longer than 300 s is refused, over REST and MCP alike.
    let before = app.count("SELECT count(*) FROM widgets").await;
    let r = ask(
        &app,
        &agent,
        &session,
        "ask-user",
        &two_questions_waiting(301),
    )
    .await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "wait_too_long", None).await;
    let simple = json!({ "question": "Deploy now?", "wait_seconds": 301 });
    let r = ask(&app, &agent, &session, "ask", &simple).await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "wait_too_long", None).await;
    let client = connect(&app, Some(&agent))
        .await
        .expect("the agent connects");
    let result = call(&client, "ask_user", two_questions_waiting(301)).await;
    assert_eq!(error_code(&result), "wait_too_long");
    let result = call(&client, "ask", simple).await;
    assert_eq!(error_code(&result), "wait_too_long");
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, before);
}

#[tokio::test]
async fn question_validation_has_stable_codes() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let ok = || question("Q?", "Chip", &["a", "b"]);
    let five: Vec<Value> = (0..5)
        .map(|i| question(&format!("Q{i}?"), "Chip", &["a", "b"]))
        .collect();
    let questions = |qs: Vec<Value>| json!({ "questions": qs });

    let ask_user_cases = [
        (questions(vec![]), "questions_count"),
        (questions(five), "questions_count"),
        (
            questions(vec![question("Q?", "Chip", &["a"])]),
            "options_count",
        ),
        (
            questions(vec![question("Q?", "Chip", &["a", "b", "c", "d", "e"])]),
            "options_count",
        ),
        (
            questions(vec![question("Q?", "Chip", &["a", " "])]),
            "empty_label",
        ),
        (
            questions(vec![question("Q?", "Chip", &["a", "a"])]),
            "duplicate_label",
        ),
        (
            questions(vec![question("Q?", "Thirteen char", &["a", "b"])]),
            "invalid_header",
        ),
        (questions(vec![ok(), ok()]), "duplicate_question"),
        (
            questions(vec![question("", "Chip", &["a", "b"])]),
            "invalid_question",
        ),
    ];
    for (body, code) in ask_user_cases {
        let r = ask(&app, &agent, &session, "ask-user", &body).await;
        assert_eq!(
            r.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{code}: {body}"
        );
        assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, None).await;
    }
    let ask_cases = [
        (
            json!({ "question": "Pick", "widget": "radio", "options": ["a", "b"], "default": "c" }),
            "invalid_default",
        ),
        (
            json!({ "question": "Pick", "widget": "select" }),
            "options_count",
        ),
    ];
    for (body, code) in ask_cases {
        let r = ask(&app, &agent, &session, "ask", &body).await;
        assert_eq!(
            r.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{code}: {body}"
        );
        assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, None).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    assert_eq!(app.count("SELECT count(*) FROM prompts").await, 0);

    // Answers are checked too; a refused answer leaves the question open.
    let id = created_alone(ask(&app, &agent, &session, "ask-user", &two_questions()).await).await;
    let browser = app.login("alice").await;
    let answer_cases = [
        (json!({ "answer.0": "SQLite" }), "answer_required"),
        (
            json!({ "answer.0": "SQLite", "other.1": "   " }),
            "answer_required",
        ),
        (
            json!({ "answer.0": "Oracle", "answer.1": ["EU"] }),
            "unknown_option",
        ),
        (
            json!({ "answer.0": ["Postgres", "SQLite"], "answer.1": "EU" }),
            "single_answer",
        ),
        (
            json!({ "answer.0": "Postgres", "other.0": "DuckDB", "answer.1": "EU" }),
            "ambiguous_answer",
        ),
    ];
    for (body, code) in answer_cases {
        let r = submit_json(&app, &browser, &id, &body).await;
        assert_eq!(
            r.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{code}: {body}"
        );
        assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, None).await;
    }
    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");
    assert!(app.prompts(&host, &session, 0).await.is_empty());
}

#[tokio::test]
async fn dismissed_expired_cancelled_questions_prompt_plainly() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;

    let dismissed =
        created_alone(ask(&app, &agent, &session, "ask-user", &two_questions()).await).await;
    let r = app
        .post_form(&browser, &format!("/widgets/{dismissed}/dismiss"), &[])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let state = widget(&app, &agent, &dismissed).await;
    assert_eq!(state["status"], "dismissed");
    assert_eq!(state["result"], json!({ "dismissed_by": "alice" }));
    let text = prompt_of(&app, &host, &session, &dismissed).await;
    assert!(
        text.starts_with("[Agor] User dismissed your question"),
        "{text}"
    );

    let expiring =
        created_alone(ask(&app, &agent, &session, "ask-user", &two_questions()).await).await;
    sqlx::query("UPDATE widgets SET expires_at = 0 WHERE id = $1")
        .bind(&expiring)
        .execute(&app.state.db.write)
        .await
        .unwrap();
    assert_eq!(widgets::expire_due(&app.state).await.unwrap(), 1);
    assert_eq!(widget(&app, &agent, &expiring).await["status"], "expired");
    let text = prompt_of(&app, &host, &session, &expiring).await;
    assert!(text.starts_with("[Agor] "), "{text}");
    assert!(text.contains("expired before the user answered"), "{text}");

    // Too late to answer either.
    for (id, status) in [(&dismissed, "dismissed"), (&expiring, "expired")] {
        let r = submit_json(
            &app,
            &browser,
            id,
            &json!({ "answer.0": "SQLite", "answer.1": "EU" }),
        )
        .await;
        assert_eq!(r.status(), StatusCode::CONFLICT);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "widget_not_pending", "{body}");
        assert_eq!(body["error"]["status"], status, "{body}");
    }

    let cancelled = created_alone(
        ask(
            &app,
            &agent,
            &session,
            "ask",
            &json!({ "question": "Deploy now?" }),
        )
        .await,
    )
    .await;
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{session}/archive"),
            &host,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["cancelled_widgets"], 1);
    assert_eq!(widget(&app, &host, &cancelled).await["status"], "cancelled");
    let text = prompt_of(&app, &host, &session, &cancelled).await;
    assert!(text.starts_with("[Agor] "), "{text}");
    assert!(
        text.contains("cancelled because the session was archived"),
        "{text}"
    );

    // Plain sentences: one per question, and no answer in any of them.
    let texts = prompt_texts(&app, &host, &session).await;
    assert_eq!(texts.len(), 3, "{texts:?}");
    for text in &texts {
        assert!(!text.contains("answered:") && !text.contains('{'), "{text}");
    }
}

/// Over MCP, a `wait_seconds` call the agent abandons must not swallow the
/// answer: rmcp keeps the handler running after the client disconnects, so
/// the wait watches the request's cancellation and never acknowledges an
/// answer that reached nobody. (Over REST the handler is dropped with the
/// connection.)
#[tokio::test]
async fn an_abandoned_wait_over_mcp_still_delivers_the_answer() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let client = connect(&app, Some(&agent))
        .await
        .expect("the agent connects");
    let waiting =
        tokio::spawn(async move { call(&client, "ask_user", two_questions_waiting(20)).await });
    let id = first_widget_id(&app).await;
    let caller = format!("agent:{session}");
    until_waiting(&app, &caller).await;
    // The agent gives up (interrupted turn, client-side timeout): the call
    // and its connection go away before anyone answers.
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    eventually(
        "the daemon to let the call go",
        Duration::from_secs(10),
        || async { app.held_open(&caller) == 0 },
    )
    .await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[
                ("answer.0", "SQLite"),
                ("answer.1", "EU"),
                ("answer.1", "APAC"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        prompt_texts(&app, &host, &session).await,
        [ANSWERED],
        "the answer reached nobody"
    );
}

#[tokio::test]
async fn a_simple_question_over_mcp_waits_for_a_radio_answer() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let client = connect(&app, Some(&agent))
        .await
        .expect("the agent connects");
    let question = json!({ "question": "Which region?", "widget": "radio", "options": ["EU", "US"], "wait_seconds": 20 });
    let waiting = tokio::spawn(async move { call(&client, "ask", question).await });
    let id = first_widget_id(&app).await;
    let page = transcript_html(&app, &browser, &session).await;
    let pending = card(&page, &id);
    assert!(
        pending.contains(r#"type="radio" name="answer.0" value="EU""#)
            && !pending.contains("other.0"),
        "{pending}"
    );
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("answer.0", "US")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    let result = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .unwrap()
        .unwrap();
    let answer = result.structured_content.expect("structured content");
    assert_eq!(answer["status"], "submitted");
    assert_eq!(answer["answers"], json!({ "Which region?": "US" }));
    // Delivered through the call: the host has nothing left to hand out.
    acked_eventually(&app, &id).await;
    assert!(prompt_texts(&app, &host, &session).await.is_empty());
    let reloaded = transcript_html(&app, &browser, &session).await;
    let answered = card(&reloaded, &id);
    assert!(
        answered.contains("badge-submitted") && answered.contains("<dd>US</dd>"),
        "{answered}"
    );
}

/// A client whose own request timeout fires sends `notifications/cancelled`
/// as a separate POST and abandons the call, whose connection stays open
/// (as the TypeScript SDK does). The answer given afterwards must not be
/// written into the abandoned call and marked delivered: it stays queued
/// for the agent host.
#[tokio::test]
async fn a_cancelled_wait_over_mcp_leaves_the_answer_queued() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let (_, other_agent) = app.session(&host).await;
    let mcp_as = |token: &str, body: Value| {
        app.client
            .post(format!("{}/mcp", app.url))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .json(&body)
            .send()
    };
    let call = json!({
        "jsonrpc": "2.0", "id": "call-7", "method": "tools/call",
        "params": { "name": "ask", "arguments": { "question": "Deploy now?", "wait_seconds": 20 } }
    });
    let waiting = tokio::spawn(mcp_as(&agent, call));
    let id = first_widget_id(&app).await;

    // Another session's agent cannot cancel it by naming the same id.
    let cancel = json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": "call-7", "reason": "request timed out" }
    });
    let r = mcp_as(&other_agent, cancel.clone()).await.unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "a stranger cancelled the call");
    let r = mcp_as(&agent, cancel).await.unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("answer.0", "Yes")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    let response = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the cancelled call ended")
        .unwrap()
        .unwrap();
    let text = response.text().await.unwrap();
    assert!(
        !text.contains(r#""submitted""#),
        "the answer went into a cancelled call: {text}"
    );
    assert!(text.contains("request_cancelled"), "{text}");
    assert_eq!(
        prompt_texts(&app, &host, &session).await,
        [r#"[Agor] User answered: {"Deploy now?":"Yes"}"#],
        "the answer was lost with the abandoned call"
    );
}

/// Several simple widgets in one `ask`, each with its own label, answered
/// in one submit: options answer with their `value`, a multi-select with an
/// array, and a typed answer only where `allow_freeform` offers one.
#[tokio::test]
async fn several_simple_widgets_are_answered_in_one_form() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let body = json!({ "items": [
        { "question": "Deploy now?", "label": "Deploy" },
        { "question": "Which environment?", "label": "Target", "widget": "select",
          "options": [{ "label": "Production, EU", "value": "prod-eu" }, "staging"] },
        { "question": "Who to notify?", "widget": "checkbox", "options": ["Ops", "Sales"],
          "allow_freeform": true },
    ] });
    let id = created_alone(ask(&app, &agent, &session, "ask", &body).await).await;

    let page = transcript_html(&app, &browser, &session).await;
    let form = card(&page, &id);
    assert!(
        form.contains(r#"type="radio" name="answer.0" value="Yes""#),
        "{form}"
    );
    assert!(
        form.contains(r#"<select id="w-"#) && form.contains(r#"name="answer.1""#),
        "{form}"
    );
    assert!(
        form.contains(r#"name="other.2""#),
        "the third item takes a typed answer"
    );
    assert!(
        !form.contains(r#"name="other.0""#) && !form.contains(r#"name="other.1""#),
        "{form}"
    );
    assert!(form.contains("Send answer"), "{form}");

    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[
                ("answer.0", "Yes"),
                ("answer.1", "Production, EU"),
                ("answer.2", "Ops"),
                ("other.2", "the on-call, too"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        widget(&app, &agent, &id).await["result"]["answers"],
        json!({
            "Deploy now?": "Yes",
            "Which environment?": "prod-eu",
            "Who to notify?": ["Ops", "the on-call, too"],
        })
    );
    assert_eq!(
        prompt_texts(&app, &host, &session).await,
        [
            r#"[Agor] User answered: {"Deploy now?":"Yes","Which environment?":"prod-eu","Who to notify?":["Ops","the on-call, too"]}"#
        ]
    );

    // A bad item is named by its place and question; nothing is created.
    let before = app.count("SELECT count(*) FROM widgets").await;
    let bad = json!({ "items": [
        { "question": "Deploy now?" },
        { "question": "Region?", "widget": "radio", "options": ["EU"] },
    ] });
    let r = ask(&app, &agent, &session, "ask", &bad).await;
    let text = r.text().await.unwrap();
    assert!(
        text.contains("options_count") && text.contains(r#"question 2 (\"Region?\")"#),
        "{text}"
    );
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, before);
}

/// Free text goes to the agent: the forms say so, and an answer that holds
/// one of the creator's stored values is refused, naming the variable only.
#[tokio::test]
async fn typed_answers_holding_a_stored_value_are_refused() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let secret = crate::helpers::canary("typed");
    let r = app
        .put_env(
            &host,
            "PAYMENT_KEY",
            &json!({ "value": secret, "scope": "global" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let browser = app.login("alice").await;
    let id = created_alone(ask(&app, &agent, &session, "ask-user", &two_questions()).await).await;
    let env = app.pending_widget(&agent, &session, &["OTHER_KEY"]).await;
    let page = transcript_html(&app, &browser, &session).await;
    assert!(card(&page, &id).contains("sent to the agent — never type secrets here"));
    assert!(card(&page, &env).contains("Saving to <strong>alice</strong>"));

    let typed = format!("use {secret} for it");
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("other.0", &typed), ("answer.1", "EU")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = r.text().await.unwrap();
    assert!(page.contains("answer_contains_secret") && page.contains("PAYMENT_KEY"));
    assert!(!page.contains(&secret), "the refusal repeats the value");
    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");

    let approval = app
        .post_json(
            &format!("/api/v1/sessions/{session}/widgets/approval"),
            &agent,
            &json!({ "tool": "Bash", "input": { "command": "ls" } }),
        )
        .await;
    let approval = created_alone(approval).await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{approval}/submit"),
            &[("decision", "deny"), ("reason", &typed)],
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(widget(&app, &agent, &approval).await["status"], "pending");
    assert!(prompt_texts(&app, &host, &session).await.is_empty());
}
