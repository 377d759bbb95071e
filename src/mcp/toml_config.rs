//! The servers of Codex's `config.toml`: the `[mcp_servers.NAME]` tables
//! (or inline tables), with `command`, `args`, `env` and `env_vars`;
//! an entry with a `url` is remote.

use std::path::Path;

use toml_edit::{ImDocument, Item, TableLike, Value};

use super::entry::{check_env_name, check_env_set, Args, Element, Stdio};
use super::{Entry, Kind, McpError};
use crate::policy::load::document::position;

/// Every server entry of `text`, read from `file`.
pub fn entries(file: &Path, text: &str) -> Result<Vec<Entry>, McpError> {
    let doc = ImDocument::parse(text).map_err(|e| McpError::Syntax {
        at: position(file, text, e.span().map_or(0, |s| s.start)).to_string(),
        message: e.message().to_string(),
    })?;
    let at = |offset: Option<usize>, key: &str| {
        format!("{}: {key}", position(file, text, offset.unwrap_or(0)))
    };
    let Some(servers) = doc.as_table().get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_table_like() else {
        return Err(McpError::Entry {
            at: at(servers.span().map(|s| s.start), "mcp_servers"),
            message: "must be a table of servers".into(),
        });
    };
    let mut found = Vec::new();
    for (name, item) in servers.iter() {
        let key_at = servers
            .get_key_value(name)
            .and_then(|(k, _)| k.span())
            .map(|s| s.start);
        let dotted = format!("mcp_servers.{name}");
        let here = at(key_at, &dotted);
        let kind = match item.as_table_like() {
            Some(entry) => kind(entry, item, &here)?,
            None => Kind::Unknown("not a table".into()),
        };
        found.push(Entry {
            name: name.to_string(),
            key: dotted,
            at: here,
            kind,
        });
    }
    Ok(found)
}

/// What the server entry `entry` (the item `item`) is.
fn kind(entry: &dyn TableLike, item: &Item, at: &str) -> Result<Kind, McpError> {
    let fail = |message: &str| McpError::Entry {
        at: at.to_string(),
        message: message.to_string(),
    };
    let Some(command) = entry.get("command") else {
        return Ok(if entry.get("url").is_some() {
            Kind::Remote
        } else {
            Kind::Unknown("it has neither a command nor a url".into())
        });
    };
    let (Some(Value::String(command_value)), Some(command_span)) =
        (command.as_value(), command.span())
    else {
        return Err(fail("its command is not a string"));
    };
    let args = match entry.get("args") {
        None => None,
        Some(args) => {
            let (Some(array), Some(span)) = (args.as_array(), args.span()) else {
                return Err(fail("its args is not an array"));
            };
            let elements = array
                .iter()
                .map(|v| {
                    let range = v
                        .span()
                        .ok_or_else(|| fail("an argument has no place in the text"))?;
                    Ok(Element {
                        range,
                        value: v.as_str().map(str::to_string),
                    })
                })
                .collect::<Result<_, McpError>>()?;
            Some(Args {
                range: span,
                member: None,
                elements,
            })
        }
    };
    let mut env_names = Vec::new();
    if let Some(env) = entry.get("env") {
        let env = env
            .as_table_like()
            .ok_or_else(|| fail("its env is not a table"))?;
        for (name, _) in env.iter() {
            check_env_set(name, at)?;
            env_names.push(name.to_string());
        }
    }
    if let Some(vars) = entry.get("env_vars") {
        let vars = vars
            .as_array()
            .ok_or_else(|| fail("its env_vars is not an array"))?;
        for var in vars.iter() {
            let name = var
                .as_str()
                .ok_or_else(|| fail("its env_vars holds a value that is not a name"))?;
            check_env_name(name, at)?;
            if !env_names.iter().any(|n| n == name) {
                env_names.push(name.to_string());
            }
        }
    }
    let add_args = match item {
        Item::Table(table) if table.is_dotted() => Err(
            "its keys are dotted (NAME.command = ...), where cordon cannot add them; write it as a [mcp_servers.NAME] table",
        ),
        Item::Table(_) => Ok("\nargs = "),
        _ => Ok(", args = "),
    };
    Ok(Kind::Stdio {
        stdio: Stdio {
            command: command_span,
            command_value: command_value.value().to_string(),
            args,
            env_names,
            add_args,
        },
        notes: Vec::new(),
    })
}
