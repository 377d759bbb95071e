//! Claude Code's settings files: the `sandbox` block and the `permissions`
//! rules that mean something for a sandbox (`Read(...)`, `Edit(...)`,
//! `WebFetch(domain:...)`).
//!
//! The files are read in Claude Code's order of precedence, lowest first:
//! the user's `~/.claude/settings.json`, then the project's
//! `.claude/settings.json` and `.claude/settings.local.json`; lists from
//! all of them add up, as Claude Code merges them. A project's files
//! arrive with its repository: the keys Claude Code ignores there (so that
//! a checked-out repository cannot widen the sandbox) are refused.
//!
//! Paths follow Claude Code's anchors. In the `sandbox` block: `/abs`,
//! `~/rel`, and `./rel` or a bare `rel` relative to the project (project
//! files) or to `~/.claude` (the user's). In `Read(...)` and `Edit(...)`
//! rules: `//abs`, `~/rel`, `/rel` relative to the settings' own root (the
//! project, or the home for the user's file), and `rel` or `./rel`
//! relative to the project; a rule without a `/` matches at any depth, as
//! in a gitignore file.

use std::path::{Component, Path, PathBuf};

use super::json::Doc;
use super::sandbox_block::{anchored, Anchors, Mapper, Meaning};
use super::{Imported, Origin, Value};
use crate::policy::keys::{ALLOW_WRITE, DENY_READ, DENY_WRITE, NET_ALLOW, NET_DENY};
use crate::policy::load::LoadError;

/// The `sandbox` keys of Claude Code's own, and what cordon does instead.
const OWN: &[Meaning] = &[
    ("enabled", "cordon sandboxes everything it runs, the whole agent included"),
    ("failIfUnavailable", "cordon always refuses to run when a layer of the sandbox cannot be applied"),
    ("autoAllowBashIfSandboxed", "Claude Code's prompts for its Bash tool: under cordon the whole agent is inside the sandbox"),
    ("excludedCommands", "under cordon nothing leaves the sandbox: these commands run inside it too"),
    ("allowUnsandboxedCommands", "under cordon nothing leaves the sandbox, whatever the model asks"),
    ("enableWeakerNestedSandbox", "cordon does not weaken its sandbox"),
    ("enableWeakerNetworkIsolation", "macOS only"),
    ("allowAppleEvents", "macOS only"),
    ("allowNestedUserNamespaces", "cordon refuses new user namespaces inside"),
    ("ignoreViolations", "cordon reports every refusal"),
    ("ripgrep", "a helper of Claude Code's own sandbox"),
    ("bwrapPath", "a helper of Claude Code's own sandbox; cordon needs none"),
    ("socatPath", "a helper of Claude Code's own sandbox; cordon needs none"),
    ("enabledPlatforms", "cordon runs on Linux"),
];

/// Where a settings file sits, which decides its anchors and whether it
/// came with a repository ([`super::repository_root`]); the user's own
/// file is `~/.claude/settings.json` itself, reached as such; a file
/// outside both is one the user names as theirs (as `claude --settings
/// FILE`).
fn anchors_for(file: &Path, home: &Path, project: &Path) -> (Anchors, PathBuf) {
    if let Some(root) = super::repository_root(file, home, project) {
        let anchors = Anchors {
            home: home.to_path_buf(),
            relative_to: root.clone(),
            repo: true,
        };
        return (anchors, root);
    }
    let user_dir = home.join(".claude");
    if file.parent() == Some(user_dir.as_path()) {
        // The user's settings: bare paths from ~/.claude, rules' `/` from ~.
        let anchors = Anchors {
            home: home.to_path_buf(),
            relative_to: user_dir,
            repo: false,
        };
        return (anchors, home.to_path_buf());
    }
    let anchors = Anchors {
        home: home.to_path_buf(),
        relative_to: project.to_path_buf(),
        repo: false,
    };
    (anchors, project.to_path_buf())
}

/// The settings files Claude Code reads for `project` that exist, lowest
/// precedence first.
pub fn default_files(home: &Path, project: &Path) -> Vec<PathBuf> {
    [
        home.join(".claude/settings.json"),
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
    ]
    .into_iter()
    // One that exists in any form is read, so that one which cannot be
    // (a directory, a dangling link, a home it cannot search) is an error
    // rather than left out.
    .filter(|f| !matches!(std::fs::symlink_metadata(f), Err(e) if e.kind() == std::io::ErrorKind::NotFound))
    .collect()
}

/// Imports `files` (in order of precedence, lowest first), for a run in
/// `project`.
pub fn import(files: &[PathBuf], home: &Path, project: &Path) -> Result<Imported, LoadError> {
    let mut mapper = Mapper::default();
    for file in files {
        let (bytes, text) = super::read_settings(file)?;
        let doc = Doc::parse(file, &text)?;
        let (anchors, root) = anchors_for(file, home, project);
        mapper.imported.files.push((file.clone(), bytes));
        let first = mapper.imported.entries.len();
        let Some(top) = &doc.root else { continue };
        let mut others = Vec::new();
        for (name, key, value) in doc.members(top, "")? {
            match name.as_str() {
                "sandbox" => mapper.block(&doc, value, &key, &anchors, OWN)?,
                "permissions" => {
                    let rules = Rules {
                        anchors: &anchors,
                        root: &root,
                        project,
                    };
                    rules.read(&doc, value, &key, &mut mapper)?;
                }
                _ => others.push((name, doc.origin(value, &key))),
            }
        }
        if anchors.repo {
            mapper.imported.hold_widening_from(first);
        }
        if let Some((_, first)) = others.first() {
            let names: Vec<&str> = others.iter().map(|(n, _)| n.as_str()).collect();
            let origin = Origin {
                at: first.at.clone(),
                key: names.join(", "),
            };
            mapper.imported.note(
                origin,
                "Claude Code's own settings, not a sandbox policy: not read",
            );
        }
    }
    mapper.finish()
}

/// How one file's `permissions` rules read.
struct Rules<'a> {
    anchors: &'a Anchors,
    /// What a rule's leading `/` is relative to.
    root: &'a Path,
    /// What a rule's bare path is relative to.
    project: &'a Path,
}

impl Rules<'_> {
    fn read(
        &self,
        doc: &Doc<'_>,
        node: &jsonc_parser::ast::Value<'_>,
        prefix: &str,
        mapper: &mut Mapper,
    ) -> Result<(), LoadError> {
        for (name, key, value) in doc.members(node, prefix)? {
            match name.as_str() {
                "allow" | "deny" => {
                    let mut skipped: Vec<String> = Vec::new();
                    let mut first: Option<Origin> = None;
                    for (rule, origin) in doc.strings(value, &key)? {
                        if !self.rule(&rule, name == "deny", origin.clone(), mapper)? {
                            first.get_or_insert(origin);
                            skipped.push(rule);
                        }
                    }
                    if let Some(origin) = first {
                        mapper.imported.note(
                            origin,
                            format!(
                                "{} rule(s) for Claude Code's own tools, which mean nothing to a sandbox (under cordon they run inside it): {}",
                                skipped.len(),
                                skipped.join(", ")
                            ),
                        );
                    }
                }
                "ask" => mapper.imported.note(
                    doc.origin(value, &key),
                    "Claude Code's prompts, not a sandbox rule: not imported",
                ),
                // The directories Claude Code's file tools may edit beyond
                // the project: under cordon those tools run inside, so the
                // sandbox lets them write there (from a repository's
                // settings this widens, and is held like any widening).
                "additionalDirectories" => {
                    for (dir, origin) in doc.strings(value, &key)? {
                        let path = self.directory(&dir, &origin)?;
                        mapper
                            .imported
                            .set(&ALLOW_WRITE.about, Value::Item(path), origin);
                    }
                }
                _ => mapper.imported.note(
                    doc.origin(value, &key),
                    "Claude Code's permission modes, not a sandbox rule: not imported",
                ),
            }
        }
        Ok(())
    }

    /// One rule: imported (`true`) if it is one a sandbox can hold.
    fn rule(
        &self,
        rule: &str,
        deny: bool,
        origin: Origin,
        mapper: &mut Mapper,
    ) -> Result<bool, LoadError> {
        let Some((tool, spec)) = rule.strip_suffix(')').and_then(|r| r.split_once('(')) else {
            return Ok(false);
        };
        match (tool, deny) {
            ("WebFetch", _) => {
                let Some(domain) = spec.strip_prefix("domain:") else {
                    return Ok(false);
                };
                let to = if deny {
                    &NET_DENY.about
                } else {
                    &NET_ALLOW.about
                };
                mapper.domain(domain, origin, to)?;
                Ok(true)
            }
            ("Edit", false) => {
                // Writable areas are directories, not patterns (Claude Code
                // drops a trailing `/**` the same way).
                let dir = spec.strip_suffix("/**").unwrap_or(spec);
                if dir.contains(['*', '?', '[', '{']) {
                    return Ok(false);
                }
                let path = self.path(dir, &origin)?;
                mapper
                    .imported
                    .set(&ALLOW_WRITE.about, Value::Item(path), origin);
                Ok(true)
            }
            ("Read", true) | ("Edit", true) => {
                let path = self.path(spec, &origin)?;
                let to = if tool == "Read" {
                    &DENY_READ.about
                } else {
                    &DENY_WRITE.about
                };
                mapper.imported.set(to, Value::Item(path), origin);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// A directory of `additionalDirectories` as a policy path: absolute,
    /// from the home (`~/`), or relative to the project.
    fn directory(&self, dir: &str, origin: &Origin) -> Result<String, LoadError> {
        let dir = dir.strip_suffix("/**").unwrap_or(dir);
        if dir.is_empty() || dir.contains(['*', '?', '[', '{']) {
            return Err(LoadError::Invalid {
                at: origin.at.clone(),
                key: origin.key.clone(),
                message: format!("{dir:?}: a directory is a path, not a pattern"),
            });
        }
        // `..` is resolved by name, as Claude Code resolves it (its own
        // example is `../docs/`); policy paths hold none.
        let (mut path, rest) = if let Some(rest) = dir.strip_prefix("~/") {
            (self.anchors.home.clone(), rest)
        } else if dir == "~" {
            (self.anchors.home.clone(), "")
        } else if dir.starts_with('/') {
            (PathBuf::from("/"), dir)
        } else {
            (self.project.to_path_buf(), dir)
        };
        for part in Path::new(rest).components() {
            match part {
                Component::ParentDir => {
                    path.pop();
                }
                Component::Normal(name) => path.push(name),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        let text = path.to_str().ok_or_else(|| LoadError::Invalid {
            at: origin.at.clone(),
            key: origin.key.clone(),
            message: format!("{dir:?}: a name that is not UTF-8 in the path"),
        })?;
        anchored(text, self.anchors, origin)
    }

    /// A `Read(...)` or `Edit(...)` specifier as a policy path.
    fn path(&self, spec: &str, origin: &Origin) -> Result<String, LoadError> {
        if spec.is_empty() {
            return Err(LoadError::Invalid {
                at: origin.at.clone(),
                key: origin.key.clone(),
                message: "an empty path".into(),
            });
        }
        if spec == "~" || spec == "~/" {
            return anchored("~", self.anchors, origin);
        }
        if spec.starts_with('~') && !spec.starts_with("~/") {
            return Err(LoadError::Invalid {
                at: origin.at.clone(),
                key: origin.key.clone(),
                message: format!("{spec:?}: another user's home is not supported; write it from /"),
            });
        }
        // The directory a relative rule is from, and the rule as a policy
        // path relative to it: the directory's own name stays literal.
        let (base, raw) = if let Some(abs) = spec.strip_prefix("//") {
            (self.project, format!("/{abs}"))
        } else if spec.starts_with("~/") {
            (self.project, spec.to_string())
        } else if let Some(rel) = spec.strip_prefix('/') {
            (self.root, rel.to_string())
        } else if let Some(rel) = spec.strip_prefix("./") {
            (self.project, rel.to_string())
        } else if spec.trim_end_matches('/').contains('/') {
            (self.project, spec.to_string())
        } else {
            // gitignore: a bare name with no `/` inside matches at any depth.
            (self.project, format!("**/{spec}"))
        };
        let anchors = Anchors {
            home: self.anchors.home.clone(),
            relative_to: base.to_path_buf(),
            repo: self.anchors.repo,
        };
        // `/` alone (the settings' root) is the directory itself.
        let raw = if raw.is_empty() { ".".to_string() } else { raw };
        anchored(&raw, &anchors, origin)
    }
}

#[cfg(test)]
#[path = "claude_tests.rs"]
mod tests;
