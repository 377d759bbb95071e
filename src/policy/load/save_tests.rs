use super::*;

#[test]
fn a_rule_is_added_to_the_user_config_keeping_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cordon/config.toml");
    add_allow(&file, "api.example.com").unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "[network]\nallow = [\"api.example.com\"]\n"
    );
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);

    let kept = "# mine\n[limits]\nmax_procs = 9 # few\n\n[network]\nallow = [\"a.example\"]  # the first\nports = [80]\n";
    std::fs::write(&file, kept).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    add_allow(&file, "b.example:8443").unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# mine\n[limits]\nmax_procs = 9 # few\n"),
        "{text}"
    );
    assert!(
        text.contains("allow = [\"a.example\", \"b.example:8443\"]  # the first"),
        "{text}"
    );
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o640);
    // Once only.
    add_allow(&file, "b.example:8443").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn what_cannot_be_added_is_refused_with_the_file_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    for text in ["network = 1\n", "[network]\nallow = \"x\"\n", "[network\n"] {
        std::fs::write(&file, text).unwrap();
        assert!(add_allow(&file, "ok.example").is_err(), "{text}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    }
    assert!(add_allow(&file, "bad host!").is_err());
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left");
}

#[test]
fn a_file_that_changed_meanwhile_is_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "now").unwrap();
    assert!(replace_file(&file, Some(b"before"), b"new").is_err());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "now");
    replace_file(&file, Some(b"now"), b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
    let fresh = dir.path().join("fresh");
    replace_file(&fresh, None, b"x").unwrap();
    assert!(replace_file(&fresh, None, b"y").is_err());
}
