//! A simple command: its assignments, words and redirections folded, rendered as
//! the detector saw it, then checked.

use super::{Analyzer, Cx, Invocation, Redirect};
use crate::fold::{self, Field, Producer};
use crate::limits::MAX_COMMANDS;
use crate::rules::RuleId;
use brush_parser::ast::{self, CommandPrefixOrSuffixItem, IoFileRedirectKind, IoRedirect};

impl Analyzer<'_> {
    pub(super) fn walk_simple(
        &mut self,
        simple: &ast::SimpleCommand,
        mut stdin: Producer,
        background: bool,
        piped: bool,
        cx: &Cx,
    ) -> Producer {
        self.count += 1;
        if self.count > MAX_COMMANDS {
            self.hit(RuleId::TooLarge, "(too many commands)");
            self.stopped = true;
            return Producer::Other;
        }
        let number = self.count;
        let words = simple.suffix.as_ref().map_or(0, |s| s.0.len()) + 1;
        let mut argv: Vec<Field> = Vec::with_capacity(words);
        let mut assignments: Vec<(String, Field)> = Vec::new();
        let mut redirect_items: Vec<&IoRedirect> = Vec::new();
        // Words see the command's stdin: `>(code)` reads what the command writes.
        let mut item_cx = cx.clone();
        item_cx.stdin = stdin.clone();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            self.collect_item(
                item,
                &mut argv,
                &mut assignments,
                &mut redirect_items,
                &item_cx,
            );
        }
        if let Some(name) = &simple.word_or_name {
            let before = argv.len();
            self.fold_word_into(&name.value, true, cx, &mut argv);
            self.locate_word(name, &mut argv, before);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            if matches!(item, CommandPrefixOrSuffixItem::AssignmentWord(..)) && !argv.is_empty() {
                // After the command name an assignment is an ordinary argument
                // (`export X=1`, `declare X=1`); fold it as a word.
                if let CommandPrefixOrSuffixItem::AssignmentWord(_, w) = item {
                    let before = argv.len();
                    self.fold_word_into(&w.value, true, cx, &mut argv);
                    self.locate_word(w, &mut argv, before);
                }
                continue;
            }
            self.collect_item(
                item,
                &mut argv,
                &mut assignments,
                &mut redirect_items,
                &item_cx,
            );
        }

        let mut redirect_cx = item_cx;
        let redirects = self.fold_redirects(&redirect_items, &mut redirect_cx, is_bare_exec(&argv));
        stdin = redirect_cx.stdin;
        let stdin_file = redirect_cx.stdin_file;

        if assignments.is_empty() && redirects.is_empty() && crate::code::is_bare_shell(&argv) {
            self.bare_shell_at = number;
        }
        let rendered = render(&assignments, &argv, &redirects);
        self.note_shadowing(&rendered);
        // The command's place in `commands` is taken now (carriers and substitutions
        // it runs come after it); the text is moved in once checking is done.
        let slot = self.commands.len();
        self.commands.push(String::new());
        let produced = self.check_simple(
            assignments,
            &argv,
            &redirects,
            (&stdin, stdin_file.as_ref()),
            &rendered,
            (background, piped),
            cx,
        );
        if let Some(s) = self.commands.get_mut(slot) {
            *s = rendered;
        }
        produced
    }

    /// Checks a folded simple command: its assignments, redirections and what it runs.
    #[expect(clippy::too_many_arguments, reason = "the parts of one folded command")]
    fn check_simple(
        &mut self,
        assignments: Vec<(String, Field)>,
        argv: &[Field],
        redirects: &[Redirect],
        (stdin, stdin_file): (&Producer, Option<&Field>),
        rendered: &str,
        (background, piped): (bool, bool),
        cx: &Cx,
    ) -> Producer {
        for (name, value) in &assignments {
            self.check_assignment(name, value, rendered, cx);
        }
        if argv.is_empty() {
            // Assignments alone persist for the rest of the input.
            for (name, value) in assignments {
                let known = (!value.dynamic).then_some(value.text);
                self.vars.insert(name, known);
            }
            self.check_redirects(redirects, rendered);
            return Producer::None;
        }
        self.check_redirects(redirects, rendered);
        let invocation = Invocation {
            argv,
            stdin,
            stdin_file,
            background,
            piped,
            bulk: cx.bulk,
            detached: false,
            depth: cx.depth,
            function: cx.function.as_deref(),
            rendered,
        };
        let produced = self.check_invocation(&invocation);
        if produced == Producer::Credentials {
            // What it writes holds the credentials it printed.
            let written = redirects
                .iter()
                .filter(|r| !matches!(r.kind, IoFileRedirectKind::Read))
                .map(|r| crate::paths::canonical(&r.target.text).into_owned());
            self.secret_files.extend(written);
        }
        produced
    }

    fn collect_item<'a>(
        &mut self,
        item: &'a CommandPrefixOrSuffixItem,
        argv: &mut Vec<Field>,
        assignments: &mut Vec<(String, Field)>,
        redirects: &mut Vec<&'a IoRedirect>,
        cx: &Cx,
    ) {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r),
            CommandPrefixOrSuffixItem::Word(w) => {
                let before = argv.len();
                self.fold_word_into(&w.value, true, cx, argv);
                self.locate_word(w, argv, before);
            }
            CommandPrefixOrSuffixItem::AssignmentWord(a, _) => {
                if let ast::AssignmentName::ArrayElementName(_, index) = &a.name {
                    self.fold_word(index, false, cx);
                }
                let value = match &a.value {
                    ast::AssignmentValue::Scalar(w) => self.fold_single(&w.value, cx),
                    ast::AssignmentValue::Array(items) => {
                        for (k, v) in items {
                            if let Some(k) = k {
                                self.fold_word(&k.value, false, cx);
                            }
                            self.fold_word(&v.value, true, cx);
                        }
                        Field {
                            text: "(...)".to_owned(),
                            dynamic: true,
                            origin: Producer::None,
                            glob: false,
                            span: None,
                        }
                    }
                };
                let name = match &a.name {
                    ast::AssignmentName::VariableName(n)
                    | ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
                };
                assignments.push((name, value));
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub) => {
                // `>(code)` reads what the command writes to it: for `tee` and the like
                // that is the command's own input, for the rest at least unknown data
                // (`… | tee >(sh)` is `… | sh`).
                let stdin = match (kind, &cx.stdin) {
                    (ast::ProcessSubstitutionKind::Write, Producer::None) => Producer::Other,
                    (ast::ProcessSubstitutionKind::Write, p) => p.clone(),
                    (ast::ProcessSubstitutionKind::Read, _) => Producer::None,
                };
                let inner = Cx {
                    depth: cx.depth + 1,
                    stdin,
                    ..cx.clone()
                };
                let producer = self.walk_list(&sub.list, &inner);
                let origin = match kind {
                    ast::ProcessSubstitutionKind::Read => match producer {
                        Producer::None => Producer::Other,
                        p => p,
                    },
                    ast::ProcessSubstitutionKind::Write => Producer::None,
                };
                argv.push(Field {
                    text: "/dev/fd/63".to_owned(),
                    dynamic: true,
                    origin,
                    glob: false,
                    span: None,
                });
            }
        }
    }
}

/// True when `argv` is `exec` with no command (`exec 3<x`, `builtin exec <x`): its
/// redirections hold for the rest of the input.
fn is_bare_exec(argv: &[Field]) -> bool {
    argv.last().is_some_and(|f| f.text == "exec")
        && argv
            .iter()
            .all(|f| !f.dynamic && matches!(f.text.as_str(), "exec" | "builtin" | "command"))
}

/// The simple command as the detector saw it (folded words, shell-quoted).
fn render(assignments: &[(String, Field)], argv: &[Field], redirects: &[Redirect]) -> String {
    // Sized for the common case (nothing to quote) so the text is built in one go.
    let size = assignments
        .iter()
        .map(|(n, v)| n.len() + v.text.len() + 2)
        .chain(argv.iter().map(|f| f.text.len() + 1))
        .chain(redirects.iter().map(|r| r.target.text.len() + 3))
        .sum();
    let mut out = String::with_capacity(size);
    let sep = |out: &mut String| {
        if !out.is_empty() {
            out.push(' ');
        }
    };
    for (name, value) in assignments {
        sep(&mut out);
        out.push_str(name);
        out.push('=');
        fold::push_display_word(&mut out, &value.text);
    }
    for f in argv {
        sep(&mut out);
        fold::push_display_word(&mut out, &f.text);
    }
    for r in redirects {
        sep(&mut out);
        out.push_str(match r.kind {
            IoFileRedirectKind::Read => "<",
            IoFileRedirectKind::Write => ">",
            IoFileRedirectKind::Append => ">>",
            IoFileRedirectKind::ReadAndWrite => "<>",
            IoFileRedirectKind::Clobber => ">|",
            IoFileRedirectKind::DuplicateInput => "<&",
            IoFileRedirectKind::DuplicateOutput => ">&",
        });
        fold::push_display_word(&mut out, &r.target.text);
    }
    out
}
