//! `cordon run --ask`, at a real terminal (a pty of the test's, the
//! controlling terminal of cordon's session, answered by
//! tests/py/ask_pty.py as a user would): a connection no rule allows is
//! held and asked about; "once" lets one through, "sandbox" every one of
//! the run, "always" saves the rule to the user config (a later run
//! without --ask reaches the host), "deny" refuses it for the run, and no
//! answer in time refuses it, while the command inside, pressing the keys
//! on its own terminal, cannot answer. Without a terminal --ask is an
//! error before anything runs. The host is a server of the test's on
//! 127.0.0.1, reached as host.cordon.internal:PORT.

mod common;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;

/// An HTTP server on 127.0.0.1 answering `served-ok`; counts requests.
fn server() -> (u16, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\nconnection: close\r\n\r\nserved-ok",
            );
        }
    });
    (port, count)
}

/// The command inside: N requests to the host, one line each; with
/// `press`, a thread first presses every answer key on its own terminal,
/// over and over, while the requests wait: written to it, and pushed into
/// its input (TIOCSTI), which would answer if that terminal were the
/// caller's.
const GET: &str = r#"
import fcntl, os, sys, termios, threading, time, urllib.request
url, n, press = sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'press'
def keys():
    for _ in range(40):
        for tty in ('/dev/tty', '/proc/self/fd/0'):
            try:
                with open(tty, 'w') as t:
                    t.write('osa\r\n')
                    # Pushed into the input of the terminal it has.
                    for key in b'osa':
                        fcntl.ioctl(t, termios.TIOCSTI, bytes([key]))
            except OSError:
                pass
        sys.stdout.write('s'); sys.stdout.flush()
        time.sleep(0.1)
if press:
    threading.Thread(target=keys, daemon=True).start()
for _ in range(n):
    try:
        print('result=' + urllib.request.urlopen(url, timeout=100).read().decode(), flush=True)
    except Exception as e:
        print('result=failed', e, flush=True)
"#;

/// What the terminal showed of one run of `cordon run --ask` answered
/// with `answers`, with the command making `n` requests.
struct Asked {
    code: i32,
    shown: String,
    asked: u64,
}

fn ask_run(fx: &Fixture, port: u16, answers: &str, n: usize, extra: &[&str], press: bool) -> Asked {
    let script = fx.project.join("get.py");
    std::fs::write(&script, GET).unwrap();
    let url = format!("http://host.cordon.internal:{port}/");
    let mut cmd = fx.host_cmd(PY);
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/ask_pty.py"))
        .arg(&fx.bin)
        .args(["run", "--ask"])
        .args(extra)
        .args(["--project"])
        .arg(&fx.project)
        .args([
            "--",
            PY,
            "get.py",
            &url,
            &n.to_string(),
            if press { "press" } else { "-" },
        ])
        .env("XDG_CONFIG_HOME", &fx.config)
        .env("ANSWERS", answers)
        .current_dir(&fx.project);
    let out = cmd.output().unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    Asked {
        code: json["code"].as_i64().unwrap() as i32,
        shown: json["shown"].as_str().unwrap().to_string(),
        asked: json["asked"].as_u64().unwrap(),
    }
}

/// What each of the command's requests got (its `result=` lines; a
/// line may start with the keys the command pressed).
fn answers_of(shown: &str) -> Vec<&str> {
    shown
        .lines()
        .filter_map(|l| {
            let at = l.find("result=")? + "result=".len();
            l[at..].split_whitespace().next()
        })
        .collect()
}

#[test]
fn once_lets_one_through_deny_refuses_the_rest_of_the_run() {
    let (port, count) = server();
    each_fixture(|mode, fx| {
        let before = count.load(Ordering::SeqCst);
        let run = ask_run(fx, port, "od", 3, &[], false);
        assert_eq!(run.code, 0, "{mode:?}: {}", run.shown);
        assert_eq!(run.asked, 2, "{mode:?}: {}", run.shown);
        assert_eq!(
            answers_of(&run.shown),
            ["served-ok", "failed", "failed"],
            "{mode:?}: {}",
            run.shown
        );
        assert_eq!(count.load(Ordering::SeqCst), before + 1, "{mode:?}");
        assert!(
            run.shown.contains("allowed once") && run.shown.contains("denied for this sandbox")
        );
    });
}

#[test]
fn sandbox_lets_every_one_of_the_run_through_and_always_saves_the_rule() {
    let (port, count) = server();
    each_fixture(|mode, fx| {
        let before = count.load(Ordering::SeqCst);
        let run = ask_run(fx, port, "s", 3, &[], false);
        assert_eq!(run.asked, 1, "{mode:?}: {}", run.shown);
        assert_eq!(
            answers_of(&run.shown),
            ["served-ok"; 3],
            "{mode:?}: {}",
            run.shown
        );
        assert_eq!(count.load(Ordering::SeqCst), before + 3);
        let config = fx.config.join("cordon/config.toml");
        assert!(!config.exists(), "{mode:?}: 's' saved a rule");

        let run = ask_run(fx, port, "a", 1, &[], false);
        assert_eq!(
            answers_of(&run.shown),
            ["served-ok"],
            "{mode:?}: {}",
            run.shown
        );
        let saved = std::fs::read_to_string(&config).unwrap();
        assert_eq!(
            saved,
            format!("[network]\nallow = [\"host.cordon.internal:{port}\"]\n")
        );
        // The saved rule is the user's: a run without --ask reaches the host.
        let out = fx.sandbox().env("XDG_CONFIG_HOME", &fx.config).py_args(
            GET,
            &[
                format!("http://host.cordon.internal:{port}/"),
                "1".into(),
                "-".into(),
            ],
        );
        assert!(out.stdout.contains("result=served-ok"), "{mode:?}: {out:?}");
    });
}

#[test]
fn no_answer_in_time_refuses_and_the_sandbox_cannot_answer() {
    let (port, count) = server();
    each_fixture(|mode, fx| {
        let before = count.load(Ordering::SeqCst);
        let run = ask_run(fx, port, "", 1, &["--ask-timeout", "3s"], true);
        assert_eq!(run.asked, 1, "{mode:?}: {}", run.shown);
        assert_eq!(
            answers_of(&run.shown),
            ["failed"],
            "{mode:?}: {}",
            run.shown
        );
        assert!(
            run.shown.contains("no answer: denied"),
            "{mode:?}: {}",
            run.shown
        );
        assert_eq!(count.load(Ordering::SeqCst), before, "{mode:?}");
        assert!(!fx.config.join("cordon/config.toml").exists());
    });
}

#[test]
fn ask_without_a_terminal_is_an_error_before_anything_runs() {
    each_fixture(|mode, fx| {
        let marker = fx.project.join("ran");
        let mut cmd = fx.host_cmd("setsid");
        cmd.arg("-w")
            .arg(&fx.bin)
            .args(["run", "--ask", "--project"])
            .arg(&fx.project)
            .args(["--", "/bin/sh", "-c", "touch ran"])
            .stdin(std::process::Stdio::null())
            .current_dir(&fx.project);
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{mode:?}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--ask needs a terminal"));
        assert!(!marker.exists(), "{mode:?}: the command ran");
    });
}
