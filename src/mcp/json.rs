//! The servers of a JSON config: `mcpServers` (Claude Code's `.mcp.json`
//! and `~/.claude.json`, Claude Desktop's config, Gemini CLI's and
//! others' settings), `projects.*.mcpServers` (`~/.claude.json`),
//! `servers` (VS Code's `mcp.json`) and `mcp.servers` (VS Code's
//! settings). Comments and trailing commas are read (VS Code's files
//! allow them) and kept.

use std::path::Path;

use jsonc_parser::ast::{Object, ObjectProp, Value};
use jsonc_parser::common::Ranged;

use super::entry::{check_env_set, Args, Element, Stdio};
use super::{Entry, Kind, McpError};
use crate::policy::load::document::position;

/// What goes after a command's value to add its arguments.
const ADD_ARGS: &str = ", \"args\": ";

/// Every server entry of `text`, read from `file`.
pub fn entries(file: &Path, text: &str) -> Result<Vec<Entry>, McpError> {
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        ..crate::policy::import::json::strict()
    };
    let parsed = jsonc_parser::parse_to_ast(text, &Default::default(), &options).map_err(|e| {
        McpError::Syntax {
            at: position(file, text, e.range().start).to_string(),
            message: e.kind().to_string(),
        }
    })?;
    let Some(Value::Object(root)) = parsed.value else {
        return Err(McpError::Syntax {
            at: position(file, text, 0).to_string(),
            message: "the file holds no JSON object".into(),
        });
    };
    let reader = Reader { file, text };
    let mut found = Vec::new();
    for (name, prop) in reader.props(&root, "")? {
        match name {
            "mcpServers" | "servers" => reader.servers(prop, name, &mut found)?,
            "mcp" => {
                if let Value::Object(mcp) = &prop.value {
                    for (inner, p) in reader.props(mcp, "mcp")? {
                        match inner {
                            "servers" => reader.servers(p, "mcp.servers", &mut found)?,
                            // Gemini CLI runs it through a shell to find servers.
                            "serverCommand" => found.push(Entry {
                                name: inner.to_string(),
                                key: "mcp.serverCommand".into(),
                                at: reader.at(p, "mcp.serverCommand"),
                                kind: Kind::Unwrappable(
                                    "Gemini CLI runs this command line to discover servers, outside any sandbox; cordon cannot wrap a command line: remove it, and list the servers under mcpServers".into(),
                                ),
                            }),
                            _ => {}
                        }
                    }
                }
            }
            "projects" => {
                let Value::Object(projects) = &prop.value else {
                    continue;
                };
                for (project, p) in reader.props(projects, "projects")? {
                    let Value::Object(settings) = &p.value else {
                        continue;
                    };
                    let key = format!("projects.{project}");
                    for (inner, s) in reader.props(settings, &key)? {
                        if inner == "mcpServers" {
                            reader.servers(s, &format!("{key}.mcpServers"), &mut found)?;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(found)
}

struct Reader<'f> {
    file: &'f Path,
    text: &'f str,
}

impl Reader<'_> {
    /// `file:line:column: key`, for messages.
    fn at(&self, node: &impl Ranged, key: &str) -> String {
        format!("{}: {key}", position(self.file, self.text, node.start()))
    }

    /// The members of `object` (at `key`) by name. A name given twice is
    /// refused: the clients read the last, and wrapping the first would
    /// leave the one that runs as it was.
    fn props<'o, 'a>(
        &self,
        object: &'o Object<'a>,
        key: &str,
    ) -> Result<Vec<(&'o str, &'o ObjectProp<'a>)>, McpError> {
        let mut out: Vec<(&str, &ObjectProp)> = Vec::new();
        for prop in &object.properties {
            let name = prop.name.as_str();
            if out.iter().any(|(n, _)| *n == name) {
                return Err(McpError::Entry {
                    at: self.at(prop, &join(key, name)),
                    message: "given twice in one object: the clients read the last; keep one"
                        .into(),
                });
            }
            out.push((name, prop));
        }
        Ok(out)
    }

    /// The servers of the object `prop` holds (at `key`).
    fn servers(&self, prop: &ObjectProp, key: &str, into: &mut Vec<Entry>) -> Result<(), McpError> {
        let Value::Object(servers) = &prop.value else {
            return Err(McpError::Entry {
                at: self.at(prop, key),
                message: "must be an object of servers".into(),
            });
        };
        for (name, server) in self.props(servers, key)? {
            let dotted = join(key, name);
            let at = self.at(server, &dotted);
            let kind = match &server.value {
                Value::Object(entry) => self.kind(entry, &at)?,
                _ => Kind::Unknown("not an object".into()),
            };
            into.push(Entry {
                name: name.to_string(),
                key: dotted,
                at,
                kind,
            });
        }
        Ok(())
    }

    /// What the server entry `entry` is.
    fn kind(&self, entry: &Object, at: &str) -> Result<Kind, McpError> {
        let props = self.props(entry, at)?;
        let get = |name: &str| props.iter().find(|(n, _)| *n == name).map(|(_, p)| *p);
        // Whatever its type says: some clients (Gemini CLI) start any
        // entry's command, so every command is wrapped.
        let Some(command) = get("command") else {
            return Ok(if get("url").is_some() || get("httpUrl").is_some() {
                Kind::Remote
            } else {
                Kind::Unknown("it has neither a command nor a URL".into())
            });
        };
        let Value::StringLit(command_value) = &command.value else {
            return Err(entry_error(at, "its command is not a string"));
        };
        let args = match get("args") {
            None => None,
            Some(p) => {
                let Value::Array(array) = &p.value else {
                    return Err(entry_error(at, "its args is not an array"));
                };
                Some(Args {
                    range: array.range.start..array.range.end,
                    member: Some(p.range.start..p.range.end),
                    elements: array
                        .elements
                        .iter()
                        .map(|e| Element {
                            range: e.start()..e.end(),
                            value: e.as_string_lit().map(|s| s.value.to_string()),
                        })
                        .collect(),
                })
            }
        };
        let mut env_names = Vec::new();
        if let Some(env) = get("env") {
            let Value::Object(env) = &env.value else {
                return Err(entry_error(at, "its env is not an object"));
            };
            for (name, _) in self.props(env, at)? {
                check_env_set(name, at)?;
                env_names.push(name.to_string());
            }
        }
        let mut notes = Vec::new();
        if get("envFile").is_some() {
            notes.push(
                "the variables of its envFile are not passed (cordon mcp run passes the names of its env only; add --pass-env NAME to its arguments for others)"
                    .to_string(),
            );
        }
        Ok(Kind::Stdio {
            stdio: Stdio {
                command: command_value.range.start..command_value.range.end,
                command_value: command_value.value.to_string(),
                args,
                env_names,
                add_args: Ok(ADD_ARGS),
            },
            notes,
        })
    }
}

fn entry_error(at: &str, message: &str) -> McpError {
    McpError::Entry {
        at: at.to_string(),
        message: message.to_string(),
    }
}

/// `key.name`, or `name` at the top.
fn join(key: &str, name: &str) -> String {
    if key.is_empty() {
        name.to_string()
    } else {
        format!("{key}.{name}")
    }
}
