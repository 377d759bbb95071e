//! Presets from the command line: `--preset NAME` adds the preset's hosts
//! (shown by `explain` as the preset's), `cordon presets` lists them, an
//! unknown name runs nothing, and an untrusted project file may not name
//! one until trusted. (That the proxy lets a preset's host through is in
//! tests/network.rs, in namespaces the test makes.)

mod common;

use common::*;

/// The shipped presets and a host each allows.
const PRESETS: &[(&str, &str)] = &[
    ("npm", "registry.npmjs.org"),
    ("pypi", "files.pythonhosted.org"),
    ("crates", "static.crates.io"),
    ("go", "sum.golang.org"),
    ("maven", "repo.maven.apache.org"),
    ("gradle", "plugins.gradle.org"),
    ("rubygems", "index.rubygems.org"),
    ("github", "codeload.github.com"),
    ("gitlab", "gitlab.com"),
    ("docker-hub", "registry-1.docker.io"),
    ("anthropic-api", "api.anthropic.com"),
    ("openai-api", "api.openai.com"),
    ("claude", "api.anthropic.com"),
    ("codex", "api.openai.com"),
    ("gemini", "generativelanguage.googleapis.com"),
];

/// The agents' profiles among [`PRESETS`].
const AGENTS: &[&str] = &["claude", "codex", "gemini"];

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:#?}"))
}

#[test]
fn explain_shows_a_presets_hosts_allowed_from_the_preset() {
    each_fixture(|mode, fx| {
        let out = fx
            .sandbox()
            .subcommand("explain")
            .args(["--preset", "npm", "--preset", "github", "--json"])
            .run(&[]);
        out.ok();
        let policy = json(&out);
        let allow = policy["network"]["allow"].as_array().unwrap();
        let npm = allow
            .iter()
            .find(|r| r["rule"] == "registry.npmjs.org")
            .unwrap_or_else(|| panic!("{mode:?}: registry.npmjs.org not allowed: {out:#?}"));
        assert_eq!(npm["from"], "preset npm (flag --preset)", "{mode:?}");
        assert_eq!(
            npm["source"],
            serde_json::json!({
                "kind": "preset",
                "detail": { "name": "npm", "from": { "kind": "flag", "detail": "--preset" } },
            }),
            "{mode:?}"
        );
        assert_eq!(npm["ports"], serde_json::json!([80, 443]), "{mode:?}");
        let names: Vec<&str> = policy["network"]["presets"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(names, ["npm", "github"], "{mode:?}");

        let text = fx
            .sandbox()
            .subcommand("explain")
            .args(["--preset", "github"])
            .run(&[]);
        text.ok();
        let row = text
            .stdout
            .lines()
            .find(|l| l.contains("api.github.com"))
            .unwrap_or_else(|| panic!("{mode:?}: {text:#?}"));
        assert!(row.ends_with("preset github (flag --preset)"), "{row}");
    });
}

#[test]
fn cordon_presets_lists_every_preset_with_its_hosts() {
    let fx = Fixture::new(Mode::Root);
    let presets = || fx.sandbox().no_project_flag().subcommand("presets");
    let text = presets().run(&[]);
    text.ok();
    for (name, host) in PRESETS {
        let start = format!("{name}: ");
        let block: Vec<&str> = text
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with(&start))
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(
            block
                .iter()
                .any(|l| l.starts_with("  hosts  ") && l.contains(host)),
            "{name}: no hosts line with {host}: {text:#?}"
        );
    }
    assert!(text
        .stdout
        .contains("  cache  npm: ~/.npm ($npm_config_cache"));
    assert!(text.stdout.contains("  cache  cargo: ~/.cargo/registry"));

    let listed = json(&presets().arg("--json").run(&[]));
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let want: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, want);

    // One preset: its file, as TOML.
    let one = presets().arg("crates").run(&[]);
    one.ok();
    let file: toml::Table = toml::from_str(&one.stdout).unwrap();
    assert_eq!(file["preset"]["name"].as_str(), Some("crates"));
    assert_eq!(
        file["network"]["allow"],
        toml::Value::Array(vec!["index.crates.io".into(), "static.crates.io".into()])
    );
    let one = json(&presets().args(["crates", "--json"]).run(&[]));
    assert_eq!(one["toml"].as_str(), Some(one_text(&fx, "crates").as_str()));
    assert_eq!(
        one["hosts"],
        serde_json::json!(["index.crates.io", "static.crates.io"])
    );

    let unknown = presets().arg("crate").run(&[]);
    unknown.expect_code(2);
    assert!(
        unknown
            .stderr
            .starts_with("cordon: unknown preset \"crate\"; the presets are npm, pypi, crates,"),
        "{unknown:#?}"
    );
}

/// `cordon presets NAME`'s output.
fn one_text(fx: &Fixture, name: &str) -> String {
    let out = fx
        .sandbox()
        .no_project_flag()
        .subcommand("presets")
        .arg(name)
        .run(&[]);
    out.ok();
    out.stdout
}

#[test]
fn an_unknown_preset_runs_nothing() {
    each_fixture(|mode, fx| {
        let out = fx.sandbox().flag("--preset", "nmp").sh("touch marker");
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(
            out.stderr
                .contains("--preset: unknown preset \"nmp\"; the presets are npm,"),
            "{mode:?}: {out:#?}"
        );
        assert!(
            !fx.project.join("marker").exists(),
            "{mode:?}: the command ran"
        );
    });
}

#[test]
fn an_untrusted_project_may_not_name_a_preset_until_trusted() {
    each_fixture(|mode, fx| {
        let toml = fx.project.join("cordon.toml");
        std::fs::write(&toml, "[network]\npresets = [\"pypi\"]\n").unwrap();
        chown(&toml, fx.mode);
        let explain = || {
            fx.sandbox()
                .no_project_flag()
                .subcommand("explain")
                .arg("--json")
                .run(&[])
        };
        let out = explain();
        assert_eq!(out.code, 125, "{mode:?}: {out:#?}");
        assert!(
            out.stderr.contains(&format!(
                "{}:2:1: network.presets: preset pypi sets network.allow, which widens the sandbox; ",
                toml.display()
            )) && out.stderr.contains("cordon trust"),
            "{mode:?}: {out:#?}"
        );
        fx.sandbox().subcommand("trust").run(&[]).ok();
        let out = explain();
        out.ok();
        let allow = json(&out)["network"]["allow"].clone();
        let pypi = allow
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rule"] == "pypi.org")
            .cloned()
            .unwrap_or_else(|| panic!("{mode:?}: {out:#?}"));
        assert_eq!(
            pypi["from"],
            format!("preset pypi (project {})", toml.display()),
            "{mode:?}"
        );
    });
}

/// `cordon agents` lists the agents' profiles only, each with the
/// commands `--agent auto` knows it by; `cordon agents NAME` prints its
/// file; a preset that is no agent's is refused there, and `--agent` with
/// it or with `auto` for a command no profile is for stops the run.
#[test]
fn cordon_agents_lists_the_profiles_and_auto_picks_by_command() {
    let fx = Fixture::new(Mode::User);
    let listed = json(&fx.sandbox().subcommand("agents").arg("--json").run(&[]));
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, AGENTS);
    let text = fx.sandbox().subcommand("agents").run(&[]);
    text.ok();
    assert!(
        text.stdout
            .contains("agent  --agent claude (or --agent auto for claude)"),
        "{text:#?}"
    );
    let one = fx.sandbox().subcommand("agents").arg("codex").run(&[]);
    one.ok();
    assert!(one.stdout.contains("[[files.state]]"), "{one:#?}");
    let not = fx.sandbox().subcommand("agents").arg("npm").run(&[]);
    assert_ne!(not.code, 0, "{not:#?}");
    let refused = fx.sandbox().flag("--agent", "npm").sh("true");
    refused.expect_code(125);
    assert!(
        refused.stderr.contains("no agent profile \"npm\""),
        "{refused:#?}"
    );
    let refused = fx.sandbox().flag("--agent", "auto").sh("true");
    refused.expect_code(125);
    assert!(
        refused
            .stderr
            .contains("--agent auto: no agent profile is for the command"),
        "{refused:#?}"
    );
}
