//! The deployment files in `contrib/`: `widgetd.service`, the one unit
//! file the docs point to, passes `systemd-analyze verify` without a
//! warning and keeps its hardening (without systemd on the machine the test
//! says so and passes, except under `CI`, where it must run); the
//! Containerfile's health check asks `/readyz`.

use std::process::Command;

use crate::helpers::{COMMAND_LIMIT, OutputWithin};

fn systemd_analyze() -> Option<&'static str> {
    let found = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "systemd-analyze is not installed, and under CI the unit file must be checked (apt-get install systemd)"
        );
        eprintln!("SKIPPED: systemd-analyze is not installed (apt-get install systemd)");
    }
    found
}

#[test]
fn the_unit_file_verifies_and_is_hardened() {
    let unit = std::fs::read_to_string("contrib/widgetd.service").unwrap();
    for key in [
        "User=widgetd",
        "StateDirectory=widgetd",
        "EnvironmentFile=-/etc/widgetd/widgetd.env",
        "Environment=WIDGETD_DATA_DIR=/var/lib/widgetd",
        "ReadWritePaths=/var/lib/widgetd",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "SystemCallFilter=@system-service",
        "RestrictSUIDSGID=yes",
        "ProtectClock=yes",
        "ProtectKernelLogs=yes",
        "ProtectHostname=yes",
        "RestrictRealtime=yes",
        "ProtectProc=invisible",
        "CapabilityBoundingSet=",
    ] {
        assert!(
            unit.lines().any(|l| l == key),
            "contrib/widgetd.service lacks {key}"
        );
    }
    // The docs point to this file instead of printing another one.
    let docs = std::fs::read_to_string("docs/operations.md").unwrap();
    assert!(docs.contains("contrib/widgetd.service"));
    assert!(
        !docs.contains("[Service]"),
        "docs/operations.md prints its own unit"
    );

    let Some(analyze) = systemd_analyze() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("widgetd.service");
    let exec = "ExecStart=/usr/local/bin/widgetd serve";
    assert!(unit.contains(exec));
    let binary = env!("CARGO_BIN_EXE_widgetd");
    std::fs::write(
        &path,
        unit.replace(exec, &format!("ExecStart={binary} serve")),
    )
    .unwrap();
    let out = Command::new(analyze)
        .args(["verify", "--man=no"])
        .arg(&path)
        .output_within(COMMAND_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("widgetd.service"))
        .collect();
    assert!(
        out.status.success(),
        "systemd-analyze verify failed: {stderr}"
    );
    assert!(ours.is_empty(), "systemd-analyze verify warns: {ours:?}");
}

/// The Containerfile's `HEALTHCHECK` command, run as the container would
/// (with the daemon's port for 7700): passes against a ready daemon, fails
/// where nothing answers.
#[tokio::test]
async fn the_container_health_check_asks_readyz() {
    let file = std::fs::read_to_string("contrib/Containerfile").unwrap();
    let line = file
        .lines()
        .find_map(|l| l.strip_prefix("HEALTHCHECK "))
        .expect("a HEALTHCHECK");
    let command: Vec<String> =
        serde_json::from_str(line.split_once("CMD ").unwrap().1).expect("CMD in exec form");
    assert!(command.join(" ").contains("/readyz"), "{command:?}");
    assert!(std::path::Path::new(".dockerignore").exists());
    let app = crate::helpers::spawn_app().await;
    let port = app.url.rsplit(':').next().unwrap().to_owned();
    let run = |port: String| {
        let command: Vec<String> = command.iter().map(|a| a.replace("7700", &port)).collect();
        tokio::task::spawn_blocking(move || {
            Command::new(&command[0])
                .args(&command[1..])
                .status()
                .unwrap()
                .success()
        })
    };
    assert!(
        run(port).await.unwrap(),
        "the health check fails on a ready daemon"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port().to_string();
    drop(closed);
    assert!(
        !run(closed_port).await.unwrap(),
        "the health check passes with no daemon"
    );
}
