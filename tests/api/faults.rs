//! The real binary on a data dir that fills up: writes fail with
//! `503 storage_unavailable` and change nothing, reads keep working, and the
//! daemon recovers by itself once there is room again.
//!
//! The data dir lives on a tmpfs of its own, mounted by the test (CI runs
//! as root; elsewhere the test says what it needs). A disk turned read-only
//! under the running daemon is not tested: Linux refuses to remount a file
//! system read-only while the daemon holds its files open for writing, and
//! SQLite reports EROFS the same way as a full disk (SQLITE_IOERR /
//! SQLITE_READONLY map to the same 503).

use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Daemon, client, stdout, widgetd};

/// A small tmpfs, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("the `mount` command runs");
        assert!(
            status.success(),
            "this test mounts a small tmpfs for its data dir and needs root (CI runs as root)"
        );
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills what is left with a file; returns its path.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while file.write_all(&chunk).is_ok() {}
        let _ = file.sync_all();
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

struct Api {
    url: String,
    token: String,
    http: reqwest::Client,
}

impl Api {
    async fn put_value(&self, name: &str, value: &str) -> (StatusCode, Value) {
        let r = self
            .http
            .put(format!("{}/api/v1/env/{name}", self.url))
            .bearer_auth(&self.token)
            .json(&json!({ "value": value, "scope": "global" }))
            .send()
            .await
            .unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn names(&self) -> Vec<String> {
        let r = self
            .http
            .get(format!("{}/api/v1/env", self.url))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "reads keep working");
        let body: Value = r.json().await.unwrap();
        body["env_vars"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Writes 60 KiB values until one is refused; returns how many were
    /// stored and the refusal.
    async fn write_until_refused(&self, prefix: &str) -> (usize, StatusCode, Value) {
        let value = "v".repeat(60 * 1024);
        for n in 0..400 {
            let (status, body) = self.put_value(&format!("{prefix}_{n}"), &value).await;
            if status != StatusCode::NO_CONTENT {
                return (n, status, body);
            }
        }
        panic!("400 writes of 60 KiB all fit on a disk of a few MiB");
    }
}

#[tokio::test]
async fn a_full_disk_refuses_writes_cleanly_and_recovers() {
    let disk = SmallDisk::mount("6m");
    let logs = tempfile::tempdir().unwrap();
    let data = disk.path().join("data");
    let daemon = Daemon::start(&data, logs.path(), "faults");
    let log = || std::fs::read_to_string(&daemon.err_log).unwrap_or_default();
    let token = stdout(
        &widgetd(&data)
            .args([
                "token",
                "create",
                "--user",
                "admin",
                "--scope",
                "env:read,env:write",
            ])
            .output()
            .unwrap(),
    )
    .trim()
    .to_owned();
    let api = Api {
        url: daemon.url.clone(),
        token,
        http: client(),
    };
    let (status, _) = api
        .put_value("BEFORE", "stored before the disk filled")
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    // The disk fills up: writes are refused with a stable code and a
    // message that says what to do, nothing is half-written, reads work.
    let filler = disk.fill();
    let (stored, status, body) = api.write_until_refused("FULL").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "storage_unavailable", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disk is full"),
        "{body}"
    );
    let names = api.names().await;
    assert!(names.contains(&"BEFORE".to_owned()));
    assert!(
        !names.contains(&format!("FULL_{stored}")),
        "the refused write left a row"
    );

    // Space returns: the daemon writes again without a restart.
    std::fs::remove_file(filler).unwrap();
    let (status, body) = api
        .put_value("AFTER_FULL", "written once space returned")
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body} {}", log());

    daemon.stop();

    // Nothing acknowledged was lost and the audit chain holds.
    let out = widgetd(&data).args(["audit", "verify"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = widgetd(&data)
        .args(["env", "list", "--user", "admin", "--json"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    let acknowledged = (0..stored).map(|n| format!("FULL_{n}"));
    for name in ["BEFORE".to_owned(), "AFTER_FULL".to_owned()]
        .into_iter()
        .chain(acknowledged)
    {
        assert!(
            listed.contains(&name),
            "{name} missing after restart: {listed}"
        );
    }
}
