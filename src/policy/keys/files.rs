//! `[files]`: what the sandbox may read and write.

use super::readers::{each, extend, many, path_list, protect_name, SWITCH};
use super::{About, Door, Explain, Flag, Key, Merge, Read, Row, Takes, Widens};
use crate::policy::cache::Cache;
use crate::policy::pattern::PathPattern;
use crate::policy::state::{StateDir, StateFile};

/// `files.allow_write`: array of paths. Extra writable paths, besides the
/// project and the private temp dir. Widens.
pub static ALLOW_WRITE: Key<Vec<PathPattern>> = path_list(
    "allow_write",
    many(
        "allow-write",
        "PATH",
        "Also make PATH writable (repeatable)",
    ),
    Widens::AnyEntry(Vec::is_empty),
    ["[]", "[\"/var/tmp/build\"]"],
    Door::Writable,
    |p, v, s| extend(&mut p.files.allow_write, v, s),
);

/// `files.allow_read`: array of paths. Paths readable again although a
/// deny rule (e.g. the built-in credential list) covers them. Widens.
pub static ALLOW_READ: Key<Vec<PathPattern>> = path_list(
    "allow_read",
    many(
        "allow-read",
        "PATH",
        "Re-allow reading PATH although a deny rule (e.g. the credential list) covers it (repeatable)",
    ),
    Widens::AnyEntry(Vec::is_empty),
    ["[]", "[\"~/.ssh\"]"],
    Door::ReAllowed,
    |p, v, s| extend(&mut p.files.allow_read, v, s),
);

/// `files.deny_read`: array of paths or globs made unreadable. Narrows.
pub static DENY_READ: Key<Vec<PathPattern>> = path_list(
    "deny_read",
    many(
        "deny-read",
        "PATH",
        "Make PATH unreadable (repeatable; globs allowed)",
    ),
    Widens::Never,
    ["[\"./.env\"]", "[\"./**/*.pem\"]"],
    Door::Unreadable,
    |p, v, s| extend(&mut p.files.deny_read, v, s),
);

/// `files.deny_write`: array of paths or globs kept read-only inside
/// writable areas. Narrows.
pub static DENY_WRITE: Key<Vec<PathPattern>> = path_list(
    "deny_write",
    many(
        "deny-write",
        "PATH",
        "Keep PATH read-only even inside a writable area (repeatable; globs allowed)",
    ),
    Widens::Never,
    ["[\"./vendor\"]", "[\"/opt/**/*.so\"]"],
    Door::ReadOnly,
    |p, v, s| extend(&mut p.files.deny_write, v, s),
);

/// `files.protect`: array of names, relative to the project and to every
/// git repository under it, kept read-only and uncreatable (added to
/// [`crate::policy::defaults::PROTECTED_NAMES`]). Relative, no `..`, no globs; a
/// trailing `/` marks a directory, other names are files. Narrows.
pub static PROTECT: Key<Vec<String>> = Key {
    about: About {
        section: "files",
        name: "protect",
        flag: None,
        examples: ["[\".github/workflows/\"]", "[\"Makefile\"]"],
    },
    read: each_string!(protect_name),
    merge: Merge::Append(|p, v, s| extend(&mut p.files.protected, v, s)),
    widens: Widens::Never,
    show: |v| v.join(", "),
    explain: Explain::Door(Door::Protected),
};

/// `files.read_only_project`: boolean; true keeps the project directory
/// read-only inside like the rest of the root (`cordon mcp run` starts
/// from true: an MCP server writes the workspace only when its policy
/// says false). Widens when it turns it off.
pub static READ_ONLY_PROJECT: Key<bool> = Key {
    about: About {
        section: "files",
        name: "read_only_project",
        flag: Some(Flag {
            name: "read-only-project",
            value_name: "",
            help: "Keep the project directory read-only too (only the private /tmp and --allow-write paths are writable)",
            takes: Takes::Switch,
        }),
        examples: ["true", "false"],
    },
    read: SWITCH,
    merge: Merge::Replace {
        get: |p| Some(&p.files.read_only_project),
        set: |p, v| p.files.read_only_project = v,
    },
    widens: Widens::TurnsOff {
        is_on: |v| *v,
        what: "keeps the project read-only",
    },
    show: bool::to_string,
    explain: Explain::Row(Row {
        label: "project read-only",
        note: "{}",
        json: |v| vec![("value", serde_json::json!(v))],
    }),
};

/// `files.cache`: array of host directories (a path, or a table with
/// `path` and `env`) the sandbox sees writable, with every write kept in a
/// private layer per project and the host's directory left unchanged (see
/// [`crate::policy::cache`]). Widens.
pub static CACHE: Key<Vec<Cache>> = Key {
    about: About {
        section: "files",
        name: "cache",
        flag: many(
            "cache",
            "PATH[=VAR]",
            "Let the sandbox write the host directory PATH (a tool's cache: ~/.npm, ~/.cache/pip) into a private layer cordon keeps per project; the host's directory never changes. =VAR also sets the variable VAR to where the cache is inside (repeatable)",
        ),
        examples: ["[]", "[\"/var/cache/npm\"]"],
    },
    read: Read {
        file: crate::policy::load::tables::caches,
        strings: |raw, ctx| each(raw, ctx, Cache::parse_flag),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.files.caches, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| {
        v.iter()
            .map(|c| c.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    },
    explain: Explain::Door(Door::Caches),
};

/// `[[files.state]]`: tables with `dir` (an agent's state directory) and
/// `writable` (the names in it the agent keeps its state in): `dir` is
/// writable in those names only; everything else in it stays read-only,
/// and no other name can be made in it (see [`crate::policy::state`]).
/// Widens.
pub static STATE: Key<Vec<StateDir>> = Key {
    about: About {
        section: "files",
        name: "state",
        flag: None,
        examples: ["[]", "[{ dir = \"~/.claude\", writable = [\"projects\"] }]"],
    },
    read: Read {
        file: |f, n| f.tables(n, crate::policy::load::tables::state),
        strings: |_, _| Err("set only in a policy file ([[files.state]] tables)".to_string()),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.files.state, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| {
        v.iter()
            .map(|d| d.dir.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    },
    explain: Explain::Door(Door::State),
};

/// `[[files.state_file]]`: tables with `path` (an agent's config file
/// beside its state directory, `~/.claude.json`) and `unchanged` (JSON
/// paths whose values may not change): the sandbox may replace the file,
/// as the agent does (a temporary file renamed over it), when those values
/// are as they were (see [`crate::policy::state`]). Widens.
pub static STATE_FILE: Key<Vec<StateFile>> = Key {
    about: About {
        section: "files",
        name: "state_file",
        flag: None,
        examples: [
            "[]",
            "[{ path = \"~/.claude.json\", unchanged = [\"mcpServers\"] }]",
        ],
    },
    read: Read {
        file: |f, n| f.tables(n, crate::policy::load::tables::state_file),
        strings: |_, _| Err("set only in a policy file ([[files.state_file]] tables)".to_string()),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.files.state_files, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| {
        v.iter()
            .map(|f| f.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    },
    explain: Explain::Door(Door::State),
};
