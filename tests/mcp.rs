//! `cordon mcp wrap` on real MCP servers from the npm registry and one
//! written with the MCP Python SDK, driven by a real client (the SDK's):
//! each server completes `initialize`, `tools/list` and tool calls through
//! `cordon mcp run`, in a sandbox of its own (the workspace read-only, no
//! network, only its own variables) that its own policy file widens for
//! it alone; `cordon mcp unwrap` gives the config back byte for byte. The
//! servers and the SDK come from `.ci/deps` (into `target/mcp`).

mod common;

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::tls::{serve_http, serve_tls, TestCa};
use common::*;
use http_body_util::Full;

/// Where `.ci/deps` installs the servers and the client.
fn mcp_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp");
    assert!(
        dir.join("venv/bin/python").is_file() && dir.join("node_modules").is_dir(),
        "{} is incomplete: run .ci/deps, which installs the MCP servers and client these tests use",
        dir.display()
    );
    dir
}

fn npm_server(name: &str) -> String {
    mcp_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(name)
        .join("dist/index.js")
        .to_string_lossy()
        .into_owned()
}

fn python() -> String {
    mcp_dir()
        .join("venv/bin/python")
        .to_string_lossy()
        .into_owned()
}

fn py_file(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A secret of the client's own environment (the agent's key, say),
/// which no server may see.
const CLIENT_SECRET: &str = "ANTHROPIC_API_KEY";

/// Runs `cordon mcp VERB FILE ARGS` as the fixture's user.
fn mcp(fx: &Fixture, verb: &str, file: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = fx.host_cmd(fx.bin.to_str().unwrap());
    cmd.args(["mcp", verb])
        .arg(file)
        .args(args)
        .env("XDG_CONFIG_HOME", &fx.config)
        .current_dir(&fx.project);
    cmd.output().unwrap()
}

/// The SDK's client on the server `name` of `config`, as the fixture's
/// user in the project, with `env` in its environment besides the
/// client's secret (a client passes its servers its whole environment):
/// the JSON it prints.
fn client(fx: &Fixture, config: &Path, name: &str, calls: &[String]) -> serde_json::Value {
    let mut cmd = fx.host_cmd(&python());
    cmd.arg(py_file("mcp_client.py"))
        .arg(config)
        .arg(name)
        .args(calls)
        .env("XDG_CONFIG_HOME", &fx.config)
        .env(CLIENT_SECRET, format!("sk-ant-api03-client-{}", fx.token))
        .env("CLIENT_PLAIN", "client-plain")
        .current_dir(&fx.project);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name}: the client failed: {out:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A tool call for [`client`].
fn call(tool: &str, arguments: serde_json::Value) -> String {
    format!("{tool}={arguments}")
}

/// The text and error flag of the `i`th call's answer.
fn answer(out: &serde_json::Value, i: usize) -> (String, bool) {
    let call = &out["calls"][i];
    (
        call["text"].as_str().unwrap_or_default().to_string(),
        call["error"].as_bool().unwrap_or_default(),
    )
}

/// Writes a file the fixture's user owns.
fn write_owned(fx: &Fixture, path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    chown_tree(&fx.config, fx.mode);
    chown(path, fx.mode);
}

/// The reference server (`server-everything`) and the filesystem server,
/// wrapped in a project's `.mcp.json` beside a remote entry: both answer
/// the client through their sandboxes; the reference server's environment
/// holds its own plain variable and nothing of the client's, its secret
/// unset; the filesystem server reads the workspace but cannot write it,
/// nor read the credential stores, until its own policy makes the
/// workspace writable; unwrapping gives the file back byte for byte.
#[test]
fn real_servers_answer_through_their_own_sandboxes_and_unwrap_restores_the_file() {
    mcp_dir();
    each_fixture(|mode, fx| {
        let home = fx.home.to_str().unwrap();
        let project = fx.project.to_str().unwrap();
        let server_secret = format!("srv-secret-{}", fx.token);
        let original = format!(
            r#"{{
  "mcpServers": {{
    "everything": {{
      "command": "node",
      "args": ["{}"],
      "env": {{"EVERY_TOKEN": "{server_secret}", "EVERY_MODE": "plain-{}"}}
    }},
    "files": {{"command": "node", "args": ["{}", "{project}", "{home}"]}},
    "remote": {{"type": "http", "url": "https://mcp.example.com/mcp"}}
  }}
}}
"#,
            npm_server("server-everything"),
            fx.token,
            npm_server("server-filesystem"),
        );
        let config = fx.project.join(".mcp.json");
        write_owned(fx, &config, &original);
        let wrapped = mcp(fx, "wrap", &config, &["--cordon", fx.bin.to_str().unwrap()]);
        let said = String::from_utf8_lossy(&wrapped.stderr);
        assert!(wrapped.status.success(), "{mode:?}: {wrapped:?}");
        assert!(said.contains("mcpServers.remote: remote"), "{said}");
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(text.contains("\"--pass-env\", \"EVERY_TOKEN\""), "{text}");

        let out = client(
            fx,
            &config,
            "everything",
            &[
                call("echo", serde_json::json!({"message": "hi"})),
                call("get-env", serde_json::json!({})),
            ],
        );
        assert_eq!(answer(&out, 0), ("Echo: hi".to_string(), false), "{mode:?}");
        let (env_text, _) = answer(&out, 1);
        let env: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&env_text).unwrap_or_else(|e| panic!("{e}: {env_text}"));
        assert_eq!(
            env["EVERY_MODE"],
            format!("plain-{}", fx.token),
            "{mode:?}: {env_text}"
        );
        for gone in [
            "EVERY_TOKEN",
            CLIENT_SECRET,
            "CLIENT_PLAIN",
            "XDG_CONFIG_HOME",
        ] {
            assert!(
                !env.contains_key(gone),
                "{mode:?}: {gone} reached the server: {env_text}"
            );
        }
        assert!(!env_text.contains(&server_secret), "{mode:?}: {env_text}");

        let canary = |rel: &str| fx.canary(rel);
        let readme = format!("{project}/README");
        let key = format!("{home}/.ssh/id_rsa");
        let made = format!("{project}/made-by-server.txt");
        // The clients' configs hold every server's keys.
        let client_config = format!("{home}/.claude.json");
        write_owned(
            fx,
            Path::new(&client_config),
            &format!("{{\"k\": \"{}\"}}", canary("claude")),
        );
        let calls = [
            call("read_text_file", serde_json::json!({"path": readme})),
            call("read_text_file", serde_json::json!({"path": key})),
            call(
                "write_file",
                serde_json::json!({"path": made, "content": "x"}),
            ),
            call("read_text_file", serde_json::json!({"path": client_config})),
            call(
                "read_text_file",
                serde_json::json!({"path": format!("{project}/.mcp.json")}),
            ),
        ];
        let out = client(fx, &config, "files", &calls);
        assert_eq!(
            answer(&out, 0),
            ("project-original\n".to_string(), false),
            "{mode:?}"
        );
        let (text, error) = answer(&out, 1);
        assert!(
            error && !text.contains(&canary(".ssh/id_rsa")),
            "{mode:?}: {text}"
        );
        let (text, error) = answer(&out, 2);
        assert!(error && text.contains("EROFS"), "{mode:?}: {text}");
        assert!(!Path::new(&made).exists(), "{mode:?}");
        for i in [3, 4] {
            let (text, error) = answer(&out, i);
            assert!(
                error && !text.contains(&fx.token),
                "{mode:?}: a client's config was read: {text}"
            );
        }

        // Its own policy, and only its own, makes the workspace writable.
        let policy = fx.config.join("cordon/mcp/files.toml");
        write_owned(fx, &policy, "[files]\nread_only_project = false\n");
        let out = client(fx, &config, "files", &calls[2..3]);
        assert!(!answer(&out, 0).1, "{mode:?}: {out}");
        assert_eq!(std::fs::read_to_string(&made).unwrap(), "x");
        std::fs::remove_file(&policy).unwrap();

        let unwrapped = mcp(fx, "unwrap", &config, &[]);
        assert!(unwrapped.status.success(), "{mode:?}: {unwrapped:?}");
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            original,
            "{mode:?}"
        );
    });
}

/// Requests the fake upstream received: each one's authorization header.
type Seen = Arc<Mutex<Vec<String>>>;

/// An HTTPS upstream on the host's loopback that answers `ok` and keeps
/// each request's authorization header.
fn upstream(ca: &TestCa) -> (u16, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let port = serve_tls(ca.http_server_config(), move |tls| {
        let log = log.clone();
        serve_http(tls, move |_| {
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let log = log.clone();
                async move {
                    let auth = req
                        .headers()
                        .get("authorization")
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                        .unwrap_or_default();
                    log.lock().unwrap().push(auth);
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(b"ok"))))
                }
            })
        })
    });
    (port, seen)
}

/// A server of the Python SDK with a secret of its own in its entry:
/// with no policy it reaches no host and its secret is unset; its policy
/// file names a host and injects the secret there, and then the request
/// reaches the host with the real value while the server holds a
/// placeholder; a second server of the same command, under another name,
/// gets none of that.
#[test]
fn a_servers_policy_gives_it_its_hosts_and_secret_and_no_other_server_gets_them() {
    mcp_dir();
    let ca = TestCa::new("MCP upstream CA");
    let (port, seen) = upstream(&ca);
    each_fixture(|mode, fx| {
        let secret = format!("srv-token-real-{}", fx.token);
        let entry = |name: &str| {
            format!(
                r#""{name}": {{"command": "{}", "args": ["{}"], "env": {{"SRV_TOKEN": "{secret}"}}}}"#,
                python(),
                py_file("mcp_server_fetch.py")
            )
        };
        let config = fx.project.join(".mcp.json");
        write_owned(
            fx,
            &config,
            &format!(
                "{{\"mcpServers\": {{{}, {}}}}}\n",
                entry("fetcher"),
                entry("other")
            ),
        );
        assert!(
            mcp(fx, "wrap", &config, &["--cordon", fx.bin.to_str().unwrap()])
                .status
                .success()
        );
        let url = format!("https://host.cordon.internal:{port}/v1/thing");
        let calls = [
            call(
                "fetch",
                serde_json::json!({"url": url, "token_var": "SRV_TOKEN"}),
            ),
            call("env", serde_json::json!({"name": "SRV_TOKEN"})),
        ];

        let before = seen.lock().unwrap().len();
        let out = client(fx, &config, "fetcher", &calls);
        assert!(answer(&out, 0).0.starts_with("failed"), "{mode:?}: {out}");
        assert_eq!(answer(&out, 1).0, "(unset)", "{mode:?}");
        assert_eq!(
            seen.lock().unwrap().len(),
            before,
            "{mode:?}: a request got out"
        );

        let ca_file = fx.outside.join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        chown(&ca_file, fx.mode);
        let policy = format!(
            "[network]\nallow = [\"host.cordon.internal:{port}\"]\nupstream_ca = [\"{}\"]\n\n[[credentials.inject]]\nenv = \"SRV_TOKEN\"\nhosts = [\"host.cordon.internal:{port}\"]\n",
            ca_file.display()
        );
        write_owned(fx, &fx.config.join("cordon/mcp/fetcher.toml"), &policy);
        let out = client(fx, &config, "fetcher", &calls);
        assert_eq!(answer(&out, 0).0, "status 200: ok", "{mode:?}: {out}");
        let inside = answer(&out, 1).0;
        assert!(
            !inside.contains(&secret) && inside != "(unset)",
            "{mode:?}: {inside}"
        );
        assert_eq!(
            seen.lock().unwrap().last().cloned(),
            Some(format!("Bearer {secret}")),
            "{mode:?}"
        );

        let before = seen.lock().unwrap().len();
        let out = client(fx, &config, "other", &calls);
        assert!(answer(&out, 0).0.starts_with("failed"), "{mode:?}: {out}");
        assert_eq!(answer(&out, 1).0, "(unset)", "{mode:?}");
        assert_eq!(seen.lock().unwrap().len(), before, "{mode:?}");
    });
}

/// Codex's config.toml: the wrapped server answers, and the file comes
/// back byte for byte.
#[test]
fn a_codex_config_is_wrapped_and_its_server_answers() {
    mcp_dir();
    each_fixture(|mode, fx| {
        let original = format!(
            "model = \"gpt-5\"\n\n[mcp_servers.everything]\ncommand = \"node\" # the reference server\nargs = [\n  \"{}\",\n]\n\n[mcp_servers.remote]\nurl = \"https://mcp.example.com/mcp\"\n",
            npm_server("server-everything")
        );
        let config = fx.project.join("config.toml");
        write_owned(fx, &config, &original);
        let wrapped = mcp(fx, "wrap", &config, &["--cordon", fx.bin.to_str().unwrap()]);
        assert!(wrapped.status.success(), "{mode:?}: {wrapped:?}");
        let out = client(
            fx,
            &config,
            "everything",
            &[call("echo", serde_json::json!({"message": "toml"}))],
        );
        assert_eq!(
            answer(&out, 0),
            ("Echo: toml".to_string(), false),
            "{mode:?}"
        );
        assert!(mcp(fx, "unwrap", &config, &[]).status.success());
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            original,
            "{mode:?}"
        );
    });
}

/// A policy cannot make cordon's own config writable (where the servers'
/// policies are), nor the system's code, whatever the path to them.
#[test]
fn cordon_s_own_config_and_the_systems_code_are_never_writable() {
    each_fixture(|mode, fx| {
        let policies = fx.config.join("cordon/mcp");
        std::fs::create_dir_all(&policies).unwrap();
        chown_tree(&fx.config, mode);
        for sandbox in [
            fx.sandbox().project(&policies),
            fx.sandbox().flag("--allow-write", "/etc"),
        ] {
            let out = sandbox.run(&["/bin/true"]);
            out.expect_code(125);
            assert!(out.has("refusing to make"), "{mode:?}: {out:?}");
        }
    });
}
