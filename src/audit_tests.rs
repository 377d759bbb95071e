use super::*;

fn event(subject: &str, verdict: Verdict) -> Event {
    let mut e = Event::new(Door::Network, Kind::Decision, verdict, subject);
    e.sandbox = "cordon-1-ab".into();
    e.command = "curl".into();
    e.rule = Some("evil.example".into());
    e.source = Some("flag --deny-domain".into());
    e.proto = Some(Proto::Connect);
    e
}

#[test]
fn dates() {
    let day = |days: u64| rfc3339(days * 86_400, 0)[..10].to_string();
    assert_eq!(day(0), "1970-01-01");
    assert_eq!(day(19_723), "2024-01-01");
    assert_eq!(day(20_513), "2026-03-01");
    assert_eq!(rfc3339(u64::MAX, 0), "9999-12-31T23:59:59.999Z");
}

#[test]
fn time_format() {
    assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(951_782_400, 7), "2000-02-29T00:00:00.007Z");
    assert_eq!(rfc3339(1_796_004_000 + 59, 999), "2026-11-30T02:00:59.999Z");
    assert_eq!(rfc3339(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
    let now = rfc3339_now();
    assert_eq!(now.len(), 24, "{now}");
    assert!(now.ends_with('Z') && now.starts_with("20"), "{now}");
}

/// A key in `dir`'s state directory, made on first use.
fn key_in(dir: &Path) -> AuditKey {
    AuditKey::load_or_create(&key_path(&dir.join("state"))).unwrap()
}

fn open(path: &Path, dir: &Path) -> AuditLog {
    AuditFile::open(path, false).unwrap().keyed(key_in(dir))
}

/// A log in a fresh directory with three denials, one batch each: the
/// directory, the log's path, the open log, its key and its text.
fn log_of_three() -> (tempfile::TempDir, PathBuf, AuditLog, AuditKey, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut log = open(&path, dir.path());
    for s in ["a:1", "b:2", "c:3"] {
        log.append(&mut [event(s, Verdict::Deny)]).unwrap();
    }
    let key = key_in(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    (dir, path, log, key, text)
}

#[test]
fn chain_json_shape_and_append_to_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/audit.jsonl");
    assert!(
        AuditFile::open(&path, false).is_err(),
        "no dir, not asked to create"
    );
    let mut log = AuditFile::open(&path, true)
        .unwrap()
        .keyed(key_in(dir.path()));
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    log.append(&mut [event("a.example:443", Verdict::Allow)])
        .unwrap();
    log.append(&mut [
        event("b.example:443", Verdict::Deny),
        event("c.example:80", Verdict::Deny),
    ])
    .unwrap();
    let key = key_in(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(verify(&text, &key), Ok(3));
    let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(first["prev"], "");
    assert_eq!(first["seq"], 1);
    assert_eq!(first["door"], "network");
    assert_eq!(first["verdict"], "allow");
    assert_eq!(first["event"], "decision");
    assert_eq!(first["proto"], "connect");
    assert_eq!(first["subject"], "a.example:443");
    assert_eq!(first["sandbox"], "cordon-1-ab");
    assert_eq!(first["command"], "curl");
    assert_eq!(first["rule"], "evil.example");
    assert_eq!(first["source"], "flag --deny-domain");
    assert!(first.get("bytes_up").is_none(), "absent fields are omitted");
    assert!(lines[0].ends_with(&format!(
        ",\"mac\":\"{}\"}}",
        first["mac"].as_str().unwrap()
    )));
    let second: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(second["prev"], first["mac"]);
    assert_eq!(second["seq"], 2);
    // Round trip.
    let back: Event = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(back.subject, "c.example:80");

    // Another run (another handle) appends to the existing file, chaining
    // from its last line; so does the first handle after that.
    let mut other = open(&path, dir.path());
    other
        .append(&mut [event("d.example:443", Verdict::Deny)])
        .unwrap();
    log.append(&mut [event("e.example:443", Verdict::Deny)])
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(verify(&text, &key), Ok(5));
    let lines: Vec<&str> = text.lines().collect();
    let third: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
    let fourth: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
    assert_eq!(fourth["prev"], third["mac"]);
    assert_eq!(fourth["seq"], 4);
}

#[test]
fn verify_names_edits_deletions_moves_and_foreign_chains() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut log = open(&path, dir.path());
    for s in ["a:1", "b:2", "c:3", "d:4"] {
        log.append(&mut [event(s, Verdict::Deny)]).unwrap();
    }
    let key = key_in(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(verify(&text, &key), Ok(4));
    let lines: Vec<&str> = text.lines().collect();
    let join = |v: Vec<&str>| v.join("\n") + "\n";
    let removed = join(vec![lines[0], lines[2], lines[3]]);
    assert_eq!(
        verify(&removed, &key),
        Err(ChainError::Deleted {
            line: 2,
            expected: 2,
            found: 3
        })
    );
    let edited_line = lines[1].replace("b:2", "z:2");
    let edited = join(vec![lines[0], &edited_line, lines[2], lines[3]]);
    assert_eq!(verify(&edited, &key), Err(ChainError::BadMac { line: 2 }));
    let head_cut = join(lines[1..].to_vec());
    assert_eq!(
        verify(&head_cut, &key),
        Err(ChainError::Deleted {
            line: 1,
            expected: 1,
            found: 2
        })
    );
    let repeated = join(vec![lines[0], lines[1], lines[1], lines[2]]);
    assert_eq!(
        verify(&repeated, &key),
        Err(ChainError::Reordered {
            line: 3,
            expected: 3,
            found: 2
        })
    );
    let junk = join(vec![lines[0], "not json"]);
    assert_eq!(verify(&junk, &key), Err(ChainError::Malformed { line: 2 }));

    // A line of another log under the same key, in its place.
    let other_path = dir.path().join("other.jsonl");
    let mut other = open(&other_path, dir.path());
    for s in ["x:1", "y:2"] {
        other.append(&mut [event(s, Verdict::Deny)]).unwrap();
    }
    let other_text = std::fs::read_to_string(&other_path).unwrap();
    let other_lines: Vec<&str> = other_text.lines().collect();
    let spliced = join(vec![lines[0], other_lines[1]]);
    assert_eq!(verify(&spliced, &key), Err(ChainError::Spliced { line: 2 }));

    // The same log checked with another key, and a chain rebuilt with
    // the unkeyed SHA-256 scheme.
    let elsewhere = tempfile::tempdir().unwrap();
    assert_eq!(
        verify(&text, &key_in(elsewhere.path())),
        Err(ChainError::BadMac { line: 1 })
    );
    let unkeyed = "{\"subject\":\"a:1\",\"prev\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}\n";
    assert_eq!(verify(unkeyed, &key), Err(ChainError::Unkeyed { line: 1 }));
}

#[test]
fn lines_hold_no_raw_bidi_or_c1_character() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut log = open(&path, dir.path());
    let subject = "evil\u{202e}gpj\u{85}\u{200b}\u{1b}[2K\u{e0041}.example:80";
    log.append(&mut [event(subject, Verdict::Deny)]).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        crate::escape::json_printable(text.trim_end()) == text.trim_end(),
        "{text:?}"
    );
    assert!(
        text.contains("\\u202e") && text.contains("\\udb40\\udc41"),
        "{text}"
    );
    let back: Event = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(back.subject, subject);
    assert_eq!(verify(&text, &key_in(dir.path())), Ok(1));
}

#[test]
fn the_tail_record_catches_lines_cut_off_the_end() {
    let (dir, path, mut log, key, text) = log_of_three();
    // Recorded after every batch, not only when the run ends: a cut
    // is caught even if the run was killed before its end.
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..2].join("\n") + "\n";
    assert!(matches!(
        verify(&cut, &key),
        Err(ChainError::Truncated {
            expected: 3,
            found: 2,
            ..
        })
    ));
    log.record_tail().unwrap();
    assert_eq!(verify(&text, &key), Ok(3));
    assert!(matches!(
        verify(&cut, &key),
        Err(ChainError::Truncated {
            expected: 3,
            found: 2,
            ..
        })
    ));
    // A run that wrote less, finishing later, does not lower the record.
    let mut earlier = open(&path, dir.path());
    earlier.wrote = Some(Link {
        seq: 1,
        mac: "00".into(),
    });
    earlier.chain = log.chain.clone();
    earlier.record_tail().unwrap();
    assert!(matches!(
        verify(&cut, &key),
        Err(ChainError::Truncated { .. })
    ));
    // A record that cannot be read: the end cannot be checked, and
    // verification says so rather than passing.
    let chain = log.chain.clone().unwrap();
    std::fs::write(key.dir.path.join(TAILS_DIR).join(&chain), "junk").unwrap();
    assert!(matches!(
        verify(&text, &key),
        Err(ChainError::BadTailRecord { .. })
    ));
    // The next run's record replaces it.
    log.record_tail().unwrap();
    assert_eq!(verify(&text, &key), Ok(3));

    // Cut while a run writes: the run notices, and its record follows
    // the chain the file now holds.
    std::fs::write(&path, "").unwrap();
    log.append(&mut [event("d:4", Verdict::Deny)]).unwrap();
    assert!(log.cut_reported);
    log.record_tail().unwrap();
    let restarted = std::fs::read_to_string(&path).unwrap();
    assert_eq!(verify(&restarted, &key), Ok(1));
    assert_ne!(log.chain.as_deref(), Some(chain.as_str()));
}

#[test]
fn the_key_is_made_once_private_and_checked() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = key_path(&dir.path().join("state"));
    assert!(AuditKey::load(&path).is_err(), "load never makes one");
    let key = AuditKey::load_or_create(&path).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), KEY_LEN as u64);
    let again = AuditKey::load(&path).unwrap();
    assert_eq!(key.sign(b"x"), again.sign(b"x"), "the same key");
    assert!(key.verifies(b"x", &key.sign(b"x")));
    assert!(!key.verifies(b"y", &key.sign(b"x")));

    let problem = |p: &Path| match AuditKey::load(p) {
        Err(AuditError::Key { problem, .. }) => problem,
        other => panic!("{other:?}"),
    };
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert!(problem(&path).contains("mode 0640"), "{}", problem(&path));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let short = path.with_file_name("short.key");
    std::fs::write(&short, b"abc").unwrap();
    std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(problem(&short).contains("3 bytes"), "{}", problem(&short));
    let link = path.with_file_name("link.key");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    assert!(problem(&link).contains("symbolic link"));
    let dir_of_key = path.parent().unwrap();
    std::fs::set_permissions(dir_of_key, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(problem(&path).contains("others could replace the key"));
}

#[test]
fn torn_last_line_is_terminated_and_starts_a_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, "{\"prev\":\"x\"").unwrap();
    let file = AuditFile::open(&path, false).unwrap();
    assert!(file.ends_unkeyed().unwrap());
    let mut log = file.keyed(key_in(dir.path()));
    log.append(&mut [event("a:1", Verdict::Deny)]).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    let ours: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(ours["prev"], "");
    assert_eq!(ours["seq"], 1);
    assert!(!AuditFile::open(&path, false)
        .unwrap()
        .ends_unkeyed()
        .unwrap());
}

#[test]
fn long_last_line_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mac = "ab".repeat(32);
    let long = format!(
        "{{\"subject\":\"{}\",\"seq\":7,\"mac\":\"{mac}\"}}",
        "y".repeat(20_000)
    );
    std::fs::write(&path, format!("first\n{long}\n")).unwrap();
    let mut log = open(&path, dir.path());
    log.append(&mut [event("a:1", Verdict::Deny)]).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["prev"], mac);
    assert_eq!(last["seq"], 8);
}

#[test]
fn auditor_writes_in_order_and_summarises() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, dir.path());
    let auditor = Auditor::start(Some(log), "cordon-9-cd", "python3");
    for i in 0..50 {
        auditor.record(event(&format!("h{}.example:443", i % 3), Verdict::Deny));
    }
    auditor.record(event("ok.example:443", Verdict::Allow));
    auditor.count_blocked(
        Door::Network,
        "(over the connection cap)",
        Why {
            reason: Some("the proxy serves at most 2 connections at once".into()),
            fix: None,
        },
    );
    let summary = auditor.finish();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(verify(&text, &key_in(dir.path())), Ok(51));
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["sandbox"], "cordon-9-cd");
    assert_eq!(first["command"], "python3");
    assert_eq!(first["subject"], "h0.example:443");
    assert_eq!(summary.blocked(Door::Network), 51);
    assert_eq!(
        summary.text(Some(&path)).unwrap(),
        format!(
            "cordon: blocked 51 network connections:\n  h0.example:443 ×17\n  h1.example:443 ×17\n  h2.example:443 ×16\n  (over the connection cap): the proxy serves at most 2 connections at once\ncordon: audit log: {}",
            path.display()
        )
    );
    // After finish, events are dropped, not written.
    auditor.record(event("late.example:443", Verdict::Deny));
    assert_eq!(
        verify(
            &std::fs::read_to_string(&path).unwrap(),
            &key_in(dir.path())
        ),
        Ok(51)
    );
}

#[test]
fn allowed_events_count_toward_the_flood_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let auditor = Auditor::start(Some(open(&path, dir.path())), "cordon-9-cd", "curl");
    for _ in 0..100 {
        auditor.record(event("ok.example:443", Verdict::Allow));
        let mut close = event("ok.example:443", Verdict::Allow);
        close.event = Kind::Close;
        auditor.record(close);
    }
    // Ever new subjects are bounded too.
    for i in 0..(MAX_SUBJECTS + 100) {
        auditor.record(event(&format!("h{i}.example:443"), Verdict::Allow));
    }
    let summary = auditor.finish();
    assert!(summary.is_empty(), "nothing was blocked");
    let text = std::fs::read_to_string(&path).unwrap();
    let events: Vec<Event> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: Kind, subject: &str| {
        events
            .iter()
            .filter(|e| e.event == kind && e.subject == subject)
            .count()
    };
    assert_eq!(
        of(Kind::Decision, "ok.example:443"),
        LOGGED_REPEATS as usize
    );
    assert_eq!(of(Kind::Close, "ok.example:443"), LOGGED_REPEATS as usize);
    assert_eq!(of(Kind::Limit, "ok.example:443"), 2);
    assert_eq!(of(Kind::Limit, OTHER_SUBJECTS), 1);
    // ok.example counts as one of the distinct subjects.
    let distinct = events
        .iter()
        .filter(|e| e.event == Kind::Decision && e.subject.starts_with('h'))
        .count();
    assert_eq!(distinct, MAX_SUBJECTS - 1 + LOGGED_REPEATS as usize);
    let limit = events.iter().find(|e| e.event == Kind::Limit).unwrap();
    assert_eq!(
        limit.reason.as_deref(),
        Some("allowed 20 times: further ones are not logged one by one")
    );
}

#[test]
fn the_run_budget_bounds_lines_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let auditor = Auditor::start(Some(open(&path, dir.path())), "cordon-9-cd", "curl");
    // 200 subjects, each up to the flood limit: 4000 lines without
    // the budget.
    let n = 200 * LOGGED_REPEATS;
    for i in 0..n {
        auditor.record(event(&format!("h{}.example:80", i % 200), Verdict::Deny));
    }
    let summary = auditor.finish();
    assert_eq!(summary.blocked(Door::Network), n, "every refusal counted");
    let text = std::fs::read_to_string(&path).unwrap();
    let key = key_in(dir.path());
    assert_eq!(verify(&text, &key), Ok(RUN_LINES as usize));
    let last: Event = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last.event, last.subject.as_str()),
        (Kind::Limit, "(this run)")
    );
    assert!(last.reason.unwrap().contains("1999 lines"));

    // Long subjects: the byte budget ends it first.
    let path = dir.path().join("bytes.jsonl");
    let auditor = Auditor::start(Some(open(&path, dir.path())), "cordon-9-cd", "curl");
    for i in 0..2000 {
        auditor.record(event(
            &format!("{i}{}", "\u{202e}".repeat(200)),
            Verdict::Deny,
        ));
    }
    auditor.finish();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len <= RUN_BYTES + 4096, "{len} bytes");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines().count() < 1000,
        "{} lines",
        text.lines().count()
    );
    assert!(text.lines().last().unwrap().contains("\"limit\""));
}

#[test]
fn nothing_at_the_log_path_is_followed_or_shared() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("bashrc");
    std::fs::write(&target, "mine\n").unwrap();
    let path = dir.path().join("audit.jsonl");
    let problem = |p: &Path| match AuditFile::open(p, false) {
        Err(AuditError::Open { source, .. }) => source.to_string(),
        other => panic!("{other:?}"),
    };
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(
        problem(&path).contains("symbolic link"),
        "{}",
        problem(&path)
    );
    std::fs::remove_file(&path).unwrap();
    let dangling = dir.path().join("profile.d-x.sh");
    std::os::unix::fs::symlink(&dangling, &path).unwrap();
    assert!(problem(&path).contains("symbolic link"));
    assert!(!dangling.exists(), "a dangling link's target was made");
    std::fs::remove_file(&path).unwrap();
    std::fs::hard_link(&target, &path).unwrap();
    assert!(problem(&path).contains("2 names"), "{}", problem(&path));
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert!(!problem(&path).is_empty());
    std::fs::remove_dir(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
    if nix::unistd::geteuid().is_root() {
        std::fs::write(&path, "").unwrap();
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        assert!(problem(&path).contains("belongs to uid 65534"));
        std::fs::remove_file(&path).unwrap();
    }
    // A link on the way to it is resolved once, at open: the file
    // stays the one opened, wherever the link then points.
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let via = dir.path().join("via");
    std::os::unix::fs::symlink(&real, &via).unwrap();
    let file = AuditFile::open(&via.join("audit.jsonl"), false).unwrap();
    assert_eq!(
        file.canonical,
        real.canonicalize().unwrap().join("audit.jsonl")
    );
    let mut log = file.keyed(key_in(dir.path()));
    std::fs::remove_file(&via).unwrap();
    std::os::unix::fs::symlink(dir.path(), &via).unwrap();
    log.append(&mut [event("a:1", Verdict::Deny)]).unwrap();
    assert!(real.join("audit.jsonl").metadata().unwrap().len() > 0);
    assert!(!dir.path().join("audit.jsonl").exists());
}

#[test]
fn the_key_and_records_are_never_reached_through_links() {
    let dir = tempfile::tempdir().unwrap();
    let path = key_path(&dir.path().join("state"));
    let key = AuditKey::load_or_create(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().nlink(), 1);
    let other = dir.path().join("other-name");
    std::fs::hard_link(&path, &other).unwrap();
    match AuditKey::load(&path) {
        Err(AuditError::Key { problem, .. }) => {
            assert!(problem.contains("2 names"), "{problem}")
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(&other).unwrap();
    // A chain named by the log's first line is never a path.
    assert_eq!(record_name("../../etc/x"), None);
    assert_eq!(record_name(&"/".repeat(MAC_HEX)), None);
    assert!(record_name(&"a".repeat(MAC_HEX)).is_some());
    // A tail record replaced by a link is not read through it.
    let log_path = dir.path().join("audit.jsonl");
    let mut log = AuditFile::open(&log_path, false).unwrap().keyed(key);
    log.append(&mut [event("a:1", Verdict::Deny)]).unwrap();
    let chain = log.chain.clone().unwrap();
    let record = path.parent().unwrap().join(TAILS_DIR).join(&chain);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::write(&elsewhere, "{\"seq\":1,\"mac\":\"x\"}").unwrap();
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &record).unwrap();
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(matches!(
        verify(&text, &log.key),
        Err(ChainError::BadTailRecord { .. })
    ));
    // The next batch replaces the link, not what it points to.
    log.append(&mut [event("b:2", Verdict::Deny)]).unwrap();
    assert!(!record.is_symlink());
    assert_eq!(
        std::fs::read_to_string(&elsewhere).unwrap(),
        "{\"seq\":1,\"mac\":\"x\"}"
    );
}

#[test]
fn the_log_record_catches_an_emptied_replaced_or_cut_log() {
    let (dir, path, _log, key, text) = log_of_three();
    assert_eq!(verify_log(&path, &text, &key), Ok(3));
    assert!(matches!(
        verify_log(&path, "", &key),
        Err(ChainError::Emptied { seq: 3, .. })
    ));
    let other_path = dir.path().join("other.jsonl");
    let mut other = open(&other_path, dir.path());
    for s in ["x:1", "y:2", "z:3", "w:4"] {
        other.append(&mut [event(s, Verdict::Deny)]).unwrap();
    }
    let other_text = std::fs::read_to_string(&other_path).unwrap();
    assert_eq!(verify(&other_text, &key), Ok(4), "a whole chain of its own");
    assert!(matches!(
        verify_log(&path, &other_text, &key),
        Err(ChainError::Replaced { seq: 3, .. })
    ));
    // Cut, with the chain's tail record gone too.
    std::fs::remove_dir_all(path.parent().unwrap().join("state/cordon").join(TAILS_DIR)).unwrap();
    let cut = text.lines().take(2).collect::<Vec<_>>().join("\n") + "\n";
    assert_eq!(verify(&cut, &key), Ok(2));
    assert!(matches!(
        verify_log(&path, &cut, &key),
        Err(ChainError::Truncated {
            expected: 3,
            found: 2,
            ..
        })
    ));
}

/// A reason and fix, as a decision's event carries them.
fn why(reason: &str, fix: &str) -> Why {
    Why {
        reason: Some(reason.into()),
        fix: Some(fix.into()),
    }
}

#[test]
fn summary_lines() {
    let mut s = Summary::default();
    assert_eq!(s.text(None), None);
    s.count(
        Door::Network,
        "evil.example:443",
        why(
            "no allow rule names this host",
            "allow with --allow-domain evil.example",
        ),
    );
    assert_eq!(
        s.text(None).unwrap(),
        "cordon: blocked 1 network connection:\n  evil.example:443: no allow rule names this host; allow with --allow-domain evil.example\ncordon: no audit log (--audit none)"
    );
    for i in 0..9 {
        s.count(Door::Network, &format!("h{i}:80"), Why::default());
    }
    // Counted again with another reason: the first one stays.
    s.count(Door::Network, "h3:80", why("later", "later"));
    s.count(
        Door::Files,
        "/p/.envrc",
        Why {
            reason: Some("protected".into()),
            fix: None,
        },
    );
    s.sandbox = "cordon-1-ab".into();
    assert_eq!(
        s.text(Some(Path::new("/l"))).unwrap(),
        "cordon: blocked 11 network connections:
  h3:80 ×2
  evil.example:443: no allow rule names this host; allow with --allow-domain evil.example
  h0:80
  h1:80
  h2:80
  h4:80
  h5:80
  h6:80
  2 more (cordon log --file /l --sandbox cordon-1-ab --door network --denied)
cordon: blocked 1 file access:
  /p/.envrc: protected
cordon: audit log: /l"
    );
    // Without a log, the rest are nowhere to list.
    assert!(s
        .text(None)
        .unwrap()
        .contains("  2 more (not logged: --audit none)\n"));
}

#[test]
fn summary_lines_are_printable() {
    let mut s = Summary::default();
    s.count(
        Door::Network,
        "/tmp/\x1b[2Jsock",
        why("a \x07reason", "allow \x1b]0;x"),
    );
    let text = s.text(None).unwrap();
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn a_long_reason_is_cut_in_the_summary() {
    let mut s = Summary::default();
    let long = "é".repeat(2000);
    s.count(Door::Files, "/p/x", why(&long, &long));
    let text = s.text(None).unwrap();
    let line = text.lines().nth(1).unwrap();
    assert!(line.len() < 2 * MAX_SAID + 100, "{}", line.len());
    assert_eq!(line.matches('…').count(), 2, "{line}");
}

#[test]
fn the_others_past_the_remembered_subjects_have_no_reason() {
    let mut s = Summary::default();
    for i in 0..MAX_SUBJECTS + 3 {
        s.count(Door::Process, &format!("s{i}"), why("r", "f"));
    }
    s.count(Door::Process, "s0", Why::default());
    let text = s.text(None).unwrap();
    assert!(text.contains("\n  s0 ×2: r; f\n"), "{text}");
    assert!(text.contains("\n  others ×3\n"), "{text}");
}

#[test]
fn command_names_and_long_subjects() {
    assert_eq!(command_name("/usr/bin/python3".as_ref()), "python3");
    assert_eq!(command_name("sh".as_ref()), "sh");
    let e = Event::new(
        Door::Network,
        Kind::Decision,
        Verdict::Deny,
        "é".repeat(400),
    );
    assert!(e.subject.len() <= MAX_SUBJECT + 3, "{}", e.subject.len());
}
