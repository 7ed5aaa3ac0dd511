//! `widgetd restore BACKUP`: a copy made by `widgetd backup` becomes the
//! data dir's database, but only once it checks out with the master key
//! of its time (every data key unwraps, every value and webhook secret
//! decrypts, the audit chain verifies). A data dir that already has a
//! database is refused unless told (`--force`), and even then the old
//! files are moved aside, never deleted.
//!
//! This is the embedded SQLite file's restore; a PostgreSQL deployment
//! restores with `pg_restore`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::check::{self, Report};
use widgetd_domain::crypto::{MASTER_KEY_FILE, MasterKey, MasterKeySource};
use widgetd_domain::db::{DB_FILE, DatabaseUrl};
use widgetd_domain::startup::{MASTER_KEY_ENV, create_dir_private, load_master_key};

/// What to restore, where, and with which key.
pub struct RestoreOptions<'a> {
    pub dir: &'a Path,
    pub backup: &'a Path,
    /// The master key of the backup's time, to be put into the data dir.
    pub key_file: Option<&'a Path>,
    /// Move an existing database aside instead of refusing.
    pub force: bool,
}

/// Restores; returns the check of the restored database.
pub async fn run(options: RestoreOptions<'_>) -> anyhow::Result<Report> {
    let RestoreOptions {
        dir,
        backup,
        key_file,
        force,
    } = options;
    anyhow::ensure!(
        backup.is_file(),
        "there is no backup file at {}",
        backup.display()
    );
    create_dir_private(dir)?;
    let _lock = widgetd_domain::startup::lock_data_dir(dir, true)?.with_context(|| {
        format!(
            "widgetd is running on {} (or a command is using it): stop it first, or restore \
             into a new data dir and start widgetd there",
            dir.display()
        )
    })?;
    let existing = existing_files(dir);
    if !existing.is_empty() && !force {
        bail!(
            "{} already holds a database ({}); restore into a new, empty data dir, or stop \
             widgetd and add --force to move the present files aside (they are kept)",
            dir.display(),
            names(&existing)
        );
    }
    let (master, source) = master_key(dir, key_file)?;
    let staged = dir.join(format!("{DB_FILE}.restoring"));
    stage(backup, &staged)?;
    let label = backup.display().to_string();
    let report = check::run_with_key(
        &DatabaseUrl::Sqlite(staged.clone()),
        &label,
        &master,
        &source,
        false,
    )
    .await;
    let report = match report {
        Ok(report) if report.ok => report,
        Ok(report) => {
            remove_staged(&staged);
            report.print();
            bail!("the backup does not check out (above); nothing was restored");
        }
        Err(err) => {
            remove_staged(&staged);
            return Err(err.context("the backup could not be checked; nothing was restored"));
        }
    };
    if !existing.is_empty() {
        move_aside(dir, &existing)?;
    }
    if let Some(path) = key_file {
        place_key(dir, &master, path)?;
    }
    std::fs::rename(&staged, dir.join(DB_FILE))
        .context("cannot move the restored database into place")?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .context("cannot sync the data dir")?;
    Ok(report)
}

/// The database files present in `dir`.
fn existing_files(dir: &Path) -> Vec<PathBuf> {
    ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| dir.join(format!("{DB_FILE}{suffix}")))
        .filter(|p| p.exists())
        .collect()
}

fn names(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.join(", ")
}

/// The key to check the backup with: `--key-file`, else the data dir's
/// (`WIDGETD_MASTER_KEY` or its `master.key`). A `--key-file` that differs
/// from a key file already in the data dir is refused.
fn master_key(dir: &Path, key_file: Option<&Path>) -> anyhow::Result<(MasterKey, MasterKeySource)> {
    let Some(path) = key_file else {
        if std::env::var_os(MASTER_KEY_ENV).is_none() && !dir.join(MASTER_KEY_FILE).exists() {
            bail!("give the master key of the backup's time: --key-file PATH, or {MASTER_KEY_ENV}");
        }
        return load_master_key(dir, true);
    };
    let key = MasterKey::read_file(path)?
        .with_context(|| format!("there is no key file at {}", path.display()))?;
    if let Some(present) = MasterKey::read_file(&dir.join(MASTER_KEY_FILE))?
        && *present.to_base64() != *key.to_base64()
    {
        bail!(
            "{} holds another master key than {}; restore into a new data dir",
            dir.display(),
            path.display()
        );
    }
    Ok((key, MasterKeySource::File(path.to_owned())))
}

/// Copies the backup to a private file beside the database, synced.
fn stage(backup: &Path, staged: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    remove_staged(staged);
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(staged)
        .with_context(|| format!("cannot create {}", staged.display()))?;
    let mut from =
        std::fs::File::open(backup).with_context(|| format!("cannot read {}", backup.display()))?;
    std::io::copy(&mut from, &mut to)
        .and_then(|_| to.flush())
        .and_then(|()| to.sync_all())
        .with_context(|| format!("cannot copy the backup to {}", staged.display()))
}

/// Removes a staged copy (and any log SQLite left beside it).
fn remove_staged(staged: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut path = staged.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(path));
    }
}

/// Renames the present database files to `widgetd.db.before-restore-MS`
/// (with `-wal`, `-shm`), so they still open together.
fn move_aside(dir: &Path, existing: &[PathBuf]) -> anyhow::Result<()> {
    let stamp = widgetd_domain::clock::now_ms();
    for path in existing {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let suffix = name.strip_prefix(DB_FILE).unwrap_or_default();
        let to = dir.join(format!("{DB_FILE}.before-restore-{stamp}{suffix}"));
        std::fs::rename(path, &to)
            .with_context(|| format!("cannot move {} aside", path.display()))?;
    }
    Ok(())
}

/// Puts the key of `--key-file` into the data dir, unless the key comes
/// from the environment or the data dir has it already.
fn place_key(dir: &Path, key: &MasterKey, from: &Path) -> anyhow::Result<()> {
    let target = dir.join(MASTER_KEY_FILE);
    if std::env::var_os(MASTER_KEY_ENV).is_some() || target.exists() {
        return Ok(());
    }
    key.write_new_file(&target)
        .with_context(|| format!("cannot copy {} into the data dir", from.display()))
}

/// The last audit row of the SQLite file at `path` (its id and hash in
/// hex), read without writing to the file: what `widgetd backup` prints for
/// the operator to note beside the backup (`docs/operations.md`, section 7).
pub async fn audit_head(path: &Path) -> anyhow::Result<Option<(i64, String)>> {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .connect()
        .await
        .with_context(|| format!("cannot read {}", path.display()))?;
    let last = widgetd_domain::audit::head(&mut conn).await?;
    conn.close().await?;
    Ok(last.map(|(id, hash)| (id, hash.iter().map(|b| format!("{b:02x}")).collect())))
}

/// What `widgetd backup` says after the copy: the copy's audit head, and
/// where the master key the copy needs is (never in it).
pub async fn print_backup_notes(dir: &Path, target: &Path) -> anyhow::Result<()> {
    match audit_head(target).await? {
        Some((rows, head)) => println!(
            "audit head of the backup: {rows} row(s), head {head} (note it with the backup)"
        ),
        None => println!("the backup has no audit rows yet"),
    }
    if std::env::var_os(MASTER_KEY_ENV).is_some() {
        println!(
            "the master key is not in it: keep the value of {MASTER_KEY_ENV} apart from the backups"
        );
    } else {
        println!(
            "the master key is not in it: back up {} apart from the backups",
            dir.join(MASTER_KEY_FILE).display()
        );
    }
    Ok(())
}
