//! Git repositories in the writable areas, found as git finds them, and
//! what the sandbox left in them.
//!
//! Git takes for a repository more than a directory named `.git`: any
//! directory holding `HEAD`, `objects/` and `refs/` (a bare repository, a
//! submodule's git dir, one whose `core.worktree` points at the tree around
//! it), a `.git` file whose `gitdir:` line points anywhere (separate git
//! dirs, worktrees, submodules), a symlinked `.git`. [`scan`] walks every
//! writable area once and finds all of them, and the git dirs they lead to
//! wherever those live; the files door protects each ([`Scan`]).
//!
//! After the run, [`sweep`] walks the same areas again: a git dir that was
//! not there before was made by the sandbox, and the parts of it that would
//! run code when the user runs git there (hooks, config keys) are moved
//! aside; a file that gained a set-user-ID or set-group-ID bit or file
//! capabilities loses them. Either walk that cannot finish is an error
//! naming what was not checked: nothing is skipped silently.

use std::collections::BTreeSet;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Most directory entries one walk visits before it gives up (and fails).
pub const SCAN_LIMIT: usize = 2_000_000;

/// [`SCAN_LIMIT`], or a test's smaller one (debug builds only).
fn scan_limit() -> usize {
    super::weaken::number("CORDON_TEST_SCAN_LIMIT").unwrap_or(SCAN_LIMIT)
}

/// Where the parts of a repository the sandbox made are moved, inside it.
pub const QUARANTINE: &str = "cordon-quarantine";

/// Why a walk or a sweep could not finish.
#[derive(Debug, thiserror::Error)]
pub enum ReposError {
    #[error("{root} has more than {limit} entries; cordon walks it for git repositories (and, after the run, for privileged files). Narrow the project with --project, or the writable paths")]
    TooLarge { root: PathBuf, limit: usize },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
}

/// What a walk found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Directories holding a `.git` (directory, file or symlink): the top
    /// of a work tree, where dotfiles that run code are protected.
    pub work_trees: BTreeSet<PathBuf>,
    /// Git dirs, canonical: each holds its own hooks and config.
    pub git_dirs: BTreeSet<PathBuf>,
    /// `.git` files and symlinks: rewriting one redirects git elsewhere.
    pub git_links: BTreeSet<PathBuf>,
}

/// What [`sweep`] did and could not do.
#[derive(Debug, Default)]
pub struct Swept {
    /// Each part moved aside or changed, in words, for the user.
    pub neutralised: Vec<String>,
    /// Each part that could not be checked or neutralised, in words, with
    /// what the user should inspect.
    pub failures: Vec<String>,
}

/// Walks `roots` (canonical directories) for git repositories, without
/// following symlinked directories.
pub fn scan(roots: &[PathBuf]) -> Result<Scan, ReposError> {
    let mut scan = Scan::default();
    walk(roots, |dir, names| {
        classify(dir, names, &mut scan);
        Ok(())
    })?;
    Ok(scan)
}

/// One directory's entries, as the walk saw them.
struct Names {
    files: Vec<std::ffi::OsString>,
    dirs: Vec<std::ffi::OsString>,
    links: Vec<std::ffi::OsString>,
}

impl Names {
    fn has_file(&self, name: &str) -> bool {
        self.files.iter().any(|n| n == name)
    }
    fn has_dir(&self, name: &str) -> bool {
        self.dirs.iter().any(|n| n == name)
    }
}

/// Visits every directory under `roots` once, depth first, with its
/// entries; fails past [`SCAN_LIMIT`] entries, and on a directory it
/// cannot read (what cannot be read cannot be checked).
fn walk(
    roots: &[PathBuf],
    mut visit: impl FnMut(&Path, &Names) -> Result<(), ReposError>,
) -> Result<(), ReposError> {
    let limit = scan_limit();
    for root in roots {
        let mut visited = 0usize;
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let read = |source| ReposError::Read {
                path: dir.clone(),
                source,
            };
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if dir != *root && e.kind() == io::ErrorKind::NotFound => continue,
                // A directory the sandbox (the caller's uid, no capabilities)
                // can neither change back nor write into holds nothing it made.
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && out_of_reach(&dir) => {
                    continue
                }
                Err(e) => return Err(read(e)),
            };
            let mut names = Names {
                files: Vec::new(),
                dirs: Vec::new(),
                links: Vec::new(),
            };
            for entry in entries {
                let entry = entry.map_err(read)?;
                visited += 1;
                if visited > limit {
                    return Err(ReposError::TooLarge {
                        root: root.clone(),
                        limit,
                    });
                }
                let kind = entry.file_type().map_err(read)?;
                let name = entry.file_name();
                if kind.is_dir() {
                    stack.push(dir.join(&name));
                    names.dirs.push(name);
                } else if kind.is_symlink() {
                    names.links.push(name);
                } else {
                    names.files.push(name);
                }
            }
            visit(&dir, &names)?;
        }
    }
    Ok(())
}

/// Whether the caller (and so the sandbox) neither owns `dir` nor may
/// write into it.
fn out_of_reach(dir: &Path) -> bool {
    use nix::unistd::{access, geteuid, AccessFlags};
    let owned = dir
        .symlink_metadata()
        .map_or(true, |m| m.uid() == geteuid().as_raw());
    !owned && access(dir, AccessFlags::W_OK).is_err()
}

/// Records what `dir` is to git.
fn classify(dir: &Path, names: &Names, scan: &mut Scan) {
    // A git dir: HEAD, objects/ and refs/ (bare, a submodule's, `.git`).
    if names.has_file("HEAD") && names.has_dir("objects") && names.has_dir("refs") {
        add_git_dir(dir, scan);
    }
    // A worktree's git dir (`.git/worktrees/<id>`): HEAD, commondir, gitdir.
    if names.has_file("HEAD") && names.has_file("commondir") {
        add_git_dir(dir, scan);
    }
    let dot_git = dir.join(".git");
    if names.has_dir(".git") {
        scan.work_trees.insert(dir.to_path_buf());
    } else if names.has_file(".git") {
        scan.work_trees.insert(dir.to_path_buf());
        scan.git_links.insert(dot_git.clone());
        if let Some(target) = gitdir_file_target(&dot_git) {
            add_git_dir(&target, scan);
        }
    } else if names.links.iter().any(|n| n == ".git") {
        scan.work_trees.insert(dir.to_path_buf());
        scan.git_links.insert(dot_git.clone());
        if dot_git.is_dir() {
            add_git_dir(&dot_git, scan);
        }
    }
}

/// Adds a git dir (canonical), and the common dir it names, if any.
fn add_git_dir(dir: &Path, scan: &mut Scan) {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return;
    };
    if !scan.git_dirs.insert(dir.clone()) {
        return;
    }
    if let Ok(common) = std::fs::read_to_string(dir.join("commondir")) {
        let common = common.trim_end_matches(['\n', '\r']);
        if !common.is_empty() {
            add_git_dir(&dir.join(common), scan);
        }
    }
}

/// Where a `.git` file's `gitdir:` line points (relative to the file).
pub fn gitdir_file_target(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    (!target.is_empty()).then(|| file.parent().unwrap_or(Path::new("/")).join(target))
}

/// The git dir of the work tree `dir` (canonical), if it has a `.git`.
pub fn git_dir_of(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = dot_git.symlink_metadata().ok()?;
    let target = if meta.is_file() {
        gitdir_file_target(&dot_git)?
    } else {
        dot_git
    };
    std::fs::canonicalize(target).ok().filter(|t| t.is_dir())
}

/// The git dirs of the repositories that hold `dir` (git's own upward
/// discovery from there), nearest first, stopping at the first.
pub fn enclosing_git_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for ancestor in dir.ancestors().skip(1) {
        let mut one = Scan::default();
        let names = Names {
            files: listed(ancestor, |t| t.is_file()),
            dirs: listed(ancestor, |t| t.is_dir()),
            links: listed(ancestor, |t| t.is_symlink()),
        };
        classify(ancestor, &names, &mut one);
        if !one.git_dirs.is_empty() || !one.work_trees.is_empty() {
            found.extend(one.git_dirs);
            if let Ok(real) = std::fs::canonicalize(ancestor.join(".git")) {
                if real.is_dir() && !found.contains(&real) {
                    found.push(real);
                }
            }
            break;
        }
    }
    found
}

/// The names in `dir` of the kinds git looks for, if it can be read.
fn listed(dir: &Path, kind: impl Fn(std::fs::FileType) -> bool) -> Vec<std::ffi::OsString> {
    const LOOKED_FOR: [&str; 5] = [".git", "HEAD", "objects", "refs", "commondir"];
    LOOKED_FOR
        .iter()
        .filter(|n| {
            dir.join(n)
                .symlink_metadata()
                .is_ok_and(|m| kind(m.file_type()))
        })
        .map(|n| (*n).into())
        .collect()
}

/// After the run: walks `roots` again; neutralises the git dirs that were
/// not in `before`, and strips privilege bits and file capabilities from
/// files changed since `since`.
pub fn sweep(roots: &[PathBuf], before: &Scan, since: SystemTime) -> Swept {
    let mut swept = Swept::default();
    let mut after = Scan::default();
    let mut privileged: Vec<PathBuf> = Vec::new();
    let since_secs = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let walked = walk(roots, |dir, names| {
        classify(dir, names, &mut after);
        for name in &names.files {
            let path = dir.join(name);
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            // ctime cannot be set back: anything changed during the run has
            // a ctime at or after its start (a second's slack either way).
            if meta.ctime() + 1 < since_secs || !meta.is_file() {
                continue;
            }
            let bits = meta.mode() & (libc::S_ISUID | libc::S_ISGID);
            if bits != 0 || super::sys::has_file_capabilities(&path) {
                privileged.push(path);
            }
        }
        Ok(())
    });
    if let Err(e) = walked {
        swept.failures.push(format!(
            "could not check the writable areas after the run: {e}. Inspect them for git repositories (their hooks and config) and for set-user-ID files before using them"
        ));
    }
    for path in privileged {
        match strip_privilege(&path) {
            Ok(()) => swept.neutralised.push(format!(
                "{}: removed its set-user-ID/set-group-ID bits and file capabilities",
                crate::escape::printable(&path)
            )),
            Err(e) => swept.failures.push(format!(
                "{}: could not remove its set-user-ID/set-group-ID bits or file capabilities ({e}); delete it or run `chmod ug-s` on it",
                crate::escape::printable(&path)
            )),
        }
    }
    for git_dir in after.git_dirs.difference(&before.git_dirs) {
        neutralise_git_dir(git_dir, &mut swept);
    }
    swept
}

fn strip_privilege(path: &Path) -> io::Result<()> {
    let meta = path.symlink_metadata()?;
    let mode = meta.mode() & 0o7777 & !(libc::S_ISUID | libc::S_ISGID);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    // Removing the attribute needs CAP_SETFCAP even where there is none.
    if super::sys::has_file_capabilities(path) {
        super::sys::remove_file_capabilities(path)?;
    }
    Ok(())
}

/// Moves aside what in a git dir the sandbox made would run code when the
/// user runs git there: hooks other than git's samples, and config keys
/// that name programs or files (see `gitconfig::neutralise`).
fn neutralise_git_dir(git_dir: &Path, swept: &mut Swept) {
    let shown = |p: &Path| crate::escape::printable(p);
    let aside = git_dir.join(QUARANTINE);
    let hooks = git_dir.join("hooks");
    if let Ok(entries) = std::fs::read_dir(&hooks) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().ends_with(".sample") {
                continue;
            }
            let to = aside.join("hooks").join(&name);
            match move_aside(&entry.path(), &to) {
                Ok(()) => swept.neutralised.push(format!(
                    "{}: a hook in a repository the sandbox made; moved to {}",
                    shown(&entry.path()),
                    shown(&to)
                )),
                Err(e) => swept.failures.push(format!(
                    "{}: a hook in a repository the sandbox made could not be moved aside ({e}); delete it before running git in {}",
                    shown(&entry.path()),
                    shown(git_dir)
                )),
            }
        }
    }
    for name in ["config", "config.worktree"] {
        let file = git_dir.join(name);
        let Ok(text) = std::fs::read_to_string(&file) else {
            if file.exists() {
                swept.failures.push(format!(
                    "{}: could not be read to check it; inspect it before running git in {}",
                    shown(&file),
                    shown(git_dir)
                ));
            }
            continue;
        };
        let (clean, removed) = match super::gitconfig::neutralise(&text, &file) {
            Ok(neutral) => neutral,
            // Git would refuse it too; it may still be meant for a later,
            // laxer git: the whole file goes aside.
            Err(e) => (
                String::new(),
                vec![super::gitconfig::Removed {
                    key: format!("everything ({e})"),
                    line: 1,
                }],
            ),
        };
        if removed.is_empty() {
            continue;
        }
        let keys: Vec<String> = removed.iter().map(|r| r.key.clone()).collect();
        let original = aside.join(name);
        let rewritten =
            move_aside(&file, &original).and_then(|()| write_new(&file, clean.as_bytes()));
        match rewritten {
            Ok(()) => swept.neutralised.push(format!(
                "{}: removed {} (they could run code when you use git there); the original is {}",
                shown(&file),
                crate::escape::printable(keys.join(", ")),
                shown(&original)
            )),
            Err(e) => swept.failures.push(format!(
                "{}: could not remove {} ({e}); edit it before running git in {}",
                shown(&file),
                crate::escape::printable(keys.join(", ")),
                shown(git_dir)
            )),
        }
    }
}

/// Renames `from` to `to` (a free name), making `to`'s directory first;
/// a directory the sandbox made read-only is made writable for it.
fn move_aside(from: &Path, to: &Path) -> io::Result<()> {
    let parent = to.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent)?;
    let to = free_name(to);
    match std::fs::rename(from, &to) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            if let Some(dir) = from.parent() {
                let mode = dir.symlink_metadata()?.mode() & 0o7777;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700))?;
            }
            std::fs::rename(from, &to)
        }
        other => other,
    }
}

/// `path`, or `path.1`, `path.2`, ... whichever does not exist yet.
fn free_name(path: &Path) -> PathBuf {
    (0u32..)
        .map(|n| match n {
            0 => path.to_path_buf(),
            n => PathBuf::from(format!("{}.{n}", path.display())),
        })
        .find(|p| p.symlink_metadata().is_err())
        .unwrap_or_else(|| path.to_path_buf())
}

/// Writes a new file at `path` (which must not exist), then syncs it.
fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
#[path = "repos_tests.rs"]
mod tests;
