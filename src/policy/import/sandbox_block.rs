//! The keys Claude Code's `sandbox` block and sandbox-runtime's settings
//! file share (`network`, `filesystem`, `credentials`), onto cordon's.

use std::path::PathBuf;

use jsonc_parser::ast::Value as Node;

use super::json::Doc;
use super::{policy_path, Imported, Origin, Value};
use crate::policy::host::parse_rule;
use crate::policy::inspection::check_var_name;
use crate::policy::keys::{
    About, ALLOW_READ, ALLOW_WRITE, DENY_ENV, DENY_READ, DENY_WRITE, INJECT, NET_ALLOW, NET_DENY,
    UNIX_SOCKETS,
};
use crate::policy::load::LoadError;
use crate::policy::pattern::{PathContext, PathPattern};

/// How the paths of one file read, and whether it came with a repository.
pub(crate) struct Anchors {
    /// The home (`~/`).
    pub home: PathBuf,
    /// What `./path` and a bare `path` are relative to.
    pub relative_to: PathBuf,
    /// The file arrived with a repository (a project's `.claude/`): the
    /// keys its tool ignores there (a checked-out repository must not
    /// widen the sandbox) are refused.
    pub repo: bool,
}

/// What the entries of one `credentials` list hold besides their mode.
struct Fields {
    /// The field that names what an entry covers (`path`, `name`).
    named_by: &'static str,
    /// Other fields the importer reads.
    known: &'static [&'static str],
    /// What is said of any other field.
    other: &'static str,
}

/// One entry of a `credentials` list.
struct Credential<'n, 't> {
    /// Its dotted key and node.
    key: String,
    node: &'n Node<'t>,
    /// The field that names what it covers: its key, node and value.
    name_key: String,
    name_node: &'n Node<'t>,
    named: String,
    /// `mask` rather than `deny`.
    masked: bool,
    members: Vec<(String, String, &'n Node<'t>)>,
}

impl<'n, 't> Credential<'n, 't> {
    /// Its field `name`: the dotted key and the node.
    fn field(&self, name: &str) -> Option<(&str, &'n Node<'t>)> {
        self.members
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, k, v)| (k.as_str(), *v))
    }
}

/// A variable to mask, waiting for the hosts it goes to.
struct Mask {
    name: String,
    hosts: Option<Vec<(String, Origin)>>,
    origin: Origin,
}

/// The shared keys' mapper, across every file of one import.
#[derive(Default)]
pub(crate) struct Mapper {
    pub imported: Imported,
    masks: Vec<Mask>,
}

/// A key with no meaning in cordon, and what cordon does instead.
pub(crate) type Meaning = (&'static str, &'static str);

/// The keys of `network`, `filesystem` and `credentials` that cordon does
/// not map, and why.
const UNMAPPED: &[Meaning] = &[
    ("network.allowAllUnixSockets", "cordon does not open every UNIX socket: name each host socket in [network] allow_unix_sockets"),
    ("network.allowLocalBinding", "the sandbox's own loopback is its own: servers inside may bind its ports unless [network] local_ports narrows them"),
    ("network.allowManagedDomainsOnly", "cordon has no managed settings: its allowlist is the policy's"),
    ("network.strictAllowlist", "cordon never asks about an unlisted host (unless run with --ask): it refuses it"),
    ("network.httpProxyPort", "cordon's own proxy checks every connection; it does not hand traffic to another proxy"),
    ("network.socksProxyPort", "cordon's own proxy checks every connection; it does not hand traffic to another proxy"),
    ("network.tlsTerminate", "cordon terminates TLS to the hosts [[credentials.inject]] and [network] inspect name, with a CA it makes for each sandbox"),
    ("network.allowMachLookup", "macOS only"),
    ("network.deniedDomainReasons", "cordon's refusals say which rule refused and why"),
    ("network.deniedResolvedAddresses", "cordon refuses loopback, private, link-local and metadata addresses for every name already"),
    ("network.mitmProxy", "cordon's own proxy does the TLS inspection"),
    ("network.parentProxy", "cordon connects to allowed hosts itself"),
    ("filesystem.allowManagedReadPathsOnly", "cordon has no managed settings"),
    ("filesystem.allowGitConfig", "cordon keeps each repository's .git/config read-only and checks `git config` changes itself"),
    ("credentials.allowPlaintextInject", "cordon never sends a real secret over plain HTTP"),
    ("credentials.awsPairs", "not imported: AWS request signing is not supported yet"),
    ("credentials.sigv4", "not imported: AWS request signing is not supported yet"),
];

/// Keys of `network`, `filesystem` and `credentials` that a file which
/// came with a repository may not set (its tool ignores them there).
const NOT_FROM_A_REPO: &[&str] = &[
    "network.tlsTerminate",
    "network.strictAllowlist",
    "filesystem.disabled",
    "credentials.allowPlaintextInject",
];

impl Mapper {
    /// Maps the shared keys of the object `node` at `prefix` (`sandbox` in
    /// Claude Code's settings, the top of sandbox-runtime's file); keys of
    /// the format's own go by `own` (each with what cordon does instead),
    /// and any other key is reported as unknown.
    pub fn block(
        &mut self,
        doc: &Doc<'_>,
        node: &Node<'_>,
        prefix: &str,
        anchors: &Anchors,
        own: &[Meaning],
    ) -> Result<(), LoadError> {
        for (name, key, value) in doc.members(node, prefix)? {
            match name.as_str() {
                "network" | "filesystem" | "credentials" => {
                    for (sub, subkey, v) in doc.members(value, &key)? {
                        let short = format!("{name}.{sub}");
                        self.shared(doc, &short, &subkey, v, anchors)?;
                    }
                }
                _ => self.own(doc, &name, &key, value, anchors, own)?,
            }
        }
        Ok(())
    }

    /// A key of the format's own (`enabled`, `excludedCommands`, ...):
    /// reported with what cordon does instead, or as unknown.
    fn own(
        &mut self,
        doc: &Doc<'_>,
        name: &str,
        key: &str,
        value: &Node<'_>,
        anchors: &Anchors,
        own: &[Meaning],
    ) -> Result<(), LoadError> {
        let origin = doc.origin(value, key);
        match own.iter().find(|(n, _)| *n == name) {
            Some((n, _)) if anchors.repo && REPO_REFUSED_OWN.contains(n) => {
                Err(refused_in_repo(doc, value, key))
            }
            Some((_, meaning)) => {
                self.imported.note(origin, *meaning);
                Ok(())
            }
            None => {
                self.imported
                    .note(origin, "unknown to cordon's importer: not imported");
                Ok(())
            }
        }
    }

    /// One key of `network`, `filesystem` or `credentials` (`short` is
    /// its name in the block, `key` its dotted key in the file).
    fn shared(
        &mut self,
        doc: &Doc<'_>,
        short: &str,
        key: &str,
        value: &Node<'_>,
        anchors: &Anchors,
    ) -> Result<(), LoadError> {
        if anchors.repo && NOT_FROM_A_REPO.contains(&short) {
            return Err(refused_in_repo(doc, value, key));
        }
        match short {
            "network.allowedDomains" => self.domains(doc, value, key, &NET_ALLOW.about),
            "network.deniedDomains" => self.domains(doc, value, key, &NET_DENY.about),
            "network.allowUnixSockets" => {
                self.paths(doc, value, key, anchors, &UNIX_SOCKETS.about, false)
            }
            "filesystem.allowWrite" => {
                self.paths(doc, value, key, anchors, &ALLOW_WRITE.about, true)
            }
            "filesystem.denyWrite" => self.paths(doc, value, key, anchors, &DENY_WRITE.about, true),
            "filesystem.denyRead" => self.paths(doc, value, key, anchors, &DENY_READ.about, false),
            "filesystem.allowRead" => {
                self.paths(doc, value, key, anchors, &ALLOW_READ.about, false)
            }
            "filesystem.disabled" => {
                if doc.boolean(value, key)? {
                    self.imported.note(
                        doc.origin(value, key),
                        "cordon's files door cannot be turned off: the sandbox keeps it",
                    );
                }
                Ok(())
            }
            "credentials.files" => self.credential_files(doc, value, key, anchors),
            "credentials.envVars" => self.env_vars(doc, value, key, anchors),
            _ => {
                let origin = doc.origin(value, key);
                match UNMAPPED.iter().find(|(n, _)| *n == short) {
                    Some((_, meaning)) => self.imported.note(origin, *meaning),
                    None => self
                        .imported
                        .note(origin, "unknown to cordon's importer: not imported"),
                }
                Ok(())
            }
        }
    }

    /// Domain patterns for `to` (`network.allow` or `network.deny`).
    pub fn domains(
        &mut self,
        doc: &Doc<'_>,
        value: &Node<'_>,
        key: &str,
        to: &'static About,
    ) -> Result<(), LoadError> {
        for (raw, origin) in doc.strings(value, key)? {
            self.domain(&raw, origin, to)?;
        }
        Ok(())
    }

    /// One domain pattern for `to`, checked as cordon reads it.
    pub fn domain(
        &mut self,
        raw: &str,
        origin: Origin,
        to: &'static About,
    ) -> Result<(), LoadError> {
        parse_rule(raw).map_err(|e| LoadError::Invalid {
            at: origin.at.clone(),
            key: origin.key.clone(),
            message: e.to_string(),
        })?;
        self.imported.set(to, Value::Item(raw.to_string()), origin);
        Ok(())
    }

    /// Paths for `to`; `literal` paths lose a trailing `/**` (the tools
    /// read them as the directory).
    fn paths(
        &mut self,
        doc: &Doc<'_>,
        value: &Node<'_>,
        key: &str,
        anchors: &Anchors,
        to: &'static About,
        literal: bool,
    ) -> Result<(), LoadError> {
        for (raw, origin) in doc.strings(value, key)? {
            let raw = if literal {
                raw.strip_suffix("/**").unwrap_or(&raw).to_string()
            } else {
                raw
            };
            let path = anchored(&raw, anchors, &origin)?;
            self.imported.set(to, Value::Item(path), origin);
        }
        Ok(())
    }

    /// `credentials.files`: `{path, mode}`; `deny` hides the file.
    fn credential_files(
        &mut self,
        doc: &Doc<'_>,
        value: &Node<'_>,
        key: &str,
        anchors: &Anchors,
    ) -> Result<(), LoadError> {
        let fields = Fields {
            named_by: "path",
            known: &[],
            other: "belongs to a masked file or its extraction, which cordon does not do yet: not imported",
        };
        for entry in self.credentials(doc, value, key, anchors, &fields)? {
            if entry.named.ends_with('/') && entry.named != "/" {
                return Err(doc.invalid(
                    entry.name_node,
                    &entry.name_key,
                    "a credential file's path may not end in /",
                ));
            }
            let origin = doc.origin(entry.name_node, &entry.name_key);
            let hidden = anchored(&entry.named, anchors, &origin)?;
            if entry.masked {
                self.imported.note(
                    doc.origin(entry.node, &entry.key),
                    "cordon cannot show a masked copy of a file yet: the file is unreadable instead",
                );
            }
            self.imported
                .set(&DENY_READ.about, Value::Item(hidden), origin);
        }
        Ok(())
    }

    /// `credentials.envVars`: `{name, mode, injectHosts}`; `deny` unsets
    /// the variable, `mask` injects it for its hosts.
    fn env_vars(
        &mut self,
        doc: &Doc<'_>,
        value: &Node<'_>,
        key: &str,
        anchors: &Anchors,
    ) -> Result<(), LoadError> {
        let fields = Fields {
            named_by: "name",
            known: &["injectHosts"],
            other: "not imported: cordon injects the whole value",
        };
        for entry in self.credentials(doc, value, key, anchors, &fields)? {
            check_var_name(&entry.named)
                .map_err(|e| doc.invalid(entry.name_node, &entry.name_key, e.to_string()))?;
            let origin = doc.origin(entry.name_node, &entry.name_key);
            if !entry.masked {
                self.imported
                    .set(&DENY_ENV.about, Value::Item(entry.named), origin);
                continue;
            }
            let hosts = match entry.field("injectHosts") {
                Some((hk, h)) => Some(doc.strings(h, hk)?),
                None => None,
            };
            self.masks.push(Mask {
                name: entry.named,
                hosts,
                origin,
            });
        }
        Ok(())
    }

    /// The entries of a `credentials` list: each names what it covers by
    /// `fields.named_by` and has a mode, `deny` or `mask` (refused from a
    /// repository's file); fields besides those and `fields.known` are
    /// reported.
    fn credentials<'n, 't>(
        &mut self,
        doc: &Doc<'t>,
        value: &'n Node<'t>,
        key: &str,
        anchors: &Anchors,
        fields: &Fields,
    ) -> Result<Vec<Credential<'n, 't>>, LoadError> {
        let mut out = Vec::new();
        for (k, node) in doc.elements(value, key)? {
            let members = doc.members(node, &k)?;
            let find = |name: &str| members.iter().find(|(n, _, _)| n == name);
            let Some((_, name_key, name_node)) = find(fields.named_by) else {
                return Err(doc.invalid(node, &k, format!("needs a {}", fields.named_by)));
            };
            let named = doc.string(name_node, name_key)?;
            let mode = match find("mode") {
                Some((_, mk, m)) => doc.string(m, mk)?,
                None => return Err(doc.invalid(node, &k, "needs a mode (deny or mask)")),
            };
            let masked = match mode.as_str() {
                "deny" => false,
                "mask" if anchors.repo => return Err(refused_in_repo(doc, node, &k)),
                "mask" => true,
                other => {
                    return Err(doc.invalid(
                        node,
                        &k,
                        format!("mode {other:?}: only deny and mask are known"),
                    ))
                }
            };
            for (name, fk, _) in &members {
                let known = [fields.named_by, "mode"].contains(&name.as_str())
                    || (masked && fields.known.contains(&name.as_str()));
                if !known {
                    let meaning = if fields.known.contains(&name.as_str()) {
                        "belongs to a masked entry; this one is denied: not imported"
                    } else {
                        fields.other
                    };
                    self.imported.note(doc.origin(node, fk), meaning);
                }
            }
            out.push(Credential {
                key: k.clone(),
                node,
                name_key: name_key.clone(),
                name_node,
                named,
                masked,
                members: members.clone(),
            });
        }
        Ok(out)
    }

    /// The import, once every file is read: masks become
    /// `[[credentials.inject]]` tables (a mask without hosts goes to every
    /// allowed domain, as the tools do, but not to one held back from a
    /// repository's file).
    pub fn finish(mut self) -> Result<Imported, LoadError> {
        let allowed: Vec<String> = self
            .imported
            .entries
            .iter()
            .filter(|e| std::ptr::eq(e.key, &NET_ALLOW.about) && !e.held)
            .filter_map(|e| match &e.value {
                Value::Item(host) => Some(host.clone()),
                Value::Table(_) => None,
            })
            .collect();
        for mask in std::mem::take(&mut self.masks) {
            let hosts: Vec<String> = match mask.hosts {
                Some(hosts) => {
                    for (host, origin) in &hosts {
                        crate::policy::inspection::HostMatch::parse(host).map_err(|e| {
                            LoadError::Invalid {
                                at: origin.at.clone(),
                                key: origin.key.clone(),
                                message: e.to_string(),
                            }
                        })?;
                    }
                    hosts.into_iter().map(|(h, _)| h).collect()
                }
                None => allowed.clone(),
            };
            if hosts.is_empty() {
                return Err(LoadError::Invalid {
                    at: mask.origin.at,
                    key: mask.origin.key,
                    message: "a masked variable goes to its injectHosts, or to every allowed domain: this import names neither".into(),
                });
            }
            let mut table = toml::Table::new();
            table.insert("env".into(), mask.name.into());
            table.insert(
                "hosts".into(),
                toml::Value::Array(hosts.into_iter().map(toml::Value::from).collect()),
            );
            self.imported
                .set(&INJECT.about, Value::Table(table), mask.origin);
        }
        Ok(self.imported)
    }
}

/// Own keys a repository's file may not set.
const REPO_REFUSED_OWN: &[&str] = &["allowAppleEvents", "allowNestedUserNamespaces"];

/// The refusal of a key a repository's settings may not set.
fn refused_in_repo(
    doc: &Doc<'_>,
    node: &impl jsonc_parser::common::Ranged,
    key: &str,
) -> LoadError {
    doc.invalid(
        node,
        key,
        "refused in a repository's settings, which arrive with the code (the tool itself ignores it there, so that a checked-out repository cannot widen the sandbox); move it to your user settings",
    )
}

/// `raw` (`/abs`, `~/rel`, `./rel` or `rel`) as a policy path.
pub(crate) fn anchored(raw: &str, anchors: &Anchors, origin: &Origin) -> Result<String, LoadError> {
    let ctx = PathContext {
        home: &anchors.home,
        base: Some(&anchors.relative_to),
    };
    let invalid = |message: String| LoadError::Invalid {
        at: origin.at.clone(),
        key: origin.key.clone(),
        message,
    };
    let pattern = PathPattern::parse(raw, &ctx).map_err(|e| invalid(e.to_string()))?;
    let path = policy_path(
        std::path::Path::new(&pattern.to_policy_text()),
        &anchors.home,
    );
    // The path, the project's or the home's part included, must show in
    // a policy file as it is.
    if let PathPattern::Exact(exact) = &pattern {
        if exact.to_str().is_none() {
            return Err(invalid(format!(
                "{}: a name that is not UTF-8 in the path; not imported",
                exact.display()
            )));
        }
    }
    if super::unshowable(&path) {
        return Err(invalid(format!(
            "{path:?}: a control or reordering character in the path; not imported"
        )));
    }
    Ok(path)
}
