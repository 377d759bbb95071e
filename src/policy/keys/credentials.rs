//! `[credentials]`: the environment the command sees, injected secrets.

use super::readers::{env_pattern, extend, many, SWITCH};
use super::{About, Door, Explain, Flag, Key, Merge, Read, Takes, Widens};
use crate::policy::inspection::{check_var_name, InjectSpec};
use crate::policy::load::document::table_string;

/// `credentials.deny_env`: array of variable names or globs the command
/// never sees, besides the built-in secret patterns. Narrows.
pub static DENY_ENV: Key<Vec<String>> = Key {
    about: About {
        section: "credentials",
        name: "deny_env",
        flag: many(
            "deny-env",
            "NAME",
            "Also unset NAME (or a glob, e.g. 'CORP_*') in the command's environment (repeatable). Secret-looking names (*_TOKEN, *SECRET*, *_API_KEY, *PASSWORD*, AWS keys, ...) are unset already; `cordon explain` lists them",
        ),
        examples: ["[\"CORP_*\"]", "[\"HOME\"]"],
    },
    read: each_string!(env_pattern),
    merge: Merge::Append(|p, v, s| extend(&mut p.env.deny, v, s)),
    widens: Widens::Never,
    show: |v| v.join(", "),
    explain: Explain::Door(Door::EnvDeny),
};

/// `credentials.keep_env`: array of names or globs the command keeps
/// although a pattern (or `clear_env`) would remove them. Widens.
pub static KEEP_ENV: Key<Vec<String>> = Key {
    about: About {
        section: "credentials",
        name: "keep_env",
        flag: many(
            "keep-env",
            "NAME",
            "Keep NAME (or a glob) although a secret pattern, or --clear-env, would unset it (repeatable)",
        ),
        examples: ["[]", "[\"GITHUB_TOKEN\"]"],
    },
    read: each_string!(env_pattern),
    merge: Merge::Append(|p, v, s| extend(&mut p.env.keep, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| v.join(", "),
    explain: Explain::Door(Door::EnvKeep),
};

/// `credentials.clear_env`: boolean; true starts the command from an
/// empty environment plus `keep_env`. Widens when it turns it off.
pub static CLEAR_ENV: Key<bool> = Key {
    about: About {
        section: "credentials",
        name: "clear_env",
        flag: Some(Flag {
            name: "clear-env",
            value_name: "",
            help: "Start the command from an empty environment, plus --keep-env names and cordon's own (TMPDIR, the proxy variables)",
            takes: Takes::Switch,
        }),
        examples: ["true", "false"],
    },
    read: SWITCH,
    merge: Merge::Replace {
        get: |p| Some(&p.env.clear),
        set: |p, v| p.env.clear = v,
    },
    widens: Widens::TurnsOff {
        is_on: |v| *v,
        what: "clears the environment",
    },
    show: bool::to_string,
    explain: Explain::Door(Door::EnvClear),
};

/// `credentials.pass_env`: array of names or globs that pass although
/// `clear_env` empties the environment; unlike `keep_env`, a secret
/// among them is still unset (or holds its placeholder when injected).
/// `cordon mcp run` passes an MCP server's own variables so. Widens.
pub static PASS_ENV: Key<Vec<String>> = Key {
    about: About {
        section: "credentials",
        name: "pass_env",
        flag: many(
            "pass-env",
            "NAME",
            "With --clear-env, still pass NAME (or a glob) from cordon's environment; a secret among them is unset all the same (repeatable)",
        ),
        examples: ["[]", "[\"PATH\", \"HOME\"]"],
    },
    read: each_string!(env_pattern),
    merge: Merge::Append(|p, v, s| extend(&mut p.env.pass, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| v.join(", "),
    explain: Explain::Door(Door::EnvPass),
};

/// `[[credentials.inject]]`: tables with `env` (the variable, required),
/// `file` or `command` (else the value comes from cordon's own `env`), and
/// `hosts` (required): a real value sent to those hosts. Widens.
pub static INJECT: Key<Vec<InjectSpec>> = Key {
    about: About {
        section: "credentials",
        name: "inject",
        flag: None,
        examples: [
            "[]",
            "[{ env = \"AWS_SECRET_ACCESS_KEY\", hosts = [\"evil.example\"] }]",
        ],
    },
    read: Read {
        file: |f, n| f.tables(n, crate::policy::load::tables::inject),
        strings: |_, _| Err("set only in a policy file ([[credentials.inject]] tables)".to_string()),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.inject, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| {
        v.iter()
            .map(|i| i.env.clone())
            .collect::<Vec<_>>()
            .join(", ")
    },
    explain: Explain::Door(Door::Inject),
};

/// `credentials.set_env`: a table of variable names and values the
/// command's environment gets (`{ DISABLE_AUTOUPDATER = "1" }`); a later
/// layer's value of a name wins. Not a variable cordon sets itself (the
/// temporary directory, the proxy's, the CA bundle's, an injected
/// secret's placeholder). Narrows: what runs inside is the sandbox's to
/// choose.
pub static SET_ENV: Key<Vec<(String, String)>> = Key {
    about: About {
        section: "credentials",
        name: "set_env",
        flag: many(
            "set-env",
            "NAME=VALUE",
            "Set NAME to VALUE in the command's environment (repeatable); not a variable cordon sets itself (TMPDIR, the proxy's, the CA bundle's, an injected secret's)",
        ),
        examples: ["{}", "{ DISABLE_AUTOUPDATER = \"1\" }"],
    },
    read: Read {
        file: |f, n| {
            let Some(entries) = n.entries() else {
                return Err(f.invalid(
                    n.span(),
                    format!("expected a table of names and values, found {}", n.kind()),
                ));
            };
            entries
                .into_iter()
                .map(|(name, value)| {
                    let field = format!("{}.{}", f.name, name.name);
                    let value = table_string(f.doc, &field, &value)?;
                    set_entry(name.name, value)
                        .map_err(|m| f.doc.invalid(&name.span, &field, m))
                })
                .collect()
        },
        strings: |raw, _| {
            raw.iter()
                .map(|r| {
                    let (name, value) = r
                        .split_once('=')
                        .ok_or_else(|| format!("{r:?}: expected NAME=VALUE"))?;
                    set_entry(name, value.to_string())
                })
                .collect()
        },
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.env.set, v, s)),
    widens: Widens::Never,
    show: |v| {
        v.iter()
            .map(|(n, _)| n.clone())
            .collect::<Vec<_>>()
            .join(", ")
    },
    explain: Explain::Door(Door::EnvSet),
};

/// One `set_env` entry: a variable name and a value without NUL.
fn set_entry(name: &str, value: String) -> Result<(String, String), String> {
    let name = check_var_name(name).map_err(|e| e.to_string())?;
    if value.contains('\0') {
        return Err(format!("{name}: a value cannot hold a NUL byte"));
    }
    Ok((name, value))
}
