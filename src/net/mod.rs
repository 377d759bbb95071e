//! The network door. [`proxy`] is the HTTP and SOCKS5 proxy that asks the
//! host rules ([`crate::policy::host`]) before every connection; [`serve`]
//! runs the proxy for one sandbox; [`inside`] is what the sandbox sees
//! (ports, environment); [`gate`] decides each connection the proxy makes.

mod counted;
pub mod gate;
pub mod inside;
pub mod proxy;
pub mod serve;
mod splice;

pub(crate) use counted::Counted;
