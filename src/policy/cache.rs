//! Per-tool caches (`files.cache`, `--cache`): a host directory the
//! sandbox sees writable, whose writes land in a private layer cordon
//! keeps between runs, per project; the host's directory itself is never
//! changed. The mechanism (an overlay mounted by init) is the sandbox's
//! (`sandbox::caches`); here are the entries, where their layers live and
//! the checks a policy's caches must pass.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::load::{LoadError, Position};
use super::pattern::{PathContext, PathPattern};
use super::{Policy, Sourced};

/// One cache: the host directory, and the variable (if any) that points
/// the tool at it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cache {
    /// The host directory, absolute (as given, `~` expanded).
    pub path: PathBuf,
    /// A variable set to where the cache is inside (`npm_config_cache`):
    /// the tool finds it there even when the host directory is missing.
    pub env: Option<String>,
    /// Left out, rather than refused, when the host directory is missing
    /// and no variable points the tool elsewhere (a preset's cache of a
    /// tool this machine may not have).
    pub optional: bool,
    /// Where a policy file gave it (none for a flag), for errors found
    /// once every layer is in.
    #[serde(skip)]
    pub at: Option<Position>,
}

/// The private layers' directory in the user's cache home:
/// `$XDG_CACHE_HOME/cordon/caches`.
pub fn layers_root(xdg_cache_home: &Path) -> PathBuf {
    xdg_cache_home.join("cordon").join("caches")
}

/// Where a missing host directory's cache appears inside: in the
/// sandbox's private `/tmp`, so nothing is made on the host for it.
pub const STAND_IN_DIR: &str = "/tmp/cordon-caches";

/// The first 16 hex digits of the SHA-256 of `path`'s bytes.
fn short_hash(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let digest = Sha256::digest(path.as_os_str().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

impl Cache {
    /// Reads a flag's value: `PATH`, or `PATH=VAR` when what follows the
    /// last `=` is a variable name (a path that ends so is named in a
    /// policy file instead).
    pub fn parse_flag(raw: &str, ctx: &PathContext<'_>) -> Result<Cache, String> {
        let (path, env) = match raw.rsplit_once('=') {
            Some((path, var)) if super::inspection::check_var_name(var).is_ok() => {
                (path, Some(var.to_string()))
            }
            _ => (raw, None),
        };
        Cache::new(path, env, ctx)
    }

    /// A cache at `raw` (one directory: no glob, not `/`), with `env`.
    pub fn new(raw: &str, env: Option<String>, ctx: &PathContext<'_>) -> Result<Cache, String> {
        let path = match PathPattern::parse(raw, ctx).map_err(|e| e.to_string())? {
            PathPattern::Exact(path) => path,
            PathPattern::Glob { .. } => {
                return Err(format!("{raw:?}: a cache is one directory, not a glob"))
            }
        };
        if path.parent().is_none() {
            return Err(format!("{raw:?}: the root cannot be a cache"));
        }
        if let Some(var) = &env {
            super::inspection::check_var_name(var).map_err(|e| e.to_string())?;
        }
        Ok(Cache {
            path,
            env,
            optional: false,
            at: None,
        })
    }

    /// Whether the sandbox goes without it: optional, and missing on the
    /// host with no variable to point the tool at a stand-in.
    pub fn left_out(&self) -> bool {
        self.optional && self.env.is_none() && !self.path.exists()
    }

    /// Its private layer's directory, for the project `project`
    /// (canonical), under `root` ([`layers_root`]): one per project and
    /// cache path, so no project's sandbox writes what another's reads.
    pub fn layer_dir(&self, root: &Path, project: &Path) -> PathBuf {
        let real = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        root.join(short_hash(project))
            .join(format!("{}-{}", self.label(), short_hash(&real)))
    }

    /// Where the cache appears inside when the host directory is missing
    /// (see [`STAND_IN_DIR`]).
    pub fn stand_in(&self) -> PathBuf {
        Path::new(STAND_IN_DIR).join(format!("{}-{}", self.label(), &short_hash(&self.path)[..8]))
    }

    /// The directory's name, made of safe characters, for humans reading
    /// the layers' directory.
    fn label(&self) -> String {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        name.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(32)
            .collect()
    }
}

/// Host paths the sandbox replaces with its own: a cache there would not
/// be the host's.
const REPLACED: &[&str] = &["/tmp", "/proc", "/dev"];

/// Checks every cache against the policy in force once every layer is
/// in: none may be (or hold, or lie under) the project, a home, a writable
/// path, cordon's layers' directory or another cache, nor lie under a
/// denied path or a directory the sandbox replaces. An error names the
/// file, line and key of the entry (or its flag).
pub fn check(policy: &mut Policy) -> Result<(), LoadError> {
    let caches = std::mem::take(&mut policy.files.caches);
    let mut kept: Vec<Sourced<Cache>> = Vec::with_capacity(caches.len());
    for cache in caches {
        let Some(why) = problem(policy, &cache, &kept) else {
            kept.push(cache);
            continue;
        };
        // A preset's cache the policy cannot have (under a writable or
        // denied path, say) is left out: the tool keeps what it had.
        if cache.value.optional {
            continue;
        }
        let shown = cache.value.path.display();
        let message = format!("cache {shown}: {why}");
        return Err(match &cache.value.at {
            Some(at) => LoadError::Invalid {
                at: at.clone(),
                key: "files.cache".to_string(),
                message,
            },
            None => LoadError::Flag {
                flag: "--cache".to_string(),
                message,
            },
        });
    }
    policy.files.caches = kept;
    Ok(())
}

/// Whether `a` and `b` are the same path or one holds the other.
fn overlap(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// What is wrong with `cache`, given the caches before it.
fn problem(policy: &Policy, cache: &Sourced<Cache>, before: &[Sourced<Cache>]) -> Option<String> {
    let given = &cache.value.path;
    let real = std::fs::canonicalize(given).ok();
    let forms: Vec<&Path> = std::iter::once(given.as_path())
        .chain(real.as_deref())
        .collect();
    let any = |f: &dyn Fn(&Path) -> bool| forms.iter().any(|p| f(p));
    if any(&|p| p.parent().is_none()) {
        return Some("the root cannot be a cache".into());
    }
    if let Some(dir) = REPLACED.iter().find(|d| any(&|p| p.starts_with(d))) {
        return Some(format!(
            "{dir} is the sandbox's own; name a host directory elsewhere"
        ));
    }
    if let Some(home) = policy.homes.iter().find(|h| any(&|p| h.starts_with(p))) {
        return Some(format!(
            "is or holds the home directory {}; name the tool's own cache directory (e.g. ~/.npm)",
            home.display()
        ));
    }
    if any(&|p| overlap(p, &policy.project.value)) {
        return Some(
            "is, holds or lies in the project, which is writable already; name a directory outside it"
                .into(),
        );
    }
    if any(&|p| overlap(p, &policy.files.cache_layers)) {
        return Some(format!(
            "is, holds or lies in cordon's own private layers {}",
            policy.files.cache_layers.display()
        ));
    }
    for rule in &policy.files.allow_write {
        let holds = matches!(&rule.value, PathPattern::Exact(w) if any(&|p| w.starts_with(p)));
        if holds || any(&|p| rule.value.covers(p)) {
            return Some(format!(
                "overlaps the writable path {} (from {}): a path is either writable or a cache",
                rule.value, rule.source
            ));
        }
    }
    let reallowed = |p: &Path| policy.files.allow_read.iter().any(|r| r.value.covers(p));
    if let Some(rule) = policy
        .files
        .deny_read
        .iter()
        .find(|r| any(&|p| r.value.covers(p) && !reallowed(p)))
    {
        return Some(format!(
            "lies under the unreadable path {} (from {})",
            rule.value, rule.source
        ));
    }
    if let Some(other) = before
        .iter()
        .find(|o| o.value.path != *given && any(&|p| overlap(p, &o.value.path)))
    {
        return Some(format!(
            "overlaps the cache {} (from {}): name caches that do not hold one another",
            other.value.path.display(),
            other.source
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PathContext<'static> {
        PathContext {
            home: Path::new("/home/u"),
            base: Some(Path::new("/work")),
        }
    }

    #[test]
    fn a_flag_names_a_path_and_maybe_a_variable() {
        let c = Cache::parse_flag("~/.npm=npm_config_cache", &ctx()).unwrap();
        assert_eq!(c.path, Path::new("/home/u/.npm"));
        assert_eq!(c.env.as_deref(), Some("npm_config_cache"));
        let c = Cache::parse_flag("/a/b=c d", &ctx()).unwrap();
        assert_eq!((c.path.as_path(), c.env), (Path::new("/a/b=c d"), None));
        assert!(Cache::parse_flag("/", &ctx()).is_err());
        assert!(Cache::parse_flag("~/.cache/*", &ctx()).is_err());
    }

    #[test]
    fn a_file_gives_paths_tables_or_arrays_of_tables_each_with_its_line() {
        use crate::policy::load::{load, tests::Fx};
        let fx = Fx::new();
        fx.write_user(
            "[files]\ncache = [\"/var/cache/a\",\n  { path = \"/var/cache/b\", env = \"B_CACHE\" }]\n",
        );
        let policy = load(&fx.req(Vec::new())).unwrap();
        let got: Vec<(PathBuf, Option<String>, usize)> = policy
            .files
            .caches
            .iter()
            .map(|c| {
                let line = c.value.at.as_ref().map_or(0, |at| at.line);
                (c.value.path.clone(), c.value.env.clone(), line)
            })
            .collect();
        assert_eq!(
            got,
            [
                ("/var/cache/a".into(), None, 2),
                ("/var/cache/b".into(), Some("B_CACHE".into()), 3),
            ]
        );
        fx.write_user("[[files.cache]]\npath = \"/var/cache/c\"\nenv = \"C\"\n");
        let policy = load(&fx.req(Vec::new())).unwrap();
        let cache = &policy.files.caches[0].value;
        assert_eq!(
            (cache.path.as_path(), cache.env.as_deref()),
            (Path::new("/var/cache/c"), Some("C"))
        );
        fx.write_user("[[files.cache]]\npath = \"/var/cache/c\"\nsize = 3\n");
        let err = load(&fx.req(Vec::new())).unwrap_err().to_string();
        assert!(
            err.contains(":3:") && err.contains("files.cache[0].size"),
            "{err}"
        );
    }

    #[test]
    fn layers_are_per_project_and_per_path() {
        let c = Cache::parse_flag("/nonexistent/x/.npm", &ctx()).unwrap();
        let root = Path::new("/c");
        let a = c.layer_dir(root, Path::new("/p/a"));
        let b = c.layer_dir(root, Path::new("/p/b"));
        assert_ne!(a, b);
        assert!(a.starts_with(root), "{a:?}");
        assert!(a
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("_npm-"));
        let other = Cache::parse_flag("/nonexistent/y/.npm", &ctx()).unwrap();
        assert_ne!(other.layer_dir(root, Path::new("/p/a")), a);
        assert!(c.stand_in().starts_with(STAND_IN_DIR));
    }
}
