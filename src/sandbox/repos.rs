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
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use nix::fcntl::{OFlag, RenameFlags};
use nix::sys::stat::Mode;

use super::gitconfig::{read_regular, Follow};

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
    #[error("{} has more than {} entries; cordon walks it for git repositories (and, after the run, for privileged files). Narrow the project with --project, or the writable paths", crate::escape::printable(root), limit)]
    TooLarge { root: PathBuf, limit: usize },
    #[error("cannot read {}: {}", crate::escape::printable(path), source)]
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
    /// Entries of any kind whose name was asked for ([`scan`]'s `wanted`).
    pub named: BTreeSet<PathBuf>,
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

impl Swept {
    /// Records one outcome: what was done, or what failed and what the
    /// user should do about it.
    pub fn note(&mut self, outcome: Result<String, String>) {
        match outcome {
            Ok(done) => self.neutralised.push(done),
            Err(failed) => self.failures.push(failed),
        }
    }
}

/// Walks `roots` (canonical directories) for git repositories, without
/// following symlinked directories, and notes every entry named in
/// `wanted`. Directories in `apart` (canonical: cordon's own, which the
/// sandbox can write only through its overlays, and the host's tools
/// never read) are not walked.
pub fn scan(roots: &[PathBuf], wanted: &[&str], apart: &[PathBuf]) -> Result<Scan, ReposError> {
    let mut scan = Scan::default();
    walk(
        roots,
        apart,
        Unreadable::Fail,
        &mut Vec::new(),
        &mut Vec::new(),
        |dir, names| {
            classify(dir, names, &mut scan);
            let all = names.files.iter().chain(&names.dirs).chain(&names.links);
            for name in all.filter(|n| wanted.iter().any(|w| *n == *w)) {
                scan.named.insert(dir.join(name));
            }
        },
    )?;
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
    fn has_link(&self, name: &str) -> bool {
        self.links.iter().any(|n| n == name)
    }
    /// An entry of any kind.
    fn has(&self, name: &str) -> bool {
        self.has_file(name) || self.has_dir(name) || self.has_link(name)
    }

    /// Whether a directory holding these is a git dir to git (see
    /// [`classify`]).
    fn make_a_git_dir(&self) -> bool {
        self.has("HEAD") && ((self.has("objects") && self.has("refs")) || self.has("commondir"))
    }
}

/// Whether `dir` holds what git takes for a git dir (`HEAD`, with
/// `objects` and `refs` or a `commondir`), rather than only being named by
/// a `gitdir:` line or a `.git` link.
pub fn is_git_dir(dir: &Path) -> bool {
    looked_for(dir).make_a_git_dir()
}

/// How a walk meets a directory it cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unreadable {
    /// Before the run: the user's own tree; fail (nothing runs).
    Fail,
    /// After the run: the sandbox may have made it so. A directory the
    /// caller owns is made readable (and named); the walk goes on past
    /// any other error, which is recorded.
    Repair,
}

/// Visits every directory under `roots` once, depth first, with its
/// entries; fails past [`SCAN_LIMIT`] entries. A directory it cannot read
/// fails the walk ([`Unreadable::Fail`]) or is repaired or recorded
/// ([`Unreadable::Repair`], into `errors`); what cannot be read cannot be
/// checked.
fn walk(
    roots: &[PathBuf],
    apart: &[PathBuf],
    unreadable: Unreadable,
    errors: &mut Vec<ReposError>,
    repaired: &mut Vec<PathBuf>,
    mut visit: impl FnMut(&Path, &Names),
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
            let listed = match std::fs::read_dir(&dir) {
                Err(e)
                    if e.kind() == io::ErrorKind::PermissionDenied
                        && unreadable == Unreadable::Repair
                        && make_readable(&dir, roots) =>
                {
                    repaired.push(dir.clone());
                    std::fs::read_dir(&dir)
                }
                other => other,
            };
            let entries = match listed {
                Ok(entries) => entries,
                Err(e) if dir != *root && e.kind() == io::ErrorKind::NotFound => continue,
                // A directory the sandbox (the caller's uid, no capabilities)
                // can neither change back nor write into holds nothing it made.
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && out_of_reach(&dir) => {
                    continue
                }
                Err(e) if unreadable == Unreadable::Repair => {
                    errors.push(read(e));
                    continue;
                }
                Err(e) => return Err(read(e)),
            };
            let mut names = Names {
                files: Vec::new(),
                dirs: Vec::new(),
                links: Vec::new(),
            };
            for entry in entries {
                let entry = match entry.and_then(|e| e.file_type().map(|t| (e, t))) {
                    Ok(entry) => entry,
                    Err(e) if unreadable == Unreadable::Repair => {
                        errors.push(read(e));
                        continue;
                    }
                    Err(e) => return Err(read(e)),
                };
                visited += 1;
                if visited > limit {
                    return Err(ReposError::TooLarge {
                        root: root.clone(),
                        limit,
                    });
                }
                let (entry, kind) = entry;
                let name = entry.file_name();
                if kind.is_dir() {
                    let path = dir.join(&name);
                    if !apart.contains(&path) {
                        stack.push(path);
                    }
                    names.dirs.push(name);
                } else if kind.is_symlink() {
                    names.links.push(name);
                } else {
                    names.files.push(name);
                }
            }
            visit(&dir, &names);
        }
    }
    Ok(())
}

/// Gives the owner read, write and search on `dir`, a real directory
/// inside `roots` that the caller owns. Done on a descriptor: another
/// sandbox sharing the area may still be running and swapping names.
fn make_readable(dir: &Path, roots: &[PathBuf]) -> bool {
    let Ok(fd) = open_inside(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW,
        roots,
    ) else {
        return false;
    };
    let Ok(st) = nix::sys::stat::fstat(fd.as_raw_fd()) else {
        return false;
    };
    if st.st_uid != nix::unistd::geteuid().as_raw() {
        return false;
    }
    let mode = st.st_mode & 0o7777 | 0o700;
    std::fs::set_permissions(fd_path(&fd), std::fs::Permissions::from_mode(mode)).is_ok()
}

/// Opens `path` with `flags` and checks, on the descriptor, that what was
/// opened lies inside `roots`: a path walked earlier may lead elsewhere
/// by now if another sandbox sharing the area swapped a directory for a
/// link.
fn open_inside(path: &Path, flags: OFlag, roots: &[PathBuf]) -> io::Result<OwnedFd> {
    let fd = crate::sys::own_fd(nix::fcntl::open(
        path,
        flags | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?);
    let real = std::fs::read_link(fd_path(&fd))?;
    if !roots.iter().any(|r| real.starts_with(r)) {
        return Err(io::Error::other(format!(
            "it now leads outside the writable areas, to {}",
            crate::escape::printable(&real)
        )));
    }
    Ok(fd)
}

/// The `/proc` name of a descriptor of ours: reaches its file itself.
fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
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

/// Records what `dir` is to git. Git accepts more than the usual
/// layout: `HEAD` may be a symlink, `objects` and `refs` symlinks to
/// directories; so `HEAD` of any kind with `objects` and `refs` of any
/// kind (or a `commondir`, whose objects and refs are elsewhere) makes a
/// git dir here, which over-approximates git, the safe side.
fn classify(dir: &Path, names: &Names, scan: &mut Scan) {
    if names.make_a_git_dir() {
        add_git_dir(dir, scan);
    }
    let dot_git = dir.join(".git");
    if names.has_dir(".git") {
        scan.work_trees.insert(dir.to_path_buf());
        // Whatever it holds: git may be pointed at it as it is later.
        add_git_dir(&dot_git, scan);
    } else if names.has_file(".git") {
        scan.work_trees.insert(dir.to_path_buf());
        scan.git_links.insert(dot_git.clone());
        if let Some(target) = gitdir_file_target(&dot_git) {
            add_git_dir(&target, scan);
        }
    } else if names.has_link(".git") {
        scan.work_trees.insert(dir.to_path_buf());
        scan.git_links.insert(dot_git.clone());
        if dot_git.is_dir() {
            add_git_dir(&dot_git, scan);
        } else if let Some(target) = gitdir_file_target(&dot_git) {
            // A link to a `.git` file: git reads the file it leads to.
            add_git_dir(&target, scan);
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
    if let Some(common) = common_dir_of(&dir) {
        add_git_dir(&common, scan);
    }
}

/// Where a git dir's `commondir` points, read as git reads it: through a
/// link, up to a NUL byte, without the line end; relative to the git dir.
fn common_dir_of(git_dir: &Path) -> Option<PathBuf> {
    let bytes = read_regular(&git_dir.join("commondir"), Follow::Yes).ok()?;
    let text = bytes.split(|b| *b == 0).next().unwrap_or_default();
    let text = String::from_utf8_lossy(text);
    let common = text.trim_end_matches(['\n', '\r']);
    (!common.is_empty()).then(|| git_dir.join(common))
}

/// Where a `.git` file's `gitdir:` line points (relative to the file).
pub fn gitdir_file_target(file: &Path) -> Option<PathBuf> {
    let text = read_regular(file, Follow::Yes).ok()?;
    let text = String::from_utf8_lossy(&text);
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
        classify(ancestor, &looked_for(ancestor), &mut one);
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

/// The names in `dir` git looks for, by kind, each looked at once.
fn looked_for(dir: &Path) -> Names {
    const LOOKED_FOR: [&str; 5] = [".git", "HEAD", "objects", "refs", "commondir"];
    let mut names = Names {
        files: Vec::new(),
        dirs: Vec::new(),
        links: Vec::new(),
    };
    for name in LOOKED_FOR {
        let Ok(meta) = dir.join(name).symlink_metadata() else {
            continue;
        };
        let kind = meta.file_type();
        let of_kind = if kind.is_file() {
            &mut names.files
        } else if kind.is_dir() {
            &mut names.dirs
        } else if kind.is_symlink() {
            &mut names.links
        } else {
            continue;
        };
        of_kind.push(name.into());
    }
    names
}

/// After the run: walks `roots` again; neutralises the git dirs inside
/// them that were not in `before`, and strips privilege bits and file
/// capabilities from files changed since `since`. The sandbox is gone by
/// now, so nothing changes under the sweep; what it left is still
/// hostile: every file is opened without following links or blocking,
/// and moved only between descriptors of directories cordon opened.
/// Directories in `apart` are not walked (see [`scan`]). A new git dir at
/// or beneath one of `read_only` (the paths the view kept read-only), and
/// in no writable area beneath that, holds nothing the sandbox wrote and
/// is left as it is.
pub fn sweep(
    roots: &[PathBuf],
    read_only: &[PathBuf],
    before: &Scan,
    since: SystemTime,
    apart: &[PathBuf],
) -> Swept {
    let shown = |p: &Path| crate::escape::printable(p);
    let mut swept = Swept::default();
    let mut after = Scan::default();
    let mut privileged: Vec<PathBuf> = Vec::new();
    let (mut errors, mut repaired) = (Vec::new(), Vec::new());
    let since_secs = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let walked = walk(
        roots,
        apart,
        Unreadable::Repair,
        &mut errors,
        &mut repaired,
        |dir, names| {
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
                if bits != 0 || crate::sys::has_file_capabilities(&path) {
                    privileged.push(path);
                }
            }
        },
    );
    if let Err(e) = walked {
        errors.push(e);
    }
    for e in errors {
        swept.failures.push(format!(
            "could not check the writable areas after the run: {e}. Inspect what lies there for git repositories (their hooks and config) and for set-user-ID files before using it"
        ));
    }
    for dir in repaired {
        swept.neutralised.push(format!(
            "{}: the sandbox left it unreadable to you; made it readable to check it",
            shown(&dir)
        ));
    }
    for path in privileged {
        let shown = shown(&path);
        swept.note(
            strip_privilege(&path, roots)
                .map(|()| format!("{shown}: removed its set-user-ID/set-group-ID bits and file capabilities"))
                .map_err(|e| format!("{shown}: could not remove its set-user-ID/set-group-ID bits or file capabilities ({e}); delete it or run `chmod ug-s` on it")),
        );
    }
    // A new `.git` link or file pointing out of the writable areas leads
    // git (and cordon's next run) to a directory the sandbox chose: moved
    // aside beside itself.
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    for link in after.git_links.difference(&before.git_links) {
        let target = if link.is_symlink() {
            std::fs::canonicalize(link).ok()
        } else {
            gitdir_file_target(link).and_then(|t| std::fs::canonicalize(t).ok())
        };
        if target.as_deref().is_some_and(inside) {
            continue;
        }
        let moved = link
            .parent()
            .ok_or_else(|| io::Error::other("no parent"))
            .and_then(|parent| {
                open_inside(
                    parent,
                    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW,
                    roots,
                )
            })
            .and_then(|dir| {
                let aside = OsStr::new(".git.cordon-quarantine");
                with_write_access(&dir, || {
                    nix::fcntl::renameat2(
                        Some(dir.as_raw_fd()),
                        ".git",
                        Some(dir.as_raw_fd()),
                        aside,
                        RenameFlags::RENAME_NOREPLACE,
                    )
                })
            });
        let shown = shown(link);
        swept.note(
            moved
                .map(|()| format!("{shown}: points git outside the writable areas; renamed to .git.cordon-quarantine"))
                .map_err(|e| format!("{shown}: points git outside the writable areas and could not be moved aside ({e}); remove it")),
        );
    }
    // Only git dirs inside the writable areas are the sandbox's to have
    // made; a pointer it left to one elsewhere leads to the user's own, as
    // does one to a directory the sandbox could not write (a `gitdir:`
    // line may name any: one under --deny-write, another tool's).
    let unwritable = |g: &Path| {
        read_only.iter().any(|r| {
            g.starts_with(r) && !roots.iter().any(|w| w.starts_with(r) && g.starts_with(w))
        })
    };
    let new = after
        .git_dirs
        .difference(&before.git_dirs)
        .filter(|g| inside(g) && !unwritable(g));
    for git_dir in new {
        if let Err(e) = neutralise_git_dir(git_dir, roots, &mut swept) {
            swept.failures.push(format!(
                "{}: a repository the sandbox made could not be checked ({e}); delete its hooks and check its config before running git there",
                shown(git_dir)
            ));
        }
    }
    swept
}

fn strip_privilege(path: &Path, roots: &[PathBuf]) -> io::Result<()> {
    let fd = open_inside(path, OFlag::O_PATH | OFlag::O_NOFOLLOW, roots)?;
    let st = nix::sys::stat::fstat(fd.as_raw_fd())?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(io::Error::other("no longer a regular file"));
    }
    let mode = st.st_mode & 0o7777 & !(libc::S_ISUID | libc::S_ISGID);
    std::fs::set_permissions(fd_path(&fd), std::fs::Permissions::from_mode(mode))?;
    // Removing the attribute needs CAP_SETFCAP even where there is none.
    if crate::sys::has_file_capabilities(path) {
        crate::sys::remove_file_capabilities(path)?;
    }
    Ok(())
}

/// A directory of cordon's own inside a git dir, made for what the sweep
/// moves aside: new, so no link planted in advance can redirect a move.
struct Quarantine<'a> {
    git_dir: &'a Path,
    parent: &'a OwnedFd,
    made: Option<(PathBuf, OwnedFd)>,
}

impl Quarantine<'_> {
    /// The directory, made on first use (`cordon-quarantine`, or with a
    /// number if that name is taken).
    fn dir(&mut self) -> io::Result<(&Path, &OwnedFd)> {
        if self.made.is_none() {
            let mut made = None;
            for n in 0..100 {
                // The plain name, else a random one: the sandbox may have
                // taken every name it could guess.
                let name = match n {
                    0 => QUARANTINE.to_string(),
                    _ => format!("{QUARANTINE}-{}", random_suffix()?),
                };
                let parent = self.parent;
                let mkdir = || {
                    nix::sys::stat::mkdirat(
                        Some(parent.as_raw_fd()),
                        name.as_str(),
                        Mode::from_bits_truncate(0o700),
                    )
                };
                match with_write_access(parent, mkdir) {
                    Ok(()) => {
                        let fd = open_dir_at(parent, OsStr::new(&name))?;
                        made = Some((self.git_dir.join(&name), fd));
                        break;
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                    Err(e) => return Err(e),
                }
            }
            self.made = Some(made.ok_or_else(|| io::Error::other("no free quarantine name"))?);
        }
        let (path, fd) = self
            .made
            .as_ref()
            .ok_or_else(|| io::Error::other("no quarantine"))?;
        Ok((path.as_path(), fd))
    }

    /// Moves `name` of `from` (a directory cordon opened) into it.
    fn take(&mut self, from: &OwnedFd, name: &OsStr) -> io::Result<PathBuf> {
        let (path, to) = self.dir()?;
        let path = path.join(name);
        let to = to.as_raw_fd();
        with_write_access(from, || {
            nix::fcntl::renameat2(
                Some(from.as_raw_fd()),
                name,
                Some(to),
                name,
                RenameFlags::RENAME_NOREPLACE,
            )
        })?;
        Ok(path)
    }
}

/// Eight random hex digits.
fn random_suffix() -> io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 4];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Runs `op` on directory `dir`; if the sandbox left the directory
/// unwritable to its owner (the caller), gives the owner write access back
/// and runs it once more.
fn with_write_access(dir: &OwnedFd, op: impl Fn() -> nix::Result<()>) -> io::Result<()> {
    match op() {
        Err(nix::errno::Errno::EACCES) => {
            let st = nix::sys::stat::fstat(dir.as_raw_fd())?;
            if st.st_uid != nix::unistd::geteuid().as_raw() {
                return Err(nix::errno::Errno::EACCES.into());
            }
            let mode = Mode::from_bits_truncate((st.st_mode & 0o7777) | 0o700);
            nix::sys::stat::fchmod(dir.as_raw_fd(), mode)?;
            Ok(op()?)
        }
        other => Ok(other?),
    }
}

/// Opens the directory `name` in `parent`, never through a link.
fn open_dir_at(parent: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    let fd = nix::fcntl::openat(
        Some(parent.as_raw_fd()),
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    Ok(crate::sys::own_fd(fd))
}

/// Moves aside what in a git dir the sandbox made would run code when the
/// user runs git there: hooks other than git's samples (or a `hooks` that
/// is not a plain directory), and config keys that name programs or files
/// (see `gitconfig::neutralise`; a config that is not a plain file git
/// reads, or that cannot be read as one, goes aside whole).
fn neutralise_git_dir(git_dir: &Path, roots: &[PathBuf], swept: &mut Swept) -> io::Result<()> {
    let shown = |p: &Path| crate::escape::printable(p);
    let dir = open_inside(
        git_dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW,
        roots,
    )?;
    let mut aside = Quarantine {
        git_dir,
        parent: &dir,
        made: None,
    };
    let hooks = git_dir.join("hooks");
    let opened = match open_dir_at(&dir, OsStr::new("hooks")) {
        Err(e) if e.raw_os_error() == Some(libc::EACCES) && make_readable(&hooks, roots) => {
            open_dir_at(&dir, OsStr::new("hooks"))
        }
        other => other,
    };
    match opened {
        Ok(hooks_fd) => {
            let listed = nix::dir::Dir::from_fd(nix::unistd::dup(hooks_fd.as_raw_fd())?)?;
            let names: Vec<std::ffi::OsString> = listed
                .into_iter()
                .filter_map(Result::ok)
                .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
                .filter(|n| n != "." && n != ".." && !n.as_bytes().ends_with(b".sample"))
                .collect();
            for name in names {
                let moved = aside.dir().and_then(|(qpath, qfd)| {
                    let sub = ensure_subdir(qfd, "hooks")?;
                    with_write_access(&hooks_fd, || {
                        nix::fcntl::renameat2(
                            Some(hooks_fd.as_raw_fd()),
                            name.as_os_str(),
                            Some(sub.as_raw_fd()),
                            name.as_os_str(),
                            RenameFlags::RENAME_NOREPLACE,
                        )
                    })?;
                    Ok(qpath.join("hooks").join(&name))
                });
                let path = hooks.join(&name);
                swept.note(
                    moved
                    .map(|to| format!(
                        "{}: a hook in a repository the sandbox made; moved to {}",
                        shown(&path),
                        shown(&to)
                    ))
                    .map_err(|e| format!(
                        "{}: a hook in a repository the sandbox made could not be moved aside ({e}); delete it before running git in {}",
                        shown(&path),
                        shown(git_dir)
                    )),
                )
            }
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
        // A link or anything else where git looks for hooks: the entry
        // itself goes aside.
        Err(_) => swept.note(
            aside
                .take(&dir, OsStr::new("hooks"))
                .map(|to| {
                    format!(
                        "{}: not a plain directory in a repository the sandbox made; moved to {}",
                        shown(&hooks),
                        shown(&to)
                    )
                })
                .map_err(|e| {
                    format!(
                        "{}: could not be moved aside ({e}); remove it before running git in {}",
                        shown(&hooks),
                        shown(git_dir)
                    )
                }),
        ),
    }
    // A `commondir` that leads nowhere git can use is the sandbox's doing
    // (one that leads somewhere was followed: that directory is swept too).
    // A linked one too: cordon's next run could not keep it in place.
    let commondir = git_dir.join("commondir");
    let meta = commondir.symlink_metadata();
    let linked = meta.as_ref().is_ok_and(|m| m.file_type().is_symlink());
    if meta.is_ok() && (linked || !common_dir_of(git_dir).is_some_and(|c| c.is_dir())) {
        let shown = shown(&commondir);
        swept.note(
            aside
                .take(&dir, OsStr::new("commondir"))
                .map(|to| format!("{shown}: a link, or points nowhere git can use; moved to {}", crate::escape::printable(&to)))
                .map_err(|e| format!("{shown}: could not be moved aside ({e}); remove it before running git there")),
        );
    }
    for name in ["config", "config.worktree"] {
        let file = git_dir.join(name);
        let read = match file.symlink_metadata() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            _ => read_regular(&file, Follow::No),
        };
        // A config git reads, minus what could run code; one that is not
        // a plain file, cannot be read, is not text or does not parse
        // goes aside whole (git may still read it, or a later git may).
        let neutral = read
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| super::gitconfig::neutralise(&text, &file).ok());
        let outcome = match neutral {
            Some((_, removed)) if removed.is_empty() => continue,
            Some((clean, removed)) => {
                let keys: Vec<String> = removed.iter().map(|r| r.key.clone()).collect();
                aside.take(&dir, OsStr::new(name)).and_then(|to| {
                    write_new_at(&dir, name, clean.as_bytes())?;
                    Ok(format!(
                        "{}: removed {} (they could run code when you use git there); the original is {}",
                        shown(&file),
                        crate::escape::printable(keys.join(", ")),
                        shown(&to)
                    ))
                })
            }
            None => aside.take(&dir, OsStr::new(name)).map(|to| {
                format!(
                    "{}: not a config git reads safely (not a plain text file, or it does not parse); moved whole to {}",
                    shown(&file),
                    shown(&to)
                )
            }),
        };
        match outcome {
            Ok(line) => swept.neutralised.push(line),
            Err(e) => swept.failures.push(format!(
                "{}: could not be neutralised ({e}); remove or edit it before running git in {}",
                shown(&file),
                shown(git_dir)
            )),
        }
    }
    Ok(())
}

/// The directory `name` in `parent` (cordon's own), made if missing.
fn ensure_subdir(parent: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    match nix::sys::stat::mkdirat(
        Some(parent.as_raw_fd()),
        name,
        Mode::from_bits_truncate(0o700),
    ) {
        Ok(()) | Err(nix::errno::Errno::EEXIST) => open_dir_at(parent, OsStr::new(name)),
        Err(e) => Err(e.into()),
    }
}

/// Writes a new file `name` in `dir` (it must not exist), then syncs it.
fn write_new_at(dir: &OwnedFd, name: &str, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let fd = nix::fcntl::openat(
        Some(dir.as_raw_fd()),
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o644),
    )?;
    let mut file = std::fs::File::from(crate::sys::own_fd(fd));
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
#[path = "repos_tests.rs"]
mod tests;
