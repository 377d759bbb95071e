//! Built-in defaults: the credential deny list, the persistence paths, the limits.

/// Credential stores, relative to a home directory, unreadable by default.
///
/// Each entry may be re-allowed with `--allow-read` or `files.allow_read`.
pub const CREDENTIAL_DENY_LIST: &[&str] = &[
    // SSH, GPG, password managers, keyrings
    ".ssh",
    ".gnupg",
    ".password-store",
    ".local/share/keyrings",
    ".config/op",
    // cloud providers
    ".aws",
    ".azure",
    ".config/gcloud",
    ".oci",
    ".config/doctl",
    ".s3cfg",
    ".boto",
    // clusters, containers, infrastructure
    ".kube",
    ".docker/config.json",
    ".terraform.d",
    ".vault-token",
    ".config/rclone",
    // forges and package registries
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings-security.xml",
    // databases
    ".pgpass",
    ".my.cnf",
    // shell and REPL histories
    ".bash_history",
    ".zsh_history",
    ".histfile",
    ".sh_history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".lesshst",
    // browser and mail profiles (cookies, saved passwords, sessions)
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    "snap/firefox",
    "snap/chromium",
];

/// Names that run code later, outside the sandbox, if planted.
///
/// Inside every git dir, `hooks/`, `config`, `commondir` and
/// `config.worktree` are protected too (see the files door).
///
/// Relative to the project directory and to the top of every git repository
/// under it (nested repositories and submodules included). They stay
/// read-only even inside writable areas, and cannot be created. A trailing
/// `/` marks a directory; other names are files.
pub const PROTECTED_NAMES: &[&str] = &[
    ".gitmodules",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".profile",
    ".envrc",
    ".husky/",
    ".mcp.json",
    ".claude/",
    ".vscode/",
    ".idea/",
    "cordon.toml",
    // agents and editors that start MCP servers or tasks from the project
    ".cursor/",
    ".gemini/",
    ".codex/",
    ".zed/",
    ".devcontainer/",
    // build tools that run programs named in their config
    ".cargo/config.toml",
    ".cargo/config",
    "rust-toolchain.toml",
    "rust-toolchain",
    ".npmrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    ".github/workflows/",
];

/// Inside every git dir (`.git`, and submodule git dirs): what runs or
/// redirects code later. `commondir` points git at another directory's
/// config and hooks; `config.worktree` is read as config when worktree
/// config is on.
pub const GIT_DIR_PROTECTED: &[&str] = &["hooks/", "config", "commondir", "config.worktree"];

/// Inside a worktree's git dir (`.git/worktrees/<id>`): where it points.
pub const WORKTREE_PROTECTED: &[&str] = &["commondir", "gitdir", "config.worktree"];

/// The project's policy file name.
pub const PROJECT_POLICY_FILE: &str = "cordon.toml";

/// Most tasks alive at once inside one sandbox.
pub const MAX_PROCS: u64 = 4096;

/// Size of the private temp dir: 1 GiB.
pub const MAX_TMP: u64 = 1 << 30;

/// Connections the proxy serves at once unless the policy says otherwise.
pub const MAX_CONNECTIONS: u64 = 4096;

/// The audit log's file name in `$XDG_STATE_HOME/cordon/`.
pub const AUDIT_LOG_FILE: &str = "audit.jsonl";
