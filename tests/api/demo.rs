//! `serve --demo` on the real binary: the built-in demo agent asks for an
//! env var, a question, a choice and an approval, and answers each outcome;
//! once over HTTP as the forms post, once clicked through in Chromium.
//!
//! The tests that drive Chromium are in `tests/slow/demo.rs`.

use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::helpers::{Daemon, OutputWithin, REFUSAL_LIMIT, client, widgetd};

struct Person {
    url: String,
    cookie: String,
    csrf: String,
    http: reqwest::Client,
}

impl Person {
    async fn logged_in(url: &str) -> Person {
        let http = client();
        let browser = crate::helpers::login_at(&http, url, "demo").await;
        Person {
            url: url.to_owned(),
            csrf: browser.csrf,
            cookie: browser.cookie,
            http,
        }
    }

    async fn page(&self, path: &str) -> String {
        let r = self
            .http
            .get(format!("{}{path}", self.url))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap();
        r.text().await.unwrap()
    }

    /// Waits until the transcript holds `text` and a pending form; returns
    /// the form's widget id.
    async fn next_form(&self, path: &str, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let page = self.page(path).await;
            let form = page
                .split("action=\"/widgets/")
                .nth(1)
                .and_then(|rest| rest.split("/submit\"").next());
            if let (true, Some(id)) = (page.contains(text), form) {
                return id.to_owned();
            }
            assert!(Instant::now() < deadline, "no form after {text:?}: {page}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn answer(&self, widget: &str, fields: &[(&str, &str)]) {
        let mut all = vec![("csrf_token", self.csrf.as_str())];
        all.extend_from_slice(fields);
        let r = self
            .http
            .post(format!("{}/widgets/{widget}/submit", self.url))
            .header("cookie", &self.cookie)
            .header("origin", &self.url)
            .header("sec-fetch-site", "same-origin")
            .form(&all)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
    }
}

#[tokio::test]
async fn the_demo_agent_walks_through_each_widget() {
    let dir = crate::helpers::test_dir();
    let data = dir.path().join("data");
    let daemon = Daemon::start_with(&data, dir.path(), "demo", &["--demo"]);
    let banner = std::fs::read_to_string(&daemon.out_log).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut banner = banner;
    while !banner.contains("Log in as `demo`") {
        assert!(Instant::now() < deadline, "{banner}");
        std::thread::sleep(Duration::from_millis(50));
        banner = std::fs::read_to_string(&daemon.out_log).unwrap();
    }
    let path = banner
        .split(&daemon.url)
        .find_map(|rest| rest.strip_prefix("/sessions/"))
        .map(|rest| format!("/sessions/{}", rest.split_whitespace().next().unwrap()))
        .expect("the banner gives the demo session's URL");
    assert!(!banner.contains("created the user `admin`"), "{banner}");

    let person = Person::logged_in(&daemon.url).await;
    let page = person.page(&path).await;
    assert!(
        page.contains("Demo: a tour of widgetd"),
        "the page says it is a demo"
    );

    let env = person.next_form(&path, "I need an API key").await;
    let value = crate::helpers::canary("demo");
    person
        .answer(&env, &[("value.DEMO_WEATHER_API_KEY", &value)])
        .await;
    let question = person
        .next_form(&path, "DEMO_WEATHER_API_KEY is saved")
        .await;
    person.answer(&question, &[("answer.0", "Oslo")]).await;
    let choice = person.next_form(&path, "You answered").await;
    person
        .answer(
            &choice,
            &[
                ("selected", "Rain"),
                ("selected", "Wind"),
                ("freeform", "and the sunset time"),
            ],
        )
        .await;
    let approval = person.next_form(&path, "You picked").await;
    person.answer(&approval, &[("decision", "once")]).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let page = person.page(&path).await;
        if page.contains("That is the tour") {
            assert!(
                page.contains("Oslo")
                    && page.contains("Rain")
                    && page.contains("sunset time")
                    && page.contains("Approved."),
                "{page}"
            );
            assert!(!page.contains(&value), "the page shows the value");
            break;
        }
        assert!(Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    daemon.stop();

    // The demo data dir takes --demo again; one with real users refuses it.
    let again = Daemon::start_with(&data, dir.path(), "demo-again", &["--demo"]);
    again.stop();
    let real = dir.path().join("real");
    let first = Daemon::start(&real, dir.path(), "real");
    first.stop();
    let out = widgetd(&real)
        .args(["serve", "--bind", "127.0.0.1:0", "--demo"])
        .output_within(REFUSAL_LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--demo runs only on an empty data dir"),
        "{err}"
    );
}
