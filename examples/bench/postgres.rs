//! A PostgreSQL database of the bench's own: created on the server the user
//! names, dropped at the end, so a run leaves the server as it found it.

use std::time::{Duration, Instant};

use sqlx::{Connection, Executor, PgConnection};

/// A database created for this run.
pub struct Scratch {
    server: String,
    name: String,
    /// Where the daemon finds it.
    pub url: String,
}

impl Scratch {
    /// Creates `widgetd_bench_<random>` on the server at `server` (any URL
    /// of it that may create databases, e.g.
    /// `postgres://postgres@127.0.0.1:5432/postgres`).
    pub async fn create(server: &str) -> anyhow::Result<Scratch> {
        let name = format!("widgetd_bench_{}", uuid::Uuid::new_v4().simple());
        let mut url = url::Url::parse(server)?;
        anyhow::ensure!(
            matches!(url.scheme(), "postgres" | "postgresql"),
            "--database-url takes a postgres:// URL"
        );
        url.set_path(&name);
        let mut conn = PgConnection::connect(server).await?;
        conn.execute(format!("CREATE DATABASE {name}").as_str())
            .await?;
        conn.close().await?;
        eprintln!("bench: created the database {name}");
        Ok(Scratch {
            server: server.to_owned(),
            name,
            url: url.to_string(),
        })
    }

    /// Single-row commits per second on the server, one connection (the
    /// server's `synchronous_commit`, `on` by default: a WAL flush per
    /// commit), in a table dropped afterwards.
    pub async fn commit_ceiling(&self, secs: f64) -> anyhow::Result<f64> {
        let mut conn = PgConnection::connect(&self.url).await?;
        conn.execute("CREATE TABLE bench_probe (id BIGSERIAL PRIMARY KEY, v TEXT)")
            .await?;
        let until = Instant::now() + Duration::from_secs_f64(secs);
        let started = Instant::now();
        let mut n = 0u64;
        while Instant::now() < until {
            sqlx::query("INSERT INTO bench_probe (v) VALUES ('x')")
                .execute(&mut conn)
                .await?;
            n += 1;
        }
        let rate = n as f64 / started.elapsed().as_secs_f64();
        conn.execute("DROP TABLE bench_probe").await?;
        conn.close().await?;
        Ok(rate)
    }

    /// Drops the database, closing any connection still open to it.
    pub async fn drop_it(self) -> anyhow::Result<()> {
        let mut conn = PgConnection::connect(&self.server).await?;
        conn.execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str())
            .await?;
        conn.close().await?;
        eprintln!("bench: dropped the database {}", self.name);
        Ok(())
    }
}
