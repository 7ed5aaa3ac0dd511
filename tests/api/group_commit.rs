//! Group commit on a real database file: members of one batch succeed or
//! fail on their own, and a failed outer COMMIT reaches every member.

use std::time::Duration;

use widgetd::db::Db;

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

async fn insert(tx: &mut widgetd::db::WriteTx, k: &str) -> sqlx::Result<()> {
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
async fn queue_writers(db: &Db, n: usize) -> Vec<tokio::task::JoinHandle<widgetd::db::WriteTx>> {
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

/// The writer remembers the audit chain's head between its transactions:
/// a member whose savepoint is undone, and another process appending to
/// the same file (the CLI beside a running daemon), must not leave it
/// chaining to a row that is not the last one.
#[tokio::test]
async fn the_remembered_audit_head_follows_undone_members_and_other_writers() {
    use widgetd::audit::{self, Actor, ClientAddr, Entry};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memo.db");
    let daemon = Db::open(&path).await.unwrap();
    daemon.migrate().await.unwrap();
    let cli = Db::open(&path).await.unwrap();
    async fn append(db: &Db, action: &'static str) -> widgetd::db::WriteTx {
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

    let mut conn = daemon.read.acquire().await.unwrap();
    let rows: Vec<String> = audit::list(&mut conn, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.action)
        .collect();
    assert_eq!(
        rows,
        ["test.first", "test.second", "test.outside", "test.third"]
    );
    let verified = audit::verify(&mut conn).await.unwrap();
    assert!(verified.is_ok(), "{verified:?}");
}
