//! The file creation gate: names that run code later outside the sandbox
//! cannot be created, and nothing is put on the host to stop them.
//!
//! A protected name that exists (`.git/config`, a `.bashrc`) is bound
//! read-only by the mount view. One that does not exist has nothing to
//! mount over, and an empty placeholder left in the user's project is a
//! trace (git lists it, tools trip on it). So every system call that can
//! create a name (`open`/`openat` with `O_CREAT`, `creat`, `mkdir*`,
//! `mknod*`, `link*`, `symlink*`, `rename*`, `bind` of a UNIX socket
//! path) stops in the command's
//! seccomp filter and comes here, to the gate's threads in init (see
//! `crate::sandbox::unix_gate`, which owns the listener).
//!
//! The gate never lets a call continue: it reads the path once, resolves
//! its directory to a descriptor, asks the kernel where that directory is
//! (`/proc/self/fd`), decides on that path, and makes the call itself on
//! the descriptor, so neither a second thread rewriting the path nor a
//! symlink swapped in afterwards changes what was decided. An `open`'s
//! descriptor is handed to the caller with `SECCOMP_IOCTL_NOTIF_ADDFD`.
//! Init's threads carry the command's uid, Landlock domain and (no)
//! capabilities, so the gate can make nothing the command could not.
//!
//! What is refused:
//! - a guarded path, or anything beneath one ([`Guard`]);
//! - anything but a directory on the way to a guarded path (a symlink or a
//!   renamed directory there would put the guarded path elsewhere);
//! - a hook (a name without `.sample` in the `hooks` directory of any git
//!   dir, one the sandbox made included): git would run it on the host;
//! - a set-user-ID or set-group-ID bit in the mode of a new file.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{openat, readlinkat, AtFlags, OFlag, RenameFlags};
use nix::sys::stat::{Mode, SFlag};
use nix::unistd::Pid;

use serde::{Deserialize, Serialize};

use crate::sandbox::config_gate;
use crate::sandbox::seccomp::{Creating, Notification};
use crate::sandbox::umask::Umasks;
use crate::sandbox::unix_gate::{errno, Caller, Errno, FileRules, Refusal, Reporter};
use crate::sys;

/// Symlinks an `open` follows before it gives up, as the kernel does.
const MAX_HOPS: usize = 40;

/// What the gate answers a creating call with.
pub enum Reply {
    /// The call's return value.
    Value(i64),
    /// A descriptor for the caller (an `open`), with `O_CLOEXEC` or not.
    Fd { fd: OwnedFd, cloexec: bool },
    /// The call made by the kernel, as the caller asked.
    Continue,
}

/// Paths, as the sandbox sees them, that must not come into existence.
#[derive(Debug, Default, Clone)]
pub struct Guard {
    /// Neither these paths nor anything beneath them may be created.
    guarded: HashSet<PathBuf>,
    /// Directories on the way to a guarded path: only `mkdir` there.
    on_the_way: HashSet<PathBuf>,
    /// Directories where no name matching [`Guard::patterns`] may be made.
    pattern_dirs: HashSet<PathBuf>,
    /// Protected name patterns (`*.code-workspace`).
    patterns: globset::GlobSet,
    /// Names refused in every directory of the writable areas: a final
    /// name, with the name its directory must have (`.cargo/config.toml`).
    anywhere: Vec<(Option<String>, String)>,
    /// The writable areas, where [`Guard::anywhere`] applies.
    roots: Vec<PathBuf>,
    /// Agents' state directories, each with the only names that may be
    /// made in it.
    only: Vec<(PathBuf, Vec<String>)>,
    /// Paths below them that may not be made (`[[files.state]] protect`).
    state_protect: globset::GlobSet,
    /// Their scratch directories, tmpfs mounts of the run's own: a link
    /// made in one goes with the run.
    scratch: Vec<PathBuf>,
}

/// What kind of name a call makes, as the guard tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Make {
    /// A new, empty directory (`mkdir`).
    Dir,
    /// Anything else: a file, a symlink, a node, a link, a rename.
    Other,
}

impl Guard {
    /// A guard for `paths`; the directories between each and the writable
    /// root holding it (exclusive) are kept as directories.
    pub fn new(paths: impl IntoIterator<Item = PathBuf>, writable: &[PathBuf]) -> Guard {
        let mut guard = Guard::default();
        for path in paths {
            if let Some(rest) = writable.iter().find_map(|w| path.strip_prefix(w).ok()) {
                // Each ancestor drops one component of what lies below
                // the root: all but the last are between.
                let between = rest.components().count().saturating_sub(1);
                let between = path.ancestors().skip(1).take(between);
                guard.on_the_way.extend(between.map(Path::to_path_buf));
            }
            guard.guarded.insert(path);
        }
        guard
    }

    /// Also refuses, in each of `dirs`, the names that match `patterns`.
    pub fn with_patterns(
        mut self,
        dirs: impl IntoIterator<Item = PathBuf>,
        patterns: globset::GlobSet,
    ) -> Guard {
        self.pattern_dirs.extend(dirs);
        self.patterns = patterns;
        self
    }

    /// Also refuses, in every directory of the writable areas, the names
    /// `names` (`name` or `dir/name`); and, for a `dir/name`, anything but
    /// a directory named `dir` (a link there would move the name).
    pub fn anywhere(mut self, names: &[&str], writable: &[PathBuf]) -> Guard {
        self.anywhere = names
            .iter()
            .map(|n| match n.split_once('/') {
                Some((dir, name)) => (Some(dir.to_string()), name.to_string()),
                None => (None, n.to_string()),
            })
            .collect();
        self.roots = writable.to_vec();
        self
    }

    /// Also refuses, in each state directory of `state`, every name but
    /// those it lists (see [`Guard::outside_state`]), and below them what
    /// `protect` matches.
    pub fn only(mut self, state: &[(PathBuf, Vec<String>)], protect: globset::GlobSet) -> Guard {
        self.only = state.to_vec();
        self.state_protect = protect;
        self
    }

    /// Also lets links be made in the state directories' scratch
    /// directories `scratch` (what they hold goes with the run).
    pub fn scratch(mut self, scratch: &[PathBuf]) -> Guard {
        self.scratch = scratch.to_vec();
        self
    }

    /// The state directory `path` lies strictly beneath, if one.
    pub fn in_state(&self, path: &Path) -> Option<&Path> {
        self.only
            .iter()
            .map(|(dir, _)| dir.as_path())
            .find(|dir| path.starts_with(dir) && path != *dir)
    }

    /// The state directory (and its names) `path` is directly in without
    /// being one of its names, if it is.
    pub fn outside_state(&self, path: &Path) -> Option<&(PathBuf, Vec<String>)> {
        let name = path.file_name()?;
        self.only.iter().find(|(dir, names)| {
            path.parent() == Some(dir.as_path())
                && !names
                    .iter()
                    .any(|n| crate::policy::state::name_matches(n, name))
        })
    }

    /// Whether `path` lies in one of the writable areas.
    pub fn in_writable_area(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| path.starts_with(root))
    }

    /// Whether nothing is guarded.
    pub fn is_empty(&self) -> bool {
        self.guarded.is_empty() && self.pattern_dirs.is_empty() && self.only.is_empty()
    }

    /// The guarded paths, sorted (for `explain` and tests).
    pub fn paths(&self) -> Vec<&Path> {
        let mut paths: Vec<&Path> = self.guarded.iter().map(PathBuf::as_path).collect();
        paths.sort();
        paths
    }

    /// The guarded path that forbids making `path`, if one does.
    pub fn forbids(&self, path: &Path, make: Make) -> Option<PathBuf> {
        if let Some(hit) = path.ancestors().find_map(|a| self.guarded.get(a)) {
            return Some(hit.clone());
        }
        if make == Make::Other && self.on_the_way.contains(path) {
            return Some(path.to_path_buf());
        }
        if self
            .roots
            .iter()
            .any(|r| path.starts_with(r) && path != r.as_path())
        {
            let name = path.file_name().and_then(OsStr::to_str);
            let dir = path
                .parent()
                .and_then(Path::file_name)
                .and_then(OsStr::to_str);
            for (want_dir, want) in &self.anywhere {
                let named = Some(want.as_str()) == name
                    && want_dir.as_deref().is_none_or(|d| Some(d) == dir);
                let its_dir = make == Make::Other && want_dir.as_deref() == name && name.is_some();
                if named || its_dir {
                    return Some(path.to_path_buf());
                }
            }
        }
        if let Some(hit) = path
            .ancestors()
            .find(|a| self.in_state(a).is_some() && self.state_protect.is_match(a))
        {
            return Some(hit.to_path_buf());
        }
        let in_pattern_dir = path.parent().is_some_and(|p| self.pattern_dirs.contains(p));
        if in_pattern_dir && path.file_name().is_some_and(|n| self.patterns.is_match(n)) {
            return Some(path.to_path_buf());
        }
        None
    }
}

/// Where a path argument puts a new name: its directory, held open, the
/// name, and the whole path as the sandbox sees it.
struct Place {
    dir: OwnedFd,
    name: OsString,
    path: PathBuf,
    /// The argument ended in `/`.
    trailing_slash: bool,
}

/// Serves one creating call (see the module's docs).
pub(crate) fn serve(
    caller: &Caller,
    call: &Notification,
    kind: Creating,
    files: &FileRules,
    umasks: &Umasks,
    report: &Reporter,
) -> Result<Reply, Errno> {
    let guard = &files.guard;
    let a = call.args;
    let dirfd = |i: usize| a[i] as i32;
    match kind {
        Creating::Open { at, creat } => {
            take_callers_umask(caller, umasks)?;
            let (dir, path, flags, mode) = match (at, creat) {
                (_, true) => (
                    libc::AT_FDCWD,
                    a[0],
                    libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
                    a[1],
                ),
                (false, false) => (libc::AT_FDCWD, a[0], a[1] as i32, a[2]),
                (true, false) => (dirfd(0), a[1], a[2] as i32, a[3]),
            };
            if has_privilege_bits(mode) {
                return refuse_mode(call, report);
            }
            if flags & libc::O_CREAT == 0 {
                // Only an O_TMPFILE with a privilege bit stops here.
                return refuse_mode(call, report);
            }
            let path = caller.read_path(path)?;
            open(caller, dir, &path, flags, mode, files, report)
        }
        Creating::Mkdir { at } => {
            take_callers_umask(caller, umasks)?;
            let (dir, path, mode) = if at {
                (dirfd(0), a[1], a[2])
            } else {
                (libc::AT_FDCWD, a[0], a[1])
            };
            let place = new_place(caller, dir, &caller.read_path(path)?)?;
            // An agent's lock beside its config file: refused as the view
            // would, unreported (it goes on without; see `state_gate`).
            if files.state_files.is_lock(&place.path) {
                return Err(libc::EROFS);
            }
            admit(&place, Make::Dir, guard, report)?;
            nix::sys::stat::mkdirat(
                Some(place.dir.as_raw_fd()),
                place.name.as_os_str(),
                Mode::from_bits_truncate(mode as u32),
            )
            .map_err(|e| refused_write(e, &place, guard, report))?;
            Ok(Reply::Value(0))
        }
        Creating::Mknod { at } => {
            take_callers_umask(caller, umasks)?;
            let (dir, path, mode, dev) = if at {
                (dirfd(0), a[1], a[2], a[3])
            } else {
                (libc::AT_FDCWD, a[0], a[1], a[2])
            };
            if has_privilege_bits(mode) {
                return refuse_mode(call, report);
            }
            let place = new_place(caller, dir, &caller.read_path(path)?)?;
            admit(&place, Make::Other, guard, report)?;
            let mode = mode as u32;
            nix::sys::stat::mknodat(
                Some(place.dir.as_raw_fd()),
                place.name.as_os_str(),
                SFlag::from_bits_truncate(mode & libc::S_IFMT),
                Mode::from_bits_truncate(mode & !libc::S_IFMT),
                dev,
            )
            .map_err(|e| refused_write(e, &place, guard, report))?;
            Ok(Reply::Value(0))
        }
        Creating::Symlink { at } => {
            let (target, dir, path) = if at {
                (a[0], dirfd(1), a[2])
            } else {
                (a[0], libc::AT_FDCWD, a[1])
            };
            let target = OsString::from_vec(caller.read_path(target)?);
            let place = new_place(caller, dir, &caller.read_path(path)?)?;
            admit(&place, Make::Other, guard, report)?;
            refuse_link_in_state(&place, guard, report)?;
            nix::unistd::symlinkat(
                target.as_os_str(),
                Some(place.dir.as_raw_fd()),
                place.name.as_os_str(),
            )
            .map_err(|e| refused_write(e, &place, guard, report))?;
            Ok(Reply::Value(0))
        }
        Creating::Link { at } => {
            let (old_dir, old, new_dir, new, flags) = if at {
                (dirfd(0), a[1], dirfd(2), a[3], a[4] as i32)
            } else {
                (libc::AT_FDCWD, a[0], libc::AT_FDCWD, a[1], 0)
            };
            if flags & !(libc::AT_SYMLINK_FOLLOW | libc::AT_EMPTY_PATH) != 0 {
                return Err(libc::EINVAL);
            }
            let old = caller.read_path(old)?;
            let place = new_place(caller, new_dir, &caller.read_path(new)?)?;
            admit(&place, Make::Other, guard, report)?;
            // An empty path with AT_EMPTY_PATH names the descriptor itself
            // (an O_TMPFILE being given its name): linked through its
            // /proc link, which needs no capability.
            let follow = flags & libc::AT_SYMLINK_FOLLOW != 0;
            let source = if old.is_empty() && flags & libc::AT_EMPTY_PATH != 0 {
                None
            } else {
                let source = existing_place(caller, old_dir, &old)?;
                into_state(&source, &place, !follow, guard, report)?;
                Some(source)
            };
            let (source_dir, source_name, follow, _held) = match source {
                None => {
                    let fd = caller.fd(old_dir)?;
                    let name = OsString::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
                    (None, name, true, Some(fd))
                }
                Some(source) => (Some(source.dir), source.name, follow, None),
            };
            let follow = if follow {
                AtFlags::AT_SYMLINK_FOLLOW
            } else {
                AtFlags::empty()
            };
            nix::unistd::linkat(
                source_dir.as_ref().map(|d| d.as_raw_fd()),
                source_name.as_os_str(),
                Some(place.dir.as_raw_fd()),
                place.name.as_os_str(),
                follow,
            )
            .map_err(|e| refused_write(e, &place, guard, report))?;
            Ok(Reply::Value(0))
        }
        Creating::Rename { at, flags } => {
            let (old_dir, old, new_dir, new) = if at {
                (dirfd(0), a[1], dirfd(2), a[3])
            } else {
                (libc::AT_FDCWD, a[0], libc::AT_FDCWD, a[1])
            };
            let flags = if flags { a[4] as u32 } else { 0 };
            let flags = RenameFlags::from_bits(flags).ok_or(libc::EINVAL)?;
            // A whiteout is a device node left at the source name.
            if flags.contains(RenameFlags::RENAME_WHITEOUT) {
                return Err(libc::EPERM);
            }
            let source = existing_place(caller, old_dir, &caller.read_path(old)?)?;
            let place = new_place(caller, new_dir, &caller.read_path(new)?)?;
            // An agent's config file, replaced by its temporary file.
            if let Some(held) = files.state_files.find(&place.path, &place.dir) {
                if !flags.is_empty() {
                    return Err(libc::EPERM);
                }
                return files
                    .state_files
                    .replace(held, &source.path, report)
                    .map(Reply::Value);
            }
            admit(&place, Make::Other, guard, report)?;
            // An exchange moves each name into the other's place; and a
            // name that is not an agent's state does not move away.
            into_state(&source, &place, true, guard, report)?;
            if flags.contains(RenameFlags::RENAME_EXCHANGE) {
                into_state(&place, &source, true, guard, report)?;
            }
            if guard.outside_state(&source.path).is_some() {
                admit(&source, Make::Other, guard, report)?;
            }
            // `git config`'s rename of config.lock over a repository's
            // config, which the view keeps read-only.
            if let Some(config) = files.git_configs.find(&place.path) {
                if flags.contains(RenameFlags::RENAME_NOREPLACE) {
                    return Err(libc::EEXIST);
                }
                if flags.contains(RenameFlags::RENAME_EXCHANGE) {
                    report(Refusal::Create {
                        path: &place.path,
                        why: Forbidden::GitConfig(
                            "git config: a repository's config can be replaced, not exchanged"
                                .into(),
                        ),
                    });
                    return Err(libc::EPERM);
                }
                let replaced =
                    config_gate::replace(config, &place.path, &source.dir, &source.name, report)?;
                return Ok(Reply::Value(replaced));
            }
            if flags.contains(RenameFlags::RENAME_EXCHANGE) {
                // Both names are new ones after an exchange.
                admit(&source, Make::Other, guard, report)?;
            }
            nix::fcntl::renameat2(
                Some(source.dir.as_raw_fd()),
                source.name.as_os_str(),
                Some(place.dir.as_raw_fd()),
                place.name.as_os_str(),
                flags,
            )
            .map_err(|e| refused_write(e, &place, guard, report))?;
            Ok(Reply::Value(0))
        }
    }
}

/// `bind` of the caller's UNIX socket `sock` (a copy) to `path`: checked
/// like any new name, then bound from inside its directory, so the name
/// made is the one checked.
pub(crate) fn bind_unix(
    caller: &Caller,
    sock: &OwnedFd,
    path: &[u8],
    guard: &Guard,
    umasks: &Umasks,
    report: &Reporter,
) -> Result<i64, Errno> {
    let place = new_place(caller, libc::AT_FDCWD, path)?;
    admit(&place, Make::Other, guard, report)?;
    take_callers_umask(caller, umasks)?;
    // This worker thread has a working directory of its own.
    nix::unistd::fchdir(place.dir.as_raw_fd()).map_err(|e| e as Errno)?;
    let mut addr = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
    addr.extend_from_slice(place.name.as_bytes());
    addr.push(0);
    sys::bind_raw(std::os::fd::AsFd::as_fd(sock), &addr).map_err(errno)?;
    Ok(0)
}

/// `open` with `O_CREAT`, following a final symlink as the kernel would
/// but deciding on every name it reaches.
fn open(
    caller: &Caller,
    dirfd: RawFd,
    path: &[u8],
    flags: i32,
    mode: u64,
    files: &FileRules,
    report: &Reporter,
) -> Result<Reply, Errno> {
    let guard = &files.guard;
    let mut place = new_place(caller, dirfd, path)?;
    // An agent's temporary file beside its config file: made in memory
    // (see `state_gate`).
    if files.state_files.stages(&place.path) {
        let exclusive = flags & libc::O_EXCL != 0;
        return files
            .state_files
            .stage(&place.path, exclusive, flags & libc::O_CLOEXEC != 0);
    }
    let follows = flags & (libc::O_EXCL | libc::O_NOFOLLOW) == 0;
    for _ in 0..MAX_HOPS {
        if place.trailing_slash {
            return Err(libc::EISDIR);
        }
        admit(&place, Make::Other, guard, report)?;
        // `/dev/tty` names the opener's controlling terminal: init's would
        // be the wrong one (it has none), so open the caller's instead.
        if place.path == Path::new("/dev/tty") {
            return open_controlling_terminal(caller, flags, mode);
        }
        // /proc through the gate: only the caller's own entries (init's are
        // closed to the command, and the gate must not open them for it).
        let on_proc = is_procfs(&place.dir);
        if on_proc && !is_callers_proc(caller, &place.path) {
            return Err(libc::EACCES);
        }
        // No controlling terminal for init from a caller's open. A final
        // name in /proc is one of its links (`fd/1`): the kernel follows
        // it to what is open already, which makes no name.
        let follow_here = follows && on_proc;
        let nofollow = if follow_here {
            OFlag::empty()
        } else {
            OFlag::O_NOFOLLOW
        };
        let oflag = OFlag::from_bits_retain(flags) | nofollow | OFlag::O_NOCTTY;
        match openat(
            Some(place.dir.as_raw_fd()),
            place.name.as_os_str(),
            oflag,
            Mode::from_bits_truncate(mode as u32),
        ) {
            Ok(fd) => {
                return Ok(Reply::Fd {
                    fd: sys::own_fd(fd),
                    cloexec: flags & libc::O_CLOEXEC != 0,
                })
            }
            Err(nix::errno::Errno::ELOOP) if follows => {
                let target = readlinkat(Some(place.dir.as_raw_fd()), place.name.as_os_str())
                    .map_err(|e| match e {
                        // Not a symlink after all: the loop was elsewhere.
                        nix::errno::Errno::EINVAL => libc::ELOOP,
                        e => e as Errno,
                    })?;
                place = place_from(caller, Some(&place.dir), target.as_bytes())?;
            }
            Err(e) => return Err(refused_write(e, &place, guard, report)),
        }
    }
    Err(libc::ELOOP)
}

/// The errno of a creating call the gate made and the kernel refused; a
/// write the view or Landlock refused (`EROFS`, `EACCES`) is reported
/// first, so the exit summary can say why and what would allow it. Not
/// in a `__pycache__` directory: interpreters try one on every import
/// from a read-only tree and go on without it.
fn refused_write(e: nix::errno::Errno, place: &Place, guard: &Guard, report: &Reporter) -> Errno {
    let bytecode = place.path.parent().and_then(Path::file_name) == Some(OsStr::new("__pycache__"));
    if matches!(e, nix::errno::Errno::EROFS | nix::errno::Errno::EACCES) && !bytecode {
        report(Refusal::Write {
            path: &place.path,
            in_writable_area: guard.in_writable_area(&place.path),
            read_only: e == nix::errno::Errno::EROFS,
        });
    }
    e as Errno
}

/// Why the gate refused to make a name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Forbidden {
    /// A protected name (the guarded path it is, is beneath, or is on
    /// the way to).
    Protected(PathBuf),
    /// A hook in a git dir.
    Hook,
    /// A change to a repository's config that `git config` inside may not
    /// make (see `config_gate`): what it would have changed, in words.
    GitConfig(String),
    /// A replacement of an agent's config file (`[[files.state_file]]`)
    /// that would change what it may not: what, in words.
    StateFile(String),
    /// A link inside an agent's state directory (the directory).
    StateLink(PathBuf),
    /// A name in an agent's state directory that is none of its state.
    NotState {
        /// The state directory.
        dir: PathBuf,
        /// The names the agent may make there.
        state: Vec<String>,
    },
}

impl Forbidden {
    /// Why, in words.
    pub fn reason(&self) -> String {
        match self {
            Forbidden::Protected(hit) => format!(
                "protected: {} runs code later outside the sandbox",
                hit.display()
            ),
            Forbidden::Hook => "a git hook: git would run it outside the sandbox".into(),
            Forbidden::GitConfig(what) | Forbidden::StateFile(what) => what.clone(),
            Forbidden::StateLink(dir) => format!(
                "a link inside the agent's state in {}: the agent's later writes and reads would follow it anywhere",
                dir.display()
            ),
            Forbidden::NotState { dir, state } => format!(
                "not the agent's state: in {} only {} may be made (the rest may run code later outside the sandbox)",
                dir.display(),
                state.join(", ")
            ),
        }
    }

    /// What would allow it: nothing does, inside the sandbox.
    pub fn fix(&self) -> String {
        match self {
            Forbidden::Protected(_) => format!(
                "nothing allows it inside the sandbox: the built-in protected names cannot be lifted ({} only adds names); make it outside the sandbox if you mean to",
                crate::policy::keys::PROTECT.about.dotted()
            ),
            Forbidden::Hook => {
                "nothing allows it inside the sandbox: install hooks outside it, where you can read them first".into()
            }
            Forbidden::GitConfig(_) => {
                "nothing allows it inside the sandbox: make that change to the config outside it, where you can read it first".into()
            }
            Forbidden::StateFile(_) => {
                "nothing allows it inside the sandbox: make that change to the file outside it, where you can read it first".into()
            }
            Forbidden::StateLink(_) => {
                "nothing allows it inside the sandbox: copy what the link would name instead".into()
            }
            Forbidden::NotState { .. } => format!(
                "add its name to that [[{}]] entry's writable list if it is state the agent keeps (not settings, hooks, commands or anything that runs)",
                crate::policy::keys::STATE.about.dotted()
            ),
        }
    }
}

/// Refuses (`EPERM`, reported) what the guard or git's hook rule forbids
/// making at `place`.
fn admit(place: &Place, make: Make, guard: &Guard, report: &Reporter) -> Result<(), Errno> {
    let why = if let Some((dir, state)) = guard.outside_state(&place.path) {
        Forbidden::NotState {
            dir: dir.clone(),
            state: state.clone(),
        }
    } else {
        match guard.forbids(&place.path, make) {
            Some(hit) => Forbidden::Protected(hit),
            None if make == Make::Other && is_hook(place) => Forbidden::Hook,
            None => return Ok(()),
        }
    };
    report(Refusal::Create {
        path: &place.path,
        why,
    });
    Err(libc::EPERM)
}

/// Refuses (`EPERM`, reported) a link made inside an agent's state
/// directory: one at a state name, or below, would send the agent's later
/// writes or reads anywhere (its history into its settings, its plans
/// into its commands, its memory into the project).
fn refuse_link_in_state(place: &Place, guard: &Guard, report: &Reporter) -> Result<(), Errno> {
    let Some(dir) = guard.in_state(&place.path) else {
        return Ok(());
    };
    if guard
        .scratch
        .iter()
        .any(|s| place.path.starts_with(s) && place.path != *s)
    {
        return Ok(());
    }
    report(Refusal::Create {
        path: &place.path,
        why: Forbidden::StateLink(dir.to_path_buf()),
    });
    Err(libc::EPERM)
}

/// A name moving from `from` to `to` (renamed, or hard-linked): into an
/// agent's state only from within it (a tree from elsewhere could bring
/// links or anything else in: `EXDEV`, and tools copy it name by name
/// through this gate), and never a link when `link_itself` (the link, not
/// what it leads to, would be moved or linked).
fn into_state(
    from: &Place,
    to: &Place,
    link_itself: bool,
    guard: &Guard,
    report: &Reporter,
) -> Result<(), Errno> {
    let Some(state) = guard.in_state(&to.path) else {
        return Ok(());
    };
    if guard.in_state(&from.path) != Some(state) {
        return Err(libc::EXDEV);
    }
    if link_itself && is_symlink(from) {
        refuse_link_in_state(to, guard, report)?;
    }
    Ok(())
}

/// Whether the name at `place` is a symlink (not followed).
fn is_symlink(place: &Place) -> bool {
    nix::sys::stat::fstatat(
        Some(place.dir.as_raw_fd()),
        place.name.as_os_str(),
        AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

/// A name in the `hooks` directory of a git dir (one holding `HEAD`),
/// other than git's inert `*.sample` files.
fn is_hook(place: &Place) -> bool {
    let in_hooks = place.path.parent().and_then(Path::file_name) == Some(OsStr::new("hooks"));
    if !in_hooks || place.name.as_bytes().ends_with(b".sample") {
        return false;
    }
    nix::sys::stat::fstatat(
        Some(place.dir.as_raw_fd()),
        "../HEAD",
        AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .is_ok()
}

/// Where a new name goes: `.`, `..` and `/` name what exists already.
fn new_place(caller: &Caller, dirfd: RawFd, path: &[u8]) -> Result<Place, Errno> {
    let dir = caller_dir(caller, dirfd, path)?;
    let place = place_from(caller, dir.as_ref(), path)?;
    if place.name == "." || place.name == ".." {
        return Err(libc::EEXIST);
    }
    Ok(place)
}

/// The source of a link or rename: an existing name, resolved the same way.
fn existing_place(caller: &Caller, dirfd: RawFd, path: &[u8]) -> Result<Place, Errno> {
    let dir = caller_dir(caller, dirfd, path)?;
    place_from(caller, dir.as_ref(), path)
}

/// The directory a relative path starts from: the caller's working
/// directory or its `dirfd`; none for an absolute path.
fn caller_dir(caller: &Caller, dirfd: RawFd, path: &[u8]) -> Result<Option<OwnedFd>, Errno> {
    if path.first() == Some(&b'/') {
        return Ok(None);
    }
    if dirfd == libc::AT_FDCWD {
        let cwd = format!("/proc/{}/cwd", caller.tid());
        let fd = nix::fcntl::open(
            cwd.as_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| e as Errno)?;
        return Ok(Some(sys::own_fd(fd)));
    }
    caller.fd(dirfd).map(Some)
}

/// Resolves everything of `path` but its last name, from `base` (or `/`),
/// and asks the kernel where that directory is.
fn place_from(caller: &Caller, base: Option<&OwnedFd>, path: &[u8]) -> Result<Place, Errno> {
    if path.is_empty() {
        return Err(libc::ENOENT);
    }
    let trimmed_len = path.iter().rposition(|b| *b != b'/').map_or(0, |i| i + 1);
    if trimmed_len == 0 {
        // Only slashes: the root, which exists.
        return Err(libc::EEXIST);
    }
    let trailing_slash = trimmed_len < path.len();
    let trimmed = &path[..trimmed_len];
    let (dir_part, name) = match trimmed.iter().rposition(|b| *b == b'/') {
        Some(0) => (&b"/"[..], &trimmed[1..]),
        Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
        None => (&b"."[..], trimmed),
    };
    let mut hops = 0;
    let dir = open_dir(caller, base, dir_part, &mut hops)?;
    let seen = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())).map_err(|e| {
        // A path past PATH_MAX cannot be named, so not decided on.
        errno(e)
    })?;
    // A directory removed meanwhile (no links left), or one outside the
    // view: nothing to decide on, and nothing could be made there either.
    // (A live directory may be named "x (deleted)": its links count.)
    let removed = || nix::sys::stat::fstat(dir.as_raw_fd()).map_or(true, |st| st.st_nlink == 0);
    if !seen.is_absolute() || (seen.as_os_str().as_bytes().ends_with(b" (deleted)") && removed()) {
        return Err(libc::ENOENT);
    }
    let name = OsString::from_vec(name.to_vec());
    Ok(Place {
        path: seen.join(&name),
        dir,
        name,
        trailing_slash,
    })
}

/// Opens the directory `path` names (from `base`, or `/` when absolute)
/// as the caller's own lookup would. The kernel resolves it in one step
/// when no symlink is on the way; otherwise each name is opened in turn,
/// so that `/proc/self` and `/proc/thread-self` (reached directly or
/// through a link such as `/dev/fd`) name the caller, not the gate's
/// thread that resolves them, and `/proc`'s own links (`/proc/<tid>/cwd`,
/// `fd/N`) are followed by the kernel.
fn open_dir(
    caller: &Caller,
    base: Option<&OwnedFd>,
    path: &[u8],
    hops: &mut usize,
) -> Result<OwnedFd, Errno> {
    use nix::fcntl::{openat2, OpenHow, ResolveFlag};
    let dir_flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let absolute = path.first() == Some(&b'/');
    let start = if absolute {
        libc::AT_FDCWD
    } else {
        base.map_or(libc::AT_FDCWD, |b| b.as_raw_fd())
    };
    let how = OpenHow::new()
        .flags(dir_flags)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    match openat2(start, OsStr::from_bytes(path), how) {
        Ok(fd) => return Ok(sys::own_fd(fd)),
        Err(nix::errno::Errno::ELOOP) => {}
        Err(e) => return Err(e as Errno),
    }
    let mut cur = if absolute || base.is_none() {
        let from = if absolute { "/" } else { "." };
        sys::own_fd(nix::fcntl::open(from, dir_flags, Mode::empty()).map_err(|e| e as Errno)?)
    } else {
        base.ok_or(libc::EBADF)?.try_clone().map_err(errno)?
    };
    let own = caller.tid().to_string();
    for name in path
        .split(|b| *b == b'/')
        .filter(|n| !n.is_empty() && *n != b".")
    {
        let on_proc = is_procfs(&cur);
        let name: &[u8] =
            if on_proc && is_proc_root(&cur) && (name == b"self" || name == b"thread-self") {
                own.as_bytes()
            } else {
                name
            };
        let name = OsStr::from_bytes(name);
        let next = sys::own_fd(
            openat(
                Some(cur.as_raw_fd()),
                name,
                OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| e as Errno)?,
        );
        let kind = nix::sys::stat::fstat(next.as_raw_fd())
            .map_err(|e| e as Errno)?
            .st_mode
            & libc::S_IFMT;
        cur = match kind {
            libc::S_IFDIR => next,
            libc::S_IFLNK => {
                *hops += 1;
                if *hops > MAX_HOPS {
                    return Err(libc::ELOOP);
                }
                if on_proc {
                    // A /proc link of the caller's own: the kernel's jump.
                    sys::own_fd(
                        openat(Some(cur.as_raw_fd()), name, dir_flags, Mode::empty())
                            .map_err(|e| e as Errno)?,
                    )
                } else {
                    let target = readlinkat(Some(cur.as_raw_fd()), name).map_err(|e| e as Errno)?;
                    open_dir(caller, Some(&cur), target.as_bytes(), hops)?
                }
            }
            _ => return Err(libc::ENOTDIR),
        };
    }
    Ok(cur)
}

/// Opens the caller's controlling terminal (a pty of the sandbox's own
/// devpts), as `open("/dev/tty")` in the caller would; `ENXIO` if it has
/// none.
fn open_controlling_terminal(caller: &Caller, flags: i32, mode: u64) -> Result<Reply, Errno> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", caller.tid())).map_err(errno)?;
    // Fields after the command name, which is in parentheses and may
    // hold anything: state, ppid, pgrp, session, tty_nr.
    let tty_nr: u64 = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(4))
        .and_then(|f| f.parse().ok())
        .ok_or(libc::EIO)?;
    let major = (tty_nr >> 8) & 0xfff;
    let minor = (tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00);
    // Unix98 ptys: majors 136-143.
    if !(136..=143).contains(&major) {
        return Err(libc::ENXIO);
    }
    let pts = format!("/dev/pts/{}", (major - 136) * 256 + minor);
    let oflag = OFlag::from_bits_retain(flags & !libc::O_CREAT) | OFlag::O_NOCTTY;
    let fd = nix::fcntl::open(pts.as_str(), oflag, Mode::from_bits_truncate(mode as u32))
        .map_err(|e| e as Errno)?;
    Ok(Reply::Fd {
        fd: sys::own_fd(fd),
        cloexec: flags & libc::O_CLOEXEC != 0,
    })
}

/// Whether `path` (on /proc) is the caller's own: under `/proc/<tid>` or
/// `/proc/<its process>`.
fn is_callers_proc(caller: &Caller, path: &Path) -> bool {
    let tid = caller.tid().as_raw();
    let tgid = status_field(caller.tid(), "Tgid:").and_then(|v| v.parse::<i32>().ok());
    [Some(tid), tgid]
        .into_iter()
        .flatten()
        .any(|id| path.starts_with(format!("/proc/{id}")))
}

/// Whether `fd` is on a procfs.
fn is_procfs(fd: &OwnedFd) -> bool {
    nix::sys::statfs::fstatfs(fd)
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::PROC_SUPER_MAGIC)
}

/// Whether `fd` (on a procfs) is its root, where `self` lives.
fn is_proc_root(fd: &OwnedFd) -> bool {
    nix::sys::stat::fstat(fd.as_raw_fd()).is_ok_and(|st| st.st_ino == 1)
}

/// Gives this gate thread (whose file system attributes are its own) the
/// caller's umask, for a call whose mode it applies to: what the gate
/// makes gets the mode the caller's own call would give it. Links,
/// symlinks and renames take no mode, and skip it.
fn take_callers_umask(caller: &Caller, umasks: &Umasks) -> Result<(), Errno> {
    nix::sys::stat::umask(umasks.of(caller)?);
    Ok(())
}

/// A field near the top of thread `tid`'s `/proc/<tid>/status` (`Umask:`,
/// `Tgid:`), trimmed. One read of a page: the fields asked for come within
/// the first lines, and this runs on every creating call, where reading
/// the whole file a little at a time cost several system calls.
pub(crate) fn status_field(tid: Pid, field: &str) -> Option<String> {
    use std::io::Read;
    let mut status = std::fs::File::open(format!("/proc/{tid}/status")).ok()?;
    let mut page = [0u8; 4096];
    let n = status.read(&mut page).ok()?;
    // The name on the first line may hold any byte but a newline.
    String::from_utf8_lossy(page.get(..n)?)
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .map(|v| v.trim().to_string())
}

fn has_privilege_bits(mode: u64) -> bool {
    mode & u64::from(libc::S_ISUID | libc::S_ISGID) != 0
}

fn refuse_mode(call: &Notification, report: &Reporter) -> Result<Reply, Errno> {
    report(Refusal::PrivilegeMode(
        crate::sandbox::seccomp::syscall_name(call.nr),
    ));
    Err(libc::EPERM)
}

#[cfg(test)]
#[path = "create_gate_tests.rs"]
mod tests;
