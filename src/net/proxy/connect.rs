//! Connecting to an allowed destination: resolving a name, asking the
//! gate about each address it resolves to, and connecting only to one the
//! gate allowed.

use std::net::SocketAddr;

use tokio::net::TcpStream;

use super::{Denial, Destination, Gate, Proxy};
use crate::audit::Proto;

/// Why the proxy did not connect to an allowed destination.
pub(super) enum ConnectError {
    /// The name resolved only to addresses the policy refuses.
    Denied(Denial, SocketAddr),
    /// The name carries a placeholder (refused and recorded before any
    /// lookup); the message for the client.
    Exfiltration(String),
    /// The upstream could not be reached (message for the client).
    Upstream(String),
}

impl<G: Gate> Proxy<G> {
    /// Resolves (if needed), checks and connects to one destination.
    pub(super) async fn connect(
        &self,
        dest: &Destination,
        host: &str,
        port: u16,
        proto: Proto,
    ) -> Result<(TcpStream, SocketAddr), ConnectError> {
        if let (Destination::Name(name), Some(inspector)) = (dest, &self.inspector) {
            if let Some(message) = inspector.refuse_named(&self.audit, name, port, proto) {
                return Err(ConnectError::Exfiltration(message));
            }
        }
        let candidates: Vec<SocketAddr> = match dest {
            Destination::Ip(ip) => vec![SocketAddr::new(*ip, port)],
            Destination::HostLoopback => vec![SocketAddr::from(([127, 0, 0, 1], port))],
            Destination::Name(name) => match tokio::net::lookup_host((name.as_str(), port)).await {
                Ok(addrs) => addrs.collect(),
                Err(e) => {
                    return Err(ConnectError::Upstream(upstream_message(
                        host,
                        port,
                        &format!("cannot resolve: {e}"),
                    )))
                }
            },
        };
        let mut denied = None;
        let mut failed = None;
        for addr in candidates {
            if let Destination::Name(_) = dest {
                if let Err(denial) = self.gate.check_address(host, addr.ip(), port) {
                    denied.get_or_insert((denial, addr));
                    continue;
                }
            }
            match tokio::time::timeout(self.limits.connect_timeout, TcpStream::connect(addr)).await
            {
                Ok(Ok(stream)) => return Ok((stream, addr)),
                Ok(Err(e)) => failed = Some(upstream_message(host, port, &e.to_string())),
                Err(_) => failed = Some(upstream_message(host, port, "connect timed out")),
            }
        }
        // An address that was tried and failed says more than one the
        // policy refused; with nothing tried, the refusal is the answer.
        match (failed, denied) {
            (Some(message), _) => Err(ConnectError::Upstream(message)),
            (None, Some((denial, addr))) => Err(ConnectError::Denied(denial, addr)),
            (None, None) => Err(ConnectError::Upstream(upstream_message(
                host,
                port,
                "no address",
            ))),
        }
    }
}

pub(super) fn upstream_message(host: &str, port: u16, why: &str) -> String {
    format!("cordon: cannot reach {host}:{port}: {why}\n")
}
