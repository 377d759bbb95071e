//! `[limits]`: tasks, temp size, memory, wall-clock time.

use std::time::Duration;

use super::readers::{count, last, number, one};
use serde_json::json;

use super::{About, Explain, Flag, FlagType, Key, Merge, Read, Row, Widens};
use crate::policy::load::values::{self, at_least_one, human_duration, human_size};
use crate::policy::{Policy, Sourced};

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
        file: |f, n| f.scalar(n, |v| count(v, at_least_one)),
        strings: |raw, _| last(raw).and_then(number).and_then(at_least_one),
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
    explain: Explain::Row(Row {
        label: "",
        note: "{} tasks",
        json: |v| vec![("value", json!(v))],
    }),
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
    "{} in /tmp",
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
    "{}",
    |p| p.limits.max_memory.as_ref(),
    |p, v| p.limits.max_memory = Some(v),
);

const fn size_key(
    name: &'static str,
    flag: Option<Flag>,
    examples: [&'static str; 2],
    note: &'static str,
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
                    .and_then(values::nonzero)
            },
        },
        merge: Merge::Replace { get, set },
        widens: Widens::Raise {
            above: u64::gt,
            word: "more",
        },
        show: |v| human_size(*v),
        explain: Explain::Row(Row {
            label: "",
            note,
            json: |v| vec![("bytes", json!(v)), ("human", json!(human_size(*v)))],
        }),
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
                .and_then(values::nonzero)
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
    explain: Explain::Row(Row {
        label: "",
        note: "{}",
        json: |v| {
            vec![
                ("seconds", json!(v.as_secs_f64())),
                ("human", json!(human_duration(*v))),
            ]
        },
    }),
};
