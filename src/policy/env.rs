//! Environment-variable patterns of the policy: the built-in secret names
//! and the check every `deny_env` / `keep_env` entry passes. The filter that
//! applies them is [`crate::credentials::env`].

/// Names that look like secrets, removed by default. Globs over the upper-
/// cased, normalised name (see the module's docs): `*` matches any run of
/// characters.
pub const SECRET_PATTERNS: &[&str] = &[
    // `TOKEN`, `APITOKEN`, `GITHUBTOKEN`, and every `*_TOKEN`.
    "*TOKEN",
    "*_TOKEN_*",
    "*SECRET*",
    "*_API_KEY",
    "*_APIKEY",
    "*API_KEY*",
    "*_ACCESS_KEY*",
    "*_PRIVATE_KEY*",
    // Any `_KEY` (OPENAI_KEY, RAILS_MASTER_KEY, SOPS_AGE_KEY, APP_KEY, ...):
    // a variable named for a key holds one. `KEYMAP` and the like stay.
    "*_KEY",
    "KEY",
    "*PASSWORD*",
    "*PASSWD*",
    // `GOOGLE_APPLICATION_CREDENTIALS`, `GCP_CREDENTIALS_JSON`, ...
    "*CREDENTIAL*",
    "*_CREDS",
    "CREDS",
    "*_AUTH",
    "AUTH",
    // A ready HTTP `Authorization` header or bearer token.
    "*AUTHORIZATION*",
    "*BEARER*",
    "*_PAT",
    // `MYSQL_PWD` and the like (`PWD` itself, the working directory, has no `_`).
    "*_PWD",
    // `DB_PASS`, `SMTP_PASS`; `PW` (`*_ASKPASS`, a program, stays).
    "*_PASS",
    "PASS",
    "*_PW",
    "PW",
    "*PASSPHRASE*",
    "*SIGNING_KEY*",
    "*ENCRYPTION_KEY*",
    // npm's `npm_config__authToken`, `npm_config_//host/:_authToken`, ngrok's.
    "*AUTHTOKEN*",
    // `CI_JOB_JWT`, `CI_JOB_JWT_V2`: a CI job's identity token.
    "*_JWT",
    "*_JWT_*",
    // Sentry's and other DSNs carry a key (in the userinfo or as `password=`).
    "*_DSN",
    // A webhook URL is its own credential (Slack, Discord, Teams).
    "*WEBHOOK*",
    // Azure's `AccountKey=...;`, and database connection strings.
    "*CONNECTION_STRING*",
    "COOKIE",
    "*_COOKIE",
    "COOKIES",
    "*_COOKIES",
    // A web session's id (`XDG_SESSION_ID`, the login session's number,
    // stays).
    "SESSION_ID",
    "SESSIONID",
    // Password managers' unlocked sessions: 1Password, Bitwarden.
    "OP_SESSION_*",
    "BW_SESSION",
    // Registry logins (`{"auths": {...}}`) for GitLab runners and CI.
    "DOCKER_AUTH_CONFIG",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GITLAB_TOKEN",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "NPM_TOKEN",
    "NODE_AUTH_TOKEN",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "CARGO_REGISTRY_TOKEN",
    "TWINE_PASSWORD",
    "DATABASE_URL",
    "SSH_AUTH_SOCK",
];

/// Why an environment pattern was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnvError {
    /// An empty pattern.
    #[error("empty variable name")]
    Empty,
    /// A pattern with characters no variable name has.
    #[error(
        "{0:?} is not a variable name or a glob of one (letters, digits, `_`, `.`, `-`, `*`, `?`)"
    )]
    BadName(String),
}

/// Checks a `deny_env` / `keep_env` entry: a name, or a glob of names.
pub fn check_pattern(raw: &str) -> Result<String, EnvError> {
    if raw.is_empty() {
        return Err(EnvError::Empty);
    }
    let valid = raw
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '*' | '?' | '.' | '-'));
    if !valid {
        return Err(EnvError::BadName(raw.to_string()));
    }
    Ok(raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_checked() {
        assert!(check_pattern("AWS_*").is_ok());
        assert_eq!(check_pattern(""), Err(EnvError::Empty));
        assert!(check_pattern("A=B").is_err());
        assert!(check_pattern("[abc]").is_err());
    }
}
