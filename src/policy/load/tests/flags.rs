//! Flags: resolved against the working directory, checked, named in errors.

use super::*;

#[test]
fn flags_resolve_and_validate() {
    let fx = Fx::new();
    let flags = given(&[
        ("--allow-read", &["~/.npmrc"]),
        ("--deny-write", &["./vendor", "/opt/**/*.so"]),
        ("--max-memory", &["1GiB"]),
        ("--timeout", &["90"]),
    ]);
    let p = load(&fx.req(flags)).unwrap();
    let f = |n: &str| Source::Flag(n.to_string());
    assert_eq!(
        p.files.allow_read,
        vec![Sourced::new(
            exact(&fx.home.join(".npmrc")),
            f("--allow-read")
        )]
    );
    assert_eq!(
        p.files.deny_write[1..]
            .iter()
            .map(|e| (e.value.to_string(), e.source.clone()))
            .collect::<Vec<_>>(),
        vec![
            (
                fx.project.join("vendor").display().to_string(),
                f("--deny-write")
            ),
            ("/opt/**/*.so".to_string(), f("--deny-write")),
        ]
    );
    assert_eq!(
        p.limits.max_memory,
        Some(Sourced::new(1 << 30, f("--max-memory")))
    );
    assert_eq!(
        p.limits.timeout,
        Some(Sourced::new(Duration::from_secs(90), f("--timeout")))
    );

    let bad = |flags: Vec<FlagValue>| load(&fx.req(flags)).unwrap_err().to_string();
    assert!(bad(given(&[("--max-tmp", &["12Q"])])).starts_with("--max-tmp: invalid size \"12Q\""));
    assert!(bad(given(&[("--max-memory", &["lots"])]))
        .starts_with("--max-memory: invalid size \"lots\""));
    assert!(bad(given(&[("--timeout", &["1y"])])).starts_with("--timeout: invalid duration \"1y\""));
    assert_eq!(
        bad(given(&[("--max-procs", &["0"])])),
        "--max-procs: must be at least 1"
    );
    assert_eq!(
        bad(given(&[("--local-ports", &["0"])])),
        "--local-ports: 0 is not a TCP port (expected 1 to 65535)"
    );
    assert_eq!(
        bad(given(&[("--allow-degraded", &["all"])])),
        "--allow-degraded: unknown layer \"all\" (expected one of namespaces, landlock, seccomp, limits)"
    );
    assert!(bad(given(&[("--deny-read", &["/a/[b"])]))
        .starts_with("--deny-read: invalid glob \"/a/[b\""));
    assert_eq!(
        bad(given(&[("--allow-write", &["../x"])])),
        "--allow-write: \"../x\" must not contain `..`"
    );
}

#[test]
fn a_bad_flag_fails_the_whole_load() {
    let fx = Fx::new();
    fx.write_project("[files]\ndeny_read = [\"./.env\"]\n");
    let flags = given(&[("--allow-write", &["/ok"]), ("--timeout", &["never"])]);
    assert!(matches!(load(&fx.req(flags)), Err(LoadError::Flag { .. })));
}
