//! Built-in defaults: the credential and system deny lists, the persistence
//! paths, the limits.

use std::path::{Path, PathBuf};

/// Credential stores, relative to a home directory, unreadable by default.
///
/// Each entry may be re-allowed with `--allow-read` or `files.allow_read`.
/// Entries are exact paths (no globs), so `cordon probe` can try each.
///
/// What belongs here: files whose content is a secret (a token, a key, a
/// password, a session) or a history that records secrets typed or pasted.
/// What does not: a directory a tool needs to run (its binaries, caches,
/// plugins, settings), even if a credential lies in it; then only the
/// credential file is listed. The agents' own state directories
/// (`~/.claude`, `~/.codex`, `~/.gemini`, ...) are needed by the agents, so
/// only their credential files are listed: an agent that must log in from
/// inside takes `--allow-read` for that file (or a `[[credentials.inject]]`
/// entry, which keeps the real value outside).
pub const CREDENTIAL_DENY_LIST: &[&str] = &[
    // SSH, GPG, password managers, keyrings
    // SSH private keys (and the hosts they open).
    ".ssh",
    // GPG secret keys.
    ".gnupg",
    // pass: the encrypted password store.
    ".password-store",
    // GNOME Keyring's stores.
    ".local/share/keyrings",
    // KDE's wallet.
    ".local/share/kwalletd",
    // 1Password CLI (`op`) sessions, and the desktop app's vault.
    ".config/op",
    ".config/1Password",
    // Bitwarden: the CLI's and the desktop app's vault and session keys.
    ".config/Bitwarden CLI",
    ".config/Bitwarden",
    // NSS certificate and key database (Chromium's client certificates).
    ".pki/nssdb",
    // Emacs' and Gnus' password file, plain or encrypted.
    ".authinfo",
    ".authinfo.gpg",
    // AI agents' logins (only the credential files; see above)
    // Codex CLI: API key or ChatGPT OAuth tokens.
    ".codex/auth.json",
    // Claude Code: OAuth access and refresh tokens.
    ".claude/.credentials.json",
    // Gemini CLI: Google OAuth tokens.
    ".gemini/oauth_creds.json",
    // Qwen Code: OAuth tokens.
    ".qwen/oauth_creds.json",
    // GitHub Copilot in editors (vim, neovim, JetBrains): OAuth tokens only.
    ".config/github-copilot",
    // Cursor's agent CLI and editor: session token.
    ".config/cursor/auth.json",
    // opencode: provider API keys and OAuth tokens.
    ".local/share/opencode/auth.json",
    // Goose: provider keys when no keyring is available.
    ".config/goose/secrets.yaml",
    // `llm` (datasette): provider API keys.
    ".config/io.datasette.llm/keys.json",
    // aider: OAuth-obtained provider keys.
    ".aider/oauth-keys.env",
    // Ollama: the key that signs its requests to ollama.com.
    ".ollama/id_ed25519",
    // MCP clients' configs: MCP servers' API keys in `env` blocks. Cursor's
    // and Windsurf's MCP files are only that; Continue's config is its whole
    // setup (models with `apiKey`), which an agent inside does not need.
    // Not listed: `~/.claude.json` and `~/.gemini/settings.json` (which
    // may hold MCP servers' keys too): Claude Code and Gemini CLI cannot
    // run without them; keep keys there out with `[[credentials.inject]]`.
    ".cursor/mcp.json",
    ".codeium/windsurf/mcp_config.json",
    ".continue/config.yaml",
    ".continue/config.json",
    // cloud providers
    // AWS: access keys, SSO tokens.
    ".aws",
    // Azure CLI: tokens.
    ".azure",
    // Google Cloud SDK: OAuth tokens, service account keys.
    ".config/gcloud",
    // Oracle Cloud: API signing keys.
    ".oci",
    // DigitalOcean CLI: API token.
    ".config/doctl",
    // s3cmd and boto (gsutil): access keys.
    ".s3cfg",
    ".boto",
    // Hetzner Cloud CLI: API tokens.
    ".config/hcloud/cli.toml",
    // Linode CLI: API token.
    ".config/linode-cli",
    // Scaleway CLI: access and secret key.
    ".config/scw",
    // OpenStack: `clouds.yaml` and `secure.yaml` hold passwords.
    ".config/openstack",
    // Alibaba Cloud CLI: access keys.
    ".aliyun",
    // MinIO client: access and secret keys per alias.
    ".mc",
    // Databricks CLI: workspace tokens.
    ".databrickscfg",
    // Snowflake CLI and SnowSQL: connection passwords.
    ".snowflake/connections.toml",
    ".snowsql/config",
    // dbt: warehouse passwords and keys in `profiles.yml`.
    ".dbt/profiles.yml",
    // Hugging Face: the hub token, and the named tokens (current and legacy
    // places; the model cache beside them stays readable).
    ".cache/huggingface/token",
    ".cache/huggingface/stored_tokens",
    ".huggingface/token",
    // Kaggle: API key (legacy and XDG places).
    ".kaggle/kaggle.json",
    ".config/kaggle/kaggle.json",
    // Modal: token id and secret.
    ".modal.toml",
    // Streamlit: the app secrets of `st.secrets` (user-wide file).
    ".streamlit/secrets.toml",
    // clusters, containers, infrastructure
    // kubectl: cluster credentials in kubeconfigs.
    ".kube",
    // minikube: cluster CA and client private keys.
    ".minikube",
    // Teleport (`tsh`): user keys and certificates.
    ".tsh",
    // Docker: registry logins.
    ".docker/config.json",
    // Docker contexts' client TLS keys for remote daemons.
    ".docker/contexts/tls",
    // Podman, Buildah, Skopeo: registry logins.
    ".config/containers/auth.json",
    // Helm: chart repository passwords; OCI registry logins.
    ".config/helm/repositories.yaml",
    ".config/helm/registry",
    // Terraform: `credentials.tfrc.json` (HCP Terraform tokens).
    ".terraform.d",
    // Terraform CLI config: `credentials` blocks (HCP Terraform tokens).
    ".terraformrc",
    // HashiCorp Vault: the CLI's token.
    ".vault-token",
    // rclone: remotes' tokens and passwords.
    ".config/rclone",
    // SOPS: age private keys (`age/keys.txt`).
    ".config/sops",
    // Pulumi: backend access tokens (its plugins and binary stay readable).
    ".pulumi/credentials.json",
    // Solana CLI: wallet keypairs (`id.json`).
    ".config/solana",
    // Doppler CLI: service and personal tokens.
    ".doppler",
    // hosting platforms' CLIs
    // Fly.io: access token (its binary under ~/.fly stays readable).
    ".fly/config.yml",
    // Vercel CLI: auth token (current and legacy places).
    ".local/share/com.vercel.cli/auth.json",
    ".vercel/auth.json",
    // Netlify CLI: auth tokens.
    ".config/netlify",
    ".netlify/config.json",
    // Cloudflare: tunnel credentials and origin certificate; wrangler's
    // OAuth tokens (XDG and legacy places).
    ".cloudflared",
    ".config/.wrangler/config",
    ".wrangler/config",
    // Supabase CLI: access token.
    ".supabase/access-token",
    // Railway CLI: token.
    ".railway/config.json",
    // Stripe CLI: test and live keys.
    ".config/stripe/config.toml",
    // Expo: session secret.
    ".expo/state.json",
    // ngrok: authtoken and API key (v2 and v3 places).
    ".ngrok2",
    ".config/ngrok",
    // Sentry CLI: auth token.
    ".sentryclirc",
    // CircleCI and Travis CLIs: API tokens.
    ".circleci/cli.yml",
    ".travis/config.yml",
    // WakaTime: API key.
    ".wakatime.cfg",
    // Firebase and Snyk CLIs keep tokens in configstore files (the rest of
    // configstore is other tools' state, which they must be able to read).
    ".config/configstore/firebase-tools.json",
    ".config/configstore/snyk.json",
    // forges and package registries
    // Logins for any host (curl, git, Heroku, ...).
    ".netrc",
    // git's `store` credential helper.
    ".git-credentials",
    ".config/git/credentials",
    // GitHub CLI and hub, GitLab CLI: tokens.
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    // Gitea CLI (`tea`): tokens.
    ".config/tea",
    // npm: `_authToken` per registry.
    ".npmrc",
    // Yarn 2+: `npmAuthToken`.
    ".yarnrc.yml",
    // Yarn 1: may hold `_authToken` for a registry.
    ".yarnrc",
    // pnpm's global rc: registry auth tokens.
    ".config/pnpm/rc",
    // twine: PyPI passwords and tokens.
    ".pypirc",
    // pip: an `index-url` with a password.
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    // Poetry: repository passwords when no keyring is available.
    ".config/pypoetry/auth.toml",
    // uv: stored index credentials.
    ".local/share/uv/credentials",
    // Cargo: registry tokens.
    ".cargo/credentials",
    ".cargo/credentials.toml",
    // RubyGems: API key.
    ".gem/credentials",
    // Bundler: gem server credentials (`BUNDLE_<HOST>`).
    ".bundle/config",
    // Composer: HTTP basic, GitHub and GitLab tokens (both homes).
    ".composer/auth.json",
    ".config/composer/auth.json",
    // Maven: the master password that decrypts settings.xml's.
    ".m2/settings-security.xml",
    // Maven: repository server passwords.
    ".m2/settings.xml",
    // Gradle: repository and signing passwords in user properties.
    ".gradle/gradle.properties",
    // sbt and Ivy: repository credentials.
    ".sbt/.credentials",
    ".ivy2/.credentials",
    // NuGet (dotnet): `packageSourceCredentials`, often in clear text.
    ".nuget/NuGet/NuGet.Config",
    // Hex (Elixir): API key.
    ".hex/hex.config",
    // Dart and Flutter: pub.dev tokens (current and legacy places).
    ".config/dart/pub-credentials.json",
    ".pub-cache/credentials.json",
    // JFrog CLI: Artifactory tokens and passwords (its plugins stay readable).
    ".jfrog/jfrog-cli.conf.v6",
    ".jfrog/jfrog-cli.conf",
    // databases
    // PostgreSQL and MySQL clients: passwords.
    ".pgpass",
    ".my.cnf",
    // MySQL's obfuscated (not encrypted) login paths; PostgreSQL's
    // connection services, which may hold passwords.
    ".mylogin.cnf",
    ".pg_service.conf",
    // cryptocurrency wallets: Bitcoin Core's and Electrum's wallets,
    // Ethereum clients' key files.
    ".bitcoin",
    ".electrum",
    ".ethereum/keystore",
    // mail: SMTP and IMAP passwords
    ".msmtprc",
    ".fetchmailrc",
    ".mbsyncrc",
    // chat and IRC: Telegram Desktop's session (its `tdata`), Element's
    // (Electron) session and keys, WeeChat's secured data, irssi's config
    // (server and NickServ passwords).
    ".local/share/TelegramDesktop",
    ".config/Element",
    ".weechat/sec.conf",
    ".config/weechat/sec.conf",
    ".irssi/config",
    // remote desktops and file transfer: FileZilla's saved sites (base64
    // passwords), Remmina's connection profiles (passwords).
    ".config/filezilla/sitemanager.xml",
    ".config/filezilla/recentservers.xml",
    ".local/share/remmina",
    // NetworkManager's OpenVPN certificates and keys imported per user.
    ".cert/nm-openvpn",
    // Flatpak apps' private homes: every app's profile (browsers, chat,
    // mail, password managers installed from Flathub) with the same
    // secrets as above; the apps themselves live elsewhere and stay.
    ".var/app",
    // shell and REPL histories (commands and pasted secrets; `.lesshst`
    // holds less's searches)
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".sh_history",
    ".local/share/fish/fish_history",
    // zsh with `HISTFILE` in the XDG places; fish's old place.
    ".local/state/zsh/history",
    ".cache/zsh/history",
    ".config/fish/fish_history",
    // nushell's history (in its config dir on Linux).
    ".config/nushell/history.txt",
    // Atuin: the shell history database and its sync key.
    ".local/share/atuin",
    ".python_history",
    ".node_repl_history",
    ".irb_history",
    ".pry_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    // IPython's history database; Julia's, R's, GHCi's, Scala's, DuckDB's
    // and mycli's REPL histories.
    ".ipython/profile_default/history.sqlite",
    ".julia/logs/repl_history.jl",
    ".Rhistory",
    ".ghc/ghci_history",
    ".scala_history",
    ".duckdb_history",
    ".mycli-history",
    // pgcli's history.
    ".config/pgcli/history",
    ".rediscli_history",
    // MongoDB shells: mongosh's history and logs, the legacy shell's history.
    ".mongosh",
    ".dbshell",
    ".lesshst",
    // editor histories (searches, command lines, registers); not the
    // editors' configuration or plugins
    ".viminfo",
    // Neovim's ShaDa (current and pre-0.8 places).
    ".local/state/nvim/shada",
    ".local/share/nvim/shada",
    // Emacs' savehist file.
    ".emacs.d/history",
    // editors' extension storage: tokens of signed-in extensions (Cursor's
    // own session is in its `state.vscdb`)
    ".config/Code/User/globalStorage",
    ".config/Cursor/User/globalStorage",
    ".config/Windsurf/User/globalStorage",
    ".config/VSCodium/User/globalStorage",
    ".vscode-server/data/User/globalStorage",
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
    // chat apps' sessions (Electron profiles like the browsers')
    ".config/Slack",
    ".config/discord",
    ".config/Signal",
    // cordon's own audit logs of earlier runs (the default place, under
    // `~/.local/state`; cordon writes the log from outside the sandbox).
    ".local/state/cordon",
];

/// Credential stores under a home whose place has a varying component,
/// as globs relative to a home directory (same rules as
/// [`CREDENTIAL_DENY_LIST`] otherwise).
pub const CREDENTIAL_DENY_PATTERNS: &[&str] = &[
    // JetBrains IDEs: the KeePass password database and its key, when the
    // IDE keeps passwords in a file; one per product and version directory
    // (the IDEs' settings beside them stay readable).
    ".config/JetBrains/*/c.kdbx",
    ".config/JetBrains/*/c.pwd",
];

/// System secrets outside any home, unreadable in every run (absolute
/// paths; `*` globs where a name varies). Each may be re-allowed with
/// `--allow-read` or `files.allow_read`.
///
/// A caller running as root owns every root-only file, so the kernel's own
/// permissions do not keep these from the command; an unprivileged caller
/// usually cannot read them anyway. The list is the well-known places, not
/// every root-only file: a secret elsewhere needs `--deny-read`. Not listed:
/// `/etc/sudoers` (policy, no secret in it) and `/etc/passwd`,
/// `/etc/group` (no hashes; programs need them to name users).
pub const SYSTEM_DENY_LIST: &[&str] = &[
    // Password hashes, and their backups.
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    // pam_pwhistory's old password hashes.
    "/etc/security/opasswd",
    // TLS private keys (Debian's and Red Hat's places); certbot's keys.
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/letsencrypt",
    // The SSH server's host private keys (the `.pub` files stay readable).
    "/etc/ssh/ssh_host_*_key",
    // Wi-Fi passphrases, VPN secrets: NetworkManager, wpa_supplicant, iwd.
    "/etc/NetworkManager/system-connections",
    "/etc/wpa_supplicant",
    "/var/lib/iwd",
    // VPN keys: WireGuard, OpenVPN, IPsec (strongSwan, Libreswan).
    "/etc/wireguard",
    "/etc/openvpn",
    "/etc/ipsec.secrets",
    "/etc/ipsec.d/private",
    "/etc/swanctl/private",
    "/etc/strongswan/ipsec.secrets",
    // PPP's CHAP and PAP passwords.
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    // Kerberos host keys; SSSD's secrets and cached credentials; Samba's
    // password database.
    "/etc/krb5.keytab",
    "/var/lib/sss/secrets",
    "/var/lib/sss/db",
    "/var/lib/samba/private",
    // systemd's credentials: the host key that encrypts them, and the stores.
    "/var/lib/systemd/credential.secret",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    // Disk encryption key files named in `/etc/crypttab`.
    "/etc/cryptsetup-keys.d",
    // Debian's MySQL maintenance account password.
    "/etc/mysql/debian.cnf",
    // Kubernetes and k3s: admin kubeconfigs, cluster CA and service keys.
    "/etc/kubernetes",
    "/etc/rancher",
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
///
/// The rule for what is listed: a file is protected when a tool runs code
/// it names on the host, *without the user running the project's code and
/// without a diff to read first*: on `cd` (direnv, mise), when an editor or
/// agent opens the project (tasks, MCP servers, exrc), on a git command
/// (hook managers), on any use of a package or version manager (wrappers,
/// plugins, shims). Not listed, by that rule:
/// - the project's own build and test code (`build.rs`, `package.json`
///   scripts, `Makefile`, Gradle and Maven files and wrappers, linters'
///   JS configs, `node_modules/`): running the project runs them by design,
///   and writing them is what an agent is for;
/// - version pins that name no source (`.nvmrc`, `.node-version`,
///   `.python-version`): the tool picks an official release;
/// - agents' instruction files (`AGENTS.md`, `.clinerules`, rules
///   directories): text, not code.
pub const PROTECTED_NAMES: &[&str] = &[
    // git: submodule URLs and paths, acted on by the next `git submodule`.
    ".gitmodules",
    // shells' startup files: run when the project is (or is copied to) a
    // home, or sourced by a project's scripts.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".profile",
    // direnv: run on `cd` into the project.
    ".envrc",
    // husky: the hooks git runs through `core.hooksPath`.
    ".husky/",
    // Claude Code: project MCP servers; settings with hooks.
    ".mcp.json",
    ".claude/",
    // VS Code: tasks that run on folder open, settings; JetBrains IDEs:
    // run configurations and startup tasks.
    ".vscode/",
    ".idea/",
    // cordon's own project policy: the next run's rules.
    "cordon.toml",
    // agents and editors that start MCP servers, hooks or tasks from the
    // project when it is opened
    ".cursor/",
    ".gemini/",
    ".codex/",
    ".zed/",
    ".devcontainer/",
    // Dev containers: `initializeCommand` runs on the host, before the
    // container (the single-file form of `.devcontainer/`).
    ".devcontainer.json",
    // Roo Code and Kilo Code: project MCP servers (their rules stay writable).
    ".roo/mcp.json",
    ".kilocode/mcp.json",
    // Kiro: MCP servers, and agent hooks that run shell commands on events.
    ".kiro/settings/",
    ".kiro/hooks/",
    // Amazon Q Developer: MCP servers, and local agents with hooks.
    ".amazonq/mcp.json",
    ".amazonq/cli-agents/",
    // Continue: models, MCP servers, and commands in its config.
    ".continue/",
    // Qwen Code: settings with MCP servers (as `.gemini/`, whose fork it is).
    ".qwen/",
    // Crush: MCP servers and LSP commands.
    ".crush.json",
    "crush.json",
    // opencode: MCP servers, plugins (JavaScript it runs) and custom tools.
    "opencode.json",
    "opencode.jsonc",
    ".opencode/",
    // aider: `lint-cmd` and `test-cmd`, run after each edit.
    ".aider.conf.yml",
    // Windsurf: hooks and workflows; JetBrains Junie: MCP servers; Fleet:
    // run configurations.
    ".windsurf/",
    ".junie/mcp/",
    ".fleet/",
    // editors' project-local startup files (vim's and neovim's `exrc`, the
    // localvimrc plugin, Emacs' directory variables with `eval`)
    ".exrc",
    ".vimrc",
    ".nvimrc",
    ".nvim.lua",
    ".lvimrc",
    ".dir-locals.el",
    ".dir-locals-2.el",
    // build tools that run programs named in their config
    ".cargo/config.toml",
    ".cargo/config",
    "rust-toolchain.toml",
    "rust-toolchain",
    // Bazelisk: `BAZELISK_BASE_URL` picks the binary it downloads and runs.
    ".bazeliskrc",
    // package managers: every invocation loads these
    // npm: `_authToken` per registry.
    ".npmrc",
    // Yarn 2+: `npmAuthToken`.
    ".yarnrc.yml",
    // Yarn 1: `yarn-path` names the script every `yarn` runs.
    ".yarnrc",
    // Yarn 2+: the release `yarnPath` runs and the plugins it loads.
    ".yarn/releases/",
    ".yarn/plugins/",
    ".pnpmfile.cjs",
    ".pnpmfile.mjs",
    // Bun: `preload` scripts and registries for every `bun` command.
    "bunfig.toml",
    // version managers: run on `cd` through shell activation, or install
    // and put on PATH the tools they name (mise's `[hooks]`, `[env]`
    // `_.source`, and backends such as `ubi:` or `cargo:`, also read from
    // `.tool-versions`)
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".mise/",
    ".config/mise.toml",
    ".config/mise/",
    ".tool-versions",
    // git hook managers: hooks installed once read these at every commit
    ".pre-commit-config.yaml",
    "lefthook.yml",
    ".lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yaml",
    "lefthook.toml",
    ".lefthook.toml",
    "lefthook.json",
    ".lefthook.json",
    "lefthook-local.yml",
    ".lefthook-local.yml",
    "lefthook-local.yaml",
    ".lefthook-local.yaml",
    ".config/lefthook.yml",
    ".overcommit.yml",
    // CI definitions: they run with the repository's CI secrets on the
    // next push, and a changed workflow is easily lost among an agent's
    // changes (GitHub itself gates workflow edits behind a separate token
    // scope). The scripts they call are the project's code (see above).
    ".github/workflows/",
    ".github/actions/",
    ".gitlab-ci.yml",
];

/// Names that tools look for in the directory they run in and in every
/// directory above it, so they run code from any depth of a tree, not
/// only from its top (cargo's `.cargo/config.toml` and rustup's
/// `rust-toolchain` from a crate's directory, npm's `.npmrc` from a
/// package's, direnv's `.envrc` on `cd`, mise and asdf tool versions, an
/// agent's project MCP and settings files where it is started). Protected
/// in every directory of the writable areas: read-only where they exist,
/// refused at creation where not. A name with a `/` is a file in a
/// directory of that name.
pub const PROTECTED_ANYWHERE: &[&str] = &[
    ".envrc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "bunfig.toml",
    "rust-toolchain",
    "rust-toolchain.toml",
    ".cargo/config",
    ".cargo/config.toml",
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".tool-versions",
    ".mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    // Claude Code's other parts that act in its later sessions, on the
    // host too when `~/.claude` is writable: hook scripts the settings
    // name, custom commands (their `!` lines run), skills and plugins
    // (scripts, hooks, MCP servers), subagents and output styles, and the
    // instructions every session reads (a prompt injection would last).
    ".claude/hooks",
    ".claude/commands",
    ".claude/skills",
    ".claude/plugins",
    ".claude/agents",
    ".claude/output-styles",
    ".claude/CLAUDE.md",
    ".claude/rules",
];

/// Glob patterns of names that run code later, like [`PROTECTED_NAMES`],
/// for names a fixed list cannot spell. Matched against a file's name (its
/// last component) anywhere a protected name applies: those that exist are
/// read-only, new ones are refused at creation.
pub const PROTECTED_NAME_PATTERNS: &[&str] = &[
    // VS Code workspace files: `tasks` that run on folder open, `settings`
    // (terminal profiles, interpreter paths) and `launch` configurations.
    "*.code-workspace",
];

/// Inside every git dir (`.git`, and submodule git dirs): what runs or
/// redirects code later. `commondir` points git at another directory's
/// config and hooks; `config.worktree` is read as config when worktree
/// config is on.
pub const GIT_DIR_PROTECTED: &[&str] = &["hooks/", "config", "commondir", "config.worktree"];

/// Inside a worktree's git dir (`.git/worktrees/<id>`): where it points.
pub const WORKTREE_PROTECTED: &[&str] = &["commondir", "gitdir", "config.worktree"];

/// Directories of the user's (relative to the home) where what is left
/// runs later without being asked: the home's own dotfiles, the user's
/// config and data trees (systemd user units, autostart entries, shell
/// and editor startup files), and the programs on the usual `PATH`. A
/// writable area may not hold one of them (see [`runs_later`]).
pub const STARTUP_PLACES: &[&str] = &[
    "",
    ".config",
    ".local",
    ".local/bin",
    ".local/share",
    "bin",
    ".cargo/bin",
    ".config/systemd",
    ".config/autostart",
];

/// Places where a file left at any depth runs later too, or lets someone
/// in: systemd reads user units from `user/` and its `*.wants/` and `*.d/`
/// directories; ssh's config (`ProxyCommand`, `Match exec`), `rc` and
/// `authorized_keys`; gpg's configs (they name programs); the session's
/// environment; the shells' and editors' startup trees; git's user config.
/// A writable area may not lie inside one either. (A `PATH` or autostart
/// directory runs only what is directly in it.)
pub const STARTUP_TREES: &[&str] = &[
    ".config/systemd",
    ".ssh",
    ".gnupg",
    ".config/environment.d",
    ".config/fish",
    ".config/nvim",
    ".vim",
    ".emacs.d",
    ".config/git",
];

/// Whether `dir`, made writable, would let the sandbox leave what runs
/// later on the host for the user whose home is `home`: it is or holds a
/// [`STARTUP_PLACES`] entry, or lies inside a [`STARTUP_TREES`] one. The
/// startup place it reaches, if so.
pub fn runs_later(dir: &Path, home: &Path) -> Option<PathBuf> {
    let place = |rel: &str| {
        if rel.is_empty() {
            home.to_path_buf()
        } else {
            home.join(rel)
        }
    };
    STARTUP_PLACES
        .iter()
        .map(|rel| place(rel))
        .find(|p| p.starts_with(dir))
        .or_else(|| {
            STARTUP_TREES
                .iter()
                .map(|rel| place(rel))
                .find(|p| dir.starts_with(p))
        })
}

/// The system's trees of programs, libraries and configuration: a
/// writable area may not be, hold or lie inside one (a root run whose
/// project is `/etc`, or an MCP server started there with its workspace
/// writable, would leave code that runs later for everyone).
pub const SYSTEM_CODE_TREES: &[&str] = &[
    "/etc",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/usr/local/lib",
    "/usr/local/etc",
];

/// Whether a write refused in `dir` may be answered with "allow `dir`
/// writable": only below the caller's own home (the first of `homes`, the
/// policy's), never the home itself nor a startup place of any of
/// `homes`, since a hostile run would be asking for the rule that lets it
/// leave a program where it runs later.
pub fn suggestable_writable(dir: &Path, homes: &[PathBuf]) -> bool {
    homes.first().is_some_and(|home| {
        dir.starts_with(home) && dir != home && homes.iter().all(|h| runs_later(dir, h).is_none())
    })
}

/// Variables that steer cordon itself, or the dynamic loader and C
/// library of every program it starts, rather than only the command
/// inside: where its config and policies are (`HOME`, `XDG_*`), what it
/// runs outside (`PATH`, for an inject entry's `command`), code loaded
/// into it (`LD_*`, `GCONV_PATH`, and the rest of what the C library
/// ignores for set-user-ID programs). An MCP client sets an entry's
/// `env` for the process it starts, which `cordon mcp wrap` makes
/// cordon: an entry that sets one of these is refused (globs: `*` at the
/// end only).
pub const CORDON_STEERING_ENV: &[&str] = &[
    "HOME",
    "PATH",
    "XDG_*",
    "CORDON_*",
    "LD_*",
    "GLIBC_TUNABLES",
    "GCONV_PATH",
    "GETCONF_DIR",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "LOCPATH",
    "MALLOC_*",
    "NIS_PATH",
    "NLSPATH",
    "RESOLV_HOST_CONF",
    "RES_OPTIONS",
    "TMPDIR",
    "TZDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Whether `name` is one of [`CORDON_STEERING_ENV`].
pub fn steers_cordon(name: &str) -> bool {
    CORDON_STEERING_ENV
        .iter()
        .any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *p,
        })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credential_list_names_exact_paths_once() {
        let mut seen = std::collections::BTreeSet::new();
        for entry in CREDENTIAL_DENY_LIST {
            assert!(seen.insert(entry), "{entry} twice");
            assert!(!entry.starts_with('/') && !entry.ends_with('/'), "{entry}");
            assert!(!entry.contains(['*', '?', '[', '{']), "{entry} is a glob");
            assert!(
                !entry.split('/').any(|c| c == ".." || c.is_empty()),
                "{entry}"
            );
        }
    }

    #[test]
    fn the_pattern_and_system_lists_are_well_formed_once() {
        let mut seen = std::collections::BTreeSet::new();
        for entry in CREDENTIAL_DENY_PATTERNS {
            assert!(seen.insert(entry), "{entry} twice");
            assert!(!entry.starts_with('/') && entry.contains('*'), "{entry}");
            assert!(globset::Glob::new(entry).is_ok(), "{entry}");
        }
        for entry in SYSTEM_DENY_LIST {
            assert!(seen.insert(entry), "{entry} twice");
            assert!(entry.starts_with("/") && !entry.ends_with('/'), "{entry}");
            assert!(
                !entry.split('/').skip(1).any(|c| c == ".." || c.is_empty()),
                "{entry}"
            );
        }
        // Programs inside need these to name users and to use sudo's rules.
        for needed in ["/etc/passwd", "/etc/group", "/etc/sudoers", "/etc/ssh"] {
            assert!(!SYSTEM_DENY_LIST.contains(&needed), "{needed}");
        }
    }

    #[test]
    fn protected_names_are_plain_relative_names_once_and_patterns_are_globs() {
        let mut seen = std::collections::BTreeSet::new();
        for name in PROTECTED_NAMES {
            assert!(seen.insert(name.trim_end_matches('/')), "{name} twice");
            assert!(!name.starts_with('/'), "{name}");
            assert!(!name.contains(['*', '?', '[', '{']), "{name}: a pattern");
            let rel = name.trim_end_matches('/');
            assert!(!rel.split('/').any(|c| c == ".." || c.is_empty()), "{name}");
        }
        for pattern in PROTECTED_NAME_PATTERNS {
            assert!(pattern.contains('*') && !pattern.contains('/'), "{pattern}");
            assert!(globset::Glob::new(pattern).is_ok(), "{pattern}");
        }
    }

    #[test]
    fn directories_tools_need_to_run_are_not_hidden_wholesale() {
        // Agents' state, editors' config and plugins, toolchains, caches:
        // only credential files beneath them may be listed.
        for needed in [
            ".claude",
            ".codex",
            ".gemini",
            ".qwen",
            ".cursor",
            ".config/opencode",
            ".local/share/opencode",
            ".config/nvim",
            ".local/share/nvim",
            ".local/state/nvim",
            ".emacs.d",
            ".vim",
            ".config/Code",
            ".cargo",
            ".rustup",
            ".npm",
            ".cache",
            ".local/share/pnpm",
            ".config/yarn",
            ".m2",
            ".gradle",
            ".pulumi",
            ".fly",
            ".docker",
            ".jfrog",
            ".pub-cache",
            ".config",
            ".local/share",
            ".local/state",
        ] {
            assert!(
                !CREDENTIAL_DENY_LIST.contains(&needed),
                "{needed} is needed by the tools that keep it"
            );
        }
    }
}
