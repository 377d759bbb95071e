//! Git configuration read the way git reads it, for the files door.
//!
//! A repository's config can make git read files and run programs named by
//! path: hooks directories, included files, filters, pagers, credential
//! helpers. When such a path lies where the sandbox can write, the sandbox
//! can plant code that the user's own git runs on the host later. This
//! module finds those paths ([`repo_code_paths`], or its parts
//! [`config_files`], [`read`], [`environment_entries`] and [`code_paths`])
//! so that they can be protected, and strips the keys that can do so from
//! the config of a repository the sandbox created ([`neutralise`]).
//!
//! The parser follows git's own (config.c) byte for byte where it matters:
//! what git refuses, this refuses too, with the file and line. Where the
//! meaning of a value depends on things only git knows at the time it
//! runs (which conditional include applies, which directory a relative
//! path is taken from), every reading is reported: more protected is the
//! safe side.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Why a config file could not be read or one of its values interpreted.
#[derive(Debug, thiserror::Error)]
pub enum GitConfigError {
    /// The file exists but could not be read (or is not a regular file).
    #[error("git config {}: {source}", crate::escape::printable(file))]
    Read { file: PathBuf, source: io::Error },
    /// Bad syntax: git refuses the whole file, so does this.
    #[error(
        "git config {}:{line}: {what} (git refuses this file too)",
        crate::escape::printable(file)
    )]
    Syntax {
        file: PathBuf,
        line: usize,
        what: &'static str,
    },
    /// A value whose meaning cannot be worked out, so the file or program
    /// it names cannot be protected.
    #[error(
        "git config {}:{line}: {}: {}",
        crate::escape::printable(file),
        crate::escape::printable(key),
        crate::escape::printable(what)
    )]
    Value {
        file: PathBuf,
        line: usize,
        key: String,
        what: String,
    },
}

/// One `key = value` line: key normalised as git does (section and key
/// lower-case, subsection kept as written: `includeif.gitdir:~/w/.path`),
/// value with quotes and escapes resolved (`None` for a bare `key` line,
/// which means true).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `section.key` or `section.subsection.key`.
    pub key: String,
    /// The value as git sees it.
    pub value: Option<String>,
    /// The file the line is in (as named when read, not canonicalised:
    /// relative includes resolve against its directory, as git does).
    pub file: PathBuf,
    /// The line the key starts on, from 1.
    pub line: usize,
}

/// Where a repository's config is read from and how paths in it resolve.
/// All paths are absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The git dir (`.git`, a bare repository, or `.git/worktrees/NAME`).
    pub git_dir: PathBuf,
    /// The top of the work tree; `None` for a bare repository.
    pub work_tree: Option<PathBuf>,
    /// `$HOME` as git on the host sees it; `~/` cannot resolve without it.
    pub home: Option<PathBuf>,
}

/// A file or directory git reads or runs because of a config entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodePath {
    /// Absolute, without `.`, and with `..` resolved as the kernel
    /// resolves it now (see [`code_paths`]).
    pub path: PathBuf,
    /// A directory whose whole content counts; else only the name itself
    /// (a file, or a directory a `..` steps back over, which must not be
    /// replaced).
    pub is_dir: bool,
    /// The key that names it.
    pub key: String,
    /// Where that key was set.
    pub file: PathBuf,
    /// The line it was set on.
    pub line: usize,
}

/// A key [`neutralise`] took out of a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// The normalised key.
    pub key: String,
    /// The line it started on.
    pub line: usize,
}

/// Git's limit on nested includes.
const MAX_INCLUDE_DEPTH: usize = 10;

/// The config files git reads for this repository, in git's order: system
/// (`/etc/gitconfig`, or `GIT_CONFIG_SYSTEM`; none with
/// `GIT_CONFIG_NOSYSTEM` true), global (`$XDG_CONFIG_HOME/git/config` then
/// `~/.gitconfig`, or `GIT_CONFIG_GLOBAL`), the repository's `config` (in
/// the common dir for a linked worktree), and its `config.worktree`
/// (listed whenever it exists, whether or not `extensions.worktreeConfig`
/// is on: more protected is the safe side). Missing files are skipped;
/// any other failure to look is an error.
pub fn config_files(repo: &Repo) -> Result<Vec<PathBuf>, GitConfigError> {
    config_files_in(repo, &|name| std::env::var_os(name))
}

/// [`config_files`] with the environment passed in (tests set their own).
fn config_files_in(
    repo: &Repo,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Vec<PathBuf>, GitConfigError> {
    let mut candidates = Vec::new();
    let no_system = env("GIT_CONFIG_NOSYSTEM")
        .and_then(|v| v.into_string().ok())
        .is_some_and(|v| parse_bool(Some(&v)) == Some(true));
    if !no_system {
        candidates.push(
            env("GIT_CONFIG_SYSTEM").map_or_else(|| PathBuf::from("/etc/gitconfig"), PathBuf::from),
        );
    }
    match env("GIT_CONFIG_GLOBAL") {
        Some(global) => candidates.push(PathBuf::from(global)),
        None => {
            let xdg = env("XDG_CONFIG_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| repo.home.as_ref().map(|h| h.join(".config")));
            candidates.extend(xdg.map(|x| x.join("git/config")));
            candidates.extend(repo.home.as_ref().map(|h| h.join(".gitconfig")));
        }
    }
    candidates.push(common_dir(&repo.git_dir)?.join("config"));
    candidates.push(repo.git_dir.join("config.worktree"));
    let mut files = Vec::new();
    for file in candidates {
        if file.as_os_str().is_empty() {
            continue;
        }
        match std::fs::metadata(&file) {
            Ok(_) => files.push(file),
            Err(e) if is_missing(&e) => {}
            Err(source) => return Err(GitConfigError::Read { file, source }),
        }
    }
    Ok(files)
}

/// The most a config file, or another file git reads to find a
/// repository, may hold before cordon refuses to read it.
pub const MAX_FILE: u64 = 16 << 20;

/// Whether [`read_regular`] follows a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    Yes,
    No,
}

/// The bytes of the regular file at `path`. Anything else (a FIFO that
/// would block the reader for good, a device, a directory, with
/// [`Follow::No`] a symlink) or a file over [`MAX_FILE`] is an error: a
/// sandbox may have left it there for cordon to trip on.
pub fn read_regular(path: &Path, follow: Follow) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if follow == Follow::No {
        flags |= libc::O_NOFOLLOW;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    if meta.len() > MAX_FILE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {MAX_FILE} bytes"),
        ));
    }
    // Room for the whole file and the end: read in one piece, not in
    // pieces growing from 32 bytes (`take` hides the size).
    let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
    file.by_ref().take(MAX_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {MAX_FILE} bytes"),
        ));
    }
    Ok(bytes)
}

/// The directory holding the shared `config`: the git dir itself, or
/// where its `commondir` file points (linked worktrees).
fn common_dir(git_dir: &Path) -> Result<PathBuf, GitConfigError> {
    let file = git_dir.join("commondir");
    // Read as git reads it: up to a NUL byte.
    let read = read_regular(&file, Follow::Yes).map(|b| {
        let text = b.split(|c| *c == 0).next().unwrap_or_default();
        String::from_utf8_lossy(text).into_owned()
    });
    match read {
        // Git takes the real path and dies if there is none.
        Ok(text) => {
            let common = git_dir.join(text.trim_end_matches(['\n', '\r']));
            std::fs::canonicalize(&common).map_err(|source| GitConfigError::Read {
                file: common,
                source,
            })
        }
        Err(e) if is_missing(&e) => Ok(git_dir.to_path_buf()),
        Err(source) => Err(GitConfigError::Read { file, source }),
    }
}

/// Every config file git reads for `repo` ([`config_files`]), and every
/// path ([`code_paths`]) that their entries, with their includes and the
/// config git takes from the environment ([`environment_entries`]), make
/// git read or run. What the lead of a run needs for one repository.
pub fn repo_code_paths(repo: &Repo) -> Result<(Vec<PathBuf>, Vec<CodePath>), GitConfigError> {
    repo_code_paths_in(repo, &|name| std::env::var_os(name))
}

/// [`repo_code_paths`] with the environment passed in.
fn repo_code_paths_in(
    repo: &Repo,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<(Vec<PathBuf>, Vec<CodePath>), GitConfigError> {
    let files = config_files_in(repo, env)?;
    let mut entries = Vec::new();
    for file in &files {
        entries.extend(read(file, repo)?);
    }
    for entry in environment_entries_in(env)? {
        let include = if is_include(&entry.key) {
            Some((include_target(&entry, repo)?, entry.clone()))
        } else {
            None
        };
        entries.push(entry);
        if let Some((target, entry)) = include {
            follow_include(&target, &entry, repo, &mut Vec::new(), &mut entries)?;
        }
    }
    let paths = code_paths(&entries, repo)?;
    Ok((files, paths))
}

/// The config git takes from the environment, after the files: the
/// `GIT_CONFIG_COUNT` pairs `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`,
/// then `GIT_CONFIG_PARAMETERS` (what `git -c` hands to the git it runs).
/// Each entry's `file` is the variable's name with a `$`, its line 0. What
/// git refuses (a bad count, a missing pair, bad quoting, a relative
/// include, which must come from a file) is an error.
pub fn environment_entries() -> Result<Vec<Entry>, GitConfigError> {
    environment_entries_in(&|name| std::env::var_os(name))
}

/// [`environment_entries`] with the environment passed in.
fn environment_entries_in(
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Vec<Entry>, GitConfigError> {
    let var = |name: &str| -> Result<Option<String>, GitConfigError> {
        env(name)
            .map(|v| {
                v.into_string()
                    .map_err(|_| env_error(name, "", "is not UTF-8"))
            })
            .transpose()
    };
    let mut raw = Vec::new();
    if let Some(count) = var("GIT_CONFIG_COUNT")? {
        let count: usize = count
            .parse()
            .map_err(|_| env_error("GIT_CONFIG_COUNT", "", "is not a count"))?;
        for i in 0..count {
            let (key_var, value_var) = (
                format!("GIT_CONFIG_KEY_{i}"),
                format!("GIT_CONFIG_VALUE_{i}"),
            );
            let key = var(&key_var)?.ok_or_else(|| env_error(&key_var, "", "is missing"))?;
            let value =
                var(&value_var)?.ok_or_else(|| env_error(&value_var, &key, "is missing"))?;
            raw.push((key_var, key, Some(value)));
        }
    }
    if let Some(parameters) = var("GIT_CONFIG_PARAMETERS")? {
        let name = "GIT_CONFIG_PARAMETERS";
        for (key, value) in parse_parameters(&parameters)
            .ok_or_else(|| env_error(name, "", "is not in git's quoted format"))?
        {
            raw.push((name.to_string(), key, value));
        }
    }
    let mut entries = Vec::new();
    for (name, key, value) in raw {
        let key =
            canonical_key(&key).ok_or_else(|| env_error(&name, &key, "is not a valid key"))?;
        let relative_include = is_include(&key)
            && value
                .as_deref()
                .is_some_and(|v| !v.starts_with(['/', '~']) && !v.starts_with("%(prefix)/"));
        if relative_include {
            return Err(env_error(
                &name,
                &key,
                "is a relative include, which git refuses outside files",
            ));
        }
        entries.push(Entry {
            key,
            value,
            file: PathBuf::from(format!("${name}")),
            line: 0,
        });
    }
    Ok(entries)
}

fn env_error(name: &str, key: &str, what: &str) -> GitConfigError {
    GitConfigError::Value {
        file: PathBuf::from(format!("${name}")),
        line: 0,
        key: key.to_string(),
        what: what.to_string(),
    }
}

/// A key given outside a file as git canonicalises it: section and name
/// lower-case, subsection as written; `None` without a section and a name.
fn canonical_key(key: &str) -> Option<String> {
    let (section, rest) = key.split_once('.')?;
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    let name_ok =
        name.starts_with(|c: char| c.is_ascii_alphabetic()) && name.bytes().all(is_key_char);
    if section.is_empty() || !name_ok {
        return None;
    }
    let mut out = section.to_ascii_lowercase();
    if let Some(sub) = sub {
        out.push('.');
        out.push_str(sub);
    }
    out.push('.');
    out.push_str(&name.to_ascii_lowercase());
    Some(out)
}

/// `GIT_CONFIG_PARAMETERS`: space-separated `'key'='value'`, `'key'=`
/// (no value) or the older `'key=value'`, each quoted as git's
/// `sq_quote` does (`'\''` for a quote, `'\!'` for `!`).
fn parse_parameters(text: &str) -> Option<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (key, after) = sq_dequote(rest)?;
        let (key, value, after) = match after.strip_prefix('=') {
            Some(after) if after.starts_with('\'') => {
                let (value, after) = sq_dequote(after)?;
                (key, Some(value), after)
            }
            Some(after) if after.is_empty() || after.starts_with(is_ascii_space) => {
                (key, None, after)
            }
            Some(_) => return None,
            None if after.is_empty() || after.starts_with(is_ascii_space) => {
                match key.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string()), after),
                    None => (key, None, after),
                }
            }
            None => return None,
        };
        if !(after.is_empty() || after.starts_with(is_ascii_space)) {
            return None;
        }
        out.push((key, value));
        rest = after.trim_start();
    }
    Some(out)
}

fn is_ascii_space(c: char) -> bool {
    c.is_ascii() && is_space(c as u8)
}

/// One single-quoted word at the start of `text` and what follows it.
fn sq_dequote(text: &str) -> Option<(String, &str)> {
    let mut rest = text.strip_prefix('\'')?;
    let mut word = String::new();
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        // `'\''` and `'\!'` continue the word with the character.
        match rest.as_bytes() {
            [b'\\', c @ (b'\'' | b'!'), b'\'', ..] => {
                word.push(*c as char);
                rest = &rest[3..];
            }
            _ => return Some((word, rest)),
        }
    }
}

/// Errors git treats as "no such file" when it looks for a config file.
fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Reads `file` and, recursively, every `include.path` and
/// `includeIf.<cond>.path` it names, each included file's entries right
/// after the include line, as git does. Conditions are NOT evaluated:
/// every conditional include is followed, which over-approximates what git
/// reads (the safe side). Relative include paths resolve against the
/// including file's directory, `~/` against the home directory. Missing
/// include targets are skipped as git skips them ([`code_paths`] still
/// reports them); an include of something that is not a regular file, or
/// nested deeper than git's limit of 10, is an error as in git; an include
/// cycle stops where it closes.
pub fn read(file: &Path, repo: &Repo) -> Result<Vec<Entry>, GitConfigError> {
    let mut entries = Vec::new();
    let mut open = Vec::new();
    read_into(file, repo, &mut open, &mut entries)?;
    Ok(entries)
}

/// Appends `file`'s entries and its includes'; `open` holds the files
/// being read (canonical), for depth and cycles.
fn read_into(
    file: &Path,
    repo: &Repo,
    open: &mut Vec<PathBuf>,
    out: &mut Vec<Entry>,
) -> Result<(), GitConfigError> {
    let read_error = |source| GitConfigError::Read {
        file: file.to_path_buf(),
        source,
    };
    let text = read_regular(file, Follow::Yes).map_err(read_error)?;
    let canonical = std::fs::canonicalize(file).map_err(read_error)?;
    open.push(canonical);
    for parsed in parse(&text, file)? {
        let entry = Entry {
            key: parsed.key,
            value: parsed.value,
            file: file.to_path_buf(),
            line: parsed.line,
        };
        // The included file's entries come right after the include line.
        let include = if is_include(&entry.key) {
            Some((include_target(&entry, repo)?, entry.clone()))
        } else {
            None
        };
        out.push(entry);
        if let Some((target, entry)) = include {
            follow_include(&target, &entry, repo, open, out)?;
        }
    }
    open.pop();
    Ok(())
}

/// Reads the file an include entry names, unless it is missing (git
/// skips it) or already being read (a cycle).
fn follow_include(
    target: &Path,
    entry: &Entry,
    repo: &Repo,
    open: &mut Vec<PathBuf>,
    out: &mut Vec<Entry>,
) -> Result<(), GitConfigError> {
    let at_target = |e: io::Error| entry.error(format!("{}: {e}", target.display()));
    match std::fs::metadata(target) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => {
            return Err(entry.error(format!(
                "{} is not a regular file (git refuses it too)",
                target.display()
            )))
        }
        Err(e) if is_missing(&e) => return Ok(()),
        Err(e) => return Err(at_target(e)),
    }
    let canonical = std::fs::canonicalize(target).map_err(at_target)?;
    if open.contains(&canonical) {
        return Ok(());
    }
    if open.len() > MAX_INCLUDE_DEPTH {
        return Err(entry.error(format!(
            "includes nest deeper than git's limit of {MAX_INCLUDE_DEPTH} at {}",
            target.display()
        )));
    }
    read_into(target, repo, open, out)
}

/// `include.path` or `includeif.<condition>.path`.
fn is_include(key: &str) -> bool {
    kind_of(key) == Some(Kind::Include)
}

/// The file an include entry names, spelled as git spells it when it
/// opens it (a relative one joined to the including file's directory, and
/// `..` left for the kernel to resolve).
fn include_target(entry: &Entry, repo: &Repo) -> Result<PathBuf, GitConfigError> {
    let Some(value) = &entry.value else {
        return Err(entry.error("has no value (git refuses it too)"));
    };
    let expanded = expand_user(value, repo).map_err(|what| entry.error(what))?;
    if expanded.is_absolute() {
        return Ok(expanded);
    }
    let dir = entry.file.parent().unwrap_or(Path::new(""));
    Ok(dir.join(expanded))
}

impl Entry {
    fn error(&self, what: impl Into<String>) -> GitConfigError {
        GitConfigError::Value {
            file: self.file.clone(),
            line: self.line,
            key: self.key.clone(),
            what: what.into(),
        }
    }
}

/// Splits `section.sub.sec.tion.key` into section, subsection and key, as
/// git does (the subsection is everything between the first and last dot).
fn split_key(key: &str) -> (&str, Option<&str>, &str) {
    let (section, rest) = key.split_once('.').unwrap_or((key, ""));
    match rest.rsplit_once('.') {
        Some((sub, name)) => (section, Some(sub), name),
        None => (section, None, rest),
    }
}

/// Git's `interpolate_path`: a leading `~/` or `~` is the home directory,
/// `~user/` that user's; `%(prefix)/` (git's install prefix) is refused,
/// since only the git binary knows it.
fn expand_user(value: &str, repo: &Repo) -> Result<PathBuf, String> {
    if value.starts_with("%(prefix)/") {
        return Err(format!(
            "`{value}` names a path under git's install prefix, which cordon cannot know"
        ));
    }
    let Some(rest) = value.strip_prefix('~') else {
        return Ok(PathBuf::from(value));
    };
    let (user, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let home = if user.is_empty() {
        repo.home
            .clone()
            .ok_or_else(|| format!("`{value}` needs the home directory, which is unknown"))?
    } else {
        match nix::unistd::User::from_name(user) {
            Ok(Some(found)) => found.dir,
            Ok(None) => {
                return Err(format!(
                    "`{value}`: no user `{user}` in the password database"
                ))
            }
            Err(e) => return Err(format!("`{value}`: looking up user `{user}`: {e}")),
        }
    };
    let tail = tail.trim_start_matches('/');
    Ok(if tail.is_empty() {
        home
    } else {
        home.join(tail)
    })
}

/// `path` with `.` dropped and each `..` resolved as the kernel resolves
/// it now (stepping back over a symlink leaves its target, not the link),
/// and the names each `..` stepped back over: whoever can replace one of
/// them (by a symlink, or by creating a missing one) changes what the
/// path names, so they must be protected too.
fn resolve_dots(path: &Path) -> (PathBuf, Vec<PathBuf>) {
    let mut out = PathBuf::new();
    let mut stepped_over = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    if !out.has_root() {
                        out.push("..");
                    }
                    continue;
                }
                stepped_over.push(out.clone());
                let is_link =
                    std::fs::symlink_metadata(&out).is_ok_and(|meta| meta.file_type().is_symlink());
                if let (true, Ok(real)) = (is_link, std::fs::canonicalize(&out)) {
                    out = real;
                }
                out.pop();
            }
            other => out.push(other),
        }
    }
    (out, stepped_over)
}

/// Git's boolean values: `None` for anything else. Of git's numbers only
/// decimal ones count (git also takes `0x1f`): a value taken for a
/// command when git takes it for a boolean is the safe mistake.
fn parse_bool(value: Option<&str>) -> Option<bool> {
    let Some(value) = value else {
        return Some(true);
    };
    match value.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" | "" => Some(false),
        number => {
            let digits = number.strip_suffix(['k', 'm', 'g']).unwrap_or(number);
            let digits = digits.strip_prefix(['-', '+']).unwrap_or(digits);
            (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .then(|| digits.bytes().any(|b| b != b'0'))
        }
    }
}

// ---------------------------------------------------------------------------
// Code paths

/// How a key's value names something git reads or runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An included config file, relative to the including file.
    Include,
    /// A file, relative to where git runs (the work tree top, or the git
    /// dir).
    File,
    /// A directory, relative to where git runs.
    Dir,
    /// `core.worktree`: a directory relative to the git dir.
    WorkTree,
    /// A program given by path, run without a shell.
    Program,
    /// A shell command.
    Command,
    /// A shell command after a leading `!` (alias, submodule update); a
    /// value without it is not run.
    BangCommand,
    /// A shell command unless the value is a boolean.
    CommandUnlessBool,
    /// A remote URL (or a branch's remote, which may be one): the `ext::`
    /// transport runs the rest as a command.
    Url,
    /// `url.<base>.insteadOf`: the base (the subsection) replaces URLs,
    /// so an `ext::` base is a command.
    UrlRewrite,
    /// trace2 targets: an absolute path or `af_unix:[stream:|dgram:]path`
    /// (other values are fd numbers or ignored).
    Trace2,
}

/// What a key's value makes git read or run, if anything. Keys are
/// matched on section, whether a subsection is present, and name.
fn kind_of(key: &str) -> Option<Kind> {
    use Kind::*;
    let (section, sub, name) = split_key(key);
    let sub_is = |want: &str| sub == Some(want);
    Some(match (section, sub.is_some(), name) {
        ("include", false, "path") | ("includeif", true, "path") => Include,
        ("core", false, "hookspath") => Dir,
        ("core", false, "worktree") => WorkTree,
        ("core", false, "excludesfile" | "attributesfile")
        | ("commit", false, "template")
        | ("mailmap", false, "file")
        | ("blame", false, "ignorerevsfile")
        | ("format", false, "signaturefile")
        | ("sendemail", _, "aliasesfile")
        | ("svn", false, "authorsfile")
        | ("fsck", false, "skiplist")
        | ("diff", false, "orderfile")
        | ("sendemail", _, "smtpsslcertpath")
        | ("http", _, "sslcert" | "sslkey" | "sslcainfo" | "cookiefile" | "pinnedpubkey")
        | ("http", _, "proxysslcert" | "proxysslkey" | "proxysslcainfo") => File,
        ("receive" | "fetch", true, "skiplist") if sub_is("fsck") => File,
        ("gpg", true, "allowedsignersfile" | "revocationfile") if sub_is("ssh") => File,
        ("init", false, "templatedir")
        | ("http", _, "sslcapath")
        | ("instaweb", false, "modulepath") => Dir,
        ("core", false, "sshcommand" | "editor" | "pager" | "askpass" | "gitproxy")
        | ("core", false, "alternaterefscommand")
        | ("sequence", false, "editor")
        | ("diff", false, "external")
        | ("diff", true, "command" | "textconv")
        | ("difftool" | "mergetool" | "browser" | "man" | "guitool", true, "cmd")
        | ("merge", true, "driver")
        | ("filter", true, "clean" | "smudge" | "process")
        | ("credential", _, "helper")
        | ("gpg", true, "defaultkeycommand")
        | ("interactive", false, "difffilter")
        | ("uploadpack", false, "packobjectshook")
        | ("remote", true, "uploadpack" | "receivepack")
        | ("sendemail", _, "tocmd" | "cccmd" | "headercmd" | "sendmailcmd")
        | ("instaweb", false, "httpd")
        | ("imap", false, "tunnel")
        | ("tar", true, "command")
        | ("gc", false, "recentobjectshook")
        | ("hook", true, "command")
        | ("svn", false, "authorsprog") => Command,
        ("lfs", true, "clean" | "smudge" | "args") => Command,
        ("gpg", _, "program")
        | ("difftool" | "mergetool" | "browser" | "man", true, "path")
        | ("lfs", true, "path")
        | ("sendemail", _, "smtpserver") => Program,
        ("alias", _, _) => BangCommand,
        ("submodule", true, "update") => BangCommand,
        ("core", false, "fsmonitor") | ("pager", false, _) => CommandUnlessBool,
        ("remote" | "submodule", true, "url" | "pushurl")
        | ("branch", true, "remote" | "pushremote") => Url,
        ("url", true, "insteadof" | "pushinsteadof") => UrlRewrite,
        ("trace2", false, "eventtarget" | "normaltarget" | "perftarget") => Trace2,
        _ => return None,
    })
}

/// Every path the entries make git read or run: include targets (even
/// missing ones), hooks, attributes and excludes files, templates, TLS
/// files, and for keys whose value is a command (pagers, editors, filters,
/// diff and merge drivers, credential helpers, `!` aliases, ...) every
/// word of the command that names a file: a word with a `/` (the program
/// or an argument such as a script or an ssh config) or a script's name
/// (`hook.sh`). A relative path resolves against every directory git may
/// run from: the work tree top and the git dir (so `core.hooksPath` is
/// reported under both, as its meaning depends on git's version and
/// bare-ness); `core.worktree` against the git dir; includes against the
/// including file's directory; `~/` against home. Each `..` is resolved
/// as the kernel resolves it when this runs (a symlinked `.git` then
/// `../x` is `x` next to the link's target), and every name a `..` steps
/// back over is reported too (not `is_dir`): replacing one of those by a
/// symlink, or creating one that is missing, would change what git opens.
/// A `core.worktree` entry moves the work tree: relative paths are then
/// resolved against that one too. A value that cannot be interpreted (an
/// unknown `~user`, an unterminated quote, a shell variable where a path
/// starts) is an error, never skipped.
pub fn code_paths(entries: &[Entry], repo: &Repo) -> Result<Vec<CodePath>, GitConfigError> {
    let mut work_trees = vec![repo.work_tree.clone()];
    for entry in entries
        .iter()
        .filter(|e| kind_of(&e.key) == Some(Kind::WorkTree))
    {
        for (tree, _) in entry_paths(entry, Kind::WorkTree, repo)? {
            work_trees.push(Some(resolve_dots(&tree).0));
        }
    }
    let mut out: Vec<CodePath> = Vec::new();
    for work_tree in work_trees {
        let repo = Repo {
            work_tree,
            ..repo.clone()
        };
        for found in code_paths_in(entries, &repo)? {
            if !out.contains(&found) {
                out.push(found);
            }
        }
    }
    Ok(out)
}

/// [`code_paths`] for one work tree.
fn code_paths_in(entries: &[Entry], repo: &Repo) -> Result<Vec<CodePath>, GitConfigError> {
    let mut out = Vec::new();
    for entry in entries {
        let Some(kind) = kind_of(&entry.key) else {
            continue;
        };
        for (path, is_dir) in entry_paths(entry, kind, repo)? {
            let (path, stepped_over) = resolve_dots(&path);
            let names = stepped_over.into_iter().map(|name| (name, false));
            for (path, is_dir) in names.chain([(path, is_dir)]) {
                out.push(CodePath {
                    path,
                    is_dir,
                    key: entry.key.clone(),
                    file: entry.file.clone(),
                    line: entry.line,
                });
            }
        }
    }
    Ok(out)
}

/// The paths one entry of a known kind names, each with whether it is a
/// directory.
fn entry_paths(
    entry: &Entry,
    kind: Kind,
    repo: &Repo,
) -> Result<Vec<(PathBuf, bool)>, GitConfigError> {
    // A bare key is `true`: no path, and only a boolean-valued key accepts
    // it (git refuses the others when it uses them). An include without a
    // value is an error, which `include_target` reports.
    if entry.value.is_none() && kind != Kind::Include {
        return Ok(Vec::new());
    }
    let value = entry.value.as_deref().unwrap_or_default();
    let fail = |what: String| entry.error(what);
    let files = |value: &str, is_dir: bool| -> Result<Vec<(PathBuf, bool)>, GitConfigError> {
        let mut out = Vec::new();
        for path in pathnames(value, repo).map_err(fail)? {
            out.extend(from_run_dirs(&path, repo).into_iter().map(|p| (p, is_dir)));
        }
        Ok(out)
    };
    let command = |value: &str| command_paths(value, repo).map_err(fail);
    match kind {
        Kind::Include => Ok(vec![(include_target(entry, repo)?, false)]),
        Kind::File => files(value, false),
        Kind::Dir => files(value, true),
        Kind::WorkTree => {
            let path = expand_user(value, repo).map_err(fail)?;
            Ok(vec![(repo.git_dir.join(path), true)])
        }
        Kind::Program if value.contains('/') => files(value, false),
        Kind::Program => Ok(Vec::new()),
        Kind::Command => command(value),
        Kind::BangCommand => value.strip_prefix('!').map_or(Ok(Vec::new()), command),
        Kind::CommandUnlessBool if parse_bool(Some(value)).is_some() => Ok(Vec::new()),
        Kind::CommandUnlessBool => command(value),
        Kind::Url => value.strip_prefix("ext::").map_or(Ok(Vec::new()), command),
        Kind::UrlRewrite => {
            let (_, base, _) = split_key(&entry.key);
            let base = base.unwrap_or_default();
            base.strip_prefix("ext::").map_or(Ok(Vec::new()), command)
        }
        Kind::Trace2 => match value.strip_prefix("af_unix:") {
            Some(socket) => {
                let socket = ["stream:", "dgram:"]
                    .iter()
                    .find_map(|kind| socket.strip_prefix(kind))
                    .unwrap_or(socket);
                files(socket, false)
            }
            None if value.starts_with('/') => files(value, false),
            None => Ok(Vec::new()),
        },
    }
}

/// A pathname-valued key as git expands it (`~`, `~user`). Newer git
/// reads a leading `:(optional)` as a flag, older git as part of a
/// relative path: both readings are returned.
fn pathnames(value: &str, repo: &Repo) -> Result<Vec<PathBuf>, String> {
    let mut out = vec![expand_user(value, repo)?];
    if let Some(flagged) = value.strip_prefix(":(optional)") {
        out.push(expand_user(flagged, repo)?);
    }
    Ok(out)
}

/// An absolute path as is; a relative one against each directory git may
/// run in: the work tree top and the git dir (where git runs in a bare
/// repository, or when started inside the git dir).
fn from_run_dirs(path: &Path, repo: &Repo) -> Vec<PathBuf> {
    if path.is_absolute() {
        return vec![path.to_path_buf()];
    }
    let mut out: Vec<PathBuf> = repo
        .work_tree
        .iter()
        .chain([&repo.git_dir])
        .map(|dir| dir.join(path))
        .collect();
    out.dedup();
    out
}

/// Nesting of `sh -c '...'` scripts looked into.
const MAX_SCRIPT_DEPTH: usize = 3;

/// The files a shell command names (see [`code_paths`]).
fn command_paths(command: &str, repo: &Repo) -> Result<Vec<(PathBuf, bool)>, String> {
    let mut out = Vec::new();
    script_paths(command, repo, 0, &mut out)?;
    Ok(out)
}

/// Appends the files `script` names; a word that is itself a script
/// (`sh -c 'a; ./b'`) is looked into too, best effort: its own syntax
/// errors are not errors of the command (it may be a commit message).
fn script_paths(
    script: &str,
    repo: &Repo,
    depth: usize,
    out: &mut Vec<(PathBuf, bool)>,
) -> Result<(), String> {
    let words = match shell_words(script) {
        Ok(words) => words,
        Err(_) if depth > 0 => return Ok(()),
        Err(what) => return Err(format!("{what} in the command `{script}`")),
    };
    for word in words {
        out.extend(word_paths(&word, repo)?);
        if depth < MAX_SCRIPT_DEPTH && word.text.contains([' ', '\t'])
            || word.text.contains(SCRIPT_CHARS)
        {
            script_paths(&word.text, repo, depth + 1, out)?;
        }
    }
    Ok(())
}

/// Extensions of scripts that an interpreter runs by name (`sh hook.sh`).
const SCRIPT_EXTENSIONS: &[&str] = &[
    "sh", "bash", "zsh", "fish", "py", "pl", "rb", "js", "mjs", "cjs", "ts", "lua", "php", "tcl",
    "ps1",
];

/// Characters that make a word a script for a nested shell rather than
/// a file's name.
const SCRIPT_CHARS: &[char] = &[';', '&', '|', '\n'];

/// The files one word of a command names, if it names one: the word, or
/// what follows `=` in `--opt=PATH` and `VAR=PATH`, when it has a `/` or
/// a script's name.
fn word_paths(word: &Word, repo: &Repo) -> Result<Vec<(PathBuf, bool)>, String> {
    let text = word.text.as_str();
    if is_url(text) || text.contains(SCRIPT_CHARS) {
        return Ok(Vec::new());
    }
    let start = match text.find('=') {
        Some(i) if !text[..i].contains('/') => i + 1,
        _ => 0,
    };
    let candidate = &text[start..];
    let script = Path::new(candidate)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SCRIPT_EXTENSIONS.contains(&e));
    if candidate.is_empty() || !(candidate.contains('/') || script) {
        return Ok(Vec::new());
    }
    let (candidate, is_dir) = without_expansions(word, start, repo)?;
    let path = if word.tildes.contains(&start) {
        expand_user(&candidate, repo)?
    } else {
        PathBuf::from(candidate)
    };
    let paths = from_run_dirs(&path, repo);
    Ok(paths.into_iter().map(|p| (p, is_dir)).collect())
}

/// The word from byte `start` with its shell expansions dealt with:
/// `$HOME` or `${HOME}` at its start is the home directory; at any other
/// expansion the directory before it stands for everything the word can
/// name (`is_dir`). With no directory before it (`$X/tool`) the word
/// cannot be resolved.
fn without_expansions(word: &Word, start: usize, repo: &Repo) -> Result<(String, bool), String> {
    let mut text = word.text[start..].to_string();
    let mut expansions = word.expansions.iter().filter(|&&at| at >= start);
    let mut first = expansions.next().map(|at| at - start);
    if first == Some(0) {
        let home_var = ["$HOME/", "${HOME}/"]
            .into_iter()
            .find(|var| text.starts_with(var));
        let home = repo.home.as_ref().and_then(|h| h.to_str());
        if let (Some(var), Some(home)) = (home_var, home) {
            let shift = var.len() - 1;
            text.replace_range(..shift, home);
            first = expansions.next().map(|at| at - start - shift + home.len());
        }
    }
    let Some(at) = first else {
        return Ok((text, false));
    };
    let before = &text[..at];
    match before.rfind('/') {
        Some(slash) if !before[..slash].trim_matches('/').is_empty() => {
            Ok((before[..slash].to_string(), true))
        }
        _ => Err(format!(
            "`{}` starts with a shell expansion; cordon cannot tell which file it names",
            word.text
        )),
    }
}

/// `scheme://...`: a URL argument, not a file.
fn is_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
    })
}

/// One word of a shell command as the shell passes it on.
#[derive(Debug, Default)]
struct Word {
    /// Quotes removed, escapes resolved.
    text: String,
    /// Byte offsets of `~` the shell would expand (unquoted, at the word's
    /// start or after `=`).
    tildes: Vec<usize>,
    /// Byte offsets of `$` expansions and command substitutions.
    expansions: Vec<usize>,
}

/// Splits a command the way `sh -c` does, far enough to find the words
/// that name files: quotes, escapes, comments, and operators (`; & | ( )
/// < >`, `$(` and backquotes) between words. Git hands every command
/// with a shell metacharacter to `sh -c`, and runs the rest as one word,
/// which this splits the same way.
fn shell_words(script: &str) -> Result<Vec<Word>, &'static str> {
    let mut words = Vec::new();
    let mut word: Option<Word> = None;
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' | '`' => {
                words.extend(word.take());
            }
            '#' if word.is_none() => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(Word::default);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.text.push(c),
                        None => return Err("an unterminated ' quote"),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(Word::default);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some('\n') => {}
                            Some(c @ ('$' | '`' | '"' | '\\')) => w.text.push(c),
                            Some(c) => {
                                w.text.push('\\');
                                w.text.push(c);
                            }
                            None => return Err("an unterminated \" quote"),
                        },
                        Some(c @ ('$' | '`')) => {
                            if c == '`' || chars.peek().is_some_and(|&n| starts_expansion(n)) {
                                w.expansions.push(w.text.len());
                            }
                            w.text.push(c);
                        }
                        Some(c) => w.text.push(c),
                        None => return Err("an unterminated \" quote"),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => word.get_or_insert_with(Word::default).text.push(c),
                None => word.get_or_insert_with(Word::default).text.push('\\'),
            },
            '$' if chars.peek() == Some(&'(') => {
                words.extend(word.take());
            }
            '$' if chars.peek().is_some_and(|&n| starts_expansion(n)) => {
                let w = word.get_or_insert_with(Word::default);
                w.expansions.push(w.text.len());
                w.text.push('$');
            }
            '~' => {
                let w = word.get_or_insert_with(Word::default);
                if w.text.is_empty() || w.text.ends_with('=') {
                    w.tildes.push(w.text.len());
                }
                w.text.push('~');
            }
            c => word.get_or_insert_with(Word::default).text.push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// Whether `$` followed by `next` is an expansion (else a literal `$`).
fn starts_expansion(next: char) -> bool {
    next.is_ascii_alphanumeric() || "_{@*#?-$!".contains(next)
}

// ---------------------------------------------------------------------------
// Neutralising

/// Keys a repository the sandbox created may keep: none can make git run
/// a program, read a file elsewhere, or send anything elsewhere. Entries
/// are `section.key` for keys without a subsection, `section.*.key` for
/// keys with one (any subsection).
const KEPT_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "user.name",
    "user.email",
    "author.name",
    "author.email",
    "committer.name",
    "committer.email",
    "init.defaultbranch",
    // Without these git would misread the repository (they change how it
    // stores objects and refs, not what it runs). Not worktreeconfig:
    // it would make git read config.worktree, which the sandbox wrote too.
    "extensions.objectformat",
    "extensions.compatobjectformat",
    "extensions.refstorage",
    "extensions.partialclone",
    "extensions.preciousobjects",
    "branch.*.remote",
    "branch.*.pushremote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.description",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.prunetags",
    "remote.*.mirror",
    "remote.*.promisor",
    "remote.*.partialclonefilter",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "fetch.prunetags",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "submodule.active",
    "gc.auto",
    "gc.autopacklimit",
    "gc.autodetach",
    "lfs.repositoryformatversion",
];

/// Sections whose keys without a subsection are all numbers or switches
/// about the index and packs.
const KEPT_SECTIONS: &[&str] = &["index", "pack"];

/// The git-lfs filter as `git lfs install` writes it: kept only exactly so.
const LFS_FILTER: &[(&str, &str)] = &[
    ("filter.lfs.clean", "git-lfs clean -- %f"),
    ("filter.lfs.smudge", "git-lfs smudge -- %f"),
    ("filter.lfs.process", "git-lfs filter-process"),
    ("filter.lfs.required", "true"),
];

/// URL schemes git handles itself; any other (`ext::`, `fd::`, `x::`,
/// `x://`) runs a remote helper program found by name.
const PLAIN_SCHEMES: &[&str] = &[
    "http", "https", "ftp", "ftps", "ssh", "git", "file", "git+ssh", "ssh+git",
];

/// Whether `key = value` may stay in a config the sandbox wrote.
fn is_kept(key: &str, value: Option<&str>) -> bool {
    if let Some(&(_, want)) = LFS_FILTER.iter().find(|(k, _)| *k == key) {
        return value == Some(want);
    }
    let (section, sub, name) = split_key(key);
    let pattern = match sub {
        Some(_) => format!("{section}.*.{name}"),
        None if KEPT_SECTIONS.contains(&section) => return true,
        None => key.to_string(),
    };
    if !KEPT_KEYS.contains(&pattern.as_str()) {
        return false;
    }
    match name {
        // A branch's remote may be a URL instead of a remote's name (git
        // fetches from and pushes to it as it would a remote's URL).
        "url" | "pushurl" | "remote" | "pushremote" => value.is_some_and(is_plain_url),
        _ => true,
    }
}

/// A URL or path git fetches from without running a helper program (and
/// not one that could pass for an option).
fn is_plain_url(url: &str) -> bool {
    if url.starts_with('-') {
        return false;
    }
    if let Some((scheme, _)) = url.split_once("://") {
        if !scheme.contains(['/', ':']) {
            // As git compares them: `HTTPS://` runs `git-remote-HTTPS`.
            return PLAIN_SCHEMES.contains(&scheme);
        }
    }
    // `transport::address` (before any `/`) runs git-remote-transport.
    !url.split('/')
        .next()
        .is_some_and(|head| head.contains("::"))
}

/// For a repository the sandbox created: `text` (its config, read from
/// `file`, which names it in errors) with every entry removed whose key is
/// not on a short allowlist of keys that cannot make git run a program or
/// read a file elsewhere (see `KEPT_KEYS`; remote and submodule URLs, which
/// a clone needs, stay only when git serves them itself, without a helper
/// program), and the list of what was removed. With
/// `extensions.worktreeConfig` gone, git no longer reads `config.worktree`. Sections, comments and the kept lines are
/// left as they were; a section left empty stays. A config git would
/// refuse is an error: move the whole file aside.
pub fn neutralise(text: &str, file: &Path) -> Result<(String, Vec<Removed>), GitConfigError> {
    let bytes = text.as_bytes();
    let mut kept = String::with_capacity(text.len());
    let mut removed = Vec::new();
    let mut from = 0;
    for entry in parse(bytes, file)? {
        if is_kept(&entry.key, entry.value.as_deref()) {
            continue;
        }
        // A section header may precede the key on its line: keep it.
        let line_start = text[..entry.start].rfind('\n').map_or(0, |i| i + 1);
        let before = &text[line_start..entry.start];
        if before.trim().is_empty() {
            kept.push_str(&text[from..line_start]);
        } else {
            kept.push_str(text[from..entry.start].trim_end_matches([' ', '\t']));
            kept.push('\n');
        }
        from = entry.end;
        removed.push(Removed {
            key: entry.key,
            line: entry.line,
        });
    }
    kept.push_str(&text[from..]);
    Ok((kept, removed))
}

/// Why a new text for the config of a repository that was there before
/// the run may not replace it.
#[derive(Debug)]
pub enum UpdateRefused {
    /// The old or the new text is not a config git reads safely.
    Unreadable(GitConfigError),
    /// These keys, which could make git run a program or read a file
    /// elsewhere, would be added, removed, changed or reordered.
    Keys(Vec<String>),
}

/// For a repository that was there before the run: whether `new` may
/// replace `old` (both read from `file`, which names them in errors). It
/// may when every entry off the allowlist of [`neutralise`] (the keys that
/// could run code) is in `new` exactly as in `old`, value and order
/// included, and so is every entry [`settled`] holds to what it was: user,
/// branch and other settings may change, and remotes and submodules may be
/// added, but the user's own fetches and pushes keep going where they went.
/// A value continued on the next line (`\` at its end) is refused: git never
/// writes one, and another reader of `.git/config` may take the next line
/// for an entry of its own.
pub fn check_update(
    old: &[u8],
    new: &[u8],
    file: &Path,
    existing: &Existing,
) -> Result<(), UpdateRefused> {
    if let Some(line) = continued_line(new) {
        return Err(UpdateRefused::Unreadable(GitConfigError::Syntax {
            file: file.to_path_buf(),
            line,
            what: "a value continued on the next line (git never writes one)",
        }));
    }
    let old_entries = parse(old, file).map_err(UpdateRefused::Unreadable)?;
    let keep = |entries: Vec<Parsed>| -> Vec<(String, Option<String>)> {
        entries
            .into_iter()
            .filter(|e| {
                !is_kept(&e.key, e.value.as_deref())
                    || settled(&e.key, e.value.as_deref(), existing)
            })
            .map(|e| (e.key, e.value))
            .collect()
    };
    let locked = |text: &[u8]| -> Result<Vec<(String, Option<String>)>, UpdateRefused> {
        Ok(keep(parse(text, file).map_err(UpdateRefused::Unreadable)?))
    };
    let (before, after) = (keep(old_entries), locked(new)?);
    if before == after {
        return Ok(());
    }
    // What differs, each key once; entries only moved name every locked key.
    let mut unmatched = after.clone();
    let mut keys: Vec<String> = Vec::new();
    for entry in &before {
        match unmatched.iter().position(|e| e == entry) {
            Some(i) => {
                unmatched.swap_remove(i);
            }
            None => keys.push(entry.0.clone()),
        }
    }
    keys.extend(unmatched.into_iter().map(|e| e.0));
    if keys.is_empty() {
        keys = after.into_iter().map(|e| e.0).collect();
    }
    keys.sort();
    keys.dedup();
    Err(UpdateRefused::Keys(keys))
}

/// The remotes and submodules a repository's config named when the run
/// started (see [`settled`]).
#[derive(Debug, Default)]
pub struct Existing {
    remotes: BTreeSet<String>,
    submodules: BTreeSet<String>,
}

impl Existing {
    /// Those `text` names (none if it does not parse: then no update of
    /// it passes [`check_update`] either).
    pub fn of(text: &[u8]) -> Existing {
        let mut existing = Existing::default();
        for entry in parse(text, Path::new("config")).unwrap_or_default() {
            match split_key(&entry.key) {
                ("remote", Some(name), _) => existing.remotes.insert(name.to_string()),
                ("submodule", Some(name), _) => existing.submodules.insert(name.to_string()),
                _ => false,
            };
        }
        existing
    }
}

/// Whether `key = value`, which a repository the sandbox made may keep,
/// must stay as it was in a repository that was there before: an existing
/// remote's or submodule's settings (where the user's next fetch, push or
/// `submodule update` goes, what a push deletes); a branch's remote unless
/// it names an existing remote (a URL or path there is fetched from as
/// such); partial clone settings (git fetches from the promisor unasked).
fn settled(key: &str, value: Option<&str>, existing: &Existing) -> bool {
    match split_key(key) {
        ("remote", Some(_), "promisor" | "partialclonefilter") => true,
        ("remote", Some(name), _) => existing.remotes.contains(name),
        ("submodule", Some(name), _) => existing.submodules.contains(name),
        ("branch", Some(_), "remote" | "pushremote") => {
            !value.is_some_and(|v| existing.remotes.contains(v))
        }
        ("extensions", None, "partialclone") => true,
        _ => false,
    }
}

/// The first line of `text` (from 1) that ends in an odd number of
/// backslashes: a value git would continue on the next line.
fn continued_line(text: &[u8]) -> Option<usize> {
    text.split(|&b| b == b'\n')
        .position(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            line.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
        })
        .map(|i| i + 1)
}

// ---------------------------------------------------------------------------
// The parser (git's config.c: git_parse_source, get_base_var, get_value,
// parse_value)

/// One entry as parsed, with where its text lies.
#[derive(Debug)]
struct Parsed {
    key: String,
    value: Option<String>,
    line: usize,
    /// Byte offset of the key's first character.
    start: usize,
    /// Byte offset just past the entry's last line (its newline included).
    end: usize,
}

/// Git's `get_next_char`: CRLF reads as LF; at the end it returns `\n`
/// and sets `eof`.
struct Cursor<'a> {
    text: &'a [u8],
    pos: usize,
    line: usize,
    eof: bool,
}

impl Cursor<'_> {
    fn next(&mut self) -> u8 {
        let Some(&c) = self.text.get(self.pos) else {
            self.eof = true;
            return b'\n';
        };
        self.pos += 1;
        if c == b'\r' && self.text.get(self.pos) == Some(&b'\n') {
            self.pos += 1;
            self.line += 1;
            return b'\n';
        }
        if c == b'\n' {
            self.line += 1;
        }
        c
    }
}

/// Git's `isspace` (sane_ctype): no vertical tab, no form feed.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// Characters of a key name.
fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Every entry of a config file's text, without following includes.
fn parse(text: &[u8], file: &Path) -> Result<Vec<Parsed>, GitConfigError> {
    let syntax = |line, what| GitConfigError::Syntax {
        file: file.to_path_buf(),
        line,
        what,
    };
    if let Some(at) = text.iter().position(|&b| b == 0) {
        let line = 1 + text[..at].iter().filter(|&&b| b == b'\n').count();
        return Err(syntax(line, "a NUL byte (git would cut the line there)"));
    }
    let mut cur = Cursor {
        text,
        pos: 0,
        line: 1,
        eof: false,
    };
    if text.starts_with(UTF8_BOM) {
        cur.pos = UTF8_BOM.len();
    } else if text.first() == Some(&UTF8_BOM[0]) {
        return Err(syntax(1, "a partial UTF-8 byte order mark"));
    }
    let mut entries = Vec::new();
    let mut section: Vec<u8> = Vec::new();
    let mut comment = false;
    loop {
        let (start, line) = (cur.pos, cur.line);
        let c = cur.next();
        if c == b'\n' {
            if cur.eof {
                return Ok(entries);
            }
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            section =
                section_header(&mut cur).ok_or_else(|| syntax(line, "a bad section header"))?;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return Err(syntax(
                line,
                "not a key, a section header or a comment (a key starts with a letter)",
            ));
        }
        let mut key = section.clone();
        if !key.is_empty() {
            key.push(b'.');
        }
        key.push(c.to_ascii_lowercase());
        let value = key_rest(&mut cur, &mut key).ok_or_else(|| {
            syntax(
                line,
                "a bad key or value (keys are letters, digits and '-'; values end their quotes and know only the escapes \\n \\t \\b \\\" \\\\)",
            )
        })?;
        let utf8 = |bytes: Vec<u8>| {
            String::from_utf8(bytes).map_err(|_| syntax(line, "a key or value that is not UTF-8"))
        };
        entries.push(Parsed {
            key: utf8(key)?,
            value: value.map(utf8).transpose()?,
            line,
            start,
            end: cur.pos,
        });
    }
}

/// After `[`: the section name (lower-cased, dots of the legacy
/// `[section.sub]` form kept) and `."subsection"` if given.
fn section_header(cur: &mut Cursor) -> Option<Vec<u8>> {
    let mut name = Vec::new();
    loop {
        let c = cur.next();
        if cur.eof {
            return None;
        }
        if c == b']' {
            break;
        }
        if is_space(c) {
            subsection(cur, c, &mut name)?;
            break;
        }
        if !is_key_char(c) && c != b'.' {
            return None;
        }
        name.push(c.to_ascii_lowercase());
    }
    (!name.is_empty()).then_some(name)
}

/// ` "subsection"]`, after the section name; `\x` is `x`.
fn subsection(cur: &mut Cursor, mut c: u8, name: &mut Vec<u8>) -> Option<()> {
    loop {
        if c == b'\n' {
            return None;
        }
        c = cur.next();
        if !is_space(c) {
            break;
        }
    }
    if c != b'"' {
        return None;
    }
    name.push(b'.');
    loop {
        let mut c = cur.next();
        if c == b'\n' {
            return None;
        }
        if c == b'"' {
            break;
        }
        if c == b'\\' {
            c = cur.next();
            if c == b'\n' {
                return None;
            }
        }
        name.push(c);
    }
    (cur.next() == b']').then_some(())
}

/// The rest of a key's name, then its value: `None` is bad syntax,
/// `Some(None)` a bare key.
fn key_rest(cur: &mut Cursor, key: &mut Vec<u8>) -> Option<Option<Vec<u8>>> {
    let mut c;
    loop {
        c = cur.next();
        if cur.eof || !is_key_char(c) {
            break;
        }
        key.push(c.to_ascii_lowercase());
    }
    while c == b' ' || c == b'\t' {
        c = cur.next();
    }
    if c == b'\n' {
        return Some(None);
    }
    if c != b'=' {
        return None;
    }
    value(cur).map(Some)
}

/// A value after `=`, up to the end of its (last) line: quotes toggle,
/// `#` and `;` outside quotes start a comment, whitespace outside quotes
/// is kept between words and trimmed at the ends, `\` at a line's end
/// continues it.
fn value(cur: &mut Cursor) -> Option<Vec<u8>> {
    let (mut quote, mut comment) = (false, false);
    let mut trim_len = 0;
    let mut value = Vec::new();
    loop {
        let c = cur.next();
        if c == b'\n' {
            if quote {
                return None;
            }
            if trim_len > 0 {
                value.truncate(trim_len);
            }
            return Some(value);
        }
        if comment {
            continue;
        }
        if is_space(c) && !quote {
            if trim_len == 0 {
                trim_len = value.len();
            }
            if !value.is_empty() {
                value.push(c);
            }
            continue;
        }
        if !quote && (c == b';' || c == b'#') {
            comment = true;
            continue;
        }
        trim_len = 0;
        match c {
            b'\\' => match cur.next() {
                b'\n' => {}
                b't' => value.push(b'\t'),
                b'b' => value.push(b'\x08'),
                b'n' => value.push(b'\n'),
                c @ (b'\\' | b'"') => value.push(c),
                _ => return None,
            },
            b'"' => quote = !quote,
            c => value.push(c),
        }
    }
}

#[cfg(test)]
#[path = "gitconfig_tests.rs"]
mod tests;
