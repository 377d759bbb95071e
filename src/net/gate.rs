//! The network policy as the proxy's [`Gate`].

use std::net::IpAddr;

use super::proxy::{Allowed, Denial, Destination, Gate};
use crate::policy::host::{normalize, refused_range, DenyReason, HostPolicy, Target, Verdict};

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

    /// The host rules it answers from.
    pub fn policy(&self) -> &HostPolicy {
        &self.policy
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

    /// The refusal of `target` on `port` (as the client named it:
    /// `shown`) for `reason`, by `rule` (and its source) or, for `None`,
    /// by the default. `why` is the reason as the user reads it; the 403
    /// body and the audit event (and so the exit summary) say the same
    /// reason and fix.
    fn denial(
        &self,
        shown: &str,
        target: &Target,
        port: u16,
        reason: DenyReason,
        why: String,
        rule: Option<(String, String)>,
    ) -> Denial {
        let fix = self.policy.denial_fix(target, port, reason);
        let (message, reason, rule, source) = match rule {
            Some((rule, source)) => {
                let why = format!("{why} (rule: {rule} from {source})");
                (
                    format!("cordon: blocked {shown}: {why}\n{fix}\n"),
                    why,
                    rule,
                    source,
                )
            }
            None => {
                let default = match reason {
                    DenyReason::Address(_) => {
                        "default: special ranges and the host's own addresses are refused"
                    }
                    _ => "default: nothing is allowed",
                };
                let message = format!("cordon: blocked {shown}: {why} (rule: {default})\n{fix}\n");
                (message, why, default.to_string(), BUILTIN.to_string())
            }
        };
        Denial {
            message,
            rule,
            source,
            reason,
            fix: Some(fix),
        }
    }

    /// For `cordon learn`, where no rule vetted it: may the proxy connect
    /// to the IP literal `addr` on `port`? The address guard's answer, as
    /// for an address a name resolved to, worded for a literal.
    pub fn check_literal(&self, addr: IpAddr, port: u16) -> Result<(), Denial> {
        self.address_verdict(None, addr, port)
    }

    /// The address guard on `addr`, which `host` resolved to (or which
    /// the client named itself: `None`).
    fn address_verdict(&self, host: Option<&str>, addr: IpAddr, port: u16) -> Result<(), Denial> {
        let reason = match self.policy.check_address(addr, port, self.host_addrs()) {
            Ok(()) => return Ok(()),
            Err(reason) => reason,
        };
        let ip = Target::Ip(addr);
        let range = || refused_range(addr).map_or_else(String::new, |r| format!(" ({r})"));
        let why = match (reason, host) {
            (DenyReason::Address(class), Some(host)) => format!(
                "{host} resolved to {addr}, {class}{}: allowing the name does not help",
                range()
            ),
            (DenyReason::Address(class), None) => format!("{addr} is {class}{}", range()),
            (other, Some(host)) => format!("{host} resolved to {addr}: {other}"),
            (other, None) => other.to_string(),
        };
        let rule = match reason {
            DenyReason::DeniedByRule => self
                .policy
                .deny_rule_for(&ip, port)
                .map(|r| (r.value.to_string(), r.source.to_string())),
            _ => None,
        };
        let shown = match host {
            Some(host) => Target::Name(host.to_string()).with_port(port),
            None => ip.with_port(port),
        };
        Err(self.denial(&shown, &ip, port, reason, why, rule))
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
                    fix: Some(NOT_A_NAME.into()),
                    message: format!("cordon: blocked {host}:{port}: {e}\n{NOT_A_NAME}\n"),
                })
            }
        };
        match self.policy.decide(&target, port) {
            Verdict::Allow { rule, source } => Ok(Allowed {
                dest: destination(target),
                rule,
                source: source.to_string(),
            }),
            Verdict::Deny {
                reason,
                rule,
                source,
            } => {
                let rule = rule.map(|r| {
                    let source = source.map_or_else(|| BUILTIN.to_string(), |s| s.to_string());
                    (r, source)
                });
                let shown = target.with_port(port);
                Err(self.denial(&shown, &target, port, reason, reason.to_string(), rule))
            }
        }
    }

    fn check_address(&self, host: &str, addr: IpAddr, port: u16) -> Result<(), Denial> {
        self.address_verdict(Some(host), addr, port)
    }
}

/// Where the proxy connects for `target`.
pub fn destination(target: Target) -> Destination {
    if target.is_host_internal() {
        return Destination::HostLoopback;
    }
    match target {
        Target::Name(name) => Destination::Name(name),
        Target::Ip(ip) => Destination::Ip(ip),
    }
}

/// Why a host that does not normalise is refused, whatever the rules.
const NOT_A_NAME: &str =
    "nothing allows it: cordon connects only to valid host names and IP addresses";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Door, Summary, Why};
    use crate::policy::host::parse_rule;
    use crate::policy::{Source, Sourced};

    /// A gate allowing and denying these rules, each from its flag.
    fn gate(allow: &[&str], deny: &[&str]) -> PolicyGate {
        let rules = |rules: &[&str], flag: &str| {
            rules
                .iter()
                .map(|r| Sourced::new(parse_rule(r).unwrap(), Source::Flag(flag.into())))
                .collect()
        };
        PolicyGate::new(HostPolicy {
            allow: rules(allow, "--allow-domain"),
            deny: rules(deny, "--deny-domain"),
            ..HostPolicy::default()
        })
    }

    /// The summary's line of one refusal (its event's reason and fix).
    fn summary_line(subject: &str, d: &Denial) -> String {
        let mut s = Summary::default();
        let why = Why {
            reason: Some(d.reason.clone()),
            fix: d.fix.clone(),
        };
        s.count(Door::Network, subject, why);
        let text = s.text(None).unwrap();
        let line = text.lines().nth(1).unwrap().to_string();
        // The 403 body says the same reason and fix.
        assert!(d.message.contains(&d.reason), "{}", d.message);
        assert!(
            d.message.contains(d.fix.as_deref().unwrap()),
            "{}",
            d.message
        );
        line
    }

    #[test]
    fn every_refusal_of_the_host_rules_says_why_and_what_allows_it() {
        let g = gate(&["allowed.example:8443", "ok.example"], &["evil.example"]);
        let refused = |host: &str, port: u16| g.check_destination(host, port).unwrap_err();
        let d = refused("unlisted.example", 443);
        assert_eq!(
            summary_line("unlisted.example:443", &d),
            r#"  unlisted.example:443: no allow rule names this host; allow with --allow-domain unlisted.example (or [network] allow = ["unlisted.example"])"#
        );
        // A host a preset allows: the preset too.
        let d = refused("registry.npmjs.org", 443);
        assert!(
            summary_line("registry.npmjs.org:443", &d).ends_with("; or use the preset that allows it with the other hosts its tools need: --preset npm (or [network] presets = [\"npm\"]) (`cordon presets` lists them)"),
            "{d:?}"
        );
        let d = refused("evil.example", 443);
        assert_eq!(
            summary_line("evil.example:443", &d),
            "  evil.example:443: a deny rule matches (rule: evil.example from flag --deny-domain); deny beats allow: nothing allows it while that deny rule is in force (`cordon explain` lists the rules and where each comes from)"
        );
        let d = refused("allowed.example", 443);
        assert_eq!(
            summary_line("allowed.example:443", &d),
            r#"  allowed.example:443: the host is allowed, but not on this port (rule: allowed.example:8443 from flag --allow-domain); allow with --allow-domain allowed.example (or [network] allow = ["allowed.example"])"#
        );
        let d = refused("ok.example", 8080);
        assert_eq!(
            summary_line("ok.example:8080", &d),
            r#"  ok.example:8080: the host is allowed, but not on this port (rule: ok.example from flag --allow-domain); allow with --allow-domain ok.example:8080 (or [network] allow = ["ok.example:8080"]); or let rules without a port allow it too: --ports 80,443,8080 (or [network] ports = [80, 443, 8080])"#
        );
        let d = refused("203.0.113.9", 80);
        assert_eq!(
            summary_line("203.0.113.9:80", &d),
            r#"  203.0.113.9:80: IP addresses are refused unless a rule names the address or its range; allow with --allow-domain 203.0.113.9 (or [network] allow = ["203.0.113.9"])"#
        );
        let d = refused("host.cordon.internal", 5432);
        assert_eq!(
            summary_line("host.cordon.internal:5432", &d),
            r#"  host.cordon.internal:5432: no rule allows host.cordon.internal on this port; allow with --allow-domain host.cordon.internal:5432 (or [network] allow = ["host.cordon.internal:5432"])"#
        );
        let d = refused("a..b", 443);
        assert_eq!(
            summary_line("a..b:443", &d),
            r#"  a..b:443: invalid host "a..b": empty label (`..`); nothing allows it: cordon connects only to valid host names and IP addresses"#
        );
    }

    #[test]
    fn a_name_resolving_to_a_refused_range_says_the_range_and_what_helps() {
        let g = gate(&["ok.example", "db.example:5432"], &["10.9.0.0/16"]);
        // As if the host's one address were 8.8.4.4.
        g.host_addrs.set(vec!["8.8.4.4".parse().unwrap()]).unwrap();
        let d = g
            .check_address("ok.example", "10.0.0.5".parse().unwrap(), 443)
            .unwrap_err();
        assert_eq!(
            summary_line("ok.example:443", &d),
            r#"  ok.example:443: ok.example resolved to 10.0.0.5, a private address (10.0.0.0/8): allowing the name does not help; only a rule naming the address or a range holding it allows it: --allow-domain 10.0.0.5 (or [network] allow = ["10.0.0.5"])"#
        );
        assert!(
            d.message
                .starts_with("cordon: blocked ok.example:443: ok.example resolved to"),
            "{}",
            d.message
        );
        let d = g
            .check_address("ok.example", "127.0.0.1".parse().unwrap(), 443)
            .unwrap_err();
        assert_eq!(
            summary_line("ok.example:443", &d),
            r#"  ok.example:443: ok.example resolved to 127.0.0.1, a loopback address (127.0.0.0/8): allowing the name does not help; to reach a service on the host's own loopback, name host.cordon.internal in place of localhost: allow with --allow-domain host.cordon.internal:443 (or [network] allow = ["host.cordon.internal:443"])"#
        );
        let d = g
            .check_address("ok.example", "8.8.4.4".parse().unwrap(), 443)
            .unwrap_err();
        assert_eq!(
            summary_line("ok.example:443", &d),
            r#"  ok.example:443: ok.example resolved to 8.8.4.4, one of the host's own addresses: allowing the name does not help; only a rule naming the address or a range holding it allows it: --allow-domain 8.8.4.4 (or [network] allow = ["8.8.4.4"])"#
        );
        let d = g
            .check_address("db.example", "10.9.1.1".parse().unwrap(), 5432)
            .unwrap_err();
        assert_eq!(
            summary_line("db.example:5432", &d),
            "  db.example:5432: db.example resolved to 10.9.1.1: a deny rule matches (rule: 10.9.0.0/16 from flag --deny-domain); deny beats allow: nothing allows it while that deny rule is in force (`cordon explain` lists the rules and where each comes from)"
        );
    }
}
