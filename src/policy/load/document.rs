//! Reading a policy file: TOML (through `toml_edit`, which keeps the byte
//! span of every key and value) into one [`Fragment`], each key read by its
//! declaration in [`keys`]. Errors name the file, line, column and dotted key.

use std::ops::Range;
use std::path::Path;

use toml_edit::{ImDocument, Item, Table, Value};

use super::layer::{Fragment, Setting};
use super::{LoadError, Position};
use crate::policy::keys::{self, SECTIONS};
use crate::policy::pattern::PathContext;

/// A byte range in the file, when the parser knows one.
pub type Span = Option<Range<usize>>;

/// The file being read, for errors.
pub struct Doc<'a> {
    /// Its path.
    pub file: &'a Path,
    /// Its text.
    pub text: &'a str,
}

impl Doc<'_> {
    /// An error at `span` about `key`.
    pub fn invalid(&self, span: &Span, key: &str, message: impl Into<String>) -> LoadError {
        LoadError::Invalid {
            at: position(self.file, self.text, span.as_ref().map_or(0, |s| s.start)),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// The line and column of byte `offset` in `text`.
pub fn position(file: &Path, text: &str, offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position {
        file: file.to_path_buf(),
        line,
        column: before[line_start..].chars().count() + 1,
    }
}

/// A TOML value or table, whichever form the file wrote it in.
#[derive(Clone, Copy)]
enum Tree<'a> {
    Item(&'a Item),
    Value(&'a Value),
    Table(&'a Table),
}

/// A TOML value and where it is (its own span, else its key's).
#[derive(Clone)]
pub struct Node<'a> {
    tree: Tree<'a>,
    span: Span,
}

/// A table key and where it is.
pub struct Name<'a> {
    /// The key.
    pub name: &'a str,
    /// Where it is.
    pub span: Span,
}

/// A scalar TOML value, as a key's reader sees it.
pub enum Scalar<'a> {
    /// A string.
    String(&'a str),
    /// An integer.
    Integer(i64),
    /// A boolean.
    Boolean(bool),
    /// Anything else (its kind, e.g. "a float").
    Other(&'static str),
}

impl Scalar<'_> {
    /// "a string", "an integer", ...: for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Scalar::String(_) => "a string",
            Scalar::Integer(_) => "an integer",
            Scalar::Boolean(_) => "a boolean",
            Scalar::Other(kind) => kind,
        }
    }
}

impl<'a> Node<'a> {
    /// Where it is.
    pub fn span(&self) -> &Span {
        &self.span
    }

    fn value(&self) -> Option<&'a Value> {
        match self.tree {
            Tree::Item(Item::Value(v)) | Tree::Value(v) => Some(v),
            _ => None,
        }
    }

    /// "a string", "an integer", ...: for error messages.
    pub fn kind(&self) -> &'static str {
        match (self.tree, self.value()) {
            (_, Some(v)) => match v {
                Value::String(_) => "a string",
                Value::Integer(_) => "an integer",
                Value::Float(_) => "a float",
                Value::Boolean(_) => "a boolean",
                Value::Datetime(_) => "a datetime",
                Value::Array(_) => "an array",
                Value::InlineTable(_) => "a table",
            },
            (Tree::Item(Item::ArrayOfTables(_)), _) => "an array",
            (Tree::Item(Item::None), _) => "nothing",
            _ => "a table",
        }
    }

    /// The value as a scalar.
    pub fn scalar(&self) -> Scalar<'a> {
        match self.value() {
            Some(Value::String(s)) => Scalar::String(s.value()),
            Some(Value::Integer(n)) => Scalar::Integer(*n.value()),
            Some(Value::Boolean(b)) => Scalar::Boolean(*b.value()),
            _ => Scalar::Other(self.kind()),
        }
    }

    /// A table's entries, in the file's order; `None` for other values.
    pub fn entries(&self) -> Option<Vec<(Name<'a>, Node<'a>)>> {
        let table = match self.tree {
            Tree::Item(Item::Table(t)) | Tree::Table(t) => t,
            Tree::Item(Item::Value(Value::InlineTable(t))) | Tree::Value(Value::InlineTable(t)) => {
                return Some(
                    t.iter()
                        .map(|(name, value)| {
                            let span = t.key(name).and_then(|k| k.span());
                            entry(name, span, Tree::Value(value), value.span())
                        })
                        .collect(),
                )
            }
            _ => return None,
        };
        Some(
            table
                .iter()
                .map(|(name, item)| {
                    let span = table.key(name).and_then(|k| k.span());
                    entry(name, span, Tree::Item(item), item.span())
                })
                .collect(),
        )
    }

    /// An array's elements (each with its own span, else the array's);
    /// `None` for other values.
    pub fn elements(&self) -> Option<Vec<Node<'a>>> {
        let located = |tree: Tree<'a>, span: Span| Node {
            tree,
            span: span.or_else(|| self.span.clone()),
        };
        match (self.tree, self.value()) {
            (_, Some(Value::Array(a))) => Some(
                a.iter()
                    .map(|v| located(Tree::Value(v), v.span()))
                    .collect(),
            ),
            (Tree::Item(Item::ArrayOfTables(a)), _) => Some(
                a.iter()
                    .map(|t| located(Tree::Table(t), t.span()))
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// A key and its value, the value's span falling back to the key's.
fn entry<'a>(name: &'a str, key: Span, tree: Tree<'a>, span: Span) -> (Name<'a>, Node<'a>) {
    let node = Node {
        tree,
        span: span.or_else(|| key.clone()),
    };
    (Name { name, span: key }, node)
}

/// One key of a file being read: what its reader needs for values and errors.
pub struct Field<'a> {
    /// The file.
    pub doc: &'a Doc<'a>,
    /// How its paths resolve.
    pub ctx: &'a PathContext<'a>,
    /// The dotted key, e.g. `files.deny_read`.
    pub name: String,
}

impl Field<'_> {
    /// An error at `span` about this key.
    pub fn invalid(&self, span: &Span, message: impl Into<String>) -> LoadError {
        self.doc.invalid(span, &self.name, message)
    }

    /// A scalar value read by `convert`; its error points at the value.
    pub fn scalar<T>(
        &self,
        node: Node<'_>,
        convert: impl FnOnce(Scalar<'_>) -> Result<T, String>,
    ) -> Result<T, LoadError> {
        convert(node.scalar()).map_err(|m| self.invalid(node.span(), m))
    }

    /// An array of strings, each read by `convert`.
    pub fn strings<T>(
        &self,
        node: Node<'_>,
        convert: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Vec<T>, LoadError> {
        each_string(self.doc, &self.name, node, convert)
    }

    /// An array of integers, each read by `convert`.
    pub fn integers<T>(
        &self,
        node: Node<'_>,
        convert: fn(i64) -> Result<T, String>,
    ) -> Result<Vec<T>, LoadError> {
        each(self.doc, &self.name, node, "an integer", |v| match v {
            Scalar::Integer(n) => Some(convert(n)),
            _ => None,
        })
    }

    /// An array of tables (`[[section.key]]`), each read by `convert`.
    pub fn tables<T>(
        &self,
        node: Node<'_>,
        convert: fn(super::tables::Table<'_>) -> Result<T, LoadError>,
    ) -> Result<Vec<T>, LoadError> {
        let name = &self.name;
        let Some(items) = node.elements() else {
            return Err(self.invalid(
                node.span(),
                format!(
                    "expected an array of tables ([[{name}]]), found {}",
                    node.kind()
                ),
            ));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let key = format!("{name}[{i}]");
            match item.entries() {
                Some(entries) => out.push(convert(super::tables::Table {
                    doc: self.doc,
                    ctx: self.ctx,
                    name: &key,
                    span: item.span(),
                    entries,
                })?),
                None => {
                    return Err(self.doc.invalid(
                        item.span(),
                        &key,
                        format!("expected a table, found {}", item.kind()),
                    ))
                }
            }
        }
        Ok(out)
    }
}

/// A table's entries.
pub type Entries<'a> = Vec<(Name<'a>, Node<'a>)>;

/// Checks that `node` is an array whose elements `convert` accepts
/// (`None`: wrong type, `expected` describes the right one).
pub fn each<T>(
    doc: &Doc<'_>,
    name: &str,
    node: Node<'_>,
    expected: &str,
    convert: impl Fn(Scalar<'_>) -> Option<Result<T, String>>,
) -> Result<Vec<T>, LoadError> {
    let Some(items) = node.elements() else {
        return Err(doc.invalid(
            node.span(),
            name,
            format!(
                "expected an array of {}s, found {}",
                expected.trim_start_matches("an ").trim_start_matches("a "),
                node.kind()
            ),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let key = format!("{name}[{i}]");
        match convert(item.scalar()) {
            Some(Ok(v)) => out.push(v),
            Some(Err(m)) => return Err(doc.invalid(item.span(), &key, m)),
            None => {
                return Err(doc.invalid(
                    item.span(),
                    &key,
                    format!("expected {expected}, found {}", item.kind()),
                ))
            }
        }
    }
    Ok(out)
}

/// Joins keys with dots, quoting those that are not bare TOML keys.
pub fn dotted(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| {
            let bare = !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if bare {
                (*k).to_string()
            } else {
                format!("{k:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Parses and checks one policy file.
pub fn parse_file(file: &Path, bytes: &[u8], ctx: &PathContext<'_>) -> Result<Fragment, LoadError> {
    parse_policy(file, bytes, ctx, &[])
}

/// Parses and checks the policy in a file whose top-level tables `other`
/// are not policy (a preset's description): those are left to the caller.
pub fn parse_policy(
    file: &Path,
    bytes: &[u8],
    ctx: &PathContext<'_>,
    other: &[&str],
) -> Result<Fragment, LoadError> {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
            return Err(LoadError::Syntax {
                at: position(file, &valid, valid.len()),
                message: "not valid UTF-8".to_string(),
            });
        }
    };
    let doc = Doc { file, text };
    let parsed = ImDocument::parse(text).map_err(|e| LoadError::Syntax {
        at: position(file, text, e.span().map_or(0, |s| s.start)),
        message: e.message().trim().replace('\n', ": "),
    })?;
    let root = Node {
        tree: Tree::Table(parsed.as_table()),
        span: None,
    };
    let mut fragment = Fragment::default();
    for (section, node) in root.entries().unwrap_or_default() {
        if other.contains(&section.name) {
            continue;
        }
        let name = dotted(&[section.name]);
        if !SECTIONS.contains(&section.name) {
            return Err(doc.invalid(
                &section.span,
                &name,
                format!("unknown key (expected one of {})", SECTIONS.join(", ")),
            ));
        }
        let Some(entries) = node.entries() else {
            return Err(doc.invalid(
                node.span(),
                &name,
                format!("expected a table, found {}", node.kind()),
            ));
        };
        for (key, node) in entries {
            let dotted_key = dotted(&[section.name, key.name]);
            let Some(declared) =
                keys::in_section(section.name).find(|k| k.about().name == key.name)
            else {
                let expected: Vec<&str> = keys::in_section(section.name)
                    .map(|k| k.about().name)
                    .collect();
                return Err(doc.invalid(
                    &key.span,
                    &dotted_key,
                    format!("unknown key (expected one of {})", expected.join(", ")),
                ));
            };
            let field = Field {
                doc: &doc,
                ctx,
                name: dotted_key,
            };
            fragment.push(Setting {
                pending: declared.read_file(&field, node)?,
                at: key.span.as_ref().map_or(0, |s| s.start),
            });
        }
    }
    Ok(fragment)
}

/// Checks that `node` is an array of strings and converts each with `convert`.
pub fn each_string<T>(
    doc: &Doc<'_>,
    name: &str,
    node: Node<'_>,
    convert: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, LoadError> {
    each(doc, name, node, "a string", |v| match v {
        Scalar::String(s) => Some(convert(s)),
        _ => None,
    })
}

/// One boolean field of a table.
pub fn table_bool(doc: &Doc<'_>, name: &str, node: &Node<'_>) -> Result<bool, LoadError> {
    match node.scalar() {
        Scalar::Boolean(b) => Ok(b),
        other => Err(doc.invalid(
            node.span(),
            name,
            format!("expected true or false, found {}", other.kind()),
        )),
    }
}

/// One string field of a table.
pub fn table_string(doc: &Doc<'_>, name: &str, node: &Node<'_>) -> Result<String, LoadError> {
    match node.scalar() {
        Scalar::String(s) => Ok(s.to_string()),
        other => Err(doc.invalid(
            node.span(),
            name,
            format!("expected a string, found {}", other.kind()),
        )),
    }
}
