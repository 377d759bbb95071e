//! The allowlist proxy: an HTTP proxy (CONNECT tunnels and absolute-form
//! plain HTTP) and a SOCKS5 proxy (CONNECT only), both asking a [`Gate`]
//! before every connection and connecting only to the address it checked.
//!
//! One file per concern: `accept` takes clients within the
//! connection cap; `http` serves the HTTP proxy (hyper, behind the raw
//! [`framing`] checks), `socks` the SOCKS5 handshake; `connect` resolves,
//! checks and connects to a destination; `tunnel` relays an opened tunnel
//! (or hands it to [`inspect`]); `events` records each decision and close;
//! `ports` serves the host ports and the published ports;
//! `request_body` scans a forwarded plain-HTTP request's body.

mod accept;
mod connect;
mod events;
pub mod framing;
mod http;
pub mod inspect;
mod ports;
mod request_body;
mod socks;
mod tunnel;

use std::net::IpAddr;

pub use accept::{Admissions, Proxy, ProxyLimits, OVER_CAP};
pub use ports::{Published, SocketMaker};

/// Where a client asked to go, after the policy normalised it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A host name to resolve (normalised: lower case, punycode).
    Name(String),
    /// An IP literal the policy allows as such.
    Ip(IpAddr),
    /// `host.cordon.internal`: the host's own loopback.
    HostLoopback,
}

/// A refusal, with the words an agent (and its user) can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The rule, or the default, that refused.
    pub rule: String,
    /// Where that rule came from (`built-in`, a file, a flag).
    pub source: String,
    /// Why, in a few words (for the audit log and the exit summary).
    pub reason: String,
    /// What would allow it, or why nothing does (for the audit log and
    /// the exit summary); the message ends with it.
    pub fix: Option<String>,
    /// What was blocked and how to allow it; becomes the 403 body.
    pub message: String,
}

/// A destination the policy let through, and the rule that did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// Where to connect.
    pub dest: Destination,
    /// The allow rule.
    pub rule: String,
    /// Where it came from.
    pub source: String,
}

/// The network policy, as the proxy sees it.
pub trait Gate: Send + Sync + 'static {
    /// Decides on a destination named by the client.
    fn check_destination(&self, host: &str, port: u16) -> Result<Allowed, Denial>;
    /// Decides on a destination a client asked to connect to, waiting
    /// where the user may be asked (`cordon run --ask`); the policy's
    /// answer elsewhere.
    fn decide(
        &self,
        host: &str,
        port: u16,
    ) -> impl std::future::Future<Output = Result<Allowed, Denial>> + Send {
        std::future::ready(self.check_destination(host, port))
    }
    /// After resolving an allowed name: may the proxy connect to `addr`?
    fn check_address(&self, host: &str, addr: IpAddr, port: u16) -> Result<(), Denial>;
}
