//! The built-in deny lists: credential files under the caller's home and
//! every other home, and system secrets, stay unreadable in the sandbox
//! (canaries only; the system files are read for their size, never shown).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::*;

/// Runs a python script in `sandbox` that prints `label: readable` for
/// each path it can read something from (a file's bytes, a directory's
/// names), and `label: empty` or `label: denied` otherwise; never the
/// content. With `write`, it then writes that file in its directory.
fn readability(sandbox: Sandbox, paths: &[(String, PathBuf)], write: Option<&str>) -> Output {
    let mut args: Vec<String> = write
        .map(|name| vec!["--write".to_string(), name.to_string()])
        .unwrap_or_default();
    for (label, path) in paths {
        args.extend([label.clone(), path.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sandbox.py_args(READABILITY_PY, &args)
}

/// See [`readability`].
const READABILITY_PY: &str = include_str!("py/readability.py");

/// Writes a canary at `path`, readable by all (so only the sandbox can
/// keep it from the command), making its directories.
fn plant(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// Credential files the red team read by default, relative to a home; a
/// directory entry is planted with a file inside.
const RED_TEAM_FILES: &[&str] = &[
    ".cache/huggingface/token",
    ".cache/huggingface/stored_tokens",
    ".huggingface/token",
    ".kaggle/kaggle.json",
    ".config/kaggle/kaggle.json",
    ".modal.toml",
    ".streamlit/secrets.toml",
    ".aider/oauth-keys.env",
    ".ollama/id_ed25519",
    ".mylogin.cnf",
    ".pg_service.conf",
    ".bitcoin/wallets/wallet.dat",
    ".ethereum/keystore/UTC--key",
    ".electrum/wallets/default_wallet",
    ".var/app/org.mozilla.firefox/.mozilla/firefox/profiles.ini",
    ".local/share/TelegramDesktop/tdata/key_datas",
    ".config/Element/Local Storage/leveldb/000003.log",
    ".weechat/sec.conf",
    ".irssi/config",
    ".config/filezilla/sitemanager.xml",
    ".local/share/remmina/group_rdp_host.remmina",
    ".cert/nm-openvpn/client.key",
    ".config/JetBrains/IntelliJIdea2024.1/c.kdbx",
    ".config/JetBrains/PyCharm2024.2/c.pwd",
    ".ipython/profile_default/history.sqlite",
    ".julia/logs/repl_history.jl",
    ".Rhistory",
    ".ghc/ghci_history",
    ".scala_history",
    ".duckdb_history",
    ".mycli-history",
    ".local/state/zsh/history",
    ".cache/zsh/history",
    ".config/fish/fish_history",
    ".cursor/mcp.json",
    ".codeium/windsurf/mcp_config.json",
    ".continue/config.yaml",
];

/// Files the agents need to run, which stay readable (documented).
const AGENTS_NEED: &[&str] = &[".claude.json", ".gemini/settings.json"];

#[test]
fn credential_files_the_red_team_read_are_unreadable() {
    each_fixture(|mode, fx| {
        let mut paths = Vec::new();
        for rel in RED_TEAM_FILES.iter().chain(AGENTS_NEED) {
            let path = fx.home.join(rel);
            plant(&path, &fx.canary(rel));
            paths.push((rel.to_string(), path));
        }
        paths.push((ALLOWED_CANARY.to_string(), fx.home.join(ALLOWED_CANARY)));
        chown_tree(&fx.home, mode);
        let out = readability(fx.sandbox(), &paths, None);
        out.ok();
        for rel in AGENTS_NEED.iter().chain([&ALLOWED_CANARY]) {
            assert_eq!(line(&out, rel), "readable", "{mode:?}: {out:#?}");
        }
        let readable: Vec<&&str> = RED_TEAM_FILES
            .iter()
            .filter(|rel| line(&out, rel) == "readable")
            .collect();
        assert!(
            readable.is_empty(),
            "{mode:?}: readable: {readable:?}: {out:#?}"
        );
        assert!(!out.stdout.contains(&fx.token), "{mode:?}: {out:#?}");
    });
}

#[test]
fn system_secrets_are_unreadable_for_a_root_caller_unless_re_allowed() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let fx = Fixture::new(Mode::Root);
    let present: Vec<(String, PathBuf)> = ["/etc/shadow", "/etc/gshadow", "/etc/ssl/private"]
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .map(|p| (p.display().to_string(), p))
        .collect();
    assert!(
        present.iter().any(|(l, _)| l == "/etc/shadow"),
        "this host has no /etc/shadow to try"
    );
    let out = readability(fx.sandbox(), &present, None);
    out.ok();
    for (label, _) in &present {
        assert_ne!(line(&out, label), "readable", "{out:#?}");
        assert_ne!(line(&out, label), "<missing>", "{out:#?}");
    }
    // Re-allowed, the sandbox reads it: the deny list is what kept it.
    let out = readability(
        fx.sandbox().flag("--allow-read", "/etc/shadow"),
        &present[..1],
        None,
    );
    out.ok();
    assert_eq!(line(&out, "/etc/shadow"), "readable", "{out:#?}");
}

/// Another account's home under `/home`, removed on drop.
struct OtherHome(PathBuf);

impl Drop for OtherHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn other_homes_credential_files_are_unreadable_and_a_project_there_stays_writable() {
    if !is_root() {
        eprintln!("skipped: needs root to make a home under /home");
        return;
    }
    each_fixture(|mode, fx| {
        let other = OtherHome(PathBuf::from(format!("/home/cordon-it-{}", fx.token)));
        std::fs::create_dir(&other.0).unwrap();
        std::fs::set_permissions(&other.0, std::fs::Permissions::from_mode(0o755)).unwrap();
        let secrets = [".ssh/id_ed25519", ".netrc", ".aws/credentials"];
        let mut paths = Vec::new();
        for rel in secrets.iter().chain([&"notes.txt"]) {
            let path = other.0.join(rel);
            plant(&path, &fx.canary(rel));
            paths.push((rel.to_string(), path));
        }
        // The caller's project lies in that home.
        let project = other.0.join("proj");
        std::fs::create_dir(&project).unwrap();
        chown(&project, mode);
        let out = readability(fx.sandbox().project(&project), &paths, Some("out.txt"));
        out.ok();
        assert_eq!(line(&out, "notes.txt"), "readable", "{mode:?}: {out:#?}");
        assert_eq!(line(&out, "wrote"), "yes", "{mode:?}: {out:#?}");
        assert!(project.join("out.txt").exists(), "{mode:?}");
        for rel in secrets {
            assert_ne!(line(&out, rel), "readable", "{mode:?}: {out:#?}");
        }
        assert!(!out.stdout.contains(&fx.token), "{mode:?}: {out:#?}");
    });
}
