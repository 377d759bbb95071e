//! The SOCKS5 proxy: the handshake (CONNECT only, no authentication)
//! and the client's one tunnel.

use std::net::IpAddr;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::accept::ClientError;
use super::connect::ConnectError;
use super::events::Conn;
use super::{Gate, Proxy};
use crate::audit::Proto;

const SOCKS_SUCCEEDED: u8 = 0x00;
pub(super) const SOCKS_GENERAL_FAILURE: u8 = 0x01;
const SOCKS_NOT_ALLOWED: u8 = 0x02;
const SOCKS_HOST_UNREACHABLE: u8 = 0x04;
const SOCKS_COMMAND_NOT_SUPPORTED: u8 = 0x07;
const SOCKS_ATYP_NOT_SUPPORTED: u8 = 0x08;

impl<G: Gate> Proxy<G> {
    pub(super) async fn socks_client(
        &self,
        mut client: TcpStream,
        conn: &Conn,
    ) -> Result<(), ClientError> {
        let proto = Proto::Socks5;
        let (host, port) = self.timed(socks_handshake(&mut client)).await?;
        let allowed = match self.gate.decide(&host, port).await {
            Ok(allowed) => allowed,
            Err(denial) => {
                self.denied(proto, &host, port, None, &denial);
                client.write_all(&socks_reply(SOCKS_NOT_ALLOWED)).await?;
                return Ok(());
            }
        };
        let (upstream, addr) = match self.connect(&allowed.dest, &host, port, proto).await {
            Ok(connected) => connected,
            Err(ConnectError::Exfiltration(_)) => {
                client.write_all(&socks_reply(SOCKS_NOT_ALLOWED)).await?;
                return Ok(());
            }
            Err(ConnectError::Denied(denial, addr)) => {
                self.denied(proto, &host, port, Some(addr), &denial);
                client.write_all(&socks_reply(SOCKS_NOT_ALLOWED)).await?;
                return Ok(());
            }
            Err(ConnectError::Upstream(message)) => {
                self.unreachable(proto, &host, port, &allowed, &message);
                client
                    .write_all(&socks_reply(SOCKS_HOST_UNREACHABLE))
                    .await?;
                return Ok(());
            }
        };
        self.opened(conn, proto, &host, port, addr, &allowed);
        client.write_all(&socks_reply(SOCKS_SUCCEEDED)).await?;
        self.tunnel(client, Vec::new(), upstream, &host, port, proto, conn)
            .await
    }
}

/// A SOCKS5 reply with `code` and an unspecified IPv4 bound address.
pub(super) fn socks_reply(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

/// The SOCKS5 greeting and request; returns the destination. Replies to
/// refused commands and address types itself.
pub(super) async fn socks_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
) -> Result<(String, u16), ClientError> {
    let mut hello = [0u8; 2];
    s.read_exact(&mut hello).await?;
    if hello[0] != 5 {
        return Err(ClientError::Malformed("not SOCKS5"));
    }
    let mut methods = vec![0u8; hello[1] as usize];
    s.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        s.write_all(&[5, 0xff]).await?;
        return Err(ClientError::Malformed("no acceptable SOCKS method"));
    }
    s.write_all(&[5, 0]).await?;
    let mut req = [0u8; 4];
    s.read_exact(&mut req).await?;
    if req[0] != 5 {
        return Err(ClientError::Malformed("bad SOCKS request"));
    }
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            s.read_exact(&mut a).await?;
            IpAddr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            s.read_exact(&mut a).await?;
            IpAddr::from(a).to_string()
        }
        3 => {
            let mut len = [0u8; 1];
            s.read_exact(&mut len).await?;
            let mut name = vec![0u8; len[0] as usize];
            s.read_exact(&mut name).await?;
            String::from_utf8(name)
                .map_err(|_| ClientError::Malformed("SOCKS name is not UTF-8"))?
        }
        _ => {
            s.write_all(&socks_reply(SOCKS_ATYP_NOT_SUPPORTED)).await?;
            return Err(ClientError::Malformed("SOCKS address type"));
        }
    };
    let mut port = [0u8; 2];
    s.read_exact(&mut port).await?;
    if req[1] != 1 {
        // BIND and UDP ASSOCIATE open doors the allowlist cannot check.
        s.write_all(&socks_reply(SOCKS_COMMAND_NOT_SUPPORTED))
            .await?;
        return Err(ClientError::Malformed("SOCKS command other than CONNECT"));
    }
    Ok((host, u16::from_be_bytes(port)))
}
