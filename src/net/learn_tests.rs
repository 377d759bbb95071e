use super::*;

use crate::policy::host::parse_rule;
use crate::policy::{Source, Sourced};

fn rule(raw: &str) -> Sourced<crate::policy::host::HostRule> {
    Sourced::new(
        parse_rule(raw).unwrap(),
        Source::Flag("--allow-domain".into()),
    )
}

fn gate() -> (LearningGate, Arc<Learned>) {
    let mut policy = HostPolicy::default();
    policy.allow.push(rule("known.example"));
    policy.deny.push(rule("blocked.example"));
    let learned = Arc::new(Learned::default());
    (LearningGate::new(policy, Arc::clone(&learned)), learned)
}

fn seen<'a>(all: &'a [Seen], host: &str, port: u16) -> &'a Seen {
    all.iter()
        .find(|s| s.host == host && s.port == port)
        .unwrap_or_else(|| panic!("{host}:{port} not in {all:?}"))
}

#[test]
fn what_no_rule_names_is_let_through_and_written_down() {
    let (gate, learned) = gate();
    let new = gate
        .check_destination("New.Example.", 443)
        .expect("learned");
    assert_eq!(new.dest, Destination::Name("new.example".into()));
    assert_eq!(
        (new.rule.as_str(), new.source.as_str()),
        (LEARN_RULE, LEARN_SOURCE)
    );
    gate.check_destination("new.example", 443)
        .expect("learned again");
    // An IP literal, and an allowed host on a port its rule does not name.
    gate.check_destination("203.0.114.9", 443)
        .expect("ip learned");
    gate.check_destination("known.example", 8443)
        .expect("port learned");
    gate.check_destination("known.example", 443)
        .expect("allowed by its rule");
    let all = learned.seen();
    assert_eq!(seen(&all, "new.example", 443).connections, 2);
    assert_eq!(seen(&all, "new.example", 443).allowed_by, None);
    assert_eq!(seen(&all, "203.0.114.9", 443).refused, None);
    assert_eq!(seen(&all, "known.example", 8443).allowed_by, None);
    assert!(seen(&all, "known.example", 443)
        .allowed_by
        .as_deref()
        .is_some_and(|by| by.contains("known.example from flag --allow-domain")));
}

#[test]
fn deny_rules_the_hosts_loopback_and_the_address_guard_still_refuse() {
    let (gate, learned) = gate();
    assert!(gate.check_destination("blocked.example", 443).is_err());
    assert!(gate
        .check_destination("host.cordon.internal", 5432)
        .is_err());
    // An IP literal no rule names meets the address guard at once (the
    // proxy resolves nothing for it, and checks no address).
    for literal in ["127.0.0.1", "[::1]", "10.0.0.8", "169.254.169.254"] {
        assert!(gate.check_destination(literal, 80).is_err(), "{literal}");
    }
    gate.check_destination("inside.example", 443)
        .expect("learned");
    for addr in ["127.0.0.1", "10.1.2.3", "169.254.169.254"] {
        assert!(gate
            .check_address("inside.example", addr.parse().unwrap(), 443)
            .is_err());
    }
    let all = learned.seen();
    assert!(seen(&all, "blocked.example", 443).refused.is_some());
    assert!(seen(&all, "host.cordon.internal", 5432).refused.is_some());
    assert!(seen(&all, "127.0.0.1", 80).refused.is_some());
    let refused = seen(&all, "inside.example", 443).refused.clone().unwrap();
    assert!(
        refused.starts_with("inside.example resolved to 169.254.169.254"),
        "{refused}"
    );
    // One address accepted: the host was reached after all.
    gate.check_address("inside.example", "203.0.114.10".parse().unwrap(), 443)
        .expect("a public address");
    assert_eq!(seen(&learned.seen(), "inside.example", 443).refused, None);
}

#[test]
fn a_run_naming_ever_new_destinations_is_recorded_up_to_a_bound_and_counted() {
    let (gate, learned) = gate();
    for i in 0..MAX_RECORDED + 10 {
        let _ = gate.check_destination(&format!("h{i}.example"), 443);
    }
    for i in 0..MAX_RECORDED + 5 {
        learned.note_write(&format!("/home/u/.x/{i}"));
    }
    assert_eq!(learned.seen().len(), MAX_RECORDED);
    assert_eq!(learned.writes().len(), MAX_RECORDED);
    assert_eq!(learned.dropped(), 15);
    // What was recorded already still counts.
    gate.check_destination("h0.example", 443).expect("learned");
    assert_eq!(learned.dropped(), 15);
}
