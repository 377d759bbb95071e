//! TLS inspection in the proxy: for a tunnel to an inspected host, cordon
//! terminates the client's TLS with a leaf from the sandbox CA, opens its
//! own TLS connection upstream (verified against the system roots and any
//! `--upstream-ca`), and relays HTTP requests one by one (HTTP/1.1 or
//! HTTP/2, whichever the upstream picks from what the client offered),
//! checking each against the host's method and path rules, swapping
//! placeholders for real values where the policy allows and refusing them
//! elsewhere (however spelled: the one request scan, `SpelledScan`, the
//! plain path uses too), and masking real values in the responses.
//!
//! The proxy calls in at one point: once the network door has allowed and
//! connected a CONNECT or SOCKS5 tunnel, it hands the client and upstream
//! streams to [`Inspector::serve`] (inspected hosts) or
//! [`Inspector::opaque`] (others, scanned for placeholders) instead of
//! copying bytes itself.
//!
//! One file per job: `tls` (the TLS ends of a tunnel and the HTTP/1.1 or
//! HTTP/2 connections over them), `session` (each request's checks and
//! swaps), `response` (masking real values in responses), `websocket`
//! (upgraded connections), `body` and `headers` (the swaps' plumbing),
//! `budget` (the buffer budget), `trust` (upstream verification).

mod body;
mod budget;
mod headers;
mod response;
mod session;
mod tls;
mod trust;
mod websocket;

use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

pub(in crate::net::proxy) use body::{box_error, text_response, BoxError, ProxyBody};
use budget::Buffers;
pub use budget::{BODY_CAP, BUFFER_BUDGET, CONNECTION_RESERVE};
pub(in crate::net::proxy) use headers::{
    ambiguous_length_refusal, has_coding_but, length_is_ambiguous, strip_hop_by_hop,
};

use super::events::subject;
use crate::audit::{self, Auditor, Door, Event, Proto, Verdict};
use crate::credentials::ca::SandboxCa;
use crate::credentials::inject::{Exfiltration, Secrets, SpelledScan};
use crate::policy::host::{normalize, Target};
use crate::policy::inspection::InspectionPolicy;
use crate::policy::Sourced;

/// Why inspection could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// An `--upstream-ca` file could not be read or holds no certificate.
    #[error("upstream CA {path} ({source_of}): {why}")]
    UpstreamCa {
        /// The file.
        path: String,
        /// Where it was named.
        source_of: String,
        /// What is wrong.
        why: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

/// Why a placeholder in a plain-HTTP request is refused wherever it goes.
const PLAIN_NEVER_CARRIES: &str = "plain HTTP never carries a real value";
/// Why a placeholder in a destination's name is refused.
const NAMES_NEVER_CARRY: &str =
    "a host name never carries a real value, and resolving it would send it to a name server";

/// One tunnel, as the proxy allowed and connected it.
pub struct Tunnel {
    /// The host as the client named it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// How the client asked (CONNECT or SOCKS5).
    pub proto: Proto,
    /// Bytes sent upstream, for the proxy's close event.
    pub up: Arc<AtomicU64>,
    /// Bytes received from upstream.
    pub down: Arc<AtomicU64>,
}

/// Where an opaque tunnel goes.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint<'a> {
    /// The host as the client named it.
    pub host: &'a str,
    /// The port.
    pub port: u16,
    /// How the client asked.
    pub proto: Proto,
}

/// The inspecting half of the proxy: one per sandbox.
pub struct Inspector {
    policy: InspectionPolicy,
    ca: SandboxCa,
    secrets: Secrets,
    /// Body bytes held at once, over every connection.
    buffers: Buffers,
    provider: Arc<rustls::crypto::CryptoProvider>,
    /// Upstream verification: the system roots plus `--upstream-ca`.
    upstream: Arc<rustls::ClientConfig>,
}

/// A refusal inside an inspected tunnel.
struct Refusal {
    door: Door,
    rule: String,
    source: String,
    reason: String,
    /// What would allow it, or why nothing does (the exit summary's).
    fix: Option<String>,
    message: String,
}

impl Refusal {
    /// A network-door refusal by a host's HTTP rules: its message is
    /// `what` was blocked, the reason, the rules, then `fix`.
    fn by_rules(d: crate::policy::inspection::RuleDenial, what: &str, fix: String) -> Refusal {
        let rules = d.rules.join("; ");
        Refusal {
            door: Door::Network,
            message: format!(
                "cordon: blocked {what}: {} (rules: {rules} from {})\n{fix}\n",
                d.reason, d.source
            ),
            rule: rules,
            source: d.source,
            reason: d.reason,
            fix: Some(fix),
        }
    }
}

/// How a host's HTTP rules are widened, as the key declares them.
fn widen_rules(target: &Target, how: &str) -> String {
    let key = &crate::policy::keys::HTTP_RULES.about;
    format!(
        "allow it with a [[{}.{}]] entry for {target} {how}, in a trusted policy file (or widen an existing one)",
        key.section, key.name
    )
}

impl Inspector {
    /// Sets up inspection: the CA (already generated, after the sandbox's
    /// init was forked, so no copy of its key lives there), the secrets,
    /// and the upstream trust (the system bundle, if any, plus `--upstream-ca`).
    /// `max_memory` (the sandbox's memory limit, if any) sizes the budget
    /// of buffered bodies ([`BUFFER_BUDGET`]).
    pub fn new(
        policy: InspectionPolicy,
        ca: SandboxCa,
        secrets: Secrets,
        system_bundle: Option<&std::path::Path>,
        max_memory: Option<&Sourced<u64>>,
    ) -> Result<Inspector, InspectError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let upstream = trust::upstream_config(&policy, system_bundle, provider.clone())?;
        Ok(Inspector {
            policy,
            ca,
            secrets,
            buffers: Buffers::new(max_memory),
            provider,
            upstream: Arc::new(upstream),
        })
    }

    /// Whether the tunnel to `host:port` (allowed by the network door) is
    /// inspected.
    pub fn inspects(&self, host: &str, port: u16) -> bool {
        normalize(host).is_ok_and(|t| self.policy.inspects(&t, port))
    }

    /// Whether opaque tunnels are worth scanning (there are placeholders).
    pub fn scans_tunnels(&self) -> bool {
        !self.secrets.is_empty()
    }

    /// Checks a plain-HTTP request (absolute-form, through the HTTP proxy)
    /// before it is forwarded: the host's method and path rules, and no
    /// placeholder at all (real values are never sent in the clear) in the
    /// head, however spelled: `target` as sent and every header value
    /// ([`SpelledScan`]), and the raw `head` in any case. Returns the
    /// refusal message for the 403 (already recorded). The body and
    /// trailers go through [`Inspector::plain_scan`].
    #[allow(clippy::too_many_arguments)]
    pub fn check_plain(
        &self,
        audit: &Auditor,
        host: &str,
        port: u16,
        method: &str,
        path: &str,
        target: &str,
        headers: &http::HeaderMap,
        head: &[u8],
    ) -> Result<(), String> {
        let Ok(normalized) = normalize(host) else {
            return Ok(()); // the network door refuses it
        };
        let placeholder = || {
            let raw = self.secrets.find_placeholder(&head.to_ascii_lowercase());
            let raw = raw.map(|s| Exfiltration {
                name: s.name.clone(),
                source: s.source.clone(),
            });
            raw.or_else(|| {
                self.plain_scan()?
                    .feed_head(method.as_bytes(), target.as_bytes(), headers)
            })
        };
        let refusal = self
            .rules_refusal(&normalized, port, method, path, "http")
            .or_else(|| {
                placeholder().map(|ex| {
                    self.exfiltration_refusal(&normalized, port, &ex, PLAIN_NEVER_CARRIES)
                })
            });
        match refusal {
            Some(r) => {
                self.record_refusal(audit, &normalized, port, Proto::Http, &r);
                Err(r.message)
            }
            None => Ok(()),
        }
    }

    /// The placeholder scan of a plain-HTTP request's body and trailers
    /// (state carried across its frames); `None` when there are no
    /// placeholders.
    pub fn plain_scan(&self) -> Option<SpelledScan> {
        (!self.secrets.is_empty()).then(|| self.secrets.scan_spelled())
    }

    /// Records the refusal of a plain-HTTP request whose body or trailers
    /// carry the placeholder `ex` found, as the head's check does; the
    /// message for the 403.
    pub fn refuse_plain(
        &self,
        audit: &Auditor,
        host: &str,
        port: u16,
        ex: &Exfiltration,
    ) -> String {
        self.refuse_carried(audit, host, port, Proto::Http, ex, PLAIN_NEVER_CARRIES)
    }

    /// The placeholder a destination's name carries (any spelling the
    /// plain scan reads), checked before the name is resolved: a lookup
    /// would already send it to a name server. The refusal is recorded;
    /// its message is returned.
    pub fn refuse_named(
        &self,
        audit: &Auditor,
        host: &str,
        port: u16,
        proto: Proto,
    ) -> Option<String> {
        let ex = self.plain_scan()?.feed(host.as_bytes())?;
        Some(self.refuse_carried(audit, host, port, proto, &ex, NAMES_NEVER_CARRY))
    }

    /// Records the refusal of a connection to `host` that carries the
    /// placeholder `ex` (`why` says where); the message for the client.
    fn refuse_carried(
        &self,
        audit: &Auditor,
        host: &str,
        port: u16,
        proto: Proto,
        ex: &Exfiltration,
        why: &str,
    ) -> String {
        let target = normalize(host).unwrap_or_else(|_| Target::Name(host.to_string()));
        self.refuse_placeholder(audit, &target, port, proto, ex, why)
    }

    /// Records the refusal of a request to `target` that carries the
    /// placeholder `ex` (`why` says where); the message for the client.
    fn refuse_placeholder(
        &self,
        audit: &Auditor,
        target: &Target,
        port: u16,
        proto: Proto,
        ex: &Exfiltration,
        why: &str,
    ) -> String {
        let r = self.exfiltration_refusal(target, port, ex, why);
        self.record_refusal(audit, target, port, proto, &r);
        r.message
    }

    fn rules_refusal(
        &self,
        target: &Target,
        port: u16,
        method: &str,
        path: &str,
        scheme: &str,
    ) -> Option<Refusal> {
        let d = self
            .policy
            .check_request(target, port, method, path)
            .err()?;
        let shown = target.with_port(port);
        let fix = match d.unjudgeable {
            Some(how) => format!("nothing allows it: no rule can judge the request as sent; {how}"),
            None => widen_rules(target, "with this method and path"),
        };
        Some(Refusal::by_rules(
            d,
            &format!("{method} {scheme}://{shown}{path}"),
            fix,
        ))
    }

    fn upgrade_refusal(
        &self,
        target: &Target,
        port: u16,
        method: &str,
        path: &str,
    ) -> Option<Refusal> {
        let d = self
            .policy
            .check_upgrade(target, port, method, path)
            .err()?;
        let shown = target.with_port(port);
        Some(Refusal::by_rules(
            d,
            &format!("an upgrade (WebSocket) of {method} https://{shown}{path}"),
            // No path in the fix: the event holds it, and events never
            // hold a path (the message names it, in what was blocked).
            widen_rules(
                target,
                &format!(
                    "whose methods name {method} and whose paths name this one exactly (no wildcard)"
                ),
            ),
        ))
    }

    fn exfiltration_refusal(
        &self,
        target: &Target,
        port: u16,
        ex: &Exfiltration,
        why: &str,
    ) -> Refusal {
        let shown = target.with_port(port);
        let secret = self.secrets.iter().find(|s| s.name == ex.name);
        let hosts = secret
            .map(|s| {
                s.hosts
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let inject = &crate::policy::keys::INJECT.about;
        // To its own host, but outside the headers its entry names.
        let named = secret
            .filter(|s| !s.headers.is_empty() && s.allowed_for(target, port))
            .map(|s| s.headers.join(", "));
        let (why, place, nowhere) = match &named {
            Some(headers) => (
                format!("it is sent in the request headers {headers} only"),
                format!("in the headers {headers} of requests to the hosts"),
                "nowhere else: a server that echoes what it is sent would send the value back",
            ),
            None => (why.to_string(), "to the hosts".to_string(), "nowhere else"),
        };
        let fix = format!(
            "nothing allows it: the real value of {} is only sent {place} its [[{}.{}]] entry names ({hosts}), and its placeholder {nowhere}",
            ex.name, inject.section, inject.name
        );
        let went = if named.is_some() {
            "outside the headers its entry names"
        } else {
            "to a host it may not go to"
        };
        Refusal {
            door: Door::Credentials,
            rule: format!("[[credentials.inject]] {}", ex.name),
            source: ex.source.clone(),
            reason: format!("attempted exfiltration: the placeholder of {} was sent {went} ({why})", ex.name),
            message: format!(
                "cordon: blocked a request to {shown}: it carries the placeholder of {} ({why})\n{fix}\n",
                ex.name,
            ),
            fix: Some(fix),
        }
    }

    /// Records that the buffer budget had no room for `what` (a body or
    /// a connection's buffers) and returns the refusal's text.
    fn budget_refusal(
        &self,
        audit: &Auditor,
        target: &Target,
        port: u16,
        proto: Proto,
        what: &str,
    ) -> String {
        let buffers = &self.buffers;
        let mut event = Event::new(
            Door::Credentials,
            audit::Kind::Limit,
            Verdict::Deny,
            subject(&target.to_string(), port),
        );
        event.rule = Some(format!(
            "inspection buffer budget = {} bytes",
            buffers.bytes
        ));
        event.source = Some(buffers.why.clone());
        event.reason = Some("the proxy already holds as many inspected bodies and connections for this sandbox as its budget allows".into());
        event.proto = Some(proto);
        audit.record(event);
        let raise = if buffers.bytes < BUFFER_BUDGET {
            ", or raise --max-memory"
        } else {
            ""
        };
        format!(
            "cordon: refused {what} would pass the inspection buffer budget, the {} bytes (budget: {}) the proxy may hold of bodies and connection buffers for this sandbox at once, over every connection; retry when fewer requests with bodies or inspected connections are in flight{raise}\n",
            buffers.bytes, buffers.why
        )
    }

    fn record_refusal(
        &self,
        audit: &Auditor,
        target: &Target,
        port: u16,
        proto: Proto,
        r: &Refusal,
    ) {
        let mut event = Event::new(
            r.door,
            audit::Kind::Decision,
            Verdict::Deny,
            subject(&target.to_string(), port),
        );
        event.rule = Some(r.rule.clone());
        event.source = Some(r.source.clone());
        event.reason = Some(r.reason.clone());
        event.fix.clone_from(&r.fix);
        event.proto = Some(proto);
        audit.record(event);
    }

    fn record_injection(&self, audit: &Auditor, tunnel: &Tunnel, target: &Target, name: &str) {
        let mut event = Event::new(
            Door::Credentials,
            audit::Kind::Decision,
            Verdict::Allow,
            subject(&target.to_string(), tunnel.port),
        );
        let secret = self.secrets.iter().find(|s| s.name == name);
        event.rule = Some(format!("[[credentials.inject]] {name}"));
        event.source = secret.map(|s| s.source.clone());
        event.reason = Some(format!("the real value of {name} was swapped in"));
        event.proto = Some(tunnel.proto);
        audit.record(event);
    }

    /// Relays an opaque tunnel, refusing it if the client sends a placeholder.
    pub async fn opaque<U>(
        &self,
        audit: &Auditor,
        client: &mut TcpStream,
        prefix: &[u8],
        upstream: &mut U,
        to: Endpoint<'_>,
    ) -> io::Result<()>
    where
        U: AsyncRead + AsyncWrite + Unpin,
    {
        let Endpoint { host, port, proto } = to;
        let mut scan = self.secrets.scan_all();
        let (mut client_read, mut client_write) = client.split();
        let (mut up_read, mut up_write) = tokio::io::split(upstream);
        let send = async {
            let mut buf = vec![0u8; 16 * 1024];
            let mut first = Some(prefix);
            loop {
                let chunk: &[u8] = match first.take() {
                    Some(p) if !p.is_empty() => p,
                    _ => {
                        let n = client_read.read(&mut buf).await?;
                        if n == 0 {
                            up_write.shutdown().await?;
                            return Ok::<_, io::Error>(None);
                        }
                        &buf[..n]
                    }
                };
                if let Some(ex) = scan.feed(chunk) {
                    return Ok(Some(ex));
                }
                up_write.write_all(chunk).await?;
            }
        };
        let receive = async {
            tokio::io::copy(&mut up_read, &mut client_write).await?;
            client_write.shutdown().await
        };
        tokio::pin!(send, receive);
        let mut received = false;
        loop {
            tokio::select! {
                sent = &mut send => {
                    if let Some(ex) = sent? {
                        self.refuse_carried(audit, host, port, proto, &ex, "the tunnel is not inspected");
                        return Ok(());
                    }
                    if received { return Ok(()); }
                    // The client is done sending; the answer may still come.
                    return (&mut receive).await;
                }
                got = &mut receive, if !received => {
                    got?;
                    received = true;
                }
            }
        }
    }
}
