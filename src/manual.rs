//! Shell completions and man pages, generated from the same clap
//! definitions the command line parses with, so they list every flag the
//! policy keys declare and cannot drift from `--help`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// What writing completions or man pages can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ManualError {
    /// The output could not be written.
    #[error("cannot write {what}: {source}")]
    Write {
        /// What was being written (a file, or stdout).
        what: String,
        source: io::Error,
    },
    /// The directory for the man pages is not there.
    #[error("{dir}: not a directory (create it first)")]
    NoDir {
        /// The directory asked for.
        dir: PathBuf,
    },
}

/// Writes `shell`'s completion script for cordon to `out`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> Result<(), ManualError> {
    let mut cmd = Cli::command();
    // clap_complete panics on a write error; generate into memory first so
    // a closed pipe is an error, not a panic.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "cordon", &mut script);
    write_out(out, &script, "the completion script to stdout")
}

/// Writes cordon's man page (`cordon.1`) to `out`.
pub fn man_page(out: &mut dyn Write) -> Result<(), ManualError> {
    let page = render(&Cli::command()).map_err(|source| ManualError::Write {
        what: "the man page".to_string(),
        source,
    })?;
    write_out(out, &page, "the man page to stdout")
}

/// Writes `bytes` whole to `out` and flushes it; `what` names it in the error.
fn write_out(out: &mut dyn Write, bytes: &[u8], what: &str) -> Result<(), ManualError> {
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|source| ManualError::Write {
            what: what.to_string(),
            source,
        })
}

/// Writes `cordon.1` and one page per visible subcommand (`cordon-run.1`,
/// ...) into `dir`; returns the files written.
pub fn man_pages(dir: &Path) -> Result<Vec<PathBuf>, ManualError> {
    if !dir.is_dir() {
        return Err(ManualError::NoDir {
            dir: dir.to_path_buf(),
        });
    }
    let root = Cli::command();
    let mut pages = vec![("cordon".to_string(), root.clone())];
    pages.extend(
        root.get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(|sub| {
                let name = format!("cordon-{}", sub.get_name());
                // The page is `cordon-run`; its synopsis, what one types.
                let typed = format!("cordon {}", sub.get_name());
                (name.clone(), sub.clone().name(name).bin_name(typed))
            }),
    );
    let mut written = Vec::new();
    for (name, cmd) in pages {
        let file = dir.join(format!("{name}.1"));
        let failed = |source| ManualError::Write {
            what: file.display().to_string(),
            source,
        };
        let page = render(&cmd).map_err(failed)?;
        std::fs::write(&file, page).map_err(failed)?;
        written.push(file);
    }
    Ok(written)
}

/// One command's page, as roff.
fn render(cmd: &clap::Command) -> io::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    Ok(page)
}

#[cfg(test)]
#[path = "manual_tests.rs"]
mod tests;
