//! The policy model: what each door lets through, and where each line came from.
//!
//! A [`Policy`] is built by [`load::load`] from, in order (later wins): the
//! built-in defaults ([`defaults`]), the user's config, the project's
//! `cordon.toml` (narrowing only until trusted), `--policy` files, and flags.
//! Every entry carries its [`Source`] so `cordon explain` can say why it is there.
//! Each setting of the file format and the command line is declared once, in
//! [`keys`]: its names, its readers, how layers merge it and what widens it.

pub mod cache;
pub mod defaults;
pub mod env;
pub mod followed;
pub mod host;
pub mod import;
pub mod inspection;
pub mod keys;
pub mod learned;
pub mod load;
pub mod pattern;
pub mod ports;
pub mod presets;
pub mod state;
pub mod trust;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use pattern::PathPattern;

use crate::policy::host::HostPolicy;

/// Where one line of the effective policy came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Source {
    /// cordon's own defaults.
    Builtin,
    /// `$XDG_CONFIG_HOME/cordon/config.toml`.
    UserConfig(PathBuf),
    /// The project's `cordon.toml`.
    Project(PathBuf),
    /// A file named with `--policy`.
    PolicyFile(PathBuf),
    /// A command-line flag, e.g. `--allow-write`.
    Flag(String),
    /// A value of another tool's settings (`--from-claude`, `--from-srt`),
    /// read by an importer ([`import`]).
    Imported {
        /// The file, line and key it came from.
        from: String,
    },
    /// The defaults of an MCP server's sandbox (`cordon mcp run --server
    /// NAME`): the server's name.
    McpServer(String),
    /// A preset ([`presets`]), named by another source (a flag, a file).
    Preset {
        /// The preset's name.
        name: String,
        /// What named it.
        from: Box<Source>,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => write!(f, "built-in"),
            Source::UserConfig(p) => write!(f, "user config {}", p.display()),
            Source::Project(p) => write!(f, "project {}", p.display()),
            Source::PolicyFile(p) => write!(f, "policy {}", p.display()),
            Source::Flag(flag) => write!(f, "flag {flag}"),
            Source::Preset { name, from } => write!(f, "preset {name} ({from})"),
            Source::Imported { from } => write!(f, "imported {from}"),
            Source::McpServer(name) => write!(f, "MCP server {name} (cordon mcp run)"),
        }
    }
}

/// A value together with the source that set it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: Source) -> Self {
        Sourced { value, source }
    }
}

impl<T: Default> Default for Sourced<T> {
    /// The type's default value, from cordon's own defaults.
    fn default() -> Self {
        Sourced::new(T::default(), Source::Builtin)
    }
}

/// A protection layer that `--allow-degraded` may waive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// User, mount, pid, net, ipc and uts namespaces (and with them the mount view).
    Namespaces,
    /// Landlock filesystem, TCP and scope rules.
    Landlock,
    /// The seccomp system-call filter.
    Seccomp,
    /// Task, memory and temp-size limits.
    Limits,
}

impl Layer {
    pub const ALL: [Layer; 4] = [
        Layer::Namespaces,
        Layer::Landlock,
        Layer::Seccomp,
        Layer::Limits,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Layer::Namespaces => "namespaces",
            Layer::Landlock => "landlock",
            Layer::Seccomp => "seccomp",
            Layer::Limits => "limits",
        }
    }

    pub fn parse(name: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.name() == name)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The files door.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FilesPolicy {
    /// Extra writable paths besides the project and the private temp dir.
    pub allow_write: Vec<Sourced<PathPattern>>,
    /// Paths re-allowed for reading although a deny rule covers them.
    pub allow_read: Vec<Sourced<PathPattern>>,
    /// Unreadable paths, the built-in credential deny list included.
    pub deny_read: Vec<Sourced<PathPattern>>,
    /// Read-only paths inside writable areas.
    pub deny_write: Vec<Sourced<PathPattern>>,
    /// Names, relative to the project and to every git repository under it,
    /// that stay read-only and cannot be created (code that runs later).
    pub protected: Vec<Sourced<String>>,
    /// Host directories the sandbox sees writable, their writes kept in a
    /// private layer per project (see [`cache`]).
    pub caches: Vec<Sourced<cache::Cache>>,
    /// Whether the project directory is read-only (as the rest of the
    /// root) instead of writable.
    pub read_only_project: Sourced<bool>,
    /// Agents' state directories, writable in the names each lists only
    /// (see [`state`]).
    pub state: Vec<Sourced<state::StateDir>>,
    /// Agents' config files the sandbox may replace when the values it
    /// may not change are as they were (see [`state`]).
    pub state_files: Vec<Sourced<state::StateFile>>,
    /// Where the private layers are kept: `$XDG_CACHE_HOME/cordon/caches`
    /// (no policy moves it).
    pub cache_layers: PathBuf,
    /// cordon's own config directory, `$XDG_CONFIG_HOME/cordon` (its
    /// policies, approvals and MCP servers' policies): never writable, nor
    /// anything holding it or inside it (no policy moves it).
    pub own_config: PathBuf,
}

/// Resource limits.
#[derive(Clone, Debug, Serialize)]
pub struct Limits {
    /// Most tasks (processes and threads) alive at once.
    pub max_procs: Sourced<u64>,
    /// Size of the private temp dir, in bytes.
    pub max_tmp: Sourced<u64>,
    /// Memory cap, in bytes; none by default.
    pub max_memory: Option<Sourced<u64>>,
    /// Wall-clock limit; none by default.
    #[serde(serialize_with = "serialize_timeout")]
    pub timeout: Option<Sourced<Duration>>,
}

fn serialize_timeout<S: serde::Serializer>(
    timeout: &Option<Sourced<Duration>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let secs = timeout
        .as_ref()
        .map(|t| Sourced::new(t.value.as_secs_f64(), t.source.clone()));
    secs.serialize(s)
}

/// The network door: only `lo` inside; the way out is cordon's proxy,
/// which asks [`HostPolicy`] before every connection.
#[derive(Clone, Debug, Serialize)]
pub struct NetworkPolicy {
    /// When set, the only TCP ports programs inside may bind and connect
    /// to on the sandbox's own loopback (besides cordon's own listeners and
    /// the host ports); `None`, the default: any port, since nothing
    /// outside the sandbox reaches its loopback.
    pub local_ports: Option<Sourced<Vec<u16>>>,
    /// Ports whose connections on the sandbox's own 127.0.0.1 and ::1 cordon
    /// forwards to the host's 127.0.0.1, as `host.cordon.internal:PORT`
    /// (`--host-port`, `[network] host_ports`); none by default.
    pub host_ports: Vec<Sourced<u16>>,
    /// Servers inside reachable from the host's 127.0.0.1 (`--publish`,
    /// `[network] publish`); none by default.
    pub publish: Vec<Sourced<crate::policy::ports::Publish>>,
    /// The hosts the proxy may connect to: `[network] allow`, `deny` and
    /// `ports`, `--allow-domain`, `--deny-domain`. Nothing is allowed by default.
    pub hosts: HostPolicy,
    /// Host UNIX sockets programs inside may connect to (`--allow-unix-socket`,
    /// `[network] allow_unix_sockets`); none by default.
    pub unix_sockets: Vec<Sourced<PathPattern>>,
    /// Connections the proxy serves at once; more are refused and reported.
    pub max_connections: Sourced<u64>,
    /// The presets named (`--preset`, `[network] presets`), each from what
    /// named it; their lines are in the other fields, from [`Source::Preset`].
    pub presets: Vec<Sourced<presets::Named>>,
}

impl Default for NetworkPolicy {
    /// Any local port, no host port forwarded nor server published, nothing allowed, the default connection cap.
    fn default() -> Self {
        NetworkPolicy {
            local_ports: None,
            host_ports: Vec::new(),
            publish: Vec::new(),
            hosts: HostPolicy::default(),
            unix_sockets: Vec::new(),
            max_connections: Sourced::new(defaults::MAX_CONNECTIONS, Source::Builtin),
            presets: Vec::new(),
        }
    }
}

/// Where decisions are recorded.
#[derive(Clone, Debug, Serialize)]
pub struct AuditPolicy {
    /// The audit log file; `None` when turned off (`--audit none`).
    pub log: Sourced<Option<PathBuf>>,
    /// The user's audit key, which authenticates the log's lines
    /// (`$XDG_STATE_HOME/cordon/audit.key`; no policy moves it).
    pub key: PathBuf,
}

/// Which of the caller's environment variables the command sees (the
/// credentials door; see [`crate::credentials::env`]). By default, the
/// built-in secret patterns only.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EnvPolicy {
    /// Names or globs removed besides the built-in secret patterns.
    pub deny: Vec<Sourced<String>>,
    /// Names or globs kept although a pattern, or `clear`, removes them.
    pub keep: Vec<Sourced<String>>,
    /// Start from an empty environment plus `keep`.
    pub clear: Sourced<bool>,
    /// Names or globs that pass `clear`; unlike `keep`, secret ones are
    /// still removed.
    pub pass: Vec<Sourced<String>>,
    /// Variables set to a value in the command's environment (a later
    /// entry of a name wins).
    pub set: Vec<Sourced<(String, String)>>,
}

/// The effective policy for one sandbox.
#[derive(Clone, Debug, Serialize)]
pub struct Policy {
    /// The project directory (absolute, symlinks resolved): writable.
    pub project: Sourced<PathBuf>,
    /// Home directories the credential deny list applies under: `$HOME`, and
    /// the account's home from the password database when it differs.
    pub homes: Vec<PathBuf>,
    pub files: FilesPolicy,
    pub limits: Limits,
    pub network: NetworkPolicy,
    /// The audit log.
    pub audit: AuditPolicy,
    /// TLS inspection, HTTP rules and injected credentials (the credentials
    /// door's share of the proxy).
    pub inspection: crate::policy::inspection::InspectionPolicy,
    /// Layers the user agreed to run without, if the kernel cannot apply them.
    pub allow_degraded: Vec<Sourced<Layer>>,
    /// Environment variables the command does not see.
    pub env: EnvPolicy,
    /// What the `--from-*` importers read and did not apply, each naming
    /// its file, line and key (shown at start and by `explain`).
    pub import_notes: Vec<String>,
}

impl Policy {
    /// Whether the user explicitly agreed to run without `layer`.
    pub fn degraded_ok(&self, layer: Layer) -> bool {
        self.allow_degraded.iter().any(|l| l.value == layer)
    }
}
