//! A cap on the bytes this process reads from the fleet's Redis. The redis client has no
//! reply-size limit: a hostile or broken server that answers with an endless (or a huge
//! declared) bulk string would have it buffer whatever arrives within the call bound (286 MB
//! measured on loopback in 250 ms). Every honest reply's largest size is known before the call
//! (a breaker script answers a few numbers, a cache read at most 256 KiB + 1 byte per value),
//! so before each call the [`Fleet`](super::Fleet) grants that much ([`ReadBudget::grant`]),
//! the connection's stream ([`Budgeted`]) consumes the grant as it reads, and a read past what
//! the calls in flight may be answered with fails the stream: the call fails, and the fleet
//! goes off with its one warning as for any other failure.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The bytes the calls in flight may still be answered with. Cheap to clone (shared).
#[derive(Clone, Default)]
pub(crate) struct ReadBudget(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    /// Bytes that may still be read.
    left: u64,
    /// What the calls in flight were granted together: `left` never exceeds it, so what a
    /// finished call did not use is not left for a later reply.
    granted: u64,
    /// Why the stream failed, once a read went past `left`.
    overrun: Option<String>,
}

/// One call's grant, given back when the call ends (answered, failed or dropped).
pub(crate) struct Grant {
    budget: ReadBudget,
    bytes: u64,
}

impl ReadBudget {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // No code panics while holding the lock; a poisoned one still holds sound numbers.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allows `bytes` more to be read until the returned grant is dropped.
    pub(crate) fn grant(&self, bytes: u64) -> Grant {
        let mut st = self.state();
        st.left = st.left.saturating_add(bytes);
        st.granted = st.granted.saturating_add(bytes);
        Grant {
            budget: self.clone(),
            bytes,
        }
    }

    /// Why the stream failed, if a read went past the budget.
    pub(crate) fn overrun(&self) -> Option<String> {
        self.state().overrun.clone()
    }

    /// The bytes that may still be read.
    fn left(&self) -> u64 {
        self.state().left
    }

    /// Takes `n` bytes just read from the budget; the error (which fails the stream) when
    /// they are more than it holds.
    fn consume(&self, n: u64) -> io::Result<()> {
        let mut st = self.state();
        if n <= st.left {
            st.left -= n;
            return Ok(());
        }
        let why = format!(
            "redis sent more than its replies can be (the calls in flight are answered in at most {} bytes): reading stopped",
            st.granted
        );
        st.left = 0;
        st.overrun.get_or_insert(why.clone());
        Err(io::Error::other(why))
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let mut st = self.budget.state();
        st.granted = st.granted.saturating_sub(self.bytes);
        st.left = st.left.min(st.granted);
    }
}

/// A stream that reads no more than its [`ReadBudget`] allows. With nothing left it still
/// reads (one byte), so that bytes nobody asked for fail the stream instead of waiting in the
/// socket; writes pass through.
pub(crate) struct Budgeted<S> {
    inner: S,
    budget: ReadBudget,
}

impl<S> Budgeted<S> {
    pub(crate) fn new(inner: S, budget: ReadBudget) -> Self {
        Budgeted { inner, budget }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Budgeted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let left = usize::try_from(self.budget.left()).unwrap_or(usize::MAX);
        let cap = buf.remaining().min(left).max(1);
        let mut part = ReadBuf::new(buf.initialize_unfilled_to(cap));
        ready!(Pin::new(&mut self.inner).poll_read(cx, &mut part))?;
        let n = part.filled().len();
        self.budget.consume(n as u64)?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Budgeted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A budgeted reader over one end of an in-memory pipe, and the other end to write to.
    fn pipe(budget: &ReadBudget) -> (Budgeted<tokio::io::DuplexStream>, tokio::io::DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        (Budgeted::new(ours, budget.clone()), theirs)
    }

    #[tokio::test]
    async fn reads_stop_at_the_grant_and_the_error_names_the_cap() {
        let budget = ReadBudget::default();
        let (mut r, mut w) = pipe(&budget);
        let _g = budget.grant(100);
        w.write_all(&[b'x'; 300]).await.unwrap();
        let mut got = vec![0u8; 1000];
        let mut read = 0;
        let err = loop {
            match r.read(&mut got[read..]).await {
                Ok(n) => read += n,
                Err(e) => break e,
            }
        };
        assert_eq!(read, 100, "exactly the grant was read");
        let msg = err.to_string();
        assert!(msg.contains("at most 100 bytes"), "{msg}");
        assert_eq!(budget.overrun().as_deref(), Some(&*msg));
        // The byte that went past was read to find out, but never handed on.
        assert_eq!(budget.left(), 0);
    }

    #[tokio::test]
    async fn grants_of_calls_in_flight_add_up_and_a_finished_one_takes_its_rest_back() {
        let budget = ReadBudget::default();
        let (mut r, mut w) = pipe(&budget);
        let a = budget.grant(10);
        let b = budget.grant(50);
        assert_eq!(budget.left(), 60);
        // A's reply (4 bytes) and the start of B's (6 bytes) arrive together.
        w.write_all(&[b'y'; 10]).await.unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(r.read(&mut buf).await.unwrap(), 10);
        assert_eq!(budget.left(), 50);
        // A ends: what it did not use (6 bytes) is not left for later replies.
        drop(a);
        assert_eq!(budget.left(), 50, "B keeps at least its own grant's rest");
        w.write_all(&[b'y'; 50]).await.unwrap();
        let mut read = 0;
        while read < 50 {
            read += r.read(&mut buf).await.unwrap();
        }
        drop(b);
        assert_eq!((budget.left(), budget.state().granted), (0, 0));
        assert!(budget.overrun().is_none());
    }

    #[tokio::test]
    async fn bytes_nobody_asked_for_fail_the_stream_and_an_idle_end_is_a_clean_eof() {
        let budget = ReadBudget::default();
        let (mut r, mut w) = pipe(&budget);
        // Nothing granted: one byte is enough to fail.
        w.write_all(b"+PONG\r\n").await.unwrap();
        let mut buf = [0u8; 16];
        let e = r.read(&mut buf).await.unwrap_err();
        assert!(e.to_string().contains("at most 0 bytes"), "{e}");

        let budget = ReadBudget::default();
        let (mut r, w) = pipe(&budget);
        drop(w);
        assert_eq!(
            r.read(&mut buf).await.unwrap(),
            0,
            "end of stream, not an error"
        );
        assert!(budget.overrun().is_none());
    }

    #[tokio::test]
    async fn a_read_waiting_with_nothing_left_takes_a_grant_given_meanwhile() {
        let budget = ReadBudget::default();
        let (mut r, mut w) = pipe(&budget);
        let reading = tokio::spawn(async move {
            let mut buf = [0u8; 16];
            let n = r.read(&mut buf).await?;
            Ok::<_, io::Error>(buf[..n].to_vec())
        });
        tokio::task::yield_now().await;
        // The call is granted before its request goes out; the read was already waiting.
        let _g = budget.grant(7);
        w.write_all(b"+PONG\r\n").await.unwrap();
        let got = reading.await.unwrap().unwrap();
        assert!(!got.is_empty() && b"+PONG\r\n".starts_with(&got), "{got:?}");
        assert!(budget.overrun().is_none());
    }
}
