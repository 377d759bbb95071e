//! One stdio server's entry, whatever the file's format: where its
//! command and arguments are in the text, and the edits that wrap it in
//! `cordon mcp run` or take that away again.
//!
//! Wrapping touches two places only: the command's value becomes cordon,
//! and `mcp run ... --` and the original command (its text as written)
//! are put in front of the arguments, right after the `[` that opens them.
//! Unwrapping cuts exactly that again, so the file comes back byte for
//! byte, and whatever else was changed in the meantime stays.

use std::ops::Range;

use super::McpError;

/// The first two arguments of a wrapped entry.
pub const WRAPPED: [&str; 2] = ["mcp", "run"];
/// The argument that ends cordon's part of a wrapped entry's arguments.
pub const END_OF_OPTIONS: &str = "--";
/// The option that names the server to `cordon mcp run`.
pub const SERVER_OPTION: &str = "--server";
/// The option that passes one of the server's own variables.
pub const PASS_ENV_OPTION: &str = "--pass-env";
/// The option that says the entry had no arguments before it was wrapped
/// (unwrapping then removes the whole arguments member).
pub const ARGS_ADDED_OPTION: &str = "--args-added";

/// An element of an arguments array.
#[derive(Debug)]
pub struct Element {
    /// Its text in the file.
    pub range: Range<usize>,
    /// Its value, if it is a string.
    pub value: Option<String>,
}

/// The arguments array of an entry.
#[derive(Debug)]
pub struct Args {
    /// The whole array, `[` to `]`.
    pub range: Range<usize>,
    /// The whole member in a JSON object, its name to its value (`None`
    /// in TOML, whose layout its clients keep).
    pub member: Option<Range<usize>>,
    /// Its elements, in order.
    pub elements: Vec<Element>,
}

/// A stdio server's entry.
#[derive(Debug)]
pub struct Stdio {
    /// The command's value in the file (a string).
    pub command: Range<usize>,
    /// The command's value.
    pub command_value: String,
    /// The arguments, if the entry has them.
    pub args: Option<Args>,
    /// The names of the server's own variables (its `env` table and the
    /// like), which `cordon mcp run` passes it.
    pub env_names: Vec<String>,
    /// What goes right after the command's value to add an arguments
    /// member (`, "args": `), or why one cannot be added there.
    pub add_args: Result<&'static str, &'static str>,
}

/// A text edit: `range` replaced by `text`.
#[derive(Debug, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub text: String,
}

impl Stdio {
    /// Whether the entry runs under `cordon mcp run` already.
    pub fn is_wrapped(&self) -> bool {
        self.args.as_ref().is_some_and(|args| {
            args.elements.len() >= 2
                && args.elements[..2]
                    .iter()
                    .zip(WRAPPED)
                    .all(|(e, want)| e.value.as_deref() == Some(want))
        })
    }

    /// What is not as `wrap` writes it in an entry found wrapped already
    /// (empty when all is): another command than `cordon`, a server name
    /// other than the entry's (its policy is another server's), options
    /// `wrap` does not write (a widening flag), or variables passed that
    /// are not the entry's own.
    pub fn wrapped_otherwise(&self, name: &str, cordon: &str) -> Vec<String> {
        let mut odd = Vec::new();
        if self.command_value != cordon {
            odd.push(format!(
                "it runs {:?}, not {cordon:?} (this cordon): it looks wrapped, but nothing says that program is cordon",
                self.command_value
            ));
        }
        let Some(args) = &self.args else {
            return odd;
        };
        let values: Vec<Option<&str>> = args.elements.iter().map(|e| e.value.as_deref()).collect();
        let end = values
            .iter()
            .skip(WRAPPED.len())
            .position(|v| *v == Some(END_OF_OPTIONS))
            .map_or(values.len(), |i| i + WRAPPED.len());
        let mut options = values[WRAPPED.len()..end].iter();
        let mut server = None;
        while let Some(option) = options.next() {
            let value = options.clone().next().copied().flatten();
            match (*option, value) {
                (Some(SERVER_OPTION), Some(value)) => {
                    server = Some(value);
                    options.next();
                }
                (Some(PASS_ENV_OPTION), Some(value))
                    if self.env_names.iter().any(|n| n == value) =>
                {
                    options.next();
                }
                (Some(ARGS_ADDED_OPTION), _) => {}
                (other, _) => odd.push(format!(
                    "its cordon options hold {}, which cordon mcp wrap does not write",
                    other.map_or_else(
                        || "a value that is not a string".to_string(),
                        |o| format!("{o:?}")
                    )
                )),
            }
        }
        if server != Some(name) {
            odd.push(format!(
                "it runs as server {server:?}, with that server's policy, not as {name:?}"
            ));
        }
        odd
    }

    /// The edits that make the entry run `cordon mcp run --server NAME
    /// ... -- COMMAND ARGS...` with `cordon` as its command.
    pub fn wrap(
        &self,
        text: &str,
        name: &str,
        cordon: &str,
        at: &str,
    ) -> Result<Vec<Edit>, McpError> {
        let original = &text[self.command.clone()];
        let mut prefix: Vec<String> = WRAPPED.iter().map(|s| quote(s)).collect();
        prefix.push(quote(SERVER_OPTION));
        prefix.push(quote(name));
        for env in &self.env_names {
            prefix.push(quote(PASS_ENV_OPTION));
            prefix.push(quote(env));
        }
        let mut edits = vec![Edit {
            range: self.command.clone(),
            text: quote(cordon),
        }];
        match &self.args {
            Some(args) => {
                prefix.push(quote(END_OF_OPTIONS));
                prefix.push(original.to_string());
                let mut inserted = prefix.join(", ");
                if !args.elements.is_empty() {
                    inserted.push_str(", ");
                }
                let open = args.range.start + 1;
                edits.push(Edit {
                    range: open..open,
                    text: inserted,
                });
            }
            None => {
                let member = self.add_args.map_err(|why| McpError::Entry {
                    at: at.to_string(),
                    message: format!("it has no arguments, and {why}"),
                })?;
                prefix.push(quote(ARGS_ADDED_OPTION));
                prefix.push(quote(END_OF_OPTIONS));
                prefix.push(original.to_string());
                let end = self.command.end;
                edits.push(Edit {
                    range: end..end,
                    text: format!("{member}[{}]", prefix.join(", ")),
                });
            }
        }
        Ok(edits)
    }

    /// The edits that take a wrapped entry back to what it was.
    pub fn unwrap(&self, text: &str, at: &str) -> Result<Vec<Edit>, McpError> {
        let hand_edited = |what: &str| {
            McpError::Entry {
            at: at.to_string(),
            message: format!(
                "{what}, so it cannot be restored as it was; edit it back by hand (the original command and arguments follow the \"--\")"
            ),
        }
        };
        let args = self
            .args
            .as_ref()
            .ok_or_else(|| hand_edited("it has no arguments"))?;
        let elements = &args.elements;
        let end = elements
            .iter()
            .skip(WRAPPED.len())
            .position(|e| e.value.as_deref() == Some(END_OF_OPTIONS))
            .map(|i| i + WRAPPED.len())
            .ok_or_else(|| hand_edited("its arguments have no \"--\""))?;
        let original = elements
            .get(end + 1)
            .filter(|e| e.value.is_some())
            .ok_or_else(|| hand_edited("no command follows its \"--\""))?;
        let added = elements[WRAPPED.len()..end]
            .iter()
            .any(|e| e.value.as_deref() == Some(ARGS_ADDED_OPTION));
        let restored = text[original.range.clone()].to_string();
        // As wrap wrote it, the cut gives the file back byte for byte; a
        // client that saved the file again in its own layout (Claude Code
        // rewrites ~/.claude.json) moved the separators, and then the same
        // elements go, with what separates them from the rest.
        let first = elements[0].range.start;
        let cut = if added {
            if elements.len() != end + 2 {
                return Err(hand_edited("arguments were added to the ones cordon added"));
            }
            let between = text.get(self.command.end..args.range.start);
            match (between, &args.member) {
                (Some(between), _)
                    if self.add_args == Ok(between) || is_member_separator(between) =>
                {
                    self.command.end..args.range.end
                }
                (_, Some(member)) => json_member_cut(text, member.clone()),
                _ => return Err(hand_edited("the arguments cordon added were moved")),
            }
        } else if let Some(next) = elements.get(end + 2) {
            let after = original.range.end;
            if first == args.range.start + 1 && text.get(after..after + 2) == Some(", ") {
                first..after + 2
            } else {
                first..next.range.start
            }
        } else {
            first..original.range.end
        };
        Ok(vec![
            Edit {
                range: self.command.clone(),
                text: restored,
            },
            Edit {
                range: cut,
                text: String::new(),
            },
        ])
    }
}

/// Whether `text`, between a command's value and the arguments member
/// `wrap` added after it, is only a separator and the member's name in
/// some layout (`,\n      "args": `).
fn is_member_separator(text: &str) -> bool {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    matches!(squeezed.as_str(), ",\"args\":" | "args=" | ",args=")
}

/// The text to cut to remove the JSON object member at `member`: with
/// the comma after it, or else the one before it.
fn json_member_cut(text: &str, member: Range<usize>) -> Range<usize> {
    let after = &text[member.end..];
    let gap = after.len() - after.trim_start().len();
    if after[gap..].starts_with(',') {
        let rest = &after[gap + 1..];
        let space = rest.len() - rest.trim_start().len();
        return member.start..member.end + gap + 1 + space;
    }
    let before = text[..member.start].trim_end();
    match before.strip_suffix(',') {
        Some(kept) => kept.len()..member.end,
        None => member,
    }
}

/// `value` as a string in both JSON and TOML (basic string): only `"` and
/// `\` need escaping, as the callers refuse control characters.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Applies `edits` (none overlapping) to `text`.
pub fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| std::cmp::Reverse((e.range.start, e.range.end)));
    let mut out = text.to_string();
    for edit in edits {
        out.replace_range(edit.range, &edit.text);
    }
    out
}

/// Checks that a variable's name can be passed on: a shell name.
pub fn check_env_name(name: &str, at: &str) -> Result<(), McpError> {
    let mut bytes = name.bytes();
    let fits = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if fits {
        return Ok(());
    }
    Err(McpError::Entry {
        at: at.to_string(),
        message: format!(
            "its variable {name:?} is not a plain name (letters, digits, '_'), which cordon mcp run could pass"
        ),
    })
}

/// Checks a variable an entry sets (its `env`): a plain name, and not
/// one that steers cordon itself, since the client sets it for cordon's
/// own process.
pub fn check_env_set(name: &str, at: &str) -> Result<(), McpError> {
    check_env_name(name, at)?;
    if !crate::policy::defaults::steers_cordon(name) {
        return Ok(());
    }
    Err(McpError::Entry {
        at: at.to_string(),
        message: format!(
            "its env sets {name}, which the client sets for cordon itself, not only for the server (where cordon finds its policies, what it runs, code loaded into it); remove it from the entry, and give it to the server with [credentials] set_env in the server's policy if it needs it"
        ),
    })
}
