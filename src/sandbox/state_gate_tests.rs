use super::*;

fn held_files(dir: &Path, text: &str) -> (StateFiles, PathBuf, OwnedFd) {
    let path = dir.join(".claude.json");
    std::fs::write(&path, text).unwrap();
    let entry = StateFile {
        path: path.clone(),
        unchanged: vec!["mcpServers".into()],
    };
    let fd = OwnedFd::from(File::open(dir).unwrap());
    (StateFiles::open(&[(path.clone(), entry)]), path, fd)
}

fn write_staged(reply: Reply, text: &str) {
    let Reply::Fd { fd, .. } = reply else {
        panic!("not a descriptor");
    };
    File::from(fd).write_all_at(text.as_bytes(), 0).unwrap();
}

#[test]
fn the_agents_temporary_files_and_lock_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (files, path, held_dir) = held_files(dir.path(), "{}");
    let beside = |name: &str| dir.path().join(name);
    assert!(files.stages(&beside(".claude.json.tmp.12.ab")));
    assert!(!files.stages(&beside(".claude.json.tmp.")));
    assert!(!files.stages(&beside(".claude.jsonx.tmp.1")));
    assert!(!files.stages(&dir.path().join("sub/.claude.json.tmp.1")));
    assert!(files.is_lock(&beside(".claude.json.lock")));
    assert!(!files.is_lock(&beside(".claude.json.lock2")));
    assert!(files.find(&path, &held_dir).is_some());
    assert!(files.find(&beside("other.json"), &held_dir).is_none());
    // The same name in another directory (the sandbox's own /tmp in place
    // of the host's) is not the file.
    let elsewhere = tempfile::tempdir().unwrap();
    let other = OwnedFd::from(File::open(elsewhere.path()).unwrap());
    assert!(files.find(&path, &other).is_none());
}

#[test]
fn a_replacement_keeping_what_may_not_change_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let old = "{\"numStartups\": 1, \"mcpServers\": {\"a\": {\"command\": \"x\"}}, \"long\": \"................\"}";
    let (files, path, held_dir) = held_files(dir.path(), old);
    let inode = std::fs::metadata(&path).unwrap().ino();
    let tmp = dir.path().join(".claude.json.tmp.1.ab");
    let report: Reporter = Box::new(|_| {});
    write_staged(
        files.stage(&tmp, true, true).unwrap(),
        "{\"numStartups\": 2, \"mcpServers\": {\"a\": {\"command\": \"x\"}}}",
    );
    assert_eq!(
        files.replace(files.find(&path, &held_dir).unwrap(), &tmp, &report),
        Ok(0)
    );
    let now = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        now,
        "{\"numStartups\": 2, \"mcpServers\": {\"a\": {\"command\": \"x\"}}}"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);
    // Nothing was made beside it, and the staged name is gone.
    assert!(!tmp.exists());
    assert_eq!(
        files.replace(files.find(&path, &held_dir).unwrap(), &tmp, &report),
        Err(libc::EPERM)
    );
}

#[test]
fn a_replacement_changing_what_may_not_change_is_refused_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let old = "{\"mcpServers\": {}}";
    let (files, path, held_dir) = held_files(dir.path(), old);
    let reasons = std::sync::Arc::new(Mutex::new(Vec::new()));
    let seen = reasons.clone();
    let report: Reporter = Box::new(move |r| {
        if let Refusal::Create { why, .. } = r {
            seen.lock().unwrap().push(why.reason());
        }
    });
    for (n, new) in [
        "{\"mcpServers\": {\"evil\": {\"command\": \"sh\"}}}",
        "not json",
        "",
        "null",
        "[1, 2]",
    ]
    .iter()
    .enumerate()
    {
        let tmp = dir.path().join(format!(".claude.json.tmp.{n}"));
        write_staged(files.stage(&tmp, true, true).unwrap(), new);
        assert_eq!(
            files.replace(files.find(&path, &held_dir).unwrap(), &tmp, &report),
            Err(libc::EPERM),
            "{new:?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
    let reasons = reasons.lock().unwrap();
    assert!(
        reasons[0].contains("mcpServers would change"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("not JSON"), "{reasons:?}");
    assert!(reasons[3].contains("not a JSON object"), "{reasons:?}");
    // A name that was never staged cannot replace it either.
    let report: Reporter = Box::new(|_| {});
    let never = dir.path().join(".claude.json.tmp.never");
    assert_eq!(
        files.replace(files.find(&path, &held_dir).unwrap(), &never, &report),
        Err(libc::EPERM)
    );
}

#[test]
fn a_second_exclusive_make_of_a_staged_name_fails_as_the_kernel_would() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _, _) = held_files(dir.path(), "{}");
    let tmp = dir.path().join(".claude.json.tmp.1");
    assert!(files.stage(&tmp, true, true).is_ok());
    assert!(matches!(files.stage(&tmp, true, true), Err(libc::EEXIST)));
    assert!(files.stage(&tmp, false, true).is_ok());
}
