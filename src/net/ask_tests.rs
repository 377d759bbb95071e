use super::*;
use crate::policy::host::HOST_INTERNAL;

fn gate() -> AskingGate {
    AskingGate::new(HostPolicy::default(), Asker::new().unwrap())
}

fn name(n: &str) -> Target {
    Target::Name(n.to_string())
}

#[test]
fn loopback_names_are_not_asked_about() {
    let gate = gate();
    for n in [
        "localhost",
        "api.localhost",
        "localhost.localdomain",
        "ip6-localhost",
    ] {
        assert_eq!(gate.question(&name(n), 80), None, "{n}");
    }
    let q = gate.question(&name("example.com"), 443).unwrap();
    assert_eq!(
        (q.shown.as_str(), q.rule.as_str()),
        ("example.com:443", "example.com")
    );
    assert_eq!(q.warning, None);
}

#[test]
fn a_container_engines_port_on_the_host_is_asked_with_a_warning() {
    let gate = gate();
    let q = gate.question(&name(HOST_INTERNAL), 2375).unwrap();
    assert_eq!(q.rule, "host.cordon.internal:2375");
    assert!(q.warning.unwrap().contains("root on the host"));
    assert_eq!(
        gate.question(&name(HOST_INTERNAL), 8080).unwrap().warning,
        None
    );
}

#[test]
fn at_most_max_waiting_questions_wait_and_x_ends_the_asking() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let asker = Asker::new().unwrap();
    let question = |i: usize| Question {
        shown: format!("h{i}.example:443"),
        rule: format!("h{i}.example"),
        warning: None,
    };
    rt.block_on(async {
        let mut held = Vec::new();
        for i in 0..MAX_WAITING {
            let asker = Arc::clone(&asker);
            let q = question(i);
            held.push(tokio::spawn(async move { asker.ask(q).await }));
        }
        tokio::task::yield_now().await;
        assert_eq!(
            asker.ask(question(99)).await,
            Answer::NotAsked,
            "one too many"
        );
        assert_eq!(asker.next(), Some(question(0)));
        asker.answer(Answer::StopAsking);
        let answers: Vec<Answer> = join_all(held).await;
        assert_eq!(answers[0], Answer::StopAsking);
        assert!(
            answers[1..].iter().all(|a| *a == Answer::NotAsked),
            "{answers:?}"
        );
        assert_eq!(asker.ask(question(100)).await, Answer::NotAsked, "stopped");
    });
}

async fn join_all(handles: Vec<tokio::task::JoinHandle<Answer>>) -> Vec<Answer> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
