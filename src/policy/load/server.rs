//! The layers of an MCP server's own sandbox (`cordon mcp run --server
//! NAME`), in place of the user config and the project's `cordon.toml`,
//! which are the agent's: the server starts from the defaults below and
//! its own policy file, `$XDG_CONFIG_HOME/cordon/mcp/NAME.toml`, then the
//! `--policy` files and flags as for any run.

use std::path::{Path, PathBuf};

use super::document::parse_file;
use super::{read_optional, LoadError};
use crate::policy::pattern::PathContext;
use crate::policy::{Policy, Source};

/// What every MCP server's sandbox starts from, on top of the built-in
/// defaults: the workspace read-only, the MCP clients' configs (every
/// server's keys) unreadable, and an empty environment but for
/// the variables an MCP client passes a server by default (the MCP SDK's
/// set, and the locale); the server's own variables are added with
/// `--pass-env` by `cordon mcp wrap`. A secret among them is still unset,
/// or holds its placeholder when the server's policy injects it.
pub const SERVER_DEFAULTS: &str = r#"[files]
read_only_project = true
# The MCP clients' configs and state: every server's env (its keys) is in
# them, and the agents' transcripts; a server has no business there.
deny_read = [
    "~/.claude", "~/.claude.json*", "~/.codex", "~/.gemini", "~/.cursor",
    "~/.config/Claude", "~/.config/Code/User/mcp.json", "~/.config/Code/User/settings.json",
    "./.mcp.json", "./.claude", "./.vscode", "./.cursor", "./.gemini", "./.codex",
]

[credentials]
clear_env = true
pass_env = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_*", "TZ"]
"#;

/// The directory of the servers' own policy files, in cordon's config
/// directory.
pub const SERVERS_DIR: &str = "mcp";

/// Most characters of a server's name.
const MAX_NAME: usize = 128;

/// Checks that `name` can name a server's policy file: letters, digits,
/// `.`, `_` and `-`, not starting with `.` (a hidden file, `..`) or `-`
/// (it would read as an option).
pub fn check_server_name(name: &str) -> Result<(), String> {
    let fits = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if fits {
        Ok(())
    } else {
        Err(format!(
            "{name:?} cannot name a server's policy file: use letters, digits, '.', '_' and '-' (not first), at most {MAX_NAME}"
        ))
    }
}

/// The policy file of the server `name`.
pub fn server_policy_file(config_dir: &Path, name: &str) -> PathBuf {
    config_dir.join(SERVERS_DIR).join(format!("{name}.toml"))
}

/// Applies the server's layers to `policy`: [`SERVER_DEFAULTS`], then
/// its policy file if there is one (trusted: it is in the user's config
/// directory, which the sandbox cannot write).
pub fn apply(
    policy: &mut Policy,
    name: &str,
    config_dir: &Path,
    home: &Path,
) -> Result<(), LoadError> {
    check_server_name(name).map_err(|message| LoadError::Flag {
        flag: "--server".into(),
        message,
    })?;
    let project = policy.project.value.clone();
    let defaults_ctx = PathContext {
        home,
        base: Some(&project),
    };
    let defaults = parse_file(
        Path::new("<cordon's MCP server defaults>"),
        SERVER_DEFAULTS.as_bytes(),
        &defaults_ctx,
    )?;
    defaults.apply(policy, &Source::McpServer(name.to_string()));
    let file = server_policy_file(config_dir, name);
    if let Some(bytes) = read_optional(&file)? {
        let ctx = PathContext { home, base: None };
        let fragment = parse_file(&file, &bytes, &ctx)?;
        fragment.apply(policy, &Source::PolicyFile(file.clone()));
    }
    Ok(())
}
