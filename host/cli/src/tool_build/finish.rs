//! `hermetic tool finish`: the declaration into the component, then the host's own
//! load as the check, then the file, written atomically.

use super::section;
use anyhow::{Context, Result, bail};
use hermetic::{Declaration, LoadError, LoadProblem, Registry, ToolSource};
use std::io::Write;
use std::path::Path;

/// Embeds `text` (the declaration, `parsed`) into `component`, checks that the host
/// loads the result and writes it to `out`. Returns a summary for the build's log.
///
/// # Errors
/// A component that is not one, a declaration the host reads differently, a load the
/// host refuses (its reason, with what to do), a failed write.
pub(super) fn finish(
    registry: &Registry,
    component: &Path,
    text: &str,
    parsed: &Declaration,
    core_instances: Option<u32>,
    out: &Path,
) -> Result<serde_json::Value> {
    let text = with_core_instances(text, parsed, core_instances);
    let declaration =
        Declaration::parse(text.as_bytes()).context("the declaration with core_instances added")?;
    let bytes = hermetic::component::read_file(component)?;
    let finished = section::with_declaration(&bytes, &text)?;
    // Read back as the host reads it: one section (a second one nested in a module
    // would be refused as a duplicate), holding this declaration.
    if hermetic::component::read_declaration(&finished)? != declaration {
        bail!("the host reads another declaration back from the section written (a build bug)");
    }
    registry
        .load(&finished, ToolSource::File(out.to_path_buf()))
        .map_err(|e| refused(&e))?;
    write_atomically(out, &finished)?;
    Ok(serde_json::json!({
        "file": out,
        "name": declaration.name,
        "bytes": finished.len(),
        // As `inspect` names it.
        "component": hermetic_distribution::Digest::of(&finished).to_string(),
        "core_instances": declaration.core_instances,
        "imports": section::imports(&finished)?,
    }))
}

/// Why the host would refuse the finished component, with what to do.
fn refused(error: &LoadError) -> anyhow::Error {
    let reason = LoadProblem::new("", error).reason;
    let hint = match error {
        LoadError::Link { .. } => {
            " (the imports a tool with this declaration may have: `hermetic tool world DECLARATION`)"
        }
        _ => "",
    };
    anyhow::anyhow!("the host would refuse it: {reason}{hint}")
}

/// The declaration to embed: `text`, with `core_instances = N` put first when asked
/// for and the author set none (a top-level key must come before the first table).
pub(super) fn with_core_instances(
    text: &str,
    parsed: &Declaration,
    core_instances: Option<u32>,
) -> String {
    match core_instances {
        Some(n) if parsed.core_instances.is_none() => {
            let text = text.strip_prefix('\u{feff}').unwrap_or(text);
            format!(
                "# Added by `hermetic tool finish --core-instances {n}`: the language's runtime\n\
                 # instantiates more core wasm modules than the default 8.\n\
                 core_instances = {n}\n\n{text}"
            )
        }
        _ => text.to_owned(),
    }
}

/// Writes `bytes` to `path` through a new file beside it, renamed over it: a reader
/// (a host reloading its tools directory) sees the old file or the new one, whole.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
    };
    // A leftover of an earlier run with the same process id is ours to replace.
    let mut file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(&tmp).and_then(|()| open())
        }
        other => other,
    }
    .with_context(|| format!("creating {}", tmp.display()))?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_instances_go_first_and_only_when_the_author_set_none() {
        let text = "name = \"a\"\ntoolset = \"a\"\n[capabilities]\nterminal = true\n";
        let parsed = Declaration::parse(text.as_bytes()).unwrap();
        let added = with_core_instances(text, &parsed, Some(16));
        let reparsed = Declaration::parse(added.as_bytes()).unwrap();
        assert_eq!(reparsed.core_instances, Some(16));
        assert_eq!(
            reparsed,
            Declaration {
                core_instances: Some(16),
                ..parsed.clone()
            }
        );
        assert_eq!(with_core_instances(text, &parsed, None), text);
        let own = format!("core_instances = 20\n{text}");
        let parsed_own = Declaration::parse(own.as_bytes()).unwrap();
        assert_eq!(with_core_instances(&own, &parsed_own, Some(16)), own);
        // A byte-order mark stays at the start or goes: never in the middle.
        let bom = format!("\u{feff}{text}");
        let added = with_core_instances(&bom, &parsed, Some(16));
        assert_eq!(
            Declaration::parse(added.as_bytes()).unwrap().core_instances,
            Some(16)
        );
    }
}
