//! Injected credentials: the real values, resolved outside the sandbox at
//! start, the placeholders the sandbox sees instead, and the byte-level
//! swaps between them (request: placeholder → real value; response: real
//! value → placeholder).
//!
//! Real values live in [`Zeroizing`] buffers, so they are wiped when
//! dropped; they never go into an error, an audit event or a `Debug` line.

use std::io::Read;
use std::process::{Command, Stdio};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use memchr::memmem;
use zeroize::Zeroizing;

use crate::policy::host::Target;
use crate::policy::inspection::{HostMatch, InjectSpec, SecretSource};
use crate::policy::Sourced;

/// Every placeholder starts with this; scanning for it is cheap.
pub const PLACEHOLDER_PREFIX: &str = "cordon-placeholder-";

/// Why a secret could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// The variable is not set in cordon's environment.
    #[error("[[credentials.inject]] {name} ({from}): the variable is not set in cordon's environment (or is empty)")]
    NotSet {
        /// The variable.
        name: String,
        /// Where the entry came from.
        from: String,
    },
    /// The file could not be read.
    #[error("[[credentials.inject]] {name} ({from}): cannot read {path}: {error}")]
    File {
        /// The variable.
        name: String,
        /// Where the entry came from.
        from: String,
        /// The file.
        path: String,
        /// What went wrong.
        error: std::io::Error,
    },
    /// The command failed.
    #[error("[[credentials.inject]] {name} ({from}): the command {command} {why}")]
    Command {
        /// The variable.
        name: String,
        /// Where the entry came from.
        from: String,
        /// The command, as written.
        command: String,
        /// What went wrong.
        why: String,
    },
    /// The value is empty or holds bytes that cannot go into a header.
    #[error("[[credentials.inject]] {name} ({from}): the value is empty or holds control characters (CR, LF, NUL, ...), which cannot be sent in a header")]
    BadValue {
        /// The variable.
        name: String,
        /// Where the entry came from.
        from: String,
    },
    /// No randomness for the placeholders.
    #[error("cannot read /dev/urandom for the placeholders: {0}")]
    Random(std::io::Error),
}

/// A placeholder: the prefix and 32 random hex digits.
pub fn new_placeholder() -> Result<String, InjectError> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(InjectError::Random)?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{PLACEHOLDER_PREFIX}{hex}"))
}

/// One injected secret.
pub struct Secret {
    /// The variable that holds the placeholder inside.
    pub name: String,
    /// What the sandbox sees.
    pub placeholder: String,
    /// The real value; wiped on drop.
    value: Zeroizing<Vec<u8>>,
    /// Where the real value may go.
    pub hosts: Vec<HostMatch>,
    /// Where the inject entry came from (for audit events).
    pub source: String,
    /// The request headers it is swapped in (lower case); none: anywhere.
    /// With some, its placeholder anywhere else is refused.
    pub headers: Vec<String>,
    /// The real value as servers commonly re-encode it, each with what
    /// masks it ([`encoded_forms`]).
    forms: Vec<Pair>,
    /// The real value however it is escaped or wrapped, each with what
    /// masks it ([`value_matchers`]).
    matchers: Vec<Matcher>,
}

impl std::fmt::Debug for Secret {
    /// Never the value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("placeholder", &self.placeholder)
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

impl Secret {
    /// A secret with a known value (tests, and [`Secrets::resolve`]).
    pub fn new(name: &str, placeholder: &str, value: Vec<u8>, hosts: Vec<HostMatch>) -> Secret {
        Secret::with_source(
            name,
            placeholder,
            Zeroizing::new(value),
            hosts,
            String::new(),
        )
    }

    fn with_source(
        name: &str,
        placeholder: &str,
        value: Zeroizing<Vec<u8>>,
        hosts: Vec<HostMatch>,
        source: String,
    ) -> Secret {
        Secret {
            name: name.to_string(),
            placeholder: placeholder.to_string(),
            forms: encoded_forms(&value, placeholder.as_bytes()),
            matchers: value_matchers(&value, placeholder.as_bytes()),
            value,
            hosts,
            source,
            headers: Vec::new(),
        }
    }

    /// Whether the real value may go to `target` on `port`.
    pub fn allowed_for(&self, target: &Target, port: u16) -> bool {
        self.hosts.iter().any(|h| h.matches(target, port))
    }

    /// Whether the real value may go to `target` on `port` in a request's
    /// target, body or trailers, or a WebSocket's frames (it is not kept
    /// to named headers).
    pub fn allowed_in_body(&self, target: &Target, port: u16) -> bool {
        self.headers.is_empty() && self.allowed_for(target, port)
    }

    /// Whether the real value may go to `target` on `port` in the request
    /// header `name` (lower case, as `http` keeps names).
    pub fn allowed_in_header(&self, name: &str, target: &Target, port: u16) -> bool {
        (self.headers.is_empty() || self.headers.iter().any(|h| h == name))
            && self.allowed_for(target, port)
    }
}

/// Every injected secret of the sandbox.
#[derive(Debug, Default)]
pub struct Secrets {
    list: Vec<Secret>,
}

/// Reads one secret's real value.
fn read_value(spec: &InjectSpec, source: &str) -> Result<Zeroizing<Vec<u8>>, InjectError> {
    let name = || spec.env.clone();
    let src = || source.to_string();
    let mut value = match &spec.source {
        SecretSource::Env => {
            let v = std::env::var_os(&spec.env).ok_or_else(|| InjectError::NotSet {
                name: name(),
                from: src(),
            })?;
            Zeroizing::new(std::os::unix::ffi::OsStringExt::into_vec(v))
        }
        SecretSource::File(path) => {
            Zeroizing::new(std::fs::read(path).map_err(|error| InjectError::File {
                name: name(),
                from: src(),
                path: path.display().to_string(),
                error,
            })?)
        }
        SecretSource::Command(argv) => {
            let fail = |why: String| InjectError::Command {
                name: name(),
                from: src(),
                command: format!("{argv:?}"),
                why,
            };
            let (program, args) = argv.split_first().ok_or_else(|| fail("is empty".into()))?;
            let out = Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output()
                .map_err(|e| fail(format!("could not start: {e}")))?;
            let stdout = Zeroizing::new(out.stdout);
            if !out.status.success() {
                return Err(fail(format!("failed ({})", out.status)));
            }
            Zeroizing::new(stdout.to_vec())
        }
    };
    while value.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        value.pop();
    }
    if value.is_empty() || value.iter().any(|b| *b < 0x20 || *b == 0x7f) {
        return Err(match spec.source {
            SecretSource::Env if value.is_empty() => InjectError::NotSet {
                name: name(),
                from: src(),
            },
            _ => InjectError::BadValue {
                name: name(),
                from: src(),
            },
        });
    }
    Ok(value)
}

impl Secrets {
    /// Reads every secret's real value (outside the sandbox), pairing each
    /// with the placeholder already given to the command.
    pub fn resolve(
        specs: &[Sourced<InjectSpec>],
        placeholders: &[(String, String)],
    ) -> Result<Secrets, InjectError> {
        let mut list = Vec::with_capacity(specs.len());
        for spec in specs {
            let source = spec.source.to_string();
            let value = read_value(&spec.value, &source)?;
            let placeholder = placeholders
                .iter()
                .find(|(n, _)| *n == spec.value.env)
                .map(|(_, p)| p.clone())
                .map_or_else(new_placeholder, Ok)?;
            let mut secret = Secret::with_source(
                &spec.value.env,
                &placeholder,
                value,
                spec.value.hosts.clone(),
                source,
            );
            secret.headers = spec.value.headers.clone();
            list.push(secret);
        }
        Ok(Secrets { list })
    }

    /// Secrets from a list (tests).
    pub fn from_list(list: Vec<Secret>) -> Secrets {
        Secrets { list }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Every secret.
    pub fn iter(&self) -> impl Iterator<Item = &Secret> {
        self.list.iter()
    }

    /// Whether any secret's real value may go to this host.
    pub fn targets(&self, target: &Target, port: u16) -> bool {
        self.list.iter().any(|s| s.allowed_for(target, port))
    }

    /// A scan for the placeholders of every secret (an opaque tunnel may
    /// carry none of them).
    pub fn scan_all(&self) -> PlaceholderScan {
        PlaceholderScan::of(self.list.iter())
    }

    /// A scan for the placeholders of every secret in what a server may
    /// decode (plain HTTP carries none of them, however spelled).
    pub fn scan_spelled(&self) -> SpelledScan {
        SpelledScan::of(self.list.iter())
    }

    /// A scan for the placeholders whose real values may not go to
    /// `target:port`, however spelled (an inspected request to it may
    /// carry none of them).
    pub fn scan_spelled_for(&self, target: &Target, port: u16) -> SpelledScan {
        SpelledScan::of(self.list.iter().filter(|s| !s.allowed_for(target, port)))
    }

    /// [`Secrets::scan_spelled_for`] for what is not a request's headers
    /// (its target, body and trailers, WebSocket frames), and for its
    /// headers once swapped: also the placeholders kept to named headers.
    pub fn scan_spelled_for_body(&self, target: &Target, port: u16) -> SpelledScan {
        SpelledScan::of(
            self.list
                .iter()
                .filter(|s| !s.allowed_in_body(target, port)),
        )
    }

    /// The first secret whose placeholder appears in `bytes`.
    pub fn find_placeholder(&self, bytes: &[u8]) -> Option<&Secret> {
        memmem::find(bytes, PLACEHOLDER_PREFIX.as_bytes())?;
        self.list
            .iter()
            .find(|s| memmem::find(bytes, s.placeholder.as_bytes()).is_some())
    }

    /// The swaps for the header `name` of a request to `target:port`:
    /// placeholder → real value for the secrets allowed there, in that
    /// header. (The others' placeholders must not be there at all:
    /// [`Secrets::scan_spelled_for`] finds them first.)
    pub fn header_swaps(&self, name: &str, target: &Target, port: u16) -> Swaps {
        self.swaps_where(|s| s.allowed_in_header(name, target, port))
    }

    /// [`Secrets::header_swaps`] for what is not a request's headers (its
    /// target, body and trailers): the secrets not kept to named headers.
    pub fn body_swaps(&self, target: &Target, port: u16) -> Swaps {
        self.swaps_where(|s| s.allowed_in_body(target, port))
    }

    /// Placeholder → real value for the secrets `allowed` admits.
    fn swaps_where(&self, allowed: impl Fn(&Secret) -> bool) -> Swaps {
        let mut swaps = Swaps::default();
        for s in self.list.iter().filter(|s| allowed(s)) {
            swaps.pairs.push(Pair {
                from: s.placeholder.as_bytes().to_vec().into(),
                to: s.value.clone(),
            });
        }
        swaps
    }

    /// The swaps for a response: every real value, as it is or escaped,
    /// → its placeholder, and every encoded form of it → its mask
    /// ([`encoded_forms`], [`value_matchers`]).
    pub fn response_swaps(&self) -> Swaps {
        let mut swaps = Swaps::default();
        for s in &self.list {
            swaps.pairs.extend(s.forms.iter().cloned());
            swaps.matchers.extend(s.matchers.iter().cloned());
        }
        swaps
    }
}

/// An encoded form shorter than this is not masked: it would match
/// ordinary text too often (a secret that short is not one).
const MIN_FORM: usize = 8;

/// What masks a form that cannot be replaced by the placeholder's own
/// encoding (a base64 run the value shares with its neighbours): letters
/// only, valid in base64, hex-free text, JSON strings, URLs and headers.
const MASK: &[u8] = b"cordonmasked";

/// `len` bytes of [`MASK`], repeated.
fn mask(len: usize) -> Vec<u8> {
    MASK.iter().copied().cycle().take(len).collect()
}

/// The forms a server commonly turns an echoed or stored value into that
/// stand alone, each paired with the same form of the placeholder: hex,
/// lower and upper case, and the bytes reversed. Forms equal to the value
/// itself, or shorter than [`MIN_FORM`], are left out. (Escaped and base64
/// forms are found by [`value_matchers`].)
pub fn encoded_forms(value: &[u8], placeholder: &[u8]) -> Vec<Pair> {
    // Every buffer that holds (part of) the value is wiped when dropped,
    // and sized up front so no reallocation leaves a copy behind.
    let mut forms: Vec<Pair> = Vec::new();
    let mut add = |from, to| forms.push(Pair { from, to });
    for case in [HexCase::Lower, HexCase::Upper] {
        add(hex(value, case), hex(placeholder, case));
    }
    let reversed = |v: &[u8]| Zeroizing::new(v.iter().rev().copied().collect::<Vec<u8>>());
    add(reversed(value), reversed(placeholder));
    let mut out: Vec<Pair> = Vec::new();
    for form in forms {
        let known = form.from.as_slice() == value || out.iter().any(|p| p.from == form.from);
        if form.from.len() >= MIN_FORM && !known {
            out.push(form);
        }
    }
    out
}

/// The matchers that find the value however a server escapes it, and
/// however it wraps the value's base64:
///
/// - the value with each byte as itself or escaped ([`Spelling::Escaped`]),
///   masked to the placeholder: covers percent-encoding of any subset of
///   the bytes (`quote()`, `encodeURI`, `encodeURIComponent`, forms), JSON
///   escapes (`\u0026`, `\/`), HTML character references and
///   quoted-printable, mixed as an encoder mixes them;
/// - base64, standard and URL-safe alphabets, in each of the 3 alignments
///   the value can have in the encoded data: the characters that depend on
///   the value's bits alone (padding only ever follows these, so padded
///   and unpadded data match alike), with line breaks anywhere between them
///   (MIME's 76 and PEM's 64 columns, LF or CRLF), masked with letters
///   (the first and last characters mix the value with its neighbours).
///   Runs shorter than [`MIN_FORM`] are left out.
fn value_matchers(value: &[u8], placeholder: &[u8]) -> Vec<Matcher> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let mut out = vec![Matcher::new(
        Zeroizing::new(value.to_vec()),
        Spelling::Escaped,
        Some(Zeroizing::new(placeholder.to_vec())),
    )];
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for shift in 0..3usize {
            // `shift` bytes before the value move its bits by 8 * shift;
            // character i covers bits 6i..6i+6.
            let mut data = Zeroizing::new(Vec::with_capacity(shift + value.len()));
            data.resize(shift, 0);
            data.extend_from_slice(value);
            let mut encoded = Zeroizing::new(vec![0u8; (shift + value.len()).div_ceil(3) * 4]);
            let Ok(written) = engine.encode_slice(data.as_slice(), encoded.as_mut_slice()) else {
                continue; // cannot happen: the buffer fits any encoding
            };
            let first = (8 * shift).div_ceil(6);
            let end = ((8 * (shift + value.len())) / 6).min(written);
            if end >= first + MIN_FORM {
                let run = Zeroizing::new(encoded[first..end].to_vec());
                if !out.iter().any(|m| m.want == run) {
                    out.push(Matcher::new(run, Spelling::Wrapped, None));
                }
            }
        }
    }
    out
}

/// Which digits hex output uses above 9.
#[derive(Clone, Copy)]
enum HexCase {
    Lower,
    Upper,
}

impl HexCase {
    /// Appends the two hex digits of `b`.
    fn push(self, out: &mut Vec<u8>, b: u8) {
        let digits = match self {
            HexCase::Lower => b"0123456789abcdef",
            HexCase::Upper => b"0123456789ABCDEF",
        };
        out.push(digits[usize::from(b >> 4)]);
        out.push(digits[usize::from(b & 0xf)]);
    }
}

/// `v` in hex.
fn hex(v: &[u8], case: HexCase) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(v.len() * 2));
    for &b in v {
        case.push(&mut out, b);
    }
    out
}

/// How the bytes of a [`Matcher`]'s span may spell what it looks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spelling {
    /// Each byte as itself or in any escape [`escape_at`] reads, and
    /// quoted-printable soft line breaks (`=` CRLF or `=` LF) between bytes.
    Escaped,
    /// Each byte as itself, with up to [`MAX_BREAK`] CR or LF bytes between
    /// two of them (wrapped base64).
    Wrapped,
}

/// The most CR/LF bytes between two characters of a wrapped run.
const MAX_BREAK: usize = 2;

/// The longest escape [`escape_at`] reads (`&UnderBar;`).
const MAX_ESCAPE: usize = 10;

/// The named HTML character references of ASCII bytes that [`escape_at`]
/// reads (HTML5's, bar the two longer than [`MAX_ESCAPE`]).
const NAMED_REFS: &[(&[u8], u8)] = &[
    (b"amp", b'&'),
    (b"AMP", b'&'),
    (b"lt", b'<'),
    (b"LT", b'<'),
    (b"gt", b'>'),
    (b"GT", b'>'),
    (b"quot", b'"'),
    (b"QUOT", b'"'),
    (b"apos", b'\''),
    (b"sol", b'/'),
    (b"bsol", b'\\'),
    (b"plus", b'+'),
    (b"equals", b'='),
    (b"excl", b'!'),
    (b"num", b'#'),
    (b"dollar", b'$'),
    (b"percnt", b'%'),
    (b"lpar", b'('),
    (b"rpar", b')'),
    (b"ast", b'*'),
    (b"midast", b'*'),
    (b"comma", b','),
    (b"period", b'.'),
    (b"colon", b':'),
    (b"semi", b';'),
    (b"quest", b'?'),
    (b"commat", b'@'),
    (b"lsqb", b'['),
    (b"lbrack", b'['),
    (b"rsqb", b']'),
    (b"rbrack", b']'),
    (b"Hat", b'^'),
    (b"lowbar", b'_'),
    (b"UnderBar", b'_'),
    (b"grave", b'`'),
    (b"lcub", b'{'),
    (b"lbrace", b'{'),
    (b"verbar", b'|'),
    (b"vert", b'|'),
    (b"rcub", b'}'),
    (b"rbrace", b'}'),
    (b"Tab", b'\t'),
    (b"NewLine", b'\n'),
];

/// What reading one escape at the start of some bytes gave.
#[derive(Debug, PartialEq, Eq)]
enum Escape {
    /// The escape is this byte, spelled in this many bytes.
    Byte(u8, usize),
    /// The bytes end inside what could still be an escape.
    Partial,
    /// No escape starts here.
    Not,
}

/// The value of an ASCII hex digit.
fn hex_digit(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Reads `digits` hex digits at `s[at..]`: their value, or why not.
fn hex_digits(s: &[u8], at: usize, digits: usize) -> Result<u32, Escape> {
    let mut value = 0u32;
    for i in at..at + digits {
        let Some(&b) = s.get(i) else {
            return Err(Escape::Partial);
        };
        value = value * 16 + u32::from(hex_digit(b).ok_or(Escape::Not)?);
    }
    Ok(value)
}

/// An escape's value as a byte, if it is ASCII.
fn ascii(value: u32, len: usize) -> Escape {
    match u8::try_from(value) {
        Ok(b) if b.is_ascii() => Escape::Byte(b, len),
        _ => Escape::Not,
    }
}

/// The escape at the start of `s`, if any: `%XX` and `=XX` (either case),
/// `+` (a space in forms), `\uXXXX`, `\/`, `\"`, `\\`, `&#NNNNN;`,
/// `&#xXXXX;` and the named references of [`NAMED_REFS`]; all of an ASCII
/// byte.
fn escape_at(s: &[u8]) -> Escape {
    let two_hex = |s: &[u8]| match hex_digits(s, 1, 2) {
        Ok(v) => ascii(v, 3),
        Err(e) => e,
    };
    match s.first() {
        None => Escape::Partial,
        Some(b'%' | b'=') => two_hex(s),
        Some(b'+') => Escape::Byte(b' ', 1),
        Some(b'\\') => match s.get(1) {
            None => Escape::Partial,
            Some(&b @ (b'/' | b'"' | b'\\')) => Escape::Byte(b, 2),
            Some(b'u') => match hex_digits(s, 2, 4) {
                Ok(v) => ascii(v, 6),
                Err(e) => e,
            },
            Some(_) => Escape::Not,
        },
        Some(b'&') => reference_at(s),
        Some(_) => Escape::Not,
    }
}

/// An HTML character reference at the start of `s` (which is `&`).
fn reference_at(s: &[u8]) -> Escape {
    // Where the digits (or the name) begin, and their radix (0: a name).
    let (digits_from, radix) = match (s.get(1), s.get(2)) {
        (None, _) | (Some(b'#'), None) => return Escape::Partial,
        (Some(b'#'), Some(b'x' | b'X')) => (3, 16),
        (Some(b'#'), Some(_)) => (2, 10),
        (Some(_), _) => (1, 0),
    };
    let mut value = 0u32;
    for (i, &b) in s
        .iter()
        .enumerate()
        .skip(digits_from)
        .take(MAX_ESCAPE - digits_from)
    {
        if b == b';' {
            if i == digits_from {
                return Escape::Not;
            }
            if radix != 0 {
                return ascii(value, i + 1);
            }
            let name = &s[1..i];
            return NAMED_REFS
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(Escape::Not, |(_, b)| Escape::Byte(*b, i + 1));
        }
        if radix == 0 {
            if !b.is_ascii_alphabetic() {
                return Escape::Not;
            }
        } else {
            let Some(digit) = char::from(b).to_digit(radix) else {
                return Escape::Not;
            };
            value = value.saturating_mul(radix).saturating_add(digit);
        }
    }
    if s.len() < MAX_ESCAPE {
        Escape::Partial
    } else {
        Escape::Not
    }
}

/// What running a [`Matcher`] from one position gave.
#[derive(Debug, PartialEq, Eq)]
enum Run {
    /// A match, ending here (the longest one).
    Match(usize),
    /// No match yet, but the bytes end where one could still go on.
    Partial,
    /// No match starts here.
    Miss,
}

/// Finds one sequence of bytes, however its bytes are spelled
/// ([`Spelling`]): a small automaton run over the set of positions each
/// spelling of the bytes so far could end at.
#[derive(Clone)]
struct Matcher {
    /// What the span spells; may be (part of) a real value.
    want: Zeroizing<Vec<u8>>,
    spelling: Spelling,
    /// What replaces a match: these bytes, or (`None`) a mask of the same
    /// length that keeps the span's CR/LF bytes.
    to: Option<Zeroizing<Vec<u8>>>,
    /// The bytes a match can begin with.
    first: Vec<u8>,
}

impl Matcher {
    fn new(
        want: Zeroizing<Vec<u8>>,
        spelling: Spelling,
        to: Option<Zeroizing<Vec<u8>>>,
    ) -> Matcher {
        let mut first = want.first().map(|b| vec![*b]).unwrap_or_default();
        if spelling == Spelling::Escaped {
            let escapes: &[u8] = if want.first() == Some(&b' ') {
                b"%=\\&+"
            } else {
                b"%=\\&"
            };
            first.extend(escapes.iter().filter(|b| want.first() != Some(b)));
        }
        Matcher {
            want,
            spelling,
            to,
            first,
        }
    }

    /// The longest span a match can have.
    fn longest(&self) -> usize {
        let per_byte = match self.spelling {
            Spelling::Escaped => MAX_ESCAPE + 3,
            Spelling::Wrapped => 1 + MAX_BREAK,
        };
        self.want.len() * per_byte
    }

    /// The ends of the spellings of `b` that start at `at`, pushed to
    /// `ends`; whether `hay` ends inside one that could still be.
    fn spell(&self, hay: &[u8], at: usize, b: u8, ends: &mut Vec<usize>) -> bool {
        let Some(&c) = hay.get(at) else {
            return true;
        };
        if c == b {
            ends.push(at + 1);
        }
        if self.spelling == Spelling::Wrapped {
            return false;
        }
        match escape_at(&hay[at..]) {
            Escape::Byte(e, len) if e == b => {
                ends.push(at + len);
                false
            }
            Escape::Partial => true,
            _ => false,
        }
    }

    /// Where the spelling of the byte after position `p` may start (the
    /// first byte has none of these): `p`, and past a line break.
    fn starts(&self, hay: &[u8], p: usize, starts: &mut Vec<usize>) -> bool {
        starts.push(p);
        let rest = &hay[p.min(hay.len())..];
        match self.spelling {
            Spelling::Escaped => {
                for soft in [&b"=\r\n"[..], b"=\n"] {
                    if rest.starts_with(soft) {
                        starts.push(p + soft.len());
                    } else if !rest.is_empty() && soft.starts_with(rest) {
                        return true;
                    }
                }
                false
            }
            Spelling::Wrapped => {
                let breaks = rest
                    .iter()
                    .take(MAX_BREAK)
                    .take_while(|b| matches!(b, b'\r' | b'\n'));
                for n in 1..=breaks.count() {
                    starts.push(p + n);
                }
                false
            }
        }
    }

    /// Whether `c` could begin an escape or a line break.
    fn is_special(&self, c: u8) -> bool {
        match self.spelling {
            Spelling::Escaped => matches!(c, b'%' | b'=' | b'+' | b'\\' | b'&'),
            Spelling::Wrapped => matches!(c, b'\r' | b'\n'),
        }
    }

    /// Whether `c` could begin the spelling of `b` (or a line break
    /// before it).
    fn may_begin(&self, c: u8, b: u8) -> bool {
        c == b || self.is_special(c)
    }

    /// A cheap test on the first two bytes spelled: `true` when no match
    /// can start at `at` (most positions, so most runs end here).
    fn quick_miss(&self, hay: &[u8], at: usize) -> bool {
        let (Some(&c), Some(&first)) = (hay.get(at), self.want.first()) else {
            return false;
        };
        let len = if c == first {
            if self.is_special(c) {
                return false; // a literal and an escape: leave it to the run
            }
            1
        } else if self.spelling == Spelling::Wrapped {
            return true;
        } else {
            match escape_at(&hay[at..]) {
                Escape::Byte(e, len) if e == first => len,
                Escape::Partial => return false,
                _ => return true,
            }
        };
        match (hay.get(at + len), self.want.get(1)) {
            (Some(&d), Some(&second)) => !self.may_begin(d, second),
            _ => false,
        }
    }

    /// Runs the automaton from `at`.
    fn run(&self, hay: &[u8], at: usize, scratch: &mut Scratch) -> Run {
        if self.quick_miss(hay, at) {
            return Run::Miss;
        }
        let Scratch { cur, next, starts } = scratch;
        cur.clear();
        cur.push(at);
        let mut partial = false;
        for (i, &b) in self.want.iter().enumerate() {
            next.clear();
            for &p in cur.iter() {
                starts.clear();
                if i == 0 {
                    starts.push(p);
                } else {
                    partial |= self.starts(hay, p, starts);
                }
                for &s in starts.iter() {
                    partial |= self.spell(hay, s, b, next);
                }
            }
            if next.is_empty() {
                return if partial { Run::Partial } else { Run::Miss };
            }
            next.sort_unstable();
            next.dedup();
            std::mem::swap(cur, next);
        }
        cur.last().map_or(Run::Miss, |&end| Run::Match(end))
    }

    /// The first match at or after `from`: its start and end.
    fn find(&self, hay: &[u8], from: usize, scratch: &mut Scratch) -> Option<(usize, usize)> {
        match self.first_run(hay, from, scratch, |run| matches!(run, Run::Match(_))) {
            Some((at, Run::Match(end))) => Some((at, end)),
            _ => None,
        }
    }

    /// The first position at or after `from` whose run `wanted` takes, and
    /// that run; only positions holding a byte a match can begin with are
    /// run.
    fn first_run(
        &self,
        hay: &[u8],
        from: usize,
        scratch: &mut Scratch,
        wanted: impl Fn(&Run) -> bool,
    ) -> Option<(usize, Run)> {
        // The next occurrence of each group of (up to 3) first bytes, each
        // looked up again only once passed.
        let groups: Vec<&[u8]> = self.first.chunks(3).collect();
        let next_in = |group: &[u8], at: usize| -> usize {
            let rest = &hay[at.min(hay.len())..];
            let found = match *group {
                [a] => memchr::memchr(a, rest),
                [a, b] => memchr::memchr2(a, b, rest),
                [a, b, c, ..] => memchr::memchr3(a, b, c, rest),
                [] => None,
            };
            found.map_or(hay.len(), |i| at + i)
        };
        let mut heads: Vec<usize> = groups.iter().map(|g| next_in(g, from)).collect();
        loop {
            let at = heads.iter().copied().min().unwrap_or(hay.len());
            if at >= hay.len() {
                return None;
            }
            let run = self.run(hay, at, scratch);
            if wanted(&run) {
                return Some((at, run));
            }
            for (head, group) in heads.iter_mut().zip(&groups) {
                if *head == at {
                    *head = next_in(group, at + 1);
                }
            }
        }
    }

    /// What replaces the match `span`.
    fn replacement(&self, span: &[u8], same_length: bool) -> Vec<u8> {
        match &self.to {
            Some(to) if !same_length => to.to_vec(),
            _ => {
                let mut letters = MASK.iter().copied().cycle();
                span.iter()
                    .map(|&b| match b {
                        b'\r' | b'\n' => b,
                        _ => letters.next().unwrap_or(b'x'),
                    })
                    .collect()
            }
        }
    }
}

/// The position sets a [`Matcher`] run works in, kept across runs so a
/// scan allocates them once.
#[derive(Default)]
struct Scratch {
    cur: Vec<usize>,
    next: Vec<usize>,
    starts: Vec<usize>,
}

/// One swap; either side may be a real value, so both are wiped on drop.
#[derive(Clone)]
pub struct Pair {
    from: Zeroizing<Vec<u8>>,
    to: Zeroizing<Vec<u8>>,
}

/// A set of swaps.
#[derive(Clone, Default)]
pub struct Swaps {
    pairs: Vec<Pair>,
    /// Sequences found however they are spelled (response masks only).
    matchers: Vec<Matcher>,
    /// Whether every match is replaced by a mask of its own length.
    same_length: bool,
}

/// A placeholder that must not go where it was going.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exfiltration {
    /// The secret's variable.
    pub name: String,
    /// Where its inject entry came from.
    pub source: String,
}

impl Swaps {
    /// Adds a swap (e.g. the base64 forms of a Basic credential).
    pub fn push(&mut self, from: Vec<u8>, to: Vec<u8>) {
        self.pairs.push(Pair {
            from: Zeroizing::new(from),
            to: Zeroizing::new(to),
        });
    }

    /// Adds another set's swaps.
    pub fn extend(&mut self, other: Swaps) {
        self.pairs.extend(other.pairs);
        self.matchers.extend(other.matchers);
    }

    /// The swaps the other way round.
    pub fn reversed(&self) -> Swaps {
        Swaps {
            pairs: self
                .pairs
                .iter()
                .map(|p| Pair {
                    from: p.to.clone(),
                    to: p.from.clone(),
                })
                .collect(),
            ..Swaps::default()
        }
    }

    /// The swaps with every replacement a mask of the same length as what
    /// it replaces: for streams whose framing counts bytes (an upgraded
    /// connection's WebSocket frames).
    pub fn same_length(&self) -> Swaps {
        Swaps {
            pairs: self
                .pairs
                .iter()
                .map(|p| Pair {
                    from: p.from.clone(),
                    to: Zeroizing::new(mask(p.from.len())),
                })
                .collect(),
            matchers: self.matchers.clone(),
            same_length: true,
        }
    }

    /// The longest pattern, in bytes.
    fn longest(&self) -> usize {
        self.pairs
            .iter()
            .map(|p| p.from.len())
            .chain(self.matchers.iter().map(Matcher::longest))
            .max()
            .unwrap_or(0)
    }

    /// Applies every swap to `bytes` in one pass (the earliest match
    /// first, the longest on a tie); `None` when nothing changed.
    pub fn apply(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let (out, end) = swap_pass(bytes, self, bytes.len());
        (end > 0).then_some(out)
    }

    /// Applies the swaps to a header value: inside `Basic` credentials
    /// (base64-decoded, swapped, encoded again; the two encodings are added
    /// to `learned` so the response can be masked back), then as plain bytes.
    pub fn apply_header(&self, value: &[u8], learned: &mut Swaps) -> Option<Vec<u8>> {
        let basic = value
            .get(..6)
            .filter(|p| p.eq_ignore_ascii_case(b"basic "))
            .map(|_| value[6..].trim_ascii());
        if let Some(encoded) = basic {
            if let Ok(decoded) = BASE64.decode(encoded) {
                let decoded = Zeroizing::new(decoded);
                if let Some(swapped) = self.apply(&decoded) {
                    let swapped = Zeroizing::new(swapped);
                    let again = BASE64.encode(&swapped);
                    learned.push(encoded.to_vec(), again.as_bytes().to_vec());
                    let mut out = b"Basic ".to_vec();
                    out.extend_from_slice(again.as_bytes());
                    return Some(out);
                }
            }
        }
        self.apply(value)
    }

    /// A streaming form of [`Swaps::apply`], for response bodies: the
    /// swaps only (a request's placeholders are found by a
    /// [`SpelledScan`], which reads every spelling).
    pub fn stream(&self) -> StreamSwap {
        let swaps = Swaps {
            pairs: self.pairs.clone(),
            matchers: self.matchers.clone(),
            same_length: self.same_length,
        };
        StreamSwap {
            keep: swaps.longest().saturating_sub(1),
            swaps,
            carry: Zeroizing::new(Vec::new()),
        }
    }
}

/// Finds placeholders in a stream that is passed on as it comes (nothing
/// held back): the last bytes seen stay in a window, so a placeholder
/// split across chunks is found when its last byte arrives.
pub struct PlaceholderScan {
    /// `(placeholder, what finding it means)`.
    watched: Vec<(String, Exfiltration)>,
    window: Vec<u8>,
}

impl PlaceholderScan {
    fn of<'a>(secrets: impl Iterator<Item = &'a Secret>) -> PlaceholderScan {
        PlaceholderScan {
            watched: secrets
                .map(|s| {
                    (
                        s.placeholder.clone(),
                        Exfiltration {
                            name: s.name.clone(),
                            source: s.source.clone(),
                        },
                    )
                })
                .collect(),
            window: Vec::new(),
        }
    }

    /// Takes the next chunk: the secret whose placeholder now appears, if any.
    pub fn feed(&mut self, chunk: &[u8]) -> Option<Exfiltration> {
        if self.watched.is_empty() {
            return None;
        }
        self.window.extend_from_slice(chunk);
        let found = self.find_in(&self.window);
        let longest = self.watched.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
        let cut = self.window.len().saturating_sub(longest.saturating_sub(1));
        self.window.drain(..cut);
        found
    }

    /// The secret whose placeholder appears in `bytes` alone (the window
    /// neither read nor changed).
    fn find_in(&self, bytes: &[u8]) -> Option<Exfiltration> {
        memmem::find(bytes, PLACEHOLDER_PREFIX.as_bytes())?;
        self.watched
            .iter()
            .find(|(p, _)| memmem::find(bytes, p.as_bytes()).is_some())
            .map(|(_, ex)| ex.clone())
    }
}

/// The one scan of what a request carries to a host (a plain-HTTP
/// request's, or an inspected one's to a host the secrets may not go
/// to): method, target, header names and values, body, trailers, and
/// what a client sends on an upgraded connection. It reads what a server
/// may decode before it reads it: a placeholder is found in any letter
/// case, as sent or percent-decoded (`%2d`, escapes and plain bytes
/// mixed), split across chunks or across consecutive header values at
/// any offset; and in a value's base64 (`Basic` credentials, any token,
/// each part of a JWT) on its own ([`SpelledScan::feed_value`]).
/// Placeholders are [`PLACEHOLDER_PREFIX`] and lowercase hex, so
/// lowercasing what is read finds every case.
///
/// Only the places where a placeholder may begin (the prefix's first
/// letter in either case, or a `%`) are read, each decoded on its own as
/// far as it still spells the start of a placeholder; what remains open
/// at the end of a chunk is all that is read again with the next.
///
/// A body goes through [`SpelledScan::push`], which also holds back the
/// last bytes once they spell a whole [`PLACEHOLDER_PREFIX`] and the
/// start of a placeholder's random part (and only those): no byte of
/// what identifies a placeholder leaves before all of it has been seen,
/// while anything else, the constant prefix included, goes at once, so a
/// client that sends a message and waits for the answer never waits on
/// the scan.
pub struct SpelledScan {
    /// `(random part after the prefix, what finding it means)`.
    watched: Vec<(Vec<u8>, Exfiltration)>,
    /// The stream's last bytes from where a placeholder may have begun
    /// (what follows spells a proper start of one so far): read again
    /// with the next chunk. Empty when nothing is open, the common case.
    open: Vec<u8>,
    /// Where in `open` the random part of an open placeholder begins
    /// (its whole prefix has come): what a body holds back starts there.
    random_at: Option<usize>,
    /// What [`SpelledScan::push`] scanned but has not let out yet.
    held: BytesMut,
}

/// What the bytes from one place in a stream spell.
enum Candidate {
    /// Not a placeholder.
    Miss,
    /// The placeholder of `watched[i]`, whole.
    Found(usize),
    /// The start of a placeholder, cut short by the end of the bytes;
    /// `random_at`: where its random part begins, once its prefix is whole.
    Open { random_at: Option<usize> },
}

/// The byte `hay` carries at `at` as a percent-decoder reads it, and where
/// the next begins; `None` at the end, or at an end that may still be the
/// start of an escape (`%`, `%X`). A `%` not followed by two hex digits is
/// itself.
fn decoded_at(hay: &[u8], at: usize) -> Option<(u8, usize)> {
    let byte = *hay.get(at)?;
    if byte != b'%' {
        return Some((byte, at + 1));
    }
    let digit = |i: usize| hay.get(i).copied().and_then(hex_digit);
    match (digit(at + 1), digit(at + 2)) {
        (Some(hi), Some(lo)) => Some((hi << 4 | lo, at + 3)),
        // The bytes end inside what may be an escape.
        (Some(_), None) if at + 2 == hay.len() => None,
        (None, _) if at + 1 == hay.len() => None,
        _ => Some((byte, at + 1)),
    }
}

impl SpelledScan {
    fn of<'a>(secrets: impl Iterator<Item = &'a Secret>) -> SpelledScan {
        let watched = secrets
            .map(|s| {
                let random = s.placeholder.as_bytes();
                debug_assert!(random.starts_with(PLACEHOLDER_PREFIX.as_bytes()));
                let random = random
                    .get(PLACEHOLDER_PREFIX.len()..)
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let found = Exfiltration {
                    name: s.name.clone(),
                    source: s.source.clone(),
                };
                (random, found)
            })
            .collect();
        SpelledScan {
            watched,
            open: Vec::new(),
            random_at: None,
            held: BytesMut::new(),
        }
    }

    /// Whether there is no placeholder to look for.
    pub fn is_empty(&self) -> bool {
        self.watched.is_empty()
    }

    /// The most bytes one placeholder can span in a stream this scan reads:
    /// each of its bytes percent-encoded.
    fn longest_spelling(&self) -> usize {
        let longest = self
            .watched
            .iter()
            .map(|(random, _)| PLACEHOLDER_PREFIX.len() + random.len())
            .max()
            .unwrap_or(0);
        longest * "%XX".len()
    }

    /// What `hay` spells from `start` on, decoded one byte at a time and
    /// only as far as it still spells the start of a placeholder.
    fn examine(&self, hay: &[u8], start: usize) -> Candidate {
        let prefix = PLACEHOLDER_PREFIX.as_bytes();
        let mut at = start;
        let mut read = 0;
        let mut random_at = None;
        // The random part read so far: only a whole prefix gets here.
        let mut random = Vec::new();
        loop {
            let Some((byte, next)) = decoded_at(hay, at) else {
                return Candidate::Open { random_at };
            };
            let byte = byte.to_ascii_lowercase();
            if read < prefix.len() {
                if byte != prefix[read] {
                    return Candidate::Miss;
                }
            } else {
                random.push(byte);
                let mut open = false;
                for (i, (watched, _)) in self.watched.iter().enumerate() {
                    if *watched == random {
                        return Candidate::Found(i);
                    }
                    open |= watched.starts_with(&random);
                }
                if !open {
                    return Candidate::Miss;
                }
            }
            read += 1;
            at = next;
            if read == prefix.len() {
                random_at = Some(at);
            }
        }
    }

    /// Whether the byte after `hay[start]` (a `c`, `C` or `%`) already
    /// rules out a placeholder there: most places in a dense body (form
    /// data, base64) are ruled out by it, without decoding.
    fn cannot_begin(hay: &[u8], start: usize) -> bool {
        let second = PLACEHOLDER_PREFIX.as_bytes()[1];
        if hay[start] == b'%' {
            // Only an escape of the first letter (`%63`, `%43`) begins one.
            return hay
                .get(start + 1..start + 3)
                .is_some_and(|digits| digits != b"63" && digits != b"43");
        }
        // The first letter, then the second as it is or as an escape.
        hay.get(start + 1)
            .is_some_and(|&b| !b.eq_ignore_ascii_case(&second) && b != b'%')
    }

    /// Reads every place in `hay[..upto]` where a placeholder may begin:
    /// the secret whose placeholder one spells, if any; else the earliest
    /// that is still open at the end of `hay`, and the earliest place where
    /// an open one's random part begins (`open`).
    fn read(
        &self,
        hay: &[u8],
        upto: usize,
        open: &mut Option<(usize, Option<usize>)>,
    ) -> Option<Exfiltration> {
        let first = PLACEHOLDER_PREFIX.as_bytes()[0];
        let starts = memchr::memchr3_iter(first, first.to_ascii_uppercase(), b'%', &hay[..upto]);
        for start in starts.filter(|&start| !Self::cannot_begin(hay, start)) {
            match self.examine(hay, start) {
                Candidate::Miss => {}
                Candidate::Found(i) => return Some(self.watched[i].1.clone()),
                Candidate::Open { random_at } => {
                    let (_, earliest) = open.get_or_insert((start, random_at));
                    *earliest = match (*earliest, random_at) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
            }
        }
        None
    }

    /// Takes the next chunk of a stream: the secret whose placeholder now
    /// appears in it (in any spelling this scan reads), if any. Nothing is
    /// held back (see [`SpelledScan::push`]).
    pub fn feed(&mut self, chunk: &[u8]) -> Option<Exfiltration> {
        if self.is_empty() {
            return None;
        }
        self.random_at = None;
        let mut joint = std::mem::take(&mut self.open);
        let carried = joint.len();
        let mut open = None;
        if carried > 0 {
            // A placeholder open at the end of the last chunk ends within
            // this many bytes of this one: read them with it. One still
            // open after them takes in the whole chunk.
            let reach = self.longest_spelling().min(chunk.len());
            joint.extend_from_slice(&chunk[..reach]);
            if let Some(found) = self.read(&joint, carried, &mut open) {
                return Some(found);
            }
        }
        let mut in_chunk = None;
        if let Some(found) = self.read(chunk, chunk.len(), &mut in_chunk) {
            return Some(found);
        }
        // What stays open: from the earliest start on, in `joint` (which
        // then holds the whole chunk) if one began in the last chunk.
        let shift = if open.is_some() { carried } else { 0 };
        let in_chunk =
            in_chunk.map(|(start, random_at)| (start + shift, random_at.map(|r| r + shift)));
        let Some(start) = open.or(in_chunk).map(|(start, _)| start) else {
            joint.clear();
            self.open = joint;
            return None;
        };
        let random_at = [open, in_chunk]
            .into_iter()
            .flatten()
            .filter_map(|(_, random_at)| random_at)
            .min();
        if open.is_some() {
            // (A spelling open that long has read the whole chunk already:
            // this takes in nothing, unless that bound were wrong.)
            joint.extend_from_slice(&chunk[joint.len() - carried..]);
            joint.drain(..start);
        } else {
            joint.clear();
            joint.extend_from_slice(&chunk[start..]);
        }
        self.open = joint;
        self.random_at = random_at.map(|at| at - start);
        None
    }

    /// Takes the next chunk of a body ([`SpelledScan::feed`]) and returns
    /// what may go on now: everything scanned but the last bytes that
    /// spell a whole prefix's random part begun, which wait for the next
    /// chunk or [`SpelledScan::finish`]. A placeholder found is an error,
    /// and what was held is dropped, never let out.
    pub fn push(&mut self, chunk: Bytes) -> Result<Bytes, Exfiltration> {
        if let Some(ex) = self.feed(&chunk) {
            self.held.clear();
            return Err(ex);
        }
        let undecided = self.random_at.map_or(0, |at| self.open.len() - at);
        if self.held.is_empty() {
            // The common case: the chunk goes on as it is, uncopied.
            let keep = undecided.min(chunk.len());
            self.held.extend_from_slice(&chunk[chunk.len() - keep..]);
            return Ok(chunk.slice(..chunk.len() - keep));
        }
        self.held.extend_from_slice(&chunk);
        let keep = undecided.min(self.held.len());
        Ok(self.held.split_to(self.held.len() - keep).freeze())
    }

    /// The end of the body (nothing more can complete a placeholder):
    /// what [`SpelledScan::push`] held back.
    pub fn finish(&mut self) -> Bytes {
        self.held.split().freeze()
    }

    /// How many bytes [`SpelledScan::push`] holds back.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Takes a request's head: its method on its own (read as a header
    /// name is: any token may be an extension method), its target as the
    /// next part of the stream, then its header fields
    /// ([`SpelledScan::feed_headers`]).
    pub fn feed_head(
        &mut self,
        method: &[u8],
        target: &[u8],
        headers: &HeaderMap,
    ) -> Option<Exfiltration> {
        self.find_alone(method)
            .or_else(|| self.feed(target))
            .or_else(|| self.feed_headers(headers))
    }

    /// Takes header (or trailer) fields: each name on its own, each value
    /// as the next part of the stream and on its own
    /// ([`SpelledScan::feed_value`]), so a placeholder split across
    /// consecutive values (which a server may join) is found too.
    pub fn feed_headers(&mut self, headers: &HeaderMap) -> Option<Exfiltration> {
        headers.iter().find_map(|(name, value)| {
            self.find_alone(name.as_str().as_bytes())
                .or_else(|| self.feed_value(value.as_bytes()))
        })
    }

    /// The secret whose placeholder `bytes` alone carry, in any spelling
    /// this scan reads (the stream unchanged).
    fn find_alone(&self, bytes: &[u8]) -> Option<Exfiltration> {
        self.read(bytes, bytes.len(), &mut None)
    }

    /// Takes a header (or trailer) value, as the next part of the stream
    /// ([`SpelledScan::feed`]) and, base64-decoded, on its own: its last
    /// whitespace-separated token (a `Basic` credential's), in either
    /// alphabet, read as leniently as servers read it.
    pub fn feed_value(&mut self, value: &[u8]) -> Option<Exfiltration> {
        if let Some(ex) = self.feed(value) {
            return Some(ex);
        }
        if self.is_empty() {
            return None;
        }
        // Each token on its own, and all after the first (the scheme)
        // joined: servers decode a credential with spaces inside, or with
        // more after it, either way.
        let tokens: Vec<&[u8]> = value
            .split(u8::is_ascii_whitespace)
            .filter(|t| !t.is_empty())
            .collect();
        // With two tokens or fewer, the joined rest is a token already read.
        let joined: Vec<u8> = if tokens.len() > 2 {
            tokens
                .iter()
                .skip(1)
                .flat_map(|t| t.iter().copied())
                .collect()
        } else {
            Vec::new()
        };
        // A JWT's parts (`header.payload.signature`) are each base64url on
        // their own: read whole, the dots skipped, a part after one whose
        // length is not a multiple of 4 decodes out of alignment.
        let whole = tokens
            .iter()
            .copied()
            .chain((!joined.is_empty()).then_some(joined.as_slice()));
        let pieces = tokens
            .iter()
            .filter(|t| t.contains(&b'.'))
            .flat_map(|t| t.split(|b| *b == b'.'))
            .filter(|piece| !piece.is_empty());
        whole.chain(pieces).find_map(|token| {
            let decoded = Zeroizing::new(lenient_base64(token)?);
            self.find_alone(&decoded)
        })
    }
}

/// `token` base64-decoded the way lenient decoders read it (many servers'
/// do): characters of neither alphabet skipped, `-`/`_` read as `+`/`/`,
/// padding anywhere ignored, stray trailing bits allowed.
fn lenient_base64(token: &[u8]) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::RequireNone)
            .with_decode_allow_trailing_bits(true),
    );
    let mut kept: Vec<u8> = token
        .iter()
        .filter_map(|b| match b {
            b'-' => Some(b'+'),
            b'_' => Some(b'/'),
            b if b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/' => Some(*b),
            _ => None,
        })
        .collect();
    // A lone last character carries no whole byte: lenient decoders drop it.
    if kept.len() % 4 == 1 {
        kept.pop();
    }
    LENIENT.decode(&kept).ok()
}

/// Swaps every match in `hay`, and copies the bytes up to `upto` (or to the
/// end of the last match, if later). Returns the output and the end of the
/// last match (0 if none). Matches are taken earliest first, the longest
/// on a tie; each pattern's next occurrence is looked up again only once a
/// match has passed it, so many patterns cost one scan each, not one per
/// match.
fn swap_pass(hay: &[u8], swaps: &Swaps, upto: usize) -> (Vec<u8>, usize) {
    let pairs = &swaps.pairs;
    let mut scratch = Scratch::default();
    // Pattern i < pairs.len() is a pair, the rest are matchers.
    let mut find = |i: usize, from: usize| -> Option<(usize, usize)> {
        if from > hay.len() {
            return None;
        }
        match pairs.get(i) {
            Some(p) if p.from.is_empty() => None,
            Some(p) => {
                memmem::find(&hay[from..], &p.from).map(|a| (a + from, a + from + p.from.len()))
            }
            None => swaps.matchers[i - pairs.len()].find(hay, from, &mut scratch),
        }
    };
    let count = pairs.len() + swaps.matchers.len();
    let mut next: Vec<Option<(usize, usize)>> = (0..count).map(|i| find(i, 0)).collect();
    let mut out = Vec::with_capacity(hay.len());
    let mut last = 0;
    loop {
        for (i, at) in next.iter_mut().enumerate() {
            if at.is_some_and(|(at, _)| at < last) {
                *at = find(i, last);
            }
        }
        let best = next
            .iter()
            .enumerate()
            .filter_map(|(i, span)| span.map(|span| (span, i)))
            .min_by(|((a, a_end), _), ((b, b_end), _)| a.cmp(b).then(b_end.cmp(a_end)));
        let Some(((at, end), i)) = best else {
            break;
        };
        out.extend_from_slice(&hay[last..at]);
        match pairs.get(i) {
            Some(p) => out.extend_from_slice(&p.to),
            None => out.extend_from_slice(
                &swaps.matchers[i - pairs.len()].replacement(&hay[at..end], swaps.same_length),
            ),
        }
        last = end;
    }
    let end = last;
    out.extend_from_slice(&hay[last..upto.max(last)]);
    (out, end)
}

/// Swaps in a byte stream cut into arbitrary chunks: the last
/// `longest - 1` bytes wait for the next chunk, so a pattern split across
/// two chunks is still found.
pub struct StreamSwap {
    swaps: Swaps,
    keep: usize,
    carry: Zeroizing<Vec<u8>>,
}

impl StreamSwap {
    /// Where the bytes that could still begin a pattern start: the first
    /// position of the last `keep` bytes from which the rest of the data
    /// is a prefix of some pattern, or the end. Bytes before it can go on
    /// now, so an interactive stream is held back only by a tail that
    /// looks like the start of a secret.
    fn undecided(&self) -> usize {
        let carry = self.carry.as_slice();
        let begins = |tail: &[u8]| self.swaps.pairs.iter().any(|p| p.from.starts_with(tail));
        let from = carry.len().saturating_sub(self.keep);
        let mut scratch = Scratch::default();
        let matched = self.swaps.matchers.iter().filter_map(|m| {
            m.first_run(carry, from, &mut scratch, |run| *run == Run::Partial)
                .map(|(at, _)| at)
        });
        let paired = (from..carry.len()).find(|&i| begins(&carry[i..]));
        matched.chain(paired).min().unwrap_or(carry.len())
    }

    /// Swaps `bytes` whole: for trailers, which come as values of their
    /// own rather than as part of the stream; `None` when nothing changed.
    pub fn apply_whole(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let (out, end) = swap_pass(bytes, &self.swaps, bytes.len());
        (end > 0).then_some(out)
    }

    /// Takes the next chunk; returns what can be passed on now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.carry.extend_from_slice(chunk);
        // Bytes before `safe` cannot begin a pattern that ends beyond the
        // data so far (every pattern is at most keep + 1 bytes long, and
        // from `safe` on the data is no pattern's beginning); a match that
        // does end in the tail moves `safe` to its end.
        let safe = self.undecided();
        let (out, end) = swap_pass(&self.carry, &self.swaps, safe);
        let rest = self.carry[safe.max(end)..].to_vec();
        self.carry.clear();
        self.carry.extend_from_slice(&rest);
        out
    }

    /// The end of the stream: what was held back.
    pub fn finish(&mut self) -> Vec<u8> {
        let (out, _) = swap_pass(&self.carry, &self.swaps, self.carry.len());
        self.carry.clear();
        out
    }
}

#[cfg(test)]
#[path = "inject_tests.rs"]
mod tests;
