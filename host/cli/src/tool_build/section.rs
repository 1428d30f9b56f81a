//! The `hermetic:declaration` custom section of a component: written with
//! `wasm-encoder` over the sections `wasmparser` reads, never by hand.
//!
//! The host reads the section wherever it is (a Rust tool's SDK puts it in the core
//! module, `#[link_section]`) and refuses two, so replacing it drops every one, at any
//! depth, and appends the new one at the top level.

use anyhow::{Context, Result, anyhow, bail};
use hermetic::declaration::SECTION;
use std::borrow::Cow;
use wasm_encoder::{CustomSection, RawSection, Section};
use wasmparser::{Chunk, Encoding, Parser, Payload};

/// Length of the header every module and component starts with: the magic number,
/// the version and the layer.
const HEADER: usize = 8;

/// `component` with `declaration` as its one `hermetic:declaration` section (appended
/// at the top level; every section of that name it had, at any depth, dropped).
/// Everything else is copied byte for byte.
///
/// # Errors
/// Bytes that are not a component.
pub(super) fn with_declaration(component: &[u8], declaration: &str) -> Result<Vec<u8>> {
    let (encoding, mut out) = without_declaration(component)?;
    if encoding != Encoding::Component {
        bail!("a core module, not a component (build a component: wasm32-wasip2)");
    }
    CustomSection {
        name: Cow::Borrowed(SECTION),
        data: Cow::Borrowed(declaration.as_bytes()),
    }
    .append_to(&mut out);
    Ok(out)
}

/// A module or component without any `hermetic:declaration` section: its sections
/// copied, nested modules and components rebuilt the same way.
fn without_declaration(bytes: &[u8]) -> Result<(Encoding, Vec<u8>)> {
    if !bytes.starts_with(b"\0asm") {
        bail!("not WebAssembly (no \\0asm magic number)");
    }
    let mut parser = Parser::new(0);
    let mut at = 0usize;
    let mut encoding = Encoding::Module;
    let mut out = Vec::with_capacity(bytes.len());
    loop {
        let (payload, consumed) = next(&mut parser, bytes, at)?;
        let mut next_at = at.saturating_add(consumed);
        match &payload {
            Payload::Version { encoding: e, .. } => {
                encoding = *e;
                out.extend_from_slice(bytes.get(..HEADER).unwrap_or_default());
                next_at = HEADER;
            }
            // Handed back whole: the parser has moved past it, only its header counts
            // as consumed.
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => {
                let (_, inner) = without_declaration(slice(bytes, unchecked_range.clone())?)
                    .context("a nested module or component")?;
                let id = payload.as_section().map_or(0, |(id, _)| id);
                RawSection { id, data: &inner }.append_to(&mut out);
                next_at = unchecked_range.end;
            }
            Payload::CodeSectionStart { range, .. } => {
                parser.skip_section();
                RawSection {
                    id: wasm_encoder::SectionId::Code as u8,
                    data: slice(bytes, range.clone())?,
                }
                .append_to(&mut out);
                next_at = range.end;
            }
            Payload::CustomSection(c) if c.name() == SECTION => {}
            Payload::End(_) => return Ok((encoding, out)),
            other => {
                if let Some((id, range)) = other.as_section() {
                    RawSection {
                        id,
                        data: slice(bytes, range)?,
                    }
                    .append_to(&mut out);
                }
            }
        }
        at = next_at;
    }
}

/// The component's top-level import names (`wasi:http/types@0.2.6`, …).
///
/// # Errors
/// Bytes that are not WebAssembly.
pub(super) fn imports(component: &[u8]) -> Result<Vec<String>> {
    let mut parser = Parser::new(0);
    let mut at = 0usize;
    let mut names = Vec::new();
    loop {
        let (payload, consumed) = next(&mut parser, component, at)?;
        at = at.saturating_add(consumed);
        match payload {
            Payload::ComponentImportSection(reader) => {
                for import in reader {
                    names.push(import?.name.name.to_owned());
                }
            }
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => at = unchecked_range.end,
            Payload::End(_) => return Ok(names),
            _ => {}
        }
    }
}

/// The next payload of `bytes` from `at`, and the bytes it took.
fn next<'a>(parser: &mut Parser, bytes: &'a [u8], at: usize) -> Result<(Payload<'a>, usize)> {
    let rest = bytes.get(at..).unwrap_or_default();
    match parser.parse(rest, true)? {
        Chunk::Parsed { consumed, payload } => Ok((payload, consumed)),
        Chunk::NeedMoreData(_) => bail!("truncated"),
    }
}

fn slice(bytes: &[u8], range: std::ops::Range<usize>) -> Result<&[u8]> {
    bytes
        .get(range)
        .ok_or_else(|| anyhow!("a section runs past the end"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component holding a core module with a declaration section (as a Rust tool's
    /// is), and a top-level one: both go, the new one is the only one.
    #[test]
    fn every_declaration_section_is_replaced_by_one() {
        let mut module = wasm_encoder::Module::new();
        module.section(&CustomSection {
            name: Cow::Borrowed(SECTION),
            data: Cow::Borrowed(b"old = 1"),
        });
        module.section(&CustomSection {
            name: Cow::Borrowed("other"),
            data: Cow::Borrowed(b"kept"),
        });
        let mut component = wasm_encoder::Component::new();
        component.section(&wasm_encoder::ModuleSection(&module));
        component.section(&CustomSection {
            name: Cow::Borrowed(SECTION),
            data: Cow::Borrowed(b"old = 2"),
        });
        let out = with_declaration(&component.finish(), "new = 3").unwrap();
        let mut found = Vec::new();
        for payload in Parser::new(0).parse_all(&out) {
            if let Payload::CustomSection(c) = payload.unwrap() {
                found.push((c.name().to_owned(), c.data().to_vec()));
            }
        }
        assert_eq!(
            found,
            [
                ("other".to_owned(), b"kept".to_vec()),
                (SECTION.to_owned(), b"new = 3".to_vec()),
            ]
        );
        wasmparser::Validator::new().validate_all(&out).unwrap();
    }

    #[test]
    fn what_is_not_a_component_is_refused() {
        let module = wasm_encoder::Module::new().finish();
        let err = with_declaration(&module, "").unwrap_err();
        assert!(err.to_string().contains("a core module"), "{err}");
        let err = with_declaration(b"\x7fELF", "").unwrap_err();
        assert!(err.to_string().contains("not WebAssembly"), "{err}");
        let component = wasm_encoder::Component::new().finish();
        let err = with_declaration(&component[..6], "").unwrap_err();
        assert!(err.to_string().contains("unexpected end"), "{err}");
    }
}
