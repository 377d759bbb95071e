//! `[sandbox]`: the agent profile, layers cordon may run without.

use super::readers::{extend, layer, list, one};
use super::{About, Door, Explain, Flag, FlagType, Key, Merge, Read, Takes, Widens};
use crate::policy::load::document::Scalar;
use crate::policy::presets::{self, Expanded};
use crate::policy::Layer;

/// `sandbox.agent`: the name of an agent profile (`claude`, `codex`,
/// `gemini`; `cordon agents` lists them): a preset that sets up what that
/// agent needs, whole inside the sandbox, with its key outside. On the
/// command line, `auto` picks the profile from the command's name. Widens
/// (every profile's lines do).
pub static AGENT: Key<Vec<Expanded>> = Key {
    about: About {
        section: "sandbox",
        name: "agent",
        flag: one(
            "agent",
            "NAME",
            "Run an AI agent whole inside, set up by its profile: claude, codex, gemini, or auto (from the command's name). Its API hosts, its key injected by the proxy (the sandbox holds a placeholder), its state directory writable but for what runs later; `cordon agents` shows each profile",
            FlagType::Text,
        ),
        examples: ["\"claude\"", "\"codex\""],
    },
    read: Read {
        file: |f, n| {
            f.scalar(n, |v| match v {
                Scalar::String(name) => presets::expand_agent(name, f.ctx).map(|e| vec![e]),
                other => Err(format!("expected a profile's name, found {}", other.kind())),
            })
        },
        strings: |raw, ctx| {
            let name = super::readers::last(raw)?;
            presets::expand_agent(name, ctx).map(|e| vec![e])
        },
    },
    merge: Merge::Append(presets::apply),
    // Every profile allows hosts and makes a directory writable.
    widens: Widens::AnyValue,
    show: |v| v.iter().map(|e| e.name).collect::<Vec<_>>().join(", "),
    explain: Explain::Door(Door::Agent),
};

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
