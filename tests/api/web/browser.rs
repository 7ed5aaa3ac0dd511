//! The web app in a real headless Chromium (and, where no browser is needed,
//! over plain HTTP as a browser would send it): answering widgets live, XSS
//! staying inert, CSRF, the session cookie, and no value on any page.
//!
//! The tests that drive Chromium are in `tests/slow/web/browser.rs`.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{
    Browser, PASSWORD, Scene, TestApp, canary, scene, session_cookie, spawn_app, spawn_app_with,
    widget_status,
};

/// A 403 refusal with `code`: JSON for the API-style handlers, an error
/// page (with the same message) for the page handlers.
async fn assert_refused(r: Response, code: &str, what: &str) {
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "{what}");
    let json = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("application/json"));
    let text = r.text().await.unwrap();
    if json {
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"]["code"], code, "{what}: {text}");
    } else {
        let message = match code {
            "csrf_origin" => "the request&#39;s Origin is not this site",
            "csrf_cross_site" => "cross-site requests cannot change anything here",
            _ => "the form is stale or was not sent from this site",
        };
        assert!(text.contains(message), "{what}: expected {code}: {text}");
    }
}

async fn counts(app: &TestApp) -> Vec<(&'static str, i64)> {
    let mut all = Vec::new();
    for table in [
        "widgets",
        "env_vars",
        "prompts",
        "sessions",
        "messages",
        "events",
        "audit_log",
        "web_sessions",
    ] {
        all.push((
            table,
            app.count(&format!("SELECT count(*) FROM {table}")).await,
        ));
    }
    all
}

#[tokio::test]
async fn cross_site_posts_and_gets_change_nothing() {
    let app = spawn_app().await;
    let Scene {
        host: _,
        session,
        agent,
    } = scene(&app, "alice").await;
    let id = app
        .pending_widget(&agent, &session, &["HUBSPOT_API_KEY"])
        .await;
    let browser = app.login("alice").await;
    let secret = canary("csrf");
    let before = counts(&app).await;

    let forms: Vec<(String, Vec<(&str, &str)>)> = vec![
        (
            format!("/widgets/{id}/submit"),
            vec![("value.HUBSPOT_API_KEY", &secret), ("scope", "global")],
        ),
        (format!("/widgets/{id}/dismiss"), vec![]),
        ("/sessions".into(), vec![("title", "planted")]),
        (
            "/settings/env".into(),
            vec![("name", "PLANTED_KEY"), ("value", &secret)],
        ),
        ("/settings/env/delete".into(), vec![("name", "PLANTED_KEY")]),
        ("/logout".into(), vec![]),
    ];
    let csrf = browser.csrf.as_str();
    let url = |path: &str| format!("{}{path}", app.url);
    for (path, fields) in &forms {
        let with_token: Vec<(&str, &str)> = [("csrf_token", csrf)]
            .into_iter()
            .chain(fields.iter().copied())
            .collect();
        let post = || app.client.post(url(path)).header("cookie", &browser.cookie);
        // (a) another site's Origin, even with the right token.
        for origin in ["https://evil.example", "null", "http://127.0.0.1:1"] {
            let r = post()
                .header("origin", origin)
                .form(&with_token)
                .send()
                .await
                .unwrap();
            assert_refused(r, "csrf_origin", &format!("{path} from {origin}")).await;
        }
        // (b) the browser says the request comes from another site.
        for site in ["cross-site", "same-site"] {
            let r = post()
                .header("sec-fetch-site", site)
                .form(&with_token)
                .send()
                .await
                .unwrap();
            assert_refused(r, "csrf_cross_site", &format!("{path} {site}")).await;
        }
        // (c) same origin, but no token or a wrong one.
        let wrong: Vec<(&str, &str)> = [("csrf_token", "forged")]
            .into_iter()
            .chain(fields.iter().copied())
            .collect();
        for body in [fields, &wrong] {
            let r = post()
                .header("origin", &app.url)
                .header("sec-fetch-site", "same-origin")
                .form(body)
                .send()
                .await
                .unwrap();
            assert_refused(r, "csrf_token", &format!("{path} without its token")).await;
        }
    }
    // The login form too: no session may be created from another site.
    for (header, value) in [
        ("origin", "https://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let r = app
            .client
            .post(url("/login"))
            .header(header, value)
            .form(&[("username", "alice"), ("password", PASSWORD)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "login with {header}");
        assert!(session_cookie(&r).is_none(), "a refused login set a cookie");
    }

    // GETs, even cross-site ones, only read; a GET to a form's action does nothing.
    let pages = [
        ("/".to_owned(), StatusCode::OK),
        (format!("/sessions/{session}"), StatusCode::OK),
        ("/settings/env".to_owned(), StatusCode::OK),
        (format!("/sessions/{session}/widgets/{id}"), StatusCode::OK),
        ("/login".to_owned(), StatusCode::SEE_OTHER),
        ("/api/v1/me".to_owned(), StatusCode::OK),
        (
            format!("/widgets/{id}/submit?csrf_token={csrf}&value.HUBSPOT_API_KEY={secret}"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            format!("/widgets/{id}/dismiss?csrf_token={csrf}"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            format!("/logout?csrf_token={csrf}"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            format!("/settings/env/delete?csrf_token={csrf}&name=X"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
    ];
    for site in [None, Some("cross-site")] {
        for (path, status) in &pages {
            let mut request = app.client.get(url(path)).header("cookie", &browser.cookie);
            if let Some(site) = site {
                request = request.header("sec-fetch-site", site);
            }
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), *status, "GET {path} ({site:?})");
            assert!(!r.text().await.unwrap().contains(&secret), "GET {path}");
        }
    }

    assert_eq!(
        counts(&app).await,
        before,
        "a refused request changed something"
    );
    assert_eq!(widget_status(&app, &agent, &id).await, "pending");
    let r = app
        .client
        .get(url("/api/v1/me"))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the refused logouts logged out");

    // What Chromium really sends for a same-origin form post from a page
    // served with `Referrer-Policy: no-referrer`: `Origin: null`, with
    // `Sec-Fetch-Site: same-origin`. That must be accepted.
    let r = app
        .client
        .post(url("/sessions"))
        .header("cookie", &browser.cookie)
        .header("origin", "null")
        .header("sec-fetch-site", "same-origin")
        .form(&[("csrf_token", csrf), ("title", "from the browser")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "a same-origin form post as Chromium sends it was refused"
    );
    let r = app
        .client
        .post(url("/login"))
        .header("origin", "null")
        .header("sec-fetch-site", "same-origin")
        .form(&[("username", "alice"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "a login as Chromium sends it was refused"
    );
}

/// The `Set-Cookie` line for the session cookie `name`.
fn set_cookie(r: &Response, name: &str) -> String {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie in {:?}", r.headers()))
        .to_owned()
}

/// Attribute names (lowercase) and values of a `Set-Cookie` line.
fn cookie_attributes(line: &str) -> Vec<(String, String)> {
    line.split(';')
        .skip(1)
        .map(|a| {
            let (k, v) = a.trim().split_once('=').unwrap_or((a.trim(), ""));
            (k.to_ascii_lowercase(), v.to_owned())
        })
        .collect()
}

async fn me(app: &TestApp, cookie: &str) -> StatusCode {
    app.client
        .get(format!("{}/api/v1/me", app.url))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .status()
}

async fn post_login(app: &TestApp, user: &str, password: &str) -> Response {
    app.client
        .post(format!("{}/login", app.url))
        .form(&[("username", user), ("password", password)])
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn session_cookies_follow_the_contract() {
    let app = spawn_app().await;
    app.user("alice", widgetd_domain::auth::Role::Member).await;

    let r = post_login(&app, "alice", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let line = set_cookie(&r, "widgetd");
    let attributes = cookie_attributes(&line);
    let names: Vec<&str> = attributes.iter().map(|(k, _)| k.as_str()).collect();
    assert!(names.contains(&"httponly"), "{line}");
    assert!(
        attributes.contains(&("samesite".into(), "Strict".into())),
        "{line}"
    );
    assert!(attributes.contains(&("path".into(), "/".into())), "{line}");
    assert!(!names.contains(&"secure"), "Secure on plain HTTP: {line}");
    assert!(
        !names.contains(&"domain"),
        "a host-only cookie has no Domain: {line}"
    );
    for name in &names {
        assert!(
            ["httponly", "samesite", "path", "max-age", "expires"].contains(name),
            "unexpected attribute {name}: {line}"
        );
    }
    if let Some((_, age)) = attributes.iter().find(|(k, _)| k == "max-age") {
        let age: i64 = age.parse().unwrap();
        assert!(0 < age && age <= 2 * 3600, "idle timeout: {line}");
    }
    let first = session_cookie(&r).unwrap();
    assert_eq!(me(&app, &first).await, StatusCode::OK);

    // Logging in again with that cookie cycles the id: the old one is dead.
    let second = app
        .login_with("alice", PASSWORD, Some(&first))
        .await
        .unwrap();
    assert_ne!(second.cookie, first);
    assert_eq!(me(&app, &first).await, StatusCode::UNAUTHORIZED);
    assert_eq!(me(&app, &second.cookie).await, StatusCode::OK);
    // So is an id planted before login.
    let planted = "widgetd=AAAAAAAAAAAAAAAAAAAAAA";
    let third = app
        .login_with("alice", PASSWORD, Some(planted))
        .await
        .unwrap();
    assert_ne!(third.cookie, planted);
    assert_eq!(me(&app, planted).await, StatusCode::UNAUTHORIZED);
    assert_eq!(me(&app, &third.cookie).await, StatusCode::OK);
    let sessions = app.count("SELECT count(*) FROM web_sessions").await;
    assert_eq!(sessions, 2, "the cycled-out session is deleted server-side");

    // Logout removes the session server-side and the cookie client-side.
    let r = app.post_form(&second, "/logout", &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/login");
    let removal = set_cookie(&r, "widgetd");
    let removal_attrs = cookie_attributes(&removal);
    assert!(
        removal_attrs.contains(&("max-age".into(), "0".into()))
            || removal_attrs
                .iter()
                .any(|(k, v)| k == "expires" && v.contains("1970")),
        "logout leaves the cookie alive: {removal}"
    );
    assert_eq!(me(&app, &second.cookie).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.count("SELECT count(*) FROM web_sessions").await,
        sessions - 1
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'logout'")
            .await,
        1,
        "logging out is audited"
    );
    assert_eq!(
        me(&app, &third.cookie).await,
        StatusCode::OK,
        "other logins stay"
    );

    // A wrong password or an unknown user: the same generic page, no session.
    for (user, password) in [("alice", "wrong password"), ("nobody", "wrong password")] {
        let r = post_login(&app, user, password).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert!(session_cookie(&r).is_none());
        let page = r.text().await.unwrap();
        assert!(
            page.contains("The user name or password is wrong."),
            "{page}"
        );
        assert!(!page.contains(password), "the page echoes the password");
    }
    assert_eq!(
        app.count("SELECT count(*) FROM web_sessions").await,
        sessions - 1
    );

    // Rapid guesses are slowed down (a fresh daemon, so the counts above don't matter).
    let app = spawn_app().await;
    app.user("alice", widgetd_domain::auth::Role::Member).await;
    for attempt in 1..=5 {
        let r = post_login(&app, "alice", "guess").await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    for password in ["guess", PASSWORD] {
        let r = post_login(&app, "alice", password).await;
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(retry >= 1, "Retry-After: {retry}");
        assert!(session_cookie(&r).is_none(), "a limited login got in");
    }

    // Under TLS the cookie is `__Host-` prefixed and Secure.
    let app = spawn_app_with(|s| s.domain.public_url = "https://widgetd.example".into()).await;
    app.user("alice", widgetd_domain::auth::Role::Member).await;
    let r = post_login(&app, "alice", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let line = set_cookie(&r, "__Host-widgetd");
    let attributes = cookie_attributes(&line);
    for wanted in ["secure", "httponly"] {
        assert!(attributes.iter().any(|(k, _)| k == wanted), "{line}");
    }
    assert!(attributes.contains(&("path".into(), "/".into())), "{line}");
    assert!(!attributes.iter().any(|(k, _)| k == "domain"), "{line}");
}

#[tokio::test]
async fn no_page_shows_a_stored_value() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser: Browser = app.login("alice").await;
    let from_widget = canary("widget-form");
    let from_settings = canary("settings-form");

    let id = app
        .pending_widget(&agent, &session, &["HUBSPOT_API_KEY"])
        .await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("value.HUBSPOT_API_KEY", &from_widget), ("scope", "global")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = app
        .post_form(
            &browser,
            "/settings/env",
            &[
                ("name", "SETTINGS_KEY"),
                ("value", &from_settings),
                ("session_id", &session),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    // A new request for a saved name offers the saved value, without showing it.
    let again = app
        .pending_widget(&agent, &session, &["HUBSPOT_API_KEY", "NEW_KEY"])
        .await;
    assert_eq!(
        app.env_of(&session, &host).await,
        json!({ "HUBSPOT_API_KEY": from_widget, "SETTINGS_KEY": from_settings }),
        "both values were stored"
    );

    let mut seen = Vec::new();
    let cookie_pages = [
        "/".to_owned(),
        format!("/sessions/{session}"),
        "/settings/env".to_owned(),
        format!("/sessions/{session}/widgets/{id}"),
        format!("/sessions/{session}/widgets/{again}"),
        "/api/v1/me".to_owned(),
        "/login".to_owned(),
        "/static/app.js".to_owned(),
    ];
    for path in &cookie_pages {
        let r = app
            .client
            .get(format!("{}{path}", app.url))
            .header("cookie", &browser.cookie)
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success() || r.status().is_redirection(),
            "{path}"
        );
        seen.push((
            path.clone(),
            format!("{:?}", r.headers()),
            r.text().await.unwrap(),
        ));
    }
    let api = [
        (format!("/api/v1/widgets/{id}"), &agent),
        (format!("/api/v1/widgets/{again}"), &agent),
        (format!("/api/v1/widgets/{id}"), &host),
        ("/api/v1/env".to_owned(), &host),
        (format!("/api/v1/sessions/{session}/prompts"), &host),
    ];
    for (path, token) in &api {
        let r = app.get(path, token).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        seen.push((
            path.clone(),
            format!("{:?}", r.headers()),
            r.text().await.unwrap(),
        ));
    }
    // The event stream, read until the answer's event has been sent.
    let mut events = app
        .get(&format!("/api/v1/sessions/{session}/events"), &agent)
        .await;
    let mut stream = String::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(chunk) = events.chunk().await.unwrap() {
            stream.push_str(&String::from_utf8_lossy(&chunk));
            if stream.matches("event: widget:created").count() == 2 {
                return;
            }
        }
    })
    .await;
    assert!(stream.contains("event: widget:resolved"), "{stream}");
    seen.push(("events".into(), String::new(), stream));
    let fragment = &seen[4].2;
    assert!(
        fragment.contains("name=\"use_saved.HUBSPOT_API_KEY\""),
        "the saved value is offered: {fragment}"
    );

    for (path, headers, body) in &seen {
        for value in [&from_widget, &from_settings] {
            assert!(
                !body.contains(value.as_str()),
                "{path} shows a stored value"
            );
            assert!(
                !headers.contains(value.as_str()),
                "{path}'s headers carry a stored value"
            );
        }
    }
}
