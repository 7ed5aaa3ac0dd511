//! The daemon keeps who a token is and what a caller may do in memory
//! (`src/auth/cache.rs`). Each test first makes the daemon cache what it
//! is about to take away, then takes it away — through the daemon, or
//! through the CLI, another process on the same database — and the very
//! next request must be refused. Without the auth epoch these fail: the
//! cached answer would still say yes.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::{Browser, TestApp, assert_error, scene, spawn_app, widgetd};
use crate::helpers::{COMMAND_LIMIT, OutputWithin};

fn ok(command: &mut std::process::Command) -> String {
    let output = command.output_within(COMMAND_LIMIT);
    assert!(
        output.status.success(),
        "failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asks twice, so that the second answer can only have come from the cache.
async fn allowed_twice(app: &TestApp, path: &str, token: &str) {
    for _ in 0..2 {
        let r = app.get(path, token).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
    }
}

async fn page_status(app: &TestApp, browser: &Browser, path: &str) -> StatusCode {
    app.client
        .get(format!("{}{path}", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap()
        .status()
}

async fn refused(app: &TestApp, path: &str, token: &str) {
    let r = app.get(path, token).await;
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;
}

#[tokio::test]
async fn a_token_revoked_by_the_cli_is_refused_on_the_next_request() {
    let app = spawn_app().await;
    app.user("alice", Role::Member).await;
    let minted: Value = serde_json::from_str(&ok(widgetd(&app.data_dir()).args([
        "token", "create", "--user", "alice", "--scope", "sessions", "--json",
    ])))
    .unwrap();
    let token = minted["token"].as_str().unwrap();
    let (session, _) = app.session(token).await;
    let path = format!("/api/v1/sessions/{session}/sharing");
    allowed_twice(&app, &path, token).await;

    ok(widgetd(&app.data_dir()).args(["token", "revoke", minted["id"].as_str().unwrap()]));
    refused(&app, &path, token).await;
}

#[tokio::test]
async fn an_agent_token_is_refused_once_the_cli_revokes_it_or_archives_its_session() {
    let app = spawn_app().await;
    let first = scene(&app, "alice").await;
    let widget = |id: &str| format!("/api/v1/widgets/{id}");
    let id = app
        .pending_widget(&first.agent, &first.session, &["KEY"])
        .await;
    allowed_twice(&app, &widget(&id), &first.agent).await;
    ok(widgetd(&app.data_dir()).args(["session", "revoke-agent-token", &first.session]));
    refused(&app, &widget(&id), &first.agent).await;

    let (second, agent) = app.session(&first.host).await;
    let id = app.pending_widget(&agent, &second, &["KEY"]).await;
    allowed_twice(&app, &widget(&id), &agent).await;
    ok(widgetd(&app.data_dir()).args(["session", "archive", &second]));
    refused(&app, &widget(&id), &agent).await;
}

#[tokio::test]
async fn a_user_disabled_by_an_admin_is_out_on_the_next_request_everywhere() {
    let app = spawn_app().await;
    app.user("root", Role::Admin).await;
    let carol = scene(&app, "carol").await;
    let widget = format!(
        "/api/v1/widgets/{}",
        app.pending_widget(&carol.agent, &carol.session, &["KEY"])
            .await
    );
    let sharing = format!("/api/v1/sessions/{}/sharing", carol.session);
    allowed_twice(&app, &sharing, &carol.host).await;
    allowed_twice(&app, &widget, &carol.agent).await;
    let browser = app.login("carol").await;
    for _ in 0..2 {
        assert_eq!(
            page_status(&app, &browser, "/api/v1/me").await,
            StatusCode::OK
        );
    }

    let root = app.login("root").await;
    let r = app
        .post_form(&root, "/admin/users/disable", &[("name", "carol")])
        .await;
    assert!(r.status().is_redirection(), "{}", r.status());
    refused(&app, &sharing, &carol.host).await;
    refused(&app, &widget, &carol.agent).await;
    assert_eq!(
        page_status(&app, &browser, "/api/v1/me").await,
        StatusCode::UNAUTHORIZED
    );

    // Enabled again, the tokens work again (the cache is refilled).
    let r = app
        .post_form(&root, "/admin/users/enable", &[("name", "carol")])
        .await;
    assert!(r.status().is_redirection(), "{}", r.status());
    allowed_twice(&app, &sharing, &carol.host).await;
}

#[tokio::test]
async fn a_role_taken_away_counts_on_the_next_request() {
    let app = spawn_app().await;
    app.user("root", Role::Admin).await;
    app.user("alice", Role::Admin).await;
    let alice = app.login("alice").await;
    for _ in 0..2 {
        assert_eq!(
            page_status(&app, &alice, "/admin/users").await,
            StatusCode::OK
        );
    }
    let root = app.login("root").await;
    let r = app
        .post_form(
            &root,
            "/admin/users/role",
            &[("name", "alice"), ("role", "member")],
        )
        .await;
    assert!(r.status().is_redirection(), "{}", r.status());
    assert_eq!(
        page_status(&app, &alice, "/admin/users").await,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn a_share_taken_back_counts_on_the_next_request() {
    let app = spawn_app().await;
    let alice = scene(&app, "alice").await;
    app.user("bob", Role::Member).await;
    let share = |grants: Value| {
        app.client
            .put(format!(
                "{}/api/v1/sessions/{}/sharing",
                app.url, alice.session
            ))
            .bearer_auth(&alice.host)
            .json(&json!({ "grants": grants }))
            .send()
    };
    assert_eq!(
        share(json!({ "bob": "view" })).await.unwrap().status(),
        StatusCode::OK
    );
    let bob = app.login("bob").await;
    let page = format!("/sessions/{}", alice.session);
    for _ in 0..2 {
        assert_eq!(page_status(&app, &bob, &page).await, StatusCode::OK);
    }
    assert_eq!(
        share(json!({ "bob": "none" })).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(page_status(&app, &bob, &page).await, StatusCode::NOT_FOUND);
}

/// A change made in the daemon's process but outside any request (a job,
/// the store called directly) counts on the next request too: the bump
/// notes the epoch it wrote, and the cache reads afresh until it sees it.
#[tokio::test]
async fn a_change_made_outside_a_request_counts_on_the_next_request() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let (id, token) = {
        let mut conn = app.state.db.write.acquire().await.unwrap();
        let scopes = widgetd_domain::auth::tokens::TokenScopes::parse("sessions").unwrap();
        let (id, token) = widgetd_domain::auth::create_api_token(&mut conn, &alice.id, &scopes)
            .await
            .unwrap();
        (id, secrecy::ExposeSecret::expose_secret(&token).to_owned())
    };
    let (session, _) = app.session(&token).await;
    let path = format!("/api/v1/sessions/{session}/sharing");
    allowed_twice(&app, &path, &token).await;
    {
        let mut conn = app.state.db.write.acquire().await.unwrap();
        widgetd_domain::auth::revoke_api_token(&mut conn, &id)
            .await
            .unwrap();
    }
    refused(&app, &path, &token).await;
}

/// The CLI's change counts within the documented bound
/// (`widgetd_domain::auth::cache::POLL` after its commit) even while requests
/// keep the cache busy, so that the epoch is never read afresh for want
/// of a recent read.
#[tokio::test]
async fn a_cli_change_counts_within_the_poll_bound_under_load() {
    use widgetd_domain::auth::cache::POLL;
    let app = spawn_app().await;
    let first = scene(&app, "alice").await;
    let id = app
        .pending_widget(&first.agent, &first.session, &["KEY"])
        .await;
    let path = format!("/api/v1/widgets/{id}");
    allowed_twice(&app, &path, &first.agent).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (client, url, token, stop) = (
            app.client.clone(),
            format!("{}{path}", app.url),
            first.agent.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = client.get(&url).bearer_auth(&token).send().await;
            }
        })
    };
    let session = first.session.clone();
    let dir = app.data_dir();
    tokio::task::spawn_blocking(move || {
        ok(widgetd(&dir).args(["session", "revoke-agent-token", &session]))
    })
    .await
    .unwrap();
    tokio::time::sleep(POLL * 2).await;
    refused(&app, &path, &first.agent).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    load.await.unwrap();
}
