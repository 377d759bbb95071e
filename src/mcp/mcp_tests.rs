use std::path::Path;

use super::*;

const CORDON: &str = "/opt/cordon/bin/cordon";

fn options() -> WrapOptions<'static> {
    WrapOptions {
        cordon: CORDON,
        only: &[],
    }
}

/// Wraps `text` as the file `name`, checks that unwrapping gives it back
/// byte for byte, and returns the wrapped text.
fn round_trip(name: &str, text: &str) -> Rewritten {
    let file = Path::new(name);
    let wrapped = wrap(file, text, &options()).unwrap();
    let back = unwrap(file, &wrapped.text, &[]).unwrap();
    assert_eq!(back.text, text, "unwrap gives the file back");
    wrapped
}

/// The command and arguments of the server at JSON pointer `at`.
fn json_command(text: &str, at: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    let entry = value.pointer(at).unwrap();
    let mut out = vec![entry["command"].as_str().unwrap().to_string()];
    out.extend(
        entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    out
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const MCP_JSON: &str = r#"{
  "mcpServers": {
    "everything": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-everything"],
      "env": { "API_TOKEN": "${TOKEN}", "MODE": "x" }
    },
    "remote": { "type": "http", "url": "https://mcp.example.com/mcp" },
    "events": { "type": "sse", "url": "https://mcp.example.com/sse" },
    "bare": {"command":"my-server"}
  }
}
"#;

#[test]
fn a_project_file_is_wrapped_and_comes_back_byte_for_byte() {
    let wrapped = round_trip(".mcp.json", MCP_JSON);
    assert_eq!(
        json_command(&wrapped.text, "/mcpServers/everything"),
        strings(&[
            CORDON,
            "mcp",
            "run",
            "--server",
            "everything",
            "--pass-env",
            "API_TOKEN",
            "--pass-env",
            "MODE",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-everything"
        ])
    );
    assert_eq!(
        json_command(&wrapped.text, "/mcpServers/bare"),
        strings(&[
            CORDON,
            "mcp",
            "run",
            "--server",
            "bare",
            "--args-added",
            "--",
            "my-server"
        ])
    );
    let value: serde_json::Value = serde_json::from_str(&wrapped.text).unwrap();
    assert_eq!(
        value["mcpServers"]["remote"]["url"],
        "https://mcp.example.com/mcp"
    );
    let outcomes: Vec<(&str, &Outcome)> = wrapped
        .servers
        .iter()
        .map(|d| (d.name.as_str(), &d.outcome))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("everything", &Outcome::Wrapped(Vec::new())),
            ("remote", &Outcome::Remote),
            ("events", &Outcome::Remote),
            ("bare", &Outcome::Wrapped(Vec::new())),
        ]
    );
    // The remote entries' text is untouched.
    assert!(wrapped
        .text
        .contains(r#""remote": { "type": "http", "url": "https://mcp.example.com/mcp" },"#));
}

#[test]
fn wrapping_twice_changes_nothing_and_unwrapping_an_unwrapped_file_neither() {
    let once = round_trip(".mcp.json", MCP_JSON);
    let twice = wrap(Path::new(".mcp.json"), &once.text, &options()).unwrap();
    assert_eq!(twice.text, once.text);
    assert!(!twice.changed());
    let none = unwrap(Path::new(".mcp.json"), MCP_JSON, &[]).unwrap();
    assert_eq!(none.text, MCP_JSON);
    assert!(!none.changed());
}

#[test]
fn the_global_and_each_projects_servers_of_claude_json_are_wrapped() {
    let text = r#"{"numStartups":3,"mcpServers":{"g":{"type":"stdio","command":"node","args":["/srv/g.js"],"env":{}}},"projects":{"/home/u/p":{"allowedTools":[],"mcpServers":{"p":{"command":"python3","args":["-m","srv"]}}},"/home/u/q":{"mcpServers":{}}}}"#;
    let wrapped = round_trip("/home/u/.claude.json", text);
    assert_eq!(
        json_command(&wrapped.text, "/mcpServers/g"),
        strings(&[
            CORDON,
            "mcp",
            "run",
            "--server",
            "g",
            "--",
            "node",
            "/srv/g.js"
        ])
    );
    assert_eq!(
        json_command(&wrapped.text, "/projects/~1home~1u~1p/mcpServers/p"),
        strings(&[CORDON, "mcp", "run", "--server", "p", "--", "python3", "-m", "srv"])
    );
    let keys: Vec<&str> = wrapped.servers.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(
        keys,
        vec!["mcpServers.g", "projects./home/u/p.mcpServers.p"]
    );
}

#[test]
fn vs_codes_file_keeps_its_comments_and_trailing_commas() {
    let text = "{\n  // the servers\n  \"inputs\": [{\"type\": \"promptString\", \"id\": \"k\"}],\n  \"servers\": {\n    \"fs\": {\n      \"type\": \"stdio\",\n      \"command\": \"npx\", /* the launcher */\n      \"args\": [\n        // the package\n        \"-y\",\n        \"@modelcontextprotocol/server-filesystem\",\n      ],\n      \"envFile\": \"${workspaceFolder}/.env\",\n    },\n    \"web\": {\"type\": \"http\", \"url\": \"http://localhost:3000/mcp\"},\n  },\n}\n";
    let wrapped = round_trip("mcp.json", text);
    assert!(wrapped.text.contains("// the package"));
    assert!(wrapped.text.contains("/* the launcher */"));
    let Outcome::Wrapped(notes) = &wrapped.servers[0].outcome else {
        panic!("fs not wrapped: {:?}", wrapped.servers);
    };
    assert!(notes[0].contains("envFile"), "{notes:?}");
    assert_eq!(wrapped.servers[1].outcome, Outcome::Remote);
}

#[test]
fn every_layout_of_the_arguments_comes_back() {
    for args in [
        "[]",
        "[ ]",
        "[\n]",
        "[\"a\"]",
        "[ \"a\" , \"b\" ]",
        "[\n    \"a\",\n    \"b\"\n  ]",
        "[\"with \\\"quotes\\\" and \\\\ and \\u00e9\"]",
        "[1, \"mixed\", null]",
    ] {
        for command in ["\"srv\"", "\"C:\\\\srv\"", "\"sp ace\""] {
            let text = format!(
                "{{\"mcpServers\": {{\"s\": {{\"command\": {command}, \"args\": {args}}}}}}}"
            );
            let wrapped = round_trip("x.json", &text);
            let value: serde_json::Value = serde_json::from_str(&wrapped.text)
                .unwrap_or_else(|e| panic!("{e}: {}", wrapped.text));
            let original: serde_json::Value = serde_json::from_str(command).unwrap();
            let args = value["mcpServers"]["s"]["args"].as_array().unwrap();
            assert_eq!(args[4], "--", "{}", wrapped.text);
            assert_eq!(args[5], original, "{}", wrapped.text);
        }
    }
}

#[test]
fn what_changed_elsewhere_after_wrapping_stays_when_unwrapping() {
    let wrapped = round_trip(".mcp.json", MCP_JSON).text;
    // The client added a server and a flag was added by hand in cordon's part.
    let edited = wrapped
        .replace(
            "\"mcpServers\": {",
            "\"mcpServers\": {\n    \"new\": {\"type\": \"http\", \"url\": \"https://n.example\"},",
        )
        .replacen(
            "\"--server\", \"everything\"",
            "\"--server\", \"everything\", \"--allow-host\", \"api.example.com\"",
            1,
        );
    let back = unwrap(Path::new(".mcp.json"), &edited, &[]).unwrap().text;
    assert_eq!(
        back,
        MCP_JSON.replace(
            "\"mcpServers\": {",
            "\"mcpServers\": {\n    \"new\": {\"type\": \"http\", \"url\": \"https://n.example\"},"
        )
    );
}

#[test]
fn entries_cordon_cannot_read_for_sure_are_refused() {
    let refused = |text: &str, what: &str| {
        let err = wrap(Path::new("c.json"), text, &options())
            .unwrap_err()
            .to_string();
        assert!(err.contains(what), "{text}: {err}");
    };
    // A client runs the last of a name given twice.
    refused(
        r#"{"mcpServers": {"s": {"command": "a", "command": "b"}}}"#,
        "given twice",
    );
    refused(
        r#"{"mcpServers": {"s": {"command": "a"}, "s": {"command": "b"}}}"#,
        "given twice",
    );
    refused(
        r#"{"mcpServers": {"s": {"command": ["a"]}}}"#,
        "not a string",
    );
    refused(
        r#"{"mcpServers": {"s": {"command": "a", "args": "b"}}}"#,
        "not an array",
    );
    refused(
        r#"{"mcpServers": {"s": {"command": "a", "env": {"A B": "1"}}}}"#,
        "plain name",
    );
    refused(
        r#"{"mcpServers": {"../x": {"command": "a"}}}"#,
        "cannot name",
    );
    refused(r#"{"mcpServers": {"-x": {"command": "a"}}}"#, "cannot name");
    refused(r#"{"mcpServers": [1]}"#, "object of servers");
    refused("{\"mcpServers\": {", "c.json:1:");
    let err = wrap(
        Path::new("c.json"),
        "{}",
        &WrapOptions {
            cordon: "/bin/cor\ndon",
            only: &[],
        },
    )
    .unwrap_err();
    assert!(matches!(err, McpError::BadCordon(_)));
}

#[test]
fn a_hand_edited_entry_is_refused_rather_than_restored_wrongly() {
    let wrapped = round_trip(".mcp.json", MCP_JSON).text;
    for (from, to) in [
        ("\"--\", \"npx\"", "\"npx\""),
        ("\"--\", \"my-server\"]", "\"--\", \"my-server\", \"x\"]"),
        (
            "\"--args-added\", \"--\", \"my-server\"]",
            "\"--args-added\", \"--\"]",
        ),
    ] {
        assert!(wrapped.contains(from), "{from}");
        let edited = wrapped.replacen(from, to, 1);
        let err = unwrap(Path::new(".mcp.json"), &edited, &[]).unwrap_err();
        assert!(err.to_string().contains("by hand"), "{to}: {err}");
    }
}

#[test]
fn a_file_the_client_saved_again_in_its_own_layout_unwraps_in_that_layout() {
    // Claude Code saves ~/.claude.json as JSON.stringify(value, null, 2).
    let pretty = |text: &str| {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        serde_json::to_string_pretty(&value).unwrap()
    };
    let wrapped = round_trip(".mcp.json", MCP_JSON).text;
    let saved = pretty(&wrapped);
    assert_ne!(saved, wrapped);
    let back = unwrap(Path::new(".mcp.json"), &saved, &[]).unwrap().text;
    assert_eq!(back, pretty(MCP_JSON));
    // And one separator moved by hand.
    let moved = wrapped.replacen("\"--\", \"npx\", \"-y\"", "\"--\", \"npx\",\"-y\"", 1);
    assert_eq!(
        unwrap(Path::new(".mcp.json"), &moved, &[]).unwrap().text,
        MCP_JSON
    );
}

#[test]
fn an_entry_that_only_looks_wrapped_is_named() {
    let text = format!(
        r#"{{"mcpServers": {{
  "fake": {{"command": "/bin/bash", "args": ["mcp", "run", "--", "x"]}},
  "wide": {{"command": "{CORDON}", "args": ["mcp", "run", "--server", "wide", "--allow-read", "~/.ssh", "--", "x"]}},
  "other": {{"command": "{CORDON}", "args": ["mcp", "run", "--server", "github", "--", "x"]}},
  "fine": {{"command": "{CORDON}", "args": ["mcp", "run", "--server", "fine", "--pass-env", "A", "--", "x"], "env": {{"A": "1"}}}}
}}}}"#
    );
    let wrapped = wrap(Path::new("c.json"), &text, &options()).unwrap();
    assert_eq!(wrapped.text, text);
    assert!(wrapped.left_outside());
    let odd = |i: usize| match &wrapped.servers[i].outcome {
        Outcome::WrappedOtherwise(odd) => odd.join("; "),
        other => panic!("{other:?}"),
    };
    assert!(odd(0).contains("/bin/bash"), "{}", odd(0));
    assert!(odd(1).contains("--allow-read"), "{}", odd(1));
    assert!(odd(2).contains("github"), "{}", odd(2));
    assert_eq!(wrapped.servers[3].outcome, Outcome::AsItWas);
}

#[test]
fn every_command_is_wrapped_whatever_its_type_and_gemini_discovery_is_named() {
    let text = r#"{"mcpServers": {"h": {"type": "http", "command": "srv"}, "u": {"httpUrl": "https://x.example"}},
 "mcp": {"serverCommand": "discover-servers"}}"#;
    let wrapped = round_trip("settings.json", text);
    assert_eq!(json_command(&wrapped.text, "/mcpServers/h")[0], CORDON);
    assert_eq!(wrapped.servers[1].outcome, Outcome::Remote);
    assert!(matches!(
        wrapped.servers[2].outcome,
        Outcome::Unwrappable(_)
    ));
    assert!(wrapped.left_outside());
}

#[test]
fn an_entry_that_sets_what_steers_cordon_is_refused() {
    for name in [
        "HOME",
        "XDG_CONFIG_HOME",
        "LD_PRELOAD",
        "PATH",
        "GCONV_PATH",
        "CORDON_X",
    ] {
        let text =
            format!(r#"{{"mcpServers": {{"s": {{"command": "a", "env": {{"{name}": "x"}}}}}}}}"#);
        let err = wrap(Path::new("c.json"), &text, &options())
            .unwrap_err()
            .to_string();
        assert!(err.contains("cordon itself"), "{name}: {err}");
    }
    let toml = "[mcp_servers.s]\ncommand = \"a\"\nenv = { LD_AUDIT = \"x\" }\n";
    assert!(wrap(Path::new("config.toml"), toml, &options()).is_err());
    // Passing one through (Codex's env_vars) sets nothing: fine.
    let passed = "[mcp_servers.s]\ncommand = \"a\"\nenv_vars = [\"HOME\"]\n";
    round_trip("config.toml", passed);
}

#[test]
fn only_the_servers_asked_for_are_wrapped() {
    let names = vec!["bare".to_string()];
    let wrapped = wrap(
        Path::new(".mcp.json"),
        MCP_JSON,
        &WrapOptions {
            cordon: CORDON,
            only: &names,
        },
    )
    .unwrap();
    assert_eq!(json_command(&wrapped.text, "/mcpServers/bare")[0], CORDON);
    assert!(wrapped.text.contains("\"command\": \"npx\""));
    assert_eq!(
        unwrap(Path::new(".mcp.json"), &wrapped.text, &names)
            .unwrap()
            .text,
        MCP_JSON
    );
}

const CODEX: &str = r#"model = "o4-mini"

[mcp_servers.docs]
command = "npx" # the launcher
args = [
    "-y",   # yes
    '@upstash/context7-mcp',
]
env_vars = ["DOCS_TOKEN"]

[mcp_servers.docs.env]
MODE = "fast"

[mcp_servers.plain]
command = 'python3'

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"

[profiles.x]
model = "y"
"#;

fn toml_command(text: &str, name: &str) -> Vec<String> {
    let value: toml::Table = toml::from_str(text).unwrap();
    let json = serde_json::to_string(&value).unwrap();
    json_command(&json, &format!("/mcp_servers/{name}"))
}

#[test]
fn codex_config_is_wrapped_and_comes_back_byte_for_byte() {
    let wrapped = round_trip("config.toml", CODEX);
    assert_eq!(
        toml_command(&wrapped.text, "docs"),
        strings(&[
            CORDON,
            "mcp",
            "run",
            "--server",
            "docs",
            "--pass-env",
            "MODE",
            "--pass-env",
            "DOCS_TOKEN",
            "--",
            "npx",
            "-y",
            "@upstash/context7-mcp"
        ])
    );
    assert_eq!(
        toml_command(&wrapped.text, "plain"),
        strings(&[
            CORDON,
            "mcp",
            "run",
            "--server",
            "plain",
            "--args-added",
            "--",
            "python3"
        ])
    );
    assert_eq!(wrapped.servers[2].outcome, Outcome::Remote);
    assert!(wrapped.text.contains("# the launcher"));
}

#[test]
fn codex_inline_and_dotted_entries() {
    let inline = "mcp_servers = { a = { command = \"x\" }, b = { command = \"y\", args = [] } }\n";
    let wrapped = round_trip("config.toml", inline);
    assert_eq!(
        toml_command(&wrapped.text, "a"),
        strings(&[
            CORDON,
            "mcp",
            "run",
            "--server",
            "a",
            "--args-added",
            "--",
            "x"
        ])
    );
    let dotted_with_args = "[mcp_servers]\nd.command = \"x\"\nd.args = [\"1\"]\n";
    round_trip("config.toml", dotted_with_args);
    let dotted_bare = "[mcp_servers]\nd.command = \"x\"\n";
    let err = wrap(Path::new("config.toml"), dotted_bare, &options()).unwrap_err();
    assert!(err.to_string().contains("dotted"), "{err}");
    let err = wrap(
        Path::new("config.toml"),
        "[mcp_servers.a]\ncommand = 1\n",
        &options(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("config.toml:2:1: mcp_servers.a")
            || err.to_string().contains("mcp_servers.a"),
        "{err}"
    );
}
