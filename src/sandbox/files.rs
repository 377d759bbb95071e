//! The files door: the mount view the sandbox sees.
//!
//! [`FileView::plan`] runs on the host and turns the policy into concrete,
//! symlink-free paths (expanding globs, finding every git repository under
//! the project). A protected path that exists is bound read-only; one that
//! does not is guarded ([`Guard`]): the file creation gate refuses to make
//! it, and nothing is created on the host for it. [`FileView::apply`] runs
//! inside the new mount namespace and builds the view through the
//! [`MountOps`] seam, so unit tests can check the order of mounts without
//! root.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};

use super::create_gate::Guard;
use super::gitconfig;
use super::repos;
use crate::policy::defaults::{
    runs_later, GIT_DIR_PROTECTED, PROTECTED_ANYWHERE, PROTECTED_NAME_PATTERNS, SYSTEM_CODE_TREES,
    WORKTREE_PROTECTED,
};
use crate::policy::{PathPattern, Policy, Sourced};

/// Why the file view could not be planned or built.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("{} {}: {}", what, crate::escape::printable(path), source)]
    Path {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error(
        "writable path {} (from {}) does not exist",
        crate::escape::printable(path),
        from
    )]
    MissingWritable { path: PathBuf, from: String },
    #[error(
        "writable path {} (from {}) is not a directory: writable paths are directories (a program that replaces a file writes the new one beside it and renames it over the old, which needs its directory writable); name the directory if that is what you mean",
        crate::escape::printable(path),
        from
    )]
    WritableNotDirectory { path: PathBuf, from: String },
    #[error(
        "{} (from {}) is inside the agent's state directory {} but is none of its state ({}): what is there is kept read-only, as it may run later outside the sandbox",
        crate::escape::printable(path),
        from,
        crate::escape::printable(dir),
        names
    )]
    WritableInsideState {
        path: PathBuf,
        from: String,
        dir: PathBuf,
        names: String,
    },
    #[error("{} is a symlink on the way to a protected path (hooks, config, dotfiles that run code): the sandbox could replace it, and cordon cannot mount over a symlink. Replace the link with what it points to, or choose a --project without it", crate::escape::printable(_0))]
    ProtectedSymlink(PathBuf),
    #[error("refusing to make {} writable", crate::escape::printable(_0))]
    WritableRoot(PathBuf),
    #[error("{} (from {}) leads through a link to {}; a link in a writable area may have been left by a sandbox to re-allow something denied. Name the real path instead", crate::escape::printable(path), from, crate::escape::printable(target))]
    ReallowThroughLink {
        path: PathBuf,
        target: PathBuf,
        from: String,
    },
    #[error("refusing to make {} writable: it is, holds or lies inside {}, where the sandbox could leave a program or a startup file that runs later on the host (outside any repository cordon could check). Choose a --project or --allow-write path that holds none, such as a project directory", crate::escape::printable(root), crate::escape::printable(place))]
    StartupPlace { root: PathBuf, place: PathBuf },
    #[error("cache {} (from {}): {}", crate::escape::printable(path), from, why)]
    Cache {
        path: PathBuf,
        from: String,
        why: String,
    },
    #[error(
        "cannot mount the cache {}: {}",
        crate::escape::printable(path),
        source
    )]
    CacheMount { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Repos(#[from] repos::ReposError),
    #[error("a built-in protected name pattern: {0}")]
    Pattern(globset::Error),
    #[error(transparent)]
    GitConfig(#[from] gitconfig::GitConfigError),
    #[error("{}:{}: {} names {}, which holds the writable area {}: cordon cannot keep what git runs from there read-only. Change that setting, or choose a --project outside it", crate::escape::printable(file), line, key, crate::escape::printable(path), crate::escape::printable(root))]
    CodePathIsWritable {
        path: PathBuf,
        root: PathBuf,
        key: String,
        file: PathBuf,
        line: usize,
    },
    #[error(
        "mount step `{}` on {} failed: {}",
        step,
        crate::escape::printable(path),
        source
    )]
    Mount {
        step: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl FilesError {
    /// How to fix it, where the namespaces layer's own advice (about
    /// creating user namespaces) would mislead.
    pub fn fix(&self) -> Option<String> {
        match self {
            FilesError::CacheMount { .. } => Some(
                "a cache is an overlay mounted in the sandbox's user namespace: it needs Linux 5.11 or later with overlayfs (CONFIG_OVERLAY_FS), and a host directory overlayfs takes as a lower layer; or remove the cache entry (`cordon explain` shows where it came from)"
                    .to_string(),
            ),
            _ => None,
        }
    }
}

/// What an unreadable path is, which decides how it is hidden.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Dir,
    File,
}

/// The resolved file view: every path absolute, canonical and existing.
#[derive(Debug, Default)]
pub struct FileView {
    /// Size of the private `/tmp`, in bytes.
    pub tmp_size: u64,
    /// Host paths bound writable: the project first (unless it is read-only), then `allow_write`.
    pub writable: Vec<PathBuf>,
    /// Unreadable paths.
    pub hidden: Vec<(PathBuf, Kind)>,
    /// Paths re-allowed for reading beneath a hidden directory.
    pub reallowed: Vec<PathBuf>,
    /// Paths kept read-only inside writable areas.
    pub read_only: Vec<PathBuf>,
    /// Directories between a writable root and a protected path, bound onto
    /// themselves so they cannot be renamed away and recreated.
    pub pinned: Vec<PathBuf>,
    /// Protected paths that do not exist: the file creation gate refuses
    /// to make them.
    pub guard: Guard,
    /// The configs of the repositories in the writable areas when the run
    /// started (read-only in the view): `git config` inside may change
    /// their settings that cannot run code (see `config_gate`).
    pub git_configs: Vec<PathBuf>,
    /// The repositories in the writable areas when the run started; any
    /// other found afterwards was made by the sandbox.
    pub repos_at_start: repos::Scan,
    /// The credentials door's CA bundle: (host file, path inside), bound
    /// read-only over the distribution's bundle when TLS inspection is on.
    pub trust_bundle: Option<(PathBuf, PathBuf)>,
    /// The caches: host directories seen writable, their writes kept in
    /// private layers (see [`super::caches`]).
    pub caches: super::caches::Caches,
    /// Directories of cordon's own that the repositories' walks pass by
    /// (the caches' private layers).
    pub apart: Vec<PathBuf>,
    /// Agents' state directories (writable roots too), each with the names
    /// in it the sandbox may write and make.
    pub state: Vec<(PathBuf, Vec<String>)>,
    /// Each state directory's mode and owner at start: restored at exit
    /// if the sandbox changed them (a directory others may write is one
    /// they could plant hooks in).
    pub state_modes: Vec<(PathBuf, u32, u32, u32)>,
    /// Globs of absolute paths below the state directories that stay
    /// read-only and cannot be made (`[[files.state]] protect`).
    pub state_protect: Vec<String>,
    /// Directories in the state directories the sandbox sees empty and
    /// writable, each a tmpfs of its own (`[[files.state]] scratch`).
    pub scratch: Vec<PathBuf>,
    /// Directories cordon made for the agents (a missing state directory,
    /// a scratch directory's mount point), in the order made: removed at
    /// exit if they are still empty, so a run that writes nothing leaves
    /// the home as it was.
    pub made: Vec<Made>,
    /// Agents' config files, as the sandbox names them (the real
    /// directory and the name), with their entries: init opens each for
    /// writing before it builds the view (see `state_gate`).
    pub state_files: Vec<(PathBuf, crate::policy::state::StateFile)>,
}

/// Where the new root is assembled, inside the staging tmpfs.
pub const NEW_ROOT: &str = "/newroot";
/// Where the host's root stays reachable while the view is built.
pub const OLD_ROOT: &str = "/oldroot";
/// The staging tmpfs is mounted here (in the sandbox's own mount namespace).
const STAGE: &str = "/tmp";
/// A tmpfs holding [`EMPTY_FILE`] alone, read-only once it is made.
const EMPTY_FILE_FS: &str = "/hide-file";
/// An empty file with mode 000, bound over unreadable files.
const EMPTY_FILE: &str = "/hide-file/empty";
/// An empty tmpfs with mode 000, read-only, bound over unreadable
/// directories (but those a re-allowed path lies beneath).
const EMPTY_DIR: &str = "/hide-dir";
/// Where the layers of caches kept in memory are mounted, in the staging
/// tmpfs (out of the sandbox's view).
const CACHE_MEMORY: &str = "/cache-layers";
/// Options of the tmpfs of a hidden directory.
const HIDDEN_DIR_OPTIONS: &str = "size=4096,nr_inodes=64";

/// Device nodes bound from the host into the minimal `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];
/// Parts of `/proc` kept read-only: writing them reconfigures the host.
const PROC_READ_ONLY: &[&str] = &["sys", "sysrq-trigger", "irq", "bus", "fs"];
/// Parts of `/proc` hidden: kernel memory, keys and timing side channels.
///
/// The root-only ones matter because a sandbox started by root runs as
/// uid 0 (without capabilities): files of mode 0400 owned by root stay
/// readable to it. `iomem`, `ioports` and `kallsyms` show addresses only
/// to CAP_SYS_ADMIN / CAP_SYSLOG in the initial namespace, which the
/// sandbox never holds, so `iomem` and `ioports` stay (tools read them
/// for the names) and `kallsyms` is hidden anyway.
const PROC_MASKED: &[&str] = &[
    "kcore",
    "keys",
    "timer_list",
    "sched_debug",
    "kallsyms",
    "kmsg",
    // Physical page flags, map counts and cgroups (root-only): a map of
    // physical memory for Rowhammer and page-cache attacks.
    "kpageflags",
    "kpagecount",
    "kpagecgroup",
    // Allocator state (root-only): heap layout for kernel exploits.
    "slabinfo",
    "vmallocinfo",
    "pagetypeinfo",
];
/// Kept from the host's `/sys` over the sandbox's own sysfs: the cgroup
/// hierarchies, where runtimes (JVM, Go, Node) read their limits.
const SYS_KEPT: &[&str] = &["fs/cgroup"];
/// Parts of the sandbox's sysfs hidden under an empty tmpfs: firmware and
/// hardware identities, which no program needs and which fingerprint the
/// host.
const SYS_MASKED_DIRS: &[&str] = &[
    // ACPI tables (readable by root), raw DMI/SMBIOS tables, EFI variables,
    // the firmware memory map.
    "firmware",
    // `/sys/class/dmi/id` links here: product_uuid, product, board and
    // chassis serials.
    "devices/virtual/dmi",
    // The VM's UUID on Xen.
    "hypervisor",
];
/// Files of the sandbox's sysfs hidden behind the empty file.
const SYS_MASKED_FILES: &[&str] = &[
    // The physical address of the kernel's crash-dump note.
    "kernel/vmcoreinfo",
];
/// Host paths the sandbox replaces wholesale; policy paths under them only
/// matter beneath a writable bind.
const REPLACED: &[&str] = &["/proc", "/dev", "/tmp"];
/// Whether init builds the mount view: with its namespaces, unless a
/// debug build's test switch (`CORDON_TEST_WEAKEN=files`) keeps the
/// host's view.
pub fn mount_view_on(namespaces: bool) -> bool {
    namespaces && !super::weaken::off("files")
}

/// The file systems [`FileView::apply`] mounts afresh, whose inodes only
/// the sandbox's own view has (everything else it shows is a bind of the
/// host's, hidden paths aside): Landlock's rules for them are made inside.
pub const FRESH_MOUNTS: &[&str] = &["/tmp", "/dev", "/proc", "/sys"];

/// Where host daemons keep their UNIX sockets; hidden from the sandbox.
const SOCKET_DIRS: &[&str] = &["/run", "/var/run"];

/// The primitive mount operations the view is built from.
pub trait MountOps {
    /// Makes the mount at `path` and everything under it private.
    fn make_private(&mut self, path: &Path) -> io::Result<()>;
    /// Mounts a new tmpfs with `options` (e.g. `mode=1777,size=1024`).
    fn mount_tmpfs(&mut self, target: &Path, options: &str) -> io::Result<()>;
    /// Mounts a new procfs for the current pid namespace.
    fn mount_proc(&mut self, target: &Path) -> io::Result<()>;
    /// Mounts a new sysfs, read-only, for the current network namespace.
    fn mount_sysfs(&mut self, target: &Path) -> io::Result<()>;
    /// Mounts a new, private devpts instance.
    fn mount_devpts(&mut self, target: &Path) -> io::Result<()>;
    /// Binds `source` (recursively) onto `target`.
    fn bind(&mut self, source: &Path, target: &Path) -> io::Result<()>;
    /// Mounts an overlay on `target`: `lower` read-only beneath, writes
    /// to `upper` (`work` is overlayfs's own), user extended attributes
    /// for its bookkeeping (the user namespace's only kind).
    fn mount_overlay(
        &mut self,
        target: &Path,
        lower: &Path,
        upper: &Path,
        work: &Path,
    ) -> io::Result<()>;
    /// Sets `sys::attr` bits on the mount at `target`.
    fn set_attrs(&mut self, target: &Path, attrs: u64, recursive: bool) -> io::Result<()>;
    /// `pivot_root(new_root, put_old)` then `chdir("/")`.
    fn pivot_root(&mut self, new_root: &Path, put_old: &Path) -> io::Result<()>;
    /// Makes `new_root` the root and detaches everything else.
    fn enter_root(&mut self, new_root: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
    fn is_dir(&self, path: &Path) -> bool;
    fn mkdir_all(&mut self, path: &Path) -> io::Result<()>;
    fn create_file(&mut self, path: &Path, mode: u32) -> io::Result<()>;
    fn symlink(&mut self, target: &Path, link: &Path) -> io::Result<()>;
}

/// `path` as seen under `root`.
pub fn under(root: &str, path: &Path) -> PathBuf {
    Path::new(root).join(path.strip_prefix("/").unwrap_or(path))
}

fn depth(path: &Path) -> usize {
    path.components().count()
}

/// The hidden paths, looked up by each ancestor of a path asked about
/// (a few hashes) rather than compared with every one of them (hundreds).
struct Hidden<'a>(HashSet<&'a Path>);

impl<'a> Hidden<'a> {
    fn of(hidden: &'a [(PathBuf, Kind)]) -> Hidden<'a> {
        Hidden(hidden.iter().map(|(p, _)| p.as_path()).collect())
    }

    /// Whether `path` is hidden or lies beneath a hidden path.
    fn holds(&self, path: &Path) -> bool {
        path.ancestors().any(|a| self.0.contains(a))
    }
}

/// What planning marks on the way: paths kept read-only, directories
/// pinned in place, missing paths guarded.
#[derive(Debug, Default)]
struct Marks {
    read_only: BTreeSet<PathBuf>,
    pins: BTreeSet<PathBuf>,
    guarded: BTreeSet<PathBuf>,
    /// Directories found to be their own canonical path: each protected
    /// name's parent is checked once, not once per name.
    canonical: BTreeSet<PathBuf>,
}

/// One entry of the ordered mount list built from the policy paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Writable,
    Cache,
    Pin,
    HideDir,
    HideFile,
    Reallow,
    ReadOnly,
    Scratch,
}

impl FileView {
    /// Resolves the policy's file rules against the host as it is now.
    pub fn plan(policy: &Policy) -> Result<FileView, FilesError> {
        let mut view = FileView {
            tmp_size: policy.limits.max_tmp.value,
            ..FileView::default()
        };
        // Made before the deny list is read, so that it is hidden in this
        // run too (see `super::caches`).
        super::caches::prepare(policy)?;
        let project = canonical(&policy.project.value, "project")?;
        if !policy.files.read_only_project.value {
            view.writable.push(project.clone());
        }
        // Each writable path found, with its rule's source, for the check
        // against the state directories below.
        let mut allowed: Vec<(PathBuf, &crate::policy::Source)> = Vec::new();
        for rule in &policy.files.allow_write {
            let found = rule.value.expand();
            if let (true, PathPattern::Exact(p)) = (found.is_empty(), &rule.value) {
                return Err(FilesError::MissingWritable {
                    path: p.clone(),
                    from: rule.source.to_string(),
                });
            }
            for path in found {
                let path = canonical(&path, "writable path")?;
                if !path.is_dir() {
                    return Err(FilesError::WritableNotDirectory {
                        path,
                        from: rule.source.to_string(),
                    });
                }
                allowed.push((path.clone(), &rule.source));
                if !view.writable.contains(&path) {
                    view.writable.push(path);
                }
            }
        }
        for state in &policy.files.state {
            let dir = state_dir(&state.value.dir, &state.source.to_string(), &mut view.made)?;
            if !view.writable.contains(&dir) {
                view.writable.push(dir.clone());
            }
            let meta = dir
                .metadata()
                .map_err(fail("cannot read the state directory", &dir))?;
            view.state_modes.push((
                dir.clone(),
                std::os::unix::fs::MetadataExt::mode(&meta) & 0o7777,
                std::os::unix::fs::MetadataExt::uid(&meta),
                std::os::unix::fs::MetadataExt::gid(&meta),
            ));
            let escaped = globset::escape(&dir.to_string_lossy());
            view.state_protect
                .extend(state.value.protect.iter().map(|p| format!("{escaped}/{p}")));
            for name in &state.value.scratch {
                let path = dir.join(name);
                // A tmpfs would be mounted where a link there leads.
                if path.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
                    return Err(FilesError::Path {
                        what: "a scratch directory of the agent's state is not a directory",
                        path,
                        source: io::Error::from_raw_os_error(libc::ENOTDIR),
                    });
                }
                if path.symlink_metadata().is_err() {
                    make_dir(&path, &mut view.made).map_err(fail(
                        "cannot make the scratch directory's mount point",
                        &path,
                    ))?;
                }
                view.scratch.push(path);
            }
            view.state
                .push((dir, state.value.names().cloned().collect()));
        }
        for file in &policy.files.state_files {
            let entry = &file.value;
            let (Some(dir), Some(name)) = (entry.path.parent(), entry.path.file_name()) else {
                continue;
            };
            if entry.path.symlink_metadata().is_err() {
                // Its first version cannot be checked against one before.
                crate::say!(
                    "cordon: {} does not exist yet, so the agent cannot make it here ({})",
                    crate::escape::printable(&entry.path),
                    file.source
                );
                continue;
            }
            let dir = canonical(dir, "state file's directory")?;
            view.state_files.push((dir.join(name), entry.clone()));
        }
        // A writable area inside a state directory, but in none of its
        // state, would open what the entry keeps read-only.
        for (path, source) in allowed {
            for (dir, names) in &view.state {
                let first = path.strip_prefix(dir).ok().and_then(|r| r.iter().next());
                if first.is_some_and(|n| {
                    !names
                        .iter()
                        .any(|s| crate::policy::state::name_matches(s, n))
                }) {
                    return Err(FilesError::WritableInsideState {
                        path,
                        from: source.to_string(),
                        dir: dir.clone(),
                        names: names.join(", "),
                    });
                }
            }
        }
        if let Some(root) = view.writable.iter().find(|p| p.parent().is_none()) {
            return Err(FilesError::WritableRoot(root.clone()));
        }
        if let Some((root, place)) = view
            .writable
            .iter()
            .find_map(|w| startup_place_in(w, &policy.homes))
        {
            return Err(FilesError::StartupPlace { root, place });
        }
        // cordon's own config (what widens later runs) and the system's
        // code, whatever the path to them.
        let own = &policy.files.own_config;
        let system = SYSTEM_CODE_TREES.iter().map(Path::new);
        for place in std::iter::once(own.as_path()).chain(system) {
            let place = place.canonicalize().unwrap_or_else(|_| place.to_path_buf());
            if let Some(root) = view
                .writable
                .iter()
                .find(|w| w.starts_with(&place) || place.starts_with(w))
            {
                return Err(FilesError::StartupPlace {
                    root: root.clone(),
                    place,
                });
            }
        }

        let allow_read: Vec<&PathPattern> =
            policy.files.allow_read.iter().map(|r| &r.value).collect();
        let mut hidden: Vec<(PathBuf, Kind)> = Vec::new();
        let homes = Listed::of_busy(&policy.homes, &policy.files.deny_read);
        let mut resolved = Resolved::default();
        for rule in &policy.files.deny_read {
            let found = match &rule.value {
                PathPattern::Exact(path) if homes.absent(path) => Vec::new(),
                pattern => pattern.expand(),
            };
            for path in found {
                let Some((path, kind)) = resolved.real(&path) else {
                    continue; // a dangling symlink reaches nothing
                };
                if allow_read.iter().any(|a| a.covers(&path)) || !view.relevant(&path) {
                    continue;
                }
                hidden.push((path, kind));
            }
        }
        // Host daemons' UNIX sockets (docker, systemd, D-Bus, ssh-agent):
        // Landlock before ABI 9 cannot refuse connecting to them.
        let runtime_dirs = SOCKET_DIRS
            .iter()
            .map(PathBuf::from)
            .chain(std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from));
        for dir in runtime_dirs {
            if let Ok(dir) = std::fs::canonicalize(&dir) {
                if dir.is_dir()
                    && !view.is_writable(&dir)
                    && !allow_read.iter().any(|a| a.covers(&dir))
                {
                    hidden.push((dir, Kind::Dir));
                }
            }
        }
        hidden.sort();
        hidden.dedup();
        // A path under another hidden directory is already unreadable.
        let outer: HashSet<PathBuf> = hidden
            .iter()
            .filter(|h| h.1 == Kind::Dir)
            .map(|h| h.0.clone())
            .collect();
        hidden.retain(|(p, _)| !p.ancestors().skip(1).any(|a| outer.contains(a)));
        view.hidden = hidden;

        // Allowed host sockets stay visible where the runtime dirs are hidden.
        let shown = policy
            .files
            .allow_read
            .iter()
            .chain(&policy.network.unix_sockets);
        for rule in shown {
            for literal in rule.value.expand() {
                let Ok(path) = std::fs::canonicalize(&literal) else {
                    continue;
                };
                // A link in a writable area may have been planted by an
                // earlier sandbox to make this rule re-allow something else
                // (a denied file, the audit key): only the path as named.
                let under_hidden = view.hidden.iter().any(|(h, _)| path.starts_with(h));
                if path != literal && under_hidden && view.is_writable(&literal) {
                    return Err(FilesError::ReallowThroughLink {
                        path: literal,
                        target: path,
                        from: rule.source.to_string(),
                    });
                }
                if view.hidden.iter().any(|(h, _)| strictly_beneath(&path, h)) {
                    view.reallowed.push(path);
                }
            }
        }

        let mut marks = Marks::default();
        for rule in &policy.files.deny_write {
            // A missing path named exactly may not be created either (a
            // rename of its parent could otherwise undo the rule).
            if let PathPattern::Exact(path) = &rule.value {
                if path.symlink_metadata().is_err() {
                    let real = canonical_beyond(path).ok_or_else(|| FilesError::Path {
                        what: "cannot resolve the --deny-write path",
                        path: path.clone(),
                        source: io::Error::from_raw_os_error(libc::ENOENT),
                    })?;
                    marks.guarded.insert(real);
                    continue;
                }
            }
            for path in rule.value.expand() {
                if let Ok(path) = std::fs::canonicalize(&path) {
                    view.keep_read_only(path, &mut marks);
                }
            }
        }
        // In an agent's state directory, what is not state stays as it is:
        // read-only where it is a file or directory, and a link may not be
        // made anew once removed (what it leads to in a writable area is
        // read-only too). New names are the guard's (`Guard::only`).
        for (dir, names) in &view.state {
            let entries =
                std::fs::read_dir(dir).map_err(fail("cannot list the state directory", dir))?;
            for entry in entries {
                let entry = entry.map_err(fail("cannot list the state directory", dir))?;
                let name = entry.file_name();
                if names
                    .iter()
                    .any(|n| crate::policy::state::name_matches(n, &name))
                {
                    continue;
                }
                let path = entry.path();
                let is_link = entry
                    .file_type()
                    .map_err(fail("cannot read", &path))?
                    .is_symlink();
                if is_link {
                    marks.guarded.insert(path.clone());
                    if let Ok(real) = std::fs::canonicalize(&path) {
                        if view.is_writable(&real) {
                            view.keep_read_only(real, &mut marks);
                        }
                    }
                } else {
                    view.keep_read_only(path, &mut marks);
                }
            }
        }
        // What a state entry protects below its names: read-only where it
        // is now (and where a link there leads); the guard refuses making
        // it (`Guard::state_protect`).
        let state_protect = state_protect_set(&view.state_protect)?;
        // One state directory in the view for each entry, in order.
        for ((dir, _), state) in view.state.iter().zip(&policy.files.state) {
            for pattern in &state.value.protect {
                for found in matching(dir, pattern)? {
                    let real = std::fs::canonicalize(&found).unwrap_or(found);
                    if view.is_writable(&real) {
                        view.keep_read_only(real, &mut marks);
                    }
                }
            }
        }
        // What the user keeps from being written: no config beneath is
        // opened for `git config`'s updates, which bypass the view.
        let denied_write: Vec<PathBuf> = marks.read_only.iter().cloned().collect();
        let names: Vec<&str> = policy
            .files
            .protected
            .iter()
            .map(|n| n.value.as_str())
            .collect();
        // Every repository git would see in the writable areas, and the
        // ones that hold them (their config may point into them).
        let wanted: Vec<&str> = PROTECTED_ANYWHERE
            .iter()
            .map(|n| n.split_once('/').map_or(*n, |(dir, _)| dir))
            .collect();
        // The caches' private layers: the sandbox cannot write them but
        // through its overlays, nor the host's tools read them.
        view.apart = std::fs::canonicalize(&policy.files.cache_layers)
            .into_iter()
            .collect();
        let scan = repos::scan(&view.writable, &wanted, &view.apart)?;
        // Names tools look for from any depth: those there now are kept,
        // below the writable areas and in a writable area that is itself
        // such a directory (`--allow-write ~/.claude`, whose settings and
        // hooks are the user's own).
        for found in scan.named.iter().chain(&view.writable) {
            let name = found
                .file_name()
                .and_then(std::ffi::OsStr::to_str)
                .unwrap_or_default();
            for protected in PROTECTED_ANYWHERE {
                match protected.split_once('/') {
                    Some((dir, file)) if dir == name => {
                        view.protect_anywhere(&found.join(file), &mut marks)?
                    }
                    None if *protected == name => view.protect_anywhere(found, &mut marks)?,
                    _ => {}
                }
            }
        }
        let mut work_trees: BTreeSet<PathBuf> = view.writable.iter().cloned().collect();
        work_trees.extend(scan.work_trees.iter().cloned());
        let mut git_dirs: BTreeSet<PathBuf> = scan.git_dirs.clone();
        for root in &view.writable {
            git_dirs.extend(repos::enclosing_git_dirs(root));
        }
        for link in &scan.git_links {
            if link.is_symlink() {
                // A symlinked `.git` cannot be bound over; it may not be
                // made anew once removed (its target is protected below).
                marks.guarded.insert(link.clone());
            } else {
                view.keep_read_only(link.clone(), &mut marks);
            }
        }
        // Files the repositories' config makes git read or run (hooksPath,
        // includes, fsmonitor, ...), and work trees it names.
        let mut code_paths = user_git_files();
        for git_dir in &git_dirs {
            let work_tree = work_trees
                .iter()
                .find(|w| repos::git_dir_of(w).as_ref() == Some(git_dir))
                .cloned();
            code_paths.extend(config_code_paths(git_dir, work_tree)?);
        }
        for code in code_paths {
            if code.key == "core.worktree" {
                work_trees.insert(code.path);
            } else {
                view.protect_code_path(code, &mut marks)?;
            }
        }
        let patterns = protected_patterns()?;
        for root in &work_trees {
            // One listing answers for every protected name not there.
            let listed = Listed::of(root);
            for name in &names {
                view.protect_listed(root, name, &listed, &mut marks)?;
            }
            // Names a pattern protects: those there now stay read-only.
            for (dir, name) in listed.entries() {
                let path = dir.join(name);
                if patterns.is_match(name) && view.is_writable(&path) {
                    view.keep_read_only(path, &mut marks);
                }
            }
        }
        // A worktree's git dir names are partly a repository's own: each
        // looked at once.
        let git_dir_names = GIT_DIR_PROTECTED.iter().chain(
            WORKTREE_PROTECTED
                .iter()
                .filter(|n| !GIT_DIR_PROTECTED.contains(n)),
        );
        let git_dir_names: Vec<&str> = git_dir_names.copied().collect();
        for git_dir in &git_dirs {
            for name in &git_dir_names {
                view.protect(git_dir, name, &mut marks)?;
            }
        }
        view.repos_at_start = scan;
        // A denied path in a writable area stays where it was planned: a
        // directory on the way to it renamed away would take the file (and
        // the mount over it) along, out from under the next run's plan.
        for (hidden, _) in &view.hidden {
            if view.is_writable(hidden) {
                view.pin_parents(hidden, &mut marks);
            }
        }
        let Marks {
            mut read_only,
            mut pins,
            mut guarded,
            ..
        } = marks;
        let hidden = Hidden::of(&view.hidden);
        read_only.retain(|p| view.relevant(p) && view.is_writable(p) && !hidden.holds(p));
        pins.retain(|p: &PathBuf| {
            !view.writable.contains(p) && !read_only.contains(p) && !hidden.holds(p)
        });
        guarded.retain(|p| view.is_writable(p) && !hidden.holds(p));
        // Only a real git dir's config, read-only for no reason but that:
        // a `gitdir:` line may name any directory, and the in-place write
        // would reach a file named `config` there whatever reads it.
        view.git_configs = git_dirs
            .iter()
            .filter(|d| repos::is_git_dir(d))
            .map(|d| d.join("config"))
            .filter(|c| read_only.contains(c))
            .filter(|c| !denied_write.iter().any(|d| c.starts_with(d)))
            .collect();
        view.read_only = read_only.into_iter().collect();
        view.pinned = pins.into_iter().collect();
        let pattern_dirs = work_trees.into_iter().filter(|w| view.is_writable(w));
        view.guard = Guard::new(guarded, &view.writable)
            .with_patterns(pattern_dirs, patterns)
            .anywhere(PROTECTED_ANYWHERE, &view.writable)
            .only(&view.state, state_protect)
            .scratch(&view.scratch);
        let hidden: Vec<PathBuf> = view.hidden.iter().map(|(p, _)| p.clone()).collect();
        view.caches = super::caches::plan(policy, &view.writable, &hidden)?;
        Ok(view)
    }

    /// Whether a policy path can be seen in the sandbox at all.
    fn relevant(&self, path: &Path) -> bool {
        !REPLACED.iter().any(|r| path.starts_with(r)) || self.is_writable(path)
    }

    fn is_writable(&self, path: &Path) -> bool {
        self.writable.iter().any(|w| path.starts_with(w))
    }

    /// Keeps `path` read-only, and the directories on the way to it where
    /// they are: renaming one away and recreating the path would undo it.
    fn keep_read_only(&self, path: PathBuf, marks: &mut Marks) {
        self.pin_parents(&path, marks);
        marks.read_only.insert(path);
    }

    /// Pins the directory `dir` and those between it and the writable root
    /// holding it (the root itself is a mount already).
    fn pin_with_parents(&self, dir: &Path, marks: &mut Marks) {
        if self.is_writable(dir) && !self.writable.iter().any(|w| w == dir) {
            marks.pins.insert(dir.to_path_buf());
        }
        self.pin_parents(dir, marks);
    }

    /// Pins every directory between the writable root holding `path` and
    /// `path` (exclusive).
    fn pin_parents(&self, path: &Path, marks: &mut Marks) {
        let mut ancestor = path.parent();
        while let Some(dir) = ancestor {
            if self.writable.iter().any(|w| w == dir) || !self.is_writable(dir) {
                break;
            }
            // A directory pinned before had the ones above it pinned with
            // it (where this walk stops depends on the directory alone):
            // the many names under one directory walk up once.
            if !marks.pins.insert(dir.to_path_buf()) {
                break;
            }
            ancestor = dir.parent();
        }
    }

    /// Protects one instance of a name tools look for from any depth
    /// (`PROTECTED_ANYWHERE`): read-only where it exists; a link stays a
    /// link (it may not be made anew once removed) and what it leads to in
    /// a writable area is read-only; where the name would land through a
    /// linked directory, that place is guarded too.
    fn protect_anywhere(&self, path: &Path, marks: &mut Marks) -> Result<(), FilesError> {
        match path.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                marks.guarded.insert(path.to_path_buf());
                match std::fs::canonicalize(path) {
                    Ok(real) => {
                        if self.is_writable(&real) {
                            self.keep_read_only(real, marks);
                        }
                    }
                    // Dangling: what it names is the part, once made.
                    Err(_) => {
                        if let Some(real) = dangling_target(path) {
                            marks.guarded.insert(real);
                        }
                    }
                }
            }
            Ok(_) => {
                let real = canonical(path, "protected name")?;
                self.keep_read_only(real, marks);
            }
            Err(_) => {
                if let Some(real) = canonical_beyond(path).filter(|r| r != path) {
                    marks.guarded.insert(real);
                }
            }
        }
        Ok(())
    }

    /// Protects a file git reads or runs because of its config: read-only
    /// if it exists, guarded if not; a directory git only steps through
    /// (`..`) is pinned. One that holds a writable area cannot be kept
    /// from the sandbox: refused.
    fn protect_code_path(
        &self,
        code: gitconfig::CodePath,
        marks: &mut Marks,
    ) -> Result<(), FilesError> {
        if let Some(root) = self.writable.iter().find(|w| w.starts_with(&code.path)) {
            return Err(FilesError::CodePathIsWritable {
                path: code.path.clone(),
                root: root.clone(),
                key: code.key,
                file: code.file,
                line: code.line,
            });
        }
        if !self.is_writable(&code.path) {
            return Ok(());
        }
        match code.path.symlink_metadata() {
            Ok(meta) if meta.is_dir() && !code.is_dir => {
                self.pin_with_parents(&code.path, marks);
            }
            Ok(_) => {
                let real = canonical(&code.path, "path named in git config")?;
                self.keep_read_only(real, marks);
            }
            Err(_) => {
                marks.guarded.insert(code.path);
            }
        }
        Ok(())
    }

    /// Protects `root/name`: read-only if it exists, guarded (refused at
    /// creation by the gate) if it does not. `root` itself is pinned in
    /// both cases, so the name cannot be made elsewhere and moved in.
    fn protect(&self, root: &Path, name: &str, marks: &mut Marks) -> Result<(), FilesError> {
        self.protect_listed(root, name, &Listed::default(), marks)
    }

    /// [`FileView::protect`], with what `listed` shows absent taken as
    /// such without a lookup.
    fn protect_listed(
        &self,
        root: &Path,
        name: &str,
        listed: &Listed,
        marks: &mut Marks,
    ) -> Result<(), FilesError> {
        let rel = name.trim_end_matches('/');
        let path = root.join(rel);
        if !self.is_writable(&path) {
            return Ok(());
        }
        // A name reached through a symlink could point anywhere (an
        // untrusted project's `protect` list must not make cordon watch
        // files outside it), and a symlink itself cannot be mounted over,
        // so the sandbox could replace it: refuse both.
        let existing_parent = path
            .ancestors()
            .skip(1)
            .find(|a| marks.canonical.contains(*a) || listed.lstat(a).is_ok());
        if let Some(parent) = existing_parent.filter(|p| !marks.canonical.contains(*p)) {
            if std::fs::canonicalize(parent).ok().as_deref() != Some(parent) {
                return Err(FilesError::ProtectedSymlink(parent.to_path_buf()));
            }
            marks.canonical.insert(parent.to_path_buf());
        }
        match listed.lstat(&path) {
            Ok(meta) if meta.file_type().is_symlink() => Err(FilesError::ProtectedSymlink(path)),
            Ok(_) => {
                self.keep_read_only(path, marks);
                Ok(())
            }
            Err(_) => {
                self.pin_with_parents(root, marks);
                marks.guarded.insert(path);
                Ok(())
            }
        }
    }

    /// After the run: neutralises what the sandbox left in the writable
    /// areas that would run code on the host (see [`repos::sweep`]).
    pub fn sweep(&self, since: std::time::SystemTime) -> repos::Swept {
        let mut swept = repos::sweep(
            &self.writable,
            &self.read_only,
            &self.repos_at_start,
            since,
            &self.apart,
        );
        for (dir, mode, uid, gid) in &self.state_modes {
            if let Some(outcome) = restore_mode(dir, *mode, *uid, *gid) {
                swept.note(outcome);
            }
        }
        // What cordon made and the run left empty goes (the last made
        // first: a mount point inside a state directory made too).
        for made in self.made.iter().rev() {
            if let Err(failed) = made.undo() {
                swept.note(Err(failed));
            }
        }
        swept
    }

    /// Whether a re-allowed path lies beneath the hidden directory `host`.
    fn reaches_beneath(&self, host: &Path) -> bool {
        self.reallowed.iter().any(|r| strictly_beneath(r, host))
    }

    /// Whether the view mounts something beneath the hidden directory
    /// `host` (a re-allowed path, or a writable one such as the project):
    /// its mount point is made there, which the shared, sealed
    /// [`EMPTY_DIR`] cannot take, so `host` needs a tmpfs of its own.
    fn mounts_beneath(&self, host: &Path) -> bool {
        self.reallowed
            .iter()
            .chain(&self.writable)
            .any(|p| strictly_beneath(p, host))
    }

    /// Builds the view inside a fresh mount namespace and makes it the root.
    pub fn apply(&self, ops: &mut dyn MountOps) -> Result<(), FilesError> {
        let root = Path::new("/");
        ops.make_private(root).map_err(fail("make private", root))?;
        let stage = Path::new(STAGE);
        ops.mount_tmpfs(stage, "mode=0755,size=65536")
            .map_err(fail("staging tmpfs", stage))?;
        let old = Path::new(STAGE).join(OLD_ROOT.trim_start_matches('/'));
        ops.mkdir_all(&old).map_err(fail("mkdir", &old))?;
        ops.pivot_root(stage, &old)
            .map_err(fail("pivot_root", stage))?;
        make_hiding_places(ops)?;

        let new_root = Path::new(NEW_ROOT);
        ops.mkdir_all(new_root).map_err(fail("mkdir", new_root))?;
        ops.bind(Path::new(OLD_ROOT), new_root)
            .map_err(fail("bind host root", new_root))?;
        use crate::sys::attr::{NODEV, NOEXEC, NOSUID, RDONLY};
        ops.set_attrs(new_root, RDONLY | NOSUID | NODEV, true)
            .map_err(fail("read-only root", new_root))?;

        let tmp = under(NEW_ROOT, Path::new("/tmp"));
        let tmp_opts = format!("mode=1777,size={}", self.tmp_size);
        ops.mount_tmpfs(&tmp, &tmp_opts)
            .map_err(fail("private /tmp", &tmp))?;
        ops.set_attrs(&tmp, NOSUID | NODEV, false)
            .map_err(fail("private /tmp", &tmp))?;
        self.build_dev(ops, &tmp_opts)?;
        self.build_proc(ops)?;
        build_sys(ops)?;

        let mut steps: Vec<(usize, Step, &Path)> = Vec::new();
        steps.extend(
            self.writable
                .iter()
                .map(|p| (depth(p), Step::Writable, p.as_path())),
        );
        steps.extend(
            self.caches
                .mounts
                .iter()
                .map(|c| (depth(&c.inside), Step::Cache, c.inside.as_path())),
        );
        steps.extend(
            self.pinned
                .iter()
                .map(|p| (depth(p), Step::Pin, p.as_path())),
        );
        steps.extend(self.hidden.iter().map(|(p, k)| {
            let step = if *k == Kind::Dir {
                Step::HideDir
            } else {
                Step::HideFile
            };
            (depth(p), step, p.as_path())
        }));
        steps.extend(
            self.reallowed
                .iter()
                .map(|p| (depth(p), Step::Reallow, p.as_path())),
        );
        steps.extend(
            self.read_only
                .iter()
                .map(|p| (depth(p), Step::ReadOnly, p.as_path())),
        );
        steps.extend(
            self.scratch
                .iter()
                .map(|p| (depth(p), Step::Scratch, p.as_path())),
        );
        steps.sort();
        let mut vanished: Vec<&Path> = Vec::new();
        for (_, step, host) in steps {
            let target = under(NEW_ROOT, host);
            let source = under(OLD_ROOT, host);
            let hides = matches!(step, Step::HideDir | Step::HideFile);
            // A denied path that someone on the host removed after the plan
            // was made leaves nothing to hide: it is as if it had never been
            // there (a path made later is not hidden either). Every other
            // step still needs its path and fails below.
            if hides && !ops.exists(&target) && !ops.exists(&source) {
                vanished.push(host);
                continue;
            }
            let is_dir = match step {
                Step::HideDir | Step::Cache | Step::Scratch => true,
                Step::HideFile => false,
                _ => ops.is_dir(&source),
            };
            if !ops.exists(&target) {
                let made = if is_dir {
                    ops.mkdir_all(&target)
                } else {
                    let parent = target.parent().unwrap_or(new_root);
                    ops.mkdir_all(parent)
                        .and_then(|()| ops.create_file(&target, 0o600))
                };
                made.map_err(fail("create mount point", host))?;
            }
            match step {
                Step::Writable => {
                    ops.bind(&source, &target)
                        .map_err(fail("bind writable", host))?;
                    ops.set_attrs(&target, NOSUID | NODEV, true)
                        .map_err(fail("bind writable", host))?;
                }
                Step::Cache => self.mount_cache(ops, host, &target)?,
                // Its mount point made in the state directory (on the
                // host: the agent would make it there), its contents the
                // run's own.
                Step::Scratch => {
                    ops.mount_tmpfs(&target, &format!("mode=1777,size={}", self.tmp_size))
                        .map_err(fail("scratch directory", host))?;
                    ops.set_attrs(&target, NOSUID | NODEV, false)
                        .map_err(fail("scratch directory", host))?;
                }
                Step::Pin => ops.bind(&target, &target).map_err(fail("pin", host))?,
                // A tmpfs of its own where a path is mounted beneath,
                // whose mount point is made there (read-only once it is,
                // below); searchable but not listable when that path is
                // re-allowed, so it can be reached by name.
                Step::HideDir if self.mounts_beneath(host) => {
                    let mode = if self.reaches_beneath(host) {
                        "0111"
                    } else {
                        "000"
                    };
                    ops.mount_tmpfs(&target, &format!("mode={mode},{HIDDEN_DIR_OPTIONS}"))
                        .map_err(fail("hide directory", host))?
                }
                Step::HideDir => ops
                    .bind(Path::new(EMPTY_DIR), &target)
                    .map_err(fail("hide directory", host))?,
                Step::HideFile => ops
                    .bind(Path::new(EMPTY_FILE), &target)
                    .map_err(fail("hide file", host))?,
                Step::Reallow => {
                    ops.bind(&source, &target).map_err(fail("re-allow", host))?;
                    // Re-allowed for reading: bound from the host's own
                    // mount, it would be as writable as there (and keep
                    // set-uid files and devices) wherever Landlock is not
                    // in force, unless in a writable area.
                    let flags = if self.is_writable(host) {
                        NOSUID | NODEV
                    } else {
                        RDONLY | NOSUID | NODEV
                    };
                    ops.set_attrs(&target, flags, true)
                        .map_err(fail("re-allow", host))?;
                }
                Step::ReadOnly => {
                    ops.bind(&target, &target)
                        .map_err(fail("read-only", host))?;
                    ops.set_attrs(&target, RDONLY, true)
                        .map_err(fail("read-only", host))?;
                }
            }
        }
        for (host, kind) in &self.hidden {
            if *kind == Kind::Dir
                && self.mounts_beneath(host)
                && !vanished.contains(&host.as_path())
            {
                let target = under(NEW_ROOT, host);
                ops.set_attrs(&target, RDONLY | NOSUID | NODEV | NOEXEC, false)
                    .map_err(fail("hide directory", host))?;
            }
        }
        // cordon: credentials door. The trust bundle (system roots plus the
        // sandbox CA), read-only over the distribution's bundle.
        if let Some((host_file, inside)) = &self.trust_bundle {
            let source = under(OLD_ROOT, host_file);
            let target = under(NEW_ROOT, inside);
            if !ops.exists(&target) {
                let parent = target.parent().unwrap_or(new_root);
                ops.mkdir_all(parent)
                    .and_then(|()| ops.create_file(&target, 0o644))
                    .map_err(fail("create mount point", inside))?;
            }
            ops.bind(&source, &target)
                .map_err(fail("bind CA bundle", inside))?;
            ops.set_attrs(&target, RDONLY | NOSUID | NODEV | NOEXEC, false)
                .map_err(fail("bind CA bundle", inside))?;
        }
        ops.enter_root(new_root)
            .map_err(fail("enter new root", new_root))
    }

    /// Mounts the cache seen at `inside` on `target`: an overlay of the
    /// host directory and its private layer, or (the host directory
    /// missing) the private layer alone; the layer is the kept one, or a
    /// tmpfs of this run's.
    fn mount_cache(
        &self,
        ops: &mut dyn MountOps,
        inside: &Path,
        target: &Path,
    ) -> Result<(), FilesError> {
        use super::caches::Upper;
        use crate::sys::attr::{NODEV, NOSUID};
        let Some((i, cache)) = self
            .caches
            .mounts
            .iter()
            .enumerate()
            .find(|(_, c)| c.inside == inside)
        else {
            return Ok(());
        };
        let failed = |source| FilesError::CacheMount {
            path: inside.to_path_buf(),
            source,
        };
        let memory = Path::new(CACHE_MEMORY).join(i.to_string());
        let (upper, work) = match &cache.upper {
            Upper::Kept { upper, work } => (under(OLD_ROOT, upper), under(OLD_ROOT, work)),
            Upper::Memory => {
                ops.mkdir_all(&memory).map_err(fail("mkdir", &memory))?;
                let size = format!("mode=0700,size={}", self.tmp_size);
                ops.mount_tmpfs(&memory, &size)
                    .map_err(fail("tmpfs of a cache's layer", &memory))?;
                let (upper, work) = (memory.join("upper"), memory.join("work"));
                for dir in [&upper, &work] {
                    ops.mkdir_all(dir).map_err(fail("mkdir", dir))?;
                }
                (upper, work)
            }
        };
        match &cache.lower {
            Some(lower) => ops
                .mount_overlay(target, &under(OLD_ROOT, lower), &upper, &work)
                .map_err(failed)?,
            None => ops.bind(&upper, target).map_err(failed)?,
        }
        ops.set_attrs(target, NOSUID | NODEV, false).map_err(failed)
    }

    /// A minimal `/dev`: a few nodes bound from the host, a private devpts
    /// and shm; never the host's `/dev` itself.
    fn build_dev(&self, ops: &mut dyn MountOps, shm_opts: &str) -> Result<(), FilesError> {
        use crate::sys::attr::{NOEXEC, NOSUID, RDONLY};
        let dev = under(NEW_ROOT, Path::new("/dev"));
        ops.mount_tmpfs(&dev, "mode=0755,size=65536")
            .map_err(fail("/dev tmpfs", &dev))?;
        for name in DEVICES {
            let node = dev.join(name);
            ops.create_file(&node, 0o666)
                .map_err(fail("create device", &node))?;
            ops.bind(&Path::new(OLD_ROOT).join("dev").join(name), &node)
                .map_err(fail("bind device", &node))?;
        }
        let pts = dev.join("pts");
        ops.mkdir_all(&pts).map_err(fail("mkdir", &pts))?;
        ops.mount_devpts(&pts).map_err(fail("devpts", &pts))?;
        let shm = dev.join("shm");
        ops.mkdir_all(&shm).map_err(fail("mkdir", &shm))?;
        ops.mount_tmpfs(&shm, shm_opts)
            .map_err(fail("/dev/shm", &shm))?;
        for (link, target) in [
            ("ptmx", "pts/ptmx"),
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            let link = dev.join(link);
            ops.symlink(Path::new(target), &link)
                .map_err(fail("symlink", &link))?;
        }
        ops.set_attrs(&dev, RDONLY | NOSUID | NOEXEC, false)
            .map_err(fail("read-only /dev", &dev))
    }

    /// A fresh `/proc` for the new pid namespace, with the host-configuring
    /// parts read-only and the kernel-revealing parts masked.
    fn build_proc(&self, ops: &mut dyn MountOps) -> Result<(), FilesError> {
        use crate::sys::attr::{NODEV, NOEXEC, NOSUID, RDONLY};
        let proc = under(NEW_ROOT, Path::new("/proc"));
        ops.mount_proc(&proc).map_err(fail("procfs", &proc))?;
        for name in PROC_READ_ONLY {
            let path = proc.join(name);
            if ops.exists(&path) {
                ops.bind(&path, &path)
                    .map_err(fail("read-only /proc", &path))?;
                ops.set_attrs(&path, RDONLY | NOSUID | NODEV | NOEXEC, true)
                    .map_err(fail("read-only /proc", &path))?;
            }
        }
        for name in PROC_MASKED {
            mask_file(ops, &proc.join(name), "mask /proc")?;
        }
        Ok(())
    }
}

/// Makes [`EMPTY_FILE`] and [`EMPTY_DIR`], each on a tmpfs of its own
/// made read-only, nosuid, nodev and noexec once: a bind takes the flags
/// of the mount it is made from, so hiding a path is one bind.
fn make_hiding_places(ops: &mut dyn MountOps) -> Result<(), FilesError> {
    use crate::sys::attr::{NODEV, NOEXEC, NOSUID, RDONLY};
    let sealed = RDONLY | NOSUID | NODEV | NOEXEC;
    let file_fs = Path::new(EMPTY_FILE_FS);
    let (file, dir) = (Path::new(EMPTY_FILE), Path::new(EMPTY_DIR));
    ops.mkdir_all(file_fs).map_err(fail("mkdir", file_fs))?;
    ops.mount_tmpfs(file_fs, "mode=0755,size=4096,nr_inodes=4")
        .map_err(fail("tmpfs of the empty file", file_fs))?;
    ops.create_file(file, 0o000).map_err(fail("create", file))?;
    ops.set_attrs(file_fs, sealed, false)
        .map_err(fail("tmpfs of the empty file", file_fs))?;
    ops.mkdir_all(dir).map_err(fail("mkdir", dir))?;
    ops.mount_tmpfs(dir, &format!("mode=000,{HIDDEN_DIR_OPTIONS}"))
        .map_err(fail("empty directory", dir))?;
    ops.set_attrs(dir, sealed, false)
        .map_err(fail("empty directory", dir))
}

/// Hides `path`, if it exists, behind the empty mode-000 file.
fn mask_file(ops: &mut dyn MountOps, path: &Path, step: &'static str) -> Result<(), FilesError> {
    if !ops.exists(path) {
        return Ok(());
    }
    ops.bind(Path::new(EMPTY_FILE), path)
        .map_err(fail(step, path))
}

/// Whether `path` lies beneath `dir`, `dir` itself excluded.
fn strictly_beneath(path: &Path, dir: &Path) -> bool {
    path != dir && path.starts_with(dir)
}

/// The error of a mount step that failed on `path`.
fn fail(step: &'static str, path: &Path) -> impl FnOnce(io::Error) -> FilesError {
    let path = path.to_path_buf();
    move |source| FilesError::Mount { step, path, source }
}

/// A fresh, read-only sysfs for the sandbox's network namespace, in place
/// of the host's: its `class/net` and every device's `net/` show the
/// sandbox's own interfaces (`lo`) only, so no host interface name or MAC
/// address is readable; the host's submounts (debugfs, tracefs,
/// securityfs, bpffs, pstore, efivarfs) are not carried over. The cgroup
/// hierarchies are bound back read-only ([`SYS_KEPT`]), and firmware and
/// hardware identities are masked ([`SYS_MASKED_DIRS`],
/// [`SYS_MASKED_FILES`]). The kernel lets the owner of the network
/// namespace mount it; if it refuses, the run stops rather than show the
/// host's.
fn build_sys(ops: &mut dyn MountOps) -> Result<(), FilesError> {
    use crate::sys::attr::{NODEV, NOEXEC, NOSUID, RDONLY};
    let host_sys = under(OLD_ROOT, Path::new("/sys"));
    let sys = under(NEW_ROOT, Path::new("/sys"));
    if !ops.exists(&sys) {
        return Ok(()); // a host without /sys shows none
    }
    ops.mount_sysfs(&sys).map_err(fail(
        "the sandbox's own sysfs (its network devices only)",
        &sys,
    ))?;
    for kept in SYS_KEPT {
        let (source, target) = (host_sys.join(kept), sys.join(kept));
        if ops.exists(&source) && ops.exists(&target) {
            ops.bind(&source, &target)
                .map_err(fail("bind /sys cgroups", &target))?;
            ops.set_attrs(&target, RDONLY | NOSUID | NODEV | NOEXEC, true)
                .map_err(fail("bind /sys cgroups", &target))?;
        }
    }
    for dir in SYS_MASKED_DIRS {
        let path = sys.join(dir);
        if ops.exists(&path) {
            ops.bind(Path::new(EMPTY_DIR), &path)
                .map_err(fail("mask /sys", &path))?;
        }
    }
    for file in SYS_MASKED_FILES {
        mask_file(ops, &sys.join(file), "mask /sys")?;
    }
    Ok(())
}

/// The entries of a few directories, each listed once, so that many names
/// under one are checked without a lookup each (here a lookup costs about
/// as much as listing ten entries). Only absence is read from a listing:
/// a name listed is still looked at itself, and a directory that cannot
/// be listed answers nothing.
#[derive(Debug, Default)]
struct Listed(Vec<Listing>);

/// One directory's entries.
#[derive(Debug)]
struct Listing {
    dir: PathBuf,
    /// `dir`'s components, split once: hundreds of rules are checked
    /// against each listing.
    parts: Vec<OsString>,
    names: HashSet<OsString>,
}

/// Rules below a directory from which listing it pays.
const LISTING_PAYS: usize = 16;

impl Listed {
    /// Lists `dir`, if it can be listed.
    fn of(dir: &Path) -> Listed {
        let mut listed = Listed::default();
        listed.add(dir);
        listed
    }

    /// Lists each of `homes`, and each directory directly in one, with
    /// enough exact `rules` below it for a listing to pay (a home before
    /// the directories in it, which are not listed when it shows them
    /// absent).
    fn of_busy(homes: &[PathBuf], rules: &[Sourced<PathPattern>]) -> Listed {
        let mut listed = Listed::default();
        // Each rule's path split once, not once per home.
        let paths: Vec<Vec<&OsStr>> = rules
            .iter()
            .filter_map(|rule| match &rule.value {
                PathPattern::Exact(path) => Some(components(path).collect()),
                PathPattern::Glob { .. } => None,
            })
            .collect();
        for home in homes {
            let home_parts: Vec<&OsStr> = components(home).collect();
            let depth = home_parts.len();
            let mut in_home = 0;
            // By the name of the directory in the home, borrowed from the
            // rule (sorted as the directories' paths would be).
            let mut below: BTreeMap<&OsStr, usize> = BTreeMap::new();
            for parts in paths.iter().filter(|p| p.starts_with(&home_parts)) {
                in_home += 1;
                if parts.len() > depth + 1 {
                    *below.entry(parts[depth]).or_default() += 1;
                }
            }
            // The home before the directories in it.
            if in_home >= LISTING_PAYS && !listed.absent(home) {
                listed.add(home);
            }
            for (name, count) in below {
                let dir = home.join(name);
                if count >= LISTING_PAYS && !listed.absent(&dir) {
                    listed.add(&dir);
                }
            }
        }
        listed
    }

    fn add(&mut self, dir: &Path) {
        if let Ok(entries) = std::fs::read_dir(dir) {
            self.0.push(Listing {
                dir: dir.to_path_buf(),
                parts: components(dir).map(OsStr::to_os_string).collect(),
                names: entries.flatten().map(|e| e.file_name()).collect(),
            });
        }
    }

    /// Every entry listed: its directory and its name.
    fn entries(&self) -> impl Iterator<Item = (&Path, &OsStr)> {
        self.0.iter().flat_map(|listing| {
            listing
                .names
                .iter()
                .map(move |name| (listing.dir.as_path(), name.as_os_str()))
        })
    }

    /// Whether a listing shows that `path` does not exist: the entry it
    /// goes through below a listed directory is not there.
    fn absent(&self, path: &Path) -> bool {
        // Split once, compared with each listing's directory.
        let parts: Vec<&OsStr> = components(path).collect();
        self.0.iter().any(|listing| {
            let depth = listing.parts.len();
            let below = parts.len() > depth && listing.parts.iter().eq(&parts[..depth]);
            below && !listing.names.contains(parts[depth])
        })
    }

    /// `path`'s metadata, not following a last link: not found, without a
    /// lookup, where a listing shows it is absent.
    fn lstat(&self, path: &Path) -> io::Result<std::fs::Metadata> {
        if self.absent(path) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        path.symlink_metadata()
    }
}

/// Directories found to be canonical, so that a path named in one costs
/// a single `lstat` to resolve rather than a `readlink` of every component
/// (what `realpath` does): the deny list names many files in a few
/// directories.
#[derive(Debug)]
struct Resolved(HashSet<PathBuf>);

impl Default for Resolved {
    fn default() -> Resolved {
        Resolved(HashSet::from([PathBuf::from("/")]))
    }
}

impl Resolved {
    /// What `path` reaches, canonical (as `std::fs::canonicalize`), and
    /// its kind (as `is_dir` on it); `None` if it reaches nothing.
    fn real(&mut self, path: &Path) -> Option<(PathBuf, Kind)> {
        // A path in a canonical directory is canonical itself if it is
        // no link and is spelled plainly (no `.`, `..`, `//`, trailing
        // `/`); its own metadata then tells its kind.
        let in_canonical = path.parent().is_some_and(|p| self.0.contains(p));
        if in_canonical && is_plain(path) {
            if let Ok(meta) = path.symlink_metadata() {
                if !meta.file_type().is_symlink() {
                    let kind = if meta.is_dir() { Kind::Dir } else { Kind::File };
                    if kind == Kind::Dir {
                        self.0.insert(path.to_path_buf());
                    }
                    return Some((path.to_path_buf(), kind));
                }
            }
        }
        let real = std::fs::canonicalize(path).ok()?;
        let kind = if real.is_dir() { Kind::Dir } else { Kind::File };
        // Resolved to itself, no component was a link: every directory on
        // the way is canonical.
        if real.as_os_str() == path.as_os_str() {
            self.0
                .extend(real.ancestors().skip(1).map(Path::to_path_buf));
            if kind == Kind::Dir {
                self.0.insert(real.clone());
            }
        }
        Some((real, kind))
    }
}

/// Whether `path` is absolute and spelled as its components are: no `.`,
/// `..`, doubled or trailing `/`.
fn is_plain(path: &Path) -> bool {
    let mut parts = path.components();
    let rooted = parts.next() == Some(std::path::Component::RootDir);
    let normal = parts.all(|c| matches!(c, std::path::Component::Normal(_)));
    let rebuilt: PathBuf = path.components().collect();
    rooted && normal && rebuilt.as_os_str() == path.as_os_str()
}

/// `path`'s components, each as it is spelled (which tells them apart:
/// `/`, `.`, `..` or a name).
fn components(path: &Path) -> impl Iterator<Item = &OsStr> {
    path.components().map(|c| c.as_os_str())
}

/// Where the dangling symlink `link` (through any further links) would
/// lead, as [`canonical_beyond`] gives it: what making that makes.
fn dangling_target(link: &Path) -> Option<PathBuf> {
    let mut at = link.to_path_buf();
    for _ in 0..40 {
        let target = std::fs::read_link(&at).ok()?;
        let next = at.parent()?.join(target);
        match next.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => at = next,
            _ => return canonical_beyond(&next),
        }
    }
    None
}

/// `path` with its longest existing ancestor made canonical and the rest
/// (which must hold no `..`) appended: where the path would be made.
fn canonical_beyond(path: &Path) -> Option<PathBuf> {
    let existing = path.ancestors().find(|a| a.symlink_metadata().is_ok())?;
    let rest = path.strip_prefix(existing).ok()?;
    if rest
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    Some(std::fs::canonicalize(existing).ok()?.join(rest))
}

/// A state directory's mode and owner back as they were at start, if the
/// sandbox changed them: what was done, or what could not be.
fn restore_mode(dir: &Path, mode: u32, uid: u32, gid: u32) -> Option<Result<String, String>> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = dir.symlink_metadata().ok()?;
    let now = (meta.mode() & 0o7777, meta.uid(), meta.gid());
    if now == (mode, uid, gid) {
        return None;
    }
    let shown = crate::escape::printable(dir);
    let restored = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
        .and_then(|()| std::os::unix::fs::lchown(dir, Some(uid), Some(gid)));
    Some(match restored {
        Ok(()) => Ok(format!(
            "the sandbox changed the agent's state directory {shown} to mode {:o}, owner {}:{}; restored to {mode:o}, {uid}:{gid} (a directory others may write is one they could plant hooks in)",
            now.0, now.1, now.2
        )),
        Err(e) => Err(format!(
            "the sandbox changed the agent's state directory {shown} to mode {:o}, owner {}:{}, and it could not be restored to {mode:o}, {uid}:{gid} ({e}): set it back yourself",
            now.0, now.1, now.2
        )),
    })
}

/// The state entries' protected globs, compiled (`/` not matched by `*`).
fn state_protect_set(patterns: &[String]) -> Result<globset::GlobSet, FilesError> {
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        let glob = globset::GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| FilesError::Path {
                what: "cannot read the state entry's protect pattern",
                path: PathBuf::from(p),
                source: io::Error::other(e.to_string()),
            })?;
        set.add(glob);
    }
    set.build().map_err(|e| FilesError::Path {
        what: "cannot read the state entries' protect patterns",
        path: PathBuf::new(),
        source: io::Error::other(e.to_string()),
    })
}

/// The paths below `dir` that `pattern` (relative, `/`-separated, globs
/// in its names) names, walked one name at a time: a plain name is looked
/// up, and only a directory where a glob stands is read (links followed
/// as the agent would follow them).
fn matching(dir: &Path, pattern: &str) -> Result<Vec<PathBuf>, FilesError> {
    let mut level = vec![dir.to_path_buf()];
    for part in pattern.split('/') {
        if !part.contains(['*', '?', '[', '{', '\\']) {
            let named = level.iter().map(|d| d.join(part));
            level = named.filter(|p| p.symlink_metadata().is_ok()).collect();
            continue;
        }
        let glob = globset::Glob::new(part).map_err(|e| FilesError::Path {
            what: "cannot read the state entry's protect pattern",
            path: PathBuf::from(pattern),
            source: io::Error::other(e.to_string()),
        })?;
        let matcher = glob.compile_matcher();
        let mut next = Vec::new();
        for d in level.iter().filter(|d| d.is_dir()) {
            let entries = match std::fs::read_dir(d) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(fail("cannot list a state directory", d)(e)),
            };
            for entry in entries {
                let entry = entry.map_err(fail("cannot list a state directory", d))?;
                if matcher.is_match(entry.file_name()) {
                    next.push(entry.path());
                }
            }
        }
        level = next;
    }
    Ok(level)
}

/// A directory cordon made for an agent, with its parent's times before
/// and just after (see [`FileView::made`]).
#[derive(Debug, Clone)]
pub struct Made {
    dir: PathBuf,
    /// The parent's access and modification times before it was made.
    before: (std::time::SystemTime, std::time::SystemTime),
    /// The parent's modification time once it was made.
    after: std::time::SystemTime,
}

/// The access and modification times of `dir`.
fn times(dir: &Path) -> io::Result<(std::time::SystemTime, std::time::SystemTime)> {
    let meta = std::fs::metadata(dir)?;
    Ok((meta.accessed()?, meta.modified()?))
}

/// Makes the directory `dir` (mode 0700) and notes it in `made`.
fn make_dir(dir: &Path, made: &mut Vec<Made>) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let parent = dir.parent().unwrap_or(Path::new("/"));
    let before = times(parent)?;
    std::fs::DirBuilder::new().mode(0o700).create(dir)?;
    made.push(Made {
        dir: dir.to_path_buf(),
        before,
        after: times(parent)?.1,
    });
    Ok(())
}

impl Made {
    /// Removes the directory if it is still empty, and then gives its
    /// parent back the times it had, if nothing else changed the parent
    /// meanwhile; what could not be done, in words.
    fn undo(&self) -> Result<(), String> {
        let parent = self.dir.parent().unwrap_or(Path::new("/"));
        let untouched = times(parent).is_ok_and(|(_, m)| m == self.after);
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTEMPTY | libc::ENOENT)) => {
                return Ok(())
            }
            Err(e) => {
                return Err(format!(
                    "cannot remove {}, which cordon made for the agent and the run left empty ({e}): remove it yourself",
                    crate::escape::printable(&self.dir)
                ))
            }
        }
        if untouched {
            let (accessed, modified) = self.before;
            let times = std::fs::FileTimes::new()
                .set_accessed(accessed)
                .set_modified(modified);
            // The directory is gone either way; its parent's times are
            // only how it looked.
            let _ = std::fs::File::open(parent).and_then(|f| f.set_times(times));
        }
        Ok(())
    }
}

/// An agent's state directory, made (mode 0700) when it is missing but
/// its parent is there: the agent's first run keeps its state too.
fn state_dir(dir: &Path, from: &str, made: &mut Vec<Made>) -> Result<PathBuf, FilesError> {
    if dir.symlink_metadata().is_err() && dir.parent().is_some_and(Path::is_dir) {
        match make_dir(dir, made) {
            Ok(()) => crate::say!(
                "cordon: made {} for the agent's state ({from}); removed at exit if it stays empty",
                crate::escape::printable(dir)
            ),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(fail("cannot make the state directory", dir)(e)),
        }
    }
    if dir.symlink_metadata().is_err() {
        return Err(FilesError::MissingWritable {
            path: dir.to_path_buf(),
            from: from.to_string(),
        });
    }
    let path = canonical(dir, "state directory")?;
    if !path.is_dir() {
        return Err(FilesError::WritableNotDirectory {
            path,
            from: from.to_string(),
        });
    }
    Ok(path)
}

fn canonical(path: &Path, what: &'static str) -> Result<PathBuf, FilesError> {
    std::fs::canonicalize(path).map_err(|source| FilesError::Path {
        what,
        path: path.to_path_buf(),
        source,
    })
}

/// A startup place ([`runs_later`], in `homes`: the policy's, canonical)
/// that the writable area `root` holds, is, or lies inside of a place
/// whose every subdirectory runs what is left there.
pub(crate) fn startup_place_in(root: &Path, homes: &[PathBuf]) -> Option<(PathBuf, PathBuf)> {
    homes
        .iter()
        .find_map(|home| runs_later(root, home))
        .map(|place| (root.to_path_buf(), place))
}

/// The protected name patterns, compiled.
fn protected_patterns() -> Result<globset::GlobSet, FilesError> {
    let mut set = globset::GlobSetBuilder::new();
    for pattern in PROTECTED_NAME_PATTERNS {
        set.add(globset::Glob::new(pattern).map_err(FilesError::Pattern)?);
    }
    set.build().map_err(FilesError::Pattern)
}

/// What the config of `git_dir` (the repository's, the user's and the
/// system's, every file they include, and what the environment passes)
/// makes git read or run, the config files themselves first.
fn config_code_paths(
    git_dir: &Path,
    work_tree: Option<PathBuf>,
) -> Result<Vec<gitconfig::CodePath>, FilesError> {
    let repo = gitconfig::Repo {
        git_dir: git_dir.to_path_buf(),
        work_tree,
        home: std::env::var_os("HOME").map(PathBuf::from),
    };
    let (files, paths) = gitconfig::repo_code_paths(&repo)?;
    Ok(files
        .into_iter()
        .map(|f| read_by_git(f, false))
        .chain(paths)
        .collect())
}

/// The user's git configuration, which git reads in every repository
/// (`~/.gitconfig`, and `$XDG_CONFIG_HOME/git/`: config, attributes,
/// ignore), whether or not it exists yet: a sandbox that may write the
/// home must not create it.
fn user_git_files() -> Vec<gitconfig::CodePath> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    // Both the variable's and the default place: git on the host may run
    // with another environment than cordon's.
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    let default_xdg = home.as_ref().map(|h| h.join(".config"));
    let mut files: Vec<gitconfig::CodePath> = home
        .iter()
        .map(|h| read_by_git(h.join(".gitconfig"), false))
        .collect();
    for dir in xdg.into_iter().chain(default_xdg) {
        files.push(read_by_git(dir.join("git"), true));
    }
    files
}

/// A path git reads on its own account.
fn read_by_git(path: PathBuf, is_dir: bool) -> gitconfig::CodePath {
    gitconfig::CodePath {
        file: path.clone(),
        path,
        is_dir,
        key: "(a file git reads)".into(),
        line: 0,
    }
}

/// `dir`'s bytes with overlayfs's separators escaped (`,` between
/// options, `:` between lower layers, and `\\` itself), as its option
/// parser reads them back.
fn overlay_escaped(dir: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for &b in dir.as_os_str().as_bytes() {
        if matches!(b, b',' | b':' | b'\\') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

/// [`MountOps`] on the real kernel, for the sandbox's own mount namespace.
pub struct KernelMounts;

impl MountOps for KernelMounts {
    fn make_private(&mut self, path: &Path) -> io::Result<()> {
        use nix::mount::{mount, MsFlags};
        mount(
            None::<&str>,
            path,
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )?;
        Ok(())
    }

    fn mount_tmpfs(&mut self, target: &Path, options: &str) -> io::Result<()> {
        use nix::mount::{mount, MsFlags};
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        mount(Some("tmpfs"), target, Some("tmpfs"), flags, Some(options))?;
        Ok(())
    }

    fn mount_proc(&mut self, target: &Path) -> io::Result<()> {
        use nix::mount::{mount, MsFlags};
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
        mount(Some("proc"), target, Some("proc"), flags, None::<&str>)?;
        Ok(())
    }

    fn mount_sysfs(&mut self, target: &Path) -> io::Result<()> {
        use nix::mount::{mount, MsFlags};
        // At least as restrictive as any sysfs mount the namespace holds,
        // which the kernel requires of a new one in a user namespace.
        let flags =
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
        mount(Some("sysfs"), target, Some("sysfs"), flags, None::<&str>)?;
        Ok(())
    }

    fn mount_devpts(&mut self, target: &Path) -> io::Result<()> {
        use nix::mount::{mount, MsFlags};
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC;
        let options = "newinstance,ptmxmode=0666,mode=0620";
        mount(Some("devpts"), target, Some("devpts"), flags, Some(options))?;
        Ok(())
    }

    fn bind(&mut self, source: &Path, target: &Path) -> io::Result<()> {
        use nix::mount::{mount, MsFlags};
        let flags = MsFlags::MS_BIND | MsFlags::MS_REC;
        mount(Some(source), target, None::<&str>, flags, None::<&str>)?;
        Ok(())
    }

    fn mount_overlay(
        &mut self,
        target: &Path,
        lower: &Path,
        upper: &Path,
        work: &Path,
    ) -> io::Result<()> {
        use nix::mount::{mount, MsFlags};
        use std::os::unix::ffi::OsStrExt;
        let mut options = Vec::new();
        for (name, dir) in [("lowerdir", lower), ("upperdir", upper), ("workdir", work)] {
            options.extend_from_slice(name.as_bytes());
            options.push(b'=');
            options.extend(overlay_escaped(dir));
            options.push(b',');
        }
        options.extend_from_slice(b"userxattr");
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        let options = std::ffi::OsStr::from_bytes(&options);
        mount(
            Some("overlay"),
            target,
            Some("overlay"),
            flags,
            Some(options),
        )?;
        Ok(())
    }

    fn set_attrs(&mut self, target: &Path, attrs: u64, recursive: bool) -> io::Result<()> {
        crate::sys::mount_setattr(target, attrs, recursive)
    }

    fn pivot_root(&mut self, new_root: &Path, put_old: &Path) -> io::Result<()> {
        nix::unistd::pivot_root(new_root, put_old)?;
        nix::unistd::chdir("/")?;
        Ok(())
    }

    fn enter_root(&mut self, new_root: &Path) -> io::Result<()> {
        // pivot_root(".", ".") stacks the old root on the new one; detaching
        // it leaves only the new view, and needs no directory to put it in.
        nix::unistd::chdir(new_root)?;
        nix::unistd::pivot_root(".", ".")?;
        nix::mount::umount2(".", nix::mount::MntFlags::MNT_DETACH)?;
        nix::unistd::chdir("/")?;
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        path.symlink_metadata().is_ok()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn mkdir_all(&mut self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn create_file(&mut self, path: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .mode(mode)
            .open(path)?;
        // The umask may have kept bits the caller asked to drop.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }

    fn symlink(&mut self, target: &Path, link: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
