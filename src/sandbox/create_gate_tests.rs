use super::*;

fn guard() -> Guard {
    let writable = vec![PathBuf::from("/p"), PathBuf::from("/cache")];
    Guard::new(
        [
            "/p/.bashrc",
            "/p/.vscode",
            "/p/.cargo/config.toml",
            "/p/.github/workflows",
            "/p/sub/repo/.envrc",
            "/elsewhere/x",
        ]
        .map(PathBuf::from),
        &writable,
    )
}

#[test]
fn a_guarded_path_and_everything_beneath_it_is_refused() {
    let g = guard();
    for (path, hit) in [
        ("/p/.bashrc", "/p/.bashrc"),
        ("/p/.vscode", "/p/.vscode"),
        ("/p/.vscode/tasks.json", "/p/.vscode"),
        ("/p/.github/workflows/ci.yml", "/p/.github/workflows"),
        ("/p/.cargo/config.toml", "/p/.cargo/config.toml"),
    ] {
        for make in [Make::Dir, Make::Other] {
            assert_eq!(
                g.forbids(Path::new(path), make),
                Some(PathBuf::from(hit)),
                "{path} {make:?}"
            );
        }
    }
}

#[test]
fn on_the_way_to_a_guarded_path_only_a_directory_may_be_made() {
    let g = guard();
    for path in ["/p/.cargo", "/p/.github", "/p/sub", "/p/sub/repo"] {
        assert_eq!(g.forbids(Path::new(path), Make::Dir), None, "{path}");
        assert_eq!(
            g.forbids(Path::new(path), Make::Other),
            Some(PathBuf::from(path)),
            "{path}: a symlink or a renamed directory there would move what lies beyond"
        );
    }
    // The writable root itself is not on the way (it exists and is a mount).
    assert_eq!(g.forbids(Path::new("/p"), Make::Other), None);
}

#[test]
fn other_names_are_free() {
    let g = guard();
    for path in [
        "/p/src/main.rs",
        "/p/.bashrc.bak",
        "/p/.cargo/registry",
        "/p/.github/ISSUE_TEMPLATE.md",
        "/p/sub/other",
        "/cache/x",
        "/elsewhere",
    ] {
        assert_eq!(g.forbids(Path::new(path), Make::Other), None, "{path}");
    }
    // A guarded path outside every writable area keeps nothing on its way.
    assert_eq!(
        g.forbids(Path::new("/elsewhere/x"), Make::Other),
        Some(PathBuf::from("/elsewhere/x"))
    );
}

#[test]
fn a_pattern_protects_names_in_its_directories_only() {
    let mut set = globset::GlobSetBuilder::new();
    set.add(globset::Glob::new("*.code-workspace").unwrap());
    let g = guard().with_patterns([PathBuf::from("/p")], set.build().unwrap());
    assert!(g
        .forbids(Path::new("/p/team.code-workspace"), Make::Other)
        .is_some());
    assert_eq!(
        g.forbids(Path::new("/p/docs/team.code-workspace"), Make::Other),
        None
    );
    assert_eq!(
        g.forbids(Path::new("/p/code-workspace.md"), Make::Other),
        None
    );
}

#[test]
fn the_directories_on_the_way_are_those_between_the_root_and_the_path() {
    let writable = vec![PathBuf::from("/p"), PathBuf::from("/q/r"), "rel".into()];
    let mut paths = Vec::new();
    for root in ["/p", "/q/r", "rel", "/x"] {
        for rest in [
            "", "a", "a/b", "a/b/c", "a/./b/", "a/../b/c", "./a/b", "a//b/",
        ] {
            paths.push(Path::new(root).join(rest));
        }
    }
    let guard = Guard::new(paths.clone(), &writable);
    // As it was: every ancestor beneath the root, compared with it.
    let mut expected: HashSet<PathBuf> = HashSet::new();
    for path in &paths {
        if let Some(root) = writable.iter().find(|w| path.starts_with(w)) {
            let between = path
                .ancestors()
                .skip(1)
                .take_while(|a| a.starts_with(root) && *a != root.as_path());
            expected.extend(between.map(Path::to_path_buf));
        }
    }
    let bytes = |set: &HashSet<PathBuf>| {
        let mut all: Vec<_> = set.iter().map(|p| p.as_os_str().to_owned()).collect();
        all.sort();
        all
    };
    assert_eq!(bytes(&guard.on_the_way), bytes(&expected));
    assert!(expected.len() > 5);
}

#[test]
fn a_refused_name_says_why_and_that_nothing_allows_it_inside() {
    let protected = Forbidden::Protected(PathBuf::from("/p/.envrc"));
    assert_eq!(
        protected.reason(),
        "protected: /p/.envrc runs code later outside the sandbox"
    );
    assert_eq!(
        protected.fix(),
        "nothing allows it inside the sandbox: the built-in protected names cannot be lifted (files.protect only adds names); make it outside the sandbox if you mean to"
    );
    assert_eq!(
        Forbidden::Hook.reason(),
        "a git hook: git would run it outside the sandbox"
    );
    assert!(Forbidden::Hook
        .fix()
        .starts_with("nothing allows it inside the sandbox"));
    // Both cross the channel from init as they are.
    for why in [protected, Forbidden::Hook] {
        let json = serde_json::to_string(&why).unwrap();
        assert_eq!(serde_json::from_str::<Forbidden>(&json).unwrap(), why);
    }
}
