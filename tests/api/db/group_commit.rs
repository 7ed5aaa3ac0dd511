//! Group commit on a real database file: members of one batch succeed or
//! fail on their own, and a failed outer COMMIT reaches every member.

use std::future::Future;
use std::time::Duration;

use widgetd_domain::db::{Db, Dialect, Script};

async fn scratch_db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("scratch.db")).await.unwrap();
    sqlx::query("CREATE TABLE item (k TEXT PRIMARY KEY)")
        .execute(&db.write)
        .await
        .unwrap();
    // Deferred: a missing parent is noticed only by the outer COMMIT.
    sqlx::query("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        .execute(&db.write)
        .await
        .unwrap();
    sqlx::query(
        "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id) \
         DEFERRABLE INITIALLY DEFERRED)",
    )
    .execute(&db.write)
    .await
    .unwrap();
    (dir, db)
}

async fn insert(tx: &mut widgetd_domain::db::WriteTx, k: &str) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO item (k) VALUES ($1)")
        .bind(k)
        .execute(&mut **tx)
        .await
        .map(drop)
}

async fn keys(db: &Db) -> Vec<String> {
    sqlx::query_scalar("SELECT k FROM item ORDER BY k")
        .fetch_all(&db.read)
        .await
        .unwrap()
}

/// Starts `n` tasks that each wait for the writer, and returns once all wait.
async fn queue_writers(
    db: &Db,
    n: usize,
) -> Vec<tokio::task::JoinHandle<widgetd_domain::db::WriteTx>> {
    let before = db.queued_writes();
    let tasks = (0..n)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move { db.begin_write().await.unwrap() })
        })
        .collect();
    while db.queued_writes() < before + n {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tasks
}

#[tokio::test]
async fn a_failing_member_rolls_back_alone_inside_a_shared_batch() {
    let (_dir, db) = scratch_db().await;
    {
        let mut tx = db.begin_write().await.unwrap();
        insert(&mut tx, "taken").await.unwrap();
        tx.commit().await.unwrap();
    }

    let mut first = db.begin_write().await.unwrap();
    insert(&mut first, "first").await.unwrap();
    let mut queued = queue_writers(&db, 2).await.into_iter();
    // The first member leaves with others waiting: its batch stays open.
    let first_done = tokio::spawn(first.commit());

    let mut failing = queued.next().unwrap().await.unwrap();
    insert(&mut failing, "failing-own-row").await.unwrap();
    let conflict = insert(&mut failing, "taken").await.unwrap_err();
    assert!(conflict.to_string().contains("UNIQUE"), "{conflict}");
    drop(failing);

    let mut last = queued.next().unwrap().await.unwrap();
    insert(&mut last, "last").await.unwrap();
    last.commit().await.unwrap();
    first_done.await.unwrap().unwrap();

    assert_eq!(keys(&db).await, ["first", "last", "taken"]);
}

#[tokio::test]
async fn a_failed_outer_commit_is_reported_to_every_member() {
    let (_dir, db) = scratch_db().await;
    let mut first = db.begin_write().await.unwrap();
    sqlx::query("INSERT INTO child (id, parent) VALUES (1, 99)")
        .execute(&mut *first)
        .await
        .unwrap();
    let mut queued = queue_writers(&db, 1).await.into_iter();
    let first_done = tokio::spawn(first.commit());

    let mut second = queued.next().unwrap().await.unwrap();
    insert(&mut second, "second").await.unwrap();
    let second_result = second.commit().await;
    let first_result = first_done.await.unwrap();

    assert!(first_result.is_err(), "the member that broke the batch");
    assert!(
        second_result.is_err(),
        "an innocent member of the same batch"
    );
    assert!(
        keys(&db).await.is_empty(),
        "nothing of the failed batch stands"
    );
    let children: i64 = sqlx::query_scalar("SELECT count(*) FROM child")
        .fetch_one(&db.read)
        .await
        .unwrap();
    assert_eq!(children, 0);

    // The writer recovers: the next batch commits.
    let mut next = db.begin_write().await.unwrap();
    insert(&mut next, "after").await.unwrap();
    next.commit().await.unwrap();
    assert_eq!(keys(&db).await, ["after"]);
}

/// The batch is closed by its queue, not a timer: members that each take
/// far longer than a few milliseconds still share the one `COMMIT` while
/// others wait, so a broken member's batch fails for all of them.
#[tokio::test]
async fn a_batch_stays_open_while_its_queue_is_not_empty_however_long_it_takes() {
    let (_dir, db) = scratch_db().await;
    let mut first = db.begin_write().await.unwrap();
    sqlx::query("INSERT INTO child (id, parent) VALUES (1, 99)")
        .execute(&mut *first)
        .await
        .unwrap();
    let queued = queue_writers(&db, 3).await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    let mut done = vec![tokio::spawn(first.commit())];
    for (n, member) in queued.into_iter().enumerate() {
        let mut member = member.await.unwrap();
        insert(&mut member, &format!("slow-{n}")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        done.push(tokio::spawn(member.commit()));
    }
    for (n, member) in done.into_iter().enumerate() {
        assert!(
            member.await.unwrap().is_err(),
            "member {n} committed apart from the batch it joined"
        );
    }
    assert!(
        keys(&db).await.is_empty(),
        "nothing of the failed batch stands"
    );
}

#[tokio::test]
async fn an_idle_writer_commits_at_once_and_leaves_the_pool_usable() {
    let (_dir, db) = scratch_db().await;
    for k in ["a", "b", "c"] {
        let mut tx = db.begin_write().await.unwrap();
        insert(&mut tx, k).await.unwrap();
        tx.commit().await.unwrap();
        // Committed means visible to readers and the connection back.
        assert!(keys(&db).await.contains(&k.to_owned()));
        let mut direct = db.write.acquire().await.unwrap();
        let in_tx: i64 = sqlx::query_scalar("SELECT count(*) FROM item")
            .fetch_one(&mut *direct)
            .await
            .unwrap();
        assert!(in_tx >= 1);
    }
    let dropped = {
        let mut tx = db.begin_write().await.unwrap();
        insert(&mut tx, "dropped").await.unwrap();
        tx
    };
    drop(dropped);
    let mut tx = db.begin_write().await.unwrap();
    insert(&mut tx, "d").await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(keys(&db).await, ["a", "b", "c", "d"]);
}

/// The actions of the audit log, oldest first.
async fn audit_actions(db: &Db) -> Vec<String> {
    let mut conn = db.read.acquire().await.unwrap();
    widgetd_domain::audit::list(&mut conn, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.action)
        .collect()
}

/// The writer remembers the audit chain's head between its transactions:
/// a member whose savepoint is undone, and another process appending to
/// the same file (the CLI beside a running daemon), must not leave it
/// chaining to a row that is not the last one.
#[tokio::test]
async fn the_remembered_audit_head_follows_undone_members_and_other_writers() {
    use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memo.db");
    let daemon = Db::open(&path).await.unwrap();
    daemon.migrate().await.unwrap();
    let cli = Db::open(&path).await.unwrap();
    async fn append(db: &Db, action: &'static str) -> widgetd_domain::db::WriteTx {
        let mut tx = db.begin_write().await.unwrap();
        let entry = Entry {
            action,
            ..Default::default()
        };
        audit::append(&mut tx, &Actor::System, &ClientAddr::default(), entry)
            .await
            .unwrap();
        tx
    }
    append(&daemon, "test.first").await.commit().await.unwrap();
    drop(append(&daemon, "test.undone").await);
    append(&daemon, "test.second").await.commit().await.unwrap();
    append(&cli, "test.outside").await.commit().await.unwrap();
    append(&daemon, "test.third").await.commit().await.unwrap();

    let rows = audit_actions(&daemon).await;
    assert_eq!(
        rows,
        ["test.first", "test.second", "test.outside", "test.third"]
    );
    let mut conn = daemon.read.acquire().await.unwrap();
    let verified = audit::verify(&mut conn).await.unwrap();
    assert!(verified.is_ok(), "{verified:?}");
}

/// A script of inserts into `item`, one per key.
fn inserts(keys: &[&str]) -> Script {
    let mut script = Script::new(Dialect::Sqlite);
    for key in keys {
        let key = (*key).to_owned();
        script.push("item", "INSERT INTO item (k) VALUES ($1)", |v| {
            v.add(key);
        });
    }
    script
}

/// A member whose last write also ends its savepoint (`Script::commit`)
/// stands with its batch, and one whose last write fails partway is undone
/// alone: the statement's release never ran, so its own savepoint is the
/// one undone.
#[tokio::test]
async fn a_last_write_that_ends_the_savepoint_keeps_members_apart() {
    let (_dir, db) = scratch_db().await;
    let seed = db.begin_write().await.unwrap();
    inserts(&["taken"]).commit(seed).await.unwrap();

    let first = db.begin_write().await.unwrap();
    let mut queued = queue_writers(&db, 2).await.into_iter();
    // Left with others waiting: the batch stays open.
    let first_done = tokio::spawn(inserts(&["first-a", "first-b"]).commit(first));
    let failing = queued.next().unwrap().await.unwrap();
    let conflict = inserts(&["failing-own-row", "taken"])
        .commit(failing)
        .await
        .unwrap_err();
    assert!(conflict.to_string().contains("UNIQUE"), "{conflict}");
    let last = queued.next().unwrap().await.unwrap();
    inserts(&["last"]).commit(last).await.unwrap();
    first_done.await.unwrap().unwrap();

    assert_eq!(keys(&db).await, ["first-a", "first-b", "last", "taken"]);
    // The writer goes on: a plain member after them commits.
    let mut next = db.begin_write().await.unwrap();
    insert(&mut next, "after").await.unwrap();
    next.commit().await.unwrap();
    assert_eq!(keys(&db).await.len(), 5);
}

/// The writer's memory of the audit chain's head stays true when a
/// member's last write ends its savepoint: whether that write fails, or its
/// caller gives up at any point of it (before, during or after the
/// release), the next row chains to the row that is really last.
#[tokio::test]
async fn the_remembered_audit_head_survives_last_writes_that_fail_or_are_abandoned() {
    use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
    let dir = tempfile::tempdir().unwrap();
    let daemon = Db::open(&dir.path().join("memo.db")).await.unwrap();
    daemon.migrate().await.unwrap();
    async fn appending(db: &Db, action: &'static str) -> (widgetd_domain::db::WriteTx, Script) {
        appending_in(db.begin_write().await.unwrap(), action).await
    }
    async fn appending_in(
        mut tx: widgetd_domain::db::WriteTx,
        action: &'static str,
    ) -> (widgetd_domain::db::WriteTx, Script) {
        let mut script = Script::new(Dialect::Sqlite);
        let entry = Entry {
            action,
            ..Default::default()
        };
        audit::append_into(
            &mut tx,
            &mut script,
            &Actor::System,
            &ClientAddr::default(),
            entry,
        )
        .await
        .unwrap();
        (tx, script)
    }
    let (tx, script) = appending(&daemon, "test.first").await;
    script.commit(tx).await.unwrap();
    // Fails after the audit row was written: nothing of it stands.
    let (tx, mut script) = appending(&daemon, "test.failed").await;
    script.push(
        "boom",
        "INSERT INTO auth_epoch (id, epoch) VALUES (1, 0)",
        |_| {},
    );
    assert!(script.commit(tx).await.is_err());
    // Abandoned after a while, from at once to after the whole statement
    // ran: polled once (the statement goes to SQLite's thread, which runs
    // it on its own), left for 0 to 500 µs, then dropped unpolled.
    let mut abandoned = 0;
    let waker = futures_util::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    for wait in 0..100u64 {
        let (tx, script) = appending(&daemon, "test.abandoned").await;
        // Another member waits to join the batch: the last write carries
        // the release.
        let next = queue_writers(&daemon, 1).await.pop().unwrap();
        let mut committing = Box::pin(script.commit(tx));
        if committing.as_mut().poll(&mut cx).is_pending() {
            abandoned += 1;
            std::thread::sleep(Duration::from_micros(wait * 5));
        }
        drop(committing);
        let (tx, script) = appending_in(next.await.unwrap(), "test.after").await;
        script.commit(tx).await.unwrap();
    }
    assert!(
        abandoned > 0,
        "no commit was abandoned; the test proved nothing"
    );

    let rows = audit_actions(&daemon).await;
    // Writes stood though their caller gave up before hearing of them:
    // the race this guards against happened.
    let standing = rows.iter().filter(|a| *a == "test.abandoned").count();
    eprintln!("{abandoned} abandoned, {standing} of them stand");
    assert!(
        standing > 0,
        "none of {abandoned} stood; the test proved nothing"
    );
    assert_eq!(rows[0], "test.first");
    assert!(!rows.contains(&"test.failed".to_owned()));
    assert_eq!(rows.iter().filter(|a| *a == "test.after").count(), 100);
    let mut conn = daemon.read.acquire().await.unwrap();
    let verified = audit::verify(&mut conn).await.unwrap();
    assert!(verified.is_ok(), "{verified:?}");
}

/// A member abandoned between the two statements of its last write's
/// release (`RELEASE member; SAVEPOINT member`) leaves the batch open with
/// no savepoint: its undo finds none, tells that from a batch SQLite rolled
/// back, and its writes stand with the batch's others (a commit whose
/// answer was lost). After a rollback, the batch fails for every member.
#[tokio::test]
async fn an_undo_that_finds_no_savepoint_tells_a_release_from_a_rollback() {
    let (_dir, db) = scratch_db().await;
    for (ended, stands) in [("RELEASE member", true), ("ROLLBACK", false)] {
        let mut first = db.begin_write().await.unwrap();
        let mut queued = queue_writers(&db, 2).await.into_iter();
        insert(&mut first, &format!("{ended}: first"))
            .await
            .unwrap();
        let first = tokio::spawn(first.commit());
        let mut member = queued.next().unwrap().await.unwrap();
        let sql = format!("INSERT INTO item (k) VALUES ('{ended}: member'); {ended}");
        sqlx::raw_sql(&sql).execute(&mut *member).await.unwrap();
        // Its caller gives up: its savepoint is undone, or found gone.
        drop(member);
        let mut last = queued.next().unwrap().await.unwrap();
        insert(&mut last, &format!("{ended}: last")).await.unwrap();
        last.commit().await.unwrap();
        let first = first.await.unwrap();
        assert_eq!(first.is_ok(), stands, "{ended}: {first:?}");
    }
    assert_eq!(
        keys(&db).await,
        [
            "RELEASE member: first",
            "RELEASE member: last",
            "RELEASE member: member",
            "ROLLBACK: last"
        ]
    );
}
