//! The network door. [`host`] decides which destinations the proxy may
//! connect to (pure policy logic); [`proxy`] is the HTTP and SOCKS5 proxy
//! that asks it before every connection; [`serve`] runs the proxy for one
//! sandbox; [`inside`] is what the sandbox sees (ports, environment);
//! [`unix_gate`] keeps the host's UNIX sockets out of reach.

mod counted;
pub mod gate;
pub mod host;
pub mod inside;
pub mod proxy;
pub mod serve;
mod splice;
pub mod unix_gate;

pub(crate) use counted::Counted;
pub use host::{
    normalize, parse_rule, AddressClass, Cidr, DenyReason, HostError, HostPattern, HostPolicy,
    HostRule, Target, Verdict, HOST_INTERNAL,
};
