//! What `GET /metrics` reports from memory (since the start), in the
//! Prometheus text format (exposition format 0.0.4): request latency per
//! route and status class, calls that waited for a person apart from the
//! rest, refusals by code, login failures, the writer's commits, build and
//! process facts. Labels are route templates and stable codes only: never
//! an id, a name or a value.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use widgetd_domain::db::stats::{COMMIT_BUCKETS, WRITES};

/// Upper bounds of the request latency buckets, in seconds.
pub const BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Upper bounds of the wait buckets: a wait lasts up to 300 s.
pub const WAIT_BUCKETS: [f64; 8] = [1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];

#[derive(Clone)]
struct Histogram {
    count: u64,
    sum: f64,
    buckets: Vec<u64>,
}

impl Histogram {
    fn observe(&mut self, bounds: &[f64], seconds: f64) {
        if self.buckets.is_empty() {
            self.buckets = vec![0; bounds.len()];
        }
        self.count += 1;
        self.sum += seconds;
        for (bucket, bound) in self.buckets.iter_mut().zip(bounds) {
            if seconds <= *bound {
                *bucket += 1;
            }
        }
    }

    fn render(&self, out: &mut String, name: &str, labels: &str, bounds: &[f64]) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, n) in bounds.iter().zip(&self.buckets) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braced = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braced} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braced} {}", self.count);
    }
}

/// The counters of one daemon, kept since its start.
pub struct Metrics {
    /// By (route template, status class).
    requests: Mutex<BTreeMap<(String, String), Histogram>>,
    /// Calls that waited for a person or a prompt, by route template.
    waits: Mutex<BTreeMap<String, Histogram>>,
    /// Refused and failed requests by (status, code).
    refusals: Mutex<BTreeMap<(u16, String), u64>>,
    login_failures: AtomicU64,
    started: f64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Mutex::default(),
            waits: Mutex::default(),
            refusals: Mutex::default(),
            login_failures: AtomicU64::new(0),
            started: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Metrics {
    /// A request to `route` answered with `status` after `seconds`;
    /// `waited` when it was held waiting (see `middleware::hold_waits`).
    pub fn observe(&self, route: &str, status: u16, seconds: f64, waited: bool) {
        if waited {
            let mut waits = lock(&self.waits);
            waits
                .entry(route.to_owned())
                .or_insert_with(empty)
                .observe(&WAIT_BUCKETS, seconds);
            return;
        }
        let class = format!("{}xx", (status / 100).clamp(1, 5));
        lock(&self.requests)
            .entry((route.to_owned(), class))
            .or_insert_with(empty)
            .observe(&BUCKETS, seconds);
    }

    /// A request refused (4xx) or failed (5xx) with `code` (`-` if none).
    pub fn refused(&self, status: u16, code: &str) {
        *lock(&self.refusals)
            .entry((status, code.to_owned()))
            .or_default() += 1;
    }

    /// A browser login with a wrong name or password.
    pub fn login_failed(&self) {
        self.login_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Everything kept in memory, as text-format families.
    pub fn render(&self, out: &mut String) {
        family(
            out,
            "widgetd_build_info",
            "gauge",
            "The running version (always 1).",
        );
        let _ = writeln!(
            out,
            "widgetd_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        self.render_process(out);
        family(
            out,
            "widgetd_http_request_duration_seconds",
            "histogram",
            "Time to answer HTTP requests that did not wait, by route and status class (event streams: until the headers).",
        );
        for ((route, class), h) in lock(&self.requests).iter() {
            let labels = format!("route=\"{}\",class=\"{class}\"", label(route));
            h.render(
                out,
                "widgetd_http_request_duration_seconds",
                &labels,
                &BUCKETS,
            );
        }
        family(
            out,
            "widgetd_http_wait_duration_seconds",
            "histogram",
            "Duration of calls that waited for a person or a prompt (wait_seconds, ?wait=), by route.",
        );
        for (route, h) in lock(&self.waits).iter() {
            let labels = format!("route=\"{}\"", label(route));
            h.render(
                out,
                "widgetd_http_wait_duration_seconds",
                &labels,
                &WAIT_BUCKETS,
            );
        }
        family(
            out,
            "widgetd_http_refusals_total",
            "counter",
            "Requests answered 4xx or 5xx, by status and error code.",
        );
        let refusals = lock(&self.refusals).clone();
        for ((status, code), n) in &refusals {
            let _ = writeln!(
                out,
                "widgetd_http_refusals_total{{status=\"{status}\",code=\"{}\"}} {n}",
                label(code)
            );
        }
        let limited: u64 = refusals
            .iter()
            .filter(|((status, _), _)| *status == 429)
            .map(|(_, n)| n)
            .sum();
        counter(
            out,
            "widgetd_rate_limit_refusals_total",
            "Requests refused with 429 (rate limits, stream caps).",
            limited,
        );
        counter(
            out,
            "widgetd_login_failures_total",
            "Browser logins with a wrong name or password.",
            self.login_failures.load(Ordering::Relaxed),
        );
        render_writes(out);
    }

    fn render_process(&self, out: &mut String) {
        if let Some((cpu, rss)) = process_stat() {
            counter(
                out,
                "process_cpu_seconds_total",
                "User and system CPU time spent, in seconds.",
                cpu,
            );
            gauge(
                out,
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                rss,
            );
        }
        if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
            gauge(
                out,
                "process_open_fds",
                "Open file descriptors.",
                fds.count(),
            );
        }
        gauge(
            out,
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch, in seconds.",
            self.started,
        );
    }
}

fn empty() -> Histogram {
    Histogram {
        count: 0,
        sum: 0.0,
        buckets: Vec::new(),
    }
}

fn render_writes(out: &mut String) {
    counter(
        out,
        "widgetd_auth_epoch_reads_total",
        "Reads of the auth epoch (on PostgreSQL with the snapshot stamp), each shared by the requests waiting on it.",
        widgetd_domain::auth::cache::epoch_reads(),
    );
    let (guessed, refused) = widgetd_domain::widgets::engine::store::guess::counts();
    counter(
        out,
        "widgetd_creations_guessed_total",
        "Widget creations written on the common case (session live, room under the cap, nothing stored already), checked by a guard in the same statement.",
        guessed,
    );
    counter(
        out,
        "widgetd_creations_guess_refused_total",
        "Of those, creations whose guard refused the guess, made again with the session read first.",
        refused,
    );
    counter(
        out,
        "widgetd_db_commits_total",
        "Commits to the database (on SQLite, group commits: one fsync each).",
        WRITES.commits.load(Ordering::Relaxed),
    );
    counter(
        out,
        "widgetd_db_committed_transactions_total",
        "Write transactions committed; divided by widgetd_db_commits_total, the mean batch size.",
        WRITES.members.load(Ordering::Relaxed),
    );
    counter(
        out,
        "widgetd_db_write_failures_total",
        "Writes that did not reach the disk: failed commits and requests refused with storage_unavailable (full or read-only disk, I/O errors).",
        WRITES.failures.load(Ordering::Relaxed),
    );
    counter(
        out,
        "widgetd_db_scripts_total",
        "SQLite: write scripts left to the writer's task and run by it (several members' in one hop to the database thread).",
        WRITES.scripts.load(Ordering::Relaxed),
    );
    counter(
        out,
        "widgetd_db_script_hops_total",
        "SQLite: hops to the database thread those scripts took; widgetd_db_scripts_total divided by this, the scripts per hop.",
        WRITES.script_hops.load(Ordering::Relaxed),
    );
    counter(
        out,
        "widgetd_db_scripts_superseded_total",
        "SQLite: scripts not run because one built before them failed; their requests were made again.",
        WRITES.superseded.load(Ordering::Relaxed),
    );
    family(
        out,
        "widgetd_db_commit_duration_seconds",
        "histogram",
        "Time each COMMIT took (at synchronous=FULL, the fsync).",
    );
    let (buckets, sum) = WRITES.durations();
    let h = Histogram {
        count: WRITES.commits.load(Ordering::Relaxed),
        sum,
        buckets: buckets.to_vec(),
    };
    h.render(
        out,
        "widgetd_db_commit_duration_seconds",
        "",
        &COMMIT_BUCKETS,
    );
}

/// CPU seconds and resident bytes from `/proc/self/stat` (Linux).
fn process_stat() -> Option<(f64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses: state first.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let pages: u64 = fields.get(21)?.parse().ok()?;
    // SAFETY: sysconf only reads system configuration values.
    let (per_sec, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let per_sec = if per_sec > 0 { per_sec as f64 } else { 100.0 };
    let page = u64::try_from(page).unwrap_or(4096);
    Some((ticks / per_sec, pages * page))
}

/// `# HELP` and `# TYPE` of a family.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A gauge without labels.
pub fn gauge(out: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    family(out, name, "gauge", help);
    let _ = writeln!(out, "{name} {value}");
}

pub(crate) fn counter(out: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    family(out, name, "counter", help);
    let _ = writeln!(out, "{name} {value}");
}

/// A label value as the text format needs it.
pub fn label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
