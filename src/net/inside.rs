//! What the sandbox sees of the network door: the proxy's addresses on its
//! own loopback, and the environment that points programs at them.

pub use crate::policy::ports::{HTTP_PORT, SOCKS_PORT};

/// Variables that name an HTTP proxy, for the tools that read each.
const HTTP_VARS: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "npm_config_proxy",
    "npm_config_https_proxy",
    "YARN_HTTP_PROXY",
    "YARN_HTTPS_PROXY",
    "PIP_PROXY",
    "CARGO_HTTP_PROXY",
    "GLOBAL_AGENT_HTTP_PROXY",
    "GLOBAL_AGENT_HTTPS_PROXY",
];
/// Variables that name a SOCKS proxy.
const SOCKS_VARS: &[&str] = &["ALL_PROXY", "all_proxy"];
/// Variables that list hosts reached without the proxy.
const NO_PROXY_VARS: &[&str] = &["NO_PROXY", "no_proxy"];
/// Java's options, where the proxy goes as system properties.
pub const JAVA_OPTIONS: &str = "JAVA_TOOL_OPTIONS";
/// Variables that point at other proxies or at host daemons' sockets,
/// which the sandbox cannot reach: removed, not replaced.
const REMOVED_VARS: &[&str] = &[
    "FTP_PROXY",
    "ftp_proxy",
    "NPM_CONFIG_PROXY",
    "NPM_CONFIG_HTTPS_PROXY",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
];

/// Whether the caller's variable `name` is dropped from the command's
/// environment (replaced by [`proxy_env`], or removed).
pub fn is_replaced(name: &std::ffi::OsStr) -> bool {
    [
        HTTP_VARS,
        SOCKS_VARS,
        NO_PROXY_VARS,
        REMOVED_VARS,
        &[JAVA_OPTIONS],
    ]
    .iter()
    .any(|list| list.iter().any(|v| name == *v))
}

/// The variables common tools read to find a proxy, all pointing at the
/// sandbox's own listeners. `ALL_PROXY` is `socks5h` so names are resolved
/// by the proxy: there is no DNS inside.
pub fn proxy_env(java_tool_options: Option<&str>) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{HTTP_PORT}");
    let socks = format!("socks5h://127.0.0.1:{SOCKS_PORT}");
    let mut env: Vec<(String, String)> = Vec::new();
    for (names, value) in [
        (HTTP_VARS, http.as_str()),
        (SOCKS_VARS, socks.as_str()),
        (NO_PROXY_VARS, "localhost,127.0.0.1,::1"),
    ] {
        env.extend(names.iter().map(|n| (n.to_string(), value.to_string())));
    }
    let java = format!(
        "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={HTTP_PORT} -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort={HTTP_PORT} -Dhttp.nonProxyHosts=localhost|127.0.0.1"
    );
    let java = match java_tool_options {
        Some(existing) if !existing.is_empty() => format!("{existing} {java}"),
        _ => java,
    };
    env.push((JAVA_OPTIONS.into(), java));
    env
}
