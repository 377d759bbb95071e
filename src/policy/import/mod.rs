//! Importers: the sandbox policies users already have (Claude Code's
//! settings, sandbox-runtime's settings file), read into cordon's own keys.
//!
//! An importer reads JSON with the position of every value ([`json`]),
//! maps what has a meaning in cordon onto the declared keys
//! ([`crate::policy::keys`]: each entry names the key it sets, never a
//! spelling of its own), and reports every key it did not map, with where
//! it was and why ([`Note`]): nothing is dropped silently. What it made
//! prints as a native policy file ([`Imported::to_toml`]) whose every line
//! names the file, line and key it came from.
//!
//! Errors are the policy loader's ([`LoadError`](super::load::LoadError)):
//! file, line and key, as for a policy file.
//!
//! One module per format: [`claude`] (the `sandbox` block and the
//! `permissions` rules of Claude Code's settings files), [`srt`]
//! (sandbox-runtime's settings file); [`sandbox_block`] maps the keys the
//! two share; [`layer`] applies an import as a layer of the policy
//! (`--from-claude`, `--from-srt`).

pub mod claude;
pub(crate) mod json;
pub mod layer;
mod sandbox_block;
pub mod srt;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::keys::About;
use super::load::{LoadError, Position};

/// Where an imported value was: the file, its line, and its dotted key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file, its line and column.
    pub at: Position,
    /// The dotted key in the file.
    pub key: String,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{} {}",
            self.at.file.display(),
            self.at.line,
            self.key
        )
    }
}

/// A value for one of cordon's keys.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An element of a list key (`files.deny_read`, `network.allow`).
    Item(String),
    /// A table of an array-of-tables key (`[[credentials.inject]]`).
    Table(toml::Table),
}

/// One value an importer made, for the key `key`.
#[derive(Clone)]
pub struct Entry {
    /// The cordon key it sets.
    pub key: &'static About,
    /// The value.
    pub value: Value,
    /// Where it came from.
    pub origin: Origin,
    /// It widens the sandbox and came with a repository: printed
    /// commented out, for the user to review.
    pub held: bool,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} = {:?} ({})",
            self.key.dotted(),
            self.value,
            self.origin
        )
    }
}

/// A key the importer read and did not map, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// Where it was.
    pub origin: Origin,
    /// Why it was not imported, or how cordon does the same.
    pub message: String,
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// What an importer made of its files.
#[derive(Clone, Debug, Default)]
pub struct Imported {
    /// The files read, in the order they were applied, each with the
    /// bytes read (an approval is checked against what was imported, not
    /// a second read).
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// The values, in the order they were read.
    pub entries: Vec<Entry>,
    /// What was not imported.
    pub notes: Vec<Note>,
}

impl Imported {
    /// Adds `value` for `key`, from `origin`.
    pub(crate) fn set(&mut self, key: &'static About, value: Value, origin: Origin) {
        self.entries.push(Entry {
            key,
            value,
            origin,
            held: false,
        });
    }

    /// Holds back the entries from `first` on that widen the sandbox: they
    /// came with a repository, whose files may only narrow it until the
    /// user has read them (as with a project's cordon.toml). The key
    /// declarations say which keys widen.
    pub(crate) fn hold_widening_from(&mut self, first: usize) {
        for entry in self.entries.iter_mut().skip(first) {
            entry.held = crate::policy::keys::find(&entry.key.dotted())
                .is_none_or(|k| k.widens() != crate::policy::keys::WidensKind::Never);
        }
    }

    /// Reports `origin` as not imported, saying why.
    pub(crate) fn note(&mut self, origin: Origin, message: impl Into<String>) {
        self.notes.push(Note {
            origin,
            message: message.into(),
        });
    }

    /// What a printed file does not apply: each note, and each value held
    /// back, commented out in the file.
    pub fn not_applied(&self) -> Vec<String> {
        let held = self.entries.iter().filter(|e| e.held).map(|e| {
            format!(
                "{}: from a repository's settings, which arrive with its code: it widens the sandbox, so it is printed commented out; uncomment it once you have read it",
                e.origin
            )
        });
        self.notes
            .iter()
            .map(ToString::to_string)
            .chain(held)
            .collect()
    }

    /// The entries as a cordon policy file: each list element and each
    /// table with a comment naming its origin, then every note as a
    /// comment. `command` names what made it, for the header.
    pub fn to_toml(&self, command: &str) -> String {
        let mut out = format!("# Made by `{command}` from:\n");
        // Nothing read from the files goes into a comment unescaped: a
        // line break in a key or a path would end the comment, and what
        // follows it would be policy.
        for (file, _) in &self.files {
            let _ = writeln!(out, "#   {}", comment(&file.display().to_string()));
        }
        out.push_str("# Each value names the file, line and key it came from.\n");
        // Lists, by section then key, in the order first met.
        let mut lists: BTreeMap<(&str, usize), (&About, Vec<&Entry>)> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        for entry in &self.entries {
            if let Value::Item(_) = entry.value {
                let first = order.iter().position(|n| *n == entry.key.name);
                let index = first.unwrap_or_else(|| {
                    order.push(entry.key.name);
                    order.len() - 1
                });
                lists
                    .entry((entry.key.section, index))
                    .or_insert_with(|| (entry.key, Vec::new()))
                    .1
                    .push(entry);
            }
        }
        let mut section = "";
        for ((_, _), (key, entries)) in &lists {
            if key.section != section {
                section = key.section;
                let _ = write!(out, "\n[{section}]\n");
            }
            let _ = writeln!(out, "{} = [", key.name);
            for entry in entries {
                if let Value::Item(item) = &entry.value {
                    let held = if entry.held { "# " } else { "" };
                    let origin = comment(&entry.origin.to_string());
                    let _ = writeln!(out, "  {held}{},  # {origin}", ascii_string(item));
                }
            }
            out.push_str("]\n");
        }
        for entry in &self.entries {
            if let Value::Table(table) = &entry.value {
                let mut text = format!("[[{}]]\n{table}", entry.key.dotted());
                if entry.held {
                    text = text.lines().map(|l| format!("# {l}\n")).collect();
                }
                let _ = write!(out, "\n# {}\n{text}", comment(&entry.origin.to_string()));
            }
        }
        let not_applied = self.not_applied();
        if !not_applied.is_empty() {
            out.push_str("\n# Not imported:\n");
            for note in not_applied {
                let _ = writeln!(out, "#   {}", comment(&note));
            }
        }
        out
    }
}

/// A settings file's bytes and text: a regular file of bounded size
/// ([`super::load::read_policy_file`]), in UTF-8.
pub(crate) fn read_settings(file: &Path) -> Result<(Vec<u8>, String), LoadError> {
    let bytes = super::load::read_policy_file(file)?;
    let text = String::from_utf8(bytes.clone()).map_err(|e| LoadError::Invalid {
        at: super::load::document::position(file, "", 0),
        key: String::new(),
        message: format!("not UTF-8 at byte {}", e.utf8_error().valid_up_to()),
    })?;
    Ok((bytes, text))
}

/// The root of the repository a settings file came with, if it came with
/// one: a file spelled, or really, inside the project, or in a `.claude`
/// directory other than the user's own. Both the path as given and the
/// path it resolves to count, so that neither a link from the project to
/// a file elsewhere nor a link into the project passes for the user's.
pub(crate) fn repository_root(file: &Path, home: &Path, project: &Path) -> Option<PathBuf> {
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let user_dir = real(&home.join(".claude"));
    let project_real = real(project);
    let resolved = real(file);
    for path in [file, resolved.as_path()] {
        if path.starts_with(project) || path.starts_with(&project_real) {
            return Some(project.to_path_buf());
        }
    }
    for path in [file, resolved.as_path()] {
        let dir = path.parent()?;
        if dir.file_name() == Some(".claude".as_ref()) && real(dir) != user_dir {
            return dir.parent().map(Path::to_path_buf);
        }
    }
    None
}

/// Characters that reorder how a line is drawn (bidirectional
/// embeddings, overrides, isolates and marks): a line holding one can show
/// other than what it says.
const REORDERING: &[char] = &[
    '\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}',
    '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
];

/// Whether `text` holds a character that a policy file cannot show as it
/// is: a control character (a line break among them) or one that reorders
/// the line.
pub(crate) fn unshowable(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() || REORDERING.contains(&c))
}

/// `text` as a comment of the printed file shows it: every character
/// [`unshowable`] names escaped, so that a line break read from a file
/// (in a key, a rule, a directory's name) cannot end the comment and make
/// what follows it policy.
fn comment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || REORDERING.contains(&c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as a TOML basic string of printable ASCII only: every other
/// character is written as its `\u` escape, so that nothing a name read
/// from a settings file holds (a zero-width space, a letter that looks like
/// another, a control) hides in the printed policy, which still reads back
/// as the same string.
fn ascii_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            _ if u32::from(c) <= 0xFFFF => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            _ => {
                let _ = write!(out, "\\U{:08X}", u32::from(c));
            }
        }
    }
    out.push('"');
    out
}

/// A path as the policy file writes it: `~/rest` below `home`, else
/// absolute.
fn policy_path(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
