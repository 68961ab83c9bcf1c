//! Interrupts: the first cancels in-flight attempts so the report is written with what was
//! received; a second exits at once. On Unix, SIGINT (exit 130) and SIGTERM (143); on
//! Windows, Ctrl-C and Ctrl-Break (both 130: Windows has no SIGTERM to deliver).
//!
//! A signal acts within 1 s in every phase (docs/design.md §14): the listener has a thread of
//! its own (a busy runtime cannot delay it), and the first signal arms a deadline. If the
//! review has not begun writing its reports [`FALLBACK_AFTER`] later (it is in a
//! CPU-bound stretch, or a cache will not answer), the fallback writes the report of what
//! is known instead; at [`GRACE`] the process exits with the signal's code, written or
//! not, so slow writing (a huge report, a stdout nobody reads) never holds it either.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long after a signal the process may still run (a signal acts within 1 s).
const GRACE: Duration = Duration::from_millis(950);

/// How long after a signal the review may take to reach its own reports before the
/// fallback writes what is known.
const FALLBACK_AFTER: Duration = Duration::from_millis(600);

/// What writes the report of what is known when the review cannot end in time.
pub(super) type Fallback = Box<dyn FnOnce() + Send>;

/// The interrupt token the review watches, and the exit code of the signal, if one came.
#[derive(Clone, Default)]
pub(super) struct Signals {
    pub token: CancellationToken,
    code: Arc<AtomicI32>,
    writing: Arc<AtomicBool>,
    fallback: Arc<Mutex<Option<Fallback>>>,
}

impl Signals {
    /// 130 or 143 once a signal arrived.
    pub fn code(&self) -> Option<i32> {
        Some(self.code.load(Ordering::SeqCst)).filter(|c| *c != 0)
    }

    /// Starts listening, on a thread of its own.
    pub fn listen(&self) {
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("warden-signals".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(rt) = rt {
                    rt.block_on(listen(me));
                }
            });
        // Without the thread, signals act as the platform's defaults: they still end it.
        drop(spawned);
    }

    /// What to write if the review has not reached its reports when a signal's deadline
    /// comes.
    pub fn set_fallback(&self, f: Fallback) {
        *lock(&self.fallback) = Some(f);
    }

    /// The review has ended and its reports are being written: a signal's fallback is not
    /// needed any more (the deadline still ends the process [`GRACE`] after the signal).
    pub fn writing(&self) {
        self.writing.store(true, Ordering::SeqCst);
        lock(&self.fallback).take();
    }

    /// One interrupt: the first cancels the review and arms the deadline, the second exits
    /// with `exit` at once.
    #[cfg(any(unix, windows))]
    fn received(&self, exit: i32, name: &str) {
        if self.code.load(Ordering::SeqCst) != 0 {
            std::process::exit(exit);
        }
        self.code.store(exit, Ordering::SeqCst);
        let doing = if self.writing.load(Ordering::SeqCst) {
            "finishing the reports"
        } else {
            "cancelling and writing the report"
        };
        warden::text::stdio::eprint_line(&format!(
            "warden: {name} received; {doing} within 1s (again to quit at once)"
        ));
        self.token.cancel();
        let me = self.clone();
        std::thread::spawn(move || me.deadline(exit));
    }

    /// From a thread of its own (the review may hold the others): the fallback at
    /// [`FALLBACK_AFTER`] when the review has not begun writing, the exit at [`GRACE`].
    fn deadline(&self, exit: i32) {
        let hard = std::time::Instant::now() + GRACE;
        std::thread::spawn(move || {
            std::thread::sleep(hard.saturating_duration_since(std::time::Instant::now()));
            std::process::exit(exit);
        });
        std::thread::sleep(FALLBACK_AFTER);
        let fallback = lock(&self.fallback).take();
        if let Some(write) = fallback
            && !self.writing.load(Ordering::SeqCst)
        {
            write();
            std::process::exit(exit);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(unix)]
async fn listen(signals: Signals) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    loop {
        let (exit, name) = tokio::select! {
            _ = int.recv() => (130, "SIGINT"),
            _ = term.recv() => (143, "SIGTERM"),
        };
        signals.received(exit, name);
    }
}

#[cfg(windows)]
async fn listen(signals: Signals) {
    use tokio::signal::windows::{ctrl_break, ctrl_c};
    let (Ok(mut c), Ok(mut brk)) = (ctrl_c(), ctrl_break()) else {
        return;
    };
    loop {
        let name = tokio::select! {
            _ = c.recv() => "Ctrl-C",
            _ = brk.recv() => "Ctrl-Break",
        };
        signals.received(130, name);
    }
}

/// Elsewhere tokio has no signals to listen to: an interrupt ends the process as the
/// platform does, without the report.
#[cfg(not(any(unix, windows)))]
async fn listen(_signals: Signals) {}
