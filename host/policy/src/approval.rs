//! Approval settings as they appear in a policy file, and their compiled form.

use hermetic_detect::DetectorConfig;
use hermetic_detect::{RULES, RuleId};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// How dangerous commands are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Mode {
    /// No approval: dangerous commands run (and are logged). Hardline and deny rules
    /// still block. An explicit operator opt-in.
    Off,
    /// A human approves dangerous commands through the approver (the default).
    #[default]
    Manual,
    /// An auxiliary LLM approves, denies or escalates to a human.
    Smart,
}

/// What happens when nobody can answer an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Headless {
    /// Silence is not consent: the command is denied (the default).
    #[default]
    Deny,
    /// The operator accepts the risk: the command runs.
    Allow,
}

/// Who may answer a tenant's approval requests when it is served over MCP
/// (`hermetic serve`). The operator's choice, never the client's: a client cannot ask
/// to be the approver, and one the setting leaves out is never asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApproverChoice {
    /// Only the MCP client that made the call (form elicitation, or a 2026-07-28
    /// `input_required` round). A client that cannot be asked: nobody answers.
    Client,
    /// Only the operator, through the console (`POST /approvals/{id}`). Needs
    /// `[server] admin_token_sha256`; the client is never asked.
    Console,
    /// The calling client first; the console when the client cannot be asked (it
    /// declared no form elicitation, or the question could not reach it). The default.
    #[default]
    ClientOrConsole,
}

impl ApproverChoice {
    /// Whether the calling MCP client may be asked.
    pub fn asks_client(self) -> bool {
        matches!(self, Self::Client | Self::ClientOrConsole)
    }

    /// Whether the operator console may be asked.
    pub fn asks_console(self) -> bool {
        matches!(self, Self::Console | Self::ClientOrConsole)
    }

    /// The setting's name in the policy file (`client`, `console`,
    /// `client_or_console`): who may answer, as the audit log's question records say.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Console => "console",
            Self::ClientOrConsole => "client_or_console",
        }
    }
}

/// Smart-mode settings: any OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmartConfig {
    /// Full URL of the chat completions endpoint
    /// (e.g. `https://api.openai.com/v1/chat/completions`).
    pub url: String,
    /// Model name sent in the request.
    pub model: String,
    /// Name of the environment variable holding the API key (sent as a bearer token);
    /// none for endpoints without authentication.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Seconds to wait for the answer (default 20); past it the request escalates.
    #[serde(default = "default_smart_timeout")]
    pub timeout_secs: u64,
}

fn default_smart_timeout() -> u64 {
    20
}

/// Approval settings for one tenant, as embedded in a policy file.
///
/// Every field has a default, so an empty table is valid:
///
/// | field | default |
/// |---|---|
/// | `mode` | `manual` |
/// | `deny` | `[]` |
/// | `allow` | `[]` |
/// | `allowlist_file` | none (an "always" answer then lasts for the session) |
/// | `smart` | none (required when `mode = "smart"`) |
/// | `headless` | `deny` |
/// | `tty_timeout_secs` | `60` |
/// | `async_timeout_secs` | `300` |
/// | `approver` | `client_or_console` (see [`ApproverChoice`]) |
/// | `detector` | see [`DetectorConfig`] |
///
/// `deny` and `allow` entries are rule ids (`git.destructive`) or command patterns
/// (`docker *`; `*` matches any text, `?` one character); write `cmd:PATTERN` to force
/// a pattern. Allow patterns must not contain shell operators and only match commands
/// without any.
///
/// ```
/// use hermetic_policy::approval::ApprovalConfig;
/// let config: ApprovalConfig = toml::from_str(r#"
///     mode = "manual"
///     deny = ["cloud.destructive", "terraform *"]
///     allow = ["git.destructive"]
///     headless = "deny"
/// "#)?;
/// assert_eq!(config.tty_timeout_secs, 60);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalConfig {
    /// `off`, `manual` or `smart`.
    pub mode: Mode,
    /// Operator deny rules: matching commands are blocked in every mode.
    pub deny: Vec<String>,
    /// Permanent allowlist entries from the policy itself.
    pub allow: Vec<String>,
    /// File where "always" answers are persisted (rule ids), per tenant.
    pub allowlist_file: Option<PathBuf>,
    /// Smart-mode endpoint.
    pub smart: Option<SmartConfig>,
    /// What happens when nobody can answer.
    pub headless: Headless,
    /// Seconds a TTY prompt waits.
    pub tty_timeout_secs: u64,
    /// Seconds an asynchronous approval request (server, MCP elicitation) waits. A
    /// call's own deadline cuts the wait shorter: the wait ends a margin before it, so
    /// the agent reads "Nobody answered" rather than a time limit.
    pub async_timeout_secs: u64,
    /// Who may answer when the tenant is served over MCP.
    pub approver: ApproverChoice,
    /// Detector settings.
    pub detector: DetectorConfig,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Manual,
            deny: Vec::new(),
            allow: Vec::new(),
            allowlist_file: None,
            smart: None,
            headless: Headless::Deny,
            tty_timeout_secs: 60,
            async_timeout_secs: 300,
            approver: ApproverChoice::ClientOrConsole,
            detector: DetectorConfig::default(),
        }
    }
}

/// A configuration that cannot be used, with what to write instead.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// An entry looks like a rule id but names no rule.
    #[error(
        "unknown approval rule {entry:?} in `{field}`; known rules: {known}; to match a command literally write \"cmd:{entry}\""
    )]
    UnknownRule {
        /// The list the entry is in.
        field: &'static str,
        /// The entry.
        entry: String,
        /// The rule ids that exist.
        known: String,
    },
    /// An allow pattern contains shell operators.
    #[error(
        "allow entry {0:?} contains shell operators; allowlist patterns only match single commands without operators (allow the rule id instead)"
    )]
    AllowWithOperators(String),
    /// An allow entry names a rule that cannot be allowed permanently.
    #[error(
        "allow entry {0:?}: input.* rules describe disguised commands and cannot be allowed permanently"
    )]
    NotAllowlistable(String),
    /// An empty entry.
    #[error("empty entry in `{0}`")]
    Empty(&'static str),
    /// Smart mode without its endpoint.
    #[error("mode = \"smart\" needs a [smart] table with url and model")]
    SmartWithoutEndpoint,
    /// A timeout of zero seconds.
    #[error("`{0}` must be at least 1 second")]
    ZeroTimeout(&'static str),
}

/// A compiled deny or allow entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A rule id: matches commands that trigger it.
    Rule(RuleId),
    /// A command pattern.
    Command(Pattern),
}

/// A shell-style pattern over a whole command (`*` any text, `?` one character).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    /// The pattern text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `text` matches the whole pattern. Linear-time glob matching (the
    /// classic two-pointer backtrack over the last `*`).
    pub fn matches(&self, text: &str) -> bool {
        let p: Vec<char> = self.0.chars().collect();
        let t: Vec<char> = text.chars().collect();
        let (mut pi, mut ti) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while ti < t.len() {
            if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
                pi += 1;
                ti += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ti));
                pi += 1;
            } else if let Some((sp, st)) = star {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|c| *c == '*')
    }
}

/// True when `s` looks like a rule id (`word.word`), so a typo is an error, not a
/// silent command pattern.
fn looks_like_rule(s: &str) -> bool {
    s.split_once('.').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.')
    })
}

/// Shell operators: an allowlisted literal must be one plain command.
pub fn has_shell_operators(s: &str) -> bool {
    s.contains([';', '&', '|', '<', '>', '$', '`', '(', ')', '\n', '{', '}'])
}

/// Collapses runs of whitespace, so patterns match however the command was spaced.
pub fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn compile_entries(field: &'static str, entries: &[String]) -> Result<Vec<Entry>, ConfigError> {
    let mut out = Vec::new();
    for raw in entries {
        let e = raw.trim();
        if e.is_empty() {
            return Err(ConfigError::Empty(field));
        }
        if let Some(pattern) = e.strip_prefix("cmd:") {
            out.push(Entry::Command(Pattern(squash(pattern))));
        } else if let Some(id) = RuleId::from_name(e) {
            out.push(Entry::Rule(id));
        } else if looks_like_rule(e) {
            return Err(ConfigError::UnknownRule {
                field,
                entry: e.to_owned(),
                known: RULES
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        } else {
            out.push(Entry::Command(Pattern(squash(e))));
        }
    }
    Ok(out)
}

/// The compiled policy: entries parsed, timeouts as durations.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Mode.
    pub mode: Mode,
    /// Deny entries.
    pub deny: Vec<Entry>,
    /// Allow entries from the policy.
    pub allow: Vec<Entry>,
    /// Headless behaviour.
    pub headless: Headless,
    /// TTY prompt timeout.
    pub tty_timeout: Duration,
    /// Asynchronous approval timeout.
    pub async_timeout: Duration,
}

impl ApprovalConfig {
    /// Compiles the settings: every entry parsed, every mistake reported.
    ///
    /// # Errors
    /// [`ConfigError`] for an unknown rule id, an allow pattern with shell operators, an
    /// empty entry, smart mode without an endpoint, or a zero timeout.
    pub fn compile(&self) -> Result<Policy, ConfigError> {
        let deny = compile_entries("deny", &self.deny)?;
        let allow = compile_entries("allow", &self.allow)?;
        for entry in &allow {
            match entry {
                Entry::Command(p) if has_shell_operators(p.as_str()) => {
                    return Err(ConfigError::AllowWithOperators(p.as_str().to_owned()));
                }
                Entry::Rule(id) if !id.is_allowlistable() => {
                    return Err(ConfigError::NotAllowlistable(id.as_str().to_owned()));
                }
                _ => {}
            }
        }
        if self.mode == Mode::Smart && self.smart.is_none() {
            return Err(ConfigError::SmartWithoutEndpoint);
        }
        if self.tty_timeout_secs == 0 {
            return Err(ConfigError::ZeroTimeout("tty_timeout_secs"));
        }
        if self.async_timeout_secs == 0 {
            return Err(ConfigError::ZeroTimeout("async_timeout_secs"));
        }
        if self.smart.as_ref().is_some_and(|s| s.timeout_secs == 0) {
            return Err(ConfigError::ZeroTimeout("smart.timeout_secs"));
        }
        Ok(Policy {
            mode: self.mode,
            deny,
            allow,
            headless: self.headless,
            tty_timeout: Duration::from_secs(self.tty_timeout_secs),
            async_timeout: Duration::from_secs(self.async_timeout_secs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_defaults_hold() {
        let config: ApprovalConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config, ApprovalConfig::default());
        assert_eq!(config.mode, Mode::Manual);
        assert!(config.deny.is_empty() && config.allow.is_empty());
        assert_eq!(config.allowlist_file, None);
        assert_eq!(config.smart, None);
        assert_eq!(config.headless, Headless::Deny);
        assert_eq!(config.tty_timeout_secs, 60);
        assert_eq!(config.async_timeout_secs, 300);
        assert_eq!(config.approver, ApproverChoice::ClientOrConsole);
        assert_eq!(config.detector.self_names, vec!["hermes", "hermetic"]);
        let smart: SmartConfig = serde_json::from_str(r#"{"url":"http://x","model":"m"}"#).unwrap();
        assert_eq!(smart.timeout_secs, 20);
        assert_eq!(smart.api_key_env, None);
    }

    #[test]
    fn the_approver_is_one_of_three_names() {
        let parse =
            |v: &str| serde_json::from_str::<ApprovalConfig>(&format!(r#"{{"approver":"{v}"}}"#));
        assert_eq!(parse("client").unwrap().approver, ApproverChoice::Client);
        assert_eq!(parse("console").unwrap().approver, ApproverChoice::Console);
        assert_eq!(
            parse("client_or_console").unwrap().approver,
            ApproverChoice::ClientOrConsole
        );
        assert!(parse("anyone").is_err());
        assert_eq!(
            [
                ApproverChoice::Client,
                ApproverChoice::Console,
                ApproverChoice::ClientOrConsole
            ]
            .map(|c| (c.asks_client(), c.asks_console())),
            [(true, false), (false, true), (true, true)]
        );
    }

    #[test]
    fn unknown_fields_and_rules_are_load_errors() {
        assert!(serde_json::from_str::<ApprovalConfig>(r#"{"mood":"off"}"#).is_err());
        let config = ApprovalConfig {
            deny: vec!["git.destrucive".into()],
            ..ApprovalConfig::default()
        };
        let err = config.compile().unwrap_err();
        assert!(err.to_string().contains("cmd:git.destrucive"), "{err}");
    }

    #[test]
    fn entries_compile_to_rules_and_patterns() {
        let config = ApprovalConfig {
            deny: vec![
                "git.destructive".into(),
                "terraform *".into(),
                "cmd:make.all".into(),
            ],
            ..ApprovalConfig::default()
        };
        let policy = config.compile().unwrap();
        assert_eq!(
            policy.deny,
            vec![
                Entry::Rule(RuleId::GitDestructive),
                Entry::Command(Pattern("terraform *".into())),
                Entry::Command(Pattern("make.all".into())),
            ]
        );
        let bad = ApprovalConfig {
            allow: vec!["ls | sh".into()],
            ..ApprovalConfig::default()
        };
        assert!(matches!(
            bad.compile(),
            Err(ConfigError::AllowWithOperators(_))
        ));
        let smart = ApprovalConfig {
            mode: Mode::Smart,
            ..ApprovalConfig::default()
        };
        assert_eq!(
            smart.compile().unwrap_err(),
            ConfigError::SmartWithoutEndpoint
        );
    }

    #[test]
    fn patterns_match_whole_commands() {
        let p = Pattern("git push *".into());
        assert!(p.matches("git push origin main"));
        assert!(!p.matches("git pull"));
        assert!(Pattern("ls ?".into()).matches("ls a"));
        assert!(!Pattern("ls".into()).matches("ls -la"));
    }
}
