//! Creating sessions and the credentials that may do so.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd::auth::Role;

use crate::helpers::{assert_error, spawn_app};

#[tokio::test]
async fn an_api_token_with_the_sessions_scope_creates_a_session() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let token = app.token(&alice, "sessions").await;

    let response = app
        .post_json("/api/v1/sessions", &token, &json!({ "title": "Deploy" }))
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: Value = response.json().await.unwrap();
    assert!(uuid::Uuid::parse_str(body["session_id"].as_str().unwrap()).is_ok());
    assert!(body["agent_token"].as_str().unwrap().starts_with("wda_"));
    assert_eq!(body["mcp_url"], format!("{}/mcp", app.url));

    // No body at all is fine too: the title defaults.
    let response = app
        .client
        .post(format!("{}/api/v1/sessions", app.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn other_credentials_cannot_create_sessions() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let env_only = app.token(&alice, "env:read,env:write").await;
    let good = app.token(&alice, "sessions").await;
    let (_, agent) = app.session(&good).await;
    let body = json!({});

    let r = app
        .client
        .post(format!("{}/api/v1/sessions", app.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "missing_token", None).await;
    let r = app
        .post_json("/api/v1/sessions", "wdt_not-a-real-token", &body)
        .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;
    let r = app
        .post_json("/api/v1/sessions", "something-else", &body)
        .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;
    let r = app.post_json("/api/v1/sessions", &env_only, &body).await;
    let message = assert_error(r, StatusCode::FORBIDDEN, "forbidden", None).await;
    assert!(message.contains("`sessions` scope"), "{message}");
    let r = app.post_json("/api/v1/sessions", &agent, &body).await;
    assert_error(r, StatusCode::FORBIDDEN, "forbidden", None).await;
}

#[tokio::test]
async fn bad_session_bodies_get_stable_codes() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let token = app.token(&alice, "sessions").await;

    let r = app
        .post_json(
            "/api/v1/sessions",
            &token,
            &json!({ "title": "x".repeat(201) }),
        )
        .await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_title", None).await;
    let r = app
        .post_json("/api/v1/sessions", &token, &json!({ "titel": "typo" }))
        .await;
    let message = assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    assert!(message.contains("unknown field; allowed:"), "{message}");
    assert!(!message.contains("titel"), "{message}");
    let r = app
        .client
        .post(format!("{}/api/v1/sessions", app.url))
        .bearer_auth(&token)
        .header("content-type", "text/plain")
        .body("title=x")
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "json_expected", None).await;
}
