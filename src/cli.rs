//! The command line: argument definitions and what each command does.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::policy::load::{self, EnvFacts, FlagOverrides, LoadRequest};
use crate::policy::{trust, Policy};
use crate::{doctor, explain, sandbox};

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
    Run(RunArgs),
    /// Print the effective policy, door by door, with the source of each line.
    Explain(ExplainArgs),
    /// Show what this kernel can enforce; exits non-zero if `cordon run` would refuse.
    Doctor(DoctorArgs),
    /// Approve a project's cordon.toml so it may widen the sandbox (records its sha256).
    Trust(TrustArgs),
}

/// Options that shape the policy (shared by `run` and `explain`).
#[derive(Debug, Args, Clone, Default)]
pub struct PolicyArgs {
    /// Project directory, writable inside [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Also make PATH writable (repeatable).
    #[arg(long, value_name = "PATH")]
    pub allow_write: Vec<String>,
    /// Re-allow reading PATH although a deny rule (e.g. the credential list) covers it (repeatable).
    #[arg(long, value_name = "PATH")]
    pub allow_read: Vec<String>,
    /// Make PATH unreadable (repeatable; globs allowed).
    #[arg(long, value_name = "PATH")]
    pub deny_read: Vec<String>,
    /// Keep PATH read-only even inside a writable area (repeatable; globs allowed).
    #[arg(long, value_name = "PATH")]
    pub deny_write: Vec<String>,
    /// Most tasks (processes + threads) alive at once [default: 4096].
    #[arg(long, value_name = "N")]
    pub max_procs: Option<u64>,
    /// Size of the private /tmp, e.g. 512M [default: 1G].
    #[arg(long, value_name = "SIZE")]
    pub max_tmp: Option<String>,
    /// Memory cap for the whole sandbox, e.g. 8G [default: none].
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// Kill the sandbox after DURATION, e.g. 30m, 2h, 90s (exit code 124).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// TCP port programs inside may bind and connect to on the sandbox's own lo (repeatable).
    #[arg(long, value_name = "PORT")]
    pub allow_local_port: Vec<u16>,
    /// Let programs inside connect to the host UNIX socket at PATH (repeatable).
    /// Docker's, containerd's and podman's sockets give root on the host.
    #[arg(long, value_name = "PATH")]
    pub allow_unix_socket: Vec<String>,
    /// Let the proxy connect to PATTERN (repeatable): api.github.com, *.example.com
    /// (subdomains only), example.com:8443, an IP or CIDR (10.1.0.0/16:5432),
    /// host.cordon.internal:PORT (the host's own 127.0.0.1:PORT).
    #[arg(long, value_name = "PATTERN")]
    pub allow_domain: Vec<String>,
    /// Refuse PATTERN even if an allow rule covers it (repeatable; same forms as --allow-domain).
    #[arg(long, value_name = "PATTERN")]
    pub deny_domain: Vec<String>,
    /// Ports that --allow-domain rules without :PORT allow [default: 80,443].
    #[arg(long, value_name = "PORT", value_delimiter = ',')]
    pub ports: Option<Vec<u16>>,
    /// Proxy connections served at once; more are refused (HTTP 503, SOCKS5 reply 1)
    /// and the first refusal is reported [default: 4096].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<u64>,
    /// Append one JSON line per decision (allowed and blocked connections, with the rule
    /// that decided) to FILE, hash-chained; `--audit none` turns the log off
    /// [default: $XDG_STATE_HOME/cordon/audit.jsonl, else ~/.local/state/cordon/audit.jsonl].
    /// If the log cannot be opened, nothing runs.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<String>,
    /// Run even if LAYER cannot be applied (namespaces, landlock, seccomp, limits); warns every time.
    #[arg(long, value_name = "LAYER", value_delimiter = ',')]
    pub allow_degraded: Vec<String>,
    /// Terminate TLS to HOST in the proxy (repeatable; `*` = every allowed host), with a
    /// CA made for this sandbox and trusted inside: enables [[network.rules]] and
    /// [[credentials.inject]] there. Hosts named by those are inspected anyway.
    #[arg(long, value_name = "HOST")]
    pub inspect: Vec<String>,
    /// Keep HOST an opaque tunnel even if --inspect covers it (pinned clients, mTLS; repeatable).
    #[arg(long, value_name = "HOST")]
    pub no_inspect: Vec<String>,
    /// Also trust the CA certificates in FILE (PEM) for inspected upstreams (repeatable).
    #[arg(long, value_name = "FILE")]
    pub upstream_ca: Vec<String>,
    /// Load a policy file (trusted; repeatable, later files win).
    #[arg(long, value_name = "FILE")]
    pub policy: Vec<PathBuf>,
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

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
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
    let cwd = std::env::current_dir()?;
    let flags = FlagOverrides {
        allow_write: args.allow_write.clone(),
        allow_read: args.allow_read.clone(),
        deny_read: args.deny_read.clone(),
        deny_write: args.deny_write.clone(),
        max_procs: args.max_procs,
        max_tmp: args.max_tmp.clone(),
        max_memory: args.max_memory.clone(),
        timeout: args.timeout.clone(),
        allow_degraded: args.allow_degraded.clone(),
        local_ports: args.allow_local_port.clone(),
        unix_sockets: args.allow_unix_socket.clone(),
        allow_domain: args.allow_domain.clone(),
        deny_domain: args.deny_domain.clone(),
        ports: args.ports.clone(),
        max_connections: args.max_connections,
        audit: args.audit.clone(),
        inspect: args.inspect.clone(),
        no_inspect: args.no_inspect.clone(),
        upstream_ca: args.upstream_ca.clone(),
    };
    let req = LoadRequest {
        cwd: cwd.clone(),
        project: args.project.clone(),
        policy_files: args.policy.clone(),
        flags,
        env: EnvFacts::from_process()?,
    };
    Ok((load::load(&req)?, cwd))
}

/// Runs the parsed command line; returns the process exit code.
pub fn dispatch(cli: Cli) -> Result<i32, Failure> {
    match cli.command {
        Command::Run(args) => {
            let (policy, cwd) = load_policy(&args.policy)?;
            let req = sandbox::RunRequest {
                policy: &policy,
                command: args.command,
                cwd,
                quiet: args.quiet,
            };
            Ok(sandbox::run(req)?)
        }
        Command::Explain(args) => {
            let (policy, _) = load_policy(&args.policy)?;
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&explain::render_json(&policy))?
                );
            } else {
                print!("{}", explain::render_text(&policy));
            }
            Ok(0)
        }
        Command::Doctor(args) => {
            let report = doctor::examine();
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", doctor::render_text(&report));
            }
            Ok(if report.run_would_work { 0 } else { 1 })
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
                    file.display()
                );
            }
            Ok(0)
        }
    }
}
