//! The sandbox's side of the ports across its edge: the checks the host
//! ports and published ports must pass before anything runs, the host's
//! listeners for the published ports (bound before the sandbox is made, so
//! a port in use stops the run), and the supervisor's way to get sockets
//! inside the sandbox's network namespace (init makes them).

use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Arc, Mutex};

use super::channel::{Channel, Message};
use super::SandboxError;
use crate::net::proxy::{Published, SocketMaker};
use crate::policy::ports::MAX_HOST_PORTS;
use crate::policy::{NetworkPolicy, Sourced};

/// What the policy's host ports and published ports must be, together:
/// not too many host ports, and no published port that is a host port
/// inside (cordon listens there itself).
pub(super) fn check(network: &NetworkPolicy) -> Result<(), SandboxError> {
    if network.host_ports.len() > MAX_HOST_PORTS {
        return Err(SandboxError::Ports(format!(
            "{} host ports (--host-port, [network] host_ports); at most {MAX_HOST_PORTS}",
            network.host_ports.len()
        )));
    }
    for published in &network.publish {
        let inside = published.value.inside;
        if let Some(host_port) = network.host_ports.iter().find(|h| h.value == inside) {
            return Err(SandboxError::Ports(format!(
                "--publish {} ({}) names {inside} inside, which is --host-port {inside} ({}): cordon listens there itself; publish another port",
                published.value, published.source, host_port.source
            )));
        }
    }
    Ok(())
}

/// The ports of the sandbox's own lo programs inside may use, when the
/// policy narrows them: its list, plus the published ports (their servers
/// must bind them). `None`: any.
pub(super) fn local_ports(network: &NetworkPolicy) -> Option<Vec<u16>> {
    let only = network.local_ports.as_ref()?;
    let mut ports = only.value.clone();
    for published in &network.publish {
        if !ports.contains(&published.value.inside) {
            ports.push(published.value.inside);
        }
    }
    Some(ports)
}

/// A published port's host side: its listener on the host's 127.0.0.1.
pub(super) struct Bound {
    /// The published port, and where the policy got it.
    pub publish: Sourced<crate::policy::ports::Publish>,
    /// Its listener on the host's 127.0.0.1.
    pub listener: TcpListener,
}

/// Listens on the host's 127.0.0.1 at each published port's host port.
/// Called before the sandbox is made: a port that cannot be had stops the
/// run with nothing started.
pub(super) fn bind_published(network: &NetworkPolicy) -> Result<Vec<Bound>, SandboxError> {
    network
        .publish
        .iter()
        .map(|publish| {
            TcpListener::bind((Ipv4Addr::LOCALHOST, publish.value.host))
                .map(|listener| Bound {
                    publish: publish.clone(),
                    listener,
                })
                .map_err(|source| SandboxError::Publish {
                    publish: publish.value,
                    from: publish.source.to_string(),
                    source,
                })
        })
        .collect()
}

/// The published ports as the proxy serves them, each getting its sockets
/// inside the sandbox from init over `sockets`.
pub(super) fn published(bound: Vec<Bound>, sockets: Channel) -> Vec<(Published, TcpListener)> {
    let sockets = socket_maker(sockets);
    bound
        .into_iter()
        .map(|b| {
            let published = Published {
                publish: b.publish.value,
                source: b.publish.source.to_string(),
                sockets: Arc::clone(&sockets),
            };
            (published, b.listener)
        })
        .collect()
}

/// Asks init, over `channel`, for each socket: one request and its answer
/// at a time.
fn socket_maker(channel: Channel) -> SocketMaker {
    let channel = Mutex::new(channel);
    Arc::new(move || {
        let channel = channel
            .lock()
            .map_err(|_| std::io::Error::other("the sockets channel was poisoned"))?;
        channel.send(&Message::NewSocket, &[])?;
        match channel.recv()? {
            (Message::Socket { failed: None }, mut fds) => fds
                .pop()
                .ok_or_else(|| std::io::Error::other("init sent no socket")),
            (Message::Socket { failed: Some(why) }, _) => Err(std::io::Error::other(format!(
                "init could not make a socket: {why}"
            ))),
            (other, _) => Err(std::io::Error::other(format!(
                "init answered {other:?} to a socket request"
            ))),
        }
    })
}
