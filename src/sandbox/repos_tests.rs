use super::*;

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

#[test]
fn scan_finds_every_kind_of_repository_git_would_see() {
    let (_t, p) = canonical_tempdir();
    let elsewhere = p.join("elsewhere");
    std::fs::create_dir_all(p.join("plain")).unwrap();
    git(&p.join("plain"), &["init", "-q"]);
    git(&p, &["init", "-q", "--bare", "bare.git"]);
    std::fs::create_dir_all(p.join("separate")).unwrap();
    git(
        &p.join("separate"),
        &[
            "init",
            "-q",
            "--separate-git-dir",
            elsewhere.to_str().unwrap(),
        ],
    );
    std::fs::create_dir_all(p.join("linked")).unwrap();
    git(&p, &["init", "-q", "--bare", "real.git"]);
    std::os::unix::fs::symlink(p.join("real.git"), p.join("linked/.git")).unwrap();
    let scan = scan(std::slice::from_ref(&p), &[], &[]).unwrap();
    for dir in ["plain/.git", "bare.git", "elsewhere", "real.git"] {
        assert!(scan.git_dirs.contains(&p.join(dir)), "{dir}: {scan:#?}");
    }
    for tree in ["plain", "separate", "linked"] {
        assert!(scan.work_trees.contains(&p.join(tree)), "{tree}: {scan:#?}");
    }
    assert!(scan.git_links.contains(&p.join("separate/.git")));
    assert!(scan.git_links.contains(&p.join("linked/.git")));
}

#[test]
fn a_git_file_pointing_outside_the_walk_is_followed() {
    let (_t, p) = canonical_tempdir();
    let (_o, outside) = canonical_tempdir();
    git(&outside, &["init", "-q", "--bare", "x.git"]);
    std::fs::write(
        p.join(".git"),
        format!("gitdir: {}\n", outside.join("x.git").display()),
    )
    .unwrap();
    let scan = scan(std::slice::from_ref(&p), &[], &[]).unwrap();
    assert!(scan.git_dirs.contains(&outside.join("x.git")), "{scan:#?}");
    assert_eq!(git_dir_of(&p), Some(outside.join("x.git")));
}

#[test]
fn the_repository_around_a_directory_is_found() {
    let (_t, p) = canonical_tempdir();
    git(&p, &["init", "-q"]);
    std::fs::create_dir_all(p.join("a/b")).unwrap();
    assert_eq!(enclosing_git_dirs(&p.join("a/b")), vec![p.join(".git")]);
}

#[test]
fn sweep_moves_aside_hooks_and_dangerous_keys_of_a_new_repository_only() {
    let (_t, p) = canonical_tempdir();
    git(&p, &["init", "-q", "old"]);
    std::fs::write(p.join("old/.git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    let before = scan(std::slice::from_ref(&p), &[], &[]).unwrap();
    git(&p, &["init", "-q", "new"]);
    git(&p.join("new"), &["config", "core.fsmonitor", "./evil"]);
    git(&p.join("new"), &["config", "user.name", "kept"]);
    std::fs::write(p.join("new/.git/hooks/post-checkout"), "#!/bin/sh\n").unwrap();
    let swept = sweep(
        std::slice::from_ref(&p),
        &[],
        &before,
        SystemTime::now(),
        &[],
    );
    assert!(swept.failures.is_empty(), "{swept:#?}");
    assert_eq!(swept.neutralised.len(), 2, "{swept:#?}");
    assert!(!p.join("new/.git/hooks/post-checkout").exists());
    assert!(p
        .join("new/.git/cordon-quarantine/hooks/post-checkout")
        .exists());
    let config = std::fs::read_to_string(p.join("new/.git/config")).unwrap();
    assert!(
        !config.contains("fsmonitor") && config.contains("kept"),
        "{config}"
    );
    assert!(
        p.join("old/.git/hooks/pre-commit").exists(),
        "the old repository is the user's"
    );
}

#[test]
fn sweep_strips_privilege_bits_of_files_changed_during_the_run() {
    let (_t, p) = canonical_tempdir();
    let old = p.join("old");
    std::fs::write(&old, "").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let before = scan(std::slice::from_ref(&p), &[], &[]).unwrap();
    let started = SystemTime::now() + std::time::Duration::from_secs(5);
    let swept = sweep(std::slice::from_ref(&p), &[], &before, started, &[]);
    assert!(
        swept.neutralised.is_empty(),
        "older than the run: {swept:#?}"
    );
    let swept = sweep(
        std::slice::from_ref(&p),
        &[],
        &before,
        SystemTime::now(),
        &[],
    );
    assert_eq!(swept.neutralised.len(), 1, "{swept:#?}");
    let mode = old.metadata().unwrap().mode();
    assert_eq!(mode & 0o7777, 0o755);
}

#[test]
fn directories_kept_apart_are_not_walked() {
    let (_t, p) = canonical_tempdir();
    let apart = p.join("cache/cordon/caches");
    std::fs::create_dir_all(apart.join("layer/upper")).unwrap();
    git(&apart.join("layer/upper"), &["init", "-q"]);
    let scan = scan(std::slice::from_ref(&p), &[], std::slice::from_ref(&apart)).unwrap();
    assert!(scan.git_dirs.is_empty(), "{scan:#?}");
    // Walked without it, the same tree holds a repository.
    let scan = super::scan(std::slice::from_ref(&p), &[], &[]).unwrap();
    assert_eq!(scan.git_dirs.len(), 1, "{scan:#?}");
}
