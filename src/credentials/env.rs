//! Secret environment variables: which of the caller's variables the
//! command never sees.
//!
//! A variable is removed when its name matches a built-in secret pattern
//! ([`SECRET_PATTERNS`]) or a `deny_env` pattern, unless `keep_env` names
//! it. With `clear_env`, every variable is removed except those `keep_env`
//! names. Names are matched case-insensitively; values are never read.

use std::ffi::{OsStr, OsString};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Serialize;

use crate::policy::{EnvPolicy, Source};

/// Names that look like secrets, removed by default. Globs over the upper-
/// cased name: `*` matches any run of characters.
pub const SECRET_PATTERNS: &[&str] = &[
    "*_TOKEN",
    "*_TOKEN_*",
    "*SECRET*",
    "*_API_KEY",
    "*_APIKEY",
    "*API_KEY*",
    "*_ACCESS_KEY*",
    "*_PRIVATE_KEY*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_CREDENTIALS",
    "*_CREDENTIAL",
    "*_AUTH",
    "*_PAT",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GITLAB_TOKEN",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "NPM_TOKEN",
    "NODE_AUTH_TOKEN",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "CARGO_REGISTRY_TOKEN",
    "TWINE_PASSWORD",
    "DATABASE_URL",
    "SSH_AUTH_SOCK",
];

/// Why an environment pattern was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnvError {
    /// An empty pattern.
    #[error("empty variable name")]
    Empty,
    /// A pattern with characters no variable name has.
    #[error(
        "{0:?} is not a variable name or a glob of one (letters, digits, `_`, `.`, `-`, `*`, `?`)"
    )]
    BadName(String),
}

/// Checks a `deny_env` / `keep_env` entry: a name, or a glob of names.
pub fn check_pattern(raw: &str) -> Result<String, EnvError> {
    if raw.is_empty() {
        return Err(EnvError::Empty);
    }
    let valid = raw
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '*' | '?' | '.' | '-'));
    if !valid {
        return Err(EnvError::BadName(raw.to_string()));
    }
    Ok(raw.to_string())
}

fn glob_set<'a>(patterns: impl Iterator<Item = &'a str>) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        // Checked patterns contain no glob syntax that can fail.
        if let Ok(glob) = Glob::new(&p.to_ascii_uppercase()) {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

/// Why a variable is removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Removal {
    /// The variable's name (never its value).
    pub name: String,
    /// The pattern that matched, or `clear_env`.
    pub rule: String,
    /// Where that pattern comes from.
    pub source: Source,
}

/// Whether `name` (upper case) matches a built-in pattern. These use `*`
/// only at their ends, so a prefix, suffix or substring test is exact,
/// and costs nothing at start-up, where compiling them as globs took
/// about 0.3 ms of every run.
fn builtin_match(pattern: &str, name: &str) -> bool {
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(rest), Some(_)) => name.contains(rest.trim_end_matches('*')),
        (Some(suffix), None) => name.ends_with(suffix),
        (None, Some(prefix)) => name.starts_with(prefix),
        (None, None) => name == pattern,
    }
}

/// The compiled environment policy.
pub struct EnvFilter {
    denied: GlobSet,
    kept: GlobSet,
    policy: EnvPolicy,
}

impl EnvFilter {
    /// Compiles the policy's patterns.
    pub fn new(policy: &EnvPolicy) -> EnvFilter {
        EnvFilter {
            denied: glob_set(policy.deny.iter().map(|p| p.value.as_str())),
            kept: glob_set(policy.keep.iter().map(|p| p.value.as_str())),
            policy: policy.clone(),
        }
    }

    /// Why `name` is removed, or `None` if the command keeps it.
    pub fn removal(&self, name: &OsStr) -> Option<Removal> {
        let upper = name.to_string_lossy().to_ascii_uppercase();
        let shown = name.to_string_lossy().into_owned();
        if self.kept.is_match(&upper) {
            return None;
        }
        if self.policy.clear.value {
            return Some(Removal {
                name: shown,
                rule: "clear_env".into(),
                source: self.policy.clear.source.clone(),
            });
        }
        if let Some(&i) = self.denied.matches(&upper).first() {
            let rule = &self.policy.deny[i];
            return Some(Removal {
                name: shown,
                rule: rule.value.clone(),
                source: rule.source.clone(),
            });
        }
        let pattern = SECRET_PATTERNS.iter().find(|p| builtin_match(p, &upper))?;
        Some(Removal {
            name: shown,
            rule: pattern.to_string(),
            source: Source::Builtin,
        })
    }

    /// Splits `vars` into what the command keeps and what is removed.
    pub fn apply(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> (Vec<(OsString, OsString)>, Vec<Removal>) {
        let mut kept = Vec::new();
        let mut removed = Vec::new();
        for (name, value) in vars {
            match self.removal(&name) {
                Some(r) => removed.push(r),
                None => kept.push((name, value)),
            }
        }
        (kept, removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Sourced;

    fn filter(deny: &[&str], keep: &[&str], clear: bool) -> EnvFilter {
        let flag = |f: &str| Source::Flag(f.into());
        EnvFilter::new(&EnvPolicy {
            deny: deny
                .iter()
                .map(|d| Sourced::new(d.to_string(), flag("--deny-env")))
                .collect(),
            keep: keep
                .iter()
                .map(|k| Sourced::new(k.to_string(), flag("--keep-env")))
                .collect(),
            clear: Sourced::new(
                clear,
                if clear {
                    flag("--clear-env")
                } else {
                    Source::Builtin
                },
            ),
        })
    }

    fn removed(f: &EnvFilter, name: &str) -> Option<String> {
        f.removal(OsStr::new(name)).map(|r| r.rule)
    }

    #[test]
    fn secret_looking_names_are_removed_by_default() {
        let f = filter(&[], &[], false);
        for name in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "NPM_TOKEN",
            "MY_SERVICE_TOKEN",
            "DB_PASSWORD",
            "client_secret",
            "STRIPE_API_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SSH_AUTH_SOCK",
            "DATABASE_URL",
            "VAULT_TOKEN",
        ] {
            assert!(removed(&f, name).is_some(), "{name} kept");
        }
        for name in [
            "PATH",
            "HOME",
            "TERM",
            "LANG",
            "EDITOR",
            "TOKENIZERS_PARALLELISM",
            "KEYMAP",
        ] {
            assert_eq!(removed(&f, name), None, "{name} removed");
        }
    }

    #[test]
    fn deny_adds_keep_wins_and_clear_keeps_only_the_kept() {
        let f = filter(&["CORP_*"], &["GITHUB_TOKEN"], false);
        assert_eq!(removed(&f, "CORP_PROXY_URL").as_deref(), Some("CORP_*"));
        assert_eq!(removed(&f, "GITHUB_TOKEN"), None);
        assert_eq!(removed(&f, "NPM_TOKEN").as_deref(), Some("*_TOKEN"));

        let f = filter(&[], &["PATH", "LC_*"], true);
        assert_eq!(removed(&f, "PATH"), None);
        assert_eq!(removed(&f, "LC_ALL"), None);
        assert_eq!(removed(&f, "HOME").as_deref(), Some("clear_env"));
    }

    #[test]
    fn builtin_patterns_have_stars_only_at_their_ends() {
        for p in SECRET_PATTERNS {
            let inner = p.trim_start_matches('*').trim_end_matches('*');
            assert!(!inner.contains(['*', '?', '[']), "{p}");
            // The simple matcher agrees with a glob on a few names.
            let glob = Glob::new(p).unwrap().compile_matcher();
            for name in [
                "GITHUB_TOKEN",
                "MY_TOKEN_FILE",
                "A_SECRET_B",
                "PATH",
                "X_API_KEY",
                "AWS_ACCESS_KEY_ID",
            ] {
                assert_eq!(builtin_match(p, name), glob.is_match(name), "{p} {name}");
            }
        }
    }

    #[test]
    fn patterns_are_checked() {
        assert!(check_pattern("AWS_*").is_ok());
        assert_eq!(check_pattern(""), Err(EnvError::Empty));
        assert!(check_pattern("A=B").is_err());
        assert!(check_pattern("[abc]").is_err());
    }

    #[test]
    fn values_never_appear_in_a_removal() {
        let f = filter(&[], &[], false);
        let (kept, removed) = f.apply([
            (OsString::from("GITHUB_TOKEN"), OsString::from("ghp_canary")),
            (OsString::from("PATH"), OsString::from("/bin")),
        ]);
        assert_eq!(kept.len(), 1);
        assert!(!format!("{removed:?}").contains("canary"));
    }
}
