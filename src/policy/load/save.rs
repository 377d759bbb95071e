//! Writing to a file a policy is read from: an allow rule added to the
//! user config (`cordon run --ask`, "always"), with the rest of the file
//! as it was (comments, order, layout).

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::document::position;
use super::{read_optional, LoadError};
use crate::policy::host::parse_rule;

/// How a file is replaced whole: given the file, what it held (`None`: it
/// did not exist) and its new bytes (the runtime's is
/// `sys::replace::replace_file`, which this leaf module cannot name).
pub type ReplaceFile<'a> = &'a dyn Fn(&Path, Option<&[u8]>, &[u8]) -> std::io::Result<()>;

/// Adds `rule` to `[network] allow` of the policy file `file` (made, and
/// its directory, when missing; a link the user made is followed to the
/// file it names), written with `replace`; a rule there already is left
/// as it is.
pub fn add_allow(file: &Path, rule: &str, replace: ReplaceFile) -> Result<(), LoadError> {
    parse_rule(rule).map_err(|e| LoadError::Flag {
        flag: "--ask".into(),
        message: e.to_string(),
    })?;
    let linked;
    let file = match file.symlink_metadata() {
        Ok(meta) if meta.file_type().is_symlink() => {
            linked = std::fs::canonicalize(file).map_err(|source| LoadError::Write {
                path: file.to_path_buf(),
                source,
            })?;
            linked.as_path()
        }
        _ => file,
    };
    let was = read_optional(file)?;
    let text = match &was {
        Some(bytes) => String::from_utf8(bytes.clone()).map_err(|_| LoadError::Read {
            path: file.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"),
        })?,
        None => String::new(),
    };
    let invalid = |key: &str, message: &str| LoadError::Invalid {
        at: position(file, &text, 0),
        key: key.to_string(),
        message: message.to_string(),
    };
    let mut doc: DocumentMut =
        text.parse()
            .map_err(|e: toml_edit::TomlError| LoadError::Syntax {
                at: position(file, &text, e.span().map_or(0, |s| s.start)),
                message: e.message().to_string(),
            })?;
    let network = doc
        .entry("network")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| invalid("network", "must be a table"))?;
    let allow = network
        .entry("allow")
        .or_insert(Item::Value(Value::Array(Array::new())))
        .as_array_mut()
        .ok_or_else(|| invalid("network.allow", "must be an array"))?;
    if allow.iter().any(|v| v.as_str() == Some(rule)) {
        return Ok(());
    }
    allow.push(rule);
    if let Some(dir) = file.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| LoadError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
    }
    replace(file, was.as_deref(), doc.to_string().as_bytes()).map_err(|source| LoadError::Write {
        path: file.to_path_buf(),
        source,
    })
}

#[cfg(test)]
#[path = "save_tests.rs"]
mod tests;
