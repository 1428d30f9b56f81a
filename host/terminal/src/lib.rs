//! Shell commands for agents, run by the host behind the approval gate.
//!
//! The `terminal` and `process` tools are guests; they call the host's `terminal`
//! interface (linked only into tools that declare it and were granted it). For every
//! command, foreground or background, on every backend:
//!
//! 1. the request is checked (timeout at most [`config::MAX_TIMEOUT_SECS`], a plain
//!    `workdir`);
//! 2. the tenant's [`ApprovalGate`] decides — hardline commands never run, dangerous
//!    ones run only after a human (or the operator's policy) approves, and silence is
//!    denial;
//! 3. only then does the tenant's [`TerminalBackend`] see it: `local`, `bwrap`,
//!    `docker` (any docker-compatible CLI) or `ssh`, chosen by the operator;
//! 4. the output (stdout and stderr merged) is streamed as progress, then stripped of
//!    ANSI escapes, redacted and capped (`output.rs`).
//!
//! Background processes live in a process registry (`process.rs`) per (tenant, session);
//! [`TerminalHost::end_session`] and [`TerminalHost::shutdown`] kill them. What they are
//! sent on stdin passes the gate too, judged in the language of what reads it, a
//! complete line or statement at a time (`stdin_gate.rs`; what is held back:
//! `input_gate.rs`); and a file one command of a session wrote is fresh when a later
//! one runs it (`session_files.rs`).

// The public surface is curated: modules are private, what callers use is re-exported.
mod auto;
mod backend;
mod backends;
/// The terminal settings (data, in `hermetic-policy`).
pub use hermetic_policy::terminal as config;
mod exec;
mod host_state;
mod input_gate;
mod output;
mod process;
mod script_pin;
mod seccomp;
mod session_files;
mod stdin_gate;

pub use backend::{BackendError, FileRead, Job, OpenedDir, PtyMode, TerminalBackend};
pub use backends::backend_names;
pub use backends::bwrap::{BwrapBackend, BwrapConfig, DEFAULT_HIDDEN};
pub use backends::docker::{
    CONTAINER_WORKSPACE, DEFAULT_SECCOMP_PROFILE, DockerBackend, DockerConfig,
};
pub use backends::gvisor::{GvisorBackend, GvisorConfig};
pub use backends::local::{LocalBackend, LocalConfig};
pub use backends::ssh::{SshBackend, SshConfig};
pub use config::{TerminalConfig, TerminalSettings};
pub use output::{MAX_OUTPUT_CHARS, REDACTED};
pub use process::{BUFFER_CHARS, KEEP_FINISHED, MAX_PER_SESSION};

use config::MAX_TIMEOUT_SECS;
use hermetic::CancelToken;
use hermetic::{CommandFinished, GateRefusal, ProcessReply, ProcessStarted, TerminalCallError};
pub use hermetic::{CommandRequest, ProcessRequest, TerminalCallContext, TerminalService};
use hermetic_approval::{
    Answer, ApprovalContext, ApprovalGate, ApprovalObserver, ApprovalRequest, Approver,
    ApproverError, ApproverKind, Detection, Outcome, SessionKey, Verdict,
};
use hermetic_detect::{Frame, Reader};
use parking_lot::Mutex;
use process::{Action, ProcessRegistry};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// PATH for local and bwrap commands: the standard directories, not the host's PATH
/// (which may point into a user's private bin directories).
const COMMAND_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Kept back from the call's own deadline so a command's timeout ends before the tool's.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);
/// Live terminal sessions one tenant may hold. Each may hold background processes and
/// a container until it ends, and a session ends only when its client says so or the
/// server prunes it: without a cap one tenant could open sessions until the host runs
/// out of processes or disk. 64 is far more than one agent fleet's concurrent sessions.
pub const MAX_SESSIONS_PER_TENANT: usize = 64;

/// A tenant has [`MAX_SESSIONS_PER_TENANT`] live terminal sessions already.
#[derive(Debug, thiserror::Error)]
#[error(
    "this tenant already has {MAX_SESSIONS_PER_TENANT} live terminal sessions; end one (close its MCP session) before using the terminal in a new one"
)]
pub struct TooManySessions;

impl From<TooManySessions> for TerminalCallError {
    fn from(_: TooManySessions) -> Self {
        TerminalCallError::TooManySessions(
            u32::try_from(MAX_SESSIONS_PER_TENANT).unwrap_or(u32::MAX),
        )
    }
}

impl From<process::TooMany> for TerminalCallError {
    fn from(_: process::TooMany) -> Self {
        TerminalCallError::TooManyProcesses(u32::try_from(MAX_PER_SESSION).unwrap_or(u32::MAX))
    }
}

/// Terminal set-up errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TerminalError {
    /// The tenant's approval settings do not compile.
    #[error("approval settings of tenant {tenant:?}: {reason}")]
    Approval {
        /// Tenant id ("" = operator).
        tenant: String,
        /// Why.
        reason: String,
    },
    /// The backend cannot be built.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A key of the `[terminal]` settings, or a backend's options table, is wrong.
    #[error("{at}: {reason}")]
    Options {
        /// Where, as a policy file spells it (`terminal.docker`,
        /// `terminal.tenants.acme.backend`).
        at: String,
        /// What is wrong.
        reason: String,
    },
}

/// One tenant's compiled terminal: its backend, its approval gate and, for backends
/// on this host, its directory.
struct TenantTerminal {
    config: TerminalConfig,
    backend: Arc<dyn TerminalBackend>,
    gate: ApprovalGate,
    place: Option<Place>,
}

/// A tenant's directory on this host: `sub` below the operator's `root`, opened afresh
/// for every command without following a symlink below `root` (anyone who can write
/// in `root` — another tenant's command, a tool with a read-write mount — could swap
/// `sub` for a symlink to somewhere else).
#[derive(Debug, Clone)]
struct Place {
    root: PathBuf,
    sub: PathBuf,
}

impl Place {
    fn new(root: &std::path::Path, sub: PathBuf) -> Self {
        // Canonical once, so the working directory bash reports (symlinks resolved)
        // is recognised as inside it.
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        Self { root, sub }
    }

    fn path(&self) -> PathBuf {
        self.root.join(&self.sub)
    }

    /// Opens the directory (making what is missing of `sub`, 0700).
    fn open(&self) -> Result<backend::OpenedDir, TerminalCallError> {
        hermetic::create_beneath(&self.root, &self.sub)
            .map(backend::OpenedDir::new)
            .map_err(|e| {
                TerminalCallError::Failed(format!(
                    "the terminal's directory {} cannot be opened: {e}",
                    self.path().display()
                ))
            })
    }
}

/// `cwd` relative to `base` when it is `base` or inside it (`"."`, `"src/x"`), or
/// when it is relative already; `None` for an absolute path elsewhere.
fn inside(cwd: &str, base: &std::path::Path) -> Option<String> {
    let path = std::path::Path::new(cwd);
    if path.is_relative() {
        return Some(cwd.to_owned());
    }
    let rest = path.strip_prefix(base).ok()?;
    if rest
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return None;
    }
    let rest = rest.to_string_lossy();
    Some(if rest.is_empty() {
        ".".to_owned()
    } else {
        rest.into_owned()
    })
}

/// The host's terminal service: per-tenant backends and approval gates (built on first
/// use), each session's working directory, and the background processes.
///
/// Dropping it (or [`TerminalHost::shutdown`]) kills every background process and
/// removes every session container.
pub struct TerminalHost {
    settings: TerminalSettings,
    /// Each tenant's backend, its options read ("" = the operator's default).
    plans: HashMap<String, Arc<dyn backends::BackendPlan>>,
    host_cwd: PathBuf,
    /// Each tenant's subdirectory of the `workspace` mount, where it has one: where its
    /// local and bwrap commands live when `cwd` is not configured, what users expect.
    subdirs: HashMap<String, PathBuf>,
    /// The `workspace` mount for tenants without their own subdirectory.
    workspace: Option<PathBuf>,
    tenants: Mutex<HashMap<String, Arc<TenantTerminal>>>,
    cwds: Mutex<HashMap<SessionKey, String>>,
    /// Sessions that ran a command and have not ended, by tenant.
    live: Mutex<HashMap<String, std::collections::HashSet<String>>>,
    processes: ProcessRegistry,
    /// Files each session's commands wrote (fresh when a later command runs them).
    files: session_files::SessionFiles,
    /// Observers every tenant's gate reports to (the audit log).
    observers: Mutex<Vec<Arc<dyn ApprovalObserver>>>,
    /// The host's own files and programs, which every tenant's gate blocks.
    host_state: host_state::HostState,
}

impl std::fmt::Debug for TerminalHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalHost")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl TerminalHost {
    /// A terminal service for these settings. Each backend reads its options now, so
    /// a mistake in them stops the host at start; nothing is started or compiled until
    /// a command arrives, so a host whose tools never use the terminal pays nothing.
    ///
    /// Relative `cwd`s of backends on this host resolve against
    /// [`TerminalSettings::base_dir`], and each config's [`TerminalConfig::reach`] is
    /// filled in ([`TerminalHost::settings`] has the result).
    ///
    /// # Errors
    /// [`TerminalError::Options`] naming the key and what is wrong.
    pub fn new(mut settings: TerminalSettings) -> Result<Self, TerminalError> {
        let host_cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let base_dir = settings
            .base_dir
            .clone()
            .unwrap_or_else(|| host_cwd.clone());
        let mut plans = HashMap::new();
        let configs = std::iter::once((String::new(), &mut settings.default))
            .chain(settings.tenants.iter_mut().map(|(id, c)| (id.clone(), c)));
        for (tenant, config) in configs {
            let at = if tenant.is_empty() {
                "terminal".to_owned()
            } else {
                format!("terminal.tenants.{tenant}")
            };
            auto::resolve(config);
            let plan: Arc<dyn backends::BackendPlan> =
                Arc::from(backends::read(config, &base_dir, &at)?);
            config.reach = plan
                .reach()
                .into_iter()
                .map(|(what, dir)| (what.to_owned(), dir))
                .collect();
            if plan.home() != backends::Home::Elsewhere
                && let Some(cwd) = &mut config.cwd
            {
                if cwd.is_relative() {
                    *cwd = base_dir.join(&*cwd);
                }
                config
                    .reach
                    .push(("working directory".to_owned(), cwd.clone()));
            }
            plans.insert(tenant, plan);
        }
        // Commands get the host's HOME (`command_env`): `~` in them is that.
        let host_state = host_state::HostState::new(&settings, std::env::var("HOME").ok());
        Ok(Self {
            settings,
            plans,
            host_cwd,
            subdirs: HashMap::new(),
            workspace: None,
            tenants: Mutex::new(HashMap::new()),
            cwds: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            processes: ProcessRegistry::default(),
            files: session_files::SessionFiles::default(),
            observers: Mutex::new(Vec::new()),
            host_state,
        })
    }

    /// Starts commands in the policy's `workspace` mount (a tenant's own subdirectory
    /// of it, where the tenant has one) unless the terminal's `cwd` is configured.
    pub fn with_workspace_of(mut self, policy: &hermetic::OperatorPolicy) -> Self {
        let Some(mount) = policy.mounts.get("workspace") else {
            return self;
        };
        let root = mount.host_path.clone();
        for (tenant, narrowing) in &policy.tenants {
            let subdir = narrowing
                .mounts
                .as_ref()
                .and_then(|m| m.get("workspace"))
                .and_then(|m| m.subdir.as_ref());
            if let Some(subdir) = subdir {
                self.subdirs.insert(tenant.clone(), subdir.clone());
            }
        }
        self.workspace = Some(root);
        self
    }

    /// Adds an observer of every approval request and answer (e.g. the server's audit
    /// log), for every tenant's gate. Gates already built are rebuilt on their next
    /// use; their session approvals start afresh.
    pub fn add_observer(&self, observer: Arc<dyn ApprovalObserver>) {
        self.observers.lock().push(observer);
        self.tenants.lock().clear();
    }

    /// The settings in force.
    pub fn settings(&self) -> &TerminalSettings {
        &self.settings
    }

    /// The background processes.
    pub fn processes(&self) -> &ProcessRegistry {
        &self.processes
    }

    fn tenant(&self, tenant: &str) -> Result<Arc<TenantTerminal>, TerminalError> {
        let mut tenants = self.tenants.lock();
        if let Some(t) = tenants.get(tenant) {
            return Ok(Arc::clone(t));
        }
        let config = self.settings.for_tenant(tenant).clone();
        let plan = self
            .plans
            .get(tenant)
            .or_else(|| self.plans.get(""))
            .cloned()
            .ok_or_else(|| TerminalError::Options {
                at: "terminal".into(),
                reason: "no backend was read for this tenant".into(),
            })?;
        let cwd = config.cwd.as_ref().map(|p| p.display().to_string());
        let place = self.place(tenant, &config, &plan.home())?;
        let start = cwd
            .clone()
            .or_else(|| place.as_ref().map(|p| p.path().display().to_string()))
            .unwrap_or_else(|| self.host_cwd.display().to_string());
        let backend = plan.build(&backends::BuildContext {
            cwd,
            dir: place.as_ref().map(Place::path),
            start,
            protected: &self.settings.protected,
            tenant_subdir: &|backend| self.tenant_subdir(tenant, backend),
        })?;
        let mut approval = config.approval.clone();
        self.host_state.apply(
            &mut approval.detector,
            &config.backend,
            place.as_ref().map(Place::path).as_deref(),
        );
        let mut gate = ApprovalGate::new(&approval).map_err(|e| TerminalError::Approval {
            tenant: tenant.to_owned(),
            reason: e.to_string(),
        })?;
        for observer in self.observers.lock().iter() {
            gate = gate.with_observer(Arc::clone(observer));
        }
        let t = Arc::new(TenantTerminal {
            config,
            backend,
            gate,
            place,
        });
        tenants.insert(tenant.to_owned(), Arc::clone(&t));
        Ok(t)
    }

    /// Where `tenant`'s commands live on this host (backends at [`backends::Home`]
    /// `Host` or `HostBelow`: `local`, `bwrap`): under a directory of the backend's
    /// own (`[terminal.bwrap] workspace`), the tenant's subdirectory of it; else the
    /// configured `cwd`; else its part of the `workspace` mount; else where the host
    /// started.
    fn place(
        &self,
        tenant: &str,
        config: &TerminalConfig,
        home: &backends::Home,
    ) -> Result<Option<Place>, TerminalError> {
        match home {
            backends::Home::Elsewhere => return Ok(None),
            backends::Home::HostBelow(root) => {
                let sub = self.tenant_subdir(tenant, backends::name_of(&config.backend))?;
                return Ok(Some(Place::new(root, sub.unwrap_or_default())));
            }
            backends::Home::Host => {}
        }
        let subdir = self.subdirs.get(tenant).cloned();
        Ok(Some(match (&config.cwd, &self.workspace) {
            (Some(cwd), _) => Place::new(cwd, PathBuf::new()),
            (None, Some(root)) => Place::new(root, subdir.unwrap_or_default()),
            (None, None) => Place::new(&self.host_cwd, PathBuf::new()),
        }))
    }

    /// The tenant's own directory below a backend's workspace (`[terminal.bwrap]` or
    /// `[terminal.docker] workspace`): its `workspace` mount subdirectory, else its id;
    /// `None` for the operator, whose directory is the whole workspace.
    ///
    /// # Errors
    /// A tenant id that cannot be one directory's name.
    fn tenant_subdir(
        &self,
        tenant: &str,
        backend: &'static str,
    ) -> Result<Option<PathBuf>, TerminalError> {
        if tenant == hermetic_policy::OPERATOR_TENANT {
            return Ok(None);
        }
        if let Some(sub) = self.subdirs.get(tenant) {
            return Ok(Some(sub.clone()));
        }
        let plain = matches!(
            std::path::Path::new(tenant)
                .components()
                .collect::<Vec<_>>()
                .as_slice(),
            [std::path::Component::Normal(_)]
        );
        if plain {
            Ok(Some(PathBuf::from(tenant)))
        } else {
            Err(TerminalError::Backend(BackendError::Config {
                backend,
                reason: format!(
                    "tenant id {tenant:?} cannot name a directory; give the tenant a workspace mount subdir"
                ),
            }))
        }
    }

    /// Counts `session` among the tenant's live sessions.
    ///
    /// # Errors
    /// [`TooManySessions`] when it is new and the tenant already has
    /// [`MAX_SESSIONS_PER_TENANT`].
    fn claim_session(&self, tenant: &str, session: &str) -> Result<(), TooManySessions> {
        let mut live = self.live.lock();
        let sessions = live.entry(tenant.to_owned()).or_default();
        if sessions.contains(session) {
            return Ok(());
        }
        if sessions.len() >= MAX_SESSIONS_PER_TENANT {
            return Err(TooManySessions);
        }
        sessions.insert(session.to_owned());
        Ok(())
    }

    /// Live terminal sessions of `tenant` (ran a command, not ended yet).
    pub fn live_sessions(&self, tenant: &str) -> usize {
        self.live
            .lock()
            .get(tenant)
            .map_or(0, std::collections::HashSet::len)
    }

    /// The session ended: kill its background processes, forget its working directory,
    /// and release what its backend holds (its container).
    pub fn end_session(&self, tenant: &str, session: &str) {
        if let Some(sessions) = self.live.lock().get_mut(tenant) {
            sessions.remove(session);
        }
        let key = SessionKey::new(tenant, session);
        self.processes.end_session(&key);
        self.files.forget(&key);
        self.cwds.lock().remove(&key);
        let t = self.tenants.lock().get(tenant).cloned();
        if let Some(t) = t {
            t.backend.end_session(&key);
        }
    }

    /// Host shutdown: kill every background process and release every backend.
    pub fn shutdown(&self) {
        self.live.lock().clear();
        self.processes.kill_all();
        self.files.clear();
        let tenants: Vec<Arc<TenantTerminal>> =
            self.tenants.lock().drain().map(|(_, t)| t).collect();
        for t in tenants {
            t.backend.shutdown();
        }
    }
}

/// `options` with a [`TerminalHost`] for the terminal settings of its policy: what the
/// `hermetic` binary does, so tools granted the terminal reach real backends.
///
/// The backends read their options here, and what their commands reach on this host
/// is written into the policy's terminal settings, so the registry built from
/// `options` keeps the host's own files out of it (`Registry::check_state_path`).
///
/// # Errors
/// [`TerminalError::Options`] for a mistake in the backends' options.
pub fn attach(
    mut options: hermetic::RegistryOptions,
) -> Result<hermetic::RegistryOptions, TerminalError> {
    let host = TerminalHost::new(options.policy.terminal.clone())?;
    options.policy.terminal = host.settings().clone();
    let host = Arc::new(host.with_workspace_of(&options.policy));
    Ok(options.with_terminal(host))
}

impl TerminalService for TerminalHost {
    fn run(
        &self,
        call: &TerminalCallContext,
        request: &CommandRequest,
        on_output: &mut dyn FnMut(&str),
    ) -> Result<CommandFinished, TerminalCallError> {
        TerminalCall::new(self, call).run(request, on_output)
    }

    fn start(
        &self,
        call: &TerminalCallContext,
        request: &CommandRequest,
    ) -> Result<ProcessStarted, TerminalCallError> {
        TerminalCall::new(self, call).start(request)
    }

    fn process(
        &self,
        call: &TerminalCallContext,
        request: &ProcessRequest,
    ) -> Result<ProcessReply, TerminalCallError> {
        TerminalCall::new(self, call).process(request)
    }

    fn end_session(&self, tenant: &str, session: &str) {
        TerminalHost::end_session(self, tenant, session);
    }

    fn shutdown(&self) {
        TerminalHost::shutdown(self);
    }

    fn add_observer(&self, observer: Arc<dyn ApprovalObserver>) {
        TerminalHost::add_observer(self, observer);
    }
}

impl Drop for TerminalHost {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// One call's access to the terminal: who is calling, who can approve, what env the
/// tool was granted. Built by dispatch only when the tool's grants include the terminal.
pub struct TerminalCall<'a> {
    /// The host's terminal service.
    pub host: &'a TerminalHost,
    /// Tenant id ("" = the operator).
    pub tenant: String,
    /// Agent session.
    pub session: String,
    /// Who answers approval requests (`None`: nobody; the headless default applies).
    pub approver: Option<Arc<dyn Approver>>,
    /// The call's cancel token: cancelling kills the running command.
    pub cancel: Option<CancelToken>,
    /// Granted env vars with their values (passed to commands, redacted from output).
    pub env: Vec<(String, String)>,
    /// When the calling tool's own deadline passes.
    pub deadline: Option<Instant>,
}

impl std::fmt::Debug for TerminalCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalCall")
            .field("tenant", &self.tenant)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// A call's approver, bounded by the call: nobody is asked past a margin before the
/// calling tool's deadline ([`hermetic_approval::wait_within_call`]). The gate's own
/// timeout for asynchronous approvers is longer than most tools' deadlines; without
/// the bound the call would sit in the host past its deadline (epoch interruption
/// cannot reach host code), waiting for an answer nobody could use, while its client
/// waits for a reply — and a wait that ended right at the deadline would leave the
/// agent reading the call's time limit instead of "Nobody answered".
struct CallBound<'a> {
    inner: &'a dyn Approver,
    deadline: Option<Instant>,
}

impl Approver for CallBound<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn kind(&self) -> ApproverKind {
        self.inner.kind()
    }

    fn request(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
    ) -> Result<Answer, ApproverError> {
        let now = Instant::now();
        let deadline = self.deadline.map_or(deadline, |call| {
            hermetic_approval::wait_within_call(call, now).min(deadline)
        });
        if now >= deadline {
            return Ok(Answer::Timeout);
        }
        self.inner.request(request, deadline)
    }

    fn settled(&self, request: &ApprovalRequest, verdict: &Verdict) {
        self.inner.settled(request, verdict);
    }

    fn holds_answer(&self, request: &ApprovalRequest) -> bool {
        self.inner.holds_answer(request)
    }

    fn answered_by(&self, request: &ApprovalRequest) -> String {
        self.inner.answered_by(request)
    }
}

/// The gate's refusal: `blocked` for a refusal (hardline, deny rule, a human's no),
/// `pending_approval` when nobody has approved yet (no approver, timeout, approver
/// failure, a dismissed question, a question still out). Either way `input` did not
/// run.
fn refusal(verdict: &Verdict, input: &str) -> TerminalCallError {
    let refusal = GateRefusal {
        message: verdict.message.clone(),
        input: input.to_owned(),
        rules: verdict
            .rules
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect(),
        descriptions: verdict.descriptions.iter().map(|&d| d.to_owned()).collect(),
    };
    match verdict.outcome {
        Outcome::NoApprover
        | Outcome::Timeout
        | Outcome::ApproverError
        | Outcome::Dismissed
        | Outcome::InputRequired => TerminalCallError::PendingApproval(refusal),
        _ => TerminalCallError::Blocked(refusal),
    }
}

impl<'a> TerminalCall<'a> {
    /// The call `context` describes, on `host`.
    pub fn new(host: &'a TerminalHost, context: &TerminalCallContext) -> Self {
        Self {
            host,
            tenant: context.tenant.clone(),
            session: context.session.clone(),
            approver: context.approver.clone(),
            cancel: context.cancel.clone(),
            env: context.env.clone(),
            deadline: context.deadline,
        }
    }

    fn key(&self) -> SessionKey {
        SessionKey::new(self.tenant.as_str(), self.session.as_str())
    }

    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancelToken::is_cancelled)
    }

    fn secrets(&self) -> Vec<String> {
        self.env.iter().map(|(_, v)| v.clone()).collect()
    }

    /// Output for the agent: ANSI stripped, secrets redacted.
    fn clean(&self, text: &str) -> String {
        output::redact(&output::strip_ansi(text), &self.secrets())
    }

    /// Checks the request, then asks the gate about the command (in the session: the
    /// files its earlier commands wrote are fresh; the script files it runs read and
    /// judged with it, `script_pin.rs`). `Ok` has the command to run: the script files
    /// it runs pinned to the text judged. `Err` is why it must not run.
    fn admit(
        &self,
        request: &CommandRequest,
    ) -> Result<(Arc<TenantTerminal>, input_gate::InputGate, String), TerminalCallError> {
        if request.command.trim().is_empty() {
            return Err(TerminalCallError::InvalidRequest("command is empty".into()));
        }
        if let Some(dir) = &request.workdir
            && !backend::valid_workdir(dir)
        {
            return Err(TerminalCallError::InvalidRequest(format!(
                "workdir {dir:?} is not a plain path: shell metacharacters and control characters are not allowed"
            )));
        }
        let t = self.tenant_terminal()?;
        if !t.backend.runs_bash() && backend::bash_only_quoting(&request.command) {
            return Err(TerminalCallError::InvalidRequest(format!(
                "the {} backend runs commands under sh, which reads $'…' and $\"…\" quoting differently from bash: rewrite the command without them",
                t.backend.name()
            )));
        }
        let key = self.key();
        let cwd = self.start_cwd(&t, request);
        let fresh = self.host.files.of(&key);
        let mut judged = t.gate.detector().judge(
            &request.command,
            &Frame {
                fresh: &fresh,
                cwd: &cwd,
            },
        );
        let runner = script_pin::Runner::command(t.backend.runs_bash());
        let scripts = self.pin_scripts(&t, &request.command, &mut judged, runner, &cwd);
        let dangerous = !judged.detection.is_safe();
        self.decide(&t, &scripts.shown, judged.detection)
            .map_err(|e| scripts.explain(e))?;
        self.host.files.remember(&key, &judged.wrote);
        let pty = request.pty && t.backend.pty_mode() != backend::PtyMode::None;
        let mut readers = judged.readers;
        if dangerous {
            // Approved though dangerous (`awk '{system($0)}'`, `sed e`): what it does
            // with its input is beyond the detector's reading, so each line it is sent
            // is judged as a shell command, as an unknown program's is.
            readers.push(Reader::Unknown);
        }
        let input = input_gate::InputGate::new(readers, pty, judged.cwd);
        Ok((t, input, scripts.run))
    }

    /// A foreground command's `stdin`, fed whole and then closed: judged as it is, as
    /// what reads it reads it (a shell's as shell, `python3`'s as Python; a filter's,
    /// such as `cat`'s, is data). `Ok` has what to feed: the script files a shell
    /// reading it runs pinned to the text judged.
    fn admit_stdin(
        &self,
        t: &TenantTerminal,
        input: &input_gate::InputGate,
        stdin: &str,
    ) -> Result<String, TerminalCallError> {
        if input.is_data() {
            return Ok(stdin.to_owned());
        }
        let key = self.key();
        let fresh = self.host.files.of(&key);
        let mut judged = t.gate.detector().judge_input(
            stdin,
            input.readers(),
            input.pty(),
            &Frame {
                fresh: &fresh,
                cwd: input.cwd(),
            },
        );
        let runner = script_pin::Runner::of(input.readers(), input.pty());
        let scripts = self.pin_scripts(t, stdin, &mut judged, runner, input.cwd());
        self.decide(t, &scripts.shown, judged.detection)
            .map_err(|e| scripts.explain(e))?;
        self.host.files.remember(&key, &judged.wrote);
        Ok(scripts.run)
    }

    fn tenant_terminal(&self) -> Result<Arc<TenantTerminal>, TerminalCallError> {
        self.host
            .tenant(&self.tenant)
            .map_err(|e| TerminalCallError::Failed(format!("terminal unavailable: {e}")))
    }

    /// Runs the tenant's approval flow on `detection`, the judgement of `text`. `Err`
    /// is the refusal to return.
    fn decide(
        &self,
        t: &TenantTerminal,
        text: &str,
        detection: Detection,
    ) -> Result<(), TerminalCallError> {
        let bounded = self.approver.as_deref().map(|inner| CallBound {
            inner,
            deadline: self.deadline,
        });
        let verdict = t.gate.decide_with_approver(
            &ApprovalContext::new(self.tenant.as_str(), self.session.as_str()),
            text,
            detection,
            bounded.as_ref().map(|b| b as &dyn Approver),
        );
        if verdict.approved {
            return Ok(());
        }
        tracing::info!(
            tenant = %self.tenant,
            session = %self.session,
            outcome = ?verdict.outcome,
            rules = ?verdict.rules,
            "terminal input refused by the approval gate"
        );
        Err(refusal(&verdict, text))
    }

    /// The command's environment: a fixed PATH, HOME, LANG and TERM, the operator's
    /// pass-through variables, and the tool's granted env. Nothing else of the host's.
    fn command_env(&self, config: &TerminalConfig) -> Vec<(String, String)> {
        let mut env = vec![
            ("PATH".to_owned(), COMMAND_PATH.to_owned()),
            (
                "HOME".to_owned(),
                std::env::var("HOME").unwrap_or_else(|_| "/".to_owned()),
            ),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
            ("TERM".to_owned(), "dumb".to_owned()),
        ];
        for var in &config.env {
            if let Ok(v) = std::env::var(var) {
                env.push((var.clone(), v));
            }
        }
        env.extend(self.env.iter().cloned());
        env
    }

    /// Where `request` starts: its `workdir`, else where the session's previous
    /// command ended, else the backend's default.
    fn start_cwd(&self, t: &TenantTerminal, request: &CommandRequest) -> String {
        request.workdir.clone().unwrap_or_else(|| {
            self.host
                .cwds
                .lock()
                .get(&self.key())
                .cloned()
                .unwrap_or_else(|| t.backend.default_cwd())
        })
    }

    /// The backend's job for `request`. On this host the tenant's directory is opened
    /// now, and a working directory inside it is entered relative to the opened
    /// directory, not through its path.
    fn job(
        &self,
        t: &TenantTerminal,
        request: &CommandRequest,
        command: &str,
        marker: &str,
        foreground: bool,
    ) -> Result<Job, TerminalCallError> {
        let cwd = self.start_cwd(t, request);
        let (dir, cd) = match &t.place {
            Some(place) => {
                let cd = inside(&cwd, &place.path()).unwrap_or_else(|| cwd.clone());
                (Some(place.open()?), cd)
            }
            None => (None, cwd.clone()),
        };
        Ok(Job {
            script: backend::wrap_script(command, &cd, marker, t.backend.is_remote(), foreground),
            env: self.command_env(&t.config),
            cwd,
            pty: request.pty && t.backend.pty_mode() == backend::PtyMode::Backend,
            dir,
        })
    }

    /// The backend's process, on a host pseudo-terminal when asked and the backend
    /// runs locally.
    fn spawn(
        &self,
        t: &TenantTerminal,
        key: &SessionKey,
        job: &Job,
        pty: bool,
    ) -> Result<exec::Spawned, BackendError> {
        let cmd = t.backend.command(key, job)?;
        if pty && t.backend.pty_mode() == backend::PtyMode::Host {
            exec::spawn_pty(cmd, t.backend.name())
        } else {
            exec::spawn(cmd, t.backend.name())
        }
    }

    /// Runs a command in the foreground. `on_output` receives its output (cleaned) as
    /// it arrives.
    ///
    /// # Errors
    /// A refusal of the gate, a request that cannot run as given, the tenant's session
    /// cap, or a backend that could not run it.
    pub fn run(
        &self,
        request: &CommandRequest,
        on_output: &mut dyn FnMut(&str),
    ) -> Result<CommandFinished, TerminalCallError> {
        self.host.claim_session(&self.tenant, &self.session)?;
        let (t, input, command) = self.admit(request)?;
        let stdin = match &request.stdin {
            Some(stdin) => Some(self.admit_stdin(&t, &input, stdin)?),
            None => None,
        };
        let requested = request
            .timeout_secs
            .map_or(t.config.timeout_secs.min(MAX_TIMEOUT_SECS), u64::from);
        if requested > MAX_TIMEOUT_SECS {
            return Err(TerminalCallError::InvalidRequest(format!(
                "timeout {requested}s is over the {MAX_TIMEOUT_SECS}s maximum for foreground commands; run long jobs with background=true and check on them with the process tool"
            )));
        }
        let mut timeout = Duration::from_secs(requested.max(1));
        if let Some(deadline) = self.deadline {
            // The tool's own deadline bounds the command: better a clean timeout result
            // than the whole call failing with a time limit.
            let left = deadline
                .saturating_duration_since(Instant::now())
                .saturating_sub(DEADLINE_MARGIN);
            timeout = timeout.min(left.max(Duration::from_secs(1)));
        }
        let marker = backend::new_marker();
        let job = self.job(&t, request, &command, &marker, true)?;
        let key = self.key();
        let spawned = self
            .spawn(&t, &key, &job, request.pty)
            .map_err(|e| TerminalCallError::Failed(format!("could not run the command: {e}")))?;
        let secrets = self.secrets();
        let mut stream = |text: &str| {
            on_output(&output::redact(&output::strip_ansi(text), &secrets));
        };
        let finished = exec::run_to_end(
            &exec::Foreground {
                backend: t.backend.as_ref(),
                session: &key,
                timeout,
                cancelled: &|| self.cancelled(),
            },
            spawned,
            marker,
            stdin,
            &mut stream,
        );
        if let Some(cwd) = finished.cwd {
            self.host.cwds.lock().insert(key, cwd);
        }
        let (kept, total) = finished.output.into_parts();
        let mut text = output::cap(&self.clean(&kept), total);
        let exit_code = match finished.ending {
            exec::Ending::Exited(code) => code,
            exec::Ending::TimedOut => {
                text.push_str(&format!(
                    "\n[Command timed out after {}s]",
                    timeout.as_secs()
                ));
                124
            }
            exec::Ending::Cancelled => {
                text.push_str("\n[Command interrupted: the call was cancelled]");
                130
            }
        };
        let mut text = text.trim_end();
        if request.pty {
            // A pseudo-terminal's line discipline adds blank lines of its own at the start.
            text = text.trim_start_matches('\n');
        }
        let mut finished = CommandFinished::new(text, exit_code);
        finished.exit_code_meaning =
            output::exit_code_meaning(&request.command, exit_code).map(str::to_owned);
        if request.pty && t.backend.pty_mode() == backend::PtyMode::None {
            finished.pty_note = Some(format!(
                "the {} backend has no PTY mode; the command ran without a pseudo-terminal",
                t.backend.name()
            ));
        }
        Ok(finished)
    }

    /// Starts a background process (after the same gate).
    ///
    /// # Errors
    /// As [`TerminalCall::run`], and the session's cap of background processes.
    pub fn start(&self, request: &CommandRequest) -> Result<ProcessStarted, TerminalCallError> {
        self.host.claim_session(&self.tenant, &self.session)?;
        let (t, mut input, command) = self.admit(request)?;
        // Its stdin from the start is its first write: judged (complete lines) before
        // anything starts, the rest held.
        let stdin = match &request.stdin {
            Some(text) => self.admit_start_input(&t, &mut input, text)?,
            None => None,
        };
        let key = self.key();
        self.host.processes.reserve(&key)?;
        let marker = backend::new_marker();
        let job = self.job(&t, request, &command, &marker, false)?;
        let spawned = self
            .spawn(&t, &key, &job, request.pty)
            .map_err(|e| TerminalCallError::Failed(format!("could not start the command: {e}")))?;
        // Registered before its stdin is written (by the registry, off this thread): a
        // process that never reads must not hold the call, and must stay killable.
        let (id, pid) = self.host.processes.add(
            &key,
            &request.command,
            Arc::clone(&t.backend),
            spawned,
            marker,
            process::StartingInput {
                gate: input,
                first: stdin,
            },
        );
        Ok(ProcessStarted { id, pid })
    }

    /// How long a stdin write may wait for the process to read: bounded by the call's
    /// own deadline, so a process that never reads cannot make the call time out.
    fn stdin_wait(&self) -> Duration {
        let wait = process::STDIN_WAIT;
        match self.deadline {
            Some(deadline) => wait.min(
                deadline
                    .saturating_duration_since(Instant::now())
                    .saturating_sub(DEADLINE_MARGIN),
            ),
            None => wait,
        }
    }

    /// A `process` action on this session's background processes. What is written to
    /// a process that reads code (a shell, an interpreter, a database client) passes
    /// the approval gate first, a complete line or statement at a time, in that
    /// process's language (`stdin_gate.rs`): a background `bash` or `python3` would
    /// otherwise run whatever it is sent, unasked.
    ///
    /// # Errors
    /// A refusal of the gate (for written data), an unknown process id, or a write
    /// that cannot be made.
    pub fn process(&self, request: &ProcessRequest) -> Result<ProcessReply, TerminalCallError> {
        let action = match request {
            ProcessRequest::List => Action::List,
            ProcessRequest::Poll(id) => Action::Poll(id),
            ProcessRequest::Log { id, offset, limit } => Action::Log {
                id,
                offset: *offset,
                limit: *limit,
            },
            ProcessRequest::Wait { id, timeout_secs } => {
                let secs = timeout_secs
                    .map_or(config::DEFAULT_TIMEOUT_SECS, u64::from)
                    .min(MAX_TIMEOUT_SECS);
                let mut timeout = Duration::from_secs(secs);
                if let Some(deadline) = self.deadline {
                    let left = deadline
                        .saturating_duration_since(Instant::now())
                        .saturating_sub(DEADLINE_MARGIN);
                    timeout = timeout.min(left);
                }
                Action::Wait { id, timeout }
            }
            ProcessRequest::Kill(id) => Action::Kill(id),
            ProcessRequest::Write { id, data } => return self.write_input(id, data, false),
            ProcessRequest::Submit { id, data } => return self.write_input(id, data, true),
            ProcessRequest::Close(id) => return self.close_input(id),
        };
        self.host
            .processes
            .action(&self.key(), action, &|text| self.clean(text), &|| {
                self.cancelled()
            })
    }
}

#[cfg(test)]
mod tests;
