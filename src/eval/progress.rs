//! Progress over case reviews on stderr: an indicatif bar on a terminal, plain lines at
//! most every few seconds otherwise (and one at the end), nothing with `-q`. It counts
//! case reviews, not units: a case's own review shows no progress of its own here.

use super::outcome::{CaseRun, State};
use crate::progress::Mode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Plain lines are printed at most this often.
const PLAIN_EVERY: Duration = Duration::from_secs(2);

struct Counts {
    done: usize,
    not_reviewed: usize,
    findings: usize,
    last_line: Option<Instant>,
}

/// The evaluation's progress display.
pub struct Progress {
    mode: Mode,
    total: usize,
    start: Instant,
    counts: Mutex<Counts>,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// A display over `total` case reviews.
    pub fn new(mode: Mode, total: usize) -> Progress {
        let bar = (mode == Mode::Bars).then(|| {
            let b = indicatif::ProgressBar::with_draw_target(
                Some(total as u64),
                indicatif::ProgressDrawTarget::stderr(),
            );
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} cases  {msg}",
                )
                .expect("valid template"),
            );
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        Progress {
            mode,
            total,
            start: Instant::now(),
            counts: Mutex::new(Counts {
                done: 0,
                not_reviewed: 0,
                findings: 0,
                last_line: None,
            }),
            bar,
        }
    }

    /// One case review ended.
    pub fn case_done(&self, run: &CaseRun) {
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        c.done += 1;
        c.findings += run.findings.len();
        let whole =
            matches!(run.state, State::Reviewed { .. }) && run.units.iter().all(|u| u.reviewed);
        c.not_reviewed += usize::from(!whole);
        let msg = self.message(&c);
        match self.mode {
            Mode::Quiet => {}
            Mode::Bars => {
                if let Some(b) = &self.bar {
                    b.set_position(c.done as u64);
                    b.set_message(msg);
                }
            }
            Mode::Plain => {
                let now = Instant::now();
                let due = c
                    .last_line
                    .is_none_or(|t| now.duration_since(t) >= PLAIN_EVERY);
                if due || c.done == self.total {
                    c.last_line = Some(now);
                    crate::text::stdio::eprint_line(&format!(
                        "eval [{:>6.1}s] {}/{} cases · {msg}",
                        self.start.elapsed().as_secs_f64(),
                        c.done,
                        self.total
                    ));
                }
            }
        }
    }

    fn message(&self, c: &Counts) -> String {
        format!(
            "{} findings · {} not fully reviewed",
            c.findings, c.not_reviewed
        )
    }

    /// Clears the bar before the report is written.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
