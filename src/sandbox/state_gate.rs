//! An agent's config file beside its state directory
//! (`[[files.state_file]]`, Claude Code's `~/.claude.json`), replaced
//! inside only when what it may not change is as it was.
//!
//! The file lives in the home, which the view keeps read-only, and the
//! agent replaces it the atomic way: it writes `<file>.tmp.<id>` beside it
//! and renames that over it (after taking `<file>.lock`, a directory, which
//! it goes on without when it cannot). Creating calls come to the file
//! creation gate (see `create_gate`), which hands these here:
//! - an `open` that makes `<file>.tmp.<anything>` gets a memory file (a
//!   memfd) instead, kept here under that name: nothing is made in the
//!   home, and the agent writes its new text into it;
//! - the rename of that name over the file: the new text replaces the old
//!   one when both read as JSON and every value at the entry's
//!   `unchanged` paths (its MCP servers, the folders it trusts, ...) is as
//!   it was. It is written in place, through a descriptor init opened
//!   before it built the view (the inode stays, so the read-only view
//!   shows the new text), padded with spaces (JSON whitespace) to the old
//!   length before the length is set, so a reader never sees a mix. Else
//!   the rename is refused (`EPERM`) and reported with the paths that
//!   would have changed;
//! - `mkdir` of `<file>.lock`: `EROFS`, as the view would answer, without
//!   a report (the agent goes on without its lock, and every write would
//!   otherwise fill the exit summary).

use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::create_gate::{Forbidden, Reply};
use super::unix_gate::{errno, Errno, Refusal, Reporter};
use crate::policy::state::StateFile;

/// The most a config may hold, old or new, for the gate to read it.
const MAX_TEXT: u64 = 64 << 20;

/// Temporary files kept at once: an agent writes one and renames it at
/// once; more are dropped, oldest first.
const MAX_STAGED: usize = 16;

/// The state files in force, each open for writing from before the view
/// was built, and the temporary files the sandbox made beside them.
#[derive(Debug, Default)]
pub struct StateFiles {
    files: Vec<Held>,
    /// Temporary files made (as the sandbox sees their paths), each a
    /// memory file the caller writes.
    staged: Mutex<Vec<(PathBuf, File)>>,
}

/// One state file.
#[derive(Debug)]
pub struct Held {
    /// Where the sandbox names it: its real directory and its name.
    path: PathBuf,
    /// Its directory's device and inode: a rename names it only where
    /// the sandbox's directory of that name is this one (not, say, the
    /// sandbox's own `/tmp` in place of the host's).
    dir: (u64, u64),
    /// What may not change.
    entry: StateFile,
    /// Held while a replacement is decided and written.
    file: Mutex<File>,
}

impl StateFiles {
    /// Opens each of `files` (its path as the sandbox names it, its
    /// entry) for writing: a regular file with one name only (what it
    /// leads to, when it is a link). One that cannot be opened so is left
    /// out: its replacement then fails as the view would make it fail.
    pub fn open(files: &[(PathBuf, StateFile)]) -> StateFiles {
        let files = files
            .iter()
            .filter_map(|(path, entry)| {
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK)
                    .open(&entry.path)
                    .ok()?;
                let meta = file.metadata().ok()?;
                let dir = std::fs::metadata(path.parent()?).ok()?;
                (meta.is_file() && meta.nlink() == 1).then(|| Held {
                    path: path.clone(),
                    dir: (dir.dev(), dir.ino()),
                    entry: entry.clone(),
                    file: Mutex::new(file),
                })
            })
            .collect();
        StateFiles {
            files,
            staged: Mutex::default(),
        }
    }

    /// The state file `path` names, if it is one, in the directory `dir`
    /// (the rename's, held open) where that is the file's.
    pub fn find(&self, path: &Path, dir: &OwnedFd) -> Option<&Held> {
        let st = nix::sys::stat::fstat(std::os::fd::AsRawFd::as_raw_fd(dir)).ok()?;
        let id = (st.st_dev, st.st_ino);
        self.files.iter().find(|h| h.path == path && h.dir == id)
    }

    /// The state file `path` is a name beside with `suffix` after the
    /// file's name (`.tmp.` and anything, or `.lock` exactly).
    fn beside(&self, path: &Path, suffix: &[u8], exact: bool) -> Option<&Held> {
        let name = path.file_name()?.as_bytes();
        self.files.iter().find(|h| {
            let rest = h
                .path
                .file_name()
                .and_then(|own| name.strip_prefix(own.as_bytes()));
            let fits = |rest: &[u8]| match exact {
                true => rest == suffix,
                false => rest.len() > suffix.len() && rest.starts_with(suffix),
            };
            h.path.parent() == path.parent() && rest.is_some_and(fits)
        })
    }

    /// Whether making `path` makes one of the agent's temporary files
    /// (`<file>.tmp.<anything>`).
    pub fn stages(&self, path: &Path) -> bool {
        self.beside(path, b".tmp.", false).is_some()
    }

    /// Whether `path` is a state file's lock (`<file>.lock`).
    pub fn is_lock(&self, path: &Path) -> bool {
        self.beside(path, b".lock", true).is_some()
    }

    /// Makes the temporary file `path` (see [`StateFiles::stages`]): a
    /// memory file, kept under that name, a descriptor of which the
    /// caller gets.
    pub fn stage(&self, path: &Path, exclusive: bool, cloexec: bool) -> Result<Reply, Errno> {
        let mut staged = self
            .staged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = staged.iter().position(|(p, _)| p == path) {
            if exclusive {
                return Err(libc::EEXIST);
            }
            staged.remove(i);
        }
        let name = std::ffi::CString::new("cordon-state").map_err(|_| libc::EINVAL)?;
        let memfd =
            nix::sys::memfd::memfd_create(&name, nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC)
                .map_err(|e| e as Errno)?;
        let kept = File::from(memfd);
        let theirs = kept.try_clone().map_err(errno)?;
        if staged.len() >= MAX_STAGED {
            staged.remove(0);
        }
        staged.push((path.to_path_buf(), kept));
        Ok(Reply::Fd {
            fd: OwnedFd::from(theirs),
            cloexec,
        })
    }

    /// The rename of the temporary file `source` over `held`: the new
    /// text replaces the old in place if it may (see the module's docs).
    pub fn replace(&self, held: &Held, source: &Path, report: &Reporter) -> Result<i64, Errno> {
        let refuse = |why: String| {
            report(Refusal::Create {
                path: &held.path,
                why: Forbidden::StateFile(why),
            });
            Err(libc::EPERM)
        };
        let staged = {
            let mut staged = self
                .staged
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match staged.iter().position(|(p, _)| p == source) {
                Some(i) => staged.remove(i).1,
                None => {
                    return refuse(format!(
                        "only a temporary file made beside it ({}.tmp.*) may replace it",
                        held.path.display()
                    ))
                }
            }
        };
        let file = held
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (Some(new), Some(old)) = (read_whole(&staged), read_whole(&file)) else {
            return refuse(format!(
                "the old or the new text could not be read whole (at most {MAX_TEXT} bytes), so no change to it could be checked"
            ));
        };
        let parse = |text: &[u8]| serde_json::from_slice::<serde_json::Value>(text);
        let (old_value, new_value) = match (parse(&old), parse(&new)) {
            (Ok(o), Ok(n)) => (o, n),
            _ => {
                return refuse(
                    "the old or the new text is not JSON, so no change to it could be checked"
                        .into(),
                )
            }
        };
        if !new_value.is_object() {
            return refuse("the new text is not a JSON object, as the file's own is".into());
        }
        // Room to grow, not to fill the disk or slow every later start.
        let most = (old.len() as u64).saturating_mul(4).max(1 << 20);
        if new.len() as u64 > most {
            return refuse(format!(
                "the new text is {} bytes, more than four times the old one's {} (or 1 MiB)",
                new.len(),
                old.len()
            ));
        }
        let changed = held.entry.changes(&old_value, &new_value);
        if !changed.is_empty() {
            return refuse(format!(
                "{} would change, which may run a program or trust a folder outside the sandbox; the rest of the file may change inside",
                changed.join(", ")
            ));
        }
        let mut padded = new.clone();
        padded.resize(old.len().max(new.len()), b' ');
        file.write_all_at(&padded, 0)
            .and_then(|()| file.set_len(new.len() as u64))
            .map_err(errno)?;
        Ok(0)
    }
}

/// The whole of `file`, read from its start; `None` past [`MAX_TEXT`].
fn read_whole(file: &File) -> Option<Vec<u8>> {
    let mut text = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = file.read_at(&mut chunk, text.len() as u64).ok()?;
        if n == 0 {
            return Some(text);
        }
        text.extend_from_slice(&chunk[..n]);
        if text.len() as u64 > MAX_TEXT {
            return None;
        }
    }
}

#[cfg(test)]
#[path = "state_gate_tests.rs"]
mod tests;
