//! `docs/operations.md` run as written: its blocks between
//! `<!-- ops-test: NAME -->` and `<!-- /ops-test -->` (the `widgetd()`
//! wrapper, the key file, the unit, backup, restore) go to bash with the
//! real binary, on a scratch root that stands in for `/`: `sudo`,
//! `runuser`, `install -o/-g` and `systemctl` are small stand-ins (no root,
//! no systemd), everything else is what an operator types. Under load, a
//! backup is taken, a value is changed after it, the restore sequence runs,
//! and the restored daemon has the backup's values, not the later change,
//! with the backup's audit head.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{COMMAND_LIMIT, OutputWithin, PASSWORD, canary};

/// The named test blocks of the doc.
fn blocks(doc: &str) -> HashMap<String, String> {
    let mut found = HashMap::new();
    for piece in doc.split("<!-- ops-test: ").skip(1) {
        let (name, rest) = piece.split_once(" -->").unwrap();
        let body = rest.split("<!-- /ops-test -->").next().unwrap();
        let code = body
            .split_once("```sh\n")
            .and_then(|(_, code)| code.split_once("```"))
            .map(|(code, _)| code.to_owned())
            .unwrap_or_else(|| panic!("ops-test {name} has no sh block"));
        found.insert(name.to_owned(), code);
    }
    found
}

/// A scratch root: the doc's absolute paths moved under it, and the
/// stand-ins first on `PATH`.
struct Root {
    dir: tempfile::TempDir,
    binary: String,
}

const SHIMS: [(&str, &str); 4] = [
    ("sudo", "#!/bin/bash\nexec \"$@\"\n"),
    // runuser -u USER -- COMMAND…: the test runs as one user.
    ("runuser", "#!/bin/bash\nshift 3\nexec \"$@\"\n"),
    // install without -o/-g: the test cannot chown.
    (
        "install",
        "#!/bin/bash\nargs=()\nwhile [ $# -gt 0 ]; do case \"$1\" in -o|-g) shift 2;; *) args+=(\"$1\"); shift;; esac; done\nexec /usr/bin/install \"${args[@]}\"\n",
    ),
    // systemctl for the one unit: start runs its ExecStart with its
    // Environment= and EnvironmentFile= as systemd would; stop sends SIGTERM.
    (
        "systemctl",
        r#"#!/bin/bash
set -u
for arg in "$@"; do case "$arg" in
  daemon-reload|enable|widgetd) ;;
  --now|start) action=start ;;
  stop) action=stop ;;
esac; done
case "${action:-none}" in
  start)
    before=$(grep -c 'listening on' "$RUN/widgetd.out" 2>/dev/null || true)
    unit="$ROOT/etc/systemd/system/widgetd.service"
    test -f "$unit" || { echo "no unit installed" >&2; exit 1; }
    (
      for line in $(grep '^Environment=' "$unit" | cut -d= -f2-); do export "$line"; done
      export WIDGETD_DATA_DIR="$ROOT${WIDGETD_DATA_DIR}"
      set -a; . "$ROOT/etc/widgetd/widgetd.env"; set +a
      exec "$BIN" serve >> "$RUN/widgetd.out" 2>> "$RUN/widgetd.err"
    ) &
    echo $! > "$RUN/widgetd.pid"
    for _ in $(seq 300); do
      now=$(grep -c 'listening on' "$RUN/widgetd.out" 2>/dev/null || true)
      [ "${now:-0}" -gt "${before:-0}" ] && exit 0
      kill -0 "$(cat "$RUN/widgetd.pid")" 2>/dev/null || { cat "$RUN/widgetd.err" >&2; exit 1; }
      sleep 0.1
    done
    echo "widgetd did not start" >&2; exit 1 ;;
  stop)
    pid=$(cat "$RUN/widgetd.pid"); kill -TERM "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    rm -f "$RUN/widgetd.pid" ;;
esac
"#,
    ),
];

impl Root {
    fn new() -> Root {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "run", "var/lib", "var/backups", "etc/systemd/system"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        for (name, text) in SHIMS {
            let path = dir.path().join("bin").join(name);
            std::fs::write(&path, text).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Root {
            dir,
            binary: env!("CARGO_BIN_EXE_widgetd").to_owned(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The doc's text with its paths under this root.
    fn localize(&self, code: &str) -> String {
        let root = self.path().display().to_string();
        // Every path under /etc and /var moves: nothing a block does may
        // reach the machine's own.
        code.replace("/usr/local/bin/widgetd", &self.binary)
            .replace("/var/", &format!("{root}/var/"))
            .replace("/etc/", &format!("{root}/etc/"))
    }

    /// Runs `script` after the doc's `widgetd()` wrapper in bash, from the
    /// checkout (for `contrib/`); returns stdout, failing on any error.
    fn run(&self, wrapper: &str, script: &str) -> String {
        let full = format!(
            "set -euo pipefail\n{}\n{}",
            self.localize(wrapper),
            self.localize(script)
        );
        let escapes = |p: &str| full.contains(&format!(" {p}")) || full.contains(&format!("'{p}"));
        assert!(
            !escapes("/etc/") && !escapes("/var/"),
            "a path escapes the scratch root:\n{full}"
        );
        let path = std::env::var("PATH").unwrap_or_default();
        let out = Command::new("bash")
            .arg("-c")
            .arg(&full)
            .env(
                "PATH",
                format!("{}:{path}", self.path().join("bin").display()),
            )
            .env("ROOT", self.path())
            .env("RUN", self.path().join("run"))
            .env("BIN", &self.binary)
            .env_remove("WIDGETD_DATA_DIR")
            .env_remove("WIDGETD_DATABASE_URL")
            .env_remove("WIDGETD_MASTER_KEY")
            .env_remove("RUST_LOG")
            // The documented blocks back up and restore under load.
            .output_within(Duration::from_secs(300));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "the doc's commands failed:\n{full}\n--- stdout\n{stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// The URL of the daemon started last.
    fn url(&self) -> String {
        let out = std::fs::read_to_string(self.path().join("run/widgetd.out")).unwrap();
        let last = out.rsplit("listening on ").next().unwrap();
        last.lines().next().unwrap().trim().to_owned()
    }
}

impl Drop for Root {
    /// A failed test leaves no daemon running.
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.path().join("run/widgetd.pid")) {
            let _ = Command::new("kill").args(["-TERM", pid.trim()]).status();
        }
    }
}

async fn env_of(url: &str, token: &str, session: &str) -> Value {
    let r = reqwest::Client::new()
        .get(format!("{url}/api/v1/sessions/{session}/env"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::OK);
    r.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_backup_and_restore_run_as_written() {
    let doc = std::fs::read_to_string("docs/operations.md").unwrap();
    let blocks = blocks(&doc);
    let root = Root::new();
    let wrapper = &blocks["wrapper"];
    let run = |script: &str| root.run(wrapper, script);

    // Installing: the key file, then what an operator adds by hand, then
    // the unit (which starts the daemon and changes the first password).
    run(&blocks["key"]);
    let env_file = root.path().join("etc/widgetd/widgetd.env");
    let mut env = std::fs::read_to_string(&env_file).unwrap();
    assert!(env.starts_with("WIDGETD_MASTER_KEY="));
    env.push_str(&format!(
        "WIDGETD_BIND=127.0.0.1:0\nWIDGETD_ADMIN_PASSWORD={PASSWORD}\n"
    ));
    std::fs::write(&env_file, env).unwrap();
    let changed = run(&blocks["unit"]);
    assert!(changed.contains("password of admin changed"), "{changed}");

    let value = canary("restored");
    let token = run(&format!(
        "printf '%s\\n' '{PASSWORD}' | widgetd user add alice --password-stdin >/dev/null
         printf '%s' '{value}' | widgetd env set KEPT_KEY --user alice >/dev/null
         widgetd token create --user alice --scope sessions,env:read 2>/dev/null"
    ));
    let token = token.trim().to_owned();
    let url = root.url();
    let client = reqwest::Client::new();
    let session: Value = client
        .post(format!("{url}/api/v1/sessions"))
        .bearer_auth(&token)
        .json(&json!({ "title": "restore" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = session["session_id"].as_str().unwrap().to_owned();

    // The backup, taken while agents write.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let first = std::sync::Arc::new(tokio::sync::Notify::new());
    let load = {
        let (url, token, stop, first) = (url.clone(), token.clone(), stop.clone(), first.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut made = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = client
                    .post(format!("{url}/api/v1/sessions"))
                    .bearer_auth(&token)
                    .json(&json!({ "title": "load" }))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), reqwest::StatusCode::CREATED);
                made += 1;
                if made == 1 {
                    first.notify_one();
                }
            }
            made
        })
    };
    // The backup starts once the load is writing.
    tokio::time::timeout(Duration::from_secs(30), first.notified())
        .await
        .expect("the load made no session in 30 s");
    let backed_up = tokio::task::block_in_place(|| run(&blocks["backup"]));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(load.await.unwrap() > 0, "no load ran during the backup");
    let head = backed_up
        .lines()
        .find_map(|l| l.strip_prefix("audit head of the backup: "))
        .unwrap_or_else(|| panic!("backup prints its audit head: {backed_up}"));
    let head = head.split(" (").next().unwrap().to_owned();
    assert!(
        !backed_up.contains("master.key"),
        "the key is in the environment: {backed_up}"
    );

    // A change after the backup, which the restore takes back.
    run("printf '%s' 'later-value' | widgetd env set LATER_KEY --user alice >/dev/null");

    let started = Instant::now();
    let restored = tokio::task::block_in_place(|| run(&blocks["restore"]));
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(
        restored.contains(&head.replace(" row(s), head ", " row(s), chain intact; head ")),
        "the restored chain ends at the backup's head ({head}):\n{restored}"
    );
    let url = root.url();
    let env = env_of(&url, &token, &session).await;
    assert_eq!(env["env"]["KEPT_KEY"], value, "{env}");
    assert!(env["env"].get("LATER_KEY").is_none(), "{env}");
    assert!(
        root.path()
            .join("var/lib/widgetd.before-restore/widgetd.db")
            .exists(),
        "the replaced data dir is kept"
    );
    run("sudo systemctl stop widgetd");
}

/// Where the restore is aimed matters: not through the environment, never
/// at a data dir a daemon is using.
#[tokio::test]
async fn restore_refuses_an_implicit_or_live_target() {
    // SQLite: `backup` and `restore` are the embedded database's.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let daemon = crate::helpers::Daemon::start(&data, tmp.path(), "live");
    let copy = tmp.path().join("copy.db");
    let out = crate::helpers::widgetd(&data)
        .arg("backup")
        .arg(&copy)
        .output_within(COMMAND_LIMIT);
    assert!(out.status.success(), "{}", crate::helpers::stderr(&out));
    let run = |dir: &Path, explicit: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_widgetd"));
        command
            .env_remove("WIDGETD_MASTER_KEY")
            .env_remove("WIDGETD_DATABASE_URL");
        if explicit {
            command.arg("--data-dir").arg(dir);
        } else {
            command.env("WIDGETD_DATA_DIR", dir);
        }
        command.arg("restore").arg(&copy).arg("--force");
        command.output_within(COMMAND_LIMIT)
    };
    let out = run(&data, false);
    assert!(!out.status.success());
    assert!(
        crate::helpers::stderr(&out).contains("--data-dir DIR"),
        "{}",
        crate::helpers::stderr(&out)
    );
    let out = run(&data, true);
    assert!(!out.status.success());
    assert!(
        crate::helpers::stderr(&out).contains("widgetd is running on"),
        "{}",
        crate::helpers::stderr(&out)
    );
    assert!(
        !std::fs::read_dir(&data).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("before-restore")),
        "nothing was moved aside"
    );
    daemon.stop();
}
