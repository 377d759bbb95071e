//! The supervisor–init channel: a `SOCK_SEQPACKET` socket pair carrying
//! small JSON messages and, with some, a file descriptor (SCM_RIGHTS).

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};
use serde::{Deserialize, Serialize};

use crate::policy::Layer;
use crate::sys;

/// What travels between the supervisor and init.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Message {
    /// Supervisor → init: the id maps are in place; build the sandbox.
    Go,
    /// Supervisor → init: init is in the sandbox's cgroup (joined while
    /// init builds the sandbox); the command may start.
    Limited,
    /// Init → supervisor, first thing (before Go): the Landlock ruleset,
    /// attached unless the kernel has no Landlock or the layer is off. The
    /// supervisor adds the host paths' rules to it while init builds the
    /// view (see `landlock`).
    Ruleset { attached: bool },
    /// Supervisor → init: the host paths' rules are in the ruleset, or why
    /// they could not be; init may enforce it.
    Ruled { failed: Option<String> },
    /// Init → supervisor: a layer could not be applied and the user allowed
    /// running without it.
    Degraded { layer: Layer, what: String },
    /// Init → supervisor: a layer failed; nothing of the command ran.
    /// `fix`: how to fix it, where the layer's own advice would mislead.
    Failed {
        layer: Layer,
        what: String,
        fix: Option<String>,
    },
    /// Init → supervisor: every layer is in place; the command starts now.
    /// Carries the proxy's listening sockets (HTTP, then SOCKS5), created
    /// inside the sandbox's network namespace, then the host ports'
    /// listeners (one per entry of `host_ports`, its port), then the
    /// supervisor's end of the channel for published ports' sockets if
    /// `sockets`, then the pty master if a terminal was asked for.
    Ready {
        pty: bool,
        host_ports: Vec<u16>,
        sockets: bool,
    },
    /// Supervisor → init, on the channel for published ports: a new TCP
    /// socket, please, made in the sandbox's network namespace.
    NewSocket,
    /// Init → supervisor, on that channel: the socket (attached), or why
    /// there is none.
    Socket { failed: Option<String> },
    /// Init → supervisor, while the command runs: the UNIX socket gate
    /// refused a host socket (the path as the caller named it).
    SocketRefused { path: String },
    /// Init → supervisor, while the command runs: the seccomp filter
    /// refused a system call (its name).
    SyscallRefused { syscall: String },
    /// Init → supervisor, while the command runs: the file creation gate
    /// refused a protected name (the path inside, and why).
    CreateRefused {
        path: String,
        why: crate::sandbox::create_gate::Forbidden,
    },
    /// Init → supervisor, while the command runs: a mode with a
    /// set-user-ID or set-group-ID bit was refused (the call's name).
    PrivilegeModeRefused { syscall: String },
    /// Init → supervisor, while the command runs: the kernel refused to
    /// make a name (see `unix_gate::Refusal::Write`).
    WriteRefused {
        path: String,
        in_writable_area: bool,
        read_only: bool,
    },
    /// Init → supervisor, while the command runs: a bind or connect on
    /// the sandbox's own loopback failed for a reason cordon can name.
    LocalPortRefused(crate::sandbox::unix_gate::LocalPortRefusal),
}

/// One end of the channel.
pub struct Channel(OwnedFd);

impl AsFd for Channel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl From<OwnedFd> for Channel {
    /// A channel end received from the other side.
    fn from(fd: OwnedFd) -> Channel {
        Channel(fd)
    }
}

const MAX_MESSAGE: usize = 64 * 1024;
/// Most descriptors one message carries: `Ready`'s (two proxy listeners,
/// two per host port, the published ports' channel, the pty master).
const MAX_FDS: usize = 4 + 2 * crate::policy::ports::MAX_HOST_PORTS;

impl Channel {
    /// A connected pair; both ends close on exec.
    pub fn pair() -> io::Result<(Channel, Channel)> {
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        Ok((Channel(a), Channel(b)))
    }

    /// Sends `msg`, with `fds` attached.
    pub fn send(&self, msg: &Message, fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        let body = serde_json::to_vec(msg).map_err(io::Error::other)?;
        let iov = [IoSlice::new(&body)];
        let fds: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
        let cmsgs: Vec<ControlMessage<'_>> = if fds.is_empty() {
            Vec::new()
        } else {
            vec![ControlMessage::ScmRights(&fds)]
        };
        sendmsg::<()>(
            self.0.as_raw_fd(),
            &iov,
            &cmsgs,
            MsgFlags::MSG_NOSIGNAL,
            None,
        )?;
        Ok(())
    }

    /// Receives one message and the descriptors sent with it.
    /// End of stream (the peer died) is an `UnexpectedEof` error.
    pub fn recv(&self) -> io::Result<(Message, Vec<OwnedFd>)> {
        let mut buf = vec![0u8; MAX_MESSAGE];
        let mut cmsg_space = nix::cmsg_space!([RawFd; MAX_FDS]);
        let (len, fd) = {
            let mut iov = [IoSliceMut::new(&mut buf)];
            let msg = recvmsg::<()>(
                self.0.as_raw_fd(),
                &mut iov,
                Some(&mut cmsg_space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            )?;
            let mut fds = Vec::new();
            for cmsg in msg.cmsgs()? {
                if let ControlMessageOwned::ScmRights(raw) = cmsg {
                    // Every received descriptor is owned here, so none leaks.
                    fds.extend(raw.into_iter().map(sys::own_fd));
                }
            }
            (msg.bytes, fds)
        };
        if len == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        let msg = serde_json::from_slice(&buf[..len]).map_err(io::Error::other)?;
        Ok((msg, fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_any_size_arrive_whole_with_their_descriptors_then_the_end() {
        let (a, b) = Channel::pair().unwrap();
        let long = Message::Failed {
            layer: Layer::Landlock,
            what: "x".repeat(40_000),
            fix: None,
        };
        a.send(&Message::Go, &[]).unwrap();
        a.send(&long, &[]).unwrap();
        let file = std::fs::File::open("/dev/null").unwrap();
        let ready = Message::Ready {
            pty: true,
            host_ports: Vec::new(),
            sockets: false,
        };
        a.send(&ready, &[file.as_fd()]).unwrap();
        assert_eq!(b.recv().unwrap().0, Message::Go);
        assert_eq!(b.recv().unwrap().0, long);
        let (received, fds) = b.recv().unwrap();
        assert_eq!(
            received,
            Message::Ready {
                pty: true,
                host_ports: Vec::new(),
                sockets: false
            }
        );
        assert_eq!(fds.len(), 1);
        drop(a);
        let end = b.recv().unwrap_err();
        assert_eq!(end.kind(), io::ErrorKind::UnexpectedEof, "{end}");
    }
}
