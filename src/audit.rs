//! Audit events: one schema for every door, written as JSON lines.
//!
//! Each line is one [`Event`], authenticated with HMAC-SHA256 under the
//! user's audit key ([`AuditKey`], a random file in the user's cordon state
//! directory that no sandbox can read or write). A line carries its place
//! in the file (`seq`, from 1), the MAC of the line before it (`prev`, ""
//! for the first) and, last, its own `mac` over everything before that
//! field. So [`verify`] tells a line that was edited, deleted, moved or
//! written without the key (another key, or the unkeyed SHA-256 chain of
//! older cordon versions) from an honest one, and names it. What the MACs
//! cannot show alone is lines cut off the end, or the whole file emptied
//! or replaced: after every batch, the writer records the last line it
//! wrote per chain ([`TailRecord`]) and per file ([`LogRecord`]) next to
//! the key, which `cordon log --verify` ([`verify_log`]) compares with the
//! file.
//!
//! The log may lie where a sandbox can write: nothing at its path, nor at
//! the key's or the records', is followed ([`AuditFile::open`]).
//!
//! Several runs may append to one file: each batch is written under an
//! advisory lock (`flock`) with one `O_APPEND` write, and chains from
//! whatever line is last in the file at that moment.
//!
//! What an event never holds: argument values, URL paths or query strings,
//! header values, environment values. Subjects are host:port, paths, names.
//!
//! The supervisor opens the file with [`AuditFile::open`] before the sandbox
//! exists (an unwritable log is a refusal to run, not a silent loss), keys
//! it once the sandbox is forked (the key never enters the sandbox's
//! memory), then starts an [`Auditor`] whose writer thread takes the file
//! writes off the proxy's event loop.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::policy::keys::shell_word;
use crate::sys;

pub use crate::escape::printable;

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
    /// Its name, as the log and `cordon log --door` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Door::Network => "network",
            Door::Files => "files",
            Door::Credentials => "credentials",
            Door::Process => "process",
        }
    }

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Let through.
    Allow,
    /// Refused.
    Deny,
}

/// What an event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// A connection to a host port (`--host-port`) on the sandbox's own
    /// loopback, forwarded to the host's.
    HostPort,
    /// A connection from the host to a published port (`--publish`).
    Publish,
    /// A bind or connect on the sandbox's own loopback, which the kernel
    /// refused or where nothing listened.
    Local,
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
    /// For refusals: what would allow it (the flag and the TOML line), or
    /// why nothing does; the exit summary says it beside the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
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
    /// The line's place in its file, from 1 (filled in by the writer).
    #[serde(default)]
    pub seq: u64,
    /// The hex MAC of the previous line of the file ("" for the first).
    pub prev: String,
    /// The hex HMAC-SHA256, under the user's audit key, of the line up to
    /// this field; always the line's last field (filled in by the writer).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac: String,
}

/// Subjects longer than this are cut (a host name is at most 253 bytes;
/// the cap keeps a hostile client from bloating the log).
const MAX_SUBJECT: usize = 512;

impl Event {
    /// An event stamped with the current time; [`Auditor::record`] fills in
    /// the run's sandbox id and command, the writer fills in `prev`.
    pub fn new(door: Door, event: Kind, verdict: Verdict, subject: impl Into<String>) -> Event {
        let mut subject: String = subject.into();
        cut(&mut subject, MAX_SUBJECT);
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
            fix: None,
            proto: None,
            bytes_up: None,
            bytes_down: None,
            duration_ms: None,
            seq: 0,
            prev: String::new(),
            mac: String::new(),
        }
    }
}

/// Cuts `text` to at most `max` bytes (at a character boundary), marked
/// with `…` when cut.
fn cut(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
}

/// Why the audit log could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The log file (or its directory) could not be created or opened.
    #[error("cannot open the audit log {}: {source}", printable(path))]
    Open {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Writing to the log failed.
    #[error("cannot write the audit log {}: {source}", printable(path))]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The audit key could not be made or read, or is not safe to use.
    #[error("the audit key {}: {problem}", printable(path))]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong, and what to do about it.
        problem: String,
    },
}

pub use crate::policy::load::{key_path, KEY_FILE};
/// The directory, beside the key, of the tail records ([`TailRecord`]).
const TAILS_DIR: &str = "audit-tails";
/// The directory, beside the key, of the log records ([`LogRecord`]).
const LOGS_DIR: &str = "audit-logs";
/// Random bytes in a key: HMAC-SHA256's full strength.
const KEY_LEN: usize = 32;

/// The user's audit key: 32 random bytes in a file of mode 0600 owned by
/// the user, in a directory no sandbox can read or write. Whoever holds it
/// can write lines that verify; a sandbox cannot.
pub struct AuditKey {
    key: ring::hmac::Key,
    path: PathBuf,
    /// The key's directory, resolved once: the tail and log records beside
    /// the key are opened relative to it.
    dir: Dir,
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuditKey({})", self.path.display())
    }
}

impl AuditKey {
    /// Reads the key at `path`, first making one when there is none
    /// (its directory with mode 0700; the file written whole under a
    /// temporary name opened with `O_EXCL`, fsynced, then renamed into
    /// place without replacing, so a concurrent run never reads half a key).
    pub fn load_or_create(path: &Path) -> Result<AuditKey, AuditError> {
        let (bytes, dir) = key_bytes_or_create(path)?;
        Ok(AuditKey::from_bytes(&bytes, path, dir))
    }

    /// Makes the key at `path` when there is none, and checks it, as
    /// [`AuditKey::load_or_create`] does, but keeps nothing: its bytes are
    /// wiped on return (for the check before the sandbox is forked, so
    /// that no copy of the key is in the sandbox's init).
    pub fn ensure(path: &Path) -> Result<(), AuditError> {
        key_bytes_or_create(path).map(drop)
    }

    fn from_bytes(bytes: &[u8; KEY_LEN], path: &Path, dir: Dir) -> AuditKey {
        AuditKey {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, bytes),
            path: path.to_path_buf(),
            dir,
        }
    }

    /// Reads the key at `path`; never makes one (for verifying).
    pub fn load(path: &Path) -> Result<AuditKey, AuditError> {
        let dir = open_key_dir(path)?;
        let bytes = read_key(path, &dir)?.ok_or_else(|| {
            key_err(
                path,
                "there is none, so no log can be verified here (the first `cordon run` with an audit log makes it; a log written by another user verifies only with that user's key)".into(),
            )
        })?;
        Ok(AuditKey::from_bytes(&bytes, path, dir))
    }

    /// The hex MAC of `body`.
    fn sign(&self, body: &[u8]) -> String {
        hex(ring::hmac::sign(&self.key, body).as_ref())
    }

    /// Whether `mac` (hex) is the MAC of `body`, compared in constant time.
    fn verifies(&self, body: &[u8], mac: &str) -> bool {
        from_hex(mac).is_some_and(|tag| ring::hmac::verify(&self.key, body, &tag).is_ok())
    }

    /// The record `name` in the records directory `kind` beside the key
    /// (`None` when there is none), or an error (the record's path, what
    /// is wrong) for one that cannot be read.
    fn read_record<T: serde::de::DeserializeOwned>(
        &self,
        kind: &str,
        name: &str,
    ) -> Result<Option<(T, PathBuf)>, (PathBuf, String)> {
        let path = self.dir.path.join(kind).join(name);
        let text = match self.dir.read_own(kind, name) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(None),
            Err(e) => return Err((path, e.to_string())),
        };
        match serde_json::from_str(&text) {
            Ok(record) => Ok(Some((record, path))),
            Err(e) => Err((path, format!("not a cordon record: {e}"))),
        }
    }

    /// The tail record of chain `chain`, if one was written; an error
    /// (the record's path, what is wrong) for one that cannot be read.
    fn tail_record(&self, chain: &str) -> Result<Option<(TailRecord, PathBuf)>, (PathBuf, String)> {
        match record_name(chain) {
            Some(name) => self.read_record(TAILS_DIR, name),
            None => Ok(None),
        }
    }

    /// Records `last` as the last line written to chain `chain`, unless a
    /// later one is recorded already (runs sharing a log finish in any
    /// order). The caller holds the log's lock.
    fn record_tail(&self, chain: &str, last: &Link) -> io::Result<()> {
        let Some(name) = record_name(chain) else {
            return Ok(());
        };
        // One that cannot be read is replaced.
        if let Ok(Some((recorded, _))) = self.tail_record(chain) {
            if recorded.seq >= last.seq {
                return Ok(());
            }
        }
        let record = TailRecord {
            seq: last.seq,
            mac: last.mac.clone(),
        };
        self.dir.replace(
            TAILS_DIR,
            name,
            &serde_json::to_vec(&record).map_err(io::Error::other)?,
        )
    }

    /// The record of what cordon last wrote to the log at `canonical`.
    fn log_record(
        &self,
        canonical: &Path,
    ) -> Result<Option<(LogRecord, PathBuf)>, (PathBuf, String)> {
        self.read_record(LOGS_DIR, &log_record_name(canonical))
    }

    /// Records that the log `record.path` now ends at `record.seq` of
    /// chain `record.chain`. The caller holds the log's lock.
    fn record_log(&self, record: &LogRecord) -> io::Result<()> {
        self.dir.replace(
            LOGS_DIR,
            &log_record_name(&record.path),
            &serde_json::to_vec(record).map_err(io::Error::other)?,
        )
    }
}

/// The name a chain's tail record has: the chain's MAC, which must be hex
/// (it comes from the log's first line, which whoever can write the log
/// chooses: never a path).
fn record_name(chain: &str) -> Option<&str> {
    (chain.len() == MAC_HEX && chain.bytes().all(|b| b.is_ascii_hexdigit())).then_some(chain)
}

/// The name of the log record of the log at `canonical`: the SHA-256 of
/// its path.
fn log_record_name(canonical: &Path) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(canonical.as_os_str().as_bytes()))
}

/// A directory resolved once (its path made canonical) and held open: the
/// files cordon makes or appends to in it are opened relative to this
/// descriptor with `O_NOFOLLOW`, so neither a link swapped in on the way
/// to it later nor a link at a file's own name can send a write elsewhere.
#[derive(Debug)]
struct Dir {
    file: File,
    path: PathBuf,
}

impl Dir {
    fn open(path: &Path) -> io::Result<Dir> {
        let path = std::fs::canonicalize(path)?;
        let fd = nix::fcntl::open(&path, DIR_FLAGS, Mode::empty())?;
        Ok(Dir {
            file: File::from(sys::own_fd(fd)),
            path,
        })
    }

    /// The subdirectory `name`, made (mode 0700) when `create` and
    /// missing; `None` when missing. Never a link.
    fn subdir(&self, name: &str, create: bool) -> io::Result<Option<Dir>> {
        if create {
            match nix::sys::stat::mkdirat(Some(self.raw()), name, Mode::from_bits_truncate(0o700)) {
                Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let fd = match nix::fcntl::openat(Some(self.raw()), name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(nix::errno::Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let dir = Dir {
            file: File::from(sys::own_fd(fd)),
            path: self.path.join(name),
        };
        let meta = dir.file.metadata()?;
        if meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
            return Err(io::Error::other(format!(
                "{} is not a directory of yours that only you can write",
                printable(&dir.path)
            )));
        }
        Ok(Some(dir))
    }

    fn raw(&self) -> std::os::fd::RawFd {
        self.file.as_raw_fd()
    }

    /// Opens `name` in this directory with `flags`, never through a link
    /// (`ELOOP` for one), never as the controlling terminal, never
    /// inherited by a command.
    fn open_file(&self, name: &OsStr, flags: OFlag, mode: u32) -> io::Result<File> {
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NOCTTY;
        let fd = nix::fcntl::openat(
            Some(self.raw()),
            name,
            flags,
            Mode::from_bits_truncate(mode),
        )?;
        Ok(File::from(sys::own_fd(fd)))
    }

    /// The text of `name` in subdirectory `kind`, a file of the caller's
    /// own ([`own_file_problem`]); `None` when either is missing.
    fn read_own(&self, kind: &str, name: &str) -> io::Result<Option<String>> {
        let Some(dir) = self.subdir(kind, false)? else {
            return Ok(None);
        };
        let mut file = match dir.open_file(name.as_ref(), OFlag::O_RDONLY, 0) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        if let Some(problem) = own_file_problem(&file.metadata()?) {
            return Err(io::Error::other(problem));
        }
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        Ok(Some(text))
    }

    /// Replaces `name` in subdirectory `kind` (made when missing) with
    /// `bytes`, atomically: written whole under a temporary name, then
    /// renamed over it.
    fn replace(&self, kind: &str, name: &str, bytes: &[u8]) -> io::Result<()> {
        let dir = self
            .subdir(kind, true)?
            .ok_or_else(|| io::Error::other("its directory vanished"))?;
        let tmp = format!(".{name}.{}.new", std::process::id());
        // Left over by a run that died with our pid: ours to replace.
        let _ = dir.remove(&tmp);
        let mut file = dir.open_file(
            tmp.as_ref(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
            0o600,
        )?;
        let written = file.write_all(bytes);
        drop(file);
        let renamed = written.and_then(|()| {
            nix::fcntl::renameat(Some(dir.raw()), tmp.as_str(), Some(dir.raw()), name)
                .map_err(io::Error::from)
        });
        if renamed.is_err() {
            let _ = dir.remove(&tmp);
        }
        renamed
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        nix::unistd::unlinkat(
            Some(self.raw()),
            name,
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        )
        .map_err(io::Error::from)
    }
}

/// How [`Dir`] opens directories: never through a link at the last name.
const DIR_FLAGS: OFlag = OFlag::O_DIRECTORY
    .union(OFlag::O_RDONLY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// What is wrong with a file cordon writes to or trusts, judged on the
/// open descriptor: it must be a regular file of the caller's own, with no
/// other name (a hard link made by someone who could write the directory
/// would let writes land in a file of theirs choosing). `None` when fine.
fn own_file_problem(meta: &std::fs::Metadata) -> Option<String> {
    let me = nix::unistd::geteuid().as_raw();
    if !meta.is_file() {
        Some("it is not a regular file".into())
    } else if meta.uid() != me {
        Some(format!(
            "it belongs to uid {}, not to you (uid {me})",
            meta.uid()
        ))
    } else if meta.nlink() != 1 {
        Some(format!(
            "it has {} names (hard links): another name could lead to it from anywhere; use a file of its own",
            meta.nlink()
        ))
    } else {
        None
    }
}

fn key_err(path: &Path, problem: String) -> AuditError {
    AuditError::Key {
        path: path.to_path_buf(),
        problem,
    }
}

/// The key file's name in its directory.
fn key_name(path: &Path) -> Result<&OsStr, AuditError> {
    path.file_name()
        .ok_or_else(|| key_err(path, "names no file".into()))
}

fn key_dir(path: &Path) -> Result<&Path, AuditError> {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .ok_or_else(|| key_err(path, "has no directory".into()))
}

/// Opens the key's directory, which must be the user's and writable by
/// nobody else: whoever can write it can replace the key.
fn open_key_dir(path: &Path) -> Result<Dir, AuditError> {
    let dir = key_dir(path)?;
    let opened =
        Dir::open(dir).map_err(|e| key_err(path, format!("cannot open its directory: {e}")))?;
    let meta = opened
        .file
        .metadata()
        .map_err(|e| key_err(path, format!("cannot inspect its directory: {e}")))?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(key_err(
            path,
            format!(
                "its directory {} belongs to uid {}, not to you (uid {me}), so another user could replace the key; use a state directory of your own ($XDG_STATE_HOME)",
                printable(dir),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(key_err(
            path,
            format!(
                "its directory {} has mode {:04o}: others could replace the key; `chmod go-w` it",
                printable(dir),
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(opened)
}

/// The key's bytes at `path`, made first when there is none, and its
/// directory.
fn key_bytes_or_create(path: &Path) -> Result<(Zeroizing<[u8; KEY_LEN]>, Dir), AuditError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(key_dir(path)?)
        .map_err(|e| key_err(path, format!("cannot create its directory: {e}")))?;
    let dir = open_key_dir(path)?;
    if let Some(bytes) = read_key(path, &dir)? {
        return Ok((bytes, dir));
    }
    create_key(path, &dir)?;
    let bytes = read_key(path, &dir)?
        .ok_or_else(|| key_err(path, "vanished right after it was made".into()))?;
    Ok((bytes, dir))
}

/// Reads and checks the key file in `dir`; `None` when there is none.
fn read_key(path: &Path, dir: &Dir) -> Result<Option<Zeroizing<[u8; KEY_LEN]>>, AuditError> {
    let mut file = match dir.open_file(key_name(path)?, OFlag::O_RDONLY, 0) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(key_err(
                path,
                "is a symbolic link; the key must be a file of its own: remove the link (a new key is made on the next run)".into(),
            ))
        }
        Err(e) => return Err(key_err(path, format!("cannot open it: {e}"))),
    };
    let meta = file
        .metadata()
        .map_err(|e| key_err(path, format!("cannot inspect it: {e}")))?;
    let problem = if let Some(problem) = own_file_problem(&meta) {
        Some(format!(
            "{problem}: a key someone else could reach proves nothing; remove it (a new key is made on the next run, and older logs then no longer verify)"
        ))
    } else if meta.mode() & 0o077 != 0 {
        Some(format!(
            "has mode {:04o}: others could read or change it and forge the log; `chmod 600` it if nobody else had access, or remove it (a new key is made on the next run, and older logs then no longer verify)",
            meta.mode() & 0o7777
        ))
    } else if meta.len() != KEY_LEN as u64 {
        Some(format!(
            "holds {} bytes, not {KEY_LEN}: it is not a cordon audit key",
            meta.len()
        ))
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(key_err(path, problem));
    }
    let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
    file.read_exact(&mut bytes[..])
        .map_err(|e| key_err(path, format!("cannot read it: {e}")))?;
    Ok(Some(bytes))
}

/// Makes a new random key in `dir` unless another run just did.
fn create_key(path: &Path, dir: &Dir) -> Result<(), AuditError> {
    let failed = |what: &str, e: io::Error| key_err(path, format!("cannot create it: {what}: {e}"));
    let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes[..]).map_err(
        |_| {
            key_err(
                path,
                "cannot create it: no randomness from the kernel".into(),
            )
        },
    )?;
    let name = key_name(path)?;
    let tmp = format!(".{KEY_FILE}.{}.new", std::process::id());
    // Left over by a run that died with our pid: ours to replace.
    let _ = dir.remove(&tmp);
    let mut file = dir
        .open_file(
            tmp.as_ref(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
            0o600,
        )
        .map_err(|e| failed("opening a new file", e))?;
    let written = file.write_all(&bytes[..]).and_then(|()| file.sync_all());
    drop(file);
    // RENAME_NOREPLACE never replaces a file: of two runs making a key at
    // once, one renames first and both use its key; and unlike a hard
    // link, the key never has a second name, even for a moment.
    let renamed = written.and_then(|()| {
        nix::fcntl::renameat2(
            Some(dir.raw()),
            tmp.as_str(),
            Some(dir.raw()),
            name,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )
        .map_err(io::Error::from)
    });
    match renamed {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let _ = dir.remove(&tmp);
        }
        Err(e) => {
            let _ = dir.remove(&tmp);
            return Err(failed("writing it", e));
        }
    }
    dir.file
        .sync_all()
        .map_err(|e| failed("syncing its directory", e))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// How a line ends: its MAC as the last field.
const MAC_FIELD: &str = ",\"mac\":\"";
/// Hex digits of a MAC.
const MAC_HEX: usize = 64;

/// The line for `event` (its `seq` and `prev` set, `mac` empty): its JSON
/// with the MAC of that JSON appended as the last field. Returns the line
/// and the MAC.
fn seal(key: &AuditKey, event: &Event) -> serde_json::Result<(Vec<u8>, String)> {
    // Escaped so that the line, shown as stored (`cordon log --json`),
    // cannot act on a terminal either.
    let mut line = crate::escape::json_printable(&serde_json::to_string(event)?).into_bytes();
    let mac = key.sign(&line);
    line.pop(); // the closing brace
    line.extend_from_slice(MAC_FIELD.as_bytes());
    line.extend_from_slice(mac.as_bytes());
    line.extend_from_slice(b"\"}");
    Ok((line, mac))
}

/// The JSON a sealed line's MAC covers, and the MAC; `None` when the line
/// does not end with a MAC field.
fn unseal(line: &str) -> Option<(String, &str)> {
    let cut = line.len().checked_sub(MAC_FIELD.len() + MAC_HEX + 2)?;
    let (head, tail) = (line.get(..cut)?, line.get(cut..)?);
    let mac = tail.strip_prefix(MAC_FIELD)?.strip_suffix("\"}")?;
    mac.bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then(|| (format!("{head}}}"), mac))
}

/// A line's place in its chain: its `seq` and MAC.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Link {
    seq: u64,
    mac: String,
}

impl Link {
    /// What a line after `line` chains from: `line`'s own seq and MAC, or,
    /// after a line without them (an unkeyed line of an older cordon, a
    /// torn line, none), the start of a chain. Nothing is checked here:
    /// `cordon log --verify` reports such lines.
    fn after(line: &[u8]) -> Link {
        let value: Option<serde_json::Value> = serde_json::from_slice(line).ok();
        let field = |name: &str| value.as_ref().and_then(|v| v.get(name).cloned());
        match (
            field("seq").and_then(|s| s.as_u64()),
            field("mac").and_then(|m| m.as_str().map(str::to_string)),
        ) {
            (Some(seq), Some(mac)) => Link { seq, mac },
            _ => Link::default(),
        }
    }
}

/// The last line a run wrote to a chain, kept in the user's state
/// directory (where no sandbox reaches) under the MAC of the chain's first
/// line: a log whose last lines were cut off ends before it.
#[derive(Debug, Serialize, Deserialize)]
pub struct TailRecord {
    /// The line's `seq`.
    pub seq: u64,
    /// Its MAC.
    pub mac: String,
}

/// What cordon last wrote to one log file, kept beside the key under the
/// SHA-256 of the file's canonical path and replaced after every batch a
/// run writes: a log emptied, replaced by another chain, or cut shorter
/// (even by a run killed before its end) no longer matches it.
#[derive(Debug, Serialize, Deserialize)]
pub struct LogRecord {
    /// The log's canonical path.
    pub path: PathBuf,
    /// The device and inode of the file written.
    pub dev: u64,
    /// See `dev`.
    pub ino: u64,
    /// The MAC of the file's first line (its chain).
    pub chain: String,
    /// The `seq` of the last line written.
    pub seq: u64,
}

/// An audit log file opened for appending, before it is keyed.
#[derive(Debug)]
pub struct AuditFile {
    path: PathBuf,
    /// Its directory made canonical, and its name: where the log record
    /// is kept for.
    canonical: PathBuf,
    file: File,
}

impl AuditFile {
    /// Opens (creating, mode 0600) `path` for appending. With
    /// `create_dir`, missing parent directories are created with mode 0700
    /// (for the default location; a path the user named must have its
    /// directory already).
    ///
    /// The log may lie where a sandbox can write, so nothing at its path
    /// is followed: the directory is resolved once and the file opened in
    /// it with `O_NOFOLLOW`, then refused unless it is a regular file of
    /// the caller's own with one name (a link planted there could
    /// otherwise make cordon create or append to any file the caller can
    /// write, a shell's startup file say).
    pub fn open(path: &Path, create_dir: bool) -> Result<AuditFile, AuditError> {
        let err = |source| AuditError::Open {
            path: path.to_path_buf(),
            source,
        };
        let name = path
            .file_name()
            .ok_or_else(|| err(io::Error::other("it names no file")))?;
        let parent = log_dir(path);
        if create_dir {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(err)?;
        }
        let dir = Dir::open(parent).map_err(err)?;
        // O_APPEND: every write lands at the end, whoever else appends.
        // Readable too: the chain continues from the file's last line.
        let file = dir
            .open_file(
                name,
                OFlag::O_RDWR | OFlag::O_APPEND | OFlag::O_CREAT,
                0o600,
            )
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    err(io::Error::other(
                        "it is a symbolic link, which cordon never follows at the log's path (it could lead to any file you can write); remove it, or name the file it points to",
                    ))
                } else {
                    err(e)
                }
            })?;
        let meta = file.metadata().map_err(err)?;
        if let Some(problem) = own_file_problem(&meta) {
            return Err(err(io::Error::other(problem)));
        }
        Ok(AuditFile {
            path: path.to_path_buf(),
            canonical: dir.path.join(name),
            file,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file has lines but its last one carries no MAC (an
    /// older cordon's unkeyed line, or not an event): what is appended
    /// starts a chain of its own, and `cordon log --verify` reports the file.
    pub fn ends_unkeyed(&self) -> io::Result<bool> {
        let len = self.file.metadata()?.len();
        let (last, _) = last_line(&self.file, len)?;
        Ok(len > 0 && Link::after(&last) == Link::default())
    }

    /// The log, appending lines authenticated with `key`.
    pub fn keyed(self, key: AuditKey) -> AuditLog {
        AuditLog {
            path: self.path,
            canonical: self.canonical,
            file: Some(self.file),
            key,
            tail: None,
            chain: None,
            wrote: None,
            cut_reported: false,
            records_failed: false,
        }
    }
}

/// An open, keyed audit log: appends chained, authenticated lines.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    /// Where its log record ([`LogRecord`]) is kept for.
    canonical: PathBuf,
    /// `None` only while a batch holds it inside the lock.
    file: Option<File>,
    key: AuditKey,
    /// The file's length after our last write and the link of its last
    /// line: when the length is unchanged, nobody else wrote since, and the
    /// tail need not be read again.
    tail: Option<(u64, Link)>,
    /// The MAC of the file's first line, under which its tail record is
    /// kept; `None` until known, or when the first line is not keyed.
    chain: Option<String>,
    /// The last line this log wrote.
    wrote: Option<Link>,
    /// Whether the file was found cut shorter (reported once).
    cut_reported: bool,
    /// Whether updating the records failed (reported once).
    records_failed: bool,
}

impl AuditLog {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `events` as one batch: under an exclusive `flock`, chained
    /// from the file's current last line, in a single write.
    pub fn append(&mut self, events: &mut [Event]) -> Result<(), AuditError> {
        self.locked(|log, file| log.append_locked(file, events))
    }

    /// Records the last line this log wrote in the chain's tail record
    /// (once, when the run ends).
    pub fn record_tail(&mut self) -> Result<(), AuditError> {
        let (Some(chain), Some(wrote)) = (self.chain.clone(), self.wrote.clone()) else {
            return Ok(());
        };
        self.locked(|log, file| {
            if let Ok(meta) = file.metadata() {
                log.check_not_cut(meta.len());
            }
            log.key
                .record_tail(&chain, &wrote)
                .map_err(|e| log.write_err(io::Error::other(format!("its tail record: {e}"))))
        })
    }

    /// Runs `f` with the file under an exclusive `flock`.
    fn locked(
        &mut self,
        f: impl FnOnce(&mut AuditLog, &File) -> Result<(), AuditError>,
    ) -> Result<(), AuditError> {
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
        let result = f(self, &locked);
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

    /// Warns (once) when the file is shorter than after this run's last
    /// write: appends only ever make it longer, so lines were deleted. The
    /// tail record cannot tell once the file starts over: say it now.
    fn check_not_cut(&mut self, len: u64) {
        if let Some((at, _)) = &self.tail {
            if len < *at && !self.cut_reported {
                self.cut_reported = true;
                crate::say!(
                    "cordon: WARNING: the audit log {} was cut from {at} to {len} bytes while this run wrote to it: lines of it were deleted",
                    printable(&self.path)
                );
            }
        }
    }

    /// Warns when, before this run's first line, the file does not end
    /// where cordon last wrote to it (its log record): it was emptied,
    /// replaced or cut while no run had it open. Once this run writes, the
    /// record follows the file, and `cordon log --verify` can no longer
    /// tell: say it now.
    fn check_as_recorded(&self, last: &Link) {
        let Ok(Some((recorded, _))) = self.key.log_record(&self.canonical) else {
            return;
        };
        let seq = recorded.seq;
        let found = match &self.chain {
            None if last.seq == 0 => format!("is empty, but cordon last wrote {seq} line(s) to it"),
            Some(chain) if *chain != recorded.chain => {
                format!("holds another log than the {seq} line(s) cordon last wrote to it")
            }
            Some(_) if last.seq < seq => format!(
                "ends at seq {}, but cordon last wrote up to seq {seq} to it",
                last.seq
            ),
            _ => return,
        };
        crate::say!(
            "cordon: WARNING: the audit log {} {found}: since the last run it was moved aside, emptied or replaced (if not by you, lines of it were deleted); `cordon log --verify` cannot tell once this run has written to it",
            printable(&self.path)
        );
    }

    fn append_locked(&mut self, file: &File, events: &mut [Event]) -> Result<(), AuditError> {
        let len = file.metadata().map_err(|e| self.write_err(e))?.len();
        let mut buf = Vec::new();
        self.check_not_cut(len);
        let mut link = match &self.tail {
            Some((at, link)) if *at == len => link.clone(),
            _ => {
                let (last, terminated) = last_line(file, len).map_err(|e| self.write_err(e))?;
                if !terminated {
                    // A torn last line (a crash mid-write): end it, so
                    // ours start on a line of their own.
                    buf.push(b'\n');
                }
                // The chain is the file's, whatever happened to it since.
                self.chain = if len > 0 {
                    let first = first_line(file).map_err(|e| self.write_err(e))?;
                    Some(Link::after(&first).mac).filter(|m| !m.is_empty())
                } else {
                    None
                };
                let last = Link::after(&last);
                if self.wrote.is_none() {
                    self.check_as_recorded(&last);
                }
                last
            }
        };
        for event in events.iter_mut() {
            event.seq = link.seq + 1;
            event.prev = std::mem::take(&mut link.mac);
            event.mac.clear();
            let (line, mac) =
                seal(&self.key, event).map_err(|e| self.write_err(io::Error::other(e)))?;
            if len == 0 && self.chain.is_none() {
                self.chain = Some(mac.clone());
            }
            event.mac.clone_from(&mac);
            link = Link {
                seq: event.seq,
                mac,
            };
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        (&*file).write_all(&buf).map_err(|e| self.write_err(e))?;
        let meta = file.metadata().map_err(|e| self.write_err(e))?;
        self.wrote = Some(link.clone());
        self.tail = Some((meta.len(), link.clone()));
        // The lines are written: a record that cannot be updated loses
        // no event, but leaves the end unchecked; say that, not more.
        if let Err(e) = self.record_batch(&meta, &link) {
            if !self.records_failed {
                self.records_failed = true;
                crate::say!(
                    "cordon: WARNING: {}; `cordon log --verify` cannot tell if this run's last lines are later deleted",
                    printable(e.to_string())
                );
            }
        }
        Ok(())
    }

    /// Records where the log ends now, after every batch: in the chain's
    /// tail record and in the file's log record, so that lines cut off
    /// the end are caught even when the run was killed before its end.
    fn record_batch(&mut self, meta: &std::fs::Metadata, last: &Link) -> Result<(), AuditError> {
        let Some(chain) = self.chain.clone() else {
            return Ok(());
        };
        let record = LogRecord {
            path: self.canonical.clone(),
            dev: meta.dev(),
            ino: meta.ino(),
            chain: chain.clone(),
            seq: last.seq,
        };
        self.key
            .record_tail(&chain, last)
            .and_then(|()| self.key.record_log(&record))
            .map_err(|e| self.write_err(io::Error::other(format!("its records: {e}"))))
    }
}

/// The first line of `file`, without its newline (at most 64 KiB of it:
/// a first line longer than any event is not one).
fn first_line(file: &File) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], got as u64)? {
            0 => break,
            n => got += n,
        }
        if buf[..got].contains(&b'\n') {
            break;
        }
    }
    buf.truncate(got);
    if let Some(end) = buf.iter().position(|&b| b == b'\n') {
        buf.truncate(end);
    }
    Ok(buf)
}

/// The last line of `file` (of `len` bytes) without its newline, and
/// whether the file ends with a newline. An empty file gives no bytes.
fn last_line(file: &File, len: u64) -> io::Result<(Vec<u8>, bool)> {
    if len == 0 {
        return Ok((Vec::new(), true));
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
    Ok((line, terminated))
}

/// Where and why a log does not verify.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// Line `line` (from 1) is not a JSON object.
    #[error("line {line}: not an audit event")]
    Malformed {
        /// The line, from 1.
        line: usize,
    },
    /// Line `line` has no MAC.
    #[error("line {line}: no MAC: written by the unkeyed hash chain of an older cordon, or by someone without your audit key, so nothing in it can be trusted (move an old log aside: the next run starts a verifiable one)")]
    Unkeyed {
        /// The line, from 1.
        line: usize,
    },
    /// Line `line`'s MAC is not the MAC of its content under the key.
    #[error("line {line}: its MAC does not match: the line was edited, or written with another key than yours")]
    BadMac {
        /// The line, from 1.
        line: usize,
    },
    /// Lines before `line` are missing.
    #[error("line {line}: seq {found} where {expected} was expected: {} line(s) before it were deleted or moved", .found - .expected)]
    Deleted {
        /// The line, from 1.
        line: usize,
        /// The seq the line should have.
        expected: u64,
        /// The seq it has.
        found: u64,
    },
    /// Line `line` comes too early (moved, or a copy of an earlier line).
    #[error("line {line}: seq {found} after seq {}: lines were moved or repeated", .expected - 1)]
    Reordered {
        /// The line, from 1.
        line: usize,
        /// The seq the line should have.
        expected: u64,
        /// The seq it has.
        found: u64,
    },
    /// Line `line` is authentic, but of another chain.
    #[error("line {line}: its prev is not the MAC of the line before it: lines of another log were spliced in")]
    Spliced {
        /// The line, from 1.
        line: usize,
    },
    /// The file ends before the last line cordon recorded writing.
    #[error("the log ends at seq {found}, but cordon wrote up to seq {expected} to it (as {} records): its last {} line(s) were deleted", printable(record), .expected - .found)]
    Truncated {
        /// The last seq written.
        expected: u64,
        /// The last seq in the file.
        found: u64,
        /// The tail record.
        record: PathBuf,
    },
    /// The tail record cannot be read: the end cannot be checked.
    #[error("the record {} cannot be read ({}), so whether lines were cut off the end cannot be checked", printable(record), printable(problem))]
    BadTailRecord {
        /// The tail record.
        record: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The log is empty, though cordon wrote lines to this file.
    #[error("the log is empty, but cordon wrote {seq} line(s) to this file (as {} records): it was emptied or replaced", printable(record))]
    Emptied {
        /// The last seq written.
        seq: u64,
        /// The log record.
        record: PathBuf,
    },
    /// The log holds another chain than the one cordon last wrote to it.
    #[error("the log is not the one cordon last wrote to this file (its first line is not the one of the chain cordon wrote up to seq {seq}, as {} records): it was replaced by another log", printable(record))]
    Replaced {
        /// The last seq written.
        seq: u64,
        /// The log record.
        record: PathBuf,
    },
    /// The line at the recorded seq is not the one cordon wrote there.
    #[error("line {line}: not the line cordon wrote at seq {seq} (as {} records): the log was rolled back and written again", printable(record))]
    Rewritten {
        /// The line, from 1.
        line: usize,
        /// Its seq.
        seq: u64,
        /// The tail record.
        record: PathBuf,
    },
}

/// Checks every line of a whole log under `key`: its MAC, its place
/// (`seq`) and its link to the line before (`prev`); then that the log
/// still reaches the last line cordon recorded writing to it. Returns the
/// number of events. A log whose head was cut off does not verify (its
/// first line's seq is not 1); one that was cut off at the end verifies
/// only where no tail record of it exists (see the README).
pub fn verify(text: &str, key: &AuditKey) -> Result<usize, ChainError> {
    let mut expected = Link::default();
    let mut record: Option<(TailRecord, PathBuf)> = None;
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let value = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .filter(serde_json::Value::is_object)
            .ok_or(ChainError::Malformed { line: n })?;
        let (body, mac) = unseal(line).ok_or(ChainError::Unkeyed { line: n })?;
        if !key.verifies(body.as_bytes(), mac) {
            return Err(ChainError::BadMac { line: n });
        }
        let seq = value.get("seq").and_then(|s| s.as_u64());
        let prev = value.get("prev").and_then(|p| p.as_str());
        let (Some(seq), Some(prev)) = (seq, prev) else {
            return Err(ChainError::Malformed { line: n });
        };
        let want = expected.seq + 1;
        if seq > want {
            return Err(ChainError::Deleted {
                line: n,
                expected: want,
                found: seq,
            });
        }
        if seq < want {
            return Err(ChainError::Reordered {
                line: n,
                expected: want,
                found: seq,
            });
        }
        if prev != expected.mac {
            return Err(ChainError::Spliced { line: n });
        }
        if seq == 1 {
            record = key
                .tail_record(mac)
                .map_err(|(record, problem)| ChainError::BadTailRecord { record, problem })?;
        }
        if let Some((r, path)) = &record {
            if r.seq == seq && r.mac != mac {
                return Err(ChainError::Rewritten {
                    line: n,
                    seq,
                    record: path.clone(),
                });
            }
        }
        expected = Link {
            seq,
            mac: mac.to_string(),
        };
        count += 1;
    }
    if let Some((r, path)) = record {
        if r.seq > expected.seq {
            return Err(ChainError::Truncated {
                expected: r.seq,
                found: expected.seq,
                record: path,
            });
        }
    }
    Ok(count)
}

/// Checks the log at `path` (its text `text`) as [`verify`] does, then
/// against the log record of that file ([`LogRecord`]): a log that is
/// empty, holds another chain, or ends before the last line cordon wrote
/// to it does not verify. Returns the number of events.
pub fn verify_log(path: &Path, text: &str, key: &AuditKey) -> Result<usize, ChainError> {
    let count = verify(text, key)?;
    let bad = |record: PathBuf, problem: String| ChainError::BadTailRecord { record, problem };
    let canonical = canonical_log_path(path).map_err(|e| {
        bad(
            path.to_path_buf(),
            format!("the log's directory cannot be resolved: {e}"),
        )
    })?;
    let Some((recorded, record)) = key
        .log_record(&canonical)
        .map_err(|(record, problem)| bad(record, problem))?
    else {
        return Ok(count);
    };
    // `verify` passed: seq runs from 1 up to the number of lines.
    let found = count as u64;
    match text.lines().next() {
        None => Err(ChainError::Emptied {
            seq: recorded.seq,
            record,
        }),
        Some(first) if Link::after(first.as_bytes()).mac != recorded.chain => {
            Err(ChainError::Replaced {
                seq: recorded.seq,
                record,
            })
        }
        Some(_) if found < recorded.seq => Err(ChainError::Truncated {
            expected: recorded.seq,
            found,
            record,
        }),
        Some(_) => Ok(count),
    }
}

/// `path` with its directory made canonical: the name its log record is
/// kept under (the file itself is never a link cordon writes through).
fn canonical_log_path(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("it names no file"))?;
    Ok(std::fs::canonicalize(log_dir(path))?.join(name))
}

/// The directory a log at `path` is in ("." for a bare name).
fn log_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Why a subject was refused and what would allow it, as the exit
/// summary says it: taken from the decision's event (its `reason` and
/// `fix`), never re-read from a message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Why {
    /// Why it was refused.
    pub reason: Option<String>,
    /// What would allow it, or why nothing does.
    pub fix: Option<String>,
}

impl Why {
    /// The reason and fix `event` carries.
    pub fn of(event: &Event) -> Why {
        Why {
            reason: event.reason.clone(),
            fix: event.fix.clone(),
        }
    }
}

/// One blocked subject of the summary.
#[derive(Debug, Clone)]
struct Blocked {
    subject: String,
    count: u64,
    /// The reason and fix of its first refusal.
    why: Why,
}

/// What a run blocked, for the lines printed at exit.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    /// Per door: blocked events by subject, in order of first appearance.
    blocked: Vec<(Door, Vec<Blocked>)>,
    /// Index of (door, subject) in `blocked`.
    index: HashMap<(Door, String), (usize, usize)>,
    /// The run's sandbox id, for the `cordon log` line that shows the
    /// subjects left out ("" when unknown).
    sandbox: String,
}

/// Events of one kind about one subject (per door and verdict) logged one
/// by one; more are counted. With [`MAX_SUBJECTS`], this bounds what one
/// run can log.
const LOGGED_REPEATS: u64 = 20;

/// Distinct subjects remembered per door; more are counted under "others".
const MAX_SUBJECTS: usize = 1000;
/// The subject the blocked events past [`MAX_SUBJECTS`] are counted under.
const OTHERS: &str = "others";
/// Subjects named in the exit summary, per door.
const SHOWN_SUBJECTS: usize = 8;
/// Longest reason (and fix) the summary keeps of a subject, in bytes.
const MAX_SAID: usize = 1024;

impl Summary {
    /// Counts one blocked `subject` of `door`, refused for `why` (the
    /// first refusal of a subject gives its reason); returns how many of
    /// it (or of "others", past the subjects remembered) were counted so far.
    pub fn count(&mut self, door: Door, subject: &str, why: Why) -> u64 {
        if let Some(&(d, s)) = self.index.get(&(door, subject.to_string())) {
            self.blocked[d].1[s].count += 1;
            return self.blocked[d].1[s].count;
        }
        let d = match self.blocked.iter().position(|(x, _)| *x == door) {
            Some(d) => d,
            None => {
                self.blocked.push((door, Vec::new()));
                self.blocked.len() - 1
            }
        };
        let subjects = &mut self.blocked[d].1;
        // The others share no one reason.
        let (subject, why) = if subjects.len() >= MAX_SUBJECTS {
            (OTHERS, Why::default())
        } else {
            (subject, why)
        };
        if let Some(s) = subjects.iter().position(|x| x.subject == subject) {
            subjects[s].count += 1;
            return subjects[s].count;
        }
        // What the summary keeps per subject is bounded too (a reason may
        // name a long path).
        let mut why = why;
        for said in [&mut why.reason, &mut why.fix].into_iter().flatten() {
            cut(said, MAX_SAID);
        }
        subjects.push(Blocked {
            subject: subject.to_string(),
            count: 1,
            why,
        });
        self.index
            .insert((door, subject.to_string()), (d, subjects.len() - 1));
        1
    }

    /// How many events of `door` were blocked.
    pub fn blocked(&self, door: Door) -> u64 {
        self.blocked
            .iter()
            .filter(|(d, _)| *d == door)
            .flat_map(|(_, s)| s.iter().map(|b| b.count))
            .sum()
    }

    /// Whether nothing was blocked.
    pub fn is_empty(&self) -> bool {
        self.blocked.is_empty()
    }

    /// What is printed at exit, `None` when nothing was blocked: per door
    /// a header, then one line per subject (most frequent first, at most
    /// [`SHOWN_SUBJECTS`], then how to list the rest) with its reason and
    /// what would allow it, and last the audit log:
    ///
    /// ```text
    /// cordon: blocked 3 network connections:
    ///   evil.example:443 ×2: no allow rule names this host; allow with --allow-domain evil.example (or [network] allow = ["evil.example"])
    ///   10.0.0.1:80: IP addresses are refused unless ...; allow with ...
    /// cordon: audit log: PATH
    /// ```
    ///
    /// Every subject, reason and fix passes through [`printable`].
    pub fn text(&self, log: Option<&Path>) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut doors = self.blocked.clone();
        doors.sort_by_key(|(d, _)| *d);
        let mut out = String::new();
        for (door, mut subjects) in doors {
            let total: u64 = subjects.iter().map(|b| b.count).sum();
            let (one, many) = door.noun();
            let noun = if total == 1 { one } else { many };
            out.push_str(&format!("cordon: blocked {total} {noun}:\n"));
            // Most frequent first; ties keep the order of first appearance.
            subjects.sort_by_key(|b| std::cmp::Reverse(b.count));
            for b in subjects.iter().take(SHOWN_SUBJECTS) {
                out.push_str(&format!("  {}\n", subject_line(b)));
            }
            if subjects.len() > SHOWN_SUBJECTS {
                let more = subjects.len() - SHOWN_SUBJECTS;
                out.push_str(&format!("  {more} more ({})\n", self.listing(door, log)));
            }
        }
        match log {
            Some(p) => out.push_str(&format!("cordon: audit log: {}", printable(p))),
            None => out.push_str("cordon: no audit log (--audit none)"),
        }
        Some(out)
    }

    /// How to list every refusal of `door` in this run (the log named:
    /// the one `cordon log` reads by default may be another).
    fn listing(&self, door: Door, log: Option<&Path>) -> String {
        let Some(log) = log else {
            return "not logged: --audit none".to_string();
        };
        let mut command = format!("cordon log --file {}", shell_word(&printable(log)));
        if !self.sandbox.is_empty() {
            command.push_str(&format!(
                " --sandbox {}",
                shell_word(&printable(&self.sandbox))
            ));
        }
        command.push_str(&format!(" --door {} --denied", door.name()));
        command
    }
}

/// `subject ×N: reason; fix`, each part made printable.
fn subject_line(b: &Blocked) -> String {
    let mut line = printable(&b.subject);
    if b.count > 1 {
        line.push_str(&format!(" ×{}", b.count));
    }
    let said: Vec<String> = [&b.why.reason, &b.why.fix]
        .into_iter()
        .flatten()
        .map(printable)
        .collect();
    if !said.is_empty() {
        line.push_str(": ");
        line.push_str(&said.join("; "));
    }
    line
}

/// What a flood of one kind of event is counted under: door, kind,
/// verdict and subject.
type FloodKey = (Door, Kind, Verdict, String);

/// How many events of each [`FloodKey`] were recorded, for the flood
/// limit; distinct subjects past [`MAX_SUBJECTS`] per door, kind and
/// verdict share one count, so a sandbox naming ever new subjects is
/// bounded too.
#[derive(Default)]
struct Flood {
    counts: HashMap<FloodKey, u64>,
    subjects: HashMap<(Door, Kind, Verdict), usize>,
}

/// The subject the events past [`MAX_SUBJECTS`] distinct ones are counted under.
const OTHER_SUBJECTS: &str = "(other subjects)";

impl Flood {
    /// Counts `event`; returns how many of its key were counted so far,
    /// and the subject it was counted under.
    fn count(&mut self, event: &Event) -> (u64, String) {
        let class = (event.door, event.event, event.verdict);
        let mut key = (class.0, class.1, class.2, event.subject.clone());
        if !self.counts.contains_key(&key) {
            let distinct = self.subjects.entry(class).or_default();
            if *distinct >= MAX_SUBJECTS {
                key.3 = OTHER_SUBJECTS.to_string();
            } else {
                *distinct += 1;
            }
        }
        let n = self.counts.entry(key.clone()).or_default();
        *n += 1;
        (*n, key.3)
    }
}

/// The event that says further events like `event` (counted under
/// `subject`) are no longer logged one by one.
fn flood_limit(event: &Event, subject: String) -> Event {
    let mut limit = Event::new(event.door, Kind::Limit, event.verdict, subject);
    limit.rule.clone_from(&event.rule);
    limit.source.clone_from(&event.source);
    let what = match (event.event, event.verdict) {
        (Kind::Close, _) => "closed",
        (_, Verdict::Deny) => "refused",
        (_, Verdict::Allow) => "allowed",
    };
    let rest = match event.verdict {
        Verdict::Deny => {
            "further refusals of it are counted in the exit summary, not logged one by one"
        }
        Verdict::Allow => "further ones are not logged one by one",
    };
    limit.reason = Some(format!("{what} {LOGGED_REPEATS} times: {rest}"));
    limit
}

/// Most lines one run writes to the log, the budget's [`Kind::Limit`]
/// line included: past it (or [`RUN_BYTES`]), events are only counted.
/// The per-subject flood limit alone lets a run write 20 lines for each
/// of 1000 subjects of every door, kind and verdict.
const RUN_LINES: u64 = 2000;
/// Most bytes one run writes to the log (about; the budget's own line
/// may pass it by one line).
const RUN_BYTES: u64 = 1024 * 1024;
/// What a line holds beyond its event's JSON: `seq`, `prev` and `mac`.
const SEAL_BYTES: u64 = 180;

/// How much of the run's log budget is spent.
#[derive(Default)]
struct Budget {
    lines: u64,
    bytes: u64,
    /// Whether it ran out (and the one line saying so was sent).
    spent: bool,
}

impl Budget {
    /// Spends the budget on `event`; `false` once it is spent, when the
    /// event is only counted. The first event over it is replaced by the
    /// one [`Kind::Limit`] event that says so.
    fn spend(&mut self, event: &mut Event) -> bool {
        if self.spent {
            return false;
        }
        let size = serde_json::to_string(event)
            .map(|json| crate::escape::json_printable(&json).len() as u64)
            .unwrap_or(0)
            + SEAL_BYTES;
        if self.lines + 1 < RUN_LINES && self.bytes + size < RUN_BYTES {
            self.lines += 1;
            self.bytes += size;
            return true;
        }
        self.spent = true;
        let mut limit = Event::new(event.door, Kind::Limit, event.verdict, "(this run)");
        limit.sandbox = std::mem::take(&mut event.sandbox);
        limit.command = std::mem::take(&mut event.command);
        limit.reason = Some(format!(
            "this run logged {} lines ({} bytes), its budget: further events are not logged, refusals are counted in the exit summary",
            self.lines, self.bytes
        ));
        *event = limit;
        true
    }
}

/// Where an [`Auditor`]'s events go.
enum Sink {
    /// Nowhere: the log is off, or the run finished.
    Off,
    /// To a log whose writer thread is not started yet: it starts with the
    /// first event (most runs of a short command record none, and then
    /// cost no thread to start and to join at exit).
    Idle(Box<AuditLog>),
    /// To the writer thread's queue.
    Writing(mpsc::Sender<Event>),
}

struct Inner {
    sandbox: String,
    command: String,
    path: Option<PathBuf>,
    tx: Mutex<Sink>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    summary: Mutex<Summary>,
    flood: Mutex<Flood>,
    budget: Mutex<Budget>,
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
    /// The auditor of one run writing to `log` (none: the log is off). Its
    /// writer thread starts with the first event; make the auditor after
    /// the sandbox is cloned: a thread alive across `fork` could hold a
    /// lock the child then waits on forever.
    pub fn start(log: Option<AuditLog>, sandbox: &str, command: &str) -> Auditor {
        let path = log.as_ref().map(|l| l.path().to_path_buf());
        Auditor {
            inner: Arc::new(Inner {
                sandbox: sandbox.to_string(),
                command: command.to_string(),
                path,
                tx: Mutex::new(log.map_or(Sink::Off, |log| Sink::Idle(Box::new(log)))),
                writer: Mutex::new(None),
                summary: Mutex::new(Summary::default()),
                flood: Mutex::new(Flood::default()),
                budget: Mutex::new(Budget::default()),
            }),
        }
    }

    /// An auditor that writes nothing (for tests and the standalone proxy).
    pub fn disabled() -> Auditor {
        Auditor {
            inner: Arc::new(Inner {
                sandbox: String::new(),
                command: String::new(),
                path: None,
                tx: Mutex::new(Sink::Off),
                writer: Mutex::new(None),
                summary: Mutex::new(Summary::default()),
                flood: Mutex::new(Flood::default()),
                budget: Mutex::new(Budget::default()),
            }),
        }
    }

    /// The log file, if the log is on.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Records `event` (denied decisions also count for the summary).
    ///
    /// A sandbox repeating an attempt must not fill the host's disk, be it
    /// refused or allowed (a loop of allowed connections writes a decision
    /// and a close each): past [`LOGGED_REPEATS`] events of one kind about
    /// one subject, further ones are only counted (the exit summary has
    /// every refusal), and one [`Kind::Limit`] event says so. And past
    /// [`RUN_LINES`] lines or [`RUN_BYTES`] bytes in all, the run logs
    /// nothing more but one [`Kind::Limit`] event saying so (the exit
    /// summary still counts every refusal).
    pub fn record(&self, event: Event) {
        if event.verdict == Verdict::Deny && event.event == Kind::Decision {
            self.count_blocked(event.door, &event.subject, Why::of(&event));
        }
        if matches!(event.event, Kind::Decision | Kind::Close) {
            let (seen, subject) = self
                .inner
                .flood
                .lock()
                .map(|mut f| f.count(&event))
                .unwrap_or((0, String::new()));
            if seen > LOGGED_REPEATS {
                if seen == LOGGED_REPEATS + 1 {
                    self.send(flood_limit(&event, subject));
                }
                return;
            }
        }
        self.send(event)
    }

    fn send(&self, mut event: Event) {
        event.sandbox.clone_from(&self.inner.sandbox);
        event.command.clone_from(&self.inner.command);
        let Ok(mut sink) = self.inner.tx.lock() else {
            return;
        };
        if matches!(*sink, Sink::Off) {
            return;
        }
        // Under the sender's lock: lines are spent in the order sent.
        let within = self
            .inner
            .budget
            .lock()
            .map(|mut b| b.spend(&mut event))
            .unwrap_or(false);
        if !within {
            return;
        }
        if let Sink::Idle(_) = *sink {
            let Sink::Idle(log) = std::mem::replace(&mut *sink, Sink::Off) else {
                return;
            };
            *sink = match spawn_writer(log) {
                Ok((tx, handle)) => {
                    if let Ok(mut writer) = self.inner.writer.lock() {
                        *writer = Some(handle);
                    }
                    Sink::Writing(tx)
                }
                // No thread to be had: this event is written here and
                // now, and the next one tries again.
                Err(Some(mut log)) => {
                    write_batch(&mut log, &mut [event]);
                    *sink = Sink::Idle(log);
                    return;
                }
                Err(None) => Sink::Off,
            };
        }
        if let Sink::Writing(tx) = &*sink {
            let _ = tx.send(event);
        }
    }

    /// Counts a blocked attempt, refused for `why`, for the summary
    /// without logging it (for floods, which one [`Kind::Limit`] event
    /// stands for).
    pub fn count_blocked(&self, door: Door, subject: &str, why: Why) -> u64 {
        self.inner
            .summary
            .lock()
            .map(|mut s| s.count(door, subject, why))
            .unwrap_or(0)
    }

    /// Writes what is queued, stops the writer, and returns the summary.
    /// Events recorded afterwards are dropped.
    pub fn finish(&self) -> Summary {
        // Dropping the only sender ends the writer's loop once it has
        // written everything queued.
        if let Ok(mut sink) = self.inner.tx.lock() {
            *sink = Sink::Off;
        }
        let writer = self.inner.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(w) = writer {
            let _ = w.join();
        }
        let mut summary = self
            .inner
            .summary
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        summary.sandbox.clone_from(&self.inner.sandbox);
        summary
    }
}

/// Most events written in one locked batch.
const MAX_BATCH: usize = 1024;
/// How long the writer rests after a batch, letting the next events
/// gather: under a burst of connections it wakes some hundred times a
/// second instead of twice per connection, which cost the proxy's clients
/// about 40 µs a request on two CPUs. Events wait no longer than this.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);

/// The writer thread's queue and handle.
type Writer = (mpsc::Sender<Event>, std::thread::JoinHandle<()>);

/// Starts the writer thread on `log`; if no thread could be started, gives
/// the log back (the thread that never ran still holds no copy of it).
fn spawn_writer(log: Box<AuditLog>) -> Result<Writer, Option<Box<AuditLog>>> {
    let shared = Arc::new(Mutex::new(Some(log)));
    let theirs = Arc::clone(&shared);
    let (tx, rx) = mpsc::channel::<Event>();
    let spawned = std::thread::Builder::new()
        .name("cordon-audit".into())
        .spawn(move || {
            if let Some(log) = theirs.lock().ok().and_then(|mut l| l.take()) {
                write_loop(*log, rx);
            }
        });
    match spawned {
        Ok(handle) => Ok((tx, handle)),
        Err(_) => Err(shared.lock().ok().and_then(|mut l| l.take())),
    }
}

/// Appends one batch; a failure is reported once, loudly (the run is
/// under way; stopping it would lose the user's work).
fn write_batch(log: &mut AuditLog, batch: &mut [Event]) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if let Err(e) = log.append(batch) {
        if !WARNED.swap(true, Ordering::Relaxed) {
            crate::say!(
                "cordon: WARNING: {}; audit events of this run are being lost",
                printable(e.to_string())
            );
        }
    }
}

fn write_loop(mut log: AuditLog, rx: mpsc::Receiver<Event>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(e) => batch.push(e),
                Err(_) => break,
            }
        }
        write_batch(&mut log, &mut batch);
        std::thread::sleep(GATHER);
    }
    if let Err(e) = log.record_tail() {
        crate::say!(
            "cordon: WARNING: {}; `cordon log --verify` cannot tell if this run's last lines are later deleted",
            printable(e.to_string())
        );
    }
}

/// Now as RFC 3339 in UTC with milliseconds: `2026-11-30T05:58:01.234Z`.
pub fn rfc3339_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since.as_secs(), since.subsec_millis())
}

/// The audit log's timestamp form: RFC 3339 in UTC with milliseconds.
const RFC3339_MILLIS: &[time::format_description::BorrowedFormatItem<'static>] = time::macros::format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
);

/// `secs` since the epoch (and `millis`) as RFC 3339 in UTC. A time past
/// the calendar's end (9999-12-31) is written as its last millisecond.
pub fn rfc3339(secs: u64, millis: u32) -> String {
    let nanos = i128::from(secs) * 1_000_000_000 + i128::from(millis) * 1_000_000;
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .unwrap_or(time::PrimitiveDateTime::MAX.assume_utc());
    // Cannot fail: a UTC date-time has every component the description
    // names, its year has four digits, and a String takes any write.
    at.format(RFC3339_MILLIS).unwrap_or_default()
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
