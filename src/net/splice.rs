//! Zero-copy tunnels: bytes move from one socket to the other through a
//! pipe with `splice(2)`, so the kernel passes page references instead of
//! copying each byte into the proxy and out again.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::fcntl::{fcntl, splice, FcntlArg, OFlag, SpliceFFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Most bytes one splice moves; also the pipe's size, when the kernel
/// grants it (`/proc/sys/fs/pipe-max-size`, 1 MiB by default).
const CHUNK: usize = 1 << 20;

/// One direction's pipe.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
        // A larger pipe means fewer system calls per byte; the default
        // (64 KiB) still works if the kernel refuses.
        let _ = fcntl(write.as_raw_fd(), FcntlArg::F_SETPIPE_SZ(CHUNK as i32));
        Ok(Pipe { read, write })
    }
}

/// Relays `a` ↔ `b` until both directions have ended (each end's write
/// side is shut down when the other's read side ends). Counts the bytes
/// written to `b` in `to_b` and to `a` in `to_a` as they go.
pub async fn relay(
    a: &TcpStream,
    b: &TcpStream,
    to_a: &AtomicU64,
    to_b: &AtomicU64,
) -> io::Result<()> {
    let (ab, ba) = (Pipe::new()?, Pipe::new()?);
    tokio::try_join!(one_way(a, b, ab, to_b), one_way(b, a, ba, to_a))?;
    Ok(())
}

async fn one_way(
    from: &TcpStream,
    to: &TcpStream,
    pipe: Pipe,
    count: &AtomicU64,
) -> io::Result<()> {
    let flags = SpliceFFlags::SPLICE_F_NONBLOCK | SpliceFFlags::SPLICE_F_MOVE;
    loop {
        // The pipe is empty here, so EAGAIN can only mean `from` has no data.
        let filled = from
            .async_io(Interest::READABLE, || {
                Ok(splice(
                    from.as_fd(),
                    None,
                    pipe.write.as_fd(),
                    None,
                    CHUNK,
                    flags,
                )?)
            })
            .await?;
        if filled == 0 {
            // End of stream: pass the half-close on, as a plain copy would.
            let _ = nix::sys::socket::shutdown(to.as_raw_fd(), nix::sys::socket::Shutdown::Write);
            return Ok(());
        }
        let mut left = filled;
        while left > 0 {
            let moved = to
                .async_io(Interest::WRITABLE, || {
                    Ok(splice(
                        pipe.read.as_fd(),
                        None,
                        to.as_fd(),
                        None,
                        left,
                        flags,
                    )?)
                })
                .await?;
            left -= moved;
            count.fetch_add(moved as u64, Ordering::Relaxed);
        }
    }
}
