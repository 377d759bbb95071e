//! Ports across the sandbox's edge: those cordon itself listens on inside,
//! the host ports forwarded in (`network.host_ports`), and the sandbox's
//! servers published on the host (`network.publish`).

use std::fmt;

use serde::Serialize;

use super::load::values::check_port;

/// Port of the HTTP proxy on the sandbox's 127.0.0.1.
pub const HTTP_PORT: u16 = 3128;
/// Port of the SOCKS5 proxy on the sandbox's 127.0.0.1.
pub const SOCKS_PORT: u16 = 1080;

/// Most host ports one sandbox forwards (each is two listeners inside,
/// handed over to the supervisor in one message).
pub const MAX_HOST_PORTS: usize = 32;

/// What cordon itself listens on at `port` inside the sandbox, if anything.
pub fn cordon_listener(port: u16) -> Option<&'static str> {
    match port {
        HTTP_PORT => Some("cordon's HTTP proxy"),
        SOCKS_PORT => Some("cordon's SOCKS5 proxy"),
        _ => None,
    }
}

/// TCP ports on the host's loopback whose service hands whoever reaches
/// it the host: a container engine's API without TLS client certificates
/// (Docker's registered ports), which starts privileged containers.
const ROOT_EQUIVALENT_PORTS: &[(u16, &str)] = &[(2375, "Docker"), (2376, "Docker")];

/// Why reaching the host's 127.0.0.1:`port` may hand the sandbox the host,
/// if it commonly does.
pub fn root_equivalent_port(port: u16) -> Option<String> {
    let (_, engine) = ROOT_EQUIVALENT_PORTS.iter().find(|(p, _)| *p == port)?;
    Some(format!(
        "{port} is {engine}'s API port: whoever reaches it can start a privileged container, i.e. is root on the host"
    ))
}

/// A port the sandbox may have on its own loopback for something of the
/// user's (a host port forwarded in, a server published): not one cordon
/// listens on.
pub fn check_inside_port(n: i64) -> Result<u16, String> {
    let port = check_port(n)?;
    match cordon_listener(port) {
        Some(what) => Err(format!(
            "{port} is {what} inside the sandbox; pick another port"
        )),
        None => Ok(port),
    }
}

/// A server inside the sandbox made reachable from the host:
/// `PORT[:HOSTPORT]` (the same port on both sides when one is given).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Publish {
    /// The port the server listens on inside (its 127.0.0.1).
    pub inside: u16,
    /// The port on the host's 127.0.0.1 that reaches it.
    pub host: u16,
}

impl Publish {
    /// Parses `PORT` or `PORT:HOSTPORT`.
    pub fn parse(raw: &str) -> Result<Publish, String> {
        let number = |part: &str| -> Result<u16, String> {
            let n: i64 = part.trim().parse().map_err(|_| {
                format!("{raw:?} is not PORT or PORT:HOSTPORT (e.g. 8080 or 8080:18080)")
            })?;
            check_port(n).map_err(|e| format!("{raw:?}: {e}"))
        };
        let (inside, host) = match raw.split_once(':') {
            Some((inside, host)) => (number(inside)?, number(host)?),
            None => {
                let port = number(raw)?;
                (port, port)
            }
        };
        if let Some(what) = cordon_listener(inside) {
            return Err(format!(
                "{raw:?}: {inside} is {what} inside the sandbox, which is not published"
            ));
        }
        Ok(Publish { inside, host })
    }
}

impl fmt::Display for Publish {
    /// `PORT:HOSTPORT`, as it could be written again.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.inside, self.host)
    }
}

impl Serialize for Publish {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The first value of `values` given twice (by `key`), as an error.
pub fn repeated<T>(values: &[T], key: impl Fn(&T) -> u16) -> Result<(), String> {
    for (i, v) in values.iter().enumerate() {
        if values[..i].iter().any(|w| key(w) == key(v)) {
            return Err(format!("port {} is given twice", key(v)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_reads_one_port_or_two_and_refuses_the_rest() {
        assert_eq!(
            Publish::parse("8080"),
            Ok(Publish {
                inside: 8080,
                host: 8080
            })
        );
        assert_eq!(
            Publish::parse("8080:18080"),
            Ok(Publish {
                inside: 8080,
                host: 18080
            })
        );
        for bad in [
            "0", "70000", "8080:0", "x", "8080:", ":80", "1:2:3", "3128", "1080:9",
        ] {
            assert!(Publish::parse(bad).is_err(), "{bad}");
        }
        assert!(Publish::parse("3128")
            .unwrap_err()
            .contains("cordon's HTTP proxy"));
    }

    #[test]
    fn inside_ports_exclude_cordons_listeners() {
        assert_eq!(check_inside_port(5432), Ok(5432));
        assert!(check_inside_port(3128).unwrap_err().contains("HTTP proxy"));
        assert!(check_inside_port(1080).unwrap_err().contains("SOCKS5"));
        assert!(check_inside_port(0).is_err());
        assert!(check_inside_port(70000).is_err());
    }

    #[test]
    fn repeats_are_named() {
        assert_eq!(repeated(&[1u16, 2, 3], |p| *p), Ok(()));
        assert_eq!(
            repeated(&[1u16, 2, 1], |p| *p),
            Err("port 1 is given twice".into())
        );
    }
}
