//! The allowlist proxy: an HTTP proxy (CONNECT tunnels and absolute-form
//! plain HTTP) and a SOCKS5 proxy (CONNECT only), both asking a [`Gate`]
//! before every connection and connecting only to the address it checked.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Where a client asked to go, after the policy normalised it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A host name to resolve (normalised: lower case, punycode).
    Name(String),
    /// An IP literal the policy allows as such.
    Ip(IpAddr),
    /// `host.cordon.internal`: the host's own loopback.
    HostLoopback,
}

/// A refusal, with the words an agent (and its user) can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The rule, or the default, that refused.
    pub rule: String,
    /// What was blocked and how to allow it; becomes the 403 body.
    pub message: String,
}

/// The network policy, as the proxy sees it.
pub trait Gate: Send + Sync + 'static {
    /// Decides on a destination named by the client.
    fn check_destination(&self, host: &str, port: u16) -> Result<Destination, Denial>;
    /// After resolving an allowed name: may the proxy connect to `addr`?
    fn check_address(&self, host: &str, addr: IpAddr, port: u16) -> Result<(), Denial>;
}

/// Bounds that keep a misbehaving client to the cost of its own socket.
#[derive(Debug, Clone)]
pub struct ProxyLimits {
    /// Connections served at once; more wait in the listen queue.
    pub max_connections: usize,
    /// Time a client has to send its request head or SOCKS handshake.
    pub handshake_timeout: Duration,
    /// Time to connect to the upstream.
    pub connect_timeout: Duration,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            max_connections: 4096,
            handshake_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(15),
        }
    }
}

/// The largest request head the HTTP proxy reads.
const MAX_HEAD: usize = 64 * 1024;

/// The proxy: one per sandbox, shared by its listeners.
pub struct Proxy<G: Gate> {
    gate: G,
    limits: ProxyLimits,
    slots: Arc<Semaphore>,
}

/// Why one client connection ended early.
#[derive(Debug, thiserror::Error)]
enum ClientError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("timed out")]
    Timeout,
    #[error("malformed request: {0}")]
    Malformed(&'static str),
}

impl<G: Gate> Proxy<G> {
    pub fn new(gate: G, limits: ProxyLimits) -> Arc<Self> {
        let slots = Arc::new(Semaphore::new(limits.max_connections));
        Arc::new(Proxy {
            gate,
            limits,
            slots,
        })
    }

    /// Accepts HTTP proxy clients until the listener fails.
    pub async fn serve_http(self: Arc<Self>, listener: TcpListener) {
        self.serve(listener, Kind::Http).await
    }

    /// Accepts SOCKS5 clients until the listener fails.
    pub async fn serve_socks(self: Arc<Self>, listener: TcpListener) {
        self.serve(listener, Kind::Socks).await
    }

    async fn serve(self: Arc<Self>, listener: TcpListener, kind: Kind) {
        loop {
            // Waiting for a slot before accepting leaves the excess in the
            // kernel's listen queue instead of in memory.
            let Ok(permit) = self.slots.clone().acquire_owned().await else {
                return;
            };
            let client = match listener.accept().await {
                Ok((client, _)) => client,
                // The listener is gone: nothing more to serve.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK)
                    ) =>
                {
                    return
                }
                // Out of descriptors or memory, or a connection that died in
                // the queue: the listener is fine. Wait and accept again,
                // rather than closing the sandbox's only way out.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let proxy = self.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let _ = match kind {
                    Kind::Http => proxy.http_client(client).await,
                    Kind::Socks => proxy.socks_client(client).await,
                };
            });
        }
    }

    async fn timed<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        tokio::time::timeout(self.limits.handshake_timeout, fut)
            .await
            .map_err(|_| ClientError::Timeout)?
    }

    /// Resolves (if needed), checks and connects to one destination.
    async fn connect(
        &self,
        dest: &Destination,
        host: &str,
        port: u16,
    ) -> Result<TcpStream, ConnectError> {
        let candidates: Vec<SocketAddr> = match dest {
            Destination::Ip(ip) => vec![SocketAddr::new(*ip, port)],
            Destination::HostLoopback => vec![SocketAddr::from(([127, 0, 0, 1], port))],
            Destination::Name(name) => match tokio::net::lookup_host((name.as_str(), port)).await {
                Ok(addrs) => addrs.collect(),
                Err(e) => {
                    return Err(ConnectError::Unreachable(upstream_denial(
                        host,
                        port,
                        &format!("cannot resolve: {e}"),
                    )))
                }
            },
        };
        // A policy refusal is reported only if no allowed address was tried.
        let (mut refused, mut unreachable) = (None, None);
        for addr in candidates {
            if let Destination::Name(_) = dest {
                if let Err(denial) = self.gate.check_address(host, addr.ip(), port) {
                    refused = Some(denial);
                    continue;
                }
            }
            match tokio::time::timeout(self.limits.connect_timeout, TcpStream::connect(addr)).await
            {
                Ok(Ok(stream)) => return Ok(stream),
                Ok(Err(e)) => unreachable = Some(upstream_denial(host, port, &e.to_string())),
                Err(_) => unreachable = Some(upstream_denial(host, port, "connect timed out")),
            }
        }
        Err(match (unreachable, refused) {
            (Some(d), _) => ConnectError::Unreachable(d),
            (None, Some(d)) => ConnectError::Refused(d),
            (None, None) => ConnectError::Unreachable(upstream_denial(host, port, "no address")),
        })
    }

    async fn http_client(&self, mut client: TcpStream) -> Result<(), ClientError> {
        let (head, extra) = self.timed(read_head(&mut client)).await?;
        let request = parse_request(&head)?;
        let target = match request.method.as_str() {
            "CONNECT" => split_host_port(&request.target, None),
            _ => absolute_form(&request.target),
        };
        let Some((host, port)) = target else {
            return respond(
                &mut client,
                400,
                "cordon: the proxy needs an absolute URL (http://host/path) or CONNECT host:port\n",
            )
            .await;
        };
        if request.method != "CONNECT" {
            let header_host = request
                .header("host")
                .and_then(|h| split_host_port(h, Some(port)));
            // Exactly one: with two, the upstream may route by the other.
            let host_headers = request
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("host"))
                .count();
            if host_headers != 1
                || header_host
                    .as_ref()
                    .map(|(h, p)| (h.to_ascii_lowercase(), *p))
                    != Some((host.to_ascii_lowercase(), port))
            {
                return respond(
                    &mut client,
                    400,
                    "cordon: the Host header does not match the request target\n",
                )
                .await;
            }
            if request.header("transfer-encoding").is_some() {
                return respond(&mut client, 501, "cordon: chunked request bodies are not supported through the plain-HTTP proxy; use https (CONNECT)\n").await;
            }
        }
        let dest = match self.gate.check_destination(&host, port) {
            Ok(dest) => dest,
            Err(denial) => return respond(&mut client, 403, &denial.message).await,
        };
        let mut upstream = match self.connect(&dest, &host, port).await {
            Ok(s) => s,
            Err(ConnectError::Refused(denial)) => {
                return respond(&mut client, 403, &denial.message).await
            }
            Err(ConnectError::Unreachable(denial)) => {
                return respond(&mut client, 502, &denial.message).await
            }
        };
        if request.method == "CONNECT" {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            if !extra.is_empty() {
                upstream.write_all(&extra).await?;
            }
            relay(&mut client, &mut upstream).await?;
            return Ok(());
        }
        // One request per connection: a pipelined second request is never
        // forwarded, so it cannot slip past the check of the first.
        let body_len: u64 = match request.header("content-length").map(|v| v.trim().parse()) {
            Some(Ok(n)) => n,
            Some(Err(_)) => return respond(&mut client, 400, "cordon: bad Content-Length\n").await,
            None => 0,
        };
        upstream.write_all(&request.origin_form_head()).await?;
        let first = (body_len as usize).min(extra.len());
        upstream.write_all(&extra[..first]).await?;
        let rest = body_len - first as u64;
        let (mut client_read, mut client_write) = client.split();
        let (mut up_read, mut up_write) = upstream.split();
        let send_body = async {
            tokio::io::copy(&mut (&mut client_read).take(rest), &mut up_write).await?;
            Ok::<_, io::Error>(())
        };
        let relay_response = tokio::io::copy(&mut up_read, &mut client_write);
        let (sent, _) = tokio::join!(send_body, relay_response);
        sent?;
        Ok(())
    }

    async fn socks_client(&self, mut client: TcpStream) -> Result<(), ClientError> {
        let (host, port) = self.timed(socks_handshake(&mut client)).await?;
        let dest = match self.gate.check_destination(&host, port) {
            Ok(dest) => dest,
            Err(_) => {
                client.write_all(&socks_reply(SOCKS_NOT_ALLOWED)).await?;
                return Ok(());
            }
        };
        let mut upstream = match self.connect(&dest, &host, port).await {
            Ok(s) => s,
            Err(e) => {
                let code = match e {
                    ConnectError::Refused(_) => SOCKS_NOT_ALLOWED,
                    ConnectError::Unreachable(_) => SOCKS_HOST_UNREACHABLE,
                };
                client.write_all(&socks_reply(code)).await?;
                return Ok(());
            }
        };
        client.write_all(&socks_reply(SOCKS_SUCCEEDED)).await?;
        relay(&mut client, &mut upstream).await?;
        Ok(())
    }
}

/// Why the proxy did not connect to an allowed destination.
enum ConnectError {
    /// The policy refused every address the name resolved to (403, SOCKS 0x02).
    Refused(Denial),
    /// No allowed address could be reached (502, SOCKS 0x04).
    Unreachable(Denial),
}

#[derive(Clone, Copy)]
enum Kind {
    Http,
    Socks,
}

const SOCKS_SUCCEEDED: u8 = 0x00;
const SOCKS_NOT_ALLOWED: u8 = 0x02;
const SOCKS_HOST_UNREACHABLE: u8 = 0x04;
const SOCKS_COMMAND_NOT_SUPPORTED: u8 = 0x07;
const SOCKS_ATYP_NOT_SUPPORTED: u8 = 0x08;

/// Each way's buffer in a tunnel. tokio's default (8 KiB) held a 1 GiB
/// download through the tunnel to about a quarter of a direct loopback
/// connection's speed; 256 KiB doubles that (bench/proxy.py). Pages are
/// touched only as data flows, so an idle tunnel stays small.
const TUNNEL_BUFFER: usize = 256 * 1024;

/// Relays a tunnel both ways until each side has closed.
async fn relay(client: &mut TcpStream, upstream: &mut TcpStream) -> io::Result<(u64, u64)> {
    tokio::io::copy_bidirectional_with_sizes(client, upstream, TUNNEL_BUFFER, TUNNEL_BUFFER).await
}

/// A SOCKS5 reply with `code` and an unspecified IPv4 bound address.
fn socks_reply(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

fn upstream_denial(host: &str, port: u16, why: &str) -> Denial {
    Denial {
        rule: "upstream".into(),
        message: format!("cordon: cannot reach {host}:{port}: {why}\n"),
    }
}

async fn respond(client: &mut TcpStream, status: u16, body: &str) -> Result<(), ClientError> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        501 => "Not Implemented",
        _ => "Bad Gateway",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await?;
    Ok(())
}

/// Reads up to the end of the request head; returns the head and any bytes
/// read past it.
async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> Result<(Vec<u8>, Vec<u8>), ClientError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let extra = buf.split_off(end + 4);
            return Ok((buf, extra));
        }
        if buf.len() > MAX_HEAD {
            return Err(ClientError::Malformed("request head too large"));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(ClientError::Malformed(
                "connection closed before the request head ended",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A parsed request head.
#[derive(Debug)]
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The head to send upstream: origin-form target, no proxy headers,
    /// and `Connection: close` so one request is all that crosses.
    fn origin_form_head(&self) -> Vec<u8> {
        let path = origin_form(&self.target);
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, path).into_bytes();
        for (name, value) in &self.headers {
            let lower = name.to_ascii_lowercase();
            if lower.starts_with("proxy-") || lower == "connection" || lower == "keep-alive" {
                continue;
            }
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Connection: close\r\n\r\n");
        out
    }
}

fn parse_request(head: &[u8]) -> Result<Request, ClientError> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(ClientError::Malformed("unparsable request head")),
    }
    Ok(Request {
        method: req.method.unwrap_or_default().to_string(),
        target: req.path.unwrap_or_default().to_string(),
        headers: req
            .headers
            .iter()
            .map(|h| (h.name.to_string(), h.value.to_vec()))
            .collect(),
    })
}

/// `http://host[:port]/path` → (host, port).
fn absolute_form(target: &str) -> Option<(String, u16)> {
    let rest = target.strip_prefix("http://").or_else(|| {
        target
            .get(..7)
            .filter(|p| p.eq_ignore_ascii_case("http://"))
            .map(|_| &target[7..])
    })?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return None;
    }
    split_host_port(authority, Some(80))
}

/// The path part of an absolute-form target (`/` if none).
fn origin_form(target: &str) -> String {
    let rest = target.get(7..).unwrap_or_default();
    match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => rest[i..].to_string(),
        Some(i) => format!("/{}", &rest[i..]),
        None => "/".into(),
    }
}

/// `host:port`, `[v6]:port`, or `host` with `default_port`.
fn split_host_port(authority: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port?,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host.to_string(), port.parse().ok()?)),
        Some(_) => None,
        None => Some((authority.to_string(), default_port?)),
    }
    .filter(|(host, _)| !host.is_empty())
}

/// The SOCKS5 greeting and request; returns the destination. Replies to
/// refused commands and address types itself.
async fn socks_handshake<S: AsyncRead + AsyncWrite + Unpin>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!(
            absolute_form("http://Example.com/x"),
            Some(("Example.com".into(), 80))
        );
        assert_eq!(
            absolute_form("http://a.b:8080?q"),
            Some(("a.b".into(), 8080))
        );
        assert_eq!(absolute_form("http://[::1]:81/"), Some(("::1".into(), 81)));
        assert_eq!(absolute_form("http://user@evil.com/"), None);
        assert_eq!(absolute_form("https://a/"), None);
        assert_eq!(absolute_form("/relative"), None);
        assert_eq!(split_host_port("a.b:443", None), Some(("a.b".into(), 443)));
        assert_eq!(split_host_port("a.b", None), None);
        assert_eq!(split_host_port("::1:443", None), None);
        assert_eq!(split_host_port(":443", None), None);
        assert_eq!(origin_form("http://a/b?c"), "/b?c");
        assert_eq!(origin_form("http://a?c"), "/?c");
        assert_eq!(origin_form("http://a"), "/");
    }

    #[test]
    fn origin_head_drops_proxy_headers_and_closes() {
        let head = b"GET http://a/b HTTP/1.1\r\nHost: a\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\nX-Y: z\r\n\r\n";
        let req = parse_request(head).unwrap();
        let out = String::from_utf8(req.origin_form_head()).unwrap();
        assert_eq!(
            out,
            "GET /b HTTP/1.1\r\nHost: a\r\nX-Y: z\r\nConnection: close\r\n\r\n"
        );
    }
}
