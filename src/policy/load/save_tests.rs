use super::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

/// Writes as the runtime's replacement does, for what these tests see.
fn write(file: &Path, _was: Option<&[u8]>, text: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)?;
    out.write_all(text)
}

#[test]
fn a_rule_is_added_to_the_user_config_keeping_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cordon/config.toml");
    add_allow(&file, "api.example.com", &write).unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "[network]\nallow = [\"api.example.com\"]\n"
    );
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);

    let kept = "# mine\n[limits]\nmax_procs = 9 # few\n\n[network]\nallow = [\"a.example\"]  # the first\nports = [80]\n";
    std::fs::write(&file, kept).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    add_allow(&file, "b.example:8443", &write).unwrap();
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
    add_allow(&file, "b.example:8443", &write).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[test]
fn what_cannot_be_added_is_refused_with_the_file_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    for text in ["network = 1\n", "[network]\nallow = \"x\"\n", "[network\n"] {
        std::fs::write(&file, text).unwrap();
        assert!(add_allow(&file, "ok.example", &write).is_err(), "{text}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    }
    assert!(add_allow(&file, "bad host!", &write).is_err());
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left");
}

#[test]
fn a_linked_config_is_saved_to_the_file_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("dotfiles/cordon.toml");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, "[limits]\nmax_procs = 9\n").unwrap();
    let link = dir.path().join("config.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    add_allow(&link, "a.example", &write).unwrap();
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(
        std::fs::read_to_string(&real).unwrap(),
        "[limits]\nmax_procs = 9\n\n[network]\nallow = [\"a.example\"]\n"
    );
}
