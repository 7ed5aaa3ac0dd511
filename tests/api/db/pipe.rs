//! Scripts left to the SQLite writer's task (`src/db/pipe.rs`): several
//! members' writes in one hop, each standing or failing alone, those built
//! after a failing one superseded and made again, and the audit chain true
//! throughout; over HTTP, creations on the guess among refusals.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
use widgetd_domain::auth::Role;
use widgetd_domain::db::{Db, Lock, Script, WriteTx, superseded};

use crate::helpers::{spawn_sqlite_app, widgetd};

async fn scratch_db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("pipe.db")).await.unwrap();
    db.migrate().await.unwrap();
    sqlx::query("CREATE TABLE item (k TEXT PRIMARY KEY)")
        .execute(&db.write)
        .await
        .unwrap();
    (dir, db)
}

/// One member's writes: an audit row chained from the writer's memory and
/// an item row, committed as one script.
async fn write_item(mut tx: WriteTx, key: &str) -> sqlx::Result<()> {
    let mut script = Script::new(tx.dialect());
    let entry = Entry {
        action: "test.item",
        names: Some(key.to_owned()),
        ..Default::default()
    };
    let actor = Actor::System;
    audit::append_into(&mut tx, &mut script, &actor, &ClientAddr::default(), entry).await?;
    let key = key.to_owned();
    script.push("item", "INSERT INTO item (k) VALUES ($1)", |v| {
        v.add(key);
    });
    script.commit(tx).await
}

async fn items(db: &Db) -> Vec<String> {
    sqlx::query_scalar("SELECT k FROM item ORDER BY k")
        .fetch_all(&db.read)
        .await
        .unwrap()
}

async fn audited(db: &Db) -> Vec<String> {
    let mut names: Vec<String> =
        sqlx::query_scalar("SELECT names FROM audit_log WHERE action = 'test.item'")
            .fetch_all(&db.read)
            .await
            .unwrap();
    names.sort();
    names
}

async fn assert_chain(db: &Db) {
    let mut conn = db.read.acquire().await.unwrap();
    let verified = audit::verify(&mut conn).await.unwrap();
    assert!(verified.is_ok(), "{verified:?}");
}

/// Rounds of eight members queued behind one that holds the writer, each
/// leaving its script to the writer's task; the fourth of each round
/// breaks a unique key after its audit row was written. That one alone
/// fails, and nothing of it stands; those left after it were built on a
/// chain head that is not going to exist, so they are superseded, not
/// run, and made again; the others stand. The chain verifies, and every
/// item has its one audit row.
#[tokio::test(flavor = "current_thread")]
async fn a_failing_script_stands_alone_and_supersedes_those_built_after_it() {
    let (_dir, db) = scratch_db().await;
    write_item(db.begin_write().await.unwrap(), "taken")
        .await
        .unwrap();
    let (mut stood, mut superseded_seen) = (vec!["taken".to_owned()], 0);
    // Whether those after the failing one were built before its failure
    // was known depends on the threads' timing: rounds go on until one
    // was (at least 20, at most 300).
    let mut round = 0;
    while round < 20 || (superseded_seen == 0 && round < 300) {
        round += 1;
        let holder = db.begin_write().await.unwrap();
        let queued_before = db.queued_writes();
        let members: Vec<_> = (0..8)
            .map(|i| {
                let db = db.clone();
                let key = match i {
                    3 => "taken".to_owned(),
                    _ => format!("r{round:02}-{i}"),
                };
                tokio::spawn(async move {
                    let tx = db.begin_write_deferred(Lock::Session("s")).await.unwrap();
                    (key.clone(), write_item(tx, &key).await)
                })
            })
            .collect();
        while db.queued_writes() < queued_before + 8 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        holder.commit().await.unwrap();
        for member in members {
            let (key, result) = member.await.unwrap();
            match result {
                Ok(()) => {
                    assert_ne!(key, "taken", "a second row under a unique key");
                    stood.push(key);
                }
                Err(e) if superseded(&e) => {
                    superseded_seen += 1;
                    // Made again, as a caller does.
                    write_item(db.begin_write().await.unwrap(), &key)
                        .await
                        .unwrap();
                    stood.push(key);
                }
                Err(e) => {
                    assert_eq!(key, "taken", "{e}");
                    assert!(e.to_string().contains("UNIQUE"), "{e}");
                }
            }
        }
    }
    assert!(
        superseded_seen > 0,
        "no script was superseded: the test proved nothing"
    );
    stood.sort();
    assert_eq!(items(&db).await, stood);
    assert_eq!(audited(&db).await, stood);
    assert_chain(&db).await;
}

/// A deferred member whose memory lacks what it needs takes the connection
/// ([`WriteTx::ready`]) and writes as any member; one whose caller gives
/// up once its script was left still has it run or not at all, and the
/// chain stays true either way.
#[tokio::test]
async fn a_deferred_member_reads_when_it_must_and_an_abandoned_one_leaves_no_gap() {
    let (dir, db) = scratch_db().await;
    // A fresh writer remembers no chain head: the first member reads it.
    let tx = db.begin_write_deferred(Lock::Session("s")).await.unwrap();
    assert!(tx.is_deferred());
    write_item(tx, "first").await.unwrap();
    // Another process appends meanwhile: the next batch forgets the memory.
    let cli = Db::open(&dir.path().join("pipe.db")).await.unwrap();
    write_item(cli.begin_write().await.unwrap(), "outside")
        .await
        .unwrap();
    let waker = futures_util::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    for i in 0..50 {
        let tx = db.begin_write_deferred(Lock::Session("s")).await.unwrap();
        let key = format!("abandoned-{i:02}");
        let mut left = Box::pin(write_item(tx, &key));
        let _ = std::future::Future::poll(left.as_mut(), &mut cx);
        drop(left);
        let tx = db.begin_write_deferred(Lock::Session("s")).await.unwrap();
        let key = format!("after-{i:02}");
        match write_item(tx, &key).await {
            // Built on a head that the abandoned script (or the other
            // process) made untrue: made again, as a caller does.
            Err(e) if superseded(&e) => write_item(db.begin_write().await.unwrap(), &key)
                .await
                .unwrap(),
            done => done.unwrap(),
        }
    }
    let stood = items(&db).await;
    assert!(stood.contains(&"first".to_owned()) && stood.contains(&"outside".to_owned()));
    assert_eq!(stood.iter().filter(|k| k.starts_with("after-")).count(), 50);
    assert_eq!(audited(&db).await, stood);
    assert_chain(&db).await;
}

/// Over HTTP, many agents create at once, a third of them asking for a
/// name already stored: their guess is refused (a script that fails, and
/// supersedes those built after it) and made again with the session read,
/// born `already_present`. Every answer is true of the database, and the
/// audit chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_on_the_guess_among_refusals_answer_truly() {
    let app = spawn_sqlite_app().await;
    let alice = app.user("alice", Role::Member).await;
    let host = app.token(&alice, "sessions,env:read,env:write").await;
    let stored = app
        .put_env(&host, "STORED_KEY", &json!({ "value": "v" }))
        .await;
    assert!(stored.status().is_success(), "{stored:?}");
    let mut calls = Vec::new();
    for i in 0..12 {
        let (session, agent) = app.session(&host).await;
        for j in 0..10 {
            let name = match (i + j) % 3 {
                0 => "STORED_KEY".to_owned(),
                _ => format!("KEY_{i}_{j}"),
            };
            let (client, url) = (app.client.clone(), app.url.clone());
            let (session, agent) = (session.clone(), agent.clone());
            calls.push(tokio::spawn(async move {
                let response = client
                    .post(format!("{url}/api/v1/sessions/{session}/widgets/env-vars"))
                    .bearer_auth(&agent)
                    .json(&json!({ "names": [name], "reason": "to call the API" }))
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let body: Value = response.json().await.unwrap();
                (name, status, body)
            }));
        }
    }
    let (mut pending, mut present) = (0, 0);
    for call in calls {
        let (name, status, body) = call.await.unwrap();
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let id = body["widget_id"].as_str().unwrap();
        let stored: String = sqlx::query_scalar("SELECT status FROM widgets WHERE id = $1")
            .bind(id)
            .fetch_one(&app.state.db.read)
            .await
            .unwrap();
        assert_eq!(stored, body["status"].as_str().unwrap());
        match name.as_str() {
            "STORED_KEY" => {
                assert_eq!(body["status"], "already_present");
                present += 1;
            }
            _ => {
                assert_eq!(body["status"], "pending");
                pending += 1;
            }
        }
    }
    assert_eq!((pending, present), (80, 40));
    let widgets = app.count("SELECT count(*) FROM widgets").await;
    assert_eq!(widgets, 120);
    let created = app
        .count("SELECT count(*) FROM audit_log WHERE action = 'widget.create'")
        .await;
    assert_eq!(created, 120);
    let verify = widgetd(&app.data_dir())
        .args(["audit", "verify"])
        .output()
        .unwrap();
    assert!(verify.status.success(), "{verify:?}");
}
