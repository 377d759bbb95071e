//! Readers and helpers the declarations share.

use std::fmt::Display;

use super::{About, Door, Explain, Flag, FlagType, Key, Merge, Read, Takes, Widens};
use crate::policy::host::{parse_rule, HostRule};
use crate::policy::inspection::HostMatch;
use crate::policy::load::document::{Field, Node, Scalar};
use crate::policy::load::values::{check_port, check_protect, parse_layer};
use crate::policy::load::LoadError;
use crate::policy::pattern::{PathContext, PathPattern};
use crate::policy::{Layer, Policy, Source, Sourced};

/// An array of strings in a file, each read by `entry` against the file's
/// path context.
pub(super) fn file_strings<T>(
    field: &Field<'_>,
    node: Node<'_>,
    entry: fn(&str, &PathContext<'_>) -> Result<T, String>,
) -> Result<Vec<T>, LoadError> {
    field.strings(node, |raw| entry(raw, field.ctx))
}

/// Strings, each read by `entry`.
pub(super) fn each<T>(
    raw: &[String],
    ctx: &PathContext<'_>,
    entry: fn(&str, &PathContext<'_>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    raw.iter().map(|r| entry(r, ctx)).collect()
}

/// A boolean key whose flag is a switch: `true` or `false` in a file; the
/// flag given alone turns it on.
pub(super) const SWITCH: Read<bool> = Read {
    file: |f, n| {
        f.scalar(n, |v| match v {
            Scalar::Boolean(b) => Ok(b),
            other => Err(format!("expected true or false, found {}", other.kind())),
        })
    },
    strings: |raw, _| match raw.last().map(String::as_str) {
        None | Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(format!("expected true or false, found {other:?}")),
    },
};

/// The one value of a key that takes one (the last, if given more).
pub(super) fn last(raw: &[String]) -> Result<&str, String> {
    raw.last()
        .map(String::as_str)
        .ok_or_else(|| "needs a value".to_string())
}

pub(super) fn path(raw: &str, ctx: &PathContext<'_>) -> Result<PathPattern, String> {
    PathPattern::parse(raw, ctx).map_err(|e| e.to_string())
}

pub(super) fn host_rule(raw: &str, _: &PathContext<'_>) -> Result<HostRule, String> {
    parse_rule(raw).map_err(|e| e.to_string())
}

/// A host rule, or one that follows a variable (`$ANTHROPIC_BASE_URL`,
/// see [`crate::policy::followed`]): `None` when that is unset.
pub(super) fn followed_host_rule(
    raw: &str,
    _: &PathContext<'_>,
) -> Result<Option<HostRule>, String> {
    crate::policy::followed::expand(raw)?
        .map(|h| parse_rule(&h).map_err(|e| e.to_string()))
        .transpose()
}

/// A list of host rules, some of which may follow variables: those that
/// stand for nothing are left out.
pub(super) const FOLLOWED_HOST_RULES: super::Read<Vec<HostRule>> = super::Read {
    file: |f, n| {
        let rules = file_strings(f, n, followed_host_rule)?;
        Ok(rules.into_iter().flatten().collect())
    },
    strings: |raw, ctx| {
        let rules = each(raw, ctx, followed_host_rule)?;
        Ok(rules.into_iter().flatten().collect())
    },
};

pub(super) fn host_match(raw: &str, _: &PathContext<'_>) -> Result<HostMatch, String> {
    HostMatch::parse(raw).map_err(|e| e.to_string())
}

pub(super) fn env_pattern(raw: &str, _: &PathContext<'_>) -> Result<String, String> {
    crate::policy::env::check_pattern(raw).map_err(|e| e.to_string())
}

pub(super) fn protect_name(raw: &str, _: &PathContext<'_>) -> Result<String, String> {
    check_protect(raw)
}

pub(super) fn layer(raw: &str, _: &PathContext<'_>) -> Result<Layer, String> {
    parse_layer(raw)
}

pub(super) fn port(raw: &str, _: &PathContext<'_>) -> Result<u16, String> {
    let n: i64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("{raw:?} is not a TCP port (expected 1 to 65535)"))?;
    check_port(n)
}

/// A port the sandbox has on its loopback for the user (not cordon's own).
pub(super) fn inside_port(raw: &str, ctx: &PathContext<'_>) -> Result<u16, String> {
    port(raw, ctx).and_then(|p| crate::policy::ports::check_inside_port(p.into()))
}

pub(super) fn number(raw: &str) -> Result<u64, String> {
    raw.trim()
        .parse()
        .map_err(|_| format!("{raw:?} is not a whole number"))
}

/// A list of displayable entries, comma-separated.
pub(super) fn list<T: Display>(v: &[T]) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join(", ")
}

/// Adds `values` after the entries in force, each from `source`.
pub(super) fn extend<T>(into: &mut Vec<Sourced<T>>, values: Vec<T>, source: &Source) {
    into.extend(values.into_iter().map(|v| Sourced::new(v, source.clone())));
}

/// Ports in the first list that the second lacks.
pub(super) fn ports_added(new: &[u16], in_force: &[u16]) -> Vec<String> {
    new.iter()
        .filter(|p| !in_force.contains(p))
        .map(u16::to_string)
        .collect()
}

/// A path list in the `files` section.
pub(super) const fn path_list(
    name: &'static str,
    flag: Option<Flag>,
    widens: Widens<Vec<PathPattern>>,
    examples: [&'static str; 2],
    door: Door,
    append: fn(&mut Policy, Vec<PathPattern>, &Source),
) -> Key<Vec<PathPattern>> {
    Key {
        about: About {
            section: "files",
            name,
            flag,
            examples,
        },
        read: each_string!(path),
        merge: Merge::Append(append),
        widens,
        // As a policy file spells them: an exact path's glob characters
        // escaped, so it does not read as a pattern.
        show: |v| {
            v.iter()
                .map(PathPattern::to_policy_text)
                .collect::<Vec<_>>()
                .join(", ")
        },
        explain: Explain::Door(door),
    }
}

pub(super) const fn many(
    name: &'static str,
    value_name: &'static str,
    help: &'static str,
) -> Option<Flag> {
    Some(Flag {
        name,
        value_name,
        help,
        takes: Takes::Many(FlagType::Text),
    })
}

pub(super) const fn one(
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

/// A whole number at least 1 in a file, checked by `check`.
pub(super) fn count(v: Scalar<'_>, check: fn(u64) -> Result<u64, String>) -> Result<u64, String> {
    match v {
        Scalar::Integer(n) => u64::try_from(n)
            .map_err(|_| "must be at least 1".to_string())
            .and_then(check),
        other => Err(format!("expected an integer, found {}", other.kind())),
    }
}
