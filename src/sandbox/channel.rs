//! The supervisor–init channel: a `SOCK_SEQPACKET` socket pair carrying
//! small JSON messages and, with some, a file descriptor (SCM_RIGHTS).

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};
use serde::{Deserialize, Serialize};

use super::sys;
use crate::policy::Layer;

/// What travels between the supervisor and init.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Message {
    /// Supervisor → init: the id maps and cgroup are in place.
    Go,
    /// Init → supervisor: a layer could not be applied and the user allowed
    /// running without it.
    Degraded { layer: Layer, what: String },
    /// Init → supervisor: a layer failed; nothing of the command ran.
    Failed { layer: Layer, what: String },
    /// Init → supervisor: every layer is in place; the command starts now.
    /// Carries the pty master when a terminal was asked for.
    Ready,
}

/// One end of the channel.
pub struct Channel(OwnedFd);

impl AsFd for Channel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

const MAX_MESSAGE: usize = 64 * 1024;

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

    /// Sends `msg`, with `fd` attached if given.
    pub fn send(&self, msg: &Message, fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
        let body = serde_json::to_vec(msg).map_err(io::Error::other)?;
        let iov = [IoSlice::new(&body)];
        let fds: Vec<RawFd> = fd.map(|f| f.as_raw_fd()).into_iter().collect();
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

    /// Receives one message and the descriptor sent with it, if any.
    /// End of stream (the peer died) is an `UnexpectedEof` error.
    pub fn recv(&self) -> io::Result<(Message, Option<OwnedFd>)> {
        let mut buf = vec![0u8; MAX_MESSAGE];
        let mut cmsg_space = nix::cmsg_space!([RawFd; 1]);
        let (len, fd) = {
            let mut iov = [IoSliceMut::new(&mut buf)];
            let msg = recvmsg::<()>(
                self.0.as_raw_fd(),
                &mut iov,
                Some(&mut cmsg_space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            )?;
            let mut fd = None;
            for cmsg in msg.cmsgs()? {
                if let ControlMessageOwned::ScmRights(fds) = cmsg {
                    for raw in fds {
                        // Every received descriptor is owned here, so none leaks.
                        let owned = sys::own_fd(raw);
                        fd.get_or_insert(owned);
                    }
                }
            }
            (msg.bytes, fd)
        };
        if len == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        let msg = serde_json::from_slice(&buf[..len]).map_err(io::Error::other)?;
        Ok((msg, fd))
    }
}
