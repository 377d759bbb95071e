//! Path patterns in policy: exact paths and globs, with `~` and relative forms.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde::{Serialize, Serializer};

/// Why a path pattern was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatternError {
    #[error("empty path")]
    Empty,
    #[error("relative path {0:?} has nothing to be relative to here; write an absolute path or one starting with ~/")]
    NoBase(String),
    #[error("`~user` paths are not supported in {0:?}; write ~/ or an absolute path")]
    OtherUser(String),
    #[error("invalid glob {pattern:?}: {reason}")]
    BadGlob { pattern: String, reason: String },
    #[error("{0:?} must not contain `..`")]
    DotDot(String),
    #[error("{0}: a name that is not UTF-8 cannot hold a glob below it (a glob is text); rename it, or write exact paths")]
    NotUtf8(String),
}

/// What relative and `~` paths resolve against.
#[derive(Clone, Debug)]
pub struct PathContext<'a> {
    pub home: &'a Path,
    /// The directory relative paths are relative to, if they are allowed.
    pub base: Option<&'a Path>,
}

/// A path in a policy: one exact path or a glob over paths.
#[derive(Clone, Debug)]
pub enum PathPattern {
    /// An absolute path, lexically normalised (symlinks are resolved when the
    /// sandbox is built, so that the rule covers what the path reaches).
    Exact(PathBuf),
    /// A glob over absolute paths; `base` is its longest literal prefix, where
    /// expansion starts walking.
    Glob {
        pattern: String,
        base: PathBuf,
        matcher: Box<LazyMatcher>,
    },
}

/// A glob checked when parsed and compiled when first matched: compiling
/// one costs tens of microseconds at every start, and the places most
/// built-in globs name do not exist (nothing is matched there).
#[derive(Clone, Debug)]
pub struct LazyMatcher {
    glob: Glob,
    compiled: OnceLock<GlobMatcher>,
}

impl LazyMatcher {
    fn is_match(&self, path: &Path) -> bool {
        self.compiled
            .get_or_init(|| self.glob.compile_matcher())
            .is_match(path)
    }
}

impl PartialEq for PathPattern {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}
impl Eq for PathPattern {}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathPattern::Exact(p) => write!(f, "{}", p.display()),
            PathPattern::Glob { pattern, .. } => f.write_str(pattern),
        }
    }
}

impl Serialize for PathPattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

const GLOB_CHARS: &[char] = &['*', '?', '[', '{'];

impl PathPattern {
    /// Parses a policy path: absolute, `~/...`, or relative to `ctx.base`.
    ///
    /// Only what the policy wrote can make a glob: the home or the base it
    /// is joined to is literal, glob characters in its name included (a
    /// project in `/work/p[1]` is that directory, not a character class).
    /// A glob character the policy means literally is escaped with `\`; a
    /// path whose only glob characters are escaped is that one path.
    pub fn parse(raw: &str, ctx: &PathContext<'_>) -> Result<PathPattern, PatternError> {
        if raw.is_empty() {
            return Err(PatternError::Empty);
        }
        let (anchor, written) = if raw == "~" {
            (Some(ctx.home), "")
        } else if let Some(rest) = raw.strip_prefix("~/") {
            (Some(ctx.home), rest)
        } else if raw.starts_with('~') {
            return Err(PatternError::OtherUser(raw.to_string()));
        } else if raw.starts_with('/') {
            (None, raw)
        } else {
            match ctx.base {
                Some(base) => (Some(base), raw),
                None => return Err(PatternError::NoBase(raw.to_string())),
            }
        };
        let dotdot = || PatternError::DotDot(raw.to_string());
        let join = |anchor: &Path, written: &str| match written {
            "" => anchor.to_path_buf(),
            _ => anchor.join(written),
        };
        if first_glob(written).is_none() {
            let written = unescape(written);
            let absolute = anchor.map_or_else(|| PathBuf::from(&written), |a| join(a, &written));
            return Ok(PathPattern::Exact(normalize(&absolute).ok_or_else(dotdot)?));
        }
        // A glob is text: an anchor whose name is not UTF-8 cannot be
        // spelled in one, and a lossy spelling would name another path.
        let escaped = match anchor {
            Some(a) => {
                Some(PathBuf::from(escape(a.to_str().ok_or_else(|| {
                    PatternError::NotUtf8(a.display().to_string())
                })?)))
            }
            None => None,
        };
        let absolute = escaped
            .as_deref()
            .map_or_else(|| PathBuf::from(written), |a| join(a, written));
        let normal = normalize(&absolute).ok_or_else(dotdot)?;
        let text = normal.to_string_lossy().into_owned();
        let matcher = GlobBuilder::new(&text)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| PatternError::BadGlob {
                pattern: raw.to_string(),
                reason: e.kind().to_string(),
            })?;
        // Walks start below the anchor, and what the policy wrote up to
        // its first glob character.
        let mut base = match anchor {
            Some(a) => normalize(a).ok_or_else(dotdot)?,
            None => PathBuf::from("/"),
        };
        let head = unescape_up_to_glob(written);
        base.extend(
            Path::new(&head)
                .components()
                .filter(|c| matches!(c, Component::Normal(_))),
        );
        Ok(PathPattern::Glob {
            pattern: text,
            base,
            matcher: Box::new(LazyMatcher {
                glob: matcher,
                compiled: OnceLock::new(),
            }),
        })
    }

    /// The one path `path` (absolute; `None` with `..` in it or when
    /// relative), whatever characters its name holds.
    pub fn exact(path: &Path) -> Option<PathPattern> {
        path.is_absolute()
            .then(|| normalize(path))
            .flatten()
            .map(PathPattern::Exact)
    }

    /// The pattern as a policy file writes it, read back by [`parse`] as
    /// the same pattern: an exact path with its glob characters escaped.
    ///
    /// [`parse`]: PathPattern::parse
    pub fn to_policy_text(&self) -> String {
        match self {
            PathPattern::Exact(p) => escape(&p.to_string_lossy()),
            PathPattern::Glob { pattern, .. } => pattern.clone(),
        }
    }

    /// Whether `path` (absolute, normalised) is this pattern or lies beneath it.
    pub fn covers(&self, path: &Path) -> bool {
        match self {
            PathPattern::Exact(p) => path.starts_with(p),
            PathPattern::Glob { matcher, .. } => path.ancestors().any(|a| matcher.is_match(a)),
        }
    }

    /// The existing paths this pattern names right now. Globs are expanded by
    /// walking from their literal prefix, without following symlinked
    /// directories, to a bounded depth.
    pub fn expand(&self) -> Vec<PathBuf> {
        match self {
            PathPattern::Exact(p) => {
                if p.symlink_metadata().is_ok() {
                    vec![p.clone()]
                } else {
                    Vec::new()
                }
            }
            PathPattern::Glob { base, matcher, .. } => {
                // A base that does not exist has nothing below it, and is
                // no match itself: a glob matches its literal prefix only
                // where that is `/`, which exists (checked in the tests).
                if base.symlink_metadata().is_err() {
                    return Vec::new();
                }
                let mut found = Vec::new();
                walk_matches(base, matcher, 0, &mut found);
                found
            }
        }
    }
}

/// Deepest a glob expansion walks below its literal prefix.
const GLOB_WALK_DEPTH: usize = 24;

fn walk_matches(dir: &Path, matcher: &LazyMatcher, depth: usize, found: &mut Vec<PathBuf>) {
    if matcher.is_match(dir) {
        found.push(dir.to_path_buf());
        return;
    }
    if depth >= GLOB_WALK_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk_matches(&path, matcher, depth + 1, found),
            Ok(_) if matcher.is_match(&path) => found.push(path),
            _ => {}
        }
    }
}

/// Lexically normalises an absolute path: drops `.`, refuses `..`.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Characters a glob reads specially, `\` included.
const SPECIAL: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// Where in `written` its first glob character that is not escaped is.
fn first_glob(written: &str) -> Option<usize> {
    let mut chars = written.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            c if GLOB_CHARS.contains(&c) => return Some(i),
            _ => {}
        }
    }
    None
}

/// `text` with every glob character escaped: matched as it is.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if SPECIAL.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `written` with its escapes of glob characters undone (`\[` is `[`,
/// `\\` is `\`); any other backslash stays, as a path's own character.
fn unescape(written: &str) -> String {
    let mut out = String::with_capacity(written.len());
    let mut chars = written.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&next) = chars.peek() {
                if SPECIAL.contains(&next) {
                    out.push(next);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// `written` up to its first unescaped glob character, unescaped: where
/// a walk for its matches can start.
fn unescape_up_to_glob(written: &str) -> String {
    let end = first_glob(written).unwrap_or(written.len());
    // The component the glob is in is not literal: cut back to its start.
    let head = &written[..end];
    let head = match head.rfind('/') {
        Some(slash) if end < written.len() => &head[..slash],
        None if end < written.len() => "",
        _ => head,
    };
    // In a glob a backslash escapes whatever follows it.
    let mut out = String::with_capacity(head.len());
    let mut chars = head.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx<'a>(home: &'a Path, base: Option<&'a Path>) -> PathContext<'a> {
        PathContext { home, base }
    }

    #[test]
    fn tilde_relative_and_absolute() {
        let home = Path::new("/home/u");
        let base = Path::new("/work/p");
        let c = ctx(home, Some(base));
        assert_eq!(
            PathPattern::parse("~/.ssh", &c).unwrap(),
            PathPattern::Exact("/home/u/.ssh".into())
        );
        assert_eq!(
            PathPattern::parse("./a/./b", &c).unwrap(),
            PathPattern::Exact("/work/p/a/b".into())
        );
        assert_eq!(
            PathPattern::parse("/etc/", &c).unwrap(),
            PathPattern::Exact("/etc".into())
        );
    }

    #[test]
    fn refusals() {
        let home = Path::new("/home/u");
        let no_base = ctx(home, None);
        assert!(matches!(
            PathPattern::parse("rel", &no_base),
            Err(PatternError::NoBase(_))
        ));
        assert!(matches!(
            PathPattern::parse("~bob/x", &no_base),
            Err(PatternError::OtherUser(_))
        ));
        assert!(matches!(
            PathPattern::parse("/a/../b", &no_base),
            Err(PatternError::DotDot(_))
        ));
        assert!(matches!(
            PathPattern::parse("/a/[b", &no_base),
            Err(PatternError::BadGlob { .. })
        ));
        assert!(matches!(
            PathPattern::parse("", &no_base),
            Err(PatternError::Empty)
        ));
    }

    #[test]
    fn glob_covers_and_prefix() {
        let home = Path::new("/home/u");
        let p = PathPattern::parse("~/.config/*/token", &ctx(home, None)).unwrap();
        match &p {
            PathPattern::Glob { base, .. } => assert_eq!(base, Path::new("/home/u/.config")),
            other => panic!("expected a glob, got {other:?}"),
        }
        assert!(p.covers(Path::new("/home/u/.config/x/token")));
        assert!(p.covers(Path::new("/home/u/.config/x/token/inner")));
        assert!(!p.covers(Path::new("/home/u/.config/x/y/token")));
    }

    #[test]
    fn a_glob_never_matches_its_literal_prefix_below_the_root() {
        let home = Path::new("/home/u");
        for raw in [
            "/a/**", "/a/*", "/a/{b,}", "/a/{,b}", "/a/**/x", "/a/?", "/a/[b]", "/a/b/*/c",
        ] {
            let p = PathPattern::parse(raw, &ctx(home, None)).unwrap();
            let PathPattern::Glob { base, matcher, .. } = &p else {
                panic!("{raw}: not a glob");
            };
            assert_ne!(base, Path::new("/"), "{raw}");
            assert!(!matcher.is_match(base), "{raw} matches {base:?}");
        }
        let missing = PathPattern::parse("/nonexistent-cordon-test/*/x", &ctx(home, None)).unwrap();
        assert!(missing.expand().is_empty());
    }

    #[test]
    fn glob_expands_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/.env"), "x").unwrap();
        std::fs::write(dir.path().join(".env"), "x").unwrap();
        let base = dir.path();
        let p = PathPattern::parse("./**/.env", &ctx(Path::new("/home/u"), Some(base))).unwrap();
        let mut got = p.expand();
        got.sort();
        assert_eq!(got, vec![base.join(".env"), base.join("a/b/.env")]);
    }

    /// The attack: a project (or home) whose directory name holds glob
    /// characters turned every rule relative to it into a glob that never
    /// matched the real directory: `./secret` in `/w/p[1]` was read as a
    /// character class, and the deny fell silently.
    #[test]
    fn the_base_and_the_home_are_literal_whatever_their_names_hold() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p[1]");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        std::fs::write(project.join("sub/.env"), "x").unwrap();
        std::fs::create_dir_all(dir.path().join("p1/sub")).unwrap();
        std::fs::write(dir.path().join("p1/sub/.env"), "x").unwrap();
        let c = ctx(&project, Some(&project));
        let exact = PathPattern::parse("./secret", &c).unwrap();
        assert_eq!(exact, PathPattern::Exact(project.join("secret")));
        assert!(exact.covers(&project.join("secret/x")));
        assert_eq!(
            PathPattern::parse("~/k", &c).unwrap(),
            PathPattern::Exact(project.join("k"))
        );
        let glob = PathPattern::parse("./**/.env", &c).unwrap();
        assert_eq!(glob.expand(), vec![project.join("sub/.env")]);
        assert!(!glob.covers(&dir.path().join("p1/sub/.env")));
        let PathPattern::Glob { base, .. } = &glob else {
            panic!("not a glob: {glob:?}");
        };
        assert_eq!(base, &project);
        // What a policy file writes reads back as the same pattern.
        for p in [&exact, &glob] {
            let again =
                PathPattern::parse(&p.to_policy_text(), &ctx(Path::new("/h"), None)).unwrap();
            assert_eq!(&again, p);
        }
        // An escaped glob character is the character; a backslash before
        // anything else stays a backslash.
        assert_eq!(
            PathPattern::parse("/a/\\[b\\]/c\\d", &ctx(Path::new("/h"), None)).unwrap(),
            PathPattern::Exact(PathBuf::from("/a/[b]/c\\d"))
        );
    }

    /// A glob below a name that is not UTF-8 cannot be spelled: refused,
    /// not matched against another path; a backslash in a glob escapes
    /// whatever follows it, where the walk starts too.
    #[test]
    fn a_glob_below_a_name_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let base = Path::new(std::ffi::OsStr::from_bytes(b"/w/p\xff"));
        assert!(matches!(
            PathPattern::parse("./**/.env", &ctx(Path::new("/h"), Some(base))),
            Err(PatternError::NotUtf8(_))
        ));
        assert_eq!(
            PathPattern::parse("./secret", &ctx(Path::new("/h"), Some(base))).unwrap(),
            PathPattern::Exact(base.join("secret"))
        );
        let p = PathPattern::parse("/a\\b/*", &ctx(Path::new("/h"), None)).unwrap();
        let PathPattern::Glob { base, matcher, .. } = &p else {
            panic!("not a glob: {p:?}");
        };
        assert_eq!(base, Path::new("/ab"));
        assert!(matcher.is_match(Path::new("/ab/x")));
    }
}
