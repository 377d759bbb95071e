//! Runs the proxy for one sandbox on a thread of the supervisor.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use tokio::sync::watch;

use super::proxy::{Admissions, Gate, Proxy, ProxyLimits, Published};
use crate::audit::Auditor;
use crate::net::proxy::inspect::Inspector;

/// The running proxy, as the supervisor holds it.
pub struct ProxyHandle {
    stop: watch::Sender<bool>,
    admissions: Arc<Admissions>,
    done: mpsc::Receiver<()>,
}

impl ProxyHandle {
    /// Tells the proxy to stop accepting and end every tunnel, without
    /// waiting (the caller does other clean-up meanwhile, then
    /// [`ProxyHandle::shutdown`]); returns whether the proxy ever took a
    /// client.
    pub fn stop(&self) -> bool {
        let _ = self.stop.send(true);
        self.admissions.close()
    }

    /// Stops accepting, ends every tunnel (their close events recorded with
    /// the bytes so far), and waits up to `grace` for that to finish. A
    /// proxy that never took a client has nothing to finish: it is not
    /// waited for (its thread ends with the process).
    pub fn shutdown(self, grace: Duration) {
        if self.stop() {
            let _ = self.done.recv_timeout(grace);
        }
    }
}

/// The listeners across the sandbox's edge the proxy serves besides its
/// own: the host ports' inside the sandbox, the published ports' on the host.
#[derive(Default)]
pub struct Edges {
    /// Each host port's listener inside the sandbox, with its port.
    pub host_ports: Vec<(u16, OwnedFd)>,
    /// Each published port's listener on the host's 127.0.0.1.
    pub published: Vec<(Published, std::net::TcpListener)>,
}

/// Starts serving on the sandbox's listeners (HTTP, then SOCKS5, then the
/// `edges`) on a thread of its own; it lives as long as the supervisor (or until
/// [`ProxyHandle::shutdown`]), so closing the sandbox closes every tunnel.
/// The gate and the runtime are built on that thread, off the command's
/// start-up path; if that fails, the listeners close and every connection
/// is refused.
pub fn spawn<G, F>(
    listeners: Vec<OwnedFd>,
    edges: Edges,
    make_gate: F,
    limits: ProxyLimits,
    audit: Auditor,
    inspector: Option<Arc<Inspector>>,
) -> io::Result<ProxyHandle>
where
    G: Gate,
    F: FnOnce() -> G + Send + 'static,
{
    let [http, socks]: [OwnedFd; 2] = listeners
        .try_into()
        .map_err(|_| io::Error::other("expected the HTTP and SOCKS5 listeners"))?;
    let (stop, stopped) = watch::channel(false);
    let (done_tx, done) = mpsc::channel();
    let admissions = Arc::new(Admissions::default());
    let theirs = Arc::clone(&admissions);
    std::thread::Builder::new()
        .name("cordon-proxy".into())
        .spawn(move || {
            let proxy = ServeArgs {
                http,
                socks,
                edges,
                limits,
                audit,
                stopped,
                admissions: theirs,
                inspector,
            };
            if let Err(e) = serve(proxy, make_gate()) {
                crate::say!("cordon: the proxy stopped: {e}; the sandbox has no way out");
            }
            let _ = done_tx.send(());
        })?;
    Ok(ProxyHandle {
        stop,
        admissions,
        done,
    })
}

struct ServeArgs {
    http: OwnedFd,
    socks: OwnedFd,
    edges: Edges,
    limits: ProxyLimits,
    audit: Auditor,
    stopped: watch::Receiver<bool>,
    admissions: Arc<Admissions>,
    inspector: Option<Arc<Inspector>>,
}

/// Time the tunnels have to record their close events after a stop.
const DRAIN: Duration = Duration::from_secs(1);

fn serve<G: Gate>(args: ServeArgs, gate: G) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listen = |listener: std::net::TcpListener| {
            listener.set_nonblocking(true)?;
            tokio::net::TcpListener::from_std(listener)
        };
        let listen_fd = |fd: OwnedFd| listen(std::net::TcpListener::from(fd));
        let (http, socks) = (listen_fd(args.http)?, listen_fd(args.socks)?);
        let limits = ProxyLimits {
            max_connections: connection_cap(args.limits.max_connections),
            ..args.limits
        };
        let proxy = Proxy::with_inspector(
            gate,
            limits,
            args.audit,
            args.stopped,
            args.admissions,
            args.inspector,
        );
        let mut edges = Vec::new();
        for (port, fd) in args.edges.host_ports {
            let serving = proxy.clone().serve_host_port(listen_fd(fd)?, port);
            edges.push(tokio::spawn(serving));
        }
        for (published, listener) in args.edges.published {
            let serving = proxy.clone().serve_published(listen(listener)?, published);
            edges.push(tokio::spawn(serving));
        }
        tokio::join!(
            proxy.clone().serve_http(http),
            proxy.clone().serve_socks(socks)
        );
        for serving in edges {
            let _ = serving.await;
        }
        proxy.drain(DRAIN).await;
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
