//! Trust for project policy files.
//!
//! A project's `cordon.toml` arrives with the repository, so by default it may
//! only narrow the sandbox. `cordon trust FILE` records the SHA-256 of the
//! file's current contents together with its location in the trust store,
//! `$XDG_CONFIG_HOME/cordon/trusted`; a file is trusted while its contents
//! still hash to the recorded value, so any edit makes it untrusted again.
//!
//! The store is a text file, one record a line: `<sha256 hex>  <path>`. The
//! path is the file's location with every directory resolved (symlinks
//! included) but the last component kept as it is: a `cordon.toml` that is a
//! symlink is trusted as that link, so a repository cannot borrow the trust of
//! another file by linking to it. Lines that do not parse are kept as they are
//! and never match.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

/// Name of the trust store inside cordon's config directory.
const STORE_NAME: &str = "trusted";

/// Why the trust store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The policy file could not be located or read.
    #[error("cannot read {}: {source}", path.display())]
    File {
        /// The file as given.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The path does not name a file (e.g. it ends in `..`).
    #[error("{} does not name a file", path.display())]
    NotAFile {
        /// The path as given.
        path: PathBuf,
    },
    /// The path contains a newline, which the store's line format cannot hold.
    #[error("{} contains a newline; rename it before trusting it", path.display())]
    Newline {
        /// The path as given.
        path: PathBuf,
    },
    /// The trust store could not be read.
    #[error("cannot read the trust store {}: {source}", path.display())]
    ReadStore {
        /// The store's path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The trust store could not be written.
    #[error("cannot write the trust store {}: {source}", path.display())]
    WriteStore {
        /// The store's path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// The trust store's path: `config_dir/trusted`.
pub fn trust_store(config_dir: &Path) -> PathBuf {
    config_dir.join(STORE_NAME)
}

/// SHA-256 of `contents`, as lowercase hex.
pub fn file_hash(contents: &[u8]) -> String {
    let digest = Sha256::digest(contents);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// Whether `file`, whose contents are `contents`, is trusted: the store holds
/// a record for its location with exactly this hash.
///
/// Pass the bytes that will actually be used, so the check and the use
/// cannot see different versions of the file. A missing store means nothing
/// is trusted.
pub fn is_trusted(config_dir: &Path, file: &Path, contents: &[u8]) -> Result<bool, TrustError> {
    let location = locate(file)?;
    let hash = file_hash(contents);
    let records = read_store(config_dir)?;
    Ok(records
        .iter()
        .filter_map(|line| parse_record(line))
        .any(|(h, p)| h == hash.as_bytes() && p == location.as_os_str().as_bytes()))
}

/// Trusts `file` as it is now: records `<sha256>  <location>` in the store,
/// replacing any older record for the same location, and returns the hash.
///
/// Creates the config directory (mode 0700) when needed, and replaces the
/// store atomically (a temporary file renamed over it).
pub fn trust(config_dir: &Path, file: &Path) -> Result<String, TrustError> {
    let location = locate(file)?;
    let contents = fs::read(&location).map_err(|source| TrustError::File {
        path: file.to_path_buf(),
        source,
    })?;
    let hash = file_hash(&contents);
    let mut lines = read_store(config_dir)?;
    lines.retain(|line| !record_is_for(line, &location));
    let mut record = Vec::with_capacity(66 + location.as_os_str().len());
    record.extend_from_slice(hash.as_bytes());
    record.extend_from_slice(b"  ");
    record.extend_from_slice(location.as_os_str().as_bytes());
    lines.push(record);
    write_store(config_dir, &lines)?;
    Ok(hash)
}

/// Forgets any trust recorded for `file`. Returns whether a record was removed.
///
/// Works for files that no longer exist, as long as their directory does (or
/// the path is absolute).
pub fn untrust(config_dir: &Path, file: &Path) -> Result<bool, TrustError> {
    let location = match locate(file) {
        Ok(location) => location,
        Err(TrustError::File { .. }) if file.is_absolute() => file.to_path_buf(),
        Err(e) => return Err(e),
    };
    let mut lines = read_store(config_dir)?;
    let before = lines.len();
    lines.retain(|line| !record_is_for(line, &location));
    if lines.len() == before {
        return Ok(false);
    }
    write_store(config_dir, &lines)?;
    Ok(true)
}

/// The location a file is trusted under: its directory fully resolved, its
/// own name kept (so a symlink is trusted as the link, not as its target).
fn locate(file: &Path) -> Result<PathBuf, TrustError> {
    let name = match file.components().next_back() {
        Some(Component::Normal(name)) => name,
        _ => {
            return Err(TrustError::NotAFile {
                path: file.to_path_buf(),
            })
        }
    };
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = parent.canonicalize().map_err(|source| TrustError::File {
        path: file.to_path_buf(),
        source,
    })?;
    let location = dir.join(name);
    if location.as_os_str().as_bytes().contains(&b'\n') {
        return Err(TrustError::Newline {
            path: file.to_path_buf(),
        });
    }
    Ok(location)
}

/// Splits a record line into (hash, path); `None` for lines that do not parse.
fn parse_record(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let hash = line.get(..64)?;
    if !hash
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        return None;
    }
    let path = line.get(64..)?.strip_prefix(b"  ")?;
    if path.first() != Some(&b'/') {
        return None;
    }
    Some((hash, path))
}

fn record_is_for(line: &[u8], location: &Path) -> bool {
    parse_record(line).is_some_and(|(_, p)| p == location.as_os_str().as_bytes())
}

/// The store's lines (without newlines, empty lines dropped); empty if it does not exist.
fn read_store(config_dir: &Path) -> Result<Vec<Vec<u8>>, TrustError> {
    let path = trust_store(config_dir);
    match fs::read(&path) {
        Ok(bytes) => Ok(bytes
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(<[u8]>::to_vec)
            .collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(TrustError::ReadStore { path, source }),
    }
}

/// Replaces the store with `lines`, atomically.
fn write_store(config_dir: &Path, lines: &[Vec<u8>]) -> Result<(), TrustError> {
    let path = trust_store(config_dir);
    let fail = |source: io::Error| TrustError::WriteStore {
        path: path.clone(),
        source,
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(config_dir)
        .map_err(fail)?;
    let mut tmp_name = OsStr::new(STORE_NAME).to_os_string();
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = config_dir.join(tmp_name);
    let result = (|| {
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        for line in lines {
            out.write_all(line)?;
            out.write_all(b"\n")?;
        }
        out.sync_all()?;
        fs::rename(&tmp, &path)?;
        // Best effort: make the rename itself durable.
        if let Ok(dir) = fs::File::open(config_dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory, and cordon's config directory in it (not made).
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("cordon");
        (dir, config)
    }

    /// Writes `text` to `name` in `dir`; its path.
    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let path = dir.path().join(name);
        fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn hash_is_lowercase_sha256_hex() {
        assert_eq!(
            file_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(file_hash(b"").len(), 64);
    }

    #[test]
    fn store_path() {
        assert_eq!(
            trust_store(Path::new("/c/cordon")),
            PathBuf::from("/c/cordon/trusted")
        );
    }

    #[test]
    fn trust_then_edit_then_retrust() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config/cordon");
        let project = dir.path().join("p");
        fs::create_dir(&project).unwrap();
        let file = project.join("cordon.toml");
        fs::write(&file, "[files]\n").unwrap();

        assert!(!is_trusted(&config, &file, b"[files]\n").unwrap());
        let hash = trust(&config, &file).unwrap();
        assert_eq!(hash, file_hash(b"[files]\n"));
        assert!(config.is_dir(), "config dir created");
        assert!(is_trusted(&config, &file, b"[files]\n").unwrap());

        // Edited after trust: the new contents are not trusted.
        fs::write(&file, "[files]\nallow_write = [\"/\"]\n").unwrap();
        let edited = fs::read(&file).unwrap();
        assert!(!is_trusted(&config, &file, &edited).unwrap());

        // Trusting again replaces the old record rather than adding one.
        trust(&config, &file).unwrap();
        assert!(is_trusted(&config, &file, &edited).unwrap());
        assert!(!is_trusted(&config, &file, b"[files]\n").unwrap());
        let store = fs::read_to_string(trust_store(&config)).unwrap();
        assert_eq!(store.lines().count(), 1, "{store}");
        let location = project.canonicalize().unwrap().join("cordon.toml");
        assert_eq!(
            store,
            format!("{}  {}\n", file_hash(&edited), location.display())
        );
    }

    #[test]
    fn same_contents_elsewhere_is_not_trusted() {
        let (dir, config) = scratch();
        let a = write(&dir, "a.toml", "x");
        let b = write(&dir, "b.toml", "x");
        trust(&config, &a).unwrap();
        assert!(is_trusted(&config, &a, b"x").unwrap());
        assert!(!is_trusted(&config, &b, b"x").unwrap());
    }

    #[test]
    fn paths_are_resolved_through_directories() {
        let (dir, config) = scratch();
        let real = dir.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::write(real.join("cordon.toml"), "x").unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        trust(&config, &dir.path().join("link/./cordon.toml")).unwrap();
        assert!(is_trusted(&config, &real.join("cordon.toml"), b"x").unwrap());
    }

    #[test]
    fn a_symlinked_file_does_not_borrow_its_targets_trust() {
        let (dir, config) = scratch();
        let trusted = write(&dir, "trusted.toml", "wide");
        trust(&config, &trusted).unwrap();
        let link = dir.path().join("cordon.toml");
        std::os::unix::fs::symlink(&trusted, &link).unwrap();
        assert!(!is_trusted(&config, &link, b"wide").unwrap());
    }

    #[test]
    fn untrust_removes_only_that_file() {
        let (dir, config) = scratch();
        let a = write(&dir, "a.toml", "a");
        let b = write(&dir, "b.toml", "b");
        trust(&config, &a).unwrap();
        trust(&config, &b).unwrap();
        assert!(untrust(&config, &a).unwrap());
        assert!(!untrust(&config, &a).unwrap());
        assert!(!is_trusted(&config, &a, b"a").unwrap());
        assert!(is_trusted(&config, &b, b"b").unwrap());

        // A file that is gone can still be forgotten.
        fs::remove_file(&b).unwrap();
        assert!(untrust(&config, &b).unwrap());
        assert!(!untrust(&config, &b).unwrap());
    }

    #[test]
    fn untrust_without_store_is_false() {
        let (dir, config) = scratch();
        let a = write(&dir, "a.toml", "a");
        assert!(!untrust(&config, &a).unwrap());
        assert!(!config.exists(), "nothing written");
    }

    #[test]
    fn malformed_lines_never_match_and_survive() {
        let (dir, config) = scratch();
        fs::create_dir(&config).unwrap();
        let a = write(&dir, "a.toml", "a");
        let location = dir.path().canonicalize().unwrap().join("a.toml");
        let upper = file_hash(b"a").to_uppercase();
        let junk = format!("# comment\n{upper}  {}\nnot a record\n", location.display());
        fs::write(trust_store(&config), &junk).unwrap();
        assert!(!is_trusted(&config, &a, b"a").unwrap());
        trust(&config, &a).unwrap();
        assert!(is_trusted(&config, &a, b"a").unwrap());
        let store = fs::read_to_string(trust_store(&config)).unwrap();
        assert!(store.starts_with(&junk), "{store}");
    }

    #[test]
    fn errors() {
        let (dir, config) = scratch();
        assert!(matches!(
            trust(&config, &dir.path().join("missing.toml")),
            Err(TrustError::File { .. })
        ));
        assert!(matches!(
            trust(&config, &dir.path().join("nodir/x.toml")),
            Err(TrustError::File { .. })
        ));
        assert!(matches!(
            trust(&config, Path::new("/")),
            Err(TrustError::NotAFile { .. })
        ));
        assert!(matches!(
            trust(&config, &dir.path().join("..")),
            Err(TrustError::NotAFile { .. })
        ));
        // A directory cannot be trusted.
        assert!(matches!(
            trust(&config, dir.path()),
            Err(TrustError::File { .. })
        ));
    }
}
