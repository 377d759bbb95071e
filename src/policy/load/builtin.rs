//! Layer 1: the built-in defaults, and the homes whose credential files
//! the sandbox hides.

use std::io;
use std::path::{Path, PathBuf};

use super::{default_audit_log, key_path, user_config_dir, LoadError, LoadRequest};
use crate::policy::defaults::{
    CREDENTIAL_DENY_LIST, CREDENTIAL_DENY_PATTERNS, MAX_CONNECTIONS, MAX_PROCS, MAX_TMP,
    PROTECTED_NAMES, SYSTEM_DENY_LIST,
};
use crate::policy::pattern::{PathContext, PathPattern};
use crate::policy::{
    AuditPolicy, EnvPolicy, FilesPolicy, Limits, NetworkPolicy, Policy, Source, Sourced,
};

/// Layer 1: the built-in defaults.
pub fn builtin(req: &LoadRequest) -> Result<Policy, LoadError> {
    let (given, source) = match &req.project {
        Some(p) => (req.cwd.join(p), Source::Flag("--project".to_string())),
        None => (req.cwd.clone(), Source::Builtin),
    };
    let project = given.canonicalize().map_err(|e| LoadError::Project {
        path: given.clone(),
        reason: if e.kind() == io::ErrorKind::NotFound {
            "does not exist".to_string()
        } else {
            e.to_string()
        },
    })?;
    if !project.is_dir() {
        return Err(LoadError::Project {
            path: given,
            reason: "is not a directory".to_string(),
        });
    }

    let env = &req.env;
    if !env.home.is_absolute() {
        return Err(LoadError::NoHome(format!(
            "{} is not an absolute path",
            env.home.display()
        )));
    }
    let resolve = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let mut homes = vec![resolve(&env.home)];
    if let Some(passwd) = env.passwd_home.as_deref().filter(|p| p.is_absolute()) {
        let passwd = resolve(passwd);
        if !homes.contains(&passwd) {
            homes.push(passwd);
        }
    }

    let mut files = FilesPolicy {
        cache_layers: crate::policy::cache::layers_root(&resolve(&env.xdg_cache_home)),
        own_config: resolve(&user_config_dir(env)),
        ..FilesPolicy::default()
    };
    for home in &homes {
        for entry in CREDENTIAL_DENY_LIST.iter().chain(CREDENTIAL_DENY_PATTERNS) {
            files
                .deny_read
                .push(Sourced::new(home_entry(home, entry)?, Source::Builtin));
        }
    }
    // Other accounts' homes: only the entries there now, so that a run
    // costs one directory listing per home, and `cordon explain` shows
    // what is hidden rather than every name the list could have.
    for home in other_homes(&read_passwd_homes()?) {
        if homes.contains(&home) {
            continue;
        }
        let found = existing_entries(&home)?;
        if !found.is_empty() {
            files
                .deny_read
                .extend(found.into_iter().map(|p| Sourced::new(p, Source::Builtin)));
            homes.push(home);
        }
    }
    let root = PathContext {
        home: Path::new("/"),
        base: None,
    };
    for entry in SYSTEM_DENY_LIST {
        let pattern = PathPattern::parse(entry, &root)
            .map_err(|e| LoadError::NoHome(format!("system deny list entry {entry}: {e}")))?;
        files.deny_read.push(Sourced::new(pattern, Source::Builtin));
    }
    files.protected = PROTECTED_NAMES
        .iter()
        .map(|name| Sourced::new((*name).to_string(), Source::Builtin))
        .collect();
    // The directory itself, not its name read as a pattern: a glob
    // character or a byte that is not UTF-8 in the home's name would make
    // the rule miss it, and the sandbox could write the next run's config.
    let config_pattern = PathPattern::exact(&user_config_dir(env)).ok_or_else(|| {
        LoadError::NoHome(format!(
            "config directory {}: not an absolute path without `..`",
            user_config_dir(env).display()
        ))
    })?;
    files
        .deny_write
        .push(Sourced::new(config_pattern, Source::Builtin));

    Ok(Policy {
        project: Sourced::new(project, source),
        homes,
        files,
        limits: Limits {
            max_procs: Sourced::new(MAX_PROCS, Source::Builtin),
            max_tmp: Sourced::new(MAX_TMP, Source::Builtin),
            max_memory: None,
            timeout: None,
        },
        network: NetworkPolicy {
            max_connections: Sourced::new(MAX_CONNECTIONS, Source::Builtin),
            ..NetworkPolicy::default()
        },
        audit: AuditPolicy {
            log: Sourced::new(Some(default_audit_log(env)), Source::Builtin),
            key: key_path(&env.xdg_state_home),
        },
        inspection: Default::default(),
        allow_degraded: Vec::new(),
        env: EnvPolicy::default(),
        import_notes: Vec::new(),
    })
}

/// The credential list's `entry` (relative, maybe a glob) under `home`.
pub(super) fn home_entry(home: &Path, entry: &str) -> Result<PathPattern, LoadError> {
    let ctx = PathContext { home, base: None };
    PathPattern::parse(&format!("~/{entry}"), &ctx)
        .map_err(|e| LoadError::NoHome(format!("home {}: {e}", home.display())))
}

/// The password database's file; accounts from other sources (LDAP, SSSD)
/// are reached through `/home` instead (see [`other_homes`]).
const PASSWD_FILE: &str = "/etc/passwd";

/// Every home directory `/etc/passwd` names (its sixth field). A missing
/// file names none; one that cannot be read is an error.
fn read_passwd_homes() -> Result<Vec<PathBuf>, LoadError> {
    match std::fs::read_to_string(PASSWD_FILE) {
        Ok(text) => Ok(passwd_homes(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(LoadError::Read {
            path: PathBuf::from(PASSWD_FILE),
            source,
        }),
    }
}

/// The absolute home directories in passwd(5) `text`.
pub(super) fn passwd_homes(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| line.split(':').nth(5))
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
        .collect()
}

/// System directories some system accounts name as their home (`daemon`'s
/// `/usr/sbin`, `sys`'s `/dev`, `irc`'s `/run/ircd`): not homes, so not
/// searched (listing `/usr/bin` at every start costs more than the rest);
/// `/dev`, `/proc` and `/run` are replaced or hidden in the sandbox anyway.
const NOT_HOMES: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/dev", "/proc", "/sys", "/run",
];

/// Other accounts' homes whose credential files the sandbox hides too:
/// `passwd` (the password database's homes), `/root`, and the directories
/// in `/home` (accounts the local file does not list). Resolved, existing
/// directories only, each once; `/` (the home of some system accounts) is
/// left out, as it is the whole root, and so are [`NOT_HOMES`].
pub(super) fn other_homes(passwd: &[PathBuf]) -> Vec<PathBuf> {
    let in_home = std::fs::read_dir("/home")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path());
    let mut homes: Vec<PathBuf> = Vec::new();
    let candidates = passwd
        .iter()
        .cloned()
        .chain([PathBuf::from("/root")])
        .chain(in_home);
    // Many system accounts share a home (`/nonexistent`, `/bin`): each
    // path is resolved once.
    let mut seen: Vec<PathBuf> = Vec::new();
    for home in candidates {
        if seen.contains(&home) {
            continue;
        }
        seen.push(home.clone());
        let Ok(home) = home.canonicalize() else {
            continue; // `/nonexistent` and the like
        };
        let system = NOT_HOMES.iter().any(|dir| home.starts_with(dir));
        if home.parent().is_some() && !system && home.is_dir() && !homes.contains(&home) {
            homes.push(home);
        }
    }
    homes
}

/// The credential list's entries that exist under `home` now. One listing
/// of `home` tells which first components are there; only entries under
/// those are looked at. A home the caller may enter but not list (mode
/// 0711) has every entry looked at.
pub(super) fn existing_entries(home: &Path) -> Result<Vec<PathPattern>, LoadError> {
    let present: Option<std::collections::HashSet<std::ffi::OsString>> = std::fs::read_dir(home)
        .ok()
        .map(|listing| listing.flatten().map(|entry| entry.file_name()).collect());
    let mut found = Vec::new();
    for entry in CREDENTIAL_DENY_LIST.iter().chain(CREDENTIAL_DENY_PATTERNS) {
        let first = entry.split('/').next().unwrap_or(entry);
        if present
            .as_ref()
            .is_some_and(|names| !names.contains(std::ffi::OsStr::new(first)))
        {
            continue;
        }
        let pattern = home_entry(home, entry)?;
        if !pattern.expand().is_empty() {
            found.push(pattern);
        }
    }
    Ok(found)
}
