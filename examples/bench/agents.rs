//! What agents see, each figure beside its reference measured in the same
//! run: MCP against REST at the same pacing (200 agents calling about once
//! a second each, open loop) and back to back (200 workers, closed loop),
//! and authenticated reads against `/healthz` (64 workers each). The
//! closed loops also count CPU per call, the daemon's and the bench's own
//! (its clients'), since both share the machine's cores.
//!
//! Every agent alternates the same two calls over both interfaces: create
//! an env_vars widget (`request_env_vars` / `POST …/widgets/env-vars`) and
//! read a widget's state (`get_widget_status` / `GET /api/v1/widgets/{id}`),
//! each in a session of its own with its own agent token; over MCP each
//! agent has its own rmcp Streamable HTTP client, which keeps its
//! connection open between calls as the REST agents' client does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};

use crate::load::{Samples, Scene, Session};
use crate::round;

/// Agents calling at once.
pub const AGENTS: usize = 200;
/// Each agent's pause between two calls in the open loop.
const PACE: Duration = Duration::from_secs(1);
/// Workers of the read phases.
const READERS: usize = 64;
/// Creations a closed-loop worker makes as one agent before it moves on to
/// its next (a new session and token): under the agent's rate limit (a
/// burst of 30, `crates/domain/src/limits.rs`) and the session's pending cap (50), so
/// that the loop measures creations and reads, not refusals.
const CREATIONS_PER_AGENT: u64 = 25;
/// Most calls per second the closed loops make room for (agents made
/// ahead per worker); past that, a worker's last agent is refused.
const CLOSED_MAX_PER_S: f64 = 12_000.0;

type Client = RunningService<RoleClient, ()>;

/// The MCP revision the plain HTTP agents speak (the last with
/// `initialize`, which the agent CLIs send today).
const PLAIN_MCP_VERSION: &str = "2025-11-25";

/// One agent: its session, a widget of it to read, and how it calls.
struct Agent {
    session: Session,
    widget: String,
    via: Via,
    /// Over MCP through rmcp, its client.
    mcp: Option<Client>,
}

/// The interface a phase calls through.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    /// rmcp's Streamable HTTP client.
    Mcp,
    /// The same JSON-RPC requests as plain HTTP POSTs on the REST agents'
    /// client, as a load generator (wrk, say) sends them: what the daemon
    /// spends on MCP, without rmcp's client beside it on the same cores.
    McpPlain,
    Rest,
}

/// Runs every phase and adds its figures to `out`: each as measured, and
/// its ratio to the reference of the same run.
pub async fn run(
    scene: &Scene,
    daemon: u32,
    secs: f64,
    out: &mut Map<String, Value>,
) -> anyhow::Result<()> {
    // The open loop needs more than a few calls per agent for a p99.
    let open_secs = (secs * 3.0).max(6.0);
    let mut figures = Vec::new();
    for via in [Via::Rest, Via::Mcp] {
        let name = name(via);
        eprintln!("bench: {name}, {AGENTS} agents at ~1 call/s each ({open_secs}s)");
        let agents = agents(scene, via, AGENTS).await?;
        let (samples, failed) = open_loop(scene, agents, open_secs).await;
        figures.push((format!("{name}_open_p50_ms"), round(samples.quantile(0.5))));
        figures.push((format!("{name}_open_p99_ms"), round(samples.quantile(0.99))));
        figures.push((format!("{name}_open_calls"), samples.0.len() as f64));
        figures.push((format!("{name}_open_failed"), failed as f64));
    }
    for via in [Via::Rest, Via::Mcp, Via::McpPlain] {
        let name = name(via);
        // Every call of two is a creation.
        let per_worker =
            (CLOSED_MAX_PER_S * secs / AGENTS as f64 / 2.0 / CREATIONS_PER_AGENT as f64)
                .ceil()
                .max(1.0) as usize;
        eprintln!(
            "bench: {name}, {AGENTS} agents back to back ({secs}s; making {} agents, \
             {per_worker} per worker, each used for {CREATIONS_PER_AGENT} creations)",
            AGENTS * per_worker
        );
        let mut made = agents(scene, via, AGENTS * per_worker).await?.into_iter();
        let agents: Vec<Vec<Arc<Agent>>> = (0..AGENTS)
            .map(|_| made.by_ref().take(per_worker).collect())
            .collect();
        let started = Instant::now();
        let cpu = |pid| crate::creation::cpu_secs(pid);
        let (daemon_before, bench_before) = (cpu(daemon), cpu(std::process::id()));
        let reads = || crate::creation::metric(scene, &scene.url, "widgetd_auth_epoch_reads_total");
        let reads_before = reads().await;
        let (samples, failed) = closed_loop(scene, agents, secs).await;
        let calls = samples.0.len().max(1) as f64;
        let per_call = |before, pid| round((cpu(pid) - before) * 1e6 / calls);
        figures.push((
            format!("{name}_closed_epoch_reads_per_call"),
            round((reads().await - reads_before) / calls),
        ));
        figures.push((
            format!("{name}_closed_daemon_cpu_us_per_call"),
            per_call(daemon_before, daemon),
        ));
        figures.push((
            format!("{name}_closed_bench_cpu_us_per_call"),
            per_call(bench_before, std::process::id()),
        ));
        let rate = samples.0.len() as f64 / started.elapsed().as_secs_f64();
        figures.push((format!("{name}_closed_c200_per_s"), round(rate)));
        figures.push((
            format!("{name}_closed_c200_p50_ms"),
            round(samples.quantile(0.5)),
        ));
        figures.push((
            format!("{name}_closed_c200_p99_ms"),
            round(samples.quantile(0.99)),
        ));
        figures.push((format!("{name}_closed_failed"), failed as f64));
    }
    eprintln!("bench: reads and /healthz, {READERS} workers each ({secs}s each)");
    let session = scene.session().await?;
    let widget = scene.create_widget(&session, "BENCH_READ").await?;
    let reads = rate_of(READERS, secs, {
        let url = format!("{}/api/v1/widgets/{widget}", scene.url);
        let (client, token) = (scene.client.clone(), session.agent.clone());
        move || client.get(&url).bearer_auth(&token).send()
    })
    .await;
    let healthz = rate_of(READERS, secs, {
        let url = format!("{}/healthz", scene.url);
        let client = scene.client.clone();
        move || client.get(&url).send()
    })
    .await;
    figures.push(("reads_c64_per_s".into(), round(reads)));
    figures.push(("healthz_c64_per_s".into(), round(healthz)));

    let get = |key: &str| {
        figures
            .iter()
            .find(|(k, _)| k == key)
            .map_or(f64::NAN, |(_, v)| *v)
    };
    let ratios = [
        (
            "mcp_open_p50_vs_rest",
            get("mcp_open_p50_ms") / get("rest_open_p50_ms"),
        ),
        (
            "mcp_open_p99_vs_rest",
            get("mcp_open_p99_ms") / get("rest_open_p99_ms"),
        ),
        (
            "mcp_closed_c200_vs_rest",
            get("mcp_closed_c200_per_s") / get("rest_closed_c200_per_s"),
        ),
        (
            "mcp_plain_closed_c200_vs_rest",
            get("mcp_plain_closed_c200_per_s") / get("rest_closed_c200_per_s"),
        ),
        (
            "mcp_plain_closed_daemon_cpu_vs_rest",
            get("mcp_plain_closed_daemon_cpu_us_per_call")
                / get("rest_closed_daemon_cpu_us_per_call"),
        ),
        (
            "mcp_closed_daemon_cpu_vs_rest",
            get("mcp_closed_daemon_cpu_us_per_call") / get("rest_closed_daemon_cpu_us_per_call"),
        ),
        (
            "mcp_closed_bench_cpu_vs_rest",
            get("mcp_closed_bench_cpu_us_per_call") / get("rest_closed_bench_cpu_us_per_call"),
        ),
        ("reads_vs_healthz", reads / healthz),
    ];
    for (key, value) in figures {
        out.insert(key, value.into());
    }
    for (key, value) in ratios {
        out.insert(key.into(), round(value).into());
    }
    Ok(())
}

fn name(via: Via) -> &'static str {
    match via {
        Via::Mcp => "mcp",
        Via::McpPlain => "mcp_plain",
        Via::Rest => "rest",
    }
}

/// `count` agents, each in a new session with a widget to read; over MCP
/// each with its client connected (`initialize` done).
async fn agents(scene: &Scene, via: Via, count: usize) -> anyhow::Result<Vec<Arc<Agent>>> {
    let mut agents = Vec::with_capacity(count);
    for _ in 0..count {
        let session = scene.session().await?;
        let widget = scene.create_widget(&session, "BENCH_STATUS").await?;
        let mcp = match via {
            Via::Rest => None,
            Via::McpPlain => {
                let init = json!({
                    "protocolVersion": PLAIN_MCP_VERSION,
                    "capabilities": {},
                    "clientInfo": { "name": "widgetd-bench", "version": "0" },
                });
                mcp_post(scene, &session, 0, "initialize", init).await?;
                None
            }
            Via::Mcp => {
                let config =
                    StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", scene.url))
                        .auth_header(session.agent.clone());
                // rmcp's default client opens a connection per request
                // (`pool_max_idle_per_host(0)`); one that keeps them open,
                // as the REST agents' client does, measures MCP rather than
                // TCP set-up.
                let http = rmcp_reqwest::Client::new();
                Some(
                    ().serve(StreamableHttpClientTransport::with_client(http, config))
                        .await?,
                )
            }
        };
        agents.push(Arc::new(Agent {
            session,
            widget,
            via,
            mcp,
        }));
    }
    Ok(agents)
}

/// The agent's `n`th call: even ones create a widget, odd ones read the
/// agent's widget. Whether it succeeded.
async fn call(scene: &Scene, agent: &Agent, n: u64) -> bool {
    let create = n.is_multiple_of(2);
    if agent.via == Via::McpPlain {
        let params = match create {
            true => json!({
                "name": "request_env_vars",
                "arguments": { "names": ["BENCH_KEY"], "reason": "to run the benchmark" },
            }),
            false => json!({
                "name": "get_widget_status",
                "arguments": { "widget_id": agent.widget },
            }),
        };
        let reply = mcp_post(scene, &agent.session, n + 1, "tools/call", params).await;
        return reply.is_ok_and(|r| r["result"]["isError"] != Value::Bool(true));
    }
    match &agent.mcp {
        Some(client) => {
            let params = if create {
                let args = json!({ "names": ["BENCH_KEY"], "reason": "to run the benchmark" });
                CallToolRequestParams::new("request_env_vars").with_arguments(object(args))
            } else {
                let args = json!({ "widget_id": agent.widget });
                CallToolRequestParams::new("get_widget_status").with_arguments(object(args))
            };
            client
                .call_tool(params)
                .await
                .is_ok_and(|r| r.is_error != Some(true))
        }
        None if create => scene
            .create_widget(&agent.session, "BENCH_KEY")
            .await
            .is_ok(),
        None => scene
            .client
            .get(format!("{}/api/v1/widgets/{}", scene.url, agent.widget))
            .bearer_auth(&agent.session.agent)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success()),
    }
}

/// One JSON-RPC request to `/mcp` as a plain HTTP POST: the reply, or
/// an error for a JSON-RPC error or a refused request.
async fn mcp_post(
    scene: &Scene,
    session: &Session,
    id: u64,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let reply: Value = scene
        .client
        .post(format!("{}/mcp", scene.url))
        .bearer_auth(&session.agent)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", PLAIN_MCP_VERSION)
        .json(&body)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    match reply.get("error") {
        Some(error) => anyhow::bail!("{method}: {error}"),
        None => Ok(reply),
    }
}

/// Each agent calls every [`PACE`] (the agents spread evenly over it) for
/// `secs`, whether or not its previous call has come back; a call's latency
/// counts from when it was due, so a late start counts too.
async fn open_loop(scene: &Scene, agents: Vec<Arc<Agent>>, secs: f64) -> (Samples, usize) {
    let start = tokio::time::Instant::now() + Duration::from_millis(100);
    let until = start + Duration::from_secs_f64(secs);
    let spread = PACE / AGENTS as u32;
    let mut calls = Vec::new();
    for (k, agent) in agents.into_iter().enumerate() {
        let scene = scene.clone();
        calls.push(tokio::spawn(async move {
            let mut due = start + spread * k as u32;
            let mut n = 0u64;
            let mut mine = Vec::new();
            while due < until {
                tokio::time::sleep_until(due).await;
                let (scene, agent) = (scene.clone(), agent.clone());
                let at = due.into_std();
                mine.push(tokio::spawn(async move {
                    let ok = call(&scene, &agent, n).await;
                    (ok, at.elapsed().as_secs_f64() * 1000.0)
                }));
                n += 1;
                due += PACE;
            }
            mine
        }));
    }
    let mut samples = Samples::default();
    let mut failed = 0;
    for agent in calls {
        for call in agent.await.unwrap_or_default() {
            match call.await {
                Ok((true, ms)) => samples.0.push(ms),
                _ => failed += 1,
            }
        }
    }
    (samples, failed)
}

/// Every worker calls back to back for `secs`, as each of its agents in
/// turn, [`CREATIONS_PER_AGENT`] creations each.
async fn closed_loop(scene: &Scene, workers: Vec<Vec<Arc<Agent>>>, secs: f64) -> (Samples, usize) {
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let workers = workers.into_iter().map(|agents| {
        let scene = scene.clone();
        tokio::spawn(async move {
            let (mut samples, mut failed, mut n) = (Samples::default(), 0, 0);
            while Instant::now() < until {
                let turn = (n / (2 * CREATIONS_PER_AGENT)) as usize;
                let agent = &agents[turn.min(agents.len() - 1)];
                let t = Instant::now();
                match call(&scene, agent, n).await {
                    true => samples.add(t),
                    false => failed += 1,
                }
                n += 1;
            }
            (samples, failed)
        })
    });
    let mut all = Samples::default();
    let mut failed = 0;
    let finished = futures_util::future::join_all(workers).await;
    for (samples, f) in finished.into_iter().flatten() {
        all.merge(samples);
        failed += f;
    }
    (all, failed)
}

/// Successful requests per second from `workers` workers sending
/// `request()` back to back for `secs`.
async fn rate_of<F, R>(workers: usize, secs: f64, request: F) -> f64
where
    F: Fn() -> R + Clone + Send + 'static,
    R: std::future::Future<Output = reqwest::Result<reqwest::Response>> + Send,
{
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    let tasks = (0..workers).map(|_| {
        let request = request.clone();
        tokio::spawn(async move {
            let mut done = 0usize;
            while Instant::now() < until {
                match request().await {
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
    let done: usize = futures_util::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap_or(0))
        .sum();
    done as f64 / started.elapsed().as_secs_f64()
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
