//! The pages as people see them, in real headless Chromium: times in words
//! and in the person's time zone, icons that need no font, dark mode, a
//! phone-sized screen, screenshots of every page.
//!
//! The tests that drive Chromium are in `tests/slow/web/pages.rs`.

use reqwest::StatusCode;
use serde_json::json;
use widgetd_domain::auth::Role;

use crate::helpers::{Browser, TestApp, spawn_app, titled_session};

/// The session ids listed on `html`, in order.
fn listed(html: &str) -> Vec<String> {
    html.split("<li id=\"s-")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect()
}

/// The `href` of the link with `id` on `html`, unescaped.
fn link(html: &str, id: &str) -> Option<String> {
    let at = html.find(&format!("id=\"{id}\""))?;
    let tag = &html[html[..at].rfind('<')?..at + html[at..].find('>')?];
    let start = tag.find("href=\"")? + 6;
    let end = start + tag[start..].find('"')?;
    Some(tag[start..end].replace("&amp;", "&").replace("&#38;", "&"))
}

#[tokio::test]
async fn the_session_list_searches_pages_orders_by_activity_and_keeps_archived_apart() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let host = app.token(&alice, "sessions,env:read,env:write").await;
    let browser = app.login("alice").await;
    let mut ids = Vec::new();
    for n in 0..53 {
        ids.push(titled_session(&app, &host, &format!("Sync run {n}")).await);
    }
    let (deploy, deploy_agent) = titled_session(&app, &host, "Deploy the 100% EU_site").await;

    // Most recent activity first, 50 a page, the next page by its link.
    let first = app.page(&browser, "/").await;
    let shown = listed(&first);
    assert_eq!(shown.len(), 50, "{first}");
    assert_eq!(shown[0], deploy);
    assert!(first.contains("54 sessions"), "{first}");
    let next = link(&first, "next-page").expect("a link to the next page");
    let second = app.page(&browser, &next).await;
    assert_eq!(listed(&second).len(), 4);
    assert!(link(&second, "next-page").is_none() && link(&second, "previous-page").is_some());
    let mut all: Vec<String> = shown.into_iter().chain(listed(&second)).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 54, "every session once across the pages");

    // Activity moves a session up: a line in its transcript, a widget ending.
    let (oldest, oldest_agent) = &ids[0];
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{oldest}/messages"),
            oldest_agent,
            &json!({ "text": "back again" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let w = app
        .pending_widget(&deploy_agent, &deploy, &["EU_KEY"])
        .await;
    let page = app.page(&browser, "/").await;
    assert_eq!(
        listed(&page)[..2],
        [deploy.clone(), oldest.clone()],
        "the widget's creation is activity"
    );
    assert!(page.contains("1 pending"), "{page}");
    let r = app
        .post_form(&browser, &format!("/widgets/{w}/dismiss"), &[])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{}/messages", ids[5].0),
            &ids[5].1,
            &json!({ "text": "later" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(listed(&app.page(&browser, "/").await)[0], ids[5].0);

    // Search on the server (no script needed): title in any case, `%` and
    // `_` as themselves, or the exact id; the search survives paging.
    for q in ["deploy", "100%", "EU_SITE", deploy.as_str()] {
        let query = serde_urlencoded::to_string([("q", q)]).unwrap();
        let found = app.page(&browser, &format!("/?{query}")).await;
        assert_eq!(listed(&found), std::slice::from_ref(&deploy), "{q}");
    }
    let found = app.page(&browser, "/?q=10%25").await;
    assert!(listed(&found).is_empty(), "`%` matches itself only");
    let found = app.page(&browser, "/?q=sync+run").await;
    assert_eq!(listed(&found).len(), 50);
    let next = link(&found, "next-page").unwrap();
    assert!(next.contains("q=sync+run"), "{next}");
    assert_eq!(listed(&app.page(&browser, &next).await).len(), 3);

    // Archived sessions are apart.
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{deploy}/archive"),
            &host,
            &json!({}),
        )
        .await;
    assert!(r.status().is_success(), "{}", r.status());
    let active = app.page(&browser, "/?q=deploy").await;
    assert!(listed(&active).is_empty());
    let archived = app.page(&browser, "/?archived=1").await;
    assert_eq!(listed(&archived), std::slice::from_ref(&deploy));
    assert!(archived.contains("archived</span>"));
    assert_eq!(listed(&app.page(&browser, "/").await).len(), 50);
    // A page past the end is empty, not an error; nonsense is page 1.
    assert!(listed(&app.page(&browser, "/?page=99").await).is_empty());
    assert_eq!(listed(&app.page(&browser, "/?page=-1").await).len(), 50);
}

#[tokio::test]
async fn the_env_var_list_has_pages() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let host = app.token(&alice, "env:write").await;
    for n in 0..55 {
        let r = app
            .put_env(&host, &format!("KEY_{n:02}"), &json!({ "value": "v" }))
            .await;
        assert!(r.status().is_success(), "{}", r.status());
    }
    let browser = app.login("alice").await;
    let first = app.page(&browser, "/settings/env").await;
    assert_eq!(first.matches("value=\"KEY_").count(), 50);
    assert!(first.contains("KEY_00") && !first.contains("KEY_50"));
    let next = link(&first, "next-page").unwrap();
    let second = app.page(&browser, &next).await;
    assert_eq!(second.matches("value=\"KEY_").count(), 5);
    assert!(second.contains("KEY_54") && second.contains("Page 2 of 2"));
}

/// `GET path` as `browser`, with how long it took printed (never asserted).
async fn timed(app: &TestApp, browser: &Browser, what: &str, path: &str) -> String {
    let started = std::time::Instant::now();
    let html = app.page(browser, path).await;
    println!(
        "{what}: GET {path} took {:?} ({} bytes)",
        started.elapsed(),
        html.len()
    );
    html
}

/// Lines of `html` that start a widget card.
fn cards(html: &str) -> usize {
    html.matches("<section class=\"card widget").count()
}

#[tokio::test]
async fn ten_thousand_widgets_and_a_thousand_sessions_keep_every_list_paged() {
    use std::time::Instant;
    use widgetd_domain::audit::{self, Actor, ClientAddr};
    use widgetd_domain::secrets::{self, EnvVarName, SecretValue, Target};

    let app = spawn_app().await;
    let alice = app.user("alice", Role::Admin).await;
    let host = app.token(&alice, "sessions,env:read,env:write").await;
    let (big, agent) = titled_session(&app, &host, "The long one").await;
    // One real widget, whose params every inserted one copies.
    let model = app.pending_widget(&agent, &big, &["SCALE_KEY"]).await;
    let params: String = sqlx::query_scalar("SELECT params FROM widgets WHERE id = $1")
        .bind(&model)
        .fetch_one(&app.state.db.read)
        .await
        .unwrap();

    // Everything in one transaction, through the store.
    let started = Instant::now();
    let mut tx = app.state.db.begin_write().await.unwrap();
    let now = widgetd_domain::clock::now_ms();
    for n in 1..10_000 {
        let id = uuid::Uuid::new_v4().to_string();
        let (status, resolved) = if n % 2 == 0 {
            ("dismissed", Some(now))
        } else {
            ("pending", None)
        };
        sqlx::query(
            "INSERT INTO widgets (id, session_id, kind, params, status, result, created_at, expires_at, resolved_at)
             VALUES ($1, $2, 'env_vars', $3, $4, $5, $6, $7, $8)",
        )
        .bind(&id)
        .bind(&big)
        .bind(&params)
        .bind(status)
        .bind(resolved.map(|_| r#"{"dismissed_by":"alice"}"#))
        .bind(now)
        .bind(now + 86_400_000)
        .bind(resolved)
        .execute(&mut *tx)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO messages (session_id, kind, role, widget_id, created_at) VALUES ($1, 'widget', 'agent', $2, $3)",
        )
        .bind(&big)
        .bind(&id)
        .bind(now)
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    for n in 0..999 {
        let title = format!("Scaled session {n}");
        let new = widgetd_domain::sessions::create_session(&mut tx, &alice.id, title)
            .await
            .unwrap();
        let entry = audit::Entry {
            action: "session.create",
            session: Some(&new.session.id),
            ..Default::default()
        };
        audit::append(
            &mut tx,
            &Actor::User(alice.id.clone()),
            &ClientAddr(None),
            entry,
        )
        .await
        .unwrap();
    }
    for n in 0..1_000 {
        let name = EnvVarName::parse(&format!("SCALE_{n:04}")).unwrap();
        let value = SecretValue::parse(&name, "v".to_owned().into()).unwrap();
        secrets::set_value(
            &mut tx,
            &app.state.keyring,
            &alice.id,
            &Target::Global,
            &name,
            &value,
            &alice.id,
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    println!(
        "inserted 10,000 widgets, 1,000 sessions, 1,000 env vars and their audit rows in {:?}",
        started.elapsed()
    );
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 10_000);
    assert_eq!(app.count("SELECT count(*) FROM sessions").await, 1_000);

    let browser = app.login("alice").await;
    // The transcript: the newest 200 lines, then the 200 before them.
    let page = timed(&app, &browser, "transcript", &format!("/sessions/{big}")).await;
    assert_eq!(cards(&page), 200);
    let earlier = link(&page, "earlier").expect("a link to earlier entries");
    let before = timed(&app, &browser, "transcript, earlier", &earlier).await;
    assert_eq!(cards(&before), 200);
    let first_ids = |html: &str| -> Vec<String> {
        html.split("data-widget=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap().to_owned())
            .collect()
    };
    let (a, b) = (first_ids(&page), first_ids(&before));
    assert!(
        a.iter().all(|id| !b.contains(id)),
        "the earlier page repeats entries"
    );

    // The session list: 50 a page, the next page by its link.
    let sessions = timed(&app, &browser, "sessions", "/").await;
    assert_eq!(listed(&sessions).len(), 50);
    assert!(sessions.contains("1000 sessions"));
    let next = link(&sessions, "next-page").unwrap();
    let second = timed(&app, &browser, "sessions, page 2", &next).await;
    assert_eq!(listed(&second).len(), 50);
    let last = timed(&app, &browser, "sessions, last page", "/?page=20").await;
    assert_eq!(listed(&last).len(), 50);
    assert!(link(&last, "next-page").is_none());
    let search = timed(&app, &browser, "sessions, search", "/?q=scaled+session+99").await;
    assert_eq!(listed(&search).len(), 10, "99 and 990 to 998");

    // The audit log: 200 rows a page, then older ones.
    let audit_page = timed(&app, &browser, "audit", "/admin/audit").await;
    let rows = |html: &str| html.matches("<tr>").count() - 1;
    assert_eq!(rows(&audit_page), 200);
    let older = link(&audit_page, "older").unwrap();
    assert_eq!(
        rows(&timed(&app, &browser, "audit, older", &older).await),
        200
    );

    // Env vars: 50 a page.
    let env = timed(&app, &browser, "env vars", "/settings/env").await;
    assert_eq!(env.matches("value=\"SCALE_").count(), 50);
    let next = link(&env, "next-page").unwrap();
    let env2 = timed(&app, &browser, "env vars, page 2", &next).await;
    assert_eq!(env2.matches("value=\"SCALE_").count(), 50);
    assert!(env2.contains("SCALE_0050") && env2.contains("Page 2 of 20"));
}
