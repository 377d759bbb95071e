//! Presets: what a package manager or a service needs, by one name
//! (`--preset npm`, `[network] presets = ["npm"]`).
//!
//! A preset is a policy fragment shipped in the binary (the `*.toml` files
//! beside this module): the format of a policy file, plus a `[preset]`
//! table that describes it ([`About`]: its name, a line about it, the
//! tools it serves, the caches those tools keep). Its policy is read by the
//! same reader and key declarations as any policy file
//! ([`crate::policy::load::document`], [`crate::policy::keys`]), so every
//! key works in a preset. Its lines take effect in the layer that names
//! it, each from a [`Source::Preset`] that names the preset and that
//! layer; an untrusted project file may not name a preset that widens the
//! sandbox (the trust rule sees the preset's own lines).
//!
//! Its caches (`[preset] caches`) are given to the sandbox as
//! `files.cache` entries from the same source: each tool's directory is
//! writable into a private layer, the host's unchanged; one the machine
//! lacks gets a stand-in where a variable can point the tool at it, and is
//! left out where none can (the tool is then not used here).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::host::{parse_rule, Target};
use super::load::document::{parse_policy, position};
use super::load::layer::Fragment;
use super::load::widen::first_widening;
use super::load::LoadError;
use super::pattern::PathContext;
use super::{Policy, Source, Sourced};

/// The table of a preset file that describes it; the rest is policy.
pub const HEADER: &str = "preset";

/// A preset file shipped in the binary.
pub struct Shipped {
    /// Its name: the file's stem, and its `[preset] name`.
    pub name: &'static str,
    /// The file's text.
    pub text: &'static str,
}

/// The shipped presets, each `NAME.toml` beside this module.
macro_rules! shipped {
    ($($name:literal),+ $(,)?) => {
        &[$(Shipped { name: $name, text: include_str!(concat!($name, ".toml")) }),+]
    };
}

/// Every shipped preset, in the order `cordon presets` lists them.
pub static SHIPPED: &[Shipped] = shipped![
    "npm",
    "pypi",
    "crates",
    "go",
    "maven",
    "gradle",
    "rubygems",
    "github",
    "gitlab",
    "docker-hub",
    "anthropic-api",
    "openai-api",
    "claude",
    "codex",
    "gemini",
];

/// What a preset's `[preset]` table says about it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct About {
    /// Its name, as `--preset` takes it.
    pub name: String,
    /// One line about what it lets through.
    pub about: String,
    /// The tools it serves.
    #[serde(default)]
    pub tools: Vec<String>,
    /// The caches those tools keep.
    #[serde(default)]
    pub caches: Vec<Cache>,
    /// For an agent's profile (`--agent NAME`): the commands that start the
    /// agent, which `--agent auto` recognises. A preset without is not one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// For an agent's profile: what to say at start when none of its keys
    /// (its `when_set` injected variables) is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_key: Option<String>,
}

/// A cache a preset's tool keeps, and how the tool is pointed elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    /// The tool that keeps it.
    pub tool: String,
    /// Its default place (`~/` is the home).
    pub path: String,
    /// The variable that moves it, when one moves only it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// Anything else worth knowing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A preset file as the description reader sees it: the `[preset]` table,
/// and the policy as written (the policy reader reads it again, by key).
#[derive(Deserialize)]
struct File {
    preset: About,
    #[serde(flatten)]
    policy: toml::Table,
}

/// A shipped preset, read.
pub struct Preset {
    /// Its file.
    pub shipped: &'static Shipped,
    /// What its `[preset]` table says.
    pub about: About,
    /// Its policy as written (sections of keys), for listings.
    pub policy: toml::Table,
}

impl Preset {
    /// Reads `shipped`'s description; its policy is read by [`Preset::expand`].
    pub fn read(shipped: &'static Shipped) -> Result<Preset, LoadError> {
        let file = path(shipped.name);
        let text = shipped.text;
        let parsed: File = toml::from_str(text).map_err(|e| LoadError::Syntax {
            at: position(&file, text, e.span().map_or(0, |s| s.start)),
            message: e.message().trim().replace('\n', ": "),
        })?;
        let invalid = |key: &str, message: String| LoadError::Invalid {
            at: position(&file, text, 0),
            key: key.to_string(),
            message,
        };
        if parsed.preset.name != shipped.name {
            return Err(invalid(
                "preset.name",
                format!(
                    "is {:?}, but the preset is {:?}",
                    parsed.preset.name, shipped.name
                ),
            ));
        }
        let names_presets = parsed
            .policy
            .get("network")
            .and_then(toml::Value::as_table)
            .is_some_and(|n| n.contains_key(PRESETS_KEY));
        if names_presets {
            return Err(invalid(
                &format!("network.{PRESETS_KEY}"),
                "a preset may not name presets".to_string(),
            ));
        }
        Ok(Preset {
            shipped,
            about: parsed.preset,
            policy: parsed.policy,
        })
    }

    /// Its policy, read by the policy file reader (paths against `ctx`).
    pub fn expand(&self, ctx: &PathContext<'_>) -> Result<Fragment, LoadError> {
        parse_policy(
            &path(self.shipped.name),
            self.shipped.text.as_bytes(),
            ctx,
            &[HEADER],
        )
    }

    /// The hosts its `[network] allow` names, as written.
    pub fn hosts(&self) -> Vec<&str> {
        self.policy
            .get("network")
            .and_then(|n| n.get("allow"))
            .and_then(toml::Value::as_array)
            .map(|a| a.iter().filter_map(toml::Value::as_str).collect())
            .unwrap_or_default()
    }
}

/// The key in `[network]` that names presets (see
/// [`crate::policy::keys::PRESETS`]).
const PRESETS_KEY: &str = "presets";

/// How errors in a shipped preset name it.
fn path(name: &str) -> PathBuf {
    PathBuf::from(format!("(preset {name})"))
}

/// The names of the shipped presets, comma-separated.
pub fn names() -> String {
    SHIPPED
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The shipped preset called `name`; an unknown name's error lists the
/// known ones.
pub fn find(name: &str) -> Result<&'static Shipped, String> {
    SHIPPED.iter().find(|s| s.name == name).ok_or_else(|| {
        format!(
            "unknown preset {name:?}; the presets are {} (`cordon presets` shows what each allows)",
            names()
        )
    })
}

/// The agent profile `name` names, read like a preset (see [`expand`]);
/// an error when `name` is a preset but no agent's.
pub fn expand_agent(name: &str, ctx: &PathContext<'_>) -> Result<Expanded, String> {
    if name == AUTO {
        return Err(format!(
            "{AUTO:?} picks the profile from the command's name, on the command line (--agent auto); here, name the profile: {}",
            agent_names()
        ));
    }
    let is_agent = SHIPPED
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| Preset::read(s).ok())
        .is_some_and(|p| !p.about.commands.is_empty());
    if !is_agent {
        return Err(format!(
            "no agent profile {name:?}; the profiles are {} (`cordon agents` shows each)",
            agent_names()
        ));
    }
    expand(name, ctx)
}

/// The value of `--agent` that picks the profile from the command's name.
pub const AUTO: &str = "auto";

/// The shipped agent profiles (presets naming the commands they are for).
pub fn agents() -> Vec<Preset> {
    SHIPPED
        .iter()
        .filter_map(|s| Preset::read(s).ok())
        .filter(|p| !p.about.commands.is_empty())
        .collect()
}

/// The agent profiles' names, comma-separated.
fn agent_names() -> String {
    agents()
        .iter()
        .map(|p| p.shipped.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The agent profile for the command `program` (a path or a name): the
/// one whose commands name its file name.
pub fn agent_for_command(program: &std::ffi::OsStr) -> Result<&'static str, String> {
    let file = std::path::Path::new(program)
        .file_name()
        .unwrap_or(program)
        .to_string_lossy()
        .into_owned();
    agents()
        .into_iter()
        .find(|p| p.about.commands.contains(&file))
        .map(|p| p.shipped.name)
        .ok_or_else(|| {
            format!(
                "--agent auto: no agent profile is for the command {file:?}; the profiles are {} (name one with --agent NAME)",
                agent_names()
            )
        })
}

/// A preset named by a layer, with its policy read, not yet applied.
pub struct Expanded {
    /// Its name.
    pub name: &'static str,
    /// Its description's line.
    about: String,
    /// Whether it is an agent's profile.
    agent: bool,
    /// Its `[preset] without_key`.
    without_key: Option<String>,
    fragment: Fragment,
    /// Its tools' caches, as `files.cache` entries (optional ones).
    caches: Vec<super::cache::Cache>,
}

/// A preset in force: what `cordon explain` says of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Named {
    /// Its name.
    pub name: String,
    /// Its description's line.
    pub about: String,
    /// Whether it is an agent's profile (`--agent`).
    pub agent: bool,
    /// What to say at start when none of its keys is set (see
    /// [`missing_keys`]).
    #[serde(skip)]
    pub without_key: Option<String>,
}

/// Reads the preset `name` names, its paths against `ctx`.
pub fn expand(name: &str, ctx: &PathContext<'_>) -> Result<Expanded, String> {
    let shipped = find(name)?;
    let read = |ctx| {
        let preset = Preset::read(shipped)?;
        let fragment = preset.expand(ctx)?;
        Ok::<_, LoadError>((preset, fragment))
    };
    let (preset, fragment) = read(ctx).map_err(|e| e.to_string())?;
    let caches = preset
        .about
        .caches
        .iter()
        .map(|c| {
            let mut cache = super::cache::Cache::new(&c.path, c.env.clone(), ctx)
                .map_err(|e| format!("preset {name}: cache {}: {e}", c.path))?;
            cache.optional = true;
            Ok(cache)
        })
        .collect::<Result<_, String>>()?;
    Ok(Expanded {
        name: shipped.name,
        agent: !preset.about.commands.is_empty(),
        without_key: preset.about.without_key,
        about: preset.about.about,
        fragment,
        caches,
    })
}

/// Why the presets `expanded` would widen `in_force` (the first line of
/// the first that would, by the trust rule), or `None` when none would.
pub fn widening(expanded: &[Expanded], in_force: &Policy) -> Option<String> {
    expanded.iter().find_map(|e| {
        let Some(first) = first_widening(&e.fragment, in_force) else {
            return (!e.caches.is_empty()).then(|| {
                format!(
                    "preset {} sets files.cache, which widens the sandbox; ",
                    e.name
                )
            });
        };
        let why = first.detail.trim_end_matches("; ");
        Some(if why.is_empty() {
            format!(
                "preset {} sets {}, which widens the sandbox; ",
                e.name, first.key
            )
        } else {
            format!("preset {} sets {}: {why}; ", e.name, first.key)
        })
    })
}

/// Applies the presets `expanded` on top of `policy`, in order: each is
/// recorded as named by `source`, and each of its lines comes from
/// [`Source::Preset`] with that name and `source`.
pub fn apply(policy: &mut Policy, expanded: Vec<Expanded>, source: &Source) {
    for e in expanded {
        let named = Named {
            name: e.name.to_string(),
            about: e.about,
            agent: e.agent,
            without_key: e.without_key,
        };
        policy
            .network
            .presets
            .push(Sourced::new(named, source.clone()));
        let from = Source::Preset {
            name: e.name.to_string(),
            from: Box::new(source.clone()),
        };
        e.fragment.apply(policy, &from);
        let caches = e.caches.into_iter().map(|c| Sourced::new(c, from.clone()));
        policy.files.caches.extend(caches);
    }
}

/// The shipped presets with an allow rule for the host `target` (whatever
/// the port), in listing order: what a refusal may suggest. A preset that
/// does not read is left out (the listing and the tests report it).
pub fn allowing(target: &Target) -> Vec<&'static str> {
    SHIPPED
        .iter()
        .filter(|s| {
            Preset::read(s).is_ok_and(|p| {
                p.hosts()
                    .iter()
                    .any(|h| parse_rule(h).is_ok_and(|r| r.matches_host(target)))
            })
        })
        .map(|s| s.name)
        .collect()
}

/// How `cordon presets` ends.
pub const PRESETS_FOOTER: &str = "Use one with --preset NAME or [network] presets = [\"NAME\"]; `cordon presets NAME` shows its file.\n";

/// How `cordon agents` ends.
pub const AGENTS_FOOTER: &str = "Use one with --agent NAME (--agent auto: the one for the command's name) or [sandbox] agent = \"NAME\"; `cordon agents NAME` shows its file. Each is a preset: its lines are overridden like any policy's.\n";

/// Every shipped preset, read and checked (its policy expanded against
/// `ctx`): a listing fails whole rather than show a preset that would not
/// load.
pub fn all(ctx: &PathContext<'_>) -> Result<Vec<Preset>, LoadError> {
    SHIPPED
        .iter()
        .map(|s| {
            let preset = Preset::read(s)?;
            preset.expand(ctx)?;
            Ok(preset)
        })
        .collect()
}

/// What the agent profiles in force say at start when none of their keys
/// is set (their `without_key`): for each profile whose injected
/// variables were all left out, unset in cordon's environment.
pub fn missing_keys(policy: &Policy) -> Vec<String> {
    let from =
        |source: &Source, name: &str| matches!(source, Source::Preset { name: n, .. } if n == name);
    policy
        .network
        .presets
        .iter()
        .filter_map(|named| {
            let name = named.value.name.as_str();
            let message = named.value.without_key.clone()?;
            let left_out = policy
                .inspection
                .not_set
                .iter()
                .any(|n| from(&n.source, name));
            let injected = policy
                .inspection
                .inject
                .iter()
                .any(|i| from(&i.source, name));
            (left_out && !injected).then_some(message)
        })
        .collect()
}

/// The presets as `cordon presets` (and `cordon agents`) print them: each
/// one's name and line, then its tools, hosts, other settings and caches;
/// `footer` last.
pub fn render_text(presets: &[Preset], footer: &str) -> String {
    let mut out = String::new();
    for p in presets {
        let about = &p.about;
        out.push_str(&format!("{}: {}\n", about.name, about.about));
        if !about.tools.is_empty() {
            out.push_str(&format!("  tools  {}\n", about.tools.join(", ")));
        }
        if !about.commands.is_empty() {
            out.push_str(&format!(
                "  agent  --agent {} (or --agent auto for {})\n",
                about.name,
                about.commands.join(", ")
            ));
        }
        for (section, keys) in &p.policy {
            let Some(keys) = keys.as_table() else {
                continue;
            };
            for (key, value) in keys {
                let label = if (section.as_str(), key.as_str()) == ("network", "allow") {
                    "hosts".to_string()
                } else {
                    format!("{section}.{key}")
                };
                out.push_str(&format!("  {label}  {}\n", shown(value)));
            }
        }
        for c in &about.caches {
            let mut line = format!("  cache  {}: {}", c.tool, c.path);
            let extra: Vec<String> = c
                .env
                .iter()
                .map(|e| format!("${e}"))
                .chain(c.note.iter().cloned())
                .collect();
            if !extra.is_empty() {
                line.push_str(&format!(" ({})", extra.join("; ")));
            }
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(footer);
    out
}

/// A value of a preset's policy as the listing shows it: strings bare,
/// arrays comma-separated.
fn shown(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// One preset as `cordon presets --json` gives it: its description, the
/// hosts it allows, its policy as written (as JSON), and, when `with_text`,
/// its file.
pub fn render_json(preset: &Preset, with_text: bool) -> serde_json::Value {
    let mut value = serde_json::json!({
        "name": preset.about.name,
        "about": preset.about.about,
        "tools": preset.about.tools,
        "hosts": preset.hosts(),
        "caches": preset.about.caches,
        "policy": preset.policy,
    });
    if with_text {
        value["toml"] = preset.shipped.text.into();
    }
    value
}

#[cfg(test)]
mod tests;
