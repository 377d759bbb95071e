//! The sandbox's budget of buffered bytes: what inspection may make the
//! supervisor hold, for bodies and for each connection's buffers.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::policy::Sourced;

/// Bodies up to this size are swapped whole (and their length fixed);
/// longer request bodies are only scanned, longer response bodies are
/// masked as a stream.
pub const BODY_CAP: u64 = 1 << 20;
/// The most the supervisor holds of inspected bodies at once for one
/// sandbox, summed over every connection: a quarter of `max_memory` when
/// that is lower (but never less than one whole body, [`BODY_CAP`]). The
/// supervisor lives outside the sandbox's cgroup, so without a total the
/// sandbox could make it hold a body per connection.
pub const BUFFER_BUDGET: u64 = 64 << 20;
/// What one inspected connection may make the supervisor hold at most,
/// charged to the buffer budget when it is accepted: the HTTP/2 windows
/// and send buffers and the HTTP/1.1 buffers below are sized to fit in
/// it (with the TLS records on both sides), so a client that never reads
/// costs this and no more.
pub const CONNECTION_RESERVE: u64 = 256 << 10;
/// HTTP/2 flow-control windows cordon grants the upstream (per stream and
/// per connection): the most of a response it can push before the client
/// reads. hyper's defaults (2 MiB / 5 MiB) made one idle client cost MBs.
pub(super) const H2_STREAM_WINDOW: u32 = 64 << 10;
pub(super) const H2_CONNECTION_WINDOW: u32 = 128 << 10;
/// What each HTTP/2 stream may queue towards a peer that does not read.
pub(super) const H2_SEND_BUFFER: usize = 8 << 10;
/// Streams at once on one inspected HTTP/2 connection (more wait in the
/// client), so the send buffers stay within [`CONNECTION_RESERVE`].
pub(super) const H2_STREAMS: u32 = 16;
/// HTTP/1.1 read and write buffers: a whole request head (the head guard
/// allows 64 KiB) fits, hyper's ~400 KiB default would not fit the reserve.
pub(super) const H1_BUFFER: usize = 72 << 10;

/// The sandbox's budget of buffered body bytes ([`BUFFER_BUDGET`]),
/// shared by every connection; a reservation is released when its permit
/// is dropped, whatever path the request takes.
pub(super) struct Buffers {
    pub(super) permits: Arc<Semaphore>,
    pub(super) bytes: u64,
    /// How the size was chosen, for the refusal.
    pub(super) why: String,
}

impl Buffers {
    pub(super) fn new(max_memory: Option<&Sourced<u64>>) -> Buffers {
        let (bytes, why) = match max_memory {
            Some(m) if m.value / 4 < BUFFER_BUDGET => (
                (m.value / 4).max(BODY_CAP),
                format!("a quarter of max_memory ({})", m.source),
            ),
            _ => (BUFFER_BUDGET, "built-in".to_string()),
        };
        // Reservations are at most BODY_CAP, far below the semaphore's maximum.
        let permits = usize::try_from(bytes).unwrap_or(Semaphore::MAX_PERMITS);
        Buffers {
            permits: Arc::new(Semaphore::new(permits.min(Semaphore::MAX_PERMITS))),
            bytes,
            why,
        }
    }

    /// Reserves `n` bytes (at most [`BODY_CAP`]); `None` when the budget
    /// has less left.
    pub(super) fn reserve(&self, n: u64) -> Option<OwnedSemaphorePermit> {
        let n = u32::try_from(n).ok()?;
        self.permits.clone().try_acquire_many_owned(n).ok()
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
