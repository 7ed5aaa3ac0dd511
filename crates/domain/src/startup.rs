//! Opening a data dir: the master key first, then the database, and the
//! keyring checked against the key before anything is written.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::crypto::{Keyring, MASTER_KEY_FILE, MasterKey, MasterKeySource};
use crate::db::{DB_FILE, DatabaseUrl, Db, integrity};

/// Name of the environment variable that may carry the master key.
pub const MASTER_KEY_ENV: &str = "WIDGETD_MASTER_KEY";

/// An opened, migrated data dir with its unlocked keyring.
pub struct DataDir {
    pub path: PathBuf,
    pub db: Db,
    pub keyring: Keyring,
    pub master: MasterKey,
    pub master_source: MasterKeySource,
    /// Whether this start created the data dir's database.
    pub created: bool,
    /// Held (shared) while the data dir is open: `restore` takes it
    /// exclusively, so it never replaces the database of a running daemon.
    _lock: std::fs::File,
}

/// The lock file in every data dir (see [`lock_data_dir`]).
pub const LOCK_FILE: &str = "widgetd.lock";

/// Takes the data dir's lock: shared for a daemon or a command using it,
/// exclusive for `restore`. `None` when the other kind is held.
pub fn lock_data_dir(dir: &Path, exclusive: bool) -> anyhow::Result<Option<std::fs::File>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let kind = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_SH
    };
    // SAFETY: flock on a file descriptor this function owns.
    let locked = unsafe { libc::flock(file.as_raw_fd(), kind | libc::LOCK_NB) } == 0;
    Ok(locked.then_some(file))
}

/// Where the master key comes from: `WIDGETD_MASTER_KEY` if set, else the key
/// file, created only when the database does not exist yet.
pub fn load_master_key(
    dir: &Path,
    db_exists: bool,
) -> anyhow::Result<(MasterKey, MasterKeySource)> {
    if let Ok(text) = std::env::var(MASTER_KEY_ENV) {
        return Ok((
            MasterKey::from_base64(&text, MasterKeySource::Env)?,
            MasterKeySource::Env,
        ));
    }
    let path = dir.join(MASTER_KEY_FILE);
    let source = MasterKeySource::File(path.clone());
    if let Some(key) = MasterKey::read_file(&path)? {
        return Ok((key, source));
    }
    if db_exists {
        bail!(
            "{} holds encrypted data but there is no master key: set {MASTER_KEY_ENV} or restore {} from your backup",
            dir.display(),
            path.display()
        );
    }
    let key = MasterKey::generate();
    key.write_new_file(&path)?;
    Ok((key, source))
}

pub fn create_dir_private(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the data dir {}", dir.display()))
}

/// Checks that `master` unwraps the existing keyring, reading only. If it
/// does not and a `keys rekey` was interrupted after its transaction but
/// before renaming the staged `master.key.new`, the staged key is tried and,
/// if it fits, moved into place.
async fn check_master_key(
    db: &Db,
    db_exists: bool,
    master: MasterKey,
    source: &MasterKeySource,
) -> anyhow::Result<MasterKey> {
    if !db_exists || !db.has_table("keyring").await? {
        return Ok(master);
    }
    let mut conn = db.read.acquire().await?;
    let err = match Keyring::load(&mut conn, &master, source).await {
        Ok(_) => return Ok(master),
        Err(err) => err,
    };
    let MasterKeySource::File(path) = source else {
        return Err(err.into());
    };
    let staged = path.with_extension("key.new");
    let Some(candidate) = MasterKey::read_file(&staged)? else {
        return Err(err.into());
    };
    if Keyring::load(&mut conn, &candidate, source).await.is_err() {
        return Err(err.into());
    }
    std::fs::rename(&staged, path)
        .with_context(|| format!("cannot move {} into place", staged.display()))?;
    tracing::warn!(
        "completed an interrupted `keys rekey`: {} is now the master key",
        path.display()
    );
    Ok(candidate)
}

/// Opens (creating on first use) the data dir and its SQLite database.
/// A wrong or malformed master key fails before the database is written to.
pub async fn open_data_dir(dir: &Path) -> anyhow::Result<DataDir> {
    open(dir, None).await
}

/// Opens the data dir (which holds the master key file, if the key does
/// not come from the environment) and the database: `database`, else the
/// data dir's SQLite file. A wrong or malformed master key fails before the
/// database is written to.
pub async fn open(dir: &Path, database: Option<&DatabaseUrl>) -> anyhow::Result<DataDir> {
    create_dir_private(dir)?;
    let lock = lock_data_dir(dir, false)?.with_context(|| {
        format!(
            "`widgetd restore` is replacing the database in {}; start widgetd once it is done",
            dir.display()
        )
    })?;
    let url = database
        .cloned()
        .unwrap_or_else(|| DatabaseUrl::Sqlite(dir.join(DB_FILE)));
    // On SQLite the key comes first: a key file that cannot be written must
    // not leave an empty database behind that later starts would take for
    // one whose key is lost. PostgreSQL must be asked whether it holds data.
    let (db, db_exists, loaded) = match &url {
        DatabaseUrl::Sqlite(path) => {
            let exists = path.exists();
            let loaded = load_master_key(dir, exists)?;
            if let Some(damage) = integrity::inspect_wal(path) {
                tracing::warn!("{damage}; run `widgetd check` to see what the data dir holds now");
            }
            let db = Db::open(path).await.map_err(|e| explain_damage(e, &url))?;
            (db, exists, loaded)
        }
        DatabaseUrl::Postgres(_) => {
            let db = Db::connect(&url).await?;
            let exists = db.has_table("keyring").await?;
            match load_master_key(dir, exists) {
                Ok(loaded) => (db, exists, loaded),
                Err(err) => {
                    db.close().await;
                    return Err(err);
                }
            }
        }
    };
    let (master, master_source) = loaded;
    let master = match check_master_key(&db, db_exists, master, &master_source).await {
        Ok(master) => master,
        Err(err) => {
            db.close().await;
            return Err(explain_damage(err, &url));
        }
    };
    if let Err(err) = db.migrate().await {
        db.close().await;
        return Err(explain_damage(err, &url));
    }
    let keyring = match first_data_key(&db, &master, &master_source).await {
        Ok(keyring) => keyring,
        Err(err) => {
            db.close().await;
            return Err(explain_damage(err, &url));
        }
    };
    Ok(DataDir {
        path: dir.to_owned(),
        db,
        keyring,
        master,
        master_source,
        created: !db_exists,
        _lock: lock,
    })
}

/// Loads the keyring, creating data key 1 in an empty one. A write
/// transaction, so that two daemons starting together on one PostgreSQL
/// database cannot both create it.
async fn first_data_key(
    db: &Db,
    master: &MasterKey,
    source: &MasterKeySource,
) -> anyhow::Result<Keyring> {
    let mut tx = db.begin_write_exclusive().await?;
    refuse_missing_keys(&mut tx).await?;
    let keyring = Keyring::load(&mut tx, master, source).await?;
    if keyring.is_empty() {
        keyring
            .rotate(&mut tx)
            .await
            .context("cannot create the first data key")?;
    }
    tx.commit().await?;
    Ok(keyring)
}

/// Stops start-up when ciphertexts name a data key the keyring lacks: a
/// keyring row was deleted, and making a new key in its place would only
/// hide that those values are lost.
async fn refuse_missing_keys(conn: &mut sqlx::AnyConnection) -> anyhow::Result<()> {
    let missing = Keyring::missing_keys(conn).await?;
    if missing.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = missing
        .iter()
        .map(|(key, used)| format!("data key {key} ({used} stored secret(s) use it)"))
        .collect();
    bail!(
        "the keyring lacks {}: its rows were deleted, so those secrets cannot be decrypted by \
         anyone. Nothing was changed. Restore the newest backup (`widgetd restore`); `widgetd \
         check` lists each affected value",
        list.join(", ")
    )
}

/// Whether `err` comes from a damaged database.
pub fn is_damage(err: &anyhow::Error) -> bool {
    use crate::crypto::KeyringError;
    use crate::error::Error;
    err.chain().any(|e| {
        e.downcast_ref::<sqlx::Error>()
            .is_some_and(crate::db::is_corrupt)
            || e.downcast_ref::<Error>()
                .is_some_and(|a| matches!(a, Error::Database(e) if crate::db::is_corrupt(e)))
            || e.downcast_ref::<KeyringError>()
                .is_some_and(|k| matches!(k, KeyringError::Database(e) if crate::db::is_corrupt(e)))
    })
}

/// Says what to do when `err` comes from a damaged database.
pub fn explain_damage(err: anyhow::Error, url: &DatabaseUrl) -> anyhow::Error {
    if !is_damage(&err) {
        return err;
    }
    let what = match url {
        DatabaseUrl::Sqlite(path) => format!("the database file {}", path.display()),
        DatabaseUrl::Postgres(_) => "the PostgreSQL database".to_owned(),
    };
    err.context(format!(
        "{what} is damaged and was not used; run `widgetd check` for what is damaged, then \
         restore the newest backup (`widgetd restore`, or pg_restore)"
    ))
}
