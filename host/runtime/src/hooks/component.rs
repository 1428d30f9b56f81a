//! A hook component: loaded like a tool (declaration read without running it, compiled
//! once, pre-linked), run like one — a fresh sandbox per run, its own grants and
//! limits — but exporting `hermetic:tool/hook` instead of `tool`.

use crate::component::{CallFailure, LoadError, classify, log_output};
use crate::declaration::Declaration;
use crate::engine::Runtime;
use crate::policy::EffectiveGrants;
use crate::sandbox::{self, CallSetup, CallState, Linkers};
use crate::secrets::Secrets;
use std::sync::Arc;

/// Host-side bindings of the `hook-component` world (its host and types interfaces
/// are the tool world's).
pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        world: "hook-component",
        path: "../../wit",
        with: {
            "hermetic:tool/types": crate::bindings::hermetic::tool::types,
            "hermetic:tool/host": crate::bindings::hermetic::tool::host,
        },
    });
}

pub(crate) use bindings::exports::hermetic::tool::hook::{Call, PostVerdict, PreVerdict};

/// A compiled, pre-linked hook.
pub struct LoadedHook {
    /// Its name (declared).
    pub name: Arc<str>,
    /// Its declaration (with its `[hook]` table).
    pub declaration: Declaration,
    /// SHA-256 of its component.
    pub digest: String,
    pre: bindings::HookComponentPre<CallState>,
}

impl std::fmt::Debug for LoadedHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedHook")
            .field("name", &self.name)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

impl LoadedHook {
    /// Loads a hook component from its bytes.
    ///
    /// # Errors
    /// [`LoadError`]: not a component, no or a bad declaration, a tool rather than a
    /// hook, or imports the host does not give it.
    pub fn load(runtime: &Runtime, linkers: &Linkers, bytes: &[u8]) -> Result<Self, LoadError> {
        if bytes.len() > crate::component::MAX_COMPONENT_BYTES {
            return Err(LoadError::TooLarge(bytes.len()));
        }
        let declaration = crate::component::read_declaration(bytes)?;
        if declaration.hook.is_none() {
            return Err(LoadError::Link {
                reason: format!(
                    "{} is a tool, not a hook (a hook's declaration has a [hook] table; build it with hermetic-sdk's export_hook!)",
                    declaration.name
                ),
                source: None,
            });
        }
        let compiled = runtime.compile(bytes)?;
        let linker = linkers
            .for_declaration(&declaration)
            .map_err(|e| LoadError::link(e.to_string()))?;
        let pre = linker
            .instantiate_pre(&compiled.component)
            .map_err(|e| LoadError::link(format!("{e:#}")))?;
        let pre = bindings::HookComponentPre::new(pre).map_err(|e| {
            LoadError::link(format!(
                "{e:#} (a hook exports hermetic:tool/hook@0.3.0: build it with hermetic-sdk's export_hook!)"
            ))
        })?;
        runtime.commit(&compiled);
        Ok(Self {
            name: Arc::from(declaration.name.as_str()),
            declaration,
            digest: compiled.digest,
            pre,
        })
    }

    /// Runs `pre-call` in a fresh sandbox.
    ///
    /// # Errors
    /// A [`CallFailure`]: a trap, a limit hit, a sandbox that could not be built.
    pub(crate) fn pre_call(
        &self,
        run: HookRun<'_>,
        call: &Call,
    ) -> Result<PreVerdict, CallFailure> {
        self.run(run, |hook, store| {
            hook.hermetic_tool_hook().call_pre_call(store, call)
        })
    }

    /// Runs `post-call` in a fresh sandbox.
    ///
    /// # Errors
    /// As [`LoadedHook::pre_call`].
    pub(crate) fn post_call(
        &self,
        run: HookRun<'_>,
        call: &Call,
        result: &str,
    ) -> Result<PostVerdict, CallFailure> {
        self.run(run, |hook, store| {
            hook.hermetic_tool_hook()
                .call_post_call(store, call, result)
        })
    }

    fn run<T>(
        &self,
        run: HookRun<'_>,
        call: impl FnOnce(
            &bindings::HookComponent,
            &mut wasmtime::Store<CallState>,
        ) -> wasmtime::Result<T>,
    ) -> Result<T, CallFailure> {
        let timeout_ms = run.grants.limits.timeout_ms;
        let mut store =
            sandbox::store(run.runtime, &self.name, run.grants, run.secrets, run.setup)?;
        let result = self
            .pre
            .instantiate(&mut store)
            .and_then(|hook| call(&hook, &mut store));
        log_output(&self.name, store.data());
        result.map_err(|e| classify(e, store.data(), run.grants, timeout_ms))
    }
}

/// What one run of a hook gets.
pub(crate) struct HookRun<'a> {
    pub(crate) runtime: &'a Runtime,
    pub(crate) grants: &'a EffectiveGrants,
    pub(crate) secrets: &'a Secrets,
    /// Its setup, with the secret values it may ask the positions of when granted
    /// `secret_scan`.
    pub(crate) setup: CallSetup<'a>,
}
