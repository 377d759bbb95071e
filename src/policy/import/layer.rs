//! `--from-claude` and `--from-srt`: another tool's settings as a layer of
//! the policy, each value from the file, line and key it came from
//! ([`Source::Imported`]).
//!
//! A value is applied through its key's own reader, as a flag's is (a
//! `[[credentials.inject]]` table through the policy file reader), so it
//! is checked as any other; an error names the settings file, line and
//! key. What a repository's settings add that widens the sandbox is
//! applied only once the user has approved that file (`cordon trust
//! FILE`, which records its hash, as for a project's cordon.toml); until
//! then it is left out and reported, with everything else the importer
//! did not apply ([`Policy::import_notes`]).

use std::path::{Path, PathBuf};

use super::{claude, srt, Entry, Imported, Value};
use crate::policy::keys::{self, shell_word};
use crate::policy::load::document::parse_policy;
use crate::policy::load::{apply as apply_values, LoadError};
use crate::policy::pattern::PathContext;
use crate::policy::{trust, Policy, Source};

/// The formats a layer can be imported from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Claude Code's settings files.
    Claude,
    /// sandbox-runtime's settings file.
    Srt,
}

impl Format {
    /// Its flag, for messages.
    pub fn flag(self) -> &'static str {
        match self {
            Format::Claude => "--from-claude",
            Format::Srt => "--from-srt",
        }
    }
}

/// One `--from-*` flag: the format, and the files it named (none: the
/// format's own files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// What to read.
    pub format: Format,
    /// The files, absolute, lowest precedence first.
    pub files: Vec<PathBuf>,
}

impl Request {
    /// Reads the files (the format's own when none was named).
    pub fn read(&self, home: &Path, project: &Path) -> Result<Imported, LoadError> {
        let none = |what: String| LoadError::Flag {
            flag: self.format.flag().to_string(),
            message: format!("{what}; name a file: {}=FILE", self.format.flag()),
        };
        match self.format {
            Format::Claude => {
                let files = if self.files.is_empty() {
                    claude::default_files(home, project)
                } else {
                    self.files.clone()
                };
                if files.is_empty() {
                    return Err(none(format!(
                        "none of ~/.claude/settings.json, .claude/settings.json and .claude/settings.local.json exists in {}",
                        project.display()
                    )));
                }
                claude::import(&files, home, project)
            }
            Format::Srt => {
                let file = match self.files.as_slice() {
                    [] => srt::default_file(home),
                    [one] => one.clone(),
                    _ => {
                        return Err(LoadError::Flag {
                            flag: self.format.flag().to_string(),
                            message: "sandbox-runtime reads one settings file: name one".into(),
                        })
                    }
                };
                if !file.exists() {
                    return Err(none(format!("{} does not exist", file.display())));
                }
                srt::import(&file, home, project)
            }
        }
    }
}

/// Applies `request` to `policy` as a layer (`config_dir` holds the trust
/// store).
pub fn apply(
    request: &Request,
    policy: &mut Policy,
    home: &Path,
    config_dir: &Path,
) -> Result<(), LoadError> {
    let project = policy.project.value.clone();
    let imported = request.read(home, &project)?;
    let ctx = PathContext {
        home,
        base: Some(&project),
    };
    for entry in &imported.entries {
        if entry.held && !approved(&imported, &entry.origin.at.file, config_dir)? {
            let file = &entry.origin.at.file;
            policy.import_notes.push(format!(
                "{}: not applied: a repository's settings, which arrive with its code, may only narrow the sandbox; read {}, then approve it with `cordon trust {}`",
                entry.origin,
                file.display(),
                shell_word(&file.to_string_lossy())
            ));
            continue;
        }
        apply_entry(entry, policy, &ctx)?;
    }
    policy
        .import_notes
        .extend(imported.notes.iter().map(|n| format!("{n} (not applied)")));
    Ok(())
}

/// Whether the user approved `file` as it was imported (the bytes the
/// importer read, not a second read another process could have changed).
fn approved(imported: &Imported, file: &Path, config_dir: &Path) -> Result<bool, LoadError> {
    let Some((_, bytes)) = imported.files.iter().find(|(f, _)| f == file) else {
        return Ok(false);
    };
    Ok(trust::is_trusted(config_dir, file, bytes)?)
}

/// Applies one value, from its origin.
fn apply_entry(entry: &Entry, policy: &mut Policy, ctx: &PathContext<'_>) -> Result<(), LoadError> {
    let source = Source::Imported {
        from: entry.origin.to_string(),
    };
    let at_origin = |message: String| LoadError::Invalid {
        at: entry.origin.at.clone(),
        key: entry.origin.key.clone(),
        message: format!("as {}: {message}", entry.key.dotted()),
    };
    match &entry.value {
        Value::Item(value) => {
            let key = keys::find(&entry.key.dotted())
                .ok_or_else(|| at_origin("no such key".to_string()))?;
            apply_values(policy, key, std::slice::from_ref(value), ctx, &source).map_err(at_origin)
        }
        Value::Table(table) => {
            let text = format!("[[{}]]\n{table}", entry.key.dotted());
            let fragment = parse_policy(&entry.origin.at.file, text.as_bytes(), ctx, &[])
                .map_err(|e| at_origin(e.to_string()))?;
            fragment.apply(policy, &source);
            Ok(())
        }
    }
}
