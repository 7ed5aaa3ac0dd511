//! What the unit tests of the vault and of the approval rules share: a real,
//! migrated SQLite file in a temporary directory, with a master key, one
//! user and one of her sessions. Nothing here is built outside tests.

use secrecy::SecretString;
use sqlx::AnyConnection;
use sqlx::pool::PoolConnection;

use crate::auth::{self, Role, User};
use crate::crypto::{Keyring, MasterKey, MasterKeySource};
use crate::db::Db;
use crate::ids::SessionId;
use crate::secrets::{self, EnvVarName, SecretValue, Target};
use crate::sessions;

pub struct TestDb {
    pub db: Db,
    pub master: MasterKey,
    pub alice: User,
    pub session: SessionId,
    _dir: tempfile::TempDir,
}

impl TestDb {
    /// A new database with `alice` and one session of hers; no data key yet.
    pub async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("test.db")).await.unwrap();
        db.migrate().await.unwrap();
        let mut conn = db.write.acquire().await.unwrap();
        let password = SecretString::from("a long test password");
        let alice = auth::create_user(&mut conn, "alice", Role::Member, password)
            .await
            .unwrap();
        let session = sessions::create_session(&mut conn, &alice.id, "t".into())
            .await
            .unwrap()
            .session
            .id;
        drop(conn);
        Self {
            db,
            master: MasterKey::generate(),
            alice,
            session,
            _dir: dir,
        }
    }

    /// The single connection of the write pool (no other write may wait
    /// for it while a test holds it).
    pub async fn conn(&self) -> PoolConnection<sqlx::Any> {
        self.db.write.acquire().await.unwrap()
    }

    /// The keyring as a start with this master key loads it.
    pub async fn keyring(&self, conn: &mut AnyConnection) -> Keyring {
        Keyring::load(conn, &self.master, &MasterKeySource::Env)
            .await
            .unwrap()
    }

    /// Stores `value` for `alice` under `name` at `target`.
    pub async fn set(
        &self,
        conn: &mut AnyConnection,
        keyring: &Keyring,
        target: &Target,
        name: &str,
        value: &str,
    ) {
        let name = EnvVarName::parse(name).unwrap();
        let value = SecretValue::parse(&name, SecretString::from(value)).unwrap();
        let alice = &self.alice.id;
        secrets::set_value(conn, keyring, alice, target, &name, &value, alice)
            .await
            .unwrap();
    }
}
