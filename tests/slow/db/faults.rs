//! The real binary on a data dir that fills up or turns read-only: writes
//! fail with `503 storage_unavailable` and change nothing, reads keep
//! working, and the daemon recovers by itself once it can write again.
//!
//! The full disk is a tmpfs of its own, mounted by the test (CI runs as
//! root; elsewhere the test says what it needs). Linux refuses to remount a
//! file system read-only while the daemon holds files on it open for
//! writing, so the read-only disk is the database, its log and the dir made
//! immutable (`chattr +i`) under the running daemon: every write through its
//! open descriptors then fails with `EPERM`, as on a disk gone read-only.

use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{COMMAND_LIMIT, Daemon, OutputWithin, client, stdout, widgetd};

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
            .output_within(COMMAND_LIMIT),
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
    // Readiness shows it, and stays not ready while the disk is full.
    let ready = || async {
        let r = api
            .http
            .get(format!("{}/readyz", api.url))
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    };
    let (status, body) = ready().await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body.contains("the last write did not reach the disk"),
        "{body}"
    );

    // Space returns: ready again, and the daemon writes without a restart.
    std::fs::remove_file(filler).unwrap();
    let (status, body) = ready().await;
    assert_eq!(status, StatusCode::OK, "{body} {}", log());
    let (status, body) = api
        .put_value("AFTER_FULL", "written once space returned")
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body} {}", log());

    daemon.stop();

    // Nothing acknowledged was lost and the audit chain holds.
    let out = widgetd(&data)
        .args(["audit", "verify"])
        .output_within(COMMAND_LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = widgetd(&data)
        .args(["env", "list", "--user", "admin", "--json"])
        .output_within(COMMAND_LIMIT);
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

/// Files made immutable (`chattr +i`) under the running daemon, as a disk
/// turned read-only looks to it: every write through its open descriptors
/// fails with `EPERM`. Undone when dropped, so a failed test leaves
/// nothing undeletable behind.
struct Frozen {
    paths: Vec<PathBuf>,
}

impl Frozen {
    /// Checks that this machine can make `dir`'s files immutable: root and
    /// a file system with the attribute (ext4, xfs, btrfs; not tmpfs).
    fn probe(dir: &Path) {
        let probe = dir.join("probe");
        std::fs::write(&probe, b"x").unwrap();
        let frozen = Frozen::freeze(std::slice::from_ref(&probe));
        drop(frozen);
        std::fs::remove_file(probe).unwrap();
    }

    fn freeze(paths: &[PathBuf]) -> Frozen {
        let status = Command::new("chattr")
            .arg("+i")
            .args(paths)
            .status()
            .expect("the `chattr` command runs (e2fsprogs)");
        assert!(
            status.success(),
            "this test makes files immutable with `chattr +i` and needs root and a file system \
             with that attribute for the temporary dir (ext4 or xfs; CI runs as root on ext4)"
        );
        Frozen {
            paths: paths.to_vec(),
        }
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").args(&self.paths).status();
    }
}

#[tokio::test]
async fn a_data_dir_turned_read_only_refuses_writes_cleanly_and_recovers() {
    let root = tempfile::tempdir().unwrap();
    Frozen::probe(root.path());
    let data = root.path().join("data");
    let daemon = Daemon::start(&data, root.path(), "read-only");
    let log = || std::fs::read_to_string(&daemon.err_log).unwrap_or_default();
    let token = stdout(
        &widgetd(&data)
            .args(["token", "create", "--user", "admin"])
            .args(["--scope", "env:read,env:write"])
            .output_within(COMMAND_LIMIT),
    )
    .trim()
    .to_owned();
    let api = Api {
        url: daemon.url.clone(),
        token,
        http: client(),
    };
    let (status, _) = api.put_value("BEFORE", "stored while writable").await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    // The database, its log and the dir turn read-only under the daemon:
    // writes are refused with the stable code, nothing is half-written,
    // reads keep working.
    let db = data.join(widgetd_domain::db::DB_FILE);
    let wal = data.join(format!("{}-wal", widgetd_domain::db::DB_FILE));
    let frozen = Frozen::freeze(&[db, wal, data.clone()]);
    for n in 0..3 {
        let (status, body) = api.put_value(&format!("READ_ONLY_{n}"), "refused").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(body["error"]["code"], "storage_unavailable", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("read-only"),
            "{body}"
        );
    }
    let names = api.names().await;
    assert!(names.contains(&"BEFORE".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("READ_ONLY")),
        "a refused write left a row: {names:?}"
    );

    // Writable again: the daemon writes without a restart.
    drop(frozen);
    let (status, body) = api.put_value("AFTER", "written once writable").await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body} {}", log());
    daemon.stop();

    let out = widgetd(&data)
        .args(["audit", "verify"])
        .output_within(COMMAND_LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = widgetd(&data)
        .args(["env", "list", "--user", "admin", "--json"])
        .output_within(COMMAND_LIMIT);
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        listed.contains("BEFORE") && listed.contains("AFTER"),
        "{listed}"
    );
    assert!(!listed.contains("READ_ONLY"), "{listed}");
}
