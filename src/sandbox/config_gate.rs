//! `git config` inside, on a repository that was there before the run.
//!
//! A repository's config can make git run programs on the host
//! (`core.hooksPath`, `core.fsmonitor`, includes, ...), so the view binds
//! it read-only. But `git config user.name x` writes `config.lock` and
//! renames it over `config`, and a rename onto a mount point fails
//! (`EBUSY`): without this, no setting could change inside. Renames go
//! through the file creation gate (see `create_gate`), which hands one
//! whose target is such a config here. The new text replaces the old one
//! only when every entry that could run code is in it exactly as before
//! (see [`gitconfig::check_update`]); then it is written in place, through
//! a descriptor init opened before it built the view (the file stays the
//! same inode, so the bind over it shows the new text), and the lock file
//! is removed, as the rename would have. Anything else is refused
//! (`EPERM`) and reported with the keys that would have changed.

use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

use super::create_gate::Forbidden;
use super::gitconfig::{self, UpdateRefused};
use super::unix_gate::{Errno, Refusal, Reporter};
use crate::sys;

/// The most a config may hold, old or new: git's own configs are a few
/// hundred bytes; a larger one is not read into the gate.
const MAX_CONFIG: u64 = 1 << 20;

/// The configs of the repositories that were there before the run, each
/// with a descriptor open for writing from before the view was built.
#[derive(Debug, Default)]
pub struct ConfigFiles {
    /// Each held while a rename over it is decided and written, so two
    /// at once cannot interleave their texts.
    files: Vec<(PathBuf, Mutex<Config>)>,
}

/// One repository's config, open for writing, and what it named when the
/// run started.
#[derive(Debug)]
pub struct Config {
    file: std::fs::File,
    /// Its remotes and submodules then, whose settings stay as they were.
    existing: gitconfig::Existing,
}

impl ConfigFiles {
    /// Opens each of `paths` (regular files with one name only, no final
    /// symlink) for writing; one that cannot be opened so is left out, and
    /// a rename over it is made as the kernel would (and fails: the view
    /// binds it read-only).
    pub fn open(paths: &[PathBuf]) -> ConfigFiles {
        let files = paths
            .iter()
            .filter_map(|path| {
                let fd = nix::fcntl::open(
                    path,
                    OFlag::O_RDWR | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                    Mode::empty(),
                )
                .ok()?;
                let file = std::fs::File::from(sys::own_fd(fd));
                // git never links a config; one with another name could be
                // a file some other tool reads.
                let regular = file.metadata().is_ok_and(|m| m.is_file() && m.nlink() == 1);
                if !regular {
                    return None;
                }
                let existing =
                    gitconfig::Existing::of(&read_whole(&file).ok().flatten().unwrap_or_default());
                Some((path.clone(), Mutex::new(Config { file, existing })))
            })
            .collect();
        ConfigFiles { files }
    }

    /// The config at `path` as the sandbox sees it, if it is one of them.
    pub fn find(&self, path: &Path) -> Option<&Mutex<Config>> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, file)| file)
    }
}

/// A rename of `source_name` in `source_dir` over `config` (the
/// repository config at `path`): the new text replaces the old in place
/// if it may (see the module's docs), and the source is removed.
pub(crate) fn replace(
    config: &Mutex<Config>,
    path: &Path,
    source_dir: &OwnedFd,
    source_name: &OsStr,
    report: &Reporter,
) -> Result<i64, Errno> {
    let refuse = |why: &str| {
        report(Refusal::Create {
            path,
            why: Forbidden::GitConfig(why.to_string()),
        });
        Err(libc::EPERM)
    };
    // A panic elsewhere with the lock held left the file as it was.
    let config = config
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let new = match read_source(source_dir, source_name) {
        Ok(text) => text,
        Err(why) => return refuse(&why),
    };
    let old = match read_whole(&config.file).ok().flatten() {
        Some(text) => text,
        None => return refuse("git config: the repository's config could not be read whole, so no change to it could be checked"),
    };
    match gitconfig::check_update(&old, &new, path, &config.existing) {
        Ok(()) => {}
        Err(UpdateRefused::Unreadable(e)) => {
            return refuse(&format!(
                "git config: the new text is not a config git reads safely ({e})"
            ))
        }
        Err(UpdateRefused::Keys(keys)) => {
            return refuse(&format!(
                "git config: {} could make git run a program, or fetch or push elsewhere, outside the sandbox; inside, user and branch settings may change and remotes and submodules be added, but none that was there may change",
                keys.join(", ")
            ))
        }
    }
    // One write, then the length: a reader never sees the new text
    // followed by the rest of the old, which could read as other entries.
    config
        .file
        .write_all_at(&first_write(&new, old.len()), 0)
        .and_then(|()| config.file.set_len(new.len() as u64))
        .map_err(super::unix_gate::errno)?;
    // The rename would have taken the source away.
    let _ = nix::unistd::unlinkat(
        Some(source_dir.as_raw_fd()),
        source_name,
        nix::unistd::UnlinkatFlags::NoRemoveDir,
    );
    Ok(0)
}

/// What is written over an `old_len`-byte config before its length is
/// set: `new`, then as many newlines as cover the rest of the old text
/// (blank lines, which git reads as nothing; at the end of a line a `\`
/// continues, into one of them, a value that ended there anyway).
fn first_write(new: &[u8], old_len: usize) -> Vec<u8> {
    let mut bytes = new.to_vec();
    bytes.resize(old_len.max(new.len()), b'\n');
    bytes
}

/// The whole of `file`, read from its start whatever its offset (a
/// config's descriptor is shared by the gate's threads); `None` when it is
/// over [`MAX_CONFIG`] bytes.
fn read_whole(file: &std::fs::File) -> std::io::Result<Option<Vec<u8>>> {
    let mut text = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = file.read_at(&mut chunk, text.len() as u64)?;
        if n == 0 {
            return Ok(Some(text));
        }
        text.extend_from_slice(&chunk[..n]);
        if text.len() as u64 > MAX_CONFIG {
            return Ok(None);
        }
    }
}

/// The text of the rename's source: a regular file (not followed if a
/// link), at most [`MAX_CONFIG`] bytes.
fn read_source(dir: &OwnedFd, name: &OsStr) -> Result<Vec<u8>, String> {
    let fd = openat(
        Some(dir.as_raw_fd()),
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| format!("git config: the new text could not be opened ({e})"))?;
    let file = std::fs::File::from(sys::own_fd(fd));
    let unreadable =
        |e: std::io::Error| format!("git config: the new text could not be read ({e})");
    if !file.metadata().map_err(unreadable)?.is_file() {
        return Err("git config: only a regular file may replace a repository's config".into());
    }
    read_whole(&file)
        .map_err(unreadable)?
        .ok_or_else(|| format!("git config: the new text is over {MAX_CONFIG} bytes"))
}

#[cfg(test)]
#[path = "config_gate_tests.rs"]
mod tests;
