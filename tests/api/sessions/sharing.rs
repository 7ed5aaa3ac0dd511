//! A team: sharing a session, answering it as another user, admins, and a
//! canary typed by a second user that stays out of everything but the
//! executor path.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::{assert_error, canary, scene, share, spawn_app};

#[tokio::test]
async fn a_prompt_user_answers_into_the_creators_store_and_a_view_user_cannot() {
    let app = spawn_app().await;
    let alice = scene(&app, "alice").await;
    let bob = app.user("bob", Role::Member).await;
    app.user("carol", Role::Member).await;
    app.user("dave", Role::Member).await;
    let bob_host = app.token(&bob, "sessions,env:read").await;
    let (bobs_session, _) = app.session(&bob_host).await;
    let sharing = share(
        &app,
        &alice.host,
        &alice.session,
        json!({ "grants": { "bob": "prompt", "carol": "view" } }),
    )
    .await;
    assert_eq!(
        sharing,
        json!({ "others_can": "none", "grants": { "bob": "prompt", "carol": "view" } })
    );
    let id = app
        .pending_widget(&alice.agent, &alice.session, &["SHARED_KEY"])
        .await;
    let secret = canary("second-user");

    // Carol may read the transcript but not answer; Dave cannot see it at all.
    let carol = app.login("carol").await;
    let page = app
        .client
        .get(format!("{}/sessions/{}", app.url, alice.session))
        .header("cookie", &carol.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().await.unwrap();
    assert!(
        page.contains("Waiting for SHARED_KEY") && !page.contains("name=\"value.SHARED_KEY\""),
        "{page}"
    );
    let r = app
        .post_form(
            &carol,
            &format!("/widgets/{id}/submit"),
            &[("value.SHARED_KEY", &secret)],
        )
        .await;
    assert_error(r, StatusCode::FORBIDDEN, "forbidden", Some(&secret)).await;
    let dave = app.login("dave").await;
    let r = app
        .client
        .get(format!("{}/sessions/{}", app.url, alice.session))
        .header("cookie", &dave.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.count("SELECT count(*) FROM env_vars").await, 0);

    // Bob's page (and the widget's live card) has the answer form and the
    // reply box that Carol's lacks: his grant, not ownership, gives them.
    let bob_browser = app.login("bob").await;
    for path in [
        format!("/sessions/{}", alice.session),
        format!("/sessions/{}/widgets/{id}", alice.session),
    ] {
        let page = app.page(&bob_browser, &path).await;
        assert!(page.contains("name=\"value.SHARED_KEY\""), "{path}: {page}");
        assert!(!page.contains("Waiting for SHARED_KEY"), "{path}: {page}");
    }
    let reply_box = format!("action=\"/sessions/{}/reply\"", alice.session);
    let bobs_page = app
        .page(&bob_browser, &format!("/sessions/{}", alice.session))
        .await;
    assert!(bobs_page.contains(&reply_box), "{bobs_page}");
    let carols_page = app
        .page(&carol, &format!("/sessions/{}", alice.session))
        .await;
    assert!(!carols_page.contains(&reply_box), "{carols_page}");

    // Bob answers; the value is Alice's, for Alice's agent.
    let r = app
        .post_form(
            &bob_browser,
            &format!("/widgets/{id}/submit"),
            &[("value.SHARED_KEY", &secret), ("scope", "global")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        app.env_of(&alice.session, &alice.host).await,
        json!({ "SHARED_KEY": secret })
    );
    assert_eq!(app.env_of(&bobs_session, &bob_host).await, json!({}));
    let view: Value = app
        .get(&format!("/api/v1/widgets/{id}"), &alice.agent)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["result"]["submitted_by"], "bob");
    let page = app
        .client
        .get(format!("{}/sessions/{}", app.url, alice.session))
        .header("cookie", &carol.cookie)
        .send()
        .await
        .unwrap();
    let page = page.text().await.unwrap();
    assert!(
        page.contains("badge-submitted") && page.contains("by bob"),
        "{page}"
    );
    let (actor, names): (String, String) =
        sqlx::query_as("SELECT actor, names FROM audit_log WHERE action = 'widget.submit'")
            .fetch_one(&app.state.db.read)
            .await
            .unwrap();
    assert_eq!(
        (actor, names),
        (format!("user:{}", bob.id), "SHARED_KEY".to_owned())
    );

    // The value appears nowhere a person or the agent can look.
    let mut seen = String::new();
    for who in [&carol, &bob_browser] {
        for path in [
            "/".to_owned(),
            format!("/sessions/{}", alice.session),
            format!("/sessions/{}/widgets/{id}", alice.session),
            "/settings/env".to_owned(),
        ] {
            let r = app
                .client
                .get(format!("{}{path}", app.url))
                .header("cookie", &who.cookie)
                .send()
                .await
                .unwrap();
            seen.push_str(&r.text().await.unwrap());
        }
    }
    let audit: Vec<(String, Option<String>, Option<String>)> =
        sqlx::query_as("SELECT action, names, detail FROM audit_log")
            .fetch_all(&app.state.db.read)
            .await
            .unwrap();
    let events: Vec<String> = sqlx::query_scalar("SELECT payload FROM events")
        .fetch_all(&app.state.db.read)
        .await
        .unwrap();
    seen.push_str(&format!(
        "{audit:?}{events:?}{:?}",
        app.prompts(&alice.host, &alice.session, 0).await
    ));
    assert!(
        !seen.contains(&secret),
        "the canary leaked into a page, event, prompt or audit row"
    );
}

#[tokio::test]
async fn only_the_creator_changes_sharing_and_names_must_exist() {
    let app = spawn_app().await;
    let alice = scene(&app, "alice").await;
    let bob = scene(&app, "bob").await;
    let path = format!("/api/v1/sessions/{}/sharing", alice.session);
    let r = app
        .client
        .put(format!("{}{path}", app.url))
        .bearer_auth(&bob.host)
        .json(&json!({ "others_can": "view" }))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;
    let r = app
        .client
        .put(format!("{}{path}", app.url))
        .bearer_auth(&alice.agent)
        .json(&json!({ "others_can": "view" }))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::FORBIDDEN, "forbidden", None).await;
    let r = app
        .client
        .put(format!("{}{path}", app.url))
        .bearer_auth(&alice.host)
        .json(&json!({ "grants": { "nobody": "view" } }))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "unknown_user", None).await;
    let r = app
        .client
        .put(format!("{}{path}", app.url))
        .bearer_auth(&alice.host)
        .json(&json!({ "others_can": "everyone" }))
        .send()
        .await
        .unwrap();
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;

    // others_can = view: every signed-in user sees it listed; a grant can be withdrawn.
    share(
        &app,
        &alice.host,
        &alice.session,
        json!({ "others_can": "view", "grants": { "bob": "prompt" } }),
    )
    .await;
    let bob_browser = app.login("bob").await;
    let list = app
        .client
        .get(format!("{}/", app.url))
        .header("cookie", &bob_browser.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(list.contains(&alice.session), "a shared session is listed");
    let after = share(
        &app,
        &alice.host,
        &alice.session,
        json!({ "others_can": "none", "grants": { "bob": "none" } }),
    )
    .await;
    assert_eq!(after, json!({ "others_can": "none", "grants": {} }));
    let r = app
        .client
        .get(format!("{}/sessions/{}", app.url, alice.session))
        .header("cookie", &bob_browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let detail: Vec<String> = sqlx::query_scalar(
        "SELECT detail FROM audit_log WHERE action = 'session.share' ORDER BY id",
    )
    .fetch_all(&app.state.db.read)
    .await
    .unwrap();
    assert_eq!(
        detail,
        ["others_can=view; bob=prompt", "others_can=none; bob=none"]
    );
}

#[tokio::test]
async fn admins_manage_users_and_read_the_audit_log_members_cannot() {
    let app = spawn_app().await;
    app.user("root", Role::Admin).await;
    let member = scene(&app, "mia").await;
    let admin = app.login("root").await;
    let mia = app.login("mia").await;
    for path in ["/admin/users", "/admin/audit"] {
        let r = app
            .client
            .get(format!("{}{path}", app.url))
            .header("cookie", &mia.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}");
    }
    let r = app
        .post_form(
            &admin,
            "/admin/users/add",
            &[("name", "newbie"), ("role", "member")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let page = r.text().await.unwrap();
    assert!(page.contains("Password for newbie"), "{page}");

    // Disabling Mia ends her browser session, her API token and her agent's token.
    let r = app
        .post_form(&admin, "/admin/users/disable", &[("name", "mia")])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = app
        .client
        .get(format!("{}/api/v1/me", app.url))
        .header("cookie", &mia.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_error(
        app.get("/api/v1/env", &member.host).await,
        StatusCode::UNAUTHORIZED,
        "invalid_token",
        None,
    )
    .await;
    let r = app
        .pending_widget_response(&member.agent, &member.session)
        .await;
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token", None).await;
    // The last active admin stays.
    let r = app
        .post_form(
            &admin,
            "/admin/users/role",
            &[("name", "root"), ("role", "member")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);

    let audit = app
        .client
        .get(format!("{}/admin/audit?action=user.&verify=1", app.url))
        .header("cookie", &admin.cookie)
        .send()
        .await
        .unwrap();
    let audit = audit.text().await.unwrap();
    assert!(
        audit.contains("The chain verifies")
            && audit.contains("user.disable")
            && audit.contains("user=newbie"),
        "{audit}"
    );
    assert!(
        !audit.contains("login.success"),
        "the action filter applies"
    );
}

/// The audit page shows 200 rows a page with actors by name, and verifies
/// the whole chain only when asked.
#[tokio::test]
async fn the_audit_page_pages_names_actors_and_verifies_on_request() {
    use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
    let app = spawn_app().await;
    let root = app.user("root", widgetd_domain::auth::Role::Admin).await;
    {
        let mut tx = app.state.db.begin_write().await.unwrap();
        for n in 0..250 {
            let entry = Entry {
                action: "test.row",
                detail: Some(format!("row-{n}-end")),
                ..Default::default()
            };
            audit::append(
                &mut tx,
                &Actor::User(root.id.clone()),
                &ClientAddr(None),
                entry,
            )
            .await
            .unwrap();
        }
        tx.commit().await.unwrap();
    }
    let admin = app.login("root").await;
    let get = |path: String| {
        let request = app
            .client
            .get(format!("{}{path}", app.url))
            .header("cookie", &admin.cookie);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let first = get("/admin/audit".into()).await;
    assert!(
        !first.contains("The chain verifies"),
        "verified on every load"
    );
    assert!(first.contains("id=\"verify-chain\""));
    assert!(
        first.contains("row-249-end") && !first.contains("row-40-end"),
        "newest first, one page"
    );
    assert!(
        first.contains(&format!("root (user:{})", root.id)),
        "actors by name"
    );
    let older = first
        .split("id=\"older\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a link to older rows")
        .replace("&amp;", "&")
        .replace("&#38;", "&");
    let second = get(older).await;
    assert!(
        second.contains("row-40-end") && !second.contains("row-249-end"),
        "the next page: {}",
        &second[second.len().saturating_sub(3000)..]
    );
    let verified = get("/admin/audit?verify=1".into()).await;
    assert!(verified.contains("The chain verifies"), "{verified}");
}
