//! The compiled detector and its result.

use super::host_paths::{HostPaths, PathView};
use super::limits::MAX_INPUT_BYTES;
use super::normalize::{Finding, normalize};
use super::protection::SelfProtection;
use super::rules::{RuleId, Tier};
use super::walk::{Analyzer, Cx, RawHit};
use serde::{Deserialize, Serialize};

/// What the detector needs to know about the host it protects.
///
/// Defaults (also what `#[serde(default)]` fills in):
/// - `self_names`: `["hermes", "hermetic"]` — names of the agent host's own programs,
///   services and modules: stopping, killing or replacing them is `self.lifecycle`.
/// - `self_processes`: `["gateway", "cli.py"]` — more names the agent host's processes
///   run under (Hermes's gateway, its CLI script): killing a process by one of these
///   names (`pkill -f cli.py`, `killall gateway`) is `self.lifecycle` too.
/// - `protected_dirs`: `[".claude", ".codex", ".cursor", ".gemini"]` — path components
///   whose files are protected like the host's own configuration (other agents' settings
///   hold their approval policies). `.NAME` and `$NAME_HOME` of every self name are
///   always added.
/// - `host_state`: `[]` — absolute paths (or `~/…`) of the host's own files and
///   directories. A command naming one (literally, through `~`, `$HOME` or a variable,
///   by a glob that can match it, inside it, or a directory holding it that the command
///   does more than list) is `self.host_state`, hardline. `~/.config/NAME`,
///   `~/.local/share/NAME`, `~/.cache/NAME`, `/etc/NAME` and `/var/lib/NAME` of every
///   self name are always added; the terminal adds the files of the host it runs in
///   (policy, secrets, allowlists, audit log, key-value store, tool store, cache).
/// - `host_programs`: `[]` — the host's own executables: naming one, or running one
///   by its file name, is hardline too (their directories are not protected).
/// - `credential_reads`: `true` — reading the host user's credentials (`~/.ssh` keys,
///   `~/.aws`, `~/.kube/config`, …) is `fs.credential_read`, dangerous. The terminal
///   turns it off for backends whose commands do not see the host's home.
/// - `home`: none — the home directory `~` and `$HOME` stand for in commands (not read
///   from a policy file: the terminal gives the one its commands get).
/// - `view`: none — where path words are also resolved on the file system, symlinks
///   followed (not read from a policy file: the terminal gives one for backends whose
///   view is the host's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DetectorConfig {
    /// Names of the agent host's own programs, services and modules.
    pub self_names: Vec<String>,
    /// More names the agent host's processes run under, matched when processes are
    /// killed or services stopped by name.
    pub self_processes: Vec<String>,
    /// Extra path components whose files are protected.
    pub protected_dirs: Vec<String>,
    /// The host's own files and directories (absolute, or `~/…`): naming one is
    /// hardline.
    pub host_state: Vec<String>,
    /// The host's own executables: naming or running one is hardline.
    pub host_programs: Vec<String>,
    /// Reading the host user's credentials needs approval.
    pub credential_reads: bool,
    /// The home directory of the commands judged (absolute).
    #[serde(skip)]
    pub home: Option<String>,
    /// Where the host-path rules also read words on the file system.
    #[serde(skip)]
    pub view: PathView,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        Self {
            self_names: vec!["hermes".to_owned(), "hermetic".to_owned()],
            self_processes: vec!["gateway".to_owned(), "cli.py".to_owned()],
            protected_dirs: [".claude", ".codex", ".cursor", ".gemini"]
                .map(str::to_owned)
                .to_vec(),
            host_state: Vec::new(),
            host_programs: Vec::new(),
            credential_reads: true,
            home: None,
            view: PathView::default(),
        }
    }
}

/// The dangerous-command detector, compiled once from a [`DetectorConfig`].
///
/// `detect` is synchronous, infallible and never panics on any input; its time is
/// linear in the input (size and nesting are capped, and anything over a cap is
/// [`RuleId::TooLarge`], dangerous).
///
/// ```
/// use hermetic_detect::{Detector, Tier};
/// let detector = Detector::default();
/// assert_eq!(detector.detect("ls -la").tier, Tier::Safe);
/// assert_eq!(detector.detect("R=rm; $R -rf /").tier, Tier::Hardline);
/// assert_eq!(detector.detect("echo 'rm -rf /'").tier, Tier::Safe);
/// ```
#[derive(Debug, Clone)]
pub struct Detector {
    pub(crate) protection: SelfProtection,
}

impl Default for Detector {
    fn default() -> Self {
        Self::new(&DetectorConfig::default())
    }
}

/// One rule that matched, in the simple command where it matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    /// The rule.
    pub rule: RuleId,
    /// Its tier.
    pub tier: Tier,
    /// Its description.
    pub description: &'static str,
    /// The simple command (folded, as the detector saw it) that matched.
    pub command: String,
}

/// The detector's answer for one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// The highest tier of all hits (`Safe` when none).
    pub tier: Tier,
    /// Every rule that matched, highest tier first.
    pub hits: Vec<Hit>,
    /// The simple commands the parser saw, folded (including those inside
    /// substitutions and carriers), in the order they were analyzed.
    pub commands: Vec<String>,
}

impl Detection {
    /// The ids of the rules that matched, without repeats, highest tier first.
    pub fn rule_ids(&self) -> Vec<RuleId> {
        let mut ids: Vec<RuleId> = Vec::new();
        for h in &self.hits {
            if !ids.contains(&h.rule) {
                ids.push(h.rule);
            }
        }
        ids
    }

    /// True when no rule matched.
    pub fn is_safe(&self) -> bool {
        self.tier == Tier::Safe
    }
}

impl Detector {
    /// Compiles a detector from its configuration.
    pub fn new(config: &DetectorConfig) -> Self {
        let self_names: Vec<String> = config
            .self_names
            .iter()
            .filter(|n| !n.is_empty())
            .map(|n| n.to_ascii_lowercase())
            .collect();
        let mut agent_dirs: Vec<String> = config.protected_dirs.clone();
        for n in &self_names {
            agent_dirs.push(format!(".{n}"));
            agent_dirs.push(format!("${}_HOME", n.to_ascii_uppercase()));
        }
        let process_names = self_names
            .iter()
            .cloned()
            .chain(
                config
                    .self_processes
                    .iter()
                    .filter(|n| !n.is_empty())
                    .map(|n| n.to_ascii_lowercase()),
            )
            .collect();
        let mut host = HostPaths::new(
            &config.host_state,
            &config.host_programs,
            config.home.as_deref(),
            config.credential_reads,
            &self_names,
        );
        host.view = config.view.clone();
        Self {
            protection: SelfProtection {
                self_names,
                process_names,
                agent_dirs,
                host,
            },
        }
    }

    /// Classifies `command`: which rules it triggers and the simple commands seen.
    pub fn detect(&self, command: &str) -> Detection {
        self.classify(command, true)
    }

    /// [`detect`](Self::detect) with every command, plain or not, given to the parser:
    /// the reference the plain-command shortcut is tested against. Same contract,
    /// slower.
    #[doc(hidden)]
    pub fn detect_parsed(&self, command: &str) -> Detection {
        self.classify(command, false)
    }

    /// True when [`detect`](Self::detect) classifies `command` without parsing it (it
    /// is a plain command once normalized); for the tests and figures of the shortcut.
    #[doc(hidden)]
    pub fn skips_parser(&self, command: &str) -> bool {
        command.len() <= MAX_INPUT_BYTES
            && super::plain::program(&normalize(command).text).is_some()
    }

    fn classify(&self, command: &str, plain_shortcut: bool) -> Detection {
        let mut analyzer = Analyzer::new(&self.protection);
        analyzer.plain_shortcut = plain_shortcut;
        analyze(&mut analyzer, command);
        detection(analyzer.hits, analyzer.commands)
    }
}

/// Normalizes `command` (its findings are hits) and analyzes it as shell code.
pub(crate) fn analyze(analyzer: &mut Analyzer<'_>, command: &str) {
    if command.len() > MAX_INPUT_BYTES {
        analyzer.hit(RuleId::TooLarge, "(input too long)");
        return;
    }
    let normalized = normalize(command);
    for finding in &normalized.findings {
        analyzer.hit(finding_rule(*finding), &normalized.text);
    }
    // Words are located in `command` only where the parser reads it as given.
    analyzer.locate &= normalized.text == command;
    analyzer.analyze_code(&normalized.text, &Cx::default());
    // The continuations normalize folded are read by the parser itself as well: one
    // inside a comment is none, and the line after it runs (`# note \` ⏎ `rm -rf /`).
    if let Some(unfolded) = &normalized.unfolded {
        analyzer.locate = false;
        analyzer.analyze_code(unfolded, &Cx::default());
    }
}

/// The rule a normalization finding breaks.
pub(crate) fn finding_rule(finding: Finding) -> RuleId {
    match finding {
        Finding::ControlChars => RuleId::ControlChars,
        Finding::InvisibleChars => RuleId::InvisibleChars,
        Finding::Lookalike => RuleId::LookalikeChars,
    }
}

/// The detection made of `hits` (highest tier first) and the simple commands seen.
pub(crate) fn detection(hits: Vec<RawHit>, commands: Vec<String>) -> Detection {
    let mut hits: Vec<Hit> = hits
        .into_iter()
        .map(|h| Hit {
            rule: h.rule,
            tier: h.rule.tier(),
            description: h.rule.description(),
            command: h.command,
        })
        .collect();
    hits.sort_by_key(|h| std::cmp::Reverse(h.tier));
    let tier = hits.iter().map(|h| h.tier).max().unwrap_or(Tier::Safe);
    Detection {
        tier,
        hits,
        commands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::RULES;

    #[test]
    fn every_rule_matches_its_examples() {
        let detector = Detector::default();
        let mut failures = Vec::new();
        for rule in RULES {
            for example in rule.matches {
                let d = detector.detect(example);
                if !d.rule_ids().contains(&rule.id) {
                    failures.push(format!(
                        "{} should match {example:?}; got {:?}",
                        rule.id,
                        d.rule_ids()
                    ));
                }
            }
            for example in rule.not_matches {
                let d = detector.detect(example);
                if d.rule_ids().contains(&rule.id) {
                    failures.push(format!("{} should not match {example:?}", rule.id));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_backslash_at_the_end_of_a_comment_joins_no_lines() {
        // bash ends a comment at its newline: the next line runs.
        let detector = Detector::default();
        for text in ["# note \\\nrm -rf /", "echo hi # x \\\nrm -rf /"] {
            assert_eq!(detector.detect(text).tier, Tier::Hardline, "{text:?}");
        }
        // A continuation outside a comment still joins.
        assert_eq!(detector.detect("r\\\nm -rf /").tier, Tier::Hardline);
    }

    #[test]
    fn documented_config_defaults_hold_and_process_names_are_configurable() {
        let c = DetectorConfig::default();
        assert_eq!(c.self_names, ["hermes", "hermetic"]);
        assert_eq!(c.self_processes, ["gateway", "cli.py"]);
        assert_eq!(
            c.protected_dirs,
            [".claude", ".codex", ".cursor", ".gemini"]
        );
        let flagged =
            |d: &Detector, cmd: &str| d.detect(cmd).rule_ids().contains(&RuleId::SelfLifecycle);
        assert!(flagged(&Detector::default(), "pkill -f cli.py"));
        let custom = Detector::new(&DetectorConfig {
            self_processes: vec!["agentd".into()],
            ..DetectorConfig::default()
        });
        assert!(flagged(&custom, "killall agentd"));
        assert!(!flagged(&custom, "pkill -f cli.py"));
        // Self names are process names too.
        assert!(flagged(&custom, "pkill hermes"));
    }

    #[test]
    fn every_rule_but_the_size_cap_has_examples_and_a_unique_id() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id.as_str()).collect();
        for rule in RULES {
            // The size cap has no example short enough to list; a script file the
            // host could not judge is the host's finding, not the detector's.
            assert!(
                matches!(rule.id, RuleId::TooLarge | RuleId::UnjudgedScript)
                    || !rule.matches.is_empty(),
                "{} has no examples",
                rule.id
            );
            assert_eq!(RuleId::from_name(rule.id.as_str()), Some(rule.id));
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }

    /// A deterministic generator (xorshift) of shell-ish text from fragments chosen to
    /// reach every branch of the parser, the folder and the carriers.
    struct Gen(u64);
    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[(self.next() % items.len() as u64) as usize]
        }
    }

    const FRAGMENTS: &[&str] = &[
        "$(",
        ")",
        "`",
        "'",
        "\"",
        "{",
        "}",
        "(",
        "|",
        "||",
        "&",
        "&&",
        ";",
        "<<",
        "<<-",
        "<<<",
        "EOF\n",
        "\n",
        "\\",
        "$'\\x72",
        "${",
        "${x:-",
        "${x:0:1}",
        "$[",
        "$((",
        "rm",
        "-rf",
        "/",
        "~",
        " ",
        " ",
        " ",
        "\t",
        "é",
        "\u{200b}",
        "\u{1b}[1m",
        "if",
        "then",
        "fi",
        "for x in",
        "do",
        "done",
        "case",
        "esac",
        "bash -c ",
        "eval ",
        "sudo ",
        "env X=1 ",
        "$IFS",
        "{a,b}",
        "{1..99999999999999999999}",
        "*",
        "#",
        "=",
        "x=",
        "find . -exec",
        "\\;",
        "xargs",
        "git",
        "push",
        "-f",
        "curl x",
        "| sh",
        ">",
        ">>",
        ">&",
        "/dev/sda",
        "~/.ssh/id_rsa",
        "python3 -c",
        "'import os'",
        "awk",
        "-",
        "--",
        "-e",
        "ssh h",
        "\0",
        "\u{ff4c}",
        ":(){",
        "function",
        "coproc",
        "[[",
        "]]",
        "!",
        "-c",
        "--pre",
        "0x",
        "\u{202e}",
    ];

    #[test]
    fn the_detector_never_panics_on_generated_input() {
        let detector = Detector::default();
        let mut generator = Gen(0x9E37_79B9_7F4A_7C15);
        for round in 0..3000 {
            let len = 1 + (generator.next() % 40) as usize;
            let text: String = (0..len).map(|_| generator.pick(FRAGMENTS)).collect();
            let d = detector.detect(&text);
            // Bounded output: the number of simple commands recorded is capped.
            assert!(
                d.commands.len() <= crate::limits::MAX_COMMANDS + 1,
                "round {round}: {text:?}"
            );
        }
    }

    /// Inputs that multiply the work of the checks that re-run a command (globs read
    /// as options, variables evaluated in arithmetic, sed scripts, cmd lines): each
    /// repeat is bounded by a limit, so these end in a verdict like any input.
    #[test]
    fn inputs_that_multiply_rechecks_end_in_a_verdict() {
        let detector = Detector::default();
        let cases = [
            "find . ".to_owned() + &"-d* ".repeat(15_000),
            "touch ./-delete; ".repeat(2000) + "find . " + &"* ".repeat(8000),
            "a=b; b=c; echo $((".to_owned() + &["a"; 20_000].join("+") + "))",
            "a=b; ".repeat(1000) + "echo $((" + &["a"; 3000].join("+") + "))",
            "sed ".to_owned() + &"-e s/a/b/e ".repeat(5000),
            "cmd /c ".to_owned() + &"del /s x && ".repeat(4000),
            "git push ".to_owned() + &"--f ".repeat(15_000),
        ];
        for text in &cases {
            let d = detector.detect(text);
            assert!(d.commands.len() <= crate::limits::MAX_COMMANDS + 1);
        }
    }

    #[test]
    fn long_and_deeply_nested_input_is_dangerous_and_bounded() {
        let detector = Detector::default();
        let cases = [
            "$(".repeat(5000) + &")".repeat(5000),
            "(".repeat(20000) + "ls" + &")".repeat(20000),
            "if true; then ".repeat(2000) + "ls; " + &"fi; ".repeat(2000),
            "{ ".repeat(3000) + "ls; " + &"} ".repeat(3000),
            "\"$(".repeat(3000) + &")\"".repeat(3000),
            "a ".repeat(100_000),
            "ls | ".repeat(20_000) + "ls",
            "`".repeat(9999),
        ];
        for text in &cases {
            // A fresh thread with a small (2 MiB) stack, as server worker threads have:
            // a recursion that grew with the input would overflow it.
            let detector = detector.clone();
            let text = text.clone();
            let d = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || detector.detect(&text))
                .unwrap()
                .join()
                .unwrap();
            assert_ne!(d.tier, Tier::Safe);
            assert!(d.commands.len() <= crate::limits::MAX_COMMANDS + 1);
        }
    }
}
