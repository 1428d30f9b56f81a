//! Serving the registry's tools to agents over MCP (the Model Context Protocol), on
//! `rmcp`, the official Rust MCP SDK: [`stdio`] for a client that spawns the host, and
//! [`http`] (streamable HTTP) for clients that connect to it.
//!
//! The transports only call the library: tools/list is [`Registry::definitions`],
//! tools/call is [`Registry::call_async`]; a result with an `"error"` key becomes a tool
//! result with `isError: true`, never a protocol error. Progress reports and
//! cancellation travel through [`CallOptions`](crate::CallOptions); [`watch`] keeps the
//! registry in step with the tools directories and [`McpServer::notify_tools_changed`]
//! tells connected clients.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use hermetic::server::{McpServer, ServeOptions};
//! use hermetic::{OperatorPolicy, Registry, RegistryOptions};
//! use std::sync::Arc;
//! let registry = Registry::new(RegistryOptions::new(OperatorPolicy::with_workspace(".".into())))?;
//! registry.add_bundled();
//! let server = McpServer::new(Arc::new(registry), ServeOptions::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8788").await?;
//! hermetic::server::http::serve(&server, listener, Default::default()).await?;
//! # Ok(()) }
//! ```

pub mod handler;
pub mod http;
pub mod stdio;
pub mod watch;

use crate::registry::{Registry, Selection};
use rmcp::{Peer, RoleServer};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, RwLock};

pub use handler::McpHandler;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Tenant for requests that carry no [`Tenant`] (default `""`: the operator
    /// itself, no tenant narrowing; see [`CallOptions::tenant`](crate::CallOptions)).
    pub tenant: String,
    /// Toolsets served: tools/list shows, and tools/call accepts, only these
    /// (default: all). Resolved again after each [`McpServer::notify_tools_changed`].
    pub selection: Selection,
}

impl Default for ServeOptions {
    /// The operator's own view (tenant `""`), every toolset.
    fn default() -> Self {
        Self {
            tenant: String::new(),
            selection: Selection::default(),
        }
    }
}

/// The tenant an HTTP request runs for. An authentication layer in front of
/// [`http::service`] sets it as a request extension (`http::Request::extensions_mut`);
/// requests without one run for [`ServeOptions::tenant`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub String);

/// Errors starting or running a server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP session could not start (e.g. the client closed stdin before
    /// initializing).
    #[error("MCP session failed to start: {0}")]
    Start(String),
    /// The MCP session ended abnormally.
    #[error("MCP session ended abnormally: {0}")]
    Session(String),
    /// The listener failed.
    #[error("HTTP listener failed: {0}")]
    Listen(#[from] std::io::Error),
}

/// State shared by every session of one server.
pub(crate) struct Shared {
    pub(crate) registry: Arc<Registry>,
    pub(crate) options: ServeOptions,
    /// Bumped on every change of the tool list; subscriptions (`subscriptions/listen`)
    /// wait on it.
    pub(crate) changes: tokio::sync::watch::Sender<u64>,
    /// Sessions that used the `initialize` handshake: they get
    /// `notifications/tools/list_changed` pushed. Closed ones are pruned as we go.
    legacy_peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Names the selection allows, computed once per tool-list generation.
    allowed: RwLock<Option<(u64, Arc<BTreeSet<String>>)>>,
    /// Tool calls in flight, so a transport can wait for cancelled calls to end
    /// before the runtime goes away.
    pub(crate) calls: tokio_util::task::TaskTracker,
}

impl Shared {
    /// Whether the selection lets an agent call `name` (it must also be registered).
    pub(crate) fn may_call(&self, name: &str) -> bool {
        let selection = &self.options.selection;
        if selection.enabled.is_none() && selection.disabled.is_empty() {
            return true;
        }
        let generation = *self.changes.borrow();
        if let Some((at, names)) = &*self.allowed.read().unwrap_or_else(|p| p.into_inner())
            && *at == generation
        {
            return names.contains(name);
        }
        let (names, _) = self.registry.select(selection);
        let names = Arc::new(names);
        let allowed = names.contains(name);
        *self.allowed.write().unwrap_or_else(|p| p.into_inner()) = Some((generation, names));
        allowed
    }

    pub(crate) fn add_legacy_peer(&self, peer: Peer<RoleServer>) {
        let mut peers = self.legacy_peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.retain(|p| !p.is_transport_closed());
        peers.push(peer);
    }
}

/// An MCP server over one registry. Cheap to clone; every clone serves the same tools.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("registry", &self.shared.registry)
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for `registry`.
    pub fn new(registry: Arc<Registry>, options: ServeOptions) -> Self {
        let (changes, _) = tokio::sync::watch::channel(0);
        Self {
            shared: Arc::new(Shared {
                registry,
                options,
                changes,
                legacy_peers: Mutex::new(Vec::new()),
                allowed: RwLock::new(None),
                calls: tokio_util::task::TaskTracker::new(),
            }),
        }
    }

    /// The registry served.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.shared.registry
    }

    /// A handler for one MCP session. `session` is the session id tool calls get
    /// ([`CallOptions::session`](crate::CallOptions::session)) when the transport has
    /// none of its own (HTTP sessions use their `Mcp-Session-Id`).
    pub fn handler(&self, session: Option<String>) -> McpHandler {
        McpHandler::new(self.shared.clone(), session.map(Arc::from))
    }

    /// Waits until no tool call is in flight, for at most `limit`. Returns whether
    /// none is left. Calls whose session ended are cancelled and end within an epoch
    /// tick, so a transport calls this after its sessions end and before the runtime
    /// shuts down (which would drop the calls instead of letting them finish).
    pub async fn wait_for_calls(&self, limit: std::time::Duration) -> bool {
        let calls = &self.shared.calls;
        calls.close();
        let drained = tokio::time::timeout(limit, calls.wait()).await.is_ok();
        calls.reopen();
        drained
    }

    /// Tells every connected client that the tool list changed: sessions that used the
    /// `initialize` handshake get `notifications/tools/list_changed`, and every
    /// `subscriptions/listen` stream that asked for tool changes gets it too.
    ///
    /// Must run inside a Tokio runtime (the notifications are sent by a task).
    pub fn notify_tools_changed(&self) {
        self.shared
            .changes
            .send_modify(|generation| *generation += 1);
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self
                .shared
                .legacy_peers
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
        };
        if peers.is_empty() {
            return;
        }
        tokio::spawn(async move {
            for peer in peers {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!("could not send tools/list_changed to a session: {e}");
                }
            }
        });
    }
}
