//! Built-in defaults: the credential deny list, the persistence paths, the limits.

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
    ".ssh",
    ".gnupg",
    ".password-store",
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
    // cloud providers
    ".aws",
    ".azure",
    ".config/gcloud",
    ".oci",
    ".config/doctl",
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
    // clusters, containers, infrastructure
    ".kube",
    // minikube: cluster CA and client private keys.
    ".minikube",
    // Teleport (`tsh`): user keys and certificates.
    ".tsh",
    ".docker/config.json",
    // Docker contexts' client TLS keys for remote daemons.
    ".docker/contexts/tls",
    // Podman, Buildah, Skopeo: registry logins.
    ".config/containers/auth.json",
    // Helm: chart repository passwords; OCI registry logins.
    ".config/helm/repositories.yaml",
    ".config/helm/registry",
    ".terraform.d",
    // Terraform CLI config: `credentials` blocks (HCP Terraform tokens).
    ".terraformrc",
    ".vault-token",
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
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    // Gitea CLI (`tea`): tokens.
    ".config/tea",
    ".npmrc",
    ".yarnrc.yml",
    // Yarn 1: may hold `_authToken` for a registry.
    ".yarnrc",
    // pnpm's global rc: registry auth tokens.
    ".config/pnpm/rc",
    ".pypirc",
    // pip: an `index-url` with a password.
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    // Poetry: repository passwords when no keyring is available.
    ".config/pypoetry/auth.toml",
    // uv: stored index credentials.
    ".local/share/uv/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    // Bundler: gem server credentials (`BUNDLE_<HOST>`).
    ".bundle/config",
    // Composer: HTTP basic, GitHub and GitLab tokens (both homes).
    ".composer/auth.json",
    ".config/composer/auth.json",
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
    ".pgpass",
    ".my.cnf",
    // mail: SMTP and IMAP passwords
    ".msmtprc",
    ".fetchmailrc",
    ".mbsyncrc",
    // shell and REPL histories (commands and pasted secrets)
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".sh_history",
    ".local/share/fish/fish_history",
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
