//! The Landlock layer: the files door again, enforced by the kernel per
//! inode, plus TCP port rules and IPC scopes where the ABI has them.
//!
//! Landlock only grants, so a denied path inside a readable tree is made
//! unreadable by granting read on each of its siblings instead of on the
//! parent (and only directory listing on the parent).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Component, Path, PathBuf};

use landlock::{
    AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::files::FileView;

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

/// Applies the Landlock ruleset for `view` to this process (inherited by
/// its children). Paths are resolved in the sandbox's final mount view.
/// `tcp_ports` may be bound and connected to; `connect_only` (the proxy's
/// listeners) only connected to.
pub fn restrict(
    view: &FileView,
    tcp_ports: &[u16],
    connect_only: &[u16],
) -> Result<Enforcement, LandlockError> {
    let read = AccessFs::from_read(WANTED_ABI);
    let write = AccessFs::from_write(WANTED_ABI);
    let all = read | write;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)?
        .create()?;

    let hidden: BTreeSet<PathBuf> = view.hidden.iter().map(|(p, _)| p.clone()).collect();
    // Readable everywhere but the hidden paths.
    grant_read(&mut ruleset, Path::new("/"), &hidden, read)?;
    // Islands: readable paths beneath a hidden directory.
    for island in view.reallowed.iter().chain(&view.writable) {
        if hidden.iter().any(|h| island.starts_with(h)) {
            grant_read(&mut ruleset, island, &hidden, read)?;
        }
    }
    for path in view
        .writable
        .iter()
        .map(PathBuf::as_path)
        .chain(SHARED_WRITABLE.iter().map(Path::new))
    {
        add(&mut ruleset, path, write)?;
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

/// Adds a rule for `path` if it exists in the view.
fn add(
    ruleset: &mut RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<(), LandlockError> {
    if let Ok(fd) = PathFd::new(path) {
        ruleset.add_rule(PathBeneath::new(fd, access))?;
    }
    Ok(())
}

/// Grants `read` on `dir` minus the hidden paths beneath it: whole subtrees
/// that hold nothing hidden get one rule; a directory on the way to a
/// hidden path gets listing only, and its entries are visited in turn.
fn grant_read(
    ruleset: &mut RulesetCreated,
    dir: &Path,
    hidden: &BTreeSet<PathBuf>,
    read: BitFlags<AccessFs>,
) -> Result<(), LandlockError> {
    if hidden.contains(dir) {
        return Ok(());
    }
    // The names in `dir` that lead to a hidden path: the entries visited
    // in turn; every other entry is granted whole.
    let on_the_way: BTreeSet<&OsStr> = hidden
        .iter()
        .filter_map(|h| h.strip_prefix(dir).ok()?.components().next())
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    if on_the_way.is_empty() {
        return add(ruleset, dir, read);
    }
    let Ok(dir_fd) = PathFd::new(dir) else {
        return Ok(());
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return ruleset
            .add_rule(PathBeneath::new(dir_fd, AccessFs::ReadDir))
            .map(drop)
            .map_err(Into::into);
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if on_the_way.contains(name.as_os_str()) {
            grant_read(ruleset, &dir.join(&name), hidden, read)?;
            continue;
        }
        // Opened beside its siblings (one name to look up, not the whole
        // path), following a symlink as a path rule does.
        let opened = nix::fcntl::openat(
            Some(dir_fd.as_fd().as_raw_fd()),
            name.as_os_str(),
            OFlag::O_PATH | OFlag::O_CLOEXEC,
            Mode::empty(),
        );
        if let Ok(fd) = opened {
            ruleset.add_rule(PathBeneath::new(crate::sys::own_fd(fd), read))?;
        }
    }
    ruleset.add_rule(PathBeneath::new(dir_fd, AccessFs::ReadDir))?;
    Ok(())
}
