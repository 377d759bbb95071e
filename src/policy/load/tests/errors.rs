//! Errors in policy files: each names the file, line, column and dotted key.

use super::*;

#[test]
fn unknown_keys() {
    let fx = Fx::new();
    assert_eq!(
        fx.project_error("[files]\ndeny_read = []\n  allow_wrte = [\"x\"]\n"),
        "3:3: files.allow_wrte: unknown key (expected one of allow_write, allow_read, deny_read, deny_write, protect, read_only_project, cache, state, state_file)"
    );
    assert_eq!(
        fx.project_error("\n[limit]\nmax_procs = 1\n"),
        "2:2: limit: unknown key (expected one of files, limits, network, credentials, sandbox, audit)"
    );
    assert_eq!(
        fx.project_error("limits.max_proc = 1\n"),
        "1:8: limits.max_proc: unknown key (expected one of max_procs, max_tmp, max_memory, timeout)"
    );
    assert_eq!(
        fx.project_error("[network]\n\"local ports\" = [1]\n"),
        "2:1: network.\"local ports\": unknown key (expected one of local_ports, host_ports, publish, allow_unix_sockets, presets, allow, deny, ports, max_connections, inspect, no_inspect, upstream_ca, rules)"
    );
    assert_eq!(
        fx.project_error("[sandbox.x]\n"),
        "1:10: sandbox.x: unknown key (expected one of agent, allow_degraded)"
    );
    assert_eq!(
        fx.project_error("top = 1\n"),
        "1:1: top: unknown key (expected one of files, limits, network, credentials, sandbox, audit)"
    );
}

#[test]
fn wrong_types() {
    let fx = Fx::new();
    assert_eq!(
        fx.project_error("[limits]\nmax_tmp = \"1G\"\n\n\n\n\nmax_procs    = \"many\"\n"),
        "7:16: limits.max_procs: expected an integer, found a string"
    );
    assert_eq!(
        fx.project_error("[limits]\nmax_procs = 2.5\n"),
        "2:13: limits.max_procs: expected an integer, found a float"
    );
    assert_eq!(
        fx.project_error("files = 3\n"),
        "1:9: files: expected a table, found an integer"
    );
    assert_eq!(
        fx.project_error("[[files]]\n"),
        "1:1: files: expected a table, found an array"
    );
    assert_eq!(
        fx.project_error("[files]\ndeny_read = \"/x\"\n"),
        "2:13: files.deny_read: expected an array of strings, found a string"
    );
    assert_eq!(
        fx.project_error("[files]\ndeny_read = [\"/x\", true]\n"),
        "2:20: files.deny_read[1]: expected a string, found a boolean"
    );
    assert_eq!(
        fx.project_error("[files]\ndeny_read = [[\"/x\"]]\n"),
        "2:14: files.deny_read[0]: expected a string, found an array"
    );
    assert_eq!(
        fx.project_error("[files]\ndeny_read = [{ a = 1 }]\n"),
        "2:14: files.deny_read[0]: expected a string, found a table"
    );
    assert_eq!(
        fx.project_error("[limits]\ntimeout = 1979-05-27\n"),
        "2:11: limits.timeout: expected a duration (a string such as \"2h\", or a number of seconds), found a datetime"
    );
    assert_eq!(
        fx.project_error("[limits]\nmax_memory = true\n"),
        "2:14: limits.max_memory: expected a size (a string such as \"512M\", or a number of bytes), found a boolean"
    );
    assert_eq!(
        fx.project_error("[network]\nlocal_ports = [\"80\"]\n"),
        "2:16: network.local_ports[0]: expected an integer, found a string"
    );
    assert_eq!(
        fx.project_error("[network]\nlocal_ports = 80\n"),
        "2:15: network.local_ports: expected an array of integers, found an integer"
    );
}

#[test]
fn bad_values() {
    let fx = Fx::new();
    let err = fx.project_error("[files]\ndeny_read = [\"/ok\", \"/a/[b\"]\n");
    assert!(
        err.starts_with("2:21: files.deny_read[1]: invalid glob \"/a/[b\": "),
        "{err}"
    );
    assert_eq!(
        fx.project_error("[files]\ndeny_write = [\"../up\"]\n"),
        "2:15: files.deny_write[0]: \"../up\" must not contain `..`"
    );
    assert_eq!(
        fx.project_error("[files]\nallow_read = [\"~bob/x\"]\n"),
        "2:15: files.allow_read[0]: `~user` paths are not supported in \"~bob/x\"; write ~/ or an absolute path"
    );
    assert_eq!(
        fx.project_error("[files]\ndeny_read = [\"\"]\n"),
        "2:14: files.deny_read[0]: empty path"
    );
    assert!(fx
        .project_error("[limits]\nmax_tmp = \"12Q\"\n")
        .starts_with("2:11: limits.max_tmp: invalid size \"12Q\""));
    assert_eq!(
        fx.project_error("[limits]\nmax_tmp = 0\n"),
        "2:11: limits.max_tmp: must be more than zero"
    );
    assert_eq!(
        fx.project_error("[limits]\nmax_memory = -5\n"),
        "2:14: limits.max_memory: invalid size -5 (must not be negative)"
    );
    assert!(fx
        .project_error("[limits]\ntimeout = \"soon\"\n")
        .starts_with("2:11: limits.timeout: invalid duration \"soon\""));
    assert_eq!(
        fx.project_error("[limits]\ntimeout = \"0s\"\n"),
        "2:11: limits.timeout: must be more than zero"
    );
    assert_eq!(
        fx.project_error("[limits]\nmax_procs = 0\n"),
        "2:13: limits.max_procs: must be at least 1"
    );
    assert_eq!(
        fx.project_error("[limits]\nmax_procs = -1\n"),
        "2:13: limits.max_procs: must be at least 1"
    );
    assert_eq!(
        fx.project_error("[network]\nlocal_ports = [80, 70000]\n"),
        "2:20: network.local_ports[1]: 70000 is not a TCP port (expected 1 to 65535)"
    );
    assert_eq!(
        fx.project_error("[network]\nhost_ports = [0]\n"),
        "2:15: network.host_ports[0]: 0 is not a TCP port (expected 1 to 65535)"
    );
    assert_eq!(
        fx.project_error("[network]\nhost_ports = [5432, 70000]\n"),
        "2:21: network.host_ports[1]: 70000 is not a TCP port (expected 1 to 65535)"
    );
    assert_eq!(
        fx.project_error("[network]\nhost_ports = [3128]\n"),
        "2:15: network.host_ports[0]: 3128 is cordon's HTTP proxy inside the sandbox; pick another port"
    );
    assert_eq!(
        fx.project_error("[network]\nhost_ports = [5432, 6379, 5432]\n"),
        "2:14: network.host_ports: port 5432 is given twice"
    );
    assert_eq!(
        fx.project_error("[network]\npublish = [\"8080:0\"]\n"),
        "2:12: network.publish[0]: \"8080:0\": 0 is not a TCP port (expected 1 to 65535)"
    );
    assert_eq!(
        fx.project_error("[network]\npublish = [\"1080\"]\n"),
        "2:12: network.publish[0]: \"1080\": 1080 is cordon's SOCKS5 proxy inside the sandbox, which is not published"
    );
    assert_eq!(
        fx.project_error("[network]\npublish = [\"8080\", \"9090:8080\"]\n"),
        "2:11: network.publish: host port 8080 is given twice"
    );
    assert_eq!(
        fx.project_error("[network]\npublish = [8080]\n"),
        "2:12: network.publish[0]: expected a string, found an integer"
    );
    assert_eq!(
        fx.project_error("[sandbox]\nallow_degraded = [\"landlok\"]\n"),
        "2:19: sandbox.allow_degraded[0]: unknown layer \"landlok\" (expected one of namespaces, landlock, seccomp, limits)"
    );
    for (raw, why) in [
        (
            "/etc",
            "must be relative to the project (no leading / or ~)",
        ),
        (
            "~/.x",
            "must be relative to the project (no leading / or ~)",
        ),
        ("a/../b", "must not contain `..`"),
        (
            "*.sh",
            "globs are not supported here; name the file or directory",
        ),
        (".", "names the project itself; name something inside it"),
    ] {
        let err = fx.project_error(&format!("[files]\nprotect = [{raw:?}]\n"));
        assert_eq!(
            err,
            format!("2:12: files.protect[0]: {raw:?} {why}")
                .replace(&format!("{raw:?} globs"), &format!("{raw:?}: globs"))
        );
    }
    assert_eq!(
        fx.project_error("[files]\nprotect = [\"\"]\n"),
        "2:12: files.protect[0]: empty name"
    );
}

#[test]
fn syntax_errors() {
    let fx = Fx::new();
    let err = fx.project_error("[files]\ndeny_read = [\"/a\"\n");
    assert_eq!(err, "3:1: invalid array: expected `]`");
    let err = fx.project_error("[files]\ndeny_read = []\ndeny_read = []\n");
    assert!(
        err.starts_with("3:1: ") && err.contains("duplicate key"),
        "{err}"
    );
    let err = fx.project_error("a = = 1");
    assert!(err.starts_with("1:"), "{err}");
    assert!(!err.contains('\n'), "{err}");

    fs::write(fx.project_file(), b"[files]\n\xff").unwrap();
    let err = fx.load().unwrap_err().to_string();
    assert!(err.ends_with("cordon.toml:2:1: not valid UTF-8"), "{err}");
}

#[test]
fn columns_count_characters() {
    let fx = Fx::new();
    assert_eq!(
        fx.project_error("# héllo wörld\n[files] # ünïcode\ndeny_read = [\"/é\", 5]\n"),
        "3:20: files.deny_read[1]: expected a string, found an integer"
    );
}

#[test]
fn dangling_project_file_is_an_error() {
    let fx = Fx::new();
    std::os::unix::fs::symlink(fx.root.join("gone"), fx.project_file()).unwrap();
    let err = fx.load().unwrap_err().to_string();
    assert!(
        err.starts_with("cannot read ") && err.contains("cordon.toml"),
        "{err}"
    );
}

#[test]
fn spans_are_recovered() {
    // Spans of values under dotted keys and in inline tables, and of keys
    // in implicit tables: were any lost, the position would collapse to 1:1.
    let fx = Fx::new();
    assert_eq!(
        fx.project_error("\n\nfiles.deny_read = [1]\n"),
        "3:20: files.deny_read[0]: expected a string, found an integer"
    );
    assert_eq!(
        fx.project_error("\nlimits = { max_procs = \"x\" }\n"),
        "2:24: limits.max_procs: expected an integer, found a string"
    );
    assert_eq!(
        fx.project_error("\n\nfiles.bogus = 1\n"),
        "3:7: files.bogus: unknown key (expected one of allow_write, allow_read, deny_read, deny_write, protect, read_only_project, cache, state, state_file)"
    );
}
