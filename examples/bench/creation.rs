//! Widget creation alone (the agent's write), at concurrency 1, 8 and 64:
//! its rate against the same-run commit ceiling, how many write
//! transactions each `COMMIT` (one fsync) carried, and the daemon's CPU per
//! creation against its CPU per `/healthz`, measured in the same run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::load::{Samples, Scene, Session};

/// An agent may add 30 widgets at once (`crates/domain/src/limits.rs`), and a session
/// holds 50 waiting: a worker moves to a fresh session after this many.
const PER_SESSION: usize = 25;

/// CPU time (user + system) of process `pid` so far, in seconds, from
/// `/proc/PID/stat`.
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold
    // spaces): utime and stime are the 12th and 13th of those.
    let after = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / hz,
        _ => f64::NAN,
    }
}

/// The daemon's write counters from `/metrics`: (commits, transactions).
pub async fn commits(scene: &Scene, url: &str) -> (f64, f64) {
    (
        metric(scene, url, "widgetd_db_commits_total").await,
        metric(scene, url, "widgetd_db_committed_transactions_total").await,
    )
}

/// The value of counter `name` in the daemon's `/metrics` (NaN when it
/// cannot be read).
pub async fn metric(scene: &Scene, url: &str, name: &str) -> f64 {
    let text = match scene
        .client
        .get(format!("{url}/metrics"))
        .bearer_auth(&scene.host)
        .send()
        .await
    {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// Sessions made ahead, handed out to workers, so a timed phase spends its
/// writes on creations (more are made on the spot if they run out).
struct Sessions(Mutex<Vec<Session>>);

impl Sessions {
    async fn make(scene: &Scene, n: usize) -> anyhow::Result<Sessions> {
        let mut made = Vec::with_capacity(n);
        for chunk in (0..n).collect::<Vec<_>>().chunks(64) {
            let batch = futures_util::future::join_all(chunk.iter().map(|_| scene.session())).await;
            for session in batch {
                made.push(session?);
            }
        }
        Ok(Sessions(Mutex::new(made)))
    }

    async fn next(&self, scene: &Scene) -> anyhow::Result<Session> {
        let ready = self.0.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match ready {
            Some(session) => Ok(session),
            None => scene.session().await,
        }
    }
}

/// One timed phase: `concurrency` agents creating widgets on the daemons
/// at `urls` (round robin), the daemons' CPU measured over `pids`.
pub async fn phase(
    scene: &Scene,
    urls: &[String],
    pids: &[u32],
    concurrency: usize,
    secs: f64,
    postgres: bool,
) -> anyhow::Result<Value> {
    // Enough sessions for 5,000 creations a second.
    let sessions =
        Sessions::make(scene, (5000.0 * secs) as usize / PER_SESSION + concurrency).await?;
    let sessions = Arc::new(sessions);
    let mut before = Vec::new();
    for url in urls {
        before.push(commits(scene, url).await);
    }
    let cpu_before: f64 = pids.iter().map(|&p| cpu_secs(p)).sum();
    let server = || match postgres {
        true => server_cpu_secs(),
        false => 0.0,
    };
    let (server_before, bench_before) = (server(), cpu_secs(std::process::id()));
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    let workers = (0..concurrency).map(|w| {
        let mut scene = scene.clone();
        scene.url = urls[w % urls.len()].clone();
        let sessions = sessions.clone();
        tokio::spawn(async move {
            let mut samples = Samples::default();
            let mut made = 0usize;
            let mut session = None;
            while Instant::now() < until {
                if made.is_multiple_of(PER_SESSION) {
                    session = Some(sessions.next(&scene).await?);
                }
                let session = session.as_ref().expect("taken above");
                let t = Instant::now();
                scene
                    .create_widget(session, &format!("BENCH_NEW_{made}"))
                    .await?;
                samples.add(t);
                made += 1;
            }
            anyhow::Ok(samples)
        })
    });
    let mut all = Samples::default();
    for worker in futures_util::future::join_all(workers).await {
        all.merge(worker??);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = pids.iter().map(|&p| cpu_secs(p)).sum::<f64>() - cpu_before;
    let server = server() - server_before;
    let bench = cpu_secs(std::process::id()) - bench_before;
    let (mut commits_made, mut transactions) = (0.0, 0.0);
    for (url, (c0, t0)) in urls.iter().zip(before) {
        let (c1, t1) = commits(scene, url).await;
        commits_made += c1 - c0;
        transactions += t1 - t0;
    }
    let n = all.0.len() as f64;
    Ok(json!({
        "per_s": round(n / elapsed),
        "p50_ms": round(all.quantile(0.5)),
        "p99_ms": round(all.quantile(0.99)),
        // Sessions made on the spot are write transactions too.
        "transactions_per_commit": round(transactions / commits_made),
        "cpu_ms_per_creation": round(cpu * 1000.0 / n),
        "bench_cpu_ms_per_creation": round(bench * 1000.0 / n),
        "server_cpu_ms_per_creation": round(server * 1000.0 / n),
    }))
}

/// CPU time (user + system) of every PostgreSQL server process on the
/// machine so far (the postmaster, its backends and helpers), in seconds:
/// what the database costs beside the daemon on the same cores.
fn server_cpu_secs() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return f64::NAN;
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim() == "postgres")
        })
        .map(cpu_secs)
        .filter(|secs| secs.is_finite())
        .sum()
}

/// Daemon CPU per `GET /healthz` at concurrency 64: the same-run reference
/// for CPU per creation.
pub async fn healthz_cpu_ms(scene: &Scene, pid: u32, secs: f64) -> f64 {
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let cpu_before = cpu_secs(pid);
    let workers = (0..64).map(|_| {
        let (client, url) = (scene.client.clone(), format!("{}/healthz", scene.url));
        tokio::spawn(async move {
            let mut done = 0usize;
            while Instant::now() < until {
                match client.get(&url).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        done += 1;
                    }
                    _ => break,
                }
            }
            done
        })
    });
    let done: usize = futures_util::future::join_all(workers)
        .await
        .into_iter()
        .map(|r| r.unwrap_or(0))
        .sum();
    round((cpu_secs(pid) - cpu_before) * 1000.0 / done.max(1) as f64)
}

/// Creation at concurrency 1, 8 and 64 on one daemon.
pub async fn run(scene: &Scene, pid: u32, secs: f64, postgres: bool) -> anyhow::Result<Value> {
    let mut out = Map::new();
    for c in [1, 8, 64] {
        eprintln!("bench: creation alone at concurrency {c} ({secs}s)");
        let urls = [scene.url.clone()];
        out.insert(
            format!("c{c:02}"),
            phase(scene, &urls, &[pid], c, secs, postgres).await?,
        );
    }
    eprintln!("bench: /healthz CPU (1s)");
    out.insert(
        "healthz_cpu_ms".into(),
        healthz_cpu_ms(scene, pid, 1.0).await.into(),
    );
    Ok(out.into())
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Prints a creation block: each figure with its same-run reference
/// (`reference` is the commit ceiling: SQLite's fsync-FULL rate, or
/// PostgreSQL's single-client one-row commits).
pub fn print(key: &str, value: &Value, reference: f64, reference_name: &str) {
    let healthz = value["healthz_cpu_ms"].as_f64();
    for (c, r) in value.as_object().into_iter().flatten() {
        if !r.is_object() {
            continue;
        }
        let rate = r["per_s"].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<34} {:>12} ({:.2}x {reference_name})",
            format!("{key} {c} per_s"),
            rate,
            rate / reference
        );
        println!(
            "{:<34} {:>12}",
            "  p50/p99 ms",
            format!("{}/{}", r["p50_ms"], r["p99_ms"])
        );
        let per_commit = r["transactions_per_commit"].as_f64().unwrap_or(f64::NAN);
        let clients: f64 = c.trim_start_matches('c').parse().unwrap_or(f64::NAN);
        println!(
            "{:<34} {:>12} ({:.2}x the clients in flight)",
            "  transactions per commit (fsync)",
            per_commit,
            per_commit / clients
        );
        let cpu = r["cpu_ms_per_creation"].as_f64().unwrap_or(f64::NAN);
        let against = healthz
            .map(|h| format!(" ({:.1}x a /healthz)", cpu / h))
            .unwrap_or_default();
        println!(
            "{:<34} {:>12}{against}",
            "  daemon CPU ms per creation", cpu
        );
        let server = r["server_cpu_ms_per_creation"].as_f64().unwrap_or(f64::NAN);
        let bench = r["bench_cpu_ms_per_creation"].as_f64().unwrap_or(f64::NAN);
        let sum = cpu + server + bench;
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        let parts = match server > 0.0 {
            true => format!("daemon + PostgreSQL {server} + bench {bench}"),
            false => format!("daemon + bench {bench}"),
        };
        println!(
            "{:<34} {:>12} ({parts}; {cores} cores allow {:.0}/s)",
            "  CPU ms per creation, in all",
            round(sum),
            cores * 1000.0 / sum
        );
    }
    if let Some(h) = healthz {
        println!("{:<34} {:>12}", format!("{key} healthz_cpu_ms"), h);
    }
}
