//! An agent's state directory (`[[files.state]]`): writable only in the
//! names its entry lists, everything else in it read-only, and any other
//! new name in it refused.
//!
//! An agent keeps two kinds of things in its directory: state it writes
//! all day (transcripts, to-do lists, history, caches) and parts that act
//! in its later sessions, on the host too (settings with hooks, the scripts
//! those name, custom commands, plugins, instructions). A list of the
//! latter can never be complete (settings name scripts anywhere, and each
//! release adds parts), so the entry lists the state instead: what it does
//! not name cannot be written, and cannot be made.

use std::path::PathBuf;

use serde::Serialize;

use super::pattern::{PathContext, PathPattern};

/// One `[[files.state]]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateDir {
    /// The directory, absolute (as given, `~` expanded).
    pub dir: PathBuf,
    /// The names in it the sandbox may write and make: each one name, no
    /// `/`; a `*` stands for part of one (a temporary file the agent
    /// writes and renames over a state file: `projects.json.*.tmp`).
    pub writable: Vec<String>,
    /// Paths below those names, relative to the directory and globs
    /// allowed (`projects/*/memory`), that stay read-only and cannot be
    /// made (what the agent reads as instructions in later sessions).
    pub protect: Vec<String>,
    /// Names in it the sandbox sees as empty directories of its own, whose
    /// contents go with the run (scripts the agent writes for itself and
    /// sources, which a later session on the host would source too).
    pub scratch: Vec<String>,
}

impl StateDir {
    /// Checks an entry: `dir` one directory (no glob, not `/`), each of
    /// `writable` one plain name.
    pub fn new(
        dir: &str,
        writable: Vec<String>,
        protect: Vec<String>,
        scratch: Vec<String>,
        ctx: &PathContext<'_>,
    ) -> Result<StateDir, String> {
        let dir_path = match PathPattern::parse(dir, ctx).map_err(|e| e.to_string())? {
            PathPattern::Exact(path) => path,
            PathPattern::Glob { .. } => {
                return Err(format!(
                    "{dir:?}: a state directory is one directory, not a glob"
                ))
            }
        };
        if dir_path.parent().is_none() {
            return Err(format!("{dir:?}: the root cannot be a state directory"));
        }
        for name in &writable {
            check_name(name, true)?;
        }
        for name in &scratch {
            check_name(name, false)?;
        }
        for pattern in &protect {
            let parts: Vec<&str> = pattern.split('/').collect();
            // Each name its own glob (`**` would stand for any depth,
            // which the start-up walk does not follow).
            let plain = parts
                .iter()
                .all(|p| !p.is_empty() && *p != "." && *p != ".." && !p.contains("**"));
            if !plain || globset::Glob::new(pattern).is_err() {
                return Err(format!(
                    "{pattern:?} in protect: a path below the directory (globs allowed in each name, not **), without . or .."
                ));
            }
        }
        Ok(StateDir {
            dir: dir_path,
            writable,
            protect,
            scratch,
        })
    }

    /// Whether the name `name` (one component) in the directory is state
    /// (kept or scratch).
    pub fn is_state(&self, name: &std::ffi::OsStr) -> bool {
        self.names().any(|w| name_matches(w, name))
    }

    /// Every name the sandbox may write in the directory: kept, then
    /// scratch.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.writable.iter().chain(&self.scratch)
    }
}

/// One `[[files.state_file]]` entry: an agent's config file, kept outside
/// its state directory (Claude Code's `~/.claude.json`), which the agent
/// replaces by writing a temporary file beside it and renaming that over
/// it. The sandbox may replace it so when the JSON values at `unchanged`
/// are as they were (the MCP servers it starts, the folders it trusts).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StateFile {
    /// The file, absolute (as given, `~` expanded).
    pub path: PathBuf,
    /// JSON paths, dotted, `*` standing for every key at its level
    /// (`projects.*.mcpServers`), whose values may not change. A value
    /// that is absent, `null`, `false` or empty (`{}`, `[]`, `""`) counts
    /// as none (an agent writing a new entry's defaults changes nothing),
    /// unless the path ends in `!`: `false` is then a value
    /// (`autoUpdates!`, whose absence means on).
    pub unchanged: Vec<String>,
}

impl StateFile {
    /// Checks an entry: `path` one file (no glob, not `/`), each of
    /// `unchanged` a dotted path of names or `*`.
    pub fn new(
        path: &str,
        unchanged: Vec<String>,
        ctx: &PathContext<'_>,
    ) -> Result<StateFile, String> {
        let file = match PathPattern::parse(path, ctx).map_err(|e| e.to_string())? {
            PathPattern::Exact(file) if file.parent().is_some() => file,
            _ => return Err(format!("{path:?}: a state file is one file, not a glob")),
        };
        for key in &unchanged {
            if key.trim_end_matches('!').split('.').any(str::is_empty) {
                return Err(format!(
                    "{key:?} in unchanged: a dotted path of names, `*` for any (projects.*.mcpServers)"
                ));
            }
        }
        if unchanged.is_empty() {
            return Err("unchanged: name what may not change (the MCP servers, at least)".into());
        }
        Ok(StateFile {
            path: file,
            unchanged,
        })
    }
}

impl StateFile {
    /// The paths of `unchanged` (each key a `*` stood for spelled out)
    /// whose values differ between `old` and `new`. A value that is
    /// absent, `null`, `false`, empty (`{}`, `[]`, `""`) counts as none,
    /// so an agent's adding an empty entry is no change.
    pub fn changes(&self, old: &serde_json::Value, new: &serde_json::Value) -> Vec<String> {
        let mut changed = Vec::new();
        for path in &self.unchanged {
            let (path, strict) = match path.strip_suffix('!') {
                Some(p) => (p, true),
                None => (path.as_str(), false),
            };
            let steps: Vec<&str> = path.split('.').collect();
            compare(
                Some(old),
                Some(new),
                &steps,
                String::new(),
                strict,
                &mut changed,
            );
        }
        changed
    }
}

/// Adds to `changed` each path below `at` (along `steps`) where `old` and
/// `new` differ.
fn compare(
    old: Option<&serde_json::Value>,
    new: Option<&serde_json::Value>,
    steps: &[&str],
    at: String,
    strict: bool,
    changed: &mut Vec<String>,
) {
    let Some((step, rest)) = steps.split_first() else {
        if !same(old, new, !strict) {
            changed.push(at);
        }
        return;
    };
    let below = |name: &str| {
        if at.is_empty() {
            name.to_string()
        } else {
            format!("{at}.{name}")
        }
    };
    if *step != "*" {
        let (o, n) = (
            old.and_then(|v| v.get(*step)),
            new.and_then(|v| v.get(*step)),
        );
        return compare(o, n, rest, below(step), strict, changed);
    }
    let keys = |v: Option<&serde_json::Value>| {
        v.and_then(serde_json::Value::as_object)
            .map(|o| o.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let mut names = keys(old);
    names.extend(keys(new));
    names.sort();
    names.dedup();
    for name in names {
        let (o, n) = (
            old.and_then(|v| v.get(&name)),
            new.and_then(|v| v.get(&name)),
        );
        let shown = serde_json::Value::from(name.as_str()).to_string();
        compare(o, n, rest, below(&shown), strict, changed);
    }
}

/// Whether two values are the same, every kind of nothing alike (`false`
/// one of them when `false_is_none`).
fn same(a: Option<&serde_json::Value>, b: Option<&serde_json::Value>, false_is_none: bool) -> bool {
    let none = |v: Option<&serde_json::Value>| match v {
        None | Some(serde_json::Value::Null) => true,
        Some(serde_json::Value::Bool(false)) => false_is_none,
        Some(serde_json::Value::Object(o)) => o.is_empty(),
        Some(serde_json::Value::Array(a)) => a.is_empty(),
        Some(serde_json::Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    (none(a) && none(b)) || a == b
}

/// A state name: one component, not `.` or `..`, no glob character.
fn check_name(name: &str, may_be_pattern: bool) -> Result<(), String> {
    let bad = |why: &str| Err(format!("{name:?} in writable or scratch: {why}"));
    if name.is_empty() || name == "." || name == ".." {
        return bad("name one entry of the directory");
    }
    if name.contains('/') {
        return bad("one name, without /: a directory named here is writable whole");
    }
    if name.contains(['?', '[', ']', '{', '}', '\\']) {
        return bad("a plain name, or one with * (a temporary file's: \"projects.json.*.tmp\")");
    }
    if name.contains('*') && !may_be_pattern {
        return bad("a scratch directory is a plain name, not a pattern");
    }
    if name.contains('*')
        && name
            .split('*')
            .next()
            .is_none_or(|start| start.chars().count() < 4)
    {
        return bad("a * stands for the end of a name that starts with at least four characters of its own (a temporary file's: \"projects.json.*.tmp\"), never for most names");
    }
    Ok(())
}

/// Whether the name `name` (one component) is one a state entry's
/// `pattern` names: that name, or with `*` standing for any run of
/// characters.
pub fn name_matches(pattern: &str, name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
