//! Values shared by files and flags: sizes, durations, ports, counts and
//! names, checked; and their human forms for messages and `cordon explain`.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use super::document::Scalar;
use crate::policy::pattern::{PathContext, PathPattern};
use crate::policy::Layer;

/// The value of `--audit` and `audit.file` that turns the log off.
pub const AUDIT_OFF: &str = "none";

/// Parses an audit log path: `none` (off), or a path without globs.
pub fn parse_audit_file(raw: &str, ctx: &PathContext<'_>) -> Result<Option<PathBuf>, String> {
    if raw == AUDIT_OFF {
        return Ok(None);
    }
    match PathPattern::parse(raw, ctx).map_err(|e| e.to_string())? {
        PathPattern::Exact(path) => Ok(Some(path)),
        PathPattern::Glob { .. } => Err(format!(
            "{raw:?}: the audit log must be one file, not a glob (or {AUDIT_OFF:?} for no log)"
        )),
    }
}

/// Parses a size: a whole number of bytes with an optional binary unit
/// (`K`, `M`, `G`, `T`, any case, optionally followed by `iB` or `B`).
/// `"512M"`, `"1G"`, `"1GiB"`, `"100k"`, `"4096"`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || {
        format!("invalid size {s:?} (expected a whole number with an optional unit K, M, G or T, e.g. 512M)")
    };
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits == 0 {
        return Err(bad());
    }
    let number: u64 = t[..digits].parse().map_err(|_| bad())?;
    let unit = t[digits..].trim_start().to_ascii_lowercase();
    let shift = match unit.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("invalid size {s:?} (too large)"))
}

/// Parses a duration: a plain number of seconds, or numbers each followed by
/// a unit (`ms`, `s`, `m`, `h`, `d`): `"90s"`, `"30m"`, `"2h"`, `"1h30m"`, `"500ms"`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || {
        format!("invalid duration {s:?} (expected e.g. 90s, 30m, 2h, 1h30m, 500ms, or a number of seconds)")
    };
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map(Duration::from_secs).map_err(|_| bad());
    }
    let mut rest = t;
    let mut total = Duration::ZERO;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let part = match &rest[..unit_len] {
            "ms" => Some(Duration::from_millis(number)),
            "s" => Some(Duration::from_secs(number)),
            "m" => number.checked_mul(60).map(Duration::from_secs),
            "h" => number.checked_mul(3600).map(Duration::from_secs),
            "d" => number.checked_mul(86_400).map(Duration::from_secs),
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = part
            .and_then(|p| total.checked_add(p))
            .ok_or_else(|| format!("invalid duration {s:?} (too long)"))?;
    }
    Ok(total)
}

/// A size in a file: a size string (`"512M"`) or a number of bytes, more than zero.
pub fn size(v: Scalar<'_>) -> Result<u64, String> {
    match v {
        Scalar::String(s) => parse_size(s),
        Scalar::Integer(n) => {
            u64::try_from(n).map_err(|_| format!("invalid size {n} (must not be negative)"))
        }
        other => Err(format!(
            "expected a size (a string such as \"512M\", or a number of bytes), found {}",
            other.kind()
        )),
    }
    .and_then(nonzero)
}

/// A duration in a file: a duration string (`"2h"`) or a number of
/// seconds, more than zero.
pub fn duration(v: Scalar<'_>) -> Result<Duration, String> {
    match v {
        Scalar::String(s) => parse_duration(s),
        Scalar::Integer(n) => u64::try_from(n)
            .map(Duration::from_secs)
            .map_err(|_| format!("invalid duration {n} (must not be negative)")),
        other => Err(format!(
            "expected a duration (a string such as \"2h\", or a number of seconds), found {}",
            other.kind()
        )),
    }
    .and_then(nonzero)
}

/// A count (of tasks, of connections): at least 1.
pub fn at_least_one(n: u64) -> Result<u64, String> {
    if n == 0 {
        Err("must be at least 1".to_string())
    } else {
        Ok(n)
    }
}

/// A connection cap: at least 1, at most what the proxy's semaphore holds.
pub fn check_connections(n: u64) -> Result<u64, String> {
    let n = at_least_one(n)?;
    if n > MAX_MAX_CONNECTIONS {
        Err(format!("must be at most {MAX_MAX_CONNECTIONS}"))
    } else {
        Ok(n)
    }
}

/// The semaphore behind the cap holds at most this many permits.
const MAX_MAX_CONNECTIONS: u64 = 1 << 20;

/// A size or a duration more than zero (its type's default).
pub fn nonzero<T: Default + PartialEq>(v: T) -> Result<T, String> {
    if v == T::default() {
        Err("must be more than zero".to_string())
    } else {
        Ok(v)
    }
}

/// A TCP port: 1 to 65535.
pub fn check_port(n: i64) -> Result<u16, String> {
    match u16::try_from(n) {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(format!("{n} is not a TCP port (expected 1 to 65535)")),
    }
}

/// `ports` without repeats, in first-seen order.
pub fn dedup_ports(ports: Vec<u16>) -> Vec<u16> {
    let mut out: Vec<u16> = Vec::with_capacity(ports.len());
    for p in ports {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// `80, 443`, or `none`.
pub fn join_ports(ports: &[u16]) -> String {
    if ports.is_empty() {
        return "none".to_string();
    }
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A layer's name (`namespaces`, `landlock`, `seccomp`, `limits`).
pub fn parse_layer(name: &str) -> Result<Layer, String> {
    Layer::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
        format!(
            "unknown layer {name:?} (expected one of {})",
            names.join(", ")
        )
    })
}

/// Checks a `protect` name: relative, no `..`, no globs; returns it
/// normalised, keeping a trailing `/` (which marks a directory).
pub fn check_protect(raw: &str) -> Result<String, String> {
    if raw.is_empty() {
        return Err("empty name".to_string());
    }
    if raw.starts_with('/') || raw.starts_with('~') {
        return Err(format!(
            "{raw:?} must be relative to the project (no leading / or ~)"
        ));
    }
    if raw.contains(['*', '?', '[', '{']) {
        return Err(format!(
            "{raw:?}: globs are not supported here; name the file or directory"
        ));
    }
    let mut parts = Vec::new();
    for c in Path::new(raw).components() {
        match c {
            Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => return Err(format!("{raw:?} must not contain `..`")),
        }
    }
    if parts.is_empty() {
        return Err(format!(
            "{raw:?} names the project itself; name something inside it"
        ));
    }
    let dir = if raw.ends_with('/') { "/" } else { "" };
    Ok(format!("{}{dir}", parts.join("/")))
}

/// `1073741824` → `1 GiB`; a number of bytes when no unit is exact.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
    for (shift, unit) in UNITS {
        let size = 1u64 << shift;
        if bytes >= size && bytes % size == 0 {
            return format!("{} {unit}", bytes / size);
        }
    }
    for (shift, unit) in UNITS {
        let size = 1u64 << shift;
        if bytes >= size {
            return format!(
                "{bytes} bytes (about {:.1} {unit})",
                bytes as f64 / size as f64
            );
        }
    }
    format!("{bytes} bytes")
}

/// `5400s` → `1h30m`.
pub fn human_duration(d: Duration) -> String {
    let millis = d.subsec_millis();
    let mut secs = d.as_secs();
    let mut out = String::new();
    for (size, unit) in [(86_400, "d"), (3600, "h"), (60, "m"), (1, "s")] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    if millis > 0 || out.is_empty() {
        out.push_str(&format!("{millis}ms"));
    }
    out
}

/// Quotes `path` for a POSIX shell when it needs it.
pub fn shell_quote(path: &Path) -> String {
    let s = path.to_string_lossy();
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c));
    if plain {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// One file path (no glob): for `upstream_ca` and inject `file`.
pub fn one_file(raw: &str, ctx: &PathContext<'_>) -> Result<PathBuf, String> {
    match PathPattern::parse(raw, ctx).map_err(|e| e.to_string())? {
        PathPattern::Exact(path) => Ok(path),
        PathPattern::Glob { .. } => Err(format!("{raw:?}: name one file, not a glob")),
    }
}
