//! The terminal side of `cordon run --ask`: each question of the proxy's
//! [`Asker`] shown on the caller's controlling terminal, one at a time,
//! and answered with a typed line. While a question is on screen the
//! relay between the terminal and the sandbox's pty pauses, so what is
//! typed reaches cordon and not the command, and nothing the command
//! prints runs over the question.
//!
//! The sandbox cannot answer: its processes have a pty of their own, and
//! no descriptor of the caller's terminal. What it can do is make the
//! terminal send input of its own (replies to queries, reports) and leave
//! the terminal in a mode that hides text. So before a question shows,
//! cordon lets the terminal's replies to what the command printed arrive
//! ([`SETTLE`]) and throws away everything typed or sent so far, resets
//! the modes that hide or move text, and then reads only a line typed
//! after the question, with every escape sequence dropped (see
//! [`super::ask_keys`]).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::termios::{self, FlushArg, LocalFlags, OutputFlags};

use super::ask_keys::{Key, KeyReader, MAX_LINE};
use crate::escape::printable;
use crate::net::ask::{Answer, Asker, Question};
use crate::policy::host::HOST_INTERNAL;

/// How long the terminal gets to send its replies to what the command
/// printed before the question (they are thrown away then, with anything
/// typed ahead): a local terminal replies within milliseconds, one over
/// SSH within a round trip.
pub const SETTLE: Duration = Duration::from_millis(250);

/// How long after a question shows what is typed is thrown away: a
/// command that asks the user for keys of its own ("type a and Enter to
/// accept") and connects at the first one must not have the next ones
/// answer cordon's question, typed before it could be read.
pub const HEED_AFTER: Duration = Duration::from_secs(1);

/// The longest the prompt waits, after the flush, for the terminal's input
/// to go quiet (a reply too large for the input buffer still coming).
const QUIET_WITHIN: Duration = Duration::from_secs(2);

/// What the prompt sends the terminal before a question, so that what the
/// command left set cannot hide it or draw over it: attributes (conceal,
/// colours), character sets, reverse video, origin and insert modes,
/// scroll margins, a hidden cursor, the colours set with OSC 4, 10 and 11;
/// mouse and focus reports off. Then the cursor goes to the bottom line.
const RESET: &str = concat!(
    "\x1b[0m\x1b(B\x0f\x1b[?25h\x1b[?5l\x1b[?6l\x1b[4l\x1b[?7h\x1b[r",
    "\x1b]104\x07\x1b]110\x07\x1b]111\x07",
    "\x1b[?9l\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l\x1b[?1004l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1016l",
    // Left and right margins, keypad application mode, 8-bit controls,
    // the kitty keyboard protocol's flags, synchronized output, an open
    // hyperlink (OSC 8).
    "\x1b[?69l\x1b>\x1b F\x1b[=0;1u\x1b[?2026l\x1b]8;;\x1b\\",
    "\x1b[999;1H\r\n",
);

/// What `cordon run --ask` needs, set up before the sandbox.
pub struct AskSetup {
    /// The caller's controlling terminal (`/dev/tty`), opened at start.
    pub tty: File,
    /// How long a question waits for its answer.
    pub timeout: Duration,
    /// Where "always" saves its rule: the user config.
    pub config_file: PathBuf,
}

/// The prompt, in the supervisor's loop.
pub struct Prompt {
    setup: AskSetup,
    asker: Arc<Asker>,
    /// The question on screen, and when it is refused unanswered.
    showing: Option<(Question, Instant)>,
    /// The terminal's input, read into keys.
    keys: KeyReader,
    /// What was typed since the question showed.
    line: Vec<u8>,
    /// The line is no answer whatever follows: something was dropped in
    /// it, or it grew past [`MAX_LINE`].
    spoiled: bool,
    /// Input before then is thrown away (see [`HEED_AFTER`]).
    heed_from: Instant,
    /// The user was told that keys came too soon (once a question).
    told_too_soon: bool,
}

impl Prompt {
    pub fn new(setup: AskSetup, asker: Arc<Asker>) -> Prompt {
        Prompt {
            setup,
            asker,
            showing: None,
            keys: KeyReader::default(),
            line: Vec::new(),
            spoiled: false,
            heed_from: Instant::now(),
            told_too_soon: false,
        }
    }

    /// Readable when a question waits.
    pub fn wake_fd(&self) -> BorrowedFd<'_> {
        self.asker.wake_fd()
    }

    /// The terminal, while a question is on screen (its key is read then).
    pub fn answering(&self) -> Option<BorrowedFd<'_>> {
        self.showing.as_ref().map(|_| self.setup.tty.as_fd())
    }

    /// How long until the question on screen is refused unanswered.
    pub fn time_left(&self) -> Option<Duration> {
        self.showing
            .as_ref()
            .map(|(_, at)| at.saturating_duration_since(Instant::now()))
    }

    /// Shows the next question, if none is on screen.
    pub fn woken(&mut self) {
        // Read whether or not one is on screen: the wake-up is spent.
        let next = self.asker.next();
        let (None, Some(question)) = (&self.showing, next) else {
            return;
        };
        self.settle();
        let seconds = self.setup.timeout.as_secs();
        let loopback = if question.shown.starts_with(&format!("{HOST_INTERNAL}:")) {
            " (a port on this machine's loopback, outside the sandbox)"
        } else {
            ""
        };
        let (warning, always) = match &question.warning {
            Some(why) => (
                format!(
                    "\r\n  WARNING: {}; it cannot be saved from here.",
                    printable(why)
                ),
                String::new(),
            ),
            None => (
                String::new(),
                format!(
                    " [a]lways (saves \"{}\" to {}),",
                    printable(&question.rule),
                    printable(self.setup.config_file.display().to_string()),
                ),
            ),
        };
        self.say(RESET);
        self.say(&format!(
            "cordon --ask: the sandbox wants to reach {}{loopback}, which no rule allows.{warning}\r\n  [o]nce, this [s]andbox,{always} [d]eny,\r\n  or [x] deny it and stop asking? Type a letter and Enter (denied in {seconds}s): ",
            printable(&question.shown),
        ));
        self.heed_from = Instant::now() + HEED_AFTER;
        self.told_too_soon = false;
        let until = Instant::now()
            .checked_add(self.setup.timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        self.showing = Some((question, until));
    }

    /// Lets the terminal's replies to what the command printed arrive,
    /// then throws them away with whatever was typed ahead, until the
    /// input is quiet (a reply larger than the input buffer keeps coming
    /// after the flush).
    fn settle(&mut self) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let _ = termios::tcdrain(self.setup.tty.as_fd());
        std::thread::sleep(SETTLE);
        let _ = termios::tcflush(self.setup.tty.as_fd(), FlushArg::TCIFLUSH);
        let until = Instant::now() + QUIET_WITHIN;
        while Instant::now() < until {
            let mut fds = [PollFd::new(self.setup.tty.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(100u8)) {
                Ok(0) => break,
                Ok(_) => {
                    let mut buf = [0u8; 4096];
                    if !matches!(self.setup.tty.read(&mut buf), Ok(n) if n > 0) {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        self.keys = KeyReader::default();
        self.line.clear();
        self.spoiled = false;
    }

    /// Reads what the terminal sent; a line is an answer once Enter ends
    /// it, and a line that is none asks again.
    pub fn key(&mut self) {
        let mut buf = [0u8; 256];
        let n = match self.setup.tty.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return,
            // The terminal went away: nobody can answer.
            Err(_) => 0,
        };
        if n == 0 {
            return self.finish(Answer::NoAnswer);
        }
        if Instant::now() < self.heed_from {
            // Read through the keys, so that a sequence split across the
            // moment is still one; then nothing of it counts.
            let typed = self
                .keys
                .feed(&buf[..n])
                .iter()
                .any(|k| matches!(k, Key::Char(_) | Key::Enter));
            self.keys.take_dropped();
            self.line.clear();
            self.spoiled = false;
            if typed && !self.told_too_soon {
                self.told_too_soon = true;
                let again = format!(
                    "\r\n  (Typed before the question could be read, so not taken.) Type {}, then Enter: ",
                    self.answers()
                );
                self.say(&again);
            }
            return;
        }
        // The terminal echoes in canonical mode; in raw mode (the relay's)
        // the prompt does.
        let echo = !self.terminal_echoes();
        let keys = self.keys.feed(&buf[..n]);
        // Something dropped in this read spoils the line (the tail of a
        // reply cut by the flush ends in a terminator; an arrow the user
        // pressed: typing again is cheap).
        if self.keys.take_dropped() {
            self.spoiled = true;
        }
        for key in keys {
            match key {
                Key::Char(c) if self.line.len() < MAX_LINE => {
                    self.line.push(c);
                    if echo {
                        self.say(&(c as char).to_string());
                    }
                }
                Key::Char(_) => self.spoiled = true,
                Key::Erase => {
                    if self.line.pop().is_some() && echo {
                        self.say("\x08 \x08");
                    }
                }
                Key::Cancel => return self.finish(Answer::Deny),
                Key::Enter => {
                    let typed = std::mem::take(&mut self.line);
                    let spoiled = std::mem::take(&mut self.spoiled);
                    let can_save = self.can_save();
                    let text = String::from_utf8_lossy(&typed).trim().to_ascii_lowercase();
                    let answer = match text.as_str() {
                        _ if spoiled => None,
                        "o" | "once" => Some(Answer::Once),
                        "s" | "sandbox" => Some(Answer::Sandbox),
                        "a" | "always" if can_save => Some(self.save()),
                        "d" | "deny" | "n" | "no" => Some(Answer::Deny),
                        "x" => Some(Answer::StopAsking),
                        _ => None,
                    };
                    let Some(answer) = answer else {
                        let letters = self.answers();
                        let held = if spoiled {
                            "That line held more than an answer. "
                        } else {
                            ""
                        };
                        self.say(&format!("\r\n  {held}Type {letters}, then Enter: "));
                        continue;
                    };
                    return self.finish(answer);
                }
            }
        }
    }

    /// Before the command's last output is drained at exit: the question
    /// on screen ends its line, so that output starts on a line of its
    /// own (the question is closed after it, see [`Drop`]).
    pub fn before_last_output(&mut self) {
        if self.showing.is_some() {
            self.say(RESET);
        }
    }

    /// Whether the question on screen may be answered "always".
    fn can_save(&self) -> bool {
        self.showing
            .as_ref()
            .is_some_and(|(q, _)| q.warning.is_none())
    }

    /// The answers the question on screen takes.
    fn answers(&self) -> &'static str {
        if self.can_save() {
            "o, s, a, d or x"
        } else {
            "o, s, d or x"
        }
    }

    /// Whether the terminal echoes what is typed (canonical mode, not the
    /// relay's raw mode).
    fn terminal_echoes(&self) -> bool {
        termios::tcgetattr(self.setup.tty.as_fd())
            .is_ok_and(|t| t.local_flags.contains(LocalFlags::ECHO))
    }

    /// Refuses the question on screen if its time is up.
    pub fn tick(&mut self) {
        if self.time_left() == Some(Duration::ZERO) {
            self.finish(Answer::NoAnswer);
        }
    }

    /// Saves the rule of the question on screen to the user config.
    fn save(&mut self) -> Answer {
        let Some((question, _)) = &self.showing else {
            return Answer::NoAnswer;
        };
        let file = &self.setup.config_file;
        match crate::policy::load::save::add_allow(
            file,
            &question.rule,
            &crate::sys::replace::replace_file,
        ) {
            Ok(()) => Answer::Saved(file.display().to_string()),
            Err(e) => {
                let message = format!(
                    "\r\ncordon --ask: could not save to {}: {}; allowed for this sandbox only",
                    printable(file.display().to_string()),
                    printable(e.to_string())
                );
                self.say(&message);
                Answer::Sandbox
            }
        }
    }

    fn finish(&mut self, answer: Answer) {
        let Some((question, _)) = self.showing.take() else {
            return;
        };
        let how = match &answer {
            Answer::Once => "allowed once".to_string(),
            Answer::Sandbox => "allowed for this sandbox".to_string(),
            Answer::Saved(file) => format!("allowed, and saved to {}", printable(file)),
            Answer::Deny => "denied for this sandbox".to_string(),
            Answer::StopAsking => {
                "denied; nothing more is asked, and what no rule allows is denied".to_string()
            }
            Answer::NotAsked | Answer::NoAnswer => "no answer: denied".to_string(),
        };
        self.say(&format!(
            "\r\ncordon --ask: {}: {how}\r\n",
            printable(&question.shown)
        ));
        self.asker.answer(answer);
        // The next question, if one waits.
        self.woken();
    }

    fn say(&mut self, text: &str) {
        // A terminal that turns LF into CRLF itself (canonical mode) gets
        // LF alone.
        let crlf = termios::tcgetattr(self.setup.tty.as_fd()).is_ok_and(|t| {
            t.output_flags
                .contains(OutputFlags::OPOST | OutputFlags::ONLCR)
        });
        let text = if crlf {
            text.replace("\r\n", "\n")
        } else {
            text.to_string()
        };
        let _ = self.setup.tty.write_all(text.as_bytes());
    }
}

impl Drop for Prompt {
    /// A question still on screen when the run ends is closed there, in
    /// modes the command's last output cannot have left hiding it.
    fn drop(&mut self) {
        if let Some((question, _)) = self.showing.take() {
            self.say(RESET);
            self.say(&format!(
                "cordon --ask: {}: the run ended before an answer: denied\r\n",
                printable(&question.shown)
            ));
            self.asker.answer(Answer::NoAnswer);
        }
    }
}
