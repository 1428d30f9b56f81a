//! One process's input as the approval gate sees it: who reads it, and what is held
//! back until it is complete enough to judge (the rules are in `stdin_gate.rs`,
//! which judges and delivers it).

use hermetic_detect::{Detector, Judged, Reader};

/// Most input held for one process (bytes): the detector's input cap. Held input that
/// grows past it is judged as it is.
pub(crate) const MAX_HELD: usize = hermetic_detect::limits::MAX_INPUT_BYTES;

/// Most readers one process's input is judged for.
const MAX_READERS: usize = 8;

/// A piece of input ready to be judged, then delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Exactly the bytes the process will read.
    pub text: String,
    /// It continues a line whose start was delivered before its end (past
    /// [`MAX_HELD`]): what the whole line does cannot be judged.
    pub continues_unjudged: bool,
}

/// One process's input: who reads it, and what is held.
#[derive(Debug)]
pub(crate) struct InputGate {
    /// What reads the process's stdin as code; none: data.
    readers: Vec<Reader>,
    /// The process runs on a pseudo-terminal.
    pty: bool,
    /// Written, not yet judged nor delivered.
    held: String,
    /// Delivered up to the middle of a line (held input past the cap).
    mid_line: bool,
    /// A piece of this input is being judged; another write is refused meanwhile
    /// (rather than waiting behind a human's answer past its own deadline).
    pub(crate) busy: bool,
    /// A shell reader's working directory, its `cd`s followed by the detector.
    cwd: String,
}

impl InputGate {
    /// The input of a process whose stdin `readers` read (see [`Judged::readers`]),
    /// started in `cwd`.
    pub(crate) fn new(readers: Vec<Reader>, pty: bool, cwd: String) -> Self {
        let mut gate = Self {
            readers: Vec::new(),
            pty,
            held: String::new(),
            mid_line: false,
            busy: false,
            cwd,
        };
        for r in readers {
            gate.add_reader(r);
        }
        gate
    }

    /// Nothing reads it as code: what it is sent is delivered as written.
    pub(crate) fn is_data(&self) -> bool {
        self.readers.is_empty()
    }

    /// What reads it.
    pub(crate) fn readers(&self) -> &[Reader] {
        &self.readers
    }

    /// It is typed at a pseudo-terminal.
    pub(crate) fn pty(&self) -> bool {
        self.pty
    }

    /// The working directory its shell reader is in, as far as the detector follows.
    pub(crate) fn cwd(&self) -> &str {
        &self.cwd
    }

    /// Bytes held.
    pub(crate) fn held(&self) -> usize {
        self.held.len()
    }

    fn has_shell(&self) -> bool {
        self.readers
            .iter()
            .any(|r| matches!(r, Reader::Shell { .. }))
    }

    fn add_reader(&mut self, reader: Reader) {
        if !self.readers.contains(&reader) && self.readers.len() < MAX_READERS {
            self.readers.push(reader);
        }
    }

    /// Takes `data`: returns what is ready to judge (complete lines, for a shell
    /// complete statements), holding the rest; `None` while everything is held.
    pub(crate) fn take(&mut self, data: &str, detector: &Detector) -> Option<Piece> {
        self.held.push_str(data);
        let pty = self.pty;
        let ready = match self.held.rfind(|c| c == '\n' || (pty && c == '\r')) {
            Some(end) => {
                let complete = &self.held[..=end];
                // A shell waits for the end of a statement; every reader joins a line
                // that ends in `\` to the next (Python, JavaScript strings, shells).
                let unfinished = continues(complete)
                    || (self.has_shell() && detector.shell_needs_more(&as_typed(complete, pty)));
                if unfinished { 0 } else { end + 1 }
            }
            None => 0,
        };
        if self.held.len() - ready > MAX_HELD {
            // Past the cap: everything is judged as it is, and the line it ends in
            // cannot be judged whole any more.
            let text = std::mem::take(&mut self.held);
            let piece = Piece {
                continues_unjudged: self.mid_line,
                text,
            };
            self.mid_line = !piece.text.ends_with(['\n', '\r']);
            return Some(piece);
        }
        if ready == 0 {
            return None;
        }
        let rest = self.held.split_off(ready);
        let text = std::mem::replace(&mut self.held, rest);
        let piece = Piece {
            text,
            continues_unjudged: self.mid_line,
        };
        self.mid_line = false;
        Some(piece)
    }

    /// At close: everything held, to be judged as it is.
    pub(crate) fn take_rest(&mut self) -> Option<Piece> {
        if self.held.is_empty() {
            return None;
        }
        let piece = Piece {
            text: std::mem::take(&mut self.held),
            continues_unjudged: self.mid_line,
        };
        self.mid_line = false;
        Some(piece)
    }

    /// `piece` was approved: what it starts reading the stdin (`python3` typed at a
    /// shell) is judged from now on too, and so, after an approved dangerous piece
    /// (whatever it started), is every line as a shell command.
    pub(crate) fn approved(&mut self, judged: &Judged, dangerous: bool) {
        for r in &judged.readers {
            self.add_reader(*r);
        }
        if dangerous {
            self.add_reader(Reader::Unknown);
        }
        if self.has_shell() {
            judged.cwd.clone_into(&mut self.cwd);
        }
    }

    /// `piece` was refused: it is dropped with everything held after it. Returns the
    /// held bytes dropped.
    pub(crate) fn refused(&mut self, piece: &Piece) -> usize {
        let dropped = self.held.len();
        self.held.clear();
        // The process still has whatever line the piece was to finish.
        self.mid_line = piece.continues_unjudged;
        dropped
    }
}

/// True when `text`'s last line ends in an unescaped backslash: it continues.
fn continues(text: &str) -> bool {
    let body = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix(['\n', '\r']))
        .unwrap_or(text);
    (body.len() - body.trim_end_matches('\\').len()) % 2 == 1
}

/// `text` as a reader on a terminal sees it: CR ends a line.
fn as_typed(text: &str, pty: bool) -> std::borrow::Cow<'_, str> {
    if pty && text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n").into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermetic_detect::{CodeLang, Frame};

    const BASH: Reader = Reader::Shell {
        bash: true,
        interactive: false,
    };

    fn gate(readers: &[Reader], pty: bool) -> InputGate {
        InputGate::new(readers.to_vec(), pty, "/ws".into())
    }

    #[test]
    fn a_partial_line_is_held_until_its_newline() {
        let d = Detector::default();
        let mut g = gate(&[BASH], false);
        assert_eq!(g.take("r", &d), None);
        assert_eq!(g.take("m -rf victim", &d), None);
        assert_eq!(g.held(), "rm -rf victim".len());
        let piece = g.take(" \n", &d).unwrap();
        assert_eq!(piece.text, "rm -rf victim \n");
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn a_shell_statement_is_held_until_complete() {
        let d = Detector::default();
        let mut g = gate(&[BASH], false);
        assert_eq!(g.take("for f in a b; do\n", &d), None);
        assert_eq!(g.take("  rm -rf \"$f\"\n", &d), None);
        let piece = g.take("done\necho x", &d).unwrap();
        assert_eq!(piece.text, "for f in a b; do\n  rm -rf \"$f\"\ndone\n");
        assert_eq!(g.held(), "echo x".len());
        // A continuation line joins the next.
        let mut g = gate(&[BASH], false);
        assert_eq!(g.take("r\\\n", &d), None);
        assert_eq!(g.take("m -rf v\n", &d).unwrap().text, "r\\\nm -rf v\n");
    }

    #[test]
    fn other_readers_take_complete_lines_joining_continued_ones() {
        let d = Detector::default();
        let mut g = gate(&[Reader::Code(CodeLang::Python)], false);
        assert_eq!(g.take("def f():\n", &d).unwrap().text, "def f():\n");
        assert_eq!(g.take("  return 1", &d), None);
        let mut g = gate(&[Reader::Code(CodeLang::Python)], false);
        assert_eq!(g.take("x = __imp\\\n", &d), None);
        assert_eq!(
            g.take("ort__('os')\n", &d).unwrap().text,
            "x = __imp\\\nort__('os')\n"
        );
        assert_eq!(g.take("s = 'a\\\\'\n", &d).unwrap().text, "s = 'a\\\\'\n");
    }

    #[test]
    fn on_a_terminal_cr_ends_a_line() {
        let d = Detector::default();
        let mut g = gate(&[BASH], true);
        assert_eq!(g.take("ls\r", &d).unwrap().text, "ls\r");
        let mut g = gate(&[BASH], false);
        assert_eq!(g.take("ls\r", &d), None);
    }

    #[test]
    fn a_refusal_drops_what_was_held_with_it() {
        let d = Detector::default();
        let mut g = gate(&[BASH], false);
        let piece = g.take("rm -rf v\nr", &d).unwrap();
        assert_eq!(g.refused(&piece), 1);
        assert_eq!(g.held(), 0);
        assert_eq!(g.take("m -rf w", &d), None);
        assert_eq!(g.take_rest().unwrap().text, "m -rf w");
    }

    #[test]
    fn held_input_past_the_cap_is_judged_as_it_is_and_its_line_stays_suspect() {
        let d = Detector::default();
        let mut g = gate(&[BASH], false);
        let long = "x".repeat(MAX_HELD + 1);
        let piece = g.take(&long, &d).unwrap();
        assert!(!piece.continues_unjudged);
        assert_eq!(piece.text.len(), MAX_HELD + 1);
        assert_eq!(g.take("; rm -rf v", &d), None);
        let rest = g.take("\n", &d).unwrap();
        assert!(rest.continues_unjudged, "{rest:?}");
        assert_eq!(rest.text, "; rm -rf v\n");
        // The next line is judged alone again.
        assert!(!g.take("ls\n", &d).unwrap().continues_unjudged);
    }

    #[test]
    fn an_approved_piece_adds_the_readers_it_starts() {
        let d = Detector::default();
        let mut g = gate(&[BASH], false);
        let judged = d.judge_input("python3\n", &[BASH], false, &Frame::default());
        g.approved(&judged, false);
        assert_eq!(g.readers, [BASH, Reader::Code(CodeLang::Python)]);
        g.approved(&judged, true);
        assert!(g.readers.contains(&Reader::Unknown));
    }

    #[test]
    fn data_is_not_judged() {
        let g = gate(&[], false);
        assert!(g.is_data());
    }
}
