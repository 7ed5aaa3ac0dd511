//! What makes widgetd fast must not cost correctness: reads write nothing,
//! and what the daemon acknowledged survives `kill -9`.

use reqwest::StatusCode;

use crate::helpers::{session_cookie, spawn_app};

async fn session_row(app: &crate::helpers::TestApp) -> (String, i64) {
    sqlx::query_as("SELECT data, expires_at FROM web_sessions")
        .fetch_one(&app.state.db.read)
        .await
        .unwrap()
}

#[tokio::test]
async fn signed_in_reads_do_not_rewrite_the_session_until_it_is_due_a_touch() {
    let app = spawn_app().await;
    app.user("alice", widgetd::auth::Role::Member).await;
    let browser = app.login("alice").await;
    let after_login = session_row(&app).await;
    for _ in 0..3 {
        let r = app
            .client
            .get(format!("{}/api/v1/me", app.url))
            .header("cookie", &browser.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(session_cookie(&r).is_none(), "a read re-sent the cookie");
    }
    assert_eq!(
        session_row(&app).await,
        after_login,
        "a read rewrote the session"
    );

    // Once the last touch is old, the next request moves the expiry forward.
    sqlx::query("UPDATE web_sessions SET data = json_set(data, '$.touched_at', 0), expires_at = expires_at - 1000")
        .execute(&app.state.db.write)
        .await
        .unwrap();
    let aged = session_row(&app).await;
    let r = app
        .client
        .get(format!("{}/api/v1/me", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        session_cookie(&r).is_some(),
        "the touch sends the cookie again"
    );
    let touched = session_row(&app).await;
    assert!(touched.1 > aged.1, "the idle expiry moved forward");
}
