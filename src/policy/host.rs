//! Host policy: which destinations the proxy may connect to. Pure logic, no I/O.
//!
//! The proxy asks three questions, in order:
//!
//! 1. [`normalize`]: what host did the client name? Lower case, one trailing
//!    dot removed, IDNA (UTS-46) to punycode, LDH only; IP literals in
//!    dotted-decimal IPv4 or IPv6 (bracketed or not). Anything else, the
//!    numeric forms a resolver might read as an address (`0x7f.1`,
//!    `2130706433`, `127.1`, `0177.0.0.1`) included, is refused.
//! 2. [`HostPolicy::decide`]: may it go there, on that port? Deny rules beat
//!    allow rules; nothing is allowed by default; an IP literal needs an IP or
//!    CIDR allow rule; a rule without a port allows the policy's `ports`.
//! 3. [`HostPolicy::check_address`]: after resolving an allowed name, may it
//!    connect to this address? Loopback, private, link-local, metadata and
//!    other special ranges, their IPv4-in-IPv6 forms, and the host's own
//!    addresses are refused unless an allow rule names the address or a CIDR
//!    containing it.
//!
//! Rule patterns ([`parse_rule`]), as written in `--allow-domain`,
//! `--deny-domain` and `[network] allow`/`deny`:
//!
//! | pattern | matches |
//! | --- | --- |
//! | `api.github.com` | that host |
//! | `*.example.com` | strict subdomains of `example.com`, not `example.com` itself |
//! | `203.0.113.7`, `[2001:db8::1]`, `2001:db8::1` | that IP literal (and, after resolution, that address) |
//! | `10.0.0.0/8`, `fd00::/8` | addresses in that range |
//! | `host.cordon.internal:5432` | the host's own `127.0.0.1:5432` (the port is required) |
//!
//! Each may end in `:PORT` (`example.com:8443`, `[::1]:8080`,
//! `10.0.0.0/8:5432`, `[fd00::/8]:443`); a rule with a port allows exactly
//! that port, whatever `ports` says. An IPv6 pattern with a port needs brackets.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::{Serialize, Serializer};

use crate::policy::{keys, Source, Sourced};

/// The special host that stands for the host's own loopback (`127.0.0.1`).
pub const HOST_INTERNAL: &str = "host.cordon.internal";

/// The domain reserved for cordon's special names.
const RESERVED_DOMAIN: &str = "cordon.internal";

/// Ports a rule without `:PORT` allows, unless the policy says otherwise.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// Longest host (or pattern) accepted as input, before any processing.
const MAX_INPUT: usize = 1024;

/// Longest name, in bytes, without the trailing dot.
const MAX_NAME: usize = 253;

/// Longest label, in bytes.
const MAX_LABEL: usize = 63;

/// A host name or pattern that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// A host named by a client (or inside a pattern) cannot be normalised.
    #[error("invalid host {host:?}: {reason}")]
    Host {
        /// The host as given.
        host: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A rule pattern is malformed.
    #[error("invalid host pattern {pattern:?}: {reason}")]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The first few characters of an over-long input, for its error message.
fn head(s: &str) -> &str {
    let end = s.char_indices().nth(40).map_or(s.len(), |(i, _)| i);
    &s[..end]
}

fn host_err(host: &str, reason: impl Into<String>) -> HostError {
    HostError::Host {
        host: host.to_string(),
        reason: reason.into(),
    }
}

fn pattern_err(pattern: &str, reason: impl Into<String>) -> HostError {
    HostError::Pattern {
        pattern: pattern.to_string(),
        reason: reason.into(),
    }
}

// ---------------------------------------------------------------------------
// Targets.

/// A destination host, normalised by [`normalize`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// A DNS name: lower case, ASCII (punycode), no trailing dot.
    Name(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl Target {
    /// Whether this is [`HOST_INTERNAL`], the host's own loopback.
    pub fn is_host_internal(&self) -> bool {
        matches!(self, Target::Name(n) if n == HOST_INTERNAL)
    }

    /// `host:port` as a client would write it (IPv6 in brackets).
    pub fn with_port(&self, port: u16) -> String {
        match self {
            Target::Ip(IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
            other => format!("{other}:{port}"),
        }
    }
}

impl fmt::Display for Target {
    /// The name, or the address (IPv6 without brackets).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Name(n) => f.write_str(n),
            Target::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Normalises a host as a client named it (without a port).
///
/// IPv6 literals may be bracketed; zone ids (`%eth0`) are refused. IPv4
/// literals must be four decimal parts without leading zeros; other
/// numeric forms, and any name whose last label is numeric, are refused
/// rather than treated as names. Names are lower-cased, lose one trailing
/// dot, go through IDNA (UTS-46, non-transitional, STD3 rules) to punycode,
/// and must then be LDH labels of 1 to 63 bytes, 253 bytes in all.
pub fn normalize(host: &str) -> Result<Target, HostError> {
    if host.is_empty() {
        return Err(host_err(host, "empty host"));
    }
    if host.len() > MAX_INPUT {
        return Err(host_err(head(host), "too long"));
    }
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| host_err(host, "unbalanced `[`"))?;
        return inner
            .parse::<Ipv6Addr>()
            .map(|ip| Target::Ip(IpAddr::V6(ip)))
            .map_err(|_| host_err(host, "not an IPv6 address (brackets are for IPv6 only)"));
    }
    if host.contains(':') {
        return host
            .parse::<Ipv6Addr>()
            .map(|ip| Target::Ip(IpAddr::V6(ip)))
            .map_err(|_| host_err(host, "not an IPv6 address, and `:` cannot appear in a name"));
    }
    normalize_name(host).map_err(|reason| host_err(host, reason))
}

/// The name path of [`normalize`]; the error is the reason alone.
fn normalize_name(host: &str) -> Result<Target, String> {
    let ascii = idna::uts46::Uts46::new()
        .to_ascii(
            host.as_bytes(),
            idna::uts46::AsciiDenyList::STD3,
            idna::uts46::Hyphens::CheckFirstLast,
            idna::uts46::DnsLength::Ignore,
        )
        .map_err(|_| {
            "not a valid host name (IDNA/UTS-46 refused it: only letters, digits and `-` in labels of 1 to 63 characters)".to_string()
        })?;
    let name = ascii.strip_suffix('.').unwrap_or(&ascii);
    if name.is_empty() {
        return Err("empty host".to_string());
    }
    let labels: Vec<&str> = name.split('.').collect();
    if let Some(last) = labels.last().filter(|l| looks_numeric(l)) {
        return match parse_ipv4_strict(name) {
            Some(ip) => Ok(Target::Ip(IpAddr::V4(ip))),
            None => Err(format!(
                "numeric form {last:?} is ambiguous (cordon accepts IPv4 only as four decimal parts without leading zeros, e.g. 127.0.0.1)"
            )),
        };
    }
    if name.len() > MAX_NAME {
        return Err(format!("longer than {MAX_NAME} characters"));
    }
    for label in &labels {
        check_label(label)?;
    }
    Ok(Target::Name(name.to_string()))
}

/// Checks one ASCII label: 1 to 63 bytes of `a-z`, `0-9`, `-`, no `-` at either end.
fn check_label(label: &str) -> Result<(), String> {
    if label.is_empty() {
        return Err("empty label (`..`)".to_string());
    }
    if label.len() > MAX_LABEL {
        return Err(format!("label longer than {MAX_LABEL} characters"));
    }
    if let Some(c) = label
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!("{c:?} is not allowed in a host name"));
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Err(format!("label {label:?} starts or ends with `-`"));
    }
    Ok(())
}

/// Whether a label reads as a number to a lenient IPv4 parser (WHATWG's
/// "ends in a number"): all decimal digits, or `0x` and hex digits.
fn looks_numeric(label: &str) -> bool {
    let hex = label
        .strip_prefix("0x")
        .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
    hex || (!label.is_empty() && label.chars().all(|c| c.is_ascii_digit()))
}

/// Four decimal parts, each 0 to 255, no leading zeros (no octal, no hex,
/// no shortened forms).
fn parse_ipv4_strict(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for octet in &mut octets {
        let part = parts.next()?;
        let canonical = !part.is_empty()
            && part.len() <= 3
            && part.chars().all(|c| c.is_ascii_digit())
            && (part == "0" || !part.starts_with('0'));
        if !canonical {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(Ipv4Addr::from(octets))
}

// ---------------------------------------------------------------------------
// CIDRs.

/// An address range: a network address and a prefix length (no host bits set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr(IpNet);

impl Cidr {
    /// The range `addr/prefix`; refuses a prefix longer than the address
    /// and host bits set (naming the network meant).
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Cidr, String> {
        let net = IpNet::new(addr, prefix).map_err(|_| {
            let max = if addr.is_ipv4() { 32 } else { 128 };
            format!("prefix /{prefix} is longer than {max} bits")
        })?;
        if net.trunc() != net {
            return Err(format!("host bits are set; did you mean {}?", net.trunc()));
        }
        Ok(Cidr(net))
    }

    /// The network address.
    pub fn addr(&self) -> IpAddr {
        self.0.addr()
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.0.prefix_len()
    }

    /// Whether `ip` is in the range (same family only: an IPv4 range does
    /// not contain IPv4-mapped IPv6 addresses).
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.contains(&ip)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

// ---------------------------------------------------------------------------
// Rules.

/// What a rule matches, without its port.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// Exactly this normalised name.
    Exact(String),
    /// Strict subdomains of this normalised name (`*.example.com`), not the name itself.
    Subdomains(String),
    /// This IP literal (and this address after resolution).
    Ip(IpAddr),
    /// Any address in this range.
    Cidr(Cidr),
    /// [`HOST_INTERNAL`]: the host's own `127.0.0.1`; the rule's port is required.
    HostInternal,
}

/// One allow or deny rule: a host pattern and an optional port.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostRule {
    pattern: HostPattern,
    port: Option<u16>,
}

impl HostRule {
    /// `host.cordon.internal:PORT`: the host's own 127.0.0.1 at `port`.
    pub fn host_internal(port: u16) -> HostRule {
        HostRule {
            pattern: HostPattern::HostInternal,
            port: Some(port),
        }
    }

    /// What the rule matches.
    pub fn pattern(&self) -> &HostPattern {
        &self.pattern
    }

    /// The port the rule names; `None`: the policy's `ports` (for allow
    /// rules) or every port (for deny rules). Always set for
    /// [`HostPattern::HostInternal`].
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// Whether the host part matches `target` (ports aside). IP and CIDR
    /// patterns match only IP targets, name patterns only names.
    pub fn matches_host(&self, target: &Target) -> bool {
        match (&self.pattern, target) {
            (HostPattern::Exact(n), Target::Name(t)) => n == t,
            (HostPattern::Subdomains(suffix), Target::Name(t)) => is_subdomain(t, suffix),
            (HostPattern::HostInternal, t) => t.is_host_internal(),
            (HostPattern::Ip(_) | HostPattern::Cidr(_), Target::Ip(ip)) => self.covers_ip(*ip),
            _ => false,
        }
    }

    /// Whether this is an IP or CIDR rule that covers `ip` exactly (same family).
    pub fn covers_ip(&self, ip: IpAddr) -> bool {
        match &self.pattern {
            HostPattern::Ip(a) => *a == ip,
            HostPattern::Cidr(c) => c.contains(ip),
            _ => false,
        }
    }

    /// Whether an allow rule admits `port`: its own port if it names one,
    /// otherwise one of `ports`.
    fn allows_port(&self, port: u16, ports: &[u16]) -> bool {
        match self.port {
            Some(p) => p == port,
            None => ports.contains(&port),
        }
    }

    /// Whether a deny rule covers `port`: its own port, or every port.
    fn denies_port(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }
}

impl fmt::Display for HostRule {
    /// The rule in canonical form, as it could be written again.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = match &self.pattern {
            HostPattern::Ip(ip) => ip.is_ipv6(),
            HostPattern::Cidr(c) => c.addr().is_ipv6(),
            _ => false,
        };
        let host = match &self.pattern {
            HostPattern::Exact(n) => n.clone(),
            HostPattern::Subdomains(n) => format!("*.{n}"),
            HostPattern::Ip(ip) => ip.to_string(),
            HostPattern::Cidr(c) => c.to_string(),
            HostPattern::HostInternal => HOST_INTERNAL.to_string(),
        };
        match self.port {
            Some(port) if v6 => write!(f, "[{host}]:{port}"),
            Some(port) => write!(f, "{host}:{port}"),
            None => f.write_str(&host),
        }
    }
}

impl Serialize for HostRule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Whether `name` is a strict subdomain of `suffix`.
fn is_subdomain(name: &str, suffix: &str) -> bool {
    name.len() > suffix.len() + 1
        && name.ends_with(suffix)
        && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
}

/// Whether `name` is [`RESERVED_DOMAIN`] or under it.
fn is_reserved(name: &str) -> bool {
    name == RESERVED_DOMAIN || is_subdomain(name, RESERVED_DOMAIN)
}

/// Parses an allow or deny pattern (see the module docs for the forms).
pub fn parse_rule(raw: &str) -> Result<HostRule, HostError> {
    let err = |reason: &str| pattern_err(raw, reason);
    if raw.trim().is_empty() {
        return Err(err("empty pattern"));
    }
    if raw.len() > MAX_INPUT {
        return Err(pattern_err(head(raw), "too long"));
    }
    if raw.chars().any(char::is_whitespace) {
        return Err(err("must not contain spaces"));
    }
    let (host, port, bracketed) = split_port(raw)?;
    let port = port.map(|p| parse_port(raw, p)).transpose()?;

    let pattern = if let Some((addr, prefix)) = host.split_once('/') {
        let ip = parse_ip(addr).ok_or_else(|| {
            err("a range must be an IP address and a prefix length, e.g. 10.0.0.0/8 or fd00::/8")
        })?;
        if bracketed && ip.is_ipv4() {
            return Err(err("brackets are for IPv6 only"));
        }
        let digits_ok =
            !prefix.is_empty() && prefix.len() <= 3 && prefix.chars().all(|c| c.is_ascii_digit());
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|_| digits_ok)
            .ok_or_else(|| err("the prefix length must be a number, e.g. /8"))?;
        if prefix == 0 {
            return Err(err(
                "a /0 range would allow every address; name the ranges you need",
            ));
        }
        HostPattern::Cidr(Cidr::new(ip, prefix).map_err(|m| err(&m))?)
    } else if let Some(suffix) = host.strip_prefix("*.") {
        if suffix.contains('*') {
            return Err(err("only one leading `*.` is allowed"));
        }
        match normalize(suffix).map_err(|e| err(&inner_reason(e)))? {
            Target::Name(n) if is_reserved(&n) => {
                return Err(err(&format!(
                "{RESERVED_DOMAIN} is reserved; for the host's loopback write {HOST_INTERNAL}:PORT"
            )))
            }
            Target::Name(n) if n.contains('.') => HostPattern::Subdomains(n),
            Target::Name(_) => return Err(err(
                "a wildcard needs a domain of at least two labels (`*.example.com`, not `*.com`)",
            )),
            Target::Ip(_) => return Err(err("a wildcard applies to names, not IP addresses")),
        }
    } else if host.contains('*') {
        return Err(err(
            "a wildcard may only be a leading `*.` (`*.example.com`); `*` alone is not allowed",
        ));
    } else {
        match normalize(host).map_err(|e| err(&inner_reason(e)))? {
            Target::Name(n) if n == HOST_INTERNAL => {
                if port.is_none() {
                    return Err(err(&format!(
                        "{HOST_INTERNAL} needs a port, e.g. {HOST_INTERNAL}:5432"
                    )));
                }
                HostPattern::HostInternal
            }
            Target::Name(n) if is_reserved(&n) => {
                return Err(err(&format!(
                "{RESERVED_DOMAIN} is reserved; for the host's loopback write {HOST_INTERNAL}:PORT"
            )))
            }
            Target::Name(_) if bracketed => return Err(err("brackets are for IPv6 only")),
            Target::Name(n) => HostPattern::Exact(n),
            Target::Ip(ip) if bracketed && ip.is_ipv4() => {
                return Err(err("brackets are for IPv6 only"))
            }
            Target::Ip(ip) => HostPattern::Ip(ip),
        }
    };
    Ok(HostRule { pattern, port })
}

/// The reason of a nested error, for wrapping in a pattern error.
fn inner_reason(e: HostError) -> String {
    match e {
        HostError::Host { reason, .. } | HostError::Pattern { reason, .. } => reason,
    }
}

/// Splits `host[:port]`: `[v6]:port`, `name:port`, `a.b.c.d/n:port`; an
/// unbracketed pattern with two or more colons is IPv6 and has no port.
/// Returns the host, the port text and whether the host was bracketed.
fn split_port(raw: &str) -> Result<(&str, Option<&str>, bool), HostError> {
    if let Some(rest) = raw.strip_prefix('[') {
        let (inner, after) = rest
            .split_once(']')
            .ok_or_else(|| pattern_err(raw, "unbalanced `[`"))?;
        if after.is_empty() {
            return Ok((inner, None, true));
        }
        let port = after
            .strip_prefix(':')
            .ok_or_else(|| pattern_err(raw, "expected `:PORT` after `]`"))?;
        return Ok((inner, Some(port), true));
    }
    if raw.contains(']') {
        return Err(pattern_err(raw, "unbalanced `]`"));
    }
    match raw.matches(':').count() {
        0 => Ok((raw, None, false)),
        1 => {
            let (host, port) = raw.split_once(':').unwrap_or((raw, ""));
            Ok((host, Some(port), false))
        }
        _ => Ok((raw, None, false)),
    }
}

fn parse_port(raw: &str, port: &str) -> Result<u16, HostError> {
    let bad = || {
        pattern_err(
            raw,
            format!("port {port:?} is not a TCP port (expected 1 to 65535)"),
        )
    };
    if port.is_empty() || port.len() > 5 || !port.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    match port.parse::<u16>() {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(bad()),
    }
}

/// A strict IP literal: dotted-decimal IPv4 or IPv6 (no brackets, no zone).
fn parse_ip(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        s.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
    } else {
        parse_ipv4_strict(s).map(IpAddr::V4)
    }
}

// ---------------------------------------------------------------------------
// Verdicts.

/// Why a connection is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", content = "class", rename_all = "snake_case")]
pub enum DenyReason {
    /// No allow rule names the host.
    NotAllowed,
    /// A deny rule matches (deny beats allow).
    DeniedByRule,
    /// An IP literal that no IP or CIDR allow rule covers.
    IpLiteral,
    /// An allow rule names the host, but not this port.
    Port,
    /// [`HOST_INTERNAL`] on a port no rule names.
    HostInternal,
    /// The address (resolved, or literal) is in a refused range.
    Address(AddressClass),
}

impl fmt::Display for DenyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DenyReason::NotAllowed => f.write_str("no allow rule names this host"),
            DenyReason::DeniedByRule => f.write_str("a deny rule matches"),
            DenyReason::IpLiteral => {
                f.write_str("IP addresses are refused unless a rule names the address or its range")
            }
            DenyReason::Port => f.write_str("the host is allowed, but not on this port"),
            DenyReason::HostInternal => write!(f, "no rule allows {HOST_INTERNAL} on this port"),
            DenyReason::Address(class) => write!(f, "the address is {class}"),
        }
    }
}

/// A kind of address the proxy does not connect to unless a rule names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AddressClass {
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`, `fc00::/7`, `fec0::/10`.
    Private,
    /// `100.64.0.0/10`.
    SharedCgnat,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// Cloud metadata services: `169.254.169.254`, `169.254.170.2`,
    /// `100.100.100.200`, `192.0.0.192`, `fd00:ec2::254`.
    Metadata,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// `198.18.0.0/15`, `2001:2::/48`.
    Benchmark,
    /// Other special-purpose ranges: `192.0.0.0/24`, `192.88.99.0/24`,
    /// `240.0.0.0/4`, `100::/64`, `2001:10::/28`, `2001:20::/28`.
    Reserved,
    /// `::ffff:a.b.c.d` (and `::ffff:0:a.b.c.d`): IPv4 dressed as IPv6.
    Ipv4Mapped,
    /// `::a.b.c.d` (deprecated IPv4-compatible).
    Ipv4Compatible,
    /// `64:ff9b::/96` embedding a refused IPv4 address, or `64:ff9b:1::/48`.
    Nat64,
    /// `2002::/16` embedding a refused IPv4 address.
    SixToFour,
    /// `2001::/32` embedding a refused IPv4 server or client address.
    Teredo,
    /// One of the host's own addresses.
    HostOwn,
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressClass::Unspecified => "an unspecified address",
            AddressClass::Loopback => "a loopback address",
            AddressClass::Private => "a private address",
            AddressClass::SharedCgnat => "a shared (CGNAT) address",
            AddressClass::LinkLocal => "a link-local address",
            AddressClass::Metadata => "a cloud metadata address",
            AddressClass::Multicast => "a multicast address",
            AddressClass::Broadcast => "the broadcast address",
            AddressClass::Documentation => "a documentation address",
            AddressClass::Benchmark => "a benchmarking address",
            AddressClass::Reserved => "a reserved address",
            AddressClass::Ipv4Mapped => "an IPv4-mapped IPv6 address",
            AddressClass::Ipv4Compatible => "an IPv4-compatible IPv6 address",
            AddressClass::Nat64 => "a NAT64 form of a refused IPv4 address",
            AddressClass::SixToFour => "a 6to4 form of a refused IPv4 address",
            AddressClass::Teredo => "a Teredo form of a refused IPv4 address",
            AddressClass::HostOwn => "one of the host's own addresses",
        })
    }
}

/// The decision on one destination.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Allowed by `rule` (as written canonically), which came from `source`.
    Allow {
        /// The allow rule.
        rule: String,
        /// Where it came from.
        source: Source,
    },
    /// Refused.
    Deny {
        /// Why.
        reason: DenyReason,
        /// The rule that refused, or that matched the host but not the port.
        rule: Option<String>,
        /// Where that rule came from.
        source: Option<Source>,
    },
}

impl Verdict {
    /// Whether the destination is allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allow { .. })
    }

    fn deny(reason: DenyReason, rule: Option<&Sourced<HostRule>>) -> Verdict {
        Verdict::Deny {
            reason,
            rule: rule.map(|r| r.value.to_string()),
            source: rule.map(|r| r.source.clone()),
        }
    }
}

// ---------------------------------------------------------------------------
// The policy.

/// The host rules of the network door.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostPolicy {
    /// Allow rules, in the order the layers added them.
    pub allow: Vec<Sourced<HostRule>>,
    /// Deny rules; they beat allow rules.
    pub deny: Vec<Sourced<HostRule>>,
    /// Ports an allow rule without `:PORT` admits ([`DEFAULT_PORTS`] by default).
    pub ports: Sourced<Vec<u16>>,
}

impl Default for HostPolicy {
    /// Nothing allowed, nothing denied, ports 80 and 443.
    fn default() -> Self {
        HostPolicy {
            allow: Vec::new(),
            deny: Vec::new(),
            ports: Sourced::new(DEFAULT_PORTS.to_vec(), Source::Builtin),
        }
    }
}

impl HostPolicy {
    /// Decides on a client's destination (a target from [`normalize`]).
    ///
    /// Deny rules first: a match refuses. Then [`HOST_INTERNAL`] is allowed
    /// only by a rule naming it with this port; an IP literal only by an IP
    /// or CIDR rule; a name by an exact or wildcard rule. A rule with a port
    /// admits exactly that port, one without admits `ports`. An allowed name
    /// still has to pass [`HostPolicy::check_address`] once resolved.
    pub fn decide(&self, target: &Target, port: u16) -> Verdict {
        if let Some(rule) = self.deny_rule_for(target, port) {
            return Verdict::deny(DenyReason::DeniedByRule, Some(rule));
        }
        let matching: Vec<&Sourced<HostRule>> = self
            .allow
            .iter()
            .filter(|r| r.value.matches_host(target))
            .collect();
        let ports = &self.ports.value;
        if let Some(rule) = matching.iter().find(|r| r.value.allows_port(port, ports)) {
            return Verdict::Allow {
                rule: rule.value.to_string(),
                source: rule.source.clone(),
            };
        }
        if target.is_host_internal() {
            return Verdict::deny(DenyReason::HostInternal, None);
        }
        match (matching.first(), target) {
            (Some(rule), _) => Verdict::deny(DenyReason::Port, Some(rule)),
            (None, Target::Ip(_)) => Verdict::deny(DenyReason::IpLiteral, None),
            (None, Target::Name(_)) => Verdict::deny(DenyReason::NotAllowed, None),
        }
    }

    /// The first deny rule that covers `target` on `port`. For an IP target
    /// an IP or CIDR deny rule also covers the IPv4 address that an IPv6
    /// form (mapped, compatible, NAT64, 6to4, Teredo) embeds.
    pub fn deny_rule_for(&self, target: &Target, port: u16) -> Option<&Sourced<HostRule>> {
        let embedded = match target {
            Target::Ip(IpAddr::V6(v6)) => embedded_v4(*v6),
            _ => Vec::new(),
        };
        self.deny.iter().find(|r| {
            r.value.denies_port(port)
                && (r.value.matches_host(target)
                    || embedded.iter().any(|v4| r.value.covers_ip(IpAddr::V4(*v4))))
        })
    }

    /// May the proxy connect to `addr`, which an allowed name resolved to,
    /// on `port`? `host_addrs` are the host's own addresses.
    ///
    /// An IP or CIDR deny rule covering it refuses ([`DenyReason::DeniedByRule`];
    /// [`HostPolicy::deny_rule_for`] with `Target::Ip(addr)` names the rule).
    /// Otherwise an IP or CIDR allow rule that covers it (and admits the
    /// port) lets it through; failing that, special ranges (see
    /// [`AddressClass`]) and the host's own addresses are refused.
    pub fn check_address(
        &self,
        addr: IpAddr,
        port: u16,
        host_addrs: &[IpAddr],
    ) -> Result<(), DenyReason> {
        let target = Target::Ip(addr);
        if self.deny_rule_for(&target, port).is_some() {
            return Err(DenyReason::DeniedByRule);
        }
        let ports = &self.ports.value;
        if self
            .allow
            .iter()
            .any(|r| r.value.covers_ip(addr) && r.value.allows_port(port, ports))
        {
            return Ok(());
        }
        // A special range first: it says more (a loopback address is
        // also one of the host's own).
        if let Some(class) = classify(addr) {
            return Err(DenyReason::Address(class));
        }
        let own = |ip: IpAddr| host_addrs.contains(&ip);
        if own(addr) {
            return Err(DenyReason::Address(AddressClass::HostOwn));
        }
        if let IpAddr::V6(v6) = addr {
            if embedded_v4(v6).into_iter().any(|v4| own(IpAddr::V4(v4))) {
                return Err(DenyReason::Address(AddressClass::HostOwn));
            }
        }
        Ok(())
    }

    /// Whether a rule allows [`HOST_INTERNAL`] on `port` (and no deny rule refuses it).
    pub fn host_internal_port_allowed(&self, port: u16) -> bool {
        let target = Target::Name(HOST_INTERNAL.to_string());
        self.decide(&target, port).is_allowed()
    }

    /// The ports [`HOST_INTERNAL`] rules open, in rule order.
    pub fn host_internal_ports(&self) -> Vec<u16> {
        let mut out: Vec<u16> = Vec::new();
        for rule in &self.allow {
            if let (HostPattern::HostInternal, Some(p)) = (&rule.value.pattern, rule.value.port) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }

    /// What would allow `target` on `port` after a refusal for `reason`,
    /// or why nothing does: the flag and the TOML line, as the key
    /// declarations name them. For [`DenyReason::Address`], pass the
    /// refused address as the target. The 403 body and the exit summary
    /// both say it.
    pub fn denial_fix(&self, target: &Target, port: u16, reason: DenyReason) -> String {
        let in_ports = self.ports.value.contains(&port);
        let loopback_hint = || {
            format!(
                "to reach a service on the host's own loopback, name {HOST_INTERNAL} in place of localhost: allow with {}",
                allow_with(&format!("{HOST_INTERNAL}:{port}"))
            )
        };
        match reason {
            DenyReason::DeniedByRule => {
                "deny beats allow: nothing allows it while that deny rule is in force (`cordon explain` lists the rules and where each comes from)".to_string()
            }
            DenyReason::HostInternal => {
                format!("allow with {}", allow_with(&format!("{HOST_INTERNAL}:{port}")))
            }
            DenyReason::Address(AddressClass::Loopback) => loopback_hint(),
            _ if is_localhost(target) => loopback_hint(),
            DenyReason::Port if !in_ports => {
                let ports: Vec<u16> = self
                    .ports
                    .value
                    .iter()
                    .copied()
                    .chain(std::iter::once(port))
                    .collect();
                let joined = |sep: &str| {
                    ports
                        .iter()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(sep)
                };
                format!(
                    "allow with {}; or let rules without a port allow it too: {}",
                    allow_with(&target.with_port(port)),
                    keys::PORTS
                        .about
                        .set_with(&joined(","), &format!("[{}]", joined(", ")))
                )
            }
            DenyReason::Address(_) => format!(
                "only a rule naming the address or a range holding it allows it: {}",
                allow_with(&self.rule_for(target, port))
            ),
            DenyReason::Port | DenyReason::NotAllowed | DenyReason::IpLiteral => {
                // A preset's rules admit the default ports only.
                let presets = if reason == DenyReason::NotAllowed && in_ports {
                    preset_hint(target)
                } else {
                    String::new()
                };
                format!(
                    "allow with {}{presets}",
                    allow_with(&self.rule_for(target, port))
                )
            }
        }
    }

    /// The allow rule that admits `target` on `port`: without a port
    /// when `ports` has it.
    fn rule_for(&self, target: &Target, port: u16) -> String {
        if self.ports.value.contains(&port) {
            match target {
                Target::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
                other => other.to_string(),
            }
        } else {
            target.with_port(port)
        }
    }
}

/// Whether a target is `localhost`, a name under it, or a loopback literal.
fn is_localhost(target: &Target) -> bool {
    match target {
        Target::Name(n) => n == "localhost" || is_subdomain(n, "localhost"),
        // `::ffff:127.0.0.1` is the IPv4 loopback too.
        Target::Ip(ip) => ip.to_canonical().is_loopback(),
    }
}

/// "; or use the preset ...", or nothing when no preset allows `target`.
fn preset_hint(target: &Target) -> String {
    let names = super::presets::allowing(target);
    let Some(first) = names.first() else {
        return String::new();
    };
    let many = names.len() > 1;
    let listed: Vec<String> = names.iter().map(|n| keys::toml_string(n)).collect();
    format!(
        "; or use the preset{} that allow{} it with the other hosts its tools need: {} (`cordon presets` lists them{})",
        if many { "s" } else { "" },
        if many { "" } else { "s" },
        keys::PRESETS.about.add_with(first),
        if many { format!("; all: {}", listed.join(", ")) } else { String::new() }
    )
}

/// `--allow-domain RULE (or [network] allow = ["RULE"])`.
fn allow_with(rule: &str) -> String {
    keys::NET_ALLOW.about.add_with(rule)
}

// ---------------------------------------------------------------------------
// Address classes.

/// The range `a.b.c.d/prefix`, for the tables.
const fn net4(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)
}

/// Refused IPv4 ranges; the first match names the class, so specific entries come first.
const V4_RANGES: &[(Ipv4Net, AddressClass)] = &[
    (net4(169, 254, 169, 254, 32), AddressClass::Metadata),
    (net4(169, 254, 170, 2, 32), AddressClass::Metadata),
    (net4(100, 100, 100, 200, 32), AddressClass::Metadata),
    (net4(192, 0, 0, 192, 32), AddressClass::Metadata),
    (net4(255, 255, 255, 255, 32), AddressClass::Broadcast),
    (net4(0, 0, 0, 0, 8), AddressClass::Unspecified),
    (net4(10, 0, 0, 0, 8), AddressClass::Private),
    (net4(100, 64, 0, 0, 10), AddressClass::SharedCgnat),
    (net4(127, 0, 0, 0, 8), AddressClass::Loopback),
    (net4(169, 254, 0, 0, 16), AddressClass::LinkLocal),
    (net4(172, 16, 0, 0, 12), AddressClass::Private),
    (net4(192, 0, 0, 0, 24), AddressClass::Reserved),
    (net4(192, 0, 2, 0, 24), AddressClass::Documentation),
    (net4(192, 88, 99, 0, 24), AddressClass::Reserved),
    (net4(192, 168, 0, 0, 16), AddressClass::Private),
    (net4(198, 18, 0, 0, 15), AddressClass::Benchmark),
    (net4(198, 51, 100, 0, 24), AddressClass::Documentation),
    (net4(203, 0, 113, 0, 24), AddressClass::Documentation),
    (net4(224, 0, 0, 0, 4), AddressClass::Multicast),
    (net4(240, 0, 0, 0, 4), AddressClass::Reserved),
];

/// The range of the eight 16-bit groups `s` and `prefix`, for the tables.
const fn net6(s: [u16; 8], prefix: u8) -> Ipv6Net {
    Ipv6Net::new_assert(
        Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]),
        prefix,
    )
}

/// NAT64's well-known prefix, 64:ff9b::/96.
const NAT64_WELL_KNOWN: Ipv6Net = net6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96);
/// 6to4, 2002::/16.
const SIX_TO_FOUR: Ipv6Net = net6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16);
/// Teredo, 2001::/32.
const TEREDO: Ipv6Net = net6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32);

/// Refused IPv6 ranges; the first match names the class. Embeddings whose
/// verdict depends on the IPv4 inside (NAT64, 6to4, Teredo) are in [`classify`].
const V6_RANGES: &[(Ipv6Net, AddressClass)] = &[
    (
        net6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128),
        AddressClass::Metadata,
    ),
    (net6([0; 8], 128), AddressClass::Unspecified),
    (net6([0, 0, 0, 0, 0, 0, 0, 1], 128), AddressClass::Loopback),
    (
        net6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96),
        AddressClass::Ipv4Mapped,
    ),
    (
        net6([0, 0, 0, 0, 0xffff, 0, 0, 0], 96),
        AddressClass::Ipv4Mapped,
    ),
    (net6([0; 8], 96), AddressClass::Ipv4Compatible),
    (
        net6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),
        AddressClass::Nat64,
    ),
    (
        net6([0x100, 0, 0, 0, 0, 0, 0, 0], 64),
        AddressClass::Reserved,
    ),
    (
        net6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48),
        AddressClass::Benchmark,
    ),
    (
        net6([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28),
        AddressClass::Reserved,
    ),
    (
        net6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28),
        AddressClass::Reserved,
    ),
    (
        net6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
        AddressClass::Documentation,
    ),
    (
        net6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),
        AddressClass::Documentation,
    ),
    (
        net6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),
        AddressClass::Private,
    ),
    (
        net6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),
        AddressClass::LinkLocal,
    ),
    (
        net6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),
        AddressClass::Private,
    ),
    (
        net6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8),
        AddressClass::Multicast,
    ),
];

/// The refused range `addr` is in (the first of the tables that holds
/// it, or the embedding prefix of a NAT64, 6to4 or Teredo form), as the
/// reason of a refusal names it; `None` for an ordinary address.
pub fn refused_range(addr: IpAddr) -> Option<IpNet> {
    classify(addr)?;
    match addr {
        IpAddr::V4(ip) => V4_RANGES
            .iter()
            .find(|(net, _)| net.contains(&ip))
            .map(|(net, _)| IpNet::V4(*net)),
        IpAddr::V6(ip) => V6_RANGES
            .iter()
            .map(|(net, _)| net)
            .chain([&NAT64_WELL_KNOWN, &SIX_TO_FOUR, &TEREDO])
            .find(|net| net.contains(&ip))
            .map(|net| IpNet::V6(*net)),
    }
}

/// The class of a special-purpose address, or `None` for an ordinary
/// (globally routed) one.
pub fn classify(addr: IpAddr) -> Option<AddressClass> {
    match addr {
        IpAddr::V4(ip) => classify_v4(ip),
        IpAddr::V6(ip) => classify_v6(ip),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    V4_RANGES
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map(|(_, class)| *class)
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    if let Some((_, class)) = V6_RANGES.iter().find(|(net, _)| net.contains(&ip)) {
        return Some(*class);
    }
    let refused = |v4: Ipv4Addr| classify_v4(v4).is_some();
    let bits = u128::from(ip);
    if NAT64_WELL_KNOWN.contains(&ip) && refused(low32(bits)) {
        return Some(AddressClass::Nat64);
    }
    if SIX_TO_FOUR.contains(&ip) && refused(sixtofour_v4(bits)) {
        return Some(AddressClass::SixToFour);
    }
    if TEREDO.contains(&ip) {
        let (server, client) = teredo_v4(bits);
        if refused(server) || refused(client) {
            return Some(AddressClass::Teredo);
        }
    }
    None
}

fn low32(bits: u128) -> Ipv4Addr {
    // Truncation keeps the low 32 bits, which is the point.
    Ipv4Addr::from(bits as u32)
}

/// The IPv4 address in bits 16..48 of a 6to4 address.
fn sixtofour_v4(bits: u128) -> Ipv4Addr {
    Ipv4Addr::from((bits >> 80) as u32)
}

/// A Teredo address's server (bits 32..64) and client (last 32 bits, inverted).
fn teredo_v4(bits: u128) -> (Ipv4Addr, Ipv4Addr) {
    (
        Ipv4Addr::from((bits >> 64) as u32),
        Ipv4Addr::from(!(bits as u32)),
    )
}

/// Every IPv4 address an IPv6 address may stand for: mapped, translated,
/// compatible, NAT64 (well-known prefix), 6to4 and Teredo forms.
pub fn embedded_v4(ip: Ipv6Addr) -> Vec<Ipv4Addr> {
    let bits = u128::from(ip);
    let mut out = Vec::new();
    let low_forms = [
        net6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96),
        net6([0, 0, 0, 0, 0xffff, 0, 0, 0], 96),
        net6([0; 8], 96),
        NAT64_WELL_KNOWN,
    ];
    if low_forms.iter().any(|net| net.contains(&ip)) && bits > 1 {
        out.push(low32(bits));
    }
    if SIX_TO_FOUR.contains(&ip) {
        out.push(sixtofour_v4(bits));
    }
    if TEREDO.contains(&ip) {
        let (server, client) = teredo_v4(bits);
        out.push(server);
        out.push(client);
    }
    out
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
