//! The `secrets` host interface (wit/tool.wit), for hooks that declare `secret_scan`
//! and are granted it: where the host's held secrets are in a text. The values never
//! cross into the guest — only byte ranges of the text it passed.

use super::{CallInputs, Capability};
use crate::declaration::Declaration;
use crate::policy::EffectiveGrants;
use crate::sandbox::CallState;
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

/// The secret-scan unit (a linked one: the `secrets` interface only for hooks that
/// declare `secret_scan`).
pub(crate) struct Unit;

impl Capability for Unit {
    /// The values the hook may ask the positions of.
    type Ctx = Arc<[String]>;

    /// Hooks run on a thread, and the fiber's linker has WASI only.
    const ON_FIBER: bool = false;

    fn declared(declaration: &Declaration) -> bool {
        declaration.capabilities.secret_scan
    }

    /// A hook's `[hooks.NAME]` table grants `secret_scan`, not its grants: it arrives
    /// as [`CallInputs::scanned`].
    fn granted(_grants: &EffectiveGrants) -> bool {
        false
    }

    /// Adds the `secrets` interface to a linker (only for hooks that declare it).
    fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
        bindings::hermetic::tool::secrets::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
    }

    /// The held values, for a hook granted `secret_scan` (`None` for every other run).
    fn for_call(call: &CallInputs<'_>) -> Option<Arc<[String]>> {
        call.scanned.map(Arc::clone)
    }
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
        match &self.granted.secrets {
            Some(values) => find(values, &text),
            None => Vec::new(),
        }
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
