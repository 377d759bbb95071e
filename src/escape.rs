//! Text the sandbox (or a project file) chose, made safe to print on the
//! user's terminal.
//!
//! A sandboxed program picks file names, socket paths, host names and
//! repository names, and cordon prints them in warnings, the exit summary,
//! `cordon log`, `explain` and the probe's table. Printed raw, an escape
//! sequence in one of them could clear or rewrite what cordon says, set the
//! clipboard (OSC 52) or hide text (SGR 8), and a bidirectional control
//! could make a name read as another. Every host-side message passes such
//! text through [`printable`], the one place that decides what is shown
//! escaped.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;

/// `text` with everything that could act on a terminal or change how the
/// text reads shown as a visible escape: C0 controls and DEL as `\x1b`,
/// C1 controls, bidirectional controls, invisible format characters
/// (Unicode's Cf category), every other default-ignorable character
/// (fillers, variation selectors, tags: drawn as nothing) and the line and
/// paragraph separators as `\u{202e}`, and bytes that are not UTF-8 as `\xff`. What it returns is
/// printable ASCII or printable Unicode only, so applying it again changes
/// nothing: a message escaped where it is made can pass through a second
/// escape where it is printed. (A name holding the four characters `\x1b`
/// reads like an escaped ESC; it cannot act on the terminal either way.)
pub fn printable(text: impl AsRef<OsStr>) -> String {
    let bytes = text.as_ref().as_bytes();
    if bytes.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        // Printable ASCII: nearly every path and host name.
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            push_char(&mut out, c);
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// `text` as [`printable`] makes it, line by line: for messages cordon
/// writes on several lines itself (an error and its `fix:`), where the
/// line breaks are cordon's own. A value the sandbox chose must not bring
/// a line break of its own into such a message: wrap it in [`Shown`].
pub fn printable_lines(text: &str) -> String {
    text.split('\n')
        .map(printable)
        .collect::<Vec<_>>()
        .join("\n")
}

fn push_char(out: &mut String, c: char) {
    if c.is_ascii_control() {
        let _ = write!(out, "\\x{:02x}", u32::from(c));
    } else if is_unsafe(c) {
        let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
    } else {
        out.push(c);
    }
}

/// Whether `c` is shown escaped: a control character, an invisible
/// format character or any other character meant to be drawn as nothing.
fn is_unsafe(c: char) -> bool {
    c.is_control() || is_format(c) || is_default_ignorable(c)
}

/// Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties):
/// characters a renderer draws as nothing (fillers, variation selectors,
/// tags, and the unassigned code points reserved to be ignorable), so a
/// name can hold them unseen. Sorted, for the binary search.
const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// Whether `c` is a Default_Ignorable_Code_Point.
fn is_default_ignorable(c: char) -> bool {
    let c = u32::from(c);
    DEFAULT_IGNORABLE
        .binary_search_by(|&(first, last)| {
            if last < c {
                std::cmp::Ordering::Less
            } else if first > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Shows a value the sandbox may have chosen (a path, a name) as
/// [`printable`] does, line breaks included: put it around such values in
/// error messages, `#[error("cannot read {}", Shown(path))]`, so that no
/// name can carry a raw newline into a message and forge a line of its own
/// (messages pass through [`printable_lines`], which keeps line breaks).
#[derive(Debug, Clone, Copy)]
pub struct Shown<T>(pub T);

impl<T: AsRef<OsStr>> std::fmt::Display for Shown<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&printable(self.0.as_ref()))
    }
}

/// JSON text (as serde_json writes it) with the same characters escaped
/// as JSON `\uXXXX` escapes: the same value, but nothing in it can act on
/// a terminal. serde_json escapes C0 controls in strings itself and writes
/// no other such character outside strings, so only the line breaks of
/// pretty printing stay as they are.
pub fn json_printable(json: &str) -> String {
    if !json.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c != '\n' && is_unsafe(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Unicode's format characters (general category Cf: bidirectional
/// controls, zero-width characters, invisible operators, tags) and the line
/// and paragraph separators (Zl, Zp), which some terminals treat as line
/// breaks.
fn is_format(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn plain_text_is_unchanged() {
        for s in [
            "",
            "api.example.com:443",
            "/home/u/proj/src/main.rs",
            "naïve café 日本語 ×3 …",
            "emoji 🦀",
        ] {
            assert_eq!(printable(s), s);
        }
    }

    #[test]
    fn every_class_is_escaped() {
        let cases: &[(&str, &str)] = &[
            // C0, with the sequences a review used: erase line, OSC 52
            // clipboard write, SGR 8 (hidden text).
            ("repo\x1b[2K", "repo\\x1b[2K"),
            ("\x1b]52;c;ZWNobyBoaQ==\x07", "\\x1b]52;c;ZWNobyBoaQ==\\x07"),
            ("\x1b[8mhidden\x1b[0m", "\\x1b[8mhidden\\x1b[0m"),
            ("a\0b\tc\nd\re", "a\\x00b\\x09c\\x0ad\\x0de"),
            ("del\x7f", "del\\x7f"),
            // C1: CSI and NEL.
            ("c1\u{9b}2K\u{85}", "c1\\u{9b}2K\\u{85}"),
            // Bidirectional controls.
            (
                "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}",
                "\\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{202e}",
            ),
            (
                "\u{2066}\u{2067}\u{2068}\u{2069}",
                "\\u{2066}\\u{2067}\\u{2068}\\u{2069}",
            ),
            ("\u{200e}\u{200f}\u{61c}", "\\u{200e}\\u{200f}\\u{61c}"),
            // Invisible format characters.
            (
                "evil\u{200b}\u{200c}\u{200d}.example",
                "evil\\u{200b}\\u{200c}\\u{200d}.example",
            ),
            (
                "\u{2060}\u{2061}\u{2062}\u{2063}\u{2064}\u{feff}",
                "\\u{2060}\\u{2061}\\u{2062}\\u{2063}\\u{2064}\\u{feff}",
            ),
            // Other Cf characters: soft hyphen, Arabic number sign, tags.
            ("\u{ad}\u{600}\u{e0041}", "\\u{ad}\\u{600}\\u{e0041}"),
            // Line and paragraph separators.
            ("\u{2028}\u{2029}", "\\u{2028}\\u{2029}"),
            // Escaping twice changes nothing.
            ("\\x1b[2K", "\\x1b[2K"),
        ];
        for (raw, shown) in cases {
            assert_eq!(printable(raw), *shown, "{raw:?}");
        }
    }

    #[test]
    fn json_stays_json_and_holds_nothing_raw() {
        let value = serde_json::json!({
            "subject": "evil\u{202e}gpj\u{85}\u{200b}\u{1b}[2K\u{e0041}",
            "n": 1
        });
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let safe = json_printable(&text);
            assert!(!safe.chars().any(|c| c != '\n' && is_unsafe(c)), "{safe}");
            assert!(
                safe.contains("\\u202e") && safe.contains("\\udb40\\udc41"),
                "{safe}"
            );
            let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
            assert_eq!(back, value);
        }
        assert_eq!(json_printable("{\"a\":\"b\"}"), "{\"a\":\"b\"}");
    }

    #[test]
    fn lines_keep_their_breaks() {
        assert_eq!(
            printable_lines("refusing: \u{202e}x\n  fix: \x1b[8m"),
            "refusing: \\u{202e}x\n  fix: \\x1b[8m"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_escaped() {
        let path = std::path::Path::new(OsStr::from_bytes(b"/p/\xff\xfeok\xc3"));
        assert_eq!(printable(path), "/p/\\xff\\xfeok\\xc3");
        let mixed = OsStr::from_bytes(b"\xe2\x80\xae\x80");
        assert_eq!(printable(mixed), "\\u{202e}\\x80");
    }

    #[test]
    fn output_holds_no_control_or_format_character() {
        let all: String = (0u32..0x11_0000).filter_map(char::from_u32).collect();
        let shown = printable(&all);
        for c in shown.chars() {
            assert!(
                !c.is_control() && !is_format(c) && !is_default_ignorable(c),
                "{:x} passed through",
                u32::from(c)
            );
        }
    }

    #[test]
    fn every_default_ignorable_range_is_escaped() {
        // The ranges a review found passing, and the rest of the table.
        for &(first, last) in DEFAULT_IGNORABLE {
            for c in (first..=last).filter_map(char::from_u32) {
                let shown = printable(format!("a{c}b"));
                assert_eq!(shown, format!("a\\u{{{:x}}}b", u32::from(c)));
            }
        }
        for c in [
            '\u{3164}', '\u{34f}', '\u{115f}', '\u{1160}', '\u{17b4}', '\u{17b5}',
        ] {
            assert!(printable(c.to_string()).starts_with("\\u{"), "{c:?}");
        }
        for c in [
            '\u{180b}',
            '\u{180f}',
            '\u{ffa0}',
            '\u{fe00}',
            '\u{fe0f}',
            '\u{e0000}',
            '\u{e0fff}',
        ] {
            assert!(printable(c.to_string()).starts_with("\\u{"), "{c:?}");
        }
        // Neighbours stay as they are.
        for c in [
            '\u{3163}', '\u{3165}', '\u{17b3}', '\u{17b6}', '\u{fdff}', '\u{fe10}',
        ] {
            assert_eq!(printable(c.to_string()), c.to_string());
        }
        let json = json_printable("{\"s\":\"\u{3164}\"}");
        assert_eq!(json, "{\"s\":\"\\u3164\"}");
    }

    #[test]
    fn shown_escapes_line_breaks_too() {
        let path = std::path::Path::new("/p/x\ncordon: all clear\r\u{202e}");
        let message = format!("cannot read {}", Shown(path));
        assert_eq!(
            message,
            "cannot read /p/x\\x0acordon: all clear\\x0d\\u{202e}"
        );
        assert!(!printable_lines(&message).contains('\n'));
        assert_eq!(Shown(&path.to_path_buf()).to_string(), printable(path));
        assert_eq!(Shown("plain").to_string(), "plain");
    }
}
