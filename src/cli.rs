//! The command line: argument definitions and what each command does.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand};

use crate::escape::{json_printable, printable, printable_lines};
use crate::policy::import::layer as import_layer;
use crate::policy::keys::{self, Flag, FlagType, Takes};
use crate::policy::load::{self, EnvFacts, FlagValue, LoadRequest};
use crate::policy::pattern::PathContext;
use crate::policy::{presets, trust, Policy};
use crate::{doctor, explain, manual, probe, sandbox};

/// Run a command inside a boundary the Linux kernel enforces.
///
/// cordon closes three doors by default. Files: the whole root is
/// read-only, only the project dir, a private /tmp and added folders are
/// writable, credential stores (~/.ssh, ~/.aws, ...) are unreadable, and
/// dotfiles that run code later (.git/hooks, .bashrc, .vscode/, ...) stay
/// read-only even in the project. Network: only lo exists inside.
/// Process: no_new_privs, no capabilities, Landlock and a seccomp filter.
/// If a layer cannot be applied, cordon refuses to run.
#[derive(Debug, Parser)]
#[command(name = "cordon", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run CMD inside the sandbox; exits with CMD's status (128+N if killed by signal N).
    ///
    /// Exit codes of cordon itself: 125 when the sandbox could not be set
    /// up (nothing ran), 124 when --timeout ended it, 127/126 when CMD was
    /// not found / not executable.
    Run(RunCommandArgs),
    /// Run CMD with network requests no rule names allowed and recorded, then print the
    /// policy that lets the same run pass without learn mode.
    ///
    /// For commands you trust only: whatever CMD asks for is let through. Deny rules, the
    /// address guard (loopback, private, metadata and other special ranges, the host's own
    /// addresses) and the files, credentials and process doors apply as in `cordon run`, and
    /// no secret is injected. The learned policy goes to stderr after the run, or to
    /// --output FILE; replay it with `cordon run --policy FILE -- CMD`. Exits with CMD's status.
    Learn(LearnArgs),
    /// Print the effective policy, door by door, with the source of each line.
    Explain(ExplainArgs),
    /// Show what this kernel can enforce; exits non-zero if `cordon run` would refuse.
    Doctor(DoctorArgs),
    /// Approve a project's cordon.toml (or a repository's Claude Code settings, for --from-claude) so it may widen the sandbox (records its sha256).
    Trust(TrustArgs),
    /// List the presets (--preset NAME): the hosts each package manager or service needs, and the caches its tools keep.
    ///
    /// A preset is a policy fragment shipped in cordon, in the format of a
    /// policy file. `--preset NAME` (repeatable) or `[network] presets =
    /// ["NAME"]` adds its lines to the layer that names it; `cordon explain`
    /// shows each line's source as `preset NAME (...)`. An untrusted project
    /// cordon.toml may not name a preset that allows hosts. Each cache a
    /// preset lists is given to the sandbox as a `files.cache` entry: the
    /// tool writes into a private layer, the host's directory unchanged.
    Presets(PresetsArgs),
    /// List the agent profiles (--agent NAME): what each sets up to run an AI agent whole inside the sandbox.
    ///
    /// A profile is a preset (see `cordon presets`) for one agent: its API
    /// hosts, and the host wherever its base-URL variable points it; its
    /// API key injected by the proxy on requests to those hosts only, when
    /// the key is set in cordon's environment (the sandbox holds a
    /// placeholder); its state directory writable in the names that are
    /// state, the rest (settings, hooks, commands, plugins, ...) read-only.
    /// `--agent auto` picks the profile from the command's name.
    Agents(PresetsArgs),
    /// Print a sandbox policy you already have (Claude Code's settings, sandbox-runtime's
    /// settings file) as a cordon policy file, each value naming the file, line and key it
    /// came from.
    ///
    /// `cordon import claude` reads the Claude Code settings files of the project, in Claude
    /// Code's order (the user's ~/.claude/settings.json, then the project's
    /// .claude/settings.json and .claude/settings.local.json), or the FILEs named: the
    /// `sandbox` block and the `Read(...)`, `Edit(...)` and `WebFetch(domain:...)`
    /// permission rules. `cordon import srt` reads ~/.srt-settings.json, or FILE. Every key
    /// that is not imported is listed, with why, on stderr and at the end of the file; keys
    /// Claude Code ignores in a repository's settings are refused there. Run with the result:
    /// `cordon import claude > claude.toml && cordon run --policy claude.toml -- CMD`.
    Import(ImportArgs),
    /// Run each MCP server of a client's config in a sandbox of its own: rewrite the config
    /// so that its stdio servers start under `cordon mcp run`, or back.
    ///
    /// `cordon mcp wrap FILE` rewrites every stdio server of FILE: Claude Code's .mcp.json
    /// and ~/.claude.json (global and per-project mcpServers), Claude Desktop's
    /// claude_desktop_config.json, VS Code's mcp.json, other clients' JSON settings with
    /// mcpServers, and Codex's config.toml ([mcp_servers.NAME]). Each command then runs as
    /// `cordon mcp run --server NAME --pass-env VAR... -- COMMAND ARGS...`: no network, an
    /// empty environment but for the server's own variables (its env; a secret among them is
    /// unset unless its policy injects it), the whole filesystem read-only (the workspace
    /// too) but a private /tmp, and the credential stores unreadable. The server's policy,
    /// ~/.config/cordon/mcp/NAME.toml (a cordon policy file), widens that for it alone: its
    /// hosts (network.allow), its secrets sent to those hosts only
    /// ([[credentials.inject]]), the workspace writable (files.read_only_project = false).
    /// Remote (http, sse) entries are left as they are. `cordon mcp unwrap FILE` gives the
    /// file back byte for byte; wrap checks that it would before it writes.
    Mcp(McpArgs),
    /// Show the audit log (every decision of every door), filtered; or check every line's MAC.
    Log(LogArgs),
    /// Prove the boundary from inside: build the sandbox `run` would build with the same
    /// options, attack it with a battery of probes (files, network, credentials, process),
    /// print a table; exits 1 if any door is open.
    Probe(ProbeArgs),
    /// Print a completion script for SHELL to stdout.
    ///
    /// bash: `cordon completions bash > ~/.local/share/bash-completion/completions/cordon`;
    /// zsh: `cordon completions zsh > DIR/_cordon` for a DIR on $fpath;
    /// fish: `cordon completions fish > ~/.config/fish/completions/cordon.fish`.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout, or write one page per command into a directory.
    ///
    /// `cordon man | man -l -` reads it; `cordon man --dir ~/.local/share/man/man1`
    /// installs cordon.1, cordon-run.1, ... for `man cordon-run`.
    Man(ManArgs),
    /// The inside half of `cordon probe` (runs in the sandbox).
    #[command(hide = true)]
    ProbeInside {
        /// What to probe (JSON, from the outside half).
        spec: String,
    },
    /// The canary process of `cordon probe` (waits until stopped).
    #[command(hide = true)]
    ProbeCanary {
        /// A word the probe looks for in this process's command line.
        tag: String,
    },
}

/// Options that shape the policy (shared by `run` and `explain`): `--project`,
/// `--policy`, and the flag of every declared policy key
/// ([`crate::policy::keys::KEYS`]), whose names and help come from the
/// declaration.
#[derive(Debug, Clone, Default)]
pub struct PolicyArgs {
    /// Project directory, writable inside [default: the current directory].
    pub project: Option<PathBuf>,
    /// Policy files (trusted; later files win).
    pub policy: Vec<PathBuf>,
    /// `--from-claude` and `--from-srt`: other tools' settings as layers.
    pub imports: Vec<import_layer::Request>,
    /// The policy flags given, in declaration order.
    pub flags: Vec<FlagValue>,
}

/// The argument id of `--project`.
const PROJECT: &str = "project";
/// The argument id of `--policy`.
const POLICY: &str = "policy";
/// The importers' flags, and the format each reads.
const IMPORT_FLAGS: [(&str, import_layer::Format, &str); 2] = [
    (
        "from-claude",
        import_layer::Format::Claude,
        "Apply Claude Code's sandbox settings too: ~/.claude/settings.json, .claude/settings.json and .claude/settings.local.json, or FILE (see `cordon import`); what a repository's settings add that widens applies once approved with `cordon trust FILE`",
    ),
    (
        "from-srt",
        import_layer::Format::Srt,
        "Apply sandbox-runtime's settings too: ~/.srt-settings.json, or FILE (see `cordon import`)",
    ),
];

impl Args for PolicyArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let cmd = cmd.arg(
            Arg::new(PROJECT)
                .long(PROJECT)
                .value_name("DIR")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Project directory, writable inside [default: the current directory]"),
        );
        let cmd = keys::KEYS
            .iter()
            .filter_map(|key| key.about().flag.as_ref())
            .fold(cmd, |cmd, flag| cmd.arg(flag_arg(flag)));
        let cmd = cmd.arg(
            Arg::new(POLICY)
                .long(POLICY)
                .value_name("FILE")
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(PathBuf))
                .help("Load a policy file (trusted; repeatable, later files win)"),
        );
        IMPORT_FLAGS.iter().fold(cmd, |cmd, (name, _, help)| {
            cmd.arg(
                Arg::new(*name)
                    .long(*name)
                    .value_name("FILE")
                    .num_args(0..=1)
                    .require_equals(true)
                    .default_missing_value("")
                    .action(ArgAction::Append)
                    .value_parser(clap::builder::OsStringValueParser::new())
                    .help(*help),
            )
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// The clap argument for a declared flag.
fn flag_arg(flag: &'static Flag) -> Arg {
    let arg = Arg::new(flag.name).long(flag.name).help(flag.help);
    let (arg, kind) = match flag.takes {
        Takes::Switch => return arg.action(ArgAction::SetTrue),
        Takes::One(kind) => (arg.action(ArgAction::Set), kind),
        Takes::Many(kind) => (arg.action(ArgAction::Append), kind),
        Takes::CommaList(kind) => (arg.action(ArgAction::Append).value_delimiter(','), kind),
    };
    let arg = arg.value_name(flag.value_name);
    match kind {
        FlagType::Text => arg.value_parser(clap::value_parser!(String)),
        FlagType::Number => arg.value_parser(clap::value_parser!(u64)),
        FlagType::Port => arg.value_parser(clap::value_parser!(u16)),
    }
}

impl FromArgMatches for PolicyArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = PolicyArgs::default();
        args.update_from_arg_matches(matches)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        if let Some(dir) = matches.get_one::<PathBuf>(PROJECT) {
            self.project = Some(dir.clone());
        }
        if let Some(files) = matches.get_many::<PathBuf>(POLICY) {
            self.policy = files.cloned().collect();
        }
        self.imports = IMPORT_FLAGS
            .iter()
            .filter_map(|(name, format, _)| {
                // Given bare (no `=FILE`): the format's own files.
                let given = matches.get_many::<OsString>(name)?;
                let files = given.filter(|f| !f.is_empty()).map(PathBuf::from).collect();
                Some(import_layer::Request {
                    format: *format,
                    files,
                })
            })
            .collect();
        self.flags = keys::KEYS
            .iter()
            .filter_map(|&key| flag_value(matches, key))
            .collect();
        Ok(())
    }
}

/// The values `key`'s flag was given, if it was.
fn flag_value(matches: &ArgMatches, key: &'static dyn keys::Declared) -> Option<FlagValue> {
    let flag = key.about().flag.as_ref()?;
    let id = flag.name;
    let values = match flag.takes {
        Takes::Switch => matches.get_flag(id).then(Vec::new),
        Takes::One(kind) | Takes::Many(kind) | Takes::CommaList(kind) => match kind {
            FlagType::Text => matches.get_many::<String>(id).map(|v| v.cloned().collect()),
            FlagType::Number => matches
                .get_many::<u64>(id)
                .map(|v| v.map(u64::to_string).collect()),
            FlagType::Port => matches
                .get_many::<u16>(id)
                .map(|v| v.map(u16::to_string).collect()),
        },
    }?;
    Some(FlagValue { key, values })
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print nothing at exit about what was blocked (by default, one line on stderr
    /// when anything was).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

impl RunArgs {
    /// The run of this command under `policy` (loaded from these flags),
    /// neither learning nor asking.
    fn request<'a>(
        self,
        policy: &'a crate::policy::Policy,
        cwd: PathBuf,
        filters: sandbox::seccomp::Compiling,
    ) -> sandbox::RunRequest<'a> {
        sandbox::RunRequest {
            policy,
            command: self.command,
            cwd,
            quiet: self.quiet,
            filters,
            learn: None,
            ask: None,
        }
    }
}

#[derive(Debug, Args)]
pub struct RunCommandArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Hold each connection to a host no rule allows and ask on your terminal: allow it once,
    /// for this sandbox, always (saved to your config.toml), deny, or deny and stop asking
    /// (a letter and Enter); no answer in time denies. An error without a terminal. The
    /// sandbox cannot answer: it has a terminal of its own.
    #[arg(long)]
    pub ask: bool,
    /// How long --ask waits for an answer before it denies (30s, 2m; 1s to 24h) [default: 60s].
    #[arg(long, value_name = "DURATION", requires = "ask")]
    pub ask_timeout: Option<String>,
}

/// How long `--ask` waits for an answer unless told.
const ASK_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest `--ask-timeout`: a day.
const MAX_ASK_TIMEOUT: Duration = Duration::from_secs(86_400);

impl RunCommandArgs {
    /// What `--ask` needs, opened now: before anything runs, a missing
    /// terminal or a bad timeout stops the run.
    fn ask_setup(&self) -> Result<Option<sandbox::ask_prompt::AskSetup>, Failure> {
        use std::os::unix::fs::OpenOptionsExt;
        if !self.ask {
            return Ok(None);
        }
        let timeout = match &self.ask_timeout {
            Some(text) => load::parse_duration(text)
                .and_then(|t| {
                    if (Duration::from_secs(1)..=MAX_ASK_TIMEOUT).contains(&t) {
                        Ok(t)
                    } else {
                        Err(format!("{text:?} is outside 1s to 24h"))
                    }
                })
                .map_err(|e| failed(2)(format!("--ask-timeout: {e}")))?,
            None => ASK_TIMEOUT,
        };
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
            .open("/dev/tty")
            .map_err(|e| Failure {
                message: format!(
                    "--ask needs a terminal to ask on, and this process has none (/dev/tty: {e}); without one, name the hosts the command needs (--allow-domain, or cordon learn)"
                ),
                code: sandbox::EXIT_SETUP_FAILED,
            })?;
        let env = EnvFacts::from_process()?;
        Ok(Some(sandbox::ask_prompt::AskSetup {
            tty,
            timeout,
            config_file: load::user_config_dir(&env).join("config.toml"),
        }))
    }
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Rewrite FILE so that each of its stdio servers runs under `cordon mcp run`.
    Wrap(McpWrapArgs),
    /// Give FILE's wrapped servers back their own commands, byte for byte as they were.
    Unwrap(McpFileArgs),
    /// Run an MCP server in its own sandbox (the command `cordon mcp wrap` writes).
    ///
    /// Its policy: cordon's defaults (the credential stores unreadable, no network), the
    /// workspace read-only (files.read_only_project) and an empty environment but for HOME,
    /// LOGNAME, PATH, SHELL, TERM, USER, the locale and the --pass-env names (a secret among
    /// them is unset all the same, unless the policy injects it); then the server's own
    /// policy file, ~/.config/cordon/mcp/NAME.toml, if there is one; then --policy files and
    /// flags. The user's config.toml and the project's cordon.toml are the agent's: they are
    /// not read. stdin and stdout pass through untouched.
    Run(McpRunArgs),
}

#[derive(Debug, Args)]
pub struct McpFileArgs {
    /// The client's config file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only this server (repeatable) [default: every server of FILE].
    #[arg(long, value_name = "NAME")]
    pub server: Vec<String>,
    /// Print the new file to stdout instead of writing it.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct McpWrapArgs {
    #[command(flatten)]
    pub file: McpFileArgs,
    /// The cordon command the entries run [default: this cordon's absolute path].
    #[arg(long, value_name = "PATH")]
    pub cordon: Option<String>,
}

#[derive(Debug, Args)]
pub struct McpRunArgs {
    /// The server's name: its policy is ~/.config/cordon/mcp/NAME.toml.
    #[arg(long, value_name = "NAME", required = true)]
    pub server: String,
    /// The entry had no arguments before `cordon mcp wrap` (unwrap removes them again).
    #[arg(long, hide = true)]
    pub args_added: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct LearnArgs {
    /// Write the learned policy to FILE (which must not exist yet) instead of stderr.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write cordon.1 and one page per command (cordon-run.1, ...) into DIR, an existing
    /// directory, instead of printing cordon.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The log to read [default: the audit log in force here, as `cordon explain` shows it].
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Only events of this sandbox (its id, or the start of it: cordon-<pid>-<id>).
    #[arg(long, value_name = "ID")]
    pub sandbox: Option<String>,
    /// Only events of this door: network, files, credentials, process.
    #[arg(long, value_name = "DOOR")]
    pub door: Option<String>,
    /// Only refusals.
    #[arg(long)]
    pub denied: bool,
    /// Only events since a time ago (30m, 2h, 1d) or a time (2026-11-30T06:00:00Z).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Keep printing events as they are appended.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Print the events as JSON lines, as stored.
    #[arg(long)]
    pub json: bool,
    /// Check every line's MAC under your audit key instead: exits 1 if a line was edited, deleted, moved or written without the key.
    #[arg(long, conflicts_with_all = ["follow", "json", "sandbox", "door", "denied", "since"])]
    pub verify: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Then run `cordon probe` with the default policy.
    #[arg(long)]
    pub probe: bool,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PresetsArgs {
    /// Show only this preset, as its file (TOML: its description, its policy, and comments on what it leaves out).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// Print JSON instead of text: an array of presets, or with NAME one preset and its file.
    #[arg(long)]
    pub json: bool,
}

/// The formats `cordon import` reads.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ImportFormat {
    /// Claude Code's settings files.
    Claude,
    /// sandbox-runtime's settings file.
    Srt,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The format to read.
    #[arg(value_name = "FORMAT")]
    pub format: ImportFormat,
    /// The files to read, lowest precedence first [default: the format's own files].
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The project the policy is for: relative paths in the files, and the project's own
    /// settings files, are found there [default: the working directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The policy file to approve [default: ./cordon.toml].
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Withdraw the approval instead.
    #[arg(long)]
    pub remove: bool,
}

/// A failure of a command, printed as `cordon: <message>`, with the exit code.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: i32,
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            message: e.to_string(),
            code: sandbox::EXIT_SETUP_FAILED,
        }
    }
}

fn load_policy(args: &PolicyArgs) -> Result<(Policy, PathBuf), Failure> {
    load_policy_for(args, None)
}

/// [`load_policy`] for the sandbox of the MCP server `server`, if named.
fn load_policy_for(args: &PolicyArgs, server: Option<&str>) -> Result<(Policy, PathBuf), Failure> {
    let cwd = std::env::current_dir()?;
    let req = LoadRequest {
        cwd: cwd.clone(),
        project: args.project.clone(),
        policy_files: args.policy.clone(),
        imports: args
            .imports
            .iter()
            .map(|r| import_layer::Request {
                format: r.format,
                files: r.files.iter().map(|f| cwd.join(f)).collect(),
            })
            .collect(),
        flags: args.flags.clone(),
        env: EnvFacts::from_process()?,
        server: server.map(str::to_string),
    };
    let policy = load::load(&req)?;
    // Before the run, where the user looks: what the settings named that
    // this sandbox does not do.
    for note in &policy.import_notes {
        crate::say!("cordon: imported settings: {}", printable(note));
    }
    Ok((policy, cwd))
}

/// What each agent profile in force says when none of its keys is set.
fn say_missing_keys(policy: &crate::policy::Policy) {
    for message in presets::missing_keys(policy) {
        crate::say!("cordon: {}", printable(message));
    }
}

impl PolicyArgs {
    /// `--agent auto`: the profile for `command`'s name in its place.
    fn pick_agent(&mut self, command: &[OsString]) -> Result<(), Failure> {
        for flag in &mut self.flags {
            let is_agent = std::ptr::eq(flag.key.about(), &crate::policy::keys::AGENT.about);
            if is_agent && flag.values.last().map(String::as_str) == Some(presets::AUTO) {
                let program = command.first().map(OsString::as_os_str).unwrap_or_default();
                let name = presets::agent_for_command(program).map_err(failed(125))?;
                flag.values = vec![name.to_string()];
            }
        }
        Ok(())
    }
}

/// The audit log `cordon log` reads by default: the one in force here.
fn log_in_force(env: &EnvFacts) -> Result<PathBuf, Failure> {
    let none = || Failure {
        message: "the audit log is turned off here (audit.file = \"none\"); name one with --file"
            .into(),
        code: 1,
    };
    match load_policy(&PolicyArgs::default()) {
        Ok((policy, _)) => policy.audit.log.value.ok_or_else(none),
        // A project policy that does not load still has a log elsewhere.
        Err(f) => {
            crate::say!(
                "cordon: note: {}; reading the default log",
                printable_lines(&f.message)
            );
            Ok(load::default_audit_log(env))
        }
    }
}

fn log_command(args: LogArgs) -> Result<i32, Failure> {
    let env = EnvFacts::from_process()?;
    let path = match args.file {
        Some(f) => f,
        None => log_in_force(&env)?,
    };
    if args.verify {
        let key = crate::audit::key_path(&env.xdg_state_home);
        return match crate::log::verify(&path, &key) {
            Ok(n) => {
                println!(
                    "{}: {n} events, every line authenticated by your audit key and in order",
                    printable(&path)
                );
                Ok(0)
            }
            Err(e @ crate::log::LogError::Chain { .. }) => {
                println!("{}", printable_lines(&e.to_string()));
                Ok(1)
            }
            Err(e) => Err(failed(1)(e)),
        };
    }
    let filter = crate::log::Filter {
        sandbox: args.sandbox,
        door: args
            .door
            .as_deref()
            .map(crate::log::parse_door)
            .transpose()
            .map_err(failed(2))?,
        denied: args.denied,
        since: args
            .since
            .as_deref()
            .map(|s| crate::log::parse_since(s, std::time::SystemTime::now()))
            .transpose()
            .map_err(failed(2))?,
    };
    let output = crate::log::Output {
        json: args.json,
        follow: args.follow,
    };
    crate::log::show(&path, &filter, output).map_err(failed(1))?;
    Ok(0)
}

/// `cordon learn`: the run, then the policy it needed.
fn learn_command(mut args: LearnArgs) -> Result<i32, Failure> {
    // Refused before anything runs: a learned policy never overwrites a file.
    let output = args
        .output
        .as_deref()
        .map(LearnedOutput::open)
        .transpose()?;
    let filters = sandbox::seccomp::Compiling::start();
    args.run.policy.pick_agent(&args.run.command)?;
    let (mut policy, cwd) = load_policy(&args.run.policy)?;
    crate::say!("cordon learn: hosts no rule names are let through and recorded: run only a command you trust. Deny rules, the address guard (loopback, private and metadata ranges, this host's addresses) and the files, credentials and process doors apply as in `cordon run`.");
    if !policy.inspection.inject.is_empty() {
        crate::say!(
            "cordon learn: no secret is injected in learn mode: the {} [[credentials.inject]] entries are left out of this run, and the variables they name unset",
            policy.inspection.inject.len()
        );
        // Their variables hold the real secrets in cordon's environment;
        // `cordon run` gives the command placeholders, and with nothing
        // injected the filter would pass the real values: unset instead.
        let names: Vec<String> = policy
            .inspection
            .inject
            .drain(..)
            .map(|spec| spec.value.env)
            .collect();
        crate::credentials::env::withhold(
            &mut policy.env,
            &names,
            &crate::policy::Source::Flag("cordon learn".into()),
        );
    }
    let command = args
        .run
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let learned = std::sync::Arc::new(crate::net::learn::Learned::default());
    let code = sandbox::run(sandbox::RunRequest {
        learn: Some(std::sync::Arc::clone(&learned)),
        ..args.run.request(&policy, cwd, filters)
    })?;
    let writes = learned.writes();
    if learned.dropped() > 0 {
        crate::say!(
            "cordon learn: WARNING: the run named more than {} hosts or refused names; {} more were not recorded, so the learned policy is incomplete",
            crate::net::learn::MAX_RECORDED,
            learned.dropped()
        );
    }
    let text = crate::policy::learned::render(
        &command,
        &learned.seen(),
        &crate::policy::learned::RefusedWrites {
            paths: &writes,
            homes: &policy.homes,
        },
        &policy.network.hosts.ports.value,
    );
    match &output {
        Some(output) => {
            let out = &output.path;
            if let Err(e) = output.write(&text) {
                // The run is over; its policy is not lost.
                eprint!("{}", printable_lines(&text));
                return Err(Failure {
                    message: format!(
                        "cannot write the learned policy to {}: {e} (it is printed above)",
                        printable(out.display().to_string())
                    ),
                    code: sandbox::EXIT_SETUP_FAILED,
                });
            }
            crate::say!(
                "cordon learn: the policy this run needed is in {}; review it, then: cordon run --policy {} -- ...",
                printable(out.display().to_string()),
                printable(out.display().to_string())
            );
        }
        None => eprint!("{}", printable_lines(&text)),
    }
    Ok(code)
}

/// Where `cordon learn --output` writes: the directory the path names,
/// opened before the run, and the file's name in it. The sandbox may
/// replace a directory on the path with a link while it runs (the project
/// is writable); the file still goes where the path led at the start.
struct LearnedOutput {
    dir: std::fs::File,
    name: OsString,
    /// The path as given, for messages.
    path: PathBuf,
}

impl LearnedOutput {
    /// Opens the directory of `out`; an `out` that exists already (even a
    /// dangling link) or whose directory cannot be opened is refused.
    fn open(out: &std::path::Path) -> Result<LearnedOutput, Failure> {
        use std::os::unix::fs::OpenOptionsExt;
        let shown = || printable(out.display().to_string());
        let refused = |why: String| Failure {
            message: format!("{}: {why}", shown()),
            code: 2,
        };
        let name = out
            .file_name()
            .ok_or_else(|| refused("names no file to write".into()))?;
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(parent)
            .map_err(|e| refused(format!("cannot open its directory ({e})")))?;
        let exists = nix::sys::stat::fstatat(
            Some(std::os::fd::AsRawFd::as_raw_fd(&dir)),
            name,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .is_ok();
        if exists {
            return Err(refused("already exists; cordon learn writes only a new file (choose another name, or remove it)".into()));
        }
        Ok(LearnedOutput {
            dir,
            name: name.to_os_string(),
            path: out.to_path_buf(),
        })
    }

    /// Writes `text` to a new file of that name in that directory, never
    /// through a link.
    fn write(&self, text: &str) -> std::io::Result<()> {
        use nix::fcntl::OFlag;
        let fd = nix::fcntl::openat(
            Some(std::os::fd::AsRawFd::as_raw_fd(&self.dir)),
            self.name.as_os_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::from_bits_truncate(0o666),
        )?;
        let mut file = std::fs::File::from(crate::sys::own_fd(fd));
        std::io::Write::write_all(&mut file, text.as_bytes())
    }
}

/// A failure with its own exit code (usage errors are 2, as clap's).
fn failed<E: std::fmt::Display>(code: i32) -> impl Fn(E) -> Failure {
    move |e| Failure {
        message: e.to_string(),
        code,
    }
}

/// `cordon presets [NAME] [--json]`.
fn presets_command(args: PresetsArgs, agents: bool) -> Result<i32, Failure> {
    let env = EnvFacts::from_process()?;
    let ctx = PathContext {
        home: &env.home,
        base: None,
    };
    let mut all = presets::all(&ctx)?;
    if agents {
        all.retain(|p| !p.about.commands.is_empty());
    }
    let Some(name) = args.name else {
        if args.json {
            let list: Vec<_> = all.iter().map(|p| presets::render_json(p, false)).collect();
            println!("{}", json_printable(&serde_json::to_string_pretty(&list)?));
        } else {
            let footer = if agents {
                presets::AGENTS_FOOTER
            } else {
                presets::PRESETS_FOOTER
            };
            print!("{}", printable_lines(&presets::render_text(&all, footer)));
        }
        return Ok(0);
    };
    if agents && !all.iter().any(|p| p.shipped.name == name) {
        let names: Vec<&str> = all.iter().map(|p| p.shipped.name).collect();
        return Err(failed(2)(format!(
            "no agent profile {name:?}; the profiles are {}",
            names.join(", ")
        )));
    }
    let shipped = presets::find(&name).map_err(failed(2))?;
    let preset = all
        .iter()
        .find(|p| std::ptr::eq(p.shipped, shipped))
        .ok_or_else(|| failed(2)(format!("preset {name:?} did not load")))?;
    if args.json {
        let one = presets::render_json(preset, true);
        println!("{}", json_printable(&serde_json::to_string_pretty(&one)?));
    } else {
        print!("{}", printable_lines(shipped.text));
    }
    Ok(0)
}

/// `cordon import FORMAT [FILE]... [--project DIR]`.
fn import_command(args: ImportArgs) -> Result<i32, Failure> {
    use crate::policy::import::{claude, srt};
    let env = EnvFacts::from_process()?;
    let cwd = std::env::current_dir().map_err(failed(2))?;
    let project = match args.project {
        Some(p) => cwd.join(p),
        None => cwd.clone(),
    };
    let project = project
        .canonicalize()
        .map_err(|e| failed(2)(format!("--project {}: {e}", printable(&project))))?;
    let files: Vec<PathBuf> = args.files.iter().map(|f| cwd.join(f)).collect();
    let (imported, command) = match args.format {
        ImportFormat::Claude => {
            let files = if files.is_empty() {
                claude::default_files(&env.home, &project)
            } else {
                files
            };
            if files.is_empty() {
                return Err(failed(2)(format!(
                    "no Claude Code settings file for {}: none of ~/.claude/settings.json, .claude/settings.json, .claude/settings.local.json exists; name one",
                    printable(&project)
                )));
            }
            let imported = claude::import(&files, &env.home, &project).map_err(failed(2))?;
            (imported, "cordon import claude")
        }
        ImportFormat::Srt => {
            let file = match files.as_slice() {
                [] => srt::default_file(&env.home),
                [one] => one.clone(),
                _ => return Err(failed(2)("cordon import srt reads one file")),
            };
            let imported = srt::import(&file, &env.home, &project).map_err(failed(2))?;
            (imported, "cordon import srt")
        }
    };
    for note in imported.not_applied() {
        crate::say!("cordon: not imported: {}", printable(note));
    }
    // Already safe to show: comments escaped, values TOML-quoted (and
    // paths with a control or reordering character refused); escaping
    // again would change the values.
    print!("{}", imported.to_toml(command));
    Ok(0)
}

/// `cordon mcp wrap|unwrap|run`.
fn mcp_command(args: McpArgs) -> Result<i32, Failure> {
    let (file, rewritten, verb) = match args.command {
        McpCommand::Run(args) => {
            let filters = sandbox::seccomp::Compiling::start();
            let (policy, cwd) = load_policy_for(&args.run.policy, Some(&args.server))?;
            return Ok(sandbox::run(args.run.request(&policy, cwd, filters))?);
        }
        McpCommand::Wrap(args) => {
            let cordon = match args.cordon {
                Some(c) => c,
                None => std::env::current_exe()?
                    .canonicalize()?
                    .to_str()
                    .ok_or_else(|| {
                        failed(2)("this cordon's path is not UTF-8; name one with --cordon")
                    })?
                    .to_string(),
            };
            let (real, text) = crate::mcp::read(&args.file.file).map_err(failed(2))?;
            let options = crate::mcp::WrapOptions {
                cordon: &cordon,
                only: &args.file.server,
            };
            let rewritten = crate::mcp::wrap(&real, &text, &options).map_err(failed(2))?;
            (args.file, (real, text, rewritten), "wrapped")
        }
        McpCommand::Unwrap(args) => {
            let (real, text) = crate::mcp::read(&args.file).map_err(failed(2))?;
            let rewritten = crate::mcp::unwrap(&real, &text, &args.server).map_err(failed(2))?;
            (args, (real, text, rewritten), "unwrapped")
        }
    };
    let (real, was, rewritten) = rewritten;
    for name in &file.server {
        if !rewritten.servers.iter().any(|d| &d.name == name) {
            return Err(failed(2)(format!(
                "{}: no server {name:?}",
                printable(&file.file)
            )));
        }
    }
    for done in &rewritten.servers {
        use crate::mcp::Outcome;
        let what = match &done.outcome {
            Outcome::Wrapped(notes) if notes.is_empty() => verb.to_string(),
            Outcome::Wrapped(notes) => format!("{verb}; {}", notes.join("; ")),
            Outcome::Unwrapped => verb.to_string(),
            Outcome::AsItWas if verb == "wrapped" => {
                "wrapped already (unwrap it first to wrap it anew)".into()
            }
            Outcome::AsItWas => "not wrapped".into(),
            Outcome::Remote => "remote (http or sse): left as it is".into(),
            Outcome::WrappedOtherwise(odd) => format!(
                "WARNING: looks wrapped, but not as cordon mcp wrap writes it: {}; check it, or unwrap it and wrap it again",
                odd.join("; ")
            ),
            Outcome::Unwrappable(why) => format!("WARNING: not wrapped: {why}"),
            Outcome::Unknown(why) => format!("left as it is: {why}"),
            Outcome::NotAsked => continue,
        };
        crate::say!("cordon mcp: {}: {}", printable(&done.at), printable(what));
    }
    if rewritten.servers.is_empty() {
        crate::say!(
            "cordon mcp: {}: no MCP server entries (mcpServers, servers, mcp_servers) found",
            printable(&file.file)
        );
    }
    if file.dry_run {
        print!("{}", rewritten.text);
    } else if rewritten.changed() {
        crate::mcp::replace(&real, &was, &rewritten.text).map_err(failed(1))?;
    }
    Ok(if rewritten.left_outside() { 1 } else { 0 })
}

/// Runs the parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32, Failure> {
    match cli.command {
        Command::Run(mut args) => {
            // They do not depend on the policy: they compile while it loads.
            let filters = sandbox::seccomp::Compiling::start();
            let ask = args.ask_setup()?;
            let args_run = &mut args.run;
            args_run.policy.pick_agent(&args_run.command)?;
            let (policy, cwd) = load_policy(&args_run.policy)?;
            say_missing_keys(&policy);
            Ok(sandbox::run(sandbox::RunRequest {
                ask,
                ..args.run.request(&policy, cwd, filters)
            })?)
        }
        Command::Learn(args) => learn_command(args),
        Command::Mcp(args) => mcp_command(args),
        Command::Explain(args) => {
            let (policy, _) = load_policy(&args.policy)?;
            if args.json {
                println!(
                    "{}",
                    json_printable(&serde_json::to_string_pretty(&explain::render_json(
                        &policy
                    ))?)
                );
            } else {
                print!("{}", printable_lines(&explain::render_text(&policy)));
            }
            Ok(0)
        }
        Command::Doctor(args) => {
            let report = doctor::examine();
            if !args.probe {
                if args.json {
                    println!(
                        "{}",
                        json_printable(&serde_json::to_string_pretty(&report)?)
                    );
                } else {
                    print!("{}", printable_lines(&doctor::render_text(&report)));
                }
                return Ok(if report.run_would_work { 0 } else { 1 });
            }
            let doctor_code = if report.run_would_work { 0 } else { 1 };
            // The probe needs a sandbox; where doctor says none can be
            // built, the probe's own refusal says why.
            let (policy, cwd) = load_policy(&PolicyArgs::default())?;
            let probed = probe::run(&policy, cwd);
            if args.json {
                let probe_json = match &probed {
                    Ok(r) => serde_json::to_value(r)?,
                    Err(e) => serde_json::json!({ "error": e.to_string() }),
                };
                let both = serde_json::json!({ "doctor": report, "probe": probe_json });
                println!("{}", json_printable(&serde_json::to_string_pretty(&both)?));
            } else {
                print!("{}", printable_lines(&doctor::render_text(&report)));
                println!();
                if let Ok(r) = &probed {
                    print!("{}", printable_lines(&probe::render_text(r)));
                }
            }
            match probed {
                Ok(r) => Ok(doctor_code.max(r.exit_code())),
                Err(e) => Err(e.into()),
            }
        }
        Command::Probe(args) => {
            let (policy, cwd) = load_policy(&args.policy)?;
            let report = probe::run(&policy, cwd)?;
            if args.json {
                println!(
                    "{}",
                    json_printable(&serde_json::to_string_pretty(&report)?)
                );
            } else {
                print!("{}", printable_lines(&probe::render_text(&report)));
            }
            Ok(report.exit_code())
        }
        Command::ProbeInside { spec } => Ok(probe::inside::run(&spec)),
        Command::ProbeCanary { tag: _ } => Ok(probe::host::canary_main()),
        Command::Log(args) => log_command(args),
        Command::Presets(args) => presets_command(args, false),
        Command::Agents(args) => presets_command(args, true),
        Command::Import(args) => import_command(args),
        Command::Completions(args) => {
            manual::completions(args.shell, &mut std::io::stdout().lock())?;
            Ok(0)
        }
        Command::Man(ManArgs { dir: None }) => {
            manual::man_page(&mut std::io::stdout().lock())?;
            Ok(0)
        }
        Command::Man(ManArgs { dir: Some(dir) }) => {
            for page in manual::man_pages(&dir)? {
                println!("{}", printable(page.display().to_string()));
            }
            Ok(0)
        }
        Command::Trust(args) => {
            let env = EnvFacts::from_process()?;
            let dir = load::user_config_dir(&env);
            let file = args
                .file
                .unwrap_or_else(|| PathBuf::from(crate::policy::defaults::PROJECT_POLICY_FILE));
            if args.remove {
                let removed = trust::untrust(&dir, &file)?;
                println!(
                    "{}",
                    if removed {
                        "approval withdrawn"
                    } else {
                        "was not approved"
                    }
                );
            } else {
                let hash = trust::trust(&dir, &file)?;
                println!(
                    "trusted {} (sha256 {hash}); editing it withdraws the approval",
                    printable(&file)
                );
            }
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Flags of the commands that take [`PolicyArgs`] that are not policy keys.
    const OTHER_FLAGS: &[&str] = &[
        PROJECT,
        POLICY,
        IMPORT_FLAGS[0].0,
        IMPORT_FLAGS[1].0,
        "quiet",
        "json",
        "help",
        "ask",
        "ask-timeout",
    ];

    #[test]
    fn every_declared_flag_is_on_the_command_line_and_nothing_else() {
        let cli = Cli::command();
        for name in ["run", "explain", "probe"] {
            let cmd = cli.find_subcommand(name).unwrap();
            for key in keys::KEYS {
                let Some(flag) = &key.about().flag else {
                    continue;
                };
                let arg = cmd
                    .get_arguments()
                    .find(|a| a.get_long() == Some(flag.name))
                    .unwrap_or_else(|| panic!("{name}: no --{}", flag.name));
                assert_eq!(
                    arg.get_help().map(ToString::to_string).as_deref(),
                    Some(flag.help)
                );
                if flag.takes != Takes::Switch {
                    let names: Vec<&str> = arg
                        .get_value_names()
                        .into_iter()
                        .flatten()
                        .map(|n| n.as_str())
                        .collect();
                    assert_eq!(names, vec![flag.value_name], "--{}", flag.name);
                }
            }
            for long in cmd.get_arguments().filter_map(|a| a.get_long()) {
                assert!(
                    OTHER_FLAGS.contains(&long) || keys::by_flag(long).is_some(),
                    "{name}: --{long} is not a declared key's flag"
                );
            }
        }
    }

    #[test]
    fn flags_reach_the_policy_through_their_declaration() {
        let cli = Cli::try_parse_from([
            "cordon",
            "explain",
            "--allow-write",
            "a",
            "--ports",
            "80,443",
            "--clear-env",
            "--allow-write",
            "b",
            "--max-procs",
            "5",
            "--project",
            "/p",
        ])
        .unwrap();
        let Command::Explain(args) = cli.command else {
            panic!("not explain");
        };
        let given: Vec<(String, Vec<String>)> = args
            .policy
            .flags
            .iter()
            .map(|f| (f.key.about().dotted(), f.values.clone()))
            .collect();
        let owned =
            |k: &str, v: &[&str]| (k.to_string(), v.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            given,
            vec![
                owned("files.allow_write", &["a", "b"]),
                owned("limits.max_procs", &["5"]),
                owned("credentials.clear_env", &[]),
                owned("network.ports", &["80", "443"]),
            ]
        );
        assert_eq!(args.policy.project, Some(PathBuf::from("/p")));
        // clap still checks the declared value types.
        for bad in [["--max-procs", "many"], ["--ports", "70000"]] {
            assert!(Cli::try_parse_from(["cordon", "explain", bad[0], bad[1]]).is_err());
        }
    }
}
