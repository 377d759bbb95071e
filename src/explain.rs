//! `cordon explain`: the effective policy, door by door, with the source of
//! every line.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::credentials::env::{EnvFilter, Removal};
use crate::policy::env::SECRET_PATTERNS;
use crate::policy::host::{HostPattern, HostRule};
use crate::policy::keys::{self, About, Door};
use crate::policy::load::join_ports;
use crate::policy::{Layer, PathPattern, Policy, Source, Sourced};

/// Where the sandbox's private temp dir appears inside.
const PRIVATE_TMP: &str = "/tmp";

/// Widest first column before rows stop being padded to it.
const MAX_WHAT_WIDTH: usize = 44;
/// Widest second column before rows stop being padded to it.
const MAX_NOTE_WIDTH: usize = 48;

/// The effective policy as text: one section per door, then limits and
/// layers; every line ends with where it came from. Each section shows the
/// keys declared in it ([`keys::KEYS`]): a door's own rendering for a key
/// declared with one ([`keys::Explain::Door`]), a row from the declaration for the
/// others ([`keys::Explain::Row`]).
pub fn render_text(policy: &Policy) -> String {
    let view = View::of(policy);
    let mut text = Text {
        view: &view,
        policy,
        lines: vec![Line::Title(format!(
            "Effective policy for {}",
            policy.project.value.display()
        ))],
    };

    // An agent's profile first: most lines below may be its.
    text.door(Door::Agent);
    text.heading("files");
    text.door(Door::Writable);
    text.door(Door::Caches);
    text.door(Door::State);
    text.group("readable");
    text.entries(&view.files.readable);
    text.door(Door::Unreadable);
    text.door(Door::ReadOnly);
    text.door(Door::Protected);
    text.settings("files");

    text.heading("network");
    text.builtin("route out", &view.network.route_out);
    text.door(Door::LocalPorts);
    text.door(Door::HostPorts);
    text.door(Door::Publish);
    text.door(Door::UnixSockets);
    text.builtin("proxy", &view.network.proxy);
    text.settings("network");
    text.builtin(
        "loopback, private, metadata, ...",
        "refused unless a rule names the address",
    );
    text.door(Door::Presets);
    text.door(Door::HostAllow);
    text.door(Door::HostDeny);
    text.door(Door::Inspect);
    text.door(Door::NoInspect);
    text.door(Door::UpstreamCa);
    text.door(Door::HttpRules);

    text.heading("credentials");
    text.door(Door::Inject);
    text.homes();
    text.door(Door::ReAllowed);
    text.door(Door::EnvClear);
    text.door(Door::EnvDeny);
    text.door(Door::EnvPass);
    text.door(Door::EnvKeep);
    text.door(Door::EnvSet);
    text.unset();
    text.settings("credentials");

    text.heading("limits");
    text.settings("limits");

    text.heading("audit");
    text.door(Door::Audit);
    text.settings("audit");

    text.heading("layers");
    text.door(Door::Layers);
    text.settings("sandbox");

    render_lines(&text.lines)
}

/// The text being built, from the view of the policy.
struct Text<'v> {
    view: &'v View,
    policy: &'v Policy,
    lines: Vec<Line>,
}

impl Text<'_> {
    fn heading(&mut self, name: &str) {
        self.lines.push(Line::Heading(name.to_string()));
    }

    fn group(&mut self, name: &str) {
        self.lines.push(Line::Group(name.to_string()));
    }

    fn text(&mut self, text: &str) {
        self.lines.push(Line::Text(text.to_string()));
    }

    /// `text` when `entries` is empty.
    fn when_empty<T>(&mut self, entries: &[T], text: &str) {
        if entries.is_empty() {
            self.text(text);
        }
    }

    fn row(&mut self, what: String, note: String, source: String) {
        self.lines.push(Line::Row { what, note, source });
    }

    /// A row of cordon's own.
    fn builtin(&mut self, what: &str, note: &str) {
        self.row(
            what.to_string(),
            note.to_string(),
            Source::Builtin.to_string(),
        );
    }

    fn entries(&mut self, entries: &[Entry]) {
        self.lines.extend(entries.iter().map(Line::row));
    }

    /// The rows of the keys of `section` declared as one row each.
    fn settings(&mut self, section: &str) {
        for key in keys::in_section(section) {
            if let Some(shown) = key.row(self.policy) {
                self.row(
                    shown.label.to_string(),
                    shown.note,
                    shown.source.to_string(),
                );
            }
        }
    }

    /// The lines of `door`, for each key declared to show in it.
    fn door(&mut self, door: Door) {
        for key in keys::in_door(door) {
            self.door_lines(door, key.about());
        }
    }

    /// A door's own rendering of the key `about` names.
    fn door_lines(&mut self, door: Door, about: &About) {
        let view = self.view;
        match door {
            Door::Writable => {
                self.group("writable");
                self.entries(&view.files.writable);
            }
            Door::Unreadable => {
                self.group("unreadable (credential stores: see below)");
                self.when_empty(&view.files.unreadable, "nothing else");
                self.entries(&view.files.unreadable);
            }
            Door::Caches => {
                if !view.files.caches.is_empty() {
                    self.group("caches (the sandbox writes a private layer of this project's)");
                }
                for cache in &view.files.caches {
                    self.row(cache.path.clone(), cache.note(), cache.from.clone());
                }
            }
            Door::State if about.name == keys::STATE_FILE.about.name => {
                for file in &view.files.state_files {
                    self.row(
                        file.path.clone(),
                        file.note.clone().unwrap_or_default(),
                        file.from.clone(),
                    );
                }
            }
            Door::State => {
                if !view.files.state.is_empty() || !view.files.state_files.is_empty() {
                    self.group("agents' state (writable in these names only; the rest read-only, nothing else made)");
                }
                for state in &view.files.state {
                    self.row(state.path.clone(), state.note.clone().unwrap_or_default(), state.from.clone());
                }
            }
            Door::ReadOnly => {
                self.group("read-only inside writable areas");
                self.entries(&view.files.read_only);
            }
            Door::Protected => {
                self.group("protected: read-only, and not creatable, in the project and every git repository git would see in a writable area");
                self.entries(&view.files.protected);
            }
            Door::LocalPorts => match &view.network.local_ports {
                None => {
                    let note = format!(
                        "any: programs inside may bind and connect to every TCP port of the sandbox's own lo, which nothing outside reaches; narrow with {}",
                        usage(about)
                    );
                    self.builtin("local ports", &note);
                }
                Some(only) => self.row(
                    "local ports".to_string(),
                    format!(
                        "only {} (besides cordon's own, the host ports and the published ports) on the sandbox's own lo; a bind or connect to any other is refused (EACCES): add it to {}",
                        join_ports(&only.ports),
                        usage(about)
                    ),
                    only.from.clone(),
                ),
            },
            Door::HostPorts => {
                if view.network.host_ports.is_empty() {
                    let note = format!(
                        "none: 127.0.0.1 inside is the sandbox's own; forward one with {}",
                        usage(about)
                    );
                    self.builtin("host ports", &note);
                }
                for port in &view.network.host_ports {
                    let p = port.port;
                    self.row(
                        format!("host port {p}"),
                        format!("127.0.0.1:{p} and [::1]:{p} inside reach the host's 127.0.0.1:{p}, as host.cordon.internal:{p}"),
                        port.from.clone(),
                    );
                }
            }
            Door::Publish => {
                if view.network.publish.is_empty() {
                    let note = format!(
                        "none: nothing outside reaches a server inside; publish one with {}",
                        usage(about)
                    );
                    self.builtin("published", &note);
                }
                for published in &view.network.publish {
                    self.row(
                        format!("published {}", published.inside),
                        format!(
                            "the host's 127.0.0.1:{} reaches 127.0.0.1:{} inside",
                            published.host, published.inside
                        ),
                        published.from.clone(),
                    );
                }
            }
            Door::UnixSockets => {
                if view.network.unix_sockets.is_empty() {
                    let note = format!(
                        "none reachable (sockets the sandbox makes itself work); add {}",
                        usage(about)
                    );
                    self.builtin("host UNIX sockets", &note);
                }
                for socket in &view.network.unix_sockets {
                    let note = match &socket.warning {
                        Some(w) => format!("reachable. WARNING: {w}"),
                        None => "reachable".to_string(),
                    };
                    self.row(
                        format!("host UNIX socket {}", socket.path),
                        note,
                        socket.from.clone(),
                    );
                }
            }
            Door::Agent => {
                for p in view.network.presets.iter().filter(|p| p.agent) {
                    self.row(
                        format!("agent {}", p.name),
                        format!("{}; its lines name it (`cordon agents {}`)", p.about, p.name),
                        p.from.clone(),
                    );
                }
            }
            Door::Presets => {
                for p in view.network.presets.iter().filter(|p| !p.agent) {
                    self.row(
                        format!("preset {}", p.name),
                        format!("{}; its lines below name it", p.about),
                        p.from.clone(),
                    );
                }
            }
            Door::HostAllow => {
                self.group("allowed hosts (deny beats allow)");
                let presets = keys::PRESETS.about.flag_or_key();
                let none = format!(
                    "none: {}, or {presets} NAME for what a tool needs (`cordon presets`)",
                    how_to_add(about)
                );
                self.when_empty(&view.network.allow, &none);
                self.lines
                    .extend(view.network.allow.iter().map(RuleView::line));
            }
            Door::HostDeny => {
                self.group("denied hosts");
                self.when_empty(&view.network.deny, "none");
                self.lines
                    .extend(view.network.deny.iter().map(RuleView::line));
            }
            Door::Inspect => self.inspected(about),
            Door::NoInspect => {
                for e in &view.inspection.no_inspect {
                    let note = format!("not inspected ({})", about.name);
                    self.row(e.path.clone(), note, e.from.clone());
                }
            }
            Door::UpstreamCa => {
                for e in &view.inspection.upstream_ca {
                    let note = "also trusted for upstream certificates".to_string();
                    self.row(e.path.clone(), note, e.from.clone());
                }
            }
            Door::HttpRules => {
                if !view.inspection.rules.is_empty() {
                    self.group("HTTP rules (host methods paths; a host with rules admits only what they name)");
                    self.entries(&view.inspection.rules);
                }
            }
            Door::Inject => {
                self.group("injected (the sandbox sees a placeholder; the proxy swaps in the value for these hosts)");
                self.when_empty(&view.inspection.inject, "nothing");
                for i in &view.inspection.inject {
                    let note = format!("to {} (value from {})", i.hosts.join(", "), i.value_from);
                    self.row(i.env.clone(), note, i.from.clone());
                }
                for n in &view.inspection.not_set {
                    let note = "not injected: unset in cordon's environment (when_set)".to_string();
                    self.row(n.path.clone(), note, n.from.clone());
                }
            }
            Door::ReAllowed => {
                self.group("re-allowed for reading");
                self.when_empty(&view.credentials.re_allowed, "nothing");
                self.entries(&view.credentials.re_allowed);
            }
            Door::EnvClear => {
                let env = &view.credentials.env;
                if env.clear {
                    self.row(
                        "environment".to_string(),
                        "cleared: only the passed and kept names below, TMPDIR and the proxy variables"
                            .to_string(),
                        env.clear_from.clone(),
                    );
                }
            }
            Door::EnvDeny => {
                let env = &view.credentials.env;
                if !env.clear {
                    let (builtin, denied): (Vec<_>, Vec<_>) = env
                        .patterns
                        .iter()
                        .partition(|p| p.source == Source::Builtin);
                    let builtin: Vec<&str> = builtin.iter().map(|p| p.pattern.as_str()).collect();
                    let note = format!("unset: {}", builtin.join(" "));
                    self.builtin("secret-looking variables", &note);
                    for p in denied {
                        self.row(
                            format!("variables {}", p.pattern),
                            "unset".to_string(),
                            p.from.clone(),
                        );
                    }
                }
            }
            Door::EnvSet => {
                for set in &view.credentials.env.set {
                    self.row(
                        format!("variable {}", set.path),
                        "set to a value (set_env)".to_string(),
                        set.from.clone(),
                    );
                }
            }
            Door::EnvPass => {
                for k in &view.credentials.env.passed {
                    self.row(
                        format!("variables {}", k.pattern),
                        "passed the cleared environment (a secret among them still unset)"
                            .to_string(),
                        k.from.clone(),
                    );
                }
            }
            Door::EnvKeep => {
                for k in &view.credentials.env.kept {
                    self.row(
                        format!("variables {}", k.pattern),
                        "kept".to_string(),
                        k.from.clone(),
                    );
                }
            }
            Door::Audit => {
                let note = match &view.audit.file {
                    Some(file) => {
                        format!("{file} (JSON lines, each authenticated by your audit key)")
                    }
                    None => format!(
                        "off ({} {}): decisions are not recorded",
                        about.flag_or_key(),
                        (keys::AUDIT_FILE.show)(&None)
                    ),
                };
                self.row("log".to_string(), note, view.audit.from.clone());
            }
            Door::Layers => {
                for layer in &view.layers {
                    let (note, source) = if layer.required {
                        ("required".to_string(), Source::Builtin.to_string())
                    } else {
                        let by = layer.degraded_allowed_by_text.join("; ");
                        (
                            format!("may be skipped ({}, {by})", about.flag_or_key()),
                            String::new(),
                        )
                    };
                    self.row(layer.layer.to_string(), note, source);
                }
            }
        }
    }

    /// The hosts whose TLS is inspected: those `about`'s key names, and
    /// those that HTTP rules and injected secrets name.
    fn inspected(&mut self, about: &About) {
        let inspection = &self.view.inspection;
        self.group("TLS inspection (a CA made for this sandbox, trusted inside; HTTP rules and injected credentials apply here)");
        if inspection.inspect.is_empty()
            && inspection.rules.is_empty()
            && inspection.inject.is_empty()
        {
            self.text(&format!("off: {}", how_to_add(about)));
        }
        self.entries(&inspection.inspect);
        // Hosts that rules and inject entries name are inspected anyway.
        let rules = format!("[[{}]]", keys::HTTP_RULES.about.dotted());
        let inject = format!("[[{}]]", keys::INJECT.about.dotted());
        let named = inspection
            .rules
            .iter()
            .map(|r| {
                (
                    r.path.split(' ').next().unwrap_or_default(),
                    &rules,
                    r.from.as_str(),
                )
            })
            .chain(inspection.inject.iter().flat_map(|i| {
                i.hosts
                    .iter()
                    .map(|h| (h.as_str(), &inject, i.from.as_str()))
            }));
        let mut implied: Vec<(&str, &String, &str)> = Vec::new();
        for (host, by, from) in named {
            let listed = inspection
                .inspect
                .iter()
                .any(|e| e.path == host || e.path == "*");
            if !listed && !implied.iter().any(|(h, _, _)| *h == host) {
                implied.push((host, by, from));
            }
        }
        for (host, by, from) in implied {
            self.row(
                host.to_string(),
                format!("inspected: {by} names it"),
                from.to_string(),
            );
        }
    }

    /// The built-in credential entries under each home, with what re-allows them.
    fn homes(&mut self) {
        let view = self.view;
        for home in &view.credentials.homes {
            self.group(&format!("unreadable under {}", home.home));
            for entry in &home.entries {
                let note = entry
                    .re_allowed_by
                    .iter()
                    .map(|r| {
                        if r.partly {
                            format!("partly re-allowed by {} ({})", r.from, r.pattern)
                        } else {
                            format!("re-allowed by {}", r.from)
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                self.row(entry.relative.clone(), note, entry.from.clone());
            }
        }
    }

    /// The variables of this environment the command would not get.
    fn unset(&mut self) {
        let env = &self.view.credentials.env;
        self.group("unset in this environment (names only, never values)");
        self.when_empty(&env.unset, "nothing");
        for r in &env.unset {
            self.row(
                r.name.clone(),
                format!("matches {}", r.rule),
                r.source.to_string(),
            );
        }
    }
}

/// `--flag VALUE`: how to give the key `about` names on the command line.
fn usage(about: &About) -> String {
    match &about.flag {
        Some(flag) => format!("{} {}", flag.long(), flag.value_name),
        None => about.dotted(),
    }
}

/// How to add a host to the key `about` names, by flag or in a file.
fn how_to_add(about: &About) -> String {
    format!(
        "add {} HOST, or [{}] {} = [\"HOST\"]",
        about.flag_or_key(),
        about.section,
        about.name
    )
}

/// The effective policy as JSON: the same content as [`render_text`], as
/// structured data. Sources appear twice: structured (`source`) and as the
/// text `explain` prints (`from`).
pub fn render_json(policy: &Policy) -> serde_json::Value {
    serde_json::to_value(View::of(policy))
        .unwrap_or_else(|e| serde_json::Value::String(format!("cannot render the policy: {e}")))
}

// ---------------------------------------------------------------------------
// The view: what both renderings show.

#[derive(Serialize)]
struct View {
    project: PathBuf,
    files: FilesView,
    network: NetworkView,
    /// TLS inspection, HTTP rules, injected credentials.
    inspection: InspectionView,
    credentials: CredentialsView,
    /// The limits, by name.
    limits: Settings,
    audit: AuditView,
    layers: Vec<LayerView>,
    /// The sandbox section's one-row keys (none yet).
    #[serde(skip_serializing_if = "Settings::is_empty")]
    sandbox: Settings,
}

/// Where decisions are recorded.
#[derive(Serialize)]
struct AuditView {
    /// The log file; null when the log is off.
    file: Option<String>,
    source: Source,
    from: String,
    /// The section's one-row keys.
    #[serde(flatten)]
    settings: Settings,
}

/// One line: a path (or name), an optional note, its source.
#[derive(Serialize)]
struct Entry {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    source: Source,
    from: String,
}

impl Entry {
    fn new(path: String, note: Option<&str>, source: &Source) -> Entry {
        Entry {
            path,
            note: note.map(str::to_string),
            source: source.clone(),
            from: source.to_string(),
        }
    }
}

#[derive(Serialize)]
struct FilesView {
    writable: Vec<Entry>,
    readable: Vec<Entry>,
    /// deny_read entries that are not the built-in credential list.
    unreadable: Vec<Entry>,
    /// deny_write entries.
    read_only: Vec<Entry>,
    /// Protected names, relative to the project and each git repository.
    protected: Vec<Entry>,
    /// Caches: host directories written into private layers.
    caches: Vec<CacheView>,
    /// Agents' state directories: the note lists the writable names.
    state: Vec<Entry>,
    /// Agents' config files: the note lists what may not change.
    state_files: Vec<Entry>,
    /// The section's one-row keys.
    #[serde(flatten)]
    settings: Settings,
}

/// A cache as `explain` shows it.
#[derive(Serialize)]
struct CacheView {
    /// The host directory.
    path: String,
    /// Where the sandbox sees it (the host path, or a stand-in in the
    /// private /tmp when the host directory is missing).
    inside: String,
    /// The variable set to `inside`, if any.
    env: Option<String>,
    /// The private layer's directory.
    layer: String,
    /// Left out when the host directory is missing (no variable).
    optional: bool,
    source: Source,
    from: String,
}

impl CacheView {
    fn of(policy: &Policy, cache: &Sourced<crate::policy::cache::Cache>) -> CacheView {
        let c = &cache.value;
        let inside = if c.path.is_dir() {
            c.path.clone()
        } else {
            c.stand_in()
        };
        CacheView {
            path: c.path.display().to_string(),
            inside: inside.display().to_string(),
            env: c.env.clone(),
            optional: c.optional,
            layer: c
                .layer_dir(&policy.files.cache_layers, &policy.project.value)
                .display()
                .to_string(),
            source: cache.source.clone(),
            from: cache.source.to_string(),
        }
    }

    /// The note of its row.
    fn note(&self) -> String {
        let at = if self.inside == self.path {
            "writable; the host's directory never changes".to_string()
        } else if self.env.is_none() && self.optional {
            "missing on the host: left out (optional)".to_string()
        } else if self.env.is_none() {
            "missing on the host, and no variable points the tool elsewhere: `cordon run` refuses it".to_string()
        } else {
            format!("missing on the host: at {} inside", self.inside)
        };
        let var = self
            .env
            .as_ref()
            .map(|v| format!(", {v}={}", self.inside))
            .unwrap_or_default();
        format!("{at}{var}; writes kept in {}", self.layer)
    }
}

#[derive(Serialize)]
struct PortView {
    port: u16,
    source: Source,
    from: String,
}

/// `network.local_ports`, when set.
#[derive(Serialize)]
struct LocalPortsView {
    ports: Vec<u16>,
    source: Source,
    from: String,
}

/// One `--publish`.
#[derive(Serialize)]
struct PublishView {
    /// The port inside.
    inside: u16,
    /// The port on the host's 127.0.0.1.
    host: u16,
    source: Source,
    from: String,
}

#[derive(Serialize)]
struct NetworkView {
    /// Interfaces inside the sandbox.
    interfaces: Vec<&'static str>,
    route_out: String,
    /// Whether the proxy enforces the rules yet.
    proxy: String,
    /// What resolved addresses are refused unless a rule names them.
    special_addresses: String,
    allow: Vec<RuleView>,
    deny: Vec<RuleView>,
    /// The host's own loopback ports opened with `host.cordon.internal:PORT`.
    host_internal: Vec<HostInternalView>,
    /// When set, the only ports of the sandbox's own lo programs inside
    /// may use; `null`: any.
    local_ports: Option<LocalPortsView>,
    /// Ports of the sandbox's own loopback forwarded to the host's.
    host_ports: Vec<PortView>,
    /// Servers inside reachable from the host.
    publish: Vec<PublishView>,
    /// The presets named; each of their lines names its preset as its source.
    presets: Vec<PresetView>,
    /// The settings of one row each (ports that allow rules without
    /// `:PORT` admit, proxy connections served at once, ...), by name.
    #[serde(flatten)]
    settings: Settings,
    /// Host UNIX sockets programs inside may connect to.
    unix_sockets: Vec<UnixSocketView>,
}

/// One preset named by `--preset` or `[network] presets`.
#[derive(Serialize)]
struct PresetView {
    name: String,
    about: String,
    /// An agent's profile (`--agent`).
    agent: bool,
    source: Source,
    from: String,
}

/// One `--allow-unix-socket` path.
#[derive(Serialize)]
struct UnixSocketView {
    path: String,
    /// Set when the socket is a known way to root on the host.
    warning: Option<String>,
    source: Source,
    from: String,
}

/// One allow or deny rule.
#[derive(Serialize)]
struct RuleView {
    /// The rule in canonical form (lower case, punycode).
    rule: String,
    /// `exact`, `subdomains`, `ip`, `cidr` or `host_internal`.
    kind: &'static str,
    /// The ports it covers: its own, the policy's ports (allow rules
    /// without a port), or every port (deny rules without one: empty).
    ports: Vec<u16>,
    all_ports: bool,
    note: String,
    source: Source,
    from: String,
}

impl RuleView {
    fn new(rule: &Sourced<HostRule>, allow: bool, ports: &[u16]) -> RuleView {
        let r = &rule.value;
        let (covered, all_ports) = match r.port() {
            Some(p) => (vec![p], false),
            None if allow => (ports.to_vec(), false),
            None => (Vec::new(), true),
        };
        let port_note = if all_ports {
            "all ports".to_string()
        } else if covered.is_empty() {
            "no port (ports is empty; add :PORT)".to_string()
        } else if covered.len() == 1 {
            format!("port {}", covered[0])
        } else {
            format!("ports {}", join_ports(&covered))
        };
        let (kind, note) = match r.pattern() {
            HostPattern::Exact(_) => ("exact", port_note),
            HostPattern::Subdomains(d) => ("subdomains", format!("subdomains of {d}, {port_note}")),
            HostPattern::Ip(_) => ("ip", format!("this address, {port_note}")),
            HostPattern::Cidr(_) => ("cidr", format!("addresses in range, {port_note}")),
            HostPattern::HostInternal => (
                "host_internal",
                format!("the host's own 127.0.0.1:{}", join_ports(&covered)),
            ),
        };
        RuleView {
            rule: r.to_string(),
            kind,
            ports: covered,
            all_ports,
            note,
            source: rule.source.clone(),
            from: rule.source.to_string(),
        }
    }

    fn line(&self) -> Line {
        Line::Row {
            what: self.rule.clone(),
            note: self.note.clone(),
            source: self.from.clone(),
        }
    }
}

#[derive(Serialize)]
struct HostInternalView {
    port: u16,
    /// Where the proxy connects: `127.0.0.1:PORT` on the host.
    connects_to: String,
    source: Source,
    from: String,
}

#[derive(Serialize)]
struct ReAllow {
    pattern: String,
    /// Only part of the entry is re-allowed (the pattern lies inside it).
    partly: bool,
    source: Source,
    from: String,
}

#[derive(Serialize)]
struct CredentialEntry {
    path: String,
    /// The path as shown: `~/...` under `$HOME`, relative to the home otherwise.
    relative: String,
    source: Source,
    from: String,
    re_allowed_by: Vec<ReAllow>,
}

#[derive(Serialize)]
struct HomeView {
    home: String,
    entries: Vec<CredentialEntry>,
}

#[derive(Serialize)]
struct CredentialsView {
    /// The built-in credential deny list under each home.
    homes: Vec<HomeView>,
    /// Every allow_read entry.
    re_allowed: Vec<Entry>,
    /// The environment scrub.
    env: EnvView,
    /// The section's one-row keys.
    #[serde(flatten)]
    settings: Settings,
}

/// Which of the caller's environment variables the command does not see.
#[derive(Serialize)]
struct EnvView {
    /// Variables of the environment explain runs in that the command would
    /// not get: names and the pattern that removes each, never values.
    unset: Vec<Removal>,
    /// Patterns that remove variables: built-in, then the policy's.
    patterns: Vec<EnvPatternView>,
    /// Names or globs kept whatever removes them.
    kept: Vec<EnvPatternView>,
    /// Names or globs that pass a cleared environment, secret ones still
    /// removed.
    passed: Vec<EnvPatternView>,
    /// Whether the command starts from an empty environment plus `kept`
    /// and `passed`.
    clear: bool,
    clear_from: String,
    /// Variables set to a value (`set_env`): each name and where it came
    /// from (values are the policy's; `cordon explain --json` leaves them
    /// out like every value).
    set: Vec<Entry>,
}

#[derive(Serialize)]
struct EnvPatternView {
    pattern: String,
    source: Source,
    from: String,
}

impl EnvPatternView {
    fn new(pattern: &str, source: &Source) -> EnvPatternView {
        EnvPatternView {
            pattern: pattern.to_string(),
            source: source.clone(),
            from: source.to_string(),
        }
    }
}

/// The keys of a section shown as one row each ([`keys::Explain::Row`]),
/// by name: the value's fields and its source, or null when unset.
type Settings = serde_json::Map<String, serde_json::Value>;

/// The JSON of the one-row keys of `section`.
fn settings(policy: &Policy, section: &str) -> Settings {
    keys::in_section(section)
        .filter_map(|key| {
            let shown = key.row(policy)?;
            let value = shown.json.map_or(serde_json::Value::Null, |fields| {
                let mut map: Settings = fields
                    .into_iter()
                    .map(|(name, v)| (name.to_string(), v))
                    .collect();
                map.insert("source".to_string(), serde_json::json!(shown.source));
                map.insert("from".to_string(), shown.source.to_string().into());
                serde_json::Value::Object(map)
            });
            Some((key.about().name.to_string(), value))
        })
        .collect()
}

#[derive(Serialize)]
struct LayerView {
    layer: Layer,
    required: bool,
    degraded_allowed_by: Vec<Source>,
    #[serde(skip)]
    degraded_allowed_by_text: Vec<String>,
}

impl View {
    fn of(policy: &Policy) -> View {
        let files = &policy.files;
        let limits = &policy.limits;
        // As a policy file spells it: an exact path's glob characters
        // escaped, so that it does not read as a pattern.
        let p = |pattern: &PathPattern| pattern.to_policy_text();

        let mut writable = Vec::new();
        if !files.read_only_project.value {
            writable.push(Entry::new(
                policy.project.value.display().to_string(),
                Some("project"),
                &policy.project.source,
            ));
        }
        writable.extend([Entry::new(
            PRIVATE_TMP.to_string(),
            Some(&format!(
                "private temp dir, {}",
                (keys::MAX_TMP.show)(&limits.max_tmp.value)
            )),
            &limits.max_tmp.source,
        )]);
        writable.extend(
            files
                .allow_write
                .iter()
                .map(|e| Entry::new(p(&e.value), None, &e.source)),
        );

        let readable = vec![Entry::new(
            "/".to_string(),
            Some("the whole root, read-only"),
            &Source::Builtin,
        )];
        // Built-in entries under a home are the credential list (shown
        // per home below); those elsewhere are the system's secrets.
        let under_a_home = |pattern: &PathPattern| {
            let base = match pattern {
                PathPattern::Exact(path) => path,
                PathPattern::Glob { base, .. } => base,
            };
            policy.homes.iter().any(|h| base.starts_with(h))
        };
        let unreadable = files
            .deny_read
            .iter()
            .filter(|e| e.source != Source::Builtin || !under_a_home(&e.value))
            .map(|e| {
                let note = (e.source == Source::Builtin).then_some("system secret");
                Entry::new(p(&e.value), note, &e.source)
            })
            .collect();
        let read_only = files
            .deny_write
            .iter()
            .map(|e| {
                let own = e.source == Source::Builtin && is_config_dir(&e.value);
                Entry::new(p(&e.value), own.then_some("cordon's own config"), &e.source)
            })
            .collect();
        let kind = |name: &str| {
            if name.ends_with('/') {
                "directory"
            } else {
                "file"
            }
        };
        let mut protected: Vec<Entry> = files
            .protected
            .iter()
            .map(|e| Entry::new(e.value.clone(), Some(kind(&e.value)), &e.source))
            .collect();
        protected.extend(
            crate::policy::defaults::PROTECTED_NAME_PATTERNS
                .iter()
                .map(|pattern| {
                    Entry::new(pattern.to_string(), Some("name pattern"), &Source::Builtin)
                }),
        );
        protected.extend(
            crate::policy::defaults::GIT_DIR_PROTECTED
                .iter()
                .map(|name| {
                    let note = format!("{} in every git dir", kind(name));
                    Entry::new(format!(".git/{name}"), Some(&note), &Source::Builtin)
                }),
        );
        protected.push(Entry::new(
            "files git config names".to_string(),
            Some("core.hooksPath, includes, core.fsmonitor, programs of command keys: read-only where they exist, refused at creation where not"),
            &Source::Builtin,
        ));
        protected.push(Entry::new(
            "set-user-ID, set-group-ID bits, file capabilities".to_string(),
            Some("refused on anything the sandbox writes; stripped after the run from files changed during it"),
            &Source::Builtin,
        ));

        let hosts = &policy.network.hosts;
        let network = NetworkView {
            interfaces: vec!["lo"],
            route_out: "none: only lo exists inside".to_string(),
            proxy: format!(
                "cordon's own: HTTP 127.0.0.1:{} and SOCKS5 127.0.0.1:{} inside; only allowed hosts",
                crate::net::inside::HTTP_PORT,
                crate::net::inside::SOCKS_PORT
            ),
            special_addresses: "loopback, private, shared (CGNAT), link-local, cloud metadata, multicast, documentation and other special ranges, their IPv4-mapped, NAT64, 6to4 and Teredo forms, and the host's own addresses: refused after resolution unless an allow rule names the address or a range containing it".to_string(),
            allow: hosts
                .allow
                .iter()
                .map(|r| RuleView::new(r, true, &hosts.ports.value))
                .collect(),
            deny: hosts
                .deny
                .iter()
                .map(|r| RuleView::new(r, false, &hosts.ports.value))
                .collect(),
            host_internal: hosts
                .allow
                .iter()
                .filter_map(|r| match (r.value.pattern(), r.value.port()) {
                    (HostPattern::HostInternal, Some(port)) => Some(HostInternalView {
                        port,
                        connects_to: format!("127.0.0.1:{port}"),
                        source: r.source.clone(),
                        from: r.source.to_string(),
                    }),
                    _ => None,
                })
                .collect(),
            local_ports: policy.network.local_ports.as_ref().map(|only| LocalPortsView {
                ports: only.value.clone(),
                source: only.source.clone(),
                from: only.source.to_string(),
            }),
            host_ports: policy
                .network
                .host_ports
                .iter()
                .map(|p| PortView {
                    port: p.value,
                    source: p.source.clone(),
                    from: p.source.to_string(),
                })
                .collect(),
            publish: policy
                .network
                .publish
                .iter()
                .map(|p| PublishView {
                    inside: p.value.inside,
                    host: p.value.host,
                    source: p.source.clone(),
                    from: p.source.to_string(),
                })
                .collect(),
            presets: policy
                .network
                .presets
                .iter()
                .map(|p| PresetView {
                    name: p.value.name.clone(),
                    about: p.value.about.clone(),
                    agent: p.value.agent,
                    source: p.source.clone(),
                    from: p.source.to_string(),
                })
                .collect(),
            unix_sockets: policy
                .network
                .unix_sockets
                .iter()
                .flat_map(|rule| {
                    let paths = match rule.value.expand() {
                        found if found.is_empty() => vec![PathBuf::from(rule.value.to_string())],
                        found => found,
                    };
                    paths.into_iter().map(move |path| UnixSocketView {
                        warning: crate::sandbox::unix_gate::root_equivalent(&path),
                        path: path.display().to_string(),
                        source: rule.source.clone(),
                        from: rule.source.to_string(),
                    })
                })
                .collect(),
            settings: settings(policy, "network"),
        };
        let audit = AuditView {
            file: policy
                .audit
                .log
                .value
                .as_ref()
                .map(|p| p.display().to_string()),
            source: policy.audit.log.source.clone(),
            from: policy.audit.log.source.to_string(),
            settings: settings(policy, "audit"),
        };

        let credentials = CredentialsView {
            homes: policy
                .homes
                .iter()
                .enumerate()
                .map(|(i, home)| home_view(home, i == 0, policy))
                .collect(),
            re_allowed: files
                .allow_read
                .iter()
                .map(|e| Entry::new(p(&e.value), None, &e.source))
                .collect(),
            env: EnvView {
                unset: EnvFilter::new(&policy.env).apply(std::env::vars_os()).1,
                patterns: SECRET_PATTERNS
                    .iter()
                    .map(|pat| EnvPatternView::new(pat, &Source::Builtin))
                    .chain(
                        policy
                            .env
                            .deny
                            .iter()
                            .map(|d| EnvPatternView::new(&d.value, &d.source)),
                    )
                    .collect(),
                kept: policy
                    .env
                    .keep
                    .iter()
                    .map(|k| EnvPatternView::new(&k.value, &k.source))
                    .collect(),
                passed: policy
                    .env
                    .pass
                    .iter()
                    .map(|k| EnvPatternView::new(&k.value, &k.source))
                    .collect(),
                clear: policy.env.clear.value,
                clear_from: policy.env.clear.source.to_string(),
                set: policy
                    .env
                    .set
                    .iter()
                    .map(|s| Entry::new(s.value.0.clone(), None, &s.source))
                    .collect(),
            },
            settings: settings(policy, "credentials"),
        };

        let layers = Layer::ALL
            .iter()
            .map(|&layer| {
                let by: Vec<Source> = policy
                    .allow_degraded
                    .iter()
                    .filter(|d| d.value == layer)
                    .map(|d| d.source.clone())
                    .collect();
                LayerView {
                    layer,
                    required: by.is_empty(),
                    degraded_allowed_by_text: by.iter().map(ToString::to_string).collect(),
                    degraded_allowed_by: by,
                }
            })
            .collect();

        View {
            project: policy.project.value.clone(),
            files: FilesView {
                writable,
                readable,
                unreadable,
                read_only,
                protected,
                caches: files
                    .caches
                    .iter()
                    .map(|c| CacheView::of(policy, c))
                    .collect(),
                state: files
                    .state
                    .iter()
                    .map(|d| {
                        let note = format!("writable: {}", d.value.writable.join(", "));
                        Entry::new(d.value.dir.display().to_string(), Some(&note), &d.source)
                    })
                    .collect(),
                state_files: files
                    .state_files
                    .iter()
                    .map(|f| {
                        let note = format!(
                            "replaceable when these are unchanged: {}",
                            f.value.unchanged.join(", ")
                        );
                        Entry::new(f.value.path.display().to_string(), Some(&note), &f.source)
                    })
                    .collect(),
                settings: settings(policy, "files"),
            },
            network,
            inspection: InspectionView::of(&policy.inspection),
            credentials,
            limits: settings(policy, "limits"),
            sandbox: settings(policy, "sandbox"),
            audit,
            layers,
        }
    }
}

/// The credentials door's share of the proxy: names and hosts, never values.
#[derive(Serialize)]
struct InspectionView {
    /// Hosts whose TLS the proxy terminates (`*`: every allowed host).
    inspect: Vec<Entry>,
    /// Hosts kept opaque.
    no_inspect: Vec<Entry>,
    /// Extra roots trusted for upstream certificates.
    upstream_ca: Vec<Entry>,
    /// Method and path rules.
    rules: Vec<Entry>,
    /// Injected secrets: the variable's name, where its value is read, its hosts.
    inject: Vec<InjectView>,
    /// Variables a `when_set` entry would inject, left out: unset here.
    not_set: Vec<Entry>,
}

#[derive(Serialize)]
struct InjectView {
    env: String,
    /// `env`, `file PATH` or `command [...]`.
    value_from: String,
    hosts: Vec<String>,
    source: Source,
    from: String,
}

impl InspectionView {
    fn of(p: &crate::policy::inspection::InspectionPolicy) -> InspectionView {
        let entries = |v: &[Sourced<crate::policy::inspection::HostMatch>]| {
            v.iter()
                .map(|h| Entry::new(h.value.to_string(), None, &h.source))
                .collect::<Vec<_>>()
        };
        InspectionView {
            inspect: entries(&p.inspect),
            no_inspect: entries(&p.no_inspect),
            upstream_ca: p
                .upstream_ca
                .iter()
                .map(|f| Entry::new(f.value.display().to_string(), None, &f.source))
                .collect(),
            rules: p
                .rules
                .iter()
                .map(|r| Entry::new(r.value.to_string(), None, &r.source))
                .collect(),
            inject: p
                .inject
                .iter()
                .map(|i| InjectView {
                    env: i.value.env.clone(),
                    value_from: match &i.value.source {
                        crate::policy::inspection::SecretSource::Env => {
                            "cordon's environment".into()
                        }
                        crate::policy::inspection::SecretSource::File(f) => {
                            format!("file {}", f.display())
                        }
                        crate::policy::inspection::SecretSource::Command(argv) => {
                            format!("command {argv:?}")
                        }
                    },
                    hosts: i.value.hosts.iter().map(ToString::to_string).collect(),
                    source: i.source.clone(),
                    from: i.source.to_string(),
                })
                .collect(),
            not_set: p
                .not_set
                .iter()
                .map(|n| Entry::new(n.value.clone(), None, &n.source))
                .collect(),
        }
    }
}

/// Whether `pattern` is cordon's config directory (`.../cordon` under a config home).
fn is_config_dir(pattern: &PathPattern) -> bool {
    matches!(pattern, PathPattern::Exact(p) if p.file_name().is_some_and(|n| n == "cordon"))
}

/// The built-in credential entries under `home`, with what re-allows them.
/// `tilde`: `home` is `$HOME`, so entries can be shown as `~/...`;
/// otherwise they are shown relative to `home`.
fn home_view(home: &Path, tilde: bool, policy: &Policy) -> HomeView {
    let entries = policy
        .files
        .deny_read
        .iter()
        .filter(|e| e.source == Source::Builtin)
        .filter_map(|e| {
            let PathPattern::Exact(path) = &e.value else {
                return None;
            };
            let relative = path.strip_prefix(home).ok()?;
            let re_allowed_by = policy
                .files
                .allow_read
                .iter()
                .filter_map(|a| {
                    let partly = if a.value.covers(path) {
                        false
                    } else if inside(&a.value, path) {
                        true
                    } else {
                        return None;
                    };
                    Some(ReAllow {
                        pattern: a.value.to_string(),
                        partly,
                        source: a.source.clone(),
                        from: a.source.to_string(),
                    })
                })
                .collect();
            Some(CredentialEntry {
                path: path.display().to_string(),
                relative: if tilde {
                    format!("~/{}", relative.display())
                } else {
                    relative.display().to_string()
                },
                source: e.source.clone(),
                from: e.source.to_string(),
                re_allowed_by,
            })
        })
        .collect();
    HomeView {
        home: home.display().to_string(),
        entries,
    }
}

/// Whether `pattern` names something strictly inside `dir`.
fn inside(pattern: &PathPattern, dir: &Path) -> bool {
    let start = match pattern {
        PathPattern::Exact(p) => p,
        PathPattern::Glob { base, .. } => base,
    };
    (start.starts_with(dir) && start != dir)
        || matches!(pattern, PathPattern::Glob { base, .. } if base == dir)
}

// ---------------------------------------------------------------------------
// Text layout.

enum Line {
    Title(String),
    Heading(String),
    Group(String),
    Text(String),
    Row {
        what: String,
        note: String,
        source: String,
    },
}

impl Line {
    fn row(entry: &Entry) -> Line {
        Line::Row {
            what: entry.path.clone(),
            note: entry.note.clone().unwrap_or_default(),
            source: entry.from.clone(),
        }
    }
}

fn render_lines(lines: &[Line]) -> String {
    let width = |f: fn(&Line) -> Option<usize>, cap: usize| {
        lines
            .iter()
            .filter_map(f)
            .filter(|&w| w <= cap)
            .max()
            .unwrap_or(0)
    };
    let what_width = width(
        |l| match l {
            Line::Row { what, .. } => Some(what.chars().count()),
            _ => None,
        },
        MAX_WHAT_WIDTH,
    );
    let note_width = width(
        |l| match l {
            Line::Row { note, .. } => Some(note.chars().count()),
            _ => None,
        },
        MAX_NOTE_WIDTH,
    );
    let mut out = String::new();
    for line in lines {
        let text = match line {
            Line::Title(t) => t.clone(),
            Line::Heading(h) => format!("\n{}", h.to_uppercase()),
            Line::Group(g) => format!("  {g}"),
            Line::Text(t) => format!("    {t}"),
            Line::Row { what, note, source } => {
                // Keep the source column aligned when a long cell pushes it
                // right, as far as the row allows.
                let mut row = format!("    {what:<what_width$}  {note}");
                let column = 4 + what_width + 2 + note_width + 2;
                let used = row.chars().count();
                let pad = if used + 2 <= column { column - used } else { 2 };
                row.push_str(&" ".repeat(pad));
                row.push_str(source);
                row
            }
        };
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "explain_tests.rs"]
mod tests;
