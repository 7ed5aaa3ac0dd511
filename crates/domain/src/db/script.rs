//! Several writes of one transaction sent as one statement: on SQLite a
//! statement list (one hop to sqlx's worker thread instead of one per
//! write), on PostgreSQL one statement whose earlier writes are
//! data-modifying CTEs (one round trip instead of one per write).
//!
//! Each write is added with placeholders counted from its own first value
//! (`$1`, `$2`, …); the script renumbers them as it appends, so a module
//! spells its statement as it would alone. Work that must follow the
//! writes (a memo that remembers what was written) is added as a step run
//! only once they succeeded.

use sqlx::any::AnyArguments;
use sqlx::error::BoxDynError;
use sqlx::{AnyConnection, Arguments};

use super::{Dialect, WriteTx};

/// Runs after the script's writes succeeded, in the same transaction.
type Then = Box<dyn FnOnce(&mut WriteTx) + Send>;

/// Writes gathered to be sent as one statement.
pub struct Script {
    dialect: Dialect,
    /// `(name, statement)`: on PostgreSQL every one but the last becomes
    /// `name AS (statement)`, so a later one may read an earlier one's
    /// `RETURNING`.
    writes: Vec<(&'static str, String)>,
    args: AnyArguments<'static>,
    /// The first value that could not be encoded.
    failed: Option<BoxDynError>,
    then: Vec<Then>,
}

/// The values of one write, in the order of its placeholders.
pub struct Values<'a>(&'a mut Script);

impl Values<'_> {
    /// Binds the next placeholder. Values are owned, so that a script can
    /// be left to the writer's task (`pipe.rs`).
    pub fn add<T>(&mut self, value: T) -> &mut Self
    where
        T: 'static + sqlx::Encode<'static, sqlx::Any> + sqlx::Type<sqlx::Any>,
    {
        if let Err(e) = self.0.args.add(value)
            && self.0.failed.is_none()
        {
            self.0.failed = Some(e);
        }
        self
    }
}

impl Script {
    pub fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            writes: Vec::new(),
            args: AnyArguments::default(),
            failed: None,
            then: Vec::new(),
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Adds a write: `sql`'s placeholders count from 1 and `bind` gives
    /// their values in order. `name` names its `RETURNING` for the writes
    /// after it (PostgreSQL only).
    pub fn push(
        &mut self,
        name: &'static str,
        sql: &str,
        bind: impl FnOnce(&mut Values<'_>),
    ) -> &mut Self {
        let offset = self.args.len();
        bind(&mut Values(self));
        let (sql, highest) = renumber(sql, offset);
        debug_assert!(
            !sql.contains(';'),
            "a write is one statement (the writer's task counts them): {sql:?}"
        );
        debug_assert_eq!(
            highest,
            self.args.len() - offset,
            "every placeholder of {sql:?} gets one value"
        );
        self.writes.push((name, sql));
        self
    }

    /// Adds a step run once the writes succeeded.
    pub fn then(&mut self, step: impl FnOnce(&mut WriteTx) + Send + 'static) -> &mut Self {
        self.then.push(Box::new(step));
        self
    }

    /// The one statement.
    fn statement(&self) -> String {
        match self.dialect {
            Dialect::Sqlite => self
                .writes
                .iter()
                .map(|(_, sql)| sql.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            Dialect::Postgres => {
                let (last, earlier) = self.writes.split_last().expect("a script writes");
                let ctes: Vec<String> = earlier
                    .iter()
                    .map(|(name, sql)| format!("{name} AS ({sql})"))
                    .collect();
                if ctes.is_empty() {
                    last.1.clone()
                } else {
                    format!("WITH {} {}", ctes.join(", "), last.1)
                }
            }
        }
    }

    /// Sends the writes in `tx`, then runs the steps added with
    /// [`Script::then`].
    pub async fn run(mut self, tx: &mut WriteTx) -> sqlx::Result<()> {
        let then = std::mem::take(&mut self.then);
        tx.ready().await?;
        self.run_on(tx).await?;
        for step in then {
            step(tx);
        }
        Ok(())
    }

    /// Sends the writes as `tx`'s last and commits it. On SQLite the
    /// statement also ends the member's savepoint, which saves the commit a
    /// hop to the writer's thread of its own; the steps added with
    /// [`Script::then`] run first, so that the writer's memory they change
    /// is forgotten, and read again, should the writes fail or their caller
    /// give up partway. A transaction begun deferred leaves the statement
    /// to the writer's task (`pipe.rs`) instead.
    pub async fn commit(mut self, mut tx: WriteTx) -> sqlx::Result<()> {
        let then = std::mem::take(&mut self.then);
        if tx.is_deferred() {
            for step in then {
                step(&mut tx);
            }
            if let Some(e) = self.failed {
                return Err(sqlx::Error::Encode(e));
            }
            if self.writes.is_empty() {
                return tx.commit().await;
            }
            let (sql, statements) = (self.statement(), self.writes.len());
            return tx.leave_script(sql, self.args, statements).await;
        }
        let release = tx.release_sql().filter(|_| !self.writes.is_empty());
        if let Some(release) = release {
            for step in then {
                step(&mut tx);
            }
            self.writes.push(("release", release.to_owned()));
            self.run_on(&mut tx).await?;
            tx.released();
        } else {
            self.run_on(&mut tx).await?;
            for step in then {
                step(&mut tx);
            }
        }
        tx.commit().await
    }

    /// Sends the writes on `conn`, a script without steps to follow.
    pub async fn run_on(self, conn: &mut AnyConnection) -> sqlx::Result<()> {
        debug_assert!(self.then.is_empty(), "steps need a WriteTx");
        if let Some(e) = self.failed {
            return Err(sqlx::Error::Encode(e));
        }
        if self.writes.is_empty() {
            return Ok(());
        }
        let sql = self.statement();
        sqlx::query_with(&sql, self.args).execute(conn).await?;
        Ok(())
    }
}

/// `sql` with every placeholder `$n` outside quotes made `$(n + offset)`,
/// and the highest `n` it had (0 if none).
pub(super) fn renumber(sql: &str, offset: usize) -> (String, usize) {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut highest = 0;
    let mut quoted = false;
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        out.push(c);
        rest = &rest[c.len_utf8()..];
        if c == '\'' {
            quoted = !quoted;
        }
        if c != '$' || quoted {
            continue;
        }
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            let n: usize = rest[..digits].parse().expect("digits");
            highest = highest.max(n);
            out.push_str(&(n + offset).to_string());
            rest = &rest[digits..];
        }
    }
    (out, highest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_outside_quotes_are_renumbered() {
        let sql = "INSERT INTO t (a, b, c) VALUES ($1, '$1 and $.x', $12) RETURNING $2";
        assert_eq!(
            renumber(sql, 10),
            (
                "INSERT INTO t (a, b, c) VALUES ($11, '$1 and $.x', $22) RETURNING $12".to_owned(),
                12
            )
        );
        assert_eq!(renumber(sql, 0), (sql.to_owned(), 12));
        assert_eq!(
            renumber("SELECT '$7', 'é' || $1", 1),
            ("SELECT '$7', 'é' || $2".to_owned(), 1)
        );
    }

    #[test]
    fn postgres_writes_before_the_last_become_ctes() {
        let mut script = Script::new(Dialect::Postgres);
        script.push("w", "INSERT INTO a VALUES ($1) RETURNING id", |v| {
            v.add(1_i64);
        });
        script.push("m", "INSERT INTO b SELECT id, $1 FROM w", |v| {
            v.add("x");
        });
        script.push("e", "INSERT INTO c VALUES ($1, $2)", |v| {
            v.add(2_i64).add(3_i64);
        });
        assert_eq!(
            script.statement(),
            "WITH w AS (INSERT INTO a VALUES ($1) RETURNING id), \
             m AS (INSERT INTO b SELECT id, $2 FROM w) INSERT INTO c VALUES ($3, $4)"
        );
        assert_eq!(script.args.len(), 4);
        let mut sqlite = Script::new(Dialect::Sqlite);
        sqlite.push("w", "INSERT INTO a VALUES ($1)", |v| {
            v.add(1_i64);
        });
        sqlite.push("e", "INSERT INTO c VALUES ($1, $2)", |v| {
            v.add(2_i64).add(3_i64);
        });
        assert_eq!(
            sqlite.statement(),
            "INSERT INTO a VALUES ($1); INSERT INTO c VALUES ($2, $3)"
        );
    }
}
