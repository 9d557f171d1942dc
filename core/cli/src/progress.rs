//! Progress on standard error, for long work only, and only on a terminal.
//!
//! A bar is drawn when standard error is a terminal and the input is at
//! least [`LONG_WORK`] bytes (or of unknown length: standard input, a
//! pipe); otherwise nothing is drawn and [`Progress::add`] costs an atomic
//! add. Data never goes to standard error, and no bar to standard output.

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs at least this long get a bar (on a terminal).
pub const LONG_WORK: u64 = 256 << 20;

/// A progress bar over bytes, hidden unless worth showing.
#[derive(Debug, Clone)]
pub struct Progress(ProgressBar);

impl Progress {
    /// No bar.
    #[must_use]
    pub fn hidden() -> Self {
        Self(ProgressBar::hidden())
    }

    /// A bar over `len` bytes (`None`: unknown), shown when standard error
    /// is a terminal and the work is long.
    #[must_use]
    pub fn for_bytes(len: Option<u64>, what: &str) -> Self {
        let long = len.is_none_or(|l| l >= LONG_WORK);
        if !long || !std::io::stderr().is_terminal() {
            return Self::hidden();
        }
        let bar = match len {
            Some(l) => ProgressBar::with_draw_target(Some(l), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        let template = if len.is_some() {
            "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})"
        } else {
            "{msg} {spinner} {bytes} ({bytes_per_sec})"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_owned());
        Self(bar)
    }

    /// `n` more bytes done.
    pub fn add(&self, n: usize) {
        self.0.inc(n as u64);
    }

    /// `n` bytes done in all.
    pub fn set(&self, n: u64) {
        self.0.set_position(n);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}
