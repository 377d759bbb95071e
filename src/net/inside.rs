//! What the sandbox sees of the network door: the proxy's addresses on its
//! own loopback, and the environment that points programs at them.

/// Port of the HTTP proxy on the sandbox's 127.0.0.1.
pub const HTTP_PORT: u16 = 3128;
/// Port of the SOCKS5 proxy on the sandbox's 127.0.0.1.
pub const SOCKS_PORT: u16 = 1080;

/// Proxy settings the caller may have, removed so none points elsewhere.
pub const REPLACED_ENV: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "FTP_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "ftp_proxy",
    "no_proxy",
    "npm_config_proxy",
    "npm_config_https_proxy",
    "NPM_CONFIG_PROXY",
    "NPM_CONFIG_HTTPS_PROXY",
    "YARN_HTTP_PROXY",
    "YARN_HTTPS_PROXY",
    "PIP_PROXY",
    "CARGO_HTTP_PROXY",
    "GLOBAL_AGENT_HTTP_PROXY",
    "GLOBAL_AGENT_HTTPS_PROXY",
    "JAVA_TOOL_OPTIONS",
    "DOCKER_HOST",
    "SSH_AUTH_SOCK",
    "DBUS_SESSION_BUS_ADDRESS",
];

/// The variables common tools read to find a proxy, all pointing at the
/// sandbox's own listeners. `ALL_PROXY` is `socks5h` so names are resolved
/// by the proxy: there is no DNS inside.
pub fn proxy_env(java_tool_options: Option<&str>) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{HTTP_PORT}");
    let socks = format!("socks5h://127.0.0.1:{SOCKS_PORT}");
    let mut env: Vec<(String, String)> = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        env.push((name.into(), http.clone()));
    }
    for name in ["ALL_PROXY", "all_proxy"] {
        env.push((name.into(), socks.clone()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.into(), "localhost,127.0.0.1,::1".into()));
    }
    for name in [
        "npm_config_proxy",
        "npm_config_https_proxy",
        "YARN_HTTP_PROXY",
        "YARN_HTTPS_PROXY",
        "PIP_PROXY",
        "CARGO_HTTP_PROXY",
        "GLOBAL_AGENT_HTTP_PROXY",
        "GLOBAL_AGENT_HTTPS_PROXY",
    ] {
        env.push((name.into(), http.clone()));
    }
    let java = format!(
        "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={HTTP_PORT} -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort={HTTP_PORT} -Dhttp.nonProxyHosts=localhost|127.0.0.1"
    );
    let java = match java_tool_options {
        Some(existing) if !existing.is_empty() => format!("{existing} {java}"),
        _ => java,
    };
    env.push(("JAVA_TOOL_OPTIONS".into(), java));
    env
}
