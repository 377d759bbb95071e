//! Runs the proxy for one sandbox on a thread of the supervisor.

use std::io;
use std::os::fd::OwnedFd;

use super::proxy::{Gate, Proxy, ProxyLimits};

/// Starts serving on the sandbox's listeners (HTTP, then SOCKS5) on a
/// thread of its own; it lives as long as the supervisor, so closing the
/// sandbox closes every tunnel.
pub fn spawn<G: Gate>(listeners: Vec<OwnedFd>, gate: G) -> io::Result<()> {
    let [http, socks]: [OwnedFd; 2] = listeners
        .try_into()
        .map_err(|_| io::Error::other("expected the HTTP and SOCKS5 listeners"))?;
    let to_tokio = |fd: OwnedFd| -> io::Result<std::net::TcpListener> {
        let listener = std::net::TcpListener::from(fd);
        listener.set_nonblocking(true)?;
        Ok(listener)
    };
    let (http, socks) = (to_tokio(http)?, to_tokio(socks)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("cordon-proxy".into())
        .spawn(move || {
            runtime.block_on(async move {
                let (Ok(http), Ok(socks)) = (
                    tokio::net::TcpListener::from_std(http),
                    tokio::net::TcpListener::from_std(socks),
                ) else {
                    return;
                };
                let proxy = Proxy::new(gate, ProxyLimits::default());
                tokio::join!(proxy.clone().serve_http(http), proxy.serve_socks(socks));
            })
        })?;
    Ok(())
}
