//! The command line: argument definitions and what each command does.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::escape::{json_printable, printable, printable_lines};
use crate::policy::load::{self, EnvFacts, FlagOverrides, LoadRequest};
use crate::policy::{trust, Policy};
use crate::{doctor, explain, probe, sandbox};

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
    /// Show the audit log (every decision of every door), filtered; or check every line's MAC.
    Log(LogArgs),
    /// Prove the boundary from inside: build the sandbox `run` would build with the same
    /// options, attack it with a battery of probes (files, network, credentials, process),
    /// print a table; exits 1 if any door is open.
    Probe(ProbeArgs),
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
    /// Also unset NAME (or a glob, e.g. 'CORP_*') in the command's environment (repeatable).
    /// Secret-looking names (*_TOKEN, *SECRET*, *_API_KEY, *PASSWORD*, AWS keys, ...) are
    /// unset already; `cordon explain` lists them.
    #[arg(long, value_name = "NAME")]
    pub deny_env: Vec<String>,
    /// Keep NAME (or a glob) although a secret pattern, or --clear-env, would unset it (repeatable).
    #[arg(long, value_name = "NAME")]
    pub keep_env: Vec<String>,
    /// Start the command from an empty environment, plus --keep-env names and cordon's own
    /// (TMPDIR, the proxy variables).
    #[arg(long)]
    pub clear_env: bool,
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
    /// that decided) to FILE, each line authenticated with your audit key; `--audit none` turns the log off
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
        deny_env: args.deny_env.clone(),
        keep_env: args.keep_env.clone(),
        clear_env: args.clear_env,
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
            eprintln!(
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

/// A failure with its own exit code (usage errors are 2, as clap's).
fn failed<E: std::fmt::Display>(code: i32) -> impl Fn(E) -> Failure {
    move |e| Failure {
        message: e.to_string(),
        code,
    }
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
