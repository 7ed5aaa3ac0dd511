//! The keyring on a real SQLite file: numbering, loading by another
//! process, moved wrapped keys, status, missing keys and rewrapping.

use super::{CryptoError, Keyring, KeyringError, MasterKey, MasterKeySource, rewrap_keyring};
use crate::secrets::Target;
use crate::testing::TestDb;

#[tokio::test]
async fn keys_are_numbered_from_one_and_another_process_finds_new_ones() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    assert!(keyring.is_empty(), "a new data dir has no data key");
    assert_eq!(keyring.rotate(&mut conn).await.unwrap(), 1);
    assert!(!keyring.is_empty());

    // Another process loaded now sees key 1, and key 2 once it is asked
    // for it after the first one made it.
    let other = t.keyring(&mut conn).await;
    assert!(!other.is_empty(), "the stored key is loaded");
    assert_eq!(keyring.rotate(&mut conn).await.unwrap(), 2);
    assert_eq!(keyring.for_write(&mut conn).await.unwrap().id, 2);
    assert_eq!(other.for_write(&mut conn).await.unwrap().id, 2);

    // Both hold the same material for each key.
    for id in [1, 2] {
        let mine = keyring.get(&mut conn, id).await.unwrap();
        let theirs = other.get(&mut conn, id).await.unwrap();
        assert_eq!(theirs.id, id);
        let sealed = mine.seal(b"row", b"value");
        let opened = theirs.open(b"row", &sealed.nonce, &sealed.ciphertext);
        assert_eq!(&opened.unwrap()[..], b"value", "key {id}");
        // ... and open nothing sealed for another row.
        let moved = theirs.open(b"other row", &sealed.nonce, &sealed.ciphertext);
        assert!(matches!(moved, Err(CryptoError::Open)), "key {id}");
    }
    assert!(matches!(
        other.get(&mut conn, 3).await,
        Err(KeyringError::Crypto(CryptoError::UnknownKey(3)))
    ));

    // A fresh start loads both, and opens with either.
    let fresh = t.keyring(&mut conn).await;
    let sealed = keyring.get(&mut conn, 1).await.unwrap().seal(b"r", b"v");
    let key = fresh.get(&mut conn, 1).await.unwrap();
    assert_eq!(
        &key.open(b"r", &sealed.nonce, &sealed.ciphertext).unwrap()[..],
        b"v"
    );
}

#[tokio::test]
async fn a_wrapped_key_moved_to_another_row_or_another_master_key_fails_the_load() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    keyring.rotate(&mut conn).await.unwrap();

    let stranger = MasterKey::generate();
    let wrong = Keyring::load(&mut conn, &stranger, &MasterKeySource::Env).await;
    assert!(matches!(
        wrong,
        Err(KeyringError::WrongMasterKey { key_id: 1, .. })
    ));
    let (_, failed) = Keyring::load_checked(&mut conn, &stranger).await.unwrap();
    assert_eq!(failed, [1, 2]);

    // Row 1 gets row 2's wrapped key and row 2 row 1's.
    let rows: Vec<(i64, Vec<u8>, Vec<u8>)> =
        sqlx::query_as("SELECT key_id, nonce, wrapped_key FROM keyring ORDER BY key_id")
            .fetch_all(&mut *conn)
            .await
            .unwrap();
    for (target, source) in [(&rows[0], &rows[1]), (&rows[1], &rows[0])] {
        sqlx::query("UPDATE keyring SET nonce = $1, wrapped_key = $2 WHERE key_id = $3")
            .bind(&source.1)
            .bind(&source.2)
            .bind(target.0)
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    let swapped = Keyring::load(&mut conn, &t.master, &MasterKeySource::Env).await;
    assert!(
        matches!(swapped, Err(KeyringError::WrongMasterKey { key_id: 1, .. })),
        "{swapped:?}"
    );
    let (_, failed) = Keyring::load_checked(&mut conn, &t.master).await.unwrap();
    assert_eq!(failed, [1, 2]);
}

#[tokio::test]
async fn status_counts_values_per_key_and_missing_keys_are_named() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    t.set(&mut conn, &keyring, &Target::Global, "A", "one")
        .await;
    t.set(&mut conn, &keyring, &Target::Global, "B", "two")
        .await;
    keyring.rotate(&mut conn).await.unwrap();
    t.set(&mut conn, &keyring, &Target::Global, "C", "three")
        .await;

    let status: Vec<_> = Keyring::status(&mut conn)
        .await
        .unwrap()
        .into_iter()
        .map(|k| {
            assert!(k.created_at.starts_with("20"), "{}", k.created_at);
            (k.key_id, k.env_vars, k.newest)
        })
        .collect();
    assert_eq!(status, [(1, 2, false), (2, 1, true)]);

    assert_eq!(Keyring::missing_keys(&mut conn).await.unwrap(), []);
    // A deleted keyring row (foreign keys off, as a hand edit would be).
    sqlx::query("PRAGMA foreign_keys = OFF")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query("DELETE FROM keyring WHERE key_id = 1")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query("PRAGMA foreign_keys = ON")
        .execute(&mut *conn)
        .await
        .unwrap();
    assert_eq!(Keyring::missing_keys(&mut conn).await.unwrap(), [(1, 2)]);
}

#[tokio::test]
async fn rewrapping_moves_every_key_to_the_new_master_key() {
    let t = TestDb::new().await;
    let mut conn = t.conn().await;
    let keyring = t.keyring(&mut conn).await;
    keyring.rotate(&mut conn).await.unwrap();
    keyring.rotate(&mut conn).await.unwrap();
    let sealed = keyring.get(&mut conn, 2).await.unwrap().seal(b"r", b"v");

    let new = MasterKey::generate();
    assert_eq!(rewrap_keyring(&mut conn, &t.master, &new).await.unwrap(), 2);
    let old = Keyring::load(&mut conn, &t.master, &MasterKeySource::Env).await;
    assert!(matches!(old, Err(KeyringError::WrongMasterKey { .. })));
    let moved = Keyring::load(&mut conn, &new, &MasterKeySource::Env)
        .await
        .unwrap();
    let key = moved.get(&mut conn, 2).await.unwrap();
    assert_eq!(
        &key.open(b"r", &sealed.nonce, &sealed.ciphertext).unwrap()[..],
        b"v"
    );
    // Rewrapping with a master key that did not wrap them refuses.
    let again = rewrap_keyring(&mut conn, &t.master, &new).await;
    assert!(matches!(again, Err(KeyringError::ForeignKey(1))));
}
