//! The capabilities a tool can be granted, one unit each, registered once in the
//! `capabilities!` line below. A unit is a module whose `Unit` implements
//! [`Capability`]:
//!
//! 1. **grant** — decided by the pure policy (`hermetic_policy::EffectiveGrants`), with
//!    no I/O and no wasmtime; the unit reads it ([`Capability::declared`],
//!    [`Capability::granted`]);
//! 2. **per-call context** — from one call's [`CallInputs`] (grants, secrets, deadline,
//!    cancel token, and the host services and caller the dispatcher hands over), a
//!    WASI unit configures the call's WASI context ([`Capability::configure`]) and a
//!    linked unit builds what the call holds of it ([`Capability::for_call`]: `None`
//!    when the call has none of it, so a tool that asks for nothing builds nothing);
//! 3. **link** — [`Capability::link`] adds the interfaces it serves to a linker.
//!
//! Two kinds, two lists. The **WASI** units ([`fs`], [`env`](mod@env), [`clock`],
//! [`sockets`]: refused) are WASI's own interfaces, linked into every tool, what each
//! call may reach decided by its WASI context. The **linked** units ([`http`],
//! [`terminal`], [`secrets`], [`keyvalue`]) are linked only into tools that declare
//! them ([`LinkedCapabilities`], one linker per distinct set, built on first use), and
//! each call holds their contexts in its [`Granted`]. Whether a call may run on a fiber
//! follows from the units too ([`Capability::ON_FIBER`]).
//!
//! A new capability is a new module here implementing [`Capability`] and its name in
//! the list; [`LinkedCapabilities`], [`Granted`], the WASI context, the linkers and the
//! fiber rule follow. The rest of the recipe (the declaration field and grant in
//! `hermetic-policy`, the WIT, the SDKs, the tests) is in `docs/src/architecture.md`,
//! "Adding a capability".

pub use fs::mounts::{create_beneath, open_beneath};

use super::{CallState, SandboxError};
use crate::call::CancelToken;
use crate::declaration::Declaration;
use crate::policy::EffectiveGrants;
use crate::secrets::Secrets;
use keyvalue::backend::KeyValueBackend;
use std::sync::Arc;
use std::time::Instant;
use terminal::TerminalService;
use wasmtime::component::Linker;
use wasmtime_wasi::WasiCtxBuilder;

/// One capability: what a declaration asks of it, what grants give of it, the
/// interfaces it links, and what one call gets of it. Each unit's `Unit` implements it;
/// the `capabilities!` line derives the rest.
pub(crate) trait Capability {
    /// What one call holds of a linked unit (in [`Granted`]); `()` for a WASI unit,
    /// whose part of a call is the WASI context it configures.
    type Ctx;

    /// Whether a call of a tool that asks for it may run on a fiber: its host calls
    /// never block the thread, and the fiber's linker (WASI only) has them. No linked
    /// unit is on a fiber.
    const ON_FIBER: bool;

    /// Whether `declaration` asks for it: for a linked unit, whether its interfaces are
    /// linked into the tool; a WASI unit is linked into every tool regardless.
    fn declared(declaration: &Declaration) -> bool;

    /// Whether `grants` give a call any of it.
    fn granted(grants: &EffectiveGrants) -> bool;

    /// Adds its interfaces to a linker (for calls on a thread of their own).
    ///
    /// # Errors
    /// A wasmtime linking failure (a host bug).
    fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()>;

    /// Adds its interfaces to the linker of calls on a fiber (WASI units only): the
    /// same as [`Capability::link`] unless its blocking bindings have async twins.
    ///
    /// # Errors
    /// A wasmtime linking failure (a host bug).
    fn link_fiber(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
        Self::link(linker)
    }

    /// Writes into one call's WASI context what the call may reach of it (WASI units).
    ///
    /// # Errors
    /// What the unit could not give the call (a mount that cannot be opened).
    fn configure(_wasi: &mut WasiCtxBuilder, _call: &CallInputs<'_>) -> Result<(), SandboxError> {
        Ok(())
    }

    /// What one call holds of it (linked units): `None` when the call has none of it,
    /// with nothing built or allocated.
    fn for_call(_call: &CallInputs<'_>) -> Option<Self::Ctx> {
        None
    }
}

/// The host services the units serve calls with, as the dispatcher holds them.
#[derive(Clone)]
pub struct Services {
    /// The terminal service (backends, approval gates, background processes); `None`:
    /// no terminal, so a tool granted it finds every terminal function refused.
    pub terminal: Option<Arc<dyn TerminalService>>,
    /// Where granted tools' key-value data lives.
    pub keyvalue: Arc<dyn KeyValueBackend>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("terminal", &self.terminal.is_some())
            .finish_non_exhaustive()
    }
}

/// Who a tool call is for, and the host services it may reach: what the dispatcher
/// hands to the units of every call it runs. Borrowed for the call's setup: building
/// it costs nothing for a tool that asks for nothing.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    /// The dispatcher's services.
    pub services: &'a Services,
    /// Tenant id ("" = the operator).
    pub tenant: &'a str,
    /// Agent session.
    pub session: &'a str,
    /// Who answers approval requests raised during the call (`None`: nobody).
    pub approver: Option<&'a Arc<dyn crate::approval::Approver>>,
    /// Whose key-value data the tool reaches (`LoadedTool::store_owner`).
    pub store_owner: &'a Arc<str>,
}

/// What one call's units build its contexts from.
pub(crate) struct CallInputs<'a> {
    /// The tool (or hook) called.
    pub(crate) tool: &'a Arc<str>,
    /// The call's grants.
    pub(crate) grants: &'a EffectiveGrants,
    /// The operator's secrets (env values, injected credentials).
    pub(crate) secrets: &'a Secrets,
    /// When the call must stop.
    pub(crate) deadline: Instant,
    /// Stops the call early when cancelled.
    pub(crate) cancel: Option<&'a CancelToken>,
    /// Who the call is for and the host services it may reach (`None` for `schema()`,
    /// `check()` and hook runs, which reach none).
    pub(crate) caller: Option<Caller<'a>>,
    /// The held secret values a hook granted `secret_scan` may locate (`None` for
    /// every other run).
    pub(crate) scanned: Option<&'a Arc<[String]>>,
}

/// Registers the units: `wasi:` lists WASI's own, linked into every tool; `linked:`
/// lists those linked only into tools that declare them. Each name is a module
/// `NAME.rs` (or `NAME/mod.rs`) with a `pub(crate) struct Unit` implementing
/// [`Capability`]; the list makes the modules, [`LinkedCapabilities`] (one flag per
/// linked unit, in this order), [`Granted`] (one context per linked unit), and the
/// functions that configure, link and place a call by every unit.
macro_rules! capabilities {
    (wasi: $($wasi:ident),+ ; linked: $($linked:ident),+ $(;)?) => {
        $(pub(crate) mod $wasi;)+
        $(pub(crate) mod $linked;)+

        /// Which linked units a tool's linker carries: one flag per unit that adds
        /// imports beyond WASI. Each distinct set gets one linker, built the first time
        /// a tool with that set loads (not 2ⁿ linkers up front).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct LinkedCapabilities {
            $(
                #[doc = concat!(
                    "The `", stringify!($linked), "` unit's interfaces (the tool declares it)."
                )]
                pub $linked: bool,
            )+
        }

        impl LinkedCapabilities {
            /// What a declaration asks to be linked.
            pub fn of(declaration: &Declaration) -> Self {
                Self {
                    $($linked: <$linked::Unit as Capability>::declared(declaration),)+
                }
            }

            /// Adds this set's interfaces to a linker that has WASI.
            ///
            /// # Errors
            /// [`SandboxError::Link`] on a wasmtime linking failure.
            pub(crate) fn link(self, linker: &mut Linker<CallState>) -> Result<(), SandboxError> {
                $(
                    if self.$linked {
                        <$linked::Unit as Capability>::link(linker).map_err(link_error)?;
                    }
                )+
                Ok(())
            }
        }

        /// What one call holds of the linked units, one context each (`None`: the call
        /// has none of it). The units' host functions read their own field.
        pub(crate) struct Granted {
            $($linked: Option<<$linked::Unit as Capability>::Ctx>,)+
        }

        impl Granted {
            /// Each linked unit's context for the call.
            pub(crate) fn for_call(call: &CallInputs<'_>) -> Self {
                Self {
                    $($linked: <$linked::Unit as Capability>::for_call(call),)+
                }
            }
        }

        /// Writes each WASI unit's part of one call into its WASI context.
        ///
        /// # Errors
        /// The first unit's refusal ([`SandboxError::Mount`]).
        pub(crate) fn configure(
            wasi: &mut WasiCtxBuilder,
            call: &CallInputs<'_>,
        ) -> Result<(), SandboxError> {
            $(<$wasi::Unit as Capability>::configure(wasi, call)?;)+
            Ok(())
        }

        /// Links the WASI units' interfaces (calls on a thread of their own).
        pub(crate) fn link_wasi(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
            $(<$wasi::Unit as Capability>::link(linker)?;)+
            Ok(())
        }

        /// Links the WASI units' interfaces for calls on a fiber.
        pub(crate) fn link_wasi_fiber(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
            $(<$wasi::Unit as Capability>::link_fiber(linker)?;)+
            Ok(())
        }

        /// Whether calls of a tool with this declaration may run on a fiber: every unit
        /// it asks for is [on a fiber](Capability::ON_FIBER).
        pub(crate) fn runs_on_fiber(declaration: &Declaration) -> bool {
            $(fits_fiber::<$wasi::Unit>(declaration) &&)+
            $(fits_fiber::<$linked::Unit>(declaration) &&)+
            true
        }

        /// Whether `grants` give a call any of a unit that is not on a fiber.
        pub(crate) fn needs_thread(grants: &EffectiveGrants) -> bool {
            $(needs_thread_for::<$wasi::Unit>(grants) ||)+
            $(needs_thread_for::<$linked::Unit>(grants) ||)+
            false
        }
    };
}

// The registration: a new capability is its module and its name here.
capabilities! {
    wasi: fs, env, clock, sockets;
    linked: http, terminal, secrets, keyvalue;
}

/// Whether a tool with `declaration` may run on a fiber as far as `U` goes.
fn fits_fiber<U: Capability>(declaration: &Declaration) -> bool {
    U::ON_FIBER || !U::declared(declaration)
}

/// Whether `grants` give a call some of `U`, which is not on a fiber.
fn needs_thread_for<U: Capability>(grants: &EffectiveGrants) -> bool {
    !U::ON_FIBER && U::granted(grants)
}

/// A linking failure as a [`SandboxError`] (a host bug, never a guest problem).
pub(crate) fn link_error(e: wasmtime::Error) -> SandboxError {
    SandboxError::Link(e.into())
}
