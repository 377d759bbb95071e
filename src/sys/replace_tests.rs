use super::*;

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
