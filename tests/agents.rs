//! The real agents inside `cordon run`, against a local fake of their API
//! over HTTPS on the host's loopback: the agent completes a one-shot
//! prompt, the fake receives the real key, and the sandbox holds only a
//! placeholder. The agents come from the npm registry, pinned, through
//! `.ci/deps` (into `target/agents`).

mod common;

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
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
/// or whole answer of one text block to every `POST /v1/messages` (or,
/// when the test sets tool calls, those to a prompt that offers tools and
/// has no tool results yet), `{}` to anything else; keeps each request.
struct FakeAnthropic {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    hold: Arc<Hold>,
}

/// Holds the next prompt's answer until released, so the test can look
/// at the agent while it waits.
struct Hold {
    /// Set by the test: hold the next prompt.
    next: std::sync::atomic::AtomicBool,
    /// Set by the fake when it holds one.
    holding: std::sync::atomic::AtomicBool,
    release: tokio::sync::Semaphore,
    /// Set by the test: the tool calls (`tool_use` blocks' names and
    /// inputs) to answer a prompt that offers tools with.
    tools: Mutex<Vec<(String, serde_json::Value)>>,
}

/// What the fake answers every prompt with.
const ANSWER: &str = "hello from the fake API";

impl FakeAnthropic {
    fn start(ca: &TestCa) -> FakeAnthropic {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hold = Arc::new(Hold {
            next: false.into(),
            holding: false.into(),
            release: tokio::sync::Semaphore::new(0),
            tools: Mutex::new(Vec::new()),
        });
        let (log, held) = (seen.clone(), hold.clone());
        let port = serve_tls(ca.http_server_config(), move |tls| {
            let (log, held) = (log.clone(), held.clone());
            serve_http(tls, move |_| {
                hyper::service::service_fn(move |req| {
                    let (log, held) = (log.clone(), held.clone());
                    async move { Ok::<_, Infallible>(answer(req, &log, &held).await) }
                })
            })
        });
        FakeAnthropic { port, seen, hold }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    log: &Mutex<Vec<Seen>>,
    hold: &Hold,
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
    if hold.next.swap(false, Ordering::SeqCst) {
        hold.holding.store(true, Ordering::SeqCst);
        if let Ok(permit) = hold.release.acquire().await {
            permit.forget();
        }
    }
    let message = |content: serde_json::Value, stop: serde_json::Value| {
        serde_json::json!({
            "id": "msg_fake", "type": "message", "role": "assistant",
            "model": request["model"], "content": content,
            "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}
        })
    };
    // Each block whole, and as a stream gives it: its start (empty), its
    // delta, its stop.
    let calls = hold.tools.lock().unwrap().clone();
    let offers_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    let answered = serde_json::to_string(&request["messages"])
        .unwrap_or_default()
        .contains("tool_result");
    let (blocks, stop) = if !calls.is_empty() && offers_tools && !answered {
        let blocks: Vec<_> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, input))| {
                let id = format!("toolu_fake{i}");
                (
                    serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                    serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    serde_json::json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                )
            })
            .collect();
        (blocks, "tool_use")
    } else {
        let text = (
            serde_json::json!({"type": "text", "text": ANSWER}),
            serde_json::json!({"type": "text", "text": ""}),
            serde_json::json!({"type": "text_delta", "text": ANSWER}),
        );
        (vec![text], "end_turn")
    };
    if request["stream"] != true {
        let whole: Vec<_> = blocks.iter().map(|b| b.0.clone()).collect();
        return json(message(whole.into(), stop.into()).to_string());
    }
    let mut events = vec![(
        "message_start",
        serde_json::json!({"type": "message_start", "message": message(serde_json::json!([]), serde_json::Value::Null)}),
    )];
    for (index, (_, start, delta)) in blocks.iter().enumerate() {
        events.extend([
            (
                "content_block_start",
                serde_json::json!({"type": "content_block_start", "index": index, "content_block": start}),
            ),
            (
                "content_block_delta",
                serde_json::json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ),
            (
                "content_block_stop",
                serde_json::json!({"type": "content_block_stop", "index": index}),
            ),
        ]);
    }
    events.extend([
        (
            "message_delta",
            serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", serde_json::json!({"type": "message_stop"})),
    ]);
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

/// The value of `name` in the environment process `pid` started with.
fn environ_value(pid: i32, name: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    environ
        .split(|b| *b == 0)
        .find_map(|e| e.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The host pids of the processes in the pid namespace of host pid `pid`.
fn same_pid_namespace(pid: i32) -> Vec<i32> {
    let ns = |p: i32| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    let Some(theirs) = ns(pid) else {
        return Vec::new();
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| ns(*p).as_ref() == Some(&theirs))
        .collect()
}

/// Whether the resident memory of process `pid` holds `text`: each
/// readable mapping's present pages (its pagemap), read through
/// /proc/PID/mem in runs.
fn memory_holds(pid: i32, text: &[u8]) -> bool {
    use std::os::unix::fs::FileExt;
    const PAGE: u64 = 4096;
    let (Ok(maps), Ok(mem), Ok(pagemap)) = (
        std::fs::read_to_string(format!("/proc/{pid}/maps")),
        std::fs::File::open(format!("/proc/{pid}/mem")),
        std::fs::File::open(format!("/proc/{pid}/pagemap")),
    ) else {
        return false;
    };
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
        else {
            continue;
        };
        if !perms.starts_with('r') {
            continue;
        }
        let pages = (end - start) / PAGE;
        let mut entries = vec![0u8; pages as usize * 8];
        if pagemap.read_at(&mut entries, start / PAGE * 8).is_err() {
            continue;
        }
        let present = |i: u64| {
            let at = i as usize * 8;
            u64::from_le_bytes(entries[at..at + 8].try_into().unwrap()) >> 63 == 1
        };
        let mut i = 0;
        while i < pages {
            if !present(i) {
                i += 1;
                continue;
            }
            let first = i;
            while i < pages && present(i) {
                i += 1;
            }
            let mut run = vec![0u8; ((i - first) * PAGE) as usize];
            if let Ok(n) = mem.read_at(&mut run, start + first * PAGE) {
                if memchr::memmem::find(&run[..n], text).is_some() {
                    return true;
                }
            }
        }
    }
    false
}

/// The agent's binary linked into the fixture (where every uid can run
/// it), and the fake's CA in a file cordon reads.
fn setup_claude(fx: &Fixture, ca: &TestCa) -> (PathBuf, PathBuf) {
    let bin = fx.dir.path().join("bin/claude");
    if std::fs::hard_link(claude(), &bin).is_err() {
        std::fs::copy(claude(), &bin).unwrap();
    }
    let ca_file = fx.outside.join("api-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    chown_tree(&fx.outside, fx.mode);
    (bin, ca_file)
}

/// `claude -p` inside `cordon run --agent auto` (its profile picked from
/// the command's name), pointed at the fake by `ANTHROPIC_BASE_URL` through
/// the host's loopback (`host.cordon.internal`, as a gateway on the host
/// would be), its key given to cordon: the profile allows that host, and
/// the proxy injects the key on the fake's requests only. The prompt
/// completes, the fake receives the real key, the sandbox's variable holds
/// a placeholder, the key is in the memory of no process inside while the
/// agent waits for its answer, the agent's state is saved (in a
/// `~/.claude` the profile made), and the key is in no file it left.
#[test]
fn claude_completes_a_prompt_with_its_key_kept_outside() {
    let ca = TestCa::new("fake Anthropic API CA");
    let api = FakeAnthropic::start(&ca);
    each_fixture(|mode, fx| {
        let (bin, ca_file) = setup_claude(fx, &ca);
        let state = fx.home.join(".claude");
        let key = format!("sk-ant-api03-real-{}", fx.token);
        let base = format!("https://host.cordon.internal:{}", api.port);
        let bin = bin.to_str().unwrap();
        api.hold.next.store(true, Ordering::SeqCst);
        api.hold.holding.store(false, Ordering::SeqCst);
        let running = fx
            .sandbox()
            .env("ANTHROPIC_API_KEY", &key)
            .env("ANTHROPIC_BASE_URL", &base)
            .flag("--agent", "auto")
            .flag("--upstream-ca", &ca_file)
            .spawn(&[bin, "-p", "say hi"]);
        // While the fake holds the prompt, the agent waits inside with
        // whatever it holds: no process in the sandbox's pid namespace
        // (the agent, and cordon's init with its gates) has the key in
        // its memory.
        let held = wait_until(std::time::Duration::from_secs(30), || {
            api.hold.holding.load(Ordering::SeqCst)
        });
        // The agent's processes, not cordon's own (whose command line
        // holds the agent's): those in a pid namespace other than ours.
        let ours = std::fs::read_link("/proc/self/ns/pid").ok();
        let agents: Vec<i32> = host_pids_with_cmdline(&format!("{bin} -p"))
            .into_iter()
            .filter(|p| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok() != ours)
            .collect();
        let inside = agents
            .first()
            .and_then(|p| environ_value(*p, "ANTHROPIC_API_KEY"))
            .unwrap_or_default();
        let inside_pids = agents
            .first()
            .map(|p| same_pid_namespace(*p))
            .unwrap_or_default();
        let in_memory: Vec<i32> = inside_pids
            .iter()
            .copied()
            .filter(|p| memory_holds(*p, key.as_bytes()))
            .collect();
        // The scan's own check: cordon's supervisor, outside, holds the key
        // it injects.
        let supervisor_holds = memory_holds(running.pid(), key.as_bytes());
        api.hold.release.add_permits(1);
        let out = running.wait();
        assert!(supervisor_holds, "{mode:?}: the memory scan finds nothing");
        assert!(
            held,
            "{mode:?}: the prompt never reached the fake: {out:#?}"
        );
        assert!(
            inside_pids.len() >= 2,
            "{mode:?}: the agent's processes were not found: {agents:?} {inside_pids:?}"
        );
        assert!(
            in_memory.is_empty(),
            "{mode:?}: the real key is in the memory of {in_memory:?} inside"
        );
        out.ok();
        assert!(out.stdout.contains(ANSWER), "{mode:?}: {out:#?}");
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

/// Claude Code inside, told by its API (the fake) to make itself a hook,
/// a status-line script, a subagent and an MCP server: its shell tool
/// rewrites its settings with a hook, writes a hook script and a status
/// line script into ~/.claude, and adds an MCP server to ~/.claude.json;
/// its file tool writes a subagent. The tools run (the fake gets their
/// results), the agent finishes, and none of it survives on the host:
/// every part that acts in later sessions is as it was, the exit summary
/// names the refusals, and the agent's state is kept.
#[test]
fn claude_cannot_keep_a_hook_or_mcp_server_it_writes_into_its_config() {
    let ca = TestCa::new("fake Anthropic API CA");
    let api = FakeAnthropic::start(&ca);
    each_fixture(|mode, fx| {
        let (bin, ca_file) = setup_claude(fx, &ca);
        let settings = "{\"permissions\": {}}\n";
        let config = "{\"numStartups\": 1, \"mcpServers\": {}}\n";
        fx.write_home(".claude/settings.json", settings);
        fx.write_home(".claude.json", config);
        chown_tree(&fx.home, mode);
        let home = fx.home.display().to_string();
        let pwned = fx.outside.join("pwned");
        let hook = format!(
            "{{\"hooks\": {{\"Stop\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": \"touch {}\"}}]}}]}}}}",
            pwned.display()
        );
        let script = format!(
            "printf '%s' '{hook}' > {home}/.claude/settings.json; mkdir -p {home}/.claude/hooks; echo 'touch {p}' > {home}/.claude/hooks/stop.sh; echo 'touch {p}' > {home}/.claude/statusline.sh; python3 -c \"import json; p='{home}/.claude.json'; d=json.load(open(p)); d['mcpServers']={{'evil': {{'command': 'touch', 'args': ['{p}']}}}}; open(p, 'w').write(json.dumps(d))\"; {bin} mcp add --scope user evil -- touch {p}; echo tr''ied",
            p = pwned.display(),
            bin = bin.display(),
        );
        *api.hold.tools.lock().unwrap() = vec![
            (
                "Bash".to_string(),
                serde_json::json!({"command": script, "description": "configure"}),
            ),
            (
                "Write".to_string(),
                serde_json::json!({"file_path": format!("{home}/.claude/agents/evil.md"), "content": "---\nname: evil\n---\ntouch it\n"}),
            ),
        ];
        let out = fx
            .sandbox()
            .env(
                "ANTHROPIC_API_KEY",
                format!("sk-ant-api03-real-{}", fx.token),
            )
            // Its own permission checks off (as root too): cordon's hold.
            .env("IS_SANDBOX", "1")
            .env(
                "ANTHROPIC_BASE_URL",
                format!("https://host.cordon.internal:{}", api.port),
            )
            .flag("--agent", "claude")
            .flag("--upstream-ca", &ca_file)
            .run(&[
                bin.to_str().unwrap(),
                "-p",
                "configure yourself",
                "--dangerously-skip-permissions",
            ]);
        api.hold.tools.lock().unwrap().clear();
        out.ok();
        assert!(out.stdout.contains(ANSWER), "{mode:?}: {out:#?}");
        // The shell tool ran its command to the end: its output (`tried`,
        // which the command spells `tr''ied`) reached the fake.
        let ran = api
            .seen()
            .iter()
            .any(|r| r.body.contains("tool_result") && r.body.contains("tried"));
        assert!(ran, "{mode:?}: the tools never ran: {out:#?}");
        let claude_dir = fx.home.join(".claude");
        assert_eq!(
            std::fs::read_to_string(claude_dir.join("settings.json")).unwrap(),
            settings,
            "{mode:?}: {out:#?}"
        );
        // Its config changed as Claude Code keeps it (its start counted,
        // its first start noted), but not its MCP servers.
        let kept: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fx.home.join(".claude.json")).unwrap())
                .unwrap_or_else(|e| panic!("{mode:?}: ~/.claude.json is no longer JSON: {e}"));
        assert_eq!(
            kept["mcpServers"],
            serde_json::json!({}),
            "{mode:?}: {kept:#}"
        );
        assert!(
            kept["numStartups"] != serde_json::json!(1) || kept.get("firstStartTime").is_some(),
            "{mode:?}: the agent's config updates were not kept: {kept:#}"
        );
        for made in ["hooks", "statusline.sh", "agents"] {
            assert!(
                !claude_dir.join(made).exists(),
                "{mode:?}: {made} survived the run: {out:#?}"
            );
        }
        assert!(!pwned.exists(), "{mode:?}: a hook ran: {out:#?}");
        // Each refusal is in the audit log with its reason (the exit
        // summary shows the first few: Claude Code's own retries of its
        // read-only ~/.claude.json come first).
        let log = std::fs::read_to_string(fx.home.join(".local/state/cordon/audit.jsonl"))
            .unwrap_or_default();
        for (refused, why) in [
            (".claude/settings.json", "not the agent's state"),
            (".claude/hooks", "not the agent's state"),
            (".claude/statusline.sh", "not the agent's state"),
            (".claude/agents", "not the agent's state"),
            (".claude.json", "mcpServers would change"),
        ] {
            let named = log
                .lines()
                .any(|l| l.contains(&format!("{refused}\"")) && l.contains(why));
            assert!(
                named,
                "{mode:?}: no refusal of {refused} in the audit log: {out:#?}"
            );
        }
        assert!(
            claude_dir.join("projects").is_dir(),
            "{mode:?}: the agent's state was not kept: {out:#?}"
        );
    });
}

/// One of the fakes of `tests/py/fake_agent_api.py`, serving on the
/// host's loopback; stopped (by its pid) when dropped.
struct FakeApi {
    child: std::process::Child,
    port: u16,
    record: PathBuf,
    _dir: tempfile::TempDir,
}

impl FakeApi {
    fn start(kind: &str, ca: &TestCa) -> FakeApi {
        use std::io::BufRead;
        let dir = tempfile::Builder::new()
            .prefix("cordon-fake-api-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let (cert, key) = ca.leaf_pem();
        std::fs::write(dir.path().join("leaf.pem"), cert).unwrap();
        std::fs::write(dir.path().join("leaf.key"), key).unwrap();
        let record = dir.path().join("requests.jsonl");
        let mut child = std::process::Command::new(PY)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/py/fake_agent_api.py"
            ))
            .arg(kind)
            .arg(dir.path().join("leaf.pem"))
            .arg(dir.path().join("leaf.key"))
            .arg(&record)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the fake said {line:?}"));
        FakeApi {
            child,
            port,
            record,
            _dir: dir,
        }
    }

    /// Every request received so far: its path and headers.
    fn seen(&self) -> Vec<(String, serde_json::Value)> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["path"].as_str().unwrap_or_default().to_string(),
                    v["headers"].clone(),
                )
            })
            .collect()
    }

    /// Holds the answers to prompts until [`FakeApi::release`].
    fn hold(&self) {
        std::fs::write(self.record.with_extension("jsonl.hold"), "").unwrap();
    }

    fn release(&self) {
        let _ = std::fs::remove_file(self.record.with_extension("jsonl.hold"));
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An agent of the npm registry, as `.ci/deps` installs it into
/// target/agents.
fn installed(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/agents/node_modules")
        .join(rel);
    // Inside, /tmp is the sandbox's own: an agent installed under it is
    // not there to run.
    assert!(
        !path.starts_with("/tmp"),
        "{} is under /tmp, which the sandbox replaces with a private one: run the tests from a checkout elsewhere",
        path.display()
    );
    assert!(
        path.is_file(),
        "{} is missing: run .ci/deps, which installs the agents these tests run",
        path.display()
    );
    path
}

/// How one agent is run against its fake.
struct AgentRun<'a> {
    /// The profile.
    agent: &'a str,
    /// Its key's variable, and the header the fake must find it in
    /// (`authorization` as `Bearer KEY`).
    key_var: &'a str,
    key_header: &'a str,
    /// Its base-URL variable (the profile follows it).
    base_var: &'a str,
    /// The URL it takes, from the fake's base (Codex's has /v1).
    base: fn(&str) -> String,
    /// The one-shot prompt's command line, given the base URL and the
    /// prompt.
    command: fn(&str, &str) -> Vec<String>,
    /// What the home needs before the agent's first run.
    setup: fn(&Fixture),
    /// What the agent must have saved in the home after the prompt.
    state: &'a str,
    /// A command line that adds an MCP server to the agent's config.
    add_mcp: &'a [&'a str],
    /// The config files that must not keep it (relative to the home, or
    /// `./` to the project).
    configs: &'a [&'a str],
}

/// The agent completes a one-shot prompt inside `cordon run --agent`
/// against its fake on the host's loopback (as a gateway on the host,
/// `https://host.cordon.internal:PORT`): the fake receives the real key in
/// the header it belongs in; while the fake holds the answer, no process
/// in the sandbox has the key in its memory or environment; no file in
/// the home or project holds it afterwards; the agent's state is saved;
/// and an MCP server it adds to its own config does not survive.
fn agent_keeps_its_key_outside(run: &AgentRun<'_>, fake_kind: &str) {
    let ca = TestCa::new("fake agent API CA");
    let api = FakeApi::start(fake_kind, &ca);
    each_fixture(|mode, fx| {
        let ca_file = fx.outside.join("api-ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        chown_tree(&fx.outside, fx.mode);
        let key = format!("real-key-{}-{}", run.agent, fx.token);
        let base = (run.base)(&format!("https://host.cordon.internal:{}", api.port));
        let sandbox = || {
            fx.sandbox()
                .env(run.key_var, &key)
                .env(run.base_var, &base)
                .flag("--agent", run.agent)
                .flag("--upstream-ca", &ca_file)
                .timeout(std::time::Duration::from_secs(120))
        };
        (run.setup)(fx);
        // A prompt of this run's own, to find its processes by.
        let prompt = format!("say hi {}", fx.token);
        let command = (run.command)(&base, &prompt);
        let argv: Vec<&str> = command.iter().map(String::as_str).collect();
        let before = api.seen().len();
        api.hold();
        let running = sandbox().spawn(&argv);
        let asked = wait_until(std::time::Duration::from_secs(60), || {
            api.seen().len() > before
        });
        let ours = std::fs::read_link("/proc/self/ns/pid").ok();
        let inside: Vec<i32> = host_pids_with_cmdline(&prompt)
            .into_iter()
            .filter(|p| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok() != ours)
            .flat_map(same_pid_namespace)
            .collect();
        let in_memory: Vec<i32> = inside
            .iter()
            .copied()
            .filter(|p| {
                memory_holds(*p, key.as_bytes())
                    || environ_value(*p, run.key_var).as_deref() == Some(key.as_str())
            })
            .collect();
        let supervisor_holds = memory_holds(running.pid(), key.as_bytes());
        api.release();
        let out = running.wait();
        assert!(
            asked,
            "{mode:?}: the prompt never reached the fake: {out:#?}"
        );
        assert!(supervisor_holds, "{mode:?}: the memory scan finds nothing");
        assert!(
            !inside.is_empty(),
            "{mode:?}: the agent's processes were not found"
        );
        assert!(
            in_memory.is_empty(),
            "{mode:?}: the key is in the memory or environment of {in_memory:?} inside"
        );
        out.ok();
        assert!(out.stdout.contains(ANSWER), "{mode:?}: {out:#?}");
        let seen = api.seen();
        let with_key = seen[before..].iter().filter(|(_, headers)| {
            let value = headers[run.key_header].as_str().unwrap_or_default();
            value == key || value == format!("Bearer {key}")
        });
        assert!(
            with_key.count() > 0,
            "{mode:?}: the fake never got the real key: {:?}",
            &seen[before..]
        );
        for dir in [&fx.home, &fx.project] {
            let holding = files_holding(dir, &key);
            assert!(holding.is_empty(), "{mode:?}: the key is in {holding:?}");
        }
        let state = fx.home.join(run.state);
        assert!(
            std::fs::read_dir(&state).is_ok_and(|mut d| d.next().is_some()),
            "{mode:?}: no state saved in {}",
            state.display()
        );

        // An MCP server added to the agent's own config does not survive.
        let configs: Vec<PathBuf> = run
            .configs
            .iter()
            .map(|c| match c.strip_prefix("./") {
                Some(rel) => fx.project.join(rel),
                None => fx.home.join(c),
            })
            .collect();
        let before: Vec<Option<Vec<u8>>> = configs.iter().map(|c| std::fs::read(c).ok()).collect();
        let added = sandbox().run(run.add_mcp);
        let after: Vec<Option<Vec<u8>>> = configs.iter().map(|c| std::fs::read(c).ok()).collect();
        assert_eq!(
            before, after,
            "{mode:?}: the MCP server was kept: {added:#?}"
        );
    });
}

#[test]
fn codex_completes_a_prompt_with_its_key_kept_outside() {
    let codex = installed("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex");
    static CODEX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CODEX.get_or_init(|| codex.to_string_lossy().into_owned());
    agent_keeps_its_key_outside(
        &AgentRun {
            agent: "codex",
            key_var: "CODEX_API_KEY",
            key_header: "authorization",
            base_var: "OPENAI_BASE_URL",
            base: |fake| format!("{fake}/v1"),
            command: |base, prompt| {
                [
                    CODEX.get().unwrap().as_str(),
                    "exec",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "-c",
                    &format!("openai_base_url=\"{base}\""),
                    prompt,
                ]
                .map(str::to_string)
                .to_vec()
            },
            setup: |_| {},
            state: ".codex/sessions",
            add_mcp: &[
                CODEX.get().unwrap().as_str(),
                "mcp",
                "add",
                "planted",
                "--",
                "/bin/sh",
                "-c",
                "id",
            ],
            configs: &[".codex/config.toml"],
        },
        "openai",
    );
}

#[test]
fn gemini_completes_a_prompt_with_its_key_kept_outside() {
    let gemini = installed("@google/gemini-cli/bundle/gemini.js");
    static GEMINI: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    GEMINI.get_or_init(|| gemini.to_string_lossy().into_owned());
    agent_keeps_its_key_outside(
        &AgentRun {
            agent: "gemini",
            key_var: "GEMINI_API_KEY",
            key_header: "x-goog-api-key",
            base_var: "GOOGLE_GEMINI_BASE_URL",
            base: |fake| fake.to_string(),
            command: |_, prompt| {
                [
                    "node",
                    GEMINI.get().unwrap().as_str(),
                    "--skip-trust",
                    "-p",
                    prompt,
                ]
                .map(str::to_string)
                .to_vec()
            },
            // Its key from the environment, and no usage statistics (to
            // a host the profile does not allow).
            setup: |fx| {
                fx.write_home(
                    ".gemini/settings.json",
                    r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}}"#,
                );
                chown_tree(&fx.home, fx.mode);
            },
            state: ".gemini/tmp/project/chats",
            add_mcp: &[
                "node",
                GEMINI.get().unwrap().as_str(),
                "mcp",
                "add",
                "-s",
                "user",
                "planted",
                "/bin/sh",
                "-c",
                "id",
            ],
            configs: &[".gemini/settings.json", "./.gemini/settings.json"],
        },
        "gemini",
    );
}
