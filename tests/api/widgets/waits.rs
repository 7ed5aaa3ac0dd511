//! Calls that wait for a person are held to what an event stream is held
//! to: a token revoked while its call waits gets `401`, not the answer
//! (re-checked when the answer is ready and every 10 s), and waiting calls
//! count against the stream caps.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use widgetd::stream_limits::PER_CALLER;
use widgetd_domain::auth::{self, Role, tokens::TokenScopes};

use crate::helpers::mcp::{call, connect};
use crate::helpers::wait::until_waiting;
use crate::helpers::{TestApp, assert_error, spawn_app};

async fn dismiss(app: &TestApp, widget: &str) {
    let browser = app.login("alice").await;
    let r = app
        .post_form(&browser, &format!("/widgets/{widget}/dismiss"), &[])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}

async fn newest_widget(app: &TestApp) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let id: Option<String> =
            sqlx::query_scalar("SELECT id FROM widgets ORDER BY created_at DESC LIMIT 1")
                .fetch_optional(&app.state.db.read)
                .await
                .unwrap();
        if let Some(id) = id {
            return id;
        }
        assert!(Instant::now() < deadline, "no widget was created");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_long_poll_whose_token_is_revoked_gets_401_and_the_prompt_stays_queued() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let (token_id, host) = {
        let mut conn = app.state.db.write.acquire().await.unwrap();
        let scopes = TokenScopes::parse("sessions").unwrap();
        let (id, token) = auth::create_api_token(&mut conn, &alice.id, &scopes)
            .await
            .unwrap();
        (id, token.expose_secret().to_owned())
    };
    let (session, agent) = app.session(&host).await;
    let widget = app.pending_widget(&agent, &session, &["SOME_KEY"]).await;
    let (url, token, sid) = (app.url.clone(), host.clone(), session.clone());
    let poll = tokio::spawn(async move {
        reqwest::Client::new()
            .get(format!("{url}/api/v1/sessions/{sid}/prompts?wait=60"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    });
    until_waiting(&app, &format!("user:{}", alice.id)).await;
    // Revoked as `widgetd token revoke` does, then the person answers.
    let mut tx = app.state.db.begin_write().await.unwrap();
    auth::revoke_api_token(&mut tx, &token_id).await.unwrap();
    tx.commit().await.unwrap();
    dismiss(&app, &widget).await;
    let r = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("the long-poll ends once the answer is in")
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;
    assert_eq!(
        app.count("SELECT count(*) FROM prompts WHERE acked_at IS NULL")
            .await,
        1,
        "the prompt is still there for a live token"
    );
}

#[tokio::test]
async fn a_wait_seconds_call_whose_agent_token_is_revoked_gets_401() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let host = app.token(&alice, "sessions").await;

    // REST, nothing answered: the 10-second re-check ends the wait.
    let (session, agent) = app.session(&host).await;
    let (url, token, sid) = (app.url.clone(), agent.clone(), session.clone());
    let waiting = tokio::spawn(async move {
        reqwest::Client::new()
            .post(format!("{url}/api/v1/sessions/{sid}/widgets/ask"))
            .bearer_auth(token)
            .json(&json!({ "question": "Deploy now?", "wait_seconds": 120 }))
            .send()
            .await
            .unwrap()
    });
    until_waiting(&app, &format!("agent:{session}")).await;
    let r = app
        .client
        .delete(format!("{}/api/v1/sessions/{session}/agent-token", app.url))
        .bearer_auth(&host)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = tokio::time::timeout(Duration::from_secs(15), waiting)
        .await
        .expect("the wait ends within the re-check period")
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;

    // MCP, answered after the revocation: the answer is not handed over.
    let (session, agent) = app.session(&host).await;
    let client = connect(&app, Some(&agent)).await.unwrap();
    let waiting = tokio::spawn(async move {
        client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("ask").with_arguments(
                    json!({ "question": "Ship it?", "wait_seconds": 60 })
                        .as_object()
                        .unwrap()
                        .clone(),
                ),
            )
            .await
    });
    until_waiting(&app, &format!("agent:{session}")).await;
    let widget = newest_widget(&app).await;
    let r = app
        .client
        .delete(format!("{}/api/v1/sessions/{session}/agent-token", app.url))
        .bearer_auth(&host)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    dismiss(&app, &widget).await;
    let result = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the MCP call ends once the answer is in")
        .unwrap();
    assert!(
        result.is_err(),
        "a revoked agent token's call got an answer: {result:?}"
    );
}

#[tokio::test]
async fn waiting_calls_count_against_the_stream_caps() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let host = app.token(&alice, "sessions").await;
    let (session, agent) = app.session(&host).await;
    let caller = format!("agent:{session}");

    // One waiting call holds one place while it waits, none after.
    let client = connect(&app, Some(&agent)).await.unwrap();
    let waiting = tokio::spawn(async move {
        let result = call(
            &client,
            "ask",
            json!({ "question": "Ship it?", "wait_seconds": 3 }),
        )
        .await;
        crate::helpers::mcp::structured(result)
    });
    until_waiting(&app, &caller).await;
    assert_eq!(app.state.open_streams.held(&caller), 1);
    let body: Value = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["status"], "pending", "{body}");
    assert_eq!(app.state.open_streams.held(&caller), 0);

    // With the caller's places all taken (by event streams, say), one more
    // waiting call is refused instead of held.
    let _held: Vec<_> = (0..PER_CALLER)
        .map(|_| {
            app.state
                .open_streams
                .open(caller.clone(), Some("127.0.0.1"))
                .unwrap()
        })
        .collect();
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{session}/widgets/ask"),
            &agent,
            &json!({ "question": "Deploy now?", "wait_seconds": 30 }),
        )
        .await;
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_streams", None).await;
}
