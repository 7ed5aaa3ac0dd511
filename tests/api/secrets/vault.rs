//! Properties of the encrypted store, checked on the SQLite file itself.

use secrecy::{ExposeSecret, SecretString};
use sqlx::AnyPool;
use widgetd_domain::Error;
use widgetd_domain::auth::{self, Role, User};
use widgetd_domain::crypto::{Keyring, KeyringError, MasterKey, MasterKeySource, rewrap_keyring};
use widgetd_domain::ids::SessionId;
use widgetd_domain::secrets::{self, EnvVarName, SecretValue, Target};
use widgetd_domain::sessions;
use widgetd_domain::startup::DataDir;

struct Vault {
    data: DataDir,
    alice: User,
    session: SessionId,
    _dir: crate::helpers::TestDir,
}

async fn vault() -> Vault {
    let dir = crate::helpers::test_dir();
    let data = crate::helpers::open_data(dir.path()).await;
    let mut conn = data.db.write.acquire().await.unwrap();
    let alice = auth::create_user(
        &mut conn,
        "alice",
        Role::Member,
        "a long test password".to_owned().into(),
    )
    .await
    .unwrap();
    let session = sessions::create_session(&mut conn, &alice.id, "t".into())
        .await
        .unwrap()
        .session
        .id;
    drop(conn);
    Vault {
        data,
        alice,
        session,
        _dir: dir,
    }
}

impl Vault {
    async fn set(&self, target: &Target, name: &str, value: &str) {
        let name = EnvVarName::parse(name).unwrap();
        let value = SecretValue::parse(&name, SecretString::from(value)).unwrap();
        let mut tx = self.data.db.write.begin().await.unwrap();
        secrets::set_value(
            &mut tx,
            &self.data.keyring,
            &self.alice.id,
            target,
            &name,
            &value,
            &self.alice.id,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }

    async fn env(&self) -> Result<Vec<(String, String)>, Error> {
        let mut conn = self.data.db.read.acquire().await.unwrap();
        let env =
            secrets::effective_env(&mut conn, &self.data.keyring, &self.alice.id, &self.session)
                .await?;
        // A value that does not decrypt makes the whole env unusable here,
        // as `GET …/env` does without `?partial=true`.
        if !env.unreadable.is_empty() {
            return Err(Error::Crypto(widgetd_domain::crypto::CryptoError::Open));
        }
        Ok(env
            .values
            .into_iter()
            .map(|(k, v)| (k, v.expose_secret().to_owned()))
            .collect())
    }

    fn pool(&self) -> &AnyPool {
        &self.data.db.write
    }

    /// Exchanges the nonce and ciphertext of the first two rows.
    async fn swap_ciphertexts(&self) {
        let rows: Vec<(i64, Vec<u8>, Vec<u8>)> =
            sqlx::query_as("SELECT id, nonce, ciphertext FROM env_vars ORDER BY id LIMIT 2")
                .fetch_all(self.pool())
                .await
                .unwrap();
        for (target, source) in [(&rows[0], &rows[1]), (&rows[1], &rows[0])] {
            sqlx::query("UPDATE env_vars SET nonce = $1, ciphertext = $2 WHERE id = $3")
                .bind(&source.1)
                .bind(&source.2)
                .bind(target.0)
                .execute(self.pool())
                .await
                .unwrap();
        }
    }

    /// Exchanges the wrapped data keys (nonce and ciphertext) of keyring
    /// rows 1 and 2.
    async fn swap_wrapped_keys(&self) {
        let rows: Vec<(i64, Vec<u8>, Vec<u8>)> = sqlx::query_as(
            "SELECT key_id, nonce, wrapped_key FROM keyring WHERE key_id IN (1, 2) ORDER BY key_id",
        )
        .fetch_all(self.pool())
        .await
        .unwrap();
        assert_eq!(rows.len(), 2, "two data keys to swap");
        for (target, source) in [(&rows[0], &rows[1]), (&rows[1], &rows[0])] {
            sqlx::query("UPDATE keyring SET nonce = $1, wrapped_key = $2 WHERE key_id = $3")
                .bind(&source.1)
                .bind(&source.2)
                .bind(target.0)
                .execute(self.pool())
                .await
                .unwrap();
        }
    }

    /// `keys status` as (key id, values it encrypts, whether newest).
    async fn key_status(&self) -> Vec<(i64, i64, bool)> {
        let mut conn = self.pool().acquire().await.unwrap();
        Keyring::status(&mut conn)
            .await
            .unwrap()
            .into_iter()
            .map(|k| {
                assert!(
                    k.created_at.starts_with("20") && k.created_at.ends_with('Z'),
                    "{}",
                    k.created_at
                );
                (k.key_id, k.env_vars, k.newest)
            })
            .collect()
    }

    async fn exec(&self, sql: &str) {
        sqlx::query(sql).execute(self.pool()).await.unwrap();
    }
}

fn assert_crypto_error(result: Result<Vec<(String, String)>, Error>) {
    match result {
        Err(Error::Crypto(e)) => {
            assert_eq!(
                e.to_string(),
                "a stored secret failed authentication (altered, moved, or a different key)"
            )
        }
        other => panic!("expected a decryption failure, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn ciphertexts_hide_the_value_and_never_repeat() {
    let v = vault().await;
    let value = "the-same-value-twice";
    v.set(&Target::Global, "A_KEY", value).await;
    v.set(&Target::Session(v.session.clone()), "A_KEY", value)
        .await;
    v.set(&Target::Global, "B_KEY", value).await;
    let rows: Vec<(Vec<u8>, Vec<u8>)> = sqlx::query_as("SELECT nonce, ciphertext FROM env_vars")
        .fetch_all(v.pool())
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    for (nonce, ciphertext) in &rows {
        assert_eq!(nonce.len(), 12);
        assert!(
            !ciphertext
                .windows(value.len())
                .any(|w| w == value.as_bytes())
        );
        assert_ne!(ciphertext.as_slice(), value.as_bytes());
    }
    assert_ne!(rows[0].1, rows[1].1);
    assert_ne!(rows[1].1, rows[2].1);
    assert_ne!(rows[0].0, rows[2].0);
    assert_eq!(
        v.env().await.unwrap(),
        [
            ("A_KEY".into(), value.into()),
            ("B_KEY".into(), value.into())
        ]
    );
}

#[tokio::test]
async fn flipping_any_stored_byte_fails_decryption() {
    let v = vault().await;
    v.set(&Target::Global, "KEY", "flip-me").await;
    let (nonce, ciphertext): (Vec<u8>, Vec<u8>) =
        sqlx::query_as("SELECT nonce, ciphertext FROM env_vars")
            .fetch_one(v.pool())
            .await
            .unwrap();
    for (column, original) in [("nonce", &nonce), ("ciphertext", &ciphertext)] {
        for i in 0..original.len() {
            let mut bad = original.clone();
            bad[i] ^= 0x01;
            sqlx::query(&format!("UPDATE env_vars SET {column} = $1"))
                .bind(&bad)
                .execute(v.pool())
                .await
                .unwrap();
            assert_crypto_error(v.env().await);
        }
        sqlx::query(&format!("UPDATE env_vars SET {column} = $1"))
            .bind(original)
            .execute(v.pool())
            .await
            .unwrap();
    }
    assert_eq!(v.env().await.unwrap(), [("KEY".into(), "flip-me".into())]);
}

#[tokio::test]
async fn moving_a_ciphertext_or_relabelling_its_row_fails_decryption() {
    let v = vault().await;
    v.set(&Target::Global, "FIRST", "first-value").await;
    v.set(&Target::Global, "SECOND", "second-value").await;

    v.swap_ciphertexts().await;
    assert_crypto_error(v.env().await);
    v.swap_ciphertexts().await;
    assert_eq!(v.env().await.unwrap().len(), 2);

    let other_key = v
        .data
        .keyring
        .rotate(&mut v.pool().acquire().await.unwrap())
        .await
        .unwrap();
    let bob = {
        let mut conn = v.pool().acquire().await.unwrap();
        auth::create_user(
            &mut conn,
            "bob",
            Role::Member,
            "a long test password".to_owned().into(),
        )
        .await
        .unwrap()
    };
    let tampers = [
        "UPDATE env_vars SET name = 'RENAMED' WHERE name = 'FIRST'".to_owned(),
        format!(
            "UPDATE env_vars SET scope = 'session', session_id = '{}' WHERE name = 'FIRST'",
            v.session
        ),
        format!("UPDATE env_vars SET key_id = {other_key} WHERE name = 'FIRST'"),
    ];
    for tamper in &tampers {
        let mut tx = v.pool().begin().await.unwrap();
        sqlx::query(tamper).execute(&mut *tx).await.unwrap();
        let env = secrets::effective_env(&mut tx, &v.data.keyring, &v.alice.id, &v.session)
            .await
            .unwrap();
        let unreadable: Vec<&str> = env.unreadable.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(unreadable.len(), 1, "{tamper}");
        assert!(["FIRST", "RENAMED"].contains(&unreadable[0]), "{tamper}");
        assert!(!env.values.contains_key("FIRST"), "{tamper}");
        assert_eq!(
            env.values["SECOND"].expose_secret(),
            "second-value",
            "{tamper}"
        );
        tx.rollback().await.unwrap();
    }
    // A row given to another owner does not open for them either.
    v.exec(&format!(
        "UPDATE env_vars SET owner_id = '{}' WHERE name = 'FIRST'",
        bob.id
    ))
    .await;
    let mut conn = v.pool().acquire().await.unwrap();
    let env = secrets::effective_env(&mut conn, &v.data.keyring, &bob.id, &v.session)
        .await
        .unwrap();
    assert!(env.values.is_empty());
    assert_eq!(env.unreadable.len(), 1);
    assert_eq!(env.unreadable[0].name, "FIRST");
}

#[tokio::test]
async fn rotation_keeps_old_values_readable_and_reencrypt_moves_them() {
    let v = vault().await;
    v.set(&Target::Global, "OLD", "old-value").await;
    let new_key = v
        .data
        .keyring
        .rotate(&mut v.pool().acquire().await.unwrap())
        .await
        .unwrap();
    assert_eq!(new_key, 2);
    v.set(&Target::Global, "NEW", "new-value").await;
    let pool = v.pool().clone();
    let key_of = |name: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT key_id FROM env_vars WHERE name = $1")
                .bind(name)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    assert_eq!(key_of("OLD").await, 1);
    assert_eq!(key_of("NEW").await, 2);
    assert_eq!(
        v.env().await.unwrap(),
        [
            ("NEW".into(), "new-value".into()),
            ("OLD".into(), "old-value".into())
        ]
    );

    let mut seen = Vec::new();
    let moved = secrets::reencrypt_all(&v.data.db, &v.data.keyring, 1, |done, total| {
        seen.push((done, total))
    })
    .await
    .unwrap();
    assert_eq!((moved, seen), (1, vec![(1, 1)]));
    assert_eq!(key_of("OLD").await, 2);
    assert_eq!(v.env().await.unwrap().len(), 2);
}

#[tokio::test]
async fn rewrapping_under_a_new_master_keeps_every_value() {
    let v = vault().await;
    v.set(&Target::Global, "KEY", "survives-rekey").await;
    let new_master = MasterKey::generate();
    let mut tx = v.pool().begin().await.unwrap();
    assert_eq!(
        rewrap_keyring(&mut tx, &v.data.master, &new_master)
            .await
            .unwrap(),
        1
    );
    tx.commit().await.unwrap();

    let mut conn = v.pool().acquire().await.unwrap();
    let reopened =
        widgetd_domain::crypto::Keyring::load(&mut conn, &new_master, &MasterKeySource::Env)
            .await
            .unwrap();
    let env = secrets::effective_env(&mut conn, &reopened, &v.alice.id, &v.session)
        .await
        .unwrap();
    assert_eq!(env.values["KEY"].expose_secret(), "survives-rekey");
    let old =
        widgetd_domain::crypto::Keyring::load(&mut conn, &v.data.master, &MasterKeySource::Env)
            .await;
    assert!(old.is_err(), "the old master key still opens the keyring");
}

/// A value stored under a name a later version blocks is reported, never
/// handed to a process.
#[tokio::test]
async fn a_value_under_a_since_blocked_name_is_reported_not_served() {
    let v = vault().await;
    v.set(&Target::Global, "CORP_PROXY_URL", "http://proxy.example")
        .await;
    v.exec("UPDATE env_vars SET name = 'HTTPS_PROXY' WHERE name = 'CORP_PROXY_URL'")
        .await;
    let mut conn = v.pool().acquire().await.unwrap();
    let env = secrets::effective_env(&mut conn, &v.data.keyring, &v.alice.id, &v.session)
        .await
        .unwrap();
    assert!(env.values.is_empty());
    assert_eq!(env.unreadable[0].name, "HTTPS_PROXY");
    assert!(
        env.unreadable[0].reason.contains("blocked"),
        "{}",
        env.unreadable[0].reason
    );
}

/// A wrapped data key is bound to its keyring row as a value is to its
/// env row: two rows that trade their wrapped keys no longer open, and the
/// master key is named as the likely cause before anything is decrypted.
#[tokio::test]
async fn moving_a_wrapped_data_key_to_another_keyring_row_fails_the_load() {
    let v = vault().await;
    v.set(&Target::Global, "FIRST", "under-key-1").await;
    let mut conn = v.pool().acquire().await.unwrap();
    assert_eq!(v.data.keyring.rotate(&mut conn).await.unwrap(), 2);
    drop(conn);
    v.set(&Target::Global, "SECOND", "under-key-2").await;

    v.swap_wrapped_keys().await;
    let mut conn = v.pool().acquire().await.unwrap();
    match Keyring::load(&mut conn, &v.data.master, &MasterKeySource::Env).await {
        Err(KeyringError::WrongMasterKey { key_id: 1, .. }) => {}
        other => panic!(
            "a keyring with swapped wrapped keys loaded: {:?}",
            other.map(|_| ())
        ),
    }
    let (_, failed) = Keyring::load_checked(&mut conn, &v.data.master)
        .await
        .unwrap();
    assert_eq!(failed, [1, 2]);
    drop(conn);

    v.swap_wrapped_keys().await;
    let mut conn = v.pool().acquire().await.unwrap();
    let keyring = Keyring::load(&mut conn, &v.data.master, &MasterKeySource::Env)
        .await
        .unwrap();
    let env = secrets::effective_env(&mut conn, &keyring, &v.alice.id, &v.session)
        .await
        .unwrap();
    assert_eq!(env.values["FIRST"].expose_secret(), "under-key-1");
    assert_eq!(env.values["SECOND"].expose_secret(), "under-key-2");
}

/// A data dir gets one data key when it is created and none on a later
/// start; `keys status` counts the values under each key and marks the
/// newest.
#[tokio::test]
async fn reopening_adds_no_data_key_and_status_counts_values_per_key() {
    let v = vault().await;
    assert!(!v.data.keyring.is_empty());
    assert_eq!(v.key_status().await, [(1, 0, true)]);
    v.set(&Target::Global, "A_KEY", "a").await;
    v.set(&Target::Global, "B_KEY", "b").await;
    let mut conn = v.pool().acquire().await.unwrap();
    v.data.keyring.rotate(&mut conn).await.unwrap();
    drop(conn);
    v.set(&Target::Global, "C_KEY", "c").await;
    assert_eq!(v.key_status().await, [(1, 2, false), (2, 1, true)]);

    let again = crate::helpers::open_data(&v.data.path).await;
    assert!(!again.keyring.is_empty());
    assert_eq!(v.key_status().await, [(1, 2, false), (2, 1, true)]);
    let mut conn = again.db.read.acquire().await.unwrap();
    let env = secrets::effective_env(&mut conn, &again.keyring, &v.alice.id, &v.session)
        .await
        .unwrap();
    assert_eq!(env.values.len(), 3);
}
