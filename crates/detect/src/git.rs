//! git: destructive subcommands and configuration values that git runs as commands.

use super::commands::Invocation;
use super::fold::Field;
use super::opts::{self, Spec};
use super::rules::RuleId;
use super::walk::Analyzer;

impl Analyzer<'_> {
    pub(crate) fn check_git(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            if t == "-c" {
                if let Some(kv) = args.get(i + 1) {
                    self.check_git_config(&kv.text, inv);
                }
                i += 2;
            } else if let Some(kv) = t.strip_prefix("-c") {
                self.check_git_config(kv, inv);
                i += 1;
            } else if matches!(
                t,
                "-C" | "--git-dir"
                    | "--work-tree"
                    | "--namespace"
                    | "--exec-path"
                    | "--config-env"
                    | "--super-prefix"
                    | "--list-cmds"
            ) {
                i += 2;
            } else if t.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
        let Some(sub) = args.get(i) else { return };
        let rest = &args[i + 1..];
        let words: Vec<&str> = rest.iter().map(|a| a.text.as_str()).collect();
        let destructive = match sub.text.as_str() {
            "reset" => {
                let o = opts::parse(
                    rest,
                    &Spec {
                        short_values: "",
                        longs: &[
                            "hard",
                            "soft",
                            "mixed",
                            "merge",
                            "keep",
                            "quiet",
                            "patch",
                            "help",
                            "recurse-submodules",
                            "no-recurse-submodules",
                            "pathspec-from-file=",
                            "pathspec-file-nul",
                            "no-refresh",
                            "refresh",
                            "intent-to-add",
                        ],
                        stop_at_operand: false,
                    },
                );
                o.long("hard") || o.long("merge")
            }
            "push" => {
                let o = opts::parse(
                    rest,
                    &Spec {
                        short_values: "o",
                        longs: &[
                            "delete",
                            "mirror",
                            "prune",
                            "all",
                            "tags",
                            "set-upstream",
                            "dry-run",
                            "verbose",
                            "quiet",
                            "repo=",
                            "push-option=",
                            "receive-pack=",
                            "exec=",
                            "no-verify",
                            "verify",
                            "atomic",
                            "follow-tags",
                            "signed",
                            "porcelain",
                            "progress",
                            "recurse-submodules=",
                            "thin",
                            "no-thin",
                            "ipv4",
                            "ipv6",
                        ],
                        stop_at_operand: false,
                    },
                );
                let force = o.short('f')
                    || o.short('d')
                    || o.longs.iter().any(|(n, _)| {
                        n.starts_with("force") || n == "delete" || n == "mirror" || n == "prune"
                    });
                let refspec = o
                    .operands
                    .iter()
                    .skip(1)
                    .any(|f| f.text.starts_with('+') || f.text.starts_with(':'));
                force || refspec
            }
            "clean" => {
                let dry = words.iter().any(|w| {
                    *w == "--dry-run"
                        || (w.starts_with('-') && !w.starts_with("--") && w.contains('n'))
                });
                let force = words.iter().any(|w| {
                    *w == "--force"
                        || (w.starts_with('-') && !w.starts_with("--") && w.contains('f'))
                });
                force && !dry
            }
            "branch" => {
                let o = opts::parse(
                    rest,
                    &Spec {
                        short_values: "",
                        longs: &[
                            "delete",
                            "force",
                            "move",
                            "copy",
                            "list",
                            "all",
                            "remotes",
                            "verbose",
                            "quiet",
                            "track",
                            "no-track",
                            "set-upstream-to=",
                            "unset-upstream",
                            "show-current",
                            "contains=",
                            "merged=",
                            "no-merged=",
                            "sort=",
                            "format=",
                            "color",
                            "column",
                        ],
                        stop_at_operand: false,
                    },
                );
                o.short('D') || (o.has('d', "delete") && o.has('f', "force"))
            }
            "filter-branch" | "filter-repo" => true,
            "config" => {
                if let [key, value, ..] = &words
                    .iter()
                    .filter(|w| !w.starts_with('-'))
                    .collect::<Vec<_>>()[..]
                {
                    self.check_git_config(&format!("{key}={value}"), inv);
                }
                false
            }
            _ => false,
        };
        if destructive {
            self.hit(RuleId::GitDestructive, r);
        }
    }

    /// `git -c key=value`: some keys hold commands that git runs.
    pub(crate) fn check_git_config(&mut self, kv: &str, inv: &Invocation<'_>) {
        let Some((key, value)) = kv.split_once('=') else {
            return;
        };
        let key = key.to_ascii_lowercase();
        let code_key = matches!(
            key.as_str(),
            "core.pager"
                | "core.editor"
                | "core.sshcommand"
                | "core.fsmonitor"
                | "diff.external"
                | "sequence.editor"
                | "gpg.program"
                | "core.askpass"
                | "credential.helper"
                | "uploadpack.packobjectshook"
                | "core.gitproxy"
        ) || key.starts_with("pager.")
            || (key.starts_with("alias.") && value.starts_with('!'))
            || (key.starts_with("filter.")
                && (key.ends_with(".clean")
                    || key.ends_with(".smudge")
                    || key.ends_with(".process")))
            || (key.starts_with("diff.")
                && (key.ends_with(".textconv") || key.ends_with(".command")))
            || (key.starts_with("merge.") && key.ends_with(".driver"));
        if key == "core.hookspath" {
            self.hit(RuleId::Hijack, inv.rendered);
        } else if code_key {
            self.run_payload_text(value.strip_prefix('!').unwrap_or(value), inv);
        }
    }
}
