//! Every policy setting, declared once.
//!
//! A [`Key`] names a setting's place in the file format (`section.name`),
//! its command-line flag, how its value is read from a file and from
//! strings, where it lands in the [`Policy`] and how layers merge it
//! ([`Merge`]), what an untrusted project file may not do with it
//! ([`Widens`]), how a value is shown, and where `cordon explain` shows
//! it ([`Explain`]: a row built from the declaration, or a door's own
//! rendering). The loader (files, flags,
//! layering, the trust rule, the unknown-key lists), the command line and
//! `cordon explain` read these declarations, and so can an importer of
//! another tool's settings ([`find`], then
//! [`super::load::apply`]). A new setting is one entry in [`KEYS`]; the
//! trust test in `load` and `tests/explain_keys.rs` (every key shows in
//! `explain`, text and JSON) cover it without anyone remembering.

/// A key whose value is a list of strings, each read by `$entry`: from a
/// file's array of strings, or from strings.
macro_rules! each_string {
    ($entry:path) => {
        $crate::policy::keys::Read {
            file: |f, n| $crate::policy::keys::readers::file_strings(f, n, $entry),
            strings: |raw, ctx| $crate::policy::keys::readers::each(raw, ctx, $entry),
        }
    };
}

mod audit;
mod credentials;
mod files;
mod limits;
mod network;
mod readers;
mod sandbox;

pub use audit::AUDIT_FILE;
pub use credentials::{CLEAR_ENV, DENY_ENV, INJECT, KEEP_ENV, PASS_ENV, SET_ENV};
pub use files::{
    ALLOW_READ, ALLOW_WRITE, CACHE, DENY_READ, DENY_WRITE, PROTECT, READ_ONLY_PROJECT, STATE,
    STATE_FILE,
};
pub use limits::{MAX_MEMORY, MAX_PROCS, MAX_TMP, TIMEOUT};
pub use network::{
    HOST_PORTS, HTTP_RULES, INSPECT, LOCAL_PORTS, MAX_CONNECTIONS, NET_ALLOW, NET_DENY, NO_INSPECT,
    PORTS, PRESETS, PUBLISH, UNIX_SOCKETS, UPSTREAM_CA,
};
pub use sandbox::{AGENT, ALLOW_DEGRADED};

use super::load::document::{Field, Node};
use super::load::LoadError;
use super::pattern::PathContext;
use super::{Policy, Source, Sourced};

/// The source of a row with no value in force.
static BUILTIN: Source = Source::Builtin;

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
    /// Where and how `cordon explain` shows it.
    pub explain: Explain<V>,
}

/// How `cordon explain` shows a key.
pub enum Explain<V: 'static> {
    /// One row among its section's settings, built from the declaration
    /// alone: a key declared so appears in `explain` (text and JSON, under
    /// its section and name) with no other edit.
    Row(Row<V>),
    /// A door's own rendering, for values that need more than one row
    /// (resolved paths, host rules, the environment scrub): `explain`
    /// renders the keys that name it where that door's lines stand.
    Door(Door),
}

/// A setting's row in `cordon explain`: `label`, the note, the source.
/// A [`Merge::Replace`] key only (one value in force); when none is in
/// force the row says `none` and comes from the built-in defaults.
pub struct Row<V: 'static> {
    /// The first column (the key's name when empty).
    pub label: &'static str,
    /// The note; `{}` stands for the value as [`Key::show`] gives it.
    pub note: &'static str,
    /// The value's fields in the JSON rendering, besides its source.
    pub json: fn(&V) -> Vec<(&'static str, serde_json::Value)>,
}

/// A part of a door that `cordon explain` renders on its own, where that
/// door's lines stand; each names the one key whose values it shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// The writable paths.
    Writable,
    /// The unreadable paths.
    Unreadable,
    /// The read-only paths inside writable areas.
    ReadOnly,
    /// The protected names.
    Protected,
    /// The paths re-allowed for reading.
    ReAllowed,
    /// The caches and their private layers.
    Caches,
    /// The agents' state directories.
    State,
    /// The sandbox's own loopback ports.
    LocalPorts,
    /// The host ports forwarded into the sandbox.
    HostPorts,
    /// The sandbox's servers published on the host.
    Publish,
    /// The host UNIX sockets reachable inside.
    UnixSockets,
    /// The presets named.
    Presets,
    /// The agent profiles named.
    Agent,
    /// The proxy's allow rules.
    HostAllow,
    /// The proxy's deny rules.
    HostDeny,
    /// The hosts whose TLS is inspected.
    Inspect,
    /// The hosts kept opaque.
    NoInspect,
    /// The extra upstream roots.
    UpstreamCa,
    /// The method and path rules of inspected hosts.
    HttpRules,
    /// The injected secrets.
    Inject,
    /// The patterns that unset variables.
    EnvDeny,
    /// The variables kept.
    EnvKeep,
    /// Whether the environment starts empty.
    EnvClear,
    /// The variables that pass a cleared environment.
    EnvPass,
    /// The variables set to a value.
    EnvSet,
    /// The audit log.
    Audit,
    /// The layers cordon may run without.
    Layers,
}

/// A key's row as [`Row`] declares it, for the policy in force.
pub struct Shown<'p> {
    /// The first column.
    pub label: &'static str,
    /// The note (`none` when no value is in force).
    pub note: String,
    /// The value's JSON fields; `None` when no value is in force.
    pub json: Option<Vec<(&'static str, serde_json::Value)>>,
    /// Where the value came from.
    pub source: &'p Source,
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

    /// How a user gives this key a value, as a refusal's fix names it:
    /// the flag with `flag_value` (quoted for a shell when it needs it),
    /// then the TOML line `[section] name = toml_value`; the TOML line
    /// alone for a key without a flag. E.g. `--allow-domain example.com
    /// (or [network] allow = ["example.com"])`.
    pub fn set_with(&self, flag_value: &str, toml_value: &str) -> String {
        let toml = format!("[{}] {} = {toml_value}", self.section, self.name);
        match &self.flag {
            Some(flag) => format!("{} {} (or {toml})", flag.long(), shell_word(flag_value)),
            None => toml,
        }
    }

    /// [`About::set_with`] for a key whose value is a list: the flag with
    /// `value`, or the TOML list holding it as a string.
    pub fn add_with(&self, value: &str) -> String {
        self.set_with(value, &format!("[{}]", toml_string(value)))
    }
}

/// `value` as a TOML string, escaped so nothing in it ends the string.
pub fn toml_string(value: &str) -> String {
    toml::Value::from(value).to_string()
}

/// `word` as one word for a POSIX shell: as is when it has only
/// characters no shell reads specially, else in single quotes.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-:_/,=+@%".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
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
    /// The value stands for other settings (presets): it widens when one
    /// of them would; the function says why (a detail ending in "; "), or
    /// `None` when none would.
    Contents(fn(&V, &Policy) -> Option<String>),
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
    /// [`Widens::Contents`].
    Contents,
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
            Widens::Contents(_) => WidensKind::Contents,
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
    /// The part of a door `cordon explain` renders it in; `None` for a
    /// key shown as a row of its section ([`Explain::Row`]).
    fn door(&self) -> Option<Door>;
    /// Its row in `cordon explain` for `policy`, when it declares one
    /// ([`Explain::Row`]).
    fn row<'p>(&self, policy: &'p Policy) -> Option<Shown<'p>>;
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
    &READ_ONLY_PROJECT,
    &CACHE,
    &STATE,
    &STATE_FILE,
    &MAX_PROCS,
    &MAX_TMP,
    &MAX_MEMORY,
    &TIMEOUT,
    &LOCAL_PORTS,
    &HOST_PORTS,
    &PUBLISH,
    &UNIX_SOCKETS,
    &DENY_ENV,
    &KEEP_ENV,
    &CLEAR_ENV,
    &PASS_ENV,
    &SET_ENV,
    &PRESETS,
    &NET_ALLOW,
    &NET_DENY,
    &PORTS,
    &MAX_CONNECTIONS,
    &AUDIT_FILE,
    &AGENT,
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

/// The keys `cordon explain` shows in `door`, in declaration order.
pub fn in_door(door: Door) -> impl Iterator<Item = &'static dyn Declared> {
    KEYS.iter().copied().filter(move |k| k.door() == Some(door))
}

/// The keys of `section`, in declaration order.
pub fn in_section(section: &str) -> impl Iterator<Item = &'static dyn Declared> + '_ {
    KEYS.iter()
        .copied()
        .filter(move |k| k.about().section == section)
}

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

    fn door(&self) -> Option<Door> {
        match &self.explain {
            Explain::Row(_) => None,
            Explain::Door(door) => Some(*door),
        }
    }

    fn row<'p>(&self, policy: &'p Policy) -> Option<Shown<'p>> {
        let (Explain::Row(row), Merge::Replace { get, .. }) = (&self.explain, &self.merge) else {
            return None;
        };
        let label = if row.label.is_empty() {
            self.about.name
        } else {
            row.label
        };
        Some(match get(policy) {
            Some(in_force) => Shown {
                label,
                note: row.note.replace("{}", &(self.show)(&in_force.value)),
                json: Some((row.json)(&in_force.value)),
                source: &in_force.source,
            },
            None => Shown {
                label,
                note: "none".to_string(),
                json: None,
                source: &BUILTIN,
            },
        })
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
