//! On SQLite the daemon keeps the widget rows it read in memory
//! (`src/widgets/cache.rs`). Each test first makes the daemon keep a
//! pending widget (read twice, so the second read could come from memory),
//! then changes it — through the daemon, or through the CLI, another
//! process on the same file — and the next read must show the change.
//! Without the writer's commit count (or the `data_version` poll, for the
//! CLI) these fail: the kept row would still say `pending`.

use std::time::Duration;

use widgetd_domain::auth::Role;

use crate::helpers::{
    COMMAND_LIMIT, TestApp, answer_in_turn, keep_reading, output_async_within, spawn_sqlite_app,
    widget_status, widgetd,
};

/// Reads `id` twice and asserts it is pending both times.
async fn kept_pending(app: &TestApp, token: &str, id: &str) {
    for _ in 0..2 {
        assert_eq!(widget_status(app, token, id).await, "pending");
    }
}

#[tokio::test]
async fn an_answer_in_the_browser_shows_in_the_agents_very_next_read() {
    let app = spawn_sqlite_app().await;
    let alice = app.user("alice", Role::Member).await;
    let host = app.token(&alice, "sessions").await;
    let browser = app.login("alice").await;
    // Reads of another widget all along, as under load: the daemon's
    // `data_version` poll (which also sees the daemon's own commits) is
    // then never more than a few milliseconds old, so only the commit
    // count can tell the reads below that a row changed.
    let (busy_session, busy_agent) = app.session(&host).await;
    let busy = app
        .pending_widget(&busy_agent, &busy_session, &["BUSY_KEY"])
        .await;
    let reader = keep_reading(&app, &busy_agent, &busy);
    // Ten widgets per session: an agent may add 30 at once.
    for round in 0..5 {
        let (session, agent) = app.session(&host).await;
        for n in 0..10 {
            // A new name each time: a submitted one would be present.
            let name = format!("READ_KEY_{n}");
            let id = app.pending_widget(&agent, &session, &[&name]).await;
            kept_pending(&app, &agent, &id).await;
            let (path, expected) = answer_in_turn(&app, &browser, &id, &name, n).await;
            assert_eq!(
                widget_status(&app, &agent, &id).await,
                expected,
                "the agent's read after the {path} (round {round}, widget {n})"
            );
        }
    }
    reader.abort();
}

#[tokio::test]
async fn a_session_archived_by_the_cli_shows_its_widgets_cancelled_within_the_poll_bound() {
    let app = spawn_sqlite_app().await;
    let alice = app.user("alice", Role::Member).await;
    let host = app.token(&alice, "sessions").await;
    for _ in 0..5 {
        let (session, agent) = app.session(&host).await;
        let id = app.pending_widget(&agent, &session, &["READ_KEY"]).await;
        kept_pending(&app, &host, &id).await;

        let mut archive = widgetd(&app.data_dir());
        archive.args(["session", "archive", &session]);
        let out = output_async_within(archive, COMMAND_LIMIT).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The CLI has committed; a read that asks a poll's bound later
        // sees it, whatever the daemon read in between.
        tokio::time::sleep(widgetd_domain::db::POLL + Duration::from_millis(1)).await;
        assert_eq!(widget_status(&app, &host, &id).await, "cancelled");
    }
}
