//! Progress of long commands on standard error: a bar redrawn in place on
//! a terminal, a plain line every tenth of the way otherwise (logs, CI).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a terminal bar is redrawn at most.
const REDRAW: Duration = Duration::from_millis(100);
const WIDTH: u64 = 30;

/// One task's progress: `label`, `done` of `total`.
pub struct Progress {
    label: String,
    total: u64,
    done: u64,
    terminal: bool,
    drawn_at: Option<Instant>,
    last_tenth: u64,
}

impl Progress {
    /// Starts showing progress for `total` items.
    pub fn new(label: impl Into<String>, total: u64) -> Self {
        let mut progress = Self {
            label: label.into(),
            total,
            done: 0,
            terminal: std::io::stderr().is_terminal(),
            drawn_at: None,
            last_tenth: 0,
        };
        progress.draw();
        progress
    }

    /// `done` items are finished.
    pub fn set(&mut self, done: u64) {
        self.done = done.min(self.total);
        if self.terminal {
            if self.drawn_at.is_none_or(|at| at.elapsed() >= REDRAW) {
                self.draw();
            }
        } else if self.tenths() > self.last_tenth {
            self.last_tenth = self.tenths();
            self.draw();
        }
    }

    /// Shows the final state and ends the line.
    pub fn finish(mut self) {
        self.done = self.total;
        if self.terminal {
            self.draw();
            eprintln!();
        } else if self.last_tenth < 10 {
            self.draw();
        }
    }

    fn tenths(&self) -> u64 {
        (self.done * 10).checked_div(self.total).unwrap_or(10)
    }

    fn draw(&mut self) {
        let percent = (self.done * 100).checked_div(self.total).unwrap_or(100);
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let filled = (self.done * WIDTH).checked_div(self.total).unwrap_or(WIDTH);
            let bar = "#".repeat(filled as usize) + &" ".repeat((WIDTH - filled) as usize);
            let _ = write!(
                err,
                "\r{:<18} [{bar}] {}/{} ({percent}%)",
                self.label, self.done, self.total
            );
            let _ = err.flush();
        } else {
            let _ = writeln!(
                err,
                "{}: {}/{} ({percent}%)",
                self.label, self.done, self.total
            );
        }
        self.drawn_at = Some(Instant::now());
    }
}
