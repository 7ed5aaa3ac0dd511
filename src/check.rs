//! `widgetd check`: is this data dir whole? It looks at the file the way
//! SQLite sees it (`db::integrity`), unwraps every data key, authenticates
//! every ciphertext (env values, webhook signing secrets, the Slack
//! credentials) without showing any, and verifies the audit chain. Each part reports what it checked and
//! each problem it found, where it is, and what to do about it.

use std::collections::HashMap;
use std::path::Path;

use anyhow::bail;
use serde::Serialize;

use widgetd_domain::crypto::{Keyring, MasterKey, MasterKeySource};
use widgetd_domain::db::{Backend, DB_FILE, DatabaseUrl, Db, integrity};
use widgetd_domain::progress::Progress;
use widgetd_domain::startup::load_master_key;
use widgetd_domain::{audit, auth, secrets};
use widgetd_notify::webhooks;

/// Rows decrypted per batch (and per progress step).
const BATCH: i64 = 500;

/// One part of the check.
#[derive(Debug, Serialize)]
pub struct Section {
    /// A stable name: `wal`, `database`, `foreign_keys`, `keyring`,
    /// `env_values`, `webhook_secrets`, `slack_secrets`, `audit_chain`.
    pub name: &'static str,
    /// How many things it looked at (pages, keys, rows).
    pub checked: i64,
    /// One line on what was found.
    pub summary: String,
    /// Each problem: where it is and what is wrong; never a value.
    pub problems: Vec<String>,
    /// What to do when there are problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<&'static str>,
}

/// The whole check, as printed (or as `--json`).
#[derive(Debug, Serialize)]
pub struct Report {
    pub ok: bool,
    pub data_dir: String,
    pub sections: Vec<Section>,
}

const NEXT_DAMAGED: &str = "the database file is damaged: stop widgetd, copy the data dir aside as \
     it is, and restore the newest backup with `widgetd restore` (docs/operations.md, \"Backups and \
     restore\")";
const NEXT_KEYRING: &str = "start with the master key this data dir was made (or last rekeyed) \
     with; if the key is right, the keyring rows were altered or deleted: restore them from a \
     backup made under the same master key";
const NEXT_VALUES: &str = "each listed value cannot be decrypted: set it again (`widgetd env set`, \
     the settings page) or delete it, or restore a backup where it still decrypts";
const NEXT_WEBHOOKS: &str = "delete each listed webhook on /settings/webhooks and add it again \
     (receivers get a new signing secret)";
const NEXT_SLACK: &str = "connect Slack again (`widgetd slack connect` or /admin/slack) with the \
     app's bot token and signing secret";
const NEXT_AUDIT: &str = "the audit log was changed outside widgetd: keep a copy of this data dir \
     as evidence, compare with the heads you recorded (docs/operations.md, \"The audit log\"), and \
     restore a backup whose chain verifies";
const NEXT_WAL: &str = "transactions after the cut are gone from this data dir; if they matter, \
     restore a backup. Opening the data dir (this check did) folds what survived into the \
     database, so the next start goes on from there";

/// Checks the data dir at `dir` and its database (`database`, else the
/// data dir's SQLite file); prints progress to stderr.
pub async fn run(
    dir: &Path,
    database: Option<&DatabaseUrl>,
    quick: bool,
) -> anyhow::Result<Report> {
    let url = database
        .cloned()
        .unwrap_or_else(|| DatabaseUrl::Sqlite(dir.join(DB_FILE)));
    if let DatabaseUrl::Sqlite(path) = &url
        && !path.exists()
    {
        bail!(
            "there is no database at {}; check --data-dir",
            path.display()
        );
    }
    let (master, source) = load_master_key(dir, true)?;
    run_with_key(&url, &dir.display().to_string(), &master, &source, quick).await
}

/// Checks the database `url` with `master` (for `restore`, which checks a
/// copy before it takes its place). `label` names it in the report.
pub async fn run_with_key(
    url: &DatabaseUrl,
    label: &str,
    master: &MasterKey,
    source: &MasterKeySource,
    quick: bool,
) -> anyhow::Result<Report> {
    let (wal, opened) = match url {
        DatabaseUrl::Sqlite(path) => (integrity::inspect_wal(path), Db::open(path).await),
        DatabaseUrl::Postgres(_) => (None, Db::connect(url).await),
    };
    let sections = match opened {
        Ok(db) => {
            let result = check_open(&db, master, source, quick, wal).await;
            db.close().await;
            result?
        }
        Err(err) if widgetd_domain::startup::is_damage(&err) => {
            let problem = format!("{err:#}");
            let summary = "not readable as a database".to_owned();
            vec![
                wal_section(wal),
                section("database", 0, summary, vec![problem], NEXT_DAMAGED),
            ]
        }
        Err(err) => return Err(err),
    };
    Ok(Report {
        ok: sections.iter().all(|s| s.problems.is_empty()),
        data_dir: label.to_owned(),
        sections,
    })
}

/// The checks of SQLite's own file: the log, the structure, the foreign
/// keys, and whether the structure is sound (when it is not, the rest
/// would only fail on it). PostgreSQL checks its pages and keys itself.
async fn file_sections(
    db: &Db,
    quick: bool,
    wal: Option<String>,
) -> anyhow::Result<(Vec<Section>, bool)> {
    if db.backend() == Backend::Postgres {
        let summary = "PostgreSQL: pages and foreign keys are PostgreSQL's own (amcheck)".into();
        return Ok((vec![section("database", 0, summary, vec![], "")], true));
    }
    let mut sections = vec![wal_section(wal)];
    eprintln!("checking the database file ({})", pragma_name(quick));
    let structure = integrity::structure(db, quick).await?;
    let sound = structure.is_empty();
    sections.push(database_section(db, structure).await?);
    if sound {
        sections.push(readable("foreign_keys", foreign_key_section(db).await));
    }
    Ok((sections, sound))
}

async fn check_open(
    db: &Db,
    master: &MasterKey,
    source: &MasterKeySource,
    quick: bool,
    wal: Option<String>,
) -> anyhow::Result<Vec<Section>> {
    let (mut sections, sound) = file_sections(db, quick, wal).await?;
    if !sound {
        // Reading rows out of a damaged file can fail anywhere; what
        // matters now is the restore, which the report already says.
        return Ok(sections);
    }
    let mut conn = db.read.acquire().await?;
    let (keyring, failed_keys) = Keyring::load_checked(&mut conn, master).await?;
    // A data dir of an older widgetd may not have every table the query
    // reads yet; the values section still names each unreadable value.
    let missing = if db.has_table("webhook_endpoints").await? {
        Keyring::missing_keys(&mut conn).await?
    } else {
        Vec::new()
    };
    let keys = keyring_section(&mut conn, &failed_keys, &missing, source).await;
    sections.push(readable("keyring", keys));
    let owners = owner_names(&mut conn).await.unwrap_or_default();
    let values = values_section(&mut conn, &keyring, &failed_keys, &owners).await;
    sections.push(readable("env_values", values));
    let webhooks = webhooks_section(db, &mut conn, &keyring, &owners).await;
    sections.push(readable("webhook_secrets", webhooks));
    let slack = slack_section(db, &mut conn, &keyring).await;
    sections.push(readable("slack_secrets", slack));
    sections.push(readable("audit_chain", audit_section(&mut conn).await));
    Ok(sections)
}

/// A part that could not read its rows (a damaged record: a column of the
/// wrong type, a row cut short) reports that as its problem, so the other
/// parts still run.
fn readable(name: &'static str, result: anyhow::Result<Section>) -> Section {
    result.unwrap_or_else(|err| {
        let problem = format!("its rows could not be read: {err:#}");
        section(name, 0, "not readable".into(), vec![problem], NEXT_DAMAGED)
    })
}

fn pragma_name(quick: bool) -> &'static str {
    if quick {
        "quick_check"
    } else {
        "integrity_check"
    }
}

fn section(
    name: &'static str,
    checked: i64,
    summary: String,
    problems: Vec<String>,
    next: &'static str,
) -> Section {
    let next = (!problems.is_empty()).then_some(next);
    // SQLite's messages quote bytes of the damaged file, which need not be
    // UTF-8 (sqlx does not check): make them so before anyone prints them.
    let problems = problems
        .iter()
        .map(|p| String::from_utf8_lossy(p.as_bytes()).into_owned())
        .collect();
    Section {
        name,
        checked,
        summary,
        problems,
        next,
    }
}

fn wal_section(found: Option<String>) -> Section {
    let summary = match &found {
        Some(_) => "the write-ahead log was cut short".to_owned(),
        None => "no damaged write-ahead log".to_owned(),
    };
    section("wal", 1, summary, found.into_iter().collect(), NEXT_WAL)
}

async fn database_section(db: &Db, structure: Vec<String>) -> anyhow::Result<Section> {
    let pages = integrity::page_count(db).await;
    let pending = integrity::pending_migrations(db).await.unwrap_or_default();
    let mut summary = if structure.is_empty() {
        format!("{pages} pages, structure sound")
    } else {
        format!(
            "{pages} pages, {} problem(s) in the structure",
            structure.len()
        )
    };
    if !pending.is_empty() {
        summary.push_str(&format!(
            "; written by an older widgetd ({} migration(s) to apply at the next start)",
            pending.len()
        ));
    }
    Ok(section("database", pages, summary, structure, NEXT_DAMAGED))
}

async fn foreign_key_section(db: &Db) -> anyhow::Result<Section> {
    let dangling = integrity::foreign_keys(db).await?;
    let problems: Vec<String> = dangling
        .iter()
        .map(|d| {
            format!(
                "{} row {} points at a missing {} row",
                d.table,
                d.rowid.map_or("?".into(), |r| r.to_string()),
                d.parent
            )
        })
        .collect();
    let summary = format!("{} dangling reference(s)", problems.len());
    Ok(section("foreign_keys", 1, summary, problems, NEXT_DAMAGED))
}

async fn keyring_section(
    conn: &mut sqlx::AnyConnection,
    failed: &[i64],
    missing: &[(i64, i64)],
    source: &widgetd_domain::crypto::MasterKeySource,
) -> anyhow::Result<Section> {
    let status = Keyring::status(conn).await?;
    let ids: Vec<i64> = status.iter().map(|k| k.key_id).collect();
    let mut problems: Vec<String> = failed
        .iter()
        .map(|id| format!("data key {id} does not unwrap with the master key from {source}"))
        .collect();
    problems.extend(missing.iter().map(|(id, used)| {
        format!("data key {id} is missing, and {used} stored secret(s) are encrypted under it")
    }));
    let summary = format!(
        "{} data key(s), {} unwrap",
        ids.len(),
        ids.len() - failed.len()
    );
    let checked = i64::try_from(ids.len()).expect("key count fits i64");
    Ok(section("keyring", checked, summary, problems, NEXT_KEYRING))
}

/// User ids to names, so problems name people as operators know them.
async fn owner_names(
    conn: &mut sqlx::AnyConnection,
) -> anyhow::Result<HashMap<widgetd_domain::ids::UserId, String>> {
    let users = auth::list_users(conn).await?;
    Ok(users.into_iter().map(|u| (u.id, u.name)).collect())
}

fn owner(
    owners: &HashMap<widgetd_domain::ids::UserId, String>,
    id: &widgetd_domain::ids::UserId,
) -> String {
    owners
        .get(id)
        .cloned()
        .unwrap_or_else(|| format!("user {id} (missing)"))
}

async fn values_section(
    conn: &mut sqlx::AnyConnection,
    keyring: &Keyring,
    failed_keys: &[i64],
    owners: &HashMap<widgetd_domain::ids::UserId, String>,
) -> anyhow::Result<Section> {
    let mut progress = None;
    let (checked, bad) = secrets::check_values(conn, keyring, BATCH, |done, total| {
        let bar = progress.get_or_insert_with(|| Progress::new("env values", total as u64));
        bar.set(done as u64);
    })
    .await?;
    if let Some(bar) = progress {
        bar.finish();
    }
    let problems = bad
        .iter()
        .map(|b| {
            let scope = b
                .session_id
                .as_ref()
                .map_or("global".to_owned(), |s| format!("session {s}"));
            let reason = if failed_keys.contains(&b.key_id) {
                format!("its data key {} does not unwrap (see keyring)", b.key_id)
            } else {
                b.reason.clone()
            };
            format!(
                "{} ({scope}, of {}; row {}): {reason}",
                b.name,
                owner(owners, &b.owner_id),
                b.id
            )
        })
        .collect();
    let summary = format!(
        "{checked} value(s), {} authenticated",
        checked - bad.len() as i64
    );
    Ok(section(
        "env_values",
        checked,
        summary,
        problems,
        NEXT_VALUES,
    ))
}

async fn webhooks_section(
    db: &Db,
    conn: &mut sqlx::AnyConnection,
    keyring: &Keyring,
    owners: &HashMap<widgetd_domain::ids::UserId, String>,
) -> anyhow::Result<Section> {
    if !db.has_table("webhook_endpoints").await? {
        return Ok(section(
            "webhook_secrets",
            0,
            "no webhooks yet".into(),
            vec![],
            "",
        ));
    }
    let (checked, bad) = webhooks::check_secrets(conn, keyring).await?;
    let problems = bad
        .iter()
        .map(|b| {
            format!(
                "webhook {} of {}: {}",
                b.endpoint_id,
                owner(owners, &b.owner_id),
                b.reason
            )
        })
        .collect();
    let summary = format!(
        "{checked} signing secret(s), {} authenticated",
        checked - bad.len() as i64
    );
    Ok(section(
        "webhook_secrets",
        checked,
        summary,
        problems,
        NEXT_WEBHOOKS,
    ))
}

async fn slack_section(
    db: &Db,
    conn: &mut sqlx::AnyConnection,
    keyring: &Keyring,
) -> anyhow::Result<Section> {
    let (checked, bad) = match db.has_table("slack_workspace").await? {
        true => widgetd_notify::slack::check_secrets(conn, keyring).await?,
        false => (0, Vec::new()),
    };
    let summary = match checked {
        0 => "Slack is not connected".to_owned(),
        n => format!(
            "{n} Slack credential(s), {} authenticated",
            n - bad.len() as i64
        ),
    };
    Ok(section("slack_secrets", checked, summary, bad, NEXT_SLACK))
}

async fn audit_section(conn: &mut sqlx::AnyConnection) -> anyhow::Result<Section> {
    eprintln!("verifying the audit chain");
    let (checked, summary, problems) = match audit::verify(conn).await? {
        Ok(v) => (
            v.rows as i64,
            format!("{} row(s), chain intact; head {}", v.rows, v.head),
            vec![],
        ),
        Err(broken) => (
            0,
            "the chain is broken".to_owned(),
            vec![broken.to_string()],
        ),
    };
    Ok(section(
        "audit_chain",
        checked,
        summary,
        problems,
        NEXT_AUDIT,
    ))
}

impl Report {
    /// The report for people: one line per part, each problem under it,
    /// a summary and what to do next.
    pub fn print(&self) {
        println!("widgetd check of {}", self.data_dir);
        for s in &self.sections {
            let mark = if s.problems.is_empty() {
                "ok  "
            } else {
                "FAIL"
            };
            println!("  {mark}  {:<16} {}", s.name, s.summary);
            for p in &s.problems {
                println!("          - {}", p.escape_debug());
            }
        }
        let failed: Vec<&Section> = self
            .sections
            .iter()
            .filter(|s| !s.problems.is_empty())
            .collect();
        if failed.is_empty() {
            println!("All {} checks passed.", self.sections.len());
            return;
        }
        let problems: usize = failed.iter().map(|s| s.problems.len()).sum();
        println!(
            "{problems} problem(s) in {} of {} checks. What to do next:",
            failed.len(),
            self.sections.len()
        );
        for s in failed {
            println!("  - {}: {}", s.name, s.next.unwrap_or_default());
        }
    }
}
