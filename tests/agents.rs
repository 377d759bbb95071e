//! The real agents inside `cordon run`, against a local fake of their API
//! over HTTPS on the host's loopback: the agent completes a one-shot
//! prompt, the fake receives the real key, and the sandbox holds only a
//! placeholder. The agents come from the npm registry, pinned, through
//! `.ci/deps` (into `target/agents`).

mod common;

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::tls::{serve_http, serve_tls, TestCa};
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};

/// Claude Code's native build, as `.ci/deps` installs it.
fn claude() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    assert!(
        path.is_file(),
        "{} is missing: run .ci/deps, which installs the agents these tests run",
        path.display()
    );
    path
}

/// One request the fake API received.
#[derive(Clone, Debug)]
struct Seen {
    target: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether `text` is anywhere in what was received.
    fn holds(&self, text: &str) -> bool {
        self.target.contains(text)
            || self.body.contains(text)
            || self.headers.iter().any(|(_, v)| v.contains(text))
    }
}

/// A fake of the Anthropic Messages API: a streamed (server-sent events)
/// or whole answer of one text block to every `POST /v1/messages`, `{}`
/// to anything else; keeps each request.
struct FakeAnthropic {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// What the fake answers every prompt with.
const ANSWER: &str = "hello from the fake API";

impl FakeAnthropic {
    fn start(ca: &TestCa) -> FakeAnthropic {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let port = serve_tls(ca.http_server_config(), move |tls| {
            let log = log.clone();
            serve_http(tls, move |_| {
                hyper::service::service_fn(move |req| {
                    let log = log.clone();
                    async move { Ok::<_, Infallible>(answer(req, &log).await) }
                })
            })
        });
        FakeAnthropic { port, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    log: &Mutex<Vec<Seen>>,
) -> Response<Full<Bytes>> {
    let target = req.uri().to_string();
    let headers = req
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let post = req.method() == hyper::Method::POST;
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&body).into_owned();
    let request: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    log.lock().unwrap().push(Seen {
        target: target.clone(),
        headers,
        body,
    });
    let json = |text: String| {
        Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(text)))
            .unwrap()
    };
    if !(post && target.starts_with("/v1/messages") && !target.contains("count_tokens")) {
        return json("{}".into());
    }
    let message = |content: serde_json::Value, stop: serde_json::Value| {
        serde_json::json!({
            "id": "msg_fake", "type": "message", "role": "assistant",
            "model": request["model"], "content": content,
            "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}
        })
    };
    if request["stream"] != true {
        let whole = message(
            serde_json::json!([{"type": "text", "text": ANSWER}]),
            "end_turn".into(),
        );
        return json(whole.to_string());
    }
    let events = [
        (
            "message_start",
            serde_json::json!({"type": "message_start", "message": message(serde_json::json!([]), serde_json::Value::Null)}),
        ),
        (
            "content_block_start",
            serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ANSWER}}),
        ),
        (
            "content_block_stop",
            serde_json::json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", serde_json::json!({"type": "message_stop"})),
    ];
    let stream: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Full::new(Bytes::from(stream)))
        .unwrap()
}

/// Every file under `dir` (not following links) that holds `text`.
fn files_holding(dir: &Path, text: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(files_holding(&path, text));
        } else if kind.is_file()
            && std::fs::read(&path)
                .is_ok_and(|b| memchr::memmem::find(&b, text.as_bytes()).is_some())
        {
            found.push(path);
        }
    }
    found
}

/// `claude -p` inside `cordon run`, pointed at the fake through the
/// host's loopback (`host.cordon.internal`, as a gateway on the host
/// would be), its key given to cordon and injected by the proxy on the
/// fake's requests only: the prompt completes, the fake receives the real
/// key, the sandbox's variable holds a placeholder, and the key is in no
/// file the agent left.
#[test]
fn claude_completes_a_prompt_with_its_key_kept_outside() {
    let claude = claude();
    let ca = TestCa::new("fake Anthropic API CA");
    let api = FakeAnthropic::start(&ca);
    each_fixture(|mode, fx| {
        let bin = fx.dir.path().join("bin/claude");
        if std::fs::hard_link(&claude, &bin).is_err() {
            std::fs::copy(&claude, &bin).unwrap();
        }
        let state = fx.home.join(".claude");
        std::fs::create_dir(&state).unwrap();
        chown(&state, mode);
        let ca_file = fx.outside.join("api-ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        let host = format!("host.cordon.internal:{}", api.port);
        let policy = fx.outside.join("agent.toml");
        std::fs::write(
            &policy,
            format!("[[credentials.inject]]\nenv = \"ANTHROPIC_API_KEY\"\nhosts = [\"{host}\"]\n"),
        )
        .unwrap();
        chown_tree(&fx.outside, mode);
        let key = format!("sk-ant-api03-real-{}", fx.token);
        let base = format!("ANTHROPIC_BASE_URL=https://{host}");
        let bin = bin.to_str().unwrap();
        let out = fx
            .sandbox()
            .env("ANTHROPIC_API_KEY", &key)
            .flag("--allow-domain", &host)
            .flag("--upstream-ca", &ca_file)
            .flag("--policy", &policy)
            .flag("--allow-write", &state)
            .run(&[
                "env",
                &base,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
                "DISABLE_AUTOUPDATER=1",
                "sh",
                "-c",
                "printf 'inside: %s\\n' \"$ANTHROPIC_API_KEY\"; exec \"$0\" -p 'say hi'",
                bin,
            ]);
        out.ok();
        assert!(out.stdout.contains(ANSWER), "{mode:?}: {out:#?}");
        let inside = line(&out, "inside:").to_string();
        assert!(
            !inside.is_empty() && !inside.contains(&key),
            "{mode:?}: the sandbox saw {inside:?}"
        );
        let seen = api.seen();
        assert!(
            seen.iter()
                .any(|r| r.header("x-api-key") == Some(key.as_str())),
            "{mode:?}: the fake never got the real key: {seen:#?}"
        );
        assert!(
            !seen.iter().any(|r| r.holds(&inside)),
            "{mode:?}: the placeholder reached the fake: {seen:#?}"
        );
        let state_files = files_holding(&state, "");
        assert!(
            !state_files.is_empty(),
            "{mode:?}: no state saved in {}",
            state.display()
        );
        for dir in [&fx.home, &fx.project] {
            let holding = files_holding(dir, &key);
            assert!(
                holding.is_empty(),
                "{mode:?}: the real key is in {holding:?}"
            );
        }
    });
}
