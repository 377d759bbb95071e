//! `cordon log`: reads an audit log, filters it, shows it, follows it and
//! checks every line's MAC under the user's audit key.

use std::io::{self, BufRead, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::audit::{self, Door, Event, Verdict};
use crate::escape::printable;
use crate::policy::load::parse_duration;

/// Why the log could not be read or did not verify.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot read the audit log {}: {source}", printable(path))]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot verify: {0}")]
    Key(#[from] audit::AuditError),
    #[error("{}: {source}", printable(path))]
    Chain {
        path: PathBuf,
        source: audit::ChainError,
    },
    #[error("--since {}: expected a duration (30m, 2h, 1d) or a time (2026-11-30T06:00:00Z)", printable(.0))]
    Since(String),
    #[error("--door {}: expected one of network, files, credentials, process", printable(.0))]
    Door(String),
}

/// Which events to show.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// A sandbox id, or the start of one.
    pub sandbox: Option<String>,
    pub door: Option<Door>,
    /// Only refusals.
    pub denied: bool,
    /// Only events at or after this RFC 3339 time.
    pub since: Option<String>,
}

impl Filter {
    /// Whether `event` passes.
    pub fn keeps(&self, event: &Event) -> bool {
        self.sandbox
            .as_ref()
            .is_none_or(|s| event.sandbox.starts_with(s.as_str()))
            && self.door.is_none_or(|d| event.door == d)
            && (!self.denied || event.verdict == Verdict::Deny)
            // One fixed format (UTC, milliseconds): text order is time order.
            && self.since.as_ref().is_none_or(|t| event.time.as_str() >= t.as_str())
    }
}

/// Parses `--door`.
pub fn parse_door(raw: &str) -> Result<Door, LogError> {
    match raw {
        "network" => Ok(Door::Network),
        "files" => Ok(Door::Files),
        "credentials" => Ok(Door::Credentials),
        "process" => Ok(Door::Process),
        _ => Err(LogError::Door(raw.to_string())),
    }
}

/// Parses `--since`: a duration back from now, or an RFC 3339 time.
pub fn parse_since(raw: &str, now: SystemTime) -> Result<String, LogError> {
    if let Ok(ago) = parse_duration(raw) {
        let at = now
            .checked_sub(ago)
            .unwrap_or(UNIX_EPOCH)
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        return Ok(audit::rfc3339(at.as_secs(), at.subsec_millis()));
    }
    let at = parse_time(raw).ok_or_else(|| LogError::Since(raw.to_string()))?;
    let since = at.unix_timestamp_nanos().max(0);
    let secs = u64::try_from(since / 1_000_000_000).unwrap_or(u64::MAX);
    let millis = u32::try_from(since % 1_000_000_000 / 1_000_000).unwrap_or(0);
    Ok(audit::rfc3339(secs, millis))
}

/// A time for `--since`: RFC 3339 with any offset (`2026-11-30T06:00:00Z`,
/// `2026-11-30T08:00:00+02:00`), or shortened as people type it, read as
/// UTC like the log (`2026-11-30`, `2026-11-30T06:00`,
/// `2026-11-30T06:00:00`).
fn parse_time(raw: &str) -> Option<time::OffsetDateTime> {
    use time::format_description::well_known::Rfc3339;
    use time::macros::format_description;
    if let Ok(at) = time::OffsetDateTime::parse(raw, &Rfc3339) {
        return Some(at);
    }
    let local = raw.strip_suffix('Z').unwrap_or(raw);
    let date_time = [
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]"),
        format_description!("[year]-[month]-[day]T[hour]:[minute]"),
    ];
    if let Some(at) = date_time
        .iter()
        .find_map(|form| time::PrimitiveDateTime::parse(local, form).ok())
    {
        return Some(at.assume_utc());
    }
    time::Date::parse(local, format_description!("[year]-[month]-[day]"))
        .ok()
        .map(|day| day.midnight().assume_utc())
}

/// One event as a line for people.
pub fn render(event: &Event) -> String {
    let time = event
        .time
        .replacen('T', " ", 1)
        .trim_end_matches('Z')
        .to_string();
    let verdict = match (event.verdict, event.event) {
        (_, audit::Kind::Close) => "close",
        (_, audit::Kind::Limit) => "LIMIT",
        (_, audit::Kind::Withheld) => "unset",
        (Verdict::Allow, _) => "allow",
        (Verdict::Deny, _) => "DENY ",
    };
    let door = serde_json::to_value(event.door)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut line = format!(
        "{time}  {}  {:<8} {:<11} {verdict}  {}",
        event.sandbox, event.command, door, event.subject
    );
    if let Some(addr) = &event.address {
        line.push_str(&format!(" ({addr})"));
    }
    if let (Some(up), Some(down)) = (event.bytes_up, event.bytes_down) {
        line.push_str(&format!("  ↑{up} ↓{down} bytes"));
        if let Some(ms) = event.duration_ms {
            line.push_str(&format!(" in {ms} ms"));
        }
    }
    if event.verdict == Verdict::Deny {
        if let Some(rule) = &event.rule {
            let from = event.source.as_deref().unwrap_or("built-in");
            line.push_str(&format!("  rule: {rule} ({from})"));
        }
        if let Some(reason) = &event.reason {
            line.push_str(&format!("; {reason}"));
        }
        if let Some(fix) = &event.fix {
            line.push_str(&format!("; {fix}"));
        }
    }
    // Everything in an event may come from the sandbox (a socket path, a
    // host name): printed escaped, so it cannot drive the terminal.
    printable(&line)
}

/// How `show` prints.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
    pub follow: bool,
}

/// Prints the events of `path` that pass `filter`; with `follow`, keeps
/// printing what is appended until interrupted. Lines that are not events
/// are reported on stderr with their number, and skipped.
pub fn show(path: &Path, filter: &Filter, out: Output) -> Result<(), LogError> {
    let read_err = |source| LogError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(read_err)?;
    let mut stdout = io::stdout().lock();
    let mut number = 0usize;
    let mut offset = 0u64;
    loop {
        file.seek(SeekFrom::Start(offset)).map_err(read_err)?;
        let mut reader = io::BufReader::new(&file);
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader.read_line(&mut line).map_err(read_err)?;
            // A line still being written has no newline yet: read it later.
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            offset += n as u64;
            number += 1;
            let text = line.trim_end();
            match serde_json::from_str::<Event>(text) {
                Ok(event) if filter.keeps(&event) => {
                    let shown = if out.json {
                        // As stored; lines of older versions may hold
                        // characters that act on a terminal.
                        crate::escape::json_printable(text)
                    } else {
                        render(&event)
                    };
                    if writeln!(stdout, "{shown}").is_err() {
                        return Ok(()); // the reader went away (a pipe to head)
                    }
                }
                Ok(_) => {}
                Err(e) => crate::say!(
                    "cordon: {}:{number}: not an audit event ({}); skipped",
                    printable(path),
                    printable(e.to_string())
                ),
            }
        }
        if !out.follow {
            return Ok(());
        }
        let _ = stdout.flush();
        std::thread::sleep(Duration::from_millis(200));
        // Truncated or replaced: start over.
        let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if len < offset {
            file = std::fs::File::open(path).map_err(read_err)?;
            offset = 0;
            number = 0;
        }
    }
}

/// Checks every line of the whole file under the user's audit key at
/// `key`; returns the number of events.
pub fn verify(path: &Path, key: &Path) -> Result<usize, LogError> {
    let key = audit::AuditKey::load(key)?;
    let text = std::fs::read_to_string(path).map_err(|source| LogError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    audit::verify_log(path, &text, &key).map_err(|source| LogError::Chain {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use audit::Kind;

    fn event(door: Door, verdict: Verdict, sandbox: &str, time: &str) -> Event {
        let mut e = Event::new(door, Kind::Decision, verdict, "example.com:443");
        e.sandbox = sandbox.into();
        e.time = time.into();
        e
    }

    #[test]
    fn filters_combine() {
        let e = event(
            Door::Network,
            Verdict::Deny,
            "cordon-1-abc",
            "2026-11-30T06:00:00.000Z",
        );
        let all = Filter::default();
        assert!(all.keeps(&e));
        let f = Filter {
            sandbox: Some("cordon-1".into()),
            door: Some(Door::Network),
            denied: true,
            since: Some("2026-11-30T05:59:59".into()),
        };
        assert!(f.keeps(&e));
        assert!(!Filter {
            door: Some(Door::Files),
            ..f.clone()
        }
        .keeps(&e));
        assert!(!Filter {
            sandbox: Some("cordon-2".into()),
            ..f.clone()
        }
        .keeps(&e));
        assert!(!Filter {
            since: Some("2026-11-30T06:00:01".into()),
            ..f.clone()
        }
        .keeps(&e));
        let allowed = event(
            Door::Network,
            Verdict::Allow,
            "cordon-1-abc",
            "2026-11-30T06:00:00.000Z",
        );
        assert!(!f.keeps(&allowed));
    }

    #[test]
    fn since_takes_durations_and_times() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(
            parse_since("1h", now).unwrap(),
            audit::rfc3339(1_800_000_000 - 3600, 0)
        );
        for (typed, meant) in [
            ("2026-11-30T06:00:00Z", "2026-11-30T06:00:00.000Z"),
            ("2026-11-30T06:00:00.250Z", "2026-11-30T06:00:00.250Z"),
            ("2026-11-30T08:00:00+02:00", "2026-11-30T06:00:00.000Z"),
            ("2026-11-30T06:00:00", "2026-11-30T06:00:00.000Z"),
            ("2026-11-30T06:00", "2026-11-30T06:00:00.000Z"),
            ("2026-11-30", "2026-11-30T00:00:00.000Z"),
        ] {
            assert_eq!(parse_since(typed, now).unwrap(), meant, "{typed}");
        }
        for wrong in [
            "yesterday",
            "2026-13-01",
            "2026-02-30",
            "2026-11-30T25:00",
            "2026-11",
        ] {
            assert!(parse_since(wrong, now).is_err(), "{wrong}");
        }
    }

    #[test]
    fn a_denial_reads_with_its_rule() {
        let mut e = event(
            Door::Network,
            Verdict::Deny,
            "cordon-1-abc",
            "2026-11-30T06:00:00.000Z",
        );
        e.rule = Some("default: nothing is allowed".into());
        e.reason = Some("no allow rule names this host".into());
        e.fix = Some("allow with --allow-domain a.example".into());
        let line = render(&e);
        assert!(
            line.starts_with("2026-11-30 06:00:00.000  cordon-1-abc"),
            "{line}"
        );
        assert!(
            line.contains("DENY") && line.contains("rule: default: nothing is allowed"),
            "{line}"
        );
        assert!(
            line.ends_with("; no allow rule names this host; allow with --allow-domain a.example"),
            "{line}"
        );
    }
}
