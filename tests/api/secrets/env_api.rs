//! Setting, listing and deleting env vars over the API, the effective env,
//! and who may read it.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::{TestApp, assert_error, canary, spawn_app};

async fn count_rows(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM env_vars")
        .fetch_one(&app.state.db.read)
        .await
        .unwrap()
}

#[tokio::test]
async fn session_values_override_global_ones_in_the_effective_env() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let token = app.token(&alice, "sessions,env:read,env:write").await;
    let (s1, _) = app.session(&token).await;
    let (s2, _) = app.session(&token).await;

    let multi_line = "  line one\n\tline two \r\n";
    assert_eq!(
        app.put_env(&token, "API_KEY", &json!({ "value": "global-key" }))
            .await
            .status(),
        204
    );
    assert_eq!(
        app.put_env(
            &token,
            "PEM",
            &json!({ "value": multi_line, "scope": "global" })
        )
        .await
        .status(),
        204
    );
    let r = app
        .put_env(
            &token,
            "API_KEY",
            &json!({ "value": "s1-key", "scope": "session", "session_id": s1 }),
        )
        .await;
    assert_eq!(r.status(), 204);

    assert_eq!(
        app.env_of(&s1, &token).await,
        json!({ "API_KEY": "s1-key", "PEM": multi_line })
    );
    assert_eq!(
        app.env_of(&s2, &token).await,
        json!({ "API_KEY": "global-key", "PEM": multi_line })
    );

    // Replacing keeps one row; deleting the session value uncovers the global one.
    assert_eq!(
        app.put_env(&token, "API_KEY", &json!({ "value": "global-2" }))
            .await
            .status(),
        204
    );
    assert_eq!(count_rows(&app).await, 3);
    let r = app
        .client
        .delete(format!(
            "{}/api/v1/env/API_KEY?scope=session&session_id={s1}",
            app.url
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(app.env_of(&s1, &token).await["API_KEY"], "global-2");

    let list: Value = app.get("/api/v1/env", &token).await.json().await.unwrap();
    let names: Vec<(&str, &str)> = list["env_vars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["scope"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("API_KEY", "global"), ("PEM", "global")]);
    assert!(
        !list.to_string().contains("global-2"),
        "a listing shows a value"
    );
}

#[tokio::test]
async fn only_an_env_read_token_of_the_creator_reads_values() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let bob = app.user("bob", Role::Admin).await;
    let alice_all = app.token(&alice, "sessions,env:read,env:write").await;
    let alice_no_read = app.token(&alice, "sessions,env:write").await;
    let bob_read = app.token(&bob, "sessions,env:read").await;
    let (session, agent) = app.session(&alice_all).await;
    let (_, other_agent) = app.session(&bob_read).await;
    let secret = canary("authz");
    app.put_env(&alice_all, "KEY", &json!({ "value": secret }))
        .await;
    let path = format!("/api/v1/sessions/{session}/env");

    let cases = [
        (agent.as_str(), StatusCode::FORBIDDEN, "forbidden"),
        (other_agent.as_str(), StatusCode::NOT_FOUND, "not_found"),
        (alice_no_read.as_str(), StatusCode::FORBIDDEN, "forbidden"),
        (bob_read.as_str(), StatusCode::NOT_FOUND, "not_found"),
        ("wdt_bogus", StatusCode::UNAUTHORIZED, "invalid_token"),
    ];
    for (token, status, code) in cases {
        assert_error(app.get(&path, token).await, status, code, Some(&secret)).await;
    }
    let r = app
        .client
        .get(format!("{}{path}", app.url))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNAUTHORIZED, "missing_token", Some(&secret)).await;
    let r = app.get("/api/v1/sessions/not-a-uuid/env", &alice_all).await;
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;

    // Agents cannot list or write values either.
    assert_error(
        app.get("/api/v1/env", &agent).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        Some(&secret),
    )
    .await;
    let r = app.put_env(&agent, "KEY", &json!({ "value": "x" })).await;
    assert_error(r, StatusCode::FORBIDDEN, "forbidden", None).await;

    // A revoked token stops working at once.
    let mut conn = app.state.db.write.acquire().await.unwrap();
    for token in widgetd_domain::auth::list_api_tokens(&mut conn)
        .await
        .unwrap()
    {
        widgetd_domain::auth::revoke_api_token(&mut conn, &token.id)
            .await
            .unwrap();
    }
    drop(conn);
    assert_error(
        app.get(&path, &alice_all).await,
        StatusCode::UNAUTHORIZED,
        "invalid_token",
        Some(&secret),
    )
    .await;
}

#[tokio::test]
async fn bad_input_is_refused_with_a_code_and_changes_nothing() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let bob = app.user("bob", Role::Member).await;
    let token = app.token(&alice, "sessions,env:read,env:write").await;
    let bob_token = app.token(&bob, "sessions").await;
    let read_only = app.token(&alice, "env:read").await;
    let (bobs_session, _) = app.session(&bob_token).await;
    let secret = canary("bad-input");
    app.put_env(&token, "KEEP", &json!({ "value": "original" }))
        .await;

    let big = "x".repeat(64 * 1024 + 1);
    let cases: Vec<(&str, Value, StatusCode, &str)> = vec![
        (
            "lower_case",
            json!({ "value": secret }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_name",
        ),
        (
            "1ABC",
            json!({ "value": secret }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_name",
        ),
        (
            "PATH",
            json!({ "value": secret }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "blocked_name",
        ),
        (
            "LD_PRELOAD",
            json!({ "value": secret }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "blocked_name",
        ),
        (
            "WIDGETD_X",
            json!({ "value": secret }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "blocked_name",
        ),
        (
            "KEEP",
            json!({ "value": "" }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_value",
        ),
        (
            "KEEP",
            json!({ "value": big }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "value_too_large",
        ),
        (
            "KEEP",
            json!({ "value": secret, "scope": "team" }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_scope",
        ),
        (
            "KEEP",
            json!({ "value": secret, "scope": "session" }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "session_id_required",
        ),
        (
            "KEEP",
            json!({ "value": secret, "scope": "global", "session_id": bobs_session }),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unexpected_session_id",
        ),
        (
            "KEEP",
            json!({ "value": secret, "scope": "session", "session_id": bobs_session }),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            "KEEP",
            json!({ "value": secret, "extra": secret }),
            StatusCode::BAD_REQUEST,
            "invalid_body",
        ),
        (
            "KEEP",
            json!({ "value": [secret] }),
            StatusCode::BAD_REQUEST,
            "invalid_body",
        ),
        (
            "KEEP",
            json!({ "valu": secret }),
            StatusCode::BAD_REQUEST,
            "invalid_body",
        ),
    ];
    for (name, body, status, code) in cases {
        let r = app.put_env(&token, name, &body).await;
        assert_error(r, status, code, Some(&secret)).await;
    }
    let r = app
        .put_env(&read_only, "KEEP", &json!({ "value": secret }))
        .await;
    assert_error(r, StatusCode::FORBIDDEN, "forbidden", Some(&secret)).await;
    let r = app
        .client
        .put(format!("{}/api/v1/env/KEEP", app.url))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(format!("{{\"value\": \"{secret}"))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", Some(&secret)).await;
    let r = app
        .client
        .delete(format!("{}/api/v1/env/NEVER_SET", app.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;
    let r = app
        .client
        .delete(format!("{}/api/v1/env/KEEP?scope=galaxy", app.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_scope", None).await;

    assert_eq!(count_rows(&app).await, 1);
    let (mine, _) = app.session(&token).await;
    assert_eq!(
        app.env_of(&mine, &token).await,
        json!({ "KEEP": "original" })
    );
}

/// Every change to a vault leaves an audit row naming who, which variable,
/// its scope and session, and never the value.
#[tokio::test]
async fn each_change_to_the_vault_is_audited_with_name_scope_and_session() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let token = app.token(&alice, "sessions,env:read,env:write").await;
    let (session, _) = app.session(&token).await;
    let (global, scoped) = (canary("audit-global"), canary("audit-session"));

    let r = app
        .put_env(&token, "API_KEY", &json!({ "value": global }))
        .await;
    assert_eq!(r.status(), 204);
    let r = app
        .put_env(
            &token,
            "API_KEY",
            &json!({ "value": scoped, "scope": "session", "session_id": session }),
        )
        .await;
    assert_eq!(r.status(), 204);
    let r = app
        .client
        .delete(format!(
            "{}/api/v1/env/API_KEY?scope=session&session_id={session}",
            app.url
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);

    type Row = (
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT actor, action, session_id, names, scope, detail FROM audit_log \
         WHERE action LIKE 'env.%' ORDER BY id",
    )
    .fetch_all(&app.state.db.read)
    .await
    .unwrap();
    let actor = format!("user:{}", alice.id);
    let row = |action: &str, session: Option<&str>, scope: &str| -> Row {
        (
            actor.clone(),
            action.to_owned(),
            session.map(str::to_owned),
            Some("API_KEY".to_owned()),
            Some(scope.to_owned()),
            None,
        )
    };
    assert_eq!(
        rows,
        [
            row("env.set", None, "global"),
            row("env.set", Some(&session), "session"),
            row("env.delete", Some(&session), "session"),
        ]
    );
    let all = format!("{rows:?}");
    assert!(!all.contains(&global) && !all.contains(&scoped), "{all}");
}
