//! Secret environment variables: which of the caller's variables the
//! command never sees.
//!
//! A variable is removed when its name matches a built-in secret pattern
//! ([`SECRET_PATTERNS`](crate::policy::env::SECRET_PATTERNS)) or a `deny_env` pattern, or when its value is
//! plainly a secret whatever the name ([`secret_value`]: a private key, a
//! URL with a password, a token of a well-known shape), unless `keep_env`
//! names it. With `clear_env`, every variable is removed except those
//! `keep_env` names. Names are matched case-insensitively, with `-`, `.`
//! and spaces read as `_` and a run of `_` as one (`openai.api.key` is
//! `OPENAI_API_KEY`). Values are only looked at, with prefix and byte-class
//! checks (no regex: this runs for every variable at every start), once as
//! they are and once decoded when percent-encoded or plausibly base64; they
//! are never reported: a removal names the variable and the shape its
//! value has.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Serialize;

use crate::policy::env::SECRET_PATTERNS;
use crate::policy::{EnvPolicy, Source};

fn glob_set<'a>(patterns: impl Iterator<Item = &'a str>) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        // Checked patterns contain no glob syntax that can fail.
        if let Ok(glob) = Glob::new(&p.to_ascii_uppercase()) {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

/// Why a variable is removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Removal {
    /// The variable's name (never its value).
    pub name: String,
    /// The pattern that matched, or `clear_env`.
    pub rule: String,
    /// Where that pattern comes from.
    pub source: Source,
}

/// `name` (upper case) with `-`, `.` and spaces as `_`, and each run of `_`
/// as one, so that `GITHUB-TOKEN`, `openai.api.key` and `API__KEY` meet
/// the patterns their `_` spellings do.
fn normalize_name(upper: &str) -> String {
    let mut out = String::with_capacity(upper.len());
    for c in upper.chars() {
        let c = if matches!(c, '-' | '.' | ' ') { '_' } else { c };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out
}

/// Whether `name` (upper case, normalised) matches a built-in pattern. These use `*`
/// only at their ends, so a prefix, suffix or substring test is exact,
/// and costs nothing at start-up, where compiling them as globs took
/// about 0.3 ms of every run.
fn builtin_match(pattern: &str, name: &str) -> bool {
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(rest), Some(_)) => name.contains(rest.trim_end_matches('*')),
        (Some(suffix), None) => name.ends_with(suffix),
        (None, Some(prefix)) => name.starts_with(prefix),
        (None, None) => name == pattern,
    }
}

/// The bytes a token is made of.
#[derive(Clone, Copy)]
enum Alphabet {
    /// `A-Z 0-9`.
    UpperAlnum,
    /// `A-Z a-z 0-9`.
    Alnum,
    /// `A-Z a-z 0-9 _`.
    Word,
    /// `A-Z a-z 0-9 _ -`.
    Dashed,
    /// `A-Z a-z 0-9 _ - .`.
    Dotted,
}

impl Alphabet {
    fn admits(self, b: u8) -> bool {
        match self {
            Alphabet::UpperAlnum => b.is_ascii_uppercase() || b.is_ascii_digit(),
            Alphabet::Alnum => b.is_ascii_alphanumeric(),
            Alphabet::Word => b.is_ascii_alphanumeric() || b == b'_',
            Alphabet::Dashed => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
            Alphabet::Dotted => b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'),
        }
    }
}

/// A credential format whose issuer gave it a fixed prefix.
struct TokenShape {
    /// What the removal names (the issuer and the prefix).
    what: &'static str,
    prefix: &'static str,
    /// Shortest and longest length of the part after the prefix.
    len: (usize, usize),
    alphabet: Alphabet,
}

const fn shape(
    what: &'static str,
    prefix: &'static str,
    len: (usize, usize),
    alphabet: Alphabet,
) -> TokenShape {
    TokenShape {
        what,
        prefix,
        len,
        alphabet,
    }
}

/// Token formats recognised in any variable's value. The lengths are the
/// issuers' (with some slack), so a short word such as `sk-1` is kept.
const TOKEN_SHAPES: &[TokenShape] = &[
    shape("a GitHub token (ghp_)", "ghp_", (30, 255), Alphabet::Alnum),
    shape("a GitHub token (gho_)", "gho_", (30, 255), Alphabet::Alnum),
    shape("a GitHub token (ghu_)", "ghu_", (30, 255), Alphabet::Alnum),
    shape("a GitHub token (ghs_)", "ghs_", (30, 255), Alphabet::Alnum),
    shape("a GitHub token (ghr_)", "ghr_", (30, 255), Alphabet::Alnum),
    shape(
        "a GitHub token (github_pat_)",
        "github_pat_",
        (40, 255),
        Alphabet::Word,
    ),
    shape(
        "an Anthropic key (sk-ant-)",
        "sk-ant-",
        (32, 255),
        Alphabet::Dashed,
    ),
    shape("an API key (sk-)", "sk-", (32, 255), Alphabet::Dashed),
    shape(
        "a Stripe key (sk_live_)",
        "sk_live_",
        (20, 255),
        Alphabet::Alnum,
    ),
    shape(
        "a Stripe key (sk_test_)",
        "sk_test_",
        (20, 255),
        Alphabet::Alnum,
    ),
    shape(
        "a Stripe key (rk_live_)",
        "rk_live_",
        (20, 255),
        Alphabet::Alnum,
    ),
    shape(
        "a Slack token (xoxb-)",
        "xoxb-",
        (20, 255),
        Alphabet::Dashed,
    ),
    shape(
        "a Slack token (xoxp-)",
        "xoxp-",
        (20, 255),
        Alphabet::Dashed,
    ),
    shape(
        "a Slack token (xoxa-)",
        "xoxa-",
        (20, 255),
        Alphabet::Dashed,
    ),
    shape(
        "a Slack token (xoxe-)",
        "xoxe-",
        (20, 255),
        Alphabet::Dashed,
    ),
    shape(
        "a Slack token (xapp-)",
        "xapp-",
        (20, 255),
        Alphabet::Dashed,
    ),
    shape(
        "an AWS access key id (AKIA)",
        "AKIA",
        (16, 16),
        Alphabet::UpperAlnum,
    ),
    shape(
        "an AWS access key id (ASIA)",
        "ASIA",
        (16, 16),
        Alphabet::UpperAlnum,
    ),
    shape(
        "a Google API key (AIza)",
        "AIza",
        (35, 35),
        Alphabet::Dashed,
    ),
    shape(
        "a GitLab token (glpat-)",
        "glpat-",
        (20, 255),
        Alphabet::Dashed,
    ),
    shape(
        "a GitLab runner token (glrt-)",
        "glrt-",
        (20, 255),
        Alphabet::Dashed,
    ),
    shape(
        "a GitLab deploy token (gldt-)",
        "gldt-",
        (20, 255),
        Alphabet::Dashed,
    ),
    shape("an npm token (npm_)", "npm_", (36, 255), Alphabet::Alnum),
    shape(
        "a PyPI token (pypi-)",
        "pypi-",
        (50, 1024),
        Alphabet::Dashed,
    ),
    shape(
        "a Hugging Face token (hf_)",
        "hf_",
        (30, 255),
        Alphabet::Alnum,
    ),
    shape(
        "a DigitalOcean token (dop_v1_)",
        "dop_v1_",
        (40, 255),
        Alphabet::Alnum,
    ),
    shape(
        "a Vault service token (hvs.)",
        "hvs.",
        (24, 512),
        Alphabet::Dashed,
    ),
    shape(
        "a Vault batch token (hvb.)",
        "hvb.",
        (24, 1024),
        Alphabet::Dashed,
    ),
    shape(
        "a Google OAuth access token (ya29.)",
        "ya29.",
        (20, 4096),
        Alphabet::Dotted,
    ),
    shape("a SendGrid key (SG.)", "SG.", (60, 80), Alphabet::Dotted),
    shape("a Groq key (gsk_)", "gsk_", (40, 255), Alphabet::Alnum),
    shape("an xAI key (xai-)", "xai-", (40, 255), Alphabet::Alnum),
    shape(
        "an age secret key (AGE-SECRET-KEY-1)",
        "AGE-SECRET-KEY-1",
        (50, 70),
        Alphabet::UpperAlnum,
    ),
];

/// Why `value` is plainly a secret whatever its variable is called, or
/// `None`: [`secret_shape`] on the value, then on it percent-decoded, then
/// on each of its words that is plausibly base64, decoded (once: a decoded
/// value is not decoded again).
pub fn secret_value(value: &[u8]) -> Option<&'static str> {
    if let Some(what) = secret_shape(value) {
        return Some(what);
    }
    if let Some(decoded) = percent_decoded(value) {
        if secret_shape(&decoded).is_some() {
            return Some("a percent-encoded secret");
        }
    }
    value
        .split(u8::is_ascii_whitespace)
        .filter_map(base64_decoded)
        .any(|decoded| secret_shape(&decoded).is_some())
        .then_some("a base64-encoded secret")
}

/// Looks for a PEM private key, a URL that carries a credential (a
/// password or a token as its user name, a webhook, a secret query
/// parameter), a JSON Web Token, and [`TOKEN_SHAPES`], each as a word of
/// the value (a run of `A-Z a-z 0-9 . _ -`), so one inside a header or a
/// list is found too.
fn secret_shape(value: &[u8]) -> Option<&'static str> {
    use memchr::memmem;
    if memmem::find(value, b"-----BEGIN ").is_some()
        && memmem::find(value, b"PRIVATE KEY").is_some()
    {
        return Some("a PEM private key");
    }
    if let Some(what) = memmem::find_iter(value, b"://").find_map(|at| url_userinfo(value, at)) {
        return Some(what);
    }
    if WEBHOOKS
        .iter()
        .any(|hook| memmem::find(value, hook.as_bytes()).is_some())
    {
        return Some("a webhook URL");
    }
    if has_secret_parameter(value) {
        return Some("a URL query parameter with a credential");
    }
    let in_word = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    value
        .split(|b| !in_word(b))
        .find_map(|word| token_shape(word))
}

/// Webhook URLs, each its own credential (whoever has it may post).
const WEBHOOKS: &[&str] = &[
    "hooks.slack.com/services/",
    "discord.com/api/webhooks/",
    "discordapp.com/api/webhooks/",
    "webhook.office.com/webhookb2/",
];

/// What the userinfo of the URL whose `://` is at `at` in `value` carries:
/// a non-empty password (`scheme://user:password@host`,
/// `redis://:password@host`; a password may hold `#` and `?`), or a user
/// name that is a token (`https://<token>@github.com`: 20 or more token
/// bytes, letters and digits both). `None` for neither.
fn url_userinfo(value: &[u8], at: usize) -> Option<&'static str> {
    if !value[..at].last().is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    let rest = &value[at + 3..];
    let end = rest
        .iter()
        .position(|b| matches!(b, b'/' | b',' | b';' | b'"' | b'\'') || b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    let at_sign = memchr::memrchr(b'@', authority)?;
    let userinfo = &authority[..at_sign];
    match memchr::memchr(b':', userinfo) {
        Some(colon) => (colon + 1 < userinfo.len()).then_some("a URL with a password in it"),
        None => {
            let token_byte = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
            let token = userinfo.len() >= 20
                && userinfo.iter().all(token_byte)
                && userinfo.iter().any(u8::is_ascii_digit)
                && userinfo.iter().any(u8::is_ascii_alphabetic);
            token.then_some("a URL with a token as its user name")
        }
    }
}

/// Query parameters whose value is a credential, lower case with `-` as
/// `_`; a name ending in `_token`, `_key`, `_secret`, `_signature` or
/// `_password` counts too.
const SECRET_PARAMETERS: &[&str] = &[
    "token",
    "key",
    "apikey",
    "sig",
    "signature",
    "secret",
    "password",
    "passwd",
    "auth",
];
const SECRET_PARAMETER_SUFFIXES: &[&str] =
    &["_token", "_key", "_secret", "_signature", "_password"];

/// Whether `value` has a `?name=` or `&name=` query parameter that names a
/// credential, with a value of 8 bytes or more (`?key=1` is a setting).
fn has_secret_parameter(value: &[u8]) -> bool {
    let starts = value
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b, b'?' | b'&'))
        .map(|(i, _)| i + 1);
    starts.into_iter().any(|start| {
        let rest = &value[start..];
        let Some(eq) = memchr::memchr(b'=', rest) else {
            return false;
        };
        let name: String = rest[..eq]
            .iter()
            .map(|b| {
                if *b == b'-' {
                    '_'
                } else {
                    b.to_ascii_lowercase() as char
                }
            })
            .collect();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return false;
        }
        let secret_name = SECRET_PARAMETERS.contains(&name.as_str())
            || SECRET_PARAMETER_SUFFIXES.iter().any(|s| name.ends_with(s));
        let param = &rest[eq + 1..];
        let len = param
            .iter()
            .position(|b| matches!(b, b'&' | b'#' | b'"' | b'\'') || b.is_ascii_whitespace())
            .unwrap_or(param.len());
        secret_name && len >= 8
    })
}

/// `value` with its `%XX` escapes decoded, or `None` when it has none.
fn percent_decoded(value: &[u8]) -> Option<Vec<u8>> {
    memchr::memchr(b'%', value)?;
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(value.len());
    let mut decoded = false;
    let mut i = 0;
    while i < value.len() {
        let escape = (value[i] == b'%')
            .then(|| Some((hex(*value.get(i + 1)?)?, hex(*value.get(i + 2)?)?)))
            .flatten();
        match escape {
            Some((high, low)) => {
                // Two hex digits make a byte.
                out.push((high * 16 + low) as u8);
                decoded = true;
                i += 3;
            }
            None => {
                out.push(value[i]);
                i += 1;
            }
        }
    }
    decoded.then_some(out)
}

/// Base64 as encoders write it: padded or not, standard or URL-safe.
const BASE64_CONFIG: base64::engine::GeneralPurposeConfig =
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
const BASE64_STANDARD: base64::engine::GeneralPurpose =
    base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, BASE64_CONFIG);
const BASE64_URL_SAFE: base64::engine::GeneralPurpose =
    base64::engine::GeneralPurpose::new(&base64::alphabet::URL_SAFE, BASE64_CONFIG);

/// `word` decoded, when it is plausibly base64 of a secret: 16 to 16384
/// bytes of one base64 alphabet (a secret encoded is at least that long,
/// and a longer value is not worth decoding at every start).
fn base64_decoded(word: &[u8]) -> Option<Vec<u8>> {
    use base64::Engine;
    if !(16..=16384).contains(&word.len()) {
        return None;
    }
    let body = word
        .strip_suffix(b"==")
        .or(word.strip_suffix(b"="))
        .unwrap_or(word);
    let url_safe = body.iter().any(|b| matches!(b, b'-' | b'_'));
    let standard = body.iter().any(|b| matches!(b, b'+' | b'/'));
    let fits = body
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'));
    if !fits || (url_safe && standard) {
        return None;
    }
    let engine = if url_safe {
        &BASE64_URL_SAFE
    } else {
        &BASE64_STANDARD
    };
    engine.decode(word).ok()
}

/// Which token format `word` has, if any.
fn token_shape(word: &[u8]) -> Option<&'static str> {
    if word.starts_with(b"eyJ") && is_jwt(word) {
        return Some("a JSON Web Token (eyJ...)");
    }
    // A token ending a sentence keeps its format.
    let word = word.strip_suffix(b".").unwrap_or(word);
    TOKEN_SHAPES.iter().find_map(|t| {
        let rest = word.strip_prefix(t.prefix.as_bytes())?;
        let fits = (t.len.0..=t.len.1).contains(&rest.len())
            && rest.iter().all(|b| t.alphabet.admits(*b))
            // Issued tokens are random: letters and digits both.
            && rest.iter().any(u8::is_ascii_digit)
            && rest.iter().any(u8::is_ascii_alphabetic);
        fits.then_some(t.what)
    })
}

/// A JWT: three base64url parts joined by `.`, the header (`eyJ`, which is
/// `{"` encoded) and the payload long enough to hold a claim.
fn is_jwt(word: &[u8]) -> bool {
    let mut parts = word.split(|b| *b == b'.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let base64url = |p: &[u8]| p.iter().all(|b| Alphabet::Dashed.admits(*b));
    header.len() >= 10
        && payload.len() >= 10
        && base64url(header)
        && base64url(payload)
        && base64url(signature)
}

/// The compiled environment policy.
pub struct EnvFilter {
    denied: GlobSet,
    kept: GlobSet,
    policy: EnvPolicy,
}

impl EnvFilter {
    /// Compiles the policy's patterns.
    pub fn new(policy: &EnvPolicy) -> EnvFilter {
        EnvFilter {
            denied: glob_set(policy.deny.iter().map(|p| p.value.as_str())),
            kept: glob_set(policy.keep.iter().map(|p| p.value.as_str())),
            policy: policy.clone(),
        }
    }

    /// Why the variable `name=value` is removed, or `None` if the command
    /// keeps it.
    pub fn removal(&self, name: &OsStr, value: &OsStr) -> Option<Removal> {
        let upper = name.to_string_lossy().to_ascii_uppercase();
        let normal = normalize_name(&upper);
        let shown = name.to_string_lossy().into_owned();
        if self.kept.is_match(&upper) {
            return None;
        }
        if self.policy.clear.value {
            return Some(Removal {
                name: shown,
                rule: "clear_env".into(),
                source: self.policy.clear.source.clone(),
            });
        }
        let denied = self.denied.matches(&upper);
        let denied = if denied.is_empty() {
            self.denied.matches(&normal)
        } else {
            denied
        };
        if let Some(&i) = denied.first() {
            let rule = &self.policy.deny[i];
            return Some(Removal {
                name: shown,
                rule: rule.value.clone(),
                source: rule.source.clone(),
            });
        }
        let rule = match SECRET_PATTERNS.iter().find(|p| builtin_match(p, &normal)) {
            Some(pattern) => pattern.to_string(),
            None => format!("value: {}", secret_value(value.as_bytes())?),
        };
        Some(Removal {
            name: shown,
            rule,
            source: Source::Builtin,
        })
    }

    /// Splits `vars` into what the command keeps and what is removed.
    pub fn apply(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> (Vec<(OsString, OsString)>, Vec<Removal>) {
        let mut kept = Vec::new();
        let mut removed = Vec::new();
        for (name, value) in vars {
            match self.removal(&name, &value) {
                Some(r) => removed.push(r),
                None => kept.push((name, value)),
            }
        }
        (kept, removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Sourced;

    fn filter(deny: &[&str], keep: &[&str], clear: bool) -> EnvFilter {
        let flag = |f: &str| Source::Flag(f.into());
        EnvFilter::new(&EnvPolicy {
            deny: deny
                .iter()
                .map(|d| Sourced::new(d.to_string(), flag("--deny-env")))
                .collect(),
            keep: keep
                .iter()
                .map(|k| Sourced::new(k.to_string(), flag("--keep-env")))
                .collect(),
            clear: Sourced::new(
                clear,
                if clear {
                    flag("--clear-env")
                } else {
                    Source::Builtin
                },
            ),
        })
    }

    fn removed(f: &EnvFilter, name: &str) -> Option<String> {
        f.removal(OsStr::new(name), OsStr::new("plain"))
            .map(|r| r.rule)
    }

    #[test]
    fn secret_looking_names_are_removed_by_default() {
        let f = filter(&[], &[], false);
        for name in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "NPM_TOKEN",
            "MY_SERVICE_TOKEN",
            "DB_PASSWORD",
            "client_secret",
            "STRIPE_API_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SSH_AUTH_SOCK",
            "DATABASE_URL",
            "VAULT_TOKEN",
        ] {
            assert!(removed(&f, name).is_some(), "{name} kept");
        }
        for name in [
            "PATH",
            "HOME",
            "TERM",
            "LANG",
            "EDITOR",
            "TOKENIZERS_PARALLELISM",
            "KEYMAP",
        ] {
            assert_eq!(removed(&f, name), None, "{name} removed");
        }
    }

    #[test]
    fn names_from_the_review_are_removed() {
        let f = filter(&[], &[], false);
        for name in [
            "MYSQL_PWD",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "DISCORD_WEBHOOK",
            "JWT_SIGNING_KEY",
            "COOKIE_SIGNING_KEY",
            "APP_ENCRYPTION_KEY",
            "ENCRYPTION_KEY",
            "CI_JOB_JWT",
            "CI_JOB_JWT_V2",
            "DOCKER_AUTH_CONFIG",
            "npm_config__authToken",
            "npm_config_//registry.npmjs.org/:_authToken",
            "NGROK_AUTHTOKEN",
            "CREDENTIALS",
            "COOKIE",
            "AUTH",
            "AZURE_STORAGE_CONNECTION_STRING",
            "OP_SESSION_my",
            "BW_SESSION",
            "GPG_PASSPHRASE",
        ] {
            assert!(removed(&f, name).is_some(), "{name} kept");
        }
        for name in [
            "PWD",
            "OLDPWD",
            "XAUTHORITY",
            "AUTHOR",
            "REDIS_URL",
            "JWT_ALGORITHM",
        ] {
            assert_eq!(removed(&f, name), None, "{name} removed");
        }
    }

    fn by_value(f: &EnvFilter, name: &str, value: &str) -> Option<String> {
        f.removal(OsStr::new(name), OsStr::new(value))
            .map(|r| r.rule)
    }

    #[test]
    fn plainly_secret_values_are_removed_whatever_the_name() {
        let f = filter(&[], &[], false);
        let gh = format!("ghp_{}", "a1B2".repeat(9));
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----";
        let cases: Vec<(String, &str)> = vec![
            (
                "redis://:hunter2@cache:6379/0".into(),
                "a URL with a password in it",
            ),
            (
                "postgres://app:s3cret@db/app".into(),
                "a URL with a password in it",
            ),
            (
                "https://u:p@proxy.corp:8080 http://other".into(),
                "a URL with a password in it",
            ),
            (gh.clone(), "a GitHub token (ghp_)"),
            (
                format!("Authorization: token {gh}"),
                "a GitHub token (ghp_)",
            ),
            (format!("gho_{}", "Zz9".repeat(12)), "a GitHub token (gho_)"),
            (format!("ghs_{}", "Zz9".repeat(12)), "a GitHub token (ghs_)"),
            (
                format!("github_pat_11AAAA_{}", "b7".repeat(30)),
                "a GitHub token (github_pat_)",
            ),
            (
                format!("sk-ant-api03-{}", "Q9x_".repeat(20)),
                "an Anthropic key (sk-ant-)",
            ),
            (
                format!("sk-proj-{}", "T3Blbk9".repeat(8)),
                "an API key (sk-)",
            ),
            (
                "xoxb-123456789012-1234567890123-AbCdEfGh".into(),
                "a Slack token (xoxb-)",
            ),
            (
                "xapp-1-A0123456789-1234567890-abcdef".into(),
                "a Slack token (xapp-)",
            ),
            ("AKIAIOSFODNN7EXAMPLE".into(), "an AWS access key id (AKIA)"),
            ("ASIAY34FZKBOKMUTVV7A".into(), "an AWS access key id (ASIA)"),
            (
                "glpat-xX1yY2zZ3wW4vV5uU6tT".into(),
                "a GitLab token (glpat-)",
            ),
            (format!("npm_{}", "aB3".repeat(12)), "an npm token (npm_)"),
            (
                format!("pypi-AgEIcHlwaS5vcmc{}", "x1Y_".repeat(12)),
                "a PyPI token (pypi-)",
            ),
            (
                format!("hf_{}", "kL8".repeat(11)),
                "a Hugging Face token (hf_)",
            ),
            (
                format!("dop_v1_{}", "0a".repeat(32)),
                "a DigitalOcean token (dop_v1_)",
            ),
            (jwt.into(), "a JSON Web Token (eyJ...)"),
            (pem.into(), "a PEM private key"),
        ];
        for (value, what) in &cases {
            assert_eq!(
                by_value(&f, "INNOCENT_NAME", value),
                Some(format!("value: {what}")),
                "{value}"
            );
        }
        // Ordinary values stay, and so do short words that share a prefix.
        for value in [
            "/usr/local/bin:/usr/bin:/bin",
            "/home/u",
            "en_US.UTF-8",
            "xterm-256color",
            "https://example.com/path?q=1",
            "http://localhost:8080",
            "ssh://git@github.com:22/org/repo.git",
            "https://user@example.com/",
            "postgres://app:@db/app",
            "sk-",
            "sk-1",
            "sk-learn",
            "/opt/venv/lib/python3.11/site-packages/sk-learn-0.24.2-py3.9-linux-x86_64.egg",
            "ghp_short",
            "npm_config_cache_directory_for_the_whole_machine",
            "AKIA",
            "AKIAIOSFODNN7EXAMPLEX",
            "eyJ",
            "1.2.3",
            "some-package-name-with-many-dashes-and-words",
        ] {
            assert_eq!(by_value(&f, "INNOCENT_NAME", value), None, "{value}");
        }
        // --keep-env still keeps one.
        let keep = filter(&[], &["INNOCENT_NAME"], false);
        assert_eq!(by_value(&keep, "INNOCENT_NAME", &gh), None);
    }

    /// Names the red team's canaries passed the scrub with.
    const RED_TEAM_NAMES: &[&str] = &[
        "OPENAI_KEY",
        "AZURE_OPENAI_KEY",
        "AZURE_STORAGE_KEY",
        "RAILS_MASTER_KEY",
        "SOPS_AGE_KEY",
        "B2_APPLICATION_KEY",
        "KAGGLE_KEY",
        "ALGOLIA_ADMIN_KEY",
        "FERNET_KEY",
        "APP_KEY",
        "JWT_KEY",
        "MASTER_KEY",
        "PRIVATE_KEY",
        "ACCESS_KEY",
        "KEY",
        "DB_PASS",
        "SMTP_PASS",
        "PASS",
        "PW",
        "TOKEN",
        "APITOKEN",
        "GITHUBTOKEN",
        "AWS_CREDS",
        "GCP_CREDENTIALS_JSON",
        "GCP_SA_KEY",
        "AUTHORIZATION",
        "HTTP_AUTHORIZATION",
        "BEARER",
        "COOKIES",
        "SESSION_ID",
        "GITHUB-TOKEN",
        "OPENAI-API-KEY",
        "openai.api.key",
        "API__KEY",
        "my service token",
    ];

    /// Ordinary names that must stay.
    const ORDINARY_NAMES: &[&str] = &[
        "PATH",
        "HOME",
        "LANG",
        "TERM",
        "EDITOR",
        "SHELL",
        "KEYMAP",
        "XKB_DEFAULT_LAYOUT",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_RUNTIME_DIR",
        "XDG_SESSION_ID",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "PASSIVE_MODE",
        "TOKENIZERS_PARALLELISM",
        "COOKIECUTTER_CONFIG",
        "KEYBOARD",
        "PWD",
    ];

    #[test]
    fn names_from_the_red_team_are_removed_and_ordinary_ones_stay() {
        let f = filter(&[], &[], false);
        for name in RED_TEAM_NAMES {
            assert!(removed(&f, name).is_some(), "{name} kept");
        }
        for name in ORDINARY_NAMES {
            assert_eq!(removed(&f, name), None, "{name} removed");
        }
        assert_eq!(normalize_name("API__KEY"), "API_KEY");
        assert_eq!(normalize_name("OPENAI.API-KEY"), "OPENAI_API_KEY");
    }

    #[test]
    fn values_from_the_red_team_are_removed() {
        use base64::Engine;
        let f = filter(&[], &[], false);
        let gh = format!("ghp_{}", "c4N4ry".repeat(6));
        let hex40 = "0123456789abcdef0123456789abcdef01234567";
        let cases: Vec<(String, &str)> = vec![
            (
                "https://api.example.com/v1/data?token=c4n4ry0123456789".into(),
                "a URL query parameter with a credential",
            ),
            (
                "https://example.com/cb?x=1&access_token=c4n4ry0123456789".into(),
                "a URL query parameter with a credential",
            ),
            (
                "https://example.com/?api_key=c4n4ry0123456789".into(),
                "a URL query parameter with a credential",
            ),
            (
                "https://maps.example.com/api?key=c4n4ry0123456789".into(),
                "a URL query parameter with a credential",
            ),
            (
                "https://acct.blob.example.net/c/b?sv=2022&sig=c4n4ry%2B0123456789".into(),
                "a URL query parameter with a credential",
            ),
            (
                format!("https://{hex40}@github.com/org/repo.git"),
                "a URL with a token as its user name",
            ),
            (
                "https://hooks.slack.com/services/T000/B000/c4n4ry".into(),
                "a webhook URL",
            ),
            (
                "https://discord.com/api/webhooks/123/c4n4ry".into(),
                "a webhook URL",
            ),
            (
                "https://user:pa#ss?w0rd@db.example.com/".into(),
                "a URL with a password in it",
            ),
            (
                format!("hvs.{}", "CAESIc4n4ry9".repeat(8)),
                "a Vault service token (hvs.)",
            ),
            (
                format!("ya29.a0Af{}", "c4n4ry-_9".repeat(10)),
                "a Google OAuth access token (ya29.)",
            ),
            (
                format!(
                    "SG.{}.{}",
                    "c4n4ry0123456789abcdef", "c4n4ry0123456789abcdefABCDEF0123456789abcde"
                ),
                "a SendGrid key (SG.)",
            ),
            (format!("gsk_{}", "c4N4ry".repeat(9)), "a Groq key (gsk_)"),
            (format!("xai-{}", "c4N4ry".repeat(14)), "an xAI key (xai-)"),
            (
                format!("AGE-SECRET-KEY-1{}", "QC4N4RY9".repeat(7) + "QQ"),
                "an age secret key (AGE-SECRET-KEY-1)",
            ),
            (gh.replace('_', "%5F"), "a percent-encoded secret"),
            (
                base64::engine::general_purpose::STANDARD.encode(&gh),
                "a base64-encoded secret",
            ),
            (
                base64::engine::general_purpose::STANDARD_NO_PAD
                    .encode("postgres://app:c4n4ry@db/app"),
                "a base64-encoded secret",
            ),
        ];
        for (value, what) in &cases {
            assert_eq!(
                by_value(&f, "INNOCENT_NAME", value),
                Some(format!("value: {what}")),
                "{value}"
            );
        }
        for value in ORDINARY_VALUES {
            assert_eq!(by_value(&f, "INNOCENT_NAME", value), None, "{value}");
        }
    }

    /// Values that must stay, whatever the variable's name.
    const ORDINARY_VALUES: &[&str] = &[
        "/usr/local/bin:/usr/bin:/bin",
        "/home/someuser/projects/thing",
        "/home/someuser/.local/share",
        "en_US.UTF-8",
        "xterm-256color",
        "/bin/bash",
        "vim",
        "de-latin1",
        "https://example.com/search?q=hello&page=2",
        "https://example.com/?key=1",
        "https://git@github.com/org/repo.git",
        "https://john.doe@example.com/",
        "https://example.com/page#section:1@x",
        "ssh://git@github.com:22/org/repo.git",
        "dGhpcyBpcyBqdXN0IHRleHQ=",
        "SGVsbG8gd29ybGQsIGhlbGxvIHdvcmxk",
        "100%25 done",
        "ThisIsALongCamelCaseWordNoDigits",
        "0123456789",
        "yes",
    ];

    #[test]
    fn deny_adds_keep_wins_and_clear_keeps_only_the_kept() {
        let f = filter(&["CORP_*"], &["GITHUB_TOKEN"], false);
        assert_eq!(removed(&f, "CORP_PROXY_URL").as_deref(), Some("CORP_*"));
        assert_eq!(removed(&f, "GITHUB_TOKEN"), None);
        assert_eq!(removed(&f, "NPM_TOKEN").as_deref(), Some("*TOKEN"));
        // A deny pattern meets other spellings of the name too.
        assert_eq!(removed(&f, "corp-proxy-url").as_deref(), Some("CORP_*"));

        let f = filter(&[], &["PATH", "LC_*"], true);
        assert_eq!(removed(&f, "PATH"), None);
        assert_eq!(removed(&f, "LC_ALL"), None);
        assert_eq!(removed(&f, "HOME").as_deref(), Some("clear_env"));
    }

    #[test]
    fn builtin_patterns_have_stars_only_at_their_ends() {
        for p in SECRET_PATTERNS {
            let inner = p.trim_start_matches('*').trim_end_matches('*');
            assert!(!inner.contains(['*', '?', '[']), "{p}");
            // The simple matcher agrees with a glob on a few names.
            let glob = Glob::new(p).unwrap().compile_matcher();
            for name in [
                "GITHUB_TOKEN",
                "MY_TOKEN_FILE",
                "A_SECRET_B",
                "PATH",
                "X_API_KEY",
                "AWS_ACCESS_KEY_ID",
            ] {
                assert_eq!(builtin_match(p, name), glob.is_match(name), "{p} {name}");
            }
        }
    }

    #[test]
    fn values_never_appear_in_a_removal() {
        let f = filter(&[], &[], false);
        let (kept, removed) = f.apply([
            (OsString::from("GITHUB_TOKEN"), OsString::from("ghp_canary")),
            (
                OsString::from("NOTE"),
                OsString::from("postgres://app:canary@db/app"),
            ),
            (OsString::from("PATH"), OsString::from("/bin")),
        ]);
        assert_eq!(kept.len(), 1);
        assert_eq!(removed.len(), 2);
        assert!(!format!("{removed:?}").contains("canary"));
    }
}
