//! Redirections of a simple command: their targets folded, what each descriptor
//! then reads (a file, a here-document, a pipe), and what stdin becomes.

use super::{Analyzer, Cx, FdSource, Redirect, unlocated};
use crate::fold::{Field, Producer};
use brush_parser::ast::{self, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect};

impl Analyzer<'_> {
    /// Folds redirections, analyzing heredoc bodies and here-strings and process
    /// substitutions, and follows what each descriptor reads: `cx` leaves with what
    /// the command's stdin is (its data, and the file when it is one: `< x.sh`,
    /// `3<x.sh 0<&3`, an `exec 0<x.sh` earlier). `persist`: the command is a bare
    /// `exec`, whose descriptors the rest of the input inherits.
    pub(super) fn fold_redirects(
        &mut self,
        items: &[&IoRedirect],
        cx: &mut Cx,
        persist: bool,
    ) -> Vec<Redirect> {
        let mut out: Vec<Redirect> = Vec::new();
        // Descriptors other than stdin, as `exec` left them and this command sets them.
        let mut fds: Vec<(i32, FdSource)> = self.exec_fds.clone();
        if cx.stdin == Producer::None
            && cx.stdin_file.is_none()
            && let Some(exec) = &self.exec_stdin
        {
            cx.stdin = exec.producer.clone();
            cx.stdin_file = exec.file.clone();
        }
        let mut stdin_changed = false;
        let set = |fds: &mut Vec<(i32, FdSource)>, fd: i32, source: Option<FdSource>| {
            fds.retain(|(n, _)| *n != fd);
            if let Some(source) = source {
                fds.push((fd, source));
            }
        };
        for r in items {
            match r {
                IoRedirect::File(fd, kind, target) => {
                    let reads = matches!(
                        kind,
                        IoFileRedirectKind::Read
                            | IoFileRedirectKind::ReadAndWrite
                            | IoFileRedirectKind::DuplicateInput
                    );
                    let fd = fd.unwrap_or(if reads { 0 } else { 1 });
                    let field = match target {
                        IoFileRedirectTarget::Filename(w) => {
                            let mut fields = [self.fold_single(&w.value, cx)];
                            self.locate_word(w, &mut fields, 0);
                            let [field] = fields;
                            field
                        }
                        IoFileRedirectTarget::Fd(from) => {
                            let source = self.fd_source(&fds, cx, *from);
                            stdin_changed |= self.dup_onto(&mut fds, cx, fd, Some(source));
                            continue;
                        }
                        // `>&word`: a descriptor when `word` is a number (`3`, or `3-`,
                        // which moves it) or `-` (closes it), else a file (bash reads
                        // `>& file` as `&> file`).
                        IoFileRedirectTarget::Duplicate(w) => {
                            let field = self.fold_single(&w.value, cx);
                            let number = field.text.strip_suffix('-').unwrap_or(&field.text);
                            if !field.dynamic && field.text == "-" {
                                stdin_changed |= self.dup_onto(&mut fds, cx, fd, None);
                                continue;
                            }
                            if !field.dynamic
                                && !number.is_empty()
                                && number.bytes().all(|b| b.is_ascii_digit())
                            {
                                let from = number.parse::<i32>().unwrap_or(i32::MAX);
                                let source = self.fd_source(&fds, cx, from);
                                stdin_changed |= self.dup_onto(&mut fds, cx, fd, Some(source));
                                if field.text.ends_with('-') {
                                    set(&mut fds, from, None);
                                }
                                continue;
                            }
                            if matches!(kind, IoFileRedirectKind::DuplicateInput) {
                                // `<&$fd`: a descriptor only known at run time.
                                stdin_changed |=
                                    self.dup_onto(&mut fds, cx, fd, Some(FdSource::unknown()));
                                continue;
                            }
                            field
                        }
                        IoFileRedirectTarget::ProcessSubstitution(sub_kind, sub) => {
                            // `> >(code)`: the code reads the command's output;
                            // `< <(code)`: the command reads the code's output.
                            let writes = matches!(sub_kind, ast::ProcessSubstitutionKind::Write);
                            let inner = Cx {
                                depth: cx.depth + 1,
                                stdin: if writes {
                                    Producer::Other
                                } else {
                                    Producer::None
                                },
                                ..cx.clone()
                            };
                            let produced = self.walk_list(&sub.list, &inner);
                            let source = FdSource {
                                producer: match produced {
                                    Producer::None => Producer::Other,
                                    p => p,
                                },
                                file: None,
                            };
                            let source = (!writes && reads).then_some(source);
                            stdin_changed |= self.dup_onto(&mut fds, cx, fd, source);
                            continue;
                        }
                    };
                    let source = match kind {
                        IoFileRedirectKind::Read => Some(FdSource {
                            producer: self.file_producer(&field),
                            file: Some(field.clone()),
                        }),
                        // Opened for reading and writing: what the command writes there
                        // first is what it reads.
                        IoFileRedirectKind::ReadAndWrite => Some(FdSource::unknown()),
                        _ => None,
                    };
                    stdin_changed |= self.dup_onto(&mut fds, cx, fd, source);
                    let kind = match kind {
                        IoFileRedirectKind::DuplicateOutput => IoFileRedirectKind::Write,
                        IoFileRedirectKind::DuplicateInput => IoFileRedirectKind::Read,
                        k => k.clone(),
                    };
                    out.push(Redirect {
                        kind,
                        target: field,
                    });
                }
                IoRedirect::HereDocument(fd, doc) => {
                    let text = if doc.requires_expansion {
                        self.fold_heredoc(&doc.doc.value, cx)
                    } else {
                        doc.doc.value.clone()
                    };
                    let source = FdSource {
                        producer: Producer::Literal(text),
                        file: None,
                    };
                    stdin_changed |= self.dup_onto(&mut fds, cx, fd.unwrap_or(0), Some(source));
                }
                IoRedirect::HereString(fd, word) => {
                    let field = self.fold_single(&word.value, cx);
                    let producer = if field.dynamic && field.origin != Producer::None {
                        field.origin
                    } else {
                        Producer::Literal(field.text)
                    };
                    let source = FdSource {
                        producer,
                        file: None,
                    };
                    stdin_changed |= self.dup_onto(&mut fds, cx, fd.unwrap_or(0), Some(source));
                }
                IoRedirect::OutputAndError(word, append) => {
                    let field = self.fold_single(&word.value, cx);
                    set(&mut fds, 2, None);
                    out.push(Redirect {
                        kind: if *append {
                            IoFileRedirectKind::Append
                        } else {
                            IoFileRedirectKind::Write
                        },
                        target: field,
                    });
                }
            }
        }
        if persist {
            self.exec_fds = fds;
            if stdin_changed {
                self.exec_stdin = Some(FdSource {
                    producer: cx.stdin.clone(),
                    file: cx.stdin_file.as_ref().map(unlocated),
                });
            }
        }
        out
    }

    /// What reading a file redirected from gives, as far as it is known.
    fn file_producer(&self, field: &Field) -> Producer {
        let path = crate::paths::canonical(&field.text);
        if self.is_secret(&path) {
            Producer::Credentials
        } else if crate::paths::is_dev_net(&path) {
            Producer::Network
        } else if self.is_fresh(&path) {
            Producer::Other
        } else {
            Producer::None
        }
    }

    /// What descriptor `from` holds: stdin as `cx` has it, another as `fds` (or one
    /// inherited from who knows where).
    fn fd_source(&self, fds: &[(i32, FdSource)], cx: &Cx, from: i32) -> FdSource {
        if from == 0 {
            return FdSource {
                producer: cx.stdin.clone(),
                file: cx.stdin_file.as_ref().map(unlocated),
            };
        }
        fds.iter()
            .find(|(n, _)| *n == from)
            .map_or_else(FdSource::unknown, |(_, s)| s.clone())
    }

    /// Points descriptor `fd` at `source` (`None`: closed, or opened for writing only);
    /// true when `fd` is stdin.
    fn dup_onto(
        &self,
        fds: &mut Vec<(i32, FdSource)>,
        cx: &mut Cx,
        fd: i32,
        source: Option<FdSource>,
    ) -> bool {
        if fd != 0 {
            fds.retain(|(n, _)| *n != fd);
            if let Some(mut source) = source {
                // Read later through a duplicate, not where it is named.
                source.file = source.file.as_ref().map(unlocated);
                fds.push((fd, source));
            }
            return false;
        }
        match source {
            Some(s) => {
                cx.stdin = s.producer;
                cx.stdin_file = s.file;
            }
            None => {
                cx.stdin = Producer::None;
                cx.stdin_file = None;
            }
        }
        true
    }
}
