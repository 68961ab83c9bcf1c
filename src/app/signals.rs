//! SIGINT/SIGTERM: the first cancels in-flight attempts so the report is written with
//! what was received (exit 130/143); a second exits at once.

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
        #[cfg(unix)]
        tokio::spawn(listen(self.token.clone(), self.code.clone()));
    }
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
        let c = tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
        };
        if code.load(Ordering::SeqCst) != 0 {
            std::process::exit(c);
        }
        code.store(c, Ordering::SeqCst);
        eprintln!(
            "warden: {} received; cancelling and writing the report (again to quit at once)",
            if c == 130 { "SIGINT" } else { "SIGTERM" }
        );
        token.cancel();
    }
}
