//! How epoch reads are shared and handed on (SQLite; the PostgreSQL path
//! differs only in how old a read may be, and runs in the API suite).

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Duration;

use super::AuthCache;
use crate::testing::TestDb;

fn started(cache: &AuthCache) -> u64 {
    cache.reads.lock().unwrap().started
}

#[tokio::test]
async fn requests_arriving_together_share_a_few_reads() {
    let test = TestDb::new().await;
    let cache = Arc::new(AuthCache::default());
    let requests: Vec<_> = (0..64)
        .map(|_| {
            let (cache, db) = (cache.clone(), test.db.clone());
            tokio::spawn(async move {
                let c = cache.clone();
                cache.arrival(async move { c.epoch(&db).await.0 }).await
            })
        })
        .collect();
    for request in requests {
        assert_eq!(
            request.await.unwrap(),
            Some(0),
            "every request read the epoch"
        );
    }
    let reads = started(&cache);
    assert!(
        (1..=8).contains(&reads),
        "64 requests arriving together started {reads} reads"
    );
}

#[tokio::test]
async fn a_read_dropped_with_its_request_lets_the_next_one_run() {
    let test = TestDb::new().await;
    let cache = AuthCache::default();
    // Every read connection is taken, so the read, once started, waits;
    // polled once, it is then given up with its request.
    let mut taken = Vec::new();
    for _ in 0..test.db.read.options().get_max_connections() {
        taken.push(test.db.read.acquire().await.unwrap());
    }
    let mut given_up = Box::pin(cache.epoch(&test.db));
    let first = given_up
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
    assert!(first.is_pending(), "the read finished with no connection");
    drop(given_up);
    drop(taken);
    assert_eq!(started(&cache), 1, "the first poll started a read");
    assert!(
        !cache.reads.lock().unwrap().running,
        "the dropped read still counts as running"
    );
    let next = tokio::time::timeout(Duration::from_secs(10), cache.epoch(&test.db))
        .await
        .expect("a request after the dropped read waited for it forever");
    assert_eq!(next.0, Some(0));
    assert_eq!(started(&cache), 2);
}
