//! The `hermetic` binary's front: logging, the command dispatch, and the commands that
//! list and call tools. Other commands have a module each (serve, inspect, token, audit,
//! …); `args` is the command line's shape.

use crate::args::{AuditCommand, Cli, Command, HostArgs, parse_log_level};
use crate::host::{build_registry, trust_of};
use anyhow::{Context, Result};
use clap::Parser;
use hermetic::{CallOptions, Selection};
use std::io::Read;
use std::process::ExitCode;

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // HERMETIC_LOG wins over --log-level, so it is checked as strictly.
    if let Some(value) = std::env::var_os("HERMETIC_LOG")
        && let Err(e) = value
            .to_str()
            .ok_or_else(|| "not UTF-8".to_owned())
            .and_then(parse_log_level)
    {
        eprintln!("error: invalid value {value:?} for HERMETIC_LOG: {e}");
        return ExitCode::from(2);
    }
    init_logging(&cli.log_level);
    match run(cli) {
        Ok(code) => code,
        // The reader went away (`| head`): nothing more to say, and no one to say it to.
        Err(e)
            if e.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", report(&e));
            ExitCode::from(3)
        }
    }
}

/// An error and its causes on one line, each cause once: library errors keep their
/// source (for callers that inspect it) and also name it in their own message (for
/// callers that print only that), so a cause already in the text is not repeated.
fn report(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

fn init_logging(level: &str) {
    // wasi-http warns of every failed connect, which the tool reports itself: at the
    // quiet levels that would say each failure twice.
    let level = if matches!(level, "warn" | "error") {
        format!("{level},wasmtime_wasi_http=error")
    } else {
        level.to_owned()
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("HERMETIC_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    use std::io::IsTerminal as _;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .with_writer(std::io::stderr)
        .init();
}

fn run(cli: Cli) -> Result<ExitCode> {
    if cli.host.is_given()
        && matches!(
            cli.command,
            Command::Approval(_)
                | Command::New { .. }
                | Command::Tool(_)
                | Command::Token(_)
                | Command::Audit(_)
                | Command::Push { .. }
                | Command::Keygen { .. }
                | Command::Sign { .. }
                | Command::State(_)
        )
    {
        eprintln!(
            "error: the tool-host options (--policy, --tenant, --workspace, --tools-dir, …) \
             apply to tools, toolsets, definitions, call, inspect, serve, pull and verify only"
        );
        return Ok(ExitCode::from(2));
    }
    let outer = cli.host;
    match cli.command {
        Command::Approval(command) => return crate::approval::run(command),
        Command::State(command) => return crate::state::run(command),
        Command::Tool(command) => return crate::tool_build::run(command),
        Command::Token(command) => return crate::token::token(command),
        Command::New { lang, name, dir } => {
            let made = crate::new::create(lang, &name, dir.as_deref())?;
            out!("{}", crate::new::next_steps(lang, &name, &made));
        }
        Command::Audit(AuditCommand::Verify {
            file,
            head,
            min_lines,
        }) => return crate::audit::audit_verify(&file, head.as_deref(), min_lines),
        Command::Audit(AuditCommand::Repair { file }) => return crate::audit::audit_repair(&file),
        Command::Tools { host, json } => list_tools(&host.with_outer(&outer), json)?,
        Command::Toolsets { host, json } => list_toolsets(&host.with_outer(&outer), json)?,
        Command::Definitions {
            host,
            toolsets,
            disable,
        } => {
            let selection = Selection {
                enabled: toolsets,
                disabled: disable,
            };
            definitions(&host.with_outer(&outer), &selection)?;
        }
        Command::Call {
            host,
            quiet,
            name,
            args,
        } => {
            return call(&host.with_outer(&outer), &name, args, quiet);
        }
        Command::Serve(args) => crate::serve::serve_command(&outer, args)?,
        Command::Push {
            file,
            reference,
            version,
            registry,
        } => return crate::community::push(&file, &reference, version.as_deref(), &registry),
        Command::Keygen { out } => return crate::community::keygen(&out),
        Command::Sign {
            target,
            key,
            registry,
        } => return crate::community::sign(&target, &key, &registry),
        Command::Pull {
            host,
            reference,
            trust,
            registry,
            allow_older,
        } => {
            let host = host.with_outer(&outer);
            let loaded = trust_of(&host)?;
            let policy = host.policy.as_deref().zip(loaded.as_ref());
            return crate::community::pull(
                reference.as_deref(),
                &trust,
                policy,
                host.tenant(),
                host.store.as_deref(),
                &registry,
                allow_older,
            );
        }
        Command::Verify {
            host,
            target,
            trust,
            registry,
        } => {
            let host = host.with_outer(&outer);
            let loaded = trust_of(&host)?;
            return crate::community::verify(
                &target,
                &trust,
                loaded.as_ref(),
                host.store.as_deref(),
                &registry,
            );
        }
        Command::Inspect {
            host,
            target,
            registry,
        } => {
            return crate::inspect::inspect(&host.with_outer(&outer), &target, &registry);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `hermetic tools`: every tool the tenant sees, with its availability.
fn list_tools(host: &HostArgs, json: bool) -> Result<()> {
    let registry = build_registry(host)?;
    let mut tools = registry.tools_for(host.tenant());
    // Tools the policy names by source that could not be loaded: unavailable, why.
    tools.extend(crate::community::skipped_for(
        &registry,
        host.policy.as_deref(),
        host.store.as_deref(),
        host.tenant(),
    )?);
    if json {
        out!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(());
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let set_width = tools
        .iter()
        .map(|t| t.toolset.len())
        .max()
        .unwrap_or(7)
        .max(7);
    out!("{:width$}  {:set_width$}  STATUS", "TOOL", "TOOLSET");
    for t in tools {
        let status = match (&t.available, &t.reason) {
            (true, _) => "available".to_owned(),
            (false, Some(reason)) => format!("unavailable: {reason}"),
            (false, None) => "unavailable".to_owned(),
        };
        out!("{:width$}  {:set_width$}  {status}", t.name, t.toolset);
    }
    Ok(())
}

/// `hermetic toolsets`: the toolsets whose tools exist, with their tools.
fn list_toolsets(host: &HostArgs, json: bool) -> Result<()> {
    let registry = build_registry(host)?;
    let toolsets = registry.toolsets();
    if json {
        out!("{}", serde_json::to_string_pretty(&toolsets)?);
        return Ok(());
    }
    for t in toolsets {
        let tools = if t.tools.is_empty() {
            "(none)".to_owned()
        } else {
            t.tools.join(", ")
        };
        out!("{}: {tools}", t.name);
        if !t.description.is_empty() {
            out!("    {}", t.description);
        }
    }
    Ok(())
}

/// `hermetic definitions`: the selected tools' definitions, as an agent gets them.
fn definitions(host: &HostArgs, selection: &Selection) -> Result<()> {
    let registry = build_registry(host)?;
    let (_, warnings) = registry.select(selection);
    for w in warnings {
        eprintln!("warning: {w}");
    }
    out!(
        "{}",
        serde_json::to_string_pretty(&registry.definitions_for(host.tenant(), selection))?
    );
    Ok(())
}

/// `hermetic call`: one call (arguments `-` are read from stdin), approvals asked on
/// the terminal, progress on stderr as it comes (unless `quiet`). Exit 1 for every
/// failure and for the tool's own `{"error": …}` report (the terminal's successes
/// carry `"error": null`).
fn call(host: &HostArgs, name: &str, args: String, quiet: bool) -> Result<ExitCode> {
    let args = if args == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .context("reading arguments from stdin")?;
        buf
    } else {
        args
    };
    let registry = build_registry(host)?;
    let mut options = CallOptions::default()
        .with_tenant(host.tenant().to_owned())
        .with_approver(std::sync::Arc::new(hermetic::approval::TtyApprover::stdio()));
    if !quiet {
        options = options.with_progress(std::sync::Arc::new(print_progress));
    }
    let outcome = registry.invoke(name, &args, &options);
    out!("{}", outcome.to_json());
    Ok(if outcome.is_error() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One progress report on stderr: the terminal's output chunks as they are (they carry
/// their own newlines), other tools' messages a line each.
fn print_progress(progress: hermetic::Progress) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    // stderr gone (closed pipe): the result on stdout is what matters.
    let _ = if &*progress.tool == "terminal" {
        err.write_all(progress.message.as_bytes())
    } else {
        writeln!(err, "[{}] {}", progress.tool, progress.message)
    };
    let _ = err.flush();
}
