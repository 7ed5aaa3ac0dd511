//! The workloads: each drives the daemon over HTTP as its users do.

use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

/// Latencies of one kind of request, in milliseconds.
#[derive(Default, Clone)]
pub struct Samples(pub Vec<f64>);

impl Samples {
    pub fn add(&mut self, since: Instant) {
        self.0.push(since.elapsed().as_secs_f64() * 1000.0);
    }

    pub fn merge(&mut self, other: Samples) {
        self.0.extend(other.0);
    }

    /// The `q` quantile (0..=1), or NaN without samples.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        let at = ((sorted.len() - 1) as f64 * q).round() as usize;
        sorted[at]
    }
}

/// What one user of the daemon needs: where it is and who they are.
#[derive(Clone)]
pub struct Scene {
    pub url: String,
    pub client: Client,
    /// The person's host token (sessions, env:read, env:write).
    pub host: String,
    /// The signed-in browser's cookie and form token.
    pub cookie: String,
    pub csrf: String,
}

/// One session of the scene: its id and agent token.
#[derive(Clone)]
pub struct Session {
    pub id: String,
    pub agent: String,
}

impl Scene {
    /// Logs the browser in through the login form.
    pub async fn login(url: &str, host: String, password: &str) -> anyhow::Result<Scene> {
        let client = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(usize::MAX)
            .build()?;
        let response = client
            .post(format!("{url}/login"))
            .form(&[("username", "admin"), ("password", password)])
            .send()
            .await?;
        anyhow::ensure!(response.status() == StatusCode::SEE_OTHER, "login failed");
        let cookie = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("widgetd="))
            .and_then(|v| v.split(';').next())
            .ok_or_else(|| anyhow::anyhow!("no session cookie"))?
            .to_owned();
        let me: Value = client
            .get(format!("{url}/api/v1/me"))
            .header("cookie", &cookie)
            .send()
            .await?
            .json()
            .await?;
        let csrf = me["csrf_token"].as_str().unwrap_or_default().to_owned();
        Ok(Scene {
            url: url.to_owned(),
            client,
            host,
            cookie,
            csrf,
        })
    }

    /// A new session through the API.
    pub async fn session(&self) -> anyhow::Result<Session> {
        let body: Value = self
            .client
            .post(format!("{}/api/v1/sessions", self.url))
            .bearer_auth(&self.host)
            .json(&json!({ "title": "bench" }))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(Session {
            id: body["session_id"].as_str().unwrap_or_default().to_owned(),
            agent: body["agent_token"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// The agent asks for env var `name`; returns the widget id.
    pub async fn create_widget(&self, session: &Session, name: &str) -> anyhow::Result<String> {
        let body: Value = self
            .client
            .post(format!(
                "{}/api/v1/sessions/{}/widgets/env-vars",
                self.url, session.id
            ))
            .bearer_auth(&session.agent)
            .json(&json!({ "names": [name], "reason": "to run the benchmark" }))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(body["widget_id"].as_str().unwrap_or_default().to_owned())
    }

    /// The person submits the widget's form, as the page does.
    pub async fn submit(&self, widget: &str, name: &str) -> anyhow::Result<()> {
        let field = format!("value.{name}");
        let response = self
            .client
            .post(format!("{}/widgets/{widget}/submit", self.url))
            .header("cookie", &self.cookie)
            .header("origin", &self.url)
            .header("sec-fetch-site", "same-origin")
            .form(&[
                ("csrf_token", self.csrf.as_str()),
                (field.as_str(), "bench-value"),
                ("scope", "session"),
            ])
            .send()
            .await?;
        anyhow::ensure!(
            response.status() == StatusCode::SEE_OTHER,
            "submit answered {}",
            response.status()
        );
        Ok(())
    }

    /// The host drains the session's prompts (long-polling) and acks each;
    /// returns how long the drain and the acks took.
    pub async fn drain_and_ack(&self, session: &Session) -> anyhow::Result<(Instant, Samples)> {
        let url = format!(
            "{}/api/v1/sessions/{}/prompts?wait=10",
            self.url, session.id
        );
        let mut busy = 0;
        let response = loop {
            let response = self.client.get(&url).bearer_auth(&self.host).send().await?;
            // One host may hold 64 long-polls at once (`src/stream_limits.rs`);
            // workers sharing one host token beyond that wait for a place,
            // as a host with that many sessions would.
            if response.status() == StatusCode::TOO_MANY_REQUESTS && busy < 1000 {
                busy += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
                continue;
            }
            break response;
        };
        let body: Value = response.error_for_status()?.json().await?;
        let drained = Instant::now();
        let mut acks = Samples::default();
        let prompts = body["prompts"].as_array().cloned().unwrap_or_default();
        anyhow::ensure!(!prompts.is_empty(), "no prompt after the submit");
        for prompt in prompts {
            let started = Instant::now();
            self.client
                .post(format!(
                    "{}/api/v1/sessions/{}/prompts/{}/ack",
                    self.url, session.id, prompt["prompt_id"]
                ))
                .bearer_auth(&self.host)
                .json(&json!({}))
                .send()
                .await?
                .error_for_status()?;
            acks.add(started);
        }
        Ok((drained, acks))
    }
}

/// Numbers the env var names of round trips, unique across phases.
static NEXT_NAME: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Per-step latencies of round trips and how many completed.
#[derive(Default)]
pub struct RoundTrips {
    pub done: usize,
    pub create: Samples,
    pub submit: Samples,
    pub drain: Samples,
    pub ack: Samples,
}

/// An agent may add 30 widgets at once (then one every 2 s, `crates/domain/src/limits.rs`):
/// a worker moves to a new session, as a new conversation would, before that.
const ROUND_TRIPS_PER_SESSION: usize = 25;

/// `concurrency` workers doing full round trips for `secs`, each in
/// sessions of its own.
pub async fn round_trips(scene: &Scene, concurrency: usize, secs: f64) -> RoundTrips {
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let workers = (0..concurrency).map(|_| {
        let scene = scene.clone();
        tokio::spawn(async move {
            let mut out = RoundTrips::default();
            let mut session = None;
            while Instant::now() < until {
                if out.done % ROUND_TRIPS_PER_SESSION == 0 {
                    match scene.session().await {
                        Ok(fresh) => session = Some(fresh),
                        Err(e) => {
                            eprintln!("bench: a session could not be created: {e}");
                            break;
                        }
                    }
                }
                let session = session.as_ref().expect("created above");
                // A fresh name each time: one already set is answered at once.
                let round = NEXT_NAME.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let name = format!("BENCH_KEY_{round}");
                let t = Instant::now();
                let widget = match scene.create_widget(session, &name).await {
                    Ok(widget) => widget,
                    Err(e) => {
                        eprintln!("bench: a create failed: {e}");
                        break;
                    }
                };
                out.create.add(t);
                let t = Instant::now();
                if let Err(e) = scene.submit(&widget, &name).await {
                    eprintln!("bench: {e}");
                    break;
                }
                out.submit.add(t);
                let t = Instant::now();
                match scene.drain_and_ack(session).await {
                    Ok((drained, acks)) => {
                        out.drain.0.push((drained - t).as_secs_f64() * 1000.0);
                        out.ack.merge(acks);
                    }
                    Err(e) => {
                        eprintln!("bench: {e}");
                        break;
                    }
                }
                out.done += 1;
            }
            out
        })
    });
    let mut total = RoundTrips::default();
    for worker in futures_util::future::join_all(workers).await {
        let part = worker.expect("a worker panicked");
        total.done += part.done;
        total.create.merge(part.create);
        total.submit.merge(part.submit);
        total.drain.merge(part.drain);
        total.ack.merge(part.ack);
    }
    total
}
