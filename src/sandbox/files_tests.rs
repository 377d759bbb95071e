use super::*;

/// Records every operation; the paths in `missing` do not exist, and
/// files are the paths named `secret.txt` or `config`.
#[derive(Default)]
struct Recorder {
    ops: Vec<String>,
    missing: Vec<PathBuf>,
    /// Overlays fail to mount, as without overlayfs in user namespaces.
    overlay_fails: bool,
}

impl MountOps for Recorder {
    fn make_private(&mut self, path: &Path) -> io::Result<()> {
        self.ops.push(format!("private {}", path.display()));
        Ok(())
    }
    fn mount_tmpfs(&mut self, target: &Path, options: &str) -> io::Result<()> {
        self.ops
            .push(format!("tmpfs {} {options}", target.display()));
        Ok(())
    }
    fn mount_proc(&mut self, target: &Path) -> io::Result<()> {
        self.ops.push(format!("proc {}", target.display()));
        Ok(())
    }
    fn mount_devpts(&mut self, target: &Path) -> io::Result<()> {
        self.ops.push(format!("devpts {}", target.display()));
        Ok(())
    }
    fn mount_sysfs(&mut self, target: &Path) -> io::Result<()> {
        self.ops.push(format!("sysfs {}", target.display()));
        Ok(())
    }
    fn bind(&mut self, source: &Path, target: &Path) -> io::Result<()> {
        self.ops
            .push(format!("bind {} {}", source.display(), target.display()));
        Ok(())
    }
    fn mount_overlay(
        &mut self,
        target: &Path,
        lower: &Path,
        upper: &Path,
        work: &Path,
    ) -> io::Result<()> {
        if self.overlay_fails {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        self.ops.push(format!(
            "overlay {} {} {} {}",
            target.display(),
            lower.display(),
            upper.display(),
            work.display()
        ));
        Ok(())
    }
    fn set_attrs(&mut self, target: &Path, attrs: u64, recursive: bool) -> io::Result<()> {
        self.ops
            .push(format!("attrs {} {attrs:#x} {recursive}", target.display()));
        Ok(())
    }
    fn pivot_root(&mut self, new_root: &Path, put_old: &Path) -> io::Result<()> {
        self.ops.push(format!(
            "pivot {} {}",
            new_root.display(),
            put_old.display()
        ));
        Ok(())
    }
    fn enter_root(&mut self, new_root: &Path) -> io::Result<()> {
        self.ops.push(format!("enter {}", new_root.display()));
        Ok(())
    }
    fn exists(&self, path: &Path) -> bool {
        !self.missing.iter().any(|m| path == m)
    }
    fn is_dir(&self, path: &Path) -> bool {
        !path.ends_with("secret.txt") && !path.ends_with("config")
    }
    fn mkdir_all(&mut self, path: &Path) -> io::Result<()> {
        self.ops.push(format!("mkdir {}", path.display()));
        Ok(())
    }
    fn create_file(&mut self, path: &Path, mode: u32) -> io::Result<()> {
        self.ops.push(format!("file {} {mode:o}", path.display()));
        Ok(())
    }
    fn symlink(&mut self, target: &Path, link: &Path) -> io::Result<()> {
        self.ops
            .push(format!("symlink {} {}", link.display(), target.display()));
        Ok(())
    }
}

fn index_of(ops: &[String], wanted: &str) -> usize {
    ops.iter()
        .position(|o| o == wanted)
        .unwrap_or_else(|| panic!("no `{wanted}` in:\n{}", ops.join("\n")))
}

fn sample_view() -> FileView {
    FileView {
        tmp_size: 1024,
        writable: vec!["/tmp/p".into(), "/home/u/cache".into()],
        hidden: vec![
            ("/home/u/.ssh".into(), Kind::Dir),
            ("/tmp/p/secret.txt".into(), Kind::File),
        ],
        reallowed: vec!["/home/u/.ssh/known_hosts".into()],
        read_only: vec!["/tmp/p/.git/config".into(), "/tmp/p/.git/hooks".into()],
        pinned: vec!["/tmp/p/.git".into()],
        ..FileView::default()
    }
}

#[test]
fn a_hidden_directory_with_nothing_reallowed_is_not_even_searchable() {
    let view = FileView {
        hidden: vec![("/home/u/.aws".into(), Kind::Dir)],
        ..sample_view()
    };
    let mut rec = Recorder {
        missing: vec!["/newroot/tmp/p".into()],
        ..Recorder::default()
    };
    view.apply(&mut rec).unwrap();
    let ops = &rec.ops;
    // The empty mode-000 directory every such one is bound from, sealed
    // (read-only, nosuid, nodev, noexec) before any is: the binds take
    // its flags.
    let empty_dir = index_of(ops, "tmpfs /hide-dir mode=000,size=4096,nr_inodes=64");
    let sealed = index_of(ops, "attrs /hide-dir 0xf false");
    let hidden = index_of(ops, "bind /hide-dir /newroot/home/u/.aws");
    assert!(empty_dir < sealed && sealed < hidden, "{ops:#?}");
    assert!(!ops
        .iter()
        .any(|o| o.starts_with("tmpfs /newroot/home/u/.aws")));
}

#[test]
fn a_denied_path_removed_on_the_host_before_the_mounts_is_skipped_not_made() {
    let view = FileView {
        hidden: vec![
            ("/home/u/.aws".into(), Kind::Dir),
            ("/home/u/.netrc".into(), Kind::File),
            ("/tmp/p/secret.txt".into(), Kind::File),
        ],
        ..sample_view()
    };
    let mut rec = Recorder {
        missing: vec![
            "/newroot/tmp/p".into(),
            "/newroot/home/u/.aws".into(),
            "/oldroot/home/u/.aws".into(),
            "/newroot/home/u/.netrc".into(),
            "/oldroot/home/u/.netrc".into(),
        ],
        ..Recorder::default()
    };
    view.apply(&mut rec).unwrap();
    for gone in ["/newroot/home/u/.aws", "/newroot/home/u/.netrc"] {
        assert!(
            !rec.ops.iter().any(|o| o.contains(gone)),
            "{gone}: {:#?}",
            rec.ops
        );
    }
    // A denied path that only the private /tmp lacks is still hidden.
    index_of(&rec.ops, "bind /hide-file/empty /newroot/tmp/p/secret.txt");
}

#[test]
fn the_view_is_built_in_a_safe_order() {
    let view = sample_view();
    // The project lives under /tmp, which the sandbox replaces with its
    // own tmpfs: its mount point must be created there.
    let mut rec = Recorder {
        missing: vec!["/newroot/tmp/p".into()],
        ..Recorder::default()
    };
    view.apply(&mut rec).unwrap();
    let ops = &rec.ops;
    let ro_root = index_of(ops, "attrs /newroot 0x7 true");
    assert!(ro_root > index_of(ops, "bind /oldroot /newroot"));
    let private_tmp = index_of(ops, "tmpfs /newroot/tmp mode=1777,size=1024");
    let mkdir_project = index_of(ops, "mkdir /newroot/tmp/p");
    let bind_project = index_of(ops, "bind /oldroot/tmp/p /newroot/tmp/p");
    assert!(ro_root < private_tmp && private_tmp < mkdir_project && mkdir_project < bind_project);
    // A denied file inside the project is hidden on top of the project's bind.
    // It is bound from the empty file's own tmpfs, sealed before.
    let hide_file = index_of(ops, "bind /hide-file/empty /newroot/tmp/p/secret.txt");
    assert!(hide_file > bind_project);
    let empty_file = index_of(ops, "file /hide-file/empty 0");
    let sealed = index_of(ops, "attrs /hide-file 0xf false");
    assert!(empty_file < sealed && sealed < hide_file);
    // Protected paths: the pin comes first, then the read-only binds beneath it.
    let pin = index_of(ops, "bind /newroot/tmp/p/.git /newroot/tmp/p/.git");
    let config = index_of(
        ops,
        "bind /newroot/tmp/p/.git/config /newroot/tmp/p/.git/config",
    );
    assert!(bind_project < pin && pin < config);
    assert!(config < index_of(ops, "attrs /newroot/tmp/p/.git/config 0x1 true"));
    // A denied directory: an empty tmpfs, searchable but not listable
    // since a re-allowed file lies in it, the file bound into it, then
    // made read-only once nothing more goes in.
    let hide_dir = index_of(
        ops,
        "tmpfs /newroot/home/u/.ssh mode=0111,size=4096,nr_inodes=64",
    );
    let reallow = index_of(
        ops,
        "bind /oldroot/home/u/.ssh/known_hosts /newroot/home/u/.ssh/known_hosts",
    );
    let seal = index_of(ops, "attrs /newroot/home/u/.ssh 0xf false");
    assert!(hide_dir < reallow && reallow < seal);
    // Kernel interfaces are read-only, and the host's /dev never appears.
    index_of(ops, "attrs /newroot/proc/sys 0xf true");
    index_of(ops, "bind /oldroot/dev/null /newroot/dev/null");
    assert!(!ops.iter().any(|o| o == "bind /oldroot/dev /newroot/dev"));
    assert_eq!(ops.last().map(String::as_str), Some("enter /newroot"));
}

#[test]
fn sys_is_a_fresh_sysfs_with_cgroups_kept_and_firmware_masked() {
    let mut rec = Recorder {
        missing: vec!["/newroot/tmp/p".into(), "/newroot/sys/hypervisor".into()],
        ..Recorder::default()
    };
    sample_view().apply(&mut rec).unwrap();
    let ops = &rec.ops;
    // Over the read-only host root, before any policy path is bound.
    let sysfs = index_of(ops, "sysfs /newroot/sys");
    assert!(sysfs > index_of(ops, "attrs /newroot 0x7 true"));
    assert!(sysfs < index_of(ops, "bind /oldroot/tmp/p /newroot/tmp/p"));
    // The host's sysfs itself is never bound on its own.
    assert!(!ops.iter().any(|o| o.starts_with("bind /oldroot/sys /")));
    // The cgroup hierarchies come back, read-only, recursively.
    let cgroup = index_of(ops, "bind /oldroot/sys/fs/cgroup /newroot/sys/fs/cgroup");
    let cgroup_ro = index_of(ops, "attrs /newroot/sys/fs/cgroup 0xf true");
    assert!(sysfs < cgroup && cgroup < cgroup_ro);
    // Firmware and DMI ids under the sealed empty directory; what the
    // host lacks is skipped.
    let sealed = index_of(ops, "attrs /hide-dir 0xf false");
    for dir in ["firmware", "devices/virtual/dmi"] {
        let mask = index_of(ops, &format!("bind /hide-dir /newroot/sys/{dir}"));
        assert!(sealed < mask && sysfs < mask);
    }
    assert!(!ops.iter().any(|o| o.contains("/sys/hypervisor")));
    let vmcoreinfo = index_of(ops, "bind /hide-file/empty /newroot/sys/kernel/vmcoreinfo");
    assert!(sysfs < vmcoreinfo);
    // Root-only physical memory maps in /proc are masked too.
    let sealed = index_of(ops, "attrs /hide-file 0xf false");
    for name in ["kpageflags", "kpagecount", "kpagecgroup"] {
        assert!(sealed < index_of(ops, &format!("bind /hide-file/empty /newroot/proc/{name}")));
    }
}

#[test]
fn missing_protected_names_are_guarded_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(project.join("sub/.git")).unwrap();
    std::fs::write(project.join(".envrc"), "").unwrap();
    let view = FileView {
        writable: vec![project.clone()],
        ..FileView::default()
    };
    let mut marks = Marks::default();
    for root in [project.clone(), project.join("sub")] {
        for name in [".bashrc", ".envrc", ".vscode/", ".cargo/config.toml"] {
            view.protect(&root, name, &mut marks).unwrap();
        }
    }
    let names: Vec<_> = std::fs::read_dir(&project)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 2, "only what was there: {names:?}");
    assert!(marks.read_only.contains(&project.join(".envrc")));
    for missing in [".bashrc", ".vscode", ".cargo/config.toml", "sub/.envrc"] {
        assert!(marks.guarded.contains(&project.join(missing)), "{missing}");
    }
    // The nested repository cannot be renamed away and made again.
    assert!(marks.pins.contains(&project.join("sub")));
}

#[test]
fn a_deny_write_path_keeps_its_parents_in_place() {
    let view = FileView {
        writable: vec!["/p".into()],
        ..FileView::default()
    };
    let mut marks = Marks::default();
    view.keep_read_only("/p/a/b/log.jsonl".into(), &mut marks);
    assert_eq!(
        marks.pins.iter().collect::<Vec<_>>(),
        vec![Path::new("/p/a"), Path::new("/p/a/b")]
    );
}

#[test]
fn every_file_system_made_afresh_lies_under_a_fresh_mount_landlock_covers_inside() {
    // Landlock's rules for the host's inodes are made outside the
    // sandbox's view; a new file system elsewhere would get none.
    let view = sample_view();
    let mut rec = Recorder {
        missing: vec!["/newroot/tmp/p".into()],
        ..Recorder::default()
    };
    view.apply(&mut rec).unwrap();
    let hidden: Vec<PathBuf> = view
        .hidden
        .iter()
        .map(|(p, _)| under(NEW_ROOT, p))
        .collect();
    let made: Vec<&str> = rec
        .ops
        .iter()
        .filter_map(|op| {
            let (kind, rest) = op.split_once(' ')?;
            let target = rest.split(' ').next()?;
            // A bind of a hiding place shows its tmpfs at the target.
            let hiding = kind == "bind" && [EMPTY_DIR, EMPTY_FILE].contains(&target);
            let target = if hiding {
                rest.split(' ').nth(1)?
            } else {
                target
            };
            (hiding || ["tmpfs", "proc", "sysfs", "devpts"].contains(&kind)).then_some(target)
        })
        .filter(|target| target.starts_with(NEW_ROOT))
        .collect();
    assert!(made.len() >= 5, "{made:?}");
    for target in made {
        let target = Path::new(target);
        let covered = FRESH_MOUNTS
            .iter()
            .any(|fresh| target.starts_with(under(NEW_ROOT, Path::new(fresh))))
            || hidden.iter().any(|h| target == h);
        assert!(
            covered,
            "{} is made afresh but not in FRESH_MOUNTS",
            target.display()
        );
    }
}

#[test]
fn a_listing_marks_what_lookups_mark() {
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(project.join(".vscode")).unwrap();
    std::fs::create_dir_all(project.join(".cargo")).unwrap();
    std::fs::write(project.join(".envrc"), "").unwrap();
    std::fs::write(project.join(".cargo/config.toml"), "").unwrap();
    let view = FileView {
        writable: vec![project.clone()],
        ..FileView::default()
    };
    let listing = Listed::of(&project);
    let (mut looked_up, mut listed) = (Marks::default(), Marks::default());
    for name in [
        ".bashrc",
        ".envrc",
        ".vscode/",
        ".cargo/config.toml",
        ".cargo/config",
        ".roo/mcp.json",
        ".kiro/hooks",
    ] {
        view.protect(&project, name, &mut looked_up).unwrap();
        view.protect_listed(&project, name, &listing, &mut listed)
            .unwrap();
    }
    assert_eq!(looked_up.read_only, listed.read_only);
    assert_eq!(looked_up.pins, listed.pins);
    assert_eq!(looked_up.guarded, listed.guarded);
    assert!(listed
        .read_only
        .contains(&project.join(".cargo/config.toml")));
    assert!(listed.guarded.contains(&project.join(".roo/mcp.json")));
    assert!(listing.absent(&project.join(".roo/mcp.json")));
    assert!(!listing.absent(&project.join(".cargo/config")));
    assert!(!listing.absent(&project));
    // A protected name that is a link is refused with a listing too.
    std::os::unix::fs::symlink("/etc/hostname", project.join(".zshrc")).unwrap();
    let listing = Listed::of(&project);
    assert!(matches!(
        view.protect_listed(&project, ".zshrc", &listing, &mut listed),
        Err(FilesError::ProtectedSymlink(p)) if p == project.join(".zshrc")
    ));
}

#[test]
fn only_homes_with_many_entries_below_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(home.join(".config")).unwrap();
    let rule = |p: PathBuf| Sourced::new(PathPattern::Exact(p), crate::policy::Source::Builtin);
    let mut rules: Vec<_> = (0..LISTING_PAYS)
        .map(|i| rule(home.join(".config").join(format!("tool{i}"))))
        .collect();
    rules.extend((0..LISTING_PAYS).map(|i| rule(home.join(".gone").join(format!("{i}")))));
    rules.push(rule(home.join(".few/one")));
    let listed = Listed::of_busy(std::slice::from_ref(&home), &rules);
    let dirs: Vec<&Path> = listed.0.iter().map(|l| l.dir.as_path()).collect();
    // `.gone` is absent from the home's listing: not listed itself.
    assert_eq!(dirs, vec![home.as_path(), home.join(".config").as_path()]);
    assert!(listed.absent(&home.join(".config/tool0")));
    assert!(listed.absent(&home.join(".gone/0")));
    assert!(listed.absent(&home.join(".few/one")));
    std::fs::write(home.join(".config/tool0"), "").unwrap();
    let listed = Listed::of_busy(std::slice::from_ref(&home), &rules);
    assert!(!listed.absent(&home.join(".config/tool0")));
}

/// Paths up to four components over a few names, `.` and `..`, absolute
/// and relative, some with a trailing `/`: the shapes path comparisons
/// treat differently.
fn generated_paths() -> Vec<PathBuf> {
    let parts = ["a", "b", ".", ".."];
    let mut paths = vec![PathBuf::from("/"), PathBuf::from("")];
    let mut last = vec![String::new()];
    for _ in 0..4 {
        let mut next = Vec::new();
        for prefix in &last {
            for part in parts {
                next.push(format!("{prefix}/{part}"));
            }
        }
        for p in &next {
            paths.push(PathBuf::from(p));
            paths.push(PathBuf::from(format!("{p}/")));
            paths.push(PathBuf::from(&p[1..]));
        }
        last = next;
    }
    paths
}

/// [`Listed::absent`] as it was: every listing's directory stripped off
/// the path.
fn absent_by_scan(listed: &Listed, path: &Path) -> bool {
    listed.0.iter().any(|listing| {
        path.strip_prefix(&listing.dir)
            .ok()
            .and_then(|rest| rest.components().next())
            .is_some_and(|first| !listing.names.contains(first.as_os_str()))
    })
}

#[test]
fn a_listing_split_once_answers_as_every_listing_stripped_off() {
    let names = |n: &[&str]| n.iter().map(OsString::from).collect::<HashSet<_>>();
    let mut listed = Listed::default();
    for (dir, entries) in [
        ("/", &["a"][..]),
        ("/a", &["b", ".."][..]),
        ("/a/b", &[][..]),
        ("/b/a", &["a", "b"][..]),
        ("a", &["b"][..]),
        ("/a/a/a", &["."][..]),
    ] {
        let dir = PathBuf::from(dir);
        listed.0.push(Listing {
            parts: components(&dir).map(OsStr::to_os_string).collect(),
            dir,
            names: names(entries),
        });
    }
    let paths = generated_paths();
    let mut absent = 0;
    for path in &paths {
        let expected = absent_by_scan(&listed, path);
        assert_eq!(listed.absent(path), expected, "{path:?}");
        absent += usize::from(expected);
    }
    // Both answers occur.
    assert!(absent > 0 && absent < paths.len());
}

#[test]
fn hidden_paths_looked_up_by_ancestor_match_every_one_compared() {
    let paths = generated_paths();
    let hidden: Vec<(PathBuf, Kind)> = paths
        .iter()
        .step_by(37)
        .map(|p| (p.clone(), Kind::Dir))
        .collect();
    let lookup = Hidden::of(&hidden);
    let outer: HashSet<PathBuf> = hidden.iter().map(|h| h.0.clone()).collect();
    let mut held = 0;
    for path in &paths {
        let expected = hidden.iter().any(|(h, _)| path.starts_with(h));
        assert_eq!(lookup.holds(path), expected, "{path:?}");
        held += usize::from(expected);
        // And beneath another hidden directory, as the plan drops them.
        let beneath = hidden.iter().any(|(o, _)| path != o && path.starts_with(o));
        let by_ancestor = path.ancestors().skip(1).any(|a| outer.contains(a));
        assert_eq!(by_ancestor, beneath, "{path:?}");
    }
    assert!(held > 0 && held < paths.len());
}

#[test]
fn pinning_stops_at_a_pinned_directory_with_the_same_pins() {
    let view = FileView {
        writable: vec![PathBuf::from("/a"), PathBuf::from("/b/a"), "b".into()],
        ..FileView::default()
    };
    // Every directory up to the root, each time (as before the walk
    // stopped early).
    let full_walk = |path: &Path, pins: &mut BTreeSet<PathBuf>| {
        let mut ancestor = path.parent();
        while let Some(dir) = ancestor {
            if view.writable.iter().any(|w| w == dir) || !view.is_writable(dir) {
                break;
            }
            pins.insert(dir.to_path_buf());
            ancestor = dir.parent();
        }
    };
    let mut marks = Marks::default();
    let mut expected = BTreeSet::new();
    for (i, path) in generated_paths().iter().enumerate() {
        if i % 3 == 0 {
            view.pin_with_parents(path, &mut marks);
            if view.is_writable(path) && !view.writable.iter().any(|w| w == path) {
                expected.insert(path.clone());
            }
        } else {
            view.keep_read_only(path.clone(), &mut marks);
        }
        full_walk(path, &mut expected);
    }
    // The very bytes kept, not only equal paths.
    let bytes = |set: &BTreeSet<PathBuf>| -> Vec<OsString> {
        set.iter().map(|p| p.as_os_str().to_owned()).collect()
    };
    assert_eq!(bytes(&marks.pins), bytes(&expected));
    assert!(expected.len() > 10);
    // A directory pinned first, then a path in it: the walk from the path
    // stops there, and what lies above it was pinned with it.
    let mut marks = Marks::default();
    view.pin_with_parents(Path::new("/a/b/c"), &mut marks);
    view.keep_read_only(PathBuf::from("/a/b/c/x"), &mut marks);
    let pinned: Vec<&Path> = marks.pins.iter().map(PathBuf::as_path).collect();
    assert_eq!(pinned, [Path::new("/a/b"), Path::new("/a/b/c")]);
}

#[test]
fn resolving_through_known_directories_answers_as_canonicalize() {
    let dir = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(top.join("d/e")).unwrap();
    std::fs::write(top.join("d/f"), "").unwrap();
    std::fs::write(top.join("d/e/g"), "").unwrap();
    let link =
        |target: &str, name: &str| std::os::unix::fs::symlink(target, top.join(name)).unwrap();
    link("d", "to-d");
    link("d/f", "to-f");
    link("missing", "dangling");
    link("../d", "d/up");
    link("f", "d/e/to-f-beside");
    let names = [
        "",
        "d",
        "d/e",
        "d/f",
        "d/e/g",
        "to-d",
        "to-d/f",
        "to-f",
        "dangling",
        "d/up",
        "d/up/e",
        "d/e/to-f-beside",
        "d/missing",
        "d/f/under-a-file",
        "d/./f",
        "d//f",
        "d/e/",
        "d/e/..",
        "to-d/e/g",
        "d/e/g/",
    ];
    let mut resolved = Resolved::default();
    // Twice: the second round answers from what the first found.
    for _ in 0..2 {
        for name in names {
            let path = if name.is_empty() {
                top.clone()
            } else {
                PathBuf::from(format!("{}/{name}", top.display()))
            };
            let expected = std::fs::canonicalize(&path).ok().map(|real| {
                let kind = if real.is_dir() { Kind::Dir } else { Kind::File };
                (real, kind)
            });
            let got = resolved.real(&path);
            assert_eq!(
                got.as_ref().map(|(p, k)| (p.as_os_str(), k)),
                expected.as_ref().map(|(p, k)| (p.as_os_str(), k)),
                "{path:?}"
            );
        }
    }
    assert!(resolved.0.contains(&top.join("d/e")));
}

#[test]
fn the_busy_directories_are_those_counted_by_stripping_each_home() {
    let dir = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(dir.path()).unwrap();
    let homes = [top.join("h"), top.join("h/a"), top.join("other")];
    for d in ["h/a/b", "h/b", "other/a"] {
        std::fs::create_dir_all(top.join(d)).unwrap();
    }
    let rule = |p: PathBuf| Sourced::new(PathPattern::Exact(p), crate::policy::Source::Builtin);
    let mut rules = Vec::new();
    for home in &homes {
        for rest in generated_paths() {
            let rest = rest.strip_prefix("/").unwrap_or(&rest);
            rules.push(rule(home.join(rest)));
        }
    }
    let listed = Listed::of_busy(&homes, &rules);
    // As it was: each rule stripped of each home, counted by path.
    let mut expected = Listed::default();
    for home in &homes {
        let mut below: BTreeMap<PathBuf, usize> = BTreeMap::new();
        for rule in &rules {
            let PathPattern::Exact(path) = &rule.value else {
                continue;
            };
            let Ok(rest) = path.strip_prefix(home) else {
                continue;
            };
            *below.entry(home.clone()).or_default() += 1;
            let mut parts = rest.components();
            if let (Some(first), Some(_)) = (parts.next(), parts.next()) {
                *below.entry(home.join(first)).or_default() += 1;
            }
        }
        for (dir, count) in below {
            if count >= LISTING_PAYS && !absent_by_scan(&expected, &dir) {
                expected.add(&dir);
            }
        }
    }
    let dirs = |l: &Listed| -> Vec<PathBuf> { l.0.iter().map(|l| l.dir.clone()).collect() };
    assert_eq!(dirs(&listed), dirs(&expected));
    assert!(dirs(&listed).len() >= 4, "{:?}", dirs(&listed));
}

#[test]
fn resolving_a_random_forest_of_links_in_any_order_answers_as_canonicalize() {
    // Links to directories, files, up (`..`), across and in loops, asked
    // about in a shuffled order with one cache throughout: what an earlier
    // answer put in the cache must never make a later one differ.
    for round in 1..=16u64 {
        resolve_a_random_forest(round.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    }
}

/// One forest of `resolving_a_random_forest_of_links_in_any_order_answers_as_canonicalize`,
/// made and asked about as `seed` draws.
fn resolve_a_random_forest(mut seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let top = std::fs::canonicalize(dir.path()).unwrap();
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let names = ["a", "b", "c", "l1", "l2", "f"];
    let mut made: Vec<PathBuf> = vec![top.clone()];
    for _ in 0..60 {
        let parent = made[next(made.len())].clone();
        if !parent.is_dir() || parent.symlink_metadata().unwrap().file_type().is_symlink() {
            continue;
        }
        let path = parent.join(names[next(names.len())]);
        if path.symlink_metadata().is_ok() {
            continue;
        }
        match next(4) {
            0 | 1 => std::fs::create_dir(&path).unwrap(),
            2 => std::fs::write(&path, "").unwrap(),
            _ => {
                let target = match next(3) {
                    0 => made[next(made.len())].clone(),
                    1 => PathBuf::from(".."),
                    _ => PathBuf::from(names[next(names.len())]),
                };
                std::os::unix::fs::symlink(target, &path).unwrap();
            }
        }
        made.push(path);
    }
    let mut asked: Vec<PathBuf> = Vec::new();
    for _ in 0..400 {
        let mut path = made[next(made.len())].clone();
        for _ in 0..next(3) {
            path.push(names[next(names.len())]);
        }
        asked.push(path);
    }
    let mut resolved = Resolved::default();
    for path in asked {
        let expected = std::fs::canonicalize(&path).ok().map(|real| {
            let kind = if real.is_dir() { Kind::Dir } else { Kind::File };
            (real, kind)
        });
        assert_eq!(resolved.real(&path), expected, "{path:?}");
    }
}

/// A view with three caches: a kept layer over `/home/u/.npm` (a denied
/// file in it), a layer in memory over `/home/u/.cargo/registry`, and a
/// missing host directory's stand-in.
fn view_with_caches() -> FileView {
    use crate::sandbox::caches::{CacheMount, Caches, Upper};
    let kept = |name: &str| Upper::Kept {
        upper: PathBuf::from(format!("/home/u/.cache/cordon/caches/p/{name}/upper")),
        work: PathBuf::from(format!("/home/u/.cache/cordon/caches/p/{name}/work")),
    };
    FileView {
        hidden: vec![("/home/u/.npm/secret.txt".into(), Kind::File)],
        caches: Caches {
            mounts: vec![
                CacheMount {
                    inside: "/home/u/.npm".into(),
                    lower: Some("/home/u/.npm".into()),
                    upper: kept("npm"),
                    env: Vec::new(),
                },
                CacheMount {
                    inside: "/home/u/.cargo/registry".into(),
                    lower: Some("/home/u/.cargo/registry".into()),
                    upper: Upper::Memory,
                    env: Vec::new(),
                },
                CacheMount {
                    inside: "/tmp/cordon-caches/yarn".into(),
                    lower: None,
                    upper: kept("yarn"),
                    env: vec!["YARN_CACHE_FOLDER".into()],
                },
            ],
            ..Caches::default()
        },
        ..sample_view()
    }
}

#[test]
fn caches_are_overlays_with_denied_paths_hidden_on_top() {
    let view = view_with_caches();
    let mut rec = Recorder {
        missing: vec![
            "/newroot/tmp/p".into(),
            "/newroot/tmp/cordon-caches/yarn".into(),
        ],
        ..Recorder::default()
    };
    view.apply(&mut rec).unwrap();
    let ops = &rec.ops;
    let layer = "/oldroot/home/u/.cache/cordon/caches/p/npm";
    let npm = index_of(
        ops,
        &format!("overlay /newroot/home/u/.npm /oldroot/home/u/.npm {layer}/upper {layer}/work"),
    );
    // nosuid, nodev on the overlay itself, then the denied file on top.
    let attrs = index_of(ops, "attrs /newroot/home/u/.npm 0x6 false");
    let hidden = index_of(ops, "bind /hide-file/empty /newroot/home/u/.npm/secret.txt");
    assert!(index_of(ops, "attrs /newroot 0x7 true") < npm, "{ops:#?}");
    assert!(npm < attrs && attrs < hidden, "{ops:#?}");
    // The layer in memory: a tmpfs of its own out of the sandbox's view.
    let tmpfs = index_of(ops, "tmpfs /cache-layers/1 mode=0700,size=1024");
    let registry = index_of(
        ops,
        "overlay /newroot/home/u/.cargo/registry /oldroot/home/u/.cargo/registry /cache-layers/1/upper /cache-layers/1/work",
    );
    assert!(tmpfs < registry, "{ops:#?}");
    // The missing directory: nothing on the host, the layer alone in /tmp.
    let stand_in = index_of(ops, "mkdir /newroot/tmp/cordon-caches/yarn");
    let bound = index_of(
        ops,
        "bind /oldroot/home/u/.cache/cordon/caches/p/yarn/upper /newroot/tmp/cordon-caches/yarn",
    );
    assert!(index_of(ops, "tmpfs /newroot/tmp mode=1777,size=1024") < stand_in);
    assert!(stand_in < bound, "{ops:#?}");
    assert!(
        !ops.iter().any(|o| o.starts_with("mkdir /newroot/home")),
        "{ops:#?}"
    );
}

#[test]
fn a_cache_that_cannot_be_mounted_fails_the_view() {
    let view = view_with_caches();
    let mut rec = Recorder {
        missing: vec!["/newroot/tmp/p".into()],
        overlay_fails: true,
        ..Recorder::default()
    };
    let err = view.apply(&mut rec).unwrap_err();
    assert!(err.to_string().contains("cache /home/u/.npm"), "{err}");
    // The fix named is overlayfs's, not the user namespaces' advice.
    assert!(err.fix().is_some_and(|f| f.contains("overlayfs")), "{err}");
    // Never bound writable instead.
    assert!(
        !rec.ops
            .iter()
            .any(|o| o.contains("bind /oldroot/home/u/.npm")),
        "{:#?}",
        rec.ops
    );
    assert!(
        !rec.ops.iter().any(|o| o.starts_with("enter")),
        "{:#?}",
        rec.ops
    );
}
