//! Reading into a buffer on the stack. The first read of a request head, a
//! response head or a connection's first bytes goes there, and only the bytes that
//! arrived are copied to the heap: an idle connection keeps no read buffer, and the
//! allocation is the size of the message (a small head is a small, fast allocation)
//! instead of a fixed several-kilobyte block.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

/// Size of the stack buffer: a head and a small body fit in one read.
pub(crate) const STACK_READ: usize = 16 * 1024;

/// Reads once into a buffer on the stack and hands what arrived to `take`; returns
/// how many bytes (0: the peer closed).
pub(crate) fn poll_read_on_stack<R: AsyncRead + Unpin + ?Sized>(
    io: &mut R,
    cx: &mut Context<'_>,
    take: impl FnOnce(&[u8]),
) -> Poll<io::Result<usize>> {
    let mut stack = [MaybeUninit::<u8>::uninit(); STACK_READ];
    let mut buf = ReadBuf::uninit(&mut stack);
    ready!(Pin::new(io).poll_read(cx, &mut buf))?;
    take(buf.filled());
    Poll::Ready(Ok(buf.filled().len()))
}
