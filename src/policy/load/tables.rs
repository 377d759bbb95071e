//! The keys whose values are arrays of tables: `[[network.rules]]` and
//! `[[credentials.inject]]`.

use super::document::{dotted, each_string, table_string, Doc, Entries, Node, Span};
use super::values::one_file;
use super::LoadError;
use crate::policy::inspection::{check_var_name, HostMatch, HttpRule, InjectSpec, SecretSource};
use crate::policy::pattern::PathContext;

/// A table entry's dotted key and its node.
fn field<'a>(name: &str, key: &str, node: Node<'a>) -> (String, Node<'a>) {
    (format!("{name}.{}", dotted(&[key])), node)
}

/// One `[[network.rules]]` table.
pub fn http_rule(
    doc: &Doc<'_>,
    _: &PathContext<'_>,
    name: &str,
    span: &Span,
    entries: Entries<'_>,
) -> Result<HttpRule, LoadError> {
    let mut host = None;
    let mut methods = Vec::new();
    let mut paths = Vec::new();
    let mut paths_span = span.clone();
    for (key, node) in entries {
        let (field, node) = field(name, key.name, node);
        match key.name {
            "host" => {
                let raw = table_string(doc, &field, &node)?;
                host = Some(
                    HostMatch::parse(&raw)
                        .map_err(|e| doc.invalid(node.span(), &field, e.to_string()))?,
                );
            }
            "methods" => methods = each_string(doc, &field, node, |m| Ok(m.to_string()))?,
            "paths" => {
                paths_span = node.span().clone();
                paths = each_string(doc, &field, node, |p| Ok(p.to_string()))?;
            }
            _ => {
                return Err(doc.invalid(
                    &key.span,
                    &field,
                    "unknown key (expected one of host, methods, paths)",
                ))
            }
        }
    }
    let host = host.ok_or_else(|| doc.invalid(span, name, "missing key host"))?;
    HttpRule::new(host, &methods, &paths).map_err(|e| doc.invalid(&paths_span, name, e.to_string()))
}

/// One `[[credentials.inject]]` table.
pub fn inject(
    doc: &Doc<'_>,
    ctx: &PathContext<'_>,
    name: &str,
    span: &Span,
    entries: Entries<'_>,
) -> Result<InjectSpec, LoadError> {
    let mut env = None;
    let mut source = SecretSource::Env;
    let mut hosts = None;
    for (key, node) in entries {
        let (field, node) = field(name, key.name, node);
        let at = node.span().clone();
        let second = |what: &str| {
            doc.invalid(
                &key.span,
                &field,
                format!("{what}: name one source (env alone, file, or command)"),
            )
        };
        match key.name {
            "env" => {
                let raw = table_string(doc, &field, &node)?;
                env = Some(
                    check_var_name(&raw).map_err(|e| doc.invalid(&at, &field, e.to_string()))?,
                );
            }
            "file" => {
                if source != SecretSource::Env {
                    return Err(second("a second source"));
                }
                let raw = table_string(doc, &field, &node)?;
                source = SecretSource::File(
                    one_file(&raw, ctx).map_err(|m| doc.invalid(&at, &field, m))?,
                );
            }
            "command" => {
                if source != SecretSource::Env {
                    return Err(second("a second source"));
                }
                let argv = each_string(doc, &field, node, |a| Ok(a.to_string()))?;
                if argv.is_empty() {
                    return Err(doc.invalid(&at, &field, "the command is empty"));
                }
                source = SecretSource::Command(argv);
            }
            "hosts" => {
                let list = each_string(doc, &field, node, |raw| {
                    HostMatch::parse(raw).map_err(|e| e.to_string())
                })?;
                if list.is_empty() {
                    return Err(doc.invalid(&at, &field, "name at least one host"));
                }
                hosts = Some(list);
            }
            _ => {
                return Err(doc.invalid(
                    &key.span,
                    &field,
                    "unknown key (expected one of env, file, command, hosts)",
                ))
            }
        }
    }
    let env = env.ok_or_else(|| {
        doc.invalid(
            span,
            name,
            "missing key env (the variable that holds the placeholder inside)",
        )
    })?;
    let hosts = hosts.ok_or_else(|| {
        doc.invalid(
            span,
            name,
            "missing key hosts (where the real value may go)",
        )
    })?;
    Ok(InjectSpec { env, source, hosts })
}
