//! Layer 5: the command-line flags, each the flag of a declared key
//! ([`keys::KEYS`]); and [`apply`], which sets any key by its declaration
//! from strings, for importers of other tools' settings.

use std::fmt;
use std::path::Path;

use super::layer::{Fragment, Setting};
use super::LoadError;
use crate::policy::keys::{self, Declared};
use crate::policy::pattern::PathContext;
use crate::policy::{Policy, Source};

/// One policy flag as given: the key it sets and its values (none for a
/// switch).
#[derive(Clone)]
pub struct FlagValue {
    /// The key; it has a flag.
    pub key: &'static dyn Declared,
    /// The values, in command-line order.
    pub values: Vec<String>,
}

impl FlagValue {
    /// The flag `--name` (with or without the dashes) with `values`;
    /// `None` when no key has that flag.
    pub fn new(name: &str, values: &[&str]) -> Option<FlagValue> {
        Some(FlagValue {
            key: keys::by_flag(name)?,
            values: values.iter().map(|v| v.to_string()).collect(),
        })
    }

    /// `--name`, as errors and sources name it.
    pub fn flag(&self) -> String {
        self.key.about().flag_or_key()
    }
}

impl fmt::Debug for FlagValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.flag(), self.values)
    }
}

/// Applies the flags on top of `policy`, relative paths against `cwd`.
/// Every flag is read before any is applied: a bad one fails them all.
pub fn apply_flags(
    policy: &mut Policy,
    flags: &[FlagValue],
    home: &Path,
    cwd: &Path,
) -> Result<(), LoadError> {
    let ctx = PathContext {
        home,
        base: Some(cwd),
    };
    let mut fragment = Fragment::default();
    for given in flags {
        let pending = given
            .key
            .read_strings(&given.values, &ctx)
            .map_err(|message| LoadError::Flag {
                flag: given.flag(),
                message,
            })?;
        fragment.push(Setting { pending, at: 0 });
    }
    fragment.apply_with(policy, |pending| {
        Source::Flag(pending.key().about().flag_or_key())
    });
    Ok(())
}

/// Sets `key` from strings (as its flag takes them), relative paths
/// against `ctx`, every entry from `source`; the value merges as the key
/// declares. For importers: the caller decides whether the source is
/// trusted.
pub fn apply(
    policy: &mut Policy,
    key: &'static dyn Declared,
    values: &[String],
    ctx: &PathContext<'_>,
    source: &Source,
) -> Result<(), String> {
    key.read_strings(values, ctx)?.apply(policy, source);
    Ok(())
}

/// Flags as the command line would give them: `(--name, values)` pairs.
#[cfg(test)]
pub(crate) fn given(pairs: &[(&str, &[&str])]) -> Vec<FlagValue> {
    pairs
        .iter()
        .map(|(name, values)| FlagValue::new(name, values).expect("a declared flag"))
        .collect()
}
