use super::*;

/// Notes each rule's path (as named when it was added) and rights.
#[derive(Default)]
struct Recorder(Vec<(PathBuf, BitFlags<AccessFs>)>);

impl Rules for Recorder {
    fn add(
        &mut self,
        _: BorrowedFd<'_>,
        access: BitFlags<AccessFs>,
        _: Option<bool>,
        path: &Path,
    ) -> Result<(), LandlockError> {
        self.0.push((path.to_path_buf(), access));
        Ok(())
    }
}

impl Recorder {
    fn granted(&self, path: &Path) -> bool {
        self.0
            .iter()
            .any(|(p, a)| p == path && a.contains(AccessFs::ReadFile))
    }
}

fn read() -> BitFlags<AccessFs> {
    AccessFs::from_read(WANTED_ABI)
}

#[test]
fn siblings_of_a_denied_path_are_granted_one_by_one_and_links_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (home, secret) = (root.join("home"), root.join("secret"));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join("code")).unwrap();
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(home.join("notes"), "").unwrap();
    std::fs::write(secret.join("key"), "").unwrap();
    std::os::unix::fs::symlink(&secret, home.join("link-to-secret")).unwrap();
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("link-to-ssh")).unwrap();
    let hidden: BTreeSet<PathBuf> = [home.join(".ssh"), root.join("secret")].into();
    let mut rules = Recorder::default();
    grant_read(&mut rules, &root, &hidden, &BTreeSet::new(), read()).unwrap();
    assert!(rules.granted(&home.join("notes")), "{:?}", rules.0);
    assert!(rules.granted(&home.join("code")), "{:?}", rules.0);
    for denied in [home.join(".ssh"), secret.clone(), secret.join("key")] {
        assert!(
            !rules.granted(&denied),
            "{}: {:?}",
            denied.display(),
            rules.0
        );
    }
    for link in ["link-to-secret", "link-to-ssh"] {
        assert!(!rules.granted(&home.join(link)), "{link}: {:?}", rules.0);
    }
    // The directories on the way get listing only.
    assert!(
        rules.0.contains(&(home.clone(), AccessFs::ReadDir.into())),
        "{:?}",
        rules.0
    );
}

#[test]
fn a_directory_on_the_way_swapped_for_a_link_grants_nothing_beneath_it() {
    // Planned while `box` was a directory holding a denied `box/key`; by
    // the time of the walk it leads to a directory that is denied whole.
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/other"), "").unwrap();
    std::os::unix::fs::symlink(root.join("secret"), root.join("box")).unwrap();
    let hidden: BTreeSet<PathBuf> = [root.join("box/key"), root.join("secret")].into();
    let mut rules = Recorder::default();
    grant_read(&mut rules, &root, &hidden, &BTreeSet::new(), read()).unwrap();
    assert!(
        rules
            .0
            .iter()
            .all(|(p, _)| !p.starts_with(root.join("box"))),
        "{:?}",
        rules.0
    );
}

#[test]
fn skipped_paths_get_no_rule_and_their_parent_is_walked() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(root.join("tmp")).unwrap();
    std::fs::create_dir(root.join("usr")).unwrap();
    let skip: BTreeSet<PathBuf> = [root.join("tmp")].into();
    let mut rules = Recorder::default();
    grant_read(&mut rules, &root, &BTreeSet::new(), &skip, read()).unwrap();
    assert!(rules.granted(&root.join("usr")), "{:?}", rules.0);
    assert!(
        !rules.0.iter().any(|(p, _)| p == &root.join("tmp")),
        "{:?}",
        rules.0
    );
}

#[test]
fn with_the_mount_view_denied_paths_in_writable_areas_are_left_to_it() {
    let view = FileView {
        writable: vec!["/p".into()],
        hidden: vec![
            ("/p/sec".into(), super::super::files::Kind::Dir),
            ("/home/u/.ssh".into(), super::super::files::Kind::Dir),
            ("/tmp/x/key".into(), super::super::files::Kind::File),
        ],
        ..FileView::default()
    };
    let mounted = denied_paths(&view, true);
    assert_eq!(mounted, [PathBuf::from("/home/u/.ssh")].into());
    // Without the view, Landlock keeps every one.
    assert_eq!(denied_paths(&view, false).len(), 3);
}
