//! The answer to an `--ask` question, read from what the terminal sends:
//! a line typed and ended with Enter, with every escape sequence left out.
//!
//! A terminal sends more than keys. The command inside can make it answer
//! queries (a colour query's reply holds `rgb:aaaa/...`, and `a` is
//! "always"), report the mouse or focus, or send the escape sequence of an
//! arrow or function key the user pressed. None of that may count as an
//! answer: every sequence the terminal can send (ECMA-48's CSI, SS3, and
//! the strings OSC, DCS, APC, PM and SOS, in their 7-bit and 8-bit forms
//! and the UTF-8 form of the C1 controls) is dropped, across reads, and the
//! answer is a whole line, so that a stray letter is never one. A line
//! during which anything was dropped is no answer either: the tail of a
//! reply whose head was thrown away (one larger than the terminal's input
//! buffer, cut by the flush before the question) ends in a terminator the
//! reader sees, so its letters never count. A sequence read wrongly only
//! ever drops keys, never makes one; an 8-bit string terminator (0x9c, or
//! C2 9C in UTF-8) is not taken as one, as a title the command set may
//! hold it, so such a string leaves every later key dropped, and the
//! question is denied when its time is up.

/// What one byte, or one sequence, of terminal input means to the prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A printable ASCII character.
    Char(u8),
    /// Enter (CR or LF).
    Enter,
    /// Backspace or DEL.
    Erase,
    /// Ctrl-C or Ctrl-D: refuse.
    Cancel,
}

/// Where the reader is inside an escape sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Between sequences.
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and an intermediate byte (`ESC ( B`).
    EscapeIntermediate,
    /// Inside a control sequence (`ESC [`), until its final byte; true
    /// once a parameter or intermediate byte came.
    Csi(bool),
    /// Raw bytes a sequence carries after its final byte (a mouse report
    /// in the X10 form, `ESC [ M` and three bytes, each possibly a letter).
    Skip(u8),
    /// After SS3 (`ESC O`): one more byte.
    Ss3,
    /// Inside a string (OSC, DCS, APC, PM, SOS), until BEL or ST.
    String,
    /// Inside a string, after ESC (ST is `ESC \`).
    StringEscape,
    /// After 0xC2, the first byte of a C1 control in UTF-8.
    Utf8C1,
}

/// Turns terminal input into [`Key`]s, holding a sequence split between
/// reads.
#[derive(Debug, Default)]
pub struct KeyReader {
    state: State,
    /// A byte that made no key came since [`KeyReader::take_dropped`].
    dropped: bool,
    /// The parameter bytes of the control sequence being read (the first
    /// few: enough to tell a paste's brackets).
    params: Vec<u8>,
    /// Inside a bracketed paste (`ESC [ 200 ~` to `ESC [ 201 ~`): what is
    /// pasted was not typed as an answer, so it makes no key.
    pasting: bool,
}

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

impl KeyReader {
    /// The keys in `bytes`, the next piece of what the terminal sent.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        let mut keys = Vec::new();
        for &byte in bytes {
            if let Some(key) = self.byte(byte) {
                keys.push(key);
            }
        }
        keys
    }

    /// Whether anything was dropped since the last call.
    pub fn take_dropped(&mut self) -> bool {
        std::mem::take(&mut self.dropped)
    }

    fn byte(&mut self, byte: u8) -> Option<Key> {
        let key = self.read(byte).filter(|_| !self.pasting);
        if key.is_none() {
            self.dropped = true;
        }
        key
    }

    fn read(&mut self, byte: u8) -> Option<Key> {
        match self.state {
            State::Ground => return self.ground(byte),
            State::Escape => self.escape(byte),
            State::EscapeIntermediate => {
                if !(0x20..=0x2f).contains(&byte) {
                    self.state = State::Ground;
                }
            }
            State::Csi(any) => {
                // Parameters and intermediates, then one final byte; a
                // byte outside a sequence's range ends it too.
                if (0x20..=0x3f).contains(&byte) && self.params.len() < 8 {
                    self.params.push(byte);
                }
                if byte == b'~' {
                    match self.params.as_slice() {
                        b"200" => self.pasting = true,
                        b"201" => self.pasting = false,
                        _ => {}
                    }
                }
                self.state = match byte {
                    0x20..=0x3f => State::Csi(true),
                    b'M' if !any => State::Skip(3),
                    // The Linux console's F1 to F5: `ESC [ [ A` to `E`.
                    b'[' if !any => State::Skip(1),
                    b't' if !any => State::Skip(2),
                    b'T' if !any => State::Skip(6),
                    _ => State::Ground,
                };
            }
            State::Skip(left) => {
                self.state = if left > 1 {
                    State::Skip(left - 1)
                } else {
                    State::Ground
                };
            }
            State::Ss3 => self.state = State::Ground,
            // Not the 8-bit ST (0x9c): in UTF-8 that byte continues a
            // character the string may hold (a title the command set).
            State::String => match byte {
                BEL => self.state = State::Ground,
                ESC => self.state = State::StringEscape,
                _ => {}
            },
            State::StringEscape => {
                self.state = match byte {
                    b'\\' => State::Ground,
                    ESC => State::StringEscape,
                    _ => State::String,
                };
            }
            State::Utf8C1 => {
                self.state = State::Ground;
                if (0x80..=0x9f).contains(&byte) {
                    self.c1(byte);
                }
            }
        }
        None
    }

    fn ground(&mut self, byte: u8) -> Option<Key> {
        match byte {
            ESC => self.state = State::Escape,
            0xc2 => self.state = State::Utf8C1,
            0x80..=0x9f => self.c1(byte),
            b'\r' | b'\n' => return Some(Key::Enter),
            0x08 | 0x7f => return Some(Key::Erase),
            0x03 | 0x04 => return Some(Key::Cancel),
            0x20..=0x7e => return Some(Key::Char(byte)),
            // Other controls, and the rest of UTF-8: no answer holds them.
            _ => {}
        }
        None
    }

    /// After ESC: the 7-bit form of a C1 control, or an Alt-modified key.
    fn escape(&mut self, byte: u8) {
        self.state = match byte {
            b'[' => {
                self.params.clear();
                State::Csi(false)
            }
            b'O' => State::Ss3,
            b']' | b'P' | b'_' | b'^' | b'X' => State::String,
            ESC => State::Escape,
            0x20..=0x2f => State::EscapeIntermediate,
            // ESC and one byte: a sequence of its own, or Alt and a key.
            _ => State::Ground,
        };
    }

    /// A C1 control byte (0x80 to 0x9f), as ESC and `byte - 0x40`.
    fn c1(&mut self, byte: u8) {
        self.escape(byte - 0x40);
    }
}

/// The most a typed answer holds; a longer line is no answer.
pub const MAX_LINE: usize = 16;

#[cfg(test)]
#[path = "ask_keys_tests.rs"]
mod tests;
