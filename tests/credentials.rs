//! The credentials door's network half, end to end: TLS inspection with
//! the sandbox's own CA, injected secrets, HTTP rules, upstream
//! verification. The upstreams are HTTPS servers this test starts on
//! 127.0.0.1 with a CA it makes (passed with --upstream-ca).

mod common;

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::tls::{serve_http, serve_tls, TestCa};
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// An HTTPS upstream on 127.0.0.1 (HTTP/1.1 and HTTP/2): answers every
/// request with an echo of its method, target, headers and body, and
/// keeps a copy of each echo.
struct Upstream {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

/// A git repository served over smart HTTP by `git http-backend`, behind
/// Basic authentication with one password.
#[derive(Clone)]
struct GitSite {
    root: std::path::PathBuf,
    password: String,
}

impl Upstream {
    fn start(ca: &TestCa) -> Upstream {
        Self::start_with(ca, None)
    }

    fn start_with(ca: &TestCa, git: Option<GitSite>) -> Upstream {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let port = serve_tls(ca.http_server_config(), move |tls| {
            let log = log.clone();
            let git = git.clone();
            serve_http(tls, move |h2| {
                hyper::service::service_fn(move |req| {
                    let log = log.clone();
                    let git = git.clone();
                    async move {
                        Ok::<_, Infallible>(match git {
                            Some(site) => {
                                let (parts, body) =
                                    git_backend(req, &site, &log).await.into_parts();
                                Response::from_parts(parts, body.boxed())
                            }
                            None => echo(req, h2, &log).await,
                        })
                    }
                })
            })
        });
        Upstream { port, seen }
    }

    fn seen(&self) -> String {
        self.seen.lock().unwrap().join("\n----\n")
    }
}

/// Serves one request with `git http-backend` (CGI), after checking Basic
/// credentials `git:<password>`.
async fn git_backend(
    req: Request<hyper::body::Incoming>,
    site: &GitSite,
    log: &Mutex<Vec<String>>,
) -> Response<Full<Bytes>> {
    use base64::Engine as _;
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("git:{}", site.password))
    );
    let auth = req
        .headers()
        .get("authorization")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string());
    log.lock()
        .unwrap()
        .push(format!("{} {} auth={auth:?}", req.method(), req.uri()));
    if auth.as_deref() != Some(expected.as_str()) {
        let mut resp = Response::new(Full::new(Bytes::from_static(b"who are you?\n")));
        *resp.status_mut() = hyper::StatusCode::UNAUTHORIZED;
        resp.headers_mut().insert(
            "www-authenticate",
            hyper::header::HeaderValue::from_static("Basic realm=\"test\""),
        );
        return resp;
    }
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or_default().to_string();
    let content_type = req
        .headers()
        .get("content-type")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string())
        .unwrap_or_default();
    let gzip = req
        .headers()
        .get("content-encoding")
        .is_some_and(|v| v.as_bytes() == b"gzip");
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let root = site.root.clone();
    let out = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .arg("http-backend")
            .env_clear()
            .env("PATH", PATH)
            .env("GIT_PROJECT_ROOT", &root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("REQUEST_METHOD", method)
            .env("PATH_INFO", path.trim_start_matches("/git"))
            .env("QUERY_STRING", query)
            .env("CONTENT_TYPE", content_type)
            .env("HTTP_CONTENT_ENCODING", if gzip { "gzip" } else { "" })
            .env("REMOTE_USER", "git")
            .env("REMOTE_ADDR", "127.0.0.1")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &root)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&body).unwrap();
        drop(stdin);
        child.wait_with_output().unwrap().stdout
    })
    .await
    .unwrap();
    // CGI: headers, a blank line, the body.
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)))
        .unwrap();
    let head = String::from_utf8_lossy(&out[..split.0]).to_string();
    let mut resp = Response::new(Full::new(Bytes::copy_from_slice(&out[split.0 + split.1..])));
    for line in head.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if k.eq_ignore_ascii_case("status") {
            let code: u16 = v.trim()[..3].parse().unwrap();
            *resp.status_mut() = hyper::StatusCode::from_u16(code).unwrap();
        } else {
            resp.headers_mut().insert(
                hyper::header::HeaderName::from_bytes(k.trim().as_bytes()).unwrap(),
                hyper::header::HeaderValue::from_str(v.trim()).unwrap(),
            );
        }
    }
    resp
}

/// `value` as an echoing server might send it back: base64 (standard and
/// URL-safe, padded or not, in each alignment, inside JSON), JSON escapes
/// (`\/`, `\u00XX`), percent-encoding, hex, reversed; one per line.
fn encodings(value: &[u8]) -> Vec<u8> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use base64::Engine as _;
    let text = String::from_utf8_lossy(value).to_string();
    let mut lines = Vec::new();
    for prefix in ["", "u:", "user:"] {
        let data = format!("{prefix}{text}");
        lines.push(STANDARD.encode(&data));
        lines.push(URL_SAFE_NO_PAD.encode(&data));
    }
    lines.push(STANDARD.encode(format!("{{\"token\":\"{text}\"}}")));
    lines.push(
        serde_json::json!({ "token": text })
            .to_string()
            .replace('/', "\\/"),
    );
    lines.push(
        text.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("\\u{b:04x}")
                }
            })
            .collect(),
    );
    lines.push(text.bytes().map(|b| format!("%{b:02X}")).collect());
    lines.push(
        text.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02x}")
                }
            })
            .collect(),
    );
    lines.push(text.bytes().map(|b| format!("{b:02x}")).collect());
    lines.push(text.bytes().map(|b| format!("{b:02X}")).collect());
    lines.push(text.chars().rev().collect());
    let mut out = lines.join("\n").into_bytes();
    out.push(b'\n');
    out
}

/// Whether `text` still gives away `secret` in any of the forms
/// [`encodings`] writes: its middle part (all but two bytes at each end, which
/// base64 shares with its neighbours) found in the text itself, reversed,
/// hex- or percent-decoded, JSON-unescaped, or base64-decoded at any offset
/// of any run of base64 characters.
fn gives_away(text: &[u8], secret: &str) -> bool {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    use base64::Engine as _;
    let inner = &secret.as_bytes()[2..secret.len() - 2];
    let found = |hay: &[u8]| hay.windows(inner.len()).any(|w| w == inner);
    let reversed: Vec<u8> = text.iter().rev().copied().collect();
    let unhex = |t: &[u8], skip: usize| -> Vec<u8> {
        t[skip.min(t.len())..]
            .chunks(2)
            .filter_map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
            .collect()
    };
    let text_str = String::from_utf8_lossy(text).to_string();
    let unescaped = text_str.replace("\\/", "/");
    let unicode = unescape_hex(&unescaped, "\\u00");
    let percent = unescape_hex(&text_str, "%");
    if [text, &reversed[..], unicode.as_bytes(), percent.as_bytes()]
        .iter()
        .any(|t| found(t))
    {
        return true;
    }
    for line in text.split(|b| *b == b'\n') {
        let hex_line: Vec<u8> = line.iter().copied().filter(u8::is_ascii_hexdigit).collect();
        if found(&unhex(&hex_line, 0)) || found(&unhex(&hex_line, 1)) {
            return true;
        }
        for run in line.split(|b| !(b.is_ascii_alphanumeric() || b"+/-_".contains(b))) {
            for skip in 0..4.min(run.len()) {
                let mut part = run[skip..].to_vec();
                part.truncate(part.len() / 4 * 4);
                for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                    if engine.decode(&part).is_ok_and(|d| found(&d)) {
                        return true;
                    }
                }
            }
        }
    }
    false
}

/// `text` with each `marker` followed by two hex digits replaced by the
/// byte they name (`\u00XX` JSON escapes, `%XX` percent-encoding).
fn unescape_hex(text: &str, marker: &str) -> String {
    text.split(marker)
        .enumerate()
        .map(|(i, part)| {
            if i == 0 || part.len() < 2 {
                return part.to_string();
            }
            match u8::from_str_radix(&part[..2], 16) {
                Ok(b) => format!("{}{}", b as char, &part[2..]),
                Err(_) => part.to_string(),
            }
        })
        .collect()
}

/// A response body sent in the given chunks, without a length.
struct Chunks(std::collections::VecDeque<Bytes>);

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

type TestBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// `/big`: 3 MiB, streamed in odd-sized chunks without a length, with the
/// request's `x-token` every 1000 bytes (so some copies straddle chunks).
/// Anything else: [`echo_text`].
async fn echo(
    mut req: Request<hyper::body::Incoming>,
    h2: bool,
    log: &Mutex<Vec<String>>,
) -> Response<TestBody> {
    let token = req
        .headers()
        .get("x-token")
        .map(|v| v.as_bytes().to_vec())
        .unwrap_or_default();
    if req.uri().path() == "/ws" {
        // An upgrade: after the 101, the request's x-token (if any) in its
        // encoded forms, then an echo of every byte. Raw bytes, or with
        // `?frames=whole` WebSocket frames (the token in one text frame,
        // each echo in a binary frame); `?frames=split` sends the token as
        // two fragments. The 101 accepts any Sec-WebSocket-Extensions
        // asked for, and `?frames=deflate` claims permessage-deflate anyway.
        log.lock().unwrap().push(format!("WS {:?}", req.headers()));
        let frames = req.uri().query().unwrap_or_default().to_string();
        let framed = frames.starts_with("frames=");
        let deflate =
            frames == "frames=deflate" || req.headers().contains_key("sec-websocket-extensions");
        let on = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let Ok(upgraded) = on.await else { return };
            let mut io = TokioIo::new(upgraded);
            let first = encodings(&token);
            let first = match frames.as_str() {
                _ if token.is_empty() => Vec::new(),
                "frames=split" => {
                    let (a, b) = token.split_at(token.len() / 2);
                    [ws_frame(0x01, a), ws_frame(0x80, b)].concat()
                }
                _ if framed => ws_frame(0x81, &first),
                _ => first,
            };
            if io.write_all(&first).await.is_err() {
                return;
            }
            let mut buf = [0u8; 1024];
            while let Ok(n) = io.read(&mut buf).await {
                let echo = if framed {
                    ws_frame(0x82, &buf[..n])
                } else {
                    buf[..n].to_vec()
                };
                if n == 0 || io.write_all(&echo).await.is_err() {
                    break;
                }
            }
        });
        let mut resp = Response::new(Full::new(Bytes::new()).boxed());
        *resp.status_mut() = hyper::StatusCode::SWITCHING_PROTOCOLS;
        if deflate {
            resp.headers_mut().insert(
                "sec-websocket-extensions",
                hyper::header::HeaderValue::from_static("permessage-deflate"),
            );
        }
        resp.headers_mut().insert(
            "connection",
            hyper::header::HeaderValue::from_static("upgrade"),
        );
        resp.headers_mut().insert(
            "upgrade",
            hyper::header::HeaderValue::from_static("websocket"),
        );
        return resp;
    }
    if let Some(n) = req.uri().path().strip_prefix("/bytes/") {
        let n: usize = n.parse().unwrap_or(0);
        let chunks = vec![Bytes::from(vec![b'a'; n])].into();
        let mut resp = Response::new(Chunks(chunks).boxed());
        resp.headers_mut()
            .insert("content-length", hyper::header::HeaderValue::from(n));
        return resp;
    }
    if req.uri().path() == "/encoded" {
        log.lock().unwrap().push(format!(
            "GET /encoded x-token: {}",
            String::from_utf8_lossy(&token)
        ));
        let body = encodings(&token);
        return Response::new(Full::new(Bytes::from(body)).boxed());
    }
    if req.uri().path() == "/trailers" {
        // The request's x-token echoed in trailers, after a streamed body.
        let mut trailers = hyper::HeaderMap::new();
        trailers.insert(
            "x-echo",
            hyper::header::HeaderValue::from_bytes(&token).unwrap(),
        );
        let text = Bytes::from_static(b"body, then trailers\n");
        let body = Chunks(vec![text].into())
            .with_trailers(async move { Some(Ok(trailers)) })
            .boxed();
        let mut resp = Response::new(body);
        // HTTP/1.1 servers send only the trailers they announce.
        resp.headers_mut()
            .insert("trailer", hyper::header::HeaderValue::from_static("x-echo"));
        return resp;
    }
    if req.uri().path() == "/big" {
        let mut all = Vec::new();
        while all.len() < 3 << 20 {
            all.extend_from_slice(&token);
            all.resize(all.len() + 1000 - token.len() % 1000, b'.');
        }
        let chunks = all.chunks(4093).map(Bytes::copy_from_slice).collect();
        log.lock()
            .unwrap()
            .push(format!("GET /big sent {} bytes", all.len()));
        return Response::new(Chunks(chunks).boxed());
    }
    let close = req.uri().path() == "/close";
    // `/gzip`: claims compression whatever the client accepts.
    let gzip = req.uri().path() == "/gzip";
    let (mut parts, body) = echo_text(req, h2, log).await.into_parts();
    if gzip {
        parts.headers.insert(
            "content-encoding",
            hyper::header::HeaderValue::from_static("gzip"),
        );
    }
    if close {
        parts.headers.insert(
            "connection",
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    Response::from_parts(parts, body.boxed())
}

/// A WebSocket frame as a server sends it (unmasked): `first` is the
/// FIN/RSV/opcode byte.
fn ws_frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![first];
    match payload.len() {
        n if n < 126 => frame.push(n as u8),
        n if n <= 0xffff => {
            frame.push(126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(payload);
    frame
}

async fn echo_text(
    req: Request<hyper::body::Incoming>,
    h2: bool,
    log: &Mutex<Vec<String>>,
) -> Response<Full<Bytes>> {
    let mut text = format!(
        "{} {} {}\n",
        req.method(),
        req.uri(),
        if h2 { "h2" } else { "h1" }
    );
    let mut headers: Vec<String> = req
        .headers()
        .iter()
        .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
        .collect();
    headers.sort();
    for h in headers {
        text.push_str(&h);
        text.push('\n');
    }
    let echo_header = req
        .headers()
        .get("authorization")
        .cloned()
        .unwrap_or(hyper::header::HeaderValue::from_static("none"));
    let body = req.into_body().collect().await.unwrap().to_bytes();
    text.push('\n');
    text.push_str(&String::from_utf8_lossy(&body));
    log.lock().unwrap().push(text.clone());
    let mut resp = Response::new(Full::new(Bytes::from(text)));
    resp.headers_mut()
        .insert("x-echo-authorization", echo_header);
    resp
}

/// The sandbox's view of one HTTPS request through the proxy, with curl.
fn curl(port: u16, path: &str, extra: &str) -> String {
    format!(
        "curl -sS --max-time 20 --noproxy '' -x http://127.0.0.1:3128 -D - {extra} https://127.0.0.1:{port}{path}"
    )
}

fn write(path: &Path, text: &str, mode: Mode) {
    std::fs::write(path, text).unwrap();
    chown(path, mode);
}

/// `ca`'s certificate in a file the sandbox's cordon can read, for
/// `--upstream-ca`.
fn upstream_ca(fx: &Fixture, ca: &TestCa) -> PathBuf {
    let path = fx.outside.join("upstream-ca.pem");
    write(&path, &ca.pem(), fx.mode);
    path
}

/// A sandbox without an audit log that allows 127.0.0.1:`port` and
/// inspects 127.0.0.1, trusting `ca` for the upstreams.
fn inspecting(fx: &Fixture, ca: &TestCa, port: u16) -> Sandbox {
    fx.audited("none")
        .flag("--allow-domain", format!("127.0.0.1:{port}"))
        .flag("--inspect", "127.0.0.1")
        .flag("--upstream-ca", upstream_ca(fx, ca))
}

/// A policy file that injects the variable `env` into requests to
/// 127.0.0.1:`port` only.
fn inject_policy(fx: &Fixture, env: &str, port: u16) -> PathBuf {
    let path = fx.outside.join("policy.toml");
    let text = format!("[[credentials.inject]]\nenv = \"{env}\"\nhosts = [\"127.0.0.1:{port}\"]\n");
    write(&path, &text, fx.mode);
    path
}

/// The upstreams' CA and one echo upstream it signed: most tests' setting.
fn ca_and_upstream() -> (TestCa, Upstream) {
    let ca = TestCa::new("cordon test upstream CA");
    let up = Upstream::start(&ca);
    (ca, up)
}

/// Runs `test` once per mode with a fixture, and the upstreams' CA and
/// echo upstream of [`ca_and_upstream`] (made once for all modes).
fn each_mode_inspecting(test: impl Fn(Mode, &Fixture, &TestCa, &Upstream)) {
    let (ca, up) = ca_and_upstream();
    each_fixture(|mode, fx| test(mode, fx, &ca, &up));
}

/// Runs the python `script` with `args` in `fx`'s [`inspecting`] sandbox
/// for `up`; the script must exit 0.
fn inspected_py<S: AsRef<str>>(
    fx: &Fixture,
    ca: &TestCa,
    up: &Upstream,
    script: &str,
    args: &[S],
) -> Output {
    let out = inspecting(fx, ca, up.port).py_args(script, args);
    out.ok();
    out
}

/// [`inspected_py`] with the upstream's port as the script's one argument.
fn inspected_py_on_port(fx: &Fixture, ca: &TestCa, up: &Upstream, script: &str) -> Output {
    inspected_py(fx, ca, up, script, &[up.port.to_string()])
}

/// One mode's fixture for a test of injection into 127.0.0.1:`port`.
struct Injecting {
    fx: Fixture,
    /// The upstreams' CA in a file.
    ca_file: PathBuf,
    /// The real value, unique to the run.
    secret: String,
    /// A policy that injects `TEST_TOKEN` into requests to the port.
    policy: PathBuf,
    /// Where the audit log goes.
    log: PathBuf,
}

impl Injecting {
    fn new(mode: Mode, ca: &TestCa, port: u16) -> Injecting {
        let fx = Fixture::new(mode);
        let ca_file = upstream_ca(&fx, ca);
        let secret = format!("s3cret-{}", fx.token);
        let policy = inject_policy(&fx, "TEST_TOKEN", port);
        let log = fx.outside.join("audit.jsonl");
        Injecting {
            fx,
            ca_file,
            secret,
            policy,
            log,
        }
    }

    /// A sandbox with the real value in `TEST_TOKEN`, the audit log and the
    /// policy, inspecting 127.0.0.1 and trusting the upstreams' CA; the
    /// caller allows the hosts.
    fn sandbox(&self) -> Sandbox {
        self.fx
            .sandbox()
            .env("TEST_TOKEN", &self.secret)
            .flag("--audit", &self.log)
            .flag("--policy", &self.policy)
            .flag("--inspect", "127.0.0.1")
            .flag("--upstream-ca", &self.ca_file)
    }

    /// The audit log's lines.
    fn audit(&self) -> String {
        audit_text(&self.log)
    }
}

/// Runs `test` once per mode with an [`Injecting`] fixture for the echo
/// upstream of [`ca_and_upstream`], that upstream and another one the
/// same CA signed (both made once for all modes).
fn each_mode_injecting(test: impl Fn(Mode, &Injecting, &Upstream, &Upstream)) {
    let (ca, up) = ca_and_upstream();
    let other = Upstream::start(&ca);
    each_mode(|mode| test(mode, &Injecting::new(mode, &ca, up.port), &up, &other));
}

/// The part of `out` between the line `== name` and the next `== ` line.
fn part(out: &Output, name: &str) -> String {
    out.stdout
        .split(&format!("== {name}\n"))
        .nth(1)
        .and_then(|p| p.split("\n== ").next())
        .unwrap_or_default()
        .to_string()
}

/// The audit log's lines.
fn audit_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn curl_and_python_see_only_the_placeholder() {
    each_mode_injecting(|mode, inj, up, other| {
        let secret = inj.secret.clone();
        let script = format!(
            "echo \"env: $TEST_TOKEN\"\n\
             {}\n\
             echo '== h2'\n\
             {}\n\
             echo '== basic'\n\
             {}\n\
             echo '== other'\n\
             {}\n\
             echo '== python'\n\
             NO_PROXY= no_proxy= {PY} -c \"$URLLIB\" {}\n\
             echo '== environ'\n\
             cat /proc/self/environ | tr '\\0' '\\n' | grep -c '{secret}' || true\n",
            curl(up.port, "/echo?t=$TEST_TOKEN", "--http1.1 -H \"Authorization: Bearer $TEST_TOKEN\" --data-binary \"body=$TEST_TOKEN\""),
            curl(up.port, "/h2", "--http2 -H \"X-Token: $TEST_TOKEN\""),
            curl(up.port, "/basic", "-u \"git:$TEST_TOKEN\""),
            curl(other.port, "/steal", "-H \"X-Token: $TEST_TOKEN\""),
            up.port,
        );
        let out = inj
            .sandbox()
            .env("URLLIB", include_str!("py/cred_urllib.py"))
            .flag("--allow-domain", format!("127.0.0.1:{}", up.port))
            .flag("--allow-domain", format!("127.0.0.1:{}", other.port))
            .sh(&script);
        out.ok();
        let placeholder = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("env: "))
            .unwrap_or_default()
            .to_string();
        assert!(
            placeholder.starts_with("cordon-placeholder-"),
            "{mode:?}: {out:#?}"
        );
        // Nothing the sandbox saw holds the real value.
        assert!(!out.stdout.contains(&secret), "{mode:?}: {out:#?}");
        assert!(!out.stderr.contains(&secret), "{mode:?}: {out:#?}");
        // The upstream got the real value, in the target, a header and the body.
        let seen = up.seen();
        assert!(
            seen.contains(&format!("/echo?t={secret} h1")),
            "{mode:?}: {seen}"
        );
        assert!(
            seen.contains(&format!("authorization: Bearer {secret}")),
            "{mode:?}: {seen}"
        );
        assert!(seen.contains(&format!("body={secret}")), "{mode:?}: {seen}");
        assert!(
            seen.contains(&format!("x-token: {secret}")),
            "{mode:?}: {seen}"
        );
        assert!(
            seen.contains("/h2 h2"),
            "{mode:?}: HTTP/2 did not reach the upstream: {seen}"
        );
        assert!(
            seen.contains(&format!("x-key: {secret}")),
            "{mode:?}: {seen}"
        );
        // Basic: the upstream decodes git:<real value>.
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("git:{secret}"));
        assert!(
            seen.contains(&format!("authorization: Basic {basic}")),
            "{mode:?}: {seen}"
        );
        // The echoes came back masked.
        assert!(
            out.stdout
                .contains(&format!("authorization: Bearer {placeholder}")),
            "{mode:?}: {out:#?}"
        );
        assert!(
            out.stdout.contains(&format!("body={placeholder}")),
            "{mode:?}: {out:#?}"
        );
        assert!(
            out.stdout
                .contains(&format!("x-echo-authorization: Bearer {placeholder}")),
            "{mode:?}: {out:#?}"
        );
        assert!(out.stdout.contains("py: GET /py h1"), "{mode:?}: {out:#?}");
        // The other host never saw it: refused with a 403 that says why.
        assert!(!other.seen().contains(&secret), "{mode:?}");
        assert!(!other.seen().contains(&placeholder), "{mode:?}");
        let other_part = out.stdout.split("== other").nth(1).unwrap_or_default();
        assert!(other_part.contains("403"), "{mode:?}: {out:#?}");
        assert!(other_part.contains("TEST_TOKEN"), "{mode:?}: {out:#?}");
        // The exit summary says why, and that nothing allows it (never a
        // flag that would let the placeholder go there).
        let summary: Vec<&str> = out
            .stderr
            .lines()
            .skip_while(|l| *l != "cordon: blocked 1 credential access:")
            .collect();
        let subject = format!("  127.0.0.1:{}: attempted exfiltration: the placeholder of TEST_TOKEN was sent to a host it may not go to", other.port);
        assert!(
            summary.get(1).is_some_and(|l| l.starts_with(&subject)
                && l.contains("; nothing allows it: the real value of TEST_TOKEN is only sent to the hosts its [[credentials.inject]] entry names (")
                && !l.contains("--allow")),
            "{mode:?}: {out:#?}"
        );
        // The environment holds the placeholder only.
        let environ = out.stdout.split("== environ").nth(1).unwrap_or_default();
        assert_eq!(environ.trim(), "0", "{mode:?}: {out:#?}");
        // The log names the variable, never the value.
        let text = inj.audit();
        assert!(!text.contains(&secret), "{mode:?}: {text}");
        assert!(
            text.contains("\"door\":\"credentials\""),
            "{mode:?}: {text}"
        );
        assert!(text.contains("attempted exfiltration"), "{mode:?}: {text}");
        assert!(
            text.contains("[[credentials.inject]] TEST_TOKEN"),
            "{mode:?}: {text}"
        );
    });
}

/// A plain TCP server on 127.0.0.1 that records what it receives and
/// answers with a minimal HTTP response.
fn plain_server() -> (u16, Arc<Mutex<Vec<u8>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let log = got.clone();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let log = log.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    log.lock().unwrap().extend_from_slice(&buf[..n]);
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                }
            });
        }
    });
    (port, got)
}

#[test]
fn rules_bad_certificates_and_opaque_tunnels() {
    let ca = TestCa::new("cordon test upstream CA");
    let rogue = TestCa::new("rogue CA");
    let up = Upstream::start(&ca);
    let bad = Upstream::start(&rogue);
    let plain = Upstream::start(&ca);
    let (tcp_port, tcp_got) = plain_server();
    each_fixture(|mode, fx| {
        let ca_file = upstream_ca(fx, &ca);
        let secret = format!("s3cret-{}", fx.token);
        let policy = fx.outside.join("policy.toml");
        write(
            &policy,
            &format!(
                "[network]\ninspect = [\"127.0.0.1:{up}\", \"127.0.0.1:{bad}\"]\n\n\
                 [[network.rules]]\nhost = \"127.0.0.1:{up}\"\nmethods = [\"GET\"]\npaths = [\"/allowed/**\"]\n\n\
                 [[credentials.inject]]\nenv = \"TEST_TOKEN\"\nhosts = [\"127.0.0.1:{up}\"]\n",
                up = up.port,
                bad = bad.port
            ),
            mode,
        );
        let log = fx.outside.join("audit.jsonl");
        // curl trusting the upstreams' CA alone, not the sandbox's bundle.
        let own_cert = |port: u16, path: &str| {
            format!(
                "curl -sS --max-time 20 --noproxy '' -x http://127.0.0.1:3128 --cacert {} https://127.0.0.1:{port}{path} >/dev/null",
                ca_file.display()
            )
        };
        let script = format!(
            "echo '== get-allowed'\n{}\n\
             echo '== post-allowed'\n{}\n\
             echo '== get-other'\n{}\n\
             echo '== dotdot'\n{}\n\
             echo '== bad'\n{}\n\
             echo '== plain-own-cert'\n{} && echo PLAIN-VERIFIED\n\
             echo '== inspected-own-cert'\n{} || echo INSPECTED-NOT-VERIFIED\n\
             echo '== socks'\n\
             curl -sS --max-time 20 --noproxy '' --socks5-hostname 127.0.0.1:1080 -H \"X-Token: $TEST_TOKEN\" https://127.0.0.1:{}/allowed/socks\n\
             echo '== http'\n\
             curl -sS --max-time 20 --noproxy '' -x http://127.0.0.1:3128 -D - \"http://127.0.0.1:{tcp_port}/?t=$TEST_TOKEN\"\n\
             echo '== opaque'\n\
             {PY} -c \"$OPAQUE\" {tcp_port}\n",
            curl(up.port, "/allowed/x", "-H \"X-Token: $TEST_TOKEN\""),
            curl(up.port, "/allowed/x", "-X POST"),
            curl(up.port, "/other", ""),
            curl(up.port, "/allowed/%2e%2e/other", "--path-as-is"),
            curl(bad.port, "/", ""),
            own_cert(plain.port, "/plain"),
            own_cert(up.port, "/allowed/y"),
            up.port,
        );
        let out = fx
            .sandbox()
            .env("TEST_TOKEN", &secret)
            .env("OPAQUE", include_str!("py/cred_opaque.py"))
            .flag("--audit", &log)
            .flag("--policy", &policy)
            .flag("--allow-domain", "127.0.0.1")
            .flag(
                "--ports",
                format!("{},{},{},{tcp_port}", up.port, bad.port, plain.port),
            )
            .flag("--upstream-ca", &ca_file)
            .sh(&script);
        let status = |name: &str| {
            part(&out, name)
                .lines()
                .rfind(|l| l.starts_with("HTTP/"))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        assert_eq!(status("get-allowed"), "HTTP/2 200", "{mode:?}: {out:#?}");
        assert_eq!(status("post-allowed"), "HTTP/2 403", "{mode:?}: {out:#?}");
        assert_eq!(status("get-other"), "HTTP/2 403", "{mode:?}: {out:#?}");
        assert_eq!(status("dotdot"), "HTTP/2 403", "{mode:?}: {out:#?}");
        assert!(
            part(&out, "get-other").contains("[[network.rules]]"),
            "{mode:?}: {out:#?}"
        );
        assert!(
            part(&out, "get-other").contains("GET"),
            "{mode:?}: {out:#?}"
        );
        // The exit summary says why, and the rule that would allow it.
        let rules_line = format!(
            "  127.0.0.1:{} ×3: method or path outside the HTTP rules for this host; allow it with a [[network.rules]] entry for 127.0.0.1 with this method and path, in a trusted policy file (or widen an existing one)",
            up.port
        );
        assert!(
            out.stderr.lines().any(|l| l == rules_line),
            "{mode:?}: {out:#?}"
        );
        // A path no rule can judge: no rule would allow it.
        assert!(
            part(&out, "dotdot").contains("\nnothing allows it: no rule can judge the request as sent; send the path without dot segments or encoded separators"),
            "{mode:?}: {out:#?}"
        );
        // The upstream saw the allowed request only.
        let seen = up.seen();
        assert!(seen.contains("/allowed/x"), "{mode:?}: {seen}");
        assert!(!seen.contains("POST"), "{mode:?}: {seen}");
        assert!(!seen.contains("/other"), "{mode:?}: {seen}");
        // A certificate the upstream CA did not sign: refused, not relayed.
        assert_eq!(
            status("bad"),
            "HTTP/1.1 502 Bad Gateway",
            "{mode:?}: {out:#?}"
        );
        assert!(
            part(&out, "bad").contains("could not be verified"),
            "{mode:?}: {out:#?}"
        );
        assert!(bad.seen().is_empty(), "{mode:?}: {}", bad.seen());
        // Uninspected: the client sees the upstream's own certificate;
        // inspected: it sees the sandbox CA's leaf instead.
        assert!(out.stdout.contains("PLAIN-VERIFIED"), "{mode:?}: {out:#?}");
        assert!(
            out.stdout.contains("INSPECTED-NOT-VERIFIED"),
            "{mode:?}: {out:#?}"
        );
        // SOCKS5 is inspected too.
        assert!(
            seen.contains(&format!("x-token: {secret}")),
            "{mode:?}: {seen}"
        );
        assert!(seen.contains("/allowed/socks"), "{mode:?}: {seen}");
        // Plain HTTP and opaque tunnels never carry a placeholder out.
        assert_eq!(
            status("http"),
            "HTTP/1.1 403 Forbidden",
            "{mode:?}: {out:#?}"
        );
        assert!(
            part(&out, "opaque").contains("connect: HTTP/1.1 200"),
            "{mode:?}: {out:#?}"
        );
        assert!(
            part(&out, "opaque").contains("opaque: b''"),
            "{mode:?}: {out:#?}"
        );
        let got = String::from_utf8_lossy(&tcp_got.lock().unwrap()).to_string();
        assert!(!got.contains("cordon-placeholder-"), "{mode:?}: {got}");
        assert!(!out.stdout.contains(&secret), "{mode:?}: {out:#?}");
        // The log: the rule, the certificate, the exfiltration attempts.
        let text = audit_text(&log);
        assert!(!text.contains(&secret), "{mode:?}: {text}");
        assert!(
            text.contains(&format!("127.0.0.1:{} GET /allowed/**", up.port)),
            "{mode:?}: {text}"
        );
        assert!(
            text.contains("upstream certificates must verify"),
            "{mode:?}: {text}"
        );
        assert!(
            text.matches("attempted exfiltration").count() >= 2,
            "{mode:?}: {text}"
        );
        assert!(
            !text.contains("/allowed/x"),
            "{mode:?}: paths are never logged: {text}"
        );
    });
}

#[test]
fn git_over_https_with_basic_auth() {
    let ca = TestCa::new("cordon test upstream CA");
    let secret = format!("gitpw-{}", rand_token());
    let served = tempfile::tempdir().unwrap();
    let repo = served.path().join("repo.git");
    let run = |args: &[&str], dir: &Path| {
        let out = std::process::Command::new("git")
            .args(GIT_IDENTITY)
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    let work = served.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("hello.txt"), "hello from upstream\n").unwrap();
    run(&["init", "-q"], &work);
    run(&["add", "."], &work);
    run(&["commit", "-q", "-m", "one"], &work);
    run(
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            repo.to_str().unwrap(),
        ],
        served.path(),
    );
    run(&["config", "http.receivepack", "true"], &repo);
    let up = Upstream::start_with(
        &ca,
        Some(GitSite {
            root: served.path().to_path_buf(),
            password: secret.clone(),
        }),
    );
    each_fixture(|mode, fx| {
        let ca_file = upstream_ca(fx, &ca);
        let policy = inject_policy(fx, "GIT_PASSWORD", up.port);
        let log = fx.outside.join("audit.jsonl");
        let script = format!(
            "export NO_PROXY= no_proxy= GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0\n\
             cd /tmp && git -c http.proxy=http://127.0.0.1:3128 clone -q \"https://git:$GIT_PASSWORD@127.0.0.1:{}/git/repo.git\" clone 2>&1\n\
             cat clone/hello.txt\n\
             git -C clone config --get remote.origin.url\n",
            up.port
        );
        let out = fx
            .sandbox()
            .env("GIT_PASSWORD", &secret)
            .flag("--audit", &log)
            .flag("--policy", &policy)
            .flag("--allow-domain", format!("127.0.0.1:{}", up.port))
            .flag("--upstream-ca", &ca_file)
            .sh(&script);
        assert!(
            out.stdout.contains("hello from upstream"),
            "{mode:?}: {out:#?}\n{}",
            up.seen()
        );
        // The remote URL inside holds the placeholder, never the password.
        assert!(
            out.stdout.contains("cordon-placeholder-"),
            "{mode:?}: {out:#?}"
        );
        assert!(!out.stdout.contains(&secret), "{mode:?}: {out:#?}");
        assert!(!audit_text(&log).contains(&secret), "{mode:?}");
        // The upstream got the real password in Basic credentials.
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("git:{secret}"));
        assert!(up.seen().contains(&basic), "{mode:?}: {}", up.seen());
    });
}

#[test]
fn large_bodies_are_masked_and_scanned_as_streams() {
    each_mode_injecting(|mode, inj, up, other| {
        let secret = inj.secret.clone();
        let script = format!(
            "{} -o /tmp/big\n\
             echo \"size: $(wc -c < /tmp/big)\"\n\
             echo \"placeholders: $(grep -o \"$TEST_TOKEN\" /tmp/big | wc -l)\"\n\
             head -c 2000000 /dev/zero | tr '\\0' a > /tmp/upload; echo \"$TEST_TOKEN\" >> /tmp/upload\n\
             echo '== upload'\n{}\n\
             echo '== gzip-with-secret'\n{}\n\
             echo '== gzip-without'\n{}\n",
            curl(up.port, "/big", "-H \"X-Token: $TEST_TOKEN\""),
            curl(other.port, "/upload", "--http1.1 --data-binary @/tmp/upload"),
            curl(up.port, "/gzip", "--http1.1 -H \"X-Token: $TEST_TOKEN\""),
            curl(up.port, "/gzip", "--http1.1"),
        );
        let out = inj
            .sandbox()
            .flag("--allow-domain", "127.0.0.1")
            .flag("--ports", format!("{},{}", up.port, other.port))
            .sh(&script);
        // The upstream sent the real value ~3000 times; every one came back masked.
        let copies = (3usize << 20).div_ceil(1000);
        assert!(
            out.stdout.contains(&format!("placeholders: {copies}")),
            "{mode:?}: {}",
            out.stdout.lines().take(3).collect::<Vec<_>>().join("\n")
        );
        assert!(!out.stdout.contains(&secret), "{mode:?}");
        // A 2 MB upload carrying the placeholder to the wrong host: refused.
        let upload = out.stdout.split("== upload").nth(1).unwrap_or_default();
        assert!(upload.contains("HTTP/1.1 403"), "{mode:?}: {upload}");
        assert!(!other.seen().contains("cordon-placeholder-"), "{mode:?}");
        assert!(inj.audit().contains("attempted exfiltration"), "{mode:?}");
        // A compressed answer to a request that carried the real value
        // cannot be masked: refused. Without a real value, it goes through.
        let with = part(&out, "gzip-with-secret");
        assert!(with.contains("HTTP/1.1 502"), "{mode:?}: {with}");
        assert!(with.contains("compressed"), "{mode:?}: {with}");
        let without = part(&out, "gzip-without");
        assert!(without.contains("HTTP/1.1 200"), "{mode:?}: {without}");
        assert!(
            without.contains("content-encoding: gzip"),
            "{mode:?}: {without}"
        );
    });
}

#[test]
fn an_upstream_that_closes_ends_the_client_connection_cleanly() {
    each_mode_inspecting(|mode, fx, ca, up| {
        // One kept-alive HTTP/1.1 connection: the upstream closes after the
        // second request; the third must still work (on a new connection).
        let out = inspected_py_on_port(fx, ca, up, include_str!("py/cred_keepalive.py"));
        for line in ["/one 200 /one", "/close 200 /close", "/three 200 /three"] {
            assert!(out.stdout.contains(line), "{mode:?}: {out:#?}");
        }
    });
}

/// The attack: a GET with a body on an inspected HTTP/1.1 tunnel, to an
/// upstream that ignores GET bodies, smuggles the head of a request the
/// host's rules refuse; the tunnel's next request completes it, and its
/// answer comes back as the next one's. On a host with rules a request
/// with a body ends the tunnel after its answer, so no next request shares
/// its connection.
#[test]
fn a_request_with_a_body_ends_its_inspected_tunnel_on_a_host_with_rules() {
    each_mode_inspecting(|mode, fx, ca, up| {
        let rules = fx.outside.join("rules.toml");
        write(
            &rules,
            &format!(
                "[[network.rules]]\nhost = \"127.0.0.1:{}\"\nmethods = [\"GET\"]\npaths = [\"/**\"]\n",
                up.port
            ),
            mode,
        );
        let out = inspecting(fx, ca, up.port)
            .flag("--policy", &rules)
            .py_args(
                include_str!("py/cred_body_ends_tunnel.py"),
                &[up.port.to_string()],
            );
        out.ok();
        assert_eq!(line(&out, "first"), "200 close", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "second"), "closed", "{mode:?}: {out:#?}");
    });
}

#[test]
fn sni_and_host_must_name_the_connect_host() {
    each_mode_inspecting(|mode, fx, ca, up| {
        let ca_file = upstream_ca(fx, ca);
        let log = fx.outside.join("audit.jsonl");
        let out = fx
            .sandbox()
            .env("SNI", include_str!("py/cred_sni.py"))
            .flag("--audit", &log)
            .flag("--allow-domain", format!("127.0.0.1:{}", up.port))
            .flag("--inspect", "127.0.0.1")
            .flag("--upstream-ca", &ca_file)
            .sh(&format!(
                "{PY} -c \"$SNI\" {}\necho '== host'\n{}\n",
                up.port,
                curl(up.port, "/x", "--http1.1 -H 'Host: other.example'")
            ));
        assert!(
            out.stdout.contains("connect: HTTP/1.1 200"),
            "{mode:?}: {out:#?}"
        );
        assert!(out.stdout.contains("sni: refused"), "{mode:?}: {out:#?}");
        assert!(
            out.stdout.contains("plaintext: HTTP/1.1 403") && out.stdout.contains("only TLS"),
            "{mode:?}: {out:#?}"
        );
        let host = out.stdout.split("== host").nth(1).unwrap_or_default();
        assert!(host.contains("HTTP/1.1 403"), "{mode:?}: {out:#?}");
        assert!(host.contains("names another host"), "{mode:?}: {out:#?}");
        assert!(!up.seen().contains("/x"), "{mode:?}: {}", up.seen());
        assert!(!up.seen().contains("/plain"), "{mode:?}: {}", up.seen());
        let text = audit_text(&log);
        assert!(text.contains("SNI mismatch"), "{mode:?}: {text}");
        assert!(text.contains("Host header mismatch"), "{mode:?}: {text}");
    });
}

#[test]
fn a_secret_or_ca_that_cannot_be_read_refuses_to_run() {
    each_fixture(|mode, fx| {
        let policy = fx.outside.join("policy.toml");
        write(
            &policy,
            "[[credentials.inject]]\nenv = \"CORDON_TEST_UNSET_TOKEN\"\nhosts = [\"api.example\"]\n",
            mode,
        );
        let marker = fx.project.join("ran");
        let cmd = format!("touch {}", marker.display());
        let out = fx.sandbox().flag("--policy", &policy).sh(&cmd);
        out.expect_code(125);
        assert!(
            out.stderr.contains("credentials door")
                && out.stderr.contains("CORDON_TEST_UNSET_TOKEN")
                && out.stderr.contains("not set"),
            "{mode:?}: {out:#?}"
        );
        let out = fx
            .sandbox()
            .flag("--inspect", "*")
            .flag("--upstream-ca", fx.outside.join("missing.pem"))
            .sh(&cmd);
        out.expect_code(125);
        assert!(out.stderr.contains("missing.pem"), "{mode:?}: {out:#?}");
        assert!(!marker.exists(), "{mode:?}: the command ran");
    });
}

#[test]
fn upgraded_connections_are_relayed_through_inspection() {
    each_mode_inspecting(|mode, fx, ca, up| {
        let out = inspected_py_on_port(fx, ca, up, include_str!("py/cred_websocket.py"));
        assert!(
            out.stdout.contains("status: HTTP/1.1 101"),
            "{mode:?}: {out:#?}"
        );
        assert!(out.stdout.contains("echo: ping-pong"), "{mode:?}: {out:#?}");
    });
}

#[test]
fn ambiguous_request_framing_is_refused_inside_inspected_tunnels() {
    each_mode_inspecting(|mode, fx, ca, up| {
        let authority = format!("127.0.0.1:{}", up.port);
        let before = up.seen().matches("POST /framing").count();
        let out = inspected_py(
            fx,
            ca,
            up,
            concat!(
                include_str!("py/framing_cases.py"),
                include_str!("py/cred_framing.py")
            ),
            &[&authority],
        );
        assert_eq!(line(&out, "control"), "200", "{mode:?}: {out:#?}");
        // Chunked bodies (extensions, trailers) pass, and so does the
        // request after one on the same connection.
        assert_eq!(line(&out, "control-chunked"), "200", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "pipelined"), "2", "{mode:?}: {out:#?}");
        for label in framing::labels() {
            assert_eq!(line(&out, label), "400", "{mode:?} {label}: {out:#?}");
        }
        // Only the control requests reached the upstream.
        let seen = up.seen();
        assert_eq!(
            seen.matches("POST /framing").count(),
            before + 4,
            "{mode:?}: {seen}"
        );
    });
}

/// A script of tests/py/ after the python `upgrade(label, port, path,
/// send, headers)` (tests/py/cred_upgrade.py) and the runner of the calls
/// an [`Upgrades`] lists.
macro_rules! with_upgrades {
    ($($file:literal),*) => {
        concat!(
            include_str!("py/cred_upgrade.py"),
            include_str!("py/cred_upgrade_calls.py")
            $(, include_str!(concat!("py/", $file)))*
        )
    };
}

/// Calls of `upgrade()` inside the sandbox; `$TEST_TOKEN` in a value
/// stands for that variable's value there (the placeholder).
#[derive(Default)]
struct Upgrades(Vec<serde_json::Value>);

impl Upgrades {
    /// Upgrade `path` on 127.0.0.1:`port` with the WebSocket handshake.
    fn ws(self, label: &str, port: u16, path: &str) -> Self {
        self.with(label, port, path, None, "")
    }

    /// The same with `send` after a 101 (instead of `ping-pong`) and extra
    /// `headers` (an `Upgrade:` among them replaces the handshake's).
    fn with(
        mut self,
        label: &str,
        port: u16,
        path: &str,
        send: Option<&str>,
        headers: &str,
    ) -> Self {
        self.0
            .push(serde_json::json!([label, port, path, send, headers]));
        self
    }

    fn json(&self) -> String {
        serde_json::Value::Array(self.0.clone()).to_string()
    }
}

#[test]
fn upgrades_on_hosts_with_rules_need_a_rule_naming_the_exact_path() {
    let ca = TestCa::new("cordon test upstream CA");
    let glob = Upstream::start(&ca);
    let exact = Upstream::start(&ca);
    each_fixture(|mode, fx| {
        let ca_file = upstream_ca(fx, &ca);
        let policy = fx.outside.join("policy.toml");
        write(
            &policy,
            &format!(
                "[[network.rules]]\nhost = \"127.0.0.1:{g}\"\nmethods = [\"GET\"]\npaths = [\"/**\"]\n\n\
                 [[network.rules]]\nhost = \"127.0.0.1:{e}\"\nmethods = [\"GET\"]\npaths = [\"/ws\"]\n",
                g = glob.port,
                e = exact.port
            ),
            mode,
        );
        let log = fx.outside.join("audit.jsonl");
        let upgrades = Upgrades::default()
            .ws("glob", glob.port, "/ws")
            .ws("exact", exact.port, "/ws");
        let before = glob.seen().matches("GET /ws").count();
        let out = fx
            .audited(&log)
            .flag("--policy", &policy)
            .flag("--allow-domain", "127.0.0.1")
            .flag("--ports", format!("{},{}", glob.port, exact.port))
            .flag("--upstream-ca", &ca_file)
            .py_args(with_upgrades!(), &[upgrades.json()]);
        out.ok();
        // A wildcard admits GETs, not the stream an upgrade leaves behind.
        assert_eq!(line(&out, "glob-status"), "403", "{mode:?}: {out:#?}");
        let body = line(&out, "glob-body");
        assert!(
            body.contains("upgrade") && body.contains("exactly") && body.contains("/ws"),
            "{mode:?}: {body}"
        );
        assert_eq!(
            glob.seen().matches("GET /ws").count(),
            before,
            "{mode:?}: the upstream saw the upgrade: {}",
            glob.seen()
        );
        // A rule naming GET and /ws exactly admits it.
        assert_eq!(line(&out, "exact-status"), "101", "{mode:?}: {out:#?}");
        assert_eq!(
            line(&out, "exact-echo"),
            "\"ping-pong\"",
            "{mode:?}: {out:#?}"
        );
        let text = audit_text(&log);
        assert!(text.contains("an upgrade (WebSocket)"), "{mode:?}: {text}");
        assert!(
            !text.contains("/ws"),
            "{mode:?}: paths are never logged: {text}"
        );
    });
}

/// Starts `script` in `sb` under `--max-memory 128M`, inspecting
/// 127.0.0.1:`port` with `ca_file`: its argv is the port, the `held` and
/// `done` files of [`supervisor_memory_while_held`], then `counts`.
fn spawn_holding(
    sb: Sandbox,
    ca_file: &Path,
    port: u16,
    script: &str,
    (held, done): (&Path, &Path),
    counts: &[usize],
) -> Running {
    let mut args = vec![
        port.to_string(),
        held.display().to_string(),
        done.display().to_string(),
    ];
    args.extend(counts.iter().map(ToString::to_string));
    sb.flag("--max-memory", "128M")
        .flag("--allow-domain", format!("127.0.0.1:{port}"))
        .flag("--inspect", "127.0.0.1")
        .flag("--upstream-ca", ca_file)
        .timeout(std::time::Duration::from_secs(120))
        .spawn(&py_command(script, &args))
}

/// The supervisor's peak and current memory while the sandbox's clients
/// hold what they hold: waits until the script inside makes `held`, lets
/// `settle` wait some more (given the supervisor's pid), reads `VmHWM`
/// (the peak, returned) and `VmRSS` (printed), then makes `done` to let
/// the script end. Fails if the clients never got there.
fn supervisor_memory_while_held(
    running: Running,
    held: &std::path::Path,
    done: &std::path::Path,
    mode: Mode,
    settle: impl FnOnce(i32),
) -> (Output, u64) {
    let supervisor = running.pid();
    let ready = wait_until(std::time::Duration::from_secs(90), || {
        held.exists() || !std::path::Path::new(&format!("/proc/{supervisor}/status")).exists()
    }) && held.exists();
    let memory = ready.then(|| {
        settle(supervisor);
        (
            proc_memory(supervisor, "VmHWM"),
            proc_memory(supervisor, "VmRSS"),
        )
    });
    std::fs::write(done, "").unwrap();
    let out = running.wait();
    out.ok();
    let Some((peak, now)) = memory else {
        panic!("{mode:?}: the clients never settled: {out:#?}");
    };
    eprintln!(
        "{mode:?}: supervisor VmHWM {} MiB, VmRSS {} MiB; {}",
        peak >> 20,
        now >> 20,
        out.stdout
    );
    (out, peak)
}

/// A process's memory figure (`VmHWM`, `VmRSS`) from /proc, in bytes.
fn proc_memory(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    kib * 1024
}

#[test]
fn bodies_held_in_the_supervisor_stay_within_the_sandbox_budget() {
    let (ca, up) = ca_and_upstream();
    const CONNECTIONS: usize = 200;
    each_fixture(|mode, fx| {
        let ca_file = upstream_ca(fx, &ca);
        let (held, done) = (fx.project.join("held"), fx.project.join("done"));
        // Each connection sends a head announcing 1 MiB (the most the
        // proxy buffers whole) and all of the body but its last byte, then
        // waits: the supervisor holds whatever it accepted.
        let log = fx.outside.join("audit.jsonl");
        let running = spawn_holding(
            fx.audited(&log),
            &ca_file,
            up.port,
            concat!(
                include_str!("py/cred_held.py"),
                include_str!("py/cred_hold_bodies.py")
            ),
            (&held, &done),
            &[CONNECTIONS],
        );
        let (out, peak) = supervisor_memory_while_held(running, &held, &done, mode, |_| {});
        // The budget is a quarter of --max-memory (32 MiB): 32 bodies at
        // most, where 200 would be 200 MiB and more.
        let held_count: usize = line(&out, "held").parse().unwrap();
        let refused: usize = line(&out, "refused").parse().unwrap();
        assert!(held_count <= 32, "{mode:?}: {out:#?}");
        assert_eq!(held_count + refused, CONNECTIONS, "{mode:?}: {out:#?}");
        let reason = line(&out, "reason");
        assert!(
            reason.contains("inspection buffer budget") && reason.contains("max_memory"),
            "{mode:?}: {out:#?}"
        );
        assert!(
            peak < 120 << 20,
            "{mode:?}: the supervisor reached {} MiB holding bodies",
            peak >> 20
        );
        assert!(
            audit_text(&log).contains("inspection buffer budget"),
            "{mode:?}"
        );
    });
}

#[test]
fn real_values_do_not_come_back_encoded_in_trailers_or_upgraded_streams() {
    let (ca, up) = ca_and_upstream();
    let other = Upstream::start(&ca);
    each_mode(|mode| {
        let mut inj = Injecting::new(mode, &ca, up.port);
        // Bytes that JSON, percent and base64 encoders each treat their way.
        inj.secret = format!("s3cret/{}+x=y~z", inj.fx.token);
        let secret = inj.secret.clone();
        let upgrades = Upgrades::default()
            .with(
                "ws",
                up.port,
                "/ws?frames=whole",
                Some("ping-pong"),
                "X-Token: $TEST_TOKEN\r\n",
            )
            .with(
                "ws-forbidden",
                other.port,
                "/ws",
                Some("stolen: $TEST_TOKEN"),
                "",
            );
        let script = format!(
            "echo '== encoded'\n{}\n\
             echo '== encoded-h2'\n{}\n\
             echo '== trailers-h2'\n{}\n\
             echo '== trailers-stream'\n{PY} -c \"$TRAILERS\" {}\n\
             echo '== upgrades'\n{PY} -c \"$UPGRADES\" \"$UPGRADE_CALLS\"\n",
            curl(up.port, "/encoded", "--http1.1 -H \"X-Token: $TEST_TOKEN\""),
            curl(up.port, "/encoded", "--http2 -H \"X-Token: $TEST_TOKEN\""),
            curl(up.port, "/trailers", "--http2 -H \"X-Token: $TEST_TOKEN\""),
            up.port,
        );
        let out = inj
            .sandbox()
            .env("TRAILERS", include_str!("py/cred_trailers.py"))
            .env("UPGRADES", with_upgrades!())
            .env("UPGRADE_CALLS", upgrades.json())
            .flag("--allow-domain", "127.0.0.1")
            .flag("--ports", format!("{},{}", up.port, other.port))
            .sh(&script);
        out.ok();
        // The upstream got the real value each time.
        assert!(
            up.seen().contains(&format!("x-token: {secret}")),
            "{mode:?}"
        );
        assert!(
            !gives_away(out.stdout.as_bytes(), &secret),
            "{mode:?}: {}",
            out.stdout
        );
        assert!(!gives_away(out.stderr.as_bytes(), &secret), "{mode:?}");
        let placeholder_hex = |p: &str| p.bytes().map(|b| format!("{b:02x}")).collect::<String>();
        for name in ["encoded", "encoded-h2"] {
            let text = part(&out, name);
            assert!(text.contains("cordonmasked"), "{mode:?} {name}: {text}");
            let placeholder = out.stdout.lines().find_map(|l| {
                l.find("cordon-placeholder-")
                    .map(|i| l[i..i + 51].to_string())
            });
            let placeholder = placeholder.unwrap_or_default();
            assert!(
                text.contains(&placeholder_hex(&placeholder)),
                "{mode:?} {name}: {text}"
            );
        }
        // Trailers: masked, in HTTP/2 and in HTTP/1.1 chunked.
        for name in ["trailers-h2", "trailers-stream"] {
            let text = part(&out, name).to_ascii_lowercase();
            assert!(
                text.contains("x-echo: cordon-placeholder-"),
                "{mode:?} {name}: {text}"
            );
        }
        // An upgraded stream: masked down (same length), echoing still.
        let upgrades = part(&out, "upgrades");
        assert!(upgrades.contains("ws-status: 101"), "{mode:?}: {upgrades}");
        let echo = line(&out, "ws-echo");
        assert!(
            echo.contains("ping-pong") && echo.contains("cordonmasked"),
            "{mode:?}: {echo}"
        );
        // And a placeholder sent up one to a host it may not go to ends it.
        assert!(
            upgrades.contains("ws-forbidden-status: 101"),
            "{mode:?}: {upgrades}"
        );
        let echo = line(&out, "ws-forbidden-echo");
        assert!(!echo.contains("cordon-placeholder-"), "{mode:?}: {echo}");
        let text = inj.audit();
        assert!(text.contains("upgraded connection"), "{mode:?}: {text}");
        assert!(!text.contains(&secret), "{mode:?}: {text}");
    });
}

#[test]
fn only_websocket_upgrades_pass_and_a_refused_one_ends_the_connection() {
    each_mode_inspecting(|mode, fx, ca, up| {
        let authority = format!("127.0.0.1:{}", up.port);
        let upgrades = Upgrades::default()
            .ws("ws", up.port, "/ws")
            .with(
                "h2c",
                up.port,
                "/ws",
                None,
                "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n",
            )
            .with(
                "nokey",
                up.port,
                "/ws",
                None,
                "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n",
            )
            .with(
                "v8",
                up.port,
                "/ws",
                None,
                "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n",
            )
            .with(
                "list",
                up.port,
                "/ws",
                None,
                "Upgrade: websocket, h2c\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
            );
        let out = inspected_py(
            fx,
            ca,
            up,
            with_upgrades!("cred_upgrade_smuggle.py"),
            &[&upgrades.json(), &authority],
        );
        assert_eq!(line(&out, "ws-status"), "101", "{mode:?}: {out:#?}");
        for label in ["h2c", "nokey", "v8", "list"] {
            assert_eq!(
                line(&out, &format!("{label}-status")),
                "403",
                "{mode:?} {label}: {out:#?}"
            );
        }
        assert!(out.stdout.contains("only WebSocket"), "{mode:?}: {out:#?}");
        // The upgrade the upstream answered 200 ends the connection: the
        // head after it, which the guard no longer followed, goes nowhere.
        assert_eq!(line(&out, "answers"), "1", "{mode:?}: {out:#?}");
        assert!(!up.seen().contains("/smuggled"), "{mode:?}: {}", up.seen());
    });
}

#[test]
fn one_host_without_userinfo_and_origin_form_upstream() {
    each_mode_inspecting(|mode, fx, ca, up| {
        let authority = format!("127.0.0.1:{}", up.port);
        let out = inspected_py(
            fx,
            ca,
            up,
            include_str!("py/cred_one_host.py"),
            &[&authority],
        );
        for label in ["two-hosts", "userinfo", "abs-userinfo"] {
            assert_eq!(line(&out, label), "403", "{mode:?} {label}: {out:#?}");
        }
        assert_eq!(line(&out, "absolute"), "200", "{mode:?}: {out:#?}");
        let seen = up.seen();
        assert!(
            !seen.contains("/two") && !seen.contains("/user") && !seen.contains("/absuser"),
            "{mode:?}: {seen}"
        );
        // The upstream got the absolute-form target in origin-form.
        assert!(seen.contains("GET /absolute?q=1 h1"), "{mode:?}: {seen}");
    });
}

#[test]
fn request_targets_with_a_fragment_are_refused() {
    let (ca, up) = ca_and_upstream();
    let (tcp_port, tcp_got) = plain_server();
    each_fixture(|mode, fx| {
        let ca_file = upstream_ca(fx, &ca);
        let out = fx
            .audited("none")
            .flag("--allow-domain", "127.0.0.1")
            .flag("--ports", format!("{},{tcp_port}", up.port))
            .flag("--inspect", format!("127.0.0.1:{}", up.port))
            .flag("--upstream-ca", &ca_file)
            .py_args(
                include_str!("py/cred_fragment.py"),
                &[tcp_port.to_string(), up.port.to_string()],
            );
        out.ok();
        assert_eq!(line(&out, "plain"), "400", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "inspected"), "400", "{mode:?}: {out:#?}");
        assert!(!String::from_utf8_lossy(&tcp_got.lock().unwrap()).contains("/admin"));
        assert!(!up.seen().contains("/fragment"), "{mode:?}: {}", up.seen());
    });
}

/// Over HTTP/2 inside an inspected tunnel to a host the secret may not go
/// to, a placeholder upper-cased (a header, the body) or with its dashes
/// percent-encoded (the target) is refused as its exact spelling is, and
/// the upstream never gets the request.
#[test]
fn placeholders_over_http2_are_refused_however_spelled() {
    each_mode_injecting(|mode, inj, _, other| {
        let script = format!(
            "UPPER=$(printf %s \"$TEST_TOKEN\" | tr a-z A-Z)\n\
             ESCAPED=$(printf %s \"$TEST_TOKEN\" | sed 's/-/%2D/g')\n\
             echo '== header'\n{}\n\
             echo '== target'\n{}\n\
             echo '== body'\n{}\n",
            curl(other.port, "/h2-header", "--http2 -H \"X-Token: $UPPER\""),
            curl(other.port, "/h2-target?t=$ESCAPED", "--http2"),
            curl(other.port, "/h2-body", "--http2 --data-binary \"t=$UPPER\""),
        );
        let out = inj
            .sandbox()
            .flag("--allow-domain", format!("127.0.0.1:{}", other.port))
            .sh(&script);
        for name in ["header", "target", "body"] {
            let answer = part(&out, name);
            assert!(answer.contains("HTTP/2 403"), "{mode:?} {name}: {out:#?}");
            assert!(answer.contains("TEST_TOKEN"), "{mode:?} {name}: {answer}");
        }
        assert!(!other.seen().contains("/h2-"), "{mode:?}: {}", other.seen());
        let text = inj.audit();
        let found = text.matches("attempted exfiltration").count();
        assert_eq!(found, 3, "{mode:?}: {text}");
    });
}

/// What a client sends on an upgraded connection to a host the secret
/// may not go to is read as requests are: its placeholder upper-cased ends
/// the connection before the upstream gets it, as the exact spelling does.
/// No WebSocket extension is offered there (compression would hide a
/// placeholder from the scan): the upgrade goes, without the offer.
#[test]
fn placeholders_on_upgraded_connections_are_found_however_spelled() {
    each_mode_injecting(|mode, inj, _, other| {
        let offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n";
        let upgrades = Upgrades::default()
            .with("exact", other.port, "/ws", Some("x=$TEST_TOKEN"), "")
            .with("upper", other.port, "/ws", Some("x=$UPPER_TEST_TOKEN"), "")
            .with("offered", other.port, "/ws", None, offer);
        let out = inj
            .sandbox()
            .flag("--allow-domain", format!("127.0.0.1:{}", other.port))
            .py_args(with_upgrades!(), &[upgrades.json()]);
        out.ok();
        for label in ["exact", "upper"] {
            let status = line(&out, &format!("{label}-status"));
            assert_eq!(status, "101", "{mode:?} {label}: {out:#?}");
            // The upstream echoes what it gets: nothing came.
            let echo = line(&out, &format!("{label}-echo"));
            assert_eq!(echo, "\"\"", "{mode:?} {label}: {out:#?}");
        }
        assert_eq!(line(&out, "offered-status"), "101", "{mode:?}: {out:#?}");
        assert!(
            !other
                .seen()
                .to_ascii_lowercase()
                .contains("sec-websocket-extensions"),
            "{mode:?}: {}",
            other.seen()
        );
        let text = inj.audit();
        let found = text.matches("sent on an upgraded connection").count();
        assert_eq!(found, 2, "{mode:?}: {text}");
    });
}

#[test]
fn websockets_to_a_host_that_receives_a_value_carry_whole_uncompressed_messages() {
    let (ca, up) = ca_and_upstream();
    each_mode(|mode| {
        let inj = Injecting::new(mode, &ca, up.port);
        let secret = inj.secret.clone();
        let ph = "X-Token: $TEST_TOKEN\r\n";
        let upgrades = Upgrades::default()
            .with("whole", up.port, "/ws?frames=whole", None, ph)
            .with(
                "asked",
                up.port,
                "/ws?frames=whole",
                None,
                &format!("{ph}Sec-WebSocket-Extensions: permessage-deflate\r\n"),
            )
            .with("claimed", up.port, "/ws?frames=deflate", None, ph)
            .with("split", up.port, "/ws?frames=split", None, ph);
        let out = inj
            .sandbox()
            .flag("--allow-domain", format!("127.0.0.1:{}", up.port))
            .py_args(with_upgrades!(), &[upgrades.json()]);
        out.ok();
        assert!(up.seen().contains(&secret), "{mode:?}");
        assert!(
            !gives_away(out.stdout.as_bytes(), &secret),
            "{mode:?}: {out:#?}"
        );
        // Whole frames pass, masked.
        assert_eq!(line(&out, "whole-status"), "101", "{mode:?}: {out:#?}");
        assert!(
            line(&out, "whole-echo").contains("ping-pong"),
            "{mode:?}: {out:#?}"
        );
        // The client's offer of compression never reaches the upstream.
        assert_eq!(line(&out, "asked-status"), "101", "{mode:?}: {out:#?}");
        assert!(
            !up.seen()
                .to_ascii_lowercase()
                .contains("sec-websocket-extensions"),
            "{mode:?}"
        );
        // A 101 that claims an extension anyway is refused.
        assert_eq!(line(&out, "claimed-status"), "502", "{mode:?}: {out:#?}");
        // A fragmented message ends the stream before its first byte.
        assert_eq!(line(&out, "split-status"), "101", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "split-echo"), "\"\"", "{mode:?}: {out:#?}");
        let text = inj.audit();
        assert!(text.contains("fragmented message"), "{mode:?}: {text}");
        assert!(!text.contains(&secret), "{mode:?}");
    });
}

#[test]
fn clients_that_never_read_streamed_responses_stay_within_the_sandbox_budget() {
    let (ca, up) = ca_and_upstream();
    const CONNECTIONS: usize = 100;
    const REQUESTS: usize = 5;
    let streamed = || up.seen().matches("GET /big sent").count();
    each_mode(|mode| {
        let before = streamed();
        let fx = Fixture::new(mode);
        let ca_file = upstream_ca(&fx, &ca);
        let (held, done) = (fx.project.join("held"), fx.project.join("done"));
        // Each connection speaks HTTP/2 by hand: a stream window of one
        // byte, five requests for /big (3 MiB streamed each), and it never
        // reads again: whatever the upstream sends piles up in the proxy.
        let running = spawn_holding(
            fx.sandbox(),
            &ca_file,
            up.port,
            concat!(
                include_str!("py/cred_held.py"),
                include_str!("py/cred_h2_windows.py")
            ),
            (&held, &done),
            &[CONNECTIONS, REQUESTS],
        );
        let (out, peak) = supervisor_memory_while_held(running, &held, &done, mode, |supervisor| {
            // The upstream streams as fast as the windows let it: wait until
            // the supervisor stops growing (3 s without a new MiB).
            wait_until(std::time::Duration::from_secs(90), || {
                streamed() - before >= CONNECTIONS * REQUESTS
            });
            let (mut last, mut still) = (0, 0);
            for _ in 0..90 {
                std::thread::sleep(std::time::Duration::from_secs(1));
                let now = proc_memory(supervisor, "VmRSS");
                still = if now < last + (1 << 20) { still + 1 } else { 0 };
                last = last.max(now);
                if still == 3 {
                    break;
                }
            }
        });
        let held_count: usize = line(&out, "held").parse().unwrap();
        let asked = streamed() - before;
        eprintln!("{mode:?}: {asked} responses streamed");
        assert!(
            held_count > 0 && asked >= held_count * REQUESTS,
            "{mode:?}: {out:#?}"
        );
        // With hyper's default windows each connection held about 10 MiB
        // (here 1 GiB in all); the budget is 32 MiB.
        assert!(
            peak < 96 << 20,
            "{mode:?}: the supervisor reached {} MiB for clients that do not read",
            peak >> 20
        );
    });
}

/// An HTTPS upstream on 127.0.0.1 that answers HTTP/1.1 requests with the
/// raw bytes `answer(path, x-token)` returns (framing hyper's servers
/// would never write).
fn crafted_upstream(ca: &TestCa, answer: fn(&str, &[u8]) -> Vec<u8>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    serve_tls(ca.server_config(), move |mut tls| async move {
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match tls.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&head).to_string();
        let path = text.split(' ').nth(1).unwrap_or_default().to_string();
        let token = text
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("x-token")
                    .then(|| v.trim().to_string())
            })
            .unwrap_or_default();
        let _ = tls.write_all(&answer(&path, token.as_bytes())).await;
        let _ = tls.shutdown().await;
    })
}

/// Runs `script` in a sandbox that injects TEST_TOKEN into requests to
/// the crafted upstream on `port`; returns the output, the real value and
/// the audit log's text.
fn run_injecting(mode: Mode, ca: &TestCa, port: u16, script: &str) -> (Output, String, String) {
    let inj = Injecting::new(mode, ca, port);
    let out = inj
        .sandbox()
        .flag("--allow-domain", format!("127.0.0.1:{port}"))
        .sh(script);
    let audit = inj.audit();
    (out, inj.secret, audit)
}

#[test]
fn a_real_value_in_the_reason_phrase_is_not_relayed() {
    let ca = TestCa::new("cordon test upstream CA");
    let port = crafted_upstream(&ca, |_, token| {
        let mut out = b"HTTP/1.1 401 bad token ".to_vec();
        out.extend_from_slice(token);
        out.extend_from_slice(b"\r\nContent-Length: 3\r\nConnection: close\r\n\r\nno\n");
        out
    });
    each_mode(|mode| {
        let script = curl(port, "/reason", "--http1.1 -H \"X-Token: $TEST_TOKEN\"");
        let (out, secret, _) = run_injecting(mode, &ca, port, &script);
        assert!(out.stdout.contains("HTTP/1.1 401"), "{mode:?}: {out:#?}");
        assert!(!out.stdout.contains(&secret), "{mode:?}: {out:#?}");
        assert!(!out.stdout.contains("bad token"), "{mode:?}: {out:#?}");
    });
}

/// `data` gzipped (by the gzip command).
fn gzipped(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    child.wait_with_output().unwrap().stdout
}

#[test]
fn compression_hidden_in_a_second_header_or_a_transfer_coding_is_refused() {
    let ca = TestCa::new("cordon test upstream CA");
    let port = crafted_upstream(&ca, |path, token| {
        let body = gzipped(token);
        let mut out = match path {
            "/ce-twice" => {
                b"HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\n"
                    .to_vec()
            }
            "/ce-list" => b"HTTP/1.1 200 OK\r\nContent-Encoding: identity, gzip\r\n".to_vec(),
            _ => {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n"
                    .to_vec()
            }
        };
        if path == "/te" {
            out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
            out.extend_from_slice(&body);
            out.extend_from_slice(b"\r\n0\r\n\r\n");
        } else {
            out.extend_from_slice(
                format!(
                    "Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            out.extend_from_slice(&body);
        }
        out
    });
    each_mode(|mode| {
        let mut script = String::new();
        for path in ["/ce-twice", "/ce-list", "/te"] {
            script.push_str(&format!(
                "echo '== {path}'\n{} | od -An -c | tr -d ' \\n'; echo\n",
                curl(port, path, "--http1.1 -H \"X-Token: $TEST_TOKEN\"")
            ));
        }
        let (out, secret, log) = run_injecting(mode, &ca, port, &script);
        for path in ["/ce-twice", "/ce-list", "/te"] {
            let part = out
                .stdout
                .split(&format!("== {path}\n"))
                .nth(1)
                .and_then(|p| p.lines().next())
                .unwrap_or_default();
            assert!(part.contains("HTTP/1.1502"), "{mode:?} {path}: {out:#?}");
            assert!(part.contains("compressed"), "{mode:?} {path}: {out:#?}");
        }
        assert!(!out.stdout.contains(&secret), "{mode:?}: {out:#?}");
        assert!(log.contains("Transfer-Encoding"), "{mode:?}: {log}");
    });
}

/// Red-team (rt-scan): the request method is part of what a request
/// carries to its host, yet the inspected path's scan reads the target and
/// header fields only. A placeholder sent as an extension method (any
/// case), over HTTP/1.1 or HTTP/2, reaches a host the secret may not go to;
/// it must be refused (403) as it is in the target. Plain HTTP already
/// refuses it (its raw head is scanned).
#[test]
fn a_placeholder_as_the_request_method_is_refused() {
    each_mode_injecting(|mode, inj, _, other| {
        let script = format!(
            "UPPER=$(printf %s \"$TEST_TOKEN\" | tr a-z A-Z)\n\
             echo '== h1'\n{}\n\
             echo '== h1-upper'\n{}\n\
             echo '== h2'\n{}\n",
            curl(other.port, "/method-h1", "--http1.1 -X \"$TEST_TOKEN\""),
            curl(other.port, "/method-h1-upper", "--http1.1 -X \"$UPPER\""),
            curl(other.port, "/method-h2", "--http2 -X \"$TEST_TOKEN\""),
        );
        let out = inj
            .sandbox()
            .flag("--allow-domain", format!("127.0.0.1:{}", other.port))
            .sh(&script);
        for name in ["h1", "h1-upper", "h2"] {
            let answer = part(&out, name);
            assert!(answer.contains(" 403"), "{mode:?} {name}: {out:#?}");
        }
        assert!(
            !other.seen().contains("/method-"),
            "{mode:?}: {}",
            other.seen()
        );
    });
}

/// Red-team (rt-scan): every WebSocket client masks its frames with a
/// random key (RFC 6455 5.3), and the scan of an upgraded connection reads
/// the raw bytes, so a placeholder in any real client's message is never
/// seen: it reaches a host the secret may not go to. A masked frame that
/// carries one must end the connection as a raw one does.
#[test]
fn a_placeholder_in_a_masked_websocket_frame_ends_the_connection() {
    let code = r#"
import os, socket, ssl, sys
port = int(sys.argv[1])
s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
s.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n' % (port, port))
head = b''
while b'\r\n\r\n' not in head:
    head += s.recv(1)
t = ssl.create_default_context().wrap_socket(s, server_hostname='127.0.0.1')
t.sendall(b'GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n'
          b'Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
          b'Sec-WebSocket-Version: 13\r\n\r\n' % port)
head = b''
while b'\r\n\r\n' not in head:
    head += t.recv(1)
print('status', head.split(b' ')[1].decode())
payload = b'{"token":"' + os.environ['TEST_TOKEN'].encode() + b'"}'
key = bytes([0x5a, 0xa5, 0x3c, 0xc3])
frame = bytes([0x81, 0x80 | len(payload)]) + key
frame += bytes(b ^ key[i % 4] for i, b in enumerate(payload))
t.sendall(frame)
t.settimeout(3)
echo = b''
try:
    while len(echo) < len(frame):
        d = t.recv(4096)
        if not d:
            break
        echo += d
except (OSError, ssl.SSLError):
    pass
print('echoed', len(echo))
"#;
    each_mode_injecting(|mode, inj, _, other| {
        let out = inj
            .sandbox()
            .flag("--allow-domain", format!("127.0.0.1:{}", other.port))
            .py_args(code, &[other.port.to_string()]);
        out.ok();
        assert!(out.stdout.contains("status 101"), "{mode:?}: {out:#?}");
        // The upstream echoes every byte it gets: nothing may come.
        assert!(out.stdout.contains("echoed 0"), "{mode:?}: {out:#?}");
        let text = inj.audit();
        assert!(
            text.contains("sent on an upgraded connection"),
            "{mode:?}: {text}"
        );
    });
}

/// Red-team (rt-scan): a bearer token is most often a JWT
/// (`header.payload.signature`, each part base64url on its own); the
/// lenient base64 read skips the dots and so decodes the payload out of
/// alignment whenever the header's length is not a multiple of 4. A
/// placeholder in a JWT's payload then reaches a host it may not go to.
#[test]
fn a_placeholder_inside_a_jwt_bearer_token_is_refused() {
    each_mode_injecting(|mode, inj, _, other| {
        // `{"alg":"none"}` is 19 base64url characters: the payload after
        // it is read 6 bits off.
        let script = format!(
            "B64U() {{ base64 -w0 | tr '+/' '-_' | tr -d '='; }}\n\
             JWT=\"$(printf %s '{{\"alg\":\"none\"}}' | B64U).$(printf '{{\"sub\":\"%s\"}}' \"$TEST_TOKEN\" | B64U).\"\n\
             echo '== jwt'\n{}\n",
            curl(other.port, "/jwt", "-H \"Authorization: Bearer $JWT\""),
        );
        let out = inj
            .sandbox()
            .flag("--allow-domain", format!("127.0.0.1:{}", other.port))
            .sh(&script);
        assert!(part(&out, "jwt").contains(" 403"), "{mode:?}: {out:#?}");
        assert!(!other.seen().contains("/jwt"), "{mode:?}: {}", other.seen());
    });
}

/// `headers = ["x-api-key"]`: the placeholder is swapped in that request
/// header (named in any case), and refused in its target, its body and
/// every other header (a cookie too, beside the named one), where a server
/// that echoes what it gets (an AI model asked to repeat its input, an
/// error quoting a header, spaced out past any mask) would send the value
/// back.
#[test]
fn a_secret_kept_to_named_headers_is_refused_elsewhere() {
    let (ca, up) = ca_and_upstream();
    each_mode(|mode| {
        let ij = Injecting::new(mode, &ca, up.port);
        let text = format!(
            "[[credentials.inject]]\nenv = \"TEST_TOKEN\"\nhosts = [\"127.0.0.1:{}\"]\nheaders = [\"X-Api-Key\"]\n",
            up.port
        );
        write(&ij.policy, &text, mode);
        let script = format!(
            "echo '== header'; {}; echo '== body'; {}; echo '== target'; {}; echo '== other'; {}; echo '== cookie'; {}",
            curl(up.port, "/h", "-H \"x-api-key: $TEST_TOKEN\""),
            curl(
                up.port,
                "/b",
                "--data \"{\\\"msg\\\": \\\"$TEST_TOKEN\\\"}\""
            ),
            curl(up.port, "/t?k=$TEST_TOKEN", ""),
            curl(up.port, "/o", "-H \"x-echo: $TEST_TOKEN\""),
            curl(
                up.port,
                "/c",
                "-H \"x-api-key: $TEST_TOKEN\" -b \"a=$TEST_TOKEN\""
            ),
        );
        let out = ij
            .sandbox()
            .flag("--allow-domain", format!("127.0.0.1:{}", up.port))
            .sh(&script);
        // The echo of the header comes back masked; the upstream's own
        // record shows what it got.
        assert!(part(&out, "header").contains("200"), "{mode:?}: {out:#?}");
        let seen = up.seen.lock().unwrap().clone();
        assert!(
            seen.iter()
                .any(|e| e.contains("/h h") && e.contains(&format!("x-api-key: {}", ij.secret))),
            "{mode:?}: the header was not swapped: {seen:#?}"
        );
        for refused in ["body", "target", "other", "cookie"] {
            let got = part(&out, refused);
            assert!(
                got.contains("403") && !got.contains(&ij.secret),
                "{mode:?}: the {refused}'s placeholder was not refused: {out:#?}"
            );
        }
        // The upstream never saw the value but in a header.
        for echo in seen.iter().filter(|e| e.contains(&ij.secret)) {
            assert!(echo.contains("/h h"), "{mode:?}: {echo}");
        }
        assert!(
            out.stderr.contains("outside the headers its entry names"),
            "{mode:?}: the summary does not say why: {out:#?}"
        );
    });
}
