//! Shared harness for the integration tests: fixtures (fake home with
//! canaries, project dir, a copy of the cordon binary the test uid can
//! exec) and a builder that runs real sandboxes with a hard timeout.
//!
//! Every case runs as root (Mode::Root) and as an unprivileged uid
//! (Mode::User, uid/gid 65534 through `setpriv`) when the suite runs as
//! root; as a non-root user only Mode::User runs (as that user).
#![allow(dead_code)]

pub mod framing;
pub mod standins;
pub mod tls;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The python interpreter used for attack snippets, outside any pyenv shim
/// (shims live under /root, which the test uid cannot read).
pub const PY: &str = "/usr/bin/python3";
/// A plain PATH for the sandboxed commands.
pub const PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
/// The binary under test. `CORDON_IT_BIN` substitutes another one: used
/// to check that the suite fails against a fake cordon that runs the command
/// without any sandbox (every test should then fail).
pub fn cordon_bin() -> PathBuf {
    std::env::var_os("CORDON_IT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_cordon")))
}

/// git options for commits the tests make: a fixed identity and branch.
pub const GIT_IDENTITY: &[&str] = &[
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@e",
    "-c",
    "init.defaultBranch=main",
];

/// The unprivileged test uid/gid when the suite runs as root.
pub const TEST_UID: u32 = 65534;
/// How long one cordon run may take before the harness kills it.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// cordon started by root.
    Root,
    /// cordon started by an unprivileged uid.
    User,
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The modes this test process can exercise.
pub fn modes() -> Vec<Mode> {
    if is_root() {
        vec![Mode::Root, Mode::User]
    } else {
        vec![Mode::User]
    }
}

impl Mode {
    /// The uid cordon runs as in this mode.
    pub fn uid(self) -> u32 {
        match self {
            Mode::Root => 0,
            Mode::User if is_root() => TEST_UID,
            Mode::User => nix::unistd::getuid().as_raw(),
        }
    }
    pub fn gid(self) -> u32 {
        match self {
            Mode::Root => 0,
            Mode::User if is_root() => TEST_UID,
            Mode::User => nix::unistd::getgid().as_raw(),
        }
    }
    /// Whether the harness must wrap cordon in setpriv.
    fn drops(self) -> bool {
        self == Mode::User && is_root()
    }
}

/// A random hex token, so canaries are unique per test.
pub fn rand_token() -> String {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Credential canaries planted in the fake home (relative path, all are on
/// the built-in deny list).
pub const DENIED_CANARIES: &[&str] = &[
    ".ssh/id_rsa",
    ".aws/credentials",
    ".netrc",
    ".kube/config",
    ".docker/config.json",
    ".bash_history",
    ".config/gh/hosts.yml",
];
/// A canary in the fake home that is NOT on the deny list.
pub const ALLOWED_CANARY: &str = ".config/notsecret/settings.txt";

/// Per-test fixture: base dir (0755) holding the cordon binary, a fake
/// home with canaries, a project, an "outside" dir and an XDG config dir,
/// all owned by the mode's uid. Removed on drop (root can remove files the
/// test uid created).
pub struct Fixture {
    pub mode: Mode,
    pub dir: tempfile::TempDir,
    pub bin: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
    pub outside: PathBuf,
    pub config: PathBuf,
    pub token: String,
}

pub fn chown(path: &Path, mode: Mode) {
    std::os::unix::fs::chown(path, Some(mode.uid()), Some(mode.gid()))
        .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
}

/// chown -R.
pub fn chown_tree(path: &Path, mode: Mode) {
    std::os::unix::fs::lchown(path, Some(mode.uid()), Some(mode.gid()))
        .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
    if path.is_dir() && !path.symlink_metadata().unwrap().file_type().is_symlink() {
        for e in std::fs::read_dir(path).unwrap() {
            chown_tree(&e.unwrap().path(), mode);
        }
    }
}

impl Fixture {
    pub fn new(mode: Mode) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("cordon-it-")
            .tempdir_in("/var/tmp")
            .expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let base = dir.path().to_path_buf();
        let bindir = base.join("bin");
        std::fs::create_dir(&bindir).unwrap();
        std::fs::set_permissions(&bindir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = bindir.join("cordon");
        let src = cordon_bin();
        let src = src.as_path();
        if std::fs::hard_link(src, &bin).is_err() {
            std::fs::copy(src, &bin).expect("copy cordon");
        }
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let token = rand_token();
        let home = base.join("home");
        let project = base.join("project");
        let outside = base.join("outside");
        let config = base.join("config");
        for d in [&home, &project, &outside, &config] {
            std::fs::create_dir(d).unwrap();
        }
        let fx = Fixture {
            mode,
            dir,
            bin,
            home,
            project,
            outside,
            config,
            token,
        };
        for rel in DENIED_CANARIES {
            fx.write_home(rel, &fx.canary(rel));
        }
        fx.write_home(ALLOWED_CANARY, &fx.canary(ALLOWED_CANARY));
        std::fs::write(fx.outside.join("host.txt"), "outside-original\n").unwrap();
        std::fs::write(fx.project.join("README"), "project-original\n").unwrap();
        for d in [&fx.home, &fx.project, &fx.outside, &fx.config] {
            chown_tree(d, mode);
        }
        fx
    }

    /// The canary content for a home-relative path.
    pub fn canary(&self, rel: &str) -> String {
        let tag: String = rel
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        format!("CANARY{tag}-{}", self.token)
    }

    pub fn write_home(&self, rel: &str, content: &str) {
        let p = self.home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    /// A builder for one sandbox run with this fixture.
    pub fn sandbox(&self) -> Sandbox {
        Sandbox::new(self.mode)
            .bin(&self.bin)
            .home(&self.home)
            .project(&self.project)
            .env("XDG_CONFIG_HOME", self.config.as_os_str())
    }

    /// A sandbox with its audit log at `log` (or `none`).
    pub fn audited(&self, log: impl AsRef<std::ffi::OsStr>) -> Sandbox {
        self.sandbox().flag("--audit", log.as_ref())
    }

    /// Runs `git` on the host as the mode's uid in `dir`.
    pub fn host_git(&self, dir: &Path, args: &[&str]) -> std::process::Output {
        let mut cmd = self.host_cmd("git");
        cmd.args(GIT_IDENTITY).args(args).current_dir(dir);
        let out = cmd.output().expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        out
    }

    /// A host command run as the mode's uid, with a clean environment.
    pub fn host_cmd(&self, program: &str) -> Command {
        let mut cmd = if self.mode.drops() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
            c
        } else {
            Command::new(program)
        };
        cmd.env_clear()
            .env("PATH", PATH)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1");
        cmd
    }
}

/// What one run produced.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn both(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
    /// Panics with the full output unless the exit code is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code; {self:#?}");
        self
    }
    #[track_caller]
    pub fn ok(&self) -> &Self {
        self.expect_code(0)
    }
    pub fn has(&self, needle: &str) -> bool {
        self.stdout.contains(needle) || self.stderr.contains(needle)
    }
}

/// A builder for one `cordon run`.
pub struct Sandbox {
    mode: Mode,
    bin: PathBuf,
    home: Option<PathBuf>,
    project: Option<PathBuf>,
    cwd: Option<PathBuf>,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    subcommand: String,
    pass_project: bool,
}

impl Sandbox {
    /// Who cordon runs as.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn new(mode: Mode) -> Sandbox {
        Sandbox {
            mode,
            bin: cordon_bin(),
            home: None,
            project: None,
            cwd: None,
            args: Vec::new(),
            env: vec![
                ("PATH".into(), PATH.into()),
                ("LANG".into(), "C.UTF-8".into()),
                ("TERM".into(), "dumb".into()),
            ],
            stdin: None,
            timeout: RUN_TIMEOUT,
            subcommand: "run".into(),
            pass_project: true,
        }
    }
    pub fn bin(mut self, p: &Path) -> Self {
        self.bin = p.to_path_buf();
        self
    }
    pub fn home(mut self, p: &Path) -> Self {
        self.home = Some(p.to_path_buf());
        self
    }
    pub fn project(mut self, p: &Path) -> Self {
        self.project = Some(p.to_path_buf());
        self
    }
    /// The directory cordon starts in (default: the project).
    pub fn cwd(mut self, p: &Path) -> Self {
        self.cwd = Some(p.to_path_buf());
        self
    }
    /// Don't pass --project (the project is then the cwd).
    pub fn no_project_flag(mut self) -> Self {
        self.pass_project = false;
        self
    }
    pub fn arg(mut self, a: impl Into<OsString>) -> Self {
        self.args.push(a.into());
        self
    }
    /// A flag and its value (`--allow-domain example.com`).
    pub fn flag(self, name: &str, value: impl Into<OsString>) -> Self {
        self.arg(name).arg(value)
    }
    /// Several arguments at once.
    pub fn args<I, A>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
    pub fn env(mut self, k: impl Into<OsString>, v: impl Into<OsString>) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn stdin(mut self, data: &[u8]) -> Self {
        self.stdin = Some(data.to_vec());
        self
    }
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }
    /// Another cordon subcommand (explain, doctor, trust) instead of run.
    pub fn subcommand(mut self, s: &str) -> Self {
        self.subcommand = s.into();
        self
    }

    /// The full command line, without the `-- CMD` part.
    pub fn command(&self, cmd: &[&str]) -> Command {
        // The harness may run with signals ignored (SIGHUP under nohup;
        // SIGINT and SIGQUIT when a non-interactive shell started it in
        // the background, as CI may), which exec passes on: cordon, and
        // the command after it, would then rightly never see a signal a
        // test sends (a shell cannot even trap one ignored on entry).
        // Every run starts with every signal at its default.
        let mut c = Command::new("/usr/bin/env");
        c.arg("--default-signal");
        if self.mode.drops() {
            c.args([
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ]);
        }
        c.arg(&self.bin);
        c.arg(&self.subcommand);
        if self.pass_project && ["run", "explain", "learn"].contains(&self.subcommand.as_str()) {
            if let Some(p) = &self.project {
                c.arg("--project").arg(p);
            }
        }
        c.args(&self.args);
        if !cmd.is_empty() {
            c.arg("--").args(cmd);
        }
        c.env_clear();
        for (k, v) in &self.env {
            c.env(k, v);
        }
        if let Some(h) = &self.home {
            c.env("HOME", h);
        }
        if let Some(d) = self.cwd.as_ref().or(self.project.as_ref()) {
            c.current_dir(d);
        }
        c
    }

    /// Runs `cordon run ... -- cmd` to completion (killed after the timeout).
    pub fn run(&self, cmd: &[&str]) -> Output {
        self.spawn(cmd).wait()
    }

    pub fn sh(&self, script: &str) -> Output {
        self.run(&["sh", "-c", script])
    }

    pub fn py(&self, code: &str) -> Output {
        self.run(&[PY, "-c", code])
    }

    /// Runs the python script `code` (usually a `tests/py/*.py` file
    /// loaded with `include_str!`) with `args` as its `sys.argv[1:]`.
    pub fn py_args<S: AsRef<str>>(&self, code: &str, args: &[S]) -> Output {
        self.run(&py_command(code, args))
    }

    /// Starts `cordon run ... -- cmd` and returns the running process.
    pub fn spawn(&self, cmd: &[&str]) -> Running {
        let mut c = self.command(cmd);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        Running::start(c, self.stdin.clone(), self.timeout)
    }
}

/// A cordon process started by the harness, with its output collected by
/// threads.
pub struct Running {
    pub child: Child,
    out: Option<Pipe>,
    err: Option<Pipe>,
    deadline: Instant,
    timeout: Duration,
}

impl Running {
    pub fn start(mut c: Command, stdin: Option<Vec<u8>>, timeout: Duration) -> Running {
        // A copied binary may still be open for writing in a child forked
        // by another test thread (until that child execs): ETXTBSY passes.
        let mut tries = 0;
        let mut child = loop {
            match c.spawn() {
                Ok(child) => break child,
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("spawn {c:?}: {e}"),
            }
        };
        if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&data);
            });
        }
        let out = child.stdout.take().map(Pipe::read);
        let err = child.stderr.take().map(Pipe::read);
        Running {
            child,
            out,
            err,
            deadline: Instant::now() + timeout,
            timeout,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `sig` to the cordon process.
    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).expect("kill cordon");
    }

    /// Waits (up to the timeout) and collects the output.
    pub fn wait(mut self) -> Output {
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                break s;
            }
            if Instant::now() > self.deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let out = self.collect();
                panic!(
                    "cordon did not finish within {:?}; killed it. stdout={:?} stderr={:?}",
                    self.timeout, out.0, out.1
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (stdout, stderr) = self.collect();
        use std::os::unix::process::ExitStatusExt;
        let code = status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        Output {
            code,
            stdout,
            stderr,
        }
    }

    /// The output so far. A pipe still open 5 s after cordon exited means
    /// something of the sandbox outlived it: that is reported in stderr
    /// rather than waited for.
    fn collect(&mut self) -> (String, String) {
        let end = Instant::now() + Duration::from_secs(5);
        let get = |p: Option<Pipe>| p.map(|p| p.finish(end)).unwrap_or_default();
        (get(self.out.take()), get(self.err.take()))
    }
}

/// A reader thread filling a shared buffer.
struct Pipe {
    buf: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Pipe {
    fn read(mut src: impl Read + Send + 'static) -> Pipe {
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (b, d) = (buf.clone(), done.clone());
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match src.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => b.lock().unwrap().extend_from_slice(&chunk[..n]),
                }
            }
            d.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        Pipe { buf, done }
    }

    fn finish(self, end: Instant) -> String {
        let closed = wait_until(end.saturating_duration_since(Instant::now()), || {
            self.done.load(std::sync::atomic::Ordering::SeqCst)
        });
        let mut text = String::from_utf8_lossy(&self.buf.lock().unwrap()).into_owned();
        if !closed {
            text.push_str("\n[harness: pipe still open after cordon exited]\n");
        }
        text
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Polls `cond` every 20 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// PIDs of host processes whose cmdline contains `needle`.
pub fn host_pids_with_cmdline(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    let me = std::process::id() as i32;
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            if pid == me {
                continue;
            }
            if let Ok(raw) = std::fs::read(e.path().join("cmdline")) {
                let s = String::from_utf8_lossy(&raw).replace('\0', " ");
                if s.contains(needle) {
                    found.push(pid);
                }
            }
        }
    }
    found
}

/// A recursive listing of `dir` (relative paths, sorted), for before/after
/// comparisons.
pub fn listing(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                walk(root, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The command line that runs the python script `code` with `args`.
pub fn py_command<'a, S: AsRef<str>>(code: &'a str, args: &'a [S]) -> Vec<&'a str> {
    [PY, "-c", code]
        .into_iter()
        .chain(args.iter().map(AsRef::as_ref))
        .collect()
}

impl Sandbox {
    /// Runs cordon the way a shell would after `exec 5>path`: with an extra
    /// inherited descriptor 5 open on `path`.
    pub fn run_with_fd5(&self, path: &Path, cmd: &[&str]) -> Output {
        self.run_under_sh(
            "f=$1; shift; exec 5>\"$f\"; exec \"$@\"",
            &[path.as_os_str()],
            cmd,
        )
    }

    /// Runs cordon from `sh -c script sh SCRIPT_ARGS... CORDON...`: the
    /// script sets something up for it (a descriptor, a limit), then ends
    /// in `exec "$@"` after shifting its own arguments away.
    pub fn run_under_sh(
        &self,
        script: &str,
        script_args: &[&std::ffi::OsStr],
        cmd: &[&str],
    ) -> Output {
        let inner = self.command(cmd);
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(script)
            .arg("sh")
            .args(script_args)
            .arg(inner.get_program())
            .args(inner.get_args());
        c.env_clear();
        for (k, v) in inner.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        if let Some(d) = inner.get_current_dir() {
            c.current_dir(d);
        }
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::null());
        Running::start(c, None, self.timeout).wait()
    }
}

/// Runs `f` once per mode, and fails afterwards with every mode's failure
/// (so a root-mode failure does not hide the user-mode result).
pub fn each_mode(f: impl Fn(Mode)) {
    let mut failures = Vec::new();
    for mode in modes() {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(mode)));
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            failures.push(format!("[mode {mode:?}] {msg}"));
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} of {} modes failed:\n{}",
            failures.len(),
            modes().len(),
            failures.join("\n----\n")
        );
    }
}

/// [`each_mode`] with a fresh [`Fixture`] for each mode.
pub fn each_fixture(f: impl Fn(Mode, &Fixture)) {
    each_mode(|mode| f(mode, &Fixture::new(mode)));
}

/// Everything about a tree but access times: each entry's kind, mode,
/// owner, modification time and contents (a link's target).
pub fn tree_snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = path.symlink_metadata().unwrap();
        let body = if meta.file_type().is_symlink() {
            format!("-> {}", std::fs::read_link(&path).unwrap().display())
        } else if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                todo.push(entry.unwrap().path());
            }
            "dir".to_string()
        } else {
            format!("{:?}", std::fs::read(&path).unwrap())
        };
        let line = format!(
            "{:o} {}:{} {}.{} {body}",
            meta.mode(),
            meta.uid(),
            meta.gid(),
            meta.mtime(),
            meta.mtime_nsec()
        );
        out.insert(path.strip_prefix(root).unwrap().to_path_buf(), line);
    }
    out
}

/// Whether curl is here to run (`.ci/run` installs it); says so when not.
pub fn have_curl() -> bool {
    let found = Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped: curl is not installed (.ci/run installs it)");
    }
    found
}

/// A committed git repository in the fixture's project, owned by the mode's uid.
pub fn git_project(fx: &Fixture) {
    std::fs::write(fx.project.join("file.txt"), "one\n").unwrap();
    chown_tree(&fx.project, fx.mode);
    fx.host_git(&fx.project, &["init", "-q"]);
    fx.host_git(&fx.project, &["add", "."]);
    fx.host_git(&fx.project, &["commit", "-q", "-m", "init"]);
}

/// A shell script that tries each `(label, command)` and prints
/// `label: OPEN` if it succeeded, `label: refused` if it failed.
pub fn attempts_script(attempts: &[(&str, &str)]) -> String {
    attempts
        .iter()
        .map(|(label, cmd)| {
            format!("( {cmd} ) 2>/dev/null && echo '{label}: OPEN' || echo '{label}: refused'\n")
        })
        .collect()
}

/// The `label: OPEN` lines of an [`attempts_script`] run.
pub fn open_lines(out: &Output) -> Vec<&str> {
    out.stdout
        .lines()
        .filter(|l| l.ends_with(": OPEN"))
        .collect()
}

/// What follows `label: ` on the first stdout line that starts with it, or
/// `<missing>` (so an assertion shows the line never came).
pub fn line<'a>(out: &'a Output, label: &str) -> &'a str {
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{label}: ")))
        .unwrap_or("<missing>")
}

/// What tests/py/tries.py runs: it imports `os`, `errno` and `modules`,
/// runs `prelude`, then tries each (label, statement) and prints `label:
/// OK` or `label: ERR <errno>`, then runs the code given to [`Tries::then`].
pub struct Tries {
    modules: Vec<String>,
    prelude: String,
    cases: Vec<(String, String)>,
    then: String,
}

/// The tries of `cases` (see [`Tries`]), run with [`Sandbox::tries`].
pub fn py_tries(modules: &[&str], prelude: &str, cases: &[(&str, String)]) -> Tries {
    Tries {
        modules: modules.iter().map(|m| m.to_string()).collect(),
        prelude: prelude.to_string(),
        cases: cases
            .iter()
            .map(|(label, stmt)| (label.to_string(), stmt.clone()))
            .collect(),
        then: String::new(),
    }
}

impl Tries {
    /// Code run after the tries, unguarded.
    pub fn then(mut self, code: &str) -> Self {
        self.then.push_str(code);
        self
    }

    fn json(&self) -> String {
        serde_json::json!({
            "modules": self.modules,
            "prelude": self.prelude,
            "cases": self.cases,
            "then": self.then,
        })
        .to_string()
    }
}

/// Runs the tries given as JSON in argv[1].
const TRIES_PY: &str = include_str!("../py/tries.py");

impl Sandbox {
    /// Runs `tries` in the sandbox.
    pub fn tries(&self, tries: &Tries) -> Output {
        self.py_args(TRIES_PY, &[tries.json()])
    }
}

/// Builds the C program `source` into `dir/name` with `cc` and `flags`.
/// The Rust build itself links with `cc` and the C library, so both are
/// there: a failure here is the test's, never a reason to skip it.
pub fn build_c(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let status = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("cc (the linker of the Rust build) runs");
    assert!(status.success(), "cc {flags:?} could not build {name}");
    out
}
