//! Reading a JSON settings file with the position of every value, for
//! errors and notes that name the file, line and key.

use std::path::{Path, PathBuf};

use jsonc_parser::ast::{ObjectPropName, Value as Node};
use jsonc_parser::common::Ranged;

use super::Origin;
use crate::policy::load::document::position;
use crate::policy::load::LoadError;

/// A file's text, parsed.
pub(crate) struct Doc<'t> {
    pub file: PathBuf,
    text: &'t str,
    /// The top-level value (`None` for a file with only whitespace).
    pub root: Option<Node<'t>>,
}

/// Strict JSON, as the tools that read these files take it: no comments,
/// no trailing commas, no JSON5.
pub(crate) fn strict() -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

impl<'t> Doc<'t> {
    /// Parses `text`, read from `file`.
    pub fn parse(file: &Path, text: &'t str) -> Result<Doc<'t>, LoadError> {
        let parsed =
            jsonc_parser::parse_to_ast(text, &jsonc_parser::CollectOptions::default(), &strict())
                .map_err(|e| LoadError::Syntax {
                at: position(file, text, e.range().start),
                message: format!("not valid JSON: {}", e.kind()),
            })?;
        Ok(Doc {
            file: file.to_path_buf(),
            text,
            root: parsed.value,
        })
    }

    /// Where `node`, at dotted key `key`, is.
    pub fn origin(&self, node: &impl Ranged, key: &str) -> Origin {
        Origin {
            at: position(&self.file, self.text, node.start()),
            key: key.to_string(),
        }
    }

    /// An error at `node`.
    pub fn invalid(&self, node: &impl Ranged, key: &str, message: impl Into<String>) -> LoadError {
        let origin = self.origin(node, key);
        LoadError::Invalid {
            at: origin.at,
            key: origin.key,
            message: message.into(),
        }
    }

    /// The members of the object `node` (at `key`), each with its name and
    /// dotted key; an error if it is not an object.
    pub fn members<'n>(
        &self,
        node: &'n Node<'t>,
        key: &str,
    ) -> Result<Vec<(String, String, &'n Node<'t>)>, LoadError> {
        let Node::Object(object) = node else {
            return Err(self.invalid(node, key, "must be an object"));
        };
        // The tools keep only the last of a name given twice; reading
        // both would import what they ignore.
        let mut seen = std::collections::HashSet::new();
        for prop in &object.properties {
            let name = prop_name(&prop.name);
            if !seen.insert(name) {
                let dotted = if key.is_empty() {
                    name.to_string()
                } else {
                    format!("{key}.{name}")
                };
                return Err(self.invalid(
                    &prop.name,
                    &dotted,
                    "given twice in this object: the tools read only the last; keep one",
                ));
            }
        }
        Ok(object
            .properties
            .iter()
            .map(|prop| {
                let name = prop_name(&prop.name).to_string();
                let dotted = if key.is_empty() {
                    name.clone()
                } else {
                    format!("{key}.{name}")
                };
                (name, dotted, &prop.value)
            })
            .collect())
    }

    /// The elements of the array `node` (at `key`), each with its dotted
    /// key; an error if it is not an array.
    pub fn elements<'n>(
        &self,
        node: &'n Node<'t>,
        key: &str,
    ) -> Result<Vec<(String, &'n Node<'t>)>, LoadError> {
        let Node::Array(array) = node else {
            return Err(self.invalid(node, key, "must be an array"));
        };
        Ok(array
            .elements
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{key}[{i}]"), v))
            .collect())
    }

    /// The string `node` (at `key`).
    pub fn string(&self, node: &Node<'t>, key: &str) -> Result<String, LoadError> {
        match node {
            Node::StringLit(s) => Ok(s.value.to_string()),
            _ => Err(self.invalid(node, key, "must be a string")),
        }
    }

    /// The strings of the array `node` (at `key`), each with its origin.
    pub fn strings(&self, node: &Node<'t>, key: &str) -> Result<Vec<(String, Origin)>, LoadError> {
        self.elements(node, key)?
            .into_iter()
            .map(|(k, v)| Ok((self.string(v, &k)?, self.origin(v, &k))))
            .collect()
    }

    /// The boolean `node` (at `key`).
    pub fn boolean(&self, node: &Node<'t>, key: &str) -> Result<bool, LoadError> {
        match node {
            Node::BooleanLit(b) => Ok(b.value),
            _ => Err(self.invalid(node, key, "must be true or false")),
        }
    }
}

/// A member's name, quoted or not.
fn prop_name<'a>(name: &'a ObjectPropName<'_>) -> &'a str {
    match name {
        ObjectPropName::String(s) => s.value.as_ref(),
        ObjectPropName::Word(w) => w.value,
    }
}
