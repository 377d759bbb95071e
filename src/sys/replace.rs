//! Replacing a file whole, so that a reader sees the old file or the new
//! one, never half of either: for the user config `cordon run --ask`
//! saves a rule to and the MCP configs `cordon mcp wrap` rewrites.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Replaces `file`, which held `was` (`None`: it did not exist), by
/// `text`: a new file beside it with the old one's mode and owner (0600
/// for a new one), renamed over it, so that a reader sees the old file or
/// the new one, never half of either. Everything happens in the
/// directory as opened once, not by path: a directory on the way swapped
/// for a link meanwhile changes nothing, and the file is checked there to
/// hold `was` still (refused, nothing written, when another program wrote
/// it meanwhile), whose owner the new file gets.
pub fn replace_file(file: &Path, was: Option<&[u8]>, text: &[u8]) -> std::io::Result<()> {
    use nix::fcntl::{openat, renameat2, OFlag, RenameFlags};
    use nix::sys::stat::Mode;
    use std::os::fd::AsRawFd;
    let dir_path = file.parent().unwrap_or(Path::new("/"));
    let name = file
        .file_name()
        .ok_or_else(|| std::io::Error::other("names no file"))?;
    let dir = std::fs::File::from(super::own_fd(openat(
        None,
        dir_path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?));
    let at = Some(dir.as_raw_fd());
    let now = match openat(
        at,
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => {
            let mut current = std::fs::File::from(super::own_fd(fd));
            let meta = current.metadata()?;
            if !meta.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut current, &mut bytes)?;
            Some((bytes, meta))
        }
        Err(nix::errno::Errno::ENOENT) => None,
        Err(e) => return Err(e.into()),
    };
    if now.as_ref().map(|(bytes, _)| bytes.as_slice()) != was {
        return Err(std::io::Error::other(
            "the file changed while cordon rewrote it (another program writing it?); nothing was written",
        ));
    }
    let temp = format!(".{}.cordon-{}", name.to_string_lossy(), random_suffix()?);
    let fd = openat(
        at,
        temp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )?;
    let mut out = std::fs::File::from(super::own_fd(fd));
    let written = (|| {
        out.write_all(text)?;
        if let Some((_, meta)) = &now {
            out.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
            // Root rewriting a user's file leaves it the user's.
            std::os::unix::fs::fchown(&out, Some(meta.uid()), Some(meta.gid()))?;
        }
        out.sync_all()?;
        // A file that was not there is made, never one made meanwhile
        // replaced.
        let flags = if now.is_some() {
            RenameFlags::empty()
        } else {
            RenameFlags::RENAME_NOREPLACE
        };
        renameat2(at, temp.as_str(), at, name, flags).map_err(std::io::Error::from)
    })();
    if written.is_err() {
        let _ = nix::unistd::unlinkat(at, temp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
    }
    written
}

/// Sixteen random hex digits, for a temporary file's name no one guesses.
fn random_suffix() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| std::io::Error::other("no random bytes"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
#[path = "replace_tests.rs"]
mod tests;
