//! Every policy setting, declared once.
//!
//! A [`Key`] names a setting's place in the file format (`section.name`),
//! its command-line flag, how its value is read from a file and from
//! strings, where it lands in the [`Policy`] and how layers merge it
//! ([`Merge`]), what an untrusted project file may not do with it
//! ([`Widens`]), and how a value is shown. The loader (files, flags,
//! layering, the trust rule, the unknown-key lists), the command line and
//! `cordon explain` read these declarations, and so can an importer of
//! another tool's settings ([`find`], then
//! [`super::load::apply`]). A new setting is one entry in [`KEYS`]; the
//! trust test in `load` covers it without anyone remembering.

use std::fmt::Display;
use std::path::PathBuf;
use std::time::Duration;

use super::host::{parse_rule, HostRule};
use super::inspection::{HostMatch, HttpRule, InjectSpec};
use super::load::document::{Field, Node, Scalar};
use super::load::values::{
    self, check_connections, check_port, check_procs, check_protect, dedup_ports, human_duration,
    human_size, join_ports, one_file, parse_audit_file, parse_layer, AUDIT_OFF,
};
use super::load::LoadError;
use super::pattern::{PathContext, PathPattern};
use super::{Layer, Policy, Source, Sourced};

/// The sections of the file format, in the order errors list them.
pub const SECTIONS: &[&str] = &[
    "files",
    "limits",
    "network",
    "credentials",
    "sandbox",
    "audit",
];

/// One policy setting whose value, as one layer gives it, is a `V`.
pub struct Key<V: 'static> {
    /// Its names and examples.
    pub about: About,
    /// How a value is read.
    pub read: Read<V>,
    /// Where it lands in the policy, and how a later layer's value meets
    /// the one in force.
    pub merge: Merge<V>,
    /// What an untrusted project file may not do with it.
    pub widens: Widens<V>,
    /// A value as messages and `cordon explain` show it.
    pub show: fn(&V) -> String,
}

/// The names of a setting, whatever its value type.
pub struct About {
    /// Its section in the file format (one of [`SECTIONS`]).
    pub section: &'static str,
    /// Its key in that section.
    pub name: &'static str,
    /// Its command-line flag, if it has one.
    pub flag: Option<Flag>,
    /// Two valid TOML values: the first narrows the sandbox (or is
    /// neutral), the second widens it as [`Widens`] says (for a key that
    /// never widens, any two values). The trust test sets the first in the
    /// user config and the second in an untrusted project file.
    pub examples: [&'static str; 2],
}

impl About {
    /// `section.name`.
    pub fn dotted(&self) -> String {
        format!("{}.{}", self.section, self.name)
    }

    /// `--flag` when the key has one, else `section.name`: how a value
    /// given as strings names its source.
    pub fn flag_or_key(&self) -> String {
        self.flag.as_ref().map_or_else(|| self.dotted(), Flag::long)
    }
}

/// A command-line flag that sets a key.
pub struct Flag {
    /// The long name, without the leading `--`.
    pub name: &'static str,
    /// The placeholder in the help (empty for a switch).
    pub value_name: &'static str,
    /// The help text.
    pub help: &'static str,
    /// How many values it takes, and of what kind.
    pub takes: Takes,
}

impl Flag {
    /// `--name`: as errors and sources name it.
    pub fn long(&self) -> String {
        format!("--{}", self.name)
    }
}

/// How many values a flag takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// None: giving the flag sets the key to true.
    Switch,
    /// One value; giving the flag twice is a usage error.
    One(FlagType),
    /// One value each time; repeatable.
    Many(FlagType),
    /// Comma-separated values; repeatable.
    CommaList(FlagType),
}

/// What the command line checks a flag value is, before the key's own reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagType {
    /// Any text.
    Text,
    /// A whole number (`u64`).
    Number,
    /// A number that fits a TCP port (`u16`).
    Port,
}

/// How a key's value is read.
pub struct Read<V: 'static> {
    /// From its node in a policy file (errors name the file, line, column
    /// and key).
    pub file: fn(&Field<'_>, Node<'_>) -> Result<V, LoadError>,
    /// From strings, as flags (and importers) give it; relative paths are
    /// relative to the context's base.
    pub strings: fn(&[String], &PathContext<'_>) -> Result<V, String>,
}

/// How a layer's value meets the value in force.
pub enum Merge<V: 'static> {
    /// Its entries are added after those in force.
    Append(fn(&mut Policy, V, &Source)),
    /// It replaces the value in force.
    Replace {
        /// The value in force (none when unset).
        get: fn(&Policy) -> Option<&Sourced<V>>,
        /// Sets it.
        set: fn(&mut Policy, Sourced<V>),
    },
}

/// What an untrusted project file may not do with a key (see
/// [`super::trust`]). A kind that needs the value in force on a key that
/// [`Merge::Append`]s counts as widening: the rule fails closed.
pub enum Widens<V: 'static> {
    /// Nothing: the key only narrows (adds checks or takes access away).
    Never,
    /// Any value widens (moving or silencing the audit log).
    AnyValue,
    /// Any entry widens (each grants something); the function says
    /// whether a value has none.
    AnyEntry(fn(&V) -> bool),
    /// A value above the one in force widens.
    Raise {
        /// Whether the first value is above the second.
        above: fn(&V, &V) -> bool,
        /// "more" or "longer", for the message.
        word: &'static str,
    },
    /// Entries not among those in force widen (the value replaces them).
    NewEntries {
        /// The entries of the first value that the second lacks.
        added: fn(&V, &V) -> Vec<String>,
        /// What the entries are ("ports"), for the message.
        what: &'static str,
    },
    /// Turning off what the value in force turns on widens.
    TurnsOff {
        /// Whether a value turns it on.
        is_on: fn(&V) -> bool,
        /// What the value in force does when on, for the message.
        what: &'static str,
    },
}

/// The kind of a [`Widens`], without its functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WidensKind {
    /// [`Widens::Never`].
    Never,
    /// [`Widens::AnyValue`].
    AnyValue,
    /// [`Widens::AnyEntry`].
    AnyEntry,
    /// [`Widens::Raise`].
    Raise,
    /// [`Widens::NewEntries`].
    NewEntries,
    /// [`Widens::TurnsOff`].
    TurnsOff,
}

impl<V> Widens<V> {
    /// Its kind.
    pub fn kind(&self) -> WidensKind {
        match self {
            Widens::Never => WidensKind::Never,
            Widens::AnyValue => WidensKind::AnyValue,
            Widens::AnyEntry(_) => WidensKind::AnyEntry,
            Widens::Raise { .. } => WidensKind::Raise,
            Widens::NewEntries { .. } => WidensKind::NewEntries,
            Widens::TurnsOff { .. } => WidensKind::TurnsOff,
        }
    }
}

/// A key's value read from one layer, not yet applied.
pub trait Pending {
    /// The key it sets.
    fn key(&self) -> &'static dyn Declared;
    /// Why it would widen `in_force` (a detail ending in "; ", or empty
    /// when the key alone widens); `None` when it does not.
    fn widening(&self, in_force: &Policy) -> Option<String>;
    /// Applies it, every entry from `source`.
    fn apply(self: Box<Self>, policy: &mut Policy, source: &Source);
}

/// What every [`Key`] offers, whatever its value type: the table holds these.
pub trait Declared: Sync {
    /// Its names and examples.
    fn about(&self) -> &About;
    /// What an untrusted project file may not do with it.
    fn widens(&self) -> WidensKind;
    /// Whether layers append to it (else they replace it).
    fn appends(&self) -> bool;
    /// Reads its value from a policy file.
    fn read_file(
        &'static self,
        field: &Field<'_>,
        node: Node<'_>,
    ) -> Result<Box<dyn Pending>, LoadError>;
    /// Reads its value from strings (flags, importers).
    fn read_strings(
        &'static self,
        raw: &[String],
        ctx: &PathContext<'_>,
    ) -> Result<Box<dyn Pending>, String>;
}

/// Every policy setting, in the order of the command line's help; each
/// section's keys in the order its unknown-key error lists them.
pub static KEYS: &[&dyn Declared] = &[
    &ALLOW_WRITE,
    &ALLOW_READ,
    &DENY_READ,
    &DENY_WRITE,
    &PROTECT,
    &MAX_PROCS,
    &MAX_TMP,
    &MAX_MEMORY,
    &TIMEOUT,
    &LOCAL_PORTS,
    &UNIX_SOCKETS,
    &DENY_ENV,
    &KEEP_ENV,
    &CLEAR_ENV,
    &NET_ALLOW,
    &NET_DENY,
    &PORTS,
    &MAX_CONNECTIONS,
    &AUDIT_FILE,
    &ALLOW_DEGRADED,
    &INSPECT,
    &NO_INSPECT,
    &UPSTREAM_CA,
    &HTTP_RULES,
    &INJECT,
];

/// The key at `section.name` (the dotted name of the file format).
pub fn find(dotted: &str) -> Option<&'static dyn Declared> {
    KEYS.iter().copied().find(|k| k.about().dotted() == dotted)
}

/// The key that `--flag` sets (`flag` with or without the dashes).
pub fn by_flag(flag: &str) -> Option<&'static dyn Declared> {
    let name = flag.trim_start_matches("--");
    KEYS.iter()
        .copied()
        .find(|k| k.about().flag.as_ref().is_some_and(|f| f.name == name))
}

/// The keys of `section`, in declaration order.
pub fn in_section(section: &str) -> impl Iterator<Item = &'static dyn Declared> + '_ {
    KEYS.iter()
        .copied()
        .filter(move |k| k.about().section == section)
}

// ---------------------------------------------------------------------------
// Readers shared by the declarations.

/// An array of strings in a file, each read by `entry` against the file's
/// path context.
fn file_strings<T>(
    field: &Field<'_>,
    node: Node<'_>,
    entry: fn(&str, &PathContext<'_>) -> Result<T, String>,
) -> Result<Vec<T>, LoadError> {
    field.strings(node, |raw| entry(raw, field.ctx))
}

/// Strings, each read by `entry`.
fn each<T>(
    raw: &[String],
    ctx: &PathContext<'_>,
    entry: fn(&str, &PathContext<'_>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    raw.iter().map(|r| entry(r, ctx)).collect()
}

/// The one value of a key that takes one (the last, if given more).
fn last(raw: &[String]) -> Result<&str, String> {
    raw.last()
        .map(String::as_str)
        .ok_or_else(|| "needs a value".to_string())
}

fn path(raw: &str, ctx: &PathContext<'_>) -> Result<PathPattern, String> {
    PathPattern::parse(raw, ctx).map_err(|e| e.to_string())
}

fn host_rule(raw: &str, _: &PathContext<'_>) -> Result<HostRule, String> {
    parse_rule(raw).map_err(|e| e.to_string())
}

fn host_match(raw: &str, _: &PathContext<'_>) -> Result<HostMatch, String> {
    HostMatch::parse(raw).map_err(|e| e.to_string())
}

fn env_pattern(raw: &str, _: &PathContext<'_>) -> Result<String, String> {
    super::env::check_pattern(raw).map_err(|e| e.to_string())
}

fn protect_name(raw: &str, _: &PathContext<'_>) -> Result<String, String> {
    check_protect(raw)
}

fn layer(raw: &str, _: &PathContext<'_>) -> Result<Layer, String> {
    parse_layer(raw)
}

fn port(raw: &str, _: &PathContext<'_>) -> Result<u16, String> {
    let n: i64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("{raw:?} is not a TCP port (expected 1 to 65535)"))?;
    check_port(n)
}

fn number(raw: &str) -> Result<u64, String> {
    raw.trim()
        .parse()
        .map_err(|_| format!("{raw:?} is not a whole number"))
}

/// A list of displayable entries, comma-separated.
fn list<T: Display>(v: &[T]) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join(", ")
}

/// Adds `values` after the entries in force, each from `source`.
fn extend<T>(into: &mut Vec<Sourced<T>>, values: Vec<T>, source: &Source) {
    into.extend(values.into_iter().map(|v| Sourced::new(v, source.clone())));
}

/// Ports in the first list that the second lacks.
fn ports_added(new: &[u16], in_force: &[u16]) -> Vec<String> {
    new.iter()
        .filter(|p| !in_force.contains(p))
        .map(u16::to_string)
        .collect()
}

/// A path list in the `files` section.
const fn path_list(
    name: &'static str,
    flag: Option<Flag>,
    widens: Widens<Vec<PathPattern>>,
    examples: [&'static str; 2],
    append: fn(&mut Policy, Vec<PathPattern>, &Source),
) -> Key<Vec<PathPattern>> {
    Key {
        about: About {
            section: "files",
            name,
            flag,
            examples,
        },
        read: Read {
            file: |f, n| file_strings(f, n, path),
            strings: |raw, ctx| each(raw, ctx, path),
        },
        merge: Merge::Append(append),
        widens,
        show: |v| list(v),
    }
}

const fn many(name: &'static str, value_name: &'static str, help: &'static str) -> Option<Flag> {
    Some(Flag {
        name,
        value_name,
        help,
        takes: Takes::Many(FlagType::Text),
    })
}

const fn one(
    name: &'static str,
    value_name: &'static str,
    help: &'static str,
    kind: FlagType,
) -> Option<Flag> {
    Some(Flag {
        name,
        value_name,
        help,
        takes: Takes::One(kind),
    })
}

// ---------------------------------------------------------------------------
// [files]

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
    |p, v, s| extend(&mut p.files.deny_write, v, s),
);

/// `files.protect`: array of names, relative to the project and to every
/// git repository under it, kept read-only and uncreatable (added to
/// [`super::defaults::PROTECTED_NAMES`]). Relative, no `..`, no globs; a
/// trailing `/` marks a directory, other names are files. Narrows.
pub static PROTECT: Key<Vec<String>> = Key {
    about: About {
        section: "files",
        name: "protect",
        flag: None,
        examples: ["[\".github/workflows/\"]", "[\"Makefile\"]"],
    },
    read: Read {
        file: |f, n| file_strings(f, n, protect_name),
        strings: |raw, ctx| each(raw, ctx, protect_name),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.files.protected, v, s)),
    widens: Widens::Never,
    show: |v| v.join(", "),
};

// ---------------------------------------------------------------------------
// [limits]

/// `limits.max_procs`: integer, at least 1. Most tasks alive at once.
/// Narrows when not larger than the value in force.
pub static MAX_PROCS: Key<u64> = Key {
    about: About {
        section: "limits",
        name: "max_procs",
        flag: one(
            "max-procs",
            "N",
            "Most tasks (processes + threads) alive at once [default: 4096]",
            FlagType::Number,
        ),
        examples: ["100", "100000"],
    },
    read: Read {
        file: |f, n| f.scalar(n, |v| count(v, check_procs)),
        strings: |raw, _| last(raw).and_then(number).and_then(check_procs),
    },
    merge: Merge::Replace {
        get: |p| Some(&p.limits.max_procs),
        set: |p, v| p.limits.max_procs = v,
    },
    widens: Widens::Raise {
        above: u64::gt,
        word: "more",
    },
    show: u64::to_string,
};

/// `limits.max_tmp`: size string (`"512M"`) or integer bytes. Size of the
/// private temp dir. Narrows when not larger than the value in force.
pub static MAX_TMP: Key<u64> = size_key(
    "max_tmp",
    one(
        "max-tmp",
        "SIZE",
        "Size of the private /tmp, e.g. 512M [default: 1G]",
        FlagType::Text,
    ),
    ["\"512M\"", "\"2G\""],
    |p| Some(&p.limits.max_tmp),
    |p, v| p.limits.max_tmp = v,
);

/// `limits.max_memory`: size string (`"8G"`) or integer bytes. Memory cap.
/// Narrows when none was set or it is not larger than the value in force.
pub static MAX_MEMORY: Key<u64> = size_key(
    "max_memory",
    one(
        "max-memory",
        "SIZE",
        "Memory cap for the whole sandbox, e.g. 8G [default: none]",
        FlagType::Text,
    ),
    ["\"4G\"", "\"16G\""],
    |p| p.limits.max_memory.as_ref(),
    |p, v| p.limits.max_memory = Some(v),
);

const fn size_key(
    name: &'static str,
    flag: Option<Flag>,
    examples: [&'static str; 2],
    get: fn(&Policy) -> Option<&Sourced<u64>>,
    set: fn(&mut Policy, Sourced<u64>),
) -> Key<u64> {
    Key {
        about: About {
            section: "limits",
            name,
            flag,
            examples,
        },
        read: Read {
            file: |f, n| f.scalar(n, values::size),
            strings: |raw, _| {
                last(raw)
                    .and_then(values::parse_size)
                    .and_then(values::nonzero_size)
            },
        },
        merge: Merge::Replace { get, set },
        widens: Widens::Raise {
            above: u64::gt,
            word: "more",
        },
        show: |v| human_size(*v),
    }
}

/// `limits.timeout`: duration string (`"2h"`, `"1h30m"`) or integer
/// seconds. Wall-clock limit. Narrows when none was set or it is not
/// longer than the value in force.
pub static TIMEOUT: Key<Duration> = Key {
    about: About {
        section: "limits",
        name: "timeout",
        flag: one(
            "timeout",
            "DURATION",
            "Kill the sandbox after DURATION, e.g. 30m, 2h, 90s (exit code 124)",
            FlagType::Text,
        ),
        examples: ["\"1h\"", "\"3h\""],
    },
    read: Read {
        file: |f, n| f.scalar(n, values::duration),
        strings: |raw, _| {
            last(raw)
                .and_then(values::parse_duration)
                .and_then(values::nonzero_duration)
        },
    },
    merge: Merge::Replace {
        get: |p| p.limits.timeout.as_ref(),
        set: |p, v| p.limits.timeout = Some(v),
    },
    widens: Widens::Raise {
        above: Duration::gt,
        word: "longer",
    },
    show: |v| human_duration(*v),
};

/// A whole number at least 1 in a file, checked by `check`.
fn count(v: Scalar<'_>, check: fn(u64) -> Result<u64, String>) -> Result<u64, String> {
    match v {
        Scalar::Integer(n) => u64::try_from(n)
            .map_err(|_| "must be at least 1".to_string())
            .and_then(check),
        other => Err(format!("expected an integer, found {}", other.kind())),
    }
}

// ---------------------------------------------------------------------------
// [network]

/// `network.local_ports`: array of TCP ports (1 to 65535) that programs
/// inside may bind and connect to on the sandbox's own loopback. Widens.
pub static LOCAL_PORTS: Key<Vec<u16>> = Key {
    about: About {
        section: "network",
        name: "local_ports",
        flag: Some(Flag {
            name: "allow-local-port",
            value_name: "PORT",
            help: "TCP port programs inside may bind and connect to on the sandbox's own lo (repeatable)",
            takes: Takes::Many(FlagType::Port),
        }),
        examples: ["[]", "[3000]"],
    },
    read: Read {
        file: |f, n| f.integers(n, check_port),
        strings: |raw, ctx| each(raw, ctx, port),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.network.local_ports, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| join_ports(v),
};

/// `network.allow_unix_sockets`: array of paths of host UNIX sockets
/// programs inside may connect to. Widens.
pub static UNIX_SOCKETS: Key<Vec<PathPattern>> = Key {
    about: About {
        section: "network",
        name: "allow_unix_sockets",
        flag: many(
            "allow-unix-socket",
            "PATH",
            "Let programs inside connect to the host UNIX socket at PATH (repeatable). Docker's, containerd's and podman's sockets give root on the host",
        ),
        examples: ["[]", "[\"/run/user/1000/gnupg/S.gpg-agent\"]"],
    },
    read: Read {
        file: |f, n| file_strings(f, n, path),
        strings: |raw, ctx| each(raw, ctx, path),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.network.unix_sockets, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
};

/// `network.allow`: array of host patterns (see [`super::host`]:
/// `api.github.com`, `*.example.com`, an IP or CIDR, each with an optional
/// `:PORT`, and `host.cordon.internal:PORT`) the proxy may connect to. Widens.
pub static NET_ALLOW: Key<Vec<HostRule>> = Key {
    about: About {
        section: "network",
        name: "allow",
        flag: many(
            "allow-domain",
            "PATTERN",
            "Let the proxy connect to PATTERN (repeatable): api.github.com, *.example.com (subdomains only), example.com:8443, an IP or CIDR (10.1.0.0/16:5432), host.cordon.internal:PORT (the host's own 127.0.0.1:PORT)",
        ),
        examples: ["[]", "[\"api.github.com\"]"],
    },
    read: Read {
        file: |f, n| file_strings(f, n, host_rule),
        strings: |raw, ctx| each(raw, ctx, host_rule),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.network.hosts.allow, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
};

/// `network.deny`: array of host patterns the proxy refuses whatever
/// allows them. Narrows.
pub static NET_DENY: Key<Vec<HostRule>> = Key {
    about: About {
        section: "network",
        name: "deny",
        flag: many(
            "deny-domain",
            "PATTERN",
            "Refuse PATTERN even if an allow rule covers it (repeatable; same forms as --allow-domain)",
        ),
        examples: ["[\"upload.example.com\"]", "[\"10.0.0.0/8\"]"],
    },
    read: Read {
        file: |f, n| file_strings(f, n, host_rule),
        strings: |raw, ctx| each(raw, ctx, host_rule),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.network.hosts.deny, v, s)),
    widens: Widens::Never,
    show: |v| list(v),
};

/// `network.ports`: array of TCP ports that allow rules without a `:PORT`
/// admit; replaces the value in force (80 and 443 by default). Narrows
/// when every port is already in force.
pub static PORTS: Key<Vec<u16>> = Key {
    about: About {
        section: "network",
        name: "ports",
        flag: Some(Flag {
            name: "ports",
            value_name: "PORT",
            help: "Ports that --allow-domain rules without :PORT allow [default: 80,443]",
            takes: Takes::CommaList(FlagType::Port),
        }),
        examples: ["[443]", "[443, 8443]"],
    },
    read: Read {
        file: |f, n| f.integers(n, check_port).map(dedup_ports),
        strings: |raw, ctx| each(raw, ctx, port).map(dedup_ports),
    },
    merge: Merge::Replace {
        get: |p| Some(&p.network.hosts.ports),
        set: |p, v| p.network.hosts.ports = v,
    },
    widens: Widens::NewEntries {
        added: |new, in_force| ports_added(new, in_force),
        what: "ports",
    },
    show: |v| join_ports(v),
};

/// `network.max_connections`: integer, at least 1. Connections the proxy
/// serves at once; more are refused (HTTP 503, SOCKS5 reply 1) and the
/// first refusal is reported. Narrows when not larger than the value in
/// force.
pub static MAX_CONNECTIONS: Key<u64> = Key {
    about: About {
        section: "network",
        name: "max_connections",
        flag: one(
            "max-connections",
            "N",
            "Proxy connections served at once; more are refused (HTTP 503, SOCKS5 reply 1) and the first refusal is reported [default: 4096]",
            FlagType::Number,
        ),
        examples: ["16", "5000"],
    },
    read: Read {
        file: |f, n| f.scalar(n, |v| count(v, check_connections)),
        strings: |raw, _| last(raw).and_then(number).and_then(check_connections),
    },
    merge: Merge::Replace {
        get: |p| Some(&p.network.max_connections),
        set: |p, v| p.network.max_connections = v,
    },
    widens: Widens::Raise {
        above: u64::gt,
        word: "more",
    },
    show: u64::to_string,
};

/// `network.inspect`: array of hosts (`*`, or host patterns as in
/// `network.allow`) whose TLS the proxy terminates. Narrows: it only adds
/// checks.
pub static INSPECT: Key<Vec<HostMatch>> = Key {
    about: About {
        section: "network",
        name: "inspect",
        flag: many(
            "inspect",
            "HOST",
            "Terminate TLS to HOST in the proxy (repeatable; `*` = every allowed host), with a CA made for this sandbox and trusted inside: enables [[network.rules]] and [[credentials.inject]] there. Hosts named by those are inspected anyway",
        ),
        examples: ["[\"api.github.com\"]", "[\"*\"]"],
    },
    read: Read {
        file: |f, n| file_strings(f, n, host_match),
        strings: |raw, ctx| each(raw, ctx, host_match),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.inspect, v, s)),
    widens: Widens::Never,
    show: |v| list(v),
};

/// `network.no_inspect`: array of hosts that stay opaque tunnels. Widens:
/// it takes checks away.
pub static NO_INSPECT: Key<Vec<HostMatch>> = Key {
    about: About {
        section: "network",
        name: "no_inspect",
        flag: many(
            "no-inspect",
            "HOST",
            "Keep HOST an opaque tunnel even if --inspect covers it (pinned clients, mTLS; repeatable)",
        ),
        examples: ["[]", "[\"pinned.example\"]"],
    },
    read: Read {
        file: |f, n| file_strings(f, n, host_match),
        strings: |raw, ctx| each(raw, ctx, host_match),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.no_inspect, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
};

/// `network.upstream_ca`: array of PEM files whose certificates are
/// trusted as roots for upstream servers. Widens.
pub static UPSTREAM_CA: Key<Vec<PathBuf>> = Key {
    about: About {
        section: "network",
        name: "upstream_ca",
        flag: many(
            "upstream-ca",
            "FILE",
            "Also trust the CA certificates in FILE (PEM) for inspected upstreams (repeatable)",
        ),
        examples: ["[]", "[\"ca.pem\"]"],
    },
    read: Read {
        file: |f, n| file_strings(f, n, one_file),
        strings: |raw, ctx| each(raw, ctx, one_file),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.upstream_ca, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| {
        v.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    },
};

/// `[[network.rules]]`: tables with `host` (required), `methods` and
/// `paths` (globs): on an inspected host, only those. Narrows.
pub static HTTP_RULES: Key<Vec<HttpRule>> = Key {
    about: About {
        section: "network",
        name: "rules",
        flag: None,
        examples: [
            "[{ host = \"api.github.com\", methods = [\"GET\"] }]",
            "[{ host = \"a.com\", paths = [\"/repos/**\"] }]",
        ],
    },
    read: Read {
        file: |f, n| f.tables(n, super::load::tables::http_rule),
        strings: |_, _| Err("set only in a policy file ([[network.rules]] tables)".to_string()),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.rules, v, s)),
    widens: Widens::Never,
    show: |v| list(v),
};

// ---------------------------------------------------------------------------
// [credentials]

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
    read: Read {
        file: |f, n| file_strings(f, n, env_pattern),
        strings: |raw, ctx| each(raw, ctx, env_pattern),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.env.deny, v, s)),
    widens: Widens::Never,
    show: |v| v.join(", "),
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
    read: Read {
        file: |f, n| file_strings(f, n, env_pattern),
        strings: |raw, ctx| each(raw, ctx, env_pattern),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.env.keep, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| v.join(", "),
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
    read: Read {
        file: |f, n| {
            f.scalar(n, |v| match v {
                Scalar::Boolean(b) => Ok(b),
                other => Err(format!("expected true or false, found {}", other.kind())),
            })
        },
        // A switch: given alone it turns the key on.
        strings: |raw, _| match raw.last().map(String::as_str) {
            None | Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(other) => Err(format!("expected true or false, found {other:?}")),
        },
    },
    merge: Merge::Replace {
        get: |p| Some(&p.env.clear),
        set: |p, v| p.env.clear = v,
    },
    widens: Widens::TurnsOff {
        is_on: |v| *v,
        what: "clears the environment",
    },
    show: bool::to_string,
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
        file: |f, n| f.tables(n, super::load::tables::inject),
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
};

// ---------------------------------------------------------------------------
// [sandbox]

/// `sandbox.allow_degraded`: array of layer names (`namespaces`,
/// `landlock`, `seccomp`, `limits`) cordon may run without when the kernel
/// cannot apply them. Widens.
pub static ALLOW_DEGRADED: Key<Vec<Layer>> = Key {
    about: About {
        section: "sandbox",
        name: "allow_degraded",
        flag: Some(Flag {
            name: "allow-degraded",
            value_name: "LAYER",
            help: "Run even if LAYER cannot be applied (namespaces, landlock, seccomp, limits); warns every time",
            takes: Takes::CommaList(FlagType::Text),
        }),
        examples: ["[]", "[\"landlock\"]"],
    },
    read: Read {
        file: |f, n| file_strings(f, n, layer),
        strings: |raw, ctx| each(raw, ctx, layer),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.allow_degraded, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
};

// ---------------------------------------------------------------------------
// [audit]

/// `audit.file`: the audit log (a path; `"none"` turns the log off).
/// Always widening in a project file: an untrusted repository must not
/// redirect or silence the record of what ran in it.
pub static AUDIT_FILE: Key<Option<PathBuf>> = Key {
    about: About {
        section: "audit",
        name: "file",
        flag: one(
            "audit",
            "FILE",
            "Append one JSON line per decision (allowed and blocked connections, with the rule that decided) to FILE, each line authenticated with your audit key; `--audit none` turns the log off [default: $XDG_STATE_HOME/cordon/audit.jsonl, else ~/.local/state/cordon/audit.jsonl]. If the log cannot be opened, nothing runs",
            FlagType::Text,
        ),
        examples: ["\"log.jsonl\"", "\"none\""],
    },
    read: Read {
        file: |f, n| {
            f.scalar(n, |v| match v {
                Scalar::String(s) => parse_audit_file(s, f.ctx),
                other => Err(format!(
                    "expected a path (or \"{AUDIT_OFF}\"), found {}",
                    other.kind()
                )),
            })
        },
        strings: |raw, ctx| last(raw).and_then(|r| parse_audit_file(r, ctx)),
    },
    merge: Merge::Replace {
        get: |p| Some(&p.audit.log),
        set: |p, v| p.audit.log = v,
    },
    widens: Widens::AnyValue,
    show: |v| match v {
        Some(path) => path.display().to_string(),
        None => AUDIT_OFF.to_string(),
    },
};

// ---------------------------------------------------------------------------
// The table's entries, whatever their value type.

/// A key's value from one layer.
struct Set<V: 'static> {
    key: &'static Key<V>,
    value: V,
}

impl<V: 'static> Declared for Key<V> {
    fn about(&self) -> &About {
        &self.about
    }

    fn widens(&self) -> WidensKind {
        self.widens.kind()
    }

    fn appends(&self) -> bool {
        matches!(self.merge, Merge::Append(_))
    }

    fn read_file(
        &'static self,
        field: &Field<'_>,
        node: Node<'_>,
    ) -> Result<Box<dyn Pending>, LoadError> {
        let value = (self.read.file)(field, node)?;
        Ok(Box::new(Set { key: self, value }))
    }

    fn read_strings(
        &'static self,
        raw: &[String],
        ctx: &PathContext<'_>,
    ) -> Result<Box<dyn Pending>, String> {
        let value = (self.read.strings)(raw, ctx)?;
        Ok(Box::new(Set { key: self, value }))
    }
}

impl<V: 'static> Pending for Set<V> {
    fn key(&self) -> &'static dyn Declared {
        self.key
    }

    fn widening(&self, in_force: &Policy) -> Option<String> {
        super::load::widen::detail(self.key, &self.value, in_force)
    }

    fn apply(self: Box<Self>, policy: &mut Policy, source: &Source) {
        match self.key.merge {
            Merge::Append(append) => append(policy, self.value, source),
            Merge::Replace { set, .. } => set(policy, Sourced::new(self.value, source.clone())),
        }
    }
}
