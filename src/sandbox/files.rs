//! The files door: the mount view the sandbox sees.
//!
//! [`FileView::plan`] runs on the host and turns the policy into concrete,
//! symlink-free paths (expanding globs, finding every git repository under
//! the project, creating placeholders for protected paths that do not exist
//! yet). [`FileView::apply`] runs inside the new mount namespace and builds
//! the view through the [`MountOps`] seam, so unit tests can check the order
//! of mounts without root.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use crate::policy::defaults::{GIT_DIR_PROTECTED, WORKTREE_PROTECTED};
use crate::policy::{PathPattern, Policy};

/// Why the file view could not be planned or built.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("{what} {path}: {source}")]
    Path {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("writable path {path} (from {from}) does not exist")]
    MissingWritable { path: PathBuf, from: String },
    #[error("{0} is a symlink on the way to a protected path (hooks, config, dotfiles that run code): the sandbox could replace it, and cordon cannot mount over a symlink. Replace the link with what it points to, or choose a --project without it")]
    ProtectedSymlink(PathBuf),
    #[error("refusing to make {0} writable")]
    WritableRoot(PathBuf),
    #[error("the project tree has more than {0} entries; cordon scans it for git repositories to protect their hooks and config. Narrow the project with --project")]
    TreeTooLarge(usize),
    #[error("mount step `{step}` on {path} failed: {source}")]
    Mount {
        step: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

/// What an unreadable path is, which decides how it is hidden.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Dir,
    File,
}

/// A protected path that did not exist and that cordon created on the
/// host so it can be mounted read-only; removed again after the run.
///
/// Every protected name, directory or file, gets an empty *file*: a name
/// that exists as a file can be created neither as a file nor as a
/// directory. Empty placeholders on one filesystem are hard links to one
/// inode, so a run creates and frees one inode, not one per name.
#[derive(Debug)]
pub struct Placeholder {
    pub path: PathBuf,
    /// `Dir` only for a missing parent directory of a protected name.
    pub kind: Kind,
    /// The inode, which its [`InodeLock`] guards.
    inode: (u64, u64),
}

/// A shared lock on a placeholder inode, held by every run that mounts a
/// name of it. A run removes the names only if it can take the lock
/// exclusively: unlinking one that another sandbox has mounted read-only
/// would detach that mount and let its command create the path.
pub struct InodeLock {
    inode: (u64, u64),
    lock: nix::fcntl::Flock<std::fs::File>,
}

impl std::fmt::Debug for InodeLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InodeLock({:?})", self.inode)
    }
}

fn inode_of(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// The resolved file view: every path absolute, canonical and existing.
#[derive(Debug, Default)]
pub struct FileView {
    /// Size of the private `/tmp`, in bytes.
    pub tmp_size: u64,
    /// Host paths bound writable: the project first, then `allow_write`.
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
    /// Protected paths created empty for this run.
    pub placeholders: Vec<Placeholder>,
    /// One lock per placeholder inode.
    placeholder_locks: Vec<InodeLock>,
    /// Per filesystem (device), the empty placeholder new names link to.
    shared_empty: Vec<(u64, PathBuf)>,
    /// The `.git` entries (directories or files) under the project when
    /// the run started; any other found afterwards was made by the sandbox.
    pub git_entries_at_start: Vec<PathBuf>,
    /// The credentials door's CA bundle: (host file, path inside), bound
    /// read-only over the distribution's bundle when TLS inspection is on.
    pub trust_bundle: Option<(PathBuf, PathBuf)>,
}

/// Where the new root is assembled, inside the staging tmpfs.
pub const NEW_ROOT: &str = "/newroot";
/// Where the host's root stays reachable while the view is built.
pub const OLD_ROOT: &str = "/oldroot";
/// The staging tmpfs is mounted here (in the sandbox's own mount namespace).
const STAGE: &str = "/tmp";
/// An empty file with mode 000, bound over unreadable files.
const EMPTY_FILE: &str = "/empty";

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

/// The name a repository the sandbox created is moved to.
const QUARANTINE: &str = ".git.cordon-quarantine";

/// Where host daemons keep their UNIX sockets; hidden from the sandbox.
const SOCKET_DIRS: &[&str] = &["/run", "/var/run"];

/// Most directory entries the project scan visits before giving up.
const SCAN_LIMIT: usize = 2_000_000;

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

/// One entry of the ordered mount list built from the policy paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Writable,
    Pin,
    HideDir,
    HideFile,
    Reallow,
    ReadOnly,
}

impl FileView {
    /// Resolves the policy's file rules against the host as it is now.
    pub fn plan(policy: &Policy) -> Result<FileView, FilesError> {
        let mut view = FileView {
            tmp_size: policy.limits.max_tmp.value,
            ..FileView::default()
        };
        let project = canonical(&policy.project.value, "project")?;
        view.writable.push(project.clone());
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
                if !view.writable.contains(&path) {
                    view.writable.push(path);
                }
            }
        }
        if let Some(root) = view.writable.iter().find(|p| p.parent().is_none()) {
            return Err(FilesError::WritableRoot(root.clone()));
        }

        let allow_read: Vec<&PathPattern> =
            policy.files.allow_read.iter().map(|r| &r.value).collect();
        let mut hidden: Vec<(PathBuf, Kind)> = Vec::new();
        for rule in &policy.files.deny_read {
            for path in rule.value.expand() {
                let Ok(path) = std::fs::canonicalize(&path) else {
                    continue; // a dangling symlink reaches nothing
                };
                if allow_read.iter().any(|a| a.covers(&path)) || !view.relevant(&path) {
                    continue;
                }
                let kind = if path.is_dir() { Kind::Dir } else { Kind::File };
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
        let outer: Vec<PathBuf> = hidden
            .iter()
            .filter(|h| h.1 == Kind::Dir)
            .map(|h| h.0.clone())
            .collect();
        hidden.retain(|(p, _)| !outer.iter().any(|o| p != o && p.starts_with(o)));
        view.hidden = hidden;

        // Allowed host sockets stay visible where the runtime dirs are hidden.
        let shown = policy
            .files
            .allow_read
            .iter()
            .chain(&policy.network.unix_sockets);
        for rule in shown {
            for path in rule.value.expand() {
                if let Ok(path) = std::fs::canonicalize(&path) {
                    if view
                        .hidden
                        .iter()
                        .any(|(h, _)| path != *h && path.starts_with(h))
                    {
                        view.reallowed.push(path);
                    }
                }
            }
        }

        let mut read_only = BTreeSet::new();
        for rule in &policy.files.deny_write {
            for path in rule.value.expand() {
                if let Ok(path) = std::fs::canonicalize(&path) {
                    read_only.insert(path);
                }
            }
        }
        let names: Vec<&str> = policy
            .files
            .protected
            .iter()
            .map(|n| n.value.as_str())
            .collect();
        let scan = find_git_repos(&project)?;
        view.git_entries_at_start = git_entries(&project, &scan);
        let mut roots: Vec<PathBuf> = view.writable.clone();
        roots.extend(scan.roots);
        let mut pins = BTreeSet::new();
        for root in &roots {
            for name in &names {
                view.protect(root, name, &mut read_only, &mut pins)?;
            }
            let git_dir = root.join(".git");
            if git_dir.is_dir() && !git_dir.is_symlink() {
                for name in GIT_DIR_PROTECTED {
                    view.protect(&git_dir, name, &mut read_only, &mut pins)?;
                }
                for worktree in subdirs(&git_dir.join("worktrees")) {
                    for name in WORKTREE_PROTECTED {
                        view.protect(&worktree, name, &mut read_only, &mut pins)?;
                    }
                }
            }
        }
        for git_dir in &scan.module_dirs {
            for name in GIT_DIR_PROTECTED {
                view.protect(git_dir, name, &mut read_only, &mut pins)?;
            }
        }
        read_only.extend(scan.git_files);
        view.mark_placeholder_dirs()?;
        read_only.retain(|p| view.relevant(p) && view.is_writable(p) && !view.is_hidden(p));
        pins.retain(|p: &PathBuf| !view.writable.contains(p) && !read_only.contains(p));
        view.read_only = read_only.into_iter().collect();
        view.pinned = pins.into_iter().collect();
        Ok(view)
    }

    /// Whether a policy path can be seen in the sandbox at all.
    fn relevant(&self, path: &Path) -> bool {
        !REPLACED.iter().any(|r| path.starts_with(r)) || self.is_writable(path)
    }

    fn is_writable(&self, path: &Path) -> bool {
        self.writable.iter().any(|w| path.starts_with(w))
    }

    fn is_hidden(&self, path: &Path) -> bool {
        self.hidden.iter().any(|(h, _)| path.starts_with(h))
    }

    /// Protects `root/name`: read-only if it exists, created empty first if
    /// it does not and could otherwise be created inside a writable area.
    fn protect(
        &mut self,
        root: &Path,
        name: &str,
        read_only: &mut BTreeSet<PathBuf>,
        pins: &mut BTreeSet<PathBuf>,
    ) -> Result<(), FilesError> {
        // A directory name (trailing `/`) is kept from being created by a
        // placeholder file as well as a file name is.
        let rel = name.trim_end_matches('/');
        let path = root.join(rel);
        if !self.is_writable(&path) {
            return Ok(());
        }
        // A name reached through a symlink could point anywhere (an
        // untrusted project's `protect` list must not make cordon create
        // files outside it), and a symlink itself cannot be mounted over,
        // so the sandbox could replace it: refuse both.
        let existing_parent = path
            .ancestors()
            .skip(1)
            .find(|a| a.symlink_metadata().is_ok());
        if let Some(parent) = existing_parent {
            if std::fs::canonicalize(parent).ok().as_deref() != Some(parent) {
                return Err(FilesError::ProtectedSymlink(parent.to_path_buf()));
            }
        }
        match path.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(FilesError::ProtectedSymlink(path));
            }
            Ok(meta) => {
                if is_stale_placeholder(&path, &meta) {
                    // Left by a run that was killed: ours to remove again,
                    // with the directories it created for it.
                    let stale_dirs: Vec<PathBuf> = path
                        .ancestors()
                        .skip(1)
                        .take_while(|dir| *dir != root && is_marked_dir(dir))
                        .map(Path::to_path_buf)
                        .collect();
                    for dir in stale_dirs.into_iter().rev() {
                        let file =
                            std::fs::File::open(&dir).map_err(|source| FilesError::Path {
                                what: "cannot open placeholder",
                                path: dir.clone(),
                                source,
                            })?;
                        self.hold(dir, Kind::Dir, file)?;
                    }
                    let file = std::fs::File::open(&path).map_err(|source| FilesError::Path {
                        what: "cannot open placeholder",
                        path: path.clone(),
                        source,
                    })?;
                    self.hold(path.clone(), Kind::File, file)?;
                }
            }
            Err(_) => {
                // `.git/hooks` only matters where `.git` is a directory.
                let parent_ok = path
                    .parent()
                    .is_some_and(|p| p.is_dir() || !rel.starts_with(".git/"));
                if !parent_ok {
                    return Ok(());
                }
                self.create_placeholder(&path)?;
            }
        }
        let mut ancestor = path.parent();
        while let Some(dir) = ancestor {
            if self.writable.iter().any(|w| w == dir) || !self.is_writable(dir) {
                break;
            }
            pins.insert(dir.to_path_buf());
            ancestor = dir.parent();
        }
        read_only.insert(path);
        Ok(())
    }

    fn create_placeholder(&mut self, path: &Path) -> Result<(), FilesError> {
        let err = |source| FilesError::Path {
            what: "cannot create placeholder",
            path: path.to_path_buf(),
            source,
        };
        // Missing parents are placeholders too, so nothing of the chain can
        // be created by the sandbox.
        let mut missing = Vec::new();
        let mut cur = path.parent();
        while let Some(dir) = cur {
            if dir.symlink_metadata().is_ok() {
                break;
            }
            missing.push(dir.to_path_buf());
            cur = dir.parent();
        }
        for dir in missing.iter().rev() {
            let file = std::fs::create_dir(dir)
                .and_then(|()| std::fs::File::open(dir))
                .map_err(err)?;
            self.hold(dir.clone(), Kind::Dir, file)?;
        }
        let leaf = self.create_leaf(path).map_err(err)?;
        self.hold(path.to_path_buf(), Kind::File, leaf)?;
        Ok(())
    }

    /// Marks the directories created for placeholders, once every entry
    /// is in them (creating an entry changes a directory's time).
    fn mark_placeholder_dirs(&self) -> Result<(), FilesError> {
        for p in self.placeholders.iter().filter(|p| p.kind == Kind::Dir) {
            std::fs::File::open(&p.path)
                .and_then(|d| d.set_modified(placeholder_mtime()))
                .map_err(|source| FilesError::Path {
                    what: "cannot mark placeholder",
                    path: p.path.clone(),
                    source,
                })?;
        }
        Ok(())
    }

    /// The placeholder file itself: a new link to this filesystem's shared
    /// empty inode if there is one, else a new, marked file.
    fn create_leaf(&mut self, path: &Path) -> io::Result<std::fs::File> {
        let content = placeholder_content(path);
        let parent_dev = path
            .parent()
            .and_then(|p| p.metadata().ok())
            .map(|m| inode_of(&m).0);
        let shared = self
            .shared_empty
            .iter()
            .find(|(dev, _)| Some(*dev) == parent_dev && content.is_empty())
            .map(|(_, p)| p.clone());
        if let Some(source) = shared {
            if std::fs::hard_link(&source, path).is_ok() {
                return std::fs::File::open(path);
            }
        }
        // One descriptor serves to fill, mark and lock the placeholder.
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        file.write_all(content)?;
        file.set_modified(placeholder_mtime())?;
        if let (Some(dev), true) = (parent_dev, content.is_empty()) {
            self.shared_empty.push((dev, path.to_path_buf()));
        }
        Ok(file)
    }

    /// Records a placeholder, taking the shared lock on its inode through
    /// `file` unless this run holds it already.
    fn hold(&mut self, path: PathBuf, kind: Kind, file: std::fs::File) -> Result<(), FilesError> {
        let meta = file.metadata().map_err(|source| FilesError::Path {
            what: "cannot stat placeholder",
            path: path.clone(),
            source,
        })?;
        let inode = inode_of(&meta);
        if !self.placeholder_locks.iter().any(|l| l.inode == inode) {
            let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockShared).map_err(
                |(_, e)| FilesError::Path {
                    what: "cannot lock placeholder",
                    path: path.clone(),
                    source: e.into(),
                },
            )?;
            self.placeholder_locks.push(InodeLock { inode, lock });
        }
        self.placeholders.push(Placeholder { path, kind, inode });
        Ok(())
    }

    /// Removes the placeholders this run created, where they are still
    /// empty and no other sandbox has them mounted.
    pub fn remove_placeholders(&self) {
        let ours_alone: Vec<(u64, u64)> = self
            .placeholder_locks
            .iter()
            .filter(|l| {
                l.lock
                    .relock(nix::fcntl::FlockArg::LockExclusiveNonblock)
                    .is_ok()
            })
            .map(|l| l.inode)
            .collect();
        let removable = self
            .placeholders
            .iter()
            .rev()
            .filter(|p| ours_alone.contains(&p.inode));
        for p in removable {
            let _ = match p.kind {
                Kind::Dir => std::fs::remove_dir(&p.path),
                Kind::File => match p.path.symlink_metadata() {
                    Ok(m) if inode_of(&m) == p.inode && holds_placeholder_content(&p.path, &m) => {
                        std::fs::remove_file(&p.path)
                    }
                    _ => Ok(()),
                },
            };
        }
    }

    /// Moves aside every git repository the sandbox created in the project
    /// (its config and hooks would run code when the user runs git there)
    /// and returns where each went.
    pub fn quarantine_new_repos(&self) -> Vec<(PathBuf, PathBuf)> {
        let Some(project) = self.writable.first() else {
            return Vec::new();
        };
        let Ok(scan) = find_git_repos(project) else {
            return Vec::new();
        };
        let mut moved = Vec::new();
        for entry in git_entries(project, &scan) {
            if self.git_entries_at_start.contains(&entry) {
                continue;
            }
            let free = (0u32..)
                .map(|n| match n {
                    0 => entry.with_file_name(QUARANTINE),
                    n => entry.with_file_name(format!("{QUARANTINE}-{n}")),
                })
                .find(|p| p.symlink_metadata().is_err());
            let Some(aside) = free else { continue };
            if std::fs::rename(&entry, &aside).is_ok() {
                moved.push((entry, aside));
            }
        }
        moved
    }

    /// Builds the view inside a fresh mount namespace and makes it the root.
    pub fn apply(&self, ops: &mut dyn MountOps) -> Result<(), FilesError> {
        let fail = |step: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| FilesError::Mount { step, path, source }
        };
        let root = Path::new("/");
        ops.make_private(root).map_err(fail("make private", root))?;
        let stage = Path::new(STAGE);
        ops.mount_tmpfs(stage, "mode=0755,size=65536")
            .map_err(fail("staging tmpfs", stage))?;
        let old = Path::new(STAGE).join(OLD_ROOT.trim_start_matches('/'));
        ops.mkdir_all(&old).map_err(fail("mkdir", &old))?;
        ops.pivot_root(stage, &old)
            .map_err(fail("pivot_root", stage))?;
        let empty = Path::new(EMPTY_FILE);
        ops.create_file(empty, 0o000)
            .map_err(fail("create", empty))?;

        let new_root = Path::new(NEW_ROOT);
        ops.mkdir_all(new_root).map_err(fail("mkdir", new_root))?;
        ops.bind(Path::new(OLD_ROOT), new_root)
            .map_err(fail("bind host root", new_root))?;
        use super::sys::attr::{NODEV, NOEXEC, NOSUID, RDONLY};
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
        steps.sort();
        for (_, step, host) in steps {
            let target = under(NEW_ROOT, host);
            let source = under(OLD_ROOT, host);
            let is_dir = match step {
                Step::HideDir => true,
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
                Step::Pin => ops.bind(&target, &target).map_err(fail("pin", host))?,
                Step::HideDir => {
                    // Searchable but not listable when a re-allowed path
                    // lies beneath, so it can be reached by name.
                    let reached = self
                        .reallowed
                        .iter()
                        .any(|r| r != host && r.starts_with(host));
                    let mode = if reached { "0111" } else { "000" };
                    ops.mount_tmpfs(&target, &format!("mode={mode},size=4096,nr_inodes=64"))
                        .map_err(fail("hide directory", host))?
                }
                Step::HideFile => {
                    ops.bind(empty, &target).map_err(fail("hide file", host))?;
                    ops.set_attrs(&target, RDONLY | NOSUID | NODEV | NOEXEC, false)
                        .map_err(fail("hide file", host))?;
                }
                Step::Reallow => ops.bind(&source, &target).map_err(fail("re-allow", host))?,
                Step::ReadOnly => {
                    ops.bind(&target, &target)
                        .map_err(fail("read-only", host))?;
                    ops.set_attrs(&target, RDONLY, true)
                        .map_err(fail("read-only", host))?;
                }
            }
        }
        for (host, kind) in &self.hidden {
            if *kind == Kind::Dir {
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

    /// A minimal `/dev`: a few nodes bound from the host, a private devpts
    /// and shm; never the host's `/dev` itself.
    fn build_dev(&self, ops: &mut dyn MountOps, shm_opts: &str) -> Result<(), FilesError> {
        use super::sys::attr::{NOEXEC, NOSUID, RDONLY};
        let fail = |step: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| FilesError::Mount { step, path, source }
        };
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
        use super::sys::attr::{NODEV, NOEXEC, NOSUID, RDONLY};
        let fail = |step: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| FilesError::Mount { step, path, source }
        };
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

/// Hides `path`, if it exists, behind the empty mode-000 file.
fn mask_file(ops: &mut dyn MountOps, path: &Path, step: &'static str) -> Result<(), FilesError> {
    use super::sys::attr::{NODEV, NOEXEC, NOSUID, RDONLY};
    if !ops.exists(path) {
        return Ok(());
    }
    let fail = |source| FilesError::Mount {
        step,
        path: path.to_path_buf(),
        source,
    };
    ops.bind(Path::new(EMPTY_FILE), path).map_err(fail)?;
    ops.set_attrs(path, RDONLY | NOSUID | NODEV | NOEXEC, false)
        .map_err(fail)
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
    use super::sys::attr::{NODEV, NOEXEC, NOSUID, RDONLY};
    let host_sys = under(OLD_ROOT, Path::new("/sys"));
    let sys = under(NEW_ROOT, Path::new("/sys"));
    if !ops.exists(&sys) {
        return Ok(()); // a host without /sys shows none
    }
    let fail = |step: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| FilesError::Mount { step, path, source }
    };
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
            ops.mount_tmpfs(&path, "mode=000,size=4096,nr_inodes=64")
                .map_err(fail("mask /sys", &path))?;
            ops.set_attrs(&path, RDONLY | NOSUID | NODEV | NOEXEC, false)
                .map_err(fail("mask /sys", &path))?;
        }
    }
    for file in SYS_MASKED_FILES {
        mask_file(ops, &sys.join(file), "mask /sys")?;
    }
    Ok(())
}

/// The modification time that marks a placeholder (1970-01-01T00:00:01Z),
/// so one left behind by a killed run is recognised and removed later.
fn placeholder_mtime() -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(1)
}

fn is_stale_placeholder(path: &Path, meta: &std::fs::Metadata) -> bool {
    meta.modified().ok() == Some(placeholder_mtime()) && holds_placeholder_content(path, meta)
}

/// A directory cordon created for a placeholder (left by a killed run).
fn is_marked_dir(dir: &Path) -> bool {
    dir.symlink_metadata()
        .is_ok_and(|m| m.is_dir() && m.modified().ok() == Some(placeholder_mtime()))
}

/// Whether the file at `path` still holds only what cordon put there.
fn holds_placeholder_content(path: &Path, meta: &std::fs::Metadata) -> bool {
    meta.is_file() && meta.len() == placeholder_content(path).len() as u64
}

/// What a placeholder file holds: nothing, except `commondir`, which git
/// refuses to read empty; "." names the git dir itself, as if absent.
fn placeholder_content(path: &Path) -> &'static [u8] {
    if path.file_name().is_some_and(|n| n == "commondir") {
        b".\n"
    } else {
        b""
    }
}

fn canonical(path: &Path, what: &'static str) -> Result<PathBuf, FilesError> {
    std::fs::canonicalize(path).map_err(|source| FilesError::Path {
        what,
        path: path.to_path_buf(),
        source,
    })
}

/// What the project scan found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GitScan {
    /// Directories holding a `.git` (directory or file), below the project.
    pub roots: Vec<PathBuf>,
    /// Submodule git dirs under `.git/modules`, at any depth: each holds its
    /// own `hooks/` and `config`.
    pub module_dirs: Vec<PathBuf>,
    /// `.git` files (a `gitdir:` pointer): rewriting one redirects git to
    /// a directory of the sandbox's choosing.
    pub git_files: Vec<PathBuf>,
}

/// Scans `project` at any depth for git repositories, without following
/// symlinked directories.
pub fn find_git_repos(project: &Path) -> Result<GitScan, FilesError> {
    let mut scan = GitScan::default();
    let mut stack = vec![project.to_path_buf()];
    let mut visited = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > SCAN_LIMIT {
                return Err(FilesError::TreeTooLarge(SCAN_LIMIT));
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if entry.file_name() == ".git" {
                if dir != project {
                    scan.roots.push(dir.clone());
                }
                if file_type.is_dir() {
                    find_module_dirs(&entry.path().join("modules"), &mut scan.module_dirs);
                } else if file_type.is_file() {
                    scan.git_files.push(entry.path());
                }
                continue;
            }
            if file_type.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    scan.roots.sort();
    scan.module_dirs.sort();
    scan.git_files.sort();
    Ok(scan)
}

/// Every `.git` under `project`, the project's own included.
fn git_entries(project: &Path, scan: &GitScan) -> Vec<PathBuf> {
    let own = project.join(".git");
    let mut entries: Vec<PathBuf> = scan.roots.iter().map(|r| r.join(".git")).collect();
    if own.symlink_metadata().is_ok() {
        entries.push(own);
    }
    entries.sort();
    entries
}

/// The directories directly inside `dir`, if any.
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// Submodule git dirs are named by the submodule's path, so they nest
/// (`modules/a/b`) and hold their own `modules/`.
fn find_module_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        if path.join("HEAD").is_file() && path.join("config").is_file() {
            out.push(path.clone());
        }
        find_module_dirs(&path, out);
    }
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

    fn set_attrs(&mut self, target: &Path, attrs: u64, recursive: bool) -> io::Result<()> {
        super::sys::mount_setattr(target, attrs, recursive)
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
mod tests {
    use super::*;

    /// Records every operation; the paths in `missing` do not exist, and
    /// files are the paths named `secret.txt` or `config`.
    #[derive(Default)]
    struct Recorder {
        ops: Vec<String>,
        missing: Vec<PathBuf>,
    }

    impl MountOps for Recorder {
        fn make_private(&mut self, path: &Path) -> io::Result<()> {
            self.ops.push(format!("private {}", path.display()));
            Ok(())
        }
        fn mount_tmpfs(&mut self, target: &Path, options: &str) -> io::Result<()> {
            self.ops
                .push(format!("tmpfs {} {options}", target.display()));
            Ok(())
        }
        fn mount_proc(&mut self, target: &Path) -> io::Result<()> {
            self.ops.push(format!("proc {}", target.display()));
            Ok(())
        }
        fn mount_devpts(&mut self, target: &Path) -> io::Result<()> {
            self.ops.push(format!("devpts {}", target.display()));
            Ok(())
        }
        fn mount_sysfs(&mut self, target: &Path) -> io::Result<()> {
            self.ops.push(format!("sysfs {}", target.display()));
            Ok(())
        }
        fn bind(&mut self, source: &Path, target: &Path) -> io::Result<()> {
            self.ops
                .push(format!("bind {} {}", source.display(), target.display()));
            Ok(())
        }
        fn set_attrs(&mut self, target: &Path, attrs: u64, recursive: bool) -> io::Result<()> {
            self.ops
                .push(format!("attrs {} {attrs:#x} {recursive}", target.display()));
            Ok(())
        }
        fn pivot_root(&mut self, new_root: &Path, put_old: &Path) -> io::Result<()> {
            self.ops.push(format!(
                "pivot {} {}",
                new_root.display(),
                put_old.display()
            ));
            Ok(())
        }
        fn enter_root(&mut self, new_root: &Path) -> io::Result<()> {
            self.ops.push(format!("enter {}", new_root.display()));
            Ok(())
        }
        fn exists(&self, path: &Path) -> bool {
            !self.missing.iter().any(|m| path == m)
        }
        fn is_dir(&self, path: &Path) -> bool {
            !path.ends_with("secret.txt") && !path.ends_with("config")
        }
        fn mkdir_all(&mut self, path: &Path) -> io::Result<()> {
            self.ops.push(format!("mkdir {}", path.display()));
            Ok(())
        }
        fn create_file(&mut self, path: &Path, mode: u32) -> io::Result<()> {
            self.ops.push(format!("file {} {mode:o}", path.display()));
            Ok(())
        }
        fn symlink(&mut self, target: &Path, link: &Path) -> io::Result<()> {
            self.ops
                .push(format!("symlink {} {}", link.display(), target.display()));
            Ok(())
        }
    }

    fn index_of(ops: &[String], wanted: &str) -> usize {
        ops.iter()
            .position(|o| o == wanted)
            .unwrap_or_else(|| panic!("no `{wanted}` in:\n{}", ops.join("\n")))
    }

    fn sample_view() -> FileView {
        FileView {
            tmp_size: 1024,
            writable: vec!["/tmp/p".into(), "/home/u/cache".into()],
            hidden: vec![
                ("/home/u/.ssh".into(), Kind::Dir),
                ("/tmp/p/secret.txt".into(), Kind::File),
            ],
            reallowed: vec!["/home/u/.ssh/known_hosts".into()],
            read_only: vec!["/tmp/p/.git/config".into(), "/tmp/p/.git/hooks".into()],
            pinned: vec!["/tmp/p/.git".into()],
            ..FileView::default()
        }
    }

    #[test]
    fn a_hidden_directory_with_nothing_reallowed_is_not_even_searchable() {
        let view = FileView {
            hidden: vec![("/home/u/.aws".into(), Kind::Dir)],
            ..sample_view()
        };
        let mut rec = Recorder {
            missing: vec!["/newroot/tmp/p".into()],
            ..Recorder::default()
        };
        view.apply(&mut rec).unwrap();
        index_of(
            &rec.ops,
            "tmpfs /newroot/home/u/.aws mode=000,size=4096,nr_inodes=64",
        );
    }

    #[test]
    fn the_view_is_built_in_a_safe_order() {
        let view = sample_view();
        // The project lives under /tmp, which the sandbox replaces with its
        // own tmpfs: its mount point must be created there.
        let mut rec = Recorder {
            missing: vec!["/newroot/tmp/p".into()],
            ..Recorder::default()
        };
        view.apply(&mut rec).unwrap();
        let ops = &rec.ops;
        let ro_root = index_of(ops, "attrs /newroot 0x7 true");
        assert!(ro_root > index_of(ops, "bind /oldroot /newroot"));
        let private_tmp = index_of(ops, "tmpfs /newroot/tmp mode=1777,size=1024");
        let mkdir_project = index_of(ops, "mkdir /newroot/tmp/p");
        let bind_project = index_of(ops, "bind /oldroot/tmp/p /newroot/tmp/p");
        assert!(
            ro_root < private_tmp && private_tmp < mkdir_project && mkdir_project < bind_project
        );
        // A denied file inside the project is hidden on top of the project's bind.
        let hide_file = index_of(ops, "bind /empty /newroot/tmp/p/secret.txt");
        assert!(hide_file > bind_project);
        index_of(ops, "attrs /newroot/tmp/p/secret.txt 0xf false");
        // Protected paths: the pin comes first, then the read-only binds beneath it.
        let pin = index_of(ops, "bind /newroot/tmp/p/.git /newroot/tmp/p/.git");
        let config = index_of(
            ops,
            "bind /newroot/tmp/p/.git/config /newroot/tmp/p/.git/config",
        );
        assert!(bind_project < pin && pin < config);
        assert!(config < index_of(ops, "attrs /newroot/tmp/p/.git/config 0x1 true"));
        // A denied directory: an empty tmpfs, searchable but not listable
        // since a re-allowed file lies in it, the file bound into it, then
        // made read-only once nothing more goes in.
        let hide_dir = index_of(
            ops,
            "tmpfs /newroot/home/u/.ssh mode=0111,size=4096,nr_inodes=64",
        );
        let reallow = index_of(
            ops,
            "bind /oldroot/home/u/.ssh/known_hosts /newroot/home/u/.ssh/known_hosts",
        );
        let seal = index_of(ops, "attrs /newroot/home/u/.ssh 0xf false");
        assert!(hide_dir < reallow && reallow < seal);
        // Kernel interfaces are read-only, and the host's /dev never appears.
        index_of(ops, "attrs /newroot/proc/sys 0xf true");
        index_of(ops, "bind /oldroot/dev/null /newroot/dev/null");
        assert!(!ops.iter().any(|o| o == "bind /oldroot/dev /newroot/dev"));
        assert_eq!(ops.last().map(String::as_str), Some("enter /newroot"));
    }

    #[test]
    fn sys_is_a_fresh_sysfs_with_cgroups_kept_and_firmware_masked() {
        let mut rec = Recorder {
            missing: vec!["/newroot/tmp/p".into(), "/newroot/sys/hypervisor".into()],
            ..Recorder::default()
        };
        sample_view().apply(&mut rec).unwrap();
        let ops = &rec.ops;
        // Over the read-only host root, before any policy path is bound.
        let sysfs = index_of(ops, "sysfs /newroot/sys");
        assert!(sysfs > index_of(ops, "attrs /newroot 0x7 true"));
        assert!(sysfs < index_of(ops, "bind /oldroot/tmp/p /newroot/tmp/p"));
        // The host's sysfs itself is never bound on its own.
        assert!(!ops.iter().any(|o| o.starts_with("bind /oldroot/sys /")));
        // The cgroup hierarchies come back, read-only, recursively.
        let cgroup = index_of(ops, "bind /oldroot/sys/fs/cgroup /newroot/sys/fs/cgroup");
        let cgroup_ro = index_of(ops, "attrs /newroot/sys/fs/cgroup 0xf true");
        assert!(sysfs < cgroup && cgroup < cgroup_ro);
        // Firmware and DMI ids under an empty tmpfs, sealed; what the host
        // lacks is skipped.
        for dir in ["firmware", "devices/virtual/dmi"] {
            let mask = index_of(
                ops,
                &format!("tmpfs /newroot/sys/{dir} mode=000,size=4096,nr_inodes=64"),
            );
            let seal = index_of(ops, &format!("attrs /newroot/sys/{dir} 0xf false"));
            assert!(sysfs < mask && mask < seal);
        }
        assert!(!ops.iter().any(|o| o.contains("/sys/hypervisor")));
        let vmcoreinfo = index_of(ops, "bind /empty /newroot/sys/kernel/vmcoreinfo");
        assert!(sysfs < vmcoreinfo);
        // Root-only physical memory maps in /proc are masked too.
        for name in ["kpageflags", "kpagecount", "kpagecgroup"] {
            index_of(ops, &format!("bind /empty /newroot/proc/{name}"));
            index_of(ops, &format!("attrs /newroot/proc/{name} 0xf false"));
        }
    }

    #[test]
    fn git_scan_finds_nested_repos_modules_and_gitdir_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join(".git/modules/sub/modules/inner")).unwrap();
        for m in ["sub", "sub/modules/inner"] {
            std::fs::write(p.join(".git/modules").join(m).join("HEAD"), "ref").unwrap();
            std::fs::write(p.join(".git/modules").join(m).join("config"), "").unwrap();
        }
        std::fs::create_dir_all(p.join("a/b/c/d/e/f/.git")).unwrap();
        std::fs::create_dir_all(p.join("sub")).unwrap();
        std::fs::write(p.join("sub/.git"), "gitdir: ../.git/modules/sub").unwrap();
        let scan = find_git_repos(p).unwrap();
        assert_eq!(scan.roots, vec![p.join("a/b/c/d/e/f"), p.join("sub")]);
        assert_eq!(
            scan.module_dirs,
            vec![
                p.join(".git/modules/sub"),
                p.join(".git/modules/sub/modules/inner")
            ]
        );
        assert_eq!(scan.git_files, vec![p.join("sub/.git")]);
    }

    #[test]
    fn placeholders_share_an_inode_and_a_killed_runs_are_removed_later() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        let names = [".bashrc", ".mcp.json", ".vscode/", ".cargo/config.toml"];
        let plan = |view: &mut FileView| {
            view.writable = vec![project.clone()];
            let (mut ro, mut pins) = (BTreeSet::new(), BTreeSet::new());
            for name in names {
                view.protect(&project, name, &mut ro, &mut pins).unwrap();
            }
            view.mark_placeholder_dirs().unwrap();
        };
        let mut killed = FileView::default();
        plan(&mut killed);
        let ino = |n: &str| project.join(n).metadata().unwrap().ino();
        assert_eq!(ino(".bashrc"), ino(".mcp.json"));
        assert_eq!(ino(".bashrc"), ino(".vscode"));
        assert!(
            project.join(".vscode").is_file(),
            "a file keeps the directory from being made"
        );
        assert!(is_marked_dir(&project.join(".cargo")));
        // The run dies without cleaning up; the next one adopts and removes.
        drop(killed);
        let mut next = FileView::default();
        plan(&mut next);
        next.remove_placeholders();
        let left: Vec<_> = std::fs::read_dir(&project)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    #[test]
    fn stale_placeholders_are_recognised_and_user_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("mine");
        let theirs = dir.path().join("theirs");
        std::fs::write(&mine, "").unwrap();
        std::fs::File::open(&mine)
            .unwrap()
            .set_modified(placeholder_mtime())
            .unwrap();
        std::fs::write(&theirs, "").unwrap();
        assert!(is_stale_placeholder(&mine, &mine.metadata().unwrap()));
        assert!(!is_stale_placeholder(&theirs, &theirs.metadata().unwrap()));
        std::fs::write(&mine, "user wrote here").unwrap();
        std::fs::File::open(&mine)
            .unwrap()
            .set_modified(placeholder_mtime())
            .unwrap();
        assert!(!is_stale_placeholder(&mine, &mine.metadata().unwrap()));
    }
}
