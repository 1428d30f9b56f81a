//! The `secrets` host interface (wit/tool.wit), for hooks that declare `secret_scan`
//! and are granted it: where the host's held secrets are in a text. The values never
//! cross into the guest — only byte ranges of the text it passed.

use crate::sandbox::{CallState, SandboxError};
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker};

/// Host-side bindings of the `secrets` interface alone (world `secret-imports`).
pub mod bindings {
    wasmtime::component::bindgen!({
        world: "secret-imports",
        path: "../../wit",
    });
}

/// Shortest value searched for: a shorter one would match ordinary text everywhere
/// and tell a hook little but noise (and the policy's secrets are keys, not words).
const MIN_SECRET_CHARS: usize = 8;

/// Adds the `secrets` interface to a linker (only for hooks that declare it).
///
/// # Errors
/// [`SandboxError::Link`] on a wasmtime linking failure.
pub(crate) fn link(linker: &mut Linker<CallState>) -> Result<(), SandboxError> {
    bindings::hermetic::tool::secrets::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
        .map_err(super::link_error)
}

/// The byte ranges of `text` that are one of `values`, in order, merged where they
/// overlap.
pub(crate) fn find(values: &[String], text: &str) -> Vec<(u32, u32)> {
    let mut spans = Vec::new();
    for value in values.iter().filter(|v| v.len() >= MIN_SECRET_CHARS) {
        let finder = memchr::memmem::Finder::new(value.as_bytes());
        for start in finder.find_iter(text.as_bytes()) {
            spans.push((start, start + value.len()));
        }
    }
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
        .into_iter()
        .filter_map(|(s, e)| Some((u32::try_from(s).ok()?, u32::try_from(e).ok()?)))
        .collect()
}

impl bindings::hermetic::tool::secrets::Host for CallState {
    fn find(&mut self, text: String) -> Vec<(u32, u32)> {
        match &self.scanned {
            Some(values) => find(values, &text),
            None => Vec::new(),
        }
    }
}

impl CallState {
    /// Lets this call's guest ask where `values` are in its texts (a hook granted
    /// `secret_scan`).
    pub(crate) fn scan_for(&mut self, values: Arc<[String]>) {
        self.scanned = Some(values);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn spans_are_found_merged_and_short_values_ignored() {
        let values = vec![
            "s3cr3t-value-1".to_owned(),
            "value-1-and-more".to_owned(),
            "abc".to_owned(),
        ];
        let text = "x s3cr3t-value-1-and-more y abc s3cr3t-value-1";
        let spans = super::find(&values, text);
        assert_eq!(spans, vec![(2, 25), (32, 46)]);
        assert_eq!(&text[32..46], "s3cr3t-value-1");
        assert!(super::find(&values, "nothing here").is_empty());
    }
}
