//! Throughput of the real daemon, as its users drive it.
//!
//! `cargo run --release --example bench -- [--secs N] [--json]
//! [--database-url postgres://…]` builds and starts the release `widgetd`
//! on a temporary data dir on loopback (with `--database-url`, on a new
//! PostgreSQL database it creates on that server and drops at the end), then
//! measures (each phase runs N seconds, default 3; progress on stderr):
//! the one-fsync-per-commit ceiling of SQLite on the same disk, full round
//! trips (agent creates an env_vars widget, the person submits the form, the
//! host drains and acks) at concurrency 1, 8 and 64, creation alone at 1, 8
//! and 64 with transactions per commit and daemon CPU per creation
//! (`creation.rs`; on PostgreSQL also on two daemons), MCP beside REST and
//! authenticated reads beside `/healthz` (`agents.rs`), the memory of
//! 10,000 idle event streams, and the daemon's idle memory and start time;
//! on PostgreSQL also the server's own single-row commit rate. See
//! docs/performance.md. `--daemon PATH` benches that binary (an earlier
//! commit's, say) instead of building this tree's, so two builds can be
//! compared one after the other on the same machine; `--only creation`
//! runs the creation phases alone, `--only round-trips` the round trips
//! alone, `--only agents` MCP beside REST and the reads alone (each with
//! the ceilings they are set against).

mod agents;
mod creation;
mod daemon;
mod load;
mod postgres;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use daemon::Daemon;
use load::{Scene, Session};

const STREAMS: usize = 10_000;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json_out = args.iter().any(|a| a == "--json");
    let secs: f64 = args
        .iter()
        .position(|a| a == "--secs")
        .and_then(|i| args.get(i + 1))
        .map_or(Ok(3.0), |s| s.parse())?;
    let server = args
        .iter()
        .position(|a| a == "--database-url")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let streams = raise_fd_limit(STREAMS);
    // `--only creation`, `--only round-trips` or `--only agents`: one kind
    // of phase alone, for comparing builds.
    let only = match args.iter().position(|a| a == "--only") {
        None => Only::All,
        Some(i) => match args.get(i + 1).map(String::as_str) {
            Some("creation") => Only::Creation,
            Some("round-trips") => Only::RoundTrips,
            Some("agents") => Only::Agents,
            other => anyhow::bail!(
                "--only takes `creation`, `round-trips` or `agents`, not {}",
                other.map_or("nothing".to_owned(), |o| format!("`{o}`"))
            ),
        },
    };

    let bin = match args.iter().position(|a| a == "--daemon") {
        Some(i) => args
            .get(i + 1)
            .map(std::path::PathBuf::from)
            .ok_or_else(|| anyhow::anyhow!("--daemon needs the path of a widgetd binary"))?,
        None => {
            eprintln!("bench: building the release daemon");
            daemon::build()?
        }
    };
    let database = match &server {
        Some(server) => Some(postgres::Scratch::create(server).await?),
        None => None,
    };
    let run = bench(&bin, database.as_ref(), secs, streams, only).await;
    if let Some(database) = database {
        database.drop_it().await?;
    }
    report(&Value::Object(run?), json_out);
    Ok(())
}

/// Which phases run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Only {
    All,
    Creation,
    RoundTrips,
    /// MCP beside REST (`agents.rs`).
    Agents,
}

/// Every phase (or those `only` names), on the data dir's SQLite file or on
/// `database`.
async fn bench(
    bin: &Path,
    database: Option<&postgres::Scratch>,
    secs: f64,
    streams: usize,
    only: Only,
) -> anyhow::Result<Map<String, Value>> {
    let url = database.map(|d| d.url.as_str());
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let mut out = Map::new();
    out.insert(
        "backend".into(),
        if url.is_some() { "postgres" } else { "sqlite" }.into(),
    );

    eprintln!("bench: fsync ceiling ({secs}s)");
    std::fs::create_dir_all(&data)?;
    out.insert(
        "fsync_full_commits_per_s".into(),
        round(fsync_ceiling(&data, secs).await?).into(),
    );
    if let Some(database) = database {
        eprintln!("bench: PostgreSQL commit ceiling ({secs}s)");
        out.insert(
            "postgres_commits_per_s".into(),
            round(database.commit_ceiling(secs).await?).into(),
        );
    }

    let first = Daemon::start(bin, &data, url).await?;
    first.stop()?;
    let daemon = Daemon::start(bin, &data, url).await?;
    out.insert("start_ms".into(), round(daemon.start_ms).into());
    out.insert("idle_rss_mib".into(), round(daemon.rss_mib()).into());

    let host = token(bin, &data, url)?;
    let scene = Scene::login(&daemon.url, host, daemon::PASSWORD).await?;
    let mut trips = Map::new();
    let phase = |kind: Only| only == Only::All || only == kind;
    for c in [1, 8, 64].into_iter().filter(|_| phase(Only::RoundTrips)) {
        eprintln!("bench: round trips at concurrency {c} ({secs}s)");
        let started = Instant::now();
        let r = load::round_trips(&scene, c, secs).await;
        let rate = r.done as f64 / started.elapsed().as_secs_f64();
        let mut steps = Map::new();
        for (name, s) in [
            ("create", &r.create),
            ("submit", &r.submit),
            ("drain", &r.drain),
            ("ack", &r.ack),
        ] {
            steps.insert(
                name.into(),
                json!({ "p50_ms": round(s.quantile(0.5)), "p99_ms": round(s.quantile(0.99)) }),
            );
        }
        trips.insert(
            format!("c{c:02}"),
            json!({ "per_s": round(rate), "steps": steps }),
        );
    }
    out.insert("round_trips".into(), trips.into());
    let pid = daemon.child.id();
    if phase(Only::Creation) {
        out.insert(
            "creation".into(),
            creation::run(&scene, pid, secs, url.is_some()).await?,
        );
    }
    if url.is_some() && phase(Only::Creation) {
        eprintln!("bench: creation on two daemons at concurrency 64 ({secs}s)");
        let second = Daemon::start(bin, &data, url).await?;
        let (urls, pids) = (
            [daemon.url.clone(), second.url.clone()],
            [pid, second.child.id()],
        );
        let both = creation::phase(&scene, &urls, &pids, 64, secs, true).await?;
        second.stop()?;
        out.insert("creation_two_daemons".into(), json!({ "c64": both }));
    }

    if phase(Only::Agents) {
        agents::run(&scene, pid, secs, &mut out).await?;
    }
    if only == Only::All {
        eprintln!("bench: holding {streams} event streams");
        let (per_1k, reached) = hold_streams(&scene, &daemon, streams).await?;
        out.insert("sse_streams".into(), streams.into());
        out.insert("sse_mib_per_1k".into(), round(per_1k).into());
        out.insert("sse_widget_reached_streams".into(), reached.into());
    }

    let verify = daemon::cli(bin, &data, url, &["audit", "verify"]);
    out.insert("audit_chain_verifies".into(), verify.is_ok().into());
    daemon.stop()?;
    Ok(out)
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A host token for `admin`, minted with the CLI beside the running daemon.
fn token(bin: &Path, data: &Path, database: Option<&str>) -> anyhow::Result<String> {
    let text = daemon::cli(
        bin,
        data,
        database,
        &[
            "token",
            "create",
            "--user",
            "admin",
            "--scope",
            "sessions,env:read,env:write",
            "--json",
        ],
    )?;
    let body: Value = serde_json::from_str(&text)?;
    Ok(body["token"].as_str().unwrap_or_default().to_owned())
}

/// Single-row commits per second to a WAL file at `synchronous=FULL` in the
/// data dir: one fsync per commit, the ceiling without group commit.
async fn fsync_ceiling(dir: &Path, secs: f64) -> anyhow::Result<f64> {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
    use sqlx::{ConnectOptions, Connection};
    let path = dir.join("fsync-probe.db");
    let mut conn = SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .connect()
        .await?;
    sqlx::query("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        .execute(&mut conn)
        .await?;
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    let mut n = 0u64;
    while Instant::now() < until {
        sqlx::query("INSERT INTO t (v) VALUES ('x')")
            .execute(&mut conn)
            .await?;
        n += 1;
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    conn.close().await?;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(rate)
}

/// Opens `n` event streams, 16 per session (an agent's cap, like a
/// person's) and 64 per client address (bound to 127.0.0.2, 127.0.0.3, …:
/// the cap per address), measures the daemon's memory growth per 1,000
/// streams, then creates a widget in the first session and counts how many
/// of that session's streams see it.
async fn hold_streams(scene: &Scene, daemon: &Daemon, n: usize) -> anyhow::Result<(f64, usize)> {
    const PER_SESSION: usize = 16;
    const PER_ADDRESS: usize = 64;
    let mut sessions = Vec::new();
    for _ in 0..n.div_ceil(PER_SESSION) {
        sessions.push(scene.session().await?);
    }
    let clients = (0..n.div_ceil(PER_ADDRESS))
        .map(|k| {
            let address = std::net::Ipv4Addr::new(127, 0, 1 + (k / 250) as u8, 2 + (k % 250) as u8);
            reqwest::Client::builder()
                .local_address(std::net::IpAddr::V4(address))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let before = daemon.rss_mib();
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut streams = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(250) {
        let opening = chunk.iter().map(|&i| {
            let session: &Session = &sessions[i / PER_SESSION];
            clients[i / PER_ADDRESS]
                .get(format!(
                    "{}/api/v1/sessions/{}/events",
                    scene.url, session.id
                ))
                .bearer_auth(&session.agent)
                .send()
        });
        for response in futures_util::future::join_all(opening).await {
            streams.push(response?.error_for_status()?);
        }
        // One line updated in place on a terminal; a line per 2,500 in a log.
        if terminal {
            eprint!("\rbench: {} streams open", streams.len());
        } else if streams.len() % 2500 == 0 || streams.len() == n {
            eprintln!("bench: {} streams open", streams.len());
        }
    }
    if terminal {
        eprintln!();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_1k = (daemon.rss_mib() - before) / (n as f64 / 1000.0);

    scene.create_widget(&sessions[0], "BENCH_STREAM").await?;
    let watched: Vec<_> = streams.into_iter().take(PER_SESSION).collect();
    let reads = watched.into_iter().map(|mut stream| async move {
        let mut seen = String::new();
        let deadline = tokio::time::sleep(Duration::from_secs(10));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                chunk = stream.chunk() => match chunk {
                    Ok(Some(bytes)) => {
                        seen.push_str(&String::from_utf8_lossy(&bytes));
                        if seen.contains("widget:created") { return true; }
                    }
                    _ => return false,
                },
                _ = &mut deadline => return false,
            }
        }
    });
    let reached = futures_util::future::join_all(reads)
        .await
        .into_iter()
        .filter(|r| *r)
        .count();
    Ok((per_1k, reached))
}

/// Raises this process's open-file limit (inherited by the daemon) so that
/// `wanted` streams fit; returns how many do.
fn raise_fd_limit(wanted: usize) -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max.min(1 << 20);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        }
    }
    let room = (limit.rlim_cur as usize).saturating_sub(1000);
    if room < wanted {
        eprintln!("bench: the open-file limit allows {room} streams, not {wanted}");
    }
    wanted.min(room)
}

fn report(out: &Value, json_out: bool) {
    if json_out {
        println!("{out}");
        return;
    }
    let ceiling = out["fsync_full_commits_per_s"].as_f64().unwrap_or(f64::NAN);
    let postgres = out["postgres_commits_per_s"].as_f64();
    println!("{:<34} {:>12}", "metric", "value");
    for (key, value) in out.as_object().into_iter().flatten() {
        if key == "round_trips" {
            for (c, r) in value.as_object().into_iter().flatten() {
                let rate = r["per_s"].as_f64().unwrap_or(f64::NAN);
                let against_postgres = postgres
                    .map(|p| format!(", {:.2}x PostgreSQL commits", rate / p))
                    .unwrap_or_default();
                println!(
                    "{:<34} {:>12} ({:.2}x fsync ceiling{against_postgres})",
                    format!("round_trips_per_s {c}"),
                    rate,
                    rate / ceiling
                );
                for (step, s) in r["steps"].as_object().into_iter().flatten() {
                    println!(
                        "{:<34} {:>12}",
                        format!("  {step} p50/p99 ms"),
                        format!("{}/{}", s["p50_ms"], s["p99_ms"])
                    );
                }
            }
        } else if key.starts_with("creation") {
            let (reference, name) = postgres.map_or((ceiling, "fsync ceiling"), |p| {
                (p, "PostgreSQL single-client commits")
            });
            creation::print(key, value, reference, name);
        } else {
            println!("{key:<34} {value:>12}");
        }
    }
}
