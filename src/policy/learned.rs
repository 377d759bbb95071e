//! What `cordon learn` saw, as a policy file: the smallest TOML that lets
//! the same run pass without learn mode.
//!
//! Hosts are written as allow rules, siblings collapsed into one wildcard
//! where there are enough of them to call it a pattern (never across a
//! shared suffix such as `github.io`, where siblings belong to different
//! owners), each with how many connections it took. Destinations refused
//! even in learn mode (a deny rule, the address guard) are listed as
//! comments only: learn mode never widens those.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Siblings under one parent it takes to write `*.parent` instead.
const SIBLINGS_FOR_A_PATTERN: usize = 3;

/// Parents whose children belong to different owners: never collapsed.
/// (Multi-label public suffixes and shared hosting; a parent of one
/// label, a top-level domain, never is either.)
const SHARED_SUFFIXES: &[&str] = &[
    "co.uk",
    "org.uk",
    "ac.uk",
    "com.au",
    "net.au",
    "co.jp",
    "co.nz",
    "com.br",
    "com.cn",
    "co.in",
    "github.io",
    "githubusercontent.com",
    "gitlab.io",
    "herokuapp.com",
    "appspot.com",
    "cloudfront.net",
    "amazonaws.com",
    "s3.amazonaws.com",
    "azurewebsites.net",
    "blob.core.windows.net",
    "vercel.app",
    "netlify.app",
    "pages.dev",
    "workers.dev",
    "web.app",
    "firebaseapp.com",
    "ngrok.io",
    "ngrok-free.app",
];

/// One destination the run asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The host as normalised (a name, an IP, or `host.cordon.internal`).
    pub host: String,
    /// The port.
    pub port: u16,
    /// Connections made to it.
    pub connections: u64,
    /// What refused it even in learn mode; `None` when it was reached.
    pub refused: Option<String>,
    /// The rule in force that allowed it already, if one did.
    pub allowed_by: Option<String>,
}

/// The learned policy's text: `command` names what ran, `default_ports`
/// the ports a rule without `:PORT` admits.
pub fn render(
    command: &str,
    seen: &[Seen],
    writes: &RefusedWrites<'_>,
    default_ports: &[u16],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Learned by `cordon learn` from: {}",
        comment(command)
    );
    let _ = writeln!(
        out,
        "# Replay with `cordon run --policy THIS-FILE -- ...`; review it first: every line widens the sandbox."
    );
    let reached: Vec<&Seen> = seen.iter().filter(|s| s.refused.is_none()).collect();
    let refused: Vec<&Seen> = seen.iter().filter(|s| s.refused.is_some()).collect();
    if reached.is_empty() {
        let _ = writeln!(out, "# The run reached no host through the proxy.");
    } else {
        let _ = writeln!(out, "\n[network]\nallow = [");
        for line in allow_lines(&reached, default_ports) {
            let rule = format!("{},", super::keys::toml_string(&line.rule));
            let _ = writeln!(out, "    {rule:<40} # {}", comment(&line.note));
        }
        let _ = writeln!(out, "]");
        let covering = presets_covering(&reached, default_ports);
        if !covering.is_empty() {
            let _ = writeln!(
                out,
                "\n# Presets that allow hosts this run reached, with the others their tools need (`cordon presets NAME` lists them):"
            );
            for (name, hosts) in covering {
                let line = format!("presets = [{}]", super::keys::toml_string(name));
                let _ = writeln!(out, "#   {line:<36} # {}", comment(&hosts.join(", ")));
            }
        }
    }
    if !refused.is_empty() {
        let _ = writeln!(
            out,
            "\n# Refused even in learn mode (not allowed by this file):"
        );
        for s in refused {
            let what = format!(
                "{}: {}",
                rule_for(&s.host, s.port, default_ports),
                s.refused.as_deref().unwrap_or_default()
            );
            let _ = writeln!(out, "#   {}", comment(&what));
        }
    }
    render_writes(&mut out, writes);
    out
}

/// The names a learning run was refused to make outside the writable
/// areas, and the caller's homes, against which their directories may be
/// suggested as writable ([`super::defaults::suggestable_writable`]).
pub struct RefusedWrites<'a> {
    /// Each refused name, with how often it was tried.
    pub paths: &'a [(PathBuf, u64)],
    /// The caller's homes (the policy's).
    pub homes: &'a [PathBuf],
}

/// `[files] allow_write` for the directories the refused names were to be
/// made in: those below the home only (a tool's cache or state); the
/// home itself, `/` and system directories are listed as comments, for
/// the user to decide.
fn render_writes(out: &mut String, writes: &RefusedWrites<'_>) {
    let mut dirs: BTreeMap<&Path, Vec<(&Path, u64)>> = BTreeMap::new();
    for (path, n) in writes.paths {
        let dir = path.parent().unwrap_or(Path::new("/"));
        dirs.entry(dir).or_default().push((path, *n));
    }
    let suggestable = |dir: &Path| super::defaults::suggestable_writable(dir, writes.homes);
    let note = |names: &[(&Path, u64)]| {
        let total: u64 = names.iter().map(|(_, n)| n).sum();
        let shown: Vec<String> = names
            .iter()
            .take(3)
            .map(|(p, _)| {
                p.file_name()
                    .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
            })
            .collect();
        let more = if names.len() > 3 { ", ..." } else { "" };
        format!(
            "{total} write{} refused ({}{more})",
            if total == 1 { "" } else { "s" },
            shown.join(", ")
        )
    };
    let (suggested, left): (Vec<_>, Vec<_>) = dirs.iter().partition(|(d, _)| suggestable(d));
    if !suggested.is_empty() {
        let _ = writeln!(out, "\n[files]\nallow_write = [");
        for (dir, names) in &suggested {
            // Written as the one path it is: a glob character in the
            // directory's name is escaped.
            let text = super::pattern::PathPattern::exact(dir).map_or_else(
                || dir.to_string_lossy().into_owned(),
                |p| p.to_policy_text(),
            );
            let rule = format!("{},", super::keys::toml_string(&text));
            let _ = writeln!(out, "    {rule:<40} # {}", comment(&note(names)));
        }
        let _ = writeln!(out, "]");
    }
    if !left.is_empty() {
        let _ = writeln!(
            out,
            "\n# Writes refused where no directory is suggested (the home itself, places whose files run later, /, system directories): write in the project or /tmp, or allow a directory of your choosing:"
        );
        for (dir, names) in left {
            let line = format!("{}: {}", dir.display(), note(names));
            let _ = writeln!(out, "#   {}", comment(&line));
        }
    }
}

/// One line of the allow list.
struct AllowLine {
    rule: String,
    note: String,
}

/// The allow rules for what was reached: collapsed where siblings are
/// many, in the order of their text.
fn allow_lines(reached: &[&Seen], default_ports: &[u16]) -> Vec<AllowLine> {
    // (parent, port) -> the children reached under it.
    let mut families: BTreeMap<(String, u16), Vec<&Seen>> = BTreeMap::new();
    let mut lines = Vec::new();
    for s in reached {
        match parent_of(&s.host) {
            Some(parent) => families
                .entry((parent.to_string(), s.port))
                .or_default()
                .push(s),
            None => lines.push(single(s, default_ports)),
        }
    }
    for ((parent, port), children) in families {
        if children.len() >= SIBLINGS_FOR_A_PATTERN
            && children.iter().all(|c| c.allowed_by.is_none())
        {
            let total: u64 = children.iter().map(|c| c.connections).sum();
            let names: Vec<String> = children
                .iter()
                .map(|c| format!("{} ×{}", c.host, c.connections))
                .collect();
            lines.push(AllowLine {
                rule: rule_for(&format!("*.{parent}"), port, default_ports),
                note: format!("{} ({})", connections(total), names.join(", ")),
            });
        } else {
            lines.extend(children.into_iter().map(|c| single(c, default_ports)));
        }
    }
    lines.sort_by(|a, b| a.rule.cmp(&b.rule));
    lines.dedup_by(|a, b| a.rule == b.rule);
    lines
}

/// The shipped presets that allow hosts in `reached` (on a port their
/// rules, which name none, admit), each with those hosts, by name.
fn presets_covering<'s>(
    reached: &[&'s Seen],
    default_ports: &[u16],
) -> BTreeMap<&'static str, Vec<&'s str>> {
    let mut covering: BTreeMap<&'static str, Vec<&'s str>> = BTreeMap::new();
    for s in reached.iter().filter(|s| default_ports.contains(&s.port)) {
        let Ok(target) = super::host::normalize(&s.host) else {
            continue;
        };
        for name in super::presets::allowing(&target) {
            let hosts = covering.entry(name).or_default();
            if !hosts.contains(&s.host.as_str()) {
                hosts.push(&s.host);
            }
        }
    }
    covering
}

fn single(s: &Seen, default_ports: &[u16]) -> AllowLine {
    let mut note = connections(s.connections);
    if let Some(rule) = &s.allowed_by {
        let _ = write!(note, "; allowed already by {rule}");
    }
    AllowLine {
        rule: rule_for(&s.host, s.port, default_ports),
        note,
    }
}

fn connections(n: u64) -> String {
    if n == 1 {
        "1 connection".to_string()
    } else {
        format!("{n} connections")
    }
}

/// The parent a name's siblings share, when collapsing them is sensible:
/// none for IPs, single-label names, children of a top-level domain or of
/// a shared suffix, and `host.cordon.internal`.
fn parent_of(host: &str) -> Option<&str> {
    if host.parse::<std::net::IpAddr>().is_ok() || host == super::host::HOST_INTERNAL {
        return None;
    }
    let (_, parent) = host.split_once('.')?;
    // Anything under a shared suffix is left alone, however deep: an
    // S3 region's buckets are as many owners as the suffix's children.
    let shared = SHARED_SUFFIXES
        .iter()
        .any(|s| parent == *s || parent.ends_with(&format!(".{s}")));
    (parent.contains('.') && !shared).then_some(parent)
}

/// `host`, with `:port` when a rule without one would not admit the port
/// (always for `host.cordon.internal`, which needs one); IPv6 in brackets.
fn rule_for(host: &str, port: u16, default_ports: &[u16]) -> String {
    let needs_port = host == super::host::HOST_INTERNAL || !default_ports.contains(&port);
    let is_v6 = host.contains(':');
    match (needs_port, is_v6) {
        (true, true) => format!("[{host}]:{port}"),
        (true, false) => format!("{host}:{port}"),
        (false, _) => host.to_string(),
    }
}

/// `s` fit for a TOML comment: control characters escaped, so nothing
/// a name or a reason holds can end the comment and start a line.
fn comment(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "learned_tests.rs"]
mod tests;
