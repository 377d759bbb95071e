use super::*;

fn name(n: &str) -> Target {
    Target::Name(n.to_string())
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn rule(s: &str) -> HostRule {
    parse_rule(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn src(n: &str) -> Source {
    Source::Flag(n.to_string())
}

fn policy(allow: &[&str], deny: &[&str]) -> HostPolicy {
    HostPolicy {
        allow: allow
            .iter()
            .map(|r| Sourced::new(rule(r), src("--allow-domain")))
            .collect(),
        deny: deny
            .iter()
            .map(|r| Sourced::new(rule(r), src("--deny-domain")))
            .collect(),
        ..HostPolicy::default()
    }
}

fn reason(v: &Verdict) -> Option<DenyReason> {
    match v {
        Verdict::Deny { reason, .. } => Some(*reason),
        Verdict::Allow { .. } => None,
    }
}

// ---- normalize

#[test]
fn names_are_normalised() {
    for (given, want) in [
        ("example.com", "example.com"),
        ("Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("API.GitHub.com.", "api.github.com"),
        ("Bücher.example", "xn--bcher-kva.example"),
        ("BÜCHER.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("XN--BCHER-KVA.example", "xn--bcher-kva.example"),
        ("ｅｘａｍｐｌｅ.com", "example.com"),
        ("example。com", "example.com"),
        ("faß.de", "xn--fa-hia.de"),
        ("localhost", "localhost"),
        ("r3---sn-abc.googlevideo.com", "r3---sn-abc.googlevideo.com"),
        ("0x7f.example.com", "0x7f.example.com"),
        ("127.0.0.1.nip.io", "127.0.0.1.nip.io"),
        ("a1.b2", "a1.b2"),
    ] {
        assert_eq!(normalize(given), Ok(name(want)), "{given}");
    }
    let label = "a".repeat(63);
    let long = format!("{label}.{label}.{label}.{}", "b".repeat(61));
    assert_eq!(long.len(), 253);
    assert_eq!(normalize(&long), Ok(name(&long)));
    assert_eq!(normalize(&format!("{long}.")), Ok(name(&long)));
}

#[test]
fn bad_names_are_refused() {
    let label64 = "a".repeat(64);
    let too_long = format!(
        "{}.{}.{}.{}",
        "a".repeat(63),
        "a".repeat(63),
        "a".repeat(63),
        "b".repeat(62)
    );
    assert_eq!(too_long.len(), 254);
    for bad in [
        "",
        ".",
        "..",
        "example.com..",
        ".example.com",
        "a..b",
        &label64,
        &too_long,
        "exa mple.com",
        "ex_ample.com",
        "example.com/",
        "user@example.com",
        "example.com:443",
        "-example.com",
        "example-.com",
        "ex\u{0}ample.com",
        "example.com\n",
        "xn--zz.com",
        "xn--.com",
        "%65xample.com",
        "*.example.com",
        "[example.com]",
        "[1.2.3.4]",
        "[::1",
        "::1]",
        "[fe80::1%eth0]",
        "fe80::1%eth0",
        "\u{202e}moc.elpmaxe",
    ] {
        let got = normalize(bad);
        assert!(got.is_err(), "{bad:?} gave {got:?}");
        assert!(got.unwrap_err().to_string().starts_with("invalid host "));
    }
    assert!(normalize(&"a".repeat(5000)).is_err());
}

#[test]
fn ip_literals() {
    for (given, want) in [
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0.0.0.0", "0.0.0.0"),
        ("255.255.255.255", "255.255.255.255"),
        ("10.0.0.1", "10.0.0.1"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("[2001:DB8::1]", "2001:db8::1"),
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1"),
        ("[::ffff:7f00:1]", "::ffff:127.0.0.1"),
        ("１２７.０.０.１", "127.0.0.1"),
    ] {
        assert_eq!(normalize(given), Ok(Target::Ip(ip(want))), "{given}");
    }
}

#[test]
fn ambiguous_numeric_forms_are_refused() {
    for bad in [
        "0x7f.1",
        "0x7f000001",
        "0X7F000001",
        "2130706433",
        "127.1",
        "127.0.1",
        "0177.0.0.1",
        "127.0.0.01",
        "00.0.0.0",
        "127.0.0.1..",
        "1.2.3.4.5",
        "256.0.0.1",
        "0x7f.0.0.1",
        "127.0.0.0x1",
        "example.123",
        "example.0x10",
        "example.0x",
        "1",
        "0",
        "::ffff:0177.0.0.1",
    ] {
        let got = normalize(bad);
        assert!(got.is_err(), "{bad:?} gave {got:?}");
    }
    let msg = normalize("0x7f.1").unwrap_err().to_string();
    assert!(msg.contains("ambiguous"), "{msg}");
}

#[test]
fn target_forms() {
    assert_eq!(name("a.com").with_port(443), "a.com:443");
    assert_eq!(Target::Ip(ip("::1")).with_port(80), "[::1]:80");
    assert_eq!(Target::Ip(ip("1.2.3.4")).with_port(80), "1.2.3.4:80");
    assert_eq!(Target::Ip(ip("::1")).to_string(), "::1");
    assert!(name(HOST_INTERNAL).is_host_internal());
    assert!(normalize("HOST.cordon.internal.")
        .unwrap()
        .is_host_internal());
    assert!(!name("x.cordon.internal").is_host_internal());
}

// ---- rules

#[test]
fn rules_parse_to_canonical_forms() {
    for (given, want) in [
        ("api.github.com", "api.github.com"),
        ("API.GitHub.com.", "api.github.com"),
        ("*.example.com", "*.example.com"),
        ("*.Bücher.example", "*.xn--bcher-kva.example"),
        ("*.co.uk", "*.co.uk"),
        ("example.com:8443", "example.com:8443"),
        ("*.example.com:8443", "*.example.com:8443"),
        ("1.2.3.4", "1.2.3.4"),
        ("1.2.3.4:80", "1.2.3.4:80"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("[::1]:8080", "[::1]:8080"),
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("10.0.0.0/8:5432", "10.0.0.0/8:5432"),
        ("fd00::/8", "fd00::/8"),
        ("[fd00::/8]:443", "[fd00::/8]:443"),
        ("1.2.3.4/32", "1.2.3.4/32"),
        ("host.cordon.internal:5432", "host.cordon.internal:5432"),
        ("HOST.cordon.internal.:5432", "host.cordon.internal:5432"),
        ("localhost", "localhost"),
    ] {
        assert_eq!(rule(given).to_string(), want, "{given}");
        assert_eq!(rule(want), rule(given), "{want} round trip");
    }
    assert_eq!(rule("example.com").port(), None);
    assert_eq!(rule("example.com:8443").port(), Some(8443));
    assert_eq!(
        rule("*.example.com").pattern(),
        &HostPattern::Subdomains("example.com".into())
    );
    assert_eq!(
        rule("host.cordon.internal:1").pattern(),
        &HostPattern::HostInternal
    );
    assert_eq!(
        rule("10.0.0.0/8").pattern(),
        &HostPattern::Cidr(Cidr::new(ip("10.0.0.0"), 8).unwrap())
    );
}

#[test]
fn bad_rules_are_refused_with_reasons() {
    for (bad, why) in [
        ("", "empty pattern"),
        ("*", "`*` alone is not allowed"),
        ("*.", "empty host"),
        ("*.*.example.com", "only one leading"),
        ("a.*.com", "a wildcard may only be a leading `*.`"),
        ("*example.com", "a wildcard may only be a leading `*.`"),
        ("**.example.com", "a wildcard may only be a leading `*.`"),
        ("example.*", "a wildcard may only be a leading `*.`"),
        ("*.com", "at least two labels"),
        ("*.com.", "at least two labels"),
        ("*.1.2.3.4", "not IP addresses"),
        ("host.cordon.internal", "needs a port"),
        ("cordon.internal", "reserved"),
        ("db.cordon.internal:5432", "reserved"),
        ("*.cordon.internal", "reserved"),
        ("example.com:0", "is not a TCP port"),
        ("example.com:65536", "is not a TCP port"),
        ("example.com:", "is not a TCP port"),
        ("example.com:http", "is not a TCP port"),
        ("example.com:+80", "is not a TCP port"),
        ("[::1]:", "is not a TCP port"),
        ("[::1]x", "expected `:PORT`"),
        ("[fd00::]/8:443", "expected `:PORT`"),
        ("[::1", "unbalanced"),
        ("::1]", "unbalanced"),
        ("[1.2.3.4]", "brackets are for IPv6 only"),
        ("[1.2.3.0/24]", "brackets are for IPv6 only"),
        ("[example.com]:80", "brackets are for IPv6 only"),
        ("10.0.0.1/8", "host bits are set; did you mean 10.0.0.0/8?"),
        ("fd00::1/8", "did you mean fd00::/8?"),
        ("10.0.0.0/33", "longer than 32 bits"),
        ("::/129", "longer than 128 bits"),
        ("0.0.0.0/0", "/0 range"),
        ("::/0", "/0 range"),
        ("10.0.0.0/", "prefix length must be a number"),
        ("10.0.0.0/x", "prefix length must be a number"),
        ("10/8", "a range must be an IP address"),
        ("example.com/8", "a range must be an IP address"),
        ("0x7f.1", "ambiguous"),
        ("2130706433", "ambiguous"),
        ("0177.0.0.1:80", "ambiguous"),
        ("exa mple.com", "spaces"),
        ("ex_ample.com", "not a valid host name"),
        ("fe80::1%eth0", "not an IPv6 address"),
    ] {
        let err = parse_rule(bad).expect_err(bad).to_string();
        assert!(
            err.starts_with(&format!("invalid host pattern {bad:?}: ")),
            "{bad:?}: {err}"
        );
        assert!(err.contains(why), "{bad:?}: {err} lacks {why:?}");
    }
}

#[test]
fn cidr_containment() {
    let c = Cidr::new(ip("10.0.0.0"), 8).unwrap();
    assert!(c.contains(ip("10.255.1.2")));
    assert!(!c.contains(ip("11.0.0.0")));
    assert!(!c.contains(ip("::ffff:10.0.0.1")));
    let c6 = Cidr::new(ip("fd00::"), 8).unwrap();
    assert!(c6.contains(ip("fd12::1")));
    assert!(!c6.contains(ip("fe00::1")));
    assert!(!c6.contains(ip("10.0.0.1")));
    assert!(Cidr::new(ip("1.2.3.4"), 32)
        .unwrap()
        .contains(ip("1.2.3.4")));
    assert_eq!(c.addr(), ip("10.0.0.0"));
    assert_eq!(c.prefix(), 8);
}

// ---- decide

#[test]
fn nothing_is_allowed_by_default() {
    let p = HostPolicy::default();
    assert_eq!(p.ports.value, vec![80, 443]);
    assert_eq!(
        p.decide(&name("example.com"), 443),
        Verdict::Deny {
            reason: DenyReason::NotAllowed,
            rule: None,
            source: None
        }
    );
    assert_eq!(
        reason(&p.decide(&Target::Ip(ip("1.1.1.1")), 443)),
        Some(DenyReason::IpLiteral)
    );
    assert_eq!(
        reason(&p.decide(&name(HOST_INTERNAL), 5432)),
        Some(DenyReason::HostInternal)
    );
}

#[test]
fn exact_and_wildcard() {
    let p = policy(&["api.github.com", "*.example.com"], &[]);
    assert_eq!(
        p.decide(&name("api.github.com"), 443),
        Verdict::Allow {
            rule: "api.github.com".into(),
            source: src("--allow-domain")
        }
    );
    assert!(!p.decide(&name("github.com"), 443).is_allowed());
    assert!(!p.decide(&name("x.api.github.com"), 443).is_allowed());
    assert!(p.decide(&name("a.example.com"), 443).is_allowed());
    assert!(p.decide(&name("a.b.example.com"), 80).is_allowed());
    // The apex is not a subdomain of itself.
    assert_eq!(
        reason(&p.decide(&name("example.com"), 443)),
        Some(DenyReason::NotAllowed)
    );
    assert!(!p.decide(&name("badexample.com"), 443).is_allowed());
    assert!(!p.decide(&name("example.com.evil.net"), 443).is_allowed());
    // Names never match IP literals, and vice versa.
    assert_eq!(
        reason(&p.decide(&Target::Ip(ip("140.82.112.5")), 443)),
        Some(DenyReason::IpLiteral)
    );
}

#[test]
fn normalised_inputs_match() {
    let p = policy(&["Bücher.example", "api.github.com"], &[]);
    for host in [
        "xn--bcher-kva.example",
        "BÜCHER.example.",
        "API.GITHUB.COM.",
    ] {
        let t = normalize(host).unwrap();
        assert!(p.decide(&t, 443).is_allowed(), "{host}");
    }
}

#[test]
fn deny_beats_allow() {
    let p = policy(
        &[
            "*.example.com",
            "example.com",
            "10.0.0.0/8:5432",
            "a.test:8080",
        ],
        &[
            "secret.example.com",
            "*.internal.example.com",
            "10.1.0.0/16",
            "a.test:8080",
        ],
    );
    assert!(p.decide(&name("www.example.com"), 443).is_allowed());
    assert!(p.decide(&name("example.com"), 443).is_allowed());
    let v = p.decide(&name("secret.example.com"), 443);
    assert_eq!(
        v,
        Verdict::Deny {
            reason: DenyReason::DeniedByRule,
            rule: Some("secret.example.com".into()),
            source: Some(src("--deny-domain"))
        }
    );
    assert_eq!(
        reason(&p.decide(&name("x.internal.example.com"), 443)),
        Some(DenyReason::DeniedByRule)
    );
    // A wildcard deny leaves the apex alone.
    assert!(p.decide(&name("internal.example.com"), 443).is_allowed());
    assert!(p.decide(&Target::Ip(ip("10.2.0.1")), 5432).is_allowed());
    assert_eq!(
        reason(&p.decide(&Target::Ip(ip("10.1.2.3")), 5432)),
        Some(DenyReason::DeniedByRule)
    );
    // A deny rule with a port denies only that port.
    assert_eq!(
        reason(&p.decide(&name("a.test"), 8080)),
        Some(DenyReason::DeniedByRule)
    );
    // Deny rules also see through IPv6 forms of a denied IPv4 address.
    let q = policy(&["::/8", "2002::/16", "64:ff9b::/96"], &["10.1.0.0/16"]);
    for literal in [
        "::ffff:10.1.2.3",
        "2002:0a01:0203::1",
        "64:ff9b::a01:203",
        "::10.1.2.3",
    ] {
        assert_eq!(
            reason(&q.decide(&Target::Ip(ip(literal)), 443)),
            Some(DenyReason::DeniedByRule),
            "{literal}"
        );
    }
}

#[test]
fn ports() {
    let mut p = policy(
        &["example.com", "alt.example.com:8443", "*.svc.test:9000"],
        &[],
    );
    assert!(p.decide(&name("example.com"), 80).is_allowed());
    assert!(p.decide(&name("example.com"), 443).is_allowed());
    assert_eq!(
        p.decide(&name("example.com"), 22),
        Verdict::Deny {
            reason: DenyReason::Port,
            rule: Some("example.com".into()),
            source: Some(src("--allow-domain"))
        }
    );
    // A rule with a port allows exactly that port, whatever `ports` says.
    assert!(p.decide(&name("alt.example.com"), 8443).is_allowed());
    assert_eq!(
        reason(&p.decide(&name("alt.example.com"), 443)),
        Some(DenyReason::Port)
    );
    assert!(p.decide(&name("a.svc.test"), 9000).is_allowed());
    assert!(!p.decide(&name("a.svc.test"), 443).is_allowed());
    // Configured ports replace the defaults.
    p.ports = Sourced::new(vec![443, 8080], src("--x"));
    assert!(!p.decide(&name("example.com"), 80).is_allowed());
    assert!(p.decide(&name("example.com"), 8080).is_allowed());
    // Two rules for one host: any that admits the port wins.
    let q = policy(&["example.com:8443", "example.com"], &[]);
    assert!(q.decide(&name("example.com"), 443).is_allowed());
    assert!(q.decide(&name("example.com"), 8443).is_allowed());
}

#[test]
fn ip_literals_need_ip_rules() {
    let p = policy(
        &["127.0.0.1:8080", "[::1]:8080", "192.0.2.0/24", "1.1.1.1"],
        &[],
    );
    assert!(p.decide(&Target::Ip(ip("127.0.0.1")), 8080).is_allowed());
    assert_eq!(
        reason(&p.decide(&Target::Ip(ip("127.0.0.1")), 80)),
        Some(DenyReason::Port)
    );
    assert!(p.decide(&Target::Ip(ip("::1")), 8080).is_allowed());
    assert!(p.decide(&Target::Ip(ip("192.0.2.77")), 443).is_allowed());
    assert!(p.decide(&Target::Ip(ip("1.1.1.1")), 443).is_allowed());
    assert_eq!(
        reason(&p.decide(&Target::Ip(ip("1.0.0.1")), 443)),
        Some(DenyReason::IpLiteral)
    );
    // The mapped form is a different literal: not covered.
    assert_eq!(
        reason(&p.decide(&Target::Ip(ip("::ffff:127.0.0.1")), 8080)),
        Some(DenyReason::IpLiteral)
    );
}

#[test]
fn host_internal() {
    let p = policy(&["host.cordon.internal:5432", "*.example.com"], &[]);
    let hi = normalize("host.cordon.internal").unwrap();
    assert_eq!(
        p.decide(&hi, 5432),
        Verdict::Allow {
            rule: "host.cordon.internal:5432".into(),
            source: src("--allow-domain")
        }
    );
    // The default ports do not apply to it.
    assert_eq!(reason(&p.decide(&hi, 443)), Some(DenyReason::HostInternal));
    assert!(p.host_internal_port_allowed(5432));
    assert!(!p.host_internal_port_allowed(5433));
    assert_eq!(p.host_internal_ports(), vec![5432]);
    let q = policy(
        &["host.cordon.internal:5432"],
        &["host.cordon.internal:5432"],
    );
    assert!(!q.host_internal_port_allowed(5432));
    assert_eq!(reason(&q.decide(&hi, 5432)), Some(DenyReason::DeniedByRule));
    assert!(HostPolicy::default().host_internal_ports().is_empty());
}

// ---- resolved addresses

fn refused(p: &HostPolicy, addr: &str) -> Option<DenyReason> {
    p.check_address(ip(addr), 443, &[]).err()
}

#[test]
fn special_addresses_are_refused() {
    use AddressClass::*;
    let p = HostPolicy::default();
    for (addr, class) in [
        ("127.0.0.1", Loopback),
        ("127.255.0.9", Loopback),
        ("0.0.0.0", Unspecified),
        ("0.1.2.3", Unspecified),
        ("10.0.0.1", Private),
        ("172.16.0.1", Private),
        ("172.31.255.255", Private),
        ("192.168.1.1", Private),
        ("100.64.0.1", SharedCgnat),
        ("100.127.255.255", SharedCgnat),
        ("169.254.1.1", LinkLocal),
        ("169.254.169.254", Metadata),
        ("169.254.170.2", Metadata),
        ("100.100.100.200", Metadata),
        ("192.0.0.192", Metadata),
        ("192.0.0.8", Reserved),
        ("192.88.99.1", Reserved),
        ("240.0.0.1", Reserved),
        ("255.255.255.255", Broadcast),
        ("224.0.0.1", Multicast),
        ("239.255.255.250", Multicast),
        ("192.0.2.1", Documentation),
        ("198.51.100.1", Documentation),
        ("203.0.113.1", Documentation),
        ("198.18.0.1", Benchmark),
        ("198.19.255.255", Benchmark),
        ("::", Unspecified),
        ("::1", Loopback),
        ("fe80::1", LinkLocal),
        ("fc00::1", Private),
        ("fd12:3456::1", Private),
        ("fec0::1", Private),
        ("fd00:ec2::254", Metadata),
        ("ff02::1", Multicast),
        ("2001:db8::1", Documentation),
        ("3fff::1", Documentation),
        ("2001:2::1", Benchmark),
        ("100::1", Reserved),
        ("2001:10::1", Reserved),
        // IPv4-mapped and -compatible: refused whatever they embed.
        ("::ffff:127.0.0.1", Ipv4Mapped),
        ("::ffff:10.0.0.1", Ipv4Mapped),
        ("::ffff:169.254.169.254", Ipv4Mapped),
        ("::ffff:8.8.8.8", Ipv4Mapped),
        ("::ffff:0:127.0.0.1", Ipv4Mapped),
        ("::127.0.0.1", Ipv4Compatible),
        ("::10.0.0.1", Ipv4Compatible),
        ("::8.8.8.8", Ipv4Compatible),
        // NAT64, 6to4, Teredo: refused when the IPv4 inside is.
        ("64:ff9b::127.0.0.1", Nat64),
        ("64:ff9b::7f00:1", Nat64),
        ("64:ff9b::a00:1", Nat64),
        ("64:ff9b::a9fe:a9fe", Nat64),
        ("64:ff9b:1::8.8.8.8", Nat64),
        ("2002:7f00:1::1", SixToFour),
        ("2002:a00:1::", SixToFour),
        ("2002:a9fe:a9fe::1", SixToFour),
        // Teredo: server 65.54.227.120, client 127.0.0.1 (inverted: 80ff:fffe).
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", Teredo),
        // Teredo with a private server.
        ("2001:0:a00:1::1", Teredo),
        // Teredo with client 169.254.169.254 (inverted 5601:5601).
        ("2001:0:4136:e378::5601:5601", Teredo),
    ] {
        assert_eq!(
            refused(&p, addr),
            Some(DenyReason::Address(class)),
            "{addr}"
        );
        assert_eq!(classify(ip(addr)), Some(class), "{addr}");
    }
}

#[test]
fn ordinary_addresses_pass() {
    let p = HostPolicy::default();
    for addr in [
        "8.8.8.8",
        "1.1.1.1",
        "140.82.112.3",
        "100.63.255.255",
        "100.128.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.169.0.1",
        "198.20.0.1",
        "169.253.255.255",
        "11.0.0.1",
        "2606:4700::1111",
        "2a00:1450:4001::200e",
        "64:ff9b::8.8.8.8",
        "2002:808:808::1",
        // Teredo: server 65.54.227.120, client 8.8.8.8 (inverted f7f7:f7f7).
        "2001:0:4136:e378::f7f7:f7f7",
    ] {
        assert_eq!(refused(&p, addr), None, "{addr}");
        assert_eq!(classify(ip(addr)), None, "{addr}");
        assert_eq!(refused_range(ip(addr)), None, "{addr}");
    }
}

#[test]
fn a_refused_address_names_its_range() {
    for (addr, range) in [
        ("10.0.0.5", "10.0.0.0/8"),
        ("127.0.0.1", "127.0.0.0/8"),
        ("169.254.169.254", "169.254.169.254/32"),
        ("169.254.1.1", "169.254.0.0/16"),
        ("192.168.1.1", "192.168.0.0/16"),
        ("::1", "::1/128"),
        ("fd00::1", "fc00::/7"),
        ("::ffff:10.0.0.1", "::ffff:0.0.0.0/96"),
        ("64:ff9b::a00:1", "64:ff9b::/96"),
        ("2002:a00:1::", "2002::/16"),
    ] {
        assert_eq!(
            refused_range(ip(addr)).map(|r| r.to_string()).as_deref(),
            Some(range),
            "{addr}"
        );
        // The range holds the address.
        assert!(refused_range(ip(addr)).unwrap().contains(&ip(addr)));
    }
}

#[test]
fn host_own_addresses_are_refused() {
    let p = HostPolicy::default();
    let own = [ip("8.8.4.4"), ip("2606:4700::6810:1")];
    assert_eq!(
        p.check_address(ip("8.8.4.4"), 443, &own),
        Err(DenyReason::Address(AddressClass::HostOwn))
    );
    assert_eq!(
        p.check_address(ip("2606:4700::6810:1"), 443, &own),
        Err(DenyReason::Address(AddressClass::HostOwn))
    );
    assert_eq!(
        p.check_address(ip("64:ff9b::8.8.4.4"), 443, &own),
        Err(DenyReason::Address(AddressClass::HostOwn))
    );
    assert_eq!(
        p.check_address(ip("2002:808:404::1"), 443, &own),
        Err(DenyReason::Address(AddressClass::HostOwn))
    );
    assert_eq!(p.check_address(ip("8.8.8.8"), 443, &own), Ok(()));
    // A rule naming the address re-opens it.
    let q = policy(&["8.8.4.4"], &[]);
    assert_eq!(q.check_address(ip("8.8.4.4"), 443, &own), Ok(()));
}

#[test]
fn allow_rules_reopen_exact_addresses_and_ranges() {
    let p = policy(
        &[
            "10.0.0.0/8",
            "127.0.0.1:8080",
            "169.254.169.254:80",
            "fd00::/8",
            "[::1]:9000",
        ],
        &["10.9.0.0/16"],
    );
    assert_eq!(p.check_address(ip("10.1.2.3"), 443, &[]), Ok(()));
    assert_eq!(
        p.check_address(ip("10.1.2.3"), 80, &[ip("10.1.2.3")]),
        Ok(())
    );
    // A deny rule still wins, for resolved addresses too.
    assert_eq!(
        p.check_address(ip("10.9.1.1"), 443, &[]),
        Err(DenyReason::DeniedByRule)
    );
    assert_eq!(
        p.deny_rule_for(&Target::Ip(ip("10.9.1.1")), 443)
            .map(|r| r.value.to_string()),
        Some("10.9.0.0/16".to_string())
    );
    // Port-scoped: 127.0.0.1 only on 8080.
    assert_eq!(p.check_address(ip("127.0.0.1"), 8080, &[]), Ok(()));
    assert_eq!(
        p.check_address(ip("127.0.0.1"), 443, &[]),
        Err(DenyReason::Address(AddressClass::Loopback))
    );
    assert_eq!(p.check_address(ip("169.254.169.254"), 80, &[]), Ok(()));
    assert_eq!(p.check_address(ip("fd12::1"), 443, &[]), Ok(()));
    assert_eq!(p.check_address(ip("::1"), 9000, &[]), Ok(()));
    // Neighbours stay closed.
    assert_eq!(
        p.check_address(ip("172.16.0.1"), 443, &[]),
        Err(DenyReason::Address(AddressClass::Private))
    );
    assert_eq!(
        p.check_address(ip("169.254.170.2"), 80, &[]),
        Err(DenyReason::Address(AddressClass::Metadata))
    );
    // An IPv4 rule does not re-open its mapped or NAT64 forms.
    assert_eq!(
        p.check_address(ip("::ffff:10.1.2.3"), 443, &[]),
        Err(DenyReason::Address(AddressClass::Ipv4Mapped))
    );
    assert_eq!(
        p.check_address(ip("64:ff9b::a01:203"), 443, &[]),
        Err(DenyReason::Address(AddressClass::Nat64))
    );
    // Name rules never re-open addresses.
    let q = policy(&["localhost"], &[]);
    assert!(q.decide(&name("localhost"), 80).is_allowed());
    assert_eq!(
        q.check_address(ip("127.0.0.1"), 80, &[]),
        Err(DenyReason::Address(AddressClass::Loopback))
    );
}

#[test]
fn embedded_forms() {
    let v6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
    let v4 = |s: &str| s.parse::<Ipv4Addr>().unwrap();
    assert_eq!(embedded_v4(v6("::ffff:1.2.3.4")), vec![v4("1.2.3.4")]);
    assert_eq!(embedded_v4(v6("64:ff9b::1.2.3.4")), vec![v4("1.2.3.4")]);
    assert_eq!(embedded_v4(v6("::1.2.3.4")), vec![v4("1.2.3.4")]);
    assert_eq!(embedded_v4(v6("2002:102:304::")), vec![v4("1.2.3.4")]);
    assert_eq!(
        embedded_v4(v6("2001:0:4136:e378:8000:63bf:3fff:fdd2")),
        vec![v4("65.54.227.120"), v4("192.0.2.45")]
    );
    assert!(embedded_v4(v6("::1")).is_empty());
    assert!(embedded_v4(v6("::")).is_empty());
    assert!(embedded_v4(v6("2606:4700::1")).is_empty());
}

// ---- hints

#[test]
fn hints_name_the_flag_and_the_toml_line() {
    let p = HostPolicy::default();
    let h = p.denial_fix(&name("example.com"), 443, DenyReason::NotAllowed);
    assert_eq!(
        h,
        r#"allow with --allow-domain example.com (or [network] allow = ["example.com"])"#
    );

    let h = p.denial_fix(&name("example.com"), 8443, DenyReason::NotAllowed);
    assert!(h.contains("--allow-domain example.com:8443 (or"), "{h}");
    assert!(h.contains(r#"allow = ["example.com:8443"]"#), "{h}");

    let h = p.denial_fix(&name("example.com"), 22, DenyReason::Port);
    assert_eq!(
        h,
        r#"allow with --allow-domain example.com:22 (or [network] allow = ["example.com:22"]); or let rules without a port allow it too: --ports 80,443,22 (or [network] ports = [80, 443, 22])"#
    );

    let h = p.denial_fix(&Target::Ip(ip("2001:db8::1")), 8080, DenyReason::IpLiteral);
    assert!(h.contains("--allow-domain '[2001:db8::1]:8080' (or"), "{h}");
    assert!(h.contains(r#"allow = ["[2001:db8::1]:8080"]"#), "{h}");
    let h = p.denial_fix(&Target::Ip(ip("2606:4700::1")), 443, DenyReason::IpLiteral);
    assert!(h.contains("--allow-domain '[2606:4700::1]' (or"), "{h}");
    assert_eq!(rule("[2606:4700::1]").to_string(), "2606:4700::1");

    // A resolved address: only a rule naming it (or its range) helps.
    let h = p.denial_fix(
        &Target::Ip(ip("10.0.0.5")),
        443,
        DenyReason::Address(AddressClass::Private),
    );
    assert_eq!(
        h,
        r#"only a rule naming the address or a range holding it allows it: --allow-domain 10.0.0.5 (or [network] allow = ["10.0.0.5"])"#
    );

    for (target, reason) in [
        (name("localhost"), DenyReason::NotAllowed),
        (Target::Ip(ip("127.0.0.1")), DenyReason::IpLiteral),
        (
            Target::Ip(ip("127.0.0.1")),
            DenyReason::Address(AddressClass::Loopback),
        ),
        (name(HOST_INTERNAL), DenyReason::HostInternal),
    ] {
        let h = p.denial_fix(&target, 5432, reason);
        assert!(
            h.contains("--allow-domain host.cordon.internal:5432 (or")
                && h.contains(r#"allow = ["host.cordon.internal:5432"]"#),
            "{target}: {h}"
        );
    }

    let h = p.denial_fix(&name("a.com"), 443, DenyReason::DeniedByRule);
    assert!(h.starts_with("deny beats allow: nothing allows it"), "{h}");

    // Every hinted rule parses back.
    for port in [80, 443, 8443] {
        for t in [
            name("example.com"),
            Target::Ip(ip("1.2.3.4")),
            Target::Ip(ip("2606:4700::1")),
        ] {
            let h = p.denial_fix(&t, port, DenyReason::NotAllowed);
            let start = h.find("allow = [\"").unwrap() + 10;
            let end = start + h[start..].find('"').unwrap();
            let r = rule(&h[start..end]);
            let mut q = HostPolicy::default();
            q.allow.push(Sourced::new(r, Source::Builtin));
            assert!(q.decide(&t, port).is_allowed(), "{h}");
        }
    }
}

#[test]
fn verdicts_serialise_for_audit() {
    let v = Verdict::Deny {
        reason: DenyReason::Address(AddressClass::Metadata),
        rule: None,
        source: None,
    };
    let j = serde_json::to_value(&v).unwrap();
    assert_eq!(j["verdict"], "deny");
    assert_eq!(j["reason"]["kind"], "address");
    assert_eq!(j["reason"]["class"], "metadata");
    let p = policy(&["*.example.com:8443"], &[]);
    let j = serde_json::to_value(&p).unwrap();
    assert_eq!(j["allow"][0]["value"], "*.example.com:8443");
    assert_eq!(j["ports"]["value"], serde_json::json!([80, 443]));
    assert_eq!(
        DenyReason::Address(AddressClass::Loopback).to_string(),
        "the address is a loopback address"
    );
}
