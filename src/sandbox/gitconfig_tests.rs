use super::*;

/// [`super::check_update`] of a config whose remotes and submodules at
/// the run's start were those of `old`.
fn check_update(old: &[u8], new: &[u8], file: &Path) -> Result<(), UpdateRefused> {
    super::check_update(old, new, file, &Existing::of(old))
}
use std::process::Command;

/// (key, value) pairs of a config text.
fn pairs(text: &str) -> Vec<(String, Option<String>)> {
    parse(text.as_bytes(), Path::new("t"))
        .unwrap()
        .into_iter()
        .map(|p| (p.key, p.value))
        .collect()
}

fn pair(key: &str, value: &str) -> (String, Option<String>) {
    (key.to_string(), Some(value.to_string()))
}

/// The line a syntax error names; panics on success.
fn syntax_error_line(text: &[u8]) -> usize {
    match parse(text, Path::new("t")) {
        Err(GitConfigError::Syntax { line, .. }) => line,
        other => panic!("{:?} parsed: {other:?}", String::from_utf8_lossy(text)),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// A repository layout under `dir`: work tree `dir/wt`, git dir
/// `dir/wt/.git`, home `dir/home`.
fn repo_in(dir: &Path) -> Repo {
    Repo {
        git_dir: dir.join("wt/.git"),
        work_tree: Some(dir.join("wt")),
        home: Some(dir.join("home")),
    }
}

fn entry(key: &str, value: Option<&str>) -> Entry {
    Entry {
        key: key.into(),
        value: value.map(str::to_string),
        file: PathBuf::from("/r/wt/.git/config"),
        line: 7,
    }
}

fn fixed_repo() -> Repo {
    Repo {
        git_dir: PathBuf::from("/r/wt/.git"),
        work_tree: Some(PathBuf::from("/r/wt")),
        home: Some(PathBuf::from("/home/u")),
    }
}

/// The paths `key = value` makes git read or run, in the fixed repo.
fn paths_of(key: &str, value: Option<&str>) -> Vec<(String, bool)> {
    code_paths(&[entry(key, value)], &fixed_repo())
        .unwrap()
        .into_iter()
        .map(|c| {
            assert_eq!((c.key.as_str(), c.line), (key, 7));
            (c.path.to_string_lossy().into_owned(), c.is_dir)
        })
        .collect()
}

fn files(paths: &[&str]) -> Vec<(String, bool)> {
    paths.iter().map(|p| (p.to_string(), false)).collect()
}

fn value_error(key: &str, value: &str) -> String {
    match code_paths(&[entry(key, Some(value))], &fixed_repo()) {
        Err(e @ GitConfigError::Value { .. }) => e.to_string(),
        other => panic!("{key} = {value}: {other:?}"),
    }
}

// --- syntax ---------------------------------------------------------------

#[test]
fn sections_subsections_and_keys_are_normalised_as_git_does() {
    let text = "[Core]\n\tFileMode = true\n[Remote \"Origin\"]\nURL = x\n\
                [sec.Legacy]\nK = 1\n[a \"q\\\"b\\\\c\\d\"]\nk = 2\n[x-y]z-9 = 3\n";
    assert_eq!(
        pairs(text),
        vec![
            pair("core.filemode", "true"),
            pair("remote.Origin.url", "x"),
            pair("sec.legacy.k", "1"),
            pair("a.q\"b\\cd.k", "2"),
            pair("x-y.z-9", "3"),
        ]
    );
}

#[test]
fn values_resolve_quotes_escapes_comments_and_whitespace() {
    let text = "[a]\n\
        plain =   spaced  words   \n\
        quoted = \"  kept  \" tail \n\
        hash = a#b\n\
        semi = a;b\n\
        inquote = \"a#b;c\"  # comment\n\
        escapes = \\t\\n\\b\\\"\\\\\n\
        cont = one\\\n  two\n\
        mixed = a\" b \"c\n\
        empty =\n\
        emptyq = \"\"\n\
        bare\n\
        bare2 ; a comment after a bare key is bad, so not here\n";
    let text = text.replace(
        "bare2 ; a comment after a bare key is bad, so not here\n",
        "",
    );
    assert_eq!(
        pairs(&text),
        vec![
            pair("a.plain", "spaced  words"),
            pair("a.quoted", "  kept   tail"),
            pair("a.hash", "a"),
            pair("a.semi", "a"),
            pair("a.inquote", "a#b;c"),
            pair("a.escapes", "\t\n\x08\"\\"),
            pair("a.cont", "one  two"),
            pair("a.mixed", "a b c"),
            pair("a.empty", ""),
            pair("a.emptyq", ""),
            ("a.bare".to_string(), None),
        ]
    );
}

#[test]
fn bom_crlf_same_line_sections_and_keys_before_any_section() {
    let text = "\u{feff}top = 1\r\n[a] k = v\r\n[b]j\r\n[c][d]m=\"x\"\r\n# c\r\n; c\r\n";
    assert_eq!(
        pairs(text),
        vec![
            pair("top", "1"),
            pair("a.k", "v"),
            ("b.j".to_string(), None),
            pair("d.m", "x"),
        ]
    );
    // A lone CR is whitespace, trimmed at a value's end.
    assert_eq!(pairs("[a]\nk = v\r"), vec![pair("a.k", "v")]);
}

#[test]
fn entries_know_their_first_line() {
    let parsed = parse(b"# c\n[a]\nk = 1\\\n2\nj = 3\n", Path::new("t")).unwrap();
    let lines: Vec<_> = parsed.iter().map(|p| (p.key.as_str(), p.line)).collect();
    assert_eq!(lines, vec![("a.k", 3), ("a.j", 5)]);
}

#[test]
fn bad_syntax_is_an_error_with_its_line() {
    let cases: &[(&[u8], usize)] = &[
        (b"[a]\nk = \"open\n", 2),
        (b"[a]\nk = \\q\n", 2),
        (b"[a]\nk ; comment\n", 2),
        (b"[a]\n1k = v\n", 2),
        (b"[a]\nk: v\n", 2),
        (b"[]\n", 1),
        (b"[a \"b]\n", 1),
        (b"[a \"b\" ]\n", 1),
        (b"[a\"b\"]\n", 1),
        (b"[a b]\n", 1),
        (b"[a_b]\n", 1),
        (b"[a\n", 1),
        (b"\n\n[a]\nk = a\0b\n", 4),
        (b"\xef\xbbk = v\n", 1),
        (b"[a]\nk = \xff\n", 2),
    ];
    for (text, line) in cases {
        assert_eq!(
            syntax_error_line(text),
            *line,
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
    let e = parse(b"[a]\nk = \"x\n", Path::new("/r/c"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/r/c:2"), "{e}");
}

// --- reading with includes ------------------------------------------------

#[test]
fn includes_resolve_relative_home_and_nested_in_git_order() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_in(dir.path());
    write(dir.path(), "home/inc/h", "[h]\nk = home\n");
    write(dir.path(), "etc/sub/nested", "[n]\nk = nested\n");
    write(
        dir.path(),
        "etc/rel",
        "[r]\nk = rel\n[include]\npath = sub/nested\n",
    );
    let top = write(
        dir.path(),
        "etc/top",
        "[t]\na = 1\n[include]\npath = rel\npath = ~/inc/h\npath = missing\n[t]\nb = 2\n",
    );
    let got: Vec<_> = read(&top, &repo)
        .unwrap()
        .into_iter()
        .map(|e| {
            format!(
                "{}={}@{}",
                e.key,
                e.value.unwrap(),
                e.file.file_name().unwrap().to_string_lossy()
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            "t.a=1@top",
            "include.path=rel@top",
            "r.k=rel@rel",
            "include.path=sub/nested@rel",
            "n.k=nested@nested",
            "include.path=~/inc/h@top",
            "h.k=home@h",
            "include.path=missing@top",
            "t.b=2@top",
        ]
    );
}

#[test]
fn every_conditional_include_is_followed_and_others_are_not_includes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_in(dir.path());
    let conditions = [
        "gitdir:/nowhere/",
        "gitdir/i:~/Nowhere/",
        "onbranch:no-such-branch",
        "hasconfig:remote.*.url:https://nowhere/**",
    ];
    let mut top = String::new();
    for (i, cond) in conditions.iter().enumerate() {
        write(dir.path(), &format!("c{i}"), &format!("[c{i}]\nk = {i}\n"));
        top.push_str(&format!("[includeIf \"{cond}\"]\npath = c{i}\n"));
    }
    write(dir.path(), "never", "[never]\nk = x\n");
    top.push_str("[include \"sub\"]\npath = never\n[includeIf]\npath = never\n");
    let top = write(dir.path(), "top", &top);
    let keys: Vec<_> = read(&top, &repo)
        .unwrap()
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert!(!keys.contains(&"never.k".to_string()), "{keys:?}");
    for i in 0..conditions.len() {
        assert!(keys.contains(&format!("c{i}.k")), "{i}: {keys:?}");
    }
}

#[test]
fn include_cycles_stop_and_depth_past_gits_limit_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_in(dir.path());
    write(dir.path(), "b", "[b]\nk = 1\n[include]\npath = ./a\n");
    let a = write(dir.path(), "a", "[a]\nk = 1\n[include]\npath = b\n");
    let keys: Vec<_> = read(&a, &repo)
        .unwrap()
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(keys, ["a.k", "include.path", "b.k", "include.path"]);

    // A chain of 10 includes is what git allows; 11 is refused.
    for (len, ok) in [(10, true), (11, false)] {
        let chain = dir.path().join(format!("chain{len}"));
        for i in 0..len {
            write(
                &chain,
                &format!("f{i}"),
                &format!("[include]\npath = f{}\n", i + 1),
            );
        }
        write(&chain, &format!("f{len}"), "[end]\nk = 1\n");
        let got = read(&chain.join("f0"), &repo);
        assert_eq!(got.is_ok(), ok, "{len}: {got:?}");
        if let Err(e) = got {
            assert!(e.to_string().contains("limit of 10"), "{e}");
        }
    }
}

#[test]
fn includes_git_refuses_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_in(dir.path());
    std::fs::create_dir(dir.path().join("d")).unwrap();
    for (text, needle) in [
        ("[include]\npath = d\n", "not a regular file"),
        ("[include]\npath =\n", "not a regular file"),
        ("[include]\npath\n", "has no value"),
        ("[include]\npath = ~no-such-user-here/x\n", "no user"),
        ("[include]\npath = %(prefix)/etc/x\n", "install prefix"),
    ] {
        let top = write(dir.path(), "top", text);
        let e = read(&top, &repo).unwrap_err().to_string();
        assert!(e.contains(needle) && e.contains("top:2"), "{text:?}: {e}");
    }
    let no_home = Repo { home: None, ..repo };
    let top = write(dir.path(), "top", "[include]\npath = ~/x\n");
    let e = read(&top, &no_home).unwrap_err().to_string();
    assert!(e.contains("home directory"), "{e}");
}

#[test]
fn config_files_follow_gits_order_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let repo = repo_in(d);
    let sys = write(d, "sys", "");
    let xdg = write(d, "home/.config/git/config", "");
    let dot = write(d, "home/.gitconfig", "");
    let local = write(d, "wt/.git/config", "");
    let env_none = |_: &str| None;
    // /etc/gitconfig may or may not exist here: compare the rest.
    let got = config_files_in(&repo, &env_none).unwrap();
    let etc = Path::new("/etc/gitconfig");
    let got: Vec<_> = got.into_iter().filter(|f| f != etc).collect();
    assert_eq!(got, [xdg.clone(), dot.clone(), local.clone()]);

    let worktree = write(d, "wt/.git/config.worktree", "");
    let custom = write(d, "global", "");
    let xdg_other = write(d, "xdg/git/config", "");
    let env = |name: &str| -> Option<OsString> {
        match name {
            "GIT_CONFIG_SYSTEM" => Some(sys.clone().into()),
            "XDG_CONFIG_HOME" => Some(d.join("xdg").into()),
            _ => None,
        }
    };
    let got = config_files_in(&repo, &env).unwrap();
    assert_eq!(
        got,
        [sys.clone(), xdg_other, dot, local.clone(), worktree.clone()]
    );

    let env = |name: &str| -> Option<OsString> {
        match name {
            "GIT_CONFIG_NOSYSTEM" => Some("1".into()),
            "GIT_CONFIG_SYSTEM" => Some(sys.clone().into()),
            "GIT_CONFIG_GLOBAL" => Some(custom.clone().into()),
            _ => None,
        }
    };
    let got = config_files_in(&repo, &env).unwrap();
    assert_eq!(got, [custom, local.clone(), worktree]);

    // A linked worktree: the shared config lives in the common dir.
    let linked = d.join("wt/.git/worktrees/other");
    write(&linked, "commondir", "../..\n");
    let own = write(&linked, "config.worktree", "");
    let repo = Repo {
        git_dir: linked,
        work_tree: Some(d.join("other")),
        home: None,
    };
    let got = config_files_in(&repo, &|n| {
        (n == "GIT_CONFIG_NOSYSTEM").then(|| "true".into())
    })
    .unwrap();
    assert_eq!(got, [local, own]);
}

// --- code paths -----------------------------------------------------------

#[test]
fn hooks_path_is_reported_against_both_the_work_tree_and_the_git_dir() {
    assert_eq!(
        paths_of("core.hookspath", Some(".githooks")),
        [
            ("/r/wt/.githooks".into(), true),
            ("/r/wt/.git/.githooks".into(), true)
        ]
    );
    assert_eq!(
        paths_of("core.hookspath", Some("/abs/h")),
        [("/abs/h".into(), true)]
    );
    assert_eq!(
        paths_of("core.hookspath", Some("~/h")),
        [("/home/u/h".into(), true)]
    );
    assert_eq!(
        paths_of("core.hookspath", Some("~root/h")),
        [("/root/h".into(), true)]
    );
    let bare = Repo {
        work_tree: None,
        ..fixed_repo()
    };
    let got = code_paths(&[entry("core.hookspath", Some("../h"))], &bare).unwrap();
    let got: Vec<_> = got
        .iter()
        .map(|c| (c.path.to_str().unwrap(), c.is_dir))
        .collect();
    assert_eq!(got, [("/r/wt/.git", false), ("/r/wt/h", true)]);
}

#[test]
fn file_and_directory_keys_resolve_as_git_resolves_them() {
    let both = |name: &str| vec![format!("/r/wt/{name}"), format!("/r/wt/.git/{name}")];
    for key in [
        "core.excludesfile",
        "core.attributesfile",
        "commit.template",
        "mailmap.file",
        "blame.ignorerevsfile",
        "http.sslcainfo",
        "http.https://h/.sslcert",
        "gpg.ssh.allowedsignersfile",
        "fetch.fsck.skiplist",
        "diff.orderfile",
        "http.proxysslcainfo",
    ] {
        let want: Vec<_> = both("x/f").into_iter().map(|p| (p, false)).collect();
        assert_eq!(paths_of(key, Some("./x//f")), want, "{key}");
    }
    for key in ["init.templatedir", "http.sslcapath"] {
        let want: Vec<_> = both("t").into_iter().map(|p| (p, true)).collect();
        assert_eq!(paths_of(key, Some("t")), want, "{key}");
    }
    assert_eq!(
        paths_of("core.worktree", Some("../../elsewhere")),
        [
            ("/r/wt/.git".into(), false),
            ("/r/wt".into(), false),
            ("/r/elsewhere".into(), true)
        ]
    );
    assert_eq!(
        paths_of("core.excludesfile", Some(":(optional)~/ign")),
        files(&[
            "/r/wt/:(optional)~/ign",
            "/r/wt/.git/:(optional)~/ign",
            "/home/u/ign"
        ])
    );
    assert_eq!(
        paths_of("trace2.eventtarget", Some("/tmp/t")),
        files(&["/tmp/t"])
    );
    assert_eq!(
        paths_of("trace2.perftarget", Some("af_unix:dgram:/run/s")),
        files(&["/run/s"])
    );
    assert!(paths_of("trace2.normaltarget", Some("2")).is_empty());
    assert!(paths_of("user.name", Some("a/b")).is_empty());
}

#[test]
fn include_targets_are_reported_even_when_missing() {
    let mut include = entry("include.path", Some("../shared/extra"));
    include.file = PathBuf::from("/r/wt/.git/config");
    let cond = Entry {
        key: "includeif.gitdir:/x/.path".into(),
        value: Some("~/inc".into()),
        ..include.clone()
    };
    let got = code_paths(&[include, cond], &fixed_repo()).unwrap();
    let got: Vec<_> = got.iter().map(|c| c.path.to_str().unwrap()).collect();
    assert_eq!(got, ["/r/wt/.git", "/r/wt/shared/extra", "/home/u/inc"]);
}

#[test]
fn core_worktree_adds_its_tree_to_where_relative_paths_resolve() {
    let entries = [
        entry("core.worktree", Some("/elsewhere")),
        entry("core.hookspath", Some("h")),
    ];
    let got: Vec<_> = code_paths(&entries, &fixed_repo())
        .unwrap()
        .into_iter()
        .map(|c| c.path.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        got,
        ["/elsewhere", "/r/wt/h", "/r/wt/.git/h", "/elsewhere/h"]
    );
}

#[test]
fn dot_dot_after_a_symlink_resolves_as_the_kernel_does() {
    // The layout of a symlinked `.git`: `wt/.git -> ../store/p.git`.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(d.join("store/p.git")).unwrap();
    std::fs::create_dir_all(d.join("wt")).unwrap();
    std::os::unix::fs::symlink("../store/p.git", d.join("wt/.git")).unwrap();
    let config = write(
        &d,
        "wt/.git/config",
        "[include]\npath = ../shared\n[core]\nworktree = ..\n",
    );
    let repo = Repo {
        git_dir: d.join("wt/.git"),
        work_tree: Some(d.join("wt")),
        home: None,
    };
    let entries = read(&config, &repo).unwrap();
    let got: Vec<_> = code_paths(&entries, &repo)
        .unwrap()
        .into_iter()
        .map(|c| (c.key, c.path, c.is_dir))
        .collect();
    let key = |k: &str| k.to_string();
    assert_eq!(
        got,
        [
            (key("include.path"), d.join("wt/.git"), false),
            (key("include.path"), d.join("store/shared"), false),
            (key("core.worktree"), d.join("wt/.git"), false),
            (key("core.worktree"), d.join("store"), true),
        ]
    );
    // What git itself opens for that include.
    write(&d, "store/shared", "[from]\nshared = yes\n");
    let keys: Vec<_> = read(&config, &repo)
        .unwrap()
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert!(keys.contains(&key("from.shared")), "{keys:?}");
    let git = git_list(&config, &d, &["--includes"]);
    assert!(git.contains(&pair("from.shared", "yes")), "{git:?}");
}

#[test]
fn every_command_key_reports_the_files_its_command_names() {
    let keys = [
        "core.sshcommand",
        "core.editor",
        "core.pager",
        "core.askpass",
        "core.gitproxy",
        "core.alternaterefscommand",
        "core.fsmonitor",
        "sequence.editor",
        "diff.external",
        "diff.pdf.command",
        "diff.pdf.textconv",
        "difftool.kd.cmd",
        "mergetool.kd.cmd",
        "merge.ours.driver",
        "filter.crypt.clean",
        "filter.crypt.smudge",
        "filter.crypt.process",
        "credential.helper",
        "credential.https://h.helper",
        "gpg.ssh.defaultkeycommand",
        "interactive.difffilter",
        "uploadpack.packobjectshook",
        "remote.origin.uploadpack",
        "remote.origin.receivepack",
        "sendemail.tocmd",
        "sendemail.work.cccmd",
        "sendemail.sendmailcmd",
        "browser.ff.cmd",
        "man.m.cmd",
        "guitool.t.cmd",
        "instaweb.httpd",
        "imap.tunnel",
        "tar.tgz.command",
        "gc.recentobjectshook",
        "hook.pre-commit.command",
        "svn.authorsprog",
        "lfs.extension.x.clean",
        "pager.log",
    ];
    for key in keys {
        assert_eq!(
            paths_of(key, Some("./bin/tool --flag x")),
            files(&["/r/wt/bin/tool", "/r/wt/.git/bin/tool"]),
            "{key}"
        );
    }
    for (key, value) in [
        ("alias.x", "!./bin/tool"),
        ("submodule.s.update", "!./bin/tool"),
        ("remote.origin.url", "ext::./bin/tool %S"),
        ("branch.main.remote", "ext::./bin/tool %S"),
        ("branch.main.pushremote", "ext::./bin/tool %S"),
        ("gpg.program", "./bin/tool"),
        ("gpg.x509.program", "./bin/tool"),
        ("difftool.kd.path", "./bin/tool"),
        ("lfs.customtransfer.t.path", "./bin/tool"),
        ("sendemail.smtpserver", "./bin/tool"),
        ("url.ext::./bin/tool %S.insteadof", "https://"),
    ] {
        assert_eq!(
            paths_of(key, Some(value)),
            files(&["/r/wt/bin/tool", "/r/wt/.git/bin/tool"]),
            "{key}"
        );
    }
    // Not commands: a git alias, a named helper, a plain URL, booleans.
    for (key, value) in [
        ("alias.lg", "log --graph ./x"),
        ("submodule.s.update", "rebase"),
        ("remote.origin.url", "https://host/a/b"),
        ("branch.main.remote", "origin"),
        ("credential.helper", "store"),
        ("gpg.program", "gpg2"),
        ("core.fsmonitor", "true"),
        ("core.fsmonitor", "0"),
        ("core.fsmonitor", "-2k"),
        ("core.fsmonitor", "Off"),
        ("pager.log", "false"),
        ("core.pager", "less -FRX"),
        ("url.https://mirror/.insteadof", "https://h/"),
    ] {
        assert!(paths_of(key, Some(value)).is_empty(), "{key} = {value}");
    }
    assert!(paths_of("pager.log", None).is_empty());
}

#[test]
fn command_words_name_programs_arguments_and_scripts() {
    let wt = |p: &str| vec![format!("/r/wt/{p}"), format!("/r/wt/.git/{p}")];
    let cases: &[(&str, Vec<String>)] = &[
        ("/usr/bin/less -R", vec!["/usr/bin/less".into()]),
        ("~/bin/pager", vec!["/home/u/bin/pager".into()]),
        (
            "ssh -F ./ssh/config -i ~/.ssh/k",
            [wt("ssh/config"), vec!["/home/u/.ssh/k".into()]].concat(),
        ),
        ("python3 tools/conv.py", wt("tools/conv.py")),
        ("sh hook.sh", wt("hook.sh")),
        // A word with a space is also looked into as a script (`sh -c`).
        ("'./my tool' x", [wt("my tool"), wt("my")].concat()),
        ("\"./a\\\"b\" x", wt("a\"b")),
        ("./a\\ b", [wt("a b"), wt("a")].concat()),
        ("helper --file=~/creds", vec!["/home/u/creds".into()]),
        ("helper --file='~/creds'", wt("~/creds")),
        ("FOO=1 ./run", wt("run")),
        (
            "cd sub && ./x; ../y | z/w",
            // `..` steps back over the run dirs: those names count too.
            [
                wt("x"),
                vec![
                    "/r/wt".into(),
                    "/r/y".into(),
                    "/r/wt/.git".into(),
                    "/r/wt/y".into(),
                ],
                wt("z/w"),
            ]
            .concat(),
        ),
        ("f() { ./g \"$@\"; }; f", wt("g")),
        ("sh -c 'a; ./inner'", wt("inner")),
        ("echo $(./sub) `./bq`", [wt("sub"), wt("bq")].concat()),
        ("curl https://h/x/y", vec![]),
        ("$HOME/bin/t", vec!["/home/u/bin/t".into()]),
        ("${HOME}/bin/t", vec!["/home/u/bin/t".into()]),
        ("git log origin/$1", wt("origin")),
        ("less # ./not-run", vec![]),
    ];
    for (command, want) in cases {
        let got: Vec<String> = paths_of("core.pager", Some(command))
            .into_iter()
            .map(|p| p.0)
            .collect();
        assert_eq!(&got, want, "{command}");
    }
    let got = paths_of("core.pager", Some("./tools/$X"));
    assert_eq!(
        got,
        [
            ("/r/wt/tools".into(), true),
            ("/r/wt/.git/tools".into(), true)
        ]
    );
}

#[test]
fn commands_that_cannot_be_interpreted_are_errors() {
    for (value, needle) in [
        ("./x 'open", "unterminated"),
        ("\"./x", "unterminated"),
        ("$TOOLS/x", "shell expansion"),
        ("/$X/y", "shell expansion"),
        ("~no-such-user-here/bin/x", "no user"),
    ] {
        let e = value_error("core.pager", value);
        assert!(
            e.contains(needle) && e.contains("config:7: core.pager"),
            "{value}: {e}"
        );
    }
    // A quote in a nested script is not the command's own syntax.
    assert!(paths_of("alias.c", Some("!git commit -m \"it's done\"")).is_empty());
}

// --- neutralise -----------------------------------------------------------

#[test]
fn neutralise_keeps_the_allowlist_and_the_structure() {
    let text = "# made by git init\n[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\
        \tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://h/r.git\n\
        \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\
        \tmerge = refs/heads/main\n[user]\n\tname = A\n[extensions]\n\tobjectformat = sha256\n\
        [index]\n\tversion = 4\n[pack]\n\twindow = 10\n[submodule \"s\"]\n\turl = git@h:s.git\n\
        \tactive = true\n[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\trequired = true\n";
    let (out, removed) = neutralise(text, Path::new("c")).unwrap();
    assert_eq!(out, text);
    assert!(removed.is_empty(), "{removed:?}");
}

#[test]
fn neutralise_removes_every_dangerous_kind() {
    let dangerous = [
        ("core", "hooksPath = .h"),
        ("core", "fsmonitor = ./m"),
        ("core", "worktree = .."),
        ("core", "sshCommand = ./s"),
        ("core", "pager = ./p"),
        ("core", "editor = ./e"),
        ("core", "excludesFile = ./x"),
        ("core", "attributesFile = ./x"),
        ("core", "askPass = ./a"),
        ("core", "gitProxy = ./g"),
        ("include", "path = ../x"),
        ("includeIf \"gitdir:/\"", "path = ../x"),
        ("filter \"x\"", "smudge = ./s"),
        ("filter \"lfs\"", "smudge = ./evil"),
        ("diff \"x\"", "textconv = ./t"),
        ("merge \"x\"", "driver = ./d"),
        ("alias", "st = !./a"),
        ("credential", "helper = !./c"),
        ("gpg", "program = ./g"),
        ("commit", "gpgSign = true"),
        ("protocol \"ext\"", "allow = always"),
        ("protocol", "allow = always"),
        ("url \"ext::./x \"", "insteadOf = https://"),
        ("remote \"origin\"", "url = ext::./x"),
        ("remote \"origin\"", "pushurl = fd::7"),
        ("branch \"main\"", "remote = ext::./x"),
        ("branch \"main\"", "pushRemote = transport::x"),
        ("remote \"origin\"", "url = evil::h/x"),
        ("remote \"origin\"", "url = weird://h/x"),
        ("remote \"origin\"", "url = HTTPS://h/x"),
        ("submodule \"s\"", "url = File:///x"),
        ("remote \"origin\"", "url = --upload-pack=./x"),
        ("remote \"origin\"", "uploadpack = ./u"),
        ("remote \"origin\"", "vcs = x"),
        ("remote \"origin\"", "proxy = http://h:1"),
        ("submodule \"s\"", "update = !./u"),
        ("submodule \"s\"", "url = ext::./x"),
        ("http", "sslVerify = false"),
        ("extensions", "worktreeConfig = true"),
        ("uploadpack", "packObjectsHook = ./h"),
        ("gc", "recentObjectsHook = ./h"),
        ("sequence", "editor = ./e"),
        ("init", "templateDir = ./t"),
        ("pack \"x\"", "window = 1"),
        ("user", "signingKey = ./k"),
    ];
    for (section, line) in dangerous {
        let text = format!(
            "[core]\n\tbare = false\n[{section}]\n\t{line}\n\tzzz = 1\n[user]\n\tname = A\n"
        );
        let (out, removed) = neutralise(&text, Path::new("c")).unwrap();
        let keys: Vec<_> = removed.iter().map(|r| (r.key.as_str(), r.line)).collect();
        assert_eq!(keys.len(), 2, "{section} {line}: {keys:?}");
        assert_eq!(keys[0].1, 4, "{section} {line}");
        let left = pairs(&out);
        assert_eq!(
            left,
            vec![pair("core.bare", "false"), pair("user.name", "A")],
            "{section} {line}:\n{out}"
        );
        assert!(out.contains(&format!("[{section}]\n")), "{out}");
    }
}

#[test]
fn neutralise_keeps_a_header_that_shares_the_line_and_takes_continuations() {
    let text = "[core] hooksPath = a\\\n  b\n[core]bare = true\n[alias] x = !evil\n";
    let (out, removed) = neutralise(text, Path::new("c")).unwrap();
    assert_eq!(out, "[core]\n[core]bare = true\n[alias]\n");
    let keys: Vec<_> = removed.iter().map(|r| (r.key.as_str(), r.line)).collect();
    assert_eq!(keys, [("core.hookspath", 1), ("alias.x", 4)]);
    let e = neutralise("[core\n", Path::new("/r/c"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/r/c:1"), "{e}");
}

// --- against the real git -------------------------------------------------

/// `git config --file FILE --list -z` (plus `extra` arguments) as pairs.
fn git_list(file: &Path, home: &Path, extra: &[&str]) -> Vec<(String, Option<String>)> {
    let out = Command::new("git")
        .args(["config", "--file"])
        .arg(file)
        .args(["--list", "-z"])
        .args(extra)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_terminator('\0')
        .map(|item| match item.split_once('\n') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (item.to_string(), None),
        })
        .collect()
}

fn ours(file: &Path, repo: &Repo) -> Vec<(String, Option<String>)> {
    read(file, repo)
        .unwrap()
        .into_iter()
        .map(|e| (e.key, e.value))
        .collect()
}

#[test]
fn values_git_writes_read_back_as_git_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config");
    let values = [
        ("core.pager", "less -R"),
        ("a.lead", "   leading spaces"),
        ("a.trail", "trailing   "),
        ("a.hash", "a # not a comment"),
        ("a.semi", "x;y"),
        ("a.quote", "say \"hi\""),
        ("a.backslash", "C:\\dir\\file"),
        ("a.tab", "a\tb"),
        ("a.newline", "line1\nline2"),
        ("a.mixed", " \"; # \\ \t "),
        ("a.empty", ""),
        ("a.unicode", "héllo wörld ✓"),
        ("Remote.Mixed Case\"x\\y.URL", "https://h/x"),
        ("alias.st", "!f() { git status \"$@\"; }; f"),
        ("b.legacy", "=equals=signs="),
        ("b.cr", "a\rb"),
        ("b.dollar", "$HOME/x"),
        ("includeIf.gitdir:~/w/.path", "~/w.inc"),
        ("c.multi", "one"),
        ("c.multi", "two"),
    ];
    for (key, value) in values {
        let ok = Command::new("git")
            .args(["config", "--file"])
            .arg(&file)
            .args(["--add", key, value])
            .status()
            .unwrap();
        assert!(ok.success(), "{key}");
    }
    let repo = repo_in(dir.path());
    let git = git_list(&file, dir.path(), &[]);
    assert_eq!(git.len(), values.len());
    assert_eq!(ours(&file, &repo), git);
}

#[test]
fn hand_written_configs_read_as_git_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let repo = repo_in(dir.path());
    write(&home, "inc/h", "[fromhome]\n\tk = 1\n");
    write(
        dir.path(),
        "sub/n",
        "[nested] k = \"n\" ; c\n[include]\npath = ../leaf\n",
    );
    write(dir.path(), "leaf", "\u{feff}[leaf]\r\nk = v\\\r\n w\r\n");
    let file = write(
        dir.path(),
        "top",
        "top = 1\n[A.B]\nC = legacy\n[x \"S\\\\ub\\\"q\\z\"]k\n[y][z]w = \" sp \" x  ;c\n\
         v = a\\\n  b \\\n\n[include]\n\tpath = sub/n\n\tpath = ~/inc/h\n\tpath = nothing\n\
         [ \"odd\"]\nk = 1\n[t]\ne = \\\"\\\\\\t\\n\\b\n",
    );
    assert_eq!(ours(&file, &repo), git_list(&file, &home, &["--includes"]));
    // Without includes, git lists the include lines only: so do we,
    // given a file whose includes are all missing.
    let lone = write(dir.path(), "lone", "[include]\npath = nope\n[k]\nv = 1\n");
    assert_eq!(ours(&lone, &repo), git_list(&lone, &home, &[]));
}

#[test]
fn configs_git_refuses_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for text in [
        "[a]\nk = \"x\n",
        "[a]\nk = \\z\n",
        "[a]\nk # c\n",
        "[a b]\n",
        "[a\"b\"]\n",
        "[a \"b\"x]\n",
        "[]\n",
        "[a]\n9 = 1\n",
        "[a]\nk_1 = 1\n",
    ] {
        let file = write(dir.path(), "bad", text);
        let git = Command::new("git")
            .args(["config", "--file"])
            .arg(&file)
            .arg("--list")
            .output()
            .unwrap();
        assert!(!git.status.success(), "git accepted {text:?}");
        assert!(read(&file, &repo_in(dir.path())).is_err(), "{text:?}");
    }
}

/// Runs git with no system or global config and a fixed identity.
fn git(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn relative_paths_are_reported_where_the_real_git_finds_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    let (wt, home) = (d.join("wt"), d.join("home"));
    std::fs::create_dir_all(wt.join("sub")).unwrap();
    std::fs::create_dir_all(wt.join("myhooks")).unwrap();
    git(&wt, &home, &["init", "-q"]);
    let marks = d.join("marks");
    std::fs::create_dir(&marks).unwrap();
    script(
        &wt.join("myhooks/pre-commit"),
        &format!("touch {}/hook", marks.display()),
    );
    script(
        &wt.join("tool.sh"),
        &format!("touch {}/alias", marks.display()),
    );
    std::fs::write(wt.join("myignore"), "*.junk\n").unwrap();
    std::fs::write(wt.join("sub/a.junk"), "").unwrap();
    for (key, value) in [
        ("core.hooksPath", "myhooks"),
        ("core.excludesFile", "myignore"),
        ("alias.t", "!./tool.sh"),
    ] {
        git(&wt, &home, &["config", key, value]);
    }
    // Git started in a subdirectory still finds them from the top.
    let sub = wt.join("sub");
    git(&sub, &home, &["commit", "-q", "--allow-empty", "-m", "x"]);
    git(&sub, &home, &["t"]);
    let status = git(
        &sub,
        &home,
        &["status", "--porcelain", "--untracked-files=all"],
    );
    assert!(marks.join("hook").exists() && marks.join("alias").exists());
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(!status.contains("a.junk"), "{status}");

    let repo = Repo {
        git_dir: wt.join(".git"),
        work_tree: Some(wt.clone()),
        home: Some(home),
    };
    let entries = read(&wt.join(".git/config"), &repo).unwrap();
    let got: Vec<_> = code_paths(&entries, &repo)
        .unwrap()
        .into_iter()
        .map(|c| (c.path, c.is_dir))
        .collect();
    for want in [
        (wt.join("myhooks"), true),
        (wt.join("myignore"), false),
        (wt.join("tool.sh"), false),
    ] {
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
}

#[test]
fn neutralise_keeps_what_git_init_and_clone_write_and_git_agrees_on_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    let origin = d.join("origin");
    std::fs::create_dir_all(&origin).unwrap();
    git(&origin, &home, &["init", "-q", "-b", "main"]);
    git(
        &origin,
        &home,
        &["commit", "-q", "--allow-empty", "-m", "x"],
    );
    let d_str = d.to_str().unwrap();
    for args in [
        vec!["init", "-q", "--bare", "bare"],
        vec!["init", "-q", "--object-format=sha256", "sha"],
        vec!["init", "-q", "--ref-format=reftable", "reftable"],
        vec!["clone", "-q", "origin", "clone"],
        vec!["clone", "-q", "--bare", "origin", "clone-bare"],
    ] {
        git(d, &home, &args);
    }
    let configs = [
        "origin/.git/config",
        "bare/config",
        "sha/.git/config",
        "reftable/.git/config",
        "clone/.git/config",
        "clone-bare/config",
    ];
    for config in configs {
        let file = d.join(config);
        let text = std::fs::read_to_string(&file).unwrap();
        let (out, removed) = neutralise(&text, &file).unwrap();
        assert!(removed.is_empty(), "{d_str}/{config}: {removed:?}\n{text}");
        assert_eq!(out, text);
    }
    let clone = d.join("clone");
    for (key, value) in [
        ("core.hooksPath", "h"),
        ("include.path", "../x"),
        ("alias.x", "!./x"),
        ("remote.origin.uploadpack", "./x"),
        ("filter.x.smudge", "./x"),
    ] {
        git(&clone, &home, &["config", key, value]);
    }
    let file = clone.join(".git/config");
    let before = git_list(&file, &home, &[]);
    let text = std::fs::read_to_string(&file).unwrap();
    let (out, removed) = neutralise(&text, &file).unwrap();
    std::fs::write(&file, out).unwrap();
    let gone: Vec<_> = removed.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        gone,
        // In file order: git adds a key to its section when there is one.
        [
            "core.hookspath",
            "remote.origin.uploadpack",
            "include.path",
            "alias.x",
            "filter.x.smudge"
        ]
    );
    let want: Vec<_> = before
        .into_iter()
        .filter(|(k, _)| !gone.contains(&k.as_str()))
        .collect();
    assert_eq!(git_list(&file, &home, &[]), want);
    // And the repository still works.
    git(&clone, &home, &["log", "-q", "--oneline"]);
}

/// Pieces of config syntax, tricky ones among them, for texts built at
/// random and read by both git and [`read`]: line starts, and pieces of
/// values.
const LINE_STARTS: &[&str] = &[
    "[a]",
    "[A.b]",
    "[a \"x\\\"y\\\\z\\q\"]",
    "[a \"b\" ]",
    "[ \"s\"]",
    "[a]k=",
    "[",
    "k",
    "K-2 ",
    "k\t",
    "9",
    "_k",
    "\t",
    "#",
    ";",
    "\u{feff}",
    "\x0b",
    "x.y",
    "[a-b.C-d]",
];
const VALUE_PIECES: &[&str] = &[
    " = ", "=", " ", "\t", "\"", "\\", "\\n", "\\t", "\\b", "\\\"", "\\\\", "\\q", "\\\n",
    "\\\r\n", "#", ";", "v", "x y", "é", "\r", "[", "]", "\x0b", "~/", "-", ".",
];
const SAFE_PIECES: &[&str] = &[
    " = ", "v", "x y", " ", "\t", "\\n", "\"q #;\"", " # c", "é", "\\\n", "\\\"", "\"\"",
];
const LINE_ENDS: &[&str] = &["\n", "\n", "\r\n", "\r", ""];

#[test]
fn random_texts_read_as_git_reads_them_or_both_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config");
    let repo = repo_in(dir.path());
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..400 {
        let mut text = String::from("[s]\n");
        for _ in 0..1 + next(4) {
            let start = match next(2) {
                0 => LINE_STARTS[next(LINE_STARTS.len())],
                _ => "k =",
            };
            text.push_str(start);
            for _ in 0..next(6) {
                text.push_str(match next(10) {
                    0..=6 => SAFE_PIECES[next(SAFE_PIECES.len())],
                    _ => VALUE_PIECES[next(VALUE_PIECES.len())],
                });
            }
            text.push_str(LINE_ENDS[next(LINE_ENDS.len())]);
        }
        std::fs::write(&file, &text).unwrap();
        let git = Command::new("git")
            .args(["config", "--file"])
            .arg(&file)
            .args(["--list", "-z"])
            .output()
            .unwrap();
        let ours = read(&file, &repo);
        if git.status.success() {
            accepted += 1;
            let want = git_list(&file, dir.path(), &[]);
            let got: Vec<_> = ours
                .unwrap_or_else(|e| panic!("{text:?}: git reads it, we refuse: {e}"))
                .into_iter()
                .map(|e| (e.key, e.value))
                .collect();
            assert_eq!(got, want, "{text:?}");
        } else {
            refused += 1;
            assert!(ours.is_err(), "{text:?}: git refuses it, we read {ours:?}");
        }
    }
    // Both outcomes were exercised.
    assert!(accepted > 80 && refused > 80, "{accepted} {refused}");
}

#[test]
fn environment_config_is_read_as_git_passes_it_on() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    // What `git -c` hands to the commands it runs, as git itself quotes it.
    let out = git(
        home,
        home,
        &[
            "-c",
            "a.b=x y",
            "-c",
            "A.Sub.Key='q'",
            "-c",
            "flag.bare",
            "-c",
            "empty.v=",
            "-c",
            "x.y=it's!",
            "-c",
            "core.pager=./p",
            "-c",
            "alias.penv=!printf %s \"$GIT_CONFIG_PARAMETERS\"",
            "penv",
        ],
    );
    let parameters = String::from_utf8(out.stdout).unwrap();
    let env = |name: &str| -> Option<OsString> {
        match name {
            "GIT_CONFIG_PARAMETERS" => Some(parameters.clone().into()),
            "GIT_CONFIG_COUNT" => Some("2".into()),
            "GIT_CONFIG_KEY_0" => Some("Core.HooksPath".into()),
            "GIT_CONFIG_VALUE_0" => Some(".hooks".into()),
            "GIT_CONFIG_KEY_1" => Some("include.path".into()),
            "GIT_CONFIG_VALUE_1" => Some("~/inc".into()),
            _ => None,
        }
    };
    let got: Vec<_> = environment_entries_in(&env)
        .unwrap()
        .into_iter()
        .map(|e| (e.key, e.value, e.file.to_string_lossy().into_owned()))
        .collect();
    let at = |k: &str, v: Option<&str>, var: &str| {
        (k.to_string(), v.map(str::to_string), format!("${var}"))
    };
    let p = "GIT_CONFIG_PARAMETERS";
    assert_eq!(
        got,
        [
            at("core.hookspath", Some(".hooks"), "GIT_CONFIG_KEY_0"),
            at("include.path", Some("~/inc"), "GIT_CONFIG_KEY_1"),
            at("a.b", Some("x y"), p),
            at("a.Sub.key", Some("'q'"), p),
            at("flag.bare", None, p),
            at("empty.v", Some(""), p),
            at("x.y", Some("it's!"), p),
            at("core.pager", Some("./p"), p),
            at(
                "alias.penv",
                Some("!printf %s \"$GIT_CONFIG_PARAMETERS\""),
                p
            ),
        ]
    );

    // Together with the repository's files, includes and all.
    let repo = repo_in(home);
    write(home, "home/inc", "[diff \"x\"]\ntextconv = ./conv.sh\n");
    let config = write(home, "wt/.git/config", "[core]\nbare = false\n");
    let (files, paths) = repo_code_paths_in(&repo, &|n| match n {
        "GIT_CONFIG_NOSYSTEM" => Some("1".into()),
        "GIT_CONFIG_GLOBAL" => Some("".into()),
        "GIT_CONFIG_PARAMETERS" => None,
        other => env(other),
    })
    .unwrap();
    assert_eq!(files, [config]);
    let paths: Vec<_> = paths
        .iter()
        .map(|c| (c.key.as_str(), c.path.clone()))
        .collect();
    let wt = home.join("wt");
    assert_eq!(
        paths,
        [
            ("core.hookspath", wt.join(".hooks")),
            ("core.hookspath", wt.join(".git/.hooks")),
            ("include.path", home.join("home/inc")),
            ("diff.x.textconv", wt.join("conv.sh")),
            ("diff.x.textconv", wt.join(".git/conv.sh")),
        ]
    );
}

#[test]
fn environment_config_git_refuses_is_refused() {
    let cases: &[&[(&str, &str)]] = &[
        &[("GIT_CONFIG_COUNT", "x")],
        &[("GIT_CONFIG_COUNT", "1")],
        &[("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "a.b")],
        &[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "nodot"),
            ("GIT_CONFIG_VALUE_0", ""),
        ],
        &[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "include.path"),
            ("GIT_CONFIG_VALUE_0", "rel"),
        ],
        &[("GIT_CONFIG_PARAMETERS", "'a.b")],
        &[("GIT_CONFIG_PARAMETERS", "a.b=c")],
        &[("GIT_CONFIG_PARAMETERS", "'a.b'=c")],
        &[("GIT_CONFIG_PARAMETERS", "'a.b'='c'x")],
    ];
    for vars in cases {
        let env = |name: &str| -> Option<OsString> {
            vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.into())
        };
        assert!(environment_entries_in(&env).is_err(), "{vars:?}");
    }
}

#[test]
fn an_update_may_change_only_what_cannot_run_code() {
    let file = Path::new("config");
    let old = b"[core]\n\tbare = false\n\tfsmonitor = hook\n[user]\n\tname = a\n";
    let ok: &[&[u8]] = &[
        b"[core]\n\tbare = false\n\tfsmonitor = hook\n[user]\n\tname = b\n\temail = e@x\n",
        b"[core]\n\tbare = false\n\tfsmonitor = hook\n",
        b"[core]\n\tbare = false\n# a comment\n\tfsmonitor = \"hook\"\n[remote \"o\"]\n\turl = https://h/r\n",
        b"[CORE]\n\tBare = false\n\tFSMONITOR = hook\n",
    ];
    for new in ok {
        assert!(
            check_update(old, new, file).is_ok(),
            "{}",
            String::from_utf8_lossy(new)
        );
    }
    let refused: &[(&[u8], &[&str])] = &[
        (
            b"[core]\n\tbare = false\n\tfsmonitor = evil\n",
            &["core.fsmonitor"],
        ),
        (b"[core]\n\tbare = false\n", &["core.fsmonitor"]),
        (
            b"[core]\n\tbare = false\n\tfsmonitor = hook\n\tfsmonitor = two\n",
            &["core.fsmonitor"],
        ),
        (
            b"[core]\n\tbare = false\n\tfsmonitor = hook\n\tpager = x\n",
            &["core.pager"],
        ),
        (
            b"[core]\n\tbare = false\n\tfsmonitor = hook\n[remote \"o\"]\n\turl = ext::x\n",
            &["remote.o.url"],
        ),
        (
            b"[core]\n\tbare = false\n\tfsmonitor = hook\n[core \"x\"]\n\tsshCommand = y\n",
            &["core.x.sshcommand"],
        ),
    ];
    for (new, keys) in refused {
        match check_update(old, new, file) {
            Err(UpdateRefused::Keys(got)) => {
                assert_eq!(got, *keys, "{}", String::from_utf8_lossy(new))
            }
            other => panic!("{}: {other:?}", String::from_utf8_lossy(new)),
        }
    }
    // Entries that could run code, only moved: every one is named.
    let two = b"[core]\n\tpager = p\n\tfsmonitor = hook\n";
    let moved = b"[core]\n\tfsmonitor = hook\n\tpager = p\n";
    match check_update(two, moved, file) {
        Err(UpdateRefused::Keys(got)) => assert_eq!(got, ["core.fsmonitor", "core.pager"]),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        check_update(old, b"[core\n", file),
        Err(UpdateRefused::Unreadable(_))
    ));
    assert!(matches!(
        check_update(b"\0", b"[user]\nname = a\n", file),
        Err(UpdateRefused::Unreadable(_))
    ));
}

#[test]
fn an_update_keeps_where_the_users_own_fetches_and_pushes_go() {
    let file = Path::new("config");
    let old = b"[remote \"origin\"]\n\turl = https://git.example/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[submodule \"lib\"]\n\turl = https://git.example/lib.git\n";
    let with = |extra: &str| [&old[..], extra.as_bytes()].concat();
    // Allowed: new remotes and submodules, tracking an existing remote.
    for ok in [
        "[remote \"upstream\"]\n\turl = https://git.example/up.git\n",
        "[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n",
        "[submodule \"new\"]\n\turl = https://git.example/new.git\n",
        "[user]\n\tname = x\n",
    ] {
        assert!(check_update(old, &with(ok), file).is_ok(), "{ok}");
    }
    let refused = |new: &[u8], key: &str| match check_update(old, new, file) {
        Err(UpdateRefused::Keys(keys)) => assert!(keys.iter().any(|k| k == key), "{keys:?}"),
        other => panic!("{}: {other:?}", String::from_utf8_lossy(new)),
    };
    // An existing remote's URL, push refspec or mirror flag.
    let moved = String::from_utf8_lossy(old).replace("git.example/r.git", "evil.example/r.git");
    refused(moved.as_bytes(), "remote.origin.url");
    refused(
        &with("[remote \"origin\"]\n\tpush = :refs/heads/main\n"),
        "remote.origin.push",
    );
    refused(
        &with("[remote \"origin\"]\n\tmirror = true\n"),
        "remote.origin.mirror",
    );
    // An existing submodule's URL.
    let sub = String::from_utf8_lossy(old).replace("lib.git", "evil.git");
    refused(sub.as_bytes(), "submodule.lib.url");
    // A branch's remote that is a path or URL, or a remote added now.
    refused(
        &with("[branch \"main\"]\n\tremote = /home/u/secret-repo\n"),
        "branch.main.remote",
    );
    refused(
        &with("[remote \"new\"]\n\turl = https://x.example/n.git\n[branch \"main\"]\n\tpushremote = new\n"),
        "branch.main.pushremote",
    );
    // Partial clone: lazy fetches from a promisor.
    refused(
        &with("[extensions]\n\tpartialclone = origin\n"),
        "extensions.partialclone",
    );
    refused(
        &with("[remote \"upstream\"]\n\turl = https://u.example/r\n\tpromisor = true\n"),
        "remote.upstream.promisor",
    );
}

#[test]
fn an_update_with_a_value_continued_on_the_next_line_is_refused() {
    let file = Path::new("config");
    let old = b"[user]\n\tname = a\n";
    let continued = b"[user]\n\tname = a\\\n[core]\n\tfsmonitor = x\n";
    match check_update(old, continued, file) {
        Err(UpdateRefused::Unreadable(GitConfigError::Syntax { line: 2, .. })) => {}
        other => panic!("{other:?}"),
    }
    // An escaped backslash at the end is no continuation.
    assert!(check_update(old, b"[user]\n\tname = a\\\\\r\n", file).is_ok());
}

#[test]
fn a_remote_added_during_the_run_takes_its_settings_one_write_at_a_time() {
    // `git remote add` writes the URL, then the fetch refspec: the second
    // write's old text names the remote, the run's start did not.
    let file = Path::new("config");
    let start = b"[user]\n\tname = a\n";
    let one = b"[user]\n\tname = a\n[remote \"o\"]\n\turl = https://h/r\n";
    let two = b"[user]\n\tname = a\n[remote \"o\"]\n\turl = https://h/r\n\tfetch = +refs/heads/*:refs/remotes/o/*\n";
    let existing = Existing::of(start);
    assert!(super::check_update(start, one, file, &existing).is_ok());
    assert!(super::check_update(one, two, file, &existing).is_ok());
    // A remote there at the start stays as it was, whatever came between.
    let at_start = Existing::of(one);
    assert!(super::check_update(one, two, file, &at_start).is_err());
}
