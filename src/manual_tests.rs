use super::*;

use crate::policy::keys;

/// Every declared policy flag, as `--name`.
fn declared_flags() -> Vec<String> {
    keys::KEYS
        .iter()
        .filter_map(|key| key.about().flag.as_ref())
        .map(|flag| format!("--{}", flag.name))
        .collect()
}

#[test]
fn completion_scripts_offer_every_declared_policy_flag() {
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut script = Vec::new();
        completions(shell, &mut script).expect("generated");
        let script = String::from_utf8(script).expect("utf-8");
        for flag in declared_flags() {
            // fish names long options without their dashes (`-l allow-write`).
            let name = flag.trim_start_matches('-');
            assert!(
                script.contains(&flag) || script.contains(&format!("-l {name}")),
                "{shell}: no {flag}"
            );
        }
        assert!(script.contains("explain"), "{shell}: no subcommand");
    }
}

#[test]
fn the_man_page_documents_the_commands() {
    let mut page = Vec::new();
    man_page(&mut page).expect("rendered");
    let page = String::from_utf8(page).expect("utf-8");
    assert!(
        page.starts_with(".ie") || page.contains(".TH cordon"),
        "{page}"
    );
    for sub in ["run", "explain", "probe", "completions"] {
        assert!(page.contains(sub), "no {sub}");
    }
    assert!(!page.contains("probe-inside"), "a hidden command is listed");
}

#[test]
fn man_pages_go_one_per_visible_command_into_an_existing_directory() {
    let dir = std::env::temp_dir().join(format!("cordon-man-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let written = man_pages(&dir);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("listed")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let run_page = std::fs::read_to_string(dir.join("cordon-run.1")).unwrap_or_default();
    std::fs::remove_dir_all(&dir).expect("removed");
    assert_eq!(written.expect("written").len(), names.len());
    for name in ["cordon.1", "cordon-run.1", "cordon-explain.1"] {
        assert!(names.iter().any(|n| n == name), "no {name} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.contains("probe-inside")));
    for flag in declared_flags() {
        // roff escapes each dash of a long option.
        let roff = flag.replace('-', "\\-");
        assert!(run_page.contains(&roff), "cordon-run.1: no {flag}");
    }
    let missing = man_pages(Path::new("/nonexistent/cordon-man"));
    assert!(
        matches!(missing, Err(ManualError::NoDir { .. })),
        "{missing:?}"
    );
}
