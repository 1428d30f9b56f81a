//! Compound commands (groups, subshells, loops, conditionals, `case`, coprocesses)
//! and the words of `[[ … ]]`.

use super::{Analyzer, Cx};
use crate::fold::Producer;
use brush_parser::ast::{self, CompoundCommand};

impl Analyzer<'_> {
    pub(super) fn walk_compound(&mut self, compound: &CompoundCommand, cx: &Cx) {
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

    pub(super) fn walk_extended_test(&mut self, expr: &ast::ExtendedTestExpr, cx: &Cx) {
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
}
