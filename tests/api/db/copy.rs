//! `widgetd db copy`: a deployment moves from its SQLite file to PostgreSQL
//! and back with every row, every value still decrypting under the same
//! master key, and the audit chain intact; a target with data is refused.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{COMMAND_LIMIT, OutputWithin};
use crate::helpers::{TestApp, canary, scene, spawn_sqlite_app, stderr, stdout, widgetd};

/// Runs `widgetd db copy` from `from` to `to`; returns (success, stdout, stderr).
fn copy(data_dir: &std::path::Path, from: &str, to: &str) -> (bool, String, String) {
    let out = widgetd(data_dir)
        .args(["db", "copy", "--from", from, "--to", to])
        .output_within(COMMAND_LIMIT);
    (out.status.success(), stdout(&out), stderr(&out))
}

/// Opens the copied database on the same data dir (and so the same master
/// key) and serves it.
async fn serve_copy(source: &TestApp, url: &str) -> TestApp {
    crate::helpers::spawn_app_on(source.dir.clone(), url).await
}

#[tokio::test]
async fn a_deployment_moves_from_sqlite_to_postgres_and_back_with_everything() {
    let app = spawn_sqlite_app().await;
    let s = scene(&app, "alice").await;
    let value = canary("moved");
    let id = app
        .pending_widget(&s.agent, &s.session, &["MOVED_KEY"])
        .await;
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("value.MOVED_KEY", &value), ("scope", "global")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    app.pending_widget(&s.agent, &s.session, &["STILL_PENDING"])
        .await;
    let audit_rows = app.count("SELECT count(*) FROM audit_log").await;
    app.state.db.close().await;

    let sqlite = format!("sqlite://{}", app.data_dir().join("widgetd.db").display());
    let pg_dir = crate::helpers::backend::postgres_dir();
    let postgres = crate::helpers::backend::database_for(&pg_dir.path().join("db")).unwrap();
    let (ok, out, err) = copy(&app.data_dir(), &sqlite, &postgres);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("the audit chain verifies"), "{out}");
    assert!(err.contains("audit_log"), "progress per table: {err}");
    assert!(!out.contains(&value) && !err.contains(&value));

    let on_pg = serve_copy(&app, &postgres).await;
    assert_eq!(
        on_pg.env_of(&s.session, &s.host).await["MOVED_KEY"],
        value.as_str()
    );
    assert_eq!(
        on_pg.count("SELECT count(*) FROM audit_log").await,
        audit_rows
    );
    let prompts = on_pg.prompts(&s.host, &s.session, 0).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    // New rows continue after the copied ones.
    on_pg
        .pending_widget(&s.agent, &s.session, &["AFTER_MOVE"])
        .await;
    let r = on_pg
        .post_json(
            &format!("/api/v1/sessions/{}/messages", s.session),
            &s.agent,
            &json!({ "text": "still talking" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let mut conn = on_pg.state.db.read.acquire().await.unwrap();
    assert!(
        widgetd_domain::audit::verify(&mut conn)
            .await
            .unwrap()
            .is_ok()
    );
    drop(conn);
    on_pg.state.db.close().await;

    // And back to a new SQLite file.
    let back = format!("sqlite://{}", app.data_dir().join("back.db").display());
    let (ok, out, err) = copy(&app.data_dir(), &postgres, &back);
    assert!(ok, "{out}\n{err}");
    let on_sqlite = serve_copy(&app, &back).await;
    assert_eq!(
        on_sqlite.env_of(&s.session, &s.host).await["MOVED_KEY"],
        value.as_str()
    );
    assert_eq!(
        on_sqlite.count("SELECT count(*) FROM widgets").await,
        3,
        "every widget came back"
    );
}

#[tokio::test]
async fn a_target_that_holds_data_is_refused_and_left_alone() {
    let app = spawn_sqlite_app().await;
    let s = scene(&app, "alice").await;
    app.pending_widget(&s.agent, &s.session, &["SOME_KEY"])
        .await;
    app.state.db.close().await;
    let sqlite = format!("sqlite://{}", app.data_dir().join("widgetd.db").display());
    let pg_dir = crate::helpers::backend::postgres_dir();
    let postgres = crate::helpers::backend::database_for(&pg_dir.path().join("db")).unwrap();
    let (ok, out, err) = copy(&app.data_dir(), &sqlite, &postgres);
    assert!(ok, "{out}\n{err}");
    let before = crate::helpers::backend::dump_rows(&postgres);

    let (ok, _, err) = copy(&app.data_dir(), &sqlite, &postgres);
    assert!(!ok);
    assert!(err.contains("already holds data"), "{err}");
    assert_eq!(crate::helpers::backend::dump_rows(&postgres), before);
}
