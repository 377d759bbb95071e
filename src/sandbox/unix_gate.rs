//! The UNIX socket gate: no host daemon's socket is reachable by path.
//!
//! Path-named UNIX sockets are found by a file lookup that no network
//! namespace confines, and Landlock (through ABI 7) does not check the
//! connect. So every system call that can name a socket path (`connect`,
//! `sendto` with an address, `sendmsg`, `sendmmsg`) stops in the command's
//! seccomp filter and comes here, to a pool of threads in the sandbox's
//! init. The gate never lets the caller's call continue: it reads the
//! arguments once, takes a copy of the caller's socket (`pidfd_getfd`), and
//! makes the call itself, on what it read. So a second thread of the caller
//! rewriting the address, or swapping the descriptor, after the check
//! changes nothing.
//!
//! A socket path may be reached when its inode is one the sandbox bound
//! itself (a listener in the sandbox's own network namespace, asked of the
//! kernel through sock_diag), or one named by `--allow-unix-socket`. The
//! gate connects through an `O_PATH` descriptor of the inode it checked,
//! so a rename in between cannot redirect it. Abstract sockets belong to a
//! network namespace, and the sandbox has its own.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::{offset_of, size_of};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use nix::fcntl::{open, OFlag};
use nix::sys::socket::{
    getsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol,
    SockType,
};
use nix::sys::stat::{fstat, Mode, SFlag};
use nix::sys::uio::{process_vm_readv, process_vm_writev, RemoteIoVec};
use nix::unistd::Pid;

use crate::sandbox::config_gate::ConfigFiles;
use crate::sandbox::create_gate::{self, Guard, Reply};
use crate::sandbox::seccomp::{self, Gated, Notification};
use crate::sandbox::umask::Umasks;
use crate::sys;

/// A socket file, as `(device, inode)`.
pub type SocketId = (u64, u64);

/// The largest `sockaddr` (`sockaddr_storage`).
const MAX_ADDR: usize = 128;
/// More iovecs than this is `EMSGSIZE` to the kernel too (`UIO_MAXIOV`).
const MAX_IOV: usize = 1024;
/// Data one gated send carries. A stream send beyond it is a short write
/// (which callers handle); a datagram is refused as too long.
const MAX_DATA: usize = 4 << 20;
/// Control data one gated send carries (above the kernel's own limit).
const MAX_CONTROL: usize = 1 << 20;
/// Threads the gate may grow to. A caller blocked in a slow call (a
/// connect to a full backlog) holds one, as it would hold its own thread in
/// the kernel without the gate; they count against the sandbox's task cap,
/// and this bound only stops a runaway.
const MAX_WORKERS: usize = 1024;

/// How long a loopback port seen with a listener is taken to have one.
const LISTENER_SEEN: std::time::Duration = std::time::Duration::from_secs(1);
/// Loopback ports with a listener remembered at once.
const MAX_LISTENERS_SEEN: usize = 64;

/// Send flags the gate passes on (see [`Caller::send`]).
const SEND_FLAGS: libc::c_int = libc::MSG_OOB
    | libc::MSG_DONTROUTE
    | libc::MSG_DONTWAIT
    | libc::MSG_EOR
    | libc::MSG_MORE
    | libc::MSG_NOSIGNAL
    | libc::MSG_CONFIRM;

// The structs the gate reads from the caller's memory, field by field:
// the kernel's `user_msghdr`, `mmsghdr`, `iovec` and `cmsghdr`, laid out
// as libc's types of the same names. Their `size_t` fields (`msg_iovlen`,
// `msg_controllen`, `iov_len`, `cmsg_len`) and pointers are `usize` wide.
const MSGHDR_LEN: usize = size_of::<libc::msghdr>();
const MMSGHDR_LEN: usize = size_of::<libc::mmsghdr>();
const IOVEC_LEN: usize = size_of::<libc::iovec>();
/// Where a control message's data starts (`CMSG_LEN(0)`: the header is a
/// multiple of the alignment).
const CMSGHDR_LEN: usize = size_of::<libc::cmsghdr>();
/// Control messages are aligned to `size_t` (`CMSG_ALIGN`).
const CMSG_ALIGN: usize = size_of::<usize>();

/// The gate of one sandbox.
pub struct UnixGate {
    listener: OwnedFd,
    /// sock_diag, opened before init's own filter forbids netlink sockets.
    diag: Mutex<OwnedFd>,
    allowed: Vec<SocketId>,
    /// The sandbox's own loopback ports.
    local: LocalPorts,
    /// Loopback ports lately seen with a listener, and when: a connect to
    /// one of them within [`LISTENER_SEEN`] is not looked into again, so
    /// a client connecting over and over pays for one listeners' dump.
    listening: Mutex<Vec<(u16, std::time::Instant)>>,
    /// What the file creation gate refuses, and the configs it may update.
    files: FileRules,
    report: Reporter,
    /// The callers' umasks, kept between their creating calls.
    umasks: Umasks,
    idle: AtomicUsize,
    workers: AtomicUsize,
}

/// The file creation gate's share of the gate.
#[derive(Debug, Default)]
pub struct FileRules {
    /// The names it refuses to make.
    pub guard: Guard,
    /// The repositories' configs a rename may update (see `config_gate`).
    pub git_configs: ConfigFiles,
    /// The agents' config files a rename may replace (see `state_gate`).
    pub state_files: crate::sandbox::state_gate::StateFiles,
}

/// What the gate refused, for the audit log.
pub enum Refusal<'a> {
    /// A host socket path (absolute).
    Socket(&'a std::ffi::OsStr),
    /// A system call on the command filter's deny list (its name).
    Syscall(String),
    /// A name the file creation gate refused (the path as the sandbox sees
    /// it) and why.
    Create {
        path: &'a std::path::Path,
        why: crate::sandbox::create_gate::Forbidden,
    },
    /// A mode with a set-user-ID or set-group-ID bit (the call's name).
    PrivilegeMode(String),
    /// A name the kernel refused to make where the command asked (the
    /// path inside): `read_only` for `EROFS` (else `EACCES`), and whether
    /// it is in a writable area (then a path kept read-only there).
    Write {
        path: &'a std::path::Path,
        in_writable_area: bool,
        read_only: bool,
    },
    /// A bind or connect on the sandbox's own loopback that the kernel
    /// refused, or that found nothing listening.
    LocalPort(LocalPortRefusal),
}

/// A bind or connect on the sandbox's own loopback that failed for a
/// reason cordon knows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LocalPortRefusal {
    /// The address, as `127.0.0.1:8080` or `[::1]:8080`.
    pub address: String,
    /// The port.
    pub port: u16,
    /// A bind (else a connect).
    pub bind: bool,
    /// Why: the port is not among `network.local_ports` (else: nothing
    /// listens there).
    pub unlisted: bool,
}

/// The sandbox's own loopback ports, as the gate needs them to say why a
/// bind or connect there failed.
#[derive(Debug, Clone, Default)]
pub struct LocalPorts {
    /// When narrowed, the ports programs inside may bind (`None`: any).
    pub only: Option<Vec<u16>>,
    /// The ports cordon itself listens on (its proxy, the host ports).
    pub cordons: Vec<u16>,
}

/// Told of every refusal.
pub type Reporter = Box<dyn Fn(Refusal<'_>) + Send + Sync>;

/// What a refused or failed call returns: an errno.
pub(crate) type Errno = i32;

pub(crate) fn errno(e: io::Error) -> Errno {
    e.raw_os_error().unwrap_or(libc::EIO)
}

impl UnixGate {
    /// Opens the sock_diag socket the gate asks about sockets; call before
    /// init's seccomp filter, which forbids netlink.
    pub fn open_diag() -> io::Result<OwnedFd> {
        Ok(socket(
            AddressFamily::Netlink,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkSockDiag,
        )?)
    }

    /// Starts serving `listener` (the command filter's) on threads of
    /// their own; they live as long as init.
    pub fn start(
        listener: OwnedFd,
        diag: OwnedFd,
        allowed: Vec<SocketId>,
        local: LocalPorts,
        files: FileRules,
        report: Reporter,
    ) -> io::Result<()> {
        // The caller's CPU runs the worker that answers it, and the caller
        // again after: without it, each call woke a worker on the other,
        // idle, CPU and the caller back there (measured here, a creating
        // call between 1 ms of work: 115 µs without, 48 µs with; bare
        // 2.5 µs). That waking every worker waiting on the listener onto
        // the caller's CPU stays cheap because the pool stays small (a
        // worker counts as idle once its call is answered). Older kernels
        // lack it; the gate works the same, slower.
        let _ = sys::seccomp_notify_sync_wakeup(listener.as_fd());
        let gate = Arc::new(UnixGate {
            listener,
            diag: Mutex::new(diag),
            allowed,
            local,
            listening: Mutex::default(),
            files,
            report,
            umasks: Umasks::default(),
            idle: AtomicUsize::new(0),
            workers: AtomicUsize::new(0),
        });
        gate.spawn_worker()
    }

    fn spawn_worker(self: &Arc<Self>) -> io::Result<()> {
        self.workers.fetch_add(1, Ordering::SeqCst);
        let gate = Arc::clone(self);
        std::thread::Builder::new()
            .name("cordon-unix-gate".into())
            .stack_size(256 << 10)
            .spawn(move || gate.work())
            .map(drop)
            .inspect_err(|_| {
                self.workers.fetch_sub(1, Ordering::SeqCst);
            })
    }

    fn work(self: Arc<Self>) {
        // A working directory of this thread's own: each call's relative
        // path resolves from its caller's directory.
        if nix::sched::unshare(nix::sched::CloneFlags::CLONE_FS).is_err() {
            self.workers.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        self.idle.fetch_add(1, Ordering::SeqCst);
        loop {
            let received = seccomp::receive(&self.listener);
            let was_last_idle = self.idle.fetch_sub(1, Ordering::SeqCst) == 1;
            let Ok(call) = received else {
                // A caller died before its call was read (this worker goes
                // back to waiting: no successor needed); or every process
                // under the filter is gone, and then the listener hangs up
                // and each receive fails at once: stop rather than spin.
                if seccomp::hung_up(&self.listener) {
                    self.workers.fetch_sub(1, Ordering::SeqCst);
                    return;
                }
                self.idle.fetch_add(1, Ordering::SeqCst);
                continue;
            };
            // The last idle worker took a call that may block (a connect
            // to a full backlog): keep one more waiting for the next.
            if was_last_idle && self.workers.load(Ordering::SeqCst) < MAX_WORKERS {
                let _ = self.spawn_worker();
            }
            let reply = self.handle(&call);
            // Idle from here: answered, the caller may call again at once,
            // before this worker is back in its receive. Counted busy until
            // then, the worker that took that call would find none idle and
            // spawn another; every worker waiting wakes for each call, and
            // seven of them made a creating call ten times as slow as bare.
            self.idle.fetch_add(1, Ordering::SeqCst);
            self.answer(call.id, reply);
            if call.call == Gated::Umask {
                self.umasks.settle(Pid::from_raw(call.tid as i32));
            }
        }
    }

    /// Serves `call`, up to its answer. Refusals are recorded before they
    /// are answered, so the log keeps the order in which the caller met
    /// them.
    fn handle(&self, call: &Notification) -> Result<Reply, Errno> {
        match call.call {
            // The receive sends a namespace flag to the deny list's arm:
            // looked at again here, where letting one through would open
            // the process door.
            Gated::OwnFs if !seccomp::makes_namespace(call.nr.into(), call.args[0]) => {
                self.umasks.stop();
                Ok(Reply::Continue)
            }
            Gated::Other | Gated::OwnFs => {
                // The command filter's deny list.
                (self.report)(Refusal::Syscall(seccomp::syscall_name(call.nr)));
                Err(libc::EPERM)
            }
            Gated::PrivilegeMode => {
                (self.report)(Refusal::PrivilegeMode(seccomp::syscall_name(call.nr)));
                Err(libc::EPERM)
            }
            Gated::Create(kind) => Caller::attach(&self.listener, call).and_then(|caller| {
                create_gate::serve(&caller, call, kind, &self.files, &self.umasks, &self.report)
            }),
            Gated::Umask => {
                self.umasks
                    .changing(Pid::from_raw(call.tid as i32), call.args[0], || {
                        seccomp::still_waiting(&self.listener, call.id)
                    });
                Ok(Reply::Continue)
            }
            _ => self.serve(call).map(Reply::Value),
        }
    }

    /// Answers call `id` with `reply`.
    fn answer(&self, id: u64, reply: Result<Reply, Errno>) {
        match reply {
            Ok(Reply::Value(v)) => seccomp::answer(&self.listener, id, Ok(v)),
            Ok(Reply::Fd { fd, cloexec }) => {
                let sent =
                    sys::seccomp_notify_addfd_send(self.listener.as_fd(), id, fd.as_fd(), cloexec);
                // Not installed (the caller's table is full, or it is
                // gone): the call fails as an open would.
                if let Err(e) = sent {
                    seccomp::answer(&self.listener, id, Err(errno(e)));
                }
            }
            Ok(Reply::Continue) => seccomp::let_through(&self.listener, id),
            Err(e) => seccomp::answer(&self.listener, id, Err(e)),
        }
    }

    /// Makes the gated call `call`. A loopback connect that failed, or was
    /// left pending, is looked into before it is answered: looked into
    /// after, the report of a command's last connect could come after the
    /// command had exited and its summary been made (a listener found is
    /// remembered a while, so a port's later connects skip the dump).
    fn serve(&self, call: &Notification) -> Result<i64, Errno> {
        let caller = Caller::attach(&self.listener, call)?;
        let fd = call.args[0] as RawFd;
        match call.call {
            Gated::Connect => {
                let addr = caller.read(call.args[1], call.args[2] as usize, MAX_ADDR)?;
                let sock = caller.fd(fd)?;
                let to = self.destination(&caller, addr)?;
                let connected = sys::connect_raw(sock.as_fd(), to.bytes()).map_err(errno);
                if let Err(e) = connected {
                    self.attribute_local(to.bytes(), false, e);
                }
                connected.map(|()| 0)
            }
            Gated::SendTo => {
                let sock = caller.fd(fd)?;
                let addr = caller.read(call.args[4], call.args[5] as usize, MAX_ADDR)?;
                let data = caller.read_data(&sock, call.args[1], call.args[2] as usize)?;
                let to = self.destination(&caller, addr)?;
                let flags = call.args[3] as libc::c_int;
                caller.send(&sock, Some(to.bytes()), &[IoSlice::new(&data)], &[], flags)
            }
            Gated::Bind => {
                let addr = caller.read(call.args[1], call.args[2] as usize, MAX_ADDR)?;
                let sock = caller.fd(fd)?;
                let family = libc::c_int::from(u16::from_ne_bytes(field(&addr, 0)));
                // A path (not autobind, not abstract) is a new name.
                if family == libc::AF_UNIX && addr.len() > 2 && addr[2] != 0 {
                    let path = &addr[2..];
                    let path = &path[..path.iter().position(|b| *b == 0).unwrap_or(path.len())];
                    return create_gate::bind_unix(
                        &caller,
                        &sock,
                        path,
                        &self.files.guard,
                        &self.umasks,
                        &self.report,
                    );
                }
                let bound = sys::bind_raw(sock.as_fd(), &addr).map_err(errno);
                if let Err(e) = bound {
                    self.attribute_local(&addr, true, e);
                }
                bound.map(|()| 0)
            }
            Gated::SendMsg => {
                let sock = caller.fd(fd)?;
                let flags = call.args[2] as libc::c_int;
                self.send_msghdr(&caller, &sock, call.args[1], flags)
            }
            Gated::SendMmsg => {
                let sock = caller.fd(fd)?;
                // The kernel reads vlen as an unsigned int.
                let count = (call.args[2] as u32 as usize).min(MAX_IOV);
                let flags = call.args[3] as libc::c_int;
                let mut sent = 0;
                for i in 0..count {
                    // A send may have blocked: the caller must still be the
                    // one waiting, or its thread id may name another by now.
                    if i > 0 && !seccomp::still_waiting(&self.listener, call.id) {
                        break;
                    }
                    let header = call.args[1]
                        .checked_add((i * MMSGHDR_LEN) as u64)
                        .ok_or(libc::EFAULT)?;
                    match self.send_msghdr(&caller, &sock, header, flags) {
                        Ok(n) => {
                            if !seccomp::still_waiting(&self.listener, call.id) {
                                break;
                            }
                            let at = header
                                .checked_add(offset_of!(libc::mmsghdr, msg_len) as u64)
                                .ok_or(libc::EFAULT)?;
                            caller.write_u32(at, n as u32)?;
                            sent += 1;
                        }
                        Err(e) if sent == 0 => return Err(e),
                        Err(_) => break,
                    }
                }
                Ok(sent)
            }
            Gated::Create(_)
            | Gated::PrivilegeMode
            | Gated::Umask
            | Gated::OwnFs
            | Gated::Other => Err(libc::EPERM),
        }
    }

    /// One `struct msghdr` of the caller's, sent on `sock`.
    fn send_msghdr(
        &self,
        caller: &Caller,
        sock: &OwnedFd,
        header: u64,
        flags: libc::c_int,
    ) -> Result<i64, Errno> {
        let hdr = caller.read(header, MSGHDR_LEN, MSGHDR_LEN)?;
        let word = |at| usize::from_ne_bytes(field(&hdr, at));
        let name = word(offset_of!(libc::msghdr, msg_name)) as u64;
        let name_len =
            libc::socklen_t::from_ne_bytes(field(&hdr, offset_of!(libc::msghdr, msg_namelen)));
        let iov = word(offset_of!(libc::msghdr, msg_iov)) as u64;
        let iov_len = word(offset_of!(libc::msghdr, msg_iovlen));
        let control = word(offset_of!(libc::msghdr, msg_control)) as u64;
        let control_len = word(offset_of!(libc::msghdr, msg_controllen));

        let to = if name != 0 && name_len != 0 {
            let addr = caller.read(name, name_len as usize, MAX_ADDR)?;
            Some(self.destination(caller, addr)?)
        } else {
            None
        };
        if iov_len > MAX_IOV {
            return Err(libc::EMSGSIZE);
        }
        let vecs = caller.read(iov, iov_len * IOVEC_LEN, MAX_IOV * IOVEC_LEN)?;
        let mut budget = MAX_DATA;
        let mut buffers = Vec::with_capacity(iov_len);
        for v in vecs.chunks_exact(IOVEC_LEN) {
            let base = usize::from_ne_bytes(field(v, offset_of!(libc::iovec, iov_base))) as u64;
            let len = usize::from_ne_bytes(field(v, offset_of!(libc::iovec, iov_len)));
            let take = within(len, budget, sock)?;
            buffers.push(caller.read(base, take, take)?);
            budget -= take;
        }
        let (control, _fds) = if control != 0 && control_len != 0 {
            let raw = caller.read(control, control_len, MAX_CONTROL)?;
            caller.translate_control(raw)?
        } else {
            (Vec::new(), Vec::new())
        };
        let slices: Vec<IoSlice<'_>> = buffers.iter().map(|b| IoSlice::new(b)).collect();
        caller.send(
            sock,
            to.as_ref().map(|t| t.bytes()),
            &slices,
            &control,
            flags,
        )
    }

    /// Reports a bind or connect to the sandbox's own loopback at `addr`
    /// that failed with `errno` for a reason cordon can name: a port left
    /// out of `network.local_ports` (Landlock's `EACCES`), or a connect to
    /// a port where nothing listens (refused at once, or pending on a
    /// non-blocking socket where no listener will answer). Another
    /// address, or a port of cordon's own, is not reported. The gate sees
    /// every connect and bind: INET ones too pass through it.
    fn attribute_local(&self, addr: &[u8], bind: bool, errno: Errno) {
        let Some((address, port)) = loopback(addr) else {
            return;
        };
        if self.local.cordons.contains(&port) {
            return;
        }
        let unlisted = errno == libc::EACCES
            && self
                .local
                .only
                .as_ref()
                .is_some_and(|only| !only.contains(&port));
        // Refused at once, or pending on a non-blocking socket: either way
        // a listener on the port (of either family) says it is not for
        // want of a server, and a client trying the other family next
        // will find it.
        let nothing_listens =
            !bind && matches!(errno, libc::ECONNREFUSED | libc::EINPROGRESS) && !self.listens(port);
        if unlisted || nothing_listens {
            (self.report)(Refusal::LocalPort(LocalPortRefusal {
                address,
                port,
                bind,
                unlisted,
            }));
        }
    }

    /// Whether a TCP socket of the sandbox listens on loopback `port`, or
    /// did lately; true when sock_diag cannot say (nothing is reported
    /// that is not known).
    fn listens(&self, port: u16) -> bool {
        let now = std::time::Instant::now();
        let Ok(mut seen) = self.listening.lock() else {
            return true;
        };
        seen.retain(|(_, at)| now.duration_since(*at) < LISTENER_SEEN);
        if seen.iter().any(|(p, _)| *p == port) {
            return true;
        }
        let listens = self
            .diag
            .lock()
            .ok()
            .and_then(|diag| diag_tcp_listens(&diag, port).ok())
            .unwrap_or(true);
        if listens && seen.len() < MAX_LISTENERS_SEEN {
            seen.push((port, now));
        }
        listens
    }

    /// Where a call may go: the address as read, or, for a socket path,
    /// the checked inode itself.
    fn destination(&self, caller: &Caller, addr: Vec<u8>) -> Result<Destination, Errno> {
        let family = libc::c_int::from(u16::from_ne_bytes(field(&addr, 0)));
        // Unnamed (autobind) and abstract addresses involve no path.
        if family != libc::AF_UNIX || addr.len() <= 2 || addr[2] == 0 {
            return Ok(Destination::Verbatim(addr));
        }
        let path = &addr[2..];
        let path = &path[..path.iter().position(|b| *b == 0).unwrap_or(path.len())];
        let path = caller.own_proc_path(path);
        let path = std::ffi::OsStr::from_bytes(&path);
        caller.enter_cwd()?;
        let pin = open(path, OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty())
            .map(sys::own_fd)
            .map_err(|e| e as Errno)?;
        let st = fstat(pin.as_raw_fd()).map_err(|e| e as Errno)?;
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
            return Err(libc::ECONNREFUSED);
        }
        let id = (st.st_dev, st.st_ino);
        if !self.allowed.contains(&id) && !self.bound_in_sandbox(id)? {
            // This thread's working directory is the caller's.
            let shown = std::env::current_dir().map_or_else(|_| path.into(), |cwd| cwd.join(path));
            (self.report)(Refusal::Socket(shown.as_os_str()));
            return Err(libc::EACCES);
        }
        let mut bytes = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        bytes.extend_from_slice(format!("/proc/self/fd/{}", pin.as_raw_fd()).as_bytes());
        bytes.push(0);
        Ok(Destination::Pinned { bytes, _pin: pin })
    }

    /// Is a socket of the sandbox's own network namespace bound to this
    /// inode? sock_diag reports the sockets of the asker's namespace only.
    fn bound_in_sandbox(&self, (dev, ino): SocketId) -> Result<bool, Errno> {
        let diag = self.diag.lock().map_err(|_| libc::EIO)?;
        let kernel_dev = (nix::sys::stat::major(dev) << 20) | nix::sys::stat::minor(dev);
        let found = diag_vfs_inodes(&diag)
            .map_err(errno)?
            .contains(&(kernel_dev as u32, ino as u32));
        Ok(found)
    }
}

/// A destination a gated call goes to.
enum Destination {
    /// Not a path: the bytes the caller gave, read once.
    Verbatim(Vec<u8>),
    /// A socket path, replaced by a path to the inode the gate checked,
    /// held open until the call is made.
    Pinned { bytes: Vec<u8>, _pin: OwnedFd },
}

impl Destination {
    fn bytes(&self) -> &[u8] {
        match self {
            Destination::Verbatim(b) | Destination::Pinned { bytes: b, .. } => b,
        }
    }
}

/// How much of `len` bytes a gated send carries when `budget` is left: a
/// stream takes what fits (a short write, which callers handle), a
/// datagram must fit whole or is too long.
fn within(len: usize, budget: usize, sock: &OwnedFd) -> Result<usize, Errno> {
    if len > budget && !is_stream(sock) {
        return Err(libc::EMSGSIZE);
    }
    Ok(len.min(budget))
}

fn is_stream(sock: &OwnedFd) -> bool {
    getsockopt(sock, sockopt::SockType).is_ok_and(|t| t == SockType::Stream)
}

/// The thread waiting in a gated call.
pub(crate) struct Caller<'gate> {
    tid: Pid,
    listener: &'gate OwnedFd,
    id: u64,
    /// Opened when a descriptor of the caller's is first needed: most
    /// creating calls need none, and a pidfd costs as much as the rest of
    /// such a call's system calls together.
    pidfd: std::cell::OnceCell<OwnedFd>,
}

impl<'gate> Caller<'gate> {
    /// Checks that the call is still waiting: then its tid is the caller's,
    /// not a recycled one, for what the gate opens of it next.
    pub(crate) fn attach(listener: &'gate OwnedFd, call: &Notification) -> Result<Self, Errno> {
        if !seccomp::still_waiting(listener, call.id) {
            return Err(libc::ESRCH);
        }
        Ok(Caller {
            tid: Pid::from_raw(call.tid as i32),
            listener,
            id: call.id,
            pidfd: std::cell::OnceCell::new(),
        })
    }

    /// Whether the call still waits: then what was opened of the caller's
    /// by its tid before this is the caller's, not a recycled tid's.
    pub(crate) fn still_waiting(&self) -> bool {
        seccomp::still_waiting(self.listener, self.id)
    }

    /// The caller's pidfd: checked, after it is opened, that the call is
    /// still waiting, so it is the caller's, not a recycled pid's.
    fn pidfd(&self) -> Result<BorrowedFd<'_>, Errno> {
        if let Some(pidfd) = self.pidfd.get() {
            return Ok(pidfd.as_fd());
        }
        // Before Linux 6.9 a pidfd names a process, not a thread: open the
        // caller's thread group then (the check below still holds).
        let pidfd = sys::pidfd_open(self.tid)
            .or_else(|_| thread_group(self.tid).and_then(sys::pidfd_open))
            .map_err(|_| libc::ESRCH)?;
        if !self.still_waiting() {
            return Err(libc::ESRCH);
        }
        Ok(self.pidfd.get_or_init(|| pidfd).as_fd())
    }

    /// `len` bytes at `addr` in the caller's memory; `EINVAL` above `max`,
    /// as the kernel answers an oversized address.
    pub(crate) fn read(&self, addr: u64, len: usize, max: usize) -> Result<Vec<u8>, Errno> {
        if len > max {
            return Err(libc::EINVAL);
        }
        // Under an address-space limit the copy may not fit: the call
        // fails with ENOMEM, and init goes on.
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| libc::ENOMEM)?;
        buf.resize(len, 0);
        if len == 0 {
            return Ok(buf);
        }
        let remote = [RemoteIoVec {
            base: addr as usize,
            len,
        }];
        let n = process_vm_readv(self.tid, &mut [IoSliceMut::new(&mut buf)], &remote)
            .map_err(|e| e as Errno)?;
        if n != len {
            return Err(libc::EFAULT);
        }
        Ok(buf)
    }

    /// The NUL-terminated path at `addr` (without its NUL), read a page
    /// at a time so a string ending just before unmapped memory is read
    /// as the kernel would; `ENAMETOOLONG` past `PATH_MAX`.
    pub(crate) fn read_path(&self, addr: u64) -> Result<Vec<u8>, Errno> {
        const PAGE: u64 = 4096;
        const PATH_MAX: usize = libc::PATH_MAX as usize;
        if addr == 0 {
            return Err(libc::EFAULT);
        }
        let mut path = Vec::new();
        let mut at = addr;
        loop {
            let chunk = (PAGE - at % PAGE) as usize;
            let bytes = self.read(at, chunk, PAGE as usize)?;
            if let Some(end) = bytes.iter().position(|b| *b == 0) {
                path.extend_from_slice(&bytes[..end]);
                return Ok(path);
            }
            path.extend_from_slice(&bytes);
            if path.len() >= PATH_MAX {
                return Err(libc::ENAMETOOLONG);
            }
            at = at.checked_add(chunk as u64).ok_or(libc::EFAULT)?;
        }
    }

    /// The caller's thread id, in the sandbox's pid namespace.
    pub(crate) fn tid(&self) -> Pid {
        self.tid
    }

    /// Send data, within the gate's budget (see [`within`]).
    fn read_data(&self, sock: &OwnedFd, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
        let take = within(len, MAX_DATA, sock)?;
        self.read(addr, take, take)
    }

    fn write_u32(&self, addr: u64, value: u32) -> Result<(), Errno> {
        let bytes = value.to_ne_bytes();
        let remote = [RemoteIoVec {
            base: addr as usize,
            len: bytes.len(),
        }];
        process_vm_writev(self.tid, &[IoSlice::new(&bytes)], &remote)
            .map(drop)
            .map_err(|e| e as Errno)
    }

    /// The caller's descriptor `fd`, as a descriptor of ours.
    pub(crate) fn fd(&self, fd: RawFd) -> Result<OwnedFd, Errno> {
        sys::pidfd_getfd(self.pidfd()?, fd).map_err(errno)
    }

    /// `path` with `/proc/self` and `/proc/thread-self` naming the caller,
    /// not the gate's thread that resolves it.
    pub(crate) fn own_proc_path(&self, path: &[u8]) -> Vec<u8> {
        for own in [&b"/proc/self"[..], b"/proc/thread-self"] {
            if let Some(rest) = path.strip_prefix(own) {
                if rest.is_empty() || rest[0] == b'/' {
                    let mut mapped = format!("/proc/{}", self.tid).into_bytes();
                    mapped.extend_from_slice(rest);
                    return mapped;
                }
            }
        }
        path.to_vec()
    }

    /// Makes this thread's working directory the caller's.
    fn enter_cwd(&self) -> Result<(), Errno> {
        let cwd = format!("/proc/{}/cwd", self.tid);
        let dir = open(
            cwd.as_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map(sys::own_fd)
        .map_err(|e| e as Errno)?;
        nix::unistd::fchdir(dir.as_raw_fd()).map_err(|e| e as Errno)
    }

    /// Sends as the caller would have. `MSG_NOSIGNAL` keeps a broken pipe
    /// from signalling init; the caller gets its SIGPIPE unless it asked
    /// for none.
    fn send(
        &self,
        sock: &OwnedFd,
        to: Option<&[u8]>,
        data: &[IoSlice<'_>],
        control: &[u8],
        flags: libc::c_int,
    ) -> Result<i64, Errno> {
        let nosignal = MsgFlags::MSG_NOSIGNAL.bits();
        // Only flags that change how bytes go, never where or from what:
        // MSG_FASTOPEN would connect a TCP socket past Landlock's connect
        // check, MSG_ZEROCOPY would let the kernel keep reading the gate's
        // buffer after it is freed and reused.
        if flags & !SEND_FLAGS != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        match sys::send_raw(sock.as_fd(), to, data, control, flags | nosignal) {
            Ok(n) => Ok(n as i64),
            Err(e) => {
                let e = errno(e);
                if e == libc::EPIPE && flags & nosignal == 0 {
                    let _ = nix::sys::signal::kill(self.tid, nix::sys::signal::Signal::SIGPIPE);
                }
                Err(e)
            }
        }
    }

    /// The caller's control messages, with its descriptors (SCM_RIGHTS)
    /// replaced by copies of ours and its credentials (SCM_CREDENTIALS) by
    /// ours, which the kernel checks against the sender. The copies are
    /// returned so they stay open until the send.
    fn translate_control(&self, raw: Vec<u8>) -> Result<(Vec<u8>, Vec<OwnedFd>), Errno> {
        let mut out = raw;
        let mut fds = Vec::new();
        let mut at = 0;
        while at + CMSGHDR_LEN <= out.len() {
            // Every length is the caller's: checked before any sum, so a
            // huge one cannot wrap around (and take init down with a panic).
            let len =
                usize::from_ne_bytes(field(&out, at + offset_of!(libc::cmsghdr, cmsg_len))) as u64;
            let level = i32::from_ne_bytes(field(&out, at + offset_of!(libc::cmsghdr, cmsg_level)));
            let kind = i32::from_ne_bytes(field(&out, at + offset_of!(libc::cmsghdr, cmsg_type)));
            let room = (out.len() - at) as u64;
            if len < CMSGHDR_LEN as u64 || len > room {
                return Err(libc::EINVAL);
            }
            let len = len as usize;
            let data = at + CMSGHDR_LEN..at + len;
            if level == libc::SOL_SOCKET && kind == libc::SCM_RIGHTS {
                for slot in out[data].chunks_exact_mut(4) {
                    let theirs = i32::from_ne_bytes(field(slot, 0));
                    let ours = self.fd(theirs)?;
                    slot.copy_from_slice(&ours.as_raw_fd().to_ne_bytes());
                    fds.push(ours);
                }
            } else if level == libc::SOL_SOCKET && kind == libc::SCM_CREDENTIALS {
                let pid = std::process::id() as i32;
                let start = data.start;
                if data.len() >= 4 {
                    out[start..start + 4].copy_from_slice(&pid.to_ne_bytes());
                }
            }
            // Aligned up, within `room` + 7: no overflow.
            at += (len + CMSG_ALIGN - 1) & !(CMSG_ALIGN - 1);
        }
        Ok((out, fds))
    }
}

/// The address (`127.0.0.1:8080`, `[::1]:8080`) and port of a
/// `sockaddr_in` or `sockaddr_in6` on the loopback (127.0.0.0/8, ::1, or
/// 127.0.0.0/8 mapped into IPv6); `None` for any other address.
fn loopback(addr: &[u8]) -> Option<(String, u16)> {
    let family = libc::c_int::from(u16::from_ne_bytes(field(addr, 0)));
    let port = u16::from_be_bytes(field(addr, 2));
    let ip = match family {
        libc::AF_INET if addr.len() >= size_of::<libc::sockaddr_in>() => {
            std::net::IpAddr::from(field::<4>(addr, 4))
        }
        libc::AF_INET6 if addr.len() >= size_of::<libc::sockaddr_in6>() => {
            let v6 = std::net::Ipv6Addr::from(field::<16>(addr, 8));
            match v6.to_ipv4_mapped() {
                Some(v4) => std::net::IpAddr::V4(v4),
                None => std::net::IpAddr::V6(v6),
            }
        }
        _ => return None,
    };
    ip.is_loopback()
        .then(|| (std::net::SocketAddr::new(ip, port).to_string(), port))
}

/// The `N` bytes of a kernel struct's field at `at` in `bytes` (native
/// endian), or zeros past the end: callers check lengths first, so this
/// never decides anything, it only cannot panic.
fn field<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    at.checked_add(N)
        .and_then(|end| bytes.get(at..end))
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0; N])
}

/// The process that thread `tid` belongs to.
fn thread_group(tid: Pid) -> io::Result<Pid> {
    create_gate::status_field(tid, "Tgid:")
        .and_then(|v| v.parse().ok())
        .map(Pid::from_raw)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))
}

// linux/sock_diag.h, and netlink's header and attribute (libc's).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_HDR: usize = size_of::<libc::nlmsghdr>();
const NLA_HDR: usize = size_of::<libc::nlattr>();

/// Sends a sock_diag dump request whose body (after the netlink header)
/// is `body`, and calls `each` with every answer's body until the dump
/// is done.
fn diag_dump(diag: &OwnedFd, body: &[u8], mut each: impl FnMut(&[u8])) -> io::Result<()> {
    let align = |len: usize| libc::NLMSG_ALIGN(len) as usize;
    let header = libc::nlmsghdr {
        nlmsg_len: (NLMSG_HDR + body.len()) as u32,
        nlmsg_type: SOCK_DIAG_BY_FAMILY,
        nlmsg_flags: (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16,
        nlmsg_seq: 1,
        nlmsg_pid: 0,
    };
    let mut req = Vec::with_capacity(NLMSG_HDR + body.len());
    req.extend_from_slice(&header.nlmsg_len.to_ne_bytes());
    req.extend_from_slice(&header.nlmsg_type.to_ne_bytes());
    req.extend_from_slice(&header.nlmsg_flags.to_ne_bytes());
    req.extend_from_slice(&header.nlmsg_seq.to_ne_bytes());
    req.extend_from_slice(&header.nlmsg_pid.to_ne_bytes());
    req.extend_from_slice(body);
    nix::sys::socket::sendto(
        diag.as_raw_fd(),
        &req,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )?;
    let mut buf = vec![0u8; 32 << 10];
    loop {
        let n = nix::sys::socket::recv(diag.as_raw_fd(), &mut buf, MsgFlags::empty())?;
        let mut at = 0;
        while at + NLMSG_HDR <= n {
            let len = u32::from_ne_bytes(field(&buf, at + offset_of!(libc::nlmsghdr, nlmsg_len)))
                as usize;
            let kind = u16::from_ne_bytes(field(&buf, at + offset_of!(libc::nlmsghdr, nlmsg_type)));
            if len < NLMSG_HDR || at + len > n {
                return Err(io::Error::from_raw_os_error(libc::EBADMSG));
            }
            match libc::c_int::from(kind) {
                libc::NLMSG_DONE => return Ok(()),
                libc::NLMSG_ERROR => return Err(io::Error::from_raw_os_error(libc::EPROTO)),
                _ => each(&buf[at + NLMSG_HDR..at + len]),
            }
            at += align(len);
        }
    }
}

/// The `(device, inode)` of every socket file bound in this network
/// namespace, in the kernel's encoding (`unix_diag_vfs`).
///
/// The UNIX half of sock_diag (`linux/unix_diag.h`), which libc does not
/// carry, is spelled out here: a request of five fields and one attribute
/// read back.
fn diag_vfs_inodes(diag: &OwnedFd) -> io::Result<Vec<(u32, u32)>> {
    // linux/unix_diag.h.
    const UDIAG_SHOW_VFS: u32 = 0x2;
    const UNIX_DIAG_VFS: u16 = 1;
    /// `struct unix_diag_msg`, which the attributes follow.
    const UNIX_DIAG_MSG_LEN: usize = 16;
    /// `struct unix_diag_vfs`: inode, then device.
    const VFS_INO: usize = 0;
    const VFS_DEV: usize = 4;
    let align = |len: usize| libc::NLMSG_ALIGN(len) as usize;

    // `struct unix_diag_req`: family, protocol, pad, states, inode, show,
    // cookie[2].
    let mut req = Vec::with_capacity(24);
    req.push(libc::AF_UNIX as u8); // sdiag_family
    req.push(0); // sdiag_protocol
    req.extend_from_slice(&0u16.to_ne_bytes()); // pad
    req.extend_from_slice(&u32::MAX.to_ne_bytes()); // udiag_states: every state
    req.extend_from_slice(&0u32.to_ne_bytes()); // udiag_ino: all
    req.extend_from_slice(&UDIAG_SHOW_VFS.to_ne_bytes()); // udiag_show
    req.extend_from_slice(&[0xff; 8]); // udiag_cookie: none

    let mut found = Vec::new();
    diag_dump(diag, &req, |msg| {
        let mut attr = UNIX_DIAG_MSG_LEN;
        while attr + NLA_HDR <= msg.len() {
            let alen =
                u16::from_ne_bytes(field(msg, attr + offset_of!(libc::nlattr, nla_len))) as usize;
            let atype = u16::from_ne_bytes(field(msg, attr + offset_of!(libc::nlattr, nla_type)));
            if alen < NLA_HDR || attr + alen > msg.len() {
                break;
            }
            if atype == UNIX_DIAG_VFS && alen >= NLA_HDR + 8 {
                let vfs = |o| u32::from_ne_bytes(field(msg, attr + NLA_HDR + o));
                found.push((vfs(VFS_DEV), vfs(VFS_INO)));
            }
            attr += align(alen);
        }
    })?;
    Ok(found)
}

/// Whether a TCP socket of this network namespace listens on `port`
/// (IPv4 or IPv6, any address).
///
/// The INET half of sock_diag (`linux/inet_diag.h`): `struct
/// inet_diag_req_v2` is family, protocol, extensions, pad, states, then a
/// `struct inet_diag_sockid` of 48 bytes; each answer (`struct
/// inet_diag_msg`) has the socket's source port, big-endian, at byte 4.
fn diag_tcp_listens(diag: &OwnedFd, port: u16) -> io::Result<bool> {
    const TCP_LISTEN: u32 = 10;
    const SOCKID_LEN: usize = 48;
    const SPORT: usize = 4;
    let mut listens = false;
    for family in [libc::AF_INET, libc::AF_INET6] {
        let mut req = Vec::with_capacity(8 + SOCKID_LEN);
        req.push(family as u8); // sdiag_family
        req.push(libc::IPPROTO_TCP as u8); // sdiag_protocol
        req.push(0); // idiag_ext
        req.push(0); // pad
        req.extend_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes()); // idiag_states
        req.extend_from_slice(&[0; SOCKID_LEN]); // id: any
        diag_dump(diag, &req, |msg| {
            listens |= u16::from_be_bytes(field(msg, SPORT)) == port;
        })?;
    }
    Ok(listens)
}

/// Sockets whose daemon does what any client asks as root: container
/// engines start a privileged container mounting `/` on request.
const ROOT_EQUIVALENT_SOCKETS: &[(&str, &str)] = &[
    ("docker.sock", "Docker"),
    ("containerd.sock", "containerd"),
    ("podman.sock", "Podman"),
    ("crio.sock", "CRI-O"),
    ("buildkitd.sock", "BuildKit"),
    ("libvirt-sock", "libvirt"),
];

/// Why reaching `path` hands the sandbox the host, if it does.
pub fn root_equivalent(path: &std::path::Path) -> Option<String> {
    let engine = |p: &std::path::Path| {
        let name = p.file_name()?.to_str()?;
        ROOT_EQUIVALENT_SOCKETS
            .iter()
            .find(|(socket, _)| name == *socket)
            .map(|(_, engine)| *engine)
    };
    let found = engine(path).or_else(|| engine(&std::fs::canonicalize(path).ok()?))?;
    Some(format!(
        "{found}'s socket: whoever reaches it can start a privileged container, i.e. is root on the host"
    ))
}

/// Reads a `--allow-unix-socket` path on the host: it must be a socket.
pub fn socket_id(path: &std::path::Path) -> io::Result<SocketId> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = std::fs::metadata(path)?;
    if !meta.file_type().is_socket() {
        return Err(io::Error::other("not a UNIX socket"));
    }
    Ok((meta.dev(), meta.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `addr` as the kernel's `sockaddr_in` or `sockaddr_in6` bytes.
    fn sockaddr(addr: std::net::SocketAddr) -> Vec<u8> {
        let mut bytes = Vec::new();
        match addr {
            std::net::SocketAddr::V4(v4) => {
                bytes.extend_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
                bytes.extend_from_slice(&v4.port().to_be_bytes());
                bytes.extend_from_slice(&v4.ip().octets());
                bytes.resize(size_of::<libc::sockaddr_in>(), 0);
            }
            std::net::SocketAddr::V6(v6) => {
                bytes.extend_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
                bytes.extend_from_slice(&v6.port().to_be_bytes());
                bytes.extend_from_slice(&[0; 4]);
                bytes.extend_from_slice(&v6.ip().octets());
                bytes.resize(size_of::<libc::sockaddr_in6>(), 0);
            }
        }
        bytes
    }

    #[test]
    fn loopback_addresses_are_told_from_the_rest() {
        let parsed = |a: &str| loopback(&sockaddr(a.parse().unwrap()));
        assert_eq!(
            parsed("127.0.0.1:8080"),
            Some(("127.0.0.1:8080".into(), 8080))
        );
        assert_eq!(parsed("127.1.2.3:80"), Some(("127.1.2.3:80".into(), 80)));
        assert_eq!(parsed("[::1]:5432"), Some(("[::1]:5432".into(), 5432)));
        assert_eq!(
            parsed("[::ffff:127.0.0.1]:22"),
            Some(("127.0.0.1:22".into(), 22))
        );
        assert_eq!(parsed("10.0.0.1:80"), None);
        assert_eq!(parsed("[2001:db8::1]:80"), None);
        // Too short for its family, or another family: not an address.
        assert_eq!(
            loopback(&sockaddr("127.0.0.1:1".parse().unwrap())[..8]),
            None
        );
        assert_eq!(loopback(&(libc::AF_UNIX as u16).to_ne_bytes()), None);
    }

    #[test]
    fn sock_diag_finds_a_tcp_listener_of_either_family() {
        let diag = UnixGate::open_diag().unwrap();
        let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = v4.local_addr().unwrap().port();
        assert!(diag_tcp_listens(&diag, port).unwrap());
        let v6 = std::net::TcpListener::bind("[::1]:0").unwrap();
        let v6_port = v6.local_addr().unwrap().port();
        assert!(diag_tcp_listens(&diag, v6_port).unwrap());
        drop(v4);
        // A port nobody listens on.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let free_port = free.local_addr().unwrap().port();
        drop(free);
        assert!(!diag_tcp_listens(&diag, free_port).unwrap());
    }

    #[test]
    fn sock_diag_finds_a_socket_bound_here_and_not_a_stale_file() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live.sock");
        let stale = dir.path().join("stale.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&live).unwrap();
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        let diag = UnixGate::open_diag().unwrap();
        let found = diag_vfs_inodes(&diag).unwrap();
        let kernel_id = |path: &std::path::Path| {
            let (dev, ino) = socket_id(path).unwrap();
            let kdev = (nix::sys::stat::major(dev) << 20) | nix::sys::stat::minor(dev);
            (kdev as u32, ino as u32)
        };
        assert!(found.contains(&kernel_id(&live)), "{found:?}");
        assert!(!found.contains(&kernel_id(&stale)), "{found:?}");
        // Asked twice on one socket: no leftovers of the first dump.
        assert!(diag_vfs_inodes(&diag).unwrap().contains(&kernel_id(&live)));
    }

    /// A listener whose filter no task is under any more: the filter was
    /// loaded on a thread of its own (filters are per thread), which has
    /// exited.
    fn hung_up_listener() -> OwnedFd {
        let listener = std::thread::spawn(|| {
            use libseccomp::{ScmpAction, ScmpFilterContext, ScmpSyscall};
            let mut ctx = ScmpFilterContext::new(ScmpAction::Allow).unwrap();
            let unused = ScmpSyscall::from_name("uselib").unwrap();
            ctx.add_rule(ScmpAction::Notify, unused).unwrap();
            ctx.load().unwrap();
            crate::sys::own_fd(ctx.get_notify_fd().unwrap())
        })
        .join()
        .unwrap();
        // The thread's filter is released a little after the join returns.
        while !seccomp::hung_up(&listener) {
            std::thread::yield_now();
        }
        listener
    }

    #[test]
    fn a_worker_seeing_the_listener_hang_up_stops_without_a_successor() {
        let gate = Arc::new(UnixGate {
            listener: hung_up_listener(),
            diag: Mutex::new(UnixGate::open_diag().unwrap()),
            allowed: Vec::new(),
            local: LocalPorts::default(),
            listening: Mutex::default(),
            files: FileRules::default(),
            report: Box::new(|_| {}),
            umasks: Umasks::default(),
            idle: AtomicUsize::new(0),
            workers: AtomicUsize::new(1),
        });
        // The gate's only worker, on this thread: it was the one idle
        // worker when its receive failed.
        Arc::clone(&gate).work();
        assert_eq!(gate.workers.load(Ordering::SeqCst), 0);
        // No new worker holds the gate: none was spawned for a call that
        // never came (each would spawn the next, up to MAX_WORKERS, for
        // init's exit to kill and reap).
        assert_eq!(Arc::strong_count(&gate), 1);
    }

    #[test]
    fn container_engine_sockets_are_flagged_as_root() {
        for path in ["/var/run/docker.sock", "/run/user/1000/podman/podman.sock"] {
            let why = root_equivalent(std::path::Path::new(path));
            assert!(
                why.is_some_and(|w| w.contains("root on the host")),
                "{path}"
            );
        }
        assert!(
            root_equivalent(std::path::Path::new("/run/user/1000/gnupg/S.gpg-agent")).is_none()
        );
    }

    #[test]
    fn socket_id_refuses_what_is_not_a_socket() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        assert!(socket_id(&file).is_err());
        assert!(socket_id(&dir.path().join("missing")).is_err());
    }
}
