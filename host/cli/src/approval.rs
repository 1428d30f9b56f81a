//! `hermetic approval check` and `hermetic approval scan`: the approval gate from the
//! command line.
//!
//! Exit codes: `check` 0 when the command may run, 1 when it may not; `scan` 0 (each
//! line carries its own verdict); 3 for a configuration that does not load.

use anyhow::{Context, Result};
use clap::Subcommand;
use hermetic::approval::{
    ApprovalConfig, ApprovalContext, ApprovalGate, Approver, Detector, Tier, TtyApprover,
};
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Subcommands of `hermetic approval`.
#[derive(Subcommand, Debug)]
pub enum ApprovalCommand {
    /// Print the JSON verdict for one command: approved, tier, rules hit, outcome,
    /// message, and the simple commands the parser saw.
    ///
    /// Exit code 0 when the command may run, 1 when it may not.
    Check {
        /// The command, as an agent would send it (quote it for your shell).
        command: String,
        /// Approval settings (a TOML file with the fields of the policy's approval
        /// table: mode, deny, allow, allowlist_file, smart, headless, ...).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Ask on this terminal when the command needs approval (once / session /
        /// always / deny). Without it nobody is asked, so dangerous commands are denied
        /// unless the settings say `headless = "allow"`.
        #[arg(long)]
        ask: bool,
        /// Tenant the session approvals belong to (default: the operator, as for every
        /// other command).
        #[arg(long, default_value = hermetic::policy::OPERATOR_TENANT, hide_default_value = true)]
        tenant: String,
        /// Session the approvals belong to.
        #[arg(long, default_value = "cli")]
        session: String,
    },
    /// Classify JSON lines `{"command": "..."}` from stdin; write one JSON line per
    /// input: `{"command", "verdict": "safe"|"dangerous"|"hardline", "rules": [...]}`.
    Scan,
}

/// Runs an approval subcommand.
pub fn run(command: ApprovalCommand) -> Result<ExitCode> {
    match command {
        ApprovalCommand::Check {
            command,
            config,
            ask,
            tenant,
            session,
        } => check(&command, config, ask, &tenant, &session),
        ApprovalCommand::Scan => scan(),
    }
}

fn load_config(path: Option<PathBuf>) -> Result<ApprovalConfig> {
    let Some(path) = path else {
        return Ok(ApprovalConfig::default());
    };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn check(
    command: &str,
    config: Option<PathBuf>,
    ask: bool,
    tenant: &str,
    session: &str,
) -> Result<ExitCode> {
    let config = load_config(config)?;
    let mut gate = ApprovalGate::new(&config)?;
    if ask {
        let tty: Arc<dyn Approver> = Arc::new(TtyApprover::stdio());
        gate = gate.with_approver(tty);
    }
    let detection = gate.detector().detect(command);
    let hits = serde_json::to_value(&detection.hits)?;
    let verdict = gate.decide(&ApprovalContext::new(tenant, session), command, detection);
    let mut out = serde_json::to_value(&verdict)?;
    if let Some(map) = out.as_object_mut() {
        map.insert("command".to_owned(), json!(command));
        map.insert("hits".to_owned(), hits);
    }
    out!("{}", serde_json::to_string_pretty(&out)?);
    Ok(if verdict.approved {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn scan() -> Result<ExitCode> {
    let detector = Detector::default();
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let record = match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(v) => match v.get("command").and_then(|c| c.as_str()) {
                Some(command) => {
                    let d = detector.detect(command);
                    let verdict = match d.tier {
                        Tier::Safe => "safe",
                        Tier::Dangerous => "dangerous",
                        Tier::Hardline => "hardline",
                    };
                    json!({"command": command, "verdict": verdict, "rules": d.rule_ids()})
                }
                None => json!({"error": "expected an object with a string \"command\""}),
            },
            Err(e) => json!({"error": format!("not JSON: {e}")}),
        };
        writeln!(out, "{record}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
