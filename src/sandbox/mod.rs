//! The sandbox runtime: the supervisor on the host side and init inside.
//!
//! ```text
//! cordon run -- CMD            supervisor: plans, clones, relays, waits
//!  └─ init                     pid 1 of new user+mount+pid+net+ipc+uts namespaces
//!      └─ CMD                  exit status and signals pass through
//! ```
//!
//! The supervisor's hold on init (start, wait, the one kill path) is
//! `supervisor`. The files door is [`files`] (mount view, with the
//! tools' caches of [`caches`]) and [`landlock`]; process hardening is [`init`] and [`seccomp`], its kernel
//! calls and their order [`kernel`]; limits are [`limits`].

mod ask_keys;
pub mod ask_prompt;
pub mod caches;
pub mod channel;
pub mod config_gate;
pub mod create_gate;
pub mod files;
pub mod gitconfig;
pub mod init;
pub mod kernel;
pub mod landlock;
pub mod limits;
mod ports;
pub mod repos;
pub mod seccomp;
pub mod state_gate;
mod supervisor;
pub mod support;
pub mod tty;
mod umask;
pub mod unix_gate;
pub mod weaken;

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::audit::{self, AuditFile, AuditKey, AuditLog, Auditor};
use crate::credentials::env::{EnvFilter, Removal};
use crate::escape::printable;
#[cfg(debug_assertions)]
use crate::net::gate::OpenGate;
use crate::net::inside;
use crate::policy::{EnvPolicy, Layer, PathPattern, Policy, Source, Sourced};
use crate::sandbox::unix_gate::{root_equivalent, socket_id, SocketId};
use files::{FileView, FilesError};
use limits::{LimitPlan, LimitsError};

/// Signals the supervisor passes on to the command.
pub const FORWARDED_SIGNALS: &[Signal] = &[
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGWINCH,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

/// Exit code when cordon itself could not run the command.
pub const EXIT_SETUP_FAILED: i32 = 125;
/// Exit code when `--timeout` ended the sandbox (as `timeout(1)`).
pub const EXIT_TIMEOUT: i32 = 124;

/// Why the sandbox did not run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("refusing to run: the {layer} layer could not be applied: {what}\n  fix: {fix}")]
    Layer {
        layer: Layer,
        what: String,
        fix: String,
    },
    #[error("refusing to run: files door: {0}")]
    Files(#[from] FilesError),
    #[error("refusing to run: the limits layer could not be applied: {0}\n  fix: run as a user who may create cgroups, or pass --allow-degraded=limits")]
    Limits(#[from] LimitsError),
    #[error("refusing to run: network door: {path} ({from}): {source}")]
    UnixSocket {
        path: PathBuf,
        from: String,
        source: io::Error,
    },
    #[error("refusing to run: network door: --publish {publish} ({from}): cannot listen on the host's 127.0.0.1:{}: {source}\n  fix: publish on a free host port, e.g. --publish {}:PORT", .publish.host, .publish.inside)]
    Publish {
        publish: crate::policy::ports::Publish,
        from: String,
        source: io::Error,
    },
    #[error("refusing to run: network door: {0}")]
    Ports(String),
    #[error("no command given: cordon run [OPTIONS] -- CMD [ARGS...]")]
    NoCommand,
    #[error("{0} contains a NUL byte")]
    Nul(&'static str),
    #[error("refusing to run: credentials.set_env ({from}) sets {name}, which cordon sets itself for the sandbox (its temporary directory, proxy, CA bundle or an injected secret's placeholder)\n  fix: leave {name} out of set_env")]
    SetsOwnVariable { name: String, from: String },
    #[error("refusing to run: {0}\n  fix: check that path (its directory must exist and be writable), name another file with --audit FILE, or turn the log off with --audit none")]
    Audit(crate::audit::AuditError),
    #[error("refusing to run: {0}\n  (or turn the log off with --audit none; inside a cordon sandbox the key is out of reach by design, so a cordon run there can keep no log)")]
    AuditKey(crate::audit::AuditError),
    #[error("refusing to run: {rule} ({from}) would let the sandbox read cordon's audit state {}, which holds the key that authenticates the log\n  fix: allow reading something narrower", printable(state))]
    AuditStateReadable {
        rule: String,
        from: String,
        state: PathBuf,
    },
    #[error("refusing to run: credentials door: {0}")]
    Credentials(#[from] crate::credentials::CredentialsError),
    /// The proxy's upstream trust for TLS inspection could not be set up.
    #[error("refusing to run: credentials door: {0}")]
    Inspect(#[from] crate::net::proxy::inspect::InspectError),
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> SandboxError {
    move |source| SandboxError::Io { what, source }
}

/// What to run, and how.
pub struct RunRequest<'a> {
    pub policy: &'a Policy,
    pub command: Vec<OsString>,
    /// The caller's working directory; the command starts there if the
    /// sandbox can see it, else in the project.
    pub cwd: PathBuf,
    /// No summary line at exit.
    pub quiet: bool,
    /// The seccomp filters, compiling since before the policy loaded.
    pub filters: seccomp::Compiling,
    /// `cordon learn`: the proxy lets through what no rule names, and
    /// writes down every destination here.
    pub learn: Option<std::sync::Arc<crate::net::learn::Learned>>,
    /// `cordon run --ask`: the proxy holds what no rule names and asks
    /// the user on this terminal.
    pub ask: Option<ask_prompt::AskSetup>,
}

/// Removes the run's cgroup, on every exit path.
struct CgroupCleanup<'a>(&'a LimitPlan);

impl Drop for CgroupCleanup<'_> {
    fn drop(&mut self) {
        self.0.remove();
    }
}

fn warn_degraded(layer: Layer, what: &str) {
    crate::say!(
        "cordon: WARNING: running WITHOUT the {layer} layer (--allow-degraded={layer}): {}{}",
        printable(what),
        what_is_lost(layer)
    );
}

/// What running without `layer` gives up, beyond the layer itself, where
/// a user would not guess it.
fn what_is_lost(layer: Layer) -> &'static str {
    match layer {
        Layer::Namespaces => "; without the mount view nothing keeps the files that run code later (.git/hooks, .git/config, .envrc, dotfiles, agents' settings) read-only inside the writable areas, and Landlock alone cannot stop chmod, chown, utimes or extended attribute changes",
        Layer::Landlock | Layer::Seccomp | Layer::Limits => "",
    }
}

/// The host ports the sandbox's loopback forwards to, each with a warning
/// when it is a container engine's API (root on the host), as for its
/// socket.
fn host_ports(policy: &Policy) -> Vec<u16> {
    let ports = &policy.network.host_ports;
    for port in ports {
        if let Some(why) = crate::policy::ports::root_equivalent_port(port.value) {
            crate::say!(
                "cordon: WARNING: the host's 127.0.0.1:{} ({}) is reachable inside: {why}",
                port.value,
                printable(port.source.to_string())
            );
        }
    }
    ports.iter().map(|p| p.value).collect()
}

/// The host sockets `--allow-unix-socket` names, as the gate checks them.
/// A named path that is missing or not a socket stops the run: the user
/// asked for something that cannot be given.
fn allowed_unix_sockets(policy: &Policy) -> Result<Vec<SocketId>, SandboxError> {
    let mut ids = Vec::new();
    for rule in &policy.network.unix_sockets {
        let found = rule.value.expand();
        let missing = || SandboxError::UnixSocket {
            path: rule.value.to_string().into(),
            from: rule.source.to_string(),
            source: io::Error::from(io::ErrorKind::NotFound),
        };
        if found.is_empty() {
            return Err(missing());
        }
        for path in found {
            let id = socket_id(&path).map_err(|source| SandboxError::UnixSocket {
                path: path.clone(),
                from: rule.source.to_string(),
                source,
            })?;
            if let Some(why) = root_equivalent(&path) {
                crate::say!(
                    "cordon: WARNING: {} ({}) is reachable inside: {why}",
                    printable(&path),
                    printable(rule.source.to_string())
                );
            }
            ids.push(id);
        }
    }
    Ok(ids)
}

/// What the supervisor works out on the host before the clone besides the
/// file view: the credentials door's plan (placeholders, the trust
/// bundle's file), the command's environment and the host UNIX sockets it
/// may reach.
struct HostSide {
    credentials: Option<crate::credentials::Plan>,
    env: CommandEnv,
    unix_sockets: Vec<SocketId>,
}

impl HostSide {
    fn prepare(policy: &Policy, run_name: &str) -> Result<HostSide, SandboxError> {
        // cordon: credentials door. Placeholders and the trust bundle's
        // file now (the environment and the file view need them); the CA
        // and the real values only after init is forked (see `run`).
        let credentials = crate::credentials::plan(&policy.inspection, run_name)?;
        let env = command_env(&policy.env, credentials.as_ref())?;
        let unix_sockets = allowed_unix_sockets(policy)?;
        Ok(HostSide {
            credentials,
            env,
            unix_sockets,
        })
    }
}

/// Plans the file view while another thread makes the cgroup and the rest
/// of the host side: the kernel takes a while over each cgroup it makes,
/// and the plan needs none of it. The thread is joined before this
/// returns, so none is alive across the clone that follows; where no
/// thread can be started, one after the other. Refusals are reported in
/// the order they were when each step ran after the other: the host
/// side's, the view's, then the cgroup's (by the caller). Not with
/// `--max-memory`: without a cgroup that is an address-space rlimit on
/// init, which inherits the address space the thread's allocator reserved
/// (tens of MiB) and would run out of it.
fn plan_view_and_limits(
    policy: &Policy,
    sandbox_id: &str,
    run_name: &str,
) -> Result<(HostSide, FileView, Result<LimitPlan, LimitsError>), SandboxError> {
    /// Ample for making a cgroup and the host side; kept small, as the
    /// stack stays mapped.
    const HOST_SIDE_THREAD_STACK: usize = 256 * 1024;
    let others = || {
        (
            HostSide::prepare(policy, run_name),
            LimitPlan::prepare(&policy.limits, sandbox_id),
        )
    };
    let (view, (host, limits)) = if policy.limits.max_memory.is_some() {
        let (host, limits) = others();
        (FileView::plan(policy), (host, limits))
    } else {
        std::thread::scope(|scope| {
            let others_thread = std::thread::Builder::new()
                .stack_size(HOST_SIDE_THREAD_STACK)
                .spawn_scoped(scope, others);
            let view = FileView::plan(policy);
            let others = match others_thread {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(_) => others(),
            };
            (view, others)
        })
    };
    let refused = match (host, view) {
        (Ok(host), Ok(view)) => return Ok((host, view, limits)),
        (Err(e), _) => e,
        (Ok(_), Err(e)) => e.into(),
    };
    // The cgroup made meanwhile goes.
    if let Ok(limits) = &limits {
        limits.remove();
    }
    Err(refused)
}

/// Runs the command in the sandbox and returns its exit code (128+N if it
/// died of signal N).
pub fn run(req: RunRequest<'_>) -> Result<i32, SandboxError> {
    if req.command.is_empty() {
        return Err(SandboxError::NoCommand);
    }
    // The audit log is opened, and its key made or checked, before
    // anything runs: a log that cannot be written is a refusal, not a
    // silent loss (reported after the layers' own failures, which say
    // more). The key is read for use only once the sandbox is forked (the
    // check here wipes what it read), so init holds no copy of it.
    let policy = req.policy;
    let audit_log = policy.audit.log.value.as_ref().map(|path| {
        AuditFile::open(path, policy.audit.log.source == Source::Builtin)
            .map_err(SandboxError::Audit)
            .and_then(|log| {
                AuditKey::ensure(&policy.audit.key)
                    .map(|()| log)
                    .map_err(SandboxError::AuditKey)
            })
    });
    let with_audit = audit_view(policy)?;
    let policy = &with_audit;
    let argv = req
        .command
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| SandboxError::Nul("the command"))?;
    let sandbox_id = new_sandbox_id();
    let run_name = format!("cordon-{}-{sandbox_id}", std::process::id());
    // Anything changed after this instant was the sandbox's doing.
    let started_at = std::time::SystemTime::now();
    let (host, mut view, limits) = plan_view_and_limits(policy, &sandbox_id, &run_name)?;
    let HostSide {
        credentials,
        env: (mut env, path_var, withheld),
        unix_sockets,
    } = host;
    for warning in &view.caches.warnings {
        crate::say!("cordon: WARNING: {warning}");
    }
    point_at_caches(&mut env, &view.caches)?;
    view.trust_bundle = credentials.as_ref().map(|c| c.bind());
    let limits = match limits {
        Ok(plan) => plan,
        Err(e) if policy.degraded_ok(Layer::Limits) => {
            warn_degraded(Layer::Limits, &e.to_string());
            LimitPlan::rlimits_only(&policy.limits)
        }
        Err(e) => return Err(namespaces_first(policy, e.into())),
    };
    let cgroup = CgroupCleanup(&limits);
    let audit_log = match audit_log {
        Some(Ok(log)) => Some(log),
        Some(Err(e)) => return Err(namespaces_first(policy, e)),
        None => None,
    };
    if let Some(log) = &audit_log {
        if log.ends_unkeyed().unwrap_or(false) {
            crate::say!(
                "cordon: WARNING: the audit log {} ends with a line without a MAC (written by an older cordon's unkeyed chain, or not by cordon); `cordon log --verify` will report it: move the file aside to start a log that verifies",
                printable(log.path())
            );
        }
    }

    // Any of stdin, stdout and stderr on a terminal: the command gets a
    // pty in their place, never the caller's terminal itself.
    let caller_tty = tty::CallerTerminal::probe();
    let filters = req.filters.finish().map_err(|e| e.to_string());
    ports::check(&policy.network)?;
    // The host's side of the published ports, before anything is made.
    let published = ports::bind_published(&policy.network)?;
    let mut plan = init::InitPlan {
        view: &view,
        limits: &limits,
        cwd: &req.cwd,
        argv,
        env,
        path_var,
        local_ports: ports::local_ports(&policy.network),
        host_ports: host_ports(policy),
        publish: !policy.network.publish.is_empty(),
        pty: caller_tty.needs_pty(),
        namespaces: true,
        degraded: policy.allow_degraded.iter().map(|l| l.value).collect(),
        unix_sockets,
        filters: &filters,
    };
    // From here on, every early return drops the sandbox, which kills and
    // reaps init (see `supervisor`).
    let sandbox = supervisor::spawn(&mut plan, policy)?;
    if !plan.namespaces && (!plan.host_ports.is_empty() || plan.publish) {
        return Err(SandboxError::Ports(
            "--host-port and --publish need the sandbox's own network namespace, which could not be made".into(),
        ));
    }
    // Without its own loopback the ports would be the host's, at every
    // address: Landlock's TCP rules name ports, not addresses.
    if !plan.namespaces && plan.local_ports.is_some() {
        return Err(SandboxError::Ports(
            "--local-ports (or [network] local_ports) names ports on the sandbox's own loopback, which needs its own network namespace, which could not be made: the ports would be the host's, connectable at any address and bound on every interface; leave it out (no TCP port is open then)".into(),
        ));
    }
    if !view.caches.mounts.is_empty() && !files::mount_view_on(plan.namespaces) {
        crate::say!("cordon: WARNING: without the mount view (namespaces layer) no cache is mounted: each stays the host's directory, read-only, and a missing one is not there");
    }
    // cordon: credentials door. Before init builds its view (it waits for
    // Go): the bundle must be written by then.
    let inspector = credentials
        .as_ref()
        .map(|c| start_inspector(c, &run_name, policy.limits.max_memory.as_ref()))
        .transpose()?;
    let handover = sandbox.start(&view, &limits, plan.namespaces)?;
    let deadline = policy
        .limits
        .timeout
        .as_ref()
        .map(|t| (Instant::now() + t.value, t.value));
    // Threads start only now: none may be alive across the clone above.
    let edges = crate::net::serve::Edges {
        host_ports: handover.host_listeners,
        published: match handover.sockets {
            Some(sockets) => ports::published(published, sockets),
            None => Vec::new(),
        },
    };
    let asker = req
        .ask
        .as_ref()
        .map(|_| crate::net::ask::Asker::new())
        .transpose()
        .map_err(io_err("setting up --ask"))?;
    let gate = match (&req.learn, &asker) {
        (Some(learned), _) => GateKind::Learn(learned.clone()),
        (None, Some(asker)) => GateKind::Ask(asker.clone()),
        (None, None) => GateKind::Policy,
    };
    let (auditor, proxy) = start_proxy(
        policy,
        (handover.listeners, edges),
        audit_log,
        &run_name,
        &req.command[0],
        inspector,
        gate,
    )?;
    record_withheld(&auditor, withheld);
    let relay = handover
        .pty_master
        .map(|master| tty::Relay::new(master, caller_tty));
    let recorder = supervisor::Recorder {
        auditor: &auditor,
        learned: req.learn.as_deref(),
        homes: &policy.homes,
    };
    let prompt = req
        .ask
        .zip(asker)
        .map(|(setup, asker)| ask_prompt::Prompt::new(setup, asker));
    let code = sandbox.wait(relay, deadline, recorder, prompt);
    // Every tunnel ends with the sandbox; their close events go to the
    // log before it is closed. The proxy winds down while the cgroup is
    // removed and the writable areas are swept.
    if let Some(proxy) = &proxy {
        proxy.stop();
    }
    drop(cgroup);
    // What the sandbox left that would run code on the host: moved aside
    // and named; what could not be checked fails the run.
    let swept = view.sweep(started_at);
    if let Some(proxy) = proxy {
        proxy.shutdown(PROXY_GRACE);
    }
    let summary = auditor.finish();
    for line in &swept.neutralised {
        crate::say!("cordon: WARNING: {line}");
    }
    for line in &swept.failures {
        crate::say!("cordon: ERROR: after the run: {line}");
    }
    if !req.quiet {
        if let Some(text) = summary.text(auditor.path()) {
            crate::say!("{text}");
        }
    }
    if !swept.failures.is_empty() {
        return Ok(SWEEP_FAILED);
    }
    Ok(code)
}

/// cordon's exit status when a check after the run could not finish: the
/// command ran, but what it left could not be proven harmless.
const SWEEP_FAILED: i32 = 125;

/// Time the proxy has at exit to end its tunnels and record them.
const PROXY_GRACE: Duration = Duration::from_secs(2);

/// `policy` with cordon's audit state out of the sandbox's reach: the
/// user's cordon state directory (the key, the tail records, the default
/// log and earlier runs' logs) unreadable, and the log file, wherever it
/// is, unreadable and read-only. A rule that reads the state directory
/// back in is refused: the key must stay secret for the log to prove
/// anything.
fn audit_view(policy: &Policy) -> Result<Policy, SandboxError> {
    let mut view = policy.clone();
    let state = policy.audit.key.parent().unwrap_or(&policy.audit.key);
    let key = std::fs::canonicalize(&policy.audit.key).unwrap_or_else(|_| policy.audit.key.clone());
    if let Some(rule) = policy
        .files
        .allow_read
        .iter()
        .find(|r| r.value.covers(&key))
    {
        return Err(SandboxError::AuditStateReadable {
            rule: rule.value.to_string(),
            from: rule.source.to_string(),
            state: state.to_path_buf(),
        });
    }
    // The caches' private layers, too: written only through the overlays
    // (no sandbox may plant a layer another project's runs would mount).
    let layers = policy.files.cache_layers.parent();
    let hidden = std::iter::once(state.to_path_buf())
        .chain(policy.audit.log.value.clone())
        .chain(layers.map(PathBuf::from));
    for path in hidden {
        let rule = || Sourced::new(PathPattern::Exact(path.clone()), Source::Builtin);
        view.files.deny_read.push(rule());
        view.files.deny_write.push(rule());
    }
    Ok(view)
}

/// Which gate the proxy asks.
enum GateKind {
    /// The policy's.
    Policy,
    /// `cordon learn`'s.
    Learn(std::sync::Arc<crate::net::learn::Learned>),
    /// `cordon run --ask`'s.
    Ask(std::sync::Arc<crate::net::ask::Asker>),
}

/// Starts the audit writer and, when the sandbox has listeners, the proxy.
fn start_proxy(
    policy: &Policy,
    (listeners, edges): (Vec<OwnedFd>, crate::net::serve::Edges),
    log: Option<AuditFile>,
    run_name: &str,
    argv0: &OsString,
    inspector: Option<std::sync::Arc<crate::net::proxy::inspect::Inspector>>,
    gate: GateKind,
) -> Result<(Auditor, Option<crate::net::serve::ProxyHandle>), SandboxError> {
    let log: Option<AuditLog> = log
        .map(|log| AuditKey::load_or_create(&policy.audit.key).map(|key| log.keyed(key)))
        .transpose()
        .map_err(SandboxError::AuditKey)?;
    let auditor = Auditor::start(log, run_name, &audit::command_name(argv0));
    if listeners.is_empty() {
        return Ok((auditor, None));
    }
    let hosts = policy.network.hosts.clone();
    let limits = crate::net::proxy::ProxyLimits::for_sandbox(
        &policy.network.max_connections,
        policy.limits.max_memory.as_ref(),
    );
    // TEST-ONLY (debug builds): `CORDON_TEST_WEAKEN=proxy` lets every
    // destination through; release builds have no such gate.
    #[cfg(debug_assertions)]
    if weaken::off("proxy") {
        let proxy = crate::net::serve::spawn(
            listeners,
            edges,
            || OpenGate,
            limits,
            auditor.clone(),
            inspector,
        )
        .map_err(io_err("starting the proxy"))?;
        return Ok((auditor, Some(proxy)));
    }
    let audit = auditor.clone();
    let proxy = match gate {
        GateKind::Learn(learned) => {
            let gate = move || crate::net::learn::LearningGate::new(hosts, learned);
            crate::net::serve::spawn(listeners, edges, gate, limits, audit, inspector)
        }
        GateKind::Ask(asker) => {
            let gate = move || crate::net::ask::AskingGate::new(hosts, asker);
            crate::net::serve::spawn(listeners, edges, gate, limits, audit, inspector)
        }
        GateKind::Policy => {
            let gate = move || crate::net::gate::PolicyGate::new(hosts);
            crate::net::serve::spawn(listeners, edges, gate, limits, audit, inspector)
        }
    }
    .map_err(io_err("starting the proxy"))?;
    Ok((auditor, Some(proxy)))
}

/// `e`, or the namespaces' own failure if they cannot be made either and
/// the user did not allow running without them: that is the more
/// fundamental one to report (inside another sandbox, the cgroups and the
/// home directory are out of reach too).
fn namespaces_first(policy: &Policy, e: SandboxError) -> SandboxError {
    match support::try_namespaces() {
        Err(ns) if !policy.degraded_ok(Layer::Namespaces) => namespaces_error(&ns),
        _ => e,
    }
}

/// Records the caller's variables the command goes without (names and
/// rules, never values).
fn record_withheld(auditor: &Auditor, withheld: Vec<Removal>) {
    for removal in withheld {
        let mut event = audit::Event::new(
            audit::Door::Credentials,
            audit::Kind::Withheld,
            audit::Verdict::Deny,
            removal.name,
        );
        event.rule = Some(removal.rule);
        event.source = Some(removal.source.to_string());
        event.reason = Some("unset in the command's environment".into());
        auditor.record(event);
    }
}

fn namespaces_error(why: &str) -> SandboxError {
    SandboxError::Layer {
        layer: Layer::Namespaces,
        what: format!("creating user, mount, pid, net, ipc and uts namespaces: {why}"),
        fix: support::userns_fix(),
    }
}

/// The command's environment, its `PATH`, and the caller's variables it
/// goes without (names and rules, never values).
type CommandEnv = (Vec<CString>, OsString, Vec<Removal>);

/// The command's environment: the caller's without its secrets (see
/// [`EnvFilter`]), with the temp dir pointed at the sandbox's own, and every
/// proxy setting pointed at cordon's proxy (sockets and daemons of the host
/// are unreachable, so their variables go). With TLS inspection on,
/// `credentials` names the variables that carry placeholders and the CA
/// bundle instead.
fn command_env(
    policy: &EnvPolicy,
    credentials: Option<&crate::credentials::Plan>,
) -> Result<CommandEnv, SandboxError> {
    let mut vars: Vec<(OsString, OsString)> = Vec::new();
    let mut path_var = OsString::new();
    let mut java_options = None;
    let (caller, withheld) = EnvFilter::new(policy).apply(std::env::vars_os());
    // TEST-ONLY (debug builds): `CORDON_TEST_WEAKEN=env` keeps the caller's
    // secrets and its agent socket.
    let weak = weaken::off("env");
    let caller = if weak {
        std::env::vars_os().collect()
    } else {
        caller
    };
    for (key, value) in caller {
        if key == inside::JAVA_OPTIONS {
            java_options = value.to_str().map(str::to_string);
        }
        let kept_weak = weak && key == "SSH_AUTH_SOCK";
        if key == "TMPDIR" || (inside::is_replaced(&key) && !kept_weak) {
            continue;
        }
        if key == "PATH" {
            path_var = value.clone();
        }
        vars.push((key, value));
    }
    // The policy's own values, in place of the caller's; never one of the
    // variables set below, which say where the sandbox's parts are.
    let replaced_names: Vec<&str> = credentials
        .into_iter()
        .flat_map(|c| c.placeholders().iter().chain(c.trust_env()))
        .map(|(name, _)| name.as_str())
        .collect();
    for set in &policy.set {
        let (name, value) = &set.value;
        let own = name == "TMPDIR"
            || inside::is_replaced(std::ffi::OsStr::new(name))
            || replaced_names.contains(&name.as_str());
        if own {
            return Err(SandboxError::SetsOwnVariable {
                name: name.clone(),
                from: set.source.to_string(),
            });
        }
        vars.retain(|(key, _)| key != name.as_str());
        vars.push((name.into(), value.into()));
    }
    vars.push(("TMPDIR".into(), "/tmp".into()));
    // cordon: credentials door. Injected secrets' variables hold their
    // placeholders, never the caller's values; the CA bundle variables
    // point at the sandbox's bundle (neither unless inspection is on).
    let replaced: Vec<(String, String)> = credentials
        .into_iter()
        .flat_map(|c| c.placeholders().iter().chain(c.trust_env()))
        .cloned()
        .collect();
    vars.retain(|(key, _)| !replaced.iter().any(|(name, _)| key == name.as_str()));
    vars.extend(replaced.into_iter().map(|(k, v)| (k.into(), v.into())));
    for (key, value) in inside::proxy_env(java_options.as_deref()) {
        vars.push((key.into(), value.into()));
    }
    let env = vars
        .into_iter()
        .map(|(key, value)| {
            let mut entry = key.into_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            CString::new(entry)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| SandboxError::Nul("the environment"))?;
    Ok((env, path_var, withheld))
}

/// Sets each cache's variables in the command's environment `env` to
/// where the cache is inside, in place of any the caller had.
fn point_at_caches(env: &mut Vec<CString>, caches: &caches::Caches) -> Result<(), SandboxError> {
    for cache in &caches.mounts {
        for var in &cache.env {
            let mut prefix = var.as_bytes().to_vec();
            prefix.push(b'=');
            env.retain(|entry| !entry.as_bytes().starts_with(&prefix));
            let mut entry = prefix;
            entry.extend_from_slice(cache.inside.as_os_str().as_bytes());
            env.push(CString::new(entry).map_err(|_| SandboxError::Nul("a cache's path"))?);
        }
    }
    Ok(())
}

/// A random id for this sandbox (cgroup name, audit events).
fn new_sandbox_id() -> String {
    let mut bytes = [0u8; 6];
    let _ = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The credentials door's half that runs after init is forked: the CA and
/// the secrets, and the proxy's inspector built from them. `max_memory`
/// bounds what the proxy buffers for the sandbox.
fn start_inspector(
    plan: &crate::credentials::Plan,
    run_name: &str,
    max_memory: Option<&crate::policy::Sourced<u64>>,
) -> Result<std::sync::Arc<crate::net::proxy::inspect::Inspector>, SandboxError> {
    let (ca, secrets) = plan.start(run_name)?;
    let inspector = crate::net::proxy::inspect::Inspector::new(
        plan.policy().clone(),
        ca,
        secrets,
        plan.system_bundle(),
        max_memory,
    )?;
    Ok(std::sync::Arc::new(inspector))
}
