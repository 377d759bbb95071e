//! Building the effective [`Policy`] from its layers.
//!
//! Layers, in order; later layers append to lists and replace limits:
//!
//! 1. built-in defaults: the project directory is writable, the credential
//!    deny list applies under every home, [`PROTECTED_NAMES`] stay read-only,
//!    cordon's own config directory is read-only, and the default limits;
//! 2. the user config, `$XDG_CONFIG_HOME/cordon/config.toml` (relative paths
//!    are an error there; `~/` is fine);
//! 3. the project's `cordon.toml` (relative paths are relative to the
//!    project). It arrives with the repository, so unless the user trusted
//!    it with `cordon trust` (see [`super::trust`]) it may only narrow the
//!    sandbox;
//! 4. each `--policy FILE`, in order (relative paths are relative to the
//!    file's directory);
//! 5. command-line flags (relative paths are relative to the working directory).
//!
//! # File format
//!
//! Every section and key is optional; unknown keys are errors.
//!
//! ```toml
//! [files]
//! allow_write = ["~/.cache/pip", "/var/tmp/build"]  # extra writable paths
//! allow_read  = ["~/.npmrc"]          # re-allow a path a deny rule covers
//! deny_read   = ["~/work/secrets", "./.env", "./**/*.pem"]
//! deny_write  = ["./vendor"]
//! protect     = [".github/workflows/"] # kept read-only in the project and each git repo
//!
//! [limits]
//! max_procs  = 2048
//! max_tmp    = "512M"                 # or a number of bytes
//! max_memory = "8G"
//! timeout    = "2h"                   # or a number of seconds
//!
//! [network]
//! local_ports = [3000, 8080]          # bind/connect on the sandbox's own lo
//! allow_unix_sockets = ["/run/user/1000/gnupg/S.gpg-agent"]  # host sockets
//! allow = ["api.github.com", "*.npmjs.org", "example.com:8443",
//!          "host.cordon.internal:5432", "203.0.113.7", "10.1.0.0/16:5432"]
//! deny  = ["upload.example.com"]      # deny beats allow
//! ports = [80, 443]                   # ports rules without `:PORT` allow
//!
//! max_connections = 4096             # proxy connections at once; more get 503
//!
//! [credentials]
//! deny_env  = ["CORP_*"]               # also unset these (names or globs)
//! keep_env  = ["GITHUB_TOKEN"]         # keep one a secret pattern would unset (widening)
//! clear_env = false                    # true: keep only keep_env names
//!
//! [sandbox]
//! allow_degraded = ["landlock"]
//!
//! [audit]
//! file = "~/logs/cordon.jsonl"        # or "none"; default $XDG_STATE_HOME/cordon/audit.jsonl
//! ```
//!
//! The meaning of each key is documented on the fields of `Fragment` below. Errors
//! name the file, line, column and dotted key, and abort the whole load:
//! nothing is half-applied.

use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use super::defaults::{
    AUDIT_LOG_FILE, CREDENTIAL_DENY_LIST, CREDENTIAL_DENY_PATTERNS, MAX_CONNECTIONS, MAX_PROCS,
    MAX_TMP, PROJECT_POLICY_FILE, PROTECTED_NAMES, SYSTEM_DENY_LIST,
};
use super::pattern::{PathContext, PathPattern};
use super::trust::{self, TrustError};
use super::{
    AuditPolicy, EnvPolicy, FilesPolicy, Layer, Limits, NetworkPolicy, Policy, Source, Sourced,
};
use crate::policy::env::check_pattern as check_env_pattern;
use crate::policy::host::{parse_rule, HostRule};
use crate::policy::inspection::check_var_name;
use crate::policy::inspection::{HostMatch, HttpRule, InjectSpec, SecretSource};

/// Facts about the user's environment that loading depends on.
#[derive(Clone, Debug)]
pub struct EnvFacts {
    /// `$HOME` (or, when unset, the home from the password database).
    pub home: PathBuf,
    /// The account's home directory from the password database, if known.
    pub passwd_home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, or `~/.config` when unset or not absolute.
    pub xdg_config_home: PathBuf,
    /// `$XDG_STATE_HOME`, or `~/.local/state` when unset or not absolute
    /// (the default audit log lives there).
    pub xdg_state_home: PathBuf,
}

impl EnvFacts {
    /// Reads the facts from this process's environment and the password database.
    pub fn from_process() -> Result<EnvFacts, LoadError> {
        let passwd_home = nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .map(|user| user.dir)
            .filter(|dir| dir.is_absolute());
        let env_home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute());
        let home = env_home.or_else(|| passwd_home.clone()).ok_or_else(|| {
            LoadError::NoHome(
                "$HOME is unset or not absolute, and the password database has no home for this user"
                    .to_string(),
            )
        })?;
        let xdg_config_home = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        let xdg_state_home = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".local/state"));
        Ok(EnvFacts {
            home,
            passwd_home,
            xdg_config_home,
            xdg_state_home,
        })
    }
}

/// Policy set on the command line; the last and strongest layer.
#[derive(Default, Clone, Debug)]
pub struct FlagOverrides {
    /// `--allow-write PATH`: extra writable paths.
    pub allow_write: Vec<String>,
    /// `--allow-read PATH`: paths re-allowed for reading.
    pub allow_read: Vec<String>,
    /// `--deny-read PATH`: extra unreadable paths.
    pub deny_read: Vec<String>,
    /// `--deny-write PATH`: extra read-only paths.
    pub deny_write: Vec<String>,
    /// `--max-procs N`.
    pub max_procs: Option<u64>,
    /// `--max-tmp SIZE`.
    pub max_tmp: Option<String>,
    /// `--max-memory SIZE`.
    pub max_memory: Option<String>,
    /// `--timeout DURATION`.
    pub timeout: Option<String>,
    /// `--allow-degraded LAYER`.
    pub allow_degraded: Vec<String>,
    /// `--deny-env NAME|GLOB`.
    pub deny_env: Vec<String>,
    /// `--keep-env NAME|GLOB`.
    pub keep_env: Vec<String>,
    /// `--clear-env`.
    pub clear_env: bool,
    /// `--allow-local-port PORT`.
    pub local_ports: Vec<u16>,
    /// `--allow-unix-socket PATH`.
    pub unix_sockets: Vec<String>,
    /// `--allow-domain PATTERN`: hosts the proxy may connect to.
    pub allow_domain: Vec<String>,
    /// `--deny-domain PATTERN`: hosts it may not, whatever allows them.
    pub deny_domain: Vec<String>,
    /// `--ports PORT,...`: ports that allow rules without `:PORT` admit
    /// (replaces the value in force).
    pub ports: Option<Vec<u16>>,
    /// `--max-connections N`: proxy connections served at once.
    pub max_connections: Option<u64>,
    /// `--audit FILE` (`none`: no log).
    pub audit: Option<String>,
    /// `--inspect HOST`: hosts whose TLS the proxy terminates (`*`: all).
    pub inspect: Vec<String>,
    /// `--no-inspect HOST`: hosts that stay opaque tunnels.
    pub no_inspect: Vec<String>,
    /// `--upstream-ca FILE`: extra roots for upstream certificates.
    pub upstream_ca: Vec<String>,
}

/// Everything [`load`] needs.
#[derive(Clone, Debug)]
pub struct LoadRequest {
    /// The working directory (absolute); flags' relative paths resolve against it.
    pub cwd: PathBuf,
    /// `--project DIR`; the working directory when absent.
    pub project: Option<PathBuf>,
    /// `--policy FILE`s, in command-line order.
    pub policy_files: Vec<PathBuf>,
    /// The other policy flags.
    pub flags: FlagOverrides,
    /// The user's environment.
    pub env: EnvFacts,
}

/// A line and column (both from 1) in a policy file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The file.
    pub file: PathBuf,
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// Why the policy could not be loaded. Nothing runs after any of these.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No usable home directory.
    #[error("cannot determine the home directory: {0}")]
    NoHome(String),
    /// The working directory is not absolute.
    #[error("the working directory {} is not absolute", .0.display())]
    RelativeCwd(PathBuf),
    /// The project directory is missing or not a directory.
    #[error("project directory {}: {reason}", path.display())]
    Project {
        /// The directory as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A policy file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A policy file is not valid TOML.
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: Position,
        /// What the TOML parser said.
        message: String,
    },
    /// A key or value in a policy file is wrong.
    #[error("{at}: {key}: {message}")]
    Invalid {
        /// Where.
        at: Position,
        /// The dotted key, e.g. `files.deny_read[1]`.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// An untrusted project file tries to widen the sandbox.
    #[error(
        "{at}: {key}: {detail}the project's cordon.toml is not trusted, so it may only narrow the sandbox; review the file, then run `cordon trust {}` to approve it (sha256 {hash})",
        shell_quote(&.at.file)
    )]
    Untrusted {
        /// The first widening line (in the project file).
        at: Position,
        /// Its dotted key.
        key: String,
        /// Why it widens, ending in "; " (empty when the key alone widens).
        detail: String,
        /// SHA-256 of the file as read.
        hash: String,
    },
    /// A command-line flag has a bad value.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag, e.g. `--max-tmp`.
        flag: String,
        /// What is wrong.
        message: String,
    },
    /// The trust store could not be read.
    #[error(transparent)]
    Trust(#[from] TrustError),
}

/// The default audit log: `$XDG_STATE_HOME/cordon/audit.jsonl`.
pub fn default_audit_log(env: &EnvFacts) -> PathBuf {
    env.xdg_state_home.join("cordon").join(AUDIT_LOG_FILE)
}

/// The audit key's name in the user's cordon state directory (beside the
/// default log).
pub const KEY_FILE: &str = "audit.key";

/// The user's audit key file: `<state home>/cordon/audit.key`.
pub fn key_path(xdg_state_home: &Path) -> PathBuf {
    xdg_state_home.join("cordon").join(KEY_FILE)
}

/// The value of `--audit` and `audit.file` that turns the log off.
pub const AUDIT_OFF: &str = "none";

/// Parses an audit log path: `none` (off), or a path without globs.
fn parse_audit_file(raw: &str, ctx: &PathContext<'_>) -> Result<Option<PathBuf>, String> {
    if raw == AUDIT_OFF {
        return Ok(None);
    }
    match PathPattern::parse(raw, ctx).map_err(|e| e.to_string())? {
        PathPattern::Exact(path) => Ok(Some(path)),
        PathPattern::Glob { .. } => Err(format!(
            "{raw:?}: the audit log must be one file, not a glob (or {AUDIT_OFF:?} for no log)"
        )),
    }
}

/// cordon's config directory: `$XDG_CONFIG_HOME/cordon`.
pub fn user_config_dir(env: &EnvFacts) -> PathBuf {
    env.xdg_config_home.join("cordon")
}

/// Parses a size: a whole number of bytes with an optional binary unit
/// (`K`, `M`, `G`, `T`, any case, optionally followed by `iB` or `B`).
/// `"512M"`, `"1G"`, `"1GiB"`, `"100k"`, `"4096"`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || {
        format!("invalid size {s:?} (expected a whole number with an optional unit K, M, G or T, e.g. 512M)")
    };
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits == 0 {
        return Err(bad());
    }
    let number: u64 = t[..digits].parse().map_err(|_| bad())?;
    let unit = t[digits..].trim_start().to_ascii_lowercase();
    let shift = match unit.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("invalid size {s:?} (too large)"))
}

/// Parses a duration: a plain number of seconds, or numbers each followed by
/// a unit (`ms`, `s`, `m`, `h`, `d`): `"90s"`, `"30m"`, `"2h"`, `"1h30m"`, `"500ms"`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || {
        format!("invalid duration {s:?} (expected e.g. 90s, 30m, 2h, 1h30m, 500ms, or a number of seconds)")
    };
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map(Duration::from_secs).map_err(|_| bad());
    }
    let mut rest = t;
    let mut total = Duration::ZERO;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let part = match &rest[..unit_len] {
            "ms" => Some(Duration::from_millis(number)),
            "s" => Some(Duration::from_secs(number)),
            "m" => number.checked_mul(60).map(Duration::from_secs),
            "h" => number.checked_mul(3600).map(Duration::from_secs),
            "d" => number.checked_mul(86_400).map(Duration::from_secs),
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = part
            .and_then(|p| total.checked_add(p))
            .ok_or_else(|| format!("invalid duration {s:?} (too long)"))?;
    }
    Ok(total)
}

/// Builds the effective policy from all layers. Any error aborts the load.
pub fn load(req: &LoadRequest) -> Result<Policy, LoadError> {
    if !req.cwd.is_absolute() {
        return Err(LoadError::RelativeCwd(req.cwd.clone()));
    }
    let env = &req.env;
    let mut policy = builtin(req)?;
    let home = policy
        .homes
        .first()
        .cloned()
        .unwrap_or_else(|| env.home.clone());
    let config_dir = user_config_dir(env);

    // (2) the user config: trusted, absolute or ~/ paths only.
    let user_file = config_dir.join("config.toml");
    if let Some(bytes) = read_optional(&user_file)? {
        let ctx = PathContext {
            home: &home,
            base: None,
        };
        let fragment = parse_file(&user_file, &bytes, &ctx)?;
        fragment.apply(&mut policy, &Source::UserConfig(user_file.clone()));
    }

    // (3) the project's cordon.toml: may only narrow unless trusted.
    let project_dir = policy.project.value.clone();
    let project_file = project_dir.join(PROJECT_POLICY_FILE);
    if let Some(bytes) = read_optional(&project_file)? {
        let ctx = PathContext {
            home: &home,
            base: Some(&project_dir),
        };
        let fragment = parse_file(&project_file, &bytes, &ctx)?;
        let widening = fragment.widening(&policy);
        if let Some(first) = widening.into_iter().min_by_key(|w| w.at) {
            if !trust::is_trusted(&config_dir, &project_file, &bytes)? {
                let text = String::from_utf8_lossy(&bytes);
                return Err(LoadError::Untrusted {
                    at: position(&project_file, &text, first.at),
                    key: first.key.to_string(),
                    detail: first.detail,
                    hash: trust::file_hash(&bytes),
                });
            }
        }
        fragment.apply(&mut policy, &Source::Project(project_file.clone()));
    }

    // (4) --policy files: trusted, relative to their own directory.
    for given in &req.policy_files {
        let path = req.cwd.join(given);
        let file = path.canonicalize().map_err(|source| LoadError::Read {
            path: path.clone(),
            source,
        })?;
        let bytes = std::fs::read(&file).map_err(|source| LoadError::Read {
            path: file.clone(),
            source,
        })?;
        let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let ctx = PathContext {
            home: &home,
            base: Some(&dir),
        };
        let fragment = parse_file(&file, &bytes, &ctx)?;
        fragment.apply(&mut policy, &Source::PolicyFile(file.clone()));
    }

    // (5) flags.
    apply_flags(&mut policy, &req.flags, &home, &req.cwd)?;
    Ok(policy)
}

/// Layer 1: the built-in defaults.
fn builtin(req: &LoadRequest) -> Result<Policy, LoadError> {
    let (given, source) = match &req.project {
        Some(p) => (req.cwd.join(p), Source::Flag("--project".to_string())),
        None => (req.cwd.clone(), Source::Builtin),
    };
    let project = given.canonicalize().map_err(|e| LoadError::Project {
        path: given.clone(),
        reason: if e.kind() == io::ErrorKind::NotFound {
            "does not exist".to_string()
        } else {
            e.to_string()
        },
    })?;
    if !project.is_dir() {
        return Err(LoadError::Project {
            path: given,
            reason: "is not a directory".to_string(),
        });
    }

    let env = &req.env;
    if !env.home.is_absolute() {
        return Err(LoadError::NoHome(format!(
            "{} is not an absolute path",
            env.home.display()
        )));
    }
    let resolve = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let mut homes = vec![resolve(&env.home)];
    if let Some(passwd) = env.passwd_home.as_deref().filter(|p| p.is_absolute()) {
        let passwd = resolve(passwd);
        if !homes.contains(&passwd) {
            homes.push(passwd);
        }
    }

    let mut files = FilesPolicy::default();
    for home in &homes {
        for entry in CREDENTIAL_DENY_LIST.iter().chain(CREDENTIAL_DENY_PATTERNS) {
            files
                .deny_read
                .push(Sourced::new(home_entry(home, entry)?, Source::Builtin));
        }
    }
    // Other accounts' homes: only the entries there now, so that a run
    // costs one directory listing per home, and `cordon explain` shows
    // what is hidden rather than every name the list could have.
    for home in other_homes(&read_passwd_homes()?) {
        if homes.contains(&home) {
            continue;
        }
        let found = existing_entries(&home)?;
        if !found.is_empty() {
            files
                .deny_read
                .extend(found.into_iter().map(|p| Sourced::new(p, Source::Builtin)));
            homes.push(home);
        }
    }
    let root = PathContext {
        home: Path::new("/"),
        base: None,
    };
    for entry in SYSTEM_DENY_LIST {
        let pattern = PathPattern::parse(entry, &root)
            .map_err(|e| LoadError::NoHome(format!("system deny list entry {entry}: {e}")))?;
        files.deny_read.push(Sourced::new(pattern, Source::Builtin));
    }
    files.protected = PROTECTED_NAMES
        .iter()
        .map(|name| Sourced::new((*name).to_string(), Source::Builtin))
        .collect();
    let config_dir = user_config_dir(env);
    let ctx = PathContext {
        home: &homes[0],
        base: None,
    };
    let config_pattern = PathPattern::parse(&config_dir.to_string_lossy(), &ctx).map_err(|e| {
        LoadError::NoHome(format!("config directory {}: {e}", config_dir.display()))
    })?;
    files
        .deny_write
        .push(Sourced::new(config_pattern, Source::Builtin));

    Ok(Policy {
        project: Sourced::new(project, source),
        homes,
        files,
        limits: Limits {
            max_procs: Sourced::new(MAX_PROCS, Source::Builtin),
            max_tmp: Sourced::new(MAX_TMP, Source::Builtin),
            max_memory: None,
            timeout: None,
        },
        network: NetworkPolicy {
            max_connections: Sourced::new(MAX_CONNECTIONS, Source::Builtin),
            ..NetworkPolicy::default()
        },
        audit: AuditPolicy {
            log: Sourced::new(Some(default_audit_log(env)), Source::Builtin),
            key: key_path(&env.xdg_state_home),
        },
        inspection: Default::default(),
        allow_degraded: Vec::new(),
        env: EnvPolicy::default(),
    })
}

/// The credential list's `entry` (relative, maybe a glob) under `home`.
fn home_entry(home: &Path, entry: &str) -> Result<PathPattern, LoadError> {
    let ctx = PathContext { home, base: None };
    PathPattern::parse(&format!("~/{entry}"), &ctx)
        .map_err(|e| LoadError::NoHome(format!("home {}: {e}", home.display())))
}

/// The password database's file; accounts from other sources (LDAP, SSSD)
/// are reached through `/home` instead (see [`other_homes`]).
const PASSWD_FILE: &str = "/etc/passwd";

/// Every home directory `/etc/passwd` names (its sixth field). A missing
/// file names none; one that cannot be read is an error.
fn read_passwd_homes() -> Result<Vec<PathBuf>, LoadError> {
    match std::fs::read_to_string(PASSWD_FILE) {
        Ok(text) => Ok(passwd_homes(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(LoadError::Read {
            path: PathBuf::from(PASSWD_FILE),
            source,
        }),
    }
}

/// The absolute home directories in passwd(5) `text`.
fn passwd_homes(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| line.split(':').nth(5))
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
        .collect()
}

/// System directories some system accounts name as their home (`daemon`'s
/// `/usr/sbin`, `sys`'s `/dev`, `irc`'s `/run/ircd`): not homes, so not
/// searched (listing `/usr/bin` at every start costs more than the rest);
/// `/dev`, `/proc` and `/run` are replaced or hidden in the sandbox anyway.
const NOT_HOMES: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/dev", "/proc", "/sys", "/run",
];

/// Other accounts' homes whose credential files the sandbox hides too:
/// `passwd` (the password database's homes), `/root`, and the directories
/// in `/home` (accounts the local file does not list). Resolved, existing
/// directories only, each once; `/` (the home of some system accounts) is
/// left out, as it is the whole root, and so are [`NOT_HOMES`].
fn other_homes(passwd: &[PathBuf]) -> Vec<PathBuf> {
    let in_home = std::fs::read_dir("/home")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path());
    let mut homes: Vec<PathBuf> = Vec::new();
    let candidates = passwd
        .iter()
        .cloned()
        .chain([PathBuf::from("/root")])
        .chain(in_home);
    for home in candidates {
        let Ok(home) = home.canonicalize() else {
            continue; // `/nonexistent` and the like
        };
        let system = NOT_HOMES.iter().any(|dir| home.starts_with(dir));
        if home.parent().is_some() && !system && home.is_dir() && !homes.contains(&home) {
            homes.push(home);
        }
    }
    homes
}

/// The credential list's entries that exist under `home` now. One listing
/// of `home` tells which first components are there; only entries under
/// those are looked at. A home the caller may enter but not list (mode
/// 0711) has every entry looked at.
fn existing_entries(home: &Path) -> Result<Vec<PathPattern>, LoadError> {
    let present: Option<std::collections::HashSet<std::ffi::OsString>> = std::fs::read_dir(home)
        .ok()
        .map(|listing| listing.flatten().map(|entry| entry.file_name()).collect());
    let mut found = Vec::new();
    for entry in CREDENTIAL_DENY_LIST.iter().chain(CREDENTIAL_DENY_PATTERNS) {
        let first = entry.split('/').next().unwrap_or(entry);
        if present
            .as_ref()
            .is_some_and(|names| !names.contains(std::ffi::OsStr::new(first)))
        {
            continue;
        }
        let pattern = home_entry(home, entry)?;
        if !pattern.expand().is_empty() {
            found.push(pattern);
        }
    }
    Ok(found)
}

/// Reads a file that may be absent; a file that exists but cannot be read
/// (a dangling symlink included) is an error.
fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, LoadError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound && path.symlink_metadata().is_err() => {
            Ok(None)
        }
        Err(source) => Err(LoadError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Layer 5: flags, relative paths against the working directory.
fn apply_flags(
    policy: &mut Policy,
    flags: &FlagOverrides,
    home: &Path,
    cwd: &Path,
) -> Result<(), LoadError> {
    let ctx = PathContext {
        home,
        base: Some(cwd),
    };
    let flag_err = |flag: &str, message: String| LoadError::Flag {
        flag: flag.to_string(),
        message,
    };
    let paths = |flag: &str, raw: &[String]| -> Result<Vec<PathPattern>, LoadError> {
        raw.iter()
            .map(|r| PathPattern::parse(r, &ctx).map_err(|e| flag_err(flag, e.to_string())))
            .collect()
    };
    let mut fragment = Fragment {
        allow_write: setting(paths("--allow-write", &flags.allow_write)?),
        allow_read: setting(paths("--allow-read", &flags.allow_read)?),
        deny_read: setting(paths("--deny-read", &flags.deny_read)?),
        deny_write: setting(paths("--deny-write", &flags.deny_write)?),
        ..Fragment::default()
    };
    if let Some(n) = flags.max_procs {
        fragment.max_procs = Some(Setting::flag(
            check_procs(n).map_err(|m| flag_err("--max-procs", m))?,
        ));
    }
    if let Some(raw) = &flags.max_tmp {
        let bytes = parse_size(raw)
            .and_then(nonzero_size)
            .map_err(|m| flag_err("--max-tmp", m))?;
        fragment.max_tmp = Some(Setting::flag(bytes));
    }
    if let Some(raw) = &flags.max_memory {
        let bytes = parse_size(raw)
            .and_then(nonzero_size)
            .map_err(|m| flag_err("--max-memory", m))?;
        fragment.max_memory = Some(Setting::flag(bytes));
    }
    if let Some(raw) = &flags.timeout {
        let d = parse_duration(raw)
            .and_then(nonzero_duration)
            .map_err(|m| flag_err("--timeout", m))?;
        fragment.timeout = Some(Setting::flag(d));
    }
    let ports = flags
        .local_ports
        .iter()
        .map(|&p| check_port(i64::from(p)).map_err(|m| flag_err("--allow-local-port", m)))
        .collect::<Result<Vec<_>, _>>()?;
    fragment.local_ports = setting(ports);
    fragment.unix_sockets = setting(paths("--allow-unix-socket", &flags.unix_sockets)?);
    let rules = |flag: &str, raw: &[String]| -> Result<Vec<HostRule>, LoadError> {
        raw.iter()
            .map(|r| parse_rule(r).map_err(|e| flag_err(flag, e.to_string())))
            .collect()
    };
    fragment.net_allow = setting(rules("--allow-domain", &flags.allow_domain)?);
    fragment.net_deny = setting(rules("--deny-domain", &flags.deny_domain)?);
    if let Some(raw) = &flags.ports {
        let ports = raw
            .iter()
            .map(|&p| check_port(i64::from(p)).map_err(|m| flag_err("--ports", m)))
            .collect::<Result<Vec<_>, _>>()?;
        fragment.ports = Some(Setting::flag(dedup_ports(ports)));
    }
    if let Some(n) = flags.max_connections {
        fragment.max_connections = Some(Setting::flag(
            check_connections(n).map_err(|m| flag_err("--max-connections", m))?,
        ));
    }
    if let Some(raw) = &flags.audit {
        let file = parse_audit_file(raw, &ctx).map_err(|m| flag_err("--audit", m))?;
        fragment.audit_log = Some(Setting::flag(file));
    }
    let hosts = |flag: &str, raw: &[String]| -> Result<Vec<HostMatch>, LoadError> {
        raw.iter()
            .map(|r| HostMatch::parse(r).map_err(|e| flag_err(flag, e.to_string())))
            .collect()
    };
    fragment.inspect = setting(hosts("--inspect", &flags.inspect)?);
    fragment.no_inspect = setting(hosts("--no-inspect", &flags.no_inspect)?);
    let cas = flags
        .upstream_ca
        .iter()
        .map(|r| one_file(r, &ctx).map_err(|m| flag_err("--upstream-ca", m)))
        .collect::<Result<Vec<_>, _>>()?;
    fragment.upstream_ca = setting(cas);
    let layers = flags
        .allow_degraded
        .iter()
        .map(|name| parse_layer(name).map_err(|m| flag_err("--allow-degraded", m)))
        .collect::<Result<Vec<_>, _>>()?;
    fragment.allow_degraded = setting(layers);
    let names = |flag: &str, raw: &[String]| -> Result<Vec<String>, LoadError> {
        raw.iter()
            .map(|r| check_env_pattern(r).map_err(|e| flag_err(flag, e.to_string())))
            .collect()
    };
    fragment.deny_env = setting(names("--deny-env", &flags.deny_env)?);
    fragment.keep_env = setting(names("--keep-env", &flags.keep_env)?);
    if flags.clear_env {
        fragment.clear_env = Some(Setting::flag(true));
    }

    let flag = |name: &str| Source::Flag(name.to_string());
    let sources = Sources {
        allow_write: flag("--allow-write"),
        allow_read: flag("--allow-read"),
        deny_read: flag("--deny-read"),
        deny_write: flag("--deny-write"),
        protect: flag("--protect"),
        max_procs: flag("--max-procs"),
        max_tmp: flag("--max-tmp"),
        max_memory: flag("--max-memory"),
        timeout: flag("--timeout"),
        local_ports: flag("--allow-local-port"),
        unix_sockets: flag("--allow-unix-socket"),
        net_allow: flag("--allow-domain"),
        net_deny: flag("--deny-domain"),
        ports: flag("--ports"),
        max_connections: flag("--max-connections"),
        audit_log: flag("--audit"),
        allow_degraded: flag("--allow-degraded"),
        deny_env: flag("--deny-env"),
        keep_env: flag("--keep-env"),
        clear_env: flag("--clear-env"),
        inspect: flag("--inspect"),
        no_inspect: flag("--no-inspect"),
        upstream_ca: flag("--upstream-ca"),
        http_rules: flag("--rule"),
        inject: flag("--inject"),
    };
    fragment.apply_with(policy, &sources);
    Ok(())
}

fn setting<T>(values: Vec<T>) -> Option<Setting<Vec<T>>> {
    if values.is_empty() {
        None
    } else {
        Some(Setting::flag(values))
    }
}

// ---------------------------------------------------------------------------
// One layer, parsed and checked before anything is applied.

/// A value from a layer, with the byte offset of its key in the file (0 for flags).
#[derive(Debug)]
struct Setting<T> {
    value: T,
    at: usize,
}

impl<T> Setting<T> {
    fn flag(value: T) -> Self {
        Setting { value, at: 0 }
    }
}

/// One layer of policy (a file, or the flags), checked and resolved but not
/// yet applied. Each field is one key of the file format.
#[derive(Debug, Default)]
struct Fragment {
    /// `files.allow_write`: array of paths. Extra writable paths, besides the
    /// project and the private temp dir. Widens.
    allow_write: Option<Setting<Vec<PathPattern>>>,
    /// `files.allow_read`: array of paths. Paths readable again although a
    /// deny rule (e.g. the built-in credential list) covers them. Widens.
    allow_read: Option<Setting<Vec<PathPattern>>>,
    /// `files.deny_read`: array of paths or globs made unreadable. Narrows.
    deny_read: Option<Setting<Vec<PathPattern>>>,
    /// `files.deny_write`: array of paths or globs kept read-only inside
    /// writable areas. Narrows.
    deny_write: Option<Setting<Vec<PathPattern>>>,
    /// `files.protect`: array of names, relative to the project and to every
    /// git repository under it, kept read-only and uncreatable (added to
    /// [`PROTECTED_NAMES`]). Relative, no `..`, no globs; a trailing `/`
    /// marks a directory, other names are files. Narrows.
    protect: Option<Setting<Vec<String>>>,
    /// `limits.max_procs`: integer, at least 1. Most tasks alive at once.
    /// Narrows when not larger than the value in force.
    max_procs: Option<Setting<u64>>,
    /// `limits.max_tmp`: size string (`"512M"`) or integer bytes. Size of the
    /// private temp dir. Narrows when not larger than the value in force.
    max_tmp: Option<Setting<u64>>,
    /// `limits.max_memory`: size string (`"8G"`) or integer bytes. Memory cap.
    /// Narrows when none was set or it is not larger than the value in force.
    max_memory: Option<Setting<u64>>,
    /// `limits.timeout`: duration string (`"2h"`, `"1h30m"`) or integer
    /// seconds. Wall-clock limit. Narrows when none was set or it is not
    /// longer than the value in force.
    timeout: Option<Setting<Duration>>,
    /// `network.local_ports`: array of TCP ports (1 to 65535) that programs
    /// inside may bind and connect to on the sandbox's own loopback. Widens.
    local_ports: Option<Setting<Vec<u16>>>,
    /// `network.allow_unix_sockets`: array of paths of host UNIX sockets
    /// programs inside may connect to. Widens.
    unix_sockets: Option<Setting<Vec<PathPattern>>>,
    /// `network.allow`: array of host patterns (see [`crate::policy::host`]:
    /// `api.github.com`, `*.example.com`, an IP or CIDR, each with an
    /// optional `:PORT`, and `host.cordon.internal:PORT`) the proxy may
    /// connect to. Widens.
    net_allow: Option<Setting<Vec<HostRule>>>,
    /// `network.deny`: array of host patterns the proxy refuses whatever
    /// allows them. Narrows.
    net_deny: Option<Setting<Vec<HostRule>>>,
    /// `network.ports`: array of TCP ports that allow rules without a
    /// `:PORT` admit; replaces the value in force (80 and 443 by default).
    /// Narrows when every port is already in force.
    ports: Option<Setting<Vec<u16>>>,
    /// `network.max_connections`: integer, at least 1. Connections the
    /// proxy serves at once; more are refused (HTTP 503, SOCKS5 reply 1)
    /// and the first refusal is reported. Narrows when not larger than the
    /// value in force.
    max_connections: Option<Setting<u64>>,
    /// `audit.file`: the audit log (a path; `"none"` turns the log off).
    /// Always widening in a project file: an untrusted repository must not
    /// redirect or silence the record of what ran in it.
    audit_log: Option<Setting<Option<PathBuf>>>,
    /// `sandbox.allow_degraded`: array of layer names (`namespaces`,
    /// `landlock`, `seccomp`, `limits`) cordon may run without when the
    /// kernel cannot apply them. Widens.
    allow_degraded: Option<Setting<Vec<Layer>>>,
    /// `credentials.deny_env`: array of variable names or globs the command
    /// never sees, besides the built-in secret patterns. Narrows.
    deny_env: Option<Setting<Vec<String>>>,
    /// `credentials.keep_env`: array of names or globs the command keeps
    /// although a pattern (or `clear_env`) would remove them. Widens.
    keep_env: Option<Setting<Vec<String>>>,
    /// `credentials.clear_env`: boolean; true starts the command from an
    /// empty environment plus `keep_env`. Widens when it turns it off.
    clear_env: Option<Setting<bool>>,
    /// `network.inspect`: array of hosts (`*`, or host patterns as in
    /// `network.allow`) whose TLS the proxy terminates. Narrows: it only
    /// adds checks.
    inspect: Option<Setting<Vec<HostMatch>>>,
    /// `network.no_inspect`: array of hosts that stay opaque tunnels.
    /// Widens: it takes checks away.
    no_inspect: Option<Setting<Vec<HostMatch>>>,
    /// `network.upstream_ca`: array of PEM files whose certificates are
    /// trusted as roots for upstream servers. Widens.
    upstream_ca: Option<Setting<Vec<PathBuf>>>,
    /// `[[network.rules]]`: tables with `host` (required), `methods` and
    /// `paths` (globs): on an inspected host, only those. Narrows.
    http_rules: Option<Setting<Vec<HttpRule>>>,
    /// `[[credentials.inject]]`: tables with `env` (the variable, required),
    /// `file` or `command` (else the value comes from cordon's own `env`),
    /// and `hosts` (required): a real value sent to those hosts. Widens.
    inject: Option<Setting<Vec<InjectSpec>>>,
}

/// One widening setting in a project file.
struct Widening {
    at: usize,
    key: &'static str,
    detail: String,
}

/// The source to record for each key of a fragment.
struct Sources {
    allow_write: Source,
    allow_read: Source,
    deny_read: Source,
    deny_write: Source,
    protect: Source,
    max_procs: Source,
    max_tmp: Source,
    max_memory: Source,
    timeout: Source,
    local_ports: Source,
    unix_sockets: Source,
    net_allow: Source,
    net_deny: Source,
    ports: Source,
    max_connections: Source,
    audit_log: Source,
    allow_degraded: Source,
    deny_env: Source,
    keep_env: Source,
    clear_env: Source,
    inspect: Source,
    no_inspect: Source,
    upstream_ca: Source,
    http_rules: Source,
    inject: Source,
}

impl Sources {
    fn all(source: &Source) -> Sources {
        Sources {
            allow_write: source.clone(),
            allow_read: source.clone(),
            deny_read: source.clone(),
            deny_write: source.clone(),
            protect: source.clone(),
            max_procs: source.clone(),
            max_tmp: source.clone(),
            max_memory: source.clone(),
            timeout: source.clone(),
            local_ports: source.clone(),
            unix_sockets: source.clone(),
            net_allow: source.clone(),
            net_deny: source.clone(),
            ports: source.clone(),
            max_connections: source.clone(),
            audit_log: source.clone(),
            allow_degraded: source.clone(),
            deny_env: source.clone(),
            keep_env: source.clone(),
            clear_env: source.clone(),
            inspect: source.clone(),
            no_inspect: source.clone(),
            upstream_ca: source.clone(),
            http_rules: source.clone(),
            inject: source.clone(),
        }
    }
}

fn extend<T>(into: &mut Vec<Sourced<T>>, from: Option<Setting<Vec<T>>>, source: &Source) {
    if let Some(s) = from {
        into.extend(s.value.into_iter().map(|v| Sourced::new(v, source.clone())));
    }
}

impl Fragment {
    /// The settings that would widen `policy` (the policy in force before
    /// this fragment).
    fn widening(&self, policy: &Policy) -> Vec<Widening> {
        let mut out = Vec::new();
        let mut list = |present: Option<usize>, key: &'static str| {
            if let Some(at) = present {
                out.push(Widening {
                    at,
                    key,
                    detail: String::new(),
                });
            }
        };
        fn nonempty<T>(s: &Option<Setting<Vec<T>>>) -> Option<usize> {
            s.as_ref().filter(|s| !s.value.is_empty()).map(|s| s.at)
        }
        list(nonempty(&self.allow_write), "files.allow_write");
        list(nonempty(&self.allow_read), "files.allow_read");
        list(nonempty(&self.local_ports), "network.local_ports");
        list(nonempty(&self.unix_sockets), "network.allow_unix_sockets");
        list(nonempty(&self.net_allow), "network.allow");
        list(nonempty(&self.allow_degraded), "sandbox.allow_degraded");
        list(nonempty(&self.keep_env), "credentials.keep_env");
        list(nonempty(&self.no_inspect), "network.no_inspect");
        list(nonempty(&self.upstream_ca), "network.upstream_ca");
        list(nonempty(&self.inject), "credentials.inject");
        if let Some(s) = self.clear_env.as_ref().filter(|s| !s.value) {
            if policy.env.clear.value {
                out.push(Widening {
                    at: s.at,
                    key: "credentials.clear_env",
                    detail: format!(
                        "the {} in force clears the environment; ",
                        policy.env.clear.source
                    ),
                });
            }
        }

        let mut raise = |new: &Option<Setting<u64>>,
                         old: Option<&Sourced<u64>>,
                         key: &'static str,
                         show: fn(u64) -> String| {
            if let (Some(new), Some(old)) = (new, old) {
                if new.value > old.value {
                    out.push(Widening {
                        at: new.at,
                        key,
                        detail: format!(
                            "{} is more than the {} in force ({}); ",
                            show(new.value),
                            show(old.value),
                            old.source
                        ),
                    });
                }
            }
        };
        let limits = &policy.limits;
        raise(
            &self.max_procs,
            Some(&limits.max_procs),
            "limits.max_procs",
            |n| n.to_string(),
        );
        raise(
            &self.max_tmp,
            Some(&limits.max_tmp),
            "limits.max_tmp",
            human_size,
        );
        raise(
            &self.max_memory,
            limits.max_memory.as_ref(),
            "limits.max_memory",
            human_size,
        );
        raise(
            &self.max_connections,
            Some(&policy.network.max_connections),
            "network.max_connections",
            |n| n.to_string(),
        );
        if let Some(s) = &self.audit_log {
            out.push(Widening {
                at: s.at,
                key: "audit.file",
                detail: String::new(),
            });
        }
        let in_force = &policy.network.hosts.ports;
        if let Some(new) = &self.ports {
            let added: Vec<String> = new
                .value
                .iter()
                .filter(|p| !in_force.value.contains(p))
                .map(u16::to_string)
                .collect();
            if !added.is_empty() {
                out.push(Widening {
                    at: new.at,
                    key: "network.ports",
                    detail: format!(
                        "{} {} not among the ports in force ({}: {}); ",
                        added.join(", "),
                        if added.len() == 1 { "is" } else { "are" },
                        in_force.source,
                        join_ports(&in_force.value)
                    ),
                });
            }
        }
        if let (Some(new), Some(old)) = (&self.timeout, &limits.timeout) {
            if new.value > old.value {
                out.push(Widening {
                    at: new.at,
                    key: "limits.timeout",
                    detail: format!(
                        "{} is longer than the {} in force ({}); ",
                        human_duration(new.value),
                        human_duration(old.value),
                        old.source
                    ),
                });
            }
        }
        out
    }

    /// Applies this fragment on top of `policy`, every entry from `source`.
    fn apply(self, policy: &mut Policy, source: &Source) {
        self.apply_with(policy, &Sources::all(source));
    }

    fn apply_with(self, policy: &mut Policy, sources: &Sources) {
        let files = &mut policy.files;
        extend(
            &mut files.allow_write,
            self.allow_write,
            &sources.allow_write,
        );
        extend(&mut files.allow_read, self.allow_read, &sources.allow_read);
        extend(&mut files.deny_read, self.deny_read, &sources.deny_read);
        extend(&mut files.deny_write, self.deny_write, &sources.deny_write);
        extend(&mut files.protected, self.protect, &sources.protect);
        let limits = &mut policy.limits;
        if let Some(s) = self.max_procs {
            limits.max_procs = Sourced::new(s.value, sources.max_procs.clone());
        }
        if let Some(s) = self.max_tmp {
            limits.max_tmp = Sourced::new(s.value, sources.max_tmp.clone());
        }
        if let Some(s) = self.max_memory {
            limits.max_memory = Some(Sourced::new(s.value, sources.max_memory.clone()));
        }
        if let Some(s) = self.timeout {
            limits.timeout = Some(Sourced::new(s.value, sources.timeout.clone()));
        }
        extend(
            &mut policy.network.local_ports,
            self.local_ports,
            &sources.local_ports,
        );
        extend(
            &mut policy.network.unix_sockets,
            self.unix_sockets,
            &sources.unix_sockets,
        );
        let hosts = &mut policy.network.hosts;
        extend(&mut hosts.allow, self.net_allow, &sources.net_allow);
        extend(&mut hosts.deny, self.net_deny, &sources.net_deny);
        if let Some(s) = self.ports {
            hosts.ports = Sourced::new(s.value, sources.ports.clone());
        }
        if let Some(s) = self.max_connections {
            policy.network.max_connections = Sourced::new(s.value, sources.max_connections.clone());
        }
        if let Some(s) = self.audit_log {
            policy.audit.log = Sourced::new(s.value, sources.audit_log.clone());
        }
        extend(
            &mut policy.allow_degraded,
            self.allow_degraded,
            &sources.allow_degraded,
        );
        extend(&mut policy.env.deny, self.deny_env, &sources.deny_env);
        extend(&mut policy.env.keep, self.keep_env, &sources.keep_env);
        if let Some(s) = self.clear_env {
            policy.env.clear = Sourced::new(s.value, sources.clear_env.clone());
        }
        let inspection = &mut policy.inspection;
        extend(&mut inspection.inspect, self.inspect, &sources.inspect);
        extend(
            &mut inspection.no_inspect,
            self.no_inspect,
            &sources.no_inspect,
        );
        extend(
            &mut inspection.upstream_ca,
            self.upstream_ca,
            &sources.upstream_ca,
        );
        extend(&mut inspection.rules, self.http_rules, &sources.http_rules);
        extend(&mut inspection.inject, self.inject, &sources.inject);
    }
}

// ---------------------------------------------------------------------------
// Value checks shared by files and flags.

fn check_procs(n: u64) -> Result<u64, String> {
    if n == 0 {
        Err("must be at least 1".to_string())
    } else {
        Ok(n)
    }
}

fn check_connections(n: u64) -> Result<u64, String> {
    if n == 0 {
        Err("must be at least 1".to_string())
    } else if n > MAX_MAX_CONNECTIONS {
        Err(format!("must be at most {MAX_MAX_CONNECTIONS}"))
    } else {
        Ok(n)
    }
}

/// The semaphore behind the cap holds at most this many permits.
const MAX_MAX_CONNECTIONS: u64 = 1 << 20;

fn nonzero_size(n: u64) -> Result<u64, String> {
    if n == 0 {
        Err("must be more than zero".to_string())
    } else {
        Ok(n)
    }
}

fn nonzero_duration(d: Duration) -> Result<Duration, String> {
    if d.is_zero() {
        Err("must be more than zero".to_string())
    } else {
        Ok(d)
    }
}

fn check_port(n: i64) -> Result<u16, String> {
    match u16::try_from(n) {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(format!("{n} is not a TCP port (expected 1 to 65535)")),
    }
}

/// `ports` without repeats, in first-seen order.
fn dedup_ports(ports: Vec<u16>) -> Vec<u16> {
    let mut out: Vec<u16> = Vec::with_capacity(ports.len());
    for p in ports {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// `80, 443`, or `none`.
pub(crate) fn join_ports(ports: &[u16]) -> String {
    if ports.is_empty() {
        return "none".to_string();
    }
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_layer(name: &str) -> Result<Layer, String> {
    Layer::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
        format!(
            "unknown layer {name:?} (expected one of {})",
            names.join(", ")
        )
    })
}

/// Checks a `protect` name: relative, no `..`, no globs; returns it
/// normalised, keeping a trailing `/` (which marks a directory).
fn check_protect(raw: &str) -> Result<String, String> {
    if raw.is_empty() {
        return Err("empty name".to_string());
    }
    if raw.starts_with('/') || raw.starts_with('~') {
        return Err(format!(
            "{raw:?} must be relative to the project (no leading / or ~)"
        ));
    }
    if raw.contains(['*', '?', '[', '{']) {
        return Err(format!(
            "{raw:?}: globs are not supported here; name the file or directory"
        ));
    }
    let mut parts = Vec::new();
    for c in Path::new(raw).components() {
        match c {
            Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => return Err(format!("{raw:?} must not contain `..`")),
        }
    }
    if parts.is_empty() {
        return Err(format!(
            "{raw:?} names the project itself; name something inside it"
        ));
    }
    let dir = if raw.ends_with('/') { "/" } else { "" };
    Ok(format!("{}{dir}", parts.join("/")))
}

/// `1073741824` → `1 GiB`; a number of bytes when no unit is exact.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
    for (shift, unit) in UNITS {
        let size = 1u64 << shift;
        if bytes >= size && bytes % size == 0 {
            return format!("{} {unit}", bytes / size);
        }
    }
    for (shift, unit) in UNITS {
        let size = 1u64 << shift;
        if bytes >= size {
            return format!(
                "{bytes} bytes (about {:.1} {unit})",
                bytes as f64 / size as f64
            );
        }
    }
    format!("{bytes} bytes")
}

/// `5400s` → `1h30m`.
pub(crate) fn human_duration(d: Duration) -> String {
    let millis = d.subsec_millis();
    let mut secs = d.as_secs();
    let mut out = String::new();
    for (size, unit) in [(86_400, "d"), (3600, "h"), (60, "m"), (1, "s")] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    if millis > 0 || out.is_empty() {
        out.push_str(&format!("{millis}ms"));
    }
    out
}

/// Quotes `path` for a POSIX shell when it needs it.
fn shell_quote(path: &Path) -> String {
    let s = path.to_string_lossy();
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c));
    if plain {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

// ---------------------------------------------------------------------------
// Policy files.

/// Where a file's errors point.
struct Doc<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Doc<'_> {
    fn invalid(&self, span: &Span, key: &str, message: impl Into<String>) -> LoadError {
        LoadError::Invalid {
            at: position(self.file, self.text, span.as_ref().map_or(0, |s| s.start)),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// The line and column of byte `offset` in `text`.
fn position(file: &Path, text: &str, offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position {
        file: file.to_path_buf(),
        line,
        column: before[line_start..].chars().count() + 1,
    }
}

/// Parses and checks one policy file.
fn parse_file(file: &Path, bytes: &[u8], ctx: &PathContext<'_>) -> Result<Fragment, LoadError> {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
            return Err(LoadError::Syntax {
                at: position(file, &valid, valid.len()),
                message: "not valid UTF-8".to_string(),
            });
        }
    };
    let doc = Doc { file, text };
    let root: Node = toml::from_str(text).map_err(|e| LoadError::Syntax {
        at: position(file, text, e.span().map_or(0, |s| s.start)),
        message: e.message().trim().replace('\n', ": "),
    })?;
    let mut fragment = Fragment::default();
    let Value::Table(sections) = root.value else {
        return Err(doc.invalid(&root.span, "", "expected a table"));
    };
    for (key, node) in sections {
        let span = node.span.clone().or_else(|| key.span.clone());
        let section = key.name.as_str();
        let entries = match (section, node.value) {
            (
                "files" | "limits" | "network" | "credentials" | "sandbox" | "audit",
                Value::Table(entries),
            ) => entries,
            ("files" | "limits" | "network" | "credentials" | "sandbox" | "audit", other) => {
                return Err(doc.invalid(
                    &span,
                    &dotted(&[section]),
                    format!("expected a table, found {}", other.kind()),
                ))
            }
            (_, _) => return Err(doc.invalid(
                &key.span,
                &dotted(&[section]),
                "unknown key (expected one of files, limits, network, credentials, sandbox, audit)",
            )),
        };
        for (key, node) in entries {
            parse_key(&doc, ctx, section, key, node, &mut fragment)?;
        }
    }
    Ok(fragment)
}

const FILES_KEYS: &str = "allow_write, allow_read, deny_read, deny_write, protect";
const LIMITS_KEYS: &str = "max_procs, max_tmp, max_memory, timeout";
const NETWORK_KEYS: &str = "local_ports, allow_unix_sockets, allow, deny, ports, max_connections, inspect, no_inspect, upstream_ca, rules";
const CREDENTIALS_KEYS: &str = "deny_env, keep_env, clear_env, inject";
const SANDBOX_KEYS: &str = "allow_degraded";
const AUDIT_KEYS: &str = "file";

fn parse_key(
    doc: &Doc<'_>,
    ctx: &PathContext<'_>,
    section: &str,
    key: Key,
    node: Node,
    out: &mut Fragment,
) -> Result<(), LoadError> {
    let at = key.span.as_ref().map_or(0, |s| s.start);
    let name = dotted(&[section, &key.name]);
    let span = node.span.clone().or_else(|| key.span.clone());
    let node = Node {
        value: node.value,
        span,
    };
    let paths = |node: Node| -> Result<Option<Setting<Vec<PathPattern>>>, LoadError> {
        let value = each_string(doc, &name, node, |raw| {
            PathPattern::parse(raw, ctx).map_err(|e| e.to_string())
        })?;
        Ok(Some(Setting { value, at }))
    };
    match (section, key.name.as_str()) {
        ("files", "allow_write") => out.allow_write = paths(node)?,
        ("files", "allow_read") => out.allow_read = paths(node)?,
        ("files", "deny_read") => out.deny_read = paths(node)?,
        ("files", "deny_write") => out.deny_write = paths(node)?,
        ("files", "protect") => {
            let value = each_string(doc, &name, node, check_protect)?;
            out.protect = Some(Setting { value, at });
        }
        ("limits", "max_procs") => {
            let n = match node.value {
                Value::Integer(n) => u64::try_from(n)
                    .map_err(|_| "must be at least 1".to_string())
                    .and_then(check_procs),
                ref other => Err(format!("expected an integer, found {}", other.kind())),
            }
            .map_err(|m| doc.invalid(&node.span, &name, m))?;
            out.max_procs = Some(Setting { value: n, at });
        }
        ("limits", "max_tmp" | "max_memory") => {
            let bytes = match node.value {
                Value::String(ref s) => parse_size(s),
                Value::Integer(n) => {
                    u64::try_from(n).map_err(|_| format!("invalid size {n} (must not be negative)"))
                }
                ref other => Err(format!(
                    "expected a size (a string such as \"512M\", or a number of bytes), found {}",
                    other.kind()
                )),
            }
            .and_then(nonzero_size)
            .map_err(|m| doc.invalid(&node.span, &name, m))?;
            let setting = Some(Setting { value: bytes, at });
            if key.name == "max_tmp" {
                out.max_tmp = setting;
            } else {
                out.max_memory = setting;
            }
        }
        ("limits", "timeout") => {
            let d = match node.value {
                Value::String(ref s) => parse_duration(s),
                Value::Integer(n) => u64::try_from(n)
                    .map(Duration::from_secs)
                    .map_err(|_| format!("invalid duration {n} (must not be negative)")),
                ref other => Err(format!(
                    "expected a duration (a string such as \"2h\", or a number of seconds), found {}",
                    other.kind()
                )),
            }
            .and_then(nonzero_duration)
            .map_err(|m| doc.invalid(&node.span, &name, m))?;
            out.timeout = Some(Setting { value: d, at });
        }
        ("network", "local_ports") => {
            let value = each(doc, &name, node, "an integer", |v| match v {
                Value::Integer(n) => Some(check_port(*n)),
                _ => None,
            })?;
            out.local_ports = Some(Setting { value, at });
        }
        ("network", "allow_unix_sockets") => out.unix_sockets = paths(node)?,
        ("network", "allow" | "deny") => {
            let value = each_string(doc, &name, node, |raw| {
                parse_rule(raw).map_err(|e| e.to_string())
            })?;
            let setting = Some(Setting { value, at });
            if key.name == "allow" {
                out.net_allow = setting;
            } else {
                out.net_deny = setting;
            }
        }
        ("network", "ports") => {
            let value = each(doc, &name, node, "an integer", |v| match v {
                Value::Integer(n) => Some(check_port(*n)),
                _ => None,
            })?;
            out.ports = Some(Setting {
                value: dedup_ports(value),
                at,
            });
        }
        ("network", "max_connections") => {
            let n = match node.value {
                Value::Integer(n) => u64::try_from(n)
                    .map_err(|_| "must be at least 1".to_string())
                    .and_then(check_connections),
                ref other => Err(format!("expected an integer, found {}", other.kind())),
            }
            .map_err(|m| doc.invalid(&node.span, &name, m))?;
            out.max_connections = Some(Setting { value: n, at });
        }
        ("audit", "file") => {
            let file = match node.value {
                Value::String(ref s) => parse_audit_file(s, ctx),
                ref other => Err(format!(
                    "expected a path (or \"{AUDIT_OFF}\"), found {}",
                    other.kind()
                )),
            }
            .map_err(|m| doc.invalid(&node.span, &name, m))?;
            out.audit_log = Some(Setting { value: file, at });
        }
        ("credentials", "deny_env" | "keep_env") => {
            let value = each_string(doc, &name, node, |raw| {
                check_env_pattern(raw).map_err(|e| e.to_string())
            })?;
            let setting = Some(Setting { value, at });
            if key.name == "deny_env" {
                out.deny_env = setting;
            } else {
                out.keep_env = setting;
            }
        }
        ("credentials", "clear_env") => {
            let value = match node.value {
                Value::Boolean(b) => b,
                ref other => {
                    return Err(doc.invalid(
                        &node.span,
                        &name,
                        format!("expected true or false, found {}", other.kind()),
                    ))
                }
            };
            out.clear_env = Some(Setting { value, at });
        }
        ("network", "inspect" | "no_inspect") => {
            let value = each_string(doc, &name, node, |raw| {
                HostMatch::parse(raw).map_err(|e| e.to_string())
            })?;
            let setting = Some(Setting { value, at });
            if key.name == "inspect" {
                out.inspect = setting;
            } else {
                out.no_inspect = setting;
            }
        }
        ("network", "upstream_ca") => {
            let value = each_string(doc, &name, node, |raw| one_file(raw, ctx))?;
            out.upstream_ca = Some(Setting { value, at });
        }
        ("network", "rules") => {
            let value = each_table(doc, &name, node, |key, span, entries| {
                parse_http_rule(doc, key, span, entries)
            })?;
            out.http_rules = Some(Setting { value, at });
        }
        ("credentials", "inject") => {
            let value = each_table(doc, &name, node, |key, span, entries| {
                parse_inject(doc, ctx, key, span, entries)
            })?;
            out.inject = Some(Setting { value, at });
        }
        ("sandbox", "allow_degraded") => {
            let value = each_string(doc, &name, node, parse_layer)?;
            out.allow_degraded = Some(Setting { value, at });
        }
        _ => {
            let expected = match section {
                "files" => FILES_KEYS,
                "limits" => LIMITS_KEYS,
                "network" => NETWORK_KEYS,
                "audit" => AUDIT_KEYS,
                "credentials" => CREDENTIALS_KEYS,
                _ => SANDBOX_KEYS,
            };
            return Err(doc.invalid(
                &key.span,
                &name,
                format!("unknown key (expected one of {expected})"),
            ));
        }
    }
    Ok(())
}

/// One file path (no glob): for `upstream_ca` and inject `file`.
fn one_file(raw: &str, ctx: &PathContext<'_>) -> Result<PathBuf, String> {
    match PathPattern::parse(raw, ctx).map_err(|e| e.to_string())? {
        PathPattern::Exact(path) => Ok(path),
        PathPattern::Glob { .. } => Err(format!("{raw:?}: name one file, not a glob")),
    }
}

/// Checks that `node` is an array of tables (`[[section.key]]`) and
/// converts each with `convert(dotted key, span, entries)`.
fn each_table<T>(
    doc: &Doc<'_>,
    name: &str,
    node: Node,
    mut convert: impl FnMut(&str, &Span, Vec<(Key, Node)>) -> Result<T, LoadError>,
) -> Result<Vec<T>, LoadError> {
    let Value::Array(items) = node.value else {
        return Err(doc.invalid(
            &node.span,
            name,
            format!(
                "expected an array of tables ([[{name}]]), found {}",
                node.value.kind()
            ),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let span = item.span.clone().or_else(|| node.span.clone());
        let key = format!("{name}[{i}]");
        match item.value {
            Value::Table(entries) => out.push(convert(&key, &span, entries)?),
            other => {
                return Err(doc.invalid(
                    &span,
                    &key,
                    format!("expected a table, found {}", other.kind()),
                ))
            }
        }
    }
    Ok(out)
}

/// One string field of a table.
fn table_string(doc: &Doc<'_>, name: &str, node: Node) -> Result<String, LoadError> {
    match node.value {
        Value::String(s) => Ok(s),
        other => Err(doc.invalid(
            &node.span,
            name,
            format!("expected a string, found {}", other.kind()),
        )),
    }
}

/// One `[[network.rules]]` table.
fn parse_http_rule(
    doc: &Doc<'_>,
    name: &str,
    span: &Span,
    entries: Vec<(Key, Node)>,
) -> Result<HttpRule, LoadError> {
    let mut host = None;
    let mut methods = Vec::new();
    let mut paths = Vec::new();
    let mut paths_span = span.clone();
    for (key, node) in entries {
        let field = format!("{name}.{}", dotted(&[&key.name]));
        let node = Node {
            span: node.span.clone().or_else(|| key.span.clone()),
            value: node.value,
        };
        match key.name.as_str() {
            "host" => {
                let at = node.span.clone();
                let raw = table_string(doc, &field, node)?;
                host = Some(
                    HostMatch::parse(&raw).map_err(|e| doc.invalid(&at, &field, e.to_string()))?,
                );
            }
            "methods" => methods = each_string(doc, &field, node, |m| Ok(m.to_string()))?,
            "paths" => {
                paths_span = node.span.clone();
                paths = each_string(doc, &field, node, |p| Ok(p.to_string()))?;
            }
            _ => {
                return Err(doc.invalid(
                    &key.span,
                    &field,
                    "unknown key (expected one of host, methods, paths)",
                ))
            }
        }
    }
    let host = host.ok_or_else(|| doc.invalid(span, name, "missing key host"))?;
    HttpRule::new(host, &methods, &paths).map_err(|e| doc.invalid(&paths_span, name, e.to_string()))
}

/// One `[[credentials.inject]]` table.
fn parse_inject(
    doc: &Doc<'_>,
    ctx: &PathContext<'_>,
    name: &str,
    span: &Span,
    entries: Vec<(Key, Node)>,
) -> Result<InjectSpec, LoadError> {
    let mut env = None;
    let mut source = SecretSource::Env;
    let mut hosts = None;
    for (key, node) in entries {
        let field = format!("{name}.{}", dotted(&[&key.name]));
        let node = Node {
            span: node.span.clone().or_else(|| key.span.clone()),
            value: node.value,
        };
        let at = node.span.clone();
        let second = |what: &str| {
            doc.invalid(
                &key.span,
                &field,
                format!("{what}: name one source (env alone, file, or command)"),
            )
        };
        match key.name.as_str() {
            "env" => {
                let raw = table_string(doc, &field, node)?;
                env = Some(
                    check_var_name(&raw).map_err(|e| doc.invalid(&at, &field, e.to_string()))?,
                );
            }
            "file" => {
                if source != SecretSource::Env {
                    return Err(second("a second source"));
                }
                let raw = table_string(doc, &field, node)?;
                source = SecretSource::File(
                    one_file(&raw, ctx).map_err(|m| doc.invalid(&at, &field, m))?,
                );
            }
            "command" => {
                if source != SecretSource::Env {
                    return Err(second("a second source"));
                }
                let argv = each_string(doc, &field, node, |a| Ok(a.to_string()))?;
                if argv.is_empty() {
                    return Err(doc.invalid(&at, &field, "the command is empty"));
                }
                source = SecretSource::Command(argv);
            }
            "hosts" => {
                let list = each_string(doc, &field, node, |raw| {
                    HostMatch::parse(raw).map_err(|e| e.to_string())
                })?;
                if list.is_empty() {
                    return Err(doc.invalid(&at, &field, "name at least one host"));
                }
                hosts = Some(list);
            }
            _ => {
                return Err(doc.invalid(
                    &key.span,
                    &field,
                    "unknown key (expected one of env, file, command, hosts)",
                ))
            }
        }
    }
    let env = env.ok_or_else(|| {
        doc.invalid(
            span,
            name,
            "missing key env (the variable that holds the placeholder inside)",
        )
    })?;
    let hosts = hosts.ok_or_else(|| {
        doc.invalid(
            span,
            name,
            "missing key hosts (where the real value may go)",
        )
    })?;
    Ok(InjectSpec { env, source, hosts })
}

/// Checks that `node` is an array of strings and converts each with `convert`.
fn each_string<T>(
    doc: &Doc<'_>,
    name: &str,
    node: Node,
    convert: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, LoadError> {
    each(doc, name, node, "a string", |v| match v {
        Value::String(s) => Some(convert(s)),
        _ => None,
    })
}

/// Checks that `node` is an array whose elements `convert` accepts
/// (`None`: wrong type, `expected` describes the right one).
fn each<T>(
    doc: &Doc<'_>,
    name: &str,
    node: Node,
    expected: &str,
    convert: impl Fn(&Value) -> Option<Result<T, String>>,
) -> Result<Vec<T>, LoadError> {
    let Value::Array(items) = node.value else {
        return Err(doc.invalid(
            &node.span,
            name,
            format!(
                "expected an array of {}s, found {}",
                expected.trim_start_matches("an ").trim_start_matches("a "),
                node.value.kind()
            ),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let span = item.span.clone().or_else(|| node.span.clone());
        let key = format!("{name}[{i}]");
        match convert(&item.value) {
            Some(Ok(v)) => out.push(v),
            Some(Err(m)) => return Err(doc.invalid(&span, &key, m)),
            None => {
                return Err(doc.invalid(
                    &span,
                    &key,
                    format!("expected {expected}, found {}", item.value.kind()),
                ))
            }
        }
    }
    Ok(out)
}

/// Joins keys with dots, quoting those that are not bare TOML keys.
fn dotted(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| {
            let bare = !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if bare {
                (*k).to_string()
            } else {
                format!("{k:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

// ---------------------------------------------------------------------------
// A TOML document as a tree with byte spans.
//
// `toml` reports spans through `toml::Spanned`, but only for values that have
// one: tables made implicitly by dotted keys (`files.deny_read = [...]`) have
// none, and `Spanned<T>` then fails to deserialize. So this tree speaks the
// same (private, but long-stable) protocol itself and accepts values with or
// without a span. The `spans_are_recovered` test catches a protocol change.

const SPANNED_NAME: &str = "$__serde_spanned_private_Spanned";
const SPANNED_START: &str = "$__serde_spanned_private_start";
const SPANNED_END: &str = "$__serde_spanned_private_end";
const SPANNED_VALUE: &str = "$__serde_spanned_private_value";
const SPANNED_FIELDS: &[&str] = &[SPANNED_START, SPANNED_END, SPANNED_VALUE];
const DATETIME_FIELD: &str = "$__toml_private_datetime";

type Span = Option<Range<usize>>;

/// A table key and where it is.
#[derive(Debug)]
struct Key {
    name: String,
    span: Span,
}

/// A TOML value.
#[derive(Debug)]
enum Value {
    String(String),
    Integer(i64),
    Float,
    Boolean(bool),
    Datetime,
    Array(Vec<Node>),
    Table(Vec<(Key, Node)>),
}

impl Value {
    /// "a string", "an integer", ...: for error messages.
    fn kind(&self) -> &'static str {
        match self {
            Value::String(_) => "a string",
            Value::Integer(_) => "an integer",
            Value::Float => "a float",
            Value::Boolean(_) => "a boolean",
            Value::Datetime => "a datetime",
            Value::Array(_) => "an array",
            Value::Table(_) => "a table",
        }
    }
}

/// A TOML value and where it is.
#[derive(Debug)]
struct Node {
    value: Value,
    span: Span,
}

mod tree_de {
    use std::fmt;

    use serde::de::{Deserialize, Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};

    use super::{
        Key, Node, Value, DATETIME_FIELD, SPANNED_END, SPANNED_FIELDS, SPANNED_NAME, SPANNED_START,
        SPANNED_VALUE,
    };

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
            d.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, KeyVisitor)
        }
    }

    impl<'de> Deserialize<'de> for Node {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
            d.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, NodeVisitor)
        }
    }

    impl<'de> Deserialize<'de> for Value {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
            d.deserialize_any(ValueVisitor)
        }
    }

    /// Reads the rest of a span map whose start key was just read.
    fn spanned_rest<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
        map: &mut A,
    ) -> Result<(std::ops::Range<usize>, T), A::Error> {
        let start: usize = map.next_value()?;
        match map.next_key::<String>()? {
            Some(k) if k == SPANNED_END => {}
            _ => return Err(A::Error::custom("malformed span: no end")),
        }
        let end: usize = map.next_value()?;
        match map.next_key::<String>()? {
            Some(k) if k == SPANNED_VALUE => {}
            _ => return Err(A::Error::custom("malformed span: no value")),
        }
        let value: T = map.next_value()?;
        Ok((start..end, value))
    }

    /// A table (or datetime) whose first key, `first`, was just read.
    fn map_rest<'de, A: MapAccess<'de>>(first: Key, map: &mut A) -> Result<Value, A::Error> {
        if first.span.is_none() && first.name == DATETIME_FIELD {
            map.next_value::<IgnoredAny>()?;
            return Ok(Value::Datetime);
        }
        let mut entries = vec![(first, map.next_value()?)];
        while let Some(key) = map.next_key::<Key>()? {
            entries.push((key, map.next_value()?));
        }
        Ok(Value::Table(entries))
    }

    fn seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    struct KeyVisitor;

    impl<'de> Visitor<'de> for KeyVisitor {
        type Value = Key;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a key")
        }

        fn visit_str<E: Error>(self, v: &str) -> Result<Key, E> {
            Ok(Key {
                name: v.to_string(),
                span: None,
            })
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Key, A::Error> {
            match map.next_key::<String>()? {
                Some(k) if k == SPANNED_START => {
                    let (span, name) = spanned_rest::<A, String>(&mut map)?;
                    Ok(Key {
                        name,
                        span: Some(span),
                    })
                }
                _ => Err(A::Error::custom("expected a key")),
            }
        }
    }

    struct NodeVisitor;

    impl<'de> Visitor<'de> for NodeVisitor {
        type Value = Node;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a TOML value")
        }

        fn visit_bool<E: Error>(self, v: bool) -> Result<Node, E> {
            ValueVisitor.visit_bool(v).map(unspanned)
        }

        fn visit_i64<E: Error>(self, v: i64) -> Result<Node, E> {
            ValueVisitor.visit_i64(v).map(unspanned)
        }

        fn visit_u64<E: Error>(self, v: u64) -> Result<Node, E> {
            ValueVisitor.visit_u64(v).map(unspanned)
        }

        fn visit_f64<E: Error>(self, v: f64) -> Result<Node, E> {
            ValueVisitor.visit_f64(v).map(unspanned)
        }

        fn visit_str<E: Error>(self, v: &str) -> Result<Node, E> {
            ValueVisitor.visit_str(v).map(unspanned)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Node, A::Error> {
            seq(s).map(unspanned)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
            let Some(first) = map.next_key::<Key>()? else {
                return Ok(unspanned(Value::Table(Vec::new())));
            };
            if first.span.is_none() && first.name == SPANNED_START {
                let (span, value) = spanned_rest::<A, Value>(&mut map)?;
                return Ok(Node {
                    value,
                    span: Some(span),
                });
            }
            map_rest(first, &mut map).map(unspanned)
        }
    }

    fn unspanned(value: Value) -> Node {
        Node { value, span: None }
    }

    struct ValueVisitor;

    impl<'de> Visitor<'de> for ValueVisitor {
        type Value = Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a TOML value")
        }

        fn visit_bool<E: Error>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Boolean(v))
        }

        fn visit_i64<E: Error>(self, v: i64) -> Result<Value, E> {
            Ok(Value::Integer(v))
        }

        fn visit_u64<E: Error>(self, v: u64) -> Result<Value, E> {
            i64::try_from(v)
                .map(Value::Integer)
                .map_err(|_| E::custom("integer out of range"))
        }

        fn visit_f64<E: Error>(self, _: f64) -> Result<Value, E> {
            Ok(Value::Float)
        }

        fn visit_str<E: Error>(self, v: &str) -> Result<Value, E> {
            Ok(Value::String(v.to_string()))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<Value, A::Error> {
            seq(s)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            match map.next_key::<Key>()? {
                Some(first) => map_rest(first, &mut map),
                None => Ok(Value::Table(Vec::new())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Fx {
        _dir: tempfile::TempDir,
        root: PathBuf,
        home: PathBuf,
        project: PathBuf,
        config: PathBuf,
    }

    impl Fx {
        fn new() -> Fx {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().canonicalize().unwrap();
            let home = root.join("home/u");
            let project = root.join("work/p");
            fs::create_dir_all(home.join(".config")).unwrap();
            fs::create_dir_all(&project).unwrap();
            let config = home.join(".config/cordon");
            Fx {
                _dir: dir,
                root,
                home,
                project,
                config,
            }
        }

        /// The policy's homes that are this fixture's (the host's other
        /// accounts' homes follow them).
        fn own_homes(&self, p: &Policy) -> Vec<PathBuf> {
            p.homes
                .iter()
                .filter(|h| h.starts_with(&self.root))
                .cloned()
                .collect()
        }

        /// The deny_read entries under this fixture.
        fn under_root(&self, p: &Policy) -> Vec<String> {
            let root = self.root.display().to_string();
            p.files
                .deny_read
                .iter()
                .map(|e| e.value.to_string())
                .filter(|e| e.starts_with(&root))
                .collect()
        }

        fn env(&self) -> EnvFacts {
            EnvFacts {
                home: self.home.clone(),
                passwd_home: None,
                xdg_config_home: self.home.join(".config"),
                xdg_state_home: self.home.join(".local/state"),
            }
        }

        fn req(&self, flags: FlagOverrides) -> LoadRequest {
            LoadRequest {
                cwd: self.project.clone(),
                project: None,
                policy_files: Vec::new(),
                flags,
                env: self.env(),
            }
        }

        fn load(&self) -> Result<Policy, LoadError> {
            load(&self.req(FlagOverrides::default()))
        }

        fn project_file(&self) -> PathBuf {
            self.project.join("cordon.toml")
        }

        fn write_project(&self, text: &str) -> PathBuf {
            fs::write(self.project_file(), text).unwrap();
            self.project_file()
        }

        fn write_user(&self, text: &str) -> PathBuf {
            fs::create_dir_all(&self.config).unwrap();
            let file = self.config.join("config.toml");
            fs::write(&file, text).unwrap();
            file
        }

        /// The error that loading the project file `text` gives, as text.
        fn project_error(&self, text: &str) -> String {
            let file = self.write_project(text);
            let err = self.load().expect_err("load should fail");
            let msg = err.to_string();
            let prefix = format!("{}:", file.display());
            msg.strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("{msg:?} does not start with {prefix:?}"))
                .to_string()
        }
    }

    fn exact(p: &Path) -> PathPattern {
        PathPattern::Exact(p.to_path_buf())
    }

    fn values<T: Clone>(v: &[Sourced<T>]) -> Vec<T> {
        v.iter().map(|s| s.value.clone()).collect()
    }

    // ---- sizes and durations

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("100k"), Ok(100 * 1024));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("2gb"), Ok(2 << 30));
        assert_eq!(parse_size("3T"), Ok(3 << 40));
        assert_eq!(parse_size(" 8 G "), Ok(8 << 30));
        assert_eq!(parse_size("10B"), Ok(10));
        for bad in ["", "G", "12Q", "1.5G", "-1", "1 G B", "0x10"] {
            let err = parse_size(bad).expect_err(bad);
            assert!(err.starts_with(&format!("invalid size {bad:?}")), "{err}");
        }
        assert!(parse_size("99999999999T")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_size("99999999999999999999").is_err());
    }

    #[test]
    fn durations() {
        let s = Duration::from_secs;
        assert_eq!(parse_duration("90"), Ok(s(90)));
        assert_eq!(parse_duration("90s"), Ok(s(90)));
        assert_eq!(parse_duration("30m"), Ok(s(1800)));
        assert_eq!(parse_duration("2h"), Ok(s(7200)));
        assert_eq!(parse_duration("1h30m"), Ok(s(5400)));
        assert_eq!(parse_duration("1d2h"), Ok(s(93_600)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m500ms"), Ok(Duration::from_millis(60_500)));
        for bad in ["", "h", "1x", "1h30", "1.5h", "-3s", "1 h"] {
            let err = parse_duration(bad).expect_err(bad);
            assert!(
                err.starts_with(&format!("invalid duration {bad:?}")),
                "{err}"
            );
        }
        assert!(parse_duration("99999999999999999d")
            .unwrap_err()
            .contains("too long"));
    }

    #[test]
    fn human_forms() {
        assert_eq!(human_size(1 << 30), "1 GiB");
        assert_eq!(human_size(512 << 20), "512 MiB");
        assert_eq!(human_size(1536 << 20), "1536 MiB");
        assert_eq!(human_size(1500), "1500 bytes (about 1.5 KiB)");
        assert_eq!(human_size(1000), "1000 bytes");
        assert_eq!(human_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(human_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(human_duration(Duration::ZERO), "0ms");
    }

    #[test]
    fn config_dir() {
        let env = EnvFacts {
            home: "/h".into(),
            passwd_home: None,
            xdg_config_home: "/x/conf".into(),
            xdg_state_home: "/x/state".into(),
        };
        assert_eq!(user_config_dir(&env), PathBuf::from("/x/conf/cordon"));
    }

    // ---- built-in layer

    #[test]
    fn builtin_defaults() {
        let fx = Fx::new();
        let p = fx.load().unwrap();
        assert_eq!(p.project, Sourced::new(fx.project.clone(), Source::Builtin));
        assert_eq!(fx.own_homes(&p), vec![fx.home.clone()]);
        assert_eq!(fx.under_root(&p).len(), PER_HOME);
        assert!(p
            .files
            .deny_read
            .iter()
            .all(|e| e.source == Source::Builtin));
        assert!(values(&p.files.deny_read).contains(&exact(&fx.home.join(".ssh"))));
        assert!(values(&p.files.deny_read).contains(&exact(&fx.home.join(".docker/config.json"))));
        for entry in SYSTEM_DENY_LIST {
            assert!(
                p.files
                    .deny_read
                    .iter()
                    .any(|e| e.value.to_string() == *entry),
                "{entry}"
            );
        }
        assert_eq!(
            values(&p.files.protected),
            PROTECTED_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        );
        assert_eq!(
            p.files.deny_write,
            vec![Sourced::new(exact(&fx.config), Source::Builtin)]
        );
        assert!(p.files.allow_write.is_empty() && p.files.allow_read.is_empty());
        assert_eq!(p.limits.max_procs, Sourced::new(MAX_PROCS, Source::Builtin));
        assert_eq!(p.limits.max_tmp, Sourced::new(MAX_TMP, Source::Builtin));
        assert!(p.limits.max_memory.is_none() && p.limits.timeout.is_none());
        assert!(p.network.local_ports.is_empty() && p.allow_degraded.is_empty());
    }

    /// Built-in entries under each of the caller's homes.
    const PER_HOME: usize = CREDENTIAL_DENY_LIST.len() + CREDENTIAL_DENY_PATTERNS.len();

    #[test]
    fn passwd_homes_are_the_sixth_field() {
        let text = "root:x:0:0:root:/root:/bin/bash\n\
                    bob:x:1000:1000:Bob,,,:/home/bob:/bin/sh\n\
                    odd:x:1:1::relative:/bin/sh\n\
                    short:x:2\n";
        assert_eq!(
            passwd_homes(text),
            vec![PathBuf::from("/root"), PathBuf::from("/home/bob")]
        );
    }

    #[test]
    fn other_homes_get_their_existing_credential_files_only() {
        let fx = Fx::new();
        let other = fx.root.join("home/bob");
        fs::create_dir_all(other.join(".ssh")).unwrap();
        fs::create_dir_all(other.join(".config/JetBrains/IdeaIC2024.1")).unwrap();
        fs::write(other.join(".config/JetBrains/IdeaIC2024.1/c.kdbx"), "x").unwrap();
        fs::write(other.join(".netrc"), "x").unwrap();
        let gone = fx.root.join("nonexistent");
        let system = ["/", "/usr/sbin", "/bin", "/dev"].map(PathBuf::from);
        let homes = other_homes(&[&[other.clone(), gone, other.clone()], &system[..]].concat());
        assert_eq!(homes.iter().filter(|h| **h == other).count(), 1);
        assert!(!homes
            .iter()
            .any(|h| h.starts_with("/usr") || h.starts_with("/dev")));
        assert!(!homes
            .iter()
            .any(|h| h.starts_with(fx.root.join("nonexistent"))));
        assert!(!homes.contains(&PathBuf::from("/")));
        let found: Vec<String> = existing_entries(&other)
            .unwrap()
            .iter()
            .map(|p| p.to_string())
            .collect();
        let under = |rel: &str| other.join(rel).display().to_string();
        assert_eq!(
            found,
            vec![
                under(".ssh"),
                under(".netrc"),
                under(".config/JetBrains/*/c.kdbx")
            ]
        );
        // The glob covers the file it was found for.
        let glob = home_entry(&other, ".config/JetBrains/*/c.kdbx").unwrap();
        assert!(glob.covers(&other.join(".config/JetBrains/IdeaIC2024.1/c.kdbx")));
    }

    #[test]
    fn the_ssh_host_key_glob_spares_the_public_keys() {
        let root = PathContext {
            home: Path::new("/"),
            base: None,
        };
        let glob = PathPattern::parse("/etc/ssh/ssh_host_*_key", &root).unwrap();
        assert!(glob.covers(Path::new("/etc/ssh/ssh_host_ed25519_key")));
        assert!(glob.covers(Path::new("/etc/ssh/ssh_host_rsa_key")));
        assert!(!glob.covers(Path::new("/etc/ssh/ssh_host_rsa_key.pub")));
        assert!(!glob.covers(Path::new("/etc/ssh/sshd_config")));
    }

    #[test]
    fn homes_from_env_and_passwd() {
        let fx = Fx::new();
        let other = fx.root.join("home/other");
        fs::create_dir_all(&other).unwrap();
        let mut req = fx.req(FlagOverrides::default());
        req.env.passwd_home = Some(other.clone());
        let p = load(&req).unwrap();
        assert_eq!(fx.own_homes(&p), vec![fx.home.clone(), other.clone()]);
        assert_eq!(fx.under_root(&p).len(), 2 * PER_HOME);
        assert!(values(&p.files.deny_read).contains(&exact(&other.join(".aws"))));

        // The same home through a symlink counts once.
        let link = fx.root.join("homelink");
        std::os::unix::fs::symlink(&fx.home, &link).unwrap();
        req.env.passwd_home = Some(link);
        let p = load(&req).unwrap();
        assert_eq!(fx.own_homes(&p), vec![fx.home.clone()]);
    }

    #[test]
    fn project_flag() {
        let fx = Fx::new();
        let mut req = fx.req(FlagOverrides::default());
        req.cwd = fx.root.clone();
        req.project = Some("work/./p".into());
        let p = load(&req).unwrap();
        assert_eq!(
            p.project,
            Sourced::new(fx.project.clone(), Source::Flag("--project".into()))
        );

        req.project = Some("missing".into());
        let err = load(&req).unwrap_err().to_string();
        assert!(
            err.contains("missing") && err.ends_with("does not exist"),
            "{err}"
        );

        fs::write(fx.root.join("file"), "").unwrap();
        req.project = Some("file".into());
        let err = load(&req).unwrap_err().to_string();
        assert!(err.ends_with("is not a directory"), "{err}");

        req.project = None;
        req.cwd = "relative".into();
        assert!(matches!(load(&req), Err(LoadError::RelativeCwd(_))));
    }

    // ---- layering

    #[test]
    fn layers_apply_in_order() {
        let fx = Fx::new();
        let user = fx.write_user(
            "[files]\nallow_write = [\"~/.cache/pip\"]\ndeny_read = [\"/srv/secret\"]\n\
             [limits]\nmax_procs = 1000\ntimeout = \"3h\"\n",
        );
        let project = fx.write_project(
            "[files]\ndeny_read = [\"./.env\", \"./**/*.pem\"]\nprotect = [\"./.github/workflows/\"]\n\
             [limits]\nmax_procs = 500\ntimeout = \"2h\"\nmax_memory = \"8G\"\n",
        );
        let pdir = fx.root.join("policies");
        fs::create_dir_all(&pdir).unwrap();
        let pfile = pdir.join("extra.toml");
        fs::write(
            &pfile,
            "[files]\nallow_write = [\"build\"]\n[limits]\nmax_procs = 800\n[network]\nlocal_ports = [3000]\n",
        )
        .unwrap();
        let flags = FlagOverrides {
            allow_write: vec!["out".into(), "~/scratch".into()],
            deny_read: vec!["/etc/shadow".into()],
            max_procs: Some(100),
            max_tmp: Some("256M".into()),
            local_ports: vec![8080],
            allow_degraded: vec!["seccomp".into()],
            ..FlagOverrides::default()
        };
        let mut req = fx.req(flags);
        req.policy_files = vec![PathBuf::from("../../policies/extra.toml")];
        let p = load(&req).unwrap();

        let u = Source::UserConfig(user);
        let pr = Source::Project(project);
        let pf = Source::PolicyFile(pfile);
        let flag = |f: &str| Source::Flag(f.to_string());
        assert_eq!(
            p.files.allow_write,
            vec![
                Sourced::new(exact(&fx.home.join(".cache/pip")), u.clone()),
                Sourced::new(exact(&pdir.join("build")), pf.clone()),
                Sourced::new(exact(&fx.project.join("out")), flag("--allow-write")),
                Sourced::new(exact(&fx.home.join("scratch")), flag("--allow-write")),
            ]
        );
        let extra: Vec<_> = p
            .files
            .deny_read
            .iter()
            .filter(|e| e.source != Source::Builtin)
            .map(|e| (e.value.to_string(), e.source.clone()))
            .collect();
        let pem = format!("{}/**/*.pem", fx.project.display());
        assert_eq!(
            extra,
            vec![
                ("/srv/secret".to_string(), u.clone()),
                (fx.project.join(".env").display().to_string(), pr.clone()),
                (pem, pr.clone()),
                ("/etc/shadow".to_string(), flag("--deny-read")),
            ]
        );
        assert_eq!(
            p.files.protected.last(),
            Some(&Sourced::new(".github/workflows/".to_string(), pr.clone()))
        );
        assert_eq!(p.limits.max_procs, Sourced::new(100, flag("--max-procs")));
        assert_eq!(p.limits.max_tmp, Sourced::new(256 << 20, flag("--max-tmp")));
        assert_eq!(p.limits.max_memory, Some(Sourced::new(8 << 30, pr.clone())));
        assert_eq!(
            p.limits.timeout,
            Some(Sourced::new(Duration::from_secs(7200), pr.clone()))
        );
        assert_eq!(
            p.network.local_ports,
            vec![
                Sourced::new(3000, pf.clone()),
                Sourced::new(8080, flag("--allow-local-port"))
            ]
        );
        assert_eq!(
            p.allow_degraded,
            vec![Sourced::new(Layer::Seccomp, flag("--allow-degraded"))]
        );
        assert!(p.degraded_ok(Layer::Seccomp) && !p.degraded_ok(Layer::Landlock));
    }

    #[test]
    fn sections_may_be_written_many_ways() {
        let fx = Fx::new();
        fx.write_project(
            "files.deny_read = [\"/a\"]\nlimits = { max_procs = 10 }\n\
             [network]\n\"local_ports\" = []\n",
        );
        let p = fx.load().unwrap();
        assert_eq!(p.files.deny_read.last().unwrap().value.to_string(), "/a");
        assert_eq!(p.limits.max_procs.value, 10);
        // An empty file and empty sections are fine.
        fx.write_project("");
        fx.load().unwrap();
        fx.write_project("[files]\n[limits]\n[network]\n[sandbox]\n");
        fx.load().unwrap();
    }

    #[test]
    fn user_config_paths_must_be_absolute() {
        let fx = Fx::new();
        let file = fx.write_user("[files]\ndeny_read = [\"~/ok\", \"rel\"]\n");
        let err = fx.load().unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "{}:2:22: files.deny_read[1]: relative path \"rel\"",
                file.display()
            )),
            "{err}"
        );
    }

    #[test]
    fn policy_files() {
        let fx = Fx::new();
        let mut req = fx.req(FlagOverrides::default());
        req.policy_files = vec![PathBuf::from("nope.toml")];
        let err = load(&req).unwrap_err().to_string();
        assert!(
            err.starts_with("cannot read ") && err.contains("nope.toml"),
            "{err}"
        );

        let a = fx.project.join("a.toml");
        let b = fx.root.join("b.toml");
        fs::write(&a, "[limits]\nmax_procs = 7\n").unwrap();
        fs::write(
            &b,
            "[limits]\nmax_procs = 9\n[files]\ndeny_write = [\"x\"]\n",
        )
        .unwrap();
        req.policy_files = vec![b.clone(), "a.toml".into()];
        let p = load(&req).unwrap();
        assert_eq!(
            p.limits.max_procs,
            Sourced::new(7, Source::PolicyFile(a.clone()))
        );
        assert_eq!(
            p.files.deny_write.last(),
            Some(&Sourced::new(
                exact(&fx.root.join("x")),
                Source::PolicyFile(b.clone())
            ))
        );
        req.policy_files = vec!["a.toml".into(), b.clone()];
        assert_eq!(load(&req).unwrap().limits.max_procs.value, 9);
    }

    // ---- errors in files

    #[test]
    fn unknown_keys() {
        let fx = Fx::new();
        assert_eq!(
            fx.project_error("[files]\ndeny_read = []\n  allow_wrte = [\"x\"]\n"),
            "3:3: files.allow_wrte: unknown key (expected one of allow_write, allow_read, deny_read, deny_write, protect)"
        );
        assert_eq!(
            fx.project_error("\n[limit]\nmax_procs = 1\n"),
            "2:2: limit: unknown key (expected one of files, limits, network, credentials, sandbox, audit)"
        );
        assert_eq!(
            fx.project_error("limits.max_proc = 1\n"),
            "1:8: limits.max_proc: unknown key (expected one of max_procs, max_tmp, max_memory, timeout)"
        );
        assert_eq!(
            fx.project_error("[network]\n\"local ports\" = [1]\n"),
            "2:1: network.\"local ports\": unknown key (expected one of local_ports, allow_unix_sockets, allow, deny, ports, max_connections, inspect, no_inspect, upstream_ca, rules)"
        );
        assert_eq!(
            fx.project_error("[sandbox.x]\n"),
            "1:10: sandbox.x: unknown key (expected one of allow_degraded)"
        );
        assert_eq!(
            fx.project_error("top = 1\n"),
            "1:1: top: unknown key (expected one of files, limits, network, credentials, sandbox, audit)"
        );
    }

    #[test]
    fn wrong_types() {
        let fx = Fx::new();
        assert_eq!(
            fx.project_error("[limits]\nmax_tmp = \"1G\"\n\n\n\n\nmax_procs    = \"many\"\n"),
            "7:16: limits.max_procs: expected an integer, found a string"
        );
        assert_eq!(
            fx.project_error("[limits]\nmax_procs = 2.5\n"),
            "2:13: limits.max_procs: expected an integer, found a float"
        );
        assert_eq!(
            fx.project_error("files = 3\n"),
            "1:9: files: expected a table, found an integer"
        );
        assert_eq!(
            fx.project_error("[[files]]\n"),
            "1:1: files: expected a table, found an array"
        );
        assert_eq!(
            fx.project_error("[files]\ndeny_read = \"/x\"\n"),
            "2:13: files.deny_read: expected an array of strings, found a string"
        );
        assert_eq!(
            fx.project_error("[files]\ndeny_read = [\"/x\", true]\n"),
            "2:20: files.deny_read[1]: expected a string, found a boolean"
        );
        assert_eq!(
            fx.project_error("[files]\ndeny_read = [[\"/x\"]]\n"),
            "2:14: files.deny_read[0]: expected a string, found an array"
        );
        assert_eq!(
            fx.project_error("[files]\ndeny_read = [{ a = 1 }]\n"),
            "2:14: files.deny_read[0]: expected a string, found a table"
        );
        assert_eq!(
            fx.project_error("[limits]\ntimeout = 1979-05-27\n"),
            "2:11: limits.timeout: expected a duration (a string such as \"2h\", or a number of seconds), found a datetime"
        );
        assert_eq!(
            fx.project_error("[limits]\nmax_memory = true\n"),
            "2:14: limits.max_memory: expected a size (a string such as \"512M\", or a number of bytes), found a boolean"
        );
        assert_eq!(
            fx.project_error("[network]\nlocal_ports = [\"80\"]\n"),
            "2:16: network.local_ports[0]: expected an integer, found a string"
        );
        assert_eq!(
            fx.project_error("[network]\nlocal_ports = 80\n"),
            "2:15: network.local_ports: expected an array of integers, found an integer"
        );
    }

    #[test]
    fn bad_values() {
        let fx = Fx::new();
        let err = fx.project_error("[files]\ndeny_read = [\"/ok\", \"/a/[b\"]\n");
        assert!(
            err.starts_with("2:21: files.deny_read[1]: invalid glob \"/a/[b\": "),
            "{err}"
        );
        assert_eq!(
            fx.project_error("[files]\ndeny_write = [\"../up\"]\n"),
            "2:15: files.deny_write[0]: \"../up\" must not contain `..`"
        );
        assert_eq!(
            fx.project_error("[files]\nallow_read = [\"~bob/x\"]\n"),
            "2:15: files.allow_read[0]: `~user` paths are not supported in \"~bob/x\"; write ~/ or an absolute path"
        );
        assert_eq!(
            fx.project_error("[files]\ndeny_read = [\"\"]\n"),
            "2:14: files.deny_read[0]: empty path"
        );
        assert!(fx
            .project_error("[limits]\nmax_tmp = \"12Q\"\n")
            .starts_with("2:11: limits.max_tmp: invalid size \"12Q\""));
        assert_eq!(
            fx.project_error("[limits]\nmax_tmp = 0\n"),
            "2:11: limits.max_tmp: must be more than zero"
        );
        assert_eq!(
            fx.project_error("[limits]\nmax_memory = -5\n"),
            "2:14: limits.max_memory: invalid size -5 (must not be negative)"
        );
        assert!(fx
            .project_error("[limits]\ntimeout = \"soon\"\n")
            .starts_with("2:11: limits.timeout: invalid duration \"soon\""));
        assert_eq!(
            fx.project_error("[limits]\ntimeout = \"0s\"\n"),
            "2:11: limits.timeout: must be more than zero"
        );
        assert_eq!(
            fx.project_error("[limits]\nmax_procs = 0\n"),
            "2:13: limits.max_procs: must be at least 1"
        );
        assert_eq!(
            fx.project_error("[limits]\nmax_procs = -1\n"),
            "2:13: limits.max_procs: must be at least 1"
        );
        assert_eq!(
            fx.project_error("[network]\nlocal_ports = [80, 70000]\n"),
            "2:20: network.local_ports[1]: 70000 is not a TCP port (expected 1 to 65535)"
        );
        assert_eq!(
            fx.project_error("[sandbox]\nallow_degraded = [\"landlok\"]\n"),
            "2:19: sandbox.allow_degraded[0]: unknown layer \"landlok\" (expected one of namespaces, landlock, seccomp, limits)"
        );
        for (raw, why) in [
            (
                "/etc",
                "must be relative to the project (no leading / or ~)",
            ),
            (
                "~/.x",
                "must be relative to the project (no leading / or ~)",
            ),
            ("a/../b", "must not contain `..`"),
            (
                "*.sh",
                "globs are not supported here; name the file or directory",
            ),
            (".", "names the project itself; name something inside it"),
        ] {
            let err = fx.project_error(&format!("[files]\nprotect = [{raw:?}]\n"));
            assert_eq!(
                err,
                format!("2:12: files.protect[0]: {raw:?} {why}")
                    .replace(&format!("{raw:?} globs"), &format!("{raw:?}: globs"))
            );
        }
        assert_eq!(
            fx.project_error("[files]\nprotect = [\"\"]\n"),
            "2:12: files.protect[0]: empty name"
        );
    }

    #[test]
    fn syntax_errors() {
        let fx = Fx::new();
        let err = fx.project_error("[files]\ndeny_read = [\"/a\"\n");
        assert_eq!(err, "3:1: invalid array: expected `]`");
        let err = fx.project_error("[files]\ndeny_read = []\ndeny_read = []\n");
        assert!(
            err.starts_with("3:1: ") && err.contains("duplicate key"),
            "{err}"
        );
        let err = fx.project_error("a = = 1");
        assert!(err.starts_with("1:"), "{err}");
        assert!(!err.contains('\n'), "{err}");

        fs::write(fx.project_file(), b"[files]\n\xff").unwrap();
        let err = fx.load().unwrap_err().to_string();
        assert!(err.ends_with("cordon.toml:2:1: not valid UTF-8"), "{err}");
    }

    #[test]
    fn columns_count_characters() {
        let fx = Fx::new();
        assert_eq!(
            fx.project_error("# héllo wörld\n[files] # ünïcode\ndeny_read = [\"/é\", 5]\n"),
            "3:20: files.deny_read[1]: expected a string, found an integer"
        );
    }

    #[test]
    fn dangling_project_file_is_an_error() {
        let fx = Fx::new();
        std::os::unix::fs::symlink(fx.root.join("gone"), fx.project_file()).unwrap();
        let err = fx.load().unwrap_err().to_string();
        assert!(
            err.starts_with("cannot read ") && err.contains("cordon.toml"),
            "{err}"
        );
    }

    #[test]
    fn spans_are_recovered() {
        // Guards the span protocol shared with `toml`: if it changed, every
        // position would collapse to 1:1.
        let fx = Fx::new();
        assert_eq!(
            fx.project_error("\n\nfiles.deny_read = [1]\n"),
            "3:20: files.deny_read[0]: expected a string, found an integer"
        );
        assert_eq!(
            fx.project_error("\nlimits = { max_procs = \"x\" }\n"),
            "2:24: limits.max_procs: expected an integer, found a string"
        );
        assert_eq!(
            fx.project_error("\n\nfiles.bogus = 1\n"),
            "3:7: files.bogus: unknown key (expected one of allow_write, allow_read, deny_read, deny_write, protect)"
        );
    }

    // ---- trust

    #[test]
    fn untrusted_project_may_narrow() {
        let fx = Fx::new();
        fx.write_user("[limits]\nmax_memory = \"16G\"\n");
        fx.write_project(
            "[files]\nallow_write = []\ndeny_read = [\"./.env\"]\ndeny_write = [\"./vendor\"]\n\
             protect = [\".github/workflows\"]\n\
             [limits]\nmax_procs = 4096\nmax_tmp = \"512M\"\nmax_memory = \"8G\"\ntimeout = \"1h\"\n\
             [network]\nlocal_ports = []\n[sandbox]\nallow_degraded = []\n",
        );
        let p = fx.load().unwrap();
        let src = Source::Project(fx.project_file());
        assert_eq!(p.limits.max_tmp, Sourced::new(512 << 20, src.clone()));
        assert_eq!(
            p.limits.max_memory,
            Some(Sourced::new(8 << 30, src.clone()))
        );
        assert_eq!(p.limits.max_procs, Sourced::new(4096, src.clone()));
        assert_eq!(
            p.limits.timeout.as_ref().map(|t| t.value),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(
            p.files.protected.last(),
            Some(&Sourced::new(".github/workflows".to_string(), src.clone()))
        );
        assert!(!trust::trust_store(&fx.config).exists());
    }

    #[test]
    fn untrusted_project_may_not_widen() {
        let fx = Fx::new();
        let file = fx.project_file();
        let cases = [
            ("[files]\nallow_write = [\"/\"]\n", "2:1: files.allow_write: "),
            ("[files]\nallow_read = [\"~/.ssh\"]\n", "2:1: files.allow_read: "),
            ("[network]\nlocal_ports = [22]\n", "2:1: network.local_ports: "),
            ("[sandbox]\nallow_degraded = [\"seccomp\"]\n", "2:1: sandbox.allow_degraded: "),
            (
                "[limits]\nmax_procs = 4097\n",
                "2:1: limits.max_procs: 4097 is more than the 4096 in force (built-in); ",
            ),
            (
                "[limits]\nmax_tmp = \"2G\"\n",
                "2:1: limits.max_tmp: 2 GiB is more than the 1 GiB in force (built-in); ",
            ),
            (
                "[files]\ndeny_read = [\"/x\"]\n\n[limits]\n  max_procs = 1\n  max_tmp = \"4G\"\n",
                "6:3: limits.max_tmp: 4 GiB is more than the 1 GiB in force (built-in); ",
            ),
            (
                // The whole file is checked before trust: errors come first.
                "[files]\nallow_write = [\"/\"]\n[files.x]\n",
                "3:8: files.x: unknown key",
            ),
            (
                "files.deny_read = []\nsandbox.allow_degraded = [\"limits\"]\nfiles.allow_write = [\"/\"]\n",
                "2:9: sandbox.allow_degraded: ",
            ),
        ];
        for (text, want) in cases {
            let got = fx.project_error(text);
            assert!(got.starts_with(want), "{text:?}:\n got {got}\nwant {want}");
            if want.contains("unknown key") {
                continue;
            }
            let hash = trust::file_hash(text.as_bytes());
            let tail = format!(
                "the project's cordon.toml is not trusted, so it may only narrow the sandbox; review the file, then run `cordon trust {}` to approve it (sha256 {hash})",
                file.display()
            );
            assert_eq!(got, format!("{want}{tail}"));
        }
    }

    #[test]
    fn limits_compare_with_the_value_in_force() {
        let fx = Fx::new();
        fx.write_user("[limits]\ntimeout = \"1h\"\nmax_memory = \"4G\"\nmax_procs = 100\n");
        assert!(fx
            .project_error("[limits]\ntimeout = \"61m\"\n")
            .starts_with("2:1: limits.timeout: 1h1m is longer than the 1h in force (user config "));
        assert!(fx
            .project_error("[limits]\nmax_memory = 4294967297\n")
            .starts_with("2:1: limits.max_memory: 4294967297 bytes (about 4.0 GiB) is more than the 4 GiB in force (user config "));
        assert!(fx
            .project_error("[limits]\nmax_procs = 200\n")
            .starts_with("2:1: limits.max_procs: 200 is more than the 100 in force (user config "));
        fx.write_project("[limits]\ntimeout = 3600\nmax_memory = \"4G\"\nmax_procs = 100\n");
        fx.load().unwrap();
    }

    #[test]
    fn trusted_project_may_widen_until_edited() {
        let fx = Fx::new();
        let text = "[files]\nallow_write = [\"~/.cache/pip\"]\n[limits]\nmax_procs = 9000\n";
        let file = fx.write_project(text);
        assert!(fx.project_error(text).contains("is not trusted"));

        let hash = trust::trust(&fx.config, &file).unwrap();
        assert_eq!(hash, trust::file_hash(text.as_bytes()));
        let p = fx.load().unwrap();
        let src = Source::Project(file.clone());
        assert_eq!(
            p.files.allow_write,
            vec![Sourced::new(
                exact(&fx.home.join(".cache/pip")),
                src.clone()
            )]
        );
        assert_eq!(p.limits.max_procs, Sourced::new(9000, src));

        // Any edit, even a narrowing one, withdraws the approval for widening.
        let edited = format!("{text}# reviewed\n");
        let got = fx.project_error(&edited);
        assert!(got.starts_with("2:1: files.allow_write: "), "{got}");
        assert!(got.ends_with(&format!("(sha256 {})", trust::file_hash(edited.as_bytes()))));

        // Narrowing-only files need no trust at all.
        fx.write_project("[files]\ndeny_read = [\"./.env\"]\n");
        fx.load().unwrap();

        // Untrusting withdraws it too.
        fx.write_project(text);
        trust::trust(&fx.config, &file).unwrap();
        fx.load().unwrap();
        assert!(trust::untrust(&fx.config, &file).unwrap());
        assert!(fx.project_error(text).contains("is not trusted"));
    }

    #[test]
    fn user_config_and_policy_files_are_trusted() {
        let fx = Fx::new();
        fx.write_user("[files]\nallow_write = [\"/var/tmp/x\"]\n[limits]\nmax_procs = 99999\n");
        let pfile = fx.root.join("p.toml");
        fs::write(
            &pfile,
            "[sandbox]\nallow_degraded = [\"landlock\"]\n[network]\nlocal_ports = [80]\n",
        )
        .unwrap();
        let mut req = fx.req(FlagOverrides::default());
        req.policy_files = vec![pfile];
        let p = load(&req).unwrap();
        assert_eq!(p.limits.max_procs.value, 99999);
        assert!(p.degraded_ok(Layer::Landlock));
        assert_eq!(values(&p.network.local_ports), vec![80]);
    }

    #[test]
    fn untrusted_message_quotes_odd_paths() {
        let fx = Fx::new();
        let dir = fx.root.join("it's here");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("cordon.toml"), "[files]\nallow_write = [\"/\"]\n").unwrap();
        let mut req = fx.req(FlagOverrides::default());
        req.project = Some(dir.clone());
        let err = load(&req).unwrap_err().to_string();
        let quoted = format!("'{}'", dir.join("cordon.toml").display()).replace("it's", r"it'\''s");
        assert!(err.contains(&format!("`cordon trust {quoted}`")), "{err}");
        assert!(matches!(load(&req), Err(LoadError::Untrusted { .. })));
    }

    // ---- network

    fn rule_texts(v: &[Sourced<HostRule>]) -> Vec<(String, Source)> {
        v.iter()
            .map(|r| (r.value.to_string(), r.source.clone()))
            .collect()
    }

    #[test]
    fn network_rules_layer_with_sources() {
        let fx = Fx::new();
        let user = fx.write_user(
            "[network]\nallow = [\"API.GitHub.com.\", \"*.npmjs.org\"]\nports = [443, 8443]\n",
        );
        let project = fx.write_project("[network]\ndeny = [\"upload.npmjs.org\"]\nports = [443]\n");
        let pfile = fx.root.join("net.toml");
        fs::write(
            &pfile,
            "[network]\nallow = [\"host.cordon.internal:5432\", \"[::1]:8080\", \"10.1.0.0/16:5432\"]\n",
        )
        .unwrap();
        let flags = FlagOverrides {
            allow_domain: vec!["Bücher.example:8443".into()],
            deny_domain: vec!["*.internal.example.com".into()],
            ..FlagOverrides::default()
        };
        let mut req = fx.req(flags);
        req.policy_files = vec![pfile.clone()];
        let p = load(&req).unwrap();
        let u = Source::UserConfig(user);
        let pr = Source::Project(project);
        let pf = Source::PolicyFile(pfile);
        let flag = |f: &str| Source::Flag(f.to_string());
        let hosts = &p.network.hosts;
        assert_eq!(
            rule_texts(&hosts.allow),
            vec![
                ("api.github.com".to_string(), u.clone()),
                ("*.npmjs.org".to_string(), u.clone()),
                ("host.cordon.internal:5432".to_string(), pf.clone()),
                ("[::1]:8080".to_string(), pf.clone()),
                ("10.1.0.0/16:5432".to_string(), pf.clone()),
                (
                    "xn--bcher-kva.example:8443".to_string(),
                    flag("--allow-domain")
                ),
            ]
        );
        assert_eq!(
            rule_texts(&hosts.deny),
            vec![
                ("upload.npmjs.org".to_string(), pr.clone()),
                ("*.internal.example.com".to_string(), flag("--deny-domain")),
            ]
        );
        // `ports` replaces: the untrusted project narrowed the user's list.
        assert_eq!(hosts.ports, Sourced::new(vec![443], pr));
        assert!(hosts.host_internal_port_allowed(5432));
    }

    #[test]
    fn network_defaults() {
        let fx = Fx::new();
        let p = fx.load().unwrap();
        let hosts = &p.network.hosts;
        assert!(hosts.allow.is_empty() && hosts.deny.is_empty());
        assert_eq!(hosts.ports, Sourced::new(vec![80, 443], Source::Builtin));
    }

    #[test]
    fn network_errors_point_at_the_value() {
        let fx = Fx::new();
        let err = fx.project_error("[network]\ndeny = [\"a.com\", \"b.com\", \"a.*.com\"]\n");
        assert!(
            err.starts_with(
                "2:27: network.deny[2]: invalid host pattern \"a.*.com\": a wildcard may only be a leading `*.`"
            ),
            "{err}"
        );
        for (text, want) in [
            (
                "[network]\ndeny = [\"*\"]\n",
                "2:9: network.deny[0]: invalid host pattern \"*\": ",
            ),
            (
                "[network]\ndeny = [\"*.com\"]\n",
                "2:9: network.deny[0]: invalid host pattern \"*.com\": a wildcard needs a domain of at least two labels",
            ),
            (
                "[network]\ndeny = [\"host.cordon.internal\"]\n",
                "2:9: network.deny[0]: invalid host pattern \"host.cordon.internal\": host.cordon.internal needs a port",
            ),
            (
                "[network]\ndeny = [\"0x7f.1\"]\n",
                "2:9: network.deny[0]: invalid host pattern \"0x7f.1\": numeric form",
            ),
            (
                "[network]\ndeny = [80]\n",
                "2:9: network.deny[0]: expected a string, found an integer",
            ),
            (
                "[network]\ndeny = \"a.com\"\n",
                "2:8: network.deny: expected an array of strings, found a string",
            ),
            (
                "[network]\nports = [443, 0]\n",
                "2:15: network.ports[1]: 0 is not a TCP port (expected 1 to 65535)",
            ),
            (
                "[network]\nports = [\"443\"]\n",
                "2:10: network.ports[0]: expected an integer, found a string",
            ),
            (
                // Errors come before trust: a bad allow entry is reported as such.
                "[network]\nallow = [\"ok.com\", \"bad..com\"]\n",
                "2:20: network.allow[1]: invalid host pattern \"bad..com\": ",
            ),
        ] {
            let got = fx.project_error(text);
            assert!(got.starts_with(want), "{text:?}:\n got {got}\nwant {want}");
        }
    }

    #[test]
    fn untrusted_project_network_trust() {
        let fx = Fx::new();
        let file = fx.project_file();
        // Narrowing: deny rules, ports already in force, an empty allow list.
        fx.write_project(
            "[network]\nallow = []\ndeny = [\"*.example.com\", \"10.0.0.0/8\"]\nports = [443, 443]\n",
        );
        let p = fx.load().unwrap();
        assert_eq!(p.network.hosts.deny.len(), 2);
        assert_eq!(p.network.hosts.ports.value, vec![443]);
        fx.write_project("[network]\nports = []\n");
        assert!(fx.load().unwrap().network.hosts.ports.value.is_empty());

        // Widening: allow rules, a port not in force.
        let hash = |t: &str| trust::file_hash(t.as_bytes());
        let tail = |t: &str| {
            format!(
                "the project's cordon.toml is not trusted, so it may only narrow the sandbox; review the file, then run `cordon trust {}` to approve it (sha256 {})",
                file.display(),
                hash(t)
            )
        };
        let text = "[network]\ndeny = [\"x.com\"]\nallow = [\"example.com\"]\n";
        assert_eq!(
            fx.project_error(text),
            format!("3:1: network.allow: {}", tail(text))
        );
        let text = "[network]\nports = [443, 8080, 22]\n";
        assert_eq!(
            fx.project_error(text),
            format!(
                "2:1: network.ports: 8080, 22 are not among the ports in force (built-in: 80, 443); {}",
                tail(text)
            )
        );
        let text = "[network]\nallow = [\"host.cordon.internal:5432\"]\n";
        assert!(fx
            .project_error(text)
            .starts_with("2:1: network.allow: the project's"));

        // Compared with the ports in force, as limits are.
        fx.write_user("[network]\nports = [443, 8080]\n");
        fx.write_project("[network]\nports = [8080]\n");
        assert_eq!(fx.load().unwrap().network.hosts.ports.value, vec![8080]);

        // Trusted, it may widen.
        let text = "[network]\nallow = [\"example.com\"]\nports = [8443]\n";
        fx.write_project(text);
        trust::trust(&fx.config, &file).unwrap();
        let p = fx.load().unwrap();
        assert_eq!(p.network.hosts.allow.len(), 1);
        assert_eq!(p.network.hosts.ports.value, vec![8443]);
    }

    #[test]
    fn inspection_keys_as_the_issue_writes_them() {
        let fx = Fx::new();
        let file = fx.write_user(
            "[network]\nallow = [\"api.github.com\", \"127.0.0.1:8443\"]\ninspect = [\"api.github.com\", \"127.0.0.1\"]\n\n\
             [[credentials.inject]]\nenv = \"GITHUB_TOKEN\"\nhosts = [\"api.github.com\", \"127.0.0.1\"]\n\n\
             [[credentials.inject]]\nenv = \"NPM_TOKEN\"\ncommand = [\"gh\", \"auth\", \"token\"]\nhosts = [\"*.npmjs.org\"]\n\n\
             [[credentials.inject]]\nenv = \"FROM_FILE\"\nfile = \"~/tok\"\nhosts = [\"*\"]\n\n\
             [[network.rules]]\nhost = \"api.github.com\"\nmethods = [\"GET\", \"HEAD\"]\npaths = [\"/repos/**\"]\n",
        );
        let flags = FlagOverrides {
            inspect: vec!["*".into()],
            no_inspect: vec!["pinned.example".into()],
            upstream_ca: vec!["ca.pem".into()],
            ..FlagOverrides::default()
        };
        let p = load(&fx.req(flags)).unwrap();
        let i = &p.inspection;
        let hosts: Vec<String> = i.inspect.iter().map(|h| h.value.to_string()).collect();
        assert_eq!(hosts, vec!["api.github.com", "127.0.0.1", "*"]);
        assert_eq!(i.inspect[0].source, Source::UserConfig(file.clone()));
        assert_eq!(i.inspect[2].source, Source::Flag("--inspect".into()));
        assert_eq!(i.no_inspect[0].value.to_string(), "pinned.example");
        assert_eq!(i.upstream_ca[0].value, fx.project.join("ca.pem"));
        assert_eq!(i.rules.len(), 1);
        assert_eq!(
            i.rules[0].value.to_string(),
            "api.github.com GET,HEAD /repos/**"
        );
        let names: Vec<&str> = i.inject.iter().map(|s| s.value.env.as_str()).collect();
        assert_eq!(names, vec!["GITHUB_TOKEN", "NPM_TOKEN", "FROM_FILE"]);
        assert_eq!(i.inject[0].value.source, SecretSource::Env);
        assert_eq!(
            i.inject[1].value.source,
            SecretSource::Command(vec!["gh".into(), "auth".into(), "token".into()])
        );
        assert_eq!(
            i.inject[2].value.source,
            SecretSource::File(fx.home.join("tok"))
        );
    }

    #[test]
    fn inspection_errors_name_file_line_and_key() {
        let fx = Fx::new();
        let cases = [
            (
                "[network]\ninspect = [\"bad host\"]\n",
                "2:12: network.inspect[0]: invalid host pattern \"bad host\": must not contain spaces",
            ),
            (
                "[[network.rules]]\nhost = \"a.com\"\nmethod = [\"GET\"]\n",
                "3:1: network.rules[0].method: unknown key (expected one of host, methods, paths)",
            ),
            (
                "[[network.rules]]\nmethods = [\"GET\"]\n",
                "1:1: network.rules[0]: missing key host",
            ),
            (
                "[[network.rules]]\nhost = \"a.com\"\npaths = [\"repos/**\"]\n",
                "3:9: network.rules[0]: invalid path glob \"repos/**\": a path glob starts with /",
            ),
            (
                "[[credentials.inject]]\nhosts = [\"a.com\"]\n",
                "1:1: credentials.inject[0]: missing key env (the variable that holds the placeholder inside)",
            ),
            (
                "[[credentials.inject]]\nenv = \"9X\"\nhosts = [\"a.com\"]\n",
                "2:7: credentials.inject[0].env: invalid variable name \"9X\" (letters, digits and _, not starting with a digit)",
            ),
            (
                "[[credentials.inject]]\nenv = \"T\"\nfile = \"/x\"\ncommand = [\"y\"]\nhosts = [\"a\"]\n",
                "4:1: credentials.inject[0].command: a second source: name one source (env alone, file, or command)",
            ),
            (
                "[credentials]\ninject = 3\n",
                "2:10: credentials.inject: expected an array of tables ([[credentials.inject]]), found an integer",
            ),
        ];
        for (text, expected) in cases {
            let file = fx.write_user(text);
            let err = fx.load().expect_err(text).to_string();
            let prefix = format!("{}:", file.display());
            assert_eq!(err.strip_prefix(&prefix), Some(expected), "{text}");
        }
        fx.write_user("");
        let err = load(&fx.req(FlagOverrides {
            inspect: vec!["a b".into()],
            ..FlagOverrides::default()
        }))
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("--inspect: invalid host pattern"), "{err}");
    }

    #[test]
    fn untrusted_project_may_add_inspection_and_rules_but_not_secrets() {
        let fx = Fx::new();
        // Narrowing: more checks.
        fx.write_project(
            "[network]\ninspect = [\"*\"]\n[[network.rules]]\nhost = \"a.com\"\nmethods = [\"GET\"]\n",
        );
        let p = fx.load().unwrap();
        assert_eq!(p.inspection.rules.len(), 1);
        // Widening: a secret sent somewhere, a CA trusted, a host left opaque.
        for (text, key) in [
            (
                "[[credentials.inject]]\nenv = \"AWS_SECRET_ACCESS_KEY\"\nhosts = [\"evil.example\"]\n",
                "1:15: credentials.inject:",
            ),
            ("[network]\nupstream_ca = [\"ca.pem\"]\n", "2:1: network.upstream_ca:"),
            ("[network]\nno_inspect = [\"a.com\"]\n", "2:1: network.no_inspect:"),
        ] {
            let err = fx.project_error(text);
            assert!(err.starts_with(key), "{err}");
            assert!(err.contains("not trusted"), "{err}");
        }
    }

    #[test]
    fn audit_log_and_connection_cap() {
        let fx = Fx::new();
        // Defaults: the log under the state dir, the built-in cap.
        let p = fx.load().unwrap();
        assert_eq!(
            p.audit.log,
            Sourced::new(
                Some(fx.home.join(".local/state/cordon/audit.jsonl")),
                Source::Builtin
            )
        );
        assert_eq!(
            p.network.max_connections,
            Sourced::new(MAX_CONNECTIONS, Source::Builtin)
        );

        // A --policy file: relative to its directory; flags win.
        let pol = fx.root.join("pol.toml");
        fs::write(
            &pol,
            "[audit]\nfile = \"logs/a.jsonl\"\n[network]\nmax_connections = 8\n",
        )
        .unwrap();
        let req = |flags: FlagOverrides| LoadRequest {
            policy_files: vec![pol.clone()],
            ..fx.req(flags)
        };
        let p = load(&req(FlagOverrides::default())).unwrap();
        let from_file = Source::PolicyFile(pol.clone());
        assert_eq!(
            p.audit.log,
            Sourced::new(Some(fx.root.join("logs/a.jsonl")), from_file.clone())
        );
        assert_eq!(p.network.max_connections, Sourced::new(8, from_file));
        let p = load(&req(FlagOverrides {
            audit: Some("none".into()),
            max_connections: Some(3),
            ..FlagOverrides::default()
        }))
        .unwrap();
        let flag = |f: &str| Source::Flag(f.to_string());
        assert_eq!(p.audit.log, Sourced::new(None, flag("--audit")));
        assert_eq!(
            p.network.max_connections,
            Sourced::new(3, flag("--max-connections"))
        );
        let p = load(&req(FlagOverrides {
            audit: Some("~/x.jsonl".into()),
            ..FlagOverrides::default()
        }))
        .unwrap();
        assert_eq!(p.audit.log.value, Some(fx.home.join("x.jsonl")));

        // Bad values name the flag, or the file, line and key.
        let err = |flags: FlagOverrides| load(&fx.req(flags)).unwrap_err().to_string();
        assert_eq!(
            err(FlagOverrides {
                max_connections: Some(0),
                ..FlagOverrides::default()
            }),
            "--max-connections: must be at least 1"
        );
        assert!(err(FlagOverrides {
            audit: Some("/tmp/*.jsonl".into()),
            ..FlagOverrides::default()
        })
        .starts_with("--audit: \"/tmp/*.jsonl\": the audit log must be one file"));
        fx.write_user("[network]\nmax_connections = \"many\"\n");
        let e = fx.load().unwrap_err().to_string();
        assert!(
            e.ends_with(":2:19: network.max_connections: expected an integer, found a string"),
            "{e}"
        );
        fx.write_user("[audit]\nfile = \"rel.jsonl\"\n");
        let e = fx.load().unwrap_err().to_string();
        assert!(e.contains(":2:8: audit.file: "), "{e}");
        fx.write_user("[audit]\nfiles = \"/x\"\n");
        let e = fx.load().unwrap_err().to_string();
        assert!(
            e.ends_with(":2:1: audit.files: unknown key (expected one of file)"),
            "{e}"
        );
        fx.write_user("");

        // An untrusted project may lower the cap, not raise it, and may
        // not touch the log at all.
        fx.write_project("[network]\nmax_connections = 16\n");
        assert_eq!(fx.load().unwrap().network.max_connections.value, 16);
        let e = fx.project_error("[network]\nmax_connections = 5000\n");
        assert!(
            e.starts_with("2:1: network.max_connections: 5000 is more than the 4096 in force (built-in); the project's cordon.toml is not trusted"),
            "{e}"
        );
        for text in [
            "[audit]\nfile = \"none\"\n",
            "[audit]\nfile = \"log.jsonl\"\n",
        ] {
            let e = fx.project_error(text);
            assert!(
                e.starts_with("2:1: audit.file: the project's cordon.toml is not trusted"),
                "{e}"
            );
        }
        // Trusted, it may.
        fx.write_project("[audit]\nfile = \"log.jsonl\"\n");
        trust::trust(&fx.config, &fx.project_file()).unwrap();
        assert_eq!(
            fx.load().unwrap().audit.log.value,
            Some(fx.project.join("log.jsonl"))
        );
    }

    #[test]
    fn network_flags() {
        let fx = Fx::new();
        let flags = FlagOverrides {
            allow_domain: vec!["example.com".into(), "[::1]:8080".into()],
            deny_domain: vec!["evil.example.com".into()],
            ports: Some(vec![443, 8443, 443]),
            ..FlagOverrides::default()
        };
        let p = load(&fx.req(flags)).unwrap();
        let hosts = &p.network.hosts;
        assert_eq!(
            hosts.ports,
            Sourced::new(vec![443, 8443], Source::Flag("--ports".into()))
        );
        assert_eq!(rule_texts(&hosts.allow)[1].0, "[::1]:8080");
        assert_eq!(
            rule_texts(&hosts.deny),
            vec![(
                "evil.example.com".to_string(),
                Source::Flag("--deny-domain".into())
            )]
        );

        let bad = |flags: FlagOverrides| load(&fx.req(flags)).unwrap_err().to_string();
        assert_eq!(
            bad(FlagOverrides {
                allow_domain: vec!["ok.com".into(), "a.*.com".into()],
                ..Default::default()
            }),
            "--allow-domain: invalid host pattern \"a.*.com\": a wildcard may only be a leading `*.` (`*.example.com`); `*` alone is not allowed"
        );
        assert!(bad(FlagOverrides {
            deny_domain: vec!["example.com:99999".into()],
            ..Default::default()
        })
        .starts_with("--deny-domain: invalid host pattern \"example.com:99999\": port"));
        assert_eq!(
            bad(FlagOverrides {
                ports: Some(vec![0]),
                ..Default::default()
            }),
            "--ports: 0 is not a TCP port (expected 1 to 65535)"
        );
    }

    // ---- flags

    #[test]
    fn flags_resolve_and_validate() {
        let fx = Fx::new();
        let flags = FlagOverrides {
            allow_read: vec!["~/.npmrc".into()],
            deny_write: vec!["./vendor".into(), "/opt/**/*.so".into()],
            max_memory: Some("1GiB".into()),
            timeout: Some("90".into()),
            ..FlagOverrides::default()
        };
        let p = load(&fx.req(flags)).unwrap();
        let f = |n: &str| Source::Flag(n.to_string());
        assert_eq!(
            p.files.allow_read,
            vec![Sourced::new(
                exact(&fx.home.join(".npmrc")),
                f("--allow-read")
            )]
        );
        assert_eq!(
            p.files.deny_write[1..]
                .iter()
                .map(|e| (e.value.to_string(), e.source.clone()))
                .collect::<Vec<_>>(),
            vec![
                (
                    fx.project.join("vendor").display().to_string(),
                    f("--deny-write")
                ),
                ("/opt/**/*.so".to_string(), f("--deny-write")),
            ]
        );
        assert_eq!(
            p.limits.max_memory,
            Some(Sourced::new(1 << 30, f("--max-memory")))
        );
        assert_eq!(
            p.limits.timeout,
            Some(Sourced::new(Duration::from_secs(90), f("--timeout")))
        );

        let bad = |flags: FlagOverrides| load(&fx.req(flags)).unwrap_err().to_string();
        assert!(bad(FlagOverrides {
            max_tmp: Some("12Q".into()),
            ..Default::default()
        })
        .starts_with("--max-tmp: invalid size \"12Q\""));
        assert!(bad(FlagOverrides {
            max_memory: Some("lots".into()),
            ..Default::default()
        })
        .starts_with("--max-memory: invalid size \"lots\""));
        assert!(bad(FlagOverrides {
            timeout: Some("1y".into()),
            ..Default::default()
        })
        .starts_with("--timeout: invalid duration \"1y\""));
        assert_eq!(
            bad(FlagOverrides {
                max_procs: Some(0),
                ..Default::default()
            }),
            "--max-procs: must be at least 1"
        );
        assert_eq!(
            bad(FlagOverrides {
                local_ports: vec![0],
                ..Default::default()
            }),
            "--allow-local-port: 0 is not a TCP port (expected 1 to 65535)"
        );
        assert_eq!(
            bad(FlagOverrides {
                allow_degraded: vec!["all".into()],
                ..Default::default()
            }),
            "--allow-degraded: unknown layer \"all\" (expected one of namespaces, landlock, seccomp, limits)"
        );
        assert!(bad(FlagOverrides {
            deny_read: vec!["/a/[b".into()],
            ..Default::default()
        })
        .starts_with("--deny-read: invalid glob \"/a/[b\""));
        assert_eq!(
            bad(FlagOverrides {
                allow_write: vec!["../x".into()],
                ..Default::default()
            }),
            "--allow-write: \"../x\" must not contain `..`"
        );
    }

    #[test]
    fn a_bad_flag_fails_the_whole_load() {
        let fx = Fx::new();
        fx.write_project("[files]\ndeny_read = [\"./.env\"]\n");
        let flags = FlagOverrides {
            allow_write: vec!["/ok".into()],
            timeout: Some("never".into()),
            ..Default::default()
        };
        assert!(matches!(load(&fx.req(flags)), Err(LoadError::Flag { .. })));
    }
}
