//! The inside half of `cordon probe`: runs in the sandbox as the command
//! (`cordon probe-inside SPEC`), makes every attempt, prints the results
//! as one JSON document on stdout.
//!
//! Every attempt is harmless even if it succeeds: files it creates are
//! removed at once, files that exist are opened for writing but never
//! written, signals go only to the outside canary and are signal 0, the
//! keyring is looked up and not created, a BPF map and an io_uring are
//! closed at once, the "kernel module" is an empty file, TIOCSTI pushes a
//! byte into a terminal the probe opened itself, the DNS query asks for
//! example.com and the proxy tunnels are closed without sending a byte.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::unistd::Pid;
use sha2::{Digest, Sha256};

use super::{CredentialPath, Door, Expect, Outcome, Probe, Spec};
use crate::sys::{self, attempt, Forked};

/// Runs the battery described by `spec` (JSON) and prints the results;
/// returns the exit code (0, or 2 when the spec does not parse).
pub fn run(spec: &str) -> i32 {
    let spec: Spec = match serde_json::from_str(spec) {
        Ok(s) => s,
        Err(e) => {
            crate::say!("cordon probe-inside: bad spec: {e}");
            return 2;
        }
    };
    let mut b = Battery::default();
    files(&mut b, &spec);
    kernel_files(&mut b, &spec);
    network(&mut b, &spec);
    credentials(&mut b, &spec);
    process(&mut b, &spec);
    match serde_json::to_string(&b.probes) {
        Ok(json) => {
            println!("{json}");
            0
        }
        Err(e) => {
            crate::say!("cordon probe-inside: {e}");
            2
        }
    }
}

#[derive(Default)]
struct Battery {
    probes: Vec<Probe>,
}

impl Battery {
    fn add(
        &mut self,
        door: Door,
        name: impl Into<String>,
        expected: Expect,
        (outcome, detail): (Outcome, String),
    ) {
        self.probes.push(Probe {
            door,
            name: name.into(),
            expected,
            outcome,
            detail,
            result: String::new(),
            verdict: None,
        });
    }
}

type Result2 = (Outcome, String);

fn refused(e: &io::Error) -> Result2 {
    (Outcome::Refused, describe(e))
}

fn succeeded(what: impl Into<String>) -> Result2 {
    (Outcome::Succeeded, what.into())
}

fn skipped(why: impl Into<String>) -> Result2 {
    (Outcome::Skipped, why.into())
}

/// `EACCES (Permission denied)`.
fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => {
            let errno = Errno::from_raw(code);
            format!("{errno:?} ({})", errno.desc())
        }
        None => e.to_string(),
    }
}

fn errno_of(e: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// A name no other run uses.
fn unique(prefix: &str) -> String {
    let mut bytes = [0u8; 6];
    let _ = fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------
// Files.

/// Creates a new file in `dir` and removes it at once.
fn create_in(dir: &Path) -> Result2 {
    let path = dir.join(unique(".cordon-probe-"));
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(_) => {
            let _ = fs::remove_file(&path);
            succeeded(format!("created {} (removed)", path.display()))
        }
        Err(e) => refused(&e),
    }
}

/// Opens `path` for writing: an existing file is opened and closed without
/// a byte written; a missing one is created (its missing directories too)
/// and removed again.
fn write_persistence(path: &Path) -> Result2 {
    if path.symlink_metadata().is_ok() {
        return match OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
        {
            Ok(_) => succeeded("opened for writing (nothing written)"),
            Err(e) => refused(&e),
        };
    }
    let mut made = Vec::new();
    let mut dir = path.parent();
    let mut missing = Vec::new();
    while let Some(d) = dir {
        if d.symlink_metadata().is_ok() {
            break;
        }
        missing.push(d.to_path_buf());
        dir = d.parent();
    }
    let mut result = None;
    for d in missing.iter().rev() {
        match fs::create_dir(d) {
            Ok(()) => made.push(d.clone()),
            Err(e) => {
                result = Some(refused(&e));
                break;
            }
        }
    }
    let result = result.unwrap_or_else(|| {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(_) => {
                let _ = fs::remove_file(path);
                succeeded("created (removed)")
            }
            Err(e) => refused(&e),
        }
    });
    for d in made.iter().rev() {
        let _ = fs::remove_dir(d);
    }
    result
}

/// Makes a file in `dir`, tries `chmod 4755` on it, and removes it.
fn set_privilege_bit(dir: &Path) -> Result2 {
    let path = dir.join(unique(".cordon-probe-suid-"));
    if let Err(e) = fs::write(&path, b"") {
        return skipped(format!("cannot make a file to try it on: {}", describe(&e)));
    }
    let result = match fs::set_permissions(&path, fs::Permissions::from_mode(0o4755)) {
        Ok(()) => succeeded("chmod 4755 took"),
        Err(e) => refused(&e),
    };
    let _ = fs::remove_file(&path);
    result
}

/// Creates a file in `dir` with mode 04755 (removed if it was made).
fn create_privileged(dir: &Path) -> Result2 {
    let path = dir.join(unique(".cordon-probe-suid-"));
    let made = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o4755)
        .open(&path);
    match made {
        Ok(_) => {
            let bits = fs::metadata(&path).map_or(0, |m| m.permissions().mode() & 0o6000);
            let _ = fs::remove_file(&path);
            if bits == 0 {
                (
                    Outcome::Refused,
                    "created, without the bit (the umask or the file system dropped it)".into(),
                )
            } else {
                succeeded("created with the set-user-ID bit (removed)")
            }
        }
        Err(e) => refused(&e),
    }
}

/// Makes a bare repository in `dir` (`HEAD`, `objects/`, `refs/`,
/// `hooks/`) and tries to add a hook git would run; removes it all.
fn plant_hook(dir: &Path) -> Result2 {
    let repo = dir.join(unique(".cordon-probe-repo-"));
    let made = fs::create_dir_all(repo.join("objects"))
        .and_then(|()| fs::create_dir_all(repo.join("refs")))
        .and_then(|()| fs::create_dir_all(repo.join("hooks")))
        .and_then(|()| fs::write(repo.join("HEAD"), b"ref: refs/heads/main\n"));
    let result = match made {
        Err(e) => skipped(format!(
            "cannot make a repository to try it in: {}",
            describe(&e)
        )),
        Ok(()) => match fs::write(repo.join("hooks/post-checkout"), b"#!/bin/sh\n") {
            Ok(()) => succeeded("created hooks/post-checkout (removed)"),
            Err(e) => refused(&e),
        },
    };
    let _ = fs::remove_dir_all(&repo);
    result
}

/// Reads a credential path: a file's first bytes, a directory's listing.
/// Never prints what it read.
fn read_credential(c: &CredentialPath) -> Result2 {
    if c.is_dir {
        return match fs::read_dir(&c.path) {
            Ok(entries) => {
                let n = entries.count();
                if n > 0 {
                    succeeded(format!("listed {n} entries"))
                } else if c.size > 0 {
                    (
                        Outcome::Refused,
                        format!("reads as empty (the host's has {} entries)", c.size),
                    )
                } else {
                    succeeded("listed (empty on the host too)")
                }
            }
            Err(e) => refused(&e),
        };
    }
    read_file(&c.path, c.size)
}

/// Opens `path` and reads from it; `size` is its size on the host.
fn read_file(path: &Path, size: u64) -> Result2 {
    let mut f = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return refused(&e),
    };
    let mut buf = [0u8; 64];
    match f.read(&mut buf) {
        Ok(n) if n > 0 => succeeded(format!("read {n} bytes (not shown)")),
        Ok(_) if size > 0 => (
            Outcome::Refused,
            format!("reads as empty (the host's has {size} bytes)"),
        ),
        Ok(_) => succeeded("opened (empty on the host too)"),
        Err(e) => refused(&e),
    }
}

/// Whether reading `path` yields the denied canary's content.
fn read_canary(path: &Path, value: &str) -> Result2 {
    match fs::read(path) {
        Ok(data) if data == value.as_bytes() => succeeded("read the denied file's content"),
        Ok(data) => (
            Outcome::Refused,
            format!("read {} bytes, not the canary", data.len()),
        ),
        Err(e) => refused(&e),
    }
}

fn files(b: &mut Battery, spec: &Spec) {
    let f = Door::Files;
    for (label, dir, writable) in &spec.create_in {
        let result = if *writable && label.starts_with("seed:") {
            // The seed check names its file: `touch ~/sandbox-probe`.
            write_persistence(dir)
        } else if *writable {
            create_in(dir)
        } else {
            skipped(format!(
                "{} is not writable without the sandbox either",
                dir.display()
            ))
        };
        b.add(f, label.clone(), Expect::Blocked, result);
    }
    for rel in [
        ".git/hooks/x",
        ".git/config",
        ".bashrc",
        ".mcp.json",
        ".vscode/tasks.json",
        "cordon.toml",
        ".roo/mcp.json",
        ".devcontainer.json",
        "mise.toml",
        ".lefthook.yml",
    ] {
        let result = if rel.starts_with(".git/") && !spec.project.join(".git").is_dir() {
            (
                Outcome::Absent,
                "the project is not a git repository".to_string(),
            )
        } else {
            write_persistence(&spec.project.join(rel))
        };
        b.add(f, format!("write ./{rel}"), Expect::Blocked, result);
    }
    b.add(
        f,
        "set a set-user-ID bit on a file in the project",
        Expect::Blocked,
        set_privilege_bit(&spec.project),
    );
    b.add(
        f,
        "create a file with a set-user-ID mode",
        Expect::Blocked,
        create_privileged(&spec.project),
    );
    b.add(
        f,
        "plant a hook in a repository made inside",
        Expect::Blocked,
        plant_hook(Path::new("/tmp")),
    );
    for c in &spec.credentials {
        let result = if c.exists {
            read_credential(c)
        } else {
            (Outcome::Absent, "not on this host".to_string())
        };
        b.add(f, format!("read ~/{}", c.rel), Expect::Blocked, result);
    }
    match &spec.denied_file {
        Some((path, value)) => {
            let link = spec.project.join(unique(".cordon-probe-symlink-"));
            let result = match std::os::unix::fs::symlink(path, &link) {
                Ok(()) => {
                    let r = read_canary(&link, value);
                    let _ = fs::remove_file(&link);
                    r
                }
                Err(e) => refused(&e),
            };
            b.add(
                f,
                "read a denied file via a symlink in the project",
                Expect::Blocked,
                result,
            );
            let hard = spec.project.join(unique(".cordon-probe-hardlink-"));
            let result = match fs::hard_link(path, &hard) {
                Ok(()) => {
                    let r = read_canary(&hard, value);
                    let _ = fs::remove_file(&hard);
                    match r {
                        (Outcome::Refused, d) => (Outcome::Refused, format!("linked, but {d}")),
                        r => r,
                    }
                }
                Err(e) => refused(&e),
            };
            b.add(
                f,
                "read a denied file via a hardlink in the project",
                Expect::Blocked,
                result,
            );
            let via_proc =
                Path::new("/proc/self/root").join(path.strip_prefix("/").unwrap_or(path));
            b.add(
                f,
                "read a denied file via /proc/self/root",
                Expect::Blocked,
                read_canary(&via_proc, value),
            );
        }
        None => {
            for name in [
                "a symlink in the project",
                "a hardlink in the project",
                "/proc/self/root",
            ] {
                b.add(
                    f,
                    format!("read a denied file via {name}"),
                    Expect::Blocked,
                    skipped("no denied canary file could be planted in the project"),
                );
            }
        }
    }
    for root in ["/proc/self/root", "/proc/1/root"] {
        let result = match &spec.host_tmp_marker {
            Some(marker) => {
                let p = Path::new(root).join(marker.strip_prefix("/").unwrap_or(marker));
                match p.symlink_metadata() {
                    Ok(_) => succeeded(format!("saw the host's {}", marker.display())),
                    Err(e) if root == "/proc/1/root" && !spec.host.proc1_root => (
                        Outcome::Refused,
                        format!(
                            "{} (the host's own pid 1 is out of reach without the sandbox too)",
                            describe(&e)
                        ),
                    ),
                    Err(e) => refused(&e),
                }
            }
            None => skipped("no host /tmp to plant a marker in"),
        };
        b.add(
            f,
            format!("reach the host root via {root}"),
            Expect::Blocked,
            result,
        );
    }
    let result = match create_in(&spec.project) {
        (Outcome::Succeeded, _) => succeeded("created and removed a file"),
        r => r,
    };
    b.add(f, "write in the project", Expect::Works, result);
    let tmp = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let result = match create_in(&tmp) {
        (Outcome::Succeeded, _) => {
            succeeded(format!("created and removed a file in {}", tmp.display()))
        }
        r => r,
    };
    b.add(f, "write in the temp dir", Expect::Works, result);
}

// ---------------------------------------------------------------------------
// Network.

/// A UDP "connection" (a route lookup: no packet is sent).
fn udp_route(bind: &str, to: &str) -> Result2 {
    let sock = match UdpSocket::bind(bind) {
        Ok(s) => s,
        Err(e) => return refused(&e),
    };
    match sock.connect(to) {
        Ok(()) => succeeded(format!("a route to {to} exists (nothing sent)")),
        Err(e) => refused(&e),
    }
}

/// A DNS query for example.com's A record.
fn dns_query() -> Vec<u8> {
    let mut q = vec![0x43, 0x52, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in ["example", "com"] {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    q
}

fn dns(resolver: std::net::SocketAddr) -> Result2 {
    let bind = if resolver.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let sock = match UdpSocket::bind(bind) {
        Ok(s) => s,
        Err(e) => return refused(&e),
    };
    if let Err(e) = sock.connect(resolver) {
        return refused(&e);
    }
    if let Err(e) = sock.send(&dns_query()) {
        return refused(&e);
    }
    let _ = sock.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = [0u8; 512];
    match sock.recv(&mut buf) {
        Ok(n) => succeeded(format!("{resolver} answered ({n} bytes)")),
        Err(e) => (
            Outcome::Refused,
            format!("no answer from {resolver}: {}", describe(&e)),
        ),
    }
}

/// The proxy's address inside, from the variables cordon sets.
fn proxy_addr() -> String {
    std::env::var("HTTP_PROXY")
        .ok()
        .and_then(|v| {
            v.strip_prefix("http://")
                .map(|r| r.trim_end_matches('/').to_string())
        })
        .unwrap_or_else(|| format!("127.0.0.1:{}", crate::net::inside::HTTP_PORT))
}

/// Sends `CONNECT target` to the proxy; returns the status code and the
/// first line of the body (the proxy's reason), then closes the tunnel
/// without sending a byte through it.
fn connect_via_proxy(target: &str) -> io::Result<(u16, String)> {
    let addr = proxy_addr();
    let sock_addr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::other("no proxy address"))?;
    let mut s = TcpStream::connect_timeout(&sock_addr, Duration::from_secs(3))?;
    s.set_read_timeout(Some(Duration::from_secs(15)))?;
    write!(s, "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        if s.read(&mut byte)? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut reason = String::new();
    if code != 200 {
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let mut body = [0u8; 512];
        if let Ok(n) = s.read(&mut body) {
            reason = String::from_utf8_lossy(&body[..n])
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
        }
    }
    Ok((code, reason))
}

/// Sends the proxy a request whose length two readers would read apart
/// (`Transfer-Encoding: chunked` and `Content-Length`): a proxy that
/// forwards it lets a second request ride past its checks. The proxy must
/// answer 400 before it looks at the host (which is not allowed anyway).
fn ambiguous_framing() -> Result2 {
    let attempt = || -> io::Result<String> {
        let addr = proxy_addr()
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::other("no proxy address"))?;
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.write_all(
            b"POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\
              Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        )?;
        let mut head = [0u8; 64];
        let n = s.read(&mut head)?;
        Ok(String::from_utf8_lossy(&head[..n])
            .lines()
            .next()
            .unwrap_or_default()
            .to_string())
    };
    match attempt() {
        Ok(status) if status.split_whitespace().nth(1) == Some("400") => (Outcome::Refused, status),
        Ok(status) => succeeded(format!("the proxy answered {status:?}, not 400")),
        Err(e) => (
            Outcome::Refused,
            format!("proxy unreachable: {}", describe(&e)),
        ),
    }
}

fn proxy(target: &str) -> Result2 {
    match connect_via_proxy(target) {
        Ok((200, _)) => succeeded("200: tunnel opened (closed unused)"),
        Ok((403, reason)) => (Outcome::Refused, format!("403 {reason}")),
        Ok((code, reason)) => succeeded(format!(
            "{code}: the proxy let it through; {}",
            if reason.is_empty() {
                "the upstream failed"
            } else {
                &reason
            }
        )),
        Err(e) => (
            Outcome::Refused,
            format!("proxy unreachable: {}", describe(&e)),
        ),
    }
}

fn network(b: &mut Battery, spec: &Spec) {
    let n = Door::Network;
    let result = match spec.tcp_port {
        Some(port) => {
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                Ok(_) => succeeded(format!("connected to {addr}")),
                Err(e) => refused(&e),
            }
        }
        None => skipped("no loopback listener could be opened"),
    };
    b.add(
        n,
        "TCP to a listener on the host's 127.0.0.1",
        Expect::Blocked,
        result,
    );
    let result = if spec.host.udp_route {
        udp_route("0.0.0.0:0", "198.51.100.1:9")
    } else {
        skipped("the host has no IPv4 route out either")
    };
    b.add(
        n,
        "UDP out (route to 198.51.100.1)",
        Expect::Blocked,
        result,
    );
    let result = if spec.host.ipv6_route {
        udp_route("[::]:0", "[2001:db8::1]:9")
    } else {
        skipped("the host has no IPv6 route out either")
    };
    b.add(
        n,
        "IPv6 out (route to 2001:db8::1)",
        Expect::Blocked,
        result,
    );
    let result = match spec.resolver {
        Some(r) => dns(r),
        None => (Outcome::Absent, "no nameserver in /etc/resolv.conf".into()),
    };
    b.add(
        n,
        "DNS query to the host's resolver",
        Expect::Blocked,
        result,
    );
    let result = if spec.host.raw_socket {
        use nix::sys::socket::{socket, AddressFamily, SockFlag, SockProtocol, SockType};
        match socket(
            AddressFamily::Inet,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::Icmp,
        ) {
            Ok(_) => succeeded("opened a raw ICMP socket (closed unused)"),
            Err(e) => refused(&errno_of(e)),
        }
    } else {
        skipped("cordon's caller cannot open a raw socket either")
    };
    b.add(n, "raw socket", Expect::Blocked, result);
    for t in &spec.proxy {
        let result = match &t.skip {
            Some(why) => skipped(why.clone()),
            None => proxy(&t.target),
        };
        b.add(n, t.name.clone(), t.expected, result);
    }
    b.add(
        n,
        "smuggle a request past the proxy (Transfer-Encoding and Content-Length)",
        Expect::Blocked,
        ambiguous_framing(),
    );
    let result = match "example.com:443".to_socket_addrs() {
        Ok(mut addrs) => succeeded(format!(
            "resolved to {}",
            addrs.next().map(|a| a.ip().to_string()).unwrap_or_default()
        )),
        Err(e) => (Outcome::Refused, format!("no name lookup: {e}")),
    };
    b.add(
        n,
        "seed: curl --noproxy '*' https://example.com",
        Expect::Blocked,
        result,
    );
}

/// Collects the `address` of every network device under `dir` (a `net/`
/// directory's entries), `depth` levels down, not following links.
fn net_addresses(dir: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        if dir.file_name().is_some_and(|n| n == "net") {
            if let Ok(address) = fs::read_to_string(path.join("address")) {
                out.push(address.trim().to_string());
            }
        } else if depth > 0 {
            net_addresses(&path, depth - 1, out);
        }
    }
}

/// What the kernel's own file systems reveal of the host: its interfaces'
/// MAC addresses, its firmware tables, its physical memory map.
fn kernel_files(b: &mut Battery, spec: &Spec) {
    let f = Door::Files;
    let result = if spec.host_macs.is_empty() {
        skipped("the host has no interface with a MAC address")
    } else {
        // `class/net` holds links to the devices; the walk finds those
        // that no link names.
        let linked: Vec<PathBuf> = fs::read_dir("/sys/class/net")
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        let mut seen: Vec<String> = linked
            .iter()
            .filter_map(|l| fs::read_to_string(l.join("address")).ok())
            .map(|a| a.trim().to_string())
            .collect();
        net_addresses(Path::new("/sys/devices"), 12, &mut seen);
        let interfaces: Vec<String> = linked
            .iter()
            .filter_map(|l| l.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        if seen
            .iter()
            .any(|m| spec.host_macs.contains(&sha256_hex(m.as_bytes())))
        {
            succeeded(format!(
                "read a host interface's address (interfaces: {})",
                interfaces.join(" ")
            ))
        } else {
            (
                Outcome::Refused,
                format!(
                    "interfaces: {}; none has a host's address",
                    interfaces.join(" ")
                ),
            )
        }
    };
    b.add(
        f,
        "read a host MAC address via /sys",
        Expect::Blocked,
        result,
    );
    let result = if !spec.host.firmware {
        skipped("the host shows no /sys/firmware")
    } else {
        match fs::read_dir("/sys/firmware").map(|d| d.count()) {
            Ok(0) => (Outcome::Refused, "lists as empty".to_string()),
            Ok(n) => succeeded(format!("listed {n} entries")),
            Err(e) => refused(&e),
        }
    };
    b.add(
        f,
        "list the firmware tables (/sys/firmware)",
        Expect::Blocked,
        result,
    );
    let result = if !spec.host.page_maps {
        skipped("cordon's caller cannot read it outside either (root only)")
    } else {
        let mut buf = [0u8; 8];
        match fs::File::open("/proc/kpageflags").and_then(|mut f| f.read(&mut buf)) {
            Ok(0) => (Outcome::Refused, "reads as empty".to_string()),
            Ok(_) => succeeded("read the flags of physical pages"),
            Err(e) => refused(&e),
        }
    };
    b.add(f, "read /proc/kpageflags", Expect::Blocked, result);
}

// ---------------------------------------------------------------------------
// Credentials.

/// Whether a process environment (NUL-separated `K=V`) shows the canary
/// value or one of the secret names.
fn environ_leaks(raw: &[u8], spec: &Spec) -> Option<String> {
    for entry in raw.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let text = String::from_utf8_lossy(entry);
        let (name, value) = text.split_once('=').unwrap_or((&text, ""));
        if sha256_hex(value.as_bytes()) == spec.env_canary.1 {
            return Some(format!("the canary's value (in {name})"));
        }
        if spec.secret_names.iter().any(|s| s == name) {
            return Some(name.to_string());
        }
    }
    None
}

/// A terminal's identity as `stat` gives it: `dev:ino:rdev`.
pub fn terminal_identity(st: &nix::sys::stat::FileStat) -> String {
    format!("{}:{}:{}", st.st_dev, st.st_ino, st.st_rdev)
}

/// Whether any descriptor of this process is one of the caller's
/// terminals (with one, the sandbox could change its settings for good).
fn callers_terminal(spec: &Spec) -> Result2 {
    if spec.caller_terminals.is_empty() {
        return skipped("the caller has no terminal");
    }
    let fds = match fs::read_dir("/proc/self/fd") {
        Ok(fds) => fds,
        Err(e) => return skipped(format!("cannot list /proc/self/fd: {}", describe(&e))),
    };
    let mut seen = 0;
    for entry in fds.flatten() {
        let Ok(st) = nix::sys::stat::stat(&entry.path()) else {
            continue;
        };
        seen += 1;
        if spec.caller_terminals.contains(&terminal_identity(&st)) {
            return succeeded(format!(
                "fd {} is the caller's terminal",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    (
        Outcome::Refused,
        format!("none of {seen} descriptors is the caller's terminal"),
    )
}

/// Whether the canary variable `name`, whose value hashes to `hash`, or
/// its value under another name, reached the sandbox.
fn canary_variable((name, hash): &(String, String)) -> Result2 {
    let by_value = std::env::vars_os()
        .find(|(_, v)| sha256_hex(v.as_encoded_bytes()) == *hash)
        .map(|(k, _)| k.to_string_lossy().into_owned());
    match (std::env::var_os(name), by_value) {
        (Some(_), _) => succeeded(format!("{name} is set")),
        (None, Some(other)) => succeeded(format!("its value is in {other}")),
        (None, None) => (Outcome::Absent, format!("{name} unset, value nowhere")),
    }
}

fn credentials(b: &mut Battery, spec: &Spec) {
    let c = Door::Credentials;
    if let Some(key) = &spec.audit_key {
        let result = match fs::read(key) {
            Ok(_) => succeeded(format!("read {}", crate::escape::printable(key))),
            Err(e) => refused(&e),
        };
        b.add(
            c,
            "read the audit key (to forge the log)",
            Expect::Blocked,
            result,
        );
    }
    b.add(
        c,
        "canary variable set by cordon",
        Expect::Absent,
        canary_variable(&spec.env_canary),
    );
    b.add(
        c,
        "a secret-valued variable with an innocent name",
        Expect::Absent,
        canary_variable(&spec.value_canary),
    );
    let present: Vec<&str> = spec
        .secret_names
        .iter()
        .filter(|n| std::env::var_os(n).is_some())
        .map(String::as_str)
        .collect();
    let others = spec.secret_names.len();
    let result = if others == 0 {
        skipped("the caller's environment holds no secret-like names")
    } else if present.is_empty() {
        (Outcome::Absent, format!("{others} names, none set"))
    } else {
        succeeded(format!("set: {}", present.join(", ")))
    };
    b.add(
        c,
        "the caller's secret-like variables",
        Expect::Absent,
        result,
    );
    let result = match fs::read("/proc/1/environ") {
        Ok(raw) => match environ_leaks(&raw, spec) {
            Some(what) => succeeded(format!("shows {what}")),
            None => (
                Outcome::Refused,
                format!("readable ({} bytes), no secret in it", raw.len()),
            ),
        },
        Err(e) => refused(&e),
    };
    b.add(c, "read /proc/1/environ", Expect::Blocked, result);
    let me = std::process::id();
    let mut readable = 0;
    let mut leak = None;
    if let Ok(entries) = fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if pid == me || pid == 1 {
                continue;
            }
            if let Ok(raw) = fs::read(e.path().join("environ")) {
                readable += 1;
                if let Some(what) = environ_leaks(&raw, spec) {
                    leak = Some(format!("pid {pid} shows {what}"));
                    break;
                }
            }
        }
    }
    let result = match leak {
        Some(what) => succeeded(what),
        None => (
            Outcome::Refused,
            format!("{readable} other environ files readable, no secret in them"),
        ),
    };
    b.add(c, "read other processes' environ", Expect::Blocked, result);
    let result = match &spec.unix_path {
        Some(path) => match UnixStream::connect(path) {
            Ok(_) => succeeded(format!("connected to {}", path.display())),
            Err(e) => refused(&e),
        },
        None => skipped("no host UNIX socket could be opened"),
    };
    b.add(
        c,
        "connect to a host UNIX socket (path)",
        Expect::Blocked,
        result,
    );
    let result = match &spec.unix_abstract {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            match std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
                .and_then(|a| UnixStream::connect_addr(&a))
            {
                Ok(_) => succeeded(format!("connected to @{name}")),
                Err(e) => refused(&e),
            }
        }
        None => skipped("no host abstract socket could be opened"),
    };
    b.add(
        c,
        "connect to a host UNIX socket (abstract)",
        Expect::Blocked,
        result,
    );
    let result = match std::env::var_os("SSH_AUTH_SOCK") {
        Some(v) => succeeded(format!("SSH_AUTH_SOCK={}", v.to_string_lossy())),
        None => (Outcome::Absent, "unset".into()),
    };
    b.add(c, "SSH_AUTH_SOCK", Expect::Absent, result);
}

// ---------------------------------------------------------------------------
// Process.

/// Whether `pid`, as seen inside, is the outside canary. A pid number that
/// belongs to a process inside the sandbox is not.
fn is_canary(pid: i32, tag: &str) -> Option<bool> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&raw).contains(tag))
}

/// Runs `f` in a child process and reports its result; the child exits
/// with 0 on success, else with the errno.
fn in_child(f: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    match sys::fork()? {
        Forked::Child => {
            let code = match f() {
                Ok(()) => 0,
                Err(e) => e.raw_os_error().unwrap_or(libc::EIO).clamp(1, 255),
            };
            std::process::exit(code)
        }
        Forked::Parent(pid) => match nix::sys::wait::waitpid(pid, None).map_err(errno_of)? {
            nix::sys::wait::WaitStatus::Exited(_, 0) => Ok(()),
            nix::sys::wait::WaitStatus::Exited(_, code) => Err(io::Error::from_raw_os_error(code)),
            other => Err(io::Error::other(format!("child ended: {other:?}"))),
        },
    }
}

/// Opens a pty, makes it the controlling terminal of a new session, and
/// pushes a byte into its input: what an agent would do to the caller's
/// terminal, on a terminal of its own.
fn tiocsti_own_pty() -> io::Result<()> {
    use nix::fcntl::{open, OFlag};
    use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};
    use nix::sys::stat::Mode;
    let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY).map_err(errno_of)?;
    grantpt(&master).map_err(errno_of)?;
    unlockpt(&master).map_err(errno_of)?;
    let slave_path = ptsname_r(&master).map_err(errno_of)?;
    // Leaving the session with a controlling terminal hangs it up: the
    // SIGHUP must not end the child before it reports.
    let mut hup = nix::sys::signal::SigSet::empty();
    hup.add(nix::sys::signal::Signal::SIGHUP);
    hup.thread_block().map_err(errno_of)?;
    nix::unistd::setsid().map_err(errno_of)?;
    let slave = open(slave_path.as_str(), OFlag::O_RDWR, Mode::empty()).map_err(errno_of)?;
    let slave = sys::own_fd(slave);
    sys::set_controlling_terminal(slave.as_fd())?;
    attempt::tiocsti(slave.as_fd(), b'#')
}

fn process(b: &mut Battery, spec: &Spec) {
    let p = Door::Process;
    b.add(
        p,
        "reach the caller's terminal (to change its settings)",
        Expect::Blocked,
        callers_terminal(spec),
    );
    let canary = spec
        .canary_pid
        .map(|pid| (pid, is_canary(pid, &spec.canary_tag)));
    let inside_not_canary = |pid: i32| {
        (
            Outcome::Refused,
            format!("pid {pid} here is a process inside the sandbox, not the canary"),
        )
    };
    let result = match canary {
        None => skipped("no canary process could be started"),
        Some((pid, Some(false))) => inside_not_canary(pid),
        Some((pid, _)) => match attempt::ptrace_seize(Pid::from_raw(pid)) {
            Ok(()) => succeeded(format!("attached to pid {pid}")),
            Err(e) => refused(&e),
        },
    };
    b.add(p, "ptrace a process outside", Expect::Blocked, result);
    let result = match canary {
        None => skipped("no canary process could be started"),
        Some((pid, Some(false))) => inside_not_canary(pid),
        Some((pid, _)) => match nix::sys::signal::kill(Pid::from_raw(pid), None) {
            Ok(()) => succeeded(format!("signal 0 reached pid {pid}")),
            Err(e) => refused(&errno_of(e)),
        },
    };
    b.add(p, "signal a process outside", Expect::Blocked, result);
    let legacy = fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti")
        .map(|s| s.trim() != "0")
        .unwrap_or(true);
    let result = if legacy || spec.host.root {
        match in_child(tiocsti_own_pty) {
            Ok(()) => succeeded("pushed a byte into its own terminal's input"),
            Err(e) => refused(&e),
        }
    } else {
        skipped("the kernel refuses TIOCSTI to non-root anyway (dev.tty.legacy_tiocsti=0)")
    };
    b.add(p, "TIOCSTI into a terminal", Expect::Blocked, result);
    let result = if spec.host.terminal {
        match fs::OpenOptions::new().read(true).open("/dev/tty") {
            // The sandbox's own pty, whose session is inside (a session
            // outside shows as 0), is harmless; the caller's is not.
            Ok(tty) => match nix::sys::termios::tcgetsid(&tty) {
                Ok(sid) if sid.as_raw() > 0 => (
                    Outcome::Refused,
                    format!("it is the sandbox's own pty (session {sid} inside)"),
                ),
                _ => succeeded("opened the caller's controlling terminal"),
            },
            Err(e) => refused(&e),
        }
    } else {
        skipped("cordon probe was not started from a terminal")
    };
    b.add(
        p,
        "open the caller's terminal (/dev/tty)",
        Expect::Blocked,
        result,
    );
    let result = if spec.host.user_namespaces {
        match in_child(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER).map_err(errno_of)
        }) {
            Ok(()) => succeeded("unshare(CLONE_NEWUSER) worked"),
            Err(e) => refused(&e),
        }
    } else {
        skipped("this host does not let cordon's caller create one either")
    };
    b.add(p, "create a user namespace", Expect::Blocked, result);
    let result = {
        let dir = std::env::temp_dir().join(unique("cordon-probe-mnt-"));
        match fs::create_dir(&dir) {
            Ok(()) => {
                let r = nix::mount::mount(
                    Some("tmpfs"),
                    &dir,
                    Some("tmpfs"),
                    nix::mount::MsFlags::empty(),
                    Some("size=4k"),
                );
                let r = match r {
                    Ok(()) => {
                        let _ = nix::mount::umount(&dir);
                        succeeded("mounted a tmpfs (unmounted)")
                    }
                    Err(e) => refused(&errno_of(e)),
                };
                let _ = fs::remove_dir(&dir);
                r
            }
            Err(e) => skipped(format!("no directory to mount on: {}", describe(&e))),
        }
    };
    b.add(p, "mount", Expect::Blocked, result);
    let setuid = [
        "/usr/bin/su",
        "/bin/su",
        "/usr/bin/passwd",
        "/usr/bin/sudo",
        "/usr/bin/mount",
    ]
    .into_iter()
    .find(|p| {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(p).is_ok_and(|m| m.mode() & 0o4000 != 0 && m.uid() == 0)
    });
    let result = match attempt::no_new_privs() {
        Ok(true) => (
            Outcome::Refused,
            format!(
                "no_new_privs is set: exec ignores setuid bits{}",
                setuid
                    .map(|s| format!(" ({s} is setuid root)"))
                    .unwrap_or_default()
            ),
        ),
        Ok(false) => succeeded(format!(
            "no_new_privs is not set: a setuid binary{} would run with its owner's privileges",
            setuid.map(|s| format!(" such as {s}")).unwrap_or_default()
        )),
        Err(e) => refused(&e),
    };
    b.add(
        p,
        "a setuid binary gaining privilege",
        Expect::Blocked,
        result,
    );
    let result = if spec.host.keyctl {
        match attempt::keyctl_session_keyring() {
            Ok(_) => succeeded("looked up the session keyring"),
            Err(e) if e.raw_os_error() == Some(libc::ENOKEY) => {
                succeeded("reached the keyring (no session keyring)")
            }
            Err(e) => refused(&e),
        }
    } else {
        skipped("keyctl fails outside the sandbox too")
    };
    b.add(p, "keyctl", Expect::Blocked, result);
    let result = if spec.host.bpf {
        match attempt::bpf_array_map() {
            Ok(_) => succeeded("created a BPF map (freed)"),
            Err(e) => refused(&e),
        }
    } else {
        skipped("cordon's caller may not use bpf outside the sandbox either")
    };
    b.add(p, "bpf", Expect::Blocked, result);
    let result = if spec.host.io_uring {
        match attempt::io_uring_setup() {
            Ok(_) => succeeded("set up an io_uring (closed)"),
            Err(e) => refused(&e),
        }
    } else {
        skipped("io_uring is not available outside the sandbox either")
    };
    b.add(p, "io_uring", Expect::Blocked, result);
    let result = if !spec.host.modules {
        skipped("this kernel has no module support (no /proc/modules)")
    } else if spec.host.root {
        match fs::File::open("/dev/null") {
            Ok(empty) => match attempt::finit_module(empty.as_fd()) {
                Ok(()) => succeeded("the kernel loaded a module"),
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EPERM) | Some(libc::ENOSYS) | Some(libc::EACCES)
                    ) =>
                {
                    refused(&e)
                }
                Err(e) => succeeded(format!(
                    "reached the module loader (it rejected the empty file: {})",
                    describe(&e)
                )),
            },
            Err(e) => skipped(format!("no empty file to offer: {}", describe(&e))),
        }
    } else {
        skipped("cordon's caller is not root: no module loading outside either")
    };
    b.add(p, "load a kernel module", Expect::Blocked, result);
}
