//! The network policy as the proxy's [`Gate`].

use std::net::IpAddr;

use super::host::{normalize, DenyReason, HostPolicy, Target, Verdict};
use super::proxy::{Denial, Destination, Gate};

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
        rule: Option<String>,
    ) -> Denial {
        let shown = target.with_port(port);
        let rule = rule.unwrap_or_else(|| match reason {
            DenyReason::Address(_) => {
                "default: special ranges and the host's own addresses are refused".into()
            }
            _ => "default: nothing is allowed".into(),
        });
        let hint = self.policy.denial_hint(target, port, reason);
        Denial {
            message: format!("cordon: blocked {shown}: {reason} (rule: {rule})\n{hint}\n"),
            rule,
        }
    }
}

impl Gate for PolicyGate {
    fn check_destination(&self, host: &str, port: u16) -> Result<Destination, Denial> {
        let target = match normalize(host) {
            Ok(t) => t,
            Err(e) => {
                return Err(Denial {
                    rule: "host names must normalise".into(),
                    message: format!("cordon: blocked {host}:{port}: {e}\n"),
                })
            }
        };
        match self.policy.decide(&target, port) {
            Verdict::Allow { .. } if target.is_host_internal() => Ok(Destination::HostLoopback),
            Verdict::Allow { .. } => Ok(match target {
                Target::Name(name) => Destination::Name(name),
                Target::Ip(ip) => Destination::Ip(ip),
            }),
            Verdict::Deny {
                reason,
                rule,
                source,
            } => {
                let rule = rule.map(|r| match source {
                    Some(s) => format!("{r} from {s}"),
                    None => r,
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
