//! Host entries that follow a variable: `$ANTHROPIC_BASE_URL` in a host
//! list (`[network] allow`, an inject entry's `hosts`) stands for the host
//! and port of the URL that variable holds in cordon's environment when the
//! policy is read, and for nothing when it is unset or empty.
//!
//! An agent's profile allows the agent's own API host, and wherever the
//! user points the agent instead (a gateway, a proxy of the company's, a
//! service on the host as `https://host.cordon.internal:8443`), so a user
//! who routes the agent elsewhere keeps working without a policy edit, and
//! the agent's key follows it there and nowhere else.

use crate::policy::host::HOST_INTERNAL;
use crate::policy::inspection::check_var_name;

/// What a host entry stands for: itself, or, for `$NAME`, `host:port` of
/// the URL in `$NAME` (`None` when it is unset or empty). An error names
/// the variable and what is wrong, never the value (a URL may carry a
/// token).
pub fn expand(raw: &str) -> Result<Option<String>, String> {
    let Some(name) = raw.strip_prefix('$') else {
        return Ok(Some(raw.to_string()));
    };
    let name = check_var_name(name).map_err(|e| e.to_string())?;
    let Some(value) = std::env::var_os(&name) else {
        return Ok(None);
    };
    if value.is_empty() {
        return Ok(None);
    }
    let value = value
        .into_string()
        .map_err(|_| format!("${name} is not UTF-8, so it names no URL"))?;
    url_host(&name, &value).map(Some)
}

/// `host:port` of the URL `value` (from `$name`).
fn url_host(name: &str, value: &str) -> Result<String, String> {
    let bad = |why: &str| format!("${name} should hold an http or https URL, but {why}");
    let uri: http::Uri = value
        .trim()
        .parse()
        .map_err(|_| bad("it does not parse as one"))?;
    let default_port = match uri.scheme_str() {
        Some("https") => 443,
        Some("http") => 80,
        Some(_) => return Err(bad("its scheme is neither")),
        None => return Err(bad("it has no scheme")),
    };
    let authority = uri.authority().ok_or_else(|| bad("it names no host"))?;
    if authority.as_str().contains('@') {
        return Err(bad(
            "it carries a user name or password, which cordon does not send on",
        ));
    }
    let host = authority.host().to_ascii_lowercase();
    if host.is_empty() {
        return Err(bad("it names no host"));
    }
    // The port as written (the parser drops one out of range).
    let text = authority.as_str();
    let host_end = match text.strip_prefix('[') {
        Some(rest) => rest.find(']').map_or(text.len(), |i| i + 2),
        None => text.find(':').unwrap_or(text.len()),
    };
    let port = match text[host_end..].strip_prefix(':') {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad("its port is not one from 1 to 65535")),
        },
    };
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.');
    // An IPv4 address in IPv6 form (`[::ffff:127.0.0.1]`) is that address.
    let loopback = bare == "localhost"
        || bare.ends_with(".localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.to_canonical())
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified());
    if loopback {
        return Err(format!(
            "${name} points at {host}:{port}, which inside the sandbox is the sandbox's own loopback, not the host's: point it at {HOST_INTERNAL}:{port} to reach the host's 127.0.0.1:{port}"
        ));
    }
    Ok(format!("{host}:{port}"))
}

#[cfg(test)]
#[path = "followed_tests.rs"]
mod tests;
