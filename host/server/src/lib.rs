//! Serving the registry's tools to agents over MCP (the Model Context Protocol), on
//! `rmcp`, the official Rust MCP SDK: [`stdio`] for a client that spawns the host, and
//! [`http`] (streamable HTTP) for clients that connect to it.
//!
//! The transports only call the library: tools/list is [`Registry::definitions`],
//! tools/call is [`Registry::call_async`]; a result with an `"error"` key becomes a tool
//! result with `isError: true`, never a protocol error — except a tool the caller
//! cannot see, which the MCP spec makes a JSON-RPC invalid-params error (-32602,
//! "Unknown tool: NAME"). Progress reports and
//! cancellation travel through [`CallOptions`](hermetic::CallOptions); [`watch`] keeps the
//! registry in step with the tools directories and [`McpServer::notify_tools_changed`]
//! tells connected clients.
//!
//! Over HTTP, [`auth`] maps bearer tokens to tenants, rate-limits tools/call and holds
//! the `Host`/`Origin` allow-list; [`audit`] writes the hash-chained audit log;
//! [`McpApprover`] and the [`ApprovalBroker`] ask a human about dangerous commands through MCP elicitation or the
//! operator console's HTTP endpoint. A shutdown lets calls in flight finish
//! ([`McpServer::drain`]) and runs the [`McpServer::on_shutdown`] hooks.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use hermetic_server::{McpServer, ServeOptions};
//! use hermetic::{OperatorPolicy, Registry, RegistryOptions};
//! use std::sync::Arc;
//! let registry = Registry::new(RegistryOptions::new(OperatorPolicy::with_workspace(".".into())))?;
//! registry.add_bundled();
//! let server = McpServer::new(Arc::new(registry), ServeOptions::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8788").await?;
//! hermetic_server::http::serve(&server, listener, Default::default()).await?;
//! # Ok(()) }
//! ```

// The public surface is curated: the transports (`http`, `stdio`), the audit log and
// token hashing are public modules (each one API); the rest is private and what callers
// use is re-exported below.
mod approvals;
pub mod audit;
pub mod auth;
mod formats;
mod handler;
pub mod http;
mod jsonrpc;
mod live;
pub mod metrics;
mod plain;
pub mod stdio;
pub mod store;
mod trace;
mod watch;

use hermetic::{Registry, Selection};
use hermetic_config::ServerPolicy;
use parking_lot::{Mutex, RwLock};
use rmcp::{Peer, RoleServer};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use approvals::{
    ApprovalBroker, BrokerError, CHOICES, ElicitationApprover, InputRound, McpApprover,
    PendingApproval, Receipt, Rounds, SETTLE_WAIT, Settled, parse_choice,
};
pub use handler::McpHandler;
pub use watch::{DEBOUNCE, POLL_INTERVAL, ReloadReport, Reloader, WatchHandle, spawn as watch};

/// Default of [`ServeOptions::shutdown_grace`].
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Tenant of stdio sessions, and of HTTP requests when `access` defines no tokens
    /// (default `""`: the operator itself, no tenant narrowing; see
    /// [`CallOptions::tenant`](hermetic::CallOptions)).
    pub tenant: String,
    /// Toolsets served: tools/list shows, and tools/call accepts, only these
    /// (default: all). Resolved again after each [`McpServer::notify_tools_changed`].
    pub selection: Selection,
    /// Tokens, rate limits, admin tokens and the `Host`/`Origin` allow-list of the
    /// HTTP transport (default: none — a single-operator, loopback-only server).
    pub access: ServerPolicy,
    /// Where calls, policy decisions and approvals are recorded (default: nowhere).
    pub audit: Option<Arc<audit::AuditLog>>,
    /// How long a shutdown lets calls in flight finish before cancelling them
    /// (default [`DEFAULT_SHUTDOWN_GRACE`], 30 s).
    pub shutdown_grace: Duration,
    /// Where tool-call spans are exported (an OTLP/HTTP traces URL, e.g.
    /// `http://collector:4318/v1/traces`) in a build with the `otlp` feature. `None`
    /// (the default): where `OTEL_EXPORTER_OTLP_ENDPOINT` says, else nowhere.
    pub otlp_endpoint: Option<String>,
}

impl Default for ServeOptions {
    /// The operator's own view (tenant `""`), every toolset, no tokens, no audit log,
    /// a 30 s shutdown grace.
    fn default() -> Self {
        Self {
            tenant: String::new(),
            selection: Selection::default(),
            access: ServerPolicy::default(),
            audit: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            otlp_endpoint: None,
        }
    }
}

/// The tenant an HTTP request runs for. [`http::serve`] sets it as a request
/// extension from the request's bearer token — never from anything else the client
/// sends; an embedder mounting [`http::service`] behind its own authentication sets it
/// the same way (`http::Request::extensions_mut`). Requests without one run for
/// [`ServeOptions::tenant`], unless the server requires tokens: then they are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub Arc<str>);

/// A function run once at shutdown, after calls in flight ended.
pub type ShutdownHook = Box<dyn FnOnce() + Send>;

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
    /// A non-loopback address without bearer tokens: anyone who can reach it would act
    /// as the operator.
    #[error(
        "refusing to listen on {0} without bearer tokens: anyone reaching it would act as the operator. \
         Give tenants tokens in the policy file (`token_sha256`, see `hermetic token new`) or listen on loopback"
    )]
    Unprotected(std::net::SocketAddr),
    /// The cluster's shared store is misconfigured.
    #[error("[cluster]: {0}")]
    Store(#[from] store::StoreError),
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
    /// The same calls by session and request id, to cancel them at once.
    pub(crate) live: live::LiveCalls,
    /// Compiled tokens and rate limits.
    pub(crate) auth: auth::Authenticator,
    /// Pending approvals for the operator console (only with admin tokens: without
    /// one nobody could answer, and a call would wait for nothing).
    pub(crate) broker: Option<Arc<approvals::ApprovalBroker>>,
    /// How MCP 2026-07-28 approval rounds (`requestState`) are sealed, and their used
    /// nonces, so each answer approves one retry.
    pub(crate) rounds: approvals::Rounds,
    /// `/metrics`, when the policy turns it on.
    pub(crate) metrics: Option<Arc<metrics::Metrics>>,
    /// Where tool-call spans go (OTLP with the `otlp` feature and its environment).
    pub(crate) spans: trace::Spans,
    /// Set when a shutdown began: new calls are refused, calls in flight finish.
    pub(crate) draining: AtomicBool,
    hooks: Mutex<Vec<ShutdownHook>>,
}

impl Shared {
    /// Whether the selection lets an agent call `name` (it must also be registered).
    pub(crate) fn may_call(&self, name: &str) -> bool {
        let selection = &self.options.selection;
        if selection.enabled.is_none() && selection.disabled.is_empty() {
            return true;
        }
        let generation = *self.changes.borrow();
        if let Some((at, names)) = &*self.allowed.read()
            && *at == generation
        {
            return names.contains(name);
        }
        let (names, _) = self.registry.select(selection);
        let names = Arc::new(names);
        let allowed = names.contains(name);
        *self.allowed.write() = Some((generation, names));
        allowed
    }

    /// What tools/list answers `tenant` with: the OpenAI definitions of the tools it
    /// may see that are in the server's selection and available. The MCP handler and
    /// the console's tools view both ask this, so they cannot disagree.
    pub(crate) fn listed_definitions(&self, tenant: &str) -> serde_json::Value {
        self.registry
            .definitions_for(tenant, &self.options.selection)
    }

    pub(crate) fn add_legacy_peer(&self, peer: Peer<RoleServer>) {
        let mut peers = self.legacy_peers.lock();
        peers.retain(|p| !p.is_transport_closed());
        peers.push(peer);
    }
}

/// How this server seals 2026-07-28 approval rounds: with the cluster's shared key and
/// Redis-held nonces when `[cluster] state_key` names one, else alone.
fn rounds_for(registry: &Registry, options: &ServeOptions) -> approvals::Rounds {
    let access = &options.access;
    let (Some(url), Some(name)) = (&access.redis_url, &access.state_key) else {
        if access.redis_url.is_some() {
            tracing::warn!(
                "no [cluster] state_key: a 2026-07-28 client's approval retry must reach the node that asked (sticky routing)"
            );
        }
        return approvals::Rounds::process();
    };
    let nonces = store::RedisNonces::new(url);
    match (registry.secrets().get(name), nonces) {
        (Some(secret), Ok(nonces)) => approvals::Rounds::shared(secret, Arc::new(nonces)),
        (None, _) => {
            // The policy load checks the secret is there; an embedder's registry may
            // hold other secrets than its settings name.
            tracing::error!(
                "[cluster] state_key names {name}, which the secrets do not hold; approval rounds stay on this node"
            );
            approvals::Rounds::process()
        }
        (_, Err(e)) => {
            tracing::error!("approval rounds stay on this node: {e}");
            approvals::Rounds::process()
        }
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
        let auth = auth::Authenticator::new(&options.access, &options.tenant);
        let broker = auth.has_admin().then(|| {
            // The console says when "always" is session-only: the gate keeps it for
            // the session when the tenant's approval settings name no allowlist file.
            let terminal = registry.policy().terminal.clone();
            let broker = approvals::ApprovalBroker::new().with_allowlist(move |tenant| {
                terminal
                    .for_tenant(tenant)
                    .approval
                    .allowlist_file
                    .is_some()
            });
            // With a cluster, every node's console lists and answers every question.
            let broker = match options.access.redis_url.as_deref() {
                Some(url) => broker.with_cluster(url).unwrap_or_else(|e| {
                    tracing::error!("approvals stay on this node: {e}");
                    approvals::ApprovalBroker::new()
                }),
                None => broker,
            };
            Arc::new(broker)
        });
        let metrics = options.access.metrics.then(|| {
            let tenants = registry
                .policy()
                .tenants
                .keys()
                .chain(options.access.tenant_tokens.keys())
                .cloned()
                .collect::<Vec<_>>();
            Arc::new(metrics::Metrics::new(
                tenants,
                Some(Arc::clone(registry.dispatcher())),
            ))
        });
        if let (Some(m), Some(terminal)) = (&metrics, registry.terminal()) {
            terminal.add_observer(Arc::new(metrics::ApprovalMetrics(Arc::clone(m))));
        }
        // The terminal's approval requests and answers go to the audit log too.
        if let (Some(log), Some(terminal)) = (&options.audit, registry.terminal()) {
            terminal.add_observer(Arc::new(audit::AuditObserver(Arc::clone(log))));
        }
        let rounds = rounds_for(&registry, &options);
        let spans = trace::Spans::new(options.otlp_endpoint.as_deref());
        // Background processes and session containers do not outlive the server.
        let mut hooks: Vec<ShutdownHook> = Vec::new();
        if let Some(terminal) = registry.terminal().cloned() {
            hooks.push(Box::new(move || terminal.shutdown()));
        }
        Self {
            shared: Arc::new(Shared {
                registry,
                options,
                changes,
                legacy_peers: Mutex::new(Vec::new()),
                allowed: RwLock::new(None),
                calls: tokio_util::task::TaskTracker::new(),
                live: live::LiveCalls::default(),
                auth,
                broker,
                rounds,
                metrics,
                spans,
                draining: AtomicBool::new(false),
                hooks: Mutex::new(hooks),
            }),
        }
    }

    /// The pending-approvals broker behind the HTTP approvals endpoint (present when
    /// the policy has admin tokens).
    pub fn approvals(&self) -> Option<&Arc<approvals::ApprovalBroker>> {
        self.shared.broker.as_ref()
    }

    /// Whether HTTP requests must carry a tenant's bearer token (the policy gives
    /// tenants tokens). Without, the server must stay on loopback.
    pub fn requires_tokens(&self) -> bool {
        self.shared.auth.requires_tokens()
    }

    /// The audit log, if any.
    pub fn audit(&self) -> Option<&Arc<audit::AuditLog>> {
        self.shared.options.audit.as_ref()
    }

    /// Registers `hook` to run once at shutdown, after calls in flight have ended (or
    /// were cancelled at the grace deadline): e.g. to kill background processes.
    /// Hooks run in registration order on the transport's task; keep them short.
    pub fn on_shutdown(&self, hook: ShutdownHook) {
        self.shared.hooks.lock().push(hook);
    }

    /// Runs (and forgets) the shutdown hooks. Transports call it when they stop.
    pub fn run_shutdown_hooks(&self) {
        let hooks = std::mem::take(&mut *self.shared.hooks.lock());
        for hook in hooks {
            hook();
        }
        // The calls have ended: their spans are all handed over.
        self.shared.spans.shutdown();
    }

    /// Begins a graceful shutdown: new tool calls are refused with an error result,
    /// and this waits for the calls in flight for at most `grace`. Returns whether
    /// they all finished; the transport then cancels what is left.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.shared.draining.store(true, Ordering::SeqCst);
        let drained = self.wait_for_calls(grace).await;
        if !drained {
            tracing::warn!(
                "shutdown: calls still running after {} s are cancelled",
                grace.as_secs_f64()
            );
        }
        drained
    }

    /// How many tool calls are in flight right now.
    pub fn calls_in_flight(&self) -> usize {
        self.shared.calls.len()
    }

    /// Cancels every tool call in flight at once (each returns its "cancelled" error
    /// result at the guest's next epoch tick). A shutdown does this when its grace ran
    /// out, before ending the sessions, so every cancelled call still gets its reply.
    pub fn cancel_calls(&self) -> usize {
        self.shared.live.cancel_all()
    }

    /// Whether a shutdown began.
    pub fn is_draining(&self) -> bool {
        self.shared.draining.load(Ordering::SeqCst)
    }

    /// The registry served.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.shared.registry
    }

    /// A handler for one MCP session. `session` is the session id tool calls get
    /// ([`CallOptions::session`](hermetic::CallOptions::session)) when the transport has
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
            let mut peers = self.shared.legacy_peers.lock();
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
