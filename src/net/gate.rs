//! The network policy as the proxy's [`Gate`].

use std::net::IpAddr;

use super::proxy::{Allowed, Denial, Destination, Gate};
use crate::policy::host::{normalize, DenyReason, HostPolicy, Target, Verdict};

/// How a built-in rule's source reads (as `Source::Builtin` displays).
const BUILTIN: &str = "built-in";

/// Answers the proxy from a [`HostPolicy`].
pub struct PolicyGate {
    policy: HostPolicy,
    /// The host's own addresses: never reachable unless a rule names them.
    /// Read at the first resolved name, so a run that connects nowhere
    /// never pays for the interface dump.
    host_addrs: std::sync::OnceLock<Vec<IpAddr>>,
}

impl PolicyGate {
    pub fn new(policy: HostPolicy) -> PolicyGate {
        PolicyGate {
            policy,
            host_addrs: std::sync::OnceLock::new(),
        }
    }

    fn host_addrs(&self) -> &[IpAddr] {
        self.host_addrs.get_or_init(|| {
            nix::ifaddrs::getifaddrs()
                .map(|addrs| {
                    addrs
                        .filter_map(|a| a.address)
                        .filter_map(|a| {
                            a.as_sockaddr_in()
                                .map(|v4| IpAddr::V4(v4.ip()))
                                .or_else(|| a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    fn denial(
        &self,
        target: &Target,
        port: u16,
        reason: DenyReason,
        rule: Option<(String, String)>,
    ) -> Denial {
        let shown = target.with_port(port);
        let (rule, source) = rule.unwrap_or_else(|| {
            let default = match reason {
                DenyReason::Address(_) => {
                    "default: special ranges and the host's own addresses are refused"
                }
                _ => "default: nothing is allowed",
            };
            (default.into(), BUILTIN.into())
        });
        let hint = self.policy.denial_hint(target, port, reason);
        let shown_rule = if source == BUILTIN {
            rule.clone()
        } else {
            format!("{rule} from {source}")
        };
        Denial {
            message: format!("cordon: blocked {shown}: {reason} (rule: {shown_rule})\n{hint}\n"),
            rule,
            source,
            reason: reason.to_string(),
        }
    }
}

impl Gate for PolicyGate {
    fn check_destination(&self, host: &str, port: u16) -> Result<Allowed, Denial> {
        let target = match normalize(host) {
            Ok(t) => t,
            Err(e) => {
                return Err(Denial {
                    rule: "host names must normalise".into(),
                    source: BUILTIN.into(),
                    reason: e.to_string(),
                    message: format!("cordon: blocked {host}:{port}: {e}\n"),
                })
            }
        };
        match self.policy.decide(&target, port) {
            Verdict::Allow { rule, source } => {
                let dest = if target.is_host_internal() {
                    Destination::HostLoopback
                } else {
                    match target {
                        Target::Name(name) => Destination::Name(name),
                        Target::Ip(ip) => Destination::Ip(ip),
                    }
                };
                Ok(Allowed {
                    dest,
                    rule,
                    source: source.to_string(),
                })
            }
            Verdict::Deny {
                reason,
                rule,
                source,
            } => {
                let rule = rule.map(|r| {
                    let source = source.map_or_else(|| BUILTIN.to_string(), |s| s.to_string());
                    (r, source)
                });
                Err(self.denial(&target, port, reason, rule))
            }
        }
    }

    fn check_address(&self, host: &str, addr: IpAddr, port: u16) -> Result<(), Denial> {
        self.policy
            .check_address(addr, port, self.host_addrs())
            .map_err(|reason| {
                let mut d = self.denial(&Target::Ip(addr), port, reason, None);
                d.message = format!(
                    "cordon: {host} resolved to {addr}, which is not reachable: {}",
                    d.message.trim_start_matches("cordon: ")
                );
                d
            })
    }
}

/// TEST-ONLY: a gate that lets every destination through, for the tests
/// that prove `cordon probe` notices an open network door
/// (`CORDON_TEST_WEAKEN=proxy`, debug builds only; see
/// `crate::sandbox::weaken`). Not compiled into release builds.
#[cfg(debug_assertions)]
pub struct OpenGate;

#[cfg(debug_assertions)]
impl Gate for OpenGate {
    fn check_destination(&self, host: &str, _port: u16) -> Result<Allowed, Denial> {
        let dest = match normalize(host) {
            Ok(t) if t.is_host_internal() => Destination::HostLoopback,
            Ok(Target::Ip(ip)) => Destination::Ip(ip),
            Ok(Target::Name(name)) => Destination::Name(name),
            Err(_) => Destination::Name(host.to_string()),
        };
        Ok(Allowed {
            dest,
            rule: "weakened for a test".into(),
            source: BUILTIN.into(),
        })
    }

    fn check_address(&self, _host: &str, _addr: IpAddr, _port: u16) -> Result<(), Denial> {
        Ok(())
    }
}
