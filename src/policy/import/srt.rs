//! sandbox-runtime's settings file (`~/.srt-settings.json`, or the file
//! its `--settings` names): the same `network`, `filesystem` and
//! `credentials` keys as Claude Code's `sandbox` block, at the top level.
//! Relative paths are relative to the project (where it runs the command).
//! A file that came with a repository (in the project, or reached through
//! it) may only narrow: what it adds that widens is held, and the keys a
//! repository may not set are refused, as for Claude Code's.

use std::path::{Path, PathBuf};

use super::json::Doc;
use super::sandbox_block::{Anchors, Mapper, Meaning};
use super::Imported;
use crate::policy::load::LoadError;

/// The file sandbox-runtime reads when none is named.
pub fn default_file(home: &Path) -> PathBuf {
    home.join(".srt-settings.json")
}

/// The keys it requires (it refuses a file without them).
const REQUIRED: &[(&str, &[&str])] = &[
    ("network", &["allowedDomains", "deniedDomains"]),
    ("filesystem", &["denyRead", "allowWrite", "denyWrite"]),
];

/// Its own top-level keys, and what cordon does instead.
const OWN: &[Meaning] = &[
    ("ignoreViolations", "cordon reports every refusal"),
    (
        "enableWeakerNestedSandbox",
        "cordon does not weaken its sandbox",
    ),
    ("enableWeakerNetworkIsolation", "macOS only"),
    ("allowAppleEvents", "macOS only"),
    ("allowPty", "macOS only"),
    (
        "allowNestedUserNamespaces",
        "cordon refuses new user namespaces inside",
    ),
    (
        "mandatoryDenySearchDepth",
        "cordon protects the files that run code later at any depth",
    ),
    ("ripgrep", "a helper of sandbox-runtime's own"),
    ("seccomp", "a helper of sandbox-runtime's own"),
    (
        "bwrapPath",
        "a helper of sandbox-runtime's own; cordon needs none",
    ),
    (
        "socatPath",
        "a helper of sandbox-runtime's own; cordon needs none",
    ),
    ("javaAgentJarPath", "a helper of sandbox-runtime's own"),
    (
        "git",
        "cordon runs git inside unchanged; safe.directory is the user's own git setting",
    ),
    ("windows", "Windows only"),
];

/// Imports `file`, for a run in `project`.
pub fn import(file: &Path, home: &Path, project: &Path) -> Result<Imported, LoadError> {
    let (bytes, text) = super::read_settings(file)?;
    let doc = Doc::parse(file, &text)?;
    let Some(top) = &doc.root else {
        return Err(LoadError::Invalid {
            at: crate::policy::load::document::position(file, &text, 0),
            key: String::new(),
            message: "the file is empty; sandbox-runtime refuses to run with it".into(),
        });
    };
    let members = doc.members(top, "")?;
    for (section, keys) in REQUIRED {
        let found = members.iter().find(|(n, _, _)| n == section);
        let present = match found {
            Some((_, key, node)) => doc.members(node, key)?,
            None => Vec::new(),
        };
        for key in *keys {
            if !present.iter().any(|(n, _, _)| n == key) {
                let node = found.map_or(top, |(_, _, n)| *n);
                return Err(doc.invalid(
                    node,
                    &format!("{section}.{key}"),
                    "missing: sandbox-runtime requires it (an empty list will do)",
                ));
            }
        }
    }
    // A file that came with a repository may only narrow, as a Claude
    // Code project's may.
    let root = super::repository_root(file, home, project);
    let anchors = Anchors {
        home: home.to_path_buf(),
        relative_to: project.to_path_buf(),
        repo: root.is_some(),
    };
    let mut mapper = Mapper::default();
    mapper.imported.files.push((file.to_path_buf(), bytes));
    mapper.block(&doc, top, "", &anchors, OWN)?;
    if anchors.repo {
        mapper.imported.hold_widening_from(0);
    }
    mapper.finish()
}
