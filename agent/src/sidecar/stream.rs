//! [`ResettableStream`]: a client socket that can be told to end with a TCP RST instead of a FIN.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Set by the request path when a `reset` fault fires; read when the connection is dropped.
#[derive(Debug, Clone, Default)]
pub struct ResetSwitch(Arc<AtomicBool>);

impl ResetSwitch {
    pub fn trip(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_tripped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A TCP stream that, when dropped with its [`ResetSwitch`] tripped, sets `SO_LINGER` to zero first so the kernel
/// aborts the connection with an RST (what a client sees as "connection reset by peer").
#[derive(Debug)]
pub struct ResettableStream {
    inner: TcpStream,
    reset: ResetSwitch,
}

impl ResettableStream {
    pub fn new(inner: TcpStream, reset: ResetSwitch) -> Self {
        ResettableStream { inner, reset }
    }
}

impl Drop for ResettableStream {
    fn drop(&mut self) {
        if self.reset.is_tripped() {
            // Linger zero makes close() send RST; failing to set it leaves an ordinary close.
            let _ = socket2::SockRef::from(&self.inner).set_linger(Some(Duration::ZERO));
        }
    }
}

impl AsyncRead for ResettableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(context, buffer)
    }
}

impl AsyncWrite for ResettableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(context, buffer)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.reset.is_tripped() {
            // A FIN now would beat the RST; let the drop abort the connection instead.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(context)
    }
}
