//! Event streams end when access ends: a revoked share, a disabled user, a
//! logout, a revoked API token, an archived session.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::json;
use widgetd_domain::auth::{self, Role, tokens::TokenScopes};

use crate::helpers::{Browser, TestApp, eventually, spawn_app};

/// Opens the session's event stream with a cookie or a bearer token.
async fn open(
    app: &TestApp,
    session: &str,
    browser: Option<&Browser>,
    token: Option<&str>,
) -> Response {
    let mut request = app
        .client
        .get(format!("{}/api/v1/sessions/{session}/events", app.url));
    if let Some(b) = browser {
        request = request.header("cookie", &b.cookie);
    }
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let r = request.send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r
}

/// Reads the stream until it ends into `text` (readable meanwhile);
/// returns all that came.
async fn drain(mut r: Response, text: Arc<Mutex<String>>) -> String {
    while let Ok(Some(chunk)) = r.chunk().await {
        text.lock()
            .unwrap()
            .push_str(&String::from_utf8_lossy(&chunk));
    }
    text.lock().unwrap().clone()
}

/// `text` said in `session` by the host.
async fn say(app: &TestApp, host: &str, session: &str, text: &str) {
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{session}/messages"),
            host,
            &json!({ "text": text }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn streams_end_when_access_ends() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    for name in ["bob", "carol", "dave"] {
        app.user(name, Role::Member).await;
    }
    let host = app.token(&alice, "sessions").await;
    let watcher_token = {
        let mut conn = app.state.db.write.acquire().await.unwrap();
        let scopes = TokenScopes::parse("sessions").unwrap();
        let (id, token) = auth::create_api_token(&mut conn, &alice.id, &scopes)
            .await
            .unwrap();
        (id, secrecy::ExposeSecret::expose_secret(&token).to_owned())
    };
    let (session, _) = app.session(&host).await;
    let (doomed, doomed_agent) = app.session(&host).await;
    let share = json!({ "others_can": "none", "grants": { "bob": "view", "carol": "view", "dave": "view" } });
    let r = app
        .client
        .put(format!("{}/api/v1/sessions/{session}/sharing", app.url))
        .bearer_auth(&host)
        .json(&share)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let (bob, carol, dave) = (
        app.login("bob").await,
        app.login("carol").await,
        app.login("dave").await,
    );

    let streams = [
        (
            "share revoked",
            open(&app, &session, Some(&bob), None).await,
        ),
        (
            "user disabled",
            open(&app, &session, Some(&carol), None).await,
        ),
        ("logged out", open(&app, &session, Some(&dave), None).await),
        (
            "token revoked",
            open(&app, &session, None, Some(&watcher_token.1)).await,
        ),
        (
            "session archived",
            open(&app, &doomed, None, Some(&doomed_agent)).await,
        ),
    ];
    let readers: Vec<_> = streams
        .into_iter()
        .map(|(why, r)| {
            let text = Arc::new(Mutex::new(String::new()));
            (why, text.clone(), tokio::spawn(drain(r, text)))
        })
        .collect();
    // Every stream is live: each hears a line said while access holds.
    let before = "said while access holds";
    say(&app, &host, &session, before).await;
    say(&app, &host, &doomed, before).await;
    eventually(
        "every stream to hear the first line",
        Duration::from_secs(20),
        || async {
            readers
                .iter()
                .all(|(_, text, _)| text.lock().unwrap().contains(before))
        },
    )
    .await;

    let keep_carol_out = json!({ "others_can": "none", "grants": { "bob": "none", "carol": "view", "dave": "view" } });
    let r = app
        .client
        .put(format!("{}/api/v1/sessions/{session}/sharing", app.url))
        .bearer_auth(&host)
        .json(&keep_carol_out)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    {
        let mut conn = app.state.db.write.acquire().await.unwrap();
        auth::set_disabled(&mut conn, "carol", true).await.unwrap();
        auth::revoke_api_token(&mut conn, &watcher_token.0)
            .await
            .unwrap();
    }
    let r = app.post_form(&dave, "/logout", &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{doomed}/archive"),
            &host,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);

    // Something said after that reaches none of them.
    let secret_line = "said after access ended";
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{session}/messages"),
            &host,
            &json!({ "text": secret_line }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    for (why, _, reader) in readers {
        // A correctness deadline (the re-check runs every 10 s), not a speed test.
        let text = tokio::time::timeout(Duration::from_secs(30), reader)
            .await
            .unwrap_or_else(|_| panic!("the stream stayed open after: {why}"))
            .unwrap();
        assert!(!text.contains(secret_line), "{why}: {text}");
    }
}
