//! The vault on a real SQLite file: where values apply, what is listed,
//! moved ciphertexts, the leak check, `check` and `keys reencrypt`.

use std::time::Duration;

use secrecy::ExposeSecret;

use super::*;
use crate::testing::TestDb;

fn name(name: &str) -> EnvVarName {
    EnvVarName::parse(name).unwrap()
}

/// The effective env of `session` as (name, value) pairs; panics on an
/// unreadable value.
async fn env_of(
    conn: &mut AnyConnection,
    keyring: &Keyring,
    t: &TestDb,
    session: &SessionId,
) -> Vec<(String, String)> {
    let env = effective_env(conn, keyring, &t.alice.id, session)
        .await
        .unwrap();
    assert!(env.unreadable.is_empty(), "{:?}", env.unreadable);
    env.values
        .into_iter()
        .map(|(k, v)| (k, v.expose_secret().to_owned()))
        .collect()
}

#[test]
fn targets_name_their_scope() {
    assert_eq!(Target::Global.scope(), "global");
    let session = Target::Session(SessionId::generate());
    assert_eq!(session.scope(), "session");
    assert_eq!(Target::Global.session(), None);
}

#[tokio::test]
async fn a_session_value_overrides_a_global_one_in_its_session_only() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let other = crate::sessions::create_session(&mut conn, &t.alice.id, "u".into())
        .await
        .unwrap()
        .session
        .id;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    // The names as a creation reads them with its session: none yet.
    let sql = format!(
        "SELECT {} FROM sessions AS s WHERE s.id = $1",
        effective_names_sql(crate::db::Dialect::Sqlite)
    );
    let joined: Option<String> = sqlx::query_scalar(&sql)
        .bind(&other)
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(joined, None, "no value: NULL");
    assert!(names_in(None).is_empty());
    let here = Target::Session(t.session.clone());
    t.set(
        &mut conn,
        &keyring,
        &Target::Global,
        "TOKEN",
        "global-value",
    )
    .await;
    t.set(&mut conn, &keyring, &here, "TOKEN", "session-value")
        .await;
    t.set(&mut conn, &keyring, &Target::Global, "OTHER", "x1")
        .await;

    let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(
        env_of(&mut conn, &keyring, &t, &t.session).await,
        [pair("OTHER", "x1"), pair("TOKEN", "session-value")]
    );
    assert_eq!(
        env_of(&mut conn, &keyring, &t, &other).await,
        [pair("OTHER", "x1"), pair("TOKEN", "global-value")]
    );
    t.set(&mut conn, &keyring, &here, "ONLY_HERE", "h").await;
    for (session, names) in [
        (&other, vec!["OTHER", "TOKEN"]),
        (&t.session, vec!["ONLY_HERE", "OTHER", "TOKEN"]),
    ] {
        let joined: Option<String> = sqlx::query_scalar(&sql)
            .bind(session)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        let read = names_in(joined.as_deref());
        assert_eq!(read.into_iter().collect::<Vec<_>>(), names);
    }
    delete_value(&mut conn, &t.alice.id, &here, &name("ONLY_HERE"))
        .await
        .unwrap();
    assert!(
        has_global(&mut conn, &t.alice.id, &name("TOKEN"))
            .await
            .unwrap()
    );
    assert!(
        !has_global(&mut conn, &t.alice.id, &name("NONE"))
            .await
            .unwrap()
    );

    // Listed by name, global first; never a value.
    let listed: Vec<_> = list_env_vars(&mut conn, &t.alice.id)
        .await
        .unwrap()
        .into_iter()
        .map(|i| {
            assert_eq!(i.updated_by, "alice");
            assert_eq!(i.key_id, 1);
            assert!(i.updated_at.starts_with("20"), "{}", i.updated_at);
            (i.name, i.scope, i.session_id)
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("OTHER".to_owned(), "global", None),
            ("TOKEN".to_owned(), "global", None),
            ("TOKEN".to_owned(), "session", Some(t.session.clone())),
        ]
    );
    let (page, total) = list_env_vars_page(&mut conn, &t.alice.id, 1, 1)
        .await
        .unwrap();
    assert_eq!(total, 3);
    let page: Vec<_> = page.into_iter().map(|i| (i.name, i.scope)).collect();
    assert_eq!(page, [("TOKEN".to_owned(), "global")]);

    // Deleting: the session value goes, the global one shows through again.
    delete_value(&mut conn, &t.alice.id, &here, &name("TOKEN"))
        .await
        .unwrap();
    assert!(matches!(
        delete_value(&mut conn, &t.alice.id, &here, &name("TOKEN")).await,
        Err(Error::NotFound("env var"))
    ));
    assert!(
        !delete_if_present(&mut conn, &t.alice.id, &here, &name("TOKEN"))
            .await
            .unwrap()
    );
    assert_eq!(
        env_of(&mut conn, &keyring, &t, &t.session).await,
        [pair("OTHER", "x1"), pair("TOKEN", "global-value")]
    );
    assert!(
        delete_if_present(&mut conn, &t.alice.id, &Target::Global, &name("OTHER"))
            .await
            .unwrap()
    );
    assert_eq!(
        env_of(&mut conn, &keyring, &t, &t.session).await,
        [pair("TOKEN", "global-value")]
    );
}

#[tokio::test]
async fn setting_a_value_again_replaces_it_at_its_place_under_the_newest_key() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    let here = Target::Session(t.session.clone());
    t.set(&mut conn, &keyring, &Target::Global, "TOKEN", "g1")
        .await;
    t.set(&mut conn, &keyring, &here, "TOKEN", "s1").await;
    keyring.rotate(&mut conn).await.unwrap();
    t.set(&mut conn, &keyring, &Target::Global, "TOKEN", "g2")
        .await;
    t.set(&mut conn, &keyring, &here, "TOKEN", "s2").await;

    let listed: Vec<_> = list_env_vars(&mut conn, &t.alice.id)
        .await
        .unwrap()
        .into_iter()
        .map(|i| (i.scope, i.key_id))
        .collect();
    assert_eq!(listed, [("global", 2), ("session", 2)]);
    let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(
        env_of(&mut conn, &keyring, &t, &t.session).await,
        [pair("TOKEN", "s2")]
    );
    delete_value(&mut conn, &t.alice.id, &here, &name("TOKEN"))
        .await
        .unwrap();
    assert_eq!(
        env_of(&mut conn, &keyring, &t, &t.session).await,
        [pair("TOKEN", "g2")]
    );
}

#[tokio::test]
async fn a_key_rotated_by_another_process_is_used_from_its_commit_on() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    let here = Target::Session(t.session.clone());
    t.set(&mut conn, &keyring, &Target::Global, "TOKEN", "g1")
        .await;
    assert_eq!(keyring.newest_known().unwrap().id, 1);

    // `widgetd keys rotate` in another process: this one has not seen key 2.
    let other = t.keyring(&mut conn).await;
    assert_eq!(other.rotate(&mut conn).await.unwrap(), 2);
    assert_eq!(keyring.newest_known().unwrap().id, 1, "not seen yet");

    // Both scopes' next writes go under key 2 all the same, and this
    // process knows key 2 from then on.
    t.set(&mut conn, &keyring, &Target::Global, "TOKEN", "g2")
        .await;
    assert_eq!(keyring.newest_known().unwrap().id, 2);
    t.set(&mut conn, &keyring, &here, "OTHER", "s2").await;
    let listed: Vec<_> = list_env_vars(&mut conn, &t.alice.id)
        .await
        .unwrap()
        .into_iter()
        .map(|i| (i.name, i.scope, i.key_id))
        .collect();
    assert_eq!(
        listed,
        [
            ("OTHER".to_owned(), "session", 2),
            ("TOKEN".to_owned(), "global", 2)
        ]
    );
    let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(
        env_of(&mut conn, &other, &t, &t.session).await,
        [pair("OTHER", "s2"), pair("TOKEN", "g2")],
        "the other process reads what this one wrote"
    );
}

#[tokio::test]
async fn a_ciphertext_moved_to_another_row_does_not_decrypt() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    let here = Target::Session(t.session.clone());
    t.set(&mut conn, &keyring, &Target::Global, "A", "alpha")
        .await;
    t.set(&mut conn, &keyring, &here, "B", "bravo").await;
    let rows: Vec<(i64, Vec<u8>, Vec<u8>)> =
        sqlx::query_as("SELECT id, nonce, ciphertext FROM env_vars ORDER BY id")
            .fetch_all(&mut *conn)
            .await
            .unwrap();
    for (target, source) in [(&rows[0], &rows[1]), (&rows[1], &rows[0])] {
        sqlx::query("UPDATE env_vars SET nonce = $1, ciphertext = $2 WHERE id = $3")
            .bind(&source.1)
            .bind(&source.2)
            .bind(target.0)
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    let env = effective_env(&mut conn, &keyring, &t.alice.id, &t.session)
        .await
        .unwrap();
    assert!(env.values.is_empty());
    let unreadable: Vec<_> = env.unreadable.iter().map(|u| (&*u.name, u.scope)).collect();
    assert_eq!(unreadable, [("A", "global"), ("B", "session")]);
    let (checked, bad) = check_values(&mut conn, &keyring, 10, |_, _| {})
        .await
        .unwrap();
    assert_eq!(checked, 2);
    assert_eq!(
        bad.iter().map(|b| b.id).collect::<Vec<_>>(),
        [rows[0].0, rows[1].0]
    );
}

#[tokio::test]
async fn free_text_holding_a_stored_value_is_refused() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    let here = Target::Session(t.session.clone());
    t.set(&mut conn, &keyring, &Target::Global, "PIN", "4711")
        .await;
    t.set(&mut conn, &keyring, &here, "TOKEN", "tok-secret")
        .await;
    t.set(&mut conn, &keyring, &Target::Global, "SHORT", "yes")
        .await;
    let alice = &t.alice.id;
    for texts in [
        &["4711"][..],
        &["my pin is 4711"],
        &["ok", "use tok-secret please"],
    ] {
        let refused = refuse_stored_values(&mut conn, &keyring, alice, texts).await;
        match refused {
            Err(Error::Invalid { code, message }) => {
                assert_eq!(code, "answer_contains_secret");
                assert!(!message.contains("4711") && !message.contains("tok-secret"));
            }
            other => panic!("{texts:?}: {other:?}"),
        }
    }
    for texts in [&["yes please"][..], &["nothing to see"], &["471"], &[]] {
        refuse_stored_values(&mut conn, &keyring, alice, texts)
            .await
            .unwrap_or_else(|e| panic!("{texts:?}: {e:?}"));
    }
}

#[tokio::test]
async fn check_and_reencrypt_count_every_row_in_batches() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    for (n, v) in [("A", "one"), ("B", "two"), ("C", "three")] {
        t.set(&mut conn, &keyring, &Target::Global, n, v).await;
    }
    let mut progress = Vec::new();
    let (checked, bad) = check_values(&mut conn, &keyring, 2, |d, n| progress.push((d, n)))
        .await
        .unwrap();
    assert_eq!((checked, bad.len()), (3, 0));
    assert_eq!(progress, [(2, 3), (3, 3)]);

    assert_eq!(keyring.rotate(&mut conn).await.unwrap(), 2);
    drop(conn);
    let mut progress = Vec::new();
    let moved = tokio::time::timeout(
        Duration::from_secs(30),
        reencrypt_all(&t.db, &keyring, 2, |d, n| progress.push((d, n))),
    )
    .await
    .expect("reencrypt_all ends within 30 s")
    .unwrap();
    assert_eq!(moved, 3);
    assert_eq!(progress, [(2, 3), (3, 3)]);
    let mut conn = t.conn().await;
    let keys: Vec<i64> = sqlx::query_scalar("SELECT key_id FROM env_vars ORDER BY id")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    assert_eq!(keys, [2, 2, 2]);
    let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(
        env_of(&mut conn, &keyring, &t, &t.session).await,
        [pair("A", "one"), pair("B", "two"), pair("C", "three")]
    );
}
