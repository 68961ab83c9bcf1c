//! Interrupts: the first cancels in-flight attempts so the report is written with what was
//! received; a second exits at once. On Unix, SIGINT (exit 130) and SIGTERM (143); on
//! Windows, Ctrl-C and Ctrl-Break (both 130: Windows has no SIGTERM to deliver).

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use tokio_util::sync::CancellationToken;

/// The interrupt token the review watches, and the exit code of the signal, if one came.
#[derive(Clone, Default)]
pub(super) struct Signals {
    pub token: CancellationToken,
    code: Arc<AtomicI32>,
}

impl Signals {
    /// 130 or 143 once a signal arrived.
    pub fn code(&self) -> Option<i32> {
        Some(self.code.load(Ordering::SeqCst)).filter(|c| *c != 0)
    }

    /// Starts listening (inside the runtime).
    pub fn listen(&self) {
        tokio::spawn(listen(self.token.clone(), self.code.clone()));
    }
}

/// One interrupt: the first cancels the review (its report is still written), the second
/// exits with `exit` at once.
#[cfg(any(unix, windows))]
fn received(exit: i32, name: &str, token: &CancellationToken, code: &AtomicI32) {
    if code.load(Ordering::SeqCst) != 0 {
        std::process::exit(exit);
    }
    code.store(exit, Ordering::SeqCst);
    warden::text::stdio::eprint_line(&format!(
        "warden: {name} received; cancelling and writing the report (again to quit at once)"
    ));
    token.cancel();
}

#[cfg(unix)]
async fn listen(token: CancellationToken, code: Arc<AtomicI32>) {
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
        received(exit, name, &token, &code);
    }
}

#[cfg(windows)]
async fn listen(token: CancellationToken, code: Arc<AtomicI32>) {
    use tokio::signal::windows::{ctrl_break, ctrl_c};
    let (Ok(mut c), Ok(mut brk)) = (ctrl_c(), ctrl_break()) else {
        return;
    };
    loop {
        let name = tokio::select! {
            _ = c.recv() => "Ctrl-C",
            _ = brk.recv() => "Ctrl-Break",
        };
        received(130, name, &token, &code);
    }
}

/// Elsewhere tokio has no signals to listen to: an interrupt ends the process as the
/// platform does, without the report.
#[cfg(not(any(unix, windows)))]
async fn listen(_token: CancellationToken, _code: Arc<AtomicI32>) {}
