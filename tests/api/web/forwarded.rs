//! `serve --trusted-proxies`: behind a listed proxy each person has their
//! own login rate-limit bucket and audit address (from the one header
//! `--forwarded-header` names: `X-Forwarded-For`, or `Forwarded`); the
//! other header, and both from anywhere else, change nothing.

use reqwest::StatusCode;
use widgetd::forwarded::{ForwardedHeader, IpRange};
use widgetd_domain::auth::Role;

use crate::helpers::{PASSWORD, TestApp, spawn_app, spawn_app_with};

/// Failed logins under made-up names until the address's bucket is empty
/// (20, plus what it regains meanwhile: one per 3 s); returns how many
/// were answered rather than refused.
async fn exhaust(app: &TestApp, forwarded: impl Fn(usize) -> (&'static str, String)) -> usize {
    for n in 0..200 {
        let (header, value) = forwarded(n);
        let name = format!("nobody{n}");
        let status = app
            .post_login(
                &name,
                "wrong password",
                &[("origin", &app.url), (header, &value)],
            )
            .await
            .status();
        if status == StatusCode::TOO_MANY_REQUESTS {
            assert!(
                n >= widgetd_domain::limits::PER_ADDRESS.burst as usize,
                "limited after {n}"
            );
            return n;
        }
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {n}");
    }
    panic!("the address was never rate-limited");
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_person_has_their_own_bucket_and_address() {
    let app = spawn_app_with(|s| {
        s.trusted_proxies = vec![IpRange::parse("127.0.0.0/8").unwrap()];
    })
    .await;
    app.user("bob", Role::Member).await;
    let failed = exhaust(&app, |_| ("x-forwarded-for", "198.51.100.1".to_owned())).await;
    let bob = app
        .post_login(
            "bob",
            PASSWORD,
            &[("origin", &app.url), ("x-forwarded-for", "198.51.100.2")],
        )
        .await
        .status();
    assert_eq!(
        bob,
        StatusCode::SEE_OTHER,
        "bob, from another address, logs in"
    );
    let addresses = app.failed_login_addresses().await;
    assert_eq!(addresses.len(), failed);
    assert!(
        addresses
            .iter()
            .all(|a| a.as_deref() == Some("198.51.100.1")),
        "{addresses:?}"
    );
}

#[tokio::test]
async fn forwarded_headers_from_an_untrusted_peer_are_ignored() {
    let app = spawn_app().await;
    app.user("bob", Role::Member).await;
    // Each attempt claims another address: the daemon trusts no proxy, so
    // all of them count against the one real address.
    exhaust(&app, |n| ("x-forwarded-for", format!("198.51.100.{n}"))).await;
    let bob = app
        .post_login(
            "bob",
            PASSWORD,
            &[("origin", &app.url), ("x-forwarded-for", "192.0.2.77")],
        )
        .await
        .status();
    assert_eq!(bob, StatusCode::TOO_MANY_REQUESTS);
    let addresses = app.failed_login_addresses().await;
    assert!(
        addresses.iter().all(|a| a.as_deref() == Some("127.0.0.1")),
        "{addresses:?}"
    );
}

#[tokio::test]
async fn with_forwarded_read_x_forwarded_for_is_ignored() {
    let app = spawn_app_with(|s| {
        s.trusted_proxies = vec![IpRange::parse("127.0.0.0/8").unwrap()];
        s.forwarded_header = ForwardedHeader::Forwarded;
    })
    .await;
    app.user("bob", Role::Member).await;
    // A new X-Forwarded-For address each time: all of them one bucket, the
    // proxy's (no `Forwarded` was set).
    exhaust(&app, |n| ("x-forwarded-for", format!("198.51.100.{n}"))).await;
    let addresses = app.failed_login_addresses().await;
    assert!(
        addresses.iter().all(|a| a.as_deref() == Some("127.0.0.1")),
        "{addresses:?}"
    );
    // The header it reads names bob's own address: his own bucket.
    let bob = app
        .post_login(
            "bob",
            PASSWORD,
            &[
                ("origin", &app.url),
                ("forwarded", "for=198.51.100.250;proto=https"),
            ],
        )
        .await
        .status();
    assert_eq!(bob, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn with_x_forwarded_for_read_a_forwarded_header_is_ignored() {
    let app = spawn_app_with(|s| {
        s.trusted_proxies = vec![IpRange::parse("127.0.0.0/8").unwrap()];
    })
    .await;
    exhaust(&app, |n| ("forwarded", format!("for=198.51.100.{n}"))).await;
    let addresses = app.failed_login_addresses().await;
    assert!(
        addresses.iter().all(|a| a.as_deref() == Some("127.0.0.1")),
        "{addresses:?}"
    );
}
