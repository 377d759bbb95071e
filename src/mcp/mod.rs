//! `cordon mcp wrap FILE` and `cordon mcp unwrap FILE`: an MCP client's
//! config rewritten so that each stdio server's command runs under
//! `cordon mcp run --server NAME`, in a sandbox of its own, and back.
//!
//! The files: Claude Code's `.mcp.json` and `~/.claude.json` (global and
//! per-project `mcpServers`), Claude Desktop's `claude_desktop_config.json`,
//! VS Code's `mcp.json` (`servers`), other clients' JSON settings with
//! `mcpServers`, and Codex's `config.toml` (`[mcp_servers.NAME]`). Remote
//! (http, sse) entries are left as they are. Only the command's value and
//! the start of the arguments change (see [`entry`]), so unwrapping gives
//! the file back byte for byte, and wrapping checks that it does before
//! it writes anything.

pub mod entry;
mod json;
mod toml_config;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::sys::replace::replace_file;

use entry::{apply, Stdio};

/// Why a config could not be rewritten. Nothing is written after any.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The file could not be read, or the result not written.
    #[error("{}: {what}: {source}", crate::escape::printable(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not valid JSON or TOML.
    #[error("{at}: {message}")]
    Syntax {
        /// `file:line:column`.
        at: String,
        /// What the parser said.
        message: String,
    },
    /// A server's entry cannot be wrapped or unwrapped as it is.
    #[error("{at}: {message}")]
    Entry {
        /// `file:line:column: key`.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// The rewritten text would not give the file back when unwrapped (a
    /// defect: nothing is written).
    #[error("{}: the wrapped file would not unwrap to the file as it is; nothing was written (please report this)", crate::escape::printable(.0))]
    NotReversible(PathBuf),
    /// The cordon path cannot be written into a config.
    #[error("the cordon command {0:?} holds a control character or is empty")]
    BadCordon(String),
}

/// A server entry of a config.
#[derive(Debug)]
pub struct Entry {
    /// The server's name.
    pub name: String,
    /// Its dotted key (`mcpServers.NAME`, `projects.DIR.mcpServers.NAME`).
    pub key: String,
    /// `file:line:column: key`.
    pub at: String,
    /// What it is.
    pub kind: Kind,
}

/// What a server entry is.
#[derive(Debug)]
pub enum Kind {
    /// A command the client starts, talking over stdin and stdout.
    Stdio {
        /// Its command and arguments in the text.
        stdio: Stdio,
        /// What wrapping it leaves out.
        notes: Vec<String>,
    },
    /// A server the client reaches over HTTP (or SSE): not cordon's to run.
    Remote,
    /// A command the client runs that cordon cannot wrap (why).
    Unwrappable(String),
    /// Neither (why).
    Unknown(String),
}

/// What became of one server.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Wrapped now (with notes on what it leaves out).
    Wrapped(Vec<String>),
    /// Unwrapped now.
    Unwrapped,
    /// Was wrapped already (wrap), or was not (unwrap).
    AsItWas,
    /// Looks wrapped, but not as wrap writes it (what differs): it may
    /// run unsandboxed or with another policy.
    WrappedOtherwise(Vec<String>),
    /// A command the client runs that cordon cannot wrap (why).
    Unwrappable(String),
    /// Remote: left as it is.
    Remote,
    /// Not a server entry cordon knows (why): left as it is.
    Unknown(String),
    /// Not among the servers asked for.
    NotAsked,
}

/// What became of one server entry.
#[derive(Debug)]
pub struct Done {
    /// The server's name.
    pub name: String,
    /// Its dotted key.
    pub key: String,
    /// `file:line:column: key`, in the file as it was.
    pub at: String,
    /// What became of it.
    pub outcome: Outcome,
}

/// The rewritten text and what became of each server.
#[derive(Debug)]
pub struct Rewritten {
    /// The file's new text.
    pub text: String,
    /// Each server entry, in the file's order.
    pub servers: Vec<Done>,
}

impl Rewritten {
    /// Whether a command the client runs is left outside a sandbox as
    /// `wrap` makes it (then `cordon mcp wrap` exits 1).
    pub fn left_outside(&self) -> bool {
        self.servers.iter().any(|d| {
            matches!(
                d.outcome,
                Outcome::WrappedOtherwise(_) | Outcome::Unwrappable(_)
            )
        })
    }

    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        self.servers
            .iter()
            .any(|d| matches!(d.outcome, Outcome::Wrapped(_) | Outcome::Unwrapped))
    }
}

/// What to wrap, and with what.
pub struct WrapOptions<'a> {
    /// The cordon command to write into the entries (an absolute path).
    pub cordon: &'a str,
    /// Only these servers (all when empty).
    pub only: &'a [String],
}

/// The format of `file`: TOML for `*.toml`, else JSON.
fn entries(file: &Path, text: &str) -> Result<Vec<Entry>, McpError> {
    if file.extension().is_some_and(|e| e == "toml") {
        toml_config::entries(file, text)
    } else {
        json::entries(file, text)
    }
}

/// `text` (read from `file`) with each stdio server wrapped.
pub fn wrap(file: &Path, text: &str, options: &WrapOptions<'_>) -> Result<Rewritten, McpError> {
    if options.cordon.is_empty() || options.cordon.chars().any(char::is_control) {
        return Err(McpError::BadCordon(options.cordon.to_string()));
    }
    let mut edits = Vec::new();
    let mut servers = Vec::new();
    for found in entries(file, text)? {
        let outcome = match found.kind {
            _ if !options.only.is_empty() && !options.only.contains(&found.name) => {
                Outcome::NotAsked
            }
            Kind::Remote => Outcome::Remote,
            Kind::Unwrappable(why) => Outcome::Unwrappable(why),
            Kind::Unknown(why) => Outcome::Unknown(why),
            Kind::Stdio { stdio, .. } if stdio.is_wrapped() => {
                let odd = stdio.wrapped_otherwise(&found.name, options.cordon);
                if odd.is_empty() {
                    Outcome::AsItWas
                } else {
                    Outcome::WrappedOtherwise(odd)
                }
            }
            Kind::Stdio { stdio, notes } => {
                crate::policy::load::server::check_server_name(&found.name).map_err(|message| {
                    McpError::Entry {
                        at: found.at.clone(),
                        message,
                    }
                })?;
                edits.extend(stdio.wrap(text, &found.name, options.cordon, &found.at)?);
                Outcome::Wrapped(notes)
            }
        };
        servers.push(Done {
            name: found.name,
            key: found.key,
            at: found.at,
            outcome,
        });
    }
    let wrapped = apply(text, edits);
    // The promise of unwrap, checked before anything is written: every
    // entry wrapped now comes back as it was.
    let keys: Vec<&String> = servers
        .iter()
        .filter(|d| matches!(d.outcome, Outcome::Wrapped(_)))
        .map(|d| &d.key)
        .collect();
    if !keys.is_empty() && unwrap_where(file, &wrapped, |e| keys.contains(&&e.key))?.text != text {
        return Err(McpError::NotReversible(file.to_path_buf()));
    }
    Ok(Rewritten {
        text: wrapped,
        servers,
    })
}

/// `text` (read from `file`) with each wrapped server as it was before
/// (only those of `only`, when it names any).
pub fn unwrap(file: &Path, text: &str, only: &[String]) -> Result<Rewritten, McpError> {
    unwrap_where(file, text, |e| only.is_empty() || only.contains(&e.name))
}

/// `text` with each wrapped server that `asked` picks as it was before.
fn unwrap_where(
    file: &Path,
    text: &str,
    asked: impl Fn(&Entry) -> bool,
) -> Result<Rewritten, McpError> {
    let mut edits = Vec::new();
    let mut servers = Vec::new();
    for found in entries(file, text)? {
        let outcome = match found.kind {
            _ if !asked(&found) => Outcome::NotAsked,
            Kind::Remote => Outcome::Remote,
            Kind::Unwrappable(why) => Outcome::Unwrappable(why),
            Kind::Unknown(why) => Outcome::Unknown(why),
            Kind::Stdio { stdio, .. } if !stdio.is_wrapped() => Outcome::AsItWas,
            Kind::Stdio { stdio, .. } => {
                edits.extend(stdio.unwrap(text, &found.at)?);
                Outcome::Unwrapped
            }
        };
        servers.push(Done {
            name: found.name,
            key: found.key,
            at: found.at,
            outcome,
        });
    }
    Ok(Rewritten {
        text: apply(text, edits),
        servers,
    })
}

/// Most a config may hold (`~/.claude.json` grows with history; 64 MiB
/// is far beyond any seen).
const MAX_CONFIG: u64 = 64 << 20;

/// The file `path` leads to (through links: a config kept in a dotfiles
/// repository stays a link) and its text.
pub fn read(path: &Path) -> Result<(PathBuf, String), McpError> {
    let io = |what| {
        move |source| McpError::Io {
            path: path.to_path_buf(),
            what,
            source,
        }
    };
    let real = path.canonicalize().map_err(io("cannot find it"))?;
    let bytes = read_text(&real).map_err(io("cannot read it"))?;
    Ok((real, bytes))
}

fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {MAX_CONFIG} bytes"),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Replaces the file at `real` (as [`read`] found it, holding `was`) by
/// `text` (see [`replace_file`]).
pub fn replace(real: &Path, was: &str, text: &str) -> Result<(), McpError> {
    replace_file(real, Some(was.as_bytes()), text.as_bytes()).map_err(|source| McpError::Io {
        path: real.to_path_buf(),
        what: "cannot replace it",
        source,
    })
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
