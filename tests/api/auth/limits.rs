//! Abuse limits, measured against a running daemon: open event streams and
//! long-polls per caller and per address, request body and header sizes,
//! and the login limiter across many names from one address. (The
//! per-agent rate and the per-session pending cap are measured in
//! `widgets::env_vars::agents_cannot_flood_a_session`.)

use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::json;
use widgetd::stream_limits::{PER_ADDRESS, PER_CALLER};
use widgetd_domain::auth::Role;

use crate::helpers::{TestApp, assert_error, spawn_app};

async fn open_stream(app: &TestApp, token: &str, session: &str) -> Response {
    app.get(&format!("/api/v1/sessions/{session}/events"), token)
        .await
}

#[tokio::test]
async fn event_streams_and_long_polls_are_capped_per_caller_and_per_address() {
    let app = spawn_app().await;
    let mut held = Vec::new();
    let mut callers = Vec::new();
    for n in 0..PER_ADDRESS / PER_CALLER {
        let user = app.user(&format!("user{n}"), Role::Member).await;
        let token = app.token(&user, "sessions").await;
        let (session, _) = app.session(&token).await;
        callers.push((token, session));
    }
    let (token, session) = callers[0].clone();
    for _ in 0..PER_CALLER {
        let r = open_stream(&app, &token, &session).await;
        assert_eq!(r.status(), StatusCode::OK);
        held.push(r);
    }
    // One more for the same caller: a stream or a long-poll is refused.
    let r = open_stream(&app, &token, &session).await;
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_streams", None).await;
    let poll = format!("/api/v1/sessions/{session}/prompts?wait=30");
    let r = app.get(&poll, &token).await;
    assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_streams", None).await;
    // A poll that does not wait holds nothing open and still works.
    let r = app
        .get(
            &format!("/api/v1/sessions/{session}/prompts?wait=0"),
            &token,
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);

    // Other callers from the same address, up to the address's cap.
    for (token, session) in &callers[1..] {
        for _ in 0..PER_CALLER {
            let r = open_stream(&app, token, session).await;
            assert_eq!(r.status(), StatusCode::OK);
            held.push(r);
        }
    }
    let user = app.user("late", Role::Member).await;
    let late = app.token(&user, "sessions").await;
    let (late_session, _) = app.session(&late).await;
    let r = open_stream(&app, &late, &late_session).await;
    let message = assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_streams", None).await;
    assert!(
        message.contains(&format!("{PER_ADDRESS} per address")),
        "{message}"
    );

    // A stream that ends gives its place back.
    drop(held.pop());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = open_stream(&app, &late, &late_session).await;
        if r.status() == StatusCode::OK {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the place never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn oversized_bodies_and_headers_are_refused() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let token = app.token(&alice, "env:write").await;
    let body = json!({ "value": "v".repeat(3 << 20), "scope": "global" });
    let r = app.put_env(&token, "BIG", &body).await;
    assert_error(
        r,
        StatusCode::BAD_REQUEST,
        "body_unreadable",
        Some("vvvvvvvvvv"),
    )
    .await;
    assert_eq!(app.count("SELECT count(*) FROM env_vars").await, 0);

    // hyper's cap on the request head (about 400 KiB).
    let r = app
        .client
        .get(format!("{}/api/v1/me", app.url))
        .header("x-padding", "p".repeat(1 << 20))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
}

#[tokio::test]
async fn one_address_trying_many_names_is_limited() {
    let app = spawn_app().await;
    let (mut tried_before_refusal, mut refused) = (0, 0);
    for n in 0..30 {
        let r = app
            .client
            .post(format!("{}/login", app.url))
            .form(&[
                ("username", format!("guess{n}").as_str()),
                ("password", "wrong password!"),
            ])
            .send()
            .await
            .unwrap();
        match r.status() {
            StatusCode::UNAUTHORIZED if refused == 0 => tried_before_refusal += 1,
            // The bucket regains one attempt every 3 s meanwhile.
            StatusCode::UNAUTHORIZED => {}
            StatusCode::TOO_MANY_REQUESTS => {
                assert!(r.headers().contains_key("retry-after"));
                refused += 1;
            }
            other => panic!("login answered {other}"),
        }
    }
    // 20 at once per address (limits::PER_ADDRESS), whatever the names,
    // plus the one attempt every 3 s regained while the hashes ran.
    assert!(
        (20..=23).contains(&tried_before_refusal),
        "{tried_before_refusal} names tried before the first refusal"
    );
    assert!(refused >= 5, "only {refused} of the last 10 refused");
}
