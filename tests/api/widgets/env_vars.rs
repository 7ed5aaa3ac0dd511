//! The env_vars widget end to end over REST and the browser form: the round
//! trip, every terminal state and its prompt, races, validation.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::widgets;

use crate::helpers::{Scene, assert_error, canary, scene, spawn_app, widget};

const SUBMITTED: &str = "[Agor] User submitted HUBSPOT_API_KEY (scope: global). You can now retry the operation that needed it.";

/// Reads an SSE response until `until` appears in it (or 10 s pass).
async fn read_events(mut response: reqwest::Response, until: &str) -> String {
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = response.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains(until) {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
    text
}

#[tokio::test]
async fn request_submit_drain_ack_and_exec_env() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let secret = canary("round-trip");

    let events = app
        .get(&format!("/api/v1/sessions/{session}/events"), &agent)
        .await;
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    let id = app
        .pending_widget(&agent, &session, &["HUBSPOT_API_KEY"])
        .await;
    assert_eq!(app.prompts(&host, &session, 0).await, Vec::<Value>::new());

    // The host is already waiting when the person answers.
    let (app_url, host_token, sid) = (app.url.clone(), host.clone(), session.clone());
    let waiting = tokio::spawn(async move {
        let r = reqwest::Client::new()
            .get(format!("{app_url}/api/v1/sessions/{sid}/prompts?wait=60"))
            .bearer_auth(host_token)
            .send()
            .await
            .unwrap();
        r.json::<Value>().await.unwrap()
    });
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("value.HUBSPOT_API_KEY", &secret), ("scope", "global")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        format!("/sessions/{session}#w-{id}")
    );

    let drained = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the long-poll was woken")
        .unwrap();
    let prompt = &drained["prompts"][0];
    assert_eq!(prompt["text"], SUBMITTED);
    assert_eq!(prompt["widget_id"], id.as_str());
    // Delivered at least once: still there until acknowledged.
    assert_eq!(app.prompts(&host, &session, 0).await.len(), 1);
    let ack = format!(
        "/api/v1/sessions/{session}/prompts/{}/ack",
        prompt["prompt_id"]
    );
    assert_eq!(
        app.post_json(&ack, &host, &json!({})).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        app.post_json(&ack, &host, &json!({})).await.status(),
        StatusCode::OK,
        "ack is idempotent"
    );
    assert!(app.prompts(&host, &session, 0).await.is_empty());
    assert_eq!(
        app.env_of(&session, &host).await,
        json!({ "HUBSPOT_API_KEY": secret })
    );

    let state = widget(&app, &agent, &id).await;
    assert_eq!(state["status"], "submitted");
    assert_eq!(
        state["result"],
        json!({ "names": ["HUBSPOT_API_KEY"], "scope": "global", "submitted_by": "alice" })
    );
    let stream = read_events(events, "widget:resolved").await;
    assert!(
        stream.contains("event: widget:created") && stream.contains("event: widget:resolved"),
        "{stream}"
    );

    let everything_agent_side = format!("{state}{drained}{stream}");
    assert!(!everything_agent_side.contains(&secret));
    let audit: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT action, names FROM audit_log ORDER BY id")
            .fetch_all(&app.state.db.read)
            .await
            .unwrap();
    assert!(
        audit.contains(&("widget.submit".into(), Some("HUBSPOT_API_KEY".into()))),
        "{audit:?}"
    );
    let files = ["widgetd.db", "widgetd.db-wal"]
        .map(|f| std::fs::read(app.data_dir().join(f)).unwrap_or_default());
    for bytes in files {
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
    }
}

#[tokio::test]
async fn fifty_racing_answers_have_exactly_one_winner() {
    let app = spawn_app().await;
    let Scene {
        host: _,
        session,
        agent,
    } = scene(&app, "alice").await;
    let id = app.pending_widget(&agent, &session, &["RACE_KEY"]).await;
    let browser = app.login("alice").await;
    let attempts = (0..50).map(|i| {
        let path = if i % 2 == 0 {
            format!("/widgets/{id}/submit")
        } else {
            format!("/widgets/{id}/dismiss")
        };
        let (app, browser) = (&app, &browser);
        async move {
            app.post_form(
                browser,
                &path,
                &[("value.RACE_KEY", "v"), ("scope", "session")],
            )
            .await
        }
    });
    let responses = futures_util::future::join_all(attempts).await;
    let won = responses
        .iter()
        .filter(|r| r.status() == StatusCode::SEE_OTHER)
        .count();
    let refused = responses
        .iter()
        .filter(|r| r.status() == StatusCode::CONFLICT)
        .count();
    assert_eq!((won, refused), (1, 49));
    for r in responses
        .into_iter()
        .filter(|r| r.status() == StatusCode::CONFLICT)
        .take(3)
    {
        // The loser sees the transcript again, with the winner's badge.
        let page = r.text().await.unwrap();
        assert!(page.contains(r#"data-code="widget_not_pending""#), "{page}");
        assert!(
            page.contains("badge-submitted") || page.contains("badge-dismissed"),
            "{page}"
        );
    }
    let one = |sql: &str| sql.replace("$1", &format!("'{id}'"));
    assert_eq!(
        app.count(&one("SELECT count(*) FROM prompts WHERE widget_id = $1"))
            .await,
        1
    );
    assert_eq!(
        app.count(&one("SELECT count(*) FROM audit_log WHERE widget_id = $1 AND action IN ('widget.submit', 'widget.dismiss')")).await,
        1
    );
}

#[tokio::test]
async fn every_terminal_state_queues_its_prompt_and_never_changes() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;

    // already_present: every name resolves already, so the widget is born terminal.
    app.put_env(&host, "HUBSPOT_API_KEY", &json!({ "value": "v" }))
        .await;
    app.put_env(
        &host,
        "OTHER_KEY",
        &json!({ "value": "v", "scope": "session", "session_id": session }),
    )
    .await;
    let r = app
        .request_env_vars(
            &agent,
            &session,
            &json!({ "names": ["OTHER_KEY", "HUBSPOT_API_KEY"], "reason": "r" }),
        )
        .await;
    let created: Value = r.json().await.unwrap();
    assert_eq!(created["status"], "already_present");
    let prompts = app.prompts(&host, &session, 0).await;
    assert_eq!(
        prompts[0]["text"],
        "[Agor] HUBSPOT_API_KEY, OTHER_KEY were already configured. You can proceed."
    );

    // expired: as if its TTL had passed, so the next sweep expires it.
    let expiring = app
        .pending_widget(&agent, &session, &["EXPIRING_KEY"])
        .await;
    sqlx::query("UPDATE widgets SET expires_at = 0 WHERE id = $1")
        .bind(&expiring)
        .execute(&app.state.db.write)
        .await
        .unwrap();
    assert_eq!(widgets::expire_due(&app.state).await.unwrap(), 1);
    assert_eq!(widget(&app, &agent, &expiring).await["status"], "expired");
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{expiring}/submit"),
            &[("value.EXPIRING_KEY", "late")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let page = r.text().await.unwrap();
    assert!(
        page.contains(r#"data-code="widget_not_pending""#) && page.contains("badge-expired"),
        "{page}"
    );

    // dismissed, and cancelled by archiving the session (another one).
    let dismissed = app
        .pending_widget(&agent, &session, &["DISMISSED_KEY"])
        .await;
    let r = app
        .post_form(&browser, &format!("/widgets/{dismissed}/dismiss"), &[])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (other, other_agent) = app.session(&host).await;
    let cancelled = app
        .pending_widget(&other_agent, &other, &["CANCELLED_KEY"])
        .await;
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{other}/archive"),
            &host,
            &json!({}),
        )
        .await;
    assert_eq!(r.json::<Value>().await.unwrap()["cancelled_widgets"], 1);
    assert_eq!(widget(&app, &host, &cancelled).await["status"], "cancelled");
    let r = app.pending_widget_response(&other_agent, &other).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;
    // The host cannot add to the archived transcript either.
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{other}/messages"),
            &host,
            &json!({ "text": "late words" }),
        )
        .await;
    assert_error(r, StatusCode::CONFLICT, "session_archived", None).await;
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM messages WHERE session_id = '{other}' AND kind = 'text'"
        ))
        .await,
        0
    );

    let texts: Vec<String> = app
        .prompts(&host, &session, 0)
        .await
        .iter()
        .chain(&app.prompts(&host, &other, 0).await)
        .map(|p| p["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        texts[1..],
        [
            "[Agor] The request for EXPIRING_KEY expired before the user answered; no value was given. Do not re-request immediately — ask whether to proceed without, or move on to other work.".to_owned(),
            "[Agor] User dismissed the request for DISMISSED_KEY. Do not re-request immediately — ask whether to proceed without, or move on to other work.".to_owned(),
            "[Agor] The request for CANCELLED_KEY was cancelled because the session was archived; no value was given.".to_owned(),
        ]
    );
    assert_eq!(
        widgets::expire_due(&app.state).await.unwrap(),
        0,
        "terminal widgets are never expired again"
    );
}

#[tokio::test]
async fn agent_input_is_validated_with_stable_codes_and_nothing_is_created() {
    let app = spawn_app().await;
    let Scene {
        host: _,
        session,
        agent,
    } = scene(&app, "alice").await;
    let eleven: Vec<String> = (0..11).map(|i| format!("KEY_{i}")).collect();
    let cases = [
        (json!({ "names": [], "reason": "r" }), "names_count"),
        (json!({ "names": eleven, "reason": "r" }), "names_count"),
        (
            json!({ "names": ["A", "A"], "reason": "r" }),
            "duplicate_name",
        ),
        (json!({ "names": ["lower"], "reason": "r" }), "invalid_name"),
        (
            json!({ "names": ["LD_PRELOAD"], "reason": "r" }),
            "blocked_name",
        ),
        (json!({ "names": ["A"], "reason": " " }), "invalid_reason"),
        (
            json!({ "names": ["A"], "reason": "x".repeat(501) }),
            "invalid_reason",
        ),
        (
            json!({ "names": ["A"], "reason": "r", "instructions": "x".repeat(4001) }),
            "instructions_too_long",
        ),
        (
            json!({ "names": ["A"], "reason": "r", "variable_metadata": { "B": {} } }),
            "unknown_metadata_name",
        ),
        (
            json!({ "names": ["A"], "reason": "r", "variable_metadata": { "A": { "description": "d".repeat(201) } } }),
            "description_too_long",
        ),
        (
            json!({ "names": ["A"], "reason": "r", "variable_metadata": { "A": { "placeholder": "p".repeat(121) } } }),
            "placeholder_too_long",
        ),
    ];
    for (body, code) in cases {
        let r = app.request_env_vars(&agent, &session, &body).await;
        assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, None).await;
    }
    let r = app
        .request_env_vars(
            &agent,
            &session,
            &json!({ "names": ["A"], "reason": "r", "value": "x" }),
        )
        .await;
    let message = assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    assert!(message.contains("unknown field; allowed: one of `names`, `reason`, `instructions`, `default_scope`, `variable_metadata`"), "{message}");
    let r = app
        .request_env_vars(
            &agent,
            &session,
            &json!({ "names": ["A"], "reason": "r", "default_scope": "team" }),
        )
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    assert_eq!(app.count("SELECT count(*) FROM events").await, 0);

    // The agent of one session cannot create or read widgets in another.
    let Scene {
        host: bob_host,
        session: bobs,
        agent: bob_agent,
    } = scene(&app, "bob").await;
    let r = app
        .request_env_vars(&agent, &bobs, &json!({ "names": ["A"], "reason": "r" }))
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;
    let id = app.pending_widget(&bob_agent, &bobs, &["A"]).await;
    assert_error(
        app.get(&format!("/api/v1/widgets/{id}"), &agent).await,
        StatusCode::NOT_FOUND,
        "not_found",
        None,
    )
    .await;
    let r = app
        .get(&format!("/api/v1/sessions/{bobs}/prompts"), &agent)
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;
    assert_eq!(widget(&app, &bob_host, &id).await["status"], "pending");
}

/// A refused form answer: the transcript again with the code beside the
/// form, every value field empty, and the value nowhere in the page.
async fn assert_page_refusal(
    response: reqwest::Response,
    status: StatusCode,
    code: &str,
    secret: &str,
) {
    assert_eq!(response.status(), status);
    let page = response.text().await.unwrap();
    assert!(
        page.contains(&format!(r#"data-code="{code}""#)),
        "{code}: {page}"
    );
    assert!(!page.contains(secret), "the page echoes the value");
    assert!(
        !page.contains("value=\"canary"),
        "a value field was refilled"
    );
}

/// Form fields, and the status and code they must get.
type BadAnswer<'a> = (Vec<(&'a str, &'a str)>, StatusCode, &'a str);

#[tokio::test]
async fn bad_answers_are_refused_without_echo_and_change_nothing() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let id = app
        .pending_widget(&agent, &session, &["A_KEY", "B_KEY"])
        .await;
    let browser = app.login("alice").await;
    let secret = canary("bad-answer");
    let submit = format!("/widgets/{id}/submit");
    let big = "x".repeat(64 * 1024 + 1);
    let cases: Vec<BadAnswer> = vec![
        (
            vec![("value.A_KEY", &secret)],
            StatusCode::UNPROCESSABLE_ENTITY,
            "names_mismatch",
        ),
        (
            vec![
                ("value.A_KEY", &secret),
                ("value.B_KEY", &secret),
                ("value.C_KEY", &secret),
            ],
            StatusCode::UNPROCESSABLE_ENTITY,
            "names_mismatch",
        ),
        (
            vec![("value.A_KEY", &secret), ("value.B_KEY", "")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_value",
        ),
        (
            vec![("value.A_KEY", &secret), ("value.B_KEY", &big)],
            StatusCode::UNPROCESSABLE_ENTITY,
            "value_too_large",
        ),
        (
            vec![
                ("value.A_KEY", &secret),
                ("value.B_KEY", &secret),
                ("scope", &secret),
            ],
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_scope",
        ),
        (
            vec![("value.A_KEY", &secret), ("use_saved.B_KEY", "on")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_saved_value",
        ),
        (
            vec![
                ("value.A_KEY", &secret),
                ("value.B_KEY", &secret),
                ("use_saved.B_KEY", "on"),
            ],
            StatusCode::UNPROCESSABLE_ENTITY,
            "ambiguous_value",
        ),
    ];
    for (fields, status, code) in cases {
        assert_page_refusal(
            app.post_form(&browser, &submit, &fields).await,
            status,
            code,
            &secret,
        )
        .await;
    }
    let fields = [
        ("csrf_token", browser.csrf.as_str()),
        ("value.A_KEY", &secret),
        ("value.B_KEY", &secret),
    ];
    let post = || {
        app.client
            .post(format!("{}{submit}", app.url))
            .form(&fields)
    };
    let r = post()
        .header("cookie", &browser.cookie)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::FORBIDDEN, "csrf_cross_site", Some(&secret)).await;
    let r = post()
        .header("cookie", &browser.cookie)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::FORBIDDEN, "csrf_origin", Some(&secret)).await;
    let r = app
        .client
        .post(format!("{}{submit}", app.url))
        .header("cookie", &browser.cookie)
        .form(&[("value.A_KEY", &secret), ("value.B_KEY", &secret)])
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::FORBIDDEN, "csrf_token", Some(&secret)).await;
    assert_error(
        post().send().await.unwrap(),
        StatusCode::UNAUTHORIZED,
        "login_required",
        Some(&secret),
    )
    .await;
    let r = app
        .client
        .post(format!("{}{submit}", app.url))
        .header("cookie", &browser.cookie)
        .header("x-csrf-token", &browser.csrf)
        .header("content-type", "application/json")
        .body(format!(
            "{{\"values\": {{\"A_KEY\": 5, \"B_KEY\": \"{secret}\"}}}}"
        ))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", Some(&secret)).await;
    // A stranger cannot even learn that the widget exists.
    app.user("mallory", widgetd_domain::auth::Role::Member)
        .await;
    let mallory = app.login("mallory").await;
    let r = app
        .post_form(
            &mallory,
            &submit,
            &[("value.A_KEY", &secret), ("value.B_KEY", &secret)],
        )
        .await;
    assert_error(r, StatusCode::NOT_FOUND, "not_found", Some(&secret)).await;

    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");
    assert_eq!(app.count("SELECT count(*) FROM env_vars").await, 0);
    assert_eq!(app.count("SELECT count(*) FROM prompts").await, 0);
    assert!(app.prompts(&host, &session, 0).await.is_empty());
}

#[tokio::test]
async fn values_keep_their_bytes_and_saved_globals_can_be_reused() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let first = app.pending_widget(&agent, &session, &["PEM"]).await;
    let pem = "  -----BEGIN KEY-----\r\nabc\n-----END KEY-----\n ";
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{first}/submit"),
            &[("value.PEM", pem), ("scope", "global")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    let (other, other_agent) = app.session(&host).await;
    let second = app
        .pending_widget(&other_agent, &other, &["PEM", "TOKEN"])
        .await;
    let r = app
        .client
        .post(format!("{}/widgets/{second}/submit", app.url))
        .header("cookie", &browser.cookie)
        .header("x-csrf-token", &browser.csrf)
        .json(&json!({ "values": { "TOKEN": "t-1" }, "use_saved": ["PEM"], "scope": "session" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let view: Value = r.json().await.unwrap();
    assert_eq!(view["result"]["scope"], "session");
    assert_eq!(
        app.env_of(&other, &host).await,
        json!({ "PEM": pem, "TOKEN": "t-1" })
    );
    assert_eq!(app.env_of(&session, &host).await, json!({ "PEM": pem }));
    let prompts = app.prompts(&host, &other, 0).await;
    assert_eq!(
        prompts[0]["text"],
        "[Agor] User submitted PEM, TOKEN (scope: session). You can now retry the operation that needed it."
    );
}

#[tokio::test]
async fn events_resume_after_last_event_id_and_carry_transcript_text() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{session}/messages"),
            &host,
            &json!({ "text": "Let me check the CRM." }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    app.pending_widget(&agent, &session, &["KEY"]).await;
    let all = read_events(
        app.get(&format!("/api/v1/sessions/{session}/events"), &agent)
            .await,
        "widget:created",
    )
    .await;
    assert!(
        all.contains("event: message:created") && all.contains("Let me check the CRM."),
        "{all}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM events WHERE payload LIKE '%check the CRM%'")
            .await,
        0,
        "the text is stored once, in the message"
    );
    let first_id = all
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap()
        .to_owned();
    let resumed = app
        .client
        .get(format!("{}/api/v1/sessions/{session}/events", app.url))
        .bearer_auth(&agent)
        .header("last-event-id", &first_id)
        .send()
        .await
        .unwrap();
    let rest = read_events(resumed, "widget:created").await;
    assert!(
        rest.contains("event: widget:created") && !rest.contains("message:created"),
        "{rest}"
    );
    let r = app
        .client
        .get(format!("{}/api/v1/sessions/{session}/events", app.url))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "missing_token", None).await;
}

/// A browser sends every line end of a multi-line field as CRLF: such a
/// value is stored with the LF line ends the person typed. Single-line
/// fields and JSON answers keep their bytes. Reusing a saved global value
/// is reported as global, whatever the form's scope selector said.
#[tokio::test]
async fn multiline_values_keep_lf_and_reused_globals_say_global() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let multiline = |names: &[&str]| {
        json!({
            "names": names,
            "reason": "to sign commits",
            "variable_metadata": { "PEM": { "multiline": true } },
        })
    };
    // A widget for TOKEN asked before any value of it was saved.
    let (third, third_agent) = app.session(&host).await;
    let reuse = app.pending_widget(&third_agent, &third, &["TOKEN"]).await;
    let r = app
        .request_env_vars(&agent, &session, &multiline(&["PEM", "TOKEN"]))
        .await;
    let id = r.json::<Value>().await.unwrap()["widget_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[
                (
                    "value.PEM",
                    "-----BEGIN KEY-----\r\nabc\r\n-----END KEY-----\r\n",
                ),
                ("value.TOKEN", "t-1\r\n"),
                ("scope", "global"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.env_of(&session, &host).await,
        json!({ "PEM": "-----BEGIN KEY-----\nabc\n-----END KEY-----\n", "TOKEN": "t-1\r\n" })
    );

    // JSON answers are taken as sent.
    let (other, other_agent) = app.session(&host).await;
    let cert = json!({
        "names": ["CERT"],
        "reason": "to serve TLS",
        "variable_metadata": { "CERT": { "multiline": true } },
    });
    let r = app.request_env_vars(&other_agent, &other, &cert).await;
    let id = r.json::<Value>().await.unwrap()["widget_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .client
        .post(format!("{}/widgets/{id}/submit", app.url))
        .header("cookie", &browser.cookie)
        .header("x-csrf-token", &browser.csrf)
        .json(&json!({ "values": { "CERT": "a\r\nb" }, "scope": "session" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(app.env_of(&other, &host).await["CERT"], "a\r\nb");

    // Every name reused from the saved globals: the answer is global.
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{reuse}/submit"),
            &[
                ("value.TOKEN", ""),
                ("use_saved.TOKEN", "on"),
                ("scope", "session"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        widget(&app, &third_agent, &reuse).await["result"]["scope"],
        "global"
    );
    assert_eq!(
        app.prompts(&host, &third, 0).await[0]["text"],
        "[Agor] User submitted TOKEN (scope: global). You can now retry the operation that needed it."
    );
}

/// An agent in a loop cannot flood a person: a session holds at most 50
/// waiting widgets, an agent token gets 30 new widgets or lines at once and
/// then one every 2 s (`429` with `Retry-After`), and nothing refused is
/// half-written.
#[tokio::test]
async fn agents_cannot_flood_a_session() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    // The host is not rate-limited, so it can fill the session to the cap.
    for i in 0..widgets::MAX_PENDING_PER_SESSION {
        let r = app
            .post_json(
                &format!("/api/v1/sessions/{session}/widgets/env-vars"),
                &host,
                &json!({ "names": [format!("KEY_{i}")], "reason": "r" }),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{session}/widgets/env-vars"),
            &host,
            &json!({ "names": ["ONE_TOO_MANY"], "reason": "r" }),
        )
        .await;
    assert_error(r, StatusCode::CONFLICT, "too_many_pending", None).await;
    assert_eq!(
        app.count("SELECT count(*) FROM widgets").await,
        widgets::MAX_PENDING_PER_SESSION
    );

    // The agent's own bucket: lines count too. It regains one every 2 s, so
    // a slow machine may let a few more through than the burst.
    let started = std::time::Instant::now();
    let mut refused = None;
    for i in 0..60 {
        let r = app
            .post_json(
                &format!("/api/v1/sessions/{session}/messages"),
                &agent,
                &json!({ "text": format!("line {i}") }),
            )
            .await;
        if r.status() != StatusCode::CREATED {
            refused = Some((i, r));
            break;
        }
    }
    let (at, r) = refused.expect("the agent was never slowed down");
    let regained = (started.elapsed().as_secs_f64() * 0.5).floor() as usize;
    assert!(
        (30..=30 + regained).contains(&at),
        "the burst is 30 (and {regained} regained): refused at {at}"
    );
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().contains_key("retry-after"));
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "rate_limited", None).await;
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM messages WHERE session_id = '{session}' AND kind = 'text'"
        ))
        .await,
        at as i64
    );
}
