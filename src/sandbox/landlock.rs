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
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
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

/// Init's ruleset while the supervisor adds the host's rules to it.
pub struct Pending(RulesetCreated);

/// Creates the (empty) ruleset: init's own, and a duplicate of its
/// descriptor for the supervisor; none when the kernel has no Landlock,
/// since there is nothing to add to then ([`restrict`] says so).
pub fn create() -> Result<(Pending, Option<OwnedFd>), LandlockError> {
    let all = AccessFs::from_read(WANTED_ABI) | AccessFs::from_write(WANTED_ABI);
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?
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
/// crate leaves them out of the ruleset's handled rights.
pub fn add_host_rules(ruleset: BorrowedFd<'_>, view: &FileView) -> Result<(), LandlockError> {
    let abi = ABI::from(sys::landlock_abi().map_err(LandlockError::Abi)?);
    let mut rules = HostRules {
        ruleset,
        file_rights: AccessFs::from_file(abi),
    };
    let read = AccessFs::from_read(abi);
    let write = AccessFs::from_write(abi);
    let hidden = hidden_paths(view);
    let fresh: BTreeSet<PathBuf> = FRESH_MOUNTS.iter().map(PathBuf::from).collect();
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
/// domain. `tcp_ports` may be bound and connected to; `connect_only` (the
/// proxy's listeners) only connected to.
pub fn restrict(
    pending: Pending,
    view: &FileView,
    tcp_ports: &[u16],
    connect_only: &[u16],
) -> Result<Enforcement, LandlockError> {
    let Pending(mut ruleset) = pending;
    let read = AccessFs::from_read(WANTED_ABI);
    let write = AccessFs::from_write(WANTED_ABI);
    let hidden = hidden_paths(view);
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
    let dev_write = AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    for path in DEV_WRITABLE {
        add(&mut ruleset, Path::new(path), dev_write | read)?;
    }
    for port in tcp_ports {
        (&mut ruleset).add_rule(NetPort::new(
            *port,
            AccessNet::BindTcp | AccessNet::ConnectTcp,
        ))?;
    }
    for port in connect_only {
        (&mut ruleset).add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
    }
    let status = ruleset.restrict_self()?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(Enforcement::Full),
        RulesetStatus::PartiallyEnforced => Ok(Enforcement::Partial),
        RulesetStatus::NotEnforced => Err(LandlockError::NotEnforced),
    }
}

fn hidden_paths(view: &FileView) -> BTreeSet<PathBuf> {
    view.hidden.iter().map(|(p, _)| p.clone()).collect()
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
        let is_dir = match is_dir {
            Some(known) => known,
            None => nix::sys::stat::fstat(parent.as_raw_fd())
                .map(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
                .map_err(|e| failed(e.into()))?,
        };
        // The kernel refuses a directory's rights on anything else.
        let access = if is_dir {
            access
        } else {
            access & self.file_rights
        };
        sys::landlock_add_path_rule(self.ruleset, parent, access.bits()).map_err(failed)
    }
}

/// Adds a rule for `path` if it opens.
fn add(
    rules: &mut dyn Rules,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<(), LandlockError> {
    if let Ok(fd) = PathFd::new(path) {
        rules.add(fd.as_fd(), access, None, path)?;
    }
    Ok(())
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
    // The names in `dir` that lead to a hidden or skipped path: the entries
    // visited in turn; every other entry is granted whole.
    let on_the_way: BTreeSet<&OsStr> = hidden
        .iter()
        .chain(skip)
        .filter_map(|h| h.strip_prefix(dir).ok()?.components().next())
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    if on_the_way.is_empty() {
        return add(rules, dir, read);
    }
    let Ok(dir_fd) = PathFd::new(dir) else {
        return Ok(());
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return rules.add(dir_fd.as_fd(), AccessFs::ReadDir.into(), Some(true), dir);
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if on_the_way.contains(name.as_os_str()) {
            grant_read(rules, &dir.join(&name), hidden, skip, read)?;
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        // Opened beside its siblings (one name to look up, not the whole
        // path); a name swapped for a link since the listing opens the
        // link itself, which grants nothing.
        let opened = nix::fcntl::openat(
            Some(dir_fd.as_fd().as_raw_fd()),
            name.as_os_str(),
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        );
        if let Ok(fd) = opened {
            let path = dir.join(&name);
            let fd = sys::own_fd(fd);
            rules.add(fd.as_fd(), read, Some(kind.is_dir()), &path)?;
        }
    }
    rules.add(dir_fd.as_fd(), AccessFs::ReadDir.into(), Some(true), dir)
}
