//! Rate limits: token buckets per client address and per user name for
//! logins, and per agent for what agents add to a session. The buckets live
//! in the database, so they hold across every daemon of a deployment, and
//! are taken inside a write transaction, so two requests never both take
//! the last token.

use std::time::Duration;

use crate::clock;
use crate::db::{Dialect, Script, WriteTx};
use crate::error::{Error, Result};
use crate::ids::SessionId;

/// A bucket: attempts allowed at once, and regained per second after that.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    pub burst: f64,
    pub per_sec: f64,
}

/// Per user name: 5 at once, then one every 12 s.
pub const PER_NAME: Bucket = Bucket {
    burst: 5.0,
    per_sec: 1.0 / 12.0,
};
/// Per client address: 20 at once, then one every 3 s. Larger than a
/// name's: a team behind one NAT shares an address, while guessing one
/// account is what must stay slow.
pub const PER_ADDRESS: Bucket = Bucket {
    burst: 20.0,
    per_sec: 1.0 / 3.0,
};
/// Per agent (session): 30 new widgets or transcript lines at once, then
/// one every 2 s — an agent in a loop cannot flood a person.
pub const PER_AGENT: Bucket = Bucket {
    burst: 30.0,
    per_sec: 0.5,
};

/// Rows idle this long are full again: the sweep deletes them.
const IDLE_MS: i64 = 3_600_000;

/// The bucket key of a user name as typed: a fixed-size hash, so a key
/// costs the same whatever was sent, and no name is stored.
pub fn name_key(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(name.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("user:{hex}")
}

/// The bucket key of a client address.
pub fn address_key(address: Option<&str>) -> String {
    format!("ip:{}", address.unwrap_or("-"))
}

/// Stores a bucket's level as decided by the caller.
const WRITE_BUCKET: &str = "INSERT INTO rate_limits (key, tokens, updated_at) VALUES ($1, $2, $3) \
     ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at";

/// Takes one attempt from every bucket in `keys`, inside the caller's write
/// transaction; `Ok(Err(wait))` and nothing taken if any is empty.
pub async fn take(
    tx: &mut WriteTx,
    keys: &[(String, Bucket)],
) -> sqlx::Result<Result<(), Duration>> {
    take_at(tx, keys, clock::now_ms()).await
}

/// A bucket's stored (tokens, updated_at): remembered by the SQLite writer,
/// else read.
async fn stored(tx: &mut WriteTx, key: &str) -> sqlx::Result<Option<(f64, i64)>> {
    if let Some(level) = tx.memo().and_then(|memo| memo.bucket(key)) {
        return Ok(Some(level));
    }
    let row = sqlx::query_as("SELECT tokens, updated_at FROM rate_limits WHERE key = $1")
        .bind(key)
        .fetch_optional(&mut **tx)
        .await?;
    if let (Some(memo), Some(level)) = (tx.memo(), row) {
        memo.set_bucket(key, Some(level));
    }
    Ok(row)
}

/// [`take`] as of `now` (Unix milliseconds).
async fn take_at(
    tx: &mut WriteTx,
    keys: &[(String, Bucket)],
    now: i64,
) -> sqlx::Result<Result<(), Duration>> {
    if let [(key, bucket)] = keys {
        return take_one(tx, key, *bucket, now).await;
    }
    // Each bucket is read and written back under its lock (PostgreSQL), so
    // no concurrent take is lost.
    let buckets = keys.iter().map(|(key, _)| crate::db::Lock::Bucket(key));
    tx.lock_all(buckets).await?;
    let mut levels = Vec::with_capacity(keys.len());
    for (key, bucket) in keys {
        let level = level_at(*bucket, stored(tx, key).await?, now);
        if level < 1.0 {
            return Ok(Err(wait_for(*bucket, level)));
        }
        levels.push(level);
    }
    for ((key, _), level) in keys.iter().zip(levels) {
        sqlx::query(WRITE_BUCKET)
            .bind(key)
            .bind(level - 1.0)
            .bind(now)
            .execute(&mut **tx)
            .await?;
        if let Some(memo) = tx.memo() {
            memo.set_bucket(key, Some((level - 1.0, now)));
        }
    }
    Ok(Ok(()))
}

/// One bucket, in one statement: the row is refilled and taken from, or
/// created full less one, only where at least one attempt is left, and
/// PostgreSQL's upsert locks the row for it, so no concurrent take is lost
/// and no advisory lock is needed. The row's time never goes back (a take
/// whose `now` was read before a concurrent one's refills nothing and
/// leaves the later time), so no interval is refilled twice. A refusal
/// then reads the row once, for the wait.
async fn take_one(
    tx: &mut WriteTx,
    key: &str,
    bucket: Bucket,
    now: i64,
) -> sqlx::Result<Result<(), Duration>> {
    let sql = Dialect::of(tx).sql();
    let (least, greatest) = (sql.least(), sql.greatest());
    let level = format!(
        "{least}($2, rate_limits.tokens + {greatest}($4 - rate_limits.updated_at, 0) * $3)"
    );
    let taken: Option<(f64, i64)> = sqlx::query_as(&format!(
        "INSERT INTO rate_limits (key, tokens, updated_at) VALUES ($1, $2 - 1, $4)
         ON CONFLICT (key) DO UPDATE SET tokens = {level} - 1,
             updated_at = {greatest}(rate_limits.updated_at, $4)
         WHERE {level} >= 1 RETURNING tokens, updated_at"
    ))
    .bind(key)
    .bind(bucket.burst)
    .bind(bucket.per_sec / 1000.0)
    .bind(now)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some(row) = taken {
        if let Some(memo) = tx.memo() {
            memo.set_bucket(key, Some(row));
        }
        return Ok(Ok(()));
    }
    let row = stored(tx, key).await?;
    Ok(Err(wait_for(bucket, level_at(bucket, row, now))))
}

/// The attempts `bucket` holds at `now`, stored as `row` (full without).
fn level_at(bucket: Bucket, row: Option<(f64, i64)>, now: i64) -> f64 {
    row.map_or(bucket.burst, |(tokens, at)| {
        let regained = (now - at).max(0) as f64 / 1000.0 * bucket.per_sec;
        (tokens + regained).min(bucket.burst)
    })
}

/// How long until `bucket`, at `level`, holds one attempt: at least 1 s.
fn wait_for(bucket: Bucket, level: f64) -> Duration {
    let wait = Duration::from_secs_f64((1.0 - level).max(0.0) / bucket.per_sec);
    wait.max(Duration::from_secs(1))
}

/// The bucket key of `session`'s agent.
pub fn agent_key(session: &SessionId) -> String {
    format!("agent:{session}")
}

/// Takes one request from `session`'s agent bucket, inside the caller's
/// write transaction; `429 rate_limited` when it is empty.
pub async fn take_agent(tx: &mut WriteTx, session: &SessionId) -> Result<()> {
    let key = agent_key(session);
    take(tx, &[(key, PER_AGENT)])
        .await?
        .map_err(|wait| Error::RateLimited(wait.as_secs()))
}

/// [`take_agent`] with the bucket's write among `script`'s writes when the
/// SQLite writer remembers the bucket: decided in memory, written with the
/// rest (one hop fewer). The memo moves at once; if the request then fails,
/// its savepoint is undone and the memo forgets the bucket with it.
/// Otherwise (PostgreSQL, or a bucket not remembered) taken at once.
pub async fn take_agent_into(
    tx: &mut WriteTx,
    script: &mut Script,
    session: &SessionId,
) -> Result<()> {
    let key = agent_key(session);
    take_into_at(tx, script, key, PER_AGENT, clock::now_ms())
        .await?
        .map_err(|wait| Error::RateLimited(wait.as_secs()))
}

/// [`take_agent_into`] for any one bucket, as of `now`.
async fn take_into_at(
    tx: &mut WriteTx,
    script: &mut Script,
    key: String,
    bucket: Bucket,
    now: i64,
) -> sqlx::Result<Result<(), Duration>> {
    let Some(row) = tx.memo().and_then(|memo| memo.bucket(&key)) else {
        tx.ready().await?;
        return take_one(tx, &key, bucket, now).await;
    };
    let level = level_at(bucket, Some(row), now);
    if level < 1.0 {
        return Ok(Err(wait_for(bucket, level)));
    }
    // The bucket's time never goes back (as in `take_one`).
    let at = now.max(row.1);
    if let Some(memo) = tx.memo() {
        memo.set_bucket(&key, Some((level - 1.0, at)));
    }
    script.push("bucket", WRITE_BUCKET, |v| {
        v.add(key).add(level - 1.0).add(at);
    });
    Ok(Ok(()))
}

/// Deletes buckets idle for an hour (full again by then); returns how many.
pub async fn forget_idle(tx: &mut WriteTx) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM rate_limits WHERE updated_at < $1")
        .bind(clock::now_ms() - IDLE_MS)
        .execute(&mut **tx)
        .await?;
    if let Some(memo) = tx.memo() {
        memo.forget_buckets();
    }
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;

    /// One instant for the whole test: a slow machine must not refill the
    /// buckets between attempts.
    const NOW: i64 = 1_800_000_000_000;

    async fn attempt(db: &Db, keys: &[(String, Bucket)]) -> Result<(), Duration> {
        let mut tx = db.begin_write().await.unwrap();
        let outcome = take_at(&mut tx, keys, NOW).await.unwrap();
        tx.commit().await.unwrap();
        outcome
    }

    #[tokio::test]
    async fn a_burst_passes_then_attempts_are_refused_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("limits.db")).await.unwrap();
        db.migrate().await.unwrap();
        let keys = |ip: &str, user: &str| {
            vec![
                (address_key(Some(ip)), PER_ADDRESS),
                (name_key(user), PER_NAME),
            ]
        };
        for _ in 0..5 {
            assert!(attempt(&db, &keys("1.1.1.1", "alice")).await.is_ok());
        }
        let wait = attempt(&db, &keys("1.1.1.1", "alice")).await.unwrap_err();
        // The name's bucket is empty: one attempt comes back in 12 s.
        assert_eq!(wait, Duration::from_secs(12));
        // The same user from elsewhere is limited too; another user from
        // elsewhere is not.
        assert!(attempt(&db, &keys("2.2.2.2", "alice")).await.is_err());
        assert!(attempt(&db, &keys("2.2.2.2", "bob")).await.is_ok());
        // One address may try many names, up to its own larger bucket.
        let mut passed = 0;
        for i in 0..30 {
            passed += usize::from(
                attempt(&db, &keys("3.3.3.3", &format!("u{i}")))
                    .await
                    .is_ok(),
            );
        }
        assert_eq!(passed, 20);
        // Keys are fixed-size whatever was typed, and never the name.
        assert_eq!(
            name_key(&"x".repeat(1 << 20)).len(),
            name_key("alice").len()
        );
        assert!(!name_key("alice").contains("alice"));
        db.close().await;
    }

    #[tokio::test]
    async fn one_bucket_is_taken_in_one_statement_and_refills_over_time() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("limits.db")).await.unwrap();
        db.migrate().await.unwrap();
        let agent = |at: i64| {
            let db = &db;
            async move {
                let mut tx = db.begin_write().await.unwrap();
                let keys = [("agent:s".to_owned(), PER_AGENT)];
                let outcome = take_at(&mut tx, &keys, at).await.unwrap();
                tx.commit().await.unwrap();
                outcome
            }
        };
        for _ in 0..30 {
            assert!(agent(NOW).await.is_ok());
        }
        // Empty: one attempt comes back in 2 s.
        assert_eq!(agent(NOW).await.unwrap_err(), Duration::from_secs(2));
        assert_eq!(
            agent(NOW + 1_000).await.unwrap_err(),
            Duration::from_secs(1)
        );
        assert!(agent(NOW + 2_000).await.is_ok());
        assert!(agent(NOW + 2_000).await.is_err());
        // Refilled to the burst at most, however long it stood.
        let mut passed = 0;
        for _ in 0..40 {
            passed += usize::from(agent(NOW + 3_600_000).await.is_ok());
        }
        assert_eq!(passed, 30);
        // A take whose time was read before an earlier-committed one's
        // regains nothing and leaves the later time: no interval counts
        // twice.
        for _ in 0..29 {
            assert!(agent(NOW + 7_200_000).await.is_ok());
        }
        assert!(agent(NOW + 7_202_000).await.is_ok());
        assert!(agent(NOW + 7_201_000).await.is_ok());
        assert_eq!(
            agent(NOW + 7_203_000).await.unwrap_err(),
            Duration::from_secs(1)
        );
        db.close().await;
    }

    #[tokio::test]
    async fn a_bucket_the_writer_remembers_is_written_with_the_script() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("limits.db")).await.unwrap();
        db.migrate().await.unwrap();
        let stored = || async {
            sqlx::query_scalar::<_, f64>("SELECT tokens FROM rate_limits WHERE key = 'agent:s'")
                .fetch_one(&db.read)
                .await
                .unwrap()
        };
        // `keep`: run the script and commit, or drop the transaction.
        let agent = |keep: bool| {
            let db = &db;
            async move {
                let mut tx = db.begin_write().await.unwrap();
                let mut script = Script::new(Dialect::Sqlite);
                let key = "agent:s".to_owned();
                let outcome = take_into_at(&mut tx, &mut script, key, PER_AGENT, NOW)
                    .await
                    .unwrap();
                if keep {
                    script.run(&mut tx).await.unwrap();
                    tx.commit().await.unwrap();
                }
                outcome
            }
        };
        // The first take is not remembered yet: taken at once.
        assert!(agent(true).await.is_ok());
        assert_eq!(stored().await, 29.0);
        // Remembered from here on: written only by the script.
        assert!(agent(false).await.is_ok());
        assert_eq!(stored().await, 29.0, "a dropped take wrote nothing");
        for left in (0..29).rev() {
            assert!(agent(true).await.is_ok());
            assert_eq!(stored().await, f64::from(left));
        }
        assert_eq!(agent(true).await.unwrap_err(), Duration::from_secs(2));
        db.close().await;
    }
}
