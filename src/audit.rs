//! Audit events: one schema for every door, written as JSON lines.
//!
//! Each line is one [`Event`]. Its `prev` field is the hex SHA-256 of the
//! previous line of the same file (of the empty string for a file's first
//! line), so [`verify`] detects a line that was removed, inserted or edited
//! anywhere but at the very end. Several runs may append to one file: each
//! batch is written under an advisory lock (`flock`) with one `O_APPEND`
//! write, and chains from whatever line is last in the file at that moment.
//!
//! What an event never holds: argument values, URL paths or query strings,
//! header values, environment values. Subjects are host:port, paths, names.
//!
//! The supervisor opens the file with [`AuditLog::open`] before the sandbox
//! exists (an unwritable log is a refusal to run, not a silent loss), then
//! starts an [`Auditor`] whose writer thread takes the file writes off the
//! proxy's event loop.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Which door an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Door {
    /// Connections through the proxy.
    Network,
    /// Reads and writes of paths.
    Files,
    /// Secret files, variables, injected credentials.
    Credentials,
    /// System calls and other process-level restrictions.
    Process,
}

impl Door {
    /// What one blocked event of this door is called in the exit summary
    /// (singular, plural).
    fn noun(self) -> (&'static str, &'static str) {
        match self {
            Door::Network => ("network connection", "network connections"),
            Door::Files => ("file access", "file accesses"),
            Door::Credentials => ("credential access", "credential accesses"),
            Door::Process => ("process operation", "process operations"),
        }
    }
}

/// Whether the thing was let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Let through.
    Allow,
    /// Refused.
    Deny,
}

/// What an event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A decision about one attempt (a connection, an open, a call).
    Decision,
    /// The end of something allowed earlier (a connection's bytes and duration).
    Close,
    /// A resource limit was reached (reported once per run).
    Limit,
    /// Something the sandbox was built without (a secret variable left out
    /// of the command's environment); not counted as blocked at exit.
    Withheld,
}

/// The protocol a network event came in by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Proto {
    /// Absolute-form plain HTTP through the HTTP proxy.
    Http,
    /// A CONNECT tunnel through the HTTP proxy.
    Connect,
    /// A SOCKS5 CONNECT.
    Socks5,
    /// A UNIX socket path, named to connect or send to.
    Unix,
}

/// One audit event: one line of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// When it happened, RFC 3339 in UTC with milliseconds.
    pub time: String,
    /// The run it belongs to (`cordon-<supervisor pid>-<random id>`, as the cgroup).
    pub sandbox: String,
    /// The base name of the command's argv[0] (never its arguments).
    pub command: String,
    /// The door.
    pub door: Door,
    /// What the event records.
    pub event: Kind,
    /// Allowed or denied.
    pub verdict: Verdict,
    /// What was attempted: `host:port`, a path, a variable name, a syscall.
    pub subject: String,
    /// Where a network subject resolved to (`ip:port`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The rule that decided, as written in the policy (or the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where that rule came from: `built-in`, a file, a flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Why, in words, when the rule alone does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For network events: how the client asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<Proto>,
    /// For closed connections: bytes sent from the sandbox to the upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_up: Option<u64>,
    /// For closed connections: bytes sent from the upstream to the sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_down: Option<u64>,
    /// For closed connections: how long they were open, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Hex SHA-256 of the previous line of the file (of "" for the first).
    pub prev: String,
}

/// Subjects longer than this are cut (a host name is at most 253 bytes;
/// the cap keeps a hostile client from bloating the log).
const MAX_SUBJECT: usize = 512;

impl Event {
    /// An event stamped with the current time; [`Auditor::record`] fills in
    /// the run's sandbox id and command, the writer fills in `prev`.
    pub fn new(door: Door, event: Kind, verdict: Verdict, subject: impl Into<String>) -> Event {
        let mut subject: String = subject.into();
        if subject.len() > MAX_SUBJECT {
            let mut end = MAX_SUBJECT;
            while !subject.is_char_boundary(end) {
                end -= 1;
            }
            subject.truncate(end);
            subject.push('…');
        }
        Event {
            time: rfc3339_now(),
            sandbox: String::new(),
            command: String::new(),
            door,
            event,
            verdict,
            subject,
            address: None,
            rule: None,
            source: None,
            reason: None,
            proto: None,
            bytes_up: None,
            bytes_down: None,
            duration_ms: None,
            prev: String::new(),
        }
    }
}

/// Why the audit log could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The log file (or its directory) could not be created or opened.
    #[error("cannot open the audit log {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Writing to the log failed.
    #[error("cannot write the audit log {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// The hex SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `prev` of a file's first line: the hash of the empty string.
pub fn genesis() -> String {
    sha256_hex(b"")
}

/// An open audit log file: appends chained lines.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    /// `None` only while a batch holds it inside the lock.
    file: Option<File>,
    /// The file's length after our last write and the hash of its last
    /// line: when the length is unchanged, nobody else wrote since, and the
    /// tail need not be read again.
    tail: Option<(u64, String)>,
}

impl AuditLog {
    /// Opens (creating, mode 0600) `path` for appending. With
    /// `create_dir`, missing parent directories are created with mode 0700
    /// (for the default location; a path the user named must have its
    /// directory already).
    pub fn open(path: &Path, create_dir: bool) -> Result<AuditLog, AuditError> {
        let err = |source| AuditError::Open {
            path: path.to_path_buf(),
            source,
        };
        if create_dir {
            if let Some(dir) = path.parent() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(err)?;
            }
        }
        // O_APPEND: every write lands at the end, whoever else appends.
        // Readable too: the chain continues from the file's last line.
        // std opens with O_CLOEXEC, so the command never inherits it.
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(err)?;
        let meta = file.metadata().map_err(err)?;
        if !meta.is_file() {
            return Err(err(io::Error::other("not a regular file")));
        }
        Ok(AuditLog {
            path: path.to_path_buf(),
            file: Some(file),
            tail: None,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `events` as one batch: under an exclusive `flock`, chained
    /// from the file's current last line, in a single write.
    pub fn append(&mut self, events: &mut [Event]) -> Result<(), AuditError> {
        let Some(file) = self.file.take() else {
            return Err(self.write_err(io::Error::other("the log is not open")));
        };
        let locked = match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive) {
            Ok(locked) => locked,
            Err((file, errno)) => {
                self.file = Some(file);
                return Err(self.write_err(errno.into()));
            }
        };
        let result = self.append_locked(&locked, events);
        // Dropping the lock unlocks; the descriptor itself stays ours.
        match locked.unlock() {
            Ok(file) => self.file = Some(file),
            Err((locked, _)) => {
                // Unlocking failed: the file is still usable; the lock
                // goes when the descriptor closes.
                let file = locked.try_clone();
                drop(locked);
                self.file = file.ok();
            }
        }
        result
    }

    fn write_err(&self, source: io::Error) -> AuditError {
        AuditError::Write {
            path: self.path.clone(),
            source,
        }
    }

    fn append_locked(&mut self, file: &File, events: &mut [Event]) -> Result<(), AuditError> {
        let len = file.metadata().map_err(|e| self.write_err(e))?.len();
        let mut buf = Vec::new();
        let mut prev = match &self.tail {
            Some((at, hash)) if *at == len => hash.clone(),
            _ => {
                let (hash, terminated) =
                    last_line_hash(file, len).map_err(|e| self.write_err(e))?;
                if !terminated {
                    // A torn last line (a crash mid-write): end it, so
                    // ours start on a line of their own.
                    buf.push(b'\n');
                }
                hash
            }
        };
        for event in events.iter_mut() {
            event.prev = prev;
            let line = serde_json::to_vec(event)
                .map_err(|e| self.write_err(io::Error::other(e.to_string())))?;
            prev = sha256_hex(&line);
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        (&*file).write_all(&buf).map_err(|e| self.write_err(e))?;
        let len = file.metadata().map_err(|e| self.write_err(e))?.len();
        self.tail = Some((len, prev));
        Ok(())
    }
}

/// The hash of the last line of `file` (of `len` bytes), and whether the
/// file ends with a newline. An empty file gives [`genesis`].
fn last_line_hash(file: &File, len: u64) -> io::Result<(String, bool)> {
    if len == 0 {
        return Ok((genesis(), true));
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    let terminated = last[0] == b'\n';
    let end = if terminated { len - 1 } else { len };
    // Read backwards in chunks until the newline before the last line.
    let mut line: Vec<u8> = Vec::new();
    let mut pos = end;
    const CHUNK: u64 = 8192;
    while pos > 0 {
        let start = pos.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (pos - start) as usize];
        file.read_exact_at(&mut chunk, start)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            chunk.drain(..=i);
            chunk.extend_from_slice(&line);
            line = chunk;
            break;
        }
        chunk.extend_from_slice(&line);
        line = chunk;
        pos = start;
    }
    Ok((sha256_hex(&line), terminated))
}

/// Where the chain of a log breaks.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// Line `line` (from 1) is not a JSON object with a string `prev`.
    #[error("line {line}: not an audit event")]
    Malformed {
        /// The line, from 1.
        line: usize,
    },
    /// Line `line`'s `prev` is not the hash of the line before it: a line
    /// before it was removed or edited, or one was inserted.
    #[error(
        "line {line}: the chain breaks here (a line before it was removed, inserted or edited)"
    )]
    Broken {
        /// The line, from 1.
        line: usize,
    },
}

/// Checks the hash chain of a whole log; returns the number of events.
/// The first line must chain from the empty string: a log whose head was
/// cut off does not verify.
pub fn verify(text: &str) -> Result<usize, ChainError> {
    let mut expected = genesis();
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        let prev = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("prev").and_then(|p| p.as_str()).map(str::to_string))
            .ok_or(ChainError::Malformed { line: i + 1 })?;
        if prev != expected {
            return Err(ChainError::Broken { line: i + 1 });
        }
        expected = sha256_hex(line.as_bytes());
        count += 1;
    }
    Ok(count)
}

/// What a run blocked, for the line printed at exit.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Per door: blocked events by subject, in order of first appearance.
    blocked: Vec<(Door, Vec<(String, u64)>)>,
    /// Index of (door, subject) in `blocked`.
    index: HashMap<(Door, String), (usize, usize)>,
}

/// Refusals of one subject (per door) logged one by one; more are counted.
/// With [`MAX_SUBJECTS`], this bounds the refusals one run can log.
const LOGGED_REPEATS: u64 = 20;

/// Text safe to print on a terminal: control characters (a sandboxed
/// program chooses socket paths and host names) shown escaped, so they
/// cannot rewrite or hide what cordon says.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Distinct subjects remembered per door; more are counted under "others".
const MAX_SUBJECTS: usize = 1000;
/// Subjects named in the exit line, per door.
const SHOWN_SUBJECTS: usize = 5;

impl Summary {
    /// Counts one blocked `subject` of `door`; returns how many of it (or
    /// of "others", past the subjects remembered) were counted so far.
    pub fn count(&mut self, door: Door, subject: &str) -> u64 {
        if let Some(&(d, s)) = self.index.get(&(door, subject.to_string())) {
            self.blocked[d].1[s].1 += 1;
            return self.blocked[d].1[s].1;
        }
        let d = match self.blocked.iter().position(|(x, _)| *x == door) {
            Some(d) => d,
            None => {
                self.blocked.push((door, Vec::new()));
                self.blocked.len() - 1
            }
        };
        let subjects = &mut self.blocked[d].1;
        let subject = if subjects.len() >= MAX_SUBJECTS {
            "others"
        } else {
            subject
        };
        if let Some(s) = subjects.iter().position(|(x, _)| x == subject) {
            subjects[s].1 += 1;
            return subjects[s].1;
        }
        subjects.push((subject.to_string(), 1));
        self.index
            .insert((door, subject.to_string()), (d, subjects.len() - 1));
        1
    }

    /// How many events of `door` were blocked.
    pub fn blocked(&self, door: Door) -> u64 {
        self.blocked
            .iter()
            .filter(|(d, _)| *d == door)
            .flat_map(|(_, s)| s.iter().map(|(_, n)| n))
            .sum()
    }

    /// Whether nothing was blocked.
    pub fn is_empty(&self) -> bool {
        self.blocked.is_empty()
    }

    /// The exit line, e.g. `cordon: blocked 3 network connections
    /// (evil.example:443 ×2, 10.0.0.1:80); audit log: PATH`; `None` when
    /// nothing was blocked.
    pub fn line(&self, log: Option<&Path>) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut doors = self.blocked.clone();
        doors.sort_by_key(|(d, _)| *d);
        let parts: Vec<String> = doors
            .into_iter()
            .map(|(door, mut subjects)| {
                let total: u64 = subjects.iter().map(|(_, n)| n).sum();
                let (one, many) = door.noun();
                // Most frequent first; ties keep the order of first appearance.
                subjects.sort_by_key(|s| std::cmp::Reverse(s.1));
                let mut shown: Vec<String> = subjects
                    .iter()
                    .take(SHOWN_SUBJECTS)
                    .map(|(s, n)| {
                        let s = printable(s);
                        if *n > 1 {
                            format!("{s} ×{n}")
                        } else {
                            s
                        }
                    })
                    .collect();
                if subjects.len() > SHOWN_SUBJECTS {
                    shown.push(format!("{} more", subjects.len() - SHOWN_SUBJECTS));
                }
                let noun = if total == 1 { one } else { many };
                format!("{total} {noun} ({})", shown.join(", "))
            })
            .collect();
        let log = match log {
            Some(p) => format!("audit log: {}", p.display()),
            None => "no audit log (--audit none)".to_string(),
        };
        Some(format!("cordon: blocked {}; {log}", parts.join(", ")))
    }
}

struct Inner {
    sandbox: String,
    command: String,
    path: Option<PathBuf>,
    tx: Mutex<Option<mpsc::Sender<Event>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    summary: Mutex<Summary>,
}

/// The audit sink of one run: cheap to clone, safe to call from async code
/// (recording never waits for the disk). Counts what was blocked for the
/// exit summary even when the log is off.
#[derive(Clone)]
pub struct Auditor {
    inner: Arc<Inner>,
}

/// The base name of `argv0`, which is all of the command an event names.
pub fn command_name(argv0: &std::ffi::OsStr) -> String {
    Path::new(argv0)
        .file_name()
        .unwrap_or(argv0)
        .to_string_lossy()
        .into_owned()
}

impl Auditor {
    /// Starts the writer thread for `log` (none: the log is off). Start it
    /// after the sandbox is cloned: a thread alive across `fork` could hold
    /// a lock the child then waits on forever.
    pub fn start(log: Option<AuditLog>, sandbox: &str, command: &str) -> io::Result<Auditor> {
        let path = log.as_ref().map(|l| l.path().to_path_buf());
        let (tx, writer) = match log {
            Some(log) => {
                let (tx, rx) = mpsc::channel::<Event>();
                let handle = std::thread::Builder::new()
                    .name("cordon-audit".into())
                    .spawn(move || write_loop(log, rx))?;
                (Some(tx), Some(handle))
            }
            None => (None, None),
        };
        Ok(Auditor {
            inner: Arc::new(Inner {
                sandbox: sandbox.to_string(),
                command: command.to_string(),
                path,
                tx: Mutex::new(tx),
                writer: Mutex::new(writer),
                summary: Mutex::new(Summary::default()),
            }),
        })
    }

    /// An auditor that writes nothing (for tests and the standalone proxy).
    pub fn disabled() -> Auditor {
        Auditor {
            inner: Arc::new(Inner {
                sandbox: String::new(),
                command: String::new(),
                path: None,
                tx: Mutex::new(None),
                writer: Mutex::new(None),
                summary: Mutex::new(Summary::default()),
            }),
        }
    }

    /// The log file, if the log is on.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Records `event` (denied decisions also count for the summary).
    pub fn record(&self, event: Event) {
        if event.verdict == Verdict::Deny && event.event == Kind::Decision {
            // A sandbox repeating a refused attempt must not flood the
            // host's disk: past a few, repeats are only counted (the exit
            // summary has them all), and one event says so.
            let seen = self.count_blocked(event.door, &event.subject);
            if seen > LOGGED_REPEATS {
                if seen == LOGGED_REPEATS + 1 {
                    let mut limit = Event::new(
                        event.door,
                        Kind::Limit,
                        Verdict::Deny,
                        event.subject.clone(),
                    );
                    limit.rule = event.rule.clone();
                    limit.reason = Some(format!(
                        "refused {LOGGED_REPEATS} times: further refusals of it are counted in the exit summary, not logged one by one"
                    ));
                    self.send(limit);
                }
                return;
            }
        }
        self.send(event);
    }

    fn send(&self, mut event: Event) {
        event.sandbox.clone_from(&self.inner.sandbox);
        event.command.clone_from(&self.inner.command);
        if let Ok(tx) = self.inner.tx.lock() {
            if let Some(tx) = tx.as_ref() {
                let _ = tx.send(event);
            }
        }
    }

    /// Counts a blocked attempt for the summary without logging it (for
    /// floods, which one [`Kind::Limit`] event stands for).
    pub fn count_blocked(&self, door: Door, subject: &str) -> u64 {
        self.inner
            .summary
            .lock()
            .map(|mut s| s.count(door, subject))
            .unwrap_or(0)
    }

    /// Writes what is queued, stops the writer, and returns the summary.
    /// Events recorded afterwards are dropped.
    pub fn finish(&self) -> Summary {
        // Dropping the only sender ends the writer's loop once it has
        // written everything queued.
        if let Ok(mut tx) = self.inner.tx.lock() {
            tx.take();
        }
        let writer = self.inner.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(w) = writer {
            let _ = w.join();
        }
        self.inner
            .summary
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }
}

/// Most events written in one locked batch.
const MAX_BATCH: usize = 1024;
/// How long the writer rests after a batch, letting the next events
/// gather: under a burst of connections it wakes some hundred times a
/// second instead of twice per connection, which cost the proxy's clients
/// about 40 µs a request on two CPUs. Events wait no longer than this.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);

fn write_loop(mut log: AuditLog, rx: mpsc::Receiver<Event>) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(e) => batch.push(e),
                Err(_) => break,
            }
        }
        if let Err(e) = log.append(&mut batch) {
            // The run is under way; stopping it would lose the user's work.
            // Say so, once, loudly.
            if !WARNED.swap(true, Ordering::Relaxed) {
                eprintln!("cordon: WARNING: {e}; audit events of this run are being lost");
            }
        }
        std::thread::sleep(GATHER);
    }
}

/// Now as RFC 3339 in UTC with milliseconds: `2026-11-30T05:58:01.234Z`.
pub fn rfc3339_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since.as_secs(), since.subsec_millis())
}

/// `secs` since the epoch (and `millis`) as RFC 3339 in UTC.
pub fn rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`). Shared with the sandbox
/// CA's certificate validity dates.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(subject: &str, verdict: Verdict) -> Event {
        let mut e = Event::new(Door::Network, Kind::Decision, verdict, subject);
        e.sandbox = "cordon-1-ab".into();
        e.command = "curl".into();
        e.rule = Some("evil.example".into());
        e.source = Some("flag --deny-domain".into());
        e.proto = Some(Proto::Connect);
        e
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn time_format() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 7), "2000-02-29T00:00:00.007Z");
        assert_eq!(rfc3339(1_796_004_000 + 59, 999), "2026-11-30T02:00:59.999Z");
        assert_eq!(rfc3339(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
        let now = rfc3339_now();
        assert_eq!(now.len(), 24, "{now}");
        assert!(now.ends_with('Z') && now.starts_with("20"), "{now}");
    }

    #[test]
    fn chain_json_shape_and_append_to_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/audit.jsonl");
        assert!(
            AuditLog::open(&path, false).is_err(),
            "no dir, not asked to create"
        );
        let mut log = AuditLog::open(&path, true).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        log.append(&mut [event("a.example:443", Verdict::Allow)])
            .unwrap();
        log.append(&mut [
            event("b.example:443", Verdict::Deny),
            event("c.example:80", Verdict::Deny),
        ])
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(verify(&text), Ok(3));
        let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(first["prev"], genesis());
        assert_eq!(
            genesis(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(first["door"], "network");
        assert_eq!(first["verdict"], "allow");
        assert_eq!(first["event"], "decision");
        assert_eq!(first["proto"], "connect");
        assert_eq!(first["subject"], "a.example:443");
        assert_eq!(first["sandbox"], "cordon-1-ab");
        assert_eq!(first["command"], "curl");
        assert_eq!(first["rule"], "evil.example");
        assert_eq!(first["source"], "flag --deny-domain");
        assert!(first.get("bytes_up").is_none(), "absent fields are omitted");
        let second: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(second["prev"], sha256_hex(lines[0].as_bytes()));
        // Round trip.
        let back: Event = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(back.subject, "c.example:80");

        // Another run (another handle) appends to the existing file, chaining
        // from its last line; so does the first handle after that.
        let mut other = AuditLog::open(&path, false).unwrap();
        other
            .append(&mut [event("d.example:443", Verdict::Deny)])
            .unwrap();
        log.append(&mut [event("e.example:443", Verdict::Deny)])
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(verify(&text), Ok(5));
        let lines: Vec<&str> = text.lines().collect();
        let fourth: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
        assert_eq!(fourth["prev"], sha256_hex(lines[2].as_bytes()));
    }

    #[test]
    fn verify_detects_edits_removals_and_insertions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut log = AuditLog::open(&path, false).unwrap();
        for s in ["a:1", "b:2", "c:3", "d:4"] {
            log.append(&mut [event(s, Verdict::Deny)]).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(verify(&text), Ok(4));
        let lines: Vec<&str> = text.lines().collect();
        let join = |v: Vec<&str>| v.join("\n") + "\n";
        let removed = join(vec![lines[0], lines[2], lines[3]]);
        assert_eq!(verify(&removed), Err(ChainError::Broken { line: 2 }));
        let edited_line = lines[1].replace("b:2", "z:2");
        let edited = join(vec![lines[0], &edited_line, lines[2], lines[3]]);
        assert_eq!(verify(&edited), Err(ChainError::Broken { line: 3 }));
        let head_cut = join(lines[1..].to_vec());
        assert_eq!(verify(&head_cut), Err(ChainError::Broken { line: 1 }));
        let junk = join(vec![lines[0], "not json"]);
        assert_eq!(verify(&junk), Err(ChainError::Malformed { line: 2 }));
    }

    #[test]
    fn torn_last_line_is_terminated_and_chained() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"prev\":\"x\"").unwrap();
        let mut log = AuditLog::open(&path, false).unwrap();
        log.append(&mut [event("a:1", Verdict::Deny)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let ours: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(ours["prev"], sha256_hex(b"{\"prev\":\"x\""));
    }

    #[test]
    fn long_last_line_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let long = format!("{{\"prev\":\"{}\"}}", "y".repeat(20_000));
        std::fs::write(&path, format!("first\n{long}\n")).unwrap();
        let mut log = AuditLog::open(&path, false).unwrap();
        log.append(&mut [event("a:1", Verdict::Deny)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["prev"], sha256_hex(long.as_bytes()));
    }

    #[test]
    fn auditor_writes_in_order_and_summarises() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, false).unwrap();
        let auditor = Auditor::start(Some(log), "cordon-9-cd", "python3").unwrap();
        for i in 0..50 {
            auditor.record(event(&format!("h{}.example:443", i % 3), Verdict::Deny));
        }
        auditor.record(event("ok.example:443", Verdict::Allow));
        auditor.count_blocked(Door::Network, "(over the connection cap)");
        let summary = auditor.finish();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(verify(&text), Ok(51));
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["sandbox"], "cordon-9-cd");
        assert_eq!(first["command"], "python3");
        assert_eq!(first["subject"], "h0.example:443");
        assert_eq!(summary.blocked(Door::Network), 51);
        assert_eq!(
            summary.line(Some(&path)).unwrap(),
            format!(
                "cordon: blocked 51 network connections (h0.example:443 ×17, h1.example:443 ×17, h2.example:443 ×16, (over the connection cap)); audit log: {}",
                path.display()
            )
        );
        // After finish, events are dropped, not written.
        auditor.record(event("late.example:443", Verdict::Deny));
        assert_eq!(verify(&std::fs::read_to_string(&path).unwrap()), Ok(51));
    }

    #[test]
    fn summary_lines() {
        let mut s = Summary::default();
        assert_eq!(s.line(None), None);
        s.count(Door::Network, "evil.example:443");
        assert_eq!(
            s.line(None).unwrap(),
            "cordon: blocked 1 network connection (evil.example:443); no audit log (--audit none)"
        );
        for i in 0..7 {
            s.count(Door::Network, &format!("h{i}:80"));
        }
        s.count(Door::Network, "h3:80");
        let line = s.line(Some(Path::new("/l"))).unwrap();
        assert_eq!(
            line,
            "cordon: blocked 9 network connections (h3:80 ×2, evil.example:443, h0:80, h1:80, h2:80, 3 more); audit log: /l"
        );
    }

    #[test]
    fn command_names_and_long_subjects() {
        assert_eq!(command_name("/usr/bin/python3".as_ref()), "python3");
        assert_eq!(command_name("sh".as_ref()), "sh");
        let e = Event::new(
            Door::Network,
            Kind::Decision,
            Verdict::Deny,
            "é".repeat(400),
        );
        assert!(e.subject.len() <= MAX_SUBJECT + 3, "{}", e.subject.len());
    }
}
