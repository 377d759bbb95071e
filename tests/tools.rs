//! The tools an agent runs all day, for real, inside the sandbox: npm, pip,
//! cargo and git, each against a local stand-in of its registry or git
//! host (tests/py/standins.py, on the host's 127.0.0.1, reached through
//! cordon's proxy as host.cordon.internal:PORT). Each leaves the project
//! with what the command was meant to write and the home exactly as it
//! was. Each runs as root and as an unprivileged uid (cargo as root only:
//! the toolchain lives under /root, which that uid cannot enter).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::standins::StandIns;
use common::*;

/// What differs between two snapshots, one line per path.
fn changes(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let mut paths: Vec<&PathBuf> = before.keys().chain(after.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| before.get(*p) != after.get(*p))
        .map(|p| format!("{}: {:?} -> {:?}", p.display(), before.get(p), after.get(p)))
        .collect()
}

/// A sandbox of `fx` whose own state (audit log, key) is kept outside the
/// home, so the home's snapshot shows only what the command did.
fn sandbox(fx: &Fixture) -> Sandbox {
    fx.sandbox()
        .env("XDG_STATE_HOME", fx.outside.join("state").as_os_str())
        .env("XDG_CACHE_HOME", fx.outside.join("cache").as_os_str())
}

/// A tool's cache in the fixture's home, with a canary in it, owned by
/// the mode's uid: what the host's own tool reads, which must not change.
fn host_cache(fx: &Fixture, rel: &str) -> PathBuf {
    let dir = fx.home.join(rel);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("canary"), fx.canary(rel)).unwrap();
    chown_tree(&fx.home, fx.mode);
    dir
}

/// The private layers cordon kept for the fixture's project: every file
/// under them, as paths relative to the layers' directory.
fn layer_files(fx: &Fixture) -> Vec<String> {
    let root = fx.outside.join("cache/cordon/caches");
    tree_snapshot(&root)
        .into_iter()
        .filter(|(_, what)| !what.ends_with(" dir") && !what.contains(" -> "))
        .map(|(p, _)| p.display().to_string())
        .collect()
}

/// The project's `git status --porcelain` on the host.
fn status(fx: &Fixture) -> String {
    let out = fx.host_git(
        &fx.project,
        &["status", "--porcelain", "--untracked-files=normal"],
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn npm_install_inside_writes_the_project_and_leaves_the_home_as_it_was() {
    each_fixture(|mode, fx| {
        git_project(fx);
        std::fs::write(
            fx.project.join("package.json"),
            "{\"name\": \"app\", \"version\": \"1.0.0\"}\n",
        )
        .unwrap();
        fx.host_git(&fx.project, &["add", "."]);
        fx.host_git(&fx.project, &["commit", "-q", "-m", "package.json"]);
        chown_tree(&fx.project, mode);
        let registry = StandIns::start(&fx.dir.path().join("standins"), 3);
        host_cache(fx, ".npm");
        let home = tree_snapshot(&fx.home);
        // The preset's cache: npm's own ~/.npm, writable into a layer.
        let out = sandbox(fx)
            .flag("--preset", "npm")
            .flag("--allow-domain", registry.allow("npm"))
            .run(&[
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--registry",
                &registry.url("npm"),
                "cordon-fixture-0",
            ]);
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        for i in 0..3 {
            let tarball = format!("GET /cordon-fixture-{i}/-/cordon-fixture-{i}-1.0.0.tgz");
            assert!(
                registry.served("npm").contains(&tarball),
                "{mode:?}: {tarball}"
            );
            let module = fx
                .project
                .join(format!("node_modules/cordon-fixture-{i}/index.js"));
            assert!(module.is_file(), "{mode:?}: {module:?}: {out:#?}");
        }
        assert_eq!(
            status(fx),
            " M package.json\n?? node_modules/\n?? package-lock.json\n",
            "{mode:?}"
        );
        // npm kept what it fetched in the preset's layer, not in ~/.npm.
        let kept = layer_files(fx);
        assert!(
            kept.iter()
                .any(|p| p.contains("/upper/_cacache/content-v2/")),
            "{mode:?}: {kept:?}"
        );
        assert_eq!(
            changes(&home, &tree_snapshot(&fx.home)),
            Vec::<String>::new(),
            "{mode:?}"
        );
    });
}

#[test]
fn pip_install_inside_a_venv_in_the_project_leaves_the_home_as_it_was() {
    each_fixture(|mode, fx| {
        let index = StandIns::start(&fx.dir.path().join("standins"), 3);
        // No ~/.cache/pip on this host: the preset's variable points pip
        // at a stand-in, and nothing is made in the home.
        let home = tree_snapshot(&fx.home);
        let out = sandbox(fx)
            .flag("--preset", "pypi")
            .flag("--allow-domain", index.allow("pypi"))
            .sh(&format!(
                "{PY} -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check \
                 --index-url {url}/simple/ --trusted-host host.cordon.internal cordon-fixture-0 \
                 && .venv/bin/python -c 'import cordon_fixture_0, cordon_fixture_2; print(\"imported:\", cordon_fixture_2.VALUE)' \
                 && touch \"$(.venv/bin/pip cache dir)/cordon-marker\" && echo 'cache: writable'",
                url = index.url("pypi")
            ));
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "imported"), "2", "{mode:?}: {out:#?}");
        assert!(
            index
                .served("pypi")
                .contains("GET /files/cordon_fixture_2-1.0.0-py3-none-any.whl"),
            "{mode:?}"
        );
        // pip's cache is the preset's layer (the stand-in answers with no
        // caching headers, so pip keeps nothing of its own there).
        assert_eq!(line(&out, "cache"), "writable", "{mode:?}: {out:#?}");
        let kept = layer_files(fx);
        assert!(
            kept.iter()
                .any(|p| p.contains("/pip-") && p.ends_with("cordon-marker")),
            "{mode:?}: {kept:?}"
        );
        // The venv works on the host as well.
        let host = fx
            .host_cmd(&fx.project.join(".venv/bin/python").display().to_string())
            .args([
                "-c",
                "import cordon_fixture_1; print(cordon_fixture_1.VALUE)",
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&host.stdout),
            "1\n",
            "{mode:?}: {host:?}"
        );
        assert_eq!(
            changes(&home, &tree_snapshot(&fx.home)),
            Vec::<String>::new(),
            "{mode:?}"
        );
    });
}

#[test]
fn cargo_fetch_inside_resolves_and_downloads_from_a_sparse_registry() {
    // The toolchain is under /root, closed to the unprivileged uid.
    if !is_root() {
        return;
    }
    let fx = Fixture::new(Mode::Root);
    let registry = StandIns::start(&fx.dir.path().join("standins"), 3);
    std::fs::create_dir(fx.project.join("src")).unwrap();
    std::fs::write(fx.project.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        fx.project.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\ncordon-fixture-0 = { version = \"1\", registry = \"local\" }\n",
    )
    .unwrap();
    host_cache(&fx, ".cargo/registry");
    let home = tree_snapshot(&fx.home);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // rustc beside cargo, as rustup installs them.
    let bin = Path::new(&cargo)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let rustup = std::env::var("RUSTUP_HOME").unwrap_or_else(|_| "/root/.rustup".into());
    let out = sandbox(&fx)
        .flag("--preset", "crates")
        .flag("--allow-domain", registry.allow("cargo"))
        .env("RUSTUP_HOME", rustup)
        .env("PATH", format!("{}:{PATH}", bin.display()))
        .env(
            "CARGO_REGISTRIES_LOCAL_INDEX",
            format!("sparse+{}/index/", registry.url("cargo")),
        )
        .run(&[&cargo, "fetch"]);
    assert_eq!(out.code, 0, "{out:#?}");
    let lock = std::fs::read_to_string(fx.project.join("Cargo.lock")).unwrap();
    for i in 0..3 {
        assert!(
            lock.contains(&format!("name = \"cordon-fixture-{i}\"")),
            "{lock}"
        );
        let download = format!("GET /dl/cordon-fixture-{i}/1.0.0/download");
        assert!(registry.served("cargo").contains(&download), "{download}");
    }
    assert_eq!(
        changes(&home, &tree_snapshot(&fx.home)),
        Vec::<String>::new()
    );
    // cargo kept the .crate files in the preset's layer of ~/.cargo/registry.
    let kept = layer_files(&fx);
    assert!(
        kept.iter()
            .any(|p| p.ends_with("cordon-fixture-2-1.0.0.crate")),
        "{kept:?}"
    );
}

#[test]
fn git_clone_then_commit_inside_a_repository_and_the_clone_works_on_the_host() {
    each_fixture(|mode, fx| {
        git_project(fx);
        let host = StandIns::start(&fx.dir.path().join("standins"), 1);
        // The repository the stand-in serves, made on the host by the
        // stand-in's own user.
        let work = host.dir.join("upstream");
        std::fs::create_dir(&work).unwrap();
        std::fs::write(work.join("lib.txt"), "upstream\n").unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let done = std::process::Command::new("git")
                .args(GIT_IDENTITY)
                .args(args)
                .current_dir(dir)
                .status()
                .unwrap();
            assert!(done.success(), "git {args:?}");
        };
        git(&work, &["init", "-q", "-b", "main"]);
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", "upstream"]);
        git(&work, &["clone", "-q", "--bare", ".", "../git/lib.git"]);
        let home = tree_snapshot(&fx.home);
        let before = status(fx);
        let out = sandbox(fx)
            .flag("--allow-domain", host.allow("git"))
            .sh(&format!(
                "git clone -q {url}/lib.git lib && cd lib \
                 && git config user.name Inside && git config user.email in@side.example \
                 && echo change >> lib.txt && git commit -q -am inside && echo 'committed: yes' \
                 && git -C .. status --porcelain | sed 's/^/inside: /'",
                url = host.url("git")
            ));
        assert_eq!(out.code, 0, "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "committed"), "yes", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "inside"), "?? lib/", "{mode:?}: {out:#?}");
        assert!(host.served("git").contains("git-upload-pack"), "{mode:?}");
        // On the host: the clone is a working repository with both commits,
        // and the project shows the clone and nothing else.
        let log = fx.host_git(&fx.project.join("lib"), &["log", "--format=%s %an"]);
        assert_eq!(
            String::from_utf8_lossy(&log.stdout),
            "inside Inside\nupstream t\n",
            "{mode:?}"
        );
        assert_eq!(status(fx), format!("{before}?? lib/\n"), "{mode:?}");
        assert_eq!(
            changes(&home, &tree_snapshot(&fx.home)),
            Vec::<String>::new(),
            "{mode:?}"
        );
    });
}
