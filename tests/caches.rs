//! Per-tool caches (`--cache`, `files.cache`): the sandbox writes a host
//! directory into a private layer cordon keeps per project; the host's
//! directory never changes, denied files in it stay hidden, the layer is
//! reachable only through the overlay, a missing directory leaves no
//! trace, and bad entries refuse with file, line and key.

mod common;

use std::path::{Path, PathBuf};

use common::standins::StandIns;
use common::*;

/// A host cache directory in the fixture's home: `c.txt` (a canary),
/// `d.txt` (to delete), `sub/e.txt`.
fn host_cache(fx: &Fixture, name: &str) -> PathBuf {
    let dir = fx.home.join(name);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("c.txt"), fx.canary("cache")).unwrap();
    std::fs::write(dir.join("d.txt"), "delete me\n").unwrap();
    std::fs::write(dir.join("sub/e.txt"), "e\n").unwrap();
    chown_tree(&fx.home, fx.mode);
    dir
}

/// A run without an audit log (which would be made in the home).
fn run_in(fx: &Fixture) -> Sandbox {
    fx.audited("none")
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_cache_is_writable_inside_while_the_host_directory_never_changes() {
    each_fixture(|mode, fx| {
        let cache = host_cache(fx, ".npm");
        let before = tree_snapshot(&cache);
        let write = "cat ~/.npm/c.txt; echo; echo more >> ~/.npm/c.txt && echo new > ~/.npm/n.txt \
                     && rm ~/.npm/d.txt && rm -r ~/.npm/sub && mkdir ~/.npm/made && echo m > ~/.npm/made/f \
                     && echo WROTE";
        let out = run_in(fx).flag("--cache", "~/.npm").sh(write);
        out.ok();
        assert!(
            out.stdout.contains(&fx.canary("cache")),
            "{mode:?}: {out:#?}"
        );
        assert!(out.stdout.contains("WROTE"), "{mode:?}: {out:#?}");
        assert_eq!(
            tree_snapshot(&cache),
            before,
            "{mode:?}: the host's cache changed"
        );

        // The next run of the project sees what the last one wrote.
        let out = run_in(fx)
            .flag("--cache", "~/.npm")
            .sh("cat ~/.npm/c.txt ~/.npm/n.txt ~/.npm/made/f; ls -A ~/.npm");
        out.ok();
        let seen = format!("{}more\nnew\nm\nc.txt\nmade\nn.txt\n", fx.canary("cache"));
        assert_eq!(out.stdout, seen, "{mode:?}: {out:#?}");
        assert_eq!(
            tree_snapshot(&cache),
            before,
            "{mode:?}: the host's cache changed"
        );

        // Without the cache, the directory is the host's, read-only.
        let out = run_in(fx).sh("echo x > ~/.npm/n.txt; cat ~/.npm/c.txt");
        assert!(out.stderr.contains("Read-only"), "{mode:?}: {out:#?}");
        assert_eq!(out.stdout, fx.canary("cache"), "{mode:?}: {out:#?}");
    });
}

#[test]
fn another_project_does_not_see_a_projects_cache_writes() {
    each_fixture(|mode, fx| {
        host_cache(fx, ".npm");
        run_in(fx)
            .flag("--cache", "~/.npm")
            .sh("echo planted > ~/.npm/c.txt")
            .ok();
        let other = fx.dir.path().join("other-project");
        std::fs::create_dir(&other).unwrap();
        chown(&other, fx.mode);
        let out = run_in(fx)
            .project(&other)
            .flag("--cache", "~/.npm")
            .sh("cat ~/.npm/c.txt");
        out.ok();
        assert_eq!(out.stdout, fx.canary("cache"), "{mode:?}: {out:#?}");
    });
}

#[test]
fn a_denied_file_inside_a_cache_stays_unreadable() {
    each_fixture(|mode, fx| {
        let cache = host_cache(fx, ".npm");
        let secret = cache.join("sub/token");
        std::fs::write(&secret, fx.canary("token")).unwrap();
        chown(&secret, fx.mode);
        let before = tree_snapshot(&cache);
        let script = "cat ~/.npm/sub/token; echo x > ~/.npm/sub/token; rm -f ~/.npm/sub/token; \
                      mv ~/.npm/sub ~/.npm/moved; cat ~/.npm/moved/token ~/.npm/*/token; \
                      cp -r ~/.npm ~/.npm/copy; cat ~/.npm/copy/sub/token; echo END";
        let run = || {
            run_in(fx)
                .flag("--cache", "~/.npm")
                .flag("--deny-read", secret.as_os_str())
                .sh(script)
        };
        for _ in 0..2 {
            let out = run();
            assert!(out.stdout.contains("END"), "{mode:?}: {out:#?}");
            assert!(
                !out.both().contains(&fx.canary("token")),
                "{mode:?}: {out:#?}"
            );
        }
        assert_eq!(
            tree_snapshot(&cache),
            before,
            "{mode:?}: the host's cache changed"
        );
    });
}

#[test]
fn a_missing_host_cache_leaves_no_trace() {
    each_fixture(|mode, fx| {
        let home_before = names(&fx.home);
        let out = run_in(fx)
            .flag("--cache", "~/.yarn=YARN_CACHE_FOLDER")
            .sh("echo kept > \"$YARN_CACHE_FOLDER/f\" && echo \"$YARN_CACHE_FOLDER\"");
        out.ok();
        assert!(
            out.stdout.starts_with("/tmp/cordon-caches/"),
            "{mode:?}: {out:#?}"
        );
        assert!(
            !fx.home.join(".yarn").exists(),
            "{mode:?}: ~/.yarn was made"
        );
        // Nothing else in the home but cordon's own cache directory.
        let mut expected = home_before.clone();
        expected.push(".cache".into());
        expected.sort();
        expected.dedup();
        assert_eq!(names(&fx.home), expected, "{mode:?}");
        let out = run_in(fx)
            .flag("--cache", "~/.yarn=YARN_CACHE_FOLDER")
            .sh("cat \"$YARN_CACHE_FOLDER/f\"");
        out.ok();
        assert_eq!(out.stdout, "kept\n", "{mode:?}: {out:#?}");

        // Without a variable there is nowhere to put it: refused, and
        // nothing is made at all.
        std::fs::remove_dir_all(fx.home.join(".cache")).unwrap();
        let out = run_in(fx).flag("--cache", "~/.yarn").sh("touch marker");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(out.stderr.contains("does not exist"), "{mode:?}: {out:#?}");
        assert!(!fx.project.join("marker").exists(), "{mode:?}: it ran");
        assert_eq!(names(&fx.home), home_before, "{mode:?}");
    });
}

/// The fixture's private layers' directory.
fn layers(fx: &Fixture) -> PathBuf {
    fx.home.join(".cache/cordon/caches")
}

#[test]
fn the_private_layer_is_reachable_only_through_the_overlay() {
    each_fixture(|mode, fx| {
        host_cache(fx, ".npm");
        run_in(fx)
            .flag("--cache", "~/.npm")
            .sh("echo mine > ~/.npm/c.txt")
            .ok();
        let layers = layers(fx);
        let project_dir = layers.join(names(&layers).remove(0));
        let layer = project_dir.join(names(&project_dir).remove(0));
        let upper = layer.join("upper");
        assert_eq!(
            std::fs::read_to_string(upper.join("c.txt")).unwrap(),
            "mine\n"
        );
        let raw = upper.display().to_string();
        let script = format!(
            "cat {raw}/c.txt; ls {raw}; echo planted > {raw}/p.txt; echo planted > {raw}/c.txt; \
             mkdir -p {raw}/x; ls ~/.cache/cordon; echo END"
        );
        // Even where the cache home is writable, as the layers' directory
        // is in it.
        let cache_home = fx.home.join(".cache");
        for writable in [false, true] {
            let mut sandbox = run_in(fx).flag("--cache", "~/.npm");
            if writable {
                sandbox = sandbox.flag("--allow-write", cache_home.as_os_str());
            }
            let out = sandbox.sh(&script);
            assert!(out.stdout.contains("END"), "{mode:?}: {out:#?}");
            assert!(!out.stdout.contains("mine"), "{mode:?}: read: {out:#?}");
            assert_eq!(
                names(&upper),
                ["c.txt"],
                "{mode:?} (writable {writable}): {out:#?}"
            );
            assert_eq!(
                std::fs::read_to_string(upper.join("c.txt")).unwrap(),
                "mine\n"
            );
        }
    });
}

#[test]
fn bad_cache_entries_are_refused_with_file_line_and_key() {
    each_fixture(|mode, fx| {
        let cache = host_cache(fx, ".npm");
        let outside = fx.outside.display().to_string();
        let project = fx.project.display().to_string();
        let denied = fx.home.join(".ssh").display().to_string();
        let layers = fx.home.join(".cache/cordon").display().to_string();
        let inner = cache.join("sub").display().to_string();
        let cases: Vec<(&str, String, Vec<String>, &str)> = vec![
            ("the root", "\"/\"".into(), vec![], "root"),
            ("the home", "\"~\"".into(), vec![], "home directory"),
            ("the project", format!("{project:?}"), vec![], "project"),
            (
                "in the project",
                format!("\"{project}/deps\""),
                vec![],
                "project",
            ),
            (
                "a writable path",
                format!("{outside:?}"),
                vec!["--allow-write".into(), outside.clone()],
                "writable path",
            ),
            (
                "a denied path",
                format!("\"{denied}/keys\""),
                vec![],
                "unreadable",
            ),
            (
                "cordon's layers",
                format!("{layers:?}"),
                vec![],
                "private layers",
            ),
            ("a glob", "\"~/.cache/*\"".into(), vec![], "glob"),
            ("/tmp", "\"/tmp/x\"".into(), vec![], "sandbox's own"),
            (
                "a cache in a cache",
                format!("\"~/.npm\", {inner:?}"),
                vec![],
                "overlaps the cache",
            ),
            (
                "a bad variable",
                "{ path = \"~/.npm\", env = \"A-B\" }".into(),
                vec![],
                "A-B",
            ),
            (
                "no path",
                "{ env = \"X\" }".into(),
                vec![],
                "missing key path",
            ),
        ];
        let policy = fx.outside.join("cache.toml");
        for (what, value, flags, says) in &cases {
            std::fs::write(&policy, format!("# caches\n[files]\ncache = [{value}]\n")).unwrap();
            chown(&policy, fx.mode);
            let out = fx
                .sandbox()
                .flag("--policy", &policy)
                .args(flags)
                .sh("touch marker");
            assert_eq!(out.code, 125, "{mode:?} {what}: {out:#?}");
            let at = format!("{}:3:", policy.display());
            assert!(
                out.stderr.contains(&at),
                "{mode:?} {what}: no file:line: {out:#?}"
            );
            assert!(
                out.stderr.contains("files.cache"),
                "{mode:?} {what}: {out:#?}"
            );
            assert!(out.stderr.contains(says), "{mode:?} {what}: {out:#?}");
            assert!(
                !fx.project.join("marker").exists(),
                "{mode:?} {what}: it ran"
            );
        }
        // The same as flags name the flag.
        for flag in ["/", &project, &format!("{denied}/keys")] {
            let out = run_in(fx).flag("--cache", flag).sh("touch marker");
            assert_eq!(out.code, 125, "{mode:?} {flag}: {out:#?}");
            assert!(out.stderr.contains("--cache"), "{mode:?} {flag}: {out:#?}");
            assert!(
                !fx.project.join("marker").exists(),
                "{mode:?} {flag}: it ran"
            );
        }
        // An untrusted project file may not add one.
        let toml = fx.project.join("cordon.toml");
        std::fs::write(&toml, "[files]\ncache = [\"~/.npm\"]\n").unwrap();
        chown(&toml, fx.mode);
        let out = run_in(fx).no_project_flag().sh("touch marker");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(out.stderr.contains("cordon trust"), "{mode:?}: {out:#?}");
        assert!(!fx.project.join("marker").exists(), "{mode:?}: it ran");
    });
}

#[test]
fn a_second_run_of_the_project_at_the_same_time_writes_in_memory() {
    each_fixture(|mode, fx| {
        host_cache(fx, ".npm");
        let go = fx.project.join("go");
        let started = fx.project.join("started");
        let first = run_in(fx).flag("--cache", "~/.npm").spawn(&[
            "sh",
            "-c",
            "echo first > ~/.npm/first && touch started && while [ ! -e go ]; do sleep 0.05; done; \
             cat ~/.npm/second 2>/dev/null; echo done",
        ]);
        let deadline = std::time::Instant::now() + RUN_TIMEOUT;
        while !started.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "{mode:?}: never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let second = run_in(fx)
            .flag("--cache", "~/.npm")
            .sh("echo second > ~/.npm/second && cat ~/.npm/c.txt");
        std::fs::write(&go, "").unwrap();
        let first = first.wait();
        second.ok();
        assert_eq!(second.stdout, fx.canary("cache"), "{mode:?}: {second:#?}");
        assert!(
            second.stderr.contains("in memory"),
            "{mode:?}: no warning: {second:#?}"
        );
        first.ok();
        assert_eq!(first.stdout, "done\n", "{mode:?}: {first:#?}");
        // The first run's writes are kept; the second's are gone.
        let out = run_in(fx)
            .flag("--cache", "~/.npm")
            .sh("cat ~/.npm/first; ls ~/.npm");
        out.ok();
        assert_eq!(
            out.stdout, "first\nc.txt\nd.txt\nfirst\nsub\n",
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn npm_cache_add_writes_the_private_layer_not_the_hosts_cache() {
    if !Path::new("/usr/bin/npm").exists() {
        eprintln!("skipped: no /usr/bin/npm");
        return;
    }
    each_fixture(|mode, fx| {
        let cache = host_cache(fx, ".npm");
        let before = tree_snapshot(&cache);
        let pkg = fx.project.join("pkg");
        std::fs::create_dir(&pkg).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            "{\"name\":\"cordon-cache-canary\",\"version\":\"1.0.0\"}",
        )
        .unwrap();
        chown_tree(&fx.project, fx.mode);
        let npm = |script: &str| {
            run_in(fx)
                .env("npm_config_update_notifier", "false")
                .env("npm_config_offline", "true")
                .flag("--cache", "~/.npm")
                .sh(script)
        };
        npm("cd pkg && npm pack --silent >/dev/null && npm cache add ./cordon-cache-canary-1.0.0.tgz")
            .ok();
        assert_eq!(
            tree_snapshot(&cache),
            before,
            "{mode:?}: the host's cache changed"
        );
        let out = npm("npm cache ls");
        out.ok();
        assert!(
            out.stdout.contains("cordon-cache-canary-1.0.0.tgz"),
            "{mode:?}: {out:#?}"
        );
    });
}

#[test]
fn a_layer_on_a_file_system_without_user_xattrs_refuses_the_run() {
    if !is_root() {
        eprintln!("skipped: mounting a ramfs needs root");
        return;
    }
    let fx = Fixture::new(Mode::Root);
    let cache = host_cache(&fx, ".npm");
    let before = tree_snapshot(&cache);
    let ram = fx.outside.join("ram");
    std::fs::create_dir(&ram).unwrap();
    // ramfs keeps no user extended attributes; mounted in a mount
    // namespace of the run's own, so nothing is left mounted.
    let inner = run_in(&fx)
        .env("XDG_CACHE_HOME", ram.as_os_str())
        .flag("--cache", "~/.npm")
        .command(&["sh", "-c", "touch marker"]);
    let mut outer = std::process::Command::new("unshare");
    outer
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t ramfs ram \"$0\" && exec \"$@\"")
        .arg(&ram)
        .arg(inner.get_program())
        .args(inner.get_args())
        .env_clear()
        .envs(inner.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(&fx.project);
    let out = outer.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert!(stderr.contains("extended attributes"), "{stderr}");
    assert!(!fx.project.join("marker").exists(), "it ran");
    assert_eq!(tree_snapshot(&cache), before, "the host's cache changed");
}

#[test]
fn npm_install_fills_the_layer_and_the_next_install_runs_offline_from_it() {
    each_fixture(|mode, fx| {
        let cache = host_cache(fx, ".npm");
        let before = tree_snapshot(&cache);
        std::fs::write(
            fx.project.join("package.json"),
            "{\"name\": \"app\", \"version\": \"1.0.0\"}\n",
        )
        .unwrap();
        chown_tree(&fx.project, mode);
        let registry = StandIns::start(&fx.dir.path().join("standins"), 2);
        let npm = |extra: &[&str]| {
            let mut args = vec!["npm", "install", "--no-audit", "--no-fund"];
            args.extend_from_slice(extra);
            let url = registry.url("npm");
            args.extend(["--registry", &url, "cordon-fixture-0"]);
            run_in(fx)
                .env("npm_config_update_notifier", "false")
                .flag("--allow-domain", registry.allow("npm"))
                .flag("--cache", "~/.npm=npm_config_cache")
                .run(&args)
        };
        let module = fx.project.join("node_modules/cordon-fixture-1/index.js");
        npm(&[]).ok();
        assert!(module.is_file(), "{mode:?}");
        let served = registry.served("npm");
        assert!(
            served.contains("GET /cordon-fixture-1/-/cordon-fixture-1-1.0.0.tgz"),
            "{mode:?}: {served}"
        );
        assert_eq!(
            tree_snapshot(&cache),
            before,
            "{mode:?}: the host's cache changed"
        );

        // Installed again from nothing, offline: every tarball and
        // document comes from the layer the first run filled.
        std::fs::remove_dir_all(fx.project.join("node_modules")).unwrap();
        std::fs::remove_file(fx.project.join("package-lock.json")).unwrap();
        let out = npm(&["--offline"]);
        out.ok();
        assert!(module.is_file(), "{mode:?}: {out:#?}");
        assert_eq!(registry.served("npm"), served, "{mode:?}: went online");
        assert_eq!(
            tree_snapshot(&cache),
            before,
            "{mode:?}: the host's cache changed"
        );
    });
}

#[test]
fn pip_install_works_with_its_cache_beside_cordons_own_layers() {
    each_fixture(|mode, fx| {
        // ~/.cache/pip lies beside ~/.cache/cordon, where the layers are.
        let cache = host_cache(fx, ".cache/pip");
        let before = tree_snapshot(&cache);
        let index = StandIns::start(&fx.dir.path().join("standins"), 2);
        let out = run_in(fx)
            .flag("--allow-domain", index.allow("pypi"))
            .flag("--cache", "~/.cache/pip=PIP_CACHE_DIR")
            .sh(&format!(
                "{PY} -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check \
                 --index-url {url}/simple/ --trusted-host host.cordon.internal cordon-fixture-0 \
                 && .venv/bin/python -c 'import cordon_fixture_1; print(cordon_fixture_1.VALUE)' \
                 && .venv/bin/pip cache dir && touch \"$(.venv/bin/pip cache dir)/pip-was-here\"",
                url = index.url("pypi")
            ));
        out.ok();
        let dir = cache.display();
        assert_eq!(out.stdout, format!("1\n{dir}\n"), "{mode:?}: {out:#?}");
        assert_eq!(
            tree_snapshot(&cache),
            before,
            "{mode:?}: the host's cache changed"
        );
        let out = run_in(fx)
            .flag("--cache", "~/.cache/pip=PIP_CACHE_DIR")
            .sh("ls ~/.cache/pip");
        assert_eq!(
            out.stdout, "c.txt\nd.txt\npip-was-here\nsub\n",
            "{mode:?}: {out:#?}"
        );
    });
}
