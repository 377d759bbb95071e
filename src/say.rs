//! Lines for the user's terminal, each written whole.
//!
//! cordon shares stderr with the command it runs. A line written in pieces,
//! as `eprintln!` writes each part of its format, can be cut in two by what
//! the command prints at the same moment, and a reason then reads as part
//! of the command's output. Each line is formatted first and written with
//! one call, which a pipe keeps whole up to `PIPE_BUF` bytes.

use std::io::Write as _;

/// Writes the formatted line and a newline to stderr in one write.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut text = args.to_string();
    text.push('\n');
    // A stderr that is gone leaves the message nowhere to go; the run's
    // outcome does not depend on it.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `eprintln!`, written in one piece: see [`line`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::line(format_args!($($arg)*))
    };
}
