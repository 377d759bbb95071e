use super::*;

use std::sync::{Arc, Mutex as StdMutex};

const OLD: &str = "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = /usr/bin/watchman-hook\n[user]\n\tname = Old\n";

/// A directory with `config` (holding `old`) opened as the gate's, a
/// source file `config.lock` holding `new`, and a reporter that keeps
/// each refusal's reason.
struct Setup {
    dir: tempfile::TempDir,
    configs: ConfigFiles,
    dirfd: OwnedFd,
    refusals: Arc<StdMutex<Vec<String>>>,
    report: Reporter,
}

fn setup(old: &str, new: &[u8]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config"), old).unwrap();
    std::fs::write(dir.path().join("config.lock"), new).unwrap();
    let configs = ConfigFiles::open(&[dir.path().join("config")]);
    let dirfd = OwnedFd::from(std::fs::File::open(dir.path()).unwrap());
    let refusals = Arc::new(StdMutex::new(Vec::new()));
    let kept = Arc::clone(&refusals);
    let report: Reporter = Box::new(move |r| {
        if let Refusal::Create { why, .. } = r {
            kept.lock().unwrap().push(why.reason());
        }
    });
    Setup {
        dir,
        configs,
        dirfd,
        refusals,
        report,
    }
}

impl Setup {
    fn rename(&self) -> Result<i64, Errno> {
        let path = self.dir.path().join("config");
        let config = self.configs.find(&path).expect("opened");
        replace(
            config,
            &path,
            &self.dirfd,
            OsStr::new("config.lock"),
            &self.report,
        )
    }
    fn config(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("config")).unwrap()
    }
    fn lock_exists(&self) -> bool {
        self.dir
            .path()
            .join("config.lock")
            .symlink_metadata()
            .is_ok()
    }
}

#[test]
fn a_change_of_settings_that_run_nothing_is_written_in_place_and_the_lock_removed() {
    let new = OLD.replace("Old", "New") + "[branch \"main\"]\n\trebase = true\n";
    let s = setup(OLD, new.as_bytes());
    let inode = std::fs::metadata(s.dir.path().join("config"))
        .unwrap()
        .ino();
    assert_eq!(s.rename(), Ok(0));
    assert_eq!(s.config(), new);
    assert!(!s.lock_exists());
    // The same file: the view's bind over it shows the new text.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(s.dir.path().join("config"))
            .unwrap()
            .ino(),
        inode
    );
    assert!(s.refusals.lock().unwrap().is_empty());
    // Shorter than before: nothing of the old text is left at the end.
    let shorter = "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = /usr/bin/watchman-hook\n";
    std::fs::write(s.dir.path().join("config.lock"), shorter).unwrap();
    assert_eq!(s.rename(), Ok(0));
    assert_eq!(s.config(), shorter);
}

#[test]
fn a_change_that_could_run_code_is_refused_and_named_and_nothing_is_written() {
    for (new, key) in [
        (OLD.replace("watchman-hook", "evil"), "core.fsmonitor"),
        (
            OLD.replace("\tfsmonitor = /usr/bin/watchman-hook\n", ""),
            "core.fsmonitor",
        ),
        (
            OLD.to_string() + "[core]\n\thooksPath = h\n",
            "core.hookspath",
        ),
        (OLD.to_string() + "[include]\n\tpath = x\n", "include.path"),
        (
            OLD.to_string() + "[remote \"o\"]\n\turl = ext::sh -c x\n",
            "remote.o.url",
        ),
        (OLD.to_string() + "[Core]\n\tFSMonitor\n", "core.fsmonitor"),
    ] {
        let s = setup(OLD, new.as_bytes());
        assert_eq!(s.rename(), Err(libc::EPERM), "{new}");
        assert_eq!(s.config(), OLD);
        assert!(s.lock_exists());
        let refusals = s.refusals.lock().unwrap();
        assert!(
            refusals.len() == 1 && refusals[0].contains(key),
            "{new}: {refusals:?}"
        );
    }
}

#[test]
fn a_source_that_is_no_plain_readable_config_is_refused() {
    // Not a config git reads.
    let s = setup(OLD, b"[core\n");
    assert_eq!(s.rename(), Err(libc::EPERM));
    assert!(s.refusals.lock().unwrap()[0].contains("not a config git reads safely"));
    // Too long to be read into the gate.
    let big = format!("{OLD}# {}\n", "x".repeat(MAX_CONFIG as usize));
    let s = setup(OLD, big.as_bytes());
    assert_eq!(s.rename(), Err(libc::EPERM));
    assert_eq!(s.config(), OLD);
    // A symlink (to a config that would pass) and a FIFO: not followed,
    // not waited on.
    let s = setup(OLD, b"");
    let lock = s.dir.path().join("config.lock");
    std::fs::write(s.dir.path().join("good"), OLD.replace("Old", "New")).unwrap();
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink("good", &lock).unwrap();
    assert_eq!(s.rename(), Err(libc::EPERM));
    std::fs::remove_file(&lock).unwrap();
    nix::unistd::mkfifo(&lock, Mode::from_bits_truncate(0o600)).unwrap();
    assert_eq!(s.rename(), Err(libc::EPERM));
    assert_eq!(s.config(), OLD);
}

#[test]
fn only_regular_files_are_opened_for_updates() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config");
    std::fs::write(&file, OLD).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let missing = dir.path().join("missing");
    let linked = dir.path().join("linked");
    std::fs::write(&linked, OLD).unwrap();
    std::fs::hard_link(&linked, dir.path().join("other-name")).unwrap();
    let paths = [
        file.clone(),
        link.clone(),
        sub.clone(),
        missing.clone(),
        linked.clone(),
    ];
    let configs = ConfigFiles::open(&paths);
    assert!(configs.find(&file).is_some());
    for other in [link, sub, missing, linked] {
        assert!(configs.find(&other).is_none(), "{other:?}");
    }
}

#[test]
fn a_reader_between_the_write_and_the_new_length_sees_the_new_entries_only() {
    // Written alone over the old text, the new one would run on into the
    // old one's tail: `[include]` then `path = ../x`.
    let old = b"[submodule \"s\"]\n\tpath = ../x\n";
    let new = b"#1234\n[include]\n\t".to_vec();
    assert_eq!(&old[new.len()..new.len() + 4], b"path");
    let mut seen = old.to_vec();
    let written = first_write(&new, old.len());
    seen[..written.len()].copy_from_slice(&written);
    assert!(seen.starts_with(&new));
    assert!(seen[new.len()..].iter().all(|&b| b == b'\n'), "{seen:?}");
    // Longer than the old text: the new text alone.
    assert_eq!(first_write(old, new.len()), old.to_vec());
}
