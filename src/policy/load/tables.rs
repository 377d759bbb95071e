//! The keys whose values are arrays of tables: `[[network.rules]]` and
//! `[[credentials.inject]]`, and `files.cache` (paths or tables).

use super::document::{
    dotted, each_string, position, table_bool, table_string, Doc, Entries, Field, Name, Node,
    Scalar, Span,
};
use super::values::one_file;
use super::LoadError;
use crate::policy::cache::Cache;
use crate::policy::followed;
use crate::policy::inspection::{check_var_name, HostMatch, HttpRule, InjectSpec, SecretSource};
use crate::policy::pattern::PathContext;
use crate::policy::state::{StateDir, StateFile};

/// One table of an array of tables (`[[section.key]]`), as the file gives it.
pub struct Table<'a> {
    /// The file.
    pub doc: &'a Doc<'a>,
    /// How its relative paths resolve.
    pub ctx: &'a PathContext<'a>,
    /// The table's dotted key (`network.rules[0]`).
    pub name: &'a str,
    /// Where it is.
    pub span: &'a Span,
    /// Its entries.
    pub entries: Entries<'a>,
}

impl<'a> Table<'a> {
    /// Reads each entry with `read(key, its dotted name, its node)`; an
    /// entry `read` does not know (`Ok(false)`) is an error that lists the
    /// `expected` keys.
    fn read(
        self,
        expected: &str,
        mut read: impl FnMut(&Name<'a>, &str, Node<'a>) -> Result<bool, LoadError>,
    ) -> Result<(), LoadError> {
        for (key, node) in self.entries {
            let field = format!("{}.{}", self.name, dotted(&[key.name]));
            if !read(&key, &field, node)? {
                return Err(self.doc.invalid(
                    &key.span,
                    &field,
                    format!("unknown key (expected one of {expected})"),
                ));
            }
        }
        Ok(())
    }

    /// The error for a required key the table lacks.
    fn missing(doc: &Doc<'_>, span: &Span, name: &str, what: &str) -> LoadError {
        doc.invalid(span, name, format!("missing key {what}"))
    }
}

/// One `[[network.rules]]` table.
pub fn http_rule(table: Table<'_>) -> Result<HttpRule, LoadError> {
    let (doc, name, span) = (table.doc, table.name, table.span);
    let mut host = None;
    let mut methods = Vec::new();
    let mut paths = Vec::new();
    let mut paths_span = span.clone();
    table.read("host, methods, paths", |key, field, node| {
        match key.name {
            "host" => {
                let raw = table_string(doc, field, &node)?;
                host = Some(
                    HostMatch::parse(&raw)
                        .map_err(|e| doc.invalid(node.span(), field, e.to_string()))?,
                );
            }
            "methods" => methods = each_string(doc, field, node, |m| Ok(m.to_string()))?,
            "paths" => {
                paths_span = node.span().clone();
                paths = each_string(doc, field, node, |p| Ok(p.to_string()))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let host = host.ok_or_else(|| Table::missing(doc, span, name, "host"))?;
    HttpRule::new(host, &methods, &paths).map_err(|e| doc.invalid(&paths_span, name, e.to_string()))
}

/// One `[[credentials.inject]]` table.
pub fn inject(table: Table<'_>) -> Result<InjectSpec, LoadError> {
    let (doc, ctx, name, span) = (table.doc, table.ctx, table.name, table.span);
    let mut env = None;
    let mut source = SecretSource::Env;
    let mut hosts = None;
    let mut when_set = false;
    let mut headers = Vec::new();
    table.read("env, file, command, hosts, when_set, headers", |key, field, node| {
        let at = node.span().clone();
        let second = || {
            doc.invalid(
                &key.span,
                field,
                "a second source: name one source (env alone, file, or command)",
            )
        };
        match key.name {
            "env" => {
                let raw = table_string(doc, field, &node)?;
                env =
                    Some(check_var_name(&raw).map_err(|e| doc.invalid(&at, field, e.to_string()))?);
            }
            "file" => {
                if source != SecretSource::Env {
                    return Err(second());
                }
                let raw = table_string(doc, field, &node)?;
                source = SecretSource::File(
                    one_file(&raw, ctx).map_err(|m| doc.invalid(&at, field, m))?,
                );
            }
            "command" => {
                if source != SecretSource::Env {
                    return Err(second());
                }
                let argv = each_string(doc, field, node, |a| Ok(a.to_string()))?;
                if argv.is_empty() {
                    return Err(doc.invalid(&at, field, "the command is empty"));
                }
                source = SecretSource::Command(argv);
            }
            "hosts" => {
                let list = each_string(doc, field, node, |raw| {
                    followed::expand(raw)?
                        .map(|h| HostMatch::parse(&h).map_err(|e| e.to_string()))
                        .transpose()
                })?;
                if list.is_empty() {
                    return Err(doc.invalid(&at, field, "name at least one host"));
                }
                let list: Vec<HostMatch> = list.into_iter().flatten().collect();
                if list.is_empty() {
                    return Err(doc.invalid(
                        &at,
                        field,
                        "every host follows a variable that is unset here, so the value could go nowhere",
                    ));
                }
                hosts = Some(list);
            }
            "when_set" => when_set = table_bool(doc, field, &node)?,
            "headers" => {
                headers = each_string(doc, field, node, |raw| {
                    http::HeaderName::from_bytes(raw.as_bytes())
                        .map(|h| h.as_str().to_string())
                        .map_err(|_| format!("{raw:?} is not a header name"))
                })?;
                if headers.is_empty() {
                    return Err(doc.invalid(&at, field, "name at least one header, or leave the key out"));
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let env = env.ok_or_else(|| {
        Table::missing(
            doc,
            span,
            name,
            "env (the variable that holds the placeholder inside)",
        )
    })?;
    let hosts = hosts
        .ok_or_else(|| Table::missing(doc, span, name, "hosts (where the real value may go)"))?;
    if when_set && source != SecretSource::Env {
        return Err(doc.invalid(
            span,
            &format!("{name}.when_set"),
            "applies to a value from cordon's environment only (no file or command)",
        ));
    }
    Ok(InjectSpec {
        env,
        source,
        hosts,
        when_set,
        headers,
    })
}

/// `files.cache`: an array whose entries are each a path (`"~/.npm"`) or
/// a table with `path` and an optional `env` (`{ path = "~/.npm", env =
/// "npm_config_cache" }`, or `[[files.cache]]` tables).
pub fn caches(field: &Field<'_>, node: Node<'_>) -> Result<Vec<Cache>, LoadError> {
    let (doc, name) = (field.doc, field.name.as_str());
    let Some(items) = node.elements() else {
        return Err(field.invalid(
            node.span(),
            format!(
                "expected an array of paths or tables, found {}",
                node.kind()
            ),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let key = format!("{name}[{i}]");
        let at = item.span().clone();
        let mut cache = match (item.scalar(), item.entries()) {
            (Scalar::String(raw), _) => {
                Cache::new(raw, None, field.ctx).map_err(|m| doc.invalid(&at, &key, m))?
            }
            (_, Some(entries)) => cache_table(Table {
                doc,
                ctx: field.ctx,
                name: &key,
                span: &at,
                entries,
            })?,
            (other, None) => {
                return Err(doc.invalid(
                    &at,
                    &key,
                    format!("expected a path or a table, found {}", other.kind()),
                ))
            }
        };
        cache.at = Some(position(
            doc.file,
            doc.text,
            at.as_ref().map_or(0, |s| s.start),
        ));
        out.push(cache);
    }
    Ok(out)
}

/// One table of `files.cache`.
fn cache_table(table: Table<'_>) -> Result<Cache, LoadError> {
    let (doc, ctx, name, span) = (table.doc, table.ctx, table.name, table.span);
    let mut path = None;
    let mut env = None;
    let mut optional = false;
    table.read("path, env, optional", |key, field, node| {
        let at = node.span().clone();
        match key.name {
            "path" => path = Some((table_string(doc, field, &node)?, at)),
            "env" => {
                let raw = table_string(doc, field, &node)?;
                env =
                    Some(check_var_name(&raw).map_err(|e| doc.invalid(&at, field, e.to_string()))?);
            }
            "optional" => optional = table_bool(doc, field, &node)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let (raw, at) =
        path.ok_or_else(|| Table::missing(doc, span, name, "path (the host directory)"))?;
    let mut cache =
        Cache::new(&raw, env, ctx).map_err(|m| doc.invalid(&at, &format!("{name}.path"), m))?;
    cache.optional = optional;
    Ok(cache)
}

/// One `[[files.state]]` table: `dir` and `writable` (both required).
pub fn state(table: Table<'_>) -> Result<StateDir, LoadError> {
    let (doc, ctx, name, span) = (table.doc, table.ctx, table.name, table.span);
    let mut dir = None;
    let mut writable = None;
    let mut protect = Vec::new();
    let mut scratch = Vec::new();
    table.read("dir, writable, scratch, protect", |key, field, node| {
        match key.name {
            "dir" => dir = Some((table_string(doc, field, &node)?, node.span().clone())),
            "writable" => writable = Some(each_string(doc, field, node, |n| Ok(n.to_string()))?),
            "protect" => protect = each_string(doc, field, node, |n| Ok(n.to_string()))?,
            "scratch" => scratch = each_string(doc, field, node, |n| Ok(n.to_string()))?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let (dir, at) =
        dir.ok_or_else(|| Table::missing(doc, span, name, "dir (the agent's state directory)"))?;
    let writable = writable.ok_or_else(|| {
        Table::missing(
            doc,
            span,
            name,
            "writable (the names in it the agent keeps its state in)",
        )
    })?;
    StateDir::new(&dir, writable, protect, scratch, ctx).map_err(|m| doc.invalid(&at, name, m))
}

/// One `[[files.state_file]]` table: `path` and `unchanged` (both
/// required).
pub fn state_file(table: Table<'_>) -> Result<StateFile, LoadError> {
    let (doc, ctx, name, span) = (table.doc, table.ctx, table.name, table.span);
    let mut path = None;
    let mut unchanged = None;
    table.read("path, unchanged", |key, field, node| {
        match key.name {
            "path" => path = Some((table_string(doc, field, &node)?, node.span().clone())),
            "unchanged" => unchanged = Some(each_string(doc, field, node, |n| Ok(n.to_string()))?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let (path, at) =
        path.ok_or_else(|| Table::missing(doc, span, name, "path (the agent's config file)"))?;
    let unchanged = unchanged.ok_or_else(|| {
        Table::missing(
            doc,
            span,
            name,
            "unchanged (the JSON keys that may not change)",
        )
    })?;
    StateFile::new(&path, unchanged, ctx).map_err(|m| doc.invalid(&at, name, m))
}
