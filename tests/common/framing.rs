//! Requests whose body framing is ambiguous (RFC 9112 §6, §11.2): every
//! one must be refused with 400 by the proxy, on the plain-HTTP path and
//! inside inspected tunnels alike, and reach no upstream.
//!
//! The cases are Python, in tests/py/framing_cases.py: put [`CASES_PY`]
//! before a script that calls `framing_cases(target, authority)`.

/// The python that defines `framing_cases(target, authority)`.
pub const CASES_PY: &str = include_str!("../py/framing_cases.py");

/// The labels of the cases, in their order in [`CASES_PY`] (one case a
/// line there, as `    ('label', ...`).
pub fn labels() -> Vec<&'static str> {
    CASES_PY
        .lines()
        .filter_map(|l| l.strip_prefix("    ('"))
        .filter_map(|l| l.split_once('\'').map(|(label, _)| label))
        .collect()
}
