//! The outside half of `cordon probe`: canaries on the host, the sandbox,
//! the cross-checks, and clean-up on every exit path.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Seek};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{CredentialPath, Door, Expect, HostFacts, Outcome, Probe, ProxyTarget, Report, Spec};
use crate::policy::defaults::CREDENTIAL_DENY_LIST;
use crate::policy::host::{normalize, Verdict, HOST_INTERNAL};
use crate::policy::{PathPattern, Policy, Source, Sourced};
use crate::sandbox::{self, SandboxError};
use crate::sys::{self, attempt};

/// The variable cordon sets in its own environment before building the
/// sandbox; its name matches the secret patterns, so the scrub must remove it.
pub const ENV_CANARY: &str = "CORDON_PROBE_CANARY_TOKEN";

/// A variable with a name no pattern matches, set to a value shaped like
/// a GitHub token: the scrub must remove it for its value.
pub const VALUE_CANARY: &str = "CORDON_PROBE_NOTE";

/// The metadata address of the clouds.
const METADATA: &str = "169.254.169.254:80";

/// Why the probe could not run.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{0}")]
    Sandbox(#[from] SandboxError),
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
    #[error("cordon's own binary {exe} could not be run inside the sandbox (exit code {code}); the probe runs it there, so it must lie where the sandbox sees it (not under /tmp)")]
    NotVisible { exe: String, code: i32 },
    #[error(
        "the probe inside the sandbox reported nothing (exit code {code}); its output: {output:?}"
    )]
    NoReport { code: i32, output: String },
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> ProbeError {
    move |source| ProbeError::Io { what, source }
}

/// cordon's own binary, for messages.
fn policy_exe() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "(unknown)".into())
}

/// A random hex string.
fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    let _ = fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Everything the probe put on the host; removed when dropped, whatever
/// the exit path.
#[derive(Default)]
struct Fixtures {
    dirs: Vec<PathBuf>,
    canary: Option<Child>,
    env_set: Vec<&'static str>,
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        if let Some(mut child) = self.canary.take() {
            // Stopped by its own pid, which we hold as its parent.
            let _ = child.kill();
            let _ = child.wait();
        }
        for d in &self.dirs {
            let _ = fs::remove_dir_all(d);
        }
        for name in &self.env_set {
            std::env::remove_var(name);
        }
    }
}

/// Makes a private (0700) directory `base/cordon-probe-<random>`.
fn private_dir(base: &Path, fx: &mut Fixtures) -> Option<PathBuf> {
    let dir = base.join(format!("cordon-probe-{}", random_hex(6)));
    fs::create_dir(&dir).ok()?;
    fx.dirs.push(dir.clone());
    let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o700));
    Some(dir)
}

/// The first nameserver of /etc/resolv.conf (read, never queried here).
fn host_resolver() -> Option<SocketAddr> {
    if let Some(v) = test_target("resolver") {
        return v.parse().ok();
    }
    let text = fs::read_to_string("/etc/resolv.conf").ok()?;
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some("nameserver"))
            .then(|| words.next())
            .flatten()
            .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
            .map(|ip| SocketAddr::new(ip, 53))
    })
}

/// TEST-ONLY (debug builds): `CORDON_TEST_PROBE_TARGETS=denied=H:P,metadata=H:P,resolver=IP:P`
/// points the probes that would leave the machine at loopback instead, so
/// a test of a weakened sandbox sends nothing off it. Release builds
/// ignore the variable.
fn test_target(key: &str) -> Option<String> {
    #[cfg(debug_assertions)]
    {
        let all = std::env::var("CORDON_TEST_PROBE_TARGETS").ok()?;
        all.split(',').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    }
    #[cfg(not(debug_assertions))]
    {
        let _ = key;
        None
    }
}

/// What works here without the sandbox (see [`HostFacts`]).
fn host_facts() -> HostFacts {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockProtocol, SockType};
    let route = |bind: &str, to: &str| UdpSocket::bind(bind).and_then(|s| s.connect(to)).is_ok();
    HostFacts {
        root: nix::unistd::geteuid().is_root(),
        udp_route: route("0.0.0.0:0", "198.51.100.1:9"),
        ipv6_route: route("[::]:0", "[2001:db8::1]:9"),
        raw_socket: socket(
            AddressFamily::Inet,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::Icmp,
        )
        .is_ok(),
        bpf: attempt::bpf_array_map().is_ok(),
        io_uring: attempt::io_uring_setup().is_ok(),
        keyctl: match attempt::keyctl_session_keyring() {
            Ok(_) => true,
            Err(e) => e.raw_os_error() == Some(libc::ENOKEY),
        },
        user_namespaces: sandbox::support::try_namespaces().is_ok(),
        terminal: fs::File::open("/dev/tty").is_ok(),
        modules: Path::new("/proc/modules").exists(),
        proc1_root: fs::read_link("/proc/1/root").is_ok(),
        firmware: fs::read_dir("/sys/firmware").is_ok_and(|mut d| d.next().is_some()),
        page_maps: fs::File::open("/proc/kpageflags")
            .and_then(|mut f| f.read_exact(&mut [0u8; 8]))
            .is_ok(),
    }
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The SHA-256 of each MAC address of the host's interfaces (lo's
/// all-zero one left out).
fn host_mac_hashes() -> Vec<String> {
    let Ok(entries) = fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| fs::read_to_string(e.path().join("address")).ok())
        .map(|a| a.trim().to_string())
        .filter(|a| a.chars().any(|c| c != '0' && c != ':'))
        .map(|a| sha256_hex(a.as_bytes()))
        .collect()
}

fn writable(dir: &Path) -> bool {
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// The credential deny list under the caller's home, as the host sees it.
fn credential_paths(home: &Path) -> Vec<CredentialPath> {
    CREDENTIAL_DENY_LIST
        .iter()
        .map(|rel| {
            let path = home.join(rel);
            let meta = path.symlink_metadata().ok();
            let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
            let size = match &meta {
                Some(_) if is_dir => fs::read_dir(&path).map(|d| d.count() as u64).unwrap_or(0),
                Some(m) => m.size(),
                None => 0,
            };
            CredentialPath {
                rel: rel.to_string(),
                path,
                exists: meta.is_some(),
                is_dir,
                size,
            }
        })
        .collect()
}

/// The proxy probes' targets, with what this policy expects of each.
fn proxy_targets(policy: &Policy, tcp_port: Option<u16>) -> Vec<ProxyTarget> {
    let hosts = &policy.network.hosts;
    let allowed = |target: &str| -> bool {
        let Some((host, port)) = target.rsplit_once(':') else {
            return false;
        };
        let (Ok(t), Ok(port)) = (normalize(host), port.parse::<u16>()) else {
            return false;
        };
        matches!(hosts.decide(&t, port), Verdict::Allow { .. })
    };
    let expect = |target: &str| {
        if allowed(target) {
            Expect::Works
        } else {
            Expect::Blocked
        }
    };
    let mut out = Vec::new();
    let test_denied = test_target("denied");
    // A public name the policy does not allow; the sandboxed proxy refuses
    // it before any lookup.
    let denied = test_denied.or_else(|| {
        ["example.com:443", "example.net:443", "example.org:443"]
            .into_iter()
            .find(|t| !allowed(t))
            .map(str::to_string)
    });
    out.push(ProxyTarget {
        name: "proxy to a host the policy denies".into(),
        expected: Expect::Blocked,
        skip: denied
            .is_none()
            .then(|| "the policy allows every candidate".into()),
        target: denied.unwrap_or_default(),
    });
    let literal = tcp_port.map(|p| format!("127.0.0.1:{p}"));
    out.push(ProxyTarget {
        name: "proxy with an IP literal (host loopback canary)".into(),
        expected: literal.as_deref().map_or(Expect::Blocked, expect),
        skip: literal.is_none().then(|| "no loopback canary".into()),
        target: literal.unwrap_or_default(),
    });
    out.push(ProxyTarget {
        name: format!("proxy to the metadata address ({METADATA})"),
        expected: expect(METADATA),
        skip: None,
        target: test_target("metadata").unwrap_or_else(|| METADATA.into()),
    });
    let ports = &hosts.ports.value;
    let port_of = |rule_port: Option<u16>| {
        rule_port
            .or_else(|| ports.contains(&443).then_some(443))
            .or_else(|| ports.first().copied())
    };
    let allowed_host = hosts.allow.iter().find_map(|r| {
        use crate::policy::host::HostPattern;
        let host = match r.value.pattern() {
            HostPattern::Exact(name) => name.clone(),
            HostPattern::HostInternal => HOST_INTERNAL.to_string(),
            _ => return None,
        };
        let target = format!("{host}:{}", port_of(r.value.port())?);
        allowed(&target).then_some(target)
    });
    out.push(ProxyTarget {
        name: match &allowed_host {
            Some(t) => format!("proxy to an allowed host ({t})"),
            None => "proxy to an allowed host".into(),
        },
        expected: Expect::Works,
        skip: allowed_host
            .is_none()
            .then(|| "no allowed host in policy".into()),
        target: allowed_host.unwrap_or_default(),
    });
    out
}

/// Starts the outside canary process: cordon's own binary in its hidden
/// `probe-canary` mode, which waits to be stopped.
fn start_canary(tag: &str) -> Option<Child> {
    let exe = std::env::current_exe().ok()?;
    let child = Command::new(exe)
        .arg("probe-canary")
        .arg(tag)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // The probe checks the pid's command line: wait until it is ours.
    let end = Instant::now() + Duration::from_secs(3);
    let path = format!("/proc/{}/cmdline", child.id());
    while Instant::now() < end {
        if fs::read(&path).is_ok_and(|c| String::from_utf8_lossy(&c).contains(tag)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(child)
}

/// The hidden `probe-canary` mode: wait, traceable by this uid, until
/// stopped (or until cordon dies).
pub fn canary_main() -> i32 {
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    let _ = attempt::allow_any_tracer();
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Whether a listener saw a connection (non-blocking accept).
fn tcp_saw_connection(l: &TcpListener) -> bool {
    let _ = l.set_nonblocking(true);
    l.accept().is_ok()
}

fn unix_saw_connection(l: &UnixListener) -> bool {
    let _ = l.set_nonblocking(true);
    l.accept().is_ok()
}

/// Builds the sandbox `cordon run` would build with `policy`, runs the
/// battery inside it, and returns the report. `cwd` is the caller's
/// working directory.
pub fn run(policy: &Policy, cwd: PathBuf) -> Result<Report, ProbeError> {
    let mut fx = Fixtures::default();
    let project = policy.project.value.clone();
    let home = policy
        .homes
        .first()
        .cloned()
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/"));

    // Host-side facts first, while no canary is up.
    let facts = host_facts();

    // A denied file in the project, the target of the link probes.
    let mut policy = policy.clone();
    let denied_value = format!("cordon-probe-denied-{}", random_hex(16));
    let denied_file = private_dir(&project, &mut fx).and_then(|dir| {
        let file = dir.join("denied-canary");
        fs::write(&file, &denied_value).ok()?;
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o755));
        Some(file)
    });
    if let Some(file) = &denied_file {
        policy.files.deny_read.push(Sourced::new(
            PathPattern::Exact(file.clone()),
            Source::Flag("cordon probe (its canary)".into()),
        ));
    }
    // A marker in the host's own /tmp, which the sandbox replaces.
    let host_tmp_marker = private_dir(Path::new("/tmp"), &mut fx).and_then(|dir| {
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o755));
        let marker = dir.join("host-only");
        fs::write(&marker, "").ok().map(|()| marker)
    });
    // Host UNIX sockets, by path (somewhere the sandbox can see) and abstract.
    let sock_dir = [Path::new("/var/tmp"), &home]
        .into_iter()
        .find_map(|base| private_dir(base, &mut fx));
    let unix_listener = sock_dir.as_ref().and_then(|d| {
        let _ = fs::set_permissions(d, fs::Permissions::from_mode(0o755));
        UnixListener::bind(d.join("canary.sock"))
            .ok()
            .map(|l| (l, d.join("canary.sock")))
    });
    let abstract_name = format!("cordon-probe-{}", random_hex(6));
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
            .and_then(|a| UnixListener::bind_addr(&a))
            .ok()
    };
    let tcp = TcpListener::bind("127.0.0.1:0").ok();
    let tcp_port = tcp
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .map(|a| a.port());
    // The canary variable, and an agent socket if the caller has none.
    let env_value = random_hex(16);
    std::env::set_var(ENV_CANARY, &env_value);
    fx.env_set.push(ENV_CANARY);
    // Hex with a letter and a digit fixed, as issued tokens have both.
    let value_canary = format!("ghp_a0{}", random_hex(17));
    std::env::set_var(VALUE_CANARY, &value_canary);
    fx.env_set.push(VALUE_CANARY);
    if std::env::var_os("SSH_AUTH_SOCK").is_none() {
        if let Some((_, path)) = &unix_listener {
            std::env::set_var("SSH_AUTH_SOCK", path);
            fx.env_set.push("SSH_AUTH_SOCK");
        }
    }
    // Started after the variables are set, so its environ holds them: a
    // sandbox that can read it would find the canary there.
    let canary_tag = format!("cordon-probe-canary-{}", random_hex(6));
    fx.canary = start_canary(&canary_tag);
    let filter = crate::credentials::env::EnvFilter::new(&policy.env);
    // The caller's own secret-like names, without those the probe set.
    let secret_names = std::env::vars_os()
        .filter(|(k, _)| !fx.env_set.iter().any(|s| k == *s))
        .filter_map(|(k, v)| filter.removal(&k, &v).map(|r| r.name))
        .collect();

    let mut create_in = vec![(
        "seed: touch ~/sandbox-probe".to_string(),
        home.join("sandbox-probe"),
        writable(&home) && !home.starts_with(&project),
    )];
    for (label, dir) in [
        ("create a file in $HOME", home.clone()),
        ("create a file in /etc", PathBuf::from("/etc")),
        ("create a file in /usr", PathBuf::from("/usr")),
        ("create a file in /var", PathBuf::from("/var")),
    ] {
        let w = writable(&dir) && !dir.starts_with(&project);
        create_in.push((label.to_string(), dir, w));
    }
    // Outside the project: its parent, or else a directory anyone may
    // write to that the sandbox sees as the host's. Not /tmp or /dev/shm:
    // the sandbox has private ones there, where writing is allowed (a
    // project under /tmp has /tmp for parent).
    let replaced = |d: &Path| d.starts_with("/tmp") || d.starts_with("/dev/shm");
    let outside = project
        .parent()
        .into_iter()
        .chain([Path::new("/var/tmp")])
        .find(|d| writable(d) && !d.starts_with(&project) && !replaced(d))
        .or(project.parent().filter(|d| !replaced(d)));
    if let Some(dir) = outside {
        create_in.push((
            format!("create a file outside the project ({})", dir.display()),
            dir.to_path_buf(),
            writable(dir),
        ));
    }
    let spec = Spec {
        home: home.clone(),
        project: project.clone(),
        create_in,
        credentials: credential_paths(&home),
        denied_file: denied_file.clone().map(|f| (f, denied_value.clone())),
        host_tmp_marker,
        tcp_port,
        unix_path: unix_listener.as_ref().map(|(_, p)| p.clone()),
        unix_abstract: abstract_listener.as_ref().map(|_| abstract_name.clone()),
        canary_pid: fx.canary.as_ref().map(|c| c.id() as i32),
        canary_tag,
        env_canary: (ENV_CANARY.to_string(), sha256_hex(env_value.as_bytes())),
        value_canary: (
            VALUE_CANARY.to_string(),
            sha256_hex(value_canary.as_bytes()),
        ),
        secret_names,
        host_macs: host_mac_hashes(),
        resolver: host_resolver(),
        proxy: proxy_targets(&policy, tcp_port),
        host: facts,
        // The run makes the key when it keeps a log; one made earlier
        // must stay unreadable with the log off too.
        audit_key: (policy.audit.log.value.is_some() || policy.audit.key.exists())
            .then(|| policy.audit.key.clone()),
        caller_terminals: caller_terminals(),
    };
    let spec_json = serde_json::to_string(&spec).map_err(|e| ProbeError::Io {
        what: "writing the probe's spec",
        source: io::Error::other(e),
    })?;
    let exe = std::env::current_exe().map_err(io_err("finding cordon's own binary"))?;
    let command: Vec<OsString> = vec![exe.into(), "probe-inside".into(), spec_json.into()];

    let (code, output) = run_capturing_stdout(&policy, command, cwd)?;
    let json = output.lines().rev().find(|l| l.starts_with('['));
    let mut probes: Vec<Probe> = match json.map(serde_json::from_str) {
        Some(Ok(p)) => p,
        _ if code == 127 || code == 126 => {
            return Err(ProbeError::NotVisible {
                exe: policy_exe(),
                code,
            })
        }
        _ => return Err(ProbeError::NoReport { code, output }),
    };

    // What the canaries saw themselves: a connection means the door was
    // open whatever the inside reported.
    let saw = [
        (
            "TCP to a listener on the host's 127.0.0.1",
            tcp.as_ref().is_some_and(tcp_saw_connection),
        ),
        (
            "connect to a host UNIX socket (path)",
            unix_listener
                .as_ref()
                .is_some_and(|(l, _)| unix_saw_connection(l)),
        ),
        (
            "connect to a host UNIX socket (abstract)",
            abstract_listener.as_ref().is_some_and(unix_saw_connection),
        ),
    ];
    for (name, seen) in saw {
        if let (true, Some(p)) = (seen, probes.iter_mut().find(|p| p.name == name)) {
            if p.outcome != Outcome::Succeeded {
                p.outcome = Outcome::Succeeded;
                p.detail = format!("the host's canary saw a connection ({})", p.detail);
            }
        }
    }
    if let Some(file) = &denied_file {
        // The sandbox must not have changed the denied canary either.
        if fs::read(file).map_or(true, |c| c != denied_value.as_bytes()) {
            probes.push(Probe {
                door: Door::Files,
                name: "denied canary file unchanged".into(),
                expected: Expect::Blocked,
                outcome: Outcome::Succeeded,
                detail: "its content changed".into(),
                result: String::new(),
                verdict: None,
            });
        }
    }
    drop(fx);
    Ok(Report::new(probes))
}

/// The identities of the caller's terminals among stdin, stdout and stderr.
fn caller_terminals() -> Vec<String> {
    let mut found: Vec<String> = (0..=2)
        .filter(|&fd| nix::unistd::isatty(fd).unwrap_or(false))
        .filter_map(|fd| nix::sys::stat::fstat(fd).ok())
        .map(|st| super::inside::terminal_identity(&st))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Runs the sandbox with the command's stdout going into a memory file
/// (no pipe, so no reader thread alive across the sandbox's clone), and
/// returns the exit code and what the command printed.
fn run_capturing_stdout(
    policy: &Policy,
    command: Vec<OsString>,
    cwd: PathBuf,
) -> Result<(i32, String), ProbeError> {
    use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
    let memfd = memfd_create(c"cordon-probe", MemFdCreateFlag::MFD_CLOEXEC)
        .map_err(|e| io_err("memfd_create")(e.into()))?;
    let saved: OwnedFd = nix::unistd::dup(1)
        .map(sys::own_fd)
        .map_err(|e| io_err("saving stdout")(e.into()))?;
    nix::unistd::dup2(memfd.as_raw_fd(), 1).map_err(|e| io_err("redirecting stdout")(e.into()))?;
    let result = sandbox::run(sandbox::RunRequest {
        policy,
        command,
        cwd,
        quiet: true,
        filters: sandbox::seccomp::Compiling::start(),
        learn: None,
        ask: None,
    });
    let restored = nix::unistd::dup2(saved.as_fd().as_raw_fd(), 1);
    let code = result?;
    restored.map_err(|e| io_err("restoring stdout")(e.into()))?;
    let mut file = fs::File::from(memfd);
    let mut output = String::new();
    file.rewind()
        .and_then(|()| file.read_to_string(&mut output))
        .map_err(io_err("reading the probe's report"))?;
    Ok((code, output))
}
