//! A text of shell code: parsed (or taken by the plain-command shortcut), then its
//! lists, pipelines and commands walked in order.

use super::parse::parse_program;
use super::{Analyzer, Cx, Summary, unlocated};
use crate::fold::Producer;
use crate::limits::{MAX_CARRIER_DEPTH, MAX_NESTING, exceeds_nesting};
use crate::rules::RuleId;
use brush_parser::ast::{AndOr, Command, CompoundList, IoRedirect, Pipeline, SeparatorOperator};

impl Analyzer<'_> {
    /// Parses and analyzes `text` as shell code (a plain command is split without the
    /// parser, into the program the parser would build).
    pub(crate) fn analyze_code(&mut self, text: &str, cx: &Cx) -> Summary {
        if self.stopped {
            return Summary::default();
        }
        if cx.depth > MAX_CARRIER_DEPTH || exceeds_nesting(text, MAX_NESTING) {
            self.hit(RuleId::TooLarge, text);
            self.stopped = true;
            return Summary::default();
        }
        let plain = if self.plain_shortcut {
            crate::plain::program(text)
        } else {
            None
        };
        let program = match plain.or_else(|| parse_program(text)) {
            Some(p) => p,
            None => {
                self.hit(RuleId::Unparseable, text);
                return Summary {
                    producer: Producer::Other,
                    commands: 0,
                };
            }
        };
        let before = self.count;
        let mut producer = Producer::None;
        self.parse_level += 1;
        for complete in &program.complete_commands {
            producer = self.walk_list(complete, cx);
        }
        self.parse_level -= 1;
        Summary {
            producer,
            commands: self.count - before,
        }
    }

    pub(super) fn walk_list(&mut self, list: &CompoundList, cx: &Cx) -> Producer {
        let mut producer = Producer::None;
        for item in &list.0 {
            let background = matches!(item.1, SeparatorOperator::Async);
            producer = self.walk_pipeline(&item.0.first, background, cx);
            for next in &item.0.additional {
                let (AndOr::And(p) | AndOr::Or(p)) = next;
                producer = self.walk_pipeline(p, background, cx);
            }
        }
        producer
    }

    fn walk_pipeline(&mut self, pipeline: &Pipeline, background: bool, cx: &Cx) -> Producer {
        let piped = pipeline.seq.len() > 1;
        let mut stdin = cx.stdin.clone();
        // Only the first command reads the file on stdin; the others read the pipe.
        let rest_cx = (piped && cx.stdin_file.is_some()).then(|| Cx {
            stdin_file: None,
            ..cx.clone()
        });
        for (k, command) in pipeline.seq.iter().enumerate() {
            let cx = match &rest_cx {
                Some(rest) if k > 0 => rest,
                _ => cx,
            };
            let out = self.walk_command(command, stdin, background, piped, cx);
            stdin = match out {
                Producer::None => Producer::Other,
                p => p,
            };
        }
        stdin
    }

    pub(super) fn walk_command(
        &mut self,
        command: &Command,
        stdin: Producer,
        background: bool,
        piped: bool,
        cx: &Cx,
    ) -> Producer {
        if self.stopped {
            return Producer::Other;
        }
        match command {
            Command::Simple(simple) => self.walk_simple(simple, stdin, background, piped, cx),
            Command::Compound(compound, redirects) => {
                let mut inner = cx.clone();
                inner.stdin = stdin;
                if let Some(list) = redirects {
                    let items: Vec<&IoRedirect> = list.0.iter().collect();
                    let folded = self.fold_redirects(&items, &mut inner, false);
                    self.check_redirects(&folded, "(compound command)");
                    // Its commands read that file where they stand, not where it is named.
                    inner.stdin_file = inner.stdin_file.as_ref().map(unlocated);
                }
                self.walk_compound(compound, &inner);
                Producer::Other
            }
            Command::Function(def) => {
                self.note_function(&def.fname.value);
                let mut inner = cx.clone();
                inner.function = Some(def.fname.value.clone());
                inner.stdin = Producer::None;
                inner.stdin_file = None;
                // The readers of its body alone (the list keeps each reader once).
                let outer = std::mem::take(&mut self.readers);
                self.walk_compound(&def.body.0, &inner);
                let body = std::mem::replace(&mut self.readers, outer);
                // Its body reads stdin as code: a call fed a file or a pipe runs that.
                let runs_stdin = body.iter().any(|r| {
                    matches!(
                        r,
                        crate::reader::Reader::Shell { .. } | crate::reader::Reader::Code(_)
                    )
                });
                for r in body {
                    if !self.readers.contains(&r) {
                        self.readers.push(r);
                    }
                }
                if runs_stdin && !self.stdin_functions.contains(&def.fname.value) {
                    self.stdin_functions.push(def.fname.value.clone());
                }
                Producer::None
            }
            Command::ExtendedTest(test, _) => {
                self.walk_extended_test(&test.expr, cx);
                Producer::None
            }
        }
    }
}
