//! Relaying an opened tunnel (CONNECT or SOCKS5): handed to TLS
//! inspection or the placeholder scan when the credentials door asks,
//! spliced (or copied) byte for byte otherwise.

use std::io;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::accept::ClientError;
use super::events::Conn;
use super::inspect::{Endpoint, Tunnel};
use super::{Gate, Proxy};
use crate::audit::Proto;
use crate::net::Counted;

impl<G: Gate> Proxy<G> {
    /// Relays an allowed, connected tunnel: handed to the inspector when
    /// the credentials door inspects the host (or scans opaque tunnels for
    /// placeholders), else copied byte for byte. `extra` is what the client
    /// sent behind its request.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn tunnel(
        &self,
        mut client: TcpStream,
        extra: Vec<u8>,
        upstream: TcpStream,
        host: &str,
        port: u16,
        proto: Proto,
        conn: &Conn,
    ) -> Result<(), ClientError> {
        // A relay writes what it just read: waiting for the peer's ACK
        // before sending a short TLS record (Nagle, against delayed ACKs)
        // costs up to 40 ms a round.
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        // cordon: credentials door hook (TLS inspection, placeholder scan).
        if let Some(inspector) = &self.inspector {
            if inspector.inspects(host, port) {
                let tunnel = Tunnel {
                    host: host.to_string(),
                    port,
                    proto,
                    up: conn.up.clone(),
                    down: conn.down.clone(),
                };
                inspector
                    .clone()
                    .serve(self.audit.clone(), client, extra, upstream, tunnel)
                    .await;
                return Ok(());
            }
        }
        // Read from the upstream is down, written to it is up.
        let mut upstream = Counted::new(upstream, conn.down.clone(), conn.up.clone());
        if let Some(inspector) = self.inspector.as_ref().filter(|i| i.scans_tunnels()) {
            inspector
                .opaque(
                    &self.audit,
                    &mut client,
                    &extra,
                    &mut upstream,
                    Endpoint { host, port, proto },
                )
                .await?;
            return Ok(());
        }
        if !extra.is_empty() {
            upstream.write_all(&extra).await?;
        }
        splice_or_copy(&mut client, &mut upstream).await?;
        Ok(())
    }
}

/// Each way's buffer where bytes are copied rather than spliced: tunnels when no pipe can be had. tokio's default (8 KiB)
/// held a 1 GiB download to about a quarter of a direct loopback
/// connection's speed; 256 KiB doubles that (bench/proxy.py). Pages are
/// touched only as data flows, so an idle connection stays small.
pub(super) const TUNNEL_BUFFER: usize = 256 * 1024;

/// Relays a tunnel both ways until each side has closed: zero-copy with
/// splice, or through buffers when no pipe can be had (out of descriptors).
pub(super) async fn splice_or_copy(
    client: &mut TcpStream,
    upstream: &mut Counted<TcpStream>,
) -> io::Result<()> {
    // To the client is what was read from the upstream, and the reverse.
    match crate::net::splice::relay(client, &upstream.inner, &upstream.read, &upstream.written)
        .await
    {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
            relay(client, upstream).await.map(drop)
        }
        done => done,
    }
}

/// Relays a tunnel both ways through buffers until each side has closed.
async fn relay<U: AsyncRead + AsyncWrite + Unpin>(
    client: &mut TcpStream,
    upstream: &mut U,
) -> io::Result<(u64, u64)> {
    tokio::io::copy_bidirectional_with_sizes(client, upstream, TUNNEL_BUFFER, TUNNEL_BUFFER).await
}
