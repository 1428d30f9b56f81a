//! Input to a running process, held and judged before a byte of it is delivered.
//!
//! What a background process reads from its stdin can be code: `bash` runs each
//! statement, `python3` each line, `sqlite3` each query. Judging each `write` alone is
//! not enough — `write "r"`, `write "m -rf victim"`, `submit " "` is `rm -rf victim` to
//! the shell, and whitespace alone looks harmless — so the gate keeps what the process
//! has not been given yet and judges what it will actually read:
//!
//! - a partial line (no newline yet) is held, not written;
//! - complete lines (all of one write together) are judged in the language of the
//!   process's readers ([`Reader`], found when its command was judged) and delivered
//!   only once approved; `submit` completes a line, so it is always judged;
//! - for a shell, lines are held until the statement they belong to is complete (an
//!   open quote, `for` without `done`, a here-document without its end line, a
//!   trailing `\`), then the whole is judged, as the shell will run it;
//! - at `close` whatever is held is judged as it is;
//! - a refused piece is discarded with everything held with it, so no later write can
//!   complete it into something else;
//! - held input past [`MAX_HELD`](crate::input_gate::MAX_HELD) is judged as it is (too large: a human must look),
//!   and the rest of a line cut there is judged as too large too.
//!
//! A process whose command has no reader (filters such as `cat` or `sort`) gets its data
//! as written. On a pseudo-terminal CR ends a line as LF does, and control characters
//! (line editing, completion, signals) are dangerous to the judge. The text delivered
//! is held to the same rule as the text written: a script's judged text is pinned into
//! a line for an interactive shell or a terminal only when it reads as written (no tab,
//! control character, non-ASCII byte, `!` or `^`; `script_pin.rs`), and not at all
//! once a dangerous piece was approved (the shell's functions are then unknown).

use super::input_gate::{InputGate, Piece};
use super::script_pin::Runner;
use super::{TenantTerminal, TerminalCall};
use crate::process::{Proc, StdinWrite};
use hermetic::{ProcessReply, TerminalCallError, WriteOutcome};
use hermetic_approval::SessionKey;
use hermetic_detect::{Detection, Frame, Hit, Judged, Reader, RuleId, Tier};
use std::sync::Arc;

/// Marks `detection` as judging a piece that continues a line too long to judge.
fn too_large(detection: &mut Detection) {
    let rule = RuleId::TooLarge;
    detection.hits.insert(
        0,
        Hit {
            rule,
            tier: rule.tier(),
            description: rule.description(),
            command: "(the rest of an input line too long to judge whole)".to_owned(),
        },
    );
    detection.tier = detection.tier.max(rule.tier());
    debug_assert!(detection.tier >= Tier::Dangerous);
}

/// Adds to a gate refusal what became of the input.
fn with_note(error: TerminalCallError, note: &str) -> TerminalCallError {
    match error {
        TerminalCallError::Blocked(mut r) => {
            r.message = format!("{} {note}", r.message);
            TerminalCallError::Blocked(r)
        }
        TerminalCallError::PendingApproval(mut r) => {
            r.message = format!("{} {note}", r.message);
            TerminalCallError::PendingApproval(r)
        }
        other => other,
    }
}

/// Clears a process's `busy` mark however its judgement ends.
struct Judging<'p>(&'p Proc);

impl Drop for Judging<'_> {
    fn drop(&mut self) {
        self.0.input().busy = false;
    }
}

impl TerminalCall<'_> {
    /// Judges `piece`, input for a process whose stdin `readers` read: in the
    /// session's frame (the files its commands wrote), with the script files a shell
    /// reading it runs (`script_pin.rs`), through the tenant's gate. On approval the
    /// session remembers what the piece wrote; `Ok` has the judgement, whether it
    /// was dangerous, and the text to deliver (its scripts pinned to the text judged).
    fn judge_piece(
        &self,
        t: &TenantTerminal,
        key: &SessionKey,
        piece: &Piece,
        readers: &[Reader],
        pty: bool,
        cwd: &str,
    ) -> Result<(Judged, bool, String), TerminalCallError> {
        let fresh = self.host.files.of(key);
        let mut judged =
            t.gate
                .detector()
                .judge_input(&piece.text, readers, pty, &Frame { fresh: &fresh, cwd });
        if piece.continues_unjudged {
            too_large(&mut judged.detection);
        }
        let scripts = self.pin_scripts(t, &piece.text, &mut judged, Runner::of(readers, pty), cwd);
        let dangerous = !judged.detection.is_safe();
        self.decide(t, &scripts.shown, judged.detection.clone())
            .map_err(|e| scripts.explain(e))?;
        self.host.files.remember(key, &judged.wrote);
        Ok((judged, dangerous, scripts.run))
    }

    /// Judges the first piece of a background command's `stdin` (given at start)
    /// for a process about to start with `input`: `Ok` with the bytes to deliver.
    pub(crate) fn admit_start_input(
        &self,
        t: &TenantTerminal,
        input: &mut InputGate,
        stdin: &str,
    ) -> Result<Option<String>, TerminalCallError> {
        if input.is_data() {
            return Ok(Some(stdin.to_owned()));
        }
        let Some(piece) = input.take(stdin, t.gate.detector()) else {
            return Ok(None);
        };
        let (judged, dangerous, text) = self.judge_piece(
            t,
            &self.key(),
            &piece,
            input.readers(),
            input.pty(),
            input.cwd(),
        )?;
        input.approved(&judged, dangerous);
        Ok(Some(text))
    }

    /// `write` (`newline`: `submit`) to process `id`: holds, judges and delivers as the
    /// module says.
    ///
    /// # Errors
    /// An unknown process; a stdin that is closed or busy with another write; the
    /// gate's refusal (the refused input is discarded, the message says so).
    pub(crate) fn write_input(
        &self,
        id: &str,
        data: &str,
        newline: bool,
    ) -> Result<ProcessReply, TerminalCallError> {
        let key = self.key();
        let Some(p) = self.host.processes.get(&key, id) else {
            return Err(TerminalCallError::UnknownProcess(id.to_owned()));
        };
        let t = self.tenant_terminal()?;
        let mut text = data.to_owned();
        if newline {
            text.push('\n');
        }
        let (piece, readers, pty, cwd) = {
            let mut input = p.input();
            if input.busy || !p.stdin_open() {
                return Err(TerminalCallError::StdinUnavailable);
            }
            if input.is_data() {
                drop(input);
                return self.deliver(&p, text, 0);
            }
            let Some(piece) = input.take(&text, t.gate.detector()) else {
                return Ok(ProcessReply::Write(WriteOutcome::Held {
                    delivered: 0,
                    held: input.held() as u64,
                }));
            };
            input.busy = true;
            (
                piece,
                input.readers().to_vec(),
                input.pty(),
                input.cwd().to_owned(),
            )
        };
        let judging = Judging(&p);
        let outcome = self.judge_piece(&t, &key, &piece, &readers, pty, &cwd);
        let mut input = p.input();
        match outcome {
            Err(refusal) => {
                let dropped = input.refused(&piece);
                drop(input);
                drop(judging);
                let also = if dropped > 0 {
                    format!(" and the {dropped} bytes written after it")
                } else {
                    String::new()
                };
                Err(with_note(
                    refusal,
                    &format!(
                        "This input was not sent to process {id}: it is discarded{also}, so a later write cannot complete it."
                    ),
                ))
            }
            Ok((judged, dangerous, text)) => {
                input.approved(&judged, dangerous);
                let held = input.held();
                drop(input);
                // Still marked busy: no later write overtakes this one.
                let delivered = self.deliver(&p, text, held);
                drop(judging);
                delivered
            }
        }
    }

    /// `close` of process `id`: what is held is judged as it is and delivered when
    /// approved; stdin is closed either way.
    ///
    /// # Errors
    /// An unknown process, a write still being judged, or the gate's refusal of what
    /// was held (then discarded; stdin is closed all the same).
    pub(crate) fn close_input(&self, id: &str) -> Result<ProcessReply, TerminalCallError> {
        let key = self.key();
        let Some(p) = self.host.processes.get(&key, id) else {
            return Err(TerminalCallError::UnknownProcess(id.to_owned()));
        };
        let job = {
            let mut input = p.input();
            if input.busy {
                return Err(TerminalCallError::StdinUnavailable);
            }
            match input.take_rest() {
                Some(piece) if p.stdin_open() => {
                    input.busy = true;
                    Some((
                        piece,
                        input.readers().to_vec(),
                        input.pty(),
                        input.cwd().to_owned(),
                    ))
                }
                _ => None,
            }
        };
        let Some((piece, readers, pty, cwd)) = job else {
            p.close_stdin();
            return Ok(ProcessReply::Closed);
        };
        let judging = Judging(&p);
        let outcome = self
            .tenant_terminal()
            .and_then(|t| self.judge_piece(&t, &key, &piece, &readers, pty, &cwd));
        let result = match outcome {
            Ok((judged, dangerous, text)) => {
                p.input().approved(&judged, dangerous);
                self.deliver(&p, text, 0).map(|_| ProcessReply::Closed)
            }
            Err(refusal) => Err(with_note(
                refusal,
                &format!(
                    "The unfinished input held for process {id} was not sent and is discarded; its stdin is closed."
                ),
            )),
        };
        p.close_stdin();
        drop(judging);
        result
    }

    /// Writes approved `text` to the process; `held` bytes stay back.
    fn deliver(
        &self,
        p: &Arc<Proc>,
        text: String,
        held: usize,
    ) -> Result<ProcessReply, TerminalCallError> {
        let len = text.len() as u64;
        let outcome =
            match p.write_stdin(text.into_bytes(), self.stdin_wait(), &|| self.cancelled()) {
                StdinWrite::Written => WriteOutcome::Written(len),
                StdinWrite::Pending => WriteOutcome::Pending(len),
                StdinWrite::Unavailable => return Err(TerminalCallError::StdinUnavailable),
                StdinWrite::Failed(e) => return Err(TerminalCallError::WriteFailed(e.to_string())),
            };
        Ok(ProcessReply::Write(if held > 0 {
            WriteOutcome::Held {
                delivered: len,
                held: held as u64,
            }
        } else {
            outcome
        }))
    }
}
