//! The reply box under the transcript: what a person writes becomes a
//! transcript line (role `user`, with its author) and a resume prompt; bad
//! text, the wrong person, an archived session and a stored value in the
//! text are refused without writing anything.
//!
//! The tests that drive Chromium are in `tests/slow/web/replies.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::{TestApp, canary, reply, scene, spawn_app};

/// Rows of everything a reply writes, to prove a refusal wrote none.
async fn written(app: &TestApp) -> [i64; 4] {
    [
        app.count("SELECT count(*) FROM messages").await,
        app.count("SELECT count(*) FROM prompts").await,
        app.count("SELECT count(*) FROM events").await,
        app.count("SELECT count(*) FROM audit_log WHERE action = 'transcript.reply'")
            .await,
    ]
}

async fn share_with(app: &TestApp, host: &str, session: &str, grants: Value) {
    let r = app
        .client
        .put(format!("{}/api/v1/sessions/{session}/sharing", app.url))
        .bearer_auth(host)
        .json(&json!({ "grants": grants }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_reply_becomes_a_transcript_line_and_a_resume_prompt() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    app.user("bob", Role::Member).await;
    share_with(&app, &s.host, &s.session, json!({ "bob": "prompt" })).await;
    let bob = app.login("bob").await;

    // Typed in a browser: CRLF line ends, a stray control character.
    let r = reply(
        &app,
        &bob,
        &s.session,
        "  Use the staging db,\r\nnot prod.\u{7}  ",
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    let message_id: i64 = app
        .count("SELECT max(id) FROM messages WHERE role = 'user'")
        .await;
    assert_eq!(to, format!("/sessions/{}#m-{message_id}", s.session));

    let prompts = app.prompts(&s.host, &s.session, 0).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0]["message_id"], json!(message_id));
    assert_eq!(prompts[0]["widget_id"], Value::Null);
    assert_eq!(
        prompts[0]["text"],
        "[Agor] User bob wrote: Use the staging db,\nnot prod."
    );

    // The transcript shows who wrote it, and the live event says so too.
    let page = app
        .client
        .get(format!("{}/sessions/{}", app.url, s.session))
        .header("cookie", &bob.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = page
        .split(&format!("id=\"m-{message_id}\""))
        .nth(1)
        .expect("the reply is in the transcript");
    let line = line.split("</article>").next().unwrap();
    assert!(line.contains("bob"), "{line}");
    assert!(line.contains("Use the staging db,\nnot prod."), "{line}");
    assert!(line.contains("role-user") || page.contains("role-user"));
    let payload: String = sqlx::query_scalar(
        "SELECT payload FROM events WHERE kind = 'message:created' ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&app.state.db.read)
    .await
    .unwrap();
    let payload: Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(payload["author"], "bob");
    assert_eq!(payload["role"], "user");
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'transcript.reply'")
            .await,
        1
    );

    // Acknowledged like any prompt: then it is gone from the queue.
    let id = prompts[0]["prompt_id"].as_i64().unwrap();
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{}/prompts/{id}/ack", s.session),
            &s.host,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(app.prompts(&s.host, &s.session, 0).await.is_empty());
}

#[tokio::test]
async fn refused_replies_write_nothing_and_never_echo_the_text() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    app.user("carol", Role::Member).await;
    app.user("dave", Role::Member).await;
    share_with(&app, &s.host, &s.session, json!({ "carol": "view" })).await;
    let alice = app.login("alice").await;
    let value = canary("reply");
    let r = app
        .put_env(&s.host, "REPLY_KEY", &json!({ "value": value }))
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let before = written(&app).await;

    let too_long = "x".repeat(4001);
    let cases = [
        ("   \r\n ", StatusCode::UNPROCESSABLE_ENTITY, "invalid_text"),
        (
            too_long.as_str(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_text",
        ),
        (
            &format!("the key is {value}, use it"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "answer_contains_secret",
        ),
    ];
    for (text, status, code) in cases {
        let r = reply(&app, &alice, &s.session, text).await;
        assert_eq!(r.status(), status, "{code}");
        let page = r.text().await.unwrap();
        assert!(
            page.contains(&format!("data-code=\"{code}\"")),
            "{code} is shown beside the reply box:\n{page}"
        );
        assert!(!page.contains(&value), "the refusal echoed the value");
        assert!(!page.contains(&too_long), "the refusal echoed the text");
        assert!(
            page.contains("id=\"reply-text\""),
            "the reply box is shown again"
        );
    }
    assert!(
        reply(&app, &alice, &s.session, &format!("key {value}"))
            .await
            .text()
            .await
            .unwrap()
            .contains("REPLY_KEY"),
        "the refusal names the variable"
    );

    // A viewer may not write; a stranger does not see the session.
    let carol = app.login("carol").await;
    assert_eq!(
        reply(&app, &carol, &s.session, "hello").await.status(),
        StatusCode::FORBIDDEN
    );
    let dave = app.login("dave").await;
    assert_eq!(
        reply(&app, &dave, &s.session, "hello").await.status(),
        StatusCode::NOT_FOUND
    );
    // Without the form token nothing happens.
    let r = app
        .client
        .post(format!("{}/sessions/{}/reply", app.url, s.session))
        .header("cookie", &alice.cookie)
        .form(&[("text", "hello")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        written(&app).await,
        before,
        "a refused reply wrote something"
    );

    // An archived session takes no more replies.
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{}/archive", s.session),
            &s.host,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let before = written(&app).await;
    let r = reply(&app, &alice, &s.session, "are you there?").await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(r.text().await.unwrap().contains("session_archived"));
    assert_eq!(written(&app).await, before);
}

#[tokio::test]
async fn prompts_queued_before_replies_existed_survive_the_migration() {
    let dir = tempfile::tempdir().unwrap();
    let db = widgetd_domain::db::Db::open(&dir.path().join("widgetd.db"))
        .await
        .unwrap();
    // The schema as it was before `migrations/sqlite/0007_replies.sql`, with a queued prompt.
    let mut before = sqlx::migrate!("./migrations/sqlite");
    let upto = before
        .migrations
        .iter()
        .position(|m| m.description == "replies")
        .expect("the replies migration exists");
    before.migrations = before.migrations[..upto].to_vec().into();
    before.run(&db.write).await.unwrap();
    for sql in [
        "INSERT INTO users (id, name, role, password_hash, created_at) VALUES ('u1', 'alice', 'member', 'x', 1)",
        "INSERT INTO sessions (id, creator_id, title, created_at) VALUES ('s1', 'u1', 't', 1)",
        "INSERT INTO widgets (id, session_id, kind, params, status, created_at, expires_at)
         VALUES ('w1', 's1', 'env_vars', '{}', 'dismissed', 1, 2)",
        "INSERT INTO prompts (id, session_id, widget_id, text, created_at) VALUES (7, 's1', 'w1', 'old prompt', 1)",
    ] {
        sqlx::query(sql).execute(&db.write).await.unwrap();
    }

    db.migrate().await.unwrap();
    let row: (i64, Option<String>, Option<i64>, String) =
        sqlx::query_as("SELECT id, widget_id, message_id, text FROM prompts")
            .fetch_one(&db.read)
            .await
            .unwrap();
    assert_eq!(row, (7, Some("w1".into()), None, "old prompt".into()));
    // Exactly one of widget and message.
    for bad in [
        "INSERT INTO prompts (session_id, text, created_at) VALUES ('s1', 'neither', 1)",
        "INSERT INTO prompts (session_id, widget_id, text, created_at) VALUES ('s1', 'w1', 'twice', 1)",
    ] {
        assert!(sqlx::query(bad).execute(&db.write).await.is_err(), "{bad}");
    }
}
