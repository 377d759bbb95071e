//! Secret environment variables: which of the caller's variables the
//! command never sees.
//!
//! A variable is removed when its name matches a built-in secret pattern
//! ([`SECRET_PATTERNS`](crate::policy::env::SECRET_PATTERNS)) or a `deny_env` pattern, or when its value is
//! plainly a secret whatever the name ([`secret_value`]: a private key, a
//! URL with a password, a token of a well-known shape), unless `keep_env`
//! names it. With `clear_env`, every variable is removed except those
//! `keep_env` names, and those `pass_env` names that are not secret as
//! above. Names are matched case-insensitively, with `-`, `.`
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

/// Makes `policy` unset each of `names` whatever else it says: a deny
/// entry from `source` each, and no `keep_env` pattern that would keep
/// one (keep beats deny). For variables that must not reach the command
/// at all, such as an injected secret's when nothing is injected.
pub fn withhold(policy: &mut EnvPolicy, names: &[String], source: &Source) {
    let upper: Vec<String> = names.iter().map(|n| n.to_ascii_uppercase()).collect();
    policy.keep.retain(|k| {
        let kept = glob_set(std::iter::once(k.value.as_str()));
        !upper.iter().any(|n| kept.is_match(n))
    });
    policy.deny.extend(
        names
            .iter()
            .map(|n| crate::policy::Sourced::new(n.clone(), source.clone())),
    );
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
    passed: GlobSet,
    policy: EnvPolicy,
}

impl EnvFilter {
    /// Compiles the policy's patterns.
    pub fn new(policy: &EnvPolicy) -> EnvFilter {
        EnvFilter {
            denied: glob_set(policy.deny.iter().map(|p| p.value.as_str())),
            kept: glob_set(policy.keep.iter().map(|p| p.value.as_str())),
            passed: glob_set(policy.pass.iter().map(|p| p.value.as_str())),
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
        if self.policy.clear.value && !self.passed.is_match(&upper) {
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
#[path = "env_tests.rs"]
mod tests;
