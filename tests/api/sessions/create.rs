//! Creating sessions and the credentials that may do so.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::{Browser, PASSWORD, TestApp, assert_error, spawn_app};

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
    let body: Value = response.json().await.unwrap();
    let title: String = sqlx::query_scalar("SELECT title FROM sessions WHERE id = $1")
        .bind(body["session_id"].as_str().unwrap())
        .fetch_one(&app.state.db.read)
        .await
        .unwrap();
    // Readable: minutes and a zone, no fractional seconds or `T`.
    let when = title
        .strip_prefix("Session of ")
        .expect("the default title");
    assert!(when.ends_with(" UTC") && !when.contains('.'), "{title}");
    assert_eq!(when.as_bytes()[10], b' ', "date and time apart: {title}");
    assert_eq!(when.len(), "2026-11-23 08:15 UTC".len(), "{title}");
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

async fn me_status(app: &TestApp, browser: &Browser) -> StatusCode {
    app.client
        .get(format!("{}/api/v1/me", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap()
        .status()
}

async fn change_password(
    app: &TestApp,
    browser: &Browser,
    current: &str,
    new: &str,
    repeat: &str,
) -> reqwest::Response {
    let fields = [
        ("current_password", current),
        ("new_password", new),
        ("repeat_password", repeat),
    ];
    app.post_form(browser, "/settings/password", &fields).await
}

/// People change their own password: the current one is checked, and every
/// browser session of theirs ends (an admin's reset ends them too).
#[tokio::test]
async fn a_new_password_ends_every_browser_session() {
    let app = spawn_app().await;
    app.user("alice", Role::Member).await;
    app.user("root", Role::Admin).await;
    let here = app.login("alice").await;
    let elsewhere = app.login("alice").await;
    let new = "a brand new long password";
    for (current, new, repeat, code) in [
        ("not the password at all", new, new, "wrong_password"),
        (PASSWORD, new, "something else entirely", "passwords_differ"),
        (PASSWORD, "short", "short", "weak_password"),
    ] {
        let r = change_password(&app, &here, current, new, repeat).await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let page = r.text().await.unwrap();
        assert!(
            page.contains(&format!("data-code=\"{code}\"")),
            "{code}: {page}"
        );
        assert!(!page.contains(current), "the page repeats a password");
    }
    assert_eq!(
        me_status(&app, &elsewhere).await,
        StatusCode::OK,
        "a refused change ends nothing"
    );

    let r = change_password(&app, &here, PASSWORD, new, new).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/login");
    assert_eq!(me_status(&app, &here).await, StatusCode::UNAUTHORIZED);
    assert_eq!(me_status(&app, &elsewhere).await, StatusCode::UNAUTHORIZED);
    assert!(app.login_with("alice", PASSWORD, None).await.is_none());
    let again = app
        .login_with("alice", new, None)
        .await
        .expect("the new password works");
    let audited = app
        .count(
            "SELECT count(*) FROM audit_log WHERE action = 'user.passwd' AND actor LIKE 'user:%'",
        )
        .await;
    assert_eq!(audited, 1);

    // An admin's reset ends the person's sessions as well.
    let admin = app.login("root").await;
    let r = app
        .post_form(&admin, "/admin/users/password", &[("name", "alice")])
        .await;
    assert!(
        r.status().is_success() || r.status().is_redirection(),
        "{}",
        r.status()
    );
    assert_eq!(me_status(&app, &again).await, StatusCode::UNAUTHORIZED);
    assert_eq!(me_status(&app, &admin).await, StatusCode::OK);
}

/// A login with a user name or password longer than any account can have is
/// refused before the rate limiter and argon2: it costs nothing to keep, and
/// a flood of them does not lock out the address's real logins.
#[tokio::test]
async fn overlong_login_names_are_refused_before_the_limiter() {
    let app = spawn_app().await;
    app.user("alice", Role::Member).await;
    let long = "n".repeat(512 * 1024);
    for _ in 0..25 {
        let r = app
            .client
            .post(format!("{}/login", app.url))
            .form(&[("username", long.as_str()), ("password", PASSWORD)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert!(!r.text().await.unwrap().contains(&long[..100]));
    }
    assert!(
        app.login_with("alice", PASSWORD, None).await.is_some(),
        "the overlong attempts used up the address's bucket"
    );
}

/// JSON bodies are parsed strictly: the JSON content type only, and one
/// value with nothing after it.
#[tokio::test]
async fn json_bodies_are_parsed_strictly() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let token = app.token(&alice, "sessions").await;
    let post = |content_type: &'static str, body: &'static str| {
        app.client
            .post(format!("{}/api/v1/sessions", app.url))
            .bearer_auth(&token)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let r = post("application/jsonxyz", r#"{"title": "t"}"#)
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "json_expected", None).await;
    let r = post("application/json", r#"{"title": "t"} {"title": "u"}"#)
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    assert_eq!(app.count("SELECT count(*) FROM sessions").await, 0);
    let r = post("application/json; charset=utf-8", r#"{"title": "t"}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
}

/// Every route answers only to the daemon's own host names (DNS rebinding
/// onto `/login` or the API finds nothing).
#[tokio::test]
async fn foreign_host_names_are_refused_on_every_route() {
    let app = spawn_app().await;
    for path in ["/login", "/api/v1/me", "/metrics", "/static/app.css"] {
        let r = app
            .client
            .get(format!("{}{path}", app.url))
            .header("host", "rebound.attacker.example")
            .send()
            .await
            .unwrap();
        assert_error(r, StatusCode::MISDIRECTED_REQUEST, "unknown_host", None).await;
        let port = app.url.rsplit(':').next().unwrap();
        for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
            let r = app
                .client
                .get(format!("{}{path}", app.url))
                .header("host", host.as_str())
                .send()
                .await
                .unwrap();
            assert_ne!(r.status(), StatusCode::MISDIRECTED_REQUEST, "{host}{path}");
        }
    }
}

/// A long transcript is shown 200 entries a page, newest last, with a link
/// to the earlier ones.
#[tokio::test]
async fn a_long_transcript_is_paged() {
    let app = spawn_app().await;
    let s = crate::helpers::scene(&app, "alice").await;
    for n in 0..210 {
        let r = app
            .post_json(
                &format!("/api/v1/sessions/{}/messages", s.session),
                &s.host,
                &json!({ "text": format!("line-{n}-end") }),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let browser = app.login("alice").await;
    let get = |path: String| {
        let request = app
            .client
            .get(format!("{}{path}", app.url))
            .header("cookie", &browser.cookie);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let page = get(format!("/sessions/{}", s.session)).await;
    assert!(page.contains("line-209-end") && page.contains("line-10-end"));
    assert!(!page.contains("line-9-end"), "more than one page shown");
    let earlier = page
        .split("id=\"earlier\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a link to earlier entries")
        .to_owned();
    let page = get(earlier).await;
    assert!(page.contains("line-0-end") && page.contains("line-9-end"));
    assert!(!page.contains("line-10-end"));
}
