//! The authorization matrix: every route, page, stream and MCP endpoint ×
//! every kind of caller, in one table. A route added to the code without a
//! row here fails `every_route_has_a_row`.

use std::collections::BTreeSet;

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::{Browser, TestApp, spawn_app};

/// The callers, in table order.
const CALLERS: [&str; 9] = [
    "anonymous",
    "agent",
    "other agent",
    "token without scope",
    "creator",
    "viewer",
    "prompter",
    "stranger",
    "admin",
];

/// How a route is called: with the caller's bearer token, its browser
/// cookie, or (streams) a cookie for people and a token for agents.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Bearer,
    Cookie,
    Stream,
}

/// One row: method, path template, how, who is allowed (a letter per caller,
/// `.` for refused), and the JSON or form body.
struct Row {
    method: &'static str,
    path: &'static str,
    via: Via,
    allowed: &'static str,
}

const fn row(method: &'static str, path: &'static str, via: Via, allowed: &'static str) -> Row {
    Row {
        method,
        path,
        via,
        allowed,
    }
}

use Via::{Bearer, Cookie, Stream};

/// Letters: n anonymous, a agent, o other agent, t token without scope,
/// c creator, v viewer, p prompter, s stranger, m admin. `*` = public.
const TABLE: &[Row] = &[
    row("GET", "/healthz", Bearer, "*"),
    row("GET", "/readyz", Bearer, "*"),
    row("GET", "/metrics", Bearer, "........m"),
    row("GET", "/static/{name}", Cookie, "*"),
    row("GET", "/favicon.ico", Cookie, "*"),
    row("GET", "/login", Cookie, "*"),
    row("POST", "/login", Cookie, "*"),
    row("POST", "/logout", Cookie, "....cvpsm"),
    row("GET", "/api/v1/me", Cookie, "....cvpsm"),
    row("GET", "/", Cookie, "....cvpsm"),
    row("POST", "/sessions", Cookie, "....cvpsm"),
    row("GET", "/sessions/{id}", Cookie, "....cvp.."),
    row("POST", "/sessions/{id}/sharing", Cookie, "....c...."),
    row("POST", "/sessions/{id}/reply", Cookie, "....c.p.."),
    row("GET", "/sessions/{id}/settings", Cookie, "....c...."),
    row("POST", "/sessions/{id}/agent-token", Cookie, "....c...."),
    row("POST", "/sessions/{id}/archive", Cookie, "....c...."),
    row(
        "POST",
        "/api/v1/sessions/{id}/agent-token",
        Bearer,
        "....c....",
    ),
    row(
        "DELETE",
        "/api/v1/sessions/{id}/agent-token",
        Bearer,
        "....c....",
    ),
    row(
        "GET",
        "/sessions/{id}/widgets/{widget_id}",
        Cookie,
        "....cvp..",
    ),
    row("GET", "/widgets/{id}", Cookie, "....c.p.."),
    row("POST", "/widgets/{id}/submit", Cookie, "....c.p.."),
    row("POST", "/widgets/{id}/dismiss", Cookie, "....c.p.."),
    // The fixture's widget has no image: nobody gets one (the annotation
    // tests check who gets an image that exists).
    row("GET", "/widgets/{id}/image", Cookie, "........."),
    row("GET", "/settings/env", Cookie, "....cvpsm"),
    row("POST", "/settings/env", Cookie, "....cvpsm"),
    row("POST", "/settings/env/delete", Cookie, "....cvpsm"),
    row("GET", "/admin/users", Cookie, "........m"),
    row("POST", "/admin/users/{action}", Cookie, "........m"),
    row("GET", "/admin/audit", Cookie, "........m"),
    row("POST", "/api/v1/sessions", Bearer, "....cvpsm"),
    row("GET", "/api/v1/sessions/{id}/sharing", Bearer, "....c...."),
    row("PUT", "/api/v1/sessions/{id}/sharing", Bearer, "....c...."),
    row("GET", "/api/v1/sessions/{id}/env", Bearer, "....c...."),
    row("GET", "/api/v1/env", Bearer, "...tcvpsm"),
    row("PUT", "/api/v1/env/{name}", Bearer, "...tcvpsm"),
    row("DELETE", "/api/v1/env/{name}", Bearer, "...tcvpsm"),
    row(
        "POST",
        "/api/v1/sessions/{id}/widgets/env-vars",
        Bearer,
        ".a..c....",
    ),
    row(
        "POST",
        "/api/v1/sessions/{id}/widgets/ask-user",
        Bearer,
        ".a..c....",
    ),
    row(
        "POST",
        "/api/v1/sessions/{id}/widgets/ask",
        Bearer,
        ".a..c....",
    ),
    row(
        "POST",
        "/api/v1/sessions/{id}/widgets/approval",
        Bearer,
        ".a..c....",
    ),
    row(
        "POST",
        "/api/v1/sessions/{id}/widgets/fields",
        Bearer,
        ".a..c....",
    ),
    row(
        "POST",
        "/api/v1/sessions/{id}/widgets/clarification",
        Bearer,
        ".a..c....",
    ),
    row("GET", "/settings/approvals", Cookie, "....cvpsm"),
    row("POST", "/settings/approvals/revoke", Cookie, "....cvpsm"),
    row("GET", "/settings/webhooks", Cookie, "....cvpsm"),
    row("GET", "/settings/password", Cookie, "....cvpsm"),
    row("POST", "/settings/password", Cookie, "....cvpsm"),
    row("POST", "/settings/webhooks", Cookie, "....cvpsm"),
    row("POST", "/settings/webhooks/delete", Cookie, "....cvpsm"),
    row("GET", "/api/v1/webhooks", Bearer, "....cvpsm"),
    row("POST", "/api/v1/webhooks", Bearer, "....cvpsm"),
    row("DELETE", "/api/v1/webhooks/{id}", Bearer, "....cvpsm"),
    row("GET", "/api/v1/webhooks/deliveries", Bearer, "....cvpsm"),
    row("GET", "/settings/slack", Cookie, "....cvpsm"),
    row("POST", "/settings/slack/code", Cookie, "....cvpsm"),
    row("POST", "/settings/slack/unlink", Cookie, "....cvpsm"),
    row("GET", "/admin/slack", Cookie, "........m"),
    row("POST", "/admin/slack/connect", Cookie, "........m"),
    row("POST", "/admin/slack/disconnect", Cookie, "........m"),
    // Signed by Slack, not by a caller of ours: without its signature every
    // caller is refused (tests/api/notify/slack.rs checks the signed ones).
    row("POST", "/slack/interactions", Bearer, "*"),
    row("POST", "/slack/commands", Bearer, "*"),
    row("POST", "/api/v1/sessions/{id}/archive", Bearer, "....c...."),
    row(
        "POST",
        "/api/v1/sessions/{id}/messages",
        Bearer,
        ".a..c....",
    ),
    row(
        "POST",
        "/api/v1/sessions/{id}/hooks/claude-code",
        Bearer,
        ".a..c....",
    ),
    row(
        "GET",
        "/api/v1/sessions/{id}/hooks/claude-code",
        Bearer,
        ".a..c....",
    ),
    row("GET", "/api/v1/widgets/{id}", Bearer, ".a..c...."),
    row("POST", "/api/v1/widgets/{id}/cancel", Bearer, ".a......."),
    row("GET", "/api/v1/sessions/{id}/widgets", Bearer, ".a..c...."),
    row("GET", "/api/v1/sessions/{id}/prompts", Bearer, "....c...."),
    row(
        "POST",
        "/api/v1/sessions/{id}/prompts/{prompt_id}/ack",
        Bearer,
        "....c....",
    ),
    row("GET", "/api/v1/sessions/{id}/events", Stream, ".a..cvp.."),
    row("POST", "/mcp", Bearer, ".ao......"),
];

/// One caller's credentials.
struct Caller {
    bearer: Option<String>,
    browser: Option<Browser>,
}

/// A session of `creator`, shared with the viewer (view) and the prompter
/// (prompt), with a pending widget and a queued prompt.
struct Fixture {
    session: String,
    widget: String,
    prompt: i64,
    callers: Vec<Caller>,
}

async fn fixture(app: &TestApp) -> Fixture {
    let mut callers = vec![Caller {
        bearer: None,
        browser: None,
    }];
    let names = ["creator", "viewer", "prompter", "stranger", "admin"];
    let mut tokens = Vec::new();
    for name in names {
        let role = if name == "admin" {
            Role::Admin
        } else {
            Role::Member
        };
        let user = app.user(name, role).await;
        tokens.push(app.token(&user, "sessions,env:read,env:write").await);
        if name == "creator" {
            tokens.push(app.token(&user, "env:write").await);
        }
    }
    let (session, agent) = app.session(&tokens[0]).await;
    let (_, other_agent) = app.session(&tokens[2]).await;
    let share =
        json!({ "others_can": "none", "grants": { "viewer": "view", "prompter": "prompt" } });
    let r = app
        .client
        .put(format!("{}/api/v1/sessions/{session}/sharing", app.url))
        .bearer_auth(&tokens[0])
        .json(&share)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let widget = app.pending_widget(&agent, &session, &["MATRIX_KEY"]).await;
    let dismissed = app.pending_widget(&agent, &session, &["OTHER_KEY"]).await;
    let mut creator = Some(app.login("creator").await);
    let r = app
        .post_form(
            creator.as_ref().unwrap(),
            &format!("/widgets/{dismissed}/dismiss"),
            &[],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let prompt = app.prompts(&tokens[0], &session, 0).await[0]["prompt_id"]
        .as_i64()
        .unwrap();
    callers.push(Caller {
        bearer: Some(agent),
        browser: None,
    });
    callers.push(Caller {
        bearer: Some(other_agent),
        browser: None,
    });
    callers.push(Caller {
        bearer: Some(tokens[1].clone()),
        browser: None,
    });
    let people = [
        (0, "creator"),
        (2, "viewer"),
        (3, "prompter"),
        (4, "stranger"),
        (5, "admin"),
    ];
    for (token, name) in people {
        let browser = if name == "creator" {
            creator.take()
        } else {
            Some(app.login(name).await)
        };
        callers.push(Caller {
            bearer: Some(tokens[token].clone()),
            browser,
        });
    }
    Fixture {
        session,
        widget,
        prompt,
        callers,
    }
}

fn concrete(path: &str, f: &Fixture) -> String {
    path.replace(
        "{id}",
        if path.starts_with("/widgets") || path.starts_with("/api/v1/widgets") {
            &f.widget
        } else {
            &f.session
        },
    )
    .replace("{widget_id}", &f.widget)
    .replace("{prompt_id}", &f.prompt.to_string())
    .replace(
        "{name}",
        if path.starts_with("/static") {
            "app.css"
        } else {
            "MATRIX_OWN_KEY"
        },
    )
    .replace("{action}", "add")
}

/// A valid body for the route, so that only authorization can refuse it.
fn form_for(path: &str) -> Vec<(&'static str, String)> {
    match path {
        "/login" => vec![
            ("username", "nobody".into()),
            ("password", "wrong password here".into()),
        ],
        "/sessions" => vec![("title", "made in the matrix".into())],
        "/sessions/{id}/sharing" => vec![("others_can", "none".into())],
        "/sessions/{id}/agent-token" => vec![("action", "revoke".into())],
        "/sessions/{id}/reply" => vec![("text", "go on with the staging database".into())],
        "/widgets/{id}/submit" => vec![
            ("value.MATRIX_KEY", "matrix-value".into()),
            ("scope", "session".into()),
        ],
        "/settings/env" | "/settings/env/delete" => {
            vec![("name", "MATRIX_OWN_KEY".into()), ("value", "v".into())]
        }
        "/settings/approvals/revoke" | "/settings/webhooks/delete" => {
            vec![("id", "no-such-id".into())]
        }
        "/settings/webhooks" => vec![("url", "http://192.0.2.1:9/matrix".into())],
        "/admin/slack/connect" => vec![
            ("bot_token", "xoxb-matrix-token".into()),
            ("signing_secret", "matrix-signing-secret".into()),
        ],
        "/settings/password" => vec![
            ("current_password", crate::helpers::PASSWORD.into()),
            ("new_password", "a new long matrix password".into()),
            ("repeat_password", "a new long matrix password".into()),
        ],
        "/admin/users/{action}" => vec![(
            "name",
            format!("added-{}", uuid::Uuid::new_v4().simple())
                .chars()
                .take(30)
                .collect(),
        )],
        _ => vec![],
    }
}

fn json_for(path: &str) -> Value {
    match path {
        "/api/v1/sessions/{id}/sharing" => json!({ "others_can": "none" }),
        "/api/v1/env/{name}" => json!({ "value": "own-value" }),
        "/api/v1/webhooks" => json!({ "url": "http://192.0.2.1:9/matrix" }),
        "/api/v1/sessions/{id}/widgets/env-vars" => json!({ "names": ["NEW_KEY"], "reason": "r" }),
        "/api/v1/sessions/{id}/messages" => json!({ "text": "hello" }),
        "/api/v1/sessions/{id}/hooks/claude-code" => {
            json!({ "hook_event_name": "Notification", "message": "hello" })
        }
        "/api/v1/sessions/{id}/widgets/ask-user" => json!({ "questions": [
            { "question": "Which?", "header": "Pick", "options": [{ "label": "a" }, { "label": "b" }] } ] }),
        "/api/v1/sessions/{id}/widgets/ask" => json!({ "question": "Deploy?" }),
        "/api/v1/sessions/{id}/widgets/fields" => {
            json!({ "question": "Where?", "fields": [{ "name": "url", "type": "url" }] })
        }
        "/api/v1/sessions/{id}/widgets/approval" => {
            json!({ "tool": "Bash", "input": { "command": "ls" } })
        }
        "/api/v1/sessions/{id}/widgets/clarification" => json!({ "question": "Which?",
            "widget": { "type": "choice", "options": [{ "label": "a" }, { "label": "b" }] } }),
        "/mcp" => json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "matrix", "version": "1" } } }),
        _ => json!({}),
    }
}

async fn call(app: &TestApp, row: &Row, caller: &Caller, f: &Fixture, person: bool) -> Response {
    let url = format!("{}{}", app.url, concrete(row.path, f));
    let method: Method = row.method.parse().unwrap();
    let use_cookie = row.via == Cookie || (row.via == Stream && person);
    let mut request = app.client.request(method.clone(), &url);
    if use_cookie {
        if let Some(browser) = &caller.browser {
            request = request
                .header("cookie", &browser.cookie)
                .header("origin", &app.url);
            if method == Method::POST {
                let mut fields = vec![("csrf_token", browser.csrf.clone())];
                fields.extend(form_for(row.path));
                request = request.form(&fields);
            }
        } else if method == Method::POST {
            request = request.form(&form_for(row.path));
        }
    } else {
        if let Some(token) = &caller.bearer {
            request = request.bearer_auth(token);
        }
        if matches!(method, Method::POST | Method::PUT) {
            request = request.json(&json_for(row.path));
        }
        if row.path == "/mcp" {
            request = request.header("accept", "application/json, text/event-stream");
        }
    }
    if row.path == "/settings/env/delete" || (row.method == "DELETE" && !use_cookie) {
        prepare_delete(app, caller, use_cookie).await;
    }
    request.send().await.unwrap()
}

/// Deleting needs something to delete: the caller stores it first (if it may).
async fn prepare_delete(app: &TestApp, caller: &Caller, cookie: bool) {
    if cookie {
        if let Some(browser) = &caller.browser {
            app.post_form(
                browser,
                "/settings/env",
                &[("name", "MATRIX_OWN_KEY"), ("value", "v")],
            )
            .await;
        }
    } else if let Some(token) = &caller.bearer {
        app.put_env(token, "MATRIX_OWN_KEY", &json!({ "value": "v" }))
            .await;
    }
}

fn outcome(row: &Row, response: &Response) -> Option<bool> {
    let status = response.status();
    // Logging out and a new password end at the login page; anywhere else
    // that means "log in first".
    let to_login = !(row.path == "/logout"
        || (row.path == "/settings/password" && row.method == "POST"))
        && response
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .is_some_and(|l| l.starts_with("/login"));
    match status {
        s if s.is_server_error() => None,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND => Some(false),
        StatusCode::SEE_OTHER if to_login => Some(false),
        s if s.is_success() || s.is_redirection() => Some(true),
        _ => None,
    }
}

/// Allowed calls that change what the next caller would see.
const DISTURBING: [&str; 11] = [
    "/sessions/{id}/agent-token",
    "/sessions/{id}/archive",
    "/api/v1/sessions/{id}/agent-token",
    "/logout",
    "/settings/password",
    "/widgets/{id}/submit",
    "/widgets/{id}/dismiss",
    "/api/v1/widgets/{id}/cancel",
    "/api/v1/sessions/{id}/archive",
    "/sessions/{id}/sharing",
    "/api/v1/sessions/{id}/sharing",
];

#[tokio::test]
async fn every_caller_gets_exactly_what_the_table_says() {
    let mut failures = Vec::new();
    let shared_app = spawn_app().await;
    let shared = fixture(&shared_app).await;
    for row in TABLE {
        for (i, who) in CALLERS.iter().enumerate() {
            let expected = row.allowed == "*" || row.allowed.as_bytes()[i] != b'.';
            // An allowed call that answers, archives, reshares or logs out
            // gets a world of its own; every other call leaves it as it was.
            let fresh = if expected && row.method != "GET" && DISTURBING.contains(&row.path) {
                let app = spawn_app().await;
                let f = fixture(&app).await;
                Some((app, f))
            } else {
                None
            };
            let (app, f) = fresh
                .as_ref()
                .map_or((&shared_app, &shared), |(a, f)| (a, f));
            let person = i >= 4;
            let response = call(app, row, &f.callers[i], f, person).await;
            let status = response.status();
            match outcome(row, &response) {
                // Public: whatever the answer, it must not be a failure of ours.
                _ if row.allowed == "*" && !status.is_server_error() => {}
                Some(allowed) if allowed == expected => {}
                got => failures.push(format!(
                    "{} {} as {who}: expected {}, got {status} ({got:?})",
                    row.method,
                    row.path,
                    if expected { "allowed" } else { "refused" }
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "authorization matrix mismatches:\n{}",
        failures.join("\n")
    );
}

/// Every route the code registers, read from the source.
fn routes_in_source() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for marker in [".route(", ".route_service("] {
                for piece in text.split(marker).skip(1) {
                    let literal = piece
                        .trim_start()
                        .strip_prefix('"')
                        .and_then(|p| p.split('"').next());
                    if let Some(literal) = literal {
                        found.insert(literal.to_owned());
                    }
                }
            }
        }
    }
    found
}

#[test]
fn every_route_has_a_row() {
    let in_table: BTreeSet<String> = TABLE.iter().map(|r| r.path.to_owned()).collect();
    let in_code = routes_in_source();
    let missing: Vec<_> = in_code.difference(&in_table).collect();
    let stale: Vec<_> = in_table.difference(&in_code).collect();
    assert!(
        missing.is_empty(),
        "routes without a row in the authorization matrix: {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "rows for routes that no longer exist: {stale:?}"
    );
}

/// A refusal says what the caller lacks, in words meant for them: the
/// agent, a token, a person who may only read. The matrix above checks
/// who is refused; this checks what each is told.
#[tokio::test]
async fn each_refusal_tells_the_caller_what_it_lacks() {
    let app = spawn_app().await;
    let f = fixture(&app).await;
    let (agent, token_without_scope) = (
        f.callers[1].bearer.as_deref().unwrap(),
        f.callers[3].bearer.as_deref().unwrap(),
    );
    let viewer = f.callers[5].browser.as_ref().unwrap();
    let env = format!("/api/v1/sessions/{}/env", f.session);
    let refusals = [
        (
            "an agent reading values",
            app.get(&env, agent).await,
            "agent tokens can never read values",
        ),
        (
            "an agent draining prompts",
            app.get(&format!("/api/v1/sessions/{}/prompts", f.session), agent)
                .await,
            "agent tokens cannot do this; it needs the session creator",
        ),
        (
            "a token without env:read",
            app.get(&env, token_without_scope).await,
            "this needs an API token with the `env:read` scope; mint one with \
             `widgetd token create --user NAME --scope env:read`",
        ),
        (
            "a viewer answering",
            app.post_form(
                viewer,
                &format!("/widgets/{}/submit", f.widget),
                &[("value.MATRIX_KEY", "v")],
            )
            .await,
            "you may read this session but not answer its widgets",
        ),
        (
            "a viewer sharing",
            app.post_form(
                viewer,
                &format!("/sessions/{}/sharing", f.session),
                &form_for("/sessions/{id}/sharing")
                    .iter()
                    .map(|(k, v)| (*k, v.as_str()))
                    .collect::<Vec<_>>(),
            )
            .await,
            "only the session's creator may do this",
        ),
    ];
    let mut wrong = Vec::new();
    for (who, response, said) in refusals {
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, StatusCode::FORBIDDEN, "{who}: {text}");
        // A JSON error body's message, or the error page's first paragraph.
        let message = match serde_json::from_str::<Value>(&text) {
            Ok(body) => body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            Err(_) => text
                .split("error-page\">")
                .nth(1)
                .and_then(|page| page.split("<p>").nth(1))
                .and_then(|p| p.split("</p>").next())
                .unwrap_or_default()
                .replace("&#39;", "'"),
        };
        if message != said {
            wrong.push(format!("{who}: told {message:?}, not {said:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
