//! `[sandbox]`: layers cordon may run without.

use super::readers::{extend, layer, list};
use super::{About, Door, Explain, Flag, FlagType, Key, Merge, Takes, Widens};
use crate::policy::Layer;

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
    read: each_string!(layer),
    merge: Merge::Append(|p, v, s| extend(&mut p.allow_degraded, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
    explain: Explain::Door(Door::Layers),
};
