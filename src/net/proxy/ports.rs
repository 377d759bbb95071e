//! Ports across the sandbox's edge: a host port (`--host-port`), where a
//! connection to the sandbox's own 127.0.0.1:PORT goes to the host's
//! 127.0.0.1:PORT as `host.cordon.internal:PORT` would through the proxy,
//! and a published port (`--publish`), where a connection to the host's
//! 127.0.0.1:HOSTPORT goes to the sandbox's own 127.0.0.1:PORT.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::Arc;

use tokio::net::{TcpSocket, TcpStream};

use super::accept::ClientError;
use super::connect::ConnectError;
use super::events::Conn;
use super::tunnel::splice_or_copy;
use super::{Gate, Proxy};
use crate::audit::{self, Door, Event, Proto, Verdict};
use crate::net::Counted;
use crate::policy::host::HOST_INTERNAL;
use crate::policy::ports::Publish;

/// Makes a TCP socket, unconnected, in the sandbox's network namespace
/// (init makes it: a socket keeps the namespace it was made in), so that
/// the supervisor can connect to the sandbox's own loopback. Blocking.
pub type SocketMaker = Arc<dyn Fn() -> io::Result<OwnedFd> + Send + Sync>;

/// A published port as the proxy serves it.
pub struct Published {
    /// The ports, inside and on the host.
    pub publish: Publish,
    /// Where the policy got it (`--publish`, a file).
    pub source: String,
    /// Where sockets inside the sandbox come from.
    pub sockets: SocketMaker,
}

/// Ends `client` with a reset, as a refused connection would, rather
/// than a clean close a client could take for an empty answer.
fn reset(client: TcpStream) {
    // A zero linger time: the close sends a reset and does not wait.
    let now = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let _ = nix::sys::socket::setsockopt(&client, nix::sys::socket::sockopt::Linger, &now);
}

impl<G: Gate> Proxy<G> {
    /// A connection to the host port `port` on the sandbox's loopback: the
    /// policy decides on `host.cordon.internal:port` (which `--host-port`
    /// allows), then it is relayed to the host's 127.0.0.1:`port`, every
    /// step recorded as for the proxy's own clients.
    pub(super) async fn host_port_client(
        &self,
        client: TcpStream,
        port: u16,
        conn: &Conn,
    ) -> Result<(), ClientError> {
        let (proto, host) = (Proto::HostPort, HOST_INTERNAL);
        let allowed = match self.gate.check_destination(host, port) {
            Ok(allowed) => allowed,
            Err(denial) => {
                self.denied(proto, host, port, None, &denial);
                reset(client);
                return Ok(());
            }
        };
        let upstream = match self.connect(&allowed.dest, host, port, proto).await {
            Ok((upstream, addr)) => {
                self.opened(conn, proto, host, port, addr, &allowed);
                upstream
            }
            Err(ConnectError::Denied(denial, addr)) => {
                self.denied(proto, host, port, Some(addr), &denial);
                reset(client);
                return Ok(());
            }
            Err(ConnectError::Exfiltration(_)) => {
                reset(client);
                return Ok(());
            }
            Err(ConnectError::Upstream(why)) => {
                self.unreachable(proto, host, port, &allowed, &why);
                reset(client);
                return Ok(());
            }
        };
        self.tunnel(client, Vec::new(), upstream, host, port, proto, conn)
            .await
    }

    /// A connection from the host to the published `port`: a socket made
    /// inside the sandbox connects to its own 127.0.0.1 at the inside
    /// port, and the two are relayed.
    pub(super) async fn published_client(
        &self,
        mut client: TcpStream,
        port: &Published,
        conn: &Conn,
    ) -> Result<(), ClientError> {
        let published = port.publish;
        let inside = SocketAddr::from((Ipv4Addr::LOCALHOST, published.inside));
        let event = |verdict, reason: Option<String>| {
            let mut event = Event::new(
                Door::Network,
                audit::Kind::Decision,
                verdict,
                format!("127.0.0.1:{}", published.inside),
            );
            event.rule = Some(format!("publish {published}"));
            event.source = Some(port.source.clone());
            event.reason = reason;
            event.proto = Some(Proto::Publish);
            event
        };
        let connected = async {
            let make = Arc::clone(&port.sockets);
            let fd = tokio::task::spawn_blocking(move || make())
                .await
                .map_err(io::Error::other)??;
            let socket = std::net::TcpStream::from(fd);
            socket.set_nonblocking(true)?;
            let socket = TcpSocket::from_std_stream(socket);
            tokio::time::timeout(self.limits.connect_timeout, socket.connect(inside))
                .await
                .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
        };
        let upstream = match connected.await {
            Ok(upstream) => upstream,
            Err(e) => {
                let why = if e.kind() == io::ErrorKind::ConnectionRefused {
                    format!(
                        "nothing listens on 127.0.0.1:{} inside the sandbox",
                        published.inside
                    )
                } else {
                    format!(
                        "cannot reach 127.0.0.1:{} inside the sandbox: {e}",
                        published.inside
                    )
                };
                self.audit.record(event(Verdict::Allow, Some(why)));
                reset(client);
                return Ok(());
            }
        };
        let opened = event(Verdict::Allow, None);
        let mut close = opened.clone();
        close.event = audit::Kind::Close;
        self.audit.record(opened);
        conn.arm(close);
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        // What the sandbox's server sends is up (out of the sandbox), what
        // it is sent is down.
        let mut upstream = Counted::new(upstream, conn.up.clone(), conn.down.clone());
        splice_or_copy(&mut client, &mut upstream).await?;
        Ok(())
    }
}
