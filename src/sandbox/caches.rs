//! The caches' mechanism (`files.cache`; the entries and their checks are
//! [`crate::policy::cache`]).
//!
//! A cache is an overlay init mounts in the sandbox's user namespace over
//! the host directory: the host's directory is its lower layer, read-only;
//! the upper layer (and overlayfs's work directory) is a private directory
//! cordon keeps between runs, one per project and cache path, under
//! `$XDG_CACHE_HOME/cordon/caches` (hidden in every sandbox, so it is
//! written only through the overlay). Nothing inside can change what the
//! host's own tools later read from their cache.
//!
//! A host directory that does not exist gets no overlay and no mount point
//! on the host: the private layer itself is bound at a stand-in in the
//! sandbox's private `/tmp`, and the entry's variable points the tool
//! there (an entry without one is refused).
//!
//! overlayfs forbids two mounts sharing an upper directory: the run that
//! mounts a kept layer holds an exclusive `flock` on it until it ends; a
//! second sandbox of the same project at the same time gets a layer in
//! memory instead (its writes to the cache are gone when it ends), and a
//! warning says so.

use std::fs::File;

use nix::fcntl::{Flock, FlockArg};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::files::FilesError;
use crate::escape::printable;
use crate::policy::Policy;

/// Where a cache's writes go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upper {
    /// The layer cordon keeps for this project: its upper and work
    /// directories, on the host.
    Kept { upper: PathBuf, work: PathBuf },
    /// A layer in memory for this run only (the kept one is in use).
    Memory,
}

/// One cache as init mounts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheMount {
    /// Where the sandbox sees it: the host directory (canonical), or a
    /// stand-in in the private `/tmp` when that is missing.
    pub inside: PathBuf,
    /// The host directory, the overlay's lower layer; `None` when it does
    /// not exist.
    pub lower: Option<PathBuf>,
    /// Where writes go.
    pub upper: Upper,
    /// The variables set to `inside` in the command's environment.
    pub env: Vec<String>,
}

/// The caches of a plan, with what keeps their layers the run's own.
#[derive(Debug, Default)]
pub struct Caches {
    /// The mounts, in the policy's order.
    pub mounts: Vec<CacheMount>,
    /// The exclusive locks on the kept layers, held until the run ends.
    pub locks: Vec<Flock<File>>,
    /// What the user should know (a layer in memory), for stderr.
    pub warnings: Vec<String>,
}

/// The lock file in a kept layer's directory.
const LOCK_FILE: &str = "lock";

/// Plans the policy's caches: resolves each host directory, checks it
/// against the paths the view makes writable or hides (`writable`,
/// `hidden`), and makes and locks its private layer.
pub fn plan(
    policy: &Policy,
    writable: &[PathBuf],
    hidden: &[PathBuf],
) -> Result<Caches, FilesError> {
    let mut caches = Caches::default();
    let project = &policy.project.value;
    for entry in &policy.files.caches {
        let cache = &entry.value;
        if cache.left_out() {
            continue;
        }
        let from = entry.source.to_string();
        let refuse = |why: String| FilesError::Cache {
            path: cache.path.clone(),
            from: from.clone(),
            why,
        };
        let lower = match std::fs::canonicalize(&cache.path) {
            Ok(real) if real.is_dir() => Some(real),
            Ok(_) => return Err(refuse("is not a directory".into())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(refuse(format!("cannot resolve it: {e}"))),
        };
        let inside = lower.clone().unwrap_or_else(|| cache.stand_in());
        // One directory named twice (a preset and a flag): one mount, the
        // variables of both.
        if let Some(known) = caches.mounts.iter_mut().find(|m| m.inside == inside) {
            known.env.extend(cache.env.iter().cloned());
            continue;
        }
        if let Some(real) = &lower {
            if let Some(w) = writable
                .iter()
                .find(|w| real.starts_with(w) || w.starts_with(real))
            {
                return Err(refuse(format!(
                    "overlaps the writable path {}",
                    printable(w)
                )));
            }
            if let Some(h) = hidden.iter().find(|h| real.starts_with(h)) {
                return Err(refuse(format!(
                    "lies under the unreadable path {}",
                    printable(h)
                )));
            }
            // The loader checked the paths as named; links may join them.
            let layers = std::fs::canonicalize(&policy.files.cache_layers)
                .unwrap_or_else(|_| policy.files.cache_layers.clone());
            let others = caches.mounts.iter().map(|m| m.inside.clone());
            if let Some(other) = others
                .chain([layers])
                .find(|o| real.starts_with(o) || o.starts_with(real))
            {
                return Err(refuse(format!(
                    "is, holds or lies in {} (another cache, or cordon's private layers)",
                    printable(other)
                )));
            }
        }
        let dir = cache.layer_dir(&policy.files.cache_layers, project);
        let (upper, warning) = keep_layer(&dir, lower.as_deref(), &mut caches.locks)
            .map_err(|e| refuse(format!("its private layer {}: {e}", printable(&dir))))?;
        if let Some(warning) = warning {
            caches
                .warnings
                .push(format!("cache {}: {warning}", printable(&cache.path)));
        }
        caches.mounts.push(CacheMount {
            inside,
            lower,
            upper,
            env: cache.env.iter().cloned().collect(),
        });
    }
    Ok(caches)
}

/// Before the view is planned: refuses a cache whose host directory is
/// missing when no variable can point the tool elsewhere (nothing is made
/// on the host for it), then makes the private layers' directory (its
/// parents too, mode 0700) when the policy names a cache, so that the
/// sandbox finds it hidden from its first run on.
pub fn prepare(policy: &Policy) -> Result<(), FilesError> {
    for entry in &policy.files.caches {
        let cache = &entry.value;
        // Another entry for the same directory may name the variable.
        let named = |c: &crate::policy::cache::Cache| c.path == cache.path && c.env.is_some();
        if !cache.path.exists()
            && !cache.optional
            && !policy.files.caches.iter().any(|e| named(&e.value))
        {
            return Err(FilesError::Cache {
                path: cache.path.clone(),
                from: entry.source.to_string(),
                why: "does not exist on the host, and cordon makes nothing there; create it (mkdir -p), or name a variable that points the tool at the cache ({ path = ..., env = \"VAR\" } in a policy file, --cache PATH=VAR)".into(),
            });
        }
    }
    let root = &policy.files.cache_layers;
    if policy.files.caches.is_empty() || root.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)
        .map_err(|source| FilesError::Path {
            what: "cannot make the caches' private layers directory",
            path: root.clone(),
            source,
        })
}

/// Makes the kept layer at `dir` (mode 0700, the caller's) and locks it
/// for this run, into `locks`; a layer another run holds gives a layer in
/// memory and a warning. `lower`: the host directory when the layer is
/// an overlay's upper (not a stand-in bound alone), whose file system must
/// then keep user extended attributes, and whose mode the overlay's root
/// shows (it takes the upper's).
fn keep_layer(
    dir: &Path,
    lower: Option<&Path>,
    locks: &mut Vec<Flock<File>>,
) -> io::Result<(Upper, Option<String>)> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true).mode(0o700);
    builder.create(dir)?;
    let meta = dir.symlink_metadata()?;
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
        return Err(io::Error::other(
            "is not a directory of yours that only you may write",
        ));
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(LOCK_FILE))?;
    let held = match Flock::lock(lock, FlockArg::LockExclusiveNonblock) {
        Ok(held) => held,
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
            return Ok((
                Upper::Memory,
                Some("another sandbox of this project uses its private layer now (overlayfs cannot share one); this run writes it in memory, and its writes there are gone when it ends".into()),
            ))
        }
        Err((_, e)) => return Err(e.into()),
    };
    let (upper, work) = (dir.join("upper"), dir.join("work"));
    for d in [&upper, &work] {
        builder.create(d)?;
    }
    if let Some(lower) = lower {
        let mode = std::fs::metadata(lower)?.mode() & 0o1777;
        std::fs::set_permissions(&upper, std::fs::Permissions::from_mode(mode))?;
        crate::sys::keeps_user_xattrs(&upper).map_err(|e| {
            io::Error::other(format!(
                "its file system does not keep user extended attributes ({e}), which overlayfs needs in a user namespace; point XDG_CACHE_HOME at a file system that does (ext4, xfs, btrfs, tmpfs on Linux 6.6 or later)"
            ))
        })?;
    }
    // Held until the run drops it.
    locks.push(held);
    Ok((Upper::Kept { upper, work }, None))
}
