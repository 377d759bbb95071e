//! The trust rule: what in a layer would widen the policy in force. An
//! untrusted project file may only narrow; its first widening setting is
//! what the refusal names. Each key's [`Widens`] says what widens it.

use super::layer::Fragment;
use crate::policy::keys::{Key, Merge, Widens};
use crate::policy::Policy;

/// One widening setting in a layer.
pub struct Widening {
    /// Where its key is.
    pub at: usize,
    /// Its dotted key.
    pub key: String,
    /// Why it widens, ending in "; " (empty when the key alone widens).
    pub detail: String,
}

/// The first (in the file) of the settings in `fragment` that would widen
/// `in_force`.
pub fn first_widening(fragment: &Fragment, in_force: &Policy) -> Option<Widening> {
    fragment
        .settings()
        .iter()
        .filter_map(|s| {
            s.pending.widening(in_force).map(|detail| Widening {
                at: s.at,
                key: s.pending.key().about().dotted(),
                detail,
            })
        })
        .min_by_key(|w| w.at)
}

/// Why `value` for `key` would widen `in_force`, or `None` when it does not.
pub fn detail<V>(key: &Key<V>, value: &V, in_force: &Policy) -> Option<String> {
    let old = match &key.widens {
        Widens::Never => return None,
        Widens::AnyValue => return Some(String::new()),
        Widens::AnyEntry(is_empty) => return (!is_empty(value)).then(String::new),
        Widens::Contents(widens) => return widens(value, in_force),
        Widens::Raise { .. } | Widens::NewEntries { .. } | Widens::TurnsOff { .. } => {
            match &key.merge {
                // None in force: nothing to exceed.
                Merge::Replace { get, .. } => get(in_force)?,
                // No one value in force to compare with: fail closed.
                Merge::Append(_) => {
                    return Some(format!(
                        "{} cannot be compared with the value in force; ",
                        (key.show)(value)
                    ))
                }
            }
        }
    };
    match &key.widens {
        Widens::Raise { above, word } => above(value, &old.value).then(|| {
            format!(
                "{} is {word} than the {} in force ({}); ",
                (key.show)(value),
                (key.show)(&old.value),
                old.source
            )
        }),
        Widens::NewEntries { added, what } => {
            let added = added(value, &old.value);
            (!added.is_empty()).then(|| {
                format!(
                    "{} {} not among the {what} in force ({}: {}); ",
                    added.join(", "),
                    if added.len() == 1 { "is" } else { "are" },
                    old.source,
                    (key.show)(&old.value)
                )
            })
        }
        Widens::TurnsOff { is_on, what } => (is_on(&old.value) && !is_on(value))
            .then(|| format!("the {} in force {what}; ", old.source)),
        // Answered above.
        Widens::Never | Widens::AnyValue | Widens::AnyEntry(_) | Widens::Contents(_) => None,
    }
}
