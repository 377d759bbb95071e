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
    /// `/`, no glob.
    pub writable: Vec<String>,
}

impl StateDir {
    /// Checks an entry: `dir` one directory (no glob, not `/`), each of
    /// `writable` one plain name.
    pub fn new(
        dir: &str,
        writable: Vec<String>,
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
            check_name(name)?;
        }
        Ok(StateDir {
            dir: dir_path,
            writable,
        })
    }

    /// Whether the name `name` (one component) in the directory is state.
    pub fn is_state(&self, name: &std::ffi::OsStr) -> bool {
        self.writable
            .iter()
            .any(|w| std::ffi::OsStr::new(w) == name)
    }
}

/// A state name: one component, not `.` or `..`, no glob character.
fn check_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("{name:?} in writable: {why}"));
    if name.is_empty() || name == "." || name == ".." {
        return bad("name one entry of the directory");
    }
    if name.contains('/') {
        return bad("one name, without /: a directory named here is writable whole");
    }
    if name.contains(['*', '?', '[', ']', '{', '}', '\\']) {
        return bad("a plain name, not a pattern");
    }
    Ok(())
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
