//! What the proxy records in the audit log: each decision (denied,
//! allowed but unreachable, opened) and, for each upstream connection
//! opened, its close with the bytes it carried.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{Allowed, Denial, Gate, Proxy};
use crate::audit::{self, Auditor, Door, Event, Proto, Verdict};

/// One upstream connection's tally, kept outside the future that serves
/// it so that it survives the future being cancelled at shutdown.
pub(super) struct Conn {
    // Shared so TLS inspection, which needs owned streams, can count too.
    pub(super) up: Arc<AtomicU64>,
    pub(super) down: Arc<AtomicU64>,
    /// Set once the upstream is connected: the close event to record.
    open: Mutex<Option<(Event, Instant)>>,
}

impl Conn {
    pub(super) fn new() -> Conn {
        Conn {
            up: Arc::new(AtomicU64::new(0)),
            down: Arc::new(AtomicU64::new(0)),
            open: Mutex::new(None),
        }
    }

    /// Arms `close`, recorded (with the bytes and duration) when the
    /// connection closes.
    pub(super) fn arm(&self, close: Event) {
        if let Ok(mut open) = self.open.lock() {
            *open = Some((close, Instant::now()));
        }
    }

    /// Records the close event of the connection, if it was opened (once).
    pub(super) fn closed(&self, audit: &Auditor) {
        let Some((mut event, since)) = self.open.lock().ok().and_then(|mut o| o.take()) else {
            return;
        };
        event.time = crate::audit::rfc3339_now();
        event.bytes_up = Some(self.up.load(Ordering::Relaxed));
        event.bytes_down = Some(self.down.load(Ordering::Relaxed));
        event.duration_ms = Some(since.elapsed().as_millis() as u64);
        audit.record(event);
    }
}

/// Records its connection's close event when dropped: held by what lives
/// exactly as long as the connection (the task serving a forwarded
/// request's upstream connection).
pub(super) struct CloseOnDrop {
    pub(super) conn: Arc<Conn>,
    pub(super) audit: Auditor,
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.conn.closed(&self.audit);
    }
}

/// `host:port`, with brackets around an IPv6 host.
pub(super) fn subject(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl<G: Gate> Proxy<G> {
    /// Records a refusal.
    pub(super) fn denied(
        &self,
        proto: Proto,
        host: &str,
        port: u16,
        addr: Option<SocketAddr>,
        d: &Denial,
    ) {
        let mut event = decision_event(proto, host, port, addr, Verdict::Deny, &d.rule, &d.source);
        event.reason = Some(d.reason.clone());
        event.fix.clone_from(&d.fix);
        self.audit.record(event);
    }

    /// Records an allowed connection that could not be made.
    pub(super) fn unreachable(
        &self,
        proto: Proto,
        host: &str,
        port: u16,
        allowed: &Allowed,
        why: &str,
    ) {
        let mut event = allowed_event(proto, host, port, None, allowed);
        event.reason = Some(why.trim().to_string());
        self.audit.record(event);
    }

    /// Records an allowed, connected destination, and arms its close event.
    pub(super) fn opened(
        &self,
        conn: &Conn,
        proto: Proto,
        host: &str,
        port: u16,
        addr: SocketAddr,
        allowed: &Allowed,
    ) {
        self.decided(proto, host, port, addr, allowed);
        self.arm_close(conn, proto, host, port, addr, allowed);
    }

    /// Arms the close event of a connection to an allowed destination,
    /// whose decisions are recorded apart ([`Proxy::decided`]).
    pub(super) fn arm_close(
        &self,
        conn: &Conn,
        proto: Proto,
        host: &str,
        port: u16,
        addr: SocketAddr,
        allowed: &Allowed,
    ) {
        let mut close = allowed_event(proto, host, port, Some(addr), allowed);
        close.event = audit::Kind::Close;
        conn.arm(close);
    }

    /// Records a decision to let a request or connection to an allowed
    /// destination through, reached at `addr`.
    pub(super) fn decided(
        &self,
        proto: Proto,
        host: &str,
        port: u16,
        addr: SocketAddr,
        allowed: &Allowed,
    ) {
        self.audit
            .record(allowed_event(proto, host, port, Some(addr), allowed));
    }
}

/// The decision event for an allowed destination, reached at `addr` (or
/// not reached).
fn allowed_event(
    proto: Proto,
    host: &str,
    port: u16,
    addr: Option<SocketAddr>,
    allowed: &Allowed,
) -> Event {
    decision_event(
        proto,
        host,
        port,
        addr,
        Verdict::Allow,
        &allowed.rule,
        &allowed.source,
    )
}

/// A network decision's event: `verdict` on `host:port` (reached at
/// `addr`, or not), by `rule` from `source`.
fn decision_event(
    proto: Proto,
    host: &str,
    port: u16,
    addr: Option<SocketAddr>,
    verdict: Verdict,
    rule: &str,
    source: &str,
) -> Event {
    let mut event = Event::new(
        Door::Network,
        audit::Kind::Decision,
        verdict,
        subject(host, port),
    );
    event.address = addr.map(|a| a.to_string());
    event.rule = Some(rule.to_string());
    event.source = Some(source.to_string());
    event.proto = Some(proto);
    event
}
