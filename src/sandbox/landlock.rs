//! The Landlock layer: the files door again, enforced by the kernel per
//! inode, plus TCP port rules and IPC scopes where the ABI has them.
//!
//! Landlock only grants, so a denied path inside a readable tree is made
//! unreadable by granting read on each of its siblings instead of on the
//! parent (and only directory listing on the parent).
//!
//! Two processes fill the ruleset, so that its hundreds of rules stay off
//! the start-up's critical path. Init creates it ([`create`]) and hands a
//! copy of its descriptor to the supervisor, which adds the rules for
//! every path the sandbox sees as the host's own inodes
//! ([`add_host_rules`]: its root, the project, the writable and re-allowed
//! paths are all binds of host paths, and a rule belongs to an inode, not
//! to the path it was named by) while init builds the mounts. Init then
//! adds the rules for the file systems it mounts afresh
//! ([`FRESH_MOUNTS`]), which only its own view has, and enforces the whole
//! once the supervisor is done ([`restrict`]).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use landlock::{
    AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::files::{FileView, FRESH_MOUNTS};
use crate::sys;

/// The newest ABI this build knows; with best-effort compatibility the
/// kernel enforces all of it that it has (pathname UNIX sockets outside
/// the writable areas become unreachable on kernels with ABI 9).
const WANTED_ABI: ABI = ABI::V10;

/// Why Landlock could not be put in place.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("{0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("the kernel does not enforce Landlock (not built in, or not in the `lsm=` boot list)")]
    NotEnforced,
    #[error("the ruleset's descriptor for the supervisor: {0}")]
    Handover(io::Error),
    #[error("the Landlock ABI version: {0}")]
    Abi(io::Error),
    #[error("a rule for {}: {source}", .path.display())]
    HostRule { path: PathBuf, source: io::Error },
    #[error("reading {} for its rules: {source}", .path.display())]
    Walk { path: PathBuf, source: io::Error },
}

/// What was enforced, for `doctor` and the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    Full,
    Partial,
}

/// Writable trees and device files the sandbox needs beyond the view's own.
const DEV_WRITABLE: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/pts",
    "/dev/ptmx",
];
const SHARED_WRITABLE: &[&str] = &["/tmp", "/dev/shm"];

/// The TCP ports a restricted sandbox may use.
#[derive(Clone, Copy, Debug)]
pub struct TcpPorts<'a> {
    /// May be bound and connected to (the user's servers).
    pub bind: &'a [u16],
    /// May only be connected to (cordon's own listeners).
    pub connect_only: &'a [u16],
}

/// Init's ruleset while the supervisor adds the host's rules to it.
pub struct Pending(RulesetCreated);

/// Creates the (empty) ruleset: init's own, and a duplicate of its
/// descriptor for the supervisor; none when the kernel has no Landlock,
/// since there is nothing to add to then ([`restrict`] says so).
/// `restrict_tcp`: TCP bind and connect are refused but on the ports
/// [`restrict`] names; otherwise Landlock leaves TCP alone (the network
/// namespace is what keeps the sandbox in).
pub fn create(restrict_tcp: bool) -> Result<(Pending, Option<OwnedFd>), LandlockError> {
    let all = AccessFs::from_read(WANTED_ABI) | AccessFs::from_write(WANTED_ABI);
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?;
    let ruleset = if restrict_tcp {
        ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?
    } else {
        ruleset
    };
    let ruleset = ruleset
        .scope(Scope::AbstractUnixSocket | Scope::Signal)?
        .create()?;
    let shared: Option<OwnedFd> = ruleset.try_clone().map_err(LandlockError::Handover)?.into();
    Ok((Pending(ruleset), shared))
}

/// In the supervisor: adds to `ruleset` (init's, handed over) the rules
/// for the paths the sandbox sees as the host's own inodes, named in the
/// host's view: read everywhere but the hidden paths and [`FRESH_MOUNTS`],
/// read again on the islands beneath hidden directories, write on the
/// writable paths. Rights the kernel's ABI lacks are left out, as the
/// crate leaves them out of the ruleset's handled rights. `mounted`: the
/// mount view is in force (see [`denied_paths`]).
pub fn add_host_rules(
    ruleset: BorrowedFd<'_>,
    view: &FileView,
    mounted: bool,
) -> Result<(), LandlockError> {
    let abi = ABI::from(sys::landlock_abi().map_err(LandlockError::Abi)?);
    let mut rules = HostRules {
        ruleset,
        file_rights: AccessFs::from_file(abi),
    };
    let read = AccessFs::from_read(abi);
    let write = AccessFs::from_write(abi);
    let hidden = denied_paths(view, mounted);
    // The caches' overlays are file systems init mounts afresh too: the
    // host's inodes beneath them are out of the sandbox's sight.
    let fresh: BTreeSet<PathBuf> = FRESH_MOUNTS
        .iter()
        .map(PathBuf::from)
        .chain(cache_mounts(view, mounted).cloned())
        .collect();
    grant_read(&mut rules, Path::new("/"), &hidden, &fresh, read)?;
    // Islands: readable paths beneath a hidden directory.
    for island in view.reallowed.iter().chain(&view.writable) {
        if hidden.iter().any(|h| island.starts_with(h)) {
            grant_read(&mut rules, island, &hidden, &fresh, read)?;
        }
    }
    for path in &view.writable {
        add(&mut rules, path, write)?;
    }
    Ok(())
}

/// In init, once the supervisor has added the host's rules: adds those for
/// the file systems init mounted afresh, in the sandbox's final view, and
/// the port rules, then puts this process (and its children) in the
/// domain. With TCP restricted ([`create`]), `ports` says which ports may
/// be bound and connected to (`connect_only`, cordon's own listeners, only
/// connected to); `None` when TCP is not restricted.
pub fn restrict(
    pending: Pending,
    view: &FileView,
    mounted: bool,
    ports: Option<TcpPorts<'_>>,
) -> Result<Enforcement, LandlockError> {
    let Pending(mut ruleset) = pending;
    let read = AccessFs::from_read(WANTED_ABI);
    let write = AccessFs::from_write(WANTED_ABI);
    let hidden = denied_paths(view, mounted);
    for fresh in FRESH_MOUNTS {
        grant_read(
            &mut ruleset,
            Path::new(fresh),
            &hidden,
            &BTreeSet::new(),
            read,
        )?;
    }
    for path in SHARED_WRITABLE {
        add(&mut ruleset, Path::new(path), write)?;
    }
    // Each cache, as init mounted it: writes reach its private layer only.
    for path in cache_mounts(view, mounted) {
        add(&mut ruleset, path, read | write)?;
    }
    let dev_write = AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    for path in DEV_WRITABLE {
        add(&mut ruleset, Path::new(path), dev_write | read)?;
    }
    if let Some(ports) = ports {
        for port in ports.bind {
            (&mut ruleset).add_rule(NetPort::new(
                *port,
                AccessNet::BindTcp | AccessNet::ConnectTcp,
            ))?;
        }
        for port in ports.connect_only {
            (&mut ruleset).add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
        }
    }
    let status = ruleset.restrict_self()?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(Enforcement::Full),
        RulesetStatus::PartiallyEnforced => Ok(Enforcement::Partial),
        RulesetStatus::NotEnforced => Err(LandlockError::NotEnforced),
    }
}

/// The hidden paths Landlock leaves unreadable. With the mount view in
/// force, those inside a writable area are left to it: Landlock can only
/// spare a denied path by granting its siblings one by one, so a file made
/// beside it later would get no rule and could not be read back, while the
/// view's mount over the denied path (pinned in place, see `files`) keeps
/// it hidden for the whole run. Without the view Landlock is all there is,
/// and keeps them all.
fn denied_paths(view: &FileView, mounted: bool) -> BTreeSet<PathBuf> {
    let writable = |p: &Path| {
        view.writable
            .iter()
            .map(PathBuf::as_path)
            .chain(SHARED_WRITABLE.iter().map(Path::new))
            .any(|w| p.starts_with(w))
    };
    view.hidden
        .iter()
        .map(|(p, _)| p)
        .filter(|p| !(mounted && writable(p)))
        .cloned()
        .collect()
}

/// Where the caches are mounted inside; none without the mount view (the
/// host directory then stays the host's, read-only).
fn cache_mounts(view: &FileView, mounted: bool) -> impl Iterator<Item = &PathBuf> {
    view.caches
        .mounts
        .iter()
        .filter(move |_| mounted)
        .map(|c| &c.inside)
}

/// Where rules go: the crate's ruleset in init, the handed-over descriptor
/// in the supervisor.
trait Rules {
    /// A rule granting `access` beneath `parent` (`is_dir` when known).
    fn add(
        &mut self,
        parent: BorrowedFd<'_>,
        access: BitFlags<AccessFs>,
        is_dir: Option<bool>,
        path: &Path,
    ) -> Result<(), LandlockError>;
}

impl Rules for RulesetCreated {
    fn add(
        &mut self,
        parent: BorrowedFd<'_>,
        access: BitFlags<AccessFs>,
        _: Option<bool>,
        _: &Path,
    ) -> Result<(), LandlockError> {
        // The crate leaves a directory's rights off a file itself.
        self.add_rule(PathBeneath::new(parent, access))?;
        Ok(())
    }
}

/// The supervisor's side of the ruleset.
struct HostRules<'a> {
    ruleset: BorrowedFd<'a>,
    /// The rights a rule on a file (not a directory) may carry.
    file_rights: BitFlags<AccessFs>,
}

impl Rules for HostRules<'_> {
    fn add(
        &mut self,
        parent: BorrowedFd<'_>,
        access: BitFlags<AccessFs>,
        is_dir: Option<bool>,
        path: &Path,
    ) -> Result<(), LandlockError> {
        let failed = |source| LandlockError::HostRule {
            path: path.to_path_buf(),
            source,
        };
        let is_dir_now = || {
            nix::sys::stat::fstat(parent.as_raw_fd())
                .map(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
                .map_err(|e| failed(e.into()))
        };
        let is_dir = match is_dir {
            Some(listed) => listed,
            None => is_dir_now()?,
        };
        // The kernel refuses a directory's rights on anything else.
        let rights = |dir: bool| {
            if dir {
                access
            } else {
                access & self.file_rights
            }
        };
        match sys::landlock_add_path_rule(self.ruleset, parent, rights(is_dir).bits()) {
            // Listed as a directory, opened as something else (renamed in
            // between): the rights of what was opened.
            Err(e) if is_dir && e.raw_os_error() == Some(libc::EINVAL) && !is_dir_now()? => {
                sys::landlock_add_path_rule(self.ruleset, parent, rights(false).bits())
                    .map_err(failed)
            }
            other => other.map_err(failed),
        }
    }
}

/// Adds a rule for `path` if it opens.
fn add(
    rules: &mut dyn Rules,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<(), LandlockError> {
    match PathFd::new(path) {
        Ok(fd) => rules.add(fd.as_fd(), access, None, path),
        Err(_) => Ok(()),
    }
}

/// The names in `dir` that lead to a path of `paths`.
fn names_on_the_way<'a>(
    dir: &Path,
    paths: impl Iterator<Item = &'a PathBuf>,
) -> BTreeSet<&'a OsStr> {
    paths
        .filter_map(|h| h.strip_prefix(dir).ok()?.components().next())
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// Grants `read` on `dir` minus the hidden paths beneath it: whole subtrees
/// that hold nothing hidden get one rule; a directory on the way to a
/// hidden path gets listing only, and its entries are visited in turn.
/// Entries in `skip` (another process's rules cover them) get nothing, nor
/// do symbolic links: opening through one is checked at its target, whose
/// own path has its rule or is denied.
fn grant_read(
    rules: &mut dyn Rules,
    dir: &Path,
    hidden: &BTreeSet<PathBuf>,
    skip: &BTreeSet<PathBuf>,
    read: BitFlags<AccessFs>,
) -> Result<(), LandlockError> {
    if hidden.contains(dir) || skip.contains(dir) {
        return Ok(());
    }
    if names_on_the_way(dir, hidden.iter().chain(skip)).is_empty() {
        return add(rules, dir, read);
    }
    let opened = nix::fcntl::open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    );
    match opened {
        Ok(fd) => walk(rules, dir, sys::own_fd(fd), hidden, skip, read),
        Err(e) => unopened(dir, e),
    }
}

/// A path the walk could not open: nothing to grant if it is gone, out of
/// reach or (since listed) turned into a link or a file; anything else
/// (no descriptor or memory left) leaves the ruleset short, and refuses.
fn unopened(path: &Path, e: nix::Error) -> Result<(), LandlockError> {
    use nix::errno::Errno;
    match e {
        Errno::ENOENT | Errno::EACCES | Errno::EPERM | Errno::ELOOP | Errno::ENOTDIR => Ok(()),
        _ => Err(LandlockError::Walk {
            path: path.to_path_buf(),
            source: e.into(),
        }),
    }
}

/// [`grant_read`] for the directory open at `dir_fd`: its entries are
/// opened beside one another, never through a link, so a directory on the
/// way swapped for a link to a denied one grants nothing there.
fn walk(
    rules: &mut dyn Rules,
    dir: &Path,
    dir_fd: OwnedFd,
    hidden: &BTreeSet<PathBuf>,
    skip: &BTreeSet<PathBuf>,
    read: BitFlags<AccessFs>,
) -> Result<(), LandlockError> {
    let on_the_way = names_on_the_way(dir, hidden.iter().chain(skip));
    let listing = dir_fd
        .try_clone()
        .map_err(|e| nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
        .and_then(|copy| nix::dir::Dir::from_fd(copy.into_raw_fd()));
    let mut listing = match listing {
        Ok(listing) => listing,
        // Unlistable: listing only, as the kernel would decide anyway.
        Err(e) => {
            unopened(dir, e)?;
            return rules.add(dir_fd.as_fd(), AccessFs::ReadDir.into(), Some(true), dir);
        }
    };
    for entry in listing.iter() {
        let entry = entry.map_err(|e| LandlockError::Walk {
            path: dir.to_path_buf(),
            source: e.into(),
        })?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        let path = dir.join(name);
        if on_the_way.contains(name) {
            if hidden.contains(&path) || skip.contains(&path) {
                continue;
            }
            let opened = nix::fcntl::openat(
                Some(dir_fd.as_raw_fd()),
                name,
                OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            );
            match opened {
                Ok(fd) => walk(rules, &path, sys::own_fd(fd), hidden, skip, read)?,
                Err(e) => unopened(&path, e)?,
            }
            continue;
        }
        use nix::dir::Type;
        let kind = match entry.file_type() {
            Some(kind) => kind,
            None => match nix::sys::stat::fstatat(
                Some(dir_fd.as_raw_fd()),
                name,
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            ) {
                Ok(st) => match st.st_mode & libc::S_IFMT {
                    libc::S_IFLNK => Type::Symlink,
                    libc::S_IFDIR => Type::Directory,
                    _ => Type::File,
                },
                Err(e) => {
                    unopened(&path, e)?;
                    continue;
                }
            },
        };
        if kind == Type::Symlink {
            continue;
        }
        // Opened beside its siblings (one name to look up, not the whole
        // path); a name swapped for a link since the listing opens the
        // link itself, which grants nothing.
        let opened = nix::fcntl::openat(
            Some(dir_fd.as_raw_fd()),
            name,
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        );
        match opened {
            Ok(fd) => {
                let fd = sys::own_fd(fd);
                rules.add(fd.as_fd(), read, Some(kind == Type::Directory), &path)?;
            }
            Err(e) => unopened(&path, e)?,
        }
    }
    rules.add(dir_fd.as_fd(), AccessFs::ReadDir.into(), Some(true), dir)
}

#[cfg(test)]
#[path = "landlock_tests.rs"]
mod tests;
