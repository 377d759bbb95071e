//! `cordon learn`'s gate: the policy's own answers, except that a
//! destination no rule names is let through and written down.
//!
//! Only "no rule names it" turns into an allow (no allow rule for a name,
//! none for an IP literal, or one for the host but not this port). Deny
//! rules, `host.cordon.internal` without a rule, and the address guard
//! (loopback, private, metadata and other special ranges, the host's own
//! addresses) refuse as they do in every run, and the refusal is written
//! down too, so the learned policy can say what it could not allow.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use super::gate::PolicyGate;
use super::proxy::{Allowed, Denial, Destination, Gate};
use crate::policy::host::{normalize, DenyReason, HostPolicy, Target, Verdict};
use crate::policy::learned::Seen;

/// The rule a learned destination is allowed by, as the audit log shows it.
pub const LEARN_RULE: &str = "learn mode: no rule names it";
/// Where that rule comes from.
pub const LEARN_SOURCE: &str = "cordon learn";

/// Every destination a learning run asked for, shared between its gate
/// and the run that prints the policy afterwards.
#[derive(Debug, Default)]
pub struct Learned {
    seen: Mutex<BTreeMap<(String, u16), Record>>,
    /// Names the kernel refused to make outside the writable areas, with
    /// how often each was tried.
    writes: Mutex<BTreeMap<std::path::PathBuf, u64>>,
    /// Destinations and names past [`MAX_RECORDED`] each, not recorded.
    dropped: std::sync::atomic::AtomicU64,
}

/// Distinct destinations, and distinct refused names, a learning run
/// records at most: a command naming ever new ones cannot grow the
/// supervisor without bound (what is past it is counted, and said).
pub const MAX_RECORDED: usize = 4096;

/// What one destination came to.
#[derive(Debug, Default)]
struct Record {
    decisions: u64,
    /// Refused before resolving (a deny rule, the host's loopback).
    refused: Option<String>,
    /// An address it resolved to was refused ...
    address_refused: Option<String>,
    /// ... and none was accepted.
    address_accepted: bool,
    /// The rule in force that allowed it, if one did.
    allowed_by: Option<String>,
}

impl Learned {
    fn note(&self, target: &Target, port: u16, update: impl FnOnce(&mut Record)) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (target.to_string(), port);
        if seen.len() >= MAX_RECORDED && !seen.contains_key(&key) {
            self.drop_one();
            return;
        }
        update(seen.entry(key).or_default());
    }

    fn drop_one(&self) {
        self.dropped
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many destinations and refused names went unrecorded (past
    /// [`MAX_RECORDED`]): the learned policy is then incomplete.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The kernel refused to make `path` (outside the writable areas).
    pub fn note_write(&self, path: &str) {
        let mut writes = self.writes.lock().unwrap_or_else(PoisonError::into_inner);
        let path = std::path::PathBuf::from(path);
        if writes.len() >= MAX_RECORDED && !writes.contains_key(&path) {
            self.drop_one();
            return;
        }
        *writes.entry(path).or_default() += 1;
    }

    /// Every refused write, in path order, with how often it was tried.
    pub fn writes(&self) -> Vec<(std::path::PathBuf, u64)> {
        let writes = self.writes.lock().unwrap_or_else(PoisonError::into_inner);
        writes.iter().map(|(p, n)| (p.clone(), *n)).collect()
    }

    /// Every destination, in the order of host and port.
    pub fn seen(&self) -> Vec<Seen> {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.iter()
            .map(|((host, port), r)| Seen {
                host: host.clone(),
                port: *port,
                connections: r.decisions,
                refused: r
                    .refused
                    .clone()
                    .or_else(|| r.address_refused.clone().filter(|_| !r.address_accepted)),
                allowed_by: r.allowed_by.clone(),
            })
            .collect()
    }
}

/// A [`PolicyGate`] that learns (see the module's docs).
pub struct LearningGate {
    inner: PolicyGate,
    learned: Arc<Learned>,
}

impl LearningGate {
    /// Learns into `learned`, on top of `policy`.
    pub fn new(policy: HostPolicy, learned: Arc<Learned>) -> LearningGate {
        LearningGate {
            inner: PolicyGate::new(policy),
            learned,
        }
    }
}

impl Gate for LearningGate {
    fn check_destination(&self, host: &str, port: u16) -> Result<Allowed, Denial> {
        let Ok(target) = normalize(host) else {
            return self.inner.check_destination(host, port);
        };
        let decided = self.inner.check_destination(host, port);
        let learnable = decided.is_err()
            && matches!(
                self.inner.policy().decide(&target, port),
                Verdict::Deny {
                    reason: DenyReason::NotAllowed | DenyReason::IpLiteral | DenyReason::Port,
                    ..
                }
            );
        let answer = match (&target, learnable) {
            (_, false) => decided,
            (Target::Name(name), true) => Ok(learned(Destination::Name(name.clone()))),
            // The proxy checks the addresses a name resolves to, but takes
            // an IP literal as vetted by its rule: no rule did here, so
            // the address guard is asked now.
            (Target::Ip(ip), true) => self
                .inner
                .check_literal(*ip, port)
                .map(|()| learned(Destination::Ip(*ip))),
        };
        self.learned.note(&target, port, |r| {
            r.decisions += 1;
            match &answer {
                Ok(_) if learnable => {}
                Ok(allowed) => {
                    r.allowed_by = Some(format!("{} from {}", allowed.rule, allowed.source))
                }
                Err(denial) => r.refused = Some(denial.reason.clone()),
            }
        });
        answer
    }

    fn check_address(&self, host: &str, addr: IpAddr, port: u16) -> Result<(), Denial> {
        let checked = self.inner.check_address(host, addr, port);
        if let Ok(target) = normalize(host) {
            self.learned.note(&target, port, |r| match &checked {
                Ok(()) => r.address_accepted = true,
                Err(denial) => r.address_refused = Some(denial.reason.clone()),
            });
        }
        checked
    }
}

fn learned(dest: Destination) -> Allowed {
    Allowed {
        dest,
        rule: LEARN_RULE.to_string(),
        source: LEARN_SOURCE.to_string(),
    }
}

#[cfg(test)]
#[path = "learn_tests.rs"]
mod tests;
