//! Ask mode (`cordon run --ask`): a connection to a destination no rule
//! names is held while the user is asked at the terminal, outside the
//! sandbox, whether to let it through: once, for the rest of this
//! sandbox, for good (saved to the user config), or not. No answer in
//! time is a refusal.
//!
//! [`AskingGate`] is the proxy's side: it asks only where the policy
//! refuses for want of a rule (a deny rule, the address guard and names
//! that do not normalise are never asked about), and the address guard
//! still checks what an allowed name resolves to. [`Asker`] holds the
//! questions; the supervisor's terminal prompt takes them one at a time
//! (see `crate::sandbox::ask_prompt`), woken through an eventfd.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Arc, Mutex};

use nix::sys::eventfd::{EfdFlags, EventFd};
use tokio::sync::oneshot;

use super::gate::{destination, PolicyGate};
use super::proxy::{Allowed, Denial, Gate};
use crate::policy::host::{normalize, DenyReason, HostPolicy, Target, Verdict};

/// What the user answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Let this connection through.
    Once,
    /// Let every connection to it through, for the rest of the sandbox.
    Sandbox,
    /// As [`Answer::Sandbox`], and the rule was saved to this file.
    Saved(String),
    /// Refuse it, for the rest of the sandbox.
    Deny,
    /// Refuse it and every question waiting, and ask nothing more: what no
    /// rule allows is refused for the rest of the sandbox.
    StopAsking,
    /// Refused without asking: [`MAX_WAITING`] questions waited already,
    /// or the user stopped the asking.
    NotAsked,
    /// No answer in time: refuse this connection (the next one asks again).
    NoAnswer,
}

/// One destination waiting for an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// The destination as the prompt shows it (`host:port`).
    pub shown: String,
    /// The rule that allows it, as a policy file writes it.
    pub rule: String,
    /// Why letting it through may hand the sandbox the host (a container
    /// engine's API port on the host's loopback); such a question offers
    /// no "always".
    pub warning: Option<String>,
}

struct Waiting {
    question: Question,
    replies: Vec<oneshot::Sender<Answer>>,
}

/// The most questions that wait at once; a command that asks about
/// thousands of hosts gets the rest refused at once rather than holding
/// the user (and its connections) for a timeout each.
pub const MAX_WAITING: usize = 16;

#[derive(Default)]
struct State {
    /// In the order asked; the first is the one on screen.
    waiting: VecDeque<Waiting>,
    /// What the user decided for the rest of the sandbox, by `shown`.
    decided: HashMap<String, bool>,
    /// The user stopped the asking.
    stopped: bool,
}

/// The questions, between the proxy and the terminal prompt.
pub struct Asker {
    state: Mutex<State>,
    /// Readable when a question is waiting.
    wake: EventFd,
}

impl Asker {
    /// An asker with nothing to ask yet.
    pub fn new() -> std::io::Result<Arc<Asker>> {
        Ok(Arc::new(Asker {
            state: Mutex::new(State::default()),
            wake: EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)?,
        }))
    }

    /// Readable when there is a question (for the prompt's poll); read it
    /// with [`Asker::next`].
    pub fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// The question to show now, if any (it stays until answered).
    pub fn next(&self) -> Option<Question> {
        // Drained: the state below says what waits (EAGAIN: nothing did).
        let _ = self.wake.read();
        let state = self.state.lock().ok()?;
        state.waiting.front().map(|w| w.question.clone())
    }

    /// Answers the question on screen: every connection waiting for it
    /// gets `answer`, and what holds for the rest of the sandbox is kept.
    pub fn answer(&self, answer: Answer) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let Some(done) = state.waiting.pop_front() else {
            return;
        };
        if answer == Answer::StopAsking {
            state.stopped = true;
            for waiting in state.waiting.drain(..) {
                for reply in waiting.replies {
                    let _ = reply.send(Answer::NotAsked);
                }
            }
        }
        match answer {
            Answer::Sandbox | Answer::Saved(_) => {
                state.decided.insert(done.question.shown.clone(), true);
            }
            Answer::Deny => {
                state.decided.insert(done.question.shown.clone(), false);
            }
            Answer::Once | Answer::NoAnswer | Answer::StopAsking | Answer::NotAsked => {}
        }
        for reply in done.replies {
            let _ = reply.send(answer.clone());
        }
        if !state.waiting.is_empty() {
            self.signal();
        }
    }

    /// Wakes the prompt (a full counter already wakes it).
    fn signal(&self) {
        let _ = self.wake.write(1);
    }

    /// Asks about `question`, or answers from what the user decided
    /// already for this sandbox; waits for the answer.
    async fn ask(&self, question: Question) -> Answer {
        let receiver = {
            let Ok(mut state) = self.state.lock() else {
                return Answer::NoAnswer;
            };
            match state.decided.get(&question.shown) {
                Some(true) => return Answer::Sandbox,
                Some(false) => return Answer::Deny,
                None if state.stopped => return Answer::NotAsked,
                None => {}
            }
            let (reply, receiver) = oneshot::channel();
            let full = state.waiting.len() >= MAX_WAITING;
            match state
                .waiting
                .iter_mut()
                .find(|w| w.question.shown == question.shown)
            {
                Some(waiting) => waiting.replies.push(reply),
                None if full => return Answer::NotAsked,
                None => {
                    state.waiting.push_back(Waiting {
                        question,
                        replies: vec![reply],
                    });
                    self.signal();
                }
            }
            receiver
        };
        // The prompt gone (cordon ending): no answer.
        receiver.await.unwrap_or(Answer::NoAnswer)
    }
}

/// The names systems give their own loopback (RFC 6761's `localhost`,
/// and those `/etc/hosts` files commonly hold); `*.localhost` too.
const LOOPBACK_NAMES: &[&str] = &[
    "localhost",
    "localhost.localdomain",
    "ip6-localhost",
    "ip6-loopback",
];

/// The source of what the user let through, as the audit log and the
/// exit summary show it.
pub const ASK_SOURCE: &str = "the user at the terminal (--ask)";

/// A [`PolicyGate`] that asks the user where no rule names a destination.
pub struct AskingGate {
    inner: PolicyGate,
    asker: Arc<Asker>,
}

impl AskingGate {
    /// Asks through `asker`, on top of `policy`.
    pub fn new(policy: HostPolicy, asker: Arc<Asker>) -> AskingGate {
        AskingGate {
            inner: PolicyGate::new(policy),
            asker,
        }
    }

    /// The question about `target` on `port`, if the policy refuses it for
    /// want of a rule only.
    fn question(&self, target: &Target, port: u16) -> Option<Question> {
        let askable = matches!(
            self.inner.policy().decide(target, port),
            Verdict::Deny {
                reason: DenyReason::NotAllowed
                    | DenyReason::IpLiteral
                    | DenyReason::Port
                    | DenyReason::HostInternal,
                ..
            }
        );
        // A name of this machine's own loopback (RFC 6761): the address
        // guard refuses what it resolves to, allowed or not, so a rule
        // saved for it would only be junk.
        let loopback_name = matches!(target, Target::Name(n) if n.ends_with(".localhost") || LOOPBACK_NAMES.contains(&n.as_str()));
        if !askable || loopback_name {
            return None;
        }
        let shown = target.with_port(port);
        let default_port = self.inner.policy().ports.value.contains(&port);
        let rule = match target {
            Target::Name(_) if default_port && !target.is_host_internal() => target.to_string(),
            _ => shown.clone(),
        };
        let warning = target
            .is_host_internal()
            .then(|| crate::policy::ports::root_equivalent_port(port))
            .flatten();
        Some(Question {
            shown,
            rule,
            warning,
        })
    }
}

impl Gate for AskingGate {
    fn check_destination(&self, host: &str, port: u16) -> Result<Allowed, Denial> {
        self.inner.check_destination(host, port)
    }

    async fn decide(&self, host: &str, port: u16) -> Result<Allowed, Denial> {
        let decided = self.inner.check_destination(host, port);
        let Err(mut denial) = decided else {
            return decided;
        };
        let Ok(target) = normalize(host) else {
            return Err(denial);
        };
        let Some(question) = self.question(&target, port) else {
            return Err(denial);
        };
        // An IP literal is not resolved later: the address guard's answer
        // now, before anyone is asked about what it refuses anyway.
        if let Target::Ip(ip) = target {
            self.inner.check_literal(ip, port)?;
        }
        let rule = question.rule.clone();
        let how = match self.asker.ask(question).await {
            Answer::Once => "allowed once".to_string(),
            Answer::Sandbox => "allowed for this sandbox".to_string(),
            Answer::Saved(file) => format!("allowed, and saved to {file}"),
            answer @ (Answer::Deny | Answer::NoAnswer | Answer::StopAsking | Answer::NotAsked) => {
                let why = match answer {
                    Answer::Deny | Answer::StopAsking => "refused when asked",
                    Answer::NotAsked => {
                        "not asked (the user stopped the asking, or too many questions waited), so refused"
                    }
                    _ => "no answer in time when asked, so refused",
                };
                denial.reason = format!("{}; {why}", denial.reason);
                denial.source = ASK_SOURCE.to_string();
                return Err(denial);
            }
        };
        Ok(Allowed {
            dest: destination(target),
            rule: format!("{rule} ({how})"),
            source: ASK_SOURCE.to_string(),
        })
    }

    fn check_address(&self, host: &str, addr: std::net::IpAddr, port: u16) -> Result<(), Denial> {
        self.inner.check_address(host, addr, port)
    }
}

#[cfg(test)]
#[path = "ask_tests.rs"]
mod tests;
