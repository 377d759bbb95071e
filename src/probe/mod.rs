//! `cordon probe`: prove the boundary from inside.
//!
//! The outside half ([`run`]) prepares canaries on the host (a TCP
//! listener on the host's loopback, host UNIX sockets by path and abstract
//! name, a process, an environment variable, a denied file in the project,
//! a marker in the host's own `/tmp`), builds the sandbox exactly as
//! `cordon run` would with the same policy, and runs cordon's own binary
//! inside it in a hidden mode (`cordon probe-inside`, [`inside::run`]). That
//! half makes each attempt and prints the results as JSON; the outside
//! cross-checks what its canaries saw, removes every fixture, and renders
//! the table.
//!
//! Each probe is an honest attempt that would succeed without the sandbox.
//! Where it would not succeed on this host anyway (no route out, not root,
//! a kernel switch), the outside finds out first, without the sandbox, and
//! the probe says `n/a` rather than claiming a block it did not prove.

pub mod host;
pub mod inside;

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use host::{run, ProbeError};

/// The door a probe tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Door {
    /// What the sandbox may read and write.
    Files,
    /// Where it may connect.
    Network,
    /// Which secrets it may see.
    Credentials,
    /// What it may do to other processes and to the kernel.
    Process,
}

impl std::fmt::Display for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Door::Files => "files",
            Door::Network => "network",
            Door::Credentials => "credentials",
            Door::Process => "process",
        })
    }
}

/// What the sandbox should make of the attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// The attempt must fail.
    Blocked,
    /// The attempt must succeed (the sandbox must not be too tight).
    Works,
    /// The thing looked for must not be there (a variable, a secret).
    Absent,
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Expect::Blocked => "blocked",
            Expect::Works => "works",
            Expect::Absent => "absent",
        })
    }
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The attempt failed.
    Refused,
    /// The attempt succeeded (or the thing looked for was there).
    Succeeded,
    /// Nothing to attempt: the target does not exist on this host.
    Absent,
    /// Not attempted: it would not succeed without the sandbox either.
    Skipped,
}

/// How a probe's outcome compares with what was expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// As expected.
    Ok,
    /// A door is open: something that must fail succeeded.
    Open,
    /// Something that must work failed.
    Broken,
    /// Not applicable here.
    NotApplicable,
}

/// One probe and its result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Probe {
    /// The door it tests.
    pub door: Door,
    /// What was attempted.
    pub name: String,
    /// What the sandbox should make of it.
    pub expected: Expect,
    /// What happened.
    pub outcome: Outcome,
    /// What the kernel said (an errno, a status line), never a secret.
    pub detail: String,
    /// The result column (`blocked`, `OPEN`, `works`, ...), filled in by
    /// [`Report::new`] for `--json` readers.
    #[serde(default)]
    pub result: String,
    /// How the outcome compares with the expectation, filled in by
    /// [`Report::new`].
    #[serde(default)]
    pub verdict: Option<Verdict>,
}

impl Probe {
    /// How the outcome compares with the expectation.
    pub fn verdict(&self) -> Verdict {
        match (self.expected, self.outcome) {
            (_, Outcome::Skipped) => Verdict::NotApplicable,
            (Expect::Blocked | Expect::Absent, Outcome::Succeeded) => Verdict::Open,
            (Expect::Works, Outcome::Refused) => Verdict::Broken,
            (Expect::Works, Outcome::Absent) => Verdict::NotApplicable,
            _ => Verdict::Ok,
        }
    }

    /// The result column: lower case when as expected, upper case when not.
    pub fn result_word(&self) -> &'static str {
        match (self.expected, self.outcome) {
            (_, Outcome::Skipped) => "n/a",
            (Expect::Blocked, Outcome::Refused) => "blocked",
            (Expect::Absent, Outcome::Refused) => "absent",
            (_, Outcome::Absent) => "absent",
            (Expect::Blocked, Outcome::Succeeded) => "OPEN",
            (Expect::Absent, Outcome::Succeeded) => "PRESENT",
            (Expect::Works, Outcome::Succeeded) => "works",
            (Expect::Works, Outcome::Refused) => "FAILED",
        }
    }
}

/// What the outside half tells the inside half: where the canaries are,
/// and what this host allows without the sandbox. Passed as one JSON
/// argument; it names canaries, never a real secret.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Spec {
    /// The caller's home directory.
    pub home: PathBuf,
    /// The project directory.
    pub project: PathBuf,
    /// Directories to create a file in, each with whether the caller could
    /// without the sandbox: (label, path, writable outside).
    pub create_in: Vec<(String, PathBuf, bool)>,
    /// Each entry of the credential deny list under the home.
    pub credentials: Vec<CredentialPath>,
    /// A file the probe's policy denies, with its content (a canary).
    pub denied_file: Option<(PathBuf, String)>,
    /// A file in the host's own `/tmp`, which the sandbox must not see.
    pub host_tmp_marker: Option<PathBuf>,
    /// The host's loopback TCP canary's port.
    pub tcp_port: Option<u16>,
    /// A host UNIX socket canary, by path (where the sandbox sees it).
    pub unix_path: Option<PathBuf>,
    /// A host UNIX socket canary in the abstract namespace.
    pub unix_abstract: Option<String>,
    /// The canary process outside.
    pub canary_pid: Option<i32>,
    /// A word the canary process's command line holds.
    pub canary_tag: String,
    /// The canary variable's name and the SHA-256 of its value (the value
    /// itself stays out of the sandbox's command line).
    pub env_canary: (String, String),
    /// A variable with an innocent name whose value has a secret's shape,
    /// which the scrub must find by value: its name and the SHA-256 of
    /// its value.
    pub value_canary: (String, String),
    /// Secret-like names of the caller's environment (names only).
    pub secret_names: Vec<String>,
    /// The SHA-256 of each of the host's MAC addresses (the addresses
    /// themselves stay out of the sandbox).
    pub host_macs: Vec<String>,
    /// The host's resolver, as /etc/resolv.conf names it.
    pub resolver: Option<SocketAddr>,
    /// Proxy targets (`host:port`) with what the policy expects of each.
    pub proxy: Vec<ProxyTarget>,
    /// What this host allows without the sandbox.
    pub host: HostFacts,
    /// The user's audit key, when there is one or the run makes it (the
    /// sandbox must not read it: whoever holds it can forge the log).
    #[serde(default)]
    pub audit_key: Option<PathBuf>,
    /// The caller's terminal descriptors among stdin, stdout and stderr,
    /// as `dev:ino:rdev` (no descriptor inside may be one of them).
    #[serde(default)]
    pub caller_terminals: Vec<String>,
}

/// One entry of the credential deny list, as the host sees it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CredentialPath {
    /// Relative to the home, as the list names it.
    pub rel: String,
    /// Absolute.
    pub path: PathBuf,
    /// Whether the host has it.
    pub exists: bool,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// Size of the file, or number of entries of the directory.
    pub size: u64,
}

/// A destination for the proxy probes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProxyTarget {
    /// The probe's name.
    pub name: String,
    /// `host:port`, as sent in CONNECT.
    pub target: String,
    /// Refused, or (allowed by the policy) must work.
    pub expected: Expect,
    /// Why it is not probed, if it is not.
    pub skip: Option<String>,
}

/// What works on this host without the sandbox, found out by the outside
/// half with harmless calls (a route lookup, a socket that is closed at
/// once, a map that is freed at once), never by sending anything.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HostFacts {
    /// cordon's caller is root.
    pub root: bool,
    /// An IPv4 route out exists.
    pub udp_route: bool,
    /// An IPv6 route out exists.
    pub ipv6_route: bool,
    /// The caller may open a raw socket.
    pub raw_socket: bool,
    /// The caller may create a BPF map.
    pub bpf: bool,
    /// The caller may set up an io_uring.
    pub io_uring: bool,
    /// The caller may use keyctl.
    pub keyctl: bool,
    /// The caller may create a user namespace.
    pub user_namespaces: bool,
    /// cordon was started from a terminal (`/dev/tty` opens).
    pub terminal: bool,
    /// The kernel can load modules at all.
    pub modules: bool,
    /// The caller can follow the host's `/proc/1/root`.
    pub proc1_root: bool,
    /// The host's `/sys/firmware` lists entries.
    pub firmware: bool,
    /// The caller can read `/proc/kpageflags` (root).
    pub page_maps: bool,
}

/// The whole result.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    /// Every probe, in the order made.
    pub probes: Vec<Probe>,
    /// Probes that found a door open.
    pub open: usize,
    /// Probes that found something that must work failing.
    pub broken: usize,
}

impl Report {
    /// Counts the verdicts.
    pub fn new(mut probes: Vec<Probe>) -> Report {
        for p in &mut probes {
            p.result = p.result_word().to_string();
            p.verdict = Some(p.verdict());
        }
        let count = |v| probes.iter().filter(|p| p.verdict() == v).count();
        let open = count(Verdict::Open);
        let broken = count(Verdict::Broken);
        Report {
            probes,
            open,
            broken,
        }
    }

    /// The exit code: 0 when every door held and everything that must
    /// work worked, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.open == 0 && self.broken == 0 {
            0
        } else {
            1
        }
    }
}

/// The table: door, probe, expected, result, detail. Credential paths that
/// do not exist on this host are summed up in one line.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let absent: Vec<&str> = report
        .probes
        .iter()
        .filter(|p| p.outcome == Outcome::Absent && p.name.starts_with("read ~/"))
        .map(|p| p.name.trim_start_matches("read ~/"))
        .collect();
    let shown: Vec<&Probe> = report
        .probes
        .iter()
        .filter(|p| !(p.outcome == Outcome::Absent && p.name.starts_with("read ~/")))
        .collect();
    let width = shown.iter().map(|p| p.name.len()).max().unwrap_or(5);
    out.push_str(&format!(
        "{:<12} {:<width$} {:<8} {:<8} {}\n",
        "DOOR", "PROBE", "EXPECTED", "RESULT", "DETAIL"
    ));
    for p in shown {
        out.push_str(&format!(
            "{:<12} {:<width$} {:<8} {:<8} {}\n",
            p.door.to_string(),
            p.name,
            p.expected.to_string(),
            p.result_word(),
            p.detail
        ));
    }
    if !absent.is_empty() {
        out.push_str(&format!(
            "{:<12} {:<width$} {:<8} {:<8} not on this host: {}\n",
            "files",
            format!("read {} other credential paths", absent.len()),
            "blocked",
            "absent",
            absent.join(", ")
        ));
    }
    let total = report.probes.len();
    let na = report
        .probes
        .iter()
        .filter(|p| p.verdict() == Verdict::NotApplicable)
        .count();
    out.push('\n');
    if report.open == 0 && report.broken == 0 {
        out.push_str(&format!(
            "cordon probe: {total} probes, every door held ({na} not applicable here).\n"
        ));
    } else {
        out.push_str(&format!(
            "cordon probe: {total} probes: {} door(s) OPEN, {} thing(s) that must work FAILED ({na} not applicable here).\n",
            report.open, report.broken
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(expected: Expect, outcome: Outcome) -> Probe {
        Probe {
            door: Door::Files,
            name: "x".into(),
            expected,
            outcome,
            detail: String::new(),
            result: String::new(),
            verdict: None,
        }
    }

    #[test]
    fn verdicts() {
        assert_eq!(
            probe(Expect::Blocked, Outcome::Refused).verdict(),
            Verdict::Ok
        );
        assert_eq!(
            probe(Expect::Blocked, Outcome::Succeeded).verdict(),
            Verdict::Open
        );
        assert_eq!(
            probe(Expect::Absent, Outcome::Succeeded).verdict(),
            Verdict::Open
        );
        assert_eq!(
            probe(Expect::Works, Outcome::Refused).verdict(),
            Verdict::Broken
        );
        assert_eq!(
            probe(Expect::Blocked, Outcome::Skipped).verdict(),
            Verdict::NotApplicable
        );
        let r = Report::new(vec![
            probe(Expect::Blocked, Outcome::Refused),
            probe(Expect::Works, Outcome::Succeeded),
        ]);
        assert_eq!(r.exit_code(), 0);
        let r = Report::new(vec![probe(Expect::Blocked, Outcome::Succeeded)]);
        assert_eq!((r.open, r.exit_code()), (1, 1));
    }
}
