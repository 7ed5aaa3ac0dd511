//! A member of a SQLite batch that reads nothing: it holds the writer
//! while it builds its writes as one script from the writer's memory,
//! leaves the script to the writer's task (`pipe.rs`) and waits for its
//! batch's end; and what it hears when a script built before it failed.

use std::sync::Arc;

use sqlx::any::AnyArguments;
use tokio::sync::oneshot;

use super::batch::failed;
use super::pipe::{Job, Reply};
use super::writer::{Turn, Writer};

/// Why a script did not run: one before it failed. Its caller makes its
/// work again with reads of its own.
#[derive(Debug, thiserror::Error)]
#[error("a write built before this one failed; make it again")]
pub struct Superseded;

/// Whether `err` says the write was superseded ([`Superseded`]).
pub fn superseded(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Io(io) if io.get_ref().is_some_and(|e| e.is::<Superseded>()))
}

pub(crate) fn superseded_error() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(Superseded))
}

/// A member of a SQLite batch that leaves its writes to the writer's task
/// ([`Pipe`](super::pipe::Pipe)): it holds the writer while it builds them, from the
/// writer's memory alone.
pub(crate) struct Deferred {
    pub writer: Arc<Writer>,
    pub turn: Option<Turn>,
}

impl Deferred {
    pub fn turn(&mut self) -> &mut Turn {
        self.turn.as_mut().expect("a live WriteTx holds the writer")
    }

    /// Leaves the script (`sql` with `args`, `statements` statements) to
    /// the writer's task and waits until its batch ended.
    pub async fn commit(
        mut self,
        sql: String,
        args: AnyArguments<'static>,
        statements: usize,
    ) -> sqlx::Result<()> {
        let mut turn = self.turn.take().expect("a live WriteTx holds the writer");
        turn.memo().keep_member();
        let (reply, answer) = oneshot::channel();
        let job = Job {
            sql,
            args,
            statements,
            epoch: turn.epoch(),
            reply,
        };
        let pipe = self.writer.pipe.clone();
        let wake = pipe.push(job);
        // The next member may build while this script waits to run. The
        // turn's end wakes the task when nobody is left; with others
        // waiting, the task is woken here if it is idle.
        drop(turn);
        if wake && self.writer.queued() > 0 {
            self.writer.start();
            pipe.kick();
        }
        match answer.await {
            Ok(Reply::Done(Ok(()))) => Ok(()),
            Ok(Reply::Done(Err(why))) => Err(failed(&why)),
            Ok(Reply::Failed(e)) => Err(e),
            Ok(Reply::Superseded) => Err(superseded_error()),
            Err(_) => Err(sqlx::Error::Io(std::io::Error::other(
                "the write batch ended unfinished",
            ))),
        }
    }
}
