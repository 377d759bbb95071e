//! Resource limits: a cgroup where cordon may create one, rlimits otherwise.
//!
//! `RLIMIT_NPROC` is counted per user namespace, so inside the sandbox it
//! caps the sandbox's own tasks; but the kernel never applies it to the
//! host's root, so a root caller needs a cgroup.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use nix::sys::resource::{setrlimit, Resource};
use nix::unistd::Pid;

use crate::policy::Limits;

/// Why the limits could not be put in place.
#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    #[error("{what} {path}: {source}")]
    Cgroup {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error(
        "no cgroup cordon may create, and the caller is root, whom RLIMIT_NPROC does not bind"
    )]
    RootWithoutCgroup,
    #[error("setrlimit {0:?}: {1}")]
    Rlimit(Resource, nix::Error),
    #[error("how much init maps (/proc/self/statm): {0}")]
    Mapped(io::Error),
}

/// Which mechanism enforces the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mechanism {
    /// A cgroup of cordon's own, removed after the run.
    Cgroup(CgroupKind),
    /// Per-process rlimits set inside the sandbox.
    Rlimits,
}

/// The cgroup hierarchy in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupKind {
    V2,
    V1,
}

/// The limits for one sandbox, prepared on the host.
#[derive(Debug)]
pub struct LimitPlan {
    pub mechanism: Mechanism,
    /// Directories of the sandbox's cgroup (one for v2, one per controller for v1).
    dirs: Vec<PathBuf>,
    max_procs: u64,
    max_memory: Option<u64>,
    /// v1: each cgroup's `tasks` file, opened on the host before the
    /// clone, through which init moves itself in ([`LimitPlan::join_self`]).
    tasks: Vec<File>,
}

/// Where cgroup hierarchies are mounted, read from `/proc/self/mountinfo`.
#[derive(Debug, Default)]
pub struct CgroupMounts {
    pub v2: Option<PathBuf>,
    pub v1_pids: Option<PathBuf>,
    pub v1_memory: Option<PathBuf>,
}

impl CgroupMounts {
    pub fn read() -> CgroupMounts {
        let mut found = CgroupMounts::default();
        let Ok(info) = read_kernel_file(Path::new("/proc/self/mountinfo")) else {
            return found;
        };
        for line in info.lines() {
            // mount-id parent major:minor root mountpoint options - fstype source superoptions
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let mountpoint = left.split(' ').nth(4).map(PathBuf::from);
            let mut right = right.split(' ');
            let fstype = right.next().unwrap_or("");
            let superopts = right.nth(1).unwrap_or("");
            match fstype {
                "cgroup2" => found.v2 = found.v2.or(mountpoint),
                "cgroup" if superopts.split(',').any(|o| o == "pids") => found.v1_pids = mountpoint,
                "cgroup" if superopts.split(',').any(|o| o == "memory") => {
                    found.v1_memory = mountpoint
                }
                _ => {}
            }
        }
        found
    }
}

/// This process's cgroup path in the hierarchy whose line of `cgroups`
/// (the text of `/proc/self/cgroup`) matches `controller` ("" for v2).
fn own_cgroup(cgroups: &str, controller: &str) -> Option<PathBuf> {
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = if controller.is_empty() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        hit.then(|| PathBuf::from(path.trim_start_matches('/')))
    })
}

/// Names of cordon's cgroups: `cordon-<supervisor pid>-<sandbox id>`.
const CGROUP_PREFIX: &str = "cordon-";

/// Creates the cgroup `name` under `parent`, first removing cordon cgroups
/// there whose supervisor is gone (killed before its clean-up ran). The
/// kernel refuses to remove one that still holds a task, so a live sandbox
/// is never touched.
fn create_cgroup(parent: &Path, name: &str) -> Option<PathBuf> {
    remove_stale(parent);
    let dir = parent.join(name);
    std::fs::create_dir(&dir).ok()?;
    Some(dir)
}

fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(CGROUP_PREFIX)) else {
            continue;
        };
        let supervisor = rest.split('-').next().and_then(|p| p.parse::<i32>().ok());
        let alive = supervisor.is_some_and(|pid| {
            !matches!(
                nix::sys::signal::kill(Pid::from_raw(pid), None),
                Err(nix::errno::Errno::ESRCH)
            )
        });
        if !alive {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// A file of `/proc` or the cgroup file system, read whole. These report
/// no size, so `std::fs::read_to_string` would read them in growing
/// pieces from 32 bytes up, and the kernel makes the text again for each
/// read (`mountinfo`: eight reads of the mount table): one buffer large
/// enough for the usual text takes two.
fn read_kernel_file(path: &Path) -> io::Result<String> {
    /// Holds the mount table of a host with a few dozen mounts.
    const USUAL_SIZE: usize = 16 * 1024;
    let mut text = String::with_capacity(USUAL_SIZE);
    File::open(path)?.read_to_string(&mut text)?;
    Ok(text)
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value)
}

impl LimitPlan {
    /// Creates the sandbox's cgroup if possible, or plans rlimits.
    pub fn prepare(limits: &Limits, sandbox_id: &str) -> Result<LimitPlan, LimitsError> {
        let mut plan = LimitPlan {
            mechanism: Mechanism::Rlimits,
            dirs: Vec::new(),
            max_procs: limits.max_procs.value,
            max_memory: limits.max_memory.as_ref().map(|m| m.value),
            tasks: Vec::new(),
        };
        let mounts = CgroupMounts::read();
        // Read once for every hierarchy tried (the kernel takes a while
        // over each read); unreadable, no hierarchy has a place for us.
        let cgroups = read_kernel_file(Path::new("/proc/self/cgroup")).unwrap_or_default();
        // The supervisor's pid in the name lets a later run remove the
        // cgroup of one that was killed before it could clean up.
        let name = format!("{CGROUP_PREFIX}{}-{sandbox_id}", std::process::id());
        if let Some(dir) = Self::try_v2(&mounts, &cgroups, &name) {
            plan.dirs.push(dir);
            plan.mechanism = Mechanism::Cgroup(CgroupKind::V2);
        } else if let Some(dirs) = Self::try_v1(&mounts, &cgroups, &name, plan.max_memory.is_some())
        {
            plan.dirs = dirs;
            plan.mechanism = Mechanism::Cgroup(CgroupKind::V1);
        } else if nix::unistd::geteuid().is_root() {
            return Err(LimitsError::RootWithoutCgroup);
        }
        if let Err(e) = plan.write_limits().and_then(|()| plan.open_tasks()) {
            plan.remove();
            return Err(e);
        }
        Ok(plan)
    }

    /// v1: opens each cgroup's `tasks` file for init's own join (see
    /// [`LimitPlan::join_self`]).
    fn open_tasks(&mut self) -> Result<(), LimitsError> {
        if self.mechanism != Mechanism::Cgroup(CgroupKind::V1) {
            return Ok(());
        }
        for dir in &self.dirs {
            let path = dir.join("tasks");
            let file =
                File::options()
                    .write(true)
                    .open(&path)
                    .map_err(|source| LimitsError::Cgroup {
                        what: "cannot open",
                        path,
                        source,
                    })?;
            self.tasks.push(file);
        }
        Ok(())
    }

    /// Limits by rlimits alone, when the user allowed running without a cgroup.
    pub fn rlimits_only(limits: &Limits) -> LimitPlan {
        LimitPlan {
            mechanism: Mechanism::Rlimits,
            dirs: Vec::new(),
            max_procs: limits.max_procs.value,
            max_memory: limits.max_memory.as_ref().map(|m| m.value),
            tasks: Vec::new(),
        }
    }

    /// A v2 cgroup below this process's own, with the pids (and memory)
    /// controllers available.
    fn try_v2(mounts: &CgroupMounts, cgroups: &str, name: &str) -> Option<PathBuf> {
        let parent = mounts.v2.as_ref()?.join(own_cgroup(cgroups, "")?);
        let controllers = read_kernel_file(&parent.join("cgroup.subtree_control")).ok()?;
        if !controllers.split_whitespace().any(|c| c == "pids") {
            // Enabling a controller is only allowed where no process lives
            // (or at the root); try, and give up quietly if refused.
            write(&parent.join("cgroup.subtree_control"), "+pids +memory").ok()?;
        }
        let dir = create_cgroup(&parent, name)?;
        let ok = read_kernel_file(&dir.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"));
        if ok {
            Some(dir)
        } else {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }

    /// v1: a pids cgroup, and a memory cgroup beside it when memory is
    /// limited (without a limit one would only cost its making, joining
    /// and, after the run, the kernel's work to retire it).
    fn try_v1(
        mounts: &CgroupMounts,
        cgroups: &str,
        name: &str,
        memory: bool,
    ) -> Option<Vec<PathBuf>> {
        let pids_parent = mounts.v1_pids.as_ref()?.join(own_cgroup(cgroups, "pids")?);
        let mut dirs = vec![create_cgroup(&pids_parent, name)?];
        if let (true, Some(mem), Some(own)) = (
            memory,
            mounts.v1_memory.as_ref(),
            own_cgroup(cgroups, "memory"),
        ) {
            dirs.extend(create_cgroup(&mem.join(own), name));
        }
        Some(dirs)
    }

    fn write_limits(&self) -> Result<(), LimitsError> {
        let fail = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| LimitsError::Cgroup { what, path, source }
        };
        match self.mechanism {
            Mechanism::Rlimits => Ok(()),
            Mechanism::Cgroup(CgroupKind::V2) => {
                let dir = &self.dirs[0];
                let pids = dir.join("pids.max");
                write(&pids, &self.max_procs.to_string()).map_err(fail("cannot write", &pids))?;
                if let Some(mem) = self.max_memory {
                    let path = dir.join("memory.max");
                    write(&path, &mem.to_string()).map_err(fail("cannot write", &path))?;
                    let swap = dir.join("memory.swap.max");
                    let _ = write(&swap, "0");
                }
                Ok(())
            }
            Mechanism::Cgroup(CgroupKind::V1) => {
                for dir in &self.dirs {
                    let pids = dir.join("pids.max");
                    if pids.exists() {
                        write(&pids, &self.max_procs.to_string())
                            .map_err(fail("cannot write", &pids))?;
                    }
                    let mem = dir.join("memory.limit_in_bytes");
                    if let (Some(limit), true) = (self.max_memory, mem.exists()) {
                        write(&mem, &limit.to_string()).map_err(fail("cannot write", &mem))?;
                    }
                }
                if self.max_memory.is_some() && self.dirs.len() < 2 {
                    return Err(LimitsError::Cgroup {
                        what: "no memory controller for",
                        path: self.dirs[0].clone(),
                        source: io::Error::from(io::ErrorKind::Unsupported),
                    });
                }
                Ok(())
            }
        }
    }

    /// Moves `pid` (the sandbox's init, before it starts the command) into
    /// a v2 cgroup; in v1 init has moved itself ([`LimitPlan::join_self`]).
    pub fn attach(&self, pid: Pid) -> Result<(), LimitsError> {
        if !self.tasks.is_empty() {
            return Ok(());
        }
        for dir in &self.dirs {
            let procs = dir.join("cgroup.procs");
            write(&procs, &pid.to_string()).map_err(|source| LimitsError::Cgroup {
                what: "cannot join",
                path: procs.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// In init, first of all: moves init into the v1 cgroups by writing
    /// `0` (the writer itself) to their `tasks` files. Moving one thread
    /// that is the caller skips the kernel's global threadgroup lock,
    /// whose RCU grace period made the supervisor's write of init's pid to
    /// `cgroup.procs` take milliseconds (tens on a loaded host). Init has
    /// one thread here, so the whole process moves, and every thread and
    /// child it makes is born inside.
    pub fn join_self(&self) -> Result<(), LimitsError> {
        for (mut file, dir) in self.tasks.iter().zip(&self.dirs) {
            file.write_all(b"0").map_err(|source| LimitsError::Cgroup {
                what: "cannot join",
                path: dir.join("tasks"),
                source,
            })?;
        }
        Ok(())
    }

    /// Sets init's limits (before the command starts), when rlimits are
    /// the mechanism: the task limit, and an address-space limit of what
    /// init maps now (a copy of the supervisor's mappings) plus the
    /// command's ([`LimitPlan::address_space`]), so that what the command
    /// makes init hold for it (the UNIX socket gate's copies of its sends)
    /// is bounded by the same figure.
    ///
    /// And, whatever the mechanism, no core file for anything inside
    /// (`RLIMIT_CORE` 0, hard): the kernel writes one itself, past the
    /// file creation gate, under a name `core_pattern` and the process
    /// choose, in a writable directory (a state directory included).
    pub fn apply_rlimits(&self) -> Result<(), LimitsError> {
        setrlimit(Resource::RLIMIT_CORE, 0, 0)
            .map_err(|e| LimitsError::Rlimit(Resource::RLIMIT_CORE, e))?;
        if self.mechanism != Mechanism::Rlimits {
            return Ok(());
        }
        setrlimit(Resource::RLIMIT_NPROC, self.max_procs, self.max_procs)
            .map_err(|e| LimitsError::Rlimit(Resource::RLIMIT_NPROC, e))?;
        if let Some(mem) = self.address_space() {
            let own = mapped_bytes().map_err(LimitsError::Mapped)?;
            let limit = own.saturating_add(mem);
            setrlimit(Resource::RLIMIT_AS, limit, limit)
                .map_err(|e| LimitsError::Rlimit(Resource::RLIMIT_AS, e))?;
        }
        Ok(())
    }

    /// The address-space limit the command gets, when rlimits are the
    /// mechanism and memory is limited.
    pub fn address_space(&self) -> Option<u64> {
        self.max_memory
            .filter(|_| self.mechanism == Mechanism::Rlimits)
    }

    /// In the command's process, before its exec: [`LimitPlan::address_space`].
    /// Init is held to it beyond what it maps already ([`LimitPlan::apply_rlimits`]):
    /// init is a copy of the supervisor, whose mappings (a thread's malloc
    /// arena alone reserves 64 MiB) would count against the command's
    /// limit and leave init unable to grow its stack; the command's exec
    /// starts its count afresh.
    pub fn limit_address_space(&self) -> Result<(), LimitsError> {
        match self.address_space() {
            Some(mem) => setrlimit(Resource::RLIMIT_AS, mem, mem)
                .map_err(|e| LimitsError::Rlimit(Resource::RLIMIT_AS, e)),
            None => Ok(()),
        }
    }

    /// Removes the cgroup (after every task in it has exited).
    pub fn remove(&self) {
        for dir in &self.dirs {
            // The kernel refuses while a task is still being torn down; retry briefly.
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    /// One line for messages: how the limits are enforced.
    pub fn describe(&self) -> String {
        match &self.mechanism {
            Mechanism::Cgroup(CgroupKind::V2) => format!("cgroup v2 {}", self.dirs[0].display()),
            Mechanism::Cgroup(CgroupKind::V1) => format!("cgroup v1 {}", self.dirs[0].display()),
            Mechanism::Rlimits => "rlimits (RLIMIT_NPROC per user namespace, RLIMIT_AS)".into(),
        }
    }
}

/// The calling process's address space in bytes (`/proc/self/statm`'s
/// first field, in pages).
fn mapped_bytes() -> io::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .next()
        .and_then(|size| size.parse().ok())
        .ok_or_else(|| io::Error::other(format!("unreadable: {statm:?}")))?;
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|size| u64::try_from(size).ok())
        .ok_or_else(|| io::Error::other("no page size"))?;
    Ok(pages.saturating_mul(page))
}
