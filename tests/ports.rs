//! Ports across the sandbox's edge: `--host-port` (the sandbox's own
//! 127.0.0.1:PORT and [::1]:PORT reach the host's 127.0.0.1:PORT through
//! cordon, audited as `host.cordon.internal:PORT`), `--publish` (a server
//! inside reachable from the host's 127.0.0.1, nothing else), and their
//! TOML forms and bad values. Real servers (python's http.server) and a
//! real client (curl), on loopback only.

mod common;

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;

/// The HTTP server script, run on the host and inside.
const HTTP_SERVE_PY: &str = include_str!("py/http_serve.py");

/// A python http.server on the host's 127.0.0.1, answering `body`; killed
/// (by its pid) and reaped on drop, on every way out of a test.
struct HostServer {
    child: Child,
    port: u16,
}

impl HostServer {
    fn start(body: &str) -> HostServer {
        let mut child = Command::new(PY)
            .args(["-c", HTTP_SERVE_PY, "0", body])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start python http.server");
        let mut first = String::new();
        let stdout = child.stdout.take().expect("its stdout");
        let read = BufReader::new(stdout).read_line(&mut first);
        let port = read
            .ok()
            .and_then(|_| first.trim().strip_prefix("port: ")?.parse().ok());
        let mut server = HostServer { child, port: 0 };
        server.port = port.unwrap_or_else(|| panic!("the host server said {first:?}"));
        server
    }
}

impl Drop for HostServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP port nothing on the host listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `curl` inside for each URL: prints `<label>: <body>` or `<label>: ERR <code>`.
fn curl_script(urls: &[(&str, String)]) -> String {
    urls.iter()
        .map(|(label, url)| {
            format!(
                "if b=$(curl -sS --noproxy '*' --max-time 10 '{url}' 2>/dev/null); then echo \"{label}: $b\"; else echo \"{label}: ERR $?\"; fi\n"
            )
        })
        .collect()
}

/// The audit log's events, parsed.
fn events(log: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn host_port_reaches_the_hosts_loopback_on_v4_and_v6_only_when_given() {
    each_fixture(|mode, fx| {
        let token = format!("host-{}", fx.token);
        let server = HostServer::start(&token);
        let p = server.port;
        let script = curl_script(&[
            ("v4", format!("http://127.0.0.1:{p}/")),
            ("v6", format!("http://[::1]:{p}/")),
            ("localhost", format!("http://localhost:{p}/")),
        ]);
        let log = fx.outside.join("audit.jsonl");
        let out = fx
            .audited(&log)
            .flag("--host-port", p.to_string())
            .sh(&script);
        out.ok();
        for label in ["v4", "v6", "localhost"] {
            assert_eq!(line(&out, label), token, "{mode:?} {label}: {out:#?}");
        }
        let opened: Vec<_> = events(&log)
            .into_iter()
            .filter(|e| e["proto"] == "host_port" && e["event"] == "decision")
            .collect();
        assert!(opened.len() >= 3, "{mode:?}: {opened:#?}");
        for e in &opened {
            assert_eq!(e["subject"], format!("host.cordon.internal:{p}"), "{e}");
            assert_eq!(e["verdict"], "allow", "{e}");
            assert_eq!(e["source"], "flag --host-port", "{e}");
            assert_eq!(e["address"], format!("127.0.0.1:{p}"), "{e}");
        }

        // Without the flag, 127.0.0.1 inside is the sandbox's own.
        let out = fx.sandbox().sh(&script);
        out.ok();
        for label in ["v4", "v6"] {
            assert!(
                line(&out, label).starts_with("ERR"),
                "{mode:?} {label}: reached the host without --host-port: {out:#?}"
            );
        }

        // Narrowing the sandbox's own ports keeps the host port reachable.
        let out = fx
            .sandbox()
            .flag("--local-ports", "3000")
            .flag("--host-port", p.to_string())
            .sh(&script);
        assert_eq!(line(&out, "v4"), token, "{mode:?}: {out:#?}");
    });
}

#[test]
fn a_host_port_with_nothing_listening_is_refused_and_says_why() {
    each_fixture(|mode, fx| {
        let p = free_port();
        let log = fx.outside.join("audit.jsonl");
        let out = fx
            .audited(&log)
            .flag("--host-port", p.to_string())
            .sh(&curl_script(&[("v4", format!("http://127.0.0.1:{p}/"))]));
        out.ok();
        assert!(line(&out, "v4").starts_with("ERR"), "{mode:?}: {out:#?}");
        let why: Vec<_> = events(&log)
            .into_iter()
            .filter(|e| e["proto"] == "host_port")
            .collect();
        assert_eq!(why.len(), 1, "{mode:?}: {why:#?}");
        let reason = why[0]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains(&format!("host.cordon.internal:{p}")) && reason.contains("refused"),
            "{mode:?}: {why:#?}"
        );
    });
}

#[test]
fn host_ports_from_a_policy_file() {
    each_fixture(|mode, fx| {
        let token = format!("toml-{}", fx.token);
        let server = HostServer::start(&token);
        let p = server.port;
        let policy = fx.outside.join("ports.toml");
        std::fs::write(&policy, format!("[network]\nhost_ports = [{p}]\n")).unwrap();
        chown(&policy, fx.mode);
        let out = fx
            .sandbox()
            .flag("--policy", &policy)
            .sh(&curl_script(&[("v4", format!("http://127.0.0.1:{p}/"))]));
        assert_eq!(line(&out, "v4"), token, "{mode:?}: {out:#?}");
    });
}

#[test]
fn bad_ports_in_a_policy_file_name_the_file_line_and_key() {
    let fx = Fixture::new(Mode::Root);
    let cases = [
        (
            "host_ports = [0]",
            "2:15: network.host_ports[0]: 0 is not a TCP port",
        ),
        (
            "host_ports = [70000]",
            "2:15: network.host_ports[0]: 70000 is not a TCP port",
        ),
        (
            "host_ports = [3128]",
            "2:15: network.host_ports[0]: 3128 is cordon's HTTP proxy inside the sandbox",
        ),
        (
            "host_ports = [5432, 5432]",
            "2:14: network.host_ports: port 5432 is given twice",
        ),
        (
            "publish = [\"1080:9000\"]",
            "2:12: network.publish[0]: \"1080:9000\": 1080 is cordon's SOCKS5 proxy",
        ),
        (
            "publish = [\"8080:0\"]",
            "2:12: network.publish[0]: \"8080:0\": 0 is not a TCP port",
        ),
        (
            "publish = [\"8080\", \"9090:8080\"]",
            "2:11: network.publish: host port 8080 is given twice",
        ),
    ];
    for (n, (setting, expected)) in cases.iter().enumerate() {
        let policy = fx.outside.join(format!("bad-{n}.toml"));
        std::fs::write(&policy, format!("[network]\n{setting}\n")).unwrap();
        let marker = fx.outside.join(format!("ran-{n}"));
        let out = fx
            .sandbox()
            .flag("--policy", &policy)
            .run(&["touch", marker.to_str().unwrap()]);
        out.expect_code(125);
        let want = format!("{}:{expected}", policy.display());
        assert!(out.stderr.contains(&want), "{setting}: {out:#?}");
        assert!(!marker.exists(), "{setting}: the command ran");
    }
}

/// Waits until `port` on the host's 127.0.0.1 answers HTTP with `body`.
fn host_curl(port: u16) -> Result<String, String> {
    let out = Command::new("curl")
        .args(["-sS", "--noproxy", "*", "--max-time", "5"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn a_published_server_inside_is_reachable_from_the_host_and_nothing_else() {
    each_fixture(|mode, fx| {
        let token = format!("inside-{}", fx.token);
        let (published, unpublished, host) = (free_port(), free_port(), free_port());
        let done = fx.project.join("done");
        let log = fx.outside.join("audit.jsonl");
        // Two servers inside; only the first is published. They live until
        // the test says it is done (or the harness's timeout).
        let script = format!(
            "{PY} -c \"$SERVE\" {published} {token} & {PY} -c \"$SERVE\" {unpublished} {token} & \
             while [ ! -e {done} ]; do sleep 0.1; done",
            done = done.display()
        );
        let running = fx
            .audited(&log)
            .flag("--publish", format!("{published}:{host}"))
            .env("SERVE", HTTP_SERVE_PY)
            .spawn(&["sh", "-c", &script]);
        let mut answer = Err(String::new());
        wait_until(Duration::from_secs(20), || {
            answer = host_curl(host);
            answer.is_ok()
        });
        let answer_seen = answer.clone();
        // Nothing else from outside: the inside ports on the host, the
        // published port on another loopback address.
        let others = [
            ("127.0.0.1", published),
            ("127.0.0.1", unpublished),
            ("127.0.0.2", host),
        ];
        let reached: Vec<_> = others
            .iter()
            .filter(|(ip, port)| {
                TcpStream::connect_timeout(
                    &format!("{ip}:{port}").parse().unwrap(),
                    Duration::from_secs(2),
                )
                .is_ok()
            })
            .collect();
        std::fs::write(&done, "").unwrap();
        let out = running.wait();
        assert_eq!(answer_seen, Ok(token.clone()), "{mode:?}: {out:#?}");
        assert!(
            reached.is_empty(),
            "{mode:?}: reachable from the host: {reached:?}"
        );
        out.ok();
        let opened: Vec<_> = events(&log)
            .into_iter()
            .filter(|e| e["proto"] == "publish" && e["event"] == "decision")
            .collect();
        assert!(!opened.is_empty(), "{mode:?}: no publish event");
        for e in &opened {
            assert_eq!(e["subject"], format!("127.0.0.1:{published}"), "{e}");
            assert_eq!(e["rule"], format!("publish {published}:{host}"), "{e}");
            assert_eq!(e["source"], "flag --publish", "{e}");
        }
        // Once the sandbox is gone, so is the published port.
        assert!(host_curl(host).is_err(), "{mode:?}: still published");
    });
}

#[test]
fn a_published_port_in_use_on_the_host_stops_the_run() {
    each_fixture(|mode, fx| {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let marker = fx.outside.join("ran");
        let out = fx
            .sandbox()
            .flag("--publish", format!("8080:{port}"))
            .run(&["touch", marker.to_str().unwrap()]);
        out.expect_code(125);
        assert!(
            out.stderr.contains(&format!("--publish 8080:{port}"))
                && out.stderr.contains(&format!("127.0.0.1:{port}")),
            "{mode:?}: {out:#?}"
        );
        assert!(!marker.exists(), "{mode:?}: the command ran");
    });
}

#[test]
fn a_connect_to_an_empty_local_port_names_the_host_port_flag() {
    each_fixture(|mode, fx| {
        let p = free_port();
        let log = fx.outside.join("audit.jsonl");
        let out = fx.audited(&log).sh(&curl_script(&[
            ("v4", format!("http://127.0.0.1:{p}/")),
            ("v6", format!("http://[::1]:{p}/")),
        ]));
        out.ok();
        assert!(line(&out, "v4").starts_with("ERR"), "{mode:?}: {out:#?}");
        let hint = format!("127.0.0.1:{p}: nothing listens on port {p} inside the sandbox");
        assert!(
            out.stderr.contains(&hint) && out.stderr.contains(&format!("--host-port {p}")),
            "{mode:?}: {out:#?}"
        );
        let local: Vec<_> = events(&log)
            .into_iter()
            .filter(|e| e["proto"] == "local")
            .collect();
        let subjects: Vec<_> = local.iter().map(|e| e["subject"].clone()).collect();
        assert_eq!(
            subjects,
            [format!("127.0.0.1:{p}"), format!("[::1]:{p}")],
            "{mode:?}: {local:#?}"
        );
        for e in &local {
            assert_eq!(e["verdict"], "deny", "{e}");
            let fix = e["fix"].as_str().unwrap_or_default();
            assert!(fix.contains(&format!("--host-port {p}")), "{e}");
        }

        // A server inside on that port: its clients are not reported.
        let out = fx
            .audited(&log)
            .py_args(include_str!("py/net_local_server.py"), &[&p.to_string()]);
        assert_eq!(line(&out, "connect"), "OK hello-x", "{mode:?}: {out:#?}");
        assert!(
            !out.stderr.contains("nothing listens"),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn a_bind_outside_narrowed_local_ports_names_the_flag() {
    each_fixture(|mode, fx| {
        let log = fx.outside.join("audit.jsonl");
        let out = fx
            .audited(&log)
            .flag("--local-ports", "3000")
            .py_args(include_str!("py/net_local_server.py"), &["4444"]);
        assert_eq!(line(&out, "bind"), "ERR EACCES", "{mode:?}: {out:#?}");
        assert!(
            out.stderr.contains(
                "127.0.0.1:4444: bind refused (EACCES): 4444 is not among the local ports"
            ) && out.stderr.contains("--local-ports"),
            "{mode:?}: {out:#?}"
        );
        let refused: Vec<_> = events(&log)
            .into_iter()
            .filter(|e| e["proto"] == "local" && e["subject"] == "127.0.0.1:4444")
            .collect();
        assert!(!refused.is_empty(), "{mode:?}: no event");
        assert_eq!(refused[0]["rule"], "local_ports = [3000]");
        assert_eq!(refused[0]["source"], "flag --local-ports");
    });
}

#[test]
fn a_host_port_that_is_a_container_engines_api_is_warned_about() {
    each_fixture(|mode, fx| {
        // Nothing of the host's is reached: nothing connects inside.
        let out = fx.sandbox().flag("--host-port", "2375").sh("true");
        out.ok();
        assert!(
            out.stderr.contains("WARNING: the host's 127.0.0.1:2375 (flag --host-port) is reachable inside: 2375 is")
                && out.stderr.contains("root on the host"),
            "{mode:?}: {out:#?}"
        );
        let quiet = fx.sandbox().flag("--host-port", "5432").sh("true");
        assert!(!quiet.stderr.contains("WARNING"), "{mode:?}: {quiet:#?}");
    });
}
