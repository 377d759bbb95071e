//! `cordon run --ask`, at a real terminal (a pty of the test's, the
//! controlling terminal of cordon's session, answered by
//! tests/py/ask_pty.py as a user would): a connection no rule allows is
//! held and asked about; "once" lets one through, "sandbox" every one of
//! the run, "always" saves the rule to the user config (a later run
//! without --ask reaches the host), "deny" refuses it for the run, and no
//! answer in time refuses it, while the command inside, pressing the keys
//! on its own terminal, cannot answer; nor can it through the caller's
//! terminal, by making it reply to queries full of answer letters, and
//! keys that are escape sequences (arrows, function keys, focus reports)
//! answer nothing. "x" refuses and stops the asking. Without a terminal
//! --ask is an error before anything runs. The host is a server of the test's on
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

/// The command inside: N requests to the host, one line each. With
/// `press`, a thread first presses every answer key on its own terminal,
/// over and over, while the requests wait: written to it, and pushed into
/// its input (TIOCSTI), which would answer if that terminal were the
/// caller's. With `query`, it prints queries the caller's terminal answers
/// (colours, device attributes, version, cursor position) and turns focus
/// reports on, over and over.
const GET: &str = r#"
import fcntl, os, sys, termios, threading, time, urllib.request
url, n, press = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def query():
    for _ in range(200):
        sys.stdout.write('\x1b]11;?\x07\x1b]10;?\x1b\\\x1b]4;1;?\x07\x1b[c\x1b[>0q\x1b[6n\x1b[?1004h')
        sys.stdout.flush()
        time.sleep(0.02)
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
if press != '-':
    threading.Thread(target=keys if press == 'press' else query, daemon=True).start()
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

/// What the command does besides its requests (see [`GET`]).
#[derive(Clone, Copy)]
enum Inside {
    Quiet,
    Press,
    Query,
}

/// How the test's terminal behaves.
#[derive(Clone, Copy, Default)]
struct Terminal {
    /// It answers the command's queries this many seconds late.
    reply: Option<f64>,
    /// The answers are typed this many seconds after each question shows
    /// (else ask_pty.py's default).
    delay: Option<f64>,
}

fn ask_run(
    fx: &Fixture,
    port: u16,
    answers: &[&str],
    n: usize,
    extra: &[&str],
    inside: Inside,
) -> Asked {
    ask_run_at(fx, port, answers, extra, (n, inside), Terminal::default())
}

/// As [`ask_run`], at `terminal`; the command makes `n` requests and does
/// `inside` besides.
fn ask_run_at(
    fx: &Fixture,
    port: u16,
    answers: &[&str],
    extra: &[&str],
    (n, inside): (usize, Inside),
    terminal: Terminal,
) -> Asked {
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
            match inside {
                Inside::Quiet => "-",
                Inside::Press => "press",
                Inside::Query => "query",
            },
        ])
        .env("XDG_CONFIG_HOME", &fx.config)
        .env("ANSWERS", serde_json::to_string(answers).unwrap())
        .current_dir(&fx.project);
    if let Some(late) = terminal.reply {
        cmd.env("REPLY", late.to_string());
    }
    if let Some(delay) = terminal.delay {
        cmd.env("ANSWER_DELAY", delay.to_string());
    }
    let out = cmd.output().unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    Asked {
        code: json["code"].as_i64().unwrap() as i32,
        shown: json["shown"].as_str().unwrap().to_string(),
        asked: json["asked"].as_u64().unwrap(),
    }
}

/// Checks that `run` asked `asked` questions and that the command's
/// requests got `results`, in order.
fn expect(run: &Asked, mode: impl std::fmt::Debug, asked: u64, results: &[&str]) {
    assert_eq!(run.asked, asked, "{mode:?}: {}", run.shown);
    assert_eq!(answers_of(&run.shown), results, "{mode:?}: {}", run.shown);
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
        let run = ask_run(fx, port, &["o\r", "d\r"], 3, &[], Inside::Quiet);
        assert_eq!(run.code, 0, "{mode:?}: {}", run.shown);
        expect(&run, mode, 2, &["served-ok", "failed", "failed"]);
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
        let run = ask_run(fx, port, &["s\r"], 3, &[], Inside::Quiet);
        expect(&run, mode, 1, &["served-ok"; 3]);
        assert_eq!(count.load(Ordering::SeqCst), before + 3);
        let config = fx.config.join("cordon/config.toml");
        assert!(!config.exists(), "{mode:?}: 's' saved a rule");

        let run = ask_run(fx, port, &["always\r"], 1, &[], Inside::Quiet);
        expect(&run, mode, 1, &["served-ok"]);
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
        let run = ask_run(fx, port, &[], 1, &["--ask-timeout", "3s"], Inside::Press);
        expect(&run, mode, 1, &["failed"]);
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
fn the_terminals_own_replies_and_keys_that_are_sequences_answer_nothing() {
    let (port, count) = server();
    each_fixture(|mode, fx| {
        // The terminal replies at once (before the question, thrown away)
        // or late (while it is on screen, after the first second in which
        // input is thrown away). The user presses Up, F1 and Alt-a, the
        // terminal reports focus out, a paste holds lines "x" and "a", and
        // Enter ends a line that is no answer (what was dropped spoils
        // it); then the user types "d".
        for late in [0.0, 1.8] {
            let before = count.load(Ordering::SeqCst);
            // The answers come after the late replies.
            let terminal = Terminal {
                reply: Some(late),
                delay: Some(2.5),
            };
            let run = ask_run_at(
                fx,
                port,
                &["\x1b[A\x1bOP\x1ba\x1b[O\x1b[200~x\ra\r\x1b[201~\r", "d\r"],
                &[],
                (1, Inside::Query),
                terminal,
            );
            expect(&run, (mode, late), 1, &["failed"]);
            let seen = format!("{mode:?} {late}: {}", run.shown);
            assert_eq!(
                run.shown
                    .matches("That line held more than an answer")
                    .count(),
                1,
                "{seen}"
            );
            assert!(run.shown.contains("denied for this sandbox"), "{seen}");
            assert_eq!(count.load(Ordering::SeqCst), before, "{seen}");
            assert!(!fx.config.join("cordon/config.toml").exists(), "{seen}");
        }
    });
}

#[test]
fn a_line_typed_too_soon_or_too_long_is_no_answer_and_a_root_port_cannot_be_saved() {
    let (port, count) = server();
    each_fixture(|mode, fx| {
        let before = count.load(Ordering::SeqCst);
        // Typed 0.3s after the question shows: before it could be read
        // (a command that asked for "a" and Enter itself, timed to it).
        let typed = |answer: &str, delay: f64| {
            let terminal = Terminal {
                reply: None,
                delay: Some(delay),
            };
            ask_run_at(
                fx,
                port,
                &[answer],
                &["--ask-timeout", "4s"],
                (1, Inside::Quiet),
                terminal,
            )
        };
        let mut run = typed("a\r", 0.3);
        expect(&run, mode, 1, &["failed"]);
        assert!(
            run.shown.contains("so not taken"),
            "{mode:?}: {}",
            run.shown
        );
        assert!(
            run.shown.contains("no answer: denied"),
            "{mode:?}: {}",
            run.shown
        );
        // "a", padding past the longest answer, then "nope, deny".
        run = typed("a                    nope, deny\r", 1.2);
        expect(&run, mode, 1, &["failed"]);
        assert!(
            run.shown.contains("That line held more than an answer"),
            "{mode:?}: {}",
            run.shown
        );
        assert_eq!(count.load(Ordering::SeqCst), before, "{mode:?}");
        assert!(!fx.config.join("cordon/config.toml").exists(), "{mode:?}");
        // Docker's API port on the host: said, and "always" is no answer.
        run = ask_run(fx, 2375, &["a\r", "d\r"], 1, &[], Inside::Quiet);
        expect(&run, mode, 1, &["failed"]);
        assert!(
            run.shown.contains("WARNING: 2375 is Docker"),
            "{mode:?}: {}",
            run.shown
        );
        assert!(
            run.shown.contains("Type o, s, d or x"),
            "{mode:?}: {}",
            run.shown
        );
        assert!(!fx.config.join("cordon/config.toml").exists(), "{mode:?}");
    });
}

#[test]
fn x_refuses_and_stops_the_asking() {
    let (port, count) = server();
    each_fixture(|mode, fx| {
        let before = count.load(Ordering::SeqCst);
        let run = ask_run(fx, port, &["x\r"], 3, &[], Inside::Quiet);
        assert_eq!(run.code, 0, "{mode:?}: {}", run.shown);
        expect(&run, mode, 1, &["failed"; 3]);
        assert!(
            run.shown.contains("nothing more is asked"),
            "{mode:?}: {}",
            run.shown
        );
        assert_eq!(count.load(Ordering::SeqCst), before, "{mode:?}");
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
