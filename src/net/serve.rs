//! Runs the proxy for one sandbox on a thread of the supervisor.

use std::io;
use std::os::fd::OwnedFd;

use super::proxy::{Gate, Proxy, ProxyLimits};

/// Starts serving on the sandbox's listeners (HTTP, then SOCKS5) on a
/// thread of its own; it lives as long as the supervisor, so closing the
/// sandbox closes every tunnel. The gate and the runtime are built on that
/// thread, off the command's start-up path; if that fails, the listeners
/// close and every connection is refused.
pub fn spawn<G, F>(listeners: Vec<OwnedFd>, make_gate: F) -> io::Result<()>
where
    G: Gate,
    F: FnOnce() -> G + Send + 'static,
{
    let [http, socks]: [OwnedFd; 2] = listeners
        .try_into()
        .map_err(|_| io::Error::other("expected the HTTP and SOCKS5 listeners"))?;
    std::thread::Builder::new()
        .name("cordon-proxy".into())
        .spawn(move || {
            if let Err(e) = serve(http, socks, make_gate()) {
                eprintln!("cordon: the proxy stopped: {e}; the sandbox has no way out");
            }
        })?;
    Ok(())
}

fn serve<G: Gate>(http: OwnedFd, socks: OwnedFd, gate: G) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listen = |fd: OwnedFd| {
            let listener = std::net::TcpListener::from(fd);
            listener.set_nonblocking(true)?;
            tokio::net::TcpListener::from_std(listener)
        };
        let (http, socks) = (listen(http)?, listen(socks)?);
        let defaults = ProxyLimits::default();
        let limits = ProxyLimits {
            max_connections: connection_cap(defaults.max_connections),
            ..defaults
        };
        let proxy = Proxy::new(gate, limits);
        tokio::join!(proxy.clone().serve_http(http), proxy.serve_socks(socks));
        Ok(())
    })
}

/// Raises the supervisor's soft descriptor limit to its hard limit, and
/// returns how many connections (two descriptors each, client and
/// upstream) fit in it, at most `cap`. Connections past that wait in the
/// listen queue instead of failing for want of a descriptor.
fn connection_cap(cap: usize) -> usize {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return cap;
    };
    let limit = if setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    // Keep some for the supervisor's own files and the listeners.
    let fit = usize::try_from(limit.saturating_sub(64) / 2).unwrap_or(usize::MAX);
    cap.min(fit.max(1))
}
