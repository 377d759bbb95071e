//! Building the effective [`Policy`] from its layers.
//!
//! Layers, in order; later layers append to lists and replace limits:
//!
//! 1. built-in defaults: the project directory is writable, the credential
//!    deny list applies under every home, [`PROTECTED_NAMES`](crate::policy::defaults::PROTECTED_NAMES) stay read-only,
//!    cordon's own config directory is read-only, and the default limits;
//! 2. the user config, `$XDG_CONFIG_HOME/cordon/config.toml` (relative paths
//!    are an error there; `~/` is fine);
//! 3. the project's `cordon.toml` (relative paths are relative to the
//!    project). It arrives with the repository, so unless the user trusted
//!    it with `cordon trust` (see [`super::trust`]) it may only narrow the
//!    sandbox;
//! 4. each `--from-claude[=FILE]` and `--from-srt[=FILE]`: another tool's
//!    settings, read by [`super::import`] (what a repository's settings
//!    add that widens applies only once approved, as for `cordon.toml`);
//!    then each `--policy FILE`, in order (relative paths are relative to
//!    the file's directory);
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
//! read_only_project = false           # true: the project read-only too (MCP servers' default)
//! cache       = ["~/.cargo/registry",  # writable into a private layer per project; the
//!                { path = "~/.npm", env = "npm_config_cache" }]  # host's dir never changes
//!
//! [[files.state]]                     # an agent's state directory (widening): writable
//! dir = "~/.claude"                   # in these names only, the rest read-only, no
//! writable = ["projects", "todos"]    # other name made
//! protect = ["projects/*/memory"]     # below those, read-only and not made
//!
//! [[files.state_file]]                # an agent's config file (widening): replaced
//! path = "~/.claude.json"             # only when these JSON values stay as they were
//! unchanged = ["mcpServers", "projects.*.mcpServers"]
//!
//! [limits]
//! max_procs  = 2048
//! max_tmp    = "512M"                 # or a number of bytes
//! max_memory = "8G"
//! timeout    = "2h"                   # or a number of seconds
//!
//! [network]
//! local_ports = [3000, 8080]          # only these on the sandbox's own lo (default: any)
//! host_ports = [5432]                 # 127.0.0.1:5432 inside reaches the host's (widening)
//! publish = ["8080", "3000:13000"]    # the host's 127.0.0.1:13000 reaches 3000 inside (widening)
//! allow_unix_sockets = ["/run/user/1000/gnupg/S.gpg-agent"]  # host sockets
//! presets = ["npm", "github"]         # what these tools need (`cordon presets`)
//! allow = ["api.github.com", "*.npmjs.org", "example.com:8443",
//!          "host.cordon.internal:5432", "203.0.113.7", "10.1.0.0/16:5432",
//!          "$ANTHROPIC_BASE_URL"]     # the host and port of the URL it holds, if set
//! deny  = ["upload.example.com"]      # deny beats allow
//! ports = [80, 443]                   # ports rules without `:PORT` allow
//!
//! max_connections = 4096             # proxy connections at once; more get 503
//! inspect     = ["api.github.com"]    # terminate TLS to these hosts (`*`: all)
//! no_inspect  = ["pinned.example"]    # keep these opaque tunnels (widening)
//! upstream_ca = ["~/corp-ca.pem"]     # extra roots for upstream servers (widening)
//!
//! [[network.rules]]                   # on an inspected host, only these requests
//! host    = "api.github.com"
//! methods = ["GET", "HEAD"]
//! paths   = ["/repos/**"]
//!
//! [credentials]
//! deny_env  = ["CORP_*"]               # also unset these (names or globs)
//! keep_env  = ["GITHUB_TOKEN"]         # keep one a secret pattern would unset (widening)
//! clear_env = false                    # true: keep only keep_env and pass_env names
//! pass_env  = ["PATH", "HOME"]         # pass a cleared environment (secrets still unset)
//! set_env   = { DISABLE_AUTOUPDATER = "1" }  # set in the command's environment
//!
//! [[credentials.inject]]               # a real value sent only to these hosts (widening)
//! env   = "GITHUB_TOKEN"               # the placeholder's variable inside
//! hosts = ["api.github.com"]           # `file` or `command` may give the value
//! when_set = false                     # true: left out when GITHUB_TOKEN is unset here
//! headers = ["authorization"]          # only in these request headers (else: anywhere)
//!
//! [sandbox]
//! agent = "claude"                     # an agent's profile (`cordon agents`)
//! allow_degraded = ["landlock"]
//!
//! [audit]
//! file = "~/logs/cordon.jsonl"        # or "none"; default $XDG_STATE_HOME/cordon/audit.jsonl
//! ```
//!
//! Each key is declared once, with its meaning, in [`crate::policy::keys`]. Errors
//! name the file, line, column and dotted key, and abort the whole load:
//! nothing is half-applied. The loader's parts: [`document`] reads a file, [`flags`]
//! the command line, [`layer`] applies one layer, [`widen`] is the trust rule,
//! [`builtin`] the first layer and [`values`] the checks files and flags share.

pub mod builtin;
pub mod document;
pub mod flags;
pub mod layer;
pub mod save;
pub mod server;
pub mod tables;
pub mod values;
pub mod widen;

use std::fmt;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::defaults::{AUDIT_LOG_FILE, PROJECT_POLICY_FILE};
use super::pattern::PathContext;
use super::trust::{self, TrustError};
use super::{Policy, Source};
use document::{parse_file, position};
use values::shell_quote;

pub use flags::{apply, FlagValue};
pub use values::{human_duration, human_size, join_ports, parse_duration, parse_size, AUDIT_OFF};

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
    /// `$XDG_CACHE_HOME`, or `~/.cache` when unset or not absolute (the
    /// caches' private layers live there).
    pub xdg_cache_home: PathBuf,
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
        let xdg_cache_home = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".cache"));
        Ok(EnvFacts {
            home,
            passwd_home,
            xdg_config_home,
            xdg_state_home,
            xdg_cache_home,
        })
    }
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
    /// `--from-claude` and `--from-srt`, in command-line order.
    pub imports: Vec<super::import::layer::Request>,
    /// The other policy flags, each a declared key's.
    pub flags: Vec<FlagValue>,
    /// The user's environment.
    pub env: EnvFacts,
    /// An MCP server's name, for `cordon mcp run`: its own layers (see
    /// [`server`]) stand in for the user config and the project's.
    pub server: Option<String>,
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
    /// A policy file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or directory.
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

/// cordon's config directory: `$XDG_CONFIG_HOME/cordon`.
pub fn user_config_dir(env: &EnvFacts) -> PathBuf {
    env.xdg_config_home.join("cordon")
}

/// Builds the effective policy from all layers. Any error aborts the load.
pub fn load(req: &LoadRequest) -> Result<Policy, LoadError> {
    if !req.cwd.is_absolute() {
        return Err(LoadError::RelativeCwd(req.cwd.clone()));
    }
    let env = &req.env;
    let mut policy = builtin::builtin(req)?;
    let home = policy
        .homes
        .first()
        .cloned()
        .unwrap_or_else(|| env.home.clone());
    let config_dir = user_config_dir(env);

    match &req.server {
        Some(name) => server::apply(&mut policy, name, &config_dir, &home)?,
        None => agent_layers(req, &mut policy, &home, &config_dir)?,
    }

    // (4) --policy files: trusted, relative to their own directory.
    for given in &req.policy_files {
        let path = req.cwd.join(given);
        let file = path.canonicalize().map_err(|source| LoadError::Read {
            path: path.clone(),
            source,
        })?;
        let bytes = read_policy_file(&file)?;
        let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let ctx = PathContext {
            home: &home,
            base: Some(&dir),
        };
        let fragment = parse_file(&file, &bytes, &ctx)?;
        fragment.apply(&mut policy, &Source::PolicyFile(file.clone()));
    }

    // (5) flags.
    flags::apply_flags(&mut policy, &req.flags, &home, &req.cwd)?;
    // Caches are checked against every layer's paths together.
    super::cache::check(&mut policy)?;
    policy.inspection.leave_out_unset();
    Ok(policy)
}

/// The layers of a run's own sandbox (not an MCP server's): the user
/// config, the project's `cordon.toml` and the imported settings (2 to 3b
/// above).
fn agent_layers(
    req: &LoadRequest,
    policy: &mut Policy,
    home: &Path,
    config_dir: &Path,
) -> Result<(), LoadError> {
    // (2) the user config: trusted, absolute or ~/ paths only.
    let user_file = config_dir.join("config.toml");
    if let Some(bytes) = read_optional(&user_file)? {
        let ctx = PathContext { home, base: None };
        let fragment = parse_file(&user_file, &bytes, &ctx)?;
        fragment.apply(policy, &Source::UserConfig(user_file.clone()));
    }

    // (3) the project's cordon.toml: may only narrow unless trusted.
    let project_dir = policy.project.value.clone();
    let project_file = project_dir.join(PROJECT_POLICY_FILE);
    if let Some(bytes) = read_optional(&project_file)? {
        let ctx = PathContext {
            home,
            base: Some(&project_dir),
        };
        let fragment = parse_file(&project_file, &bytes, &ctx)?;
        if let Some(first) = widen::first_widening(&fragment, policy) {
            if !trust::is_trusted(config_dir, &project_file, &bytes)? {
                let text = String::from_utf8_lossy(&bytes);
                return Err(LoadError::Untrusted {
                    at: position(&project_file, &text, first.at),
                    key: first.key,
                    detail: first.detail,
                    hash: trust::file_hash(&bytes),
                });
            }
        }
        fragment.apply(policy, &Source::Project(project_file.clone()));
    }

    // (3b) --from-claude, --from-srt: other tools' settings, each value
    // from its own file and line; a repository's may only narrow unless
    // approved.
    for request in &req.imports {
        super::import::layer::apply(request, policy, home, config_dir)?;
    }
    Ok(())
}

/// Reads a file that may be absent; a file that exists but cannot be read
/// (a dangling symlink included) is an error.
pub(crate) fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, LoadError> {
    match path.symlink_metadata() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        _ => read_policy_file(path).map(Some),
    }
}

/// Most a policy or settings file may hold: they are a few kilobytes, and
/// one that arrives with a repository (a link to `/dev/zero`) must not
/// fill the memory.
pub const MAX_POLICY_FILE: u64 = 1 << 20;

/// A policy or settings file's bytes: a regular file of at most
/// [`MAX_POLICY_FILE`] bytes (a FIFO would hang the load, a device never
/// end).
pub fn read_policy_file(path: &Path) -> Result<Vec<u8>, LoadError> {
    use std::io::Read;
    let failed = |source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    };
    let refused = |what: String| failed(io::Error::new(io::ErrorKind::InvalidData, what));
    // O_NONBLOCK: opening a FIFO with no writer returns at once; the
    // check below then refuses it.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(failed)?;
    if !opened.metadata().map_err(failed)?.is_file() {
        return Err(refused("not a regular file".into()));
    }
    let mut bytes = Vec::new();
    opened
        .take(MAX_POLICY_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > MAX_POLICY_FILE {
        return Err(refused(format!("larger than {MAX_POLICY_FILE} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
pub(crate) mod tests;
