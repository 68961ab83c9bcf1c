//! Interrupts: the first cancels in-flight attempts so the report is written with what was
//! received; a second exits at once. On Unix, SIGINT (exit 130) and SIGTERM (143); on
//! Windows, Ctrl-C and Ctrl-Break (both 130: Windows has no SIGTERM to deliver). Once the
//! review has ended and its reports are being written, a signal gives the writing
//! [`GRACE`] and then exits with its code: writing that is slow (a huge report, a stdout
//! nobody reads) never holds a signal for longer (DESIGN.md §13).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long the writing of the reports may go on after a signal (a signal acts within
/// 1 s).
const GRACE: Duration = Duration::from_millis(900);

/// The interrupt token the review watches, and the exit code of the signal, if one came.
#[derive(Clone, Default)]
pub(super) struct Signals {
    pub token: CancellationToken,
    code: Arc<AtomicI32>,
    writing: Arc<AtomicBool>,
}

impl Signals {
    /// 130 or 143 once a signal arrived.
    pub fn code(&self) -> Option<i32> {
        Some(self.code.load(Ordering::SeqCst)).filter(|c| *c != 0)
    }

    /// Starts listening (inside the runtime).
    pub fn listen(&self) {
        tokio::spawn(listen(self.clone()));
    }

    /// The review has ended and its reports are being written: a signal from now on (or
    /// one that already came) ends the process [`GRACE`] later, written or not.
    pub fn writing(&self) {
        self.writing.store(true, Ordering::SeqCst);
        if let Some(exit) = self.code() {
            deadline(exit);
        }
    }

    /// One interrupt: the first cancels the review (its report is still written), the
    /// second exits with `exit` at once.
    #[cfg(any(unix, windows))]
    fn received(&self, exit: i32, name: &str) {
        if self.code.load(Ordering::SeqCst) != 0 {
            std::process::exit(exit);
        }
        self.code.store(exit, Ordering::SeqCst);
        if self.writing.load(Ordering::SeqCst) {
            warden::text::stdio::eprint_line(&format!(
                "warden: {name} received while writing the reports; exiting within 1s"
            ));
            deadline(exit);
            return;
        }
        warden::text::stdio::eprint_line(&format!(
            "warden: {name} received; cancelling and writing the report (again to quit at once)"
        ));
        self.token.cancel();
    }
}

/// Exits with `exit` after [`GRACE`], from a thread of its own (writing may hold the
/// others).
fn deadline(exit: i32) {
    std::thread::spawn(move || {
        std::thread::sleep(GRACE);
        std::process::exit(exit);
    });
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
