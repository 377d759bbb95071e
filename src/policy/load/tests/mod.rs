//! The loader's unit tests: the fixture, and the built-in layer and layering.

use super::builtin::{existing_entries, home_entry, other_homes, passwd_homes};
use super::flags::given;
use super::*;
use crate::policy::defaults::{
    CREDENTIAL_DENY_LIST, CREDENTIAL_DENY_PATTERNS, MAX_CONNECTIONS, MAX_PROCS, MAX_TMP,
    PROTECTED_NAMES, SYSTEM_DENY_LIST,
};
use crate::policy::host::HostRule;
use crate::policy::inspection::SecretSource;
use crate::policy::pattern::PathPattern;
use crate::policy::{Layer, Sourced};
use std::fs;
use std::time::Duration;

mod errors;
mod flags;
mod keys;
mod network;
mod trust_rule;

/// A scratch home and project to load policies for (`explain`'s tests
/// use it too).
pub(crate) struct Fx {
    _dir: tempfile::TempDir,
    root: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) project: PathBuf,
    config: PathBuf,
}

impl Fx {
    pub(crate) fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home/u");
        let project = root.join("work/p");
        fs::create_dir_all(home.join(".config")).unwrap();
        fs::create_dir_all(&project).unwrap();
        let config = home.join(".config/cordon");
        Fx {
            _dir: dir,
            root,
            home,
            project,
            config,
        }
    }

    /// The policy's homes that are this fixture's (the host's other
    /// accounts' homes follow them).
    fn own_homes(&self, p: &Policy) -> Vec<PathBuf> {
        p.homes
            .iter()
            .filter(|h| h.starts_with(&self.root))
            .cloned()
            .collect()
    }

    /// The deny_read entries under this fixture.
    fn under_root(&self, p: &Policy) -> Vec<String> {
        let root = self.root.display().to_string();
        p.files
            .deny_read
            .iter()
            .map(|e| e.value.to_string())
            .filter(|e| e.starts_with(&root))
            .collect()
    }

    fn env(&self) -> EnvFacts {
        EnvFacts {
            home: self.home.clone(),
            passwd_home: None,
            xdg_config_home: self.home.join(".config"),
            xdg_state_home: self.home.join(".local/state"),
            xdg_cache_home: self.home.join(".cache"),
        }
    }

    pub(crate) fn req(&self, flags: Vec<FlagValue>) -> LoadRequest {
        LoadRequest {
            cwd: self.project.clone(),
            project: None,
            policy_files: Vec::new(),
            imports: Vec::new(),
            flags,
            env: self.env(),
            server: None,
        }
    }

    fn load(&self) -> Result<Policy, LoadError> {
        load(&self.req(Vec::new()))
    }

    fn project_file(&self) -> PathBuf {
        self.project.join("cordon.toml")
    }

    pub(crate) fn write_project(&self, text: &str) -> PathBuf {
        fs::write(self.project_file(), text).unwrap();
        self.project_file()
    }

    pub(crate) fn write_user(&self, text: &str) -> PathBuf {
        fs::create_dir_all(&self.config).unwrap();
        let file = self.config.join("config.toml");
        fs::write(&file, text).unwrap();
        file
    }

    /// The error that loading the project file `text` gives, as text.
    fn project_error(&self, text: &str) -> String {
        let file = self.write_project(text);
        let err = self.load().expect_err("load should fail");
        let msg = err.to_string();
        let prefix = format!("{}:", file.display());
        msg.strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{msg:?} does not start with {prefix:?}"))
            .to_string()
    }
}

fn exact(p: &Path) -> PathPattern {
    PathPattern::Exact(p.to_path_buf())
}

fn rule_texts(v: &[Sourced<HostRule>]) -> Vec<(String, Source)> {
    v.iter()
        .map(|r| (r.value.to_string(), r.source.clone()))
        .collect()
}

fn values<T: Clone>(v: &[Sourced<T>]) -> Vec<T> {
    v.iter().map(|s| s.value.clone()).collect()
}

// ---- sizes and durations

#[test]
fn sizes() {
    assert_eq!(parse_size("4096"), Ok(4096));
    assert_eq!(parse_size("100k"), Ok(100 * 1024));
    assert_eq!(parse_size("512M"), Ok(512 << 20));
    assert_eq!(parse_size("1G"), Ok(1 << 30));
    assert_eq!(parse_size("1GiB"), Ok(1 << 30));
    assert_eq!(parse_size("2gb"), Ok(2 << 30));
    assert_eq!(parse_size("3T"), Ok(3 << 40));
    assert_eq!(parse_size(" 8 G "), Ok(8 << 30));
    assert_eq!(parse_size("10B"), Ok(10));
    for bad in ["", "G", "12Q", "1.5G", "-1", "1 G B", "0x10"] {
        let err = parse_size(bad).expect_err(bad);
        assert!(err.starts_with(&format!("invalid size {bad:?}")), "{err}");
    }
    assert!(parse_size("99999999999T")
        .unwrap_err()
        .contains("too large"));
    assert!(parse_size("99999999999999999999").is_err());
}

#[test]
fn durations() {
    let s = Duration::from_secs;
    assert_eq!(parse_duration("90"), Ok(s(90)));
    assert_eq!(parse_duration("90s"), Ok(s(90)));
    assert_eq!(parse_duration("30m"), Ok(s(1800)));
    assert_eq!(parse_duration("2h"), Ok(s(7200)));
    assert_eq!(parse_duration("1h30m"), Ok(s(5400)));
    assert_eq!(parse_duration("1d2h"), Ok(s(93_600)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("1m500ms"), Ok(Duration::from_millis(60_500)));
    for bad in ["", "h", "1x", "1h30", "1.5h", "-3s", "1 h"] {
        let err = parse_duration(bad).expect_err(bad);
        assert!(
            err.starts_with(&format!("invalid duration {bad:?}")),
            "{err}"
        );
    }
    assert!(parse_duration("99999999999999999d")
        .unwrap_err()
        .contains("too long"));
}

#[test]
fn human_forms() {
    assert_eq!(human_size(1 << 30), "1 GiB");
    assert_eq!(human_size(512 << 20), "512 MiB");
    assert_eq!(human_size(1536 << 20), "1536 MiB");
    assert_eq!(human_size(1500), "1500 bytes (about 1.5 KiB)");
    assert_eq!(human_size(1000), "1000 bytes");
    assert_eq!(human_duration(Duration::from_secs(5400)), "1h30m");
    assert_eq!(human_duration(Duration::from_millis(500)), "500ms");
    assert_eq!(human_duration(Duration::ZERO), "0ms");
}

#[test]
fn config_dir() {
    let env = EnvFacts {
        home: "/h".into(),
        passwd_home: None,
        xdg_config_home: "/x/conf".into(),
        xdg_state_home: "/x/state".into(),
        xdg_cache_home: "/x/cache".into(),
    };
    assert_eq!(user_config_dir(&env), PathBuf::from("/x/conf/cordon"));
}

// ---- built-in layer

#[test]
fn builtin_defaults() {
    let fx = Fx::new();
    let p = fx.load().unwrap();
    assert_eq!(p.project, Sourced::new(fx.project.clone(), Source::Builtin));
    assert_eq!(fx.own_homes(&p), vec![fx.home.clone()]);
    assert_eq!(fx.under_root(&p).len(), PER_HOME);
    assert!(p
        .files
        .deny_read
        .iter()
        .all(|e| e.source == Source::Builtin));
    assert!(values(&p.files.deny_read).contains(&exact(&fx.home.join(".ssh"))));
    assert!(values(&p.files.deny_read).contains(&exact(&fx.home.join(".docker/config.json"))));
    for entry in SYSTEM_DENY_LIST {
        assert!(
            p.files
                .deny_read
                .iter()
                .any(|e| e.value.to_string() == *entry),
            "{entry}"
        );
    }
    assert_eq!(
        values(&p.files.protected),
        PROTECTED_NAMES
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        p.files.deny_write,
        vec![Sourced::new(exact(&fx.config), Source::Builtin)]
    );
    assert!(p.files.allow_write.is_empty() && p.files.allow_read.is_empty());
    assert_eq!(p.limits.max_procs, Sourced::new(MAX_PROCS, Source::Builtin));
    assert_eq!(p.limits.max_tmp, Sourced::new(MAX_TMP, Source::Builtin));
    assert!(p.limits.max_memory.is_none() && p.limits.timeout.is_none());
    assert!(p.network.local_ports.is_none() && p.allow_degraded.is_empty());
    assert!(p.network.host_ports.is_empty() && p.network.publish.is_empty());
}

/// Built-in entries under each of the caller's homes.
const PER_HOME: usize = CREDENTIAL_DENY_LIST.len() + CREDENTIAL_DENY_PATTERNS.len();

#[test]
fn passwd_homes_are_the_sixth_field() {
    let text = "root:x:0:0:root:/root:/bin/bash\n\
                bob:x:1000:1000:Bob,,,:/home/bob:/bin/sh\n\
                odd:x:1:1::relative:/bin/sh\n\
                short:x:2\n";
    assert_eq!(
        passwd_homes(text),
        vec![PathBuf::from("/root"), PathBuf::from("/home/bob")]
    );
}

#[test]
fn other_homes_get_their_existing_credential_files_only() {
    let fx = Fx::new();
    let other = fx.root.join("home/bob");
    fs::create_dir_all(other.join(".ssh")).unwrap();
    fs::create_dir_all(other.join(".config/JetBrains/IdeaIC2024.1")).unwrap();
    fs::write(other.join(".config/JetBrains/IdeaIC2024.1/c.kdbx"), "x").unwrap();
    fs::write(other.join(".netrc"), "x").unwrap();
    let gone = fx.root.join("nonexistent");
    let system = ["/", "/usr/sbin", "/bin", "/dev"].map(PathBuf::from);
    let homes = other_homes(&[&[other.clone(), gone, other.clone()], &system[..]].concat());
    assert_eq!(homes.iter().filter(|h| **h == other).count(), 1);
    assert!(!homes
        .iter()
        .any(|h| h.starts_with("/usr") || h.starts_with("/dev")));
    assert!(!homes
        .iter()
        .any(|h| h.starts_with(fx.root.join("nonexistent"))));
    assert!(!homes.contains(&PathBuf::from("/")));
    let found: Vec<String> = existing_entries(&other)
        .unwrap()
        .iter()
        .map(|p| p.to_string())
        .collect();
    let under = |rel: &str| other.join(rel).display().to_string();
    assert_eq!(
        found,
        vec![
            under(".ssh"),
            under(".netrc"),
            under(".config/JetBrains/*/c.kdbx")
        ]
    );
    // The glob covers the file it was found for.
    let glob = home_entry(&other, ".config/JetBrains/*/c.kdbx").unwrap();
    assert!(glob.covers(&other.join(".config/JetBrains/IdeaIC2024.1/c.kdbx")));
}

#[test]
fn the_ssh_host_key_glob_spares_the_public_keys() {
    let root = PathContext {
        home: Path::new("/"),
        base: None,
    };
    let glob = PathPattern::parse("/etc/ssh/ssh_host_*_key", &root).unwrap();
    assert!(glob.covers(Path::new("/etc/ssh/ssh_host_ed25519_key")));
    assert!(glob.covers(Path::new("/etc/ssh/ssh_host_rsa_key")));
    assert!(!glob.covers(Path::new("/etc/ssh/ssh_host_rsa_key.pub")));
    assert!(!glob.covers(Path::new("/etc/ssh/sshd_config")));
}

#[test]
fn homes_from_env_and_passwd() {
    let fx = Fx::new();
    let other = fx.root.join("home/other");
    fs::create_dir_all(&other).unwrap();
    let mut req = fx.req(Vec::new());
    req.env.passwd_home = Some(other.clone());
    let p = load(&req).unwrap();
    assert_eq!(fx.own_homes(&p), vec![fx.home.clone(), other.clone()]);
    assert_eq!(fx.under_root(&p).len(), 2 * PER_HOME);
    assert!(values(&p.files.deny_read).contains(&exact(&other.join(".aws"))));

    // The same home through a symlink counts once.
    let link = fx.root.join("homelink");
    std::os::unix::fs::symlink(&fx.home, &link).unwrap();
    req.env.passwd_home = Some(link);
    let p = load(&req).unwrap();
    assert_eq!(fx.own_homes(&p), vec![fx.home.clone()]);
}

#[test]
fn project_flag() {
    let fx = Fx::new();
    let mut req = fx.req(Vec::new());
    req.cwd = fx.root.clone();
    req.project = Some("work/./p".into());
    let p = load(&req).unwrap();
    assert_eq!(
        p.project,
        Sourced::new(fx.project.clone(), Source::Flag("--project".into()))
    );

    req.project = Some("missing".into());
    let err = load(&req).unwrap_err().to_string();
    assert!(
        err.contains("missing") && err.ends_with("does not exist"),
        "{err}"
    );

    fs::write(fx.root.join("file"), "").unwrap();
    req.project = Some("file".into());
    let err = load(&req).unwrap_err().to_string();
    assert!(err.ends_with("is not a directory"), "{err}");

    req.project = None;
    req.cwd = "relative".into();
    assert!(matches!(load(&req), Err(LoadError::RelativeCwd(_))));
}

// ---- layering

#[test]
fn layers_apply_in_order() {
    let fx = Fx::new();
    let user = fx.write_user(
        "[files]\nallow_write = [\"~/.cache/pip\"]\ndeny_read = [\"/srv/secret\"]\n\
         [limits]\nmax_procs = 1000\ntimeout = \"3h\"\n",
    );
    let project = fx.write_project(
        "[files]\ndeny_read = [\"./.env\", \"./**/*.pem\"]\nprotect = [\"./.github/workflows/\"]\n\
         [limits]\nmax_procs = 500\ntimeout = \"2h\"\nmax_memory = \"8G\"\n",
    );
    let pdir = fx.root.join("policies");
    fs::create_dir_all(&pdir).unwrap();
    let pfile = pdir.join("extra.toml");
    fs::write(
        &pfile,
        "[files]\nallow_write = [\"build\"]\n[limits]\nmax_procs = 800\n[network]\nlocal_ports = [3000]\n",
    )
    .unwrap();
    let flags = given(&[
        ("--allow-write", &["out", "~/scratch"]),
        ("--deny-read", &["/etc/shadow"]),
        ("--max-procs", &["100"]),
        ("--max-tmp", &["256M"]),
        ("--local-ports", &["8080"]),
        ("--allow-degraded", &["seccomp"]),
    ]);
    let mut req = fx.req(flags);
    req.policy_files = vec![PathBuf::from("../../policies/extra.toml")];
    let p = load(&req).unwrap();

    let u = Source::UserConfig(user);
    let pr = Source::Project(project);
    let pf = Source::PolicyFile(pfile);
    let flag = |f: &str| Source::Flag(f.to_string());
    assert_eq!(
        p.files.allow_write,
        vec![
            Sourced::new(exact(&fx.home.join(".cache/pip")), u.clone()),
            Sourced::new(exact(&pdir.join("build")), pf.clone()),
            Sourced::new(exact(&fx.project.join("out")), flag("--allow-write")),
            Sourced::new(exact(&fx.home.join("scratch")), flag("--allow-write")),
        ]
    );
    let extra: Vec<_> = p
        .files
        .deny_read
        .iter()
        .filter(|e| e.source != Source::Builtin)
        .map(|e| (e.value.to_string(), e.source.clone()))
        .collect();
    let pem = format!("{}/**/*.pem", fx.project.display());
    assert_eq!(
        extra,
        vec![
            ("/srv/secret".to_string(), u.clone()),
            (fx.project.join(".env").display().to_string(), pr.clone()),
            (pem, pr.clone()),
            ("/etc/shadow".to_string(), flag("--deny-read")),
        ]
    );
    assert_eq!(
        p.files.protected.last(),
        Some(&Sourced::new(".github/workflows/".to_string(), pr.clone()))
    );
    assert_eq!(p.limits.max_procs, Sourced::new(100, flag("--max-procs")));
    assert_eq!(p.limits.max_tmp, Sourced::new(256 << 20, flag("--max-tmp")));
    assert_eq!(p.limits.max_memory, Some(Sourced::new(8 << 30, pr.clone())));
    assert_eq!(
        p.limits.timeout,
        Some(Sourced::new(Duration::from_secs(7200), pr.clone()))
    );
    // A restriction: the flag's replaces the file's.
    assert_eq!(
        p.network.local_ports,
        Some(Sourced::new(vec![8080], flag("--local-ports")))
    );
    assert_eq!(
        p.allow_degraded,
        vec![Sourced::new(Layer::Seccomp, flag("--allow-degraded"))]
    );
    assert!(p.degraded_ok(Layer::Seccomp) && !p.degraded_ok(Layer::Landlock));
}

#[test]
fn sections_may_be_written_many_ways() {
    let fx = Fx::new();
    fx.write_project(
        "files.deny_read = [\"/a\"]\nlimits = { max_procs = 10 }\n\
         [network]\n\"local_ports\" = []\n",
    );
    let p = fx.load().unwrap();
    assert_eq!(p.files.deny_read.last().unwrap().value.to_string(), "/a");
    assert_eq!(p.limits.max_procs.value, 10);
    // An empty file and empty sections are fine.
    fx.write_project("");
    fx.load().unwrap();
    fx.write_project("[files]\n[limits]\n[network]\n[sandbox]\n");
    fx.load().unwrap();
}

#[test]
fn user_config_paths_must_be_absolute() {
    let fx = Fx::new();
    let file = fx.write_user("[files]\ndeny_read = [\"~/ok\", \"rel\"]\n");
    let err = fx.load().unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "{}:2:22: files.deny_read[1]: relative path \"rel\"",
            file.display()
        )),
        "{err}"
    );
}

#[test]
fn policy_files() {
    let fx = Fx::new();
    let mut req = fx.req(Vec::new());
    req.policy_files = vec![PathBuf::from("nope.toml")];
    let err = load(&req).unwrap_err().to_string();
    assert!(
        err.starts_with("cannot read ") && err.contains("nope.toml"),
        "{err}"
    );

    let a = fx.project.join("a.toml");
    let b = fx.root.join("b.toml");
    fs::write(&a, "[limits]\nmax_procs = 7\n").unwrap();
    fs::write(
        &b,
        "[limits]\nmax_procs = 9\n[files]\ndeny_write = [\"x\"]\n",
    )
    .unwrap();
    req.policy_files = vec![b.clone(), "a.toml".into()];
    let p = load(&req).unwrap();
    assert_eq!(
        p.limits.max_procs,
        Sourced::new(7, Source::PolicyFile(a.clone()))
    );
    assert_eq!(
        p.files.deny_write.last(),
        Some(&Sourced::new(
            exact(&fx.root.join("x")),
            Source::PolicyFile(b.clone())
        ))
    );
    req.policy_files = vec!["a.toml".into(), b.clone()];
    assert_eq!(load(&req).unwrap().limits.max_procs.value, 9);
}
