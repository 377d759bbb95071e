//! The terminal side of `cordon run --ask`: each question of the proxy's
//! [`Asker`] shown on the caller's controlling terminal, one at a time,
//! and answered with one key. While a question is on screen the relay
//! between the terminal and the sandbox's pty pauses, so the key reaches
//! cordon and not the command, and nothing the command prints runs over
//! the question. The sandbox cannot answer: its processes have a pty of
//! their own, and no descriptor of the caller's terminal.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::escape::printable;
use crate::net::ask::{Answer, Asker, Question};

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
}

impl Prompt {
    pub fn new(setup: AskSetup, asker: Arc<Asker>) -> Prompt {
        Prompt {
            setup,
            asker,
            showing: None,
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
        let seconds = self.setup.timeout.as_secs();
        self.say(&format!(
            "\r\ncordon --ask: the sandbox wants to reach {}, which no rule allows.\r\n  [o]nce, this [s]andbox, [a]lways (saves \"{}\" to {}), or [d]eny? (denied in {seconds}s) ",
            printable(&question.shown),
            printable(&question.rule),
            printable(self.setup.config_file.display().to_string()),
        ));
        self.showing = Some((question, Instant::now() + self.setup.timeout));
    }

    /// Reads the key the user pressed; a key that is no answer is ignored.
    pub fn key(&mut self) {
        let mut buf = [0u8; 64];
        let n = match self.setup.tty.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return,
            // The terminal went away: nobody can answer.
            Err(_) => 0,
        };
        if n == 0 {
            return self.finish(Answer::NoAnswer);
        }
        let picked = buf[..n].iter().find_map(|b| match b.to_ascii_lowercase() {
            b'o' => Some('o'),
            b's' => Some('s'),
            b'a' => Some('a'),
            // Ctrl-C and Ctrl-D (the terminal is raw while the relay runs).
            b'd' | b'n' | 0x03 | 0x04 => Some('d'),
            _ => None,
        });
        let answer = match picked {
            None => return,
            Some('o') => Answer::Once,
            Some('s') => Answer::Sandbox,
            Some('a') => self.save(),
            Some(_) => Answer::Deny,
        };
        self.finish(answer);
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
            Answer::NoAnswer => "no answer: denied".to_string(),
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
        let _ = self.setup.tty.write_all(text.as_bytes());
    }
}
