//! The data dir as a whole: `widgetd db copy`, `backup`, `restore`,
//! `check`, and `audit list|verify`.

use std::path::Path;

use anyhow::{Context, bail};

use super::AuditCommand;
use widgetd_domain::clock;
use widgetd_domain::db::{DB_FILE, DatabaseUrl, Db};
use widgetd_domain::startup::DataDir;

pub(super) async fn copy_database(
    from: &DatabaseUrl,
    to: &DatabaseUrl,
    json: bool,
) -> anyhow::Result<()> {
    eprintln!("copying {from} to {to}");
    let copied = widgetd_domain::db::copy::copy(from, to).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&copied)?);
        return Ok(());
    }
    for (table, rows) in &copied.tables {
        println!("  {table:<18} {rows} row(s)");
    }
    println!(
        "copied; row counts match and the audit chain verifies ({} row(s), head {})",
        copied.audit_rows, copied.audit_head
    );
    println!("next: start the daemons with --database-url {to} and the same master key");
    Ok(())
}

pub(super) async fn backup(
    dir: &Path,
    database: Option<&DatabaseUrl>,
    target: &Path,
) -> anyhow::Result<()> {
    let source = match database {
        None => dir.join(DB_FILE),
        Some(DatabaseUrl::Sqlite(path)) => path.clone(),
        Some(DatabaseUrl::Postgres(_)) => bail!(
            "`widgetd backup` copies the embedded SQLite database; back up PostgreSQL with \
             pg_dump (docs/operations.md, \"Several daemons\")"
        ),
    };
    if !source.exists() {
        bail!(
            "there is no database at {}; check --data-dir",
            source.display()
        );
    }
    let db = Db::open(&source).await?;
    db.backup(target).await?;
    db.close().await;
    println!(
        "wrote a consistent copy of {} to {}",
        source.display(),
        target.display()
    );
    crate::restore::print_backup_notes(dir, target).await
}

/// `widgetd restore`: the embedded database only.
pub(super) async fn restore(
    dir: &Path,
    database: Option<&DatabaseUrl>,
    backup: &Path,
    key_file: Option<&Path>,
    force: bool,
) -> anyhow::Result<u8> {
    if let Some(DatabaseUrl::Postgres(_)) = database {
        bail!(
            "`widgetd restore` restores the embedded SQLite database; restore PostgreSQL with pg_restore"
        );
    }
    let report = crate::restore::run(crate::restore::RestoreOptions {
        dir,
        backup,
        key_file,
        force,
    })
    .await?;
    println!("restored {} into {}:", backup.display(), dir.display());
    for section in &report.sections {
        println!("  {:<16} {}", section.name, section.summary);
    }
    println!(
        "Start widgetd with --data-dir {}. Tokens revoked, users disabled and values changed since \
         the backup are as they were then: redo those changes (docs/operations.md).",
        dir.display()
    );
    Ok(0)
}

/// `widgetd check`: the report on stdout (or as JSON), exit 1 on problems.
pub(super) async fn check(
    dir: &Path,
    database: Option<&DatabaseUrl>,
    quick: bool,
    json: bool,
) -> anyhow::Result<u8> {
    let report = crate::check::run(dir, database, quick).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        report.print();
    }
    Ok(if report.ok { 0 } else { 1 })
}

pub(super) async fn audit(data: &DataDir, cmd: AuditCommand) -> anyhow::Result<()> {
    let mut conn = data.db.read.acquire().await?;
    match cmd {
        AuditCommand::List {
            since,
            session,
            json,
        } => {
            let since = since
                .map(|t| {
                    time::OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339)
                        .map(|t| i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(0))
                        .with_context(|| format!("--since takes an RFC 3339 time such as 2026-11-22T00:00:00Z, not `{t}`"))
                })
                .transpose()?;
            let rows = widgetd_domain::audit::list(&mut conn, since, session.as_deref()).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for r in rows {
                    // Escaped: no stored text can start a line of its own
                    // and pass for another row.
                    let field = |v: &Option<String>| {
                        v.as_deref()
                            .map_or("-".into(), |t| t.escape_default().to_string())
                    };
                    println!(
                        "{:>6} {} {:<24} {:<22} session={} widget={} names={} scope={} from={} detail={}",
                        r.id,
                        clock::rfc3339(r.at),
                        r.action.escape_default(),
                        r.actor.escape_default(),
                        field(&r.session_id),
                        field(&r.widget_id),
                        field(&r.names),
                        field(&r.scope),
                        field(&r.client_addr),
                        field(&r.detail)
                    );
                }
            }
        }
        AuditCommand::Verify => match widgetd_domain::audit::verify(&mut conn).await? {
            Ok(v) => println!(
                "the audit log verifies: {} row(s), chain intact; head {}",
                v.rows, v.head
            ),
            Err(broken) => bail!("{broken}"),
        },
    }
    Ok(())
}
