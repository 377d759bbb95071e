//! `[network]`: the proxy's rules, local ports, host ports, published
//! ports, host sockets, inspection.

use std::path::PathBuf;

use super::readers::{
    count, each, extend, host_match, host_rule, inside_port, last, list, many, number, one, path,
    port, ports_added, FOLLOWED_HOST_RULES,
};
use serde_json::json;

use super::{About, Door, Explain, Flag, FlagType, Key, Merge, Read, Row, Takes, Widens};
use crate::policy::host::HostRule;
use crate::policy::inspection::{HostMatch, HttpRule};
use crate::policy::load::values::{
    check_connections, check_port, dedup_ports, join_ports, one_file,
};
use crate::policy::pattern::PathPattern;
use crate::policy::ports::{check_inside_port, repeated, Publish};
use crate::policy::presets::{self, Expanded};
use crate::policy::Sourced;

/// `network.local_ports`: array of TCP ports (1 to 65535). When set, the
/// only ports programs inside may bind and connect to on the sandbox's own
/// loopback, besides cordon's own listeners and the host ports; unset (the
/// default), any port: nothing outside the sandbox reaches its loopback.
/// Replaces the value in force; narrows unless it adds a port to it.
pub static LOCAL_PORTS: Key<Vec<u16>> = Key {
    about: About {
        section: "network",
        name: "local_ports",
        flag: Some(Flag {
            name: "local-ports",
            value_name: "PORT",
            help: "Let programs inside bind and connect to only these TCP ports on the sandbox's own lo (comma-separated, repeatable) [default: any port: nothing outside reaches it]",
            takes: Takes::CommaList(FlagType::Port),
        }),
        examples: ["[3000]", "[3000, 8080]"],
    },
    read: Read {
        file: |f, n| f.integers(n, check_port).map(dedup_ports),
        strings: |raw, ctx| each(raw, ctx, port).map(dedup_ports),
    },
    merge: Merge::Replace {
        get: |p| p.network.local_ports.as_ref(),
        set: |p, v| p.network.local_ports = Some(v),
    },
    widens: Widens::NewEntries {
        added: |new, in_force| ports_added(new, in_force),
        what: "local ports",
    },
    show: |v| join_ports(v),
    explain: Explain::Door(Door::LocalPorts),
};

/// `network.host_ports`: array of TCP ports (1 to 65535, not cordon's own
/// 3128 and 1080, each once). Inside, cordon listens on 127.0.0.1 and ::1
/// at each and forwards every connection to the host's 127.0.0.1 at the
/// same port, as the proxy does for `host.cordon.internal:PORT` (which
/// each also allows). Widens.
pub static HOST_PORTS: Key<Vec<u16>> = Key {
    about: About {
        section: "network",
        name: "host_ports",
        flag: Some(Flag {
            name: "host-port",
            value_name: "PORT",
            help: "Make the sandbox's own 127.0.0.1:PORT and [::1]:PORT reach the host's 127.0.0.1:PORT, through cordon and its audit like host.cordon.internal:PORT (repeatable)",
            takes: Takes::Many(FlagType::Port),
        }),
        examples: ["[]", "[5432]"],
    },
    read: Read {
        file: |f, n| {
            let span = n.span().clone();
            let ports = f.integers(n, check_inside_port)?;
            repeated(&ports, |p| *p).map_err(|m| f.invalid(&span, m))?;
            Ok(ports)
        },
        strings: |raw, ctx| {
            let ports = each(raw, ctx, inside_port)?;
            repeated(&ports, |p| *p)?;
            Ok(ports)
        },
    },
    merge: Merge::Append(|p, v, s| {
        for port in v {
            if !p.network.host_ports.iter().any(|h| h.value == port) {
                p.network.host_ports.push(Sourced::new(port, s.clone()));
            }
            let rule = HostRule::host_internal(port);
            if !p.network.hosts.allow.iter().any(|r| r.value == rule) {
                p.network.hosts.allow.push(Sourced::new(rule, s.clone()));
            }
        }
    }),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| join_ports(v),
    explain: Explain::Door(Door::HostPorts),
};

/// `network.publish`: array of strings `PORT` or `PORT:HOSTPORT`. The
/// supervisor listens on the host's 127.0.0.1:HOSTPORT (the same port when
/// one is given) and relays each connection to the sandbox's own
/// 127.0.0.1:PORT. Widens.
pub static PUBLISH: Key<Vec<Publish>> = Key {
    about: About {
        section: "network",
        name: "publish",
        flag: many(
            "publish",
            "PORT[:HOSTPORT]",
            "Make a server listening inside on 127.0.0.1:PORT reachable from the host's 127.0.0.1:HOSTPORT (default: the same port), and nothing else from outside (repeatable)",
        ),
        examples: ["[]", "[\"8080:18080\"]"],
    },
    read: Read {
        file: |f, n| {
            let span = n.span().clone();
            let published = f.strings(n, Publish::parse)?;
            repeated(&published, |p| p.host).map_err(|m| f.invalid(&span, format!("host {m}")))?;
            Ok(published)
        },
        strings: |raw, ctx| {
            let published = each(raw, ctx, |r, _| Publish::parse(r))?;
            repeated(&published, |p| p.host).map_err(|m| format!("host {m}"))?;
            Ok(published)
        },
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.network.publish, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
    explain: Explain::Door(Door::Publish),
};

/// `network.allow_unix_sockets`: array of paths of host UNIX sockets
/// programs inside may connect to. Widens.
pub static UNIX_SOCKETS: Key<Vec<PathPattern>> = Key {
    about: About {
        section: "network",
        name: "allow_unix_sockets",
        flag: many(
            "allow-unix-socket",
            "PATH",
            "Let programs inside connect to the host UNIX socket at PATH (repeatable). Docker's, containerd's and podman's sockets give root on the host",
        ),
        examples: ["[]", "[\"/run/user/1000/gnupg/S.gpg-agent\"]"],
    },
    read: each_string!(path),
    merge: Merge::Append(|p, v, s| extend(&mut p.network.unix_sockets, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
    explain: Explain::Door(Door::UnixSockets),
};

/// `network.presets`: array of preset names (see [`crate::policy::presets`]):
/// each preset's lines, applied where this key stands, each from the preset
/// and this layer. Widens when a preset's lines would.
pub static PRESETS: Key<Vec<Expanded>> = Key {
    about: About {
        section: "network",
        name: "presets",
        flag: many(
            "preset",
            "NAME",
            "Allow what a package manager or service needs (repeatable): npm (yarn, pnpm), pypi (pip, uv, poetry), crates (cargo), go, maven, gradle, rubygems, github, gitlab, docker-hub, anthropic-api, openai-api; `cordon presets` shows each one's hosts",
        ),
        examples: ["[]", "[\"npm\"]"],
    },
    read: Read {
        file: |f, n| f.strings(n, |raw| presets::expand(raw, f.ctx)),
        strings: |raw, ctx| raw.iter().map(|r| presets::expand(r, ctx)).collect(),
    },
    merge: Merge::Append(presets::apply),
    widens: Widens::Contents(|v, in_force| presets::widening(v, in_force)),
    show: |v| v.iter().map(|e| e.name).collect::<Vec<_>>().join(", "),
    explain: Explain::Door(Door::Presets),
};

/// `network.allow`: array of host patterns (see [`crate::policy::host`]:
/// `api.github.com`, `*.example.com`, an IP or CIDR, each with an optional
/// `:PORT`, and `host.cordon.internal:PORT`) the proxy may connect to. Widens.
pub static NET_ALLOW: Key<Vec<HostRule>> = Key {
    about: About {
        section: "network",
        name: "allow",
        flag: many(
            "allow-domain",
            "PATTERN",
            "Let the proxy connect to PATTERN (repeatable): api.github.com, *.example.com (subdomains only), example.com:8443, an IP or CIDR (10.1.0.0/16:5432), host.cordon.internal:PORT (the host's own 127.0.0.1:PORT), or $NAME: the host and port of the URL in that variable, when it is set",
        ),
        examples: ["[]", "[\"api.github.com\"]"],
    },
    read: FOLLOWED_HOST_RULES,
    merge: Merge::Append(|p, v, s| extend(&mut p.network.hosts.allow, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
    explain: Explain::Door(Door::HostAllow),
};

/// `network.deny`: array of host patterns the proxy refuses whatever
/// allows them. Narrows.
pub static NET_DENY: Key<Vec<HostRule>> = Key {
    about: About {
        section: "network",
        name: "deny",
        flag: many(
            "deny-domain",
            "PATTERN",
            "Refuse PATTERN even if an allow rule covers it (repeatable; same forms as --allow-domain)",
        ),
        examples: ["[\"upload.example.com\"]", "[\"10.0.0.0/8\"]"],
    },
    read: each_string!(host_rule),
    merge: Merge::Append(|p, v, s| extend(&mut p.network.hosts.deny, v, s)),
    widens: Widens::Never,
    show: |v| list(v),
    explain: Explain::Door(Door::HostDeny),
};

/// `network.ports`: array of TCP ports that allow rules without a `:PORT`
/// admit; replaces the value in force (80 and 443 by default). Narrows
/// when every port is already in force.
pub static PORTS: Key<Vec<u16>> = Key {
    about: About {
        section: "network",
        name: "ports",
        flag: Some(Flag {
            name: "ports",
            value_name: "PORT",
            help: "Ports that --allow-domain rules without :PORT allow [default: 80,443]",
            takes: Takes::CommaList(FlagType::Port),
        }),
        examples: ["[443]", "[443, 8443]"],
    },
    read: Read {
        file: |f, n| f.integers(n, check_port).map(dedup_ports),
        strings: |raw, ctx| each(raw, ctx, port).map(dedup_ports),
    },
    merge: Merge::Replace {
        get: |p| Some(&p.network.hosts.ports),
        set: |p, v| p.network.hosts.ports = v,
    },
    widens: Widens::NewEntries {
        added: |new, in_force| ports_added(new, in_force),
        what: "ports",
    },
    show: |v| join_ports(v),
    explain: Explain::Row(Row {
        label: "",
        note: "{}: what rules without :PORT allow",
        json: |v| vec![("ports", json!(v))],
    }),
};

/// `network.max_connections`: integer, at least 1. Connections the proxy
/// serves at once; more are refused (HTTP 503, SOCKS5 reply 1) and the
/// first refusal is reported. Narrows when not larger than the value in
/// force.
pub static MAX_CONNECTIONS: Key<u64> = Key {
    about: About {
        section: "network",
        name: "max_connections",
        flag: one(
            "max-connections",
            "N",
            "Proxy connections served at once; more are refused (HTTP 503, SOCKS5 reply 1) and the first refusal is reported [default: 4096]",
            FlagType::Number,
        ),
        examples: ["16", "5000"],
    },
    read: Read {
        file: |f, n| f.scalar(n, |v| count(v, check_connections)),
        strings: |raw, _| last(raw).and_then(number).and_then(check_connections),
    },
    merge: Merge::Replace {
        get: |p| Some(&p.network.max_connections),
        set: |p, v| p.network.max_connections = v,
    },
    widens: Widens::Raise {
        above: u64::gt,
        word: "more",
    },
    show: u64::to_string,
    explain: Explain::Row(Row {
        label: "max connections",
        note: "{} at once through the proxy; more are refused",
        json: |v| vec![("value", json!(v))],
    }),
};

/// `network.inspect`: array of hosts (`*`, or host patterns as in
/// `network.allow`) whose TLS the proxy terminates. Narrows: it only adds
/// checks.
pub static INSPECT: Key<Vec<HostMatch>> = Key {
    about: About {
        section: "network",
        name: "inspect",
        flag: many(
            "inspect",
            "HOST",
            "Terminate TLS to HOST in the proxy (repeatable; `*` = every allowed host), with a CA made for this sandbox and trusted inside: enables [[network.rules]] and [[credentials.inject]] there. Hosts named by those are inspected anyway",
        ),
        examples: ["[\"api.github.com\"]", "[\"*\"]"],
    },
    read: each_string!(host_match),
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.inspect, v, s)),
    widens: Widens::Never,
    show: |v| list(v),
    explain: Explain::Door(Door::Inspect),
};

/// `network.no_inspect`: array of hosts that stay opaque tunnels. Widens:
/// it takes checks away.
pub static NO_INSPECT: Key<Vec<HostMatch>> = Key {
    about: About {
        section: "network",
        name: "no_inspect",
        flag: many(
            "no-inspect",
            "HOST",
            "Keep HOST an opaque tunnel even if --inspect covers it (pinned clients, mTLS; repeatable)",
        ),
        examples: ["[]", "[\"pinned.example\"]"],
    },
    read: each_string!(host_match),
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.no_inspect, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| list(v),
    explain: Explain::Door(Door::NoInspect),
};

/// `network.upstream_ca`: array of PEM files whose certificates are
/// trusted as roots for upstream servers. Widens.
pub static UPSTREAM_CA: Key<Vec<PathBuf>> = Key {
    about: About {
        section: "network",
        name: "upstream_ca",
        flag: many(
            "upstream-ca",
            "FILE",
            "Also trust the CA certificates in FILE (PEM) for inspected upstreams (repeatable)",
        ),
        examples: ["[]", "[\"ca.pem\"]"],
    },
    read: each_string!(one_file),
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.upstream_ca, v, s)),
    widens: Widens::AnyEntry(Vec::is_empty),
    show: |v| {
        v.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    },
    explain: Explain::Door(Door::UpstreamCa),
};

/// `[[network.rules]]`: tables with `host` (required), `methods` and
/// `paths` (globs): on an inspected host, only those. Narrows.
pub static HTTP_RULES: Key<Vec<HttpRule>> = Key {
    about: About {
        section: "network",
        name: "rules",
        flag: None,
        examples: [
            "[{ host = \"api.github.com\", methods = [\"GET\"] }]",
            "[{ host = \"a.com\", paths = [\"/repos/**\"] }]",
        ],
    },
    read: Read {
        file: |f, n| f.tables(n, crate::policy::load::tables::http_rule),
        strings: |_, _| Err("set only in a policy file ([[network.rules]] tables)".to_string()),
    },
    merge: Merge::Append(|p, v, s| extend(&mut p.inspection.rules, v, s)),
    widens: Widens::Never,
    show: |v| list(v),
    explain: Explain::Door(Door::HttpRules),
};
