//! `hermetic tool world` and `hermetic tool finish`: what a build of a tool in another
//! language (componentize-py, componentize-js) asks of the host instead of knowing it
//! itself. The declaration is read by the host's own parser, the world comes from the
//! host's own linkers, the finished component passes the host's own load.

mod finish;
mod probe;
mod section;
mod wit;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use hermetic::declaration::MAX_DECLARATION_BYTES;
use hermetic::{Declaration, OperatorPolicy, Registry, RegistryOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Build steps for tools written in other languages than Rust.
#[derive(Subcommand, Debug)]
pub enum ToolCommand {
    /// Print the WIT world a tool with this declaration must be built for.
    ///
    /// The world holds the tool export (`hermetic:tool/tool`) and exactly the imports
    /// the host links into a tool with this declaration's capabilities (wasi:http with
    /// `network`, the terminal with `terminal = true`, wasi:keyvalue with `keyvalue`),
    /// asked of the host's own linkers. A component importing anything else is refused
    /// at load. With --out, writes a WIT package a bindings generator reads
    /// (componentize-py `-d DIR -w tool`, componentize-js `witPath: DIR, worldName:
    /// "tool"`): DIR/world.wit and the packages it uses under DIR/deps/.
    World {
        /// The tool's declaration (TOML, as embedded in the component: name, toolset,
        /// [capabilities]…).
        declaration: PathBuf,
        /// Write the world and its dependencies into this directory (new or empty)
        /// instead of printing the world.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Embed a declaration into a built component and check that the host loads it.
    ///
    /// Reads the declaration with the host's parser, writes it as the component's
    /// `hermetic:declaration` custom section (replacing one it had), then loads the
    /// result as the host does: too many core instances for the declaration's
    /// `core_instances` (default 8, at most the operator's default ceiling of 64), an
    /// import its capabilities do not link, or a schema that does not name the tool are
    /// refused here, not first at serve time. Runs the tool's `schema()` in a sandbox
    /// with no grants, as `inspect` does. The output is written atomically; a summary
    /// is printed as JSON.
    Finish {
        /// The component the language's toolchain built.
        component: PathBuf,
        /// The tool's declaration (TOML).
        declaration: PathBuf,
        /// Where to write the finished component (default: over COMPONENT).
        #[arg(short, long, value_name = "OUT")]
        out: Option<PathBuf>,
        /// When the declaration sets no `core_instances`, embed `core_instances = N`
        /// (an interpreter's component needs more than the default 8: componentize-py's
        /// 14, so the Python build passes 16).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        core_instances: Option<u32>,
    },
}

/// Runs a `hermetic tool` command.
///
/// # Errors
/// A declaration the host refuses, a component it would not load, an unwritable
/// output.
pub fn run(command: ToolCommand) -> Result<ExitCode> {
    match command {
        ToolCommand::World { declaration, out } => {
            let (_, parsed) = read_declaration(&declaration)?;
            let registry = host(false)?;
            let imports = probe::linked_imports(&registry, &parsed)?;
            let text = wit::world_text(&parsed.name, &imports);
            // Resolved before it is shown or written: what a generator will read.
            let resolved = wit::Resolved::with(&text)?;
            resolved.world(wit::WORLD)?;
            match out {
                None => out!("{}", text.trim_end()),
                Some(dir) => {
                    wit::check_out_dir(&dir)?;
                    resolved.write(&text, &dir)?;
                }
            }
        }
        ToolCommand::Finish {
            component,
            declaration,
            out,
            core_instances,
        } => {
            let (text, parsed) = read_declaration(&declaration)?;
            let out = out.unwrap_or_else(|| component.clone());
            let summary = finish::finish(
                &host(true)?,
                &component,
                &text,
                &parsed,
                core_instances,
                &out,
            )
            .with_context(|| format!("{}", component.display()))?;
            out!("{summary}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A declaration file: its text and what the host's parser makes of it. Tools only:
/// a hook exports another interface, which these builds do not make.
fn read_declaration(path: &Path) -> Result<(String, Declaration)> {
    use std::io::Read;
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_DECLARATION_BYTES).unwrap_or(u64::MAX);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    let declaration = Declaration::parse(&bytes).with_context(|| format!("{}", path.display()))?;
    if declaration.hook.is_some() {
        bail!(
            "{}: a hook's declaration ([hook]): these commands build tools; write hooks with the Rust SDK",
            path.display()
        );
    }
    // `parse` took it as UTF-8.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok((text, declaration))
}

/// A host as `hermetic` with no policy runs: the default operator ceilings and engine.
/// `cache`: compiled code goes to the usual cache (a finished component is compiled
/// once, here, and loads from the cache afterwards); probes are not worth keeping.
fn host(cache: bool) -> Result<Registry> {
    let mut options = RegistryOptions::new(OperatorPolicy::default());
    if !cache {
        options.engine.cache_dir = None;
    }
    Registry::new(options).context("starting the host")
}
