//! The credentials door's policy: which hosts' TLS cordon terminates,
//! which method and path rules apply there, and which secrets it injects
//! for which hosts. Pure logic, no I/O.
//!
//! ```toml
//! [network]
//! inspect = ["api.github.com", "127.0.0.1"]  # "*" = every allowed host
//! no_inspect = ["pinned.example.com"]         # stay opaque tunnels
//! upstream_ca = ["./test-ca.pem"]             # extra roots for upstream certificates
//!
//! [[network.rules]]
//! host = "api.github.com"
//! methods = ["GET", "HEAD"]
//! paths = ["/repos/**"]
//!
//! [[credentials.inject]]
//! env = "GITHUB_TOKEN"            # the variable; its value comes from cordon's environment,
//! file = "~/.config/gh/token"     # or a file,
//! command = ["gh", "auth", "token"]  # or a command's output (one of the three)
//! hosts = ["api.github.com"]
//! ```
//!
//! A host named by a rule or an inject entry is inspected even when
//! `inspect` does not name it: a rule that cannot be enforced, or a secret
//! that cannot be swapped in, would otherwise fail open or silently.

use std::fmt;
use std::path::PathBuf;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Serialize, Serializer};

use crate::policy::host::{parse_rule, HostRule, Target};
use crate::policy::Sourced;

/// A rule of this module that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    /// A host pattern is malformed.
    #[error("{0}")]
    Host(String),
    /// A method is not an HTTP token.
    #[error("invalid HTTP method {0:?} (expected a token such as GET or POST)")]
    Method(String),
    /// A path glob is malformed.
    #[error("invalid path glob {glob:?}: {reason}")]
    Path {
        /// The glob as written.
        glob: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An environment variable name cannot be used.
    #[error("invalid variable name {0:?} (letters, digits and _, not starting with a digit)")]
    VarName(String),
}

/// A host as the credentials door names it: a network-door pattern
/// (`api.github.com`, `*.example.com`, an IP or CIDR, each with an optional
/// `:PORT`; without one every port matches), or `*` for every host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostMatch {
    /// `*`: every host the network door allows.
    Any,
    /// One pattern.
    Rule(HostRule),
}

impl HostMatch {
    /// Parses `*` or a host pattern.
    pub fn parse(raw: &str) -> Result<HostMatch, RulesError> {
        if raw == "*" {
            return Ok(HostMatch::Any);
        }
        parse_rule(raw)
            .map(HostMatch::Rule)
            .map_err(|e| RulesError::Host(e.to_string()))
    }

    /// Whether this matches `target` on `port`.
    pub fn matches(&self, target: &Target, port: u16) -> bool {
        match self {
            HostMatch::Any => true,
            HostMatch::Rule(rule) => {
                rule.port().is_none_or(|p| p == port) && rule.matches_host(target)
            }
        }
    }
}

impl fmt::Display for HostMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostMatch::Any => f.write_str("*"),
            HostMatch::Rule(rule) => write!(f, "{rule}"),
        }
    }
}

impl Serialize for HostMatch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One `[[network.rules]]` entry: on its host, only these methods on these
/// paths. An empty list means any.
#[derive(Clone, Debug, Serialize)]
pub struct HttpRule {
    /// The host it applies to.
    pub host: HostMatch,
    /// Allowed methods, upper case; empty: any.
    pub methods: Vec<String>,
    /// Allowed path globs (`*` stays within a segment, `**` crosses them); empty: any.
    pub paths: Vec<String>,
    #[serde(skip)]
    globs: GlobSet,
}

impl PartialEq for HttpRule {
    fn eq(&self, other: &Self) -> bool {
        self.host == other.host && self.methods == other.methods && self.paths == other.paths
    }
}

impl Eq for HttpRule {}

impl HttpRule {
    /// Checks and compiles one rule.
    pub fn new(host: HostMatch, methods: &[String], paths: &[String]) -> Result<Self, RulesError> {
        let methods = methods
            .iter()
            .map(|m| {
                let ok = !m.is_empty()
                    && m.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                if ok {
                    Ok(m.to_ascii_uppercase())
                } else {
                    Err(RulesError::Method(m.clone()))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut set = GlobSetBuilder::new();
        for p in paths {
            let bad = |reason: &str| RulesError::Path {
                glob: p.clone(),
                reason: reason.to_string(),
            };
            if !p.starts_with('/') {
                return Err(bad("a path glob starts with /"));
            }
            let glob = GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| bad(&e.kind().to_string()))?;
            set.add(glob);
        }
        let globs = set.build().map_err(|e| RulesError::Path {
            glob: paths.join(", "),
            reason: e.to_string(),
        })?;
        Ok(HttpRule {
            host,
            methods,
            paths: paths.to_vec(),
            globs,
        })
    }

    /// Whether this rule names `method` and `path` (already normalised)
    /// explicitly: its methods list `method` (not "any"), and one of its
    /// paths is `path` itself, written without any glob character. Only
    /// such a rule admits an upgrade (WebSocket), whose traffic after the
    /// `101` the rules can no longer follow.
    pub fn names_exactly(&self, method: &str, path: &str) -> bool {
        let literal = |p: &String| !p.contains(['*', '?', '[', ']', '{', '}', '\\']);
        self.methods.iter().any(|m| m == method)
            && self.paths.iter().any(|p| literal(p) && p == path)
    }

    /// Whether `method` on `path` (already normalised) is inside this rule.
    /// Methods compare exactly (they are case-sensitive, RFC 9110 9.1): a
    /// `get` is not the `GET` a rule names, and a server may still treat
    /// it as one.
    pub fn admits(&self, method: &str, path: &str) -> bool {
        let method_ok = self.methods.is_empty() || self.methods.iter().any(|m| m == method);
        method_ok && (self.paths.is_empty() || self.globs.is_match(path))
    }
}

impl fmt::Display for HttpRule {
    /// `api.github.com GET,HEAD /repos/**`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let methods = if self.methods.is_empty() {
            "any method".to_string()
        } else {
            self.methods.join(",")
        };
        let paths = if self.paths.is_empty() {
            "any path".to_string()
        } else {
            self.paths.join(" ")
        };
        write!(f, "{} {methods} {paths}", self.host)
    }
}

/// Where an injected secret's real value comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretSource {
    /// cordon's own environment variable of the same name.
    Env,
    /// A file's contents (a trailing newline dropped).
    File(PathBuf),
    /// A command's standard output (a trailing newline dropped).
    Command(Vec<String>),
}

/// One `[[credentials.inject]]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InjectSpec {
    /// The variable that holds the placeholder inside the sandbox.
    pub env: String,
    /// Where the real value is read, outside the sandbox, at start.
    pub source: SecretSource,
    /// The hosts the real value may be sent to.
    pub hosts: Vec<HostMatch>,
    /// Left out, rather than an error, when the variable is unset or empty
    /// in cordon's environment (`when_set = true`): an agent's profile
    /// injects whichever of its keys the user has.
    pub when_set: bool,
    /// The request headers it is swapped in, lower case (`headers =
    /// ["x-api-key"]`); none: anywhere in a request. With some, its
    /// placeholder anywhere else (another header, the target, the body) is
    /// refused, so a server that echoes what it is sent (an AI model asked
    /// to repeat its input, an error page quoting a header) cannot send
    /// the value back.
    pub headers: Vec<String>,
}

/// Checks an environment variable name.
pub fn check_var_name(name: &str) -> Result<String, RulesError> {
    let ok = !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(name.to_string())
    } else {
        Err(RulesError::VarName(name.to_string()))
    }
}

/// The credentials door's share of the policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct InspectionPolicy {
    /// `[network] inspect`, `--inspect`: hosts whose TLS cordon terminates.
    pub inspect: Vec<Sourced<HostMatch>>,
    /// `[network] no_inspect`, `--no-inspect`: hosts that stay opaque tunnels.
    pub no_inspect: Vec<Sourced<HostMatch>>,
    /// `[network] upstream_ca`, `--upstream-ca`: PEM files of extra roots
    /// trusted for upstream certificates (besides the system's).
    pub upstream_ca: Vec<Sourced<PathBuf>>,
    /// `[[network.rules]]`: method and path rules on inspected hosts.
    pub rules: Vec<Sourced<HttpRule>>,
    /// `[[credentials.inject]]`: secrets swapped in at the proxy.
    pub inject: Vec<Sourced<InjectSpec>>,
    /// The `when_set` entries left out because their variable is unset or
    /// empty in cordon's environment (see [`InspectionPolicy::leave_out_unset`]).
    pub not_set: Vec<Sourced<String>>,
}

/// Whether the HTTP rules of a request's host admit it.
pub type Verdict = Result<(), RuleDenial>;

/// Why a request broke the HTTP rules of its host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleDenial {
    /// The host's rules, as `explain` shows them.
    pub rules: Vec<String>,
    /// Where the first of them came from.
    pub source: String,
    /// Why, in a few words.
    pub reason: String,
    /// When no rule could admit the request as it was sent (its method
    /// or path cannot be judged): how to send it so that one can.
    pub unjudgeable: Option<&'static str>,
}

impl InspectionPolicy {
    /// Moves the `when_set` entries whose variable is unset or empty in
    /// cordon's environment to [`InspectionPolicy::not_set`]: nothing is
    /// injected for them, and `explain` says why.
    pub fn leave_out_unset(&mut self) {
        let unset = |spec: &InjectSpec| {
            spec.when_set && std::env::var_os(&spec.env).is_none_or(|v| v.is_empty())
        };
        let (left_out, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.inject)
            .into_iter()
            .partition(|s| unset(&s.value));
        self.inject = kept;
        self.not_set.extend(
            left_out
                .into_iter()
                .map(|s| Sourced::new(s.value.env, s.source)),
        );
    }

    /// Whether any host may be inspected (the CA and bundle are needed).
    pub fn enabled(&self) -> bool {
        !self.inspect.is_empty() || !self.rules.is_empty() || !self.inject.is_empty()
    }

    /// Whether cordon terminates TLS to `target` on `port` (a destination
    /// the network door already allowed).
    pub fn inspects(&self, target: &Target, port: u16) -> bool {
        if self
            .no_inspect
            .iter()
            .any(|h| h.value.matches(target, port))
        {
            return false;
        }
        self.inspect.iter().any(|h| h.value.matches(target, port))
            || self
                .rules
                .iter()
                .any(|r| r.value.host.matches(target, port))
            || self
                .inject
                .iter()
                .any(|i| i.value.hosts.iter().any(|h| h.matches(target, port)))
    }

    /// Hosts that rules or inject entries name but `no_inspect` keeps
    /// opaque: those rules could not be enforced. `(what, host)` pairs.
    pub fn conflicts(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for no in &self.no_inspect {
            for r in &self.rules {
                if r.value.host == no.value || no.value == HostMatch::Any {
                    out.push((
                        format!("[[network.rules]] for {}", r.value.host),
                        no.value.to_string(),
                    ));
                }
            }
            for i in &self.inject {
                for h in &i.value.hosts {
                    if *h == no.value || no.value == HostMatch::Any {
                        out.push((
                            format!("[[credentials.inject]] {}", i.value.env),
                            h.to_string(),
                        ));
                    }
                }
            }
        }
        out
    }

    /// Whether any HTTP rule governs `target` on `port`.
    pub fn has_rules(&self, target: &Target, port: u16) -> bool {
        self.rules
            .iter()
            .any(|r| r.value.host.matches(target, port))
    }

    /// Checks a request against the HTTP rules of its host. A host without
    /// rules admits everything; a host with rules admits what one of them
    /// admits. `path` is the request's path without the query.
    pub fn check_request(&self, target: &Target, port: u16, method: &str, path: &str) -> Verdict {
        self.judge(target, port, |rules| {
            let denial = |reason: &str| RuleDenial::of(rules, reason);
            let unjudgeable = |reason: &str, how: &'static str| RuleDenial {
                unjudgeable: Some(how),
                ..denial(reason)
            };
            if method.bytes().any(|b| b.is_ascii_lowercase()) {
                return Err(unjudgeable(
                    "the method is not upper case: methods are case-sensitive, and a server could still read it as the upper-case one",
                    "send the method in upper case",
                ));
            }
            let Some(path) = normalize_path(path) else {
                return Err(unjudgeable(
                    "the path has dot segments or encoded separators the rules cannot judge",
                    "send the path without dot segments or encoded separators",
                ));
            };
            if rules.iter().any(|r| r.value.admits(method, &path)) {
                Ok(())
            } else {
                Err(denial("method or path outside the HTTP rules for this host"))
            }
        })
    }

    /// Checks a request that asks to upgrade the connection (an `Upgrade`
    /// header: WebSocket and the like). After the `101` the stream is no
    /// longer HTTP requests the rules can judge, so on a host with rules
    /// only a rule that names the method and the exact path
    /// ([`HttpRule::names_exactly`]) admits it. A host without rules
    /// admits every upgrade.
    pub fn check_upgrade(&self, target: &Target, port: u16, method: &str, path: &str) -> Verdict {
        self.judge(target, port, |rules| {
            let named = normalize_path(path)
                .is_some_and(|path| rules.iter().any(|r| r.value.names_exactly(method, &path)));
            if named {
                return Ok(());
            }
            Err(RuleDenial::of(
                rules,
                "an upgrade (WebSocket) the HTTP rules do not name exactly: after the 101 the rules cannot follow the stream",
            ))
        })
    }

    /// `by`'s verdict on the HTTP rules of `target:port` (in policy
    /// order, never empty); a host without rules admits everything.
    fn judge(
        &self,
        target: &Target,
        port: u16,
        by: impl FnOnce(&[&Sourced<HttpRule>]) -> Verdict,
    ) -> Verdict {
        let rules: Vec<&Sourced<HttpRule>> = self
            .rules
            .iter()
            .filter(|r| r.value.host.matches(target, port))
            .collect();
        if rules.is_empty() {
            return Ok(());
        }
        by(&rules)
    }
}

impl RuleDenial {
    /// A denial by `rules` (not empty: the first names the source).
    fn of(rules: &[&Sourced<HttpRule>], reason: &str) -> RuleDenial {
        RuleDenial {
            rules: rules.iter().map(|r| r.value.to_string()).collect(),
            source: rules
                .first()
                .map(|r| r.source.to_string())
                .unwrap_or_default(),
            reason: reason.to_string(),
            unjudgeable: None,
        }
    }
}

/// The path a server will see: `%XX` of unreserved characters decoded.
/// `None` when a segment is `.` or `..` (before or after decoding, and
/// once a `;param` part is cut off, as servlet containers do) or the path
/// hides a `/`, `\\` or a dot in `%2F`/`%5C`, an overlong UTF-8 form
/// (`%c0%ae`, `%c0%af`) or a double encoding (`%252e`): a server could
/// resolve those to a path the rules never saw.
pub fn normalize_path(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = path.get(i + 1..i + 3)?;
            let b = u8::from_str_radix(hex, 16).ok()?;
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(b as char);
            } else if b == b'/' || b == b'\\' || b == 0 || b == 0xc0 || b == 0xc1 {
                // 0xc0/0xc1 only start overlong UTF-8 forms of ASCII.
                return None;
            } else if b == b'%' && decodes_to_separator_or_dot(path.get(i + 3..i + 5)) {
                return None;
            } else {
                out.push('%');
                out.push_str(&hex.to_ascii_uppercase());
            }
            i += 3;
        } else {
            out.push(bytes[i] as char);
            i += 1;
        }
    }
    let dot_segment = |segment: &str| {
        let name = segment.split(';').next().unwrap_or(segment);
        name == "." || name == ".."
    };
    if out.contains('\\') || out.split('/').any(dot_segment) {
        return None;
    }
    Some(out)
}

/// Whether the two hex digits after a `%25` (an encoded `%`) name a dot
/// or a separator: `%252e` is `%2e` once a second decoder runs.
fn decodes_to_separator_or_dot(hex: Option<&str>) -> bool {
    hex.and_then(|h| u8::from_str_radix(h, 16).ok())
        .is_some_and(|b| matches!(b, b'.' | b'/' | b'\\' | 0 | 0xc0 | 0xc1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::host::normalize;
    use crate::policy::Source;

    fn rule(host: &str, methods: &[&str], paths: &[&str]) -> Sourced<HttpRule> {
        let m: Vec<String> = methods.iter().map(|s| s.to_string()).collect();
        let p: Vec<String> = paths.iter().map(|s| s.to_string()).collect();
        Sourced::new(
            HttpRule::new(HostMatch::parse(host).unwrap(), &m, &p).unwrap(),
            Source::Flag("test".into()),
        )
    }

    #[test]
    fn upgrades_need_a_rule_naming_method_and_exact_path() {
        let policy = InspectionPolicy {
            rules: vec![
                rule("api.example", &["GET"], &["/socket", "/live/*"]),
                rule("api.example", &[], &["/any-method"]),
                rule("glob.example", &["GET"], &["/**"]),
            ],
            ..Default::default()
        };
        let api = normalize("api.example").unwrap();
        let glob = normalize("glob.example").unwrap();
        let free = normalize("free.example").unwrap();
        assert!(policy.check_upgrade(&api, 443, "GET", "/socket").is_ok());
        assert!(policy.check_upgrade(&api, 443, "GET", "/%73ocket").is_ok());
        assert!(policy.check_upgrade(&api, 443, "get", "/socket").is_err());
        // A wildcard, "any method", another method or path: not explicit.
        assert!(policy.check_upgrade(&api, 443, "GET", "/live/x").is_err());
        assert!(policy
            .check_upgrade(&api, 443, "GET", "/any-method")
            .is_err());
        assert!(policy.check_upgrade(&api, 443, "POST", "/socket").is_err());
        assert!(policy.check_upgrade(&api, 443, "GET", "/socket/").is_err());
        assert!(policy
            .check_upgrade(&api, 443, "GET", "/x/../socket")
            .is_err());
        let d = policy.check_upgrade(&glob, 443, "GET", "/ws").unwrap_err();
        assert!(d.reason.contains("upgrade"), "{d:?}");
        // The plain rules still admit what they admit.
        assert!(policy.check_request(&glob, 443, "GET", "/ws").is_ok());
        // Hosts without rules: every upgrade.
        assert!(policy.check_upgrade(&free, 443, "GET", "/ws").is_ok());
    }

    #[test]
    fn rules_admit_as_written() {
        let policy = InspectionPolicy {
            rules: vec![rule("api.github.com", &["GET", "head"], &["/repos/**"])],
            ..Default::default()
        };
        let gh = normalize("api.github.com").unwrap();
        let other = normalize("example.com").unwrap();
        assert!(policy.check_request(&gh, 443, "GET", "/repos/a/b").is_ok());
        assert!(policy.check_request(&gh, 443, "HEAD", "/repos/x").is_ok());
        let d = policy
            .check_request(&gh, 443, "POST", "/repos/a")
            .unwrap_err();
        assert_eq!(d.rules, vec!["api.github.com GET,HEAD /repos/**"]);
        assert_eq!(d.source, "flag test");
        assert!(policy.check_request(&gh, 443, "GET", "/user").is_err());
        assert!(policy.check_request(&gh, 443, "GET", "/repos").is_err());
        // Dot segments and encoded separators cannot sneak out of /repos.
        assert!(policy
            .check_request(&gh, 443, "GET", "/repos/../user")
            .is_err());
        assert!(policy
            .check_request(&gh, 443, "GET", "/repos/%2e%2e/user")
            .is_err());
        assert!(policy
            .check_request(&gh, 443, "GET", "/repos/a%2Fb")
            .is_err());
        assert!(policy.check_request(&gh, 443, "GET", "/repos/%61").is_ok());
        // `;param` dot segments, overlong UTF-8 and double-encoded dots.
        for sneaky in [
            "/repos/..;/user",
            "/repos/%2e%2e;x=1/user",
            "/repos/.;/../user",
            "/repos/%c0%ae%c0%ae/user",
            "/repos/%C0%AE./user",
            "/repos/%252e%252e/user",
            "/repos/a%252fb",
        ] {
            assert!(
                policy.check_request(&gh, 443, "GET", sneaky).is_err(),
                "{sneaky}"
            );
        }
        assert!(policy.check_request(&gh, 443, "GET", "/repos/a;b").is_ok());
        assert!(policy.check_request(&gh, 443, "GET", "/repos/%25").is_ok());
        // Methods are case-sensitive: `get` is not `GET` (the rule's
        // `head` is written HEAD).
        let d = policy
            .check_request(&gh, 443, "get", "/repos/a")
            .unwrap_err();
        assert!(d.reason.contains("upper case"), "{d:?}");
        assert!(policy.check_request(&gh, 443, "Head", "/repos/a").is_err());
        // Hosts without rules are not restricted.
        assert!(policy.check_request(&other, 443, "DELETE", "/").is_ok());
        // Rules make their host inspected.
        assert!(policy.inspects(&gh, 443));
        assert!(!policy.inspects(&other, 443));
    }

    #[test]
    fn single_star_stays_in_a_segment() {
        let r = rule("h.example", &[], &["/a/*/c"]).value;
        assert!(r.admits("PUT", "/a/b/c"));
        assert!(!r.admits("PUT", "/a/b/x/c"));
    }

    #[test]
    fn bad_rules_are_refused() {
        let h = HostMatch::Any;
        assert!(matches!(
            HttpRule::new(h.clone(), &["GE T".into()], &[]),
            Err(RulesError::Method(_))
        ));
        assert!(matches!(
            HttpRule::new(h.clone(), &[], &["repos/**".into()]),
            Err(RulesError::Path { .. })
        ));
        assert!(matches!(
            HttpRule::new(h, &[], &["/a/[".into()]),
            Err(RulesError::Path { .. })
        ));
        assert!(HostMatch::parse("exa mple.com").is_err());
        assert!(check_var_name("9X").is_err());
        assert!(check_var_name("A-B").is_err());
        assert_eq!(check_var_name("GITHUB_TOKEN").unwrap(), "GITHUB_TOKEN");
    }

    #[test]
    fn inspect_star_and_no_inspect() {
        let src = || Source::Flag("t".into());
        let policy = InspectionPolicy {
            inspect: vec![Sourced::new(HostMatch::Any, src())],
            no_inspect: vec![Sourced::new(
                HostMatch::parse("pinned.example").unwrap(),
                src(),
            )],
            ..Default::default()
        };
        assert!(policy.inspects(&normalize("a.example").unwrap(), 443));
        assert!(policy.inspects(&normalize("127.0.0.1").unwrap(), 8443));
        assert!(!policy.inspects(&normalize("pinned.example").unwrap(), 443));
        let ported = HostMatch::parse("127.0.0.1:8443").unwrap();
        assert!(ported.matches(&normalize("127.0.0.1").unwrap(), 8443));
        assert!(!ported.matches(&normalize("127.0.0.1").unwrap(), 443));
    }
}
