//! Persistence: the sandbox may work with git, but may not plant anything
//! that runs code later outside it (hooks, git config, shell rc files,
//! editor and agent configs), in the project or any nested repository,
//! and leaves no placeholder behind.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::*;

/// path -> content of every regular file under `dir` (and "<dir>" for dirs).
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    listing(dir)
        .into_iter()
        .map(|rel| {
            let p = dir.join(&rel);
            let meta = p.symlink_metadata().unwrap();
            let v = if meta.is_dir() {
                "<dir>".to_string()
            } else if meta.file_type().is_symlink() {
                format!("<link {}>", std::fs::read_link(&p).unwrap().display())
            } else {
                String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()
            };
            (rel, v)
        })
        .collect()
}

const GIT: &str = "git -c user.name=x -c user.email=x@y -c commit.gpgsign=false";

#[test]
fn git_works_but_hooks_config_and_dotfiles_are_protected() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let before = snapshot(&fx.project);
        let attempts = [
            ("hook", "echo 'touch /tmp/pwned' > .git/hooks/pre-commit"),
            (
                "gitconfig-append",
                "echo '[core] hooksPath = /tmp' >> .git/config",
            ),
            ("git-config-cmd", "git config core.hooksPath /tmp"),
            ("bashrc", "echo evil > .bashrc"),
            ("envrc", "echo evil > .envrc"),
            ("mcp", "echo '{}' > .mcp.json"),
            (
                "vscode",
                "mkdir -p .vscode && echo '{}' > .vscode/tasks.json",
            ),
            (
                "claude",
                "mkdir -p .claude && echo '{}' > .claude/settings.json",
            ),
            ("husky", "mkdir -p .husky && echo evil > .husky/pre-commit"),
            ("cordon-toml", "echo '[files]' > cordon.toml"),
            ("gitmodules", "echo evil > .gitmodules"),
            ("mv-git", "mv .git .git-moved"),
            ("rm-hooks", "rm -rf .git/hooks"),
            ("mv-hooks", "mv .git/hooks .git/hooks-old"),
            ("rm-config", "rm -f .git/config"),
        ];
        let mut script = format!(
            "{GIT} status --short >/dev/null && echo 'status: OK'\n\
             echo two >> file.txt; {GIT} add file.txt && {GIT} commit -q -m second && echo 'commit: OK'\n"
        );
        script.push_str(&attempts_script(&attempts));
        script.push_str(&format!(
            "{GIT} log --oneline | wc -l | sed 's/^/commits: /'\n"
        ));
        let out = fx.sandbox().sh(&script);
        assert!(out.stdout.contains("status: OK"), "{mode:?}: {out:#?}");
        assert!(
            out.stdout.contains("commit: OK"),
            "{mode:?}: git commit failed: {out:#?}"
        );
        assert!(out.stdout.contains("commits: 2"), "{mode:?}: {out:#?}");
        let open = open_lines(&out);
        assert!(
            open.is_empty(),
            "{mode:?}: persistence paths writable: {open:?}\n{out:#?}"
        );
        for (label, _) in attempts {
            assert!(
                out.stdout.contains(&format!("{label}: refused")),
                "{mode:?}: {label} missing: {out:#?}"
            );
        }
        // Host view afterwards: no placeholders left, protected files
        // unchanged (.git internals change with the commit, so compare the
        // protected ones only), the work-tree edit landed.
        let after = snapshot(&fx.project);
        let names = |m: &BTreeMap<String, String>| -> Vec<String> {
            m.keys()
                .filter(|k| !k.starts_with(".git/") || k.starts_with(".git/hooks"))
                .cloned()
                .collect()
        };
        assert_eq!(names(&before), names(&after), "{mode:?}: tree changed");
        assert_eq!(
            before.get(".git/config"),
            after.get(".git/config"),
            "{mode:?}"
        );
        for (k, v) in &before {
            if k.starts_with(".git/hooks") {
                assert_eq!(Some(v), after.get(k), "{mode:?}: {k}");
            }
        }
        assert_eq!(
            after.get("file.txt").map(String::as_str),
            Some("one\ntwo\n")
        );
    });
}

#[test]
fn nested_repo_at_depth_six_is_protected() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let nested = fx.project.join("a/b/c/d/e/f");
        std::fs::create_dir_all(&nested).unwrap();
        chown_tree(&fx.project.join("a"), mode);
        fx.host_git(&nested, &["init", "-q"]);
        let before = snapshot(&fx.project);
        let script = "cd a/b/c/d/e/f\n\
            ( echo evil > .git/hooks/post-checkout ) 2>/dev/null && echo 'hook: OPEN' || echo 'hook: refused'\n\
            ( git config core.hooksPath /tmp ) 2>/dev/null && echo 'config: OPEN' || echo 'config: refused'\n\
            ( echo evil > .envrc ) 2>/dev/null && echo 'envrc: OPEN' || echo 'envrc: refused'\n\
            ( mv .git .git-moved ) 2>/dev/null && echo 'mv: OPEN' || echo 'mv: refused'\n\
            ( echo fine > work.txt ) && echo 'work: OK'\n";
        let out = fx.sandbox().sh(script);
        for l in ["hook", "config", "envrc", "mv"] {
            assert!(
                out.stdout.contains(&format!("{l}: refused")),
                "{mode:?}: nested {l}: {out:#?}"
            );
        }
        assert!(out.stdout.contains("work: OK"), "{mode:?}: {out:#?}");
        let mut after = snapshot(&fx.project);
        assert_eq!(
            after.remove("a/b/c/d/e/f/work.txt").as_deref(),
            Some("fine\n")
        );
        assert_eq!(before, after, "{mode:?}: tree changed");
    });
}

#[test]
fn gitdir_file_cannot_be_rewritten() {
    each_fixture(|mode, fx| {
        git_project(fx);
        // A submodule-style checkout: `.git` is a file pointing elsewhere.
        let sub = fx.project.join("sub");
        std::fs::create_dir(&sub).unwrap();
        let real = fx.outside.join("sub.git");
        std::fs::create_dir(&real).unwrap();
        chown_tree(&fx.outside, mode);
        chown(&sub, mode);
        fx.host_git(
            &sub,
            &["init", "-q", "--separate-git-dir", real.to_str().unwrap()],
        );
        let gitfile = sub.join(".git");
        let original = std::fs::read_to_string(&gitfile).unwrap();
        assert!(original.starts_with("gitdir:"), "{original}");
        let script = "( echo 'gitdir: /tmp/evil' > sub/.git ) 2>/dev/null && echo 'rewrite: OPEN' || echo 'rewrite: refused'\n\
            ( rm -f sub/.git ) 2>/dev/null && echo 'rm: OPEN' || echo 'rm: refused'\n\
            ( mv sub/.git sub/.git2 ) 2>/dev/null && echo 'mv: OPEN' || echo 'mv: refused'\n\
            ( mv sub sub-moved ) 2>/dev/null && echo 'mvdir: OPEN' || echo 'mvdir: refused'\n\
            echo ok > sub/work.txt && echo 'work: OK'\n";
        let out = fx.sandbox().sh(script);
        for l in ["rewrite", "rm", "mv", "mvdir"] {
            assert!(
                out.stdout.contains(&format!("{l}: refused")),
                "{mode:?}: {l}: {out:#?}"
            );
        }
        assert!(out.stdout.contains("work: OK"), "{mode:?}: {out:#?}");
        assert_eq!(std::fs::read_to_string(&gitfile).unwrap(), original);
    });
}

/// A run that writes nothing leaves the project as it was, during the run
/// (seen from the host and from inside) and after it, git repository or
/// not: protection of missing names creates nothing.
#[test]
fn a_run_that_writes_nothing_leaves_no_trace() {
    each_fixture(|mode, fx| {
        for with_git in [false, true] {
            if with_git {
                git_project(fx);
            }
            let before = snapshot(&fx.project);
            let listed = |s: &str| s.lines().map(str::to_string).collect::<Vec<_>>();
            let host_listing = listed(
                &std::fs::read_dir(&fx.project)
                    .unwrap()
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            let git_status = if with_git {
                "git status --porcelain --ignored"
            } else {
                "true"
            };
            // Inside: the same names as on the host, and a clean status.
            let run = fx.sandbox().spawn(&[
                "sh",
                "-c",
                &format!(
                    "LC_ALL=C ls -A | sort; {git_status}; echo END; touch ready; \
                     while [ ! -e stop ]; do sleep 0.05; done; rm ready"
                ),
            ]);
            // During the run, from the host (the run's own `ready` aside).
            assert!(
                wait_until(Duration::from_secs(30), || fx
                    .project
                    .join("ready")
                    .exists()),
                "{mode:?}: the run never got ready"
            );
            let mut during = snapshot(&fx.project);
            during.remove("ready");
            assert_eq!(
                before, during,
                "{mode:?} git={with_git}: traces during the run"
            );
            std::fs::write(fx.project.join("stop"), "").unwrap();
            let out = run.wait();
            out.ok();
            std::fs::remove_file(fx.project.join("stop")).unwrap();
            let inside: Vec<String> = out
                .stdout
                .lines()
                .take_while(|l| *l != "END")
                .map(str::to_string)
                .collect();
            assert_eq!(
                inside, host_listing,
                "{mode:?} git={with_git}: inside differs: {out:#?}"
            );
            assert_eq!(
                before,
                snapshot(&fx.project),
                "{mode:?} git={with_git}: leftovers"
            );
        }
        // Failing command and a command killed by a signal.
        let before = snapshot(&fx.project);
        fx.sandbox().sh("exit 3").expect_code(3);
        fx.sandbox().sh("kill -KILL $$").expect_code(137);
        assert_eq!(before, snapshot(&fx.project), "{mode:?}: leftovers (exit)");
    });
}
