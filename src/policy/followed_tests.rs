use super::*;

/// Sets `name` to `value` for one test (each test uses its own names, so
/// tests running at once do not meet).
fn with_var(name: &str, value: &str) -> String {
    std::env::set_var(name, value);
    format!("${name}")
}

#[test]
fn a_plain_entry_stands_for_itself() {
    assert_eq!(
        expand("api.anthropic.com").unwrap().as_deref(),
        Some("api.anthropic.com")
    );
}

#[test]
fn an_unset_or_empty_variable_stands_for_nothing() {
    std::env::remove_var("CORDON_TEST_FOLLOWED_UNSET");
    assert_eq!(expand("$CORDON_TEST_FOLLOWED_UNSET").unwrap(), None);
    let empty = with_var("CORDON_TEST_FOLLOWED_EMPTY", "");
    assert_eq!(expand(&empty).unwrap(), None);
}

#[test]
fn a_url_gives_its_host_and_port() {
    for (value, want) in [
        ("https://gateway.example.com/v1", "gateway.example.com:443"),
        ("http://Gateway.Example.com", "gateway.example.com:80"),
        (
            "https://host.cordon.internal:8443",
            "host.cordon.internal:8443",
        ),
        ("https://[2001:db8::1]:9000/x", "[2001:db8::1]:9000"),
    ] {
        let entry = with_var("CORDON_TEST_FOLLOWED_URL", value);
        assert_eq!(expand(&entry).unwrap().as_deref(), Some(want), "{value}");
    }
}

#[test]
fn what_is_no_usable_url_is_refused_without_showing_the_value() {
    for value in [
        "gateway.example.com",
        "ftp://gateway.example.com",
        "https://user:sk-secret@gateway.example.com",
        "not a url at all sk-secret",
        "https://gateway.example.com:99999/sk-secret",
        "https://gateway.example.com:0/sk-secret",
    ] {
        let entry = with_var("CORDON_TEST_FOLLOWED_BAD", value);
        let err = expand(&entry).unwrap_err();
        assert!(err.contains("$CORDON_TEST_FOLLOWED_BAD"), "{err}");
        assert!(!err.contains("sk-secret"), "{err}");
    }
}

#[test]
fn a_loopback_url_is_refused_with_the_name_that_reaches_the_host() {
    for value in [
        "http://localhost:4000",
        "https://127.0.0.1:4000/v1",
        "http://[::1]:4000",
        "http://api.localhost:4000",
        "https://[::ffff:127.0.0.1]:4000",
        "http://localhost.:4000",
    ] {
        let entry = with_var("CORDON_TEST_FOLLOWED_LOOP", value);
        let err = expand(&entry).unwrap_err();
        assert!(err.contains("host.cordon.internal:4000"), "{value}: {err}");
    }
}

#[test]
fn a_bad_variable_name_is_refused() {
    assert!(expand("$9LIVES").is_err());
    assert!(expand("$").is_err());
}
