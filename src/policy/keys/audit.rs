//! `[audit]`: where decisions are recorded.

use std::path::PathBuf;

use super::readers::{last, one};
use super::{About, Door, Explain, FlagType, Key, Merge, Read, Widens};
use crate::policy::load::document::Scalar;
use crate::policy::load::values::{parse_audit_file, AUDIT_OFF};

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
    explain: Explain::Door(Door::Audit),
};
