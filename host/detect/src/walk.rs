//! Walks a parsed shell program: every simple command, wherever it sits (pipelines,
//! lists, subshells, groups, functions, loops, conditionals, command and process
//! substitutions, heredocs, arithmetic), with its words folded statically.

use super::fold::{self, Field, Producer, quoted_literal};
use super::limits::{
    MAX_ARITHMETIC_VALUES, MAX_CARRIER_DEPTH, MAX_COMMANDS, MAX_CWD_BYTES, MAX_FRESH_FILES,
    MAX_NESTING, exceeds_nesting,
};
use super::protection::SelfProtection;
use super::rules::RuleId;
use brush_parser::ast::{
    self, AndOr, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList,
    IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, Pipeline, SeparatorOperator,
};
use brush_parser::word::{self as bword, Parameter, ParameterExpr, ParameterTestType, WordPiece};
use std::collections::HashMap;
use std::sync::LazyLock;

/// Parser options, built once: bash mode with extended globbing, as agents' shells are.
static PARSER_OPTIONS: LazyLock<brush_parser::ParserOptions> =
    LazyLock::new(brush_parser::ParserOptions::default);

/// One finding: a rule and the simple command it was found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawHit {
    pub rule: RuleId,
    pub command: String,
}

/// Context inherited by nested code.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cx {
    /// Carrier depth (0 = the command as given).
    pub depth: usize,
    /// What feeds stdin of the first command.
    pub stdin: Producer,
    /// Run once per item by find -exec, xargs and the like.
    pub bulk: bool,
    /// Inside the body of this function.
    pub function: Option<String>,
    /// The file whose contents feed stdin of the first command, when `stdin` is
    /// `None`: the redirection of an enclosing compound command (`{ sh; } < x.sh`), a
    /// carrier's (`sh -c sh < x.sh`) or an earlier `exec 0<x.sh`. Never located: the
    /// word is not where the command reading it stands.
    pub stdin_file: Option<Field>,
}

/// What a file descriptor reads, as far as the redirections show.
#[derive(Debug, Clone)]
pub(crate) struct FdSource {
    /// What its data is.
    pub producer: Producer,
    /// The file it reads, when it was opened on one (`3<x.sh`).
    pub file: Option<Field>,
}

impl FdSource {
    /// A descriptor whose data is not known (inherited, written to, a pipe).
    fn unknown() -> Self {
        Self {
            producer: Producer::Other,
            file: None,
        }
    }
}

/// `field` without its place in the text: a word read where it does not stand.
pub(crate) fn unlocated(field: &Field) -> Field {
    Field {
        span: None,
        ..field.clone()
    }
}

/// What a piece of code produced, as far as it is known.
#[derive(Debug, Clone, Default)]
pub(crate) struct Summary {
    /// The producer of its output (its last command).
    pub producer: Producer,
    /// How many simple commands it ran.
    pub commands: usize,
}

/// A file redirection of a simple command, folded.
#[derive(Debug, Clone)]
pub(crate) struct Redirect {
    pub kind: IoFileRedirectKind,
    pub target: Field,
}

/// A simple command about to be checked, with its context.
pub(crate) struct Invocation<'a> {
    pub argv: &'a [Field],
    pub stdin: &'a Producer,
    /// The file the command's stdin is redirected from (`sh < x.sh`), when `stdin`
    /// is that file's contents.
    pub stdin_file: Option<&'a Field>,
    pub background: bool,
    pub piped: bool,
    /// Run once per item by a multiplier (find -exec, xargs, fd -x, parallel, rg --pre).
    pub bulk: bool,
    /// Detached from the session (nohup, setsid).
    pub detached: bool,
    pub depth: usize,
    pub function: Option<&'a str>,
    pub rendered: &'a str,
}

impl Invocation<'_> {
    pub(crate) fn nested<'b>(
        &'b self,
        argv: &'b [Field],
        bulk: bool,
        detached: bool,
    ) -> Invocation<'b> {
        Invocation {
            argv,
            stdin: self.stdin,
            stdin_file: self.stdin_file,
            background: self.background,
            piped: self.piped,
            bulk: self.bulk || bulk,
            detached: self.detached || detached,
            depth: self.depth + 1,
            function: self.function,
            rendered: self.rendered,
        }
    }
}

/// The state of one analysis.
pub(crate) struct Analyzer<'d> {
    /// The agent host's own names and directories.
    pub own: &'d SelfProtection,
    pub hits: Vec<RawHit>,
    pub commands: Vec<String>,
    /// Variables assigned earlier in the same input; `None` = not statically known.
    vars: HashMap<String, Option<String>>,
    /// Files written, downloaded or made executable earlier in the same input, as
    /// paths from the starting directory (see `resolve`). `DIR/*` stands for every
    /// file under DIR (a clone, an extracted archive); `./*` for every file under the
    /// starting directory.
    pub fresh_files: Vec<String>,
    /// The working directory after the `cd`s seen so far, relative to the one the
    /// input started in (empty: that one), or absolute, or a stand-in (`~`,
    /// `$OLDPWD`, `$DIR`) when only known at run time.
    cwd: String,
    /// Files written earlier in the same input with credentials in them (an archive
    /// of `~/.ssh`, a copy of `.env`): sending them off is sending credentials.
    pub secret_files: Vec<String>,
    /// Simple commands analyzed so far (bounded by `MAX_COMMANDS`).
    count: usize,
    /// The number (by `count`) of the last simple command that was a bare shell
    /// (`sh -i`, no redirections), for the shell-escape rule on carrier payloads.
    pub bare_shell_at: usize,
    /// The analysis stopped early (a limit was hit).
    pub stopped: bool,
    /// Plain commands skip the parser (see `plain`); off only to check that shortcut
    /// against the parser.
    pub plain_shortcut: bool,
    /// Files earlier inputs of the same session wrote (a `Frame` of `input.rs`): fresh
    /// like `fresh_files`, but not this input's to report.
    pub prior_fresh: &'d [String],
    /// What reads the input's standard input, as far as its commands show (recorded by
    /// `note_stdin` in `input.rs`).
    pub readers: Vec<super::reader::Reader>,
    /// Simple commands checked so far, wrapped ones included: a wrapper that checked
    /// none ran nothing we could see (`ssh host`, `sudo -s`).
    pub invocations: usize,
    /// Script files the input runs are recorded (`scripts.rs`; a session's judgement
    /// wants them, a bare detection does not).
    pub collect_scripts: bool,
    /// Words of the text given are located (it reached the parser unchanged by
    /// normalization): their fields carry spans.
    pub locate: bool,
    /// How many texts are being parsed, one inside another (1: the text given; more:
    /// a payload or a substitution, whose words are located in another text).
    parse_level: usize,
    /// The script files run, as found (see `note_script`).
    pub scripts: Vec<super::script_run::RawScript>,
    /// Descriptors other than stdin that an `exec N<FILE` (or `exec N<&M`, a
    /// here-document…) opened earlier in the input: later commands inherit them.
    exec_fds: Vec<(i32, FdSource)>,
    /// What an `exec 0<FILE` (`exec <&3`…) earlier in the input left on stdin.
    exec_stdin: Option<FdSource>,
    /// Functions defined in the input whose body runs its stdin as code (`f() { sh;
    /// }`): called with stdin from a file or a pipe (`f < x.sh`), that is what runs.
    pub stdin_functions: Vec<String>,
}

impl<'d> Analyzer<'d> {
    pub(crate) fn new(own: &'d SelfProtection) -> Self {
        Self {
            own,
            hits: Vec::new(),
            commands: Vec::new(),
            vars: HashMap::new(),
            fresh_files: Vec::new(),
            cwd: String::new(),
            secret_files: Vec::new(),
            count: 0,
            bare_shell_at: 0,
            stopped: false,
            plain_shortcut: true,
            prior_fresh: &[],
            readers: Vec::new(),
            invocations: 0,
            collect_scripts: false,
            locate: false,
            parse_level: 0,
            scripts: Vec::new(),
            exec_fds: Vec::new(),
            exec_stdin: None,
            stdin_functions: Vec::new(),
        }
    }

    /// True while walking the words of the text given (not a payload's or a
    /// substitution's), when those are located.
    pub(crate) fn locating(&self) -> bool {
        self.locate && self.parse_level == 1
    }

    /// Gives the field `word` folded to (the last of `fields`, when it is the only one
    /// `word` gave: `before` fields were there before) its span in the text given,
    /// when `word` is one literal word of it.
    fn locate_word(&self, word: &ast::Word, fields: &mut [Field], before: usize) {
        if !self.locating() || fields.len() != before + 1 {
            return;
        }
        let (Some(field), Some(loc)) = (fields.last_mut(), &word.loc) else {
            return;
        };
        let raw = word.value.as_str();
        let literal =
            !raw.bytes().any(|b| SPECIAL[usize::from(b)]) || quoted_literal(raw).is_some();
        if literal && !field.dynamic && !field.glob {
            field.span = Some((loc.start.index, loc.end.index));
        }
    }

    /// Starts the analysis in `cwd` (as earlier inputs left it) rather than in "the
    /// directory the input starts in": paths it records are then read from there.
    pub(crate) fn start_in(&mut self, cwd: &str) {
        if cwd.len() <= MAX_CWD_BYTES {
            cwd.clone_into(&mut self.cwd);
        } else {
            "$CWD".clone_into(&mut self.cwd);
        }
    }

    /// The working directory after the `cd`s seen so far (see `cwd`).
    pub(crate) fn cwd(&self) -> &str {
        &self.cwd
    }

    /// True when `path` (canonical) holds credentials, by name or because this input
    /// wrote credentials into it.
    pub(crate) fn is_secret(&self, path: &str) -> bool {
        super::paths::is_credential(path) || self.secret_files.iter().any(|s| s == path)
    }

    /// `path` as seen from the directory the input started in: relative paths are
    /// read against the `cd`s seen so far (`cd build && ./run.sh` runs `build/run.sh`).
    pub(crate) fn resolve(&self, path: &str) -> String {
        let p = super::paths::canonical(path);
        if self.cwd.is_empty() || p.starts_with(['/', '~', '$']) {
            return p.into_owned();
        }
        super::paths::canonical(&format!("{}/{p}", self.cwd)).into_owned()
    }

    /// Records that `path` was written, downloaded or made executable.
    pub(crate) fn mark_fresh(&mut self, path: &str) {
        let p = self.resolve(path);
        self.push_fresh(p);
    }

    /// Records that every file under `dir` was downloaded (a clone, an extracted
    /// download).
    pub(crate) fn mark_fresh_dir(&mut self, dir: &str) {
        let d = self.resolve(dir);
        self.push_fresh(format!("{d}/*"));
    }

    /// Adds a fresh entry, up to `MAX_FRESH_FILES`; past it, `*` (every path).
    fn push_fresh(&mut self, entry: String) {
        if self.fresh_files.len() < MAX_FRESH_FILES {
            self.fresh_files.push(entry);
        } else if self.fresh_files.last().is_none_or(|f| f != "*") {
            self.fresh_files.push("*".to_owned());
        }
    }

    /// Follows `cd DIR` (`pushd DIR`; `popd` and `cd -` go somewhere known only at run
    /// time, `cd` alone goes home).
    pub(crate) fn change_dir(&mut self, target: Option<&str>) {
        self.cwd = match target {
            None => "~".to_owned(),
            Some("-") => "$OLDPWD".to_owned(),
            Some(dir) => match self.resolve(dir) {
                d if d == "." => String::new(),
                d if d.len() > MAX_CWD_BYTES => "$CWD".to_owned(),
                d => d,
            },
        };
    }

    /// True when `path` was written, downloaded or made executable earlier in this
    /// input; an entry with a glob (`chmod +x scripts/*.sh`, `repo/*`) covers every
    /// path it matches.
    pub(crate) fn is_fresh(&self, path: &str) -> bool {
        self.is_fresh_in(path, true)
    }

    /// [`is_fresh`](Self::is_fresh), counting what earlier inputs of the session wrote
    /// only with `prior`.
    pub(crate) fn is_fresh_in(&self, path: &str, prior: bool) -> bool {
        let prior: &[String] = if prior { self.prior_fresh } else { &[] };
        if self.fresh_files.is_empty() && prior.is_empty() {
            return false;
        }
        let p = self.resolve(path);
        let inside = !p.starts_with(['/', '~', '$']) && !p.starts_with("..");
        self.fresh_files.iter().chain(prior).any(|f| {
            *f == p
                || (f == "./*" && inside)
                || (f.contains(['*', '?', '[']) && fold::glob_matches(f, &p))
        })
    }

    /// How many simple commands have been analyzed so far.
    pub(crate) fn commands_seen(&self) -> usize {
        self.count
    }

    /// Records a finding.
    pub(crate) fn hit(&mut self, rule: RuleId, command: &str) {
        if !self
            .hits
            .iter()
            .any(|h| h.rule == rule && h.command == command)
        {
            self.hits.push(RawHit {
                rule,
                command: command.to_owned(),
            });
        }
    }

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
            super::plain::program(text)
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

    fn walk_list(&mut self, list: &CompoundList, cx: &Cx) -> Producer {
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

    fn walk_command(
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
                        super::reader::Reader::Shell { .. } | super::reader::Reader::Code(_)
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

    fn walk_extended_test(&mut self, expr: &ast::ExtendedTestExpr, cx: &Cx) {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(a, b) | E::Or(a, b) => {
                self.walk_extended_test(a, cx);
                self.walk_extended_test(b, cx);
            }
            E::Not(a) | E::Parenthesized(a) => self.walk_extended_test(a, cx),
            E::UnaryTest(op, w) => {
                let field = self.fold_single(&w.value, cx);
                // `-v name[subscript]` evaluates the subscript.
                if matches!(op, ast::UnaryPredicate::ShellVariableIsSetAndAssigned) {
                    self.scan_arithmetic_field(&field, cx);
                }
            }
            E::BinaryTest(op, a, b) => {
                let a = self.fold_single(&a.value, cx);
                let b = self.fold_single(&b.value, cx);
                // `-eq` and the other numeric comparisons evaluate both sides.
                use ast::BinaryPredicate as P;
                if matches!(
                    op,
                    P::ArithmeticEqualTo
                        | P::ArithmeticNotEqualTo
                        | P::ArithmeticLessThan
                        | P::ArithmeticLessThanOrEqualTo
                        | P::ArithmeticGreaterThan
                        | P::ArithmeticGreaterThanOrEqualTo
                ) {
                    self.scan_arithmetic_field(&a, cx);
                    self.scan_arithmetic_field(&b, cx);
                }
            }
        }
    }

    /// Scans a folded word that bash evaluates as arithmetic. Dynamic parts were
    /// analyzed while folding and stand as placeholders (`$(...)`), which are not code.
    pub(crate) fn scan_arithmetic_field(&mut self, field: &Field, cx: &Cx) {
        if !field.dynamic {
            self.scan_arithmetic(&field.text, cx);
        }
    }

    fn walk_compound(&mut self, compound: &CompoundCommand, cx: &Cx) {
        match compound {
            CompoundCommand::Arithmetic(a) => self.scan_arithmetic(&a.expr.value, cx),
            CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.scan_arithmetic(&e.value, cx);
                }
                self.walk_list(&f.body.list, cx);
            }
            CompoundCommand::BraceGroup(g) => {
                self.walk_list(&g.list, cx);
            }
            CompoundCommand::Subshell(s) => {
                self.walk_list(&s.list, cx);
            }
            CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.fold_word(&w.value, true, cx);
                }
                // The loop variable takes several values: not one static value.
                self.vars.insert(f.variable_name.clone(), None);
                self.walk_list(&f.body.list, cx);
            }
            CompoundCommand::CaseClause(c) => {
                self.fold_word(&c.value.value, false, cx);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.fold_word(&p.value, false, cx);
                    }
                    if let Some(list) = &item.cmd {
                        self.walk_list(list, cx);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.walk_list(&i.condition, cx);
                self.walk_list(&i.then, cx);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.walk_list(c, cx);
                    }
                    self.walk_list(&e.body, cx);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.walk_list(&w.0, cx);
                self.walk_list(&w.1.list, cx);
            }
            CompoundCommand::Coprocess(c) => {
                self.walk_command(&c.body, Producer::None, true, false, cx);
            }
        }
    }

    /// Arithmetic text can hide command substitutions (`$(…)`, backticks, and array
    /// subscripts that bash evaluates); analyze each one found. bash evaluates the
    /// value of every variable named in arithmetic as arithmetic again
    /// (`x='a[$(id)]'; echo $((x))` runs `id`), so known values are scanned as well.
    pub(crate) fn scan_arithmetic(&mut self, text: &str, cx: &Cx) {
        if cx.depth > MAX_CARRIER_DEPTH {
            self.hit(RuleId::TooLarge, text);
            return;
        }
        // The values of the variables named, and of the variables those name, each
        // once (a cycle is bash's own error), up to MAX_ARITHMETIC_VALUES.
        let mut values: Vec<String> = Vec::new();
        if !self.vars.is_empty() {
            let mut k = 0;
            let mut source = text.to_owned();
            loop {
                for name in identifiers(&source) {
                    if values.len() >= MAX_ARITHMETIC_VALUES {
                        break;
                    }
                    if let Some(Some(v)) = self.vars.get(name)
                        && !values.contains(v)
                    {
                        values.push(v.clone());
                    }
                }
                match values.get(k) {
                    Some(v) => source.clone_from(v),
                    None => break,
                }
                k += 1;
            }
        }
        for v in &values {
            self.scan_substitutions(v, cx);
        }
        self.scan_substitutions(text, cx);
    }

    /// Analyzes the command substitutions in arithmetic text.
    fn scan_substitutions(&mut self, text: &str, cx: &Cx) {
        let mut rest = text;
        while let Some(start) = rest.find("$(") {
            let body = &rest[start + 2..];
            let mut depth = 1usize;
            let mut end = body.len();
            for (i, c) in body.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner = &body[..end];
            let nested = Cx {
                depth: cx.depth + 1,
                stdin: Producer::None,
                ..cx.clone()
            };
            // `$((…))` inside arithmetic is arithmetic again; `$(…)` is code.
            match inner.strip_prefix('(').and_then(|i| i.strip_suffix(')')) {
                Some(arithmetic) => self.scan_arithmetic(arithmetic, &nested),
                None => {
                    self.analyze_code(inner, &nested);
                }
            }
            rest = &body[end.min(body.len())..];
        }
        if let Some(start) = text.find('`')
            && let Some(len) = text[start + 1..].find('`')
        {
            let nested = Cx {
                depth: cx.depth + 1,
                stdin: Producer::None,
                ..cx.clone()
            };
            self.analyze_code(&text[start + 1..start + 1 + len], &nested);
        }
    }

    fn walk_simple(
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

        if assignments.is_empty() && redirects.is_empty() && super::code::is_bare_shell(&argv) {
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
                .map(|r| super::paths::canonical(&r.target.text).into_owned());
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

    /// Folds redirections, analyzing heredoc bodies and here-strings and process
    /// substitutions, and follows what each descriptor reads: `cx` leaves with what
    /// the command's stdin is (its data, and the file when it is one: `< x.sh`,
    /// `3<x.sh 0<&3`, an `exec 0<x.sh` earlier). `persist`: the command is a bare
    /// `exec`, whose descriptors the rest of the input inherits.
    fn fold_redirects(
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
        let path = super::paths::canonical(&field.text);
        if self.is_secret(&path) {
            Producer::Credentials
        } else if super::paths::is_dev_net(&path) {
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

    fn fold_heredoc(&mut self, body: &str, cx: &Cx) -> String {
        match catch(|| bword::parse_heredoc(body, &PARSER_OPTIONS)) {
            Some(Ok(pieces)) => {
                let mut b = FieldBuilder::default();
                for p in &pieces {
                    self.fold_piece(&p.piece, true, &mut b, cx);
                }
                b.finish()
                    .into_iter()
                    .map(|f| f.text)
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            _ => body.to_owned(),
        }
    }

    /// Folds a word that is not field-split (assignment values, redirection targets),
    /// as one field.
    pub(crate) fn fold_single(&mut self, raw: &str, cx: &Cx) -> Field {
        let fields = self.fold_word(raw, false, cx);
        let mut out = Field::literal("");
        for (i, f) in fields.into_iter().enumerate() {
            if i > 0 {
                out.text.push(' ');
            }
            out.text.push_str(&f.text);
            out.dynamic |= f.dynamic;
            if f.origin != Producer::None {
                out.origin = f.origin;
            }
        }
        out
    }

    /// Folds one shell word into the fields it expands to. `split`: the word is in
    /// argument position (brace expansion and field splitting apply).
    pub(crate) fn fold_word(&mut self, raw: &str, split: bool, cx: &Cx) -> Vec<Field> {
        let mut out = Vec::new();
        self.fold_word_into(raw, split, cx, &mut out);
        out
    }

    /// `fold_word`, appending the fields to `out` (argv is built without a vector per
    /// word).
    fn fold_word_into(&mut self, raw: &str, split: bool, cx: &Cx, out: &mut Vec<Field>) {
        // Only `{a,b}` lists change words; `{1..9}` sequences yield numbers and letters
        // (and the parser crate panics on out-of-range numbers), so they are not expanded.
        if split
            && raw.contains('{')
            && raw.contains(',')
            && !has_long_digit_run(raw)
            && let Some(Ok(Some(pieces))) =
                catch(|| bword::parse_brace_expansions(raw, &PARSER_OPTIONS))
            && pieces
                .iter()
                .any(|p| matches!(p, bword::BraceExpressionOrText::Expr(_)))
        {
            for alternative in fold::expand_braces(&pieces) {
                self.fold_word_pieces(&alternative, split, cx, out);
            }
            return;
        }
        self.fold_word_pieces(raw, split, cx, out);
    }

    fn fold_word_pieces(&mut self, raw: &str, split: bool, cx: &Cx, out: &mut Vec<Field>) {
        // A drive-letter path (`C:\Users\x`) is a Windows path: its backslashes are
        // separators that agents type for Windows hosts, not shell escapes.
        let windows = raw.len() > 3
            && raw.as_bytes()[0].is_ascii_alphabetic()
            && raw[1..].starts_with(":\\")
            && !raw.contains(['$', '`', '\'', '"']);
        // `~` and `~/rest`: the parser reads a tilde prefix and the rest as text, which
        // folds back to the same characters.
        let tilde = raw == "~" || raw.starts_with("~/");
        let plain = |s: &str| !s.bytes().any(|b| SPECIAL[usize::from(b)]);
        if windows || plain(raw) || (tilde && plain(&raw[1..])) {
            let mut field = Field::literal(raw);
            field.glob = !windows && raw.bytes().any(|b| matches!(b, b'*' | b'?' | b'['));
            out.push(field);
            return;
        }
        if let Some(text) = quoted_literal(raw) {
            out.push(Field::literal(text));
            return;
        }
        let pieces = match catch(|| bword::parse(raw, &PARSER_OPTIONS)) {
            Some(Ok(p)) => p,
            _ => {
                out.push(Field {
                    text: raw.to_owned(),
                    dynamic: true,
                    origin: Producer::None,
                    glob: false,
                    span: None,
                });
                return;
            }
        };
        let mut b = FieldBuilder {
            split,
            ..FieldBuilder::default()
        };
        for p in &pieces {
            self.fold_piece(&p.piece, false, &mut b, cx);
        }
        out.extend(b.finish());
    }

    fn fold_piece(&mut self, piece: &WordPiece, quoted: bool, b: &mut FieldBuilder, cx: &Cx) {
        match piece {
            WordPiece::Text(t) => {
                if !quoted && t.contains(['*', '?', '[']) {
                    b.cur().glob = true;
                }
                b.push(t);
            }
            WordPiece::SingleQuotedText(t) => {
                b.started = true;
                b.push(t);
            }
            WordPiece::AnsiCQuotedText(t) => {
                b.started = true;
                b.push(&fold::decode_ansi_c(t));
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                b.started = true;
                for p in inner {
                    self.fold_piece(&p.piece, true, b, cx);
                }
            }
            WordPiece::TildeExpansion(t) => match t {
                bword::TildeExpr::Home => b.push("~"),
                bword::TildeExpr::UserHome(u) => b.push(&format!("~{u}")),
                _ => b.push_dynamic("~+", Producer::None),
            },
            WordPiece::ParameterExpansion(expr) => {
                let (text, known) = self.parameter_value(expr, cx);
                if known {
                    let ifs = self.ifs();
                    b.push_expanded(&text, quoted, &ifs);
                } else {
                    b.push_dynamic(&text, Producer::None);
                }
            }
            WordPiece::CommandSubstitution(code)
            | WordPiece::BackquotedCommandSubstitution(code) => {
                let code = if matches!(piece, WordPiece::BackquotedCommandSubstitution(_)) {
                    code.replace("\\`", "`")
                        .replace("\\$", "$")
                        .replace("\\\\", "\\")
                } else {
                    code.clone()
                };
                // It reads the shell's stdin: a file there is what it reads too.
                let nested = Cx {
                    depth: cx.depth + 1,
                    stdin: Producer::None,
                    bulk: false,
                    function: cx.function.clone(),
                    stdin_file: cx.stdin_file.clone(),
                };
                let summary = self.analyze_code(&code, &nested);
                match summary.producer {
                    Producer::Literal(text) if summary.commands == 1 => {
                        let ifs = self.ifs();
                        b.push_expanded(text.trim_end_matches('\n'), quoted, &ifs);
                    }
                    origin => {
                        let origin = match origin {
                            Producer::None | Producer::Literal(_) => Producer::Other,
                            o => o,
                        };
                        b.push_dynamic("$(...)", origin);
                    }
                }
            }
            WordPiece::EscapeSequence(s) => {
                let escaped = s.strip_prefix('\\').unwrap_or(s);
                if escaped == "\n" {
                    return;
                }
                if quoted && !matches!(escaped, "$" | "`" | "\"" | "\\") {
                    b.push(s);
                } else {
                    b.started = true;
                    b.push(escaped);
                }
            }
            WordPiece::ArithmeticExpression(e) => {
                self.scan_arithmetic(&e.value, cx);
                b.push_dynamic("$((...))", Producer::None);
            }
        }
    }

    fn ifs(&self) -> String {
        match self.vars.get("IFS") {
            Some(Some(v)) => v.clone(),
            Some(None) => " \t\n".to_owned(),
            None => " \t\n".to_owned(),
        }
    }

    fn lookup(&self, name: &str) -> (String, bool) {
        match self.vars.get(name) {
            Some(Some(v)) => (v.clone(), true),
            Some(None) => (format!("${name}"), false),
            None => match name {
                "HOME" => ("~".to_owned(), true),
                "IFS" => (" \t\n".to_owned(), true),
                _ => (format!("${name}"), false),
            },
        }
    }

    /// The value of a parameter expansion: `(text, known)`. Unknown values keep a
    /// readable stand-in (`$NAME`) so path rules can still see the variable name.
    fn parameter_value(&mut self, expr: &ParameterExpr, cx: &Cx) -> (String, bool) {
        self.analyze_expansion_parts(expr, cx);
        let named = |p: &Parameter| match p {
            Parameter::Named(n) => Some(n.clone()),
            _ => None,
        };
        match expr {
            ParameterExpr::Parameter {
                parameter,
                indirect: false,
            } => match named(parameter) {
                Some(n) => self.lookup(&n),
                None => (format!("${parameter}"), false),
            },
            ParameterExpr::UseDefaultValues {
                parameter,
                indirect: false,
                test_type,
                default_value,
            } => {
                let default = default_value
                    .as_deref()
                    .map(|d| self.fold_single(d, cx))
                    .unwrap_or_else(|| Field::literal(""));
                match named(parameter).map(|n| (self.vars.contains_key(&n), self.lookup(&n))) {
                    Some((true, (v, true))) => {
                        let empty_uses_default =
                            matches!(test_type, ParameterTestType::UnsetOrNull);
                        if v.is_empty() && empty_uses_default {
                            (default.text, !default.dynamic)
                        } else {
                            (v, true)
                        }
                    }
                    // Not assigned in this command: it may come from the environment,
                    // so the default is a guess, not a fact.
                    _ => (default.text, false),
                }
            }
            ParameterExpr::Substring {
                parameter,
                indirect: false,
                offset,
                length,
            } => {
                let Some(n) = named(parameter) else {
                    return (format!("${{{parameter}:...}}"), false);
                };
                let (v, known) = self.lookup(&n);
                let off = offset.value.trim().parse::<usize>().ok();
                let len = match length {
                    Some(l) => l.value.trim().parse::<usize>().ok().map(Some),
                    None => Some(None),
                };
                match (known, off, len) {
                    (true, Some(off), Some(len)) => {
                        let chars = v.chars().skip(off);
                        let s: String = match len {
                            Some(l) => chars.take(l).collect(),
                            None => chars.collect(),
                        };
                        (s, true)
                    }
                    _ => (format!("${{{n}:...}}"), false),
                }
            }
            _ => ("${...}".to_owned(), false),
        }
    }

    /// Analyzes the code bash runs while expanding `${…}`: a subscript (arithmetic for
    /// indexed arrays), substring offsets (arithmetic), and the words of patterns,
    /// replacements, alternatives and messages, which are expanded like any word.
    /// (Defaults of `${x:-…}` are folded where their value is needed.)
    fn analyze_expansion_parts(&mut self, expr: &ParameterExpr, cx: &Cx) {
        use ParameterExpr as E;
        let (parameter, words): (Option<&Parameter>, [Option<&String>; 2]) = match expr {
            E::Parameter { parameter, .. }
            | E::UseDefaultValues { parameter, .. }
            | E::ParameterLength { parameter, .. }
            | E::Transform { parameter, .. } => (Some(parameter), [None, None]),
            E::AssignDefaultValues {
                parameter,
                default_value: w,
                ..
            }
            | E::IndicateErrorIfNullOrUnset {
                parameter,
                error_message: w,
                ..
            }
            | E::UseAlternativeValue {
                parameter,
                alternative_value: w,
                ..
            }
            | E::RemoveSmallestSuffixPattern {
                parameter,
                pattern: w,
                ..
            }
            | E::RemoveLargestSuffixPattern {
                parameter,
                pattern: w,
                ..
            }
            | E::RemoveSmallestPrefixPattern {
                parameter,
                pattern: w,
                ..
            }
            | E::RemoveLargestPrefixPattern {
                parameter,
                pattern: w,
                ..
            }
            | E::UppercaseFirstChar {
                parameter,
                pattern: w,
                ..
            }
            | E::UppercasePattern {
                parameter,
                pattern: w,
                ..
            }
            | E::LowercaseFirstChar {
                parameter,
                pattern: w,
                ..
            }
            | E::LowercasePattern {
                parameter,
                pattern: w,
                ..
            } => (Some(parameter), [w.as_ref(), None]),
            E::ReplaceSubstring {
                parameter,
                pattern,
                replacement,
                ..
            } => (Some(parameter), [Some(pattern), replacement.as_ref()]),
            E::Substring {
                parameter,
                offset,
                length,
                ..
            } => {
                self.scan_arithmetic(&offset.value, cx);
                if let Some(l) = length {
                    self.scan_arithmetic(&l.value, cx);
                }
                (Some(parameter), [None, None])
            }
            E::VariableNames { .. } | E::MemberKeys { .. } => (None, [None, None]),
        };
        if let Some(Parameter::NamedWithIndex { index, .. }) = parameter {
            self.scan_arithmetic(index, cx);
        }
        for w in words.into_iter().flatten() {
            self.fold_word(w, false, cx);
        }
    }

    pub(crate) fn set_var(&mut self, name: &str, value: Option<String>) {
        self.vars.insert(name.to_owned(), value);
    }
}

/// Accumulates fields while folding one word.
#[derive(Default)]
struct FieldBuilder {
    split: bool,
    fields: Vec<Field>,
    cur: Option<Field>,
    /// A quote was seen: the word yields a field even if empty (`""`).
    started: bool,
}

impl FieldBuilder {
    fn cur(&mut self) -> &mut Field {
        self.cur.get_or_insert_with(|| Field::literal(""))
    }

    fn push(&mut self, text: &str) {
        self.cur().text.push_str(text);
    }

    fn push_dynamic(&mut self, text: &str, origin: Producer) {
        let cur = self.cur();
        cur.text.push_str(text);
        cur.dynamic = true;
        if origin != Producer::None {
            cur.origin = origin;
        }
    }

    /// Appends an expansion's value; unquoted values are split on IFS characters.
    fn push_expanded(&mut self, value: &str, quoted: bool, ifs: &str) {
        if quoted || !self.split || ifs.is_empty() {
            self.push(value);
            return;
        }
        let mut first = true;
        for segment in value.split(|c| ifs.contains(c)) {
            if !first {
                self.end_field();
            }
            first = false;
            self.push(segment);
        }
    }

    fn end_field(&mut self) {
        if let Some(f) = self.cur.take()
            && (!f.text.is_empty() || self.started)
        {
            self.fields.push(f);
        }
        self.started = false;
    }

    fn finish(mut self) -> Vec<Field> {
        if self.cur.is_none() && self.started {
            self.cur = Some(Field::literal(""));
        }
        self.end_field();
        self.fields
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

/// The names in arithmetic text (`a`, `x` in `a[x+1] + $y`), each once per occurrence.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let start = i;
            let c = bytes[i];
            if c.is_ascii_alphabetic() || c == b'_' {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                return text.get(start..i);
            }
            if c.is_ascii_digit() {
                // A number (`0x1f`, `16#ff`) is not a name.
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'#') {
                    i += 1;
                }
                continue;
            }
            i += 1;
        }
        None
    })
}

/// Bytes after which a word needs the word parser: quotes, escapes, expansions and
/// the tilde (a table: this is asked of every word).
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let bytes = b"$`'\"\\~";
    let mut k = 0;
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    t
};

/// True when `s` holds more than 18 consecutive digits (more than an `i64` holds).
fn has_long_digit_run(s: &str) -> bool {
    let mut run = 0;
    for b in s.bytes() {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        if run > 18 {
            return true;
        }
    }
    false
}

/// Runs a parser call, turning a panic inside the parser crate into `None`: the
/// parser is third-party code and agent input must never take the host down.
fn catch<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// True when `text` is shell input cut short: the parser ran out of input inside a
/// construct (an open quote, `for` without `done`, a here-document without its end
/// line, a trailing `|` or `&&`), where a shell reading it would wait for more.
pub(crate) fn is_incomplete(text: &str) -> bool {
    catch(|| {
        let mut parser = brush_parser::Parser::new(text.as_bytes(), &PARSER_OPTIONS);
        match parser.parse_program() {
            Ok(_) => false,
            Err(brush_parser::ParseError::ParsingAtEndOfInput) => true,
            Err(brush_parser::ParseError::Tokenizing { inner, .. }) => inner.is_incomplete(),
            Err(_) => false,
        }
    })
    .unwrap_or(false)
}

fn parse_program(text: &str) -> Option<ast::Program> {
    catch(|| {
        let mut parser =
            // A byte slice is already a `BufRead`: no per-call 8 KiB buffer.
            brush_parser::Parser::new(text.as_bytes(), &PARSER_OPTIONS);
        parser.parse_program().ok()
    })
    .flatten()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A long chain of `cd`s and thousands of created files stay bounded, and the
    /// overflow counts every file as fresh rather than forgetting any.
    #[test]
    fn cds_and_fresh_files_stay_bounded() {
        let det = crate::Detector::default();
        let mut text = String::new();
        for _ in 0..40 {
            text.push_str(&format!("cd {}; ", "d/".repeat(30)));
        }
        text.push_str("touch");
        for i in 0..3000 {
            text.push_str(&format!(" f{i}"));
        }
        text.push_str("; ./anything");
        let mut a = Analyzer::new(&det.protection);
        a.analyze_code(&text, &Cx::default());
        assert!(a.cwd.len() <= MAX_CWD_BYTES, "{}", a.cwd.len());
        assert!(a.fresh_files.len() <= MAX_FRESH_FILES + 1);
        assert!(a.hits.iter().any(|h| h.rule == RuleId::FreshFile));
    }

    /// The plain-word shortcut folds tilde words exactly as the parser's pieces do.
    #[test]
    fn tilde_words_fold_as_the_parser_reads_them() {
        let det = crate::Detector::default();
        for raw in ["~", "~/x", "~/src/*.rs", "~/.ssh/id_rsa", "~/a[12]"] {
            let mut a = Analyzer::new(&det.protection);
            let fast = a.fold_word(raw, true, &Cx::default());
            let pieces = bword::parse(raw, &PARSER_OPTIONS).unwrap();
            let mut b = FieldBuilder {
                split: true,
                ..FieldBuilder::default()
            };
            for p in &pieces {
                a.fold_piece(&p.piece, false, &mut b, &Cx::default());
            }
            assert_eq!(fast, b.finish(), "{raw}");
        }
    }

    /// The quoted-literal shortcut folds words exactly as the parser's pieces do.
    #[test]
    fn quoted_literals_fold_as_the_parser_reads_them() {
        for raw in [
            "'a b'", "''", "\"\"", "\"a b\"", "'a\"b'", "\"it's\"", "'*'", "\"~/x\"", "'\n'",
            "\"a\nb\"", "\"!x\"",
        ] {
            let text = quoted_literal(raw).unwrap_or_else(|| panic!("{raw}: no shortcut"));
            let pieces = bword::parse(raw, &PARSER_OPTIONS).unwrap();
            let parsed = match &pieces[..] {
                [p] => match &p.piece {
                    WordPiece::SingleQuotedText(t) => t.clone(),
                    WordPiece::DoubleQuotedSequence(inner) => inner
                        .iter()
                        .map(|p| match &p.piece {
                            WordPiece::Text(t) => t.clone(),
                            other => panic!("{raw}: {other:?}"),
                        })
                        .collect(),
                    other => panic!("{raw}: {other:?}"),
                },
                other => panic!("{raw}: {other:?}"),
            };
            assert_eq!(text, parsed, "{raw}");
        }
        for raw in [
            "'a'b'",
            "\"$x\"",
            "\"a\\\"b\"",
            "'a'\"b\"",
            "\"`id`\"",
            "'a",
            "\"",
        ] {
            assert_eq!(quoted_literal(raw), None, "{raw}");
        }
    }
}
