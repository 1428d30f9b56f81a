//! Argument parsing and output formatting for the `hermetic` binary.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use hermetic::{
    CallOptions, LoadProblem, OperatorPolicy, Registry, RegistryOptions, Selection, ToolSource,
};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

/// hermetic — a WebAssembly-sandboxed tool host for AI agents.
///
/// Every tool is a WebAssembly component; every call runs in a fresh sandbox that gets
/// only what the tool declared and the operator granted. The bundled tools (read_file,
/// write_file, patch, search_files, web_extract, weather, terminal, process, todo,
/// memory) are loaded unless --no-bundled; add your own with --tools-dir.
#[derive(Parser, Debug)]
#[command(name = "hermetic", version, propagate_version = true)]
struct Cli {
    /// Log level for diagnostics on stderr: error, warn, info, debug, trace or off,
    /// optionally per module (`warn,hermetic=info`).
    #[arg(long, value_name = "LEVEL", default_value = "warn", global = true, value_parser = parse_log_level)]
    log_level: String,
    /// The tool-host options may also come before the command (`hermetic --workspace
    /// DIR serve`); they apply to tools, toolsets, definitions, call, inspect, serve, pull and verify.
    #[command(flatten)]
    host: HostArgs,
    #[command(subcommand)]
    command: Command,
}

/// What the tool host loads and grants: the options of the commands that build one.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Tool host")]
struct HostArgs {
    /// Also load every *.wasm in DIR (repeatable). Broken components are reported and
    /// skipped.
    #[arg(long = "tools-dir", value_name = "DIR")]
    tools_dirs: Vec<PathBuf>,

    /// Do not load the tools embedded in this binary.
    #[arg(long)]
    no_bundled: bool,

    /// Operator policy file (TOML; see policy.example.toml). Without one, the
    /// embedded defaults apply: workspace = the current directory (read-write), no
    /// network, no env, the terminal (local backend, approval mode manual) only for
    /// the bundled terminal and process tools, and a key-value store for tools that
    /// declare one (todo, memory), kept in $HERMETIC_DATA_DIR/keyvalue.redb (default
    /// ~/.local/share/hermetic; in memory when that is inside the workspace).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,

    /// Act as this tenant of the policy: its toolsets, its narrower grants and limits
    /// (default: the policy's default tenant).
    #[arg(long, value_name = "ID")]
    tenant: Option<String>,

    /// Host directory behind the `workspace` mount (default: the policy's, else the
    /// current directory). Terminal commands start there unless the policy sets the
    /// terminal's `cwd`.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,

    /// Grant env var VAR (from this process's environment) to tools that declare it
    /// (repeatable).
    #[arg(long = "allow-env", value_name = "VAR")]
    allow_env: Vec<String>,

    /// Grant network destination DEST (e.g. `https://api.example.com`, `https://*.example.com`,
    /// `http://127.0.0.1:8080`) to tools that declare it (repeatable). Loopback, private
    /// and link-local addresses stay refused unless DEST names the address itself.
    #[arg(long = "allow-net", value_name = "DEST", value_parser = parse_destination)]
    allow_net: Vec<hermetic::policy::network::Destination>,

    /// Let tool NAME replace a registration from another toolset (repeatable).
    #[arg(long = "allow-override", value_name = "NAME")]
    allow_override: Vec<String>,

    /// Do not read or write the compiled-code cache (the bundled tools then load the
    /// code the build compiled, copied out of the binary at every start).
    #[arg(long)]
    no_cache: bool,

    /// The tool store: where `hermetic pull` keeps components by digest and where
    /// tools the policy names by `source` are loaded from (default: the policy's
    /// `[trust] store`, else $HERMETIC_STORE_DIR, else ~/.local/share/hermetic/store).
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,

    /// Refuse to start when a tool the policy names by `source` cannot be loaded (not
    /// pulled, unsigned, tampered with, named otherwise), as `[trust] strict = true`
    /// does; without it such a tool is listed unavailable with the reason and the rest
    /// are served.
    #[arg(long)]
    strict: bool,
}

impl HostArgs {
    /// These options with those given before the command (`outer`) filled in; lists
    /// add up, a value given after the command wins.
    fn with_outer(mut self, outer: &HostArgs) -> HostArgs {
        fn prepend<T: Clone>(inner: &mut Vec<T>, outer: &[T]) {
            let mut all = outer.to_vec();
            all.append(inner);
            *inner = all;
        }
        prepend(&mut self.tools_dirs, &outer.tools_dirs);
        prepend(&mut self.allow_env, &outer.allow_env);
        prepend(&mut self.allow_net, &outer.allow_net);
        prepend(&mut self.allow_override, &outer.allow_override);
        self.no_bundled |= outer.no_bundled;
        self.no_cache |= outer.no_cache;
        self.strict |= outer.strict;
        self.policy = self.policy.or_else(|| outer.policy.clone());
        self.tenant = self.tenant.or_else(|| outer.tenant.clone());
        self.workspace = self.workspace.or_else(|| outer.workspace.clone());
        self.store = self.store.or_else(|| outer.store.clone());
        self
    }

    /// Whether any option was given (they mean nothing to approval, token and audit).
    fn is_given(&self) -> bool {
        !self.tools_dirs.is_empty()
            || self.no_bundled
            || self.policy.is_some()
            || self.tenant.is_some()
            || self.workspace.is_some()
            || !self.allow_env.is_empty()
            || !self.allow_net.is_empty()
            || !self.allow_override.is_empty()
            || self.no_cache
            || self.store.is_some()
            || self.strict
    }

    fn tenant(&self) -> &str {
        self.tenant.as_deref().unwrap_or_default()
    }
}

/// Accepts what `tracing`'s filter accepts, but only with level names: `bogus` would
/// otherwise be read as "everything from the module `bogus`" and silently log nothing.
fn parse_log_level(value: &str) -> Result<String, String> {
    const LEVELS: [&str; 6] = ["error", "warn", "info", "debug", "trace", "off"];
    for directive in value.split(',') {
        let level = directive
            .rsplit_once('=')
            .map_or(directive, |(_, level)| level);
        if !LEVELS.contains(&level.trim().to_ascii_lowercase().as_str()) {
            return Err(format!(
                "unknown level {level:?} in {directive:?}: use one of {} (optionally `module=level`)",
                LEVELS.join(", ")
            ));
        }
    }
    Ok(value.to_owned())
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List every tool with its toolset, availability and, if unavailable, why.
    Tools {
        #[command(flatten)]
        host: HostArgs,
        /// Print JSON: [{"name","toolset","available","reason",...}].
        #[arg(long)]
        json: bool,
    },
    /// List toolsets with the tools each resolves to.
    Toolsets {
        #[command(flatten)]
        host: HostArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the OpenAI function definitions of the available tools.
    Definitions {
        #[command(flatten)]
        host: HostArgs,
        /// Only these toolsets (comma-separated; `all` or `*` for everything; Hermes
        /// legacy names like `file_tools` work).
        #[arg(long, value_delimiter = ',', value_name = "A,B")]
        toolsets: Option<Vec<String>>,
        /// Subtract these toolsets afterwards (comma-separated).
        #[arg(long, value_delimiter = ',', value_name = "C,D")]
        disable: Vec<String>,
    },
    /// Call one tool and print its JSON result on stdout.
    ///
    /// Exit code 1 when the result is {"error": ...}.
    Call {
        #[command(flatten)]
        host: HostArgs,
        /// Print only the result: no progress (the terminal's output as it comes, other
        /// tools' progress lines) on stderr.
        #[arg(long, short)]
        quiet: bool,
        /// Tool name.
        name: String,
        /// Arguments as a JSON object (default `{}`; `-` reads them from stdin).
        #[arg(default_value = "{}")]
        args: String,
    },
    /// Show a tool's declaration, schema and what it would be granted.
    ///
    /// For a new version of a registered tool (a file or a registry reference), also
    /// what it asks for beyond the granted one (`new_against_granted`), and for a tool
    /// whose policy entry names a `reviewed` digest, how this version differs from that
    /// one, field by field (`review`: name, toolset, limits, capabilities, schema; a
    /// changed text as a line diff).
    Inspect {
        #[command(flatten)]
        host: HostArgs,
        /// A registered tool name, a path to a .wasm component, or a registry reference
        /// (fetched into the tool store, signature checked, never run).
        target: String,
        #[command(flatten)]
        registry: crate::community::RegistryArgs,
    },
    /// Make a new tool project (Rust, Python or JavaScript) that builds with one
    /// command into NAME.wasm.
    ///
    /// The project holds everything it needs (SDK, a build script): `cd NAME &&
    /// ./build.sh`, then `hermetic inspect NAME/NAME.wasm`. Python projects install
    /// componentize-py into a venv in the project, JavaScript ones componentize-js with
    /// npm (both pinned), and their builds run `hermetic tool` ($HERMETIC, else on
    /// PATH); Rust ones need cargo and the wasm32-wasip2 target.
    New {
        /// The tool's language.
        #[arg(long, value_enum, default_value = "rust")]
        lang: crate::new::Lang,
        /// The tool's name (letters, digits, `_`, `-`; starting with a letter).
        name: String,
        /// Where to write it (default: ./NAME; must not exist or be empty).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Build steps for tools in Python, JavaScript and other languages: the WIT world a
    /// declaration needs (`tool world`), the declaration embedded and checked (`tool
    /// finish`).
    #[command(subcommand)]
    Tool(crate::tool_build::ToolCommand),
    /// Check shell commands against the dangerous-command approval gate.
    #[command(subcommand)]
    Approval(crate::approval::ApprovalCommand),
    /// Make and hash bearer tokens for `hermetic serve --http` (see `token_sha256`).
    #[command(subcommand)]
    Token(TokenCommand),
    /// Check audit logs.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// List, show and delete tools' key-value data (the embedded file, or the
    /// cluster's Redis): what `todo`, `memory` and other tools keep per tenant and
    /// session.
    #[command(subcommand)]
    State(crate::state::StateCommand),
    /// Push a wasm component to an OCI registry.
    ///
    /// REF is HOST[:PORT]/REPOSITORY:TAG. Prints the pinned reference (…@sha256:…) to
    /// put in a policy's `source`.
    // --version is the tool's version here, not hermetic's.
    #[command(disable_version_flag = true)]
    Push {
        /// The component (.wasm).
        file: PathBuf,
        /// Where to push it.
        reference: String,
        /// The version to record in the manifest (`org.opencontainers.image.version`,
        /// beside `.created` = now). `hermetic sign` signs both with the digest and
        /// repository, and a host refuses a tag moved back to an older version: give
        /// one (a component carries none to default to; without it versions are
        /// ordered by creation time).
        #[arg(long, value_name = "VERSION")]
        version: Option<String>,
        #[command(flatten)]
        registry: crate::community::RegistryArgs,
    },
    /// Pull tools from a registry into the tool store.
    ///
    /// REF is a tag or an @sha256: digest; with --policy and no REF, every tool the
    /// policy names by `source` (tags resolved and written to hermetic.lock beside the
    /// policy). A signature by a trusted key is checked before anything is stored when
    /// the policy requires one (or --key is given). A tag that now names an older
    /// signed version than the locked or reviewed one — or one whose age cannot be
    /// told — is refused and its lock entry left as it was (the other tools are
    /// updated; the exit code is 1), unless `[tools.NAME] reviewed` names that version
    /// and --allow-older is given.
    Pull {
        #[command(flatten)]
        host: HostArgs,
        /// What to pull (default: every `source` of --policy).
        reference: Option<String>,
        #[command(flatten)]
        trust: crate::community::TrustArgs,
        #[command(flatten)]
        registry: crate::community::RegistryArgs,
        /// Let a tag go back to an older version than the locked one when `[tools.NAME]
        /// reviewed` names that version (going back on purpose).
        #[arg(long)]
        allow_older: bool,
    },
    /// Make an Ed25519 signing key.
    ///
    /// Writes FILE (private, 0600) and FILE.pub (the public key to list under [trust]
    /// keys).
    Keygen {
        /// The private key file to create.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Sign a component file or a pushed tool.
    ///
    /// For FILE the signature goes to FILE.sig; for REF it is pushed beside the tool,
    /// as the tag sha256-<manifest digest>.sig. What is signed is a statement: the
    /// component's digest, the repository, and the version and creation time `hermetic
    /// push` recorded in the manifest. REF names the manifest by digest (what `hermetic
    /// push` printed), never by tag: a tag names whatever its holder serves now. A
    /// creation time more than 5 minutes ahead of this clock is refused.
    Sign {
        /// A .wasm file or a reference by digest (oci://HOST/REPOSITORY@sha256:…).
        target: String,
        /// The private key (from `hermetic keygen`).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        #[command(flatten)]
        registry: crate::community::RegistryArgs,
    },
    /// Check that a component file or a pushed tool is signed by a trusted key.
    ///
    /// Trusted: the --key keys, else --policy's [trust] keys. Exit code 1 when it is
    /// not. A REF is pulled into the store.
    Verify {
        #[command(flatten)]
        host: HostArgs,
        /// A .wasm file or a reference.
        target: String,
        #[command(flatten)]
        trust: crate::community::TrustArgs,
        #[command(flatten)]
        registry: crate::community::RegistryArgs,
    },
    /// Serve the tools to agents over MCP: streamable HTTP on 127.0.0.1:8788 unless
    /// told otherwise (the URL is printed on stderr).
    ///
    /// Every --tools-dir is watched: adding, removing or replacing a .wasm updates
    /// the tool list and connected clients are told (tools/list_changed).
    Serve(ServeArgs),
}

// The `serve` subcommand's options (its help is the variant's doc comment).
#[derive(clap::Args, Debug)]
struct ServeArgs {
    #[command(flatten)]
    host: HostArgs,
    /// Serve one client on stdin/stdout (for clients that spawn the host).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Listen for MCP streamable HTTP on ADDR (port 0 picks a free port). Every
    /// request needs a bearer token: the policy's tenant tokens, else one made at
    /// start (or $HERMETIC_TOKEN, at least 32 characters) and printed on stderr; the
    /// console takes another, its admin token (or $HERMETIC_CONSOLE_TOKEN), printed
    /// only in the console's URL. Without tenant tokens in the policy, loopback
    /// addresses only. Accepted Host values: localhost, 127.0.0.1 and [::1] with
    /// the bound port, the bound address, and --allow-host / [server] allowed_hosts.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// Serve HTTP without a token: any process on this machine (a web page's script
    /// included, if it gets past the Host/Origin checks) can call the tools. Loopback
    /// addresses only; not with tenant tokens in the policy.
    #[arg(long, conflicts_with = "stdio")]
    no_auth: bool,
    /// Also accept this Host header value (`name` or `name:port`; repeatable;
    /// adds to the policy's [server] allowed_hosts).
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Also accept this Origin (`scheme://host[:port]`; repeatable; adds to the
    /// policy's [server] allowed_origins).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Append an audit record per call, policy decision and approval to FILE
    /// (hash-chained; check it with `hermetic audit verify`). Overrides the
    /// policy's [server] audit_file.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// On SIGINT/SIGTERM, let calls in flight finish for up to SECS before
    /// cancelling them (default: the policy's [server] shutdown_grace_secs, else 30).
    #[arg(long, value_name = "SECS")]
    shutdown_grace: Option<u64>,
    /// Only these toolsets (comma-separated; default all).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    toolsets: Option<Vec<String>>,
    /// Subtract these toolsets afterwards (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "C,D")]
    disable: Vec<String>,
    /// Do not watch the tools directories for changes.
    #[arg(long)]
    no_watch: bool,
    /// Share rate limits with the other nodes of a cluster through this Redis
    /// (`redis://[user:password@]host[:port][/db]`; overrides the policy's [cluster]
    /// redis_url). Without it, this process counts alone.
    #[arg(long, value_name = "URL")]
    redis_url: Option<String>,
    /// Serve /metrics (Prometheus text format, with an admin token; also [server]
    /// metrics = true).
    #[arg(long)]
    metrics: bool,
}

#[derive(Subcommand, Debug)]
enum TokenCommand {
    /// Print a fresh random token and the policy line that grants it.
    New {
        /// The tenant the line is for (default: a placeholder to fill in).
        #[arg(long, value_name = "ID", conflicts_with = "admin")]
        tenant: Option<String>,
        /// A token for the operator console instead: prints the `[server]
        /// admin_token_sha256` line.
        #[arg(long)]
        admin: bool,
    },
    /// Read a token on stdin and print its SHA-256 (what `token_sha256` lists).
    Hash,
}

#[derive(Subcommand, Debug)]
enum AuditCommand {
    /// Verify an audit log's hash chain. Exit 0 when intact, 1 with the first bad line
    /// otherwise.
    Verify {
        /// The audit log.
        file: PathBuf,
        /// Also require the chain to end at this hash (the head recorded earlier:
        /// catches lines cut off the end).
        #[arg(long, value_name = "HASH")]
        head: Option<String>,
        /// Also require at least N lines (catches lines cut off the end).
        #[arg(long, value_name = "N")]
        min_lines: Option<u64>,
    },
    /// Mend a log whose last line was cut short by a crash or a full disk: a whole
    /// record that lost its newline is completed; a partial one is cut off the log and
    /// kept in FILE.torn. Refuses (exit 1) when any earlier line is broken: that is
    /// tampering, not a torn write. Stop the server writing to FILE first.
    Repair {
        /// The audit log.
        file: PathBuf,
    },
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // HERMETIC_LOG wins over --log-level, so it is checked as strictly.
    if let Some(value) = std::env::var_os("HERMETIC_LOG")
        && let Err(e) = value
            .to_str()
            .ok_or_else(|| "not UTF-8".to_owned())
            .and_then(parse_log_level)
    {
        eprintln!("error: invalid value {value:?} for HERMETIC_LOG: {e}");
        return ExitCode::from(2);
    }
    init_logging(&cli.log_level);
    match run(cli) {
        Ok(code) => code,
        // The reader went away (`| head`): nothing more to say, and no one to say it to.
        Err(e)
            if e.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", report(&e));
            ExitCode::from(3)
        }
    }
}

/// An error and its causes on one line, each cause once: library errors keep their
/// source (for callers that inspect it) and also name it in their own message (for
/// callers that print only that), so a cause already in the text is not repeated.
fn report(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

fn init_logging(level: &str) {
    // wasi-http warns of every failed connect, which the tool reports itself: at the
    // quiet levels that would say each failure twice.
    let level = if matches!(level, "warn" | "error") {
        format!("{level},wasmtime_wasi_http=error")
    } else {
        level.to_owned()
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("HERMETIC_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    use std::io::IsTerminal as _;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .with_writer(std::io::stderr)
        .init();
}

/// The tool host the options describe. See [`build_host`].
fn build_registry(global: &HostArgs) -> Result<Registry> {
    Ok(build_host(global, None, None)?.0)
}

/// The tool host the options describe, and the policy file's `[server]` settings
/// (defaults without a policy file): the file is read once, for both. `redis_url`
/// (`serve --redis-url`) wins over the policy's `[cluster] redis_url`: key-value data
/// then lives in that Redis. `audit`: `serve --audit FILE`, a file of the host's like
/// the policy's own.
fn build_host(
    global: &HostArgs,
    redis_url: Option<&str>,
    audit: Option<&std::path::Path>,
) -> Result<(Registry, hermetic_config::ServerPolicy)> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let workspace = match &global.workspace {
        Some(dir) => {
            let resolved = dir
                .canonicalize()
                .with_context(|| format!("workspace {} does not exist", dir.display()))?;
            if !resolved.is_dir() {
                bail!("workspace {} is not a directory", dir.display());
            }
            Some(resolved)
        }
        None => None,
    };
    let (mut policy, secrets, mut state_files, server, trust, keyvalue_file, keyvalue_settings) =
        match &global.policy {
            Some(file) => {
                let loaded = hermetic_config::load(file, &cwd)?;
                (
                    loaded.policy,
                    loaded.secrets,
                    loaded.state_files,
                    loaded.server,
                    loaded.trust,
                    loaded.keyvalue_file,
                    loaded.keyvalue_settings,
                )
            }
            None => (
                {
                    // No policy: the terminal gets a sandbox when this machine has one.
                    let mut policy = OperatorPolicy::with_workspace(cwd.clone());
                    hermetic::policy::terminal::AUTO_BACKEND
                        .clone_into(&mut policy.terminal.default.backend);
                    policy
                },
                hermetic::Secrets::default(),
                Vec::new(),
                hermetic_config::ServerPolicy::default(),
                hermetic::policy::trust::TrustPolicy::default(),
                None,
                hermetic::KeyValueSettings::default(),
            ),
        };
    if let Some(dir) = workspace {
        policy.move_workspace(dir);
    }
    // --allow-env and --allow-net are the operator speaking.
    policy.allow_everywhere(&global.allow_env, &global.allow_net);
    // The terminal backends and approval gates, for tools granted the terminal.
    let mut options = RegistryOptions::new(policy);
    // Sandboxed commands never see the host's own files, even where their sandbox shows
    // the host read-only, and no command may name one (the gate's `self.host_state`).
    if let Some(cache) = &options.engine.cache_dir {
        options.policy.terminal.protected.push(cache.clone());
    }
    if let Some(file) = audit {
        options
            .policy
            .terminal
            .protected
            .push(std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()));
    }
    // Tool directories: a component a command wrote there would be loaded (at the next
    // start, or at once by `serve`'s reload) with the grants the policy gives tools.
    for dir in &global.tools_dirs {
        options
            .policy
            .terminal
            .protected
            .push(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
    }
    // The program itself: a command that replaced it would run as the host next time.
    if let Ok(exe) = std::env::current_exe() {
        options.policy.terminal.programs.push(exe);
    }
    // Tools' key-value data: in the cluster's Redis, else in a file of this host's
    // (said where: the policy, HERMETIC_DATA_DIR; or the default place).
    let keyvalue_file = match redis_url.or(server.redis_url.as_deref()) {
        Some(url) => {
            options.keyvalue = Some(std::sync::Arc::new(
                hermetic_server::store::RedisKeyValue::new(url)?.with_settings(keyvalue_settings),
            ));
            None
        }
        None => keyvalue_file
            .map(|f| (f, true))
            .or_else(crate::state::default_keyvalue_file),
    };
    if let Some((file, _)) = &keyvalue_file {
        options.policy.terminal.protected.push(file.clone());
    }
    // The tool store, when the policy names tools by source.
    let store = if trust.sources.is_empty() {
        None
    } else {
        let dir = crate::community::store_dir(global.store.as_deref(), Some(&trust))?;
        options.policy.terminal.protected.push(dir.clone());
        Some(dir)
    };
    let mut options = hermetic_terminal::attach(options)?;
    if let Some((file, said)) = keyvalue_file {
        // The default place under tools' reach (hermetic run in one's home directory):
        // kept in memory instead, said so; a place the operator named is checked
        // like every other host file, and refused there.
        let reachable = hermetic::ToolReach::of(&options.policy)
            .check("the key-value store", &file)
            .is_err();
        if reachable && !said {
            eprintln!(
                "warning: tools' key-value data is kept in memory this time: {} is where tools reach (set [keyvalue] file or HERMETIC_DATA_DIR outside every mount)",
                file.display()
            );
        } else {
            if !state_files.iter().any(|f| f.path == file) {
                state_files.push(hermetic::StateFile {
                    what: "the key-value store".to_owned(),
                    path: file.clone(),
                });
            }
            options.keyvalue = Some(std::sync::Arc::new(
                hermetic::EmbeddedKeyValueFile::with_settings(file, keyvalue_settings),
            ));
        }
    }
    // Under require_signature, a component file (--tools-dir, reloads) must be signed
    // by a trusted key too: FILE.sig beside it.
    let signed = if trust.require_signature || !trust.tenants_requiring.is_empty() {
        Some(crate::community::file_check(&trust)?)
    } else {
        None
    };
    // A name the policy gives a source is that tool's: no file takes it.
    options.file_check = crate::community::reserve::file_check(&trust, signed);
    options.secrets = secrets;
    options
        .overrides
        .extend(global.allow_override.iter().cloned());
    if global.no_cache {
        options.engine.cache_dir = None;
    }
    let registry = Registry::new(options)?;
    let mut problems: Vec<LoadProblem> = Vec::new();
    // The policy's own files were checked against its mounts at load; `--workspace`
    // may have moved one over them.
    for file in &state_files {
        registry.check_state_path(&file.what, &file.path)?;
    }
    // Hooks before any call can run: one that cannot load stops the host.
    for hook in &registry.policy().hooks {
        let bytes = match &hook.location {
            hermetic::policy::hooks::HookLocation::Source(source) => {
                let dir = crate::community::store_dir(global.store.as_deref(), Some(&trust))?;
                let require = trust.require_signature || !trust.tenants_requiring.is_empty();
                // A hook from a source is named by the policy: there is one.
                let policy = global
                    .policy
                    .as_deref()
                    .unwrap_or(std::path::Path::new("FILE"));
                crate::community::hook_bytes(&hook.name, source, policy, &trust, &dir, require)?
            }
            _ => hermetic::hooks::bytes_of(hook)?.into_owned(),
        };
        registry.add_hook(hook, &bytes)?;
    }
    if !global.no_bundled {
        problems.extend(registry.add_bundled());
    }
    for dir in &global.tools_dirs {
        problems.extend(registry.add_dir(dir)?);
    }
    // After the bundled tools: one holding a name the policy gives a source is
    // skipped, so the community tool (loaded or not) keeps its name and grants.
    problems.extend(crate::community::reserve::release_source_names(
        &registry, &trust,
    ));
    if let (Some(dir), Some(policy_path)) = (&store, &global.policy) {
        registry.check_state_path("the tool store", dir)?;
        // A tool is signed or it is not: when any tenant requires signatures, every
        // tool from a source must be signed (tools are shared by the tenants a server
        // serves).
        let require = trust.require_signature
            || !trust.tenants_requiring.is_empty()
            || trust.requires_signature(global.tenant());
        problems.extend(crate::community::load_sources(
            &registry,
            policy_path,
            &trust,
            dir,
            require,
            global.strict || trust.strict,
        )?);
    }
    for problem in &problems {
        eprintln!("warning: skipped {}: {}", problem.source, problem.reason);
    }
    registry.check_tenant(global.tenant())?;
    registry.check_tenant_toolsets()?;
    Ok((registry, server))
}

fn run(cli: Cli) -> Result<ExitCode> {
    if cli.host.is_given()
        && matches!(
            cli.command,
            Command::Approval(_)
                | Command::New { .. }
                | Command::Tool(_)
                | Command::Token(_)
                | Command::Audit(_)
                | Command::Push { .. }
                | Command::Keygen { .. }
                | Command::Sign { .. }
                | Command::State(_)
        )
    {
        eprintln!(
            "error: the tool-host options (--policy, --tenant, --workspace, --tools-dir, …) \
             apply to tools, toolsets, definitions, call, inspect, serve, pull and verify only"
        );
        return Ok(ExitCode::from(2));
    }
    let outer = cli.host;
    match cli.command {
        Command::Approval(command) => return crate::approval::run(command),
        Command::State(command) => return crate::state::run(command),
        Command::Tool(command) => return crate::tool_build::run(command),
        Command::Token(command) => return token(command),
        Command::New { lang, name, dir } => {
            let made = crate::new::create(lang, &name, dir.as_deref())?;
            out!("{}", crate::new::next_steps(lang, &name, &made));
        }
        Command::Audit(AuditCommand::Verify {
            file,
            head,
            min_lines,
        }) => return audit_verify(&file, head.as_deref(), min_lines),
        Command::Audit(AuditCommand::Repair { file }) => return audit_repair(&file),
        Command::Tools { host, json } => list_tools(&host.with_outer(&outer), json)?,
        Command::Toolsets { host, json } => list_toolsets(&host.with_outer(&outer), json)?,
        Command::Definitions {
            host,
            toolsets,
            disable,
        } => {
            let selection = Selection {
                enabled: toolsets,
                disabled: disable,
            };
            definitions(&host.with_outer(&outer), &selection)?;
        }
        Command::Call {
            host,
            quiet,
            name,
            args,
        } => {
            return call(&host.with_outer(&outer), &name, args, quiet);
        }
        Command::Serve(args) => serve_command(&outer, args)?,
        Command::Push {
            file,
            reference,
            version,
            registry,
        } => return crate::community::push(&file, &reference, version.as_deref(), &registry),
        Command::Keygen { out } => return crate::community::keygen(&out),
        Command::Sign {
            target,
            key,
            registry,
        } => return crate::community::sign(&target, &key, &registry),
        Command::Pull {
            host,
            reference,
            trust,
            registry,
            allow_older,
        } => {
            let host = host.with_outer(&outer);
            let loaded = trust_of(&host)?;
            let policy = host.policy.as_deref().zip(loaded.as_ref());
            return crate::community::pull(
                reference.as_deref(),
                &trust,
                policy,
                host.tenant(),
                host.store.as_deref(),
                &registry,
                allow_older,
            );
        }
        Command::Verify {
            host,
            target,
            trust,
            registry,
        } => {
            let host = host.with_outer(&outer);
            let loaded = trust_of(&host)?;
            return crate::community::verify(
                &target,
                &trust,
                loaded.as_ref(),
                host.store.as_deref(),
                &registry,
            );
        }
        Command::Inspect {
            host,
            target,
            registry,
        } => {
            return inspect(&host.with_outer(&outer), &target, &registry);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `[trust]` settings and sources of `--policy`, when one is given.
fn trust_of(host: &HostArgs) -> Result<Option<hermetic::policy::trust::TrustPolicy>> {
    let Some(file) = &host.policy else {
        return Ok(None);
    };
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    Ok(Some(hermetic_config::load(file, &cwd)?.trust))
}

/// `hermetic tools`: every tool the tenant sees, with its availability.
fn list_tools(host: &HostArgs, json: bool) -> Result<()> {
    let registry = build_registry(host)?;
    let mut tools = registry.tools_for(host.tenant());
    // Tools the policy names by source that could not be loaded: unavailable, why.
    tools.extend(crate::community::skipped_for(
        &registry,
        host.policy.as_deref(),
        host.store.as_deref(),
        host.tenant(),
    )?);
    if json {
        out!("{}", serde_json::to_string_pretty(&tools)?);
        return Ok(());
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let set_width = tools
        .iter()
        .map(|t| t.toolset.len())
        .max()
        .unwrap_or(7)
        .max(7);
    out!("{:width$}  {:set_width$}  STATUS", "TOOL", "TOOLSET");
    for t in tools {
        let status = match (&t.available, &t.reason) {
            (true, _) => "available".to_owned(),
            (false, Some(reason)) => format!("unavailable: {reason}"),
            (false, None) => "unavailable".to_owned(),
        };
        out!("{:width$}  {:set_width$}  {status}", t.name, t.toolset);
    }
    Ok(())
}

/// `hermetic toolsets`: the toolsets whose tools exist, with their tools.
fn list_toolsets(host: &HostArgs, json: bool) -> Result<()> {
    let registry = build_registry(host)?;
    let toolsets = registry.toolsets();
    if json {
        out!("{}", serde_json::to_string_pretty(&toolsets)?);
        return Ok(());
    }
    for t in toolsets {
        let tools = if t.tools.is_empty() {
            "(none)".to_owned()
        } else {
            t.tools.join(", ")
        };
        out!("{}: {tools}", t.name);
        if !t.description.is_empty() {
            out!("    {}", t.description);
        }
    }
    Ok(())
}

/// `hermetic definitions`: the selected tools' definitions, as an agent gets them.
fn definitions(host: &HostArgs, selection: &Selection) -> Result<()> {
    let registry = build_registry(host)?;
    let (_, warnings) = registry.select(selection);
    for w in warnings {
        eprintln!("warning: {w}");
    }
    out!(
        "{}",
        serde_json::to_string_pretty(&registry.definitions_for(host.tenant(), selection))?
    );
    Ok(())
}

/// `hermetic call`: one call (arguments `-` are read from stdin), approvals asked on
/// the terminal, progress on stderr as it comes (unless `quiet`). Exit 1 for every
/// failure and for the tool's own `{"error": …}` report (the terminal's successes
/// carry `"error": null`).
fn call(host: &HostArgs, name: &str, args: String, quiet: bool) -> Result<ExitCode> {
    let args = if args == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .read_to_string(&mut buf)
            .context("reading arguments from stdin")?;
        buf
    } else {
        args
    };
    let registry = build_registry(host)?;
    let mut options = CallOptions::default()
        .with_tenant(host.tenant().to_owned())
        .with_approver(std::sync::Arc::new(hermetic::approval::TtyApprover::stdio()));
    if !quiet {
        options = options.with_progress(std::sync::Arc::new(print_progress));
    }
    let outcome = registry.invoke(name, &args, &options);
    out!("{}", outcome.to_json());
    Ok(if outcome.is_error() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One progress report on stderr: the terminal's output chunks as they are (they carry
/// their own newlines), other tools' messages a line each.
fn print_progress(progress: hermetic::Progress) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    // stderr gone (closed pipe): the result on stdout is what matters.
    let _ = if &*progress.tool == "terminal" {
        err.write_all(progress.message.as_bytes())
    } else {
        writeln!(err, "[{}] {}", progress.tool, progress.message)
    };
    let _ = err.flush();
}

/// `hermetic serve`: the server's keys of the policy file (tokens, limits,
/// allow-lists) with the command line's additions, then MCP on stdio or HTTP.
fn serve_command(outer: &HostArgs, args: ServeArgs) -> Result<()> {
    let host = args.host.with_outer(outer);
    let (registry, mut access) =
        build_host(&host, args.redis_url.as_deref(), args.audit.as_deref())?;
    let registry = std::sync::Arc::new(registry);
    access.allowed_hosts.extend(args.allow_hosts);
    access.allowed_origins.extend(args.allow_origins);
    if let Some(url) = args.redis_url {
        access.redis_url = Some(url);
    }
    access.metrics |= args.metrics;
    let audit = match args.audit.or_else(|| access.audit_file.clone()) {
        Some(file) => Some(std::sync::Arc::new({
            registry.check_state_path("the audit log", &file)?;
            hermetic_server::audit::AuditLog::open(&file)?
                .with_redactions(registry.secrets().values())
                .with_node(&access.node_name.clone().unwrap_or_else(host_name))
                .with_rotation(hermetic_server::audit::Rotation {
                    max_bytes: access.audit_max_bytes,
                    every: access.audit_rotate_secs.map(std::time::Duration::from_secs),
                })
        })),
        None => None,
    };
    let shutdown_grace = args.shutdown_grace.or(access.shutdown_grace_secs).map_or(
        hermetic_server::DEFAULT_SHUTDOWN_GRACE,
        std::time::Duration::from_secs,
    );
    let selection = Selection {
        enabled: args.toolsets,
        disabled: args.disable,
    };
    for w in registry.select(&selection).1 {
        eprintln!("warning: {w}");
    }
    let mut options = hermetic_server::ServeOptions {
        tenant: host.tenant().to_owned(),
        selection,
        access,
        audit,
        shutdown_grace,
        // OTEL_EXPORTER_OTLP_ENDPOINT, in a build with `--features otlp`.
        otlp_endpoint: None,
    };
    let watch = (!args.no_watch).then(|| host.tools_dirs.clone());
    let transport = if args.stdio {
        Transport::Stdio
    } else {
        let addr = match args.http {
            Some(addr) => addr,
            None => hermetic_server::http::DEFAULT_ADDR.parse()?,
        };
        let token = http_token(&mut options.access, &options.tenant, args.no_auth, addr)?;
        Transport::Http(addr, token)
    };
    serve(registry, options, watch, transport)
}

/// The tokens an HTTP server without tenant tokens requires (granted in `access`): the
/// MCP token, `tenant`'s (made now, or `$HERMETIC_TOKEN`), and the console's admin
/// token when the policy names none (made now, or `$HERMETIC_CONSOLE_TOKEN`). `None`
/// with tenant tokens (the policy's decide) and with `--no-auth`, which only loopback
/// addresses may use. Without tenant tokens only loopback addresses are served: a
/// token made at start and printed on a terminal is no way to let other machines in.
fn http_token(
    access: &mut hermetic_config::ServerPolicy,
    tenant: &str,
    no_auth: bool,
    addr: std::net::SocketAddr,
) -> Result<Option<hermetic_server::auth::ServeTokens>> {
    use hermetic_server::auth;
    let var = |name: &str| std::env::var(name).ok().filter(|t| !t.is_empty());
    let from_env = var(auth::TOKEN_ENV);
    let console_env = var(auth::CONSOLE_TOKEN_ENV);
    if !access.tenant_tokens.is_empty() {
        if no_auth {
            bail!(
                "--no-auth: the policy gives tenants tokens, and each request acts as the tenant whose token it carries; drop --no-auth"
            );
        }
        for (name, value) in [
            (auth::TOKEN_ENV, &from_env),
            (auth::CONSOLE_TOKEN_ENV, &console_env),
        ] {
            if value.is_some() {
                eprintln!("warning: {name} is ignored: the policy gives tenants tokens");
            }
        }
        return Ok(None);
    }
    if no_auth {
        if !addr.ip().is_loopback() {
            bail!(
                "--no-auth on {addr}: without a token anyone who can reach that address would act as the operator; listen on loopback (127.0.0.1) or drop --no-auth"
            );
        }
        return Ok(None);
    }
    if !addr.ip().is_loopback() {
        bail!(
            "refusing to serve {addr} without tenant tokens in the policy: a token made at start would be the only thing between the network and the tools. \
             Give each client a tenant token in the policy (`hermetic token new --tenant ID` prints the [tenants.ID] token_sha256 line) and the console an admin token ([server] admin_token_sha256, `hermetic token new --admin`), or listen on loopback (127.0.0.1)"
        );
    }
    if console_env.is_some() && !access.admin_tokens.is_empty() {
        eprintln!(
            "warning: {} is ignored: the policy names the console's admin tokens",
            auth::CONSOLE_TOKEN_ENV
        );
    }
    let tokens = auth::serve_tokens(access, tenant, from_env.as_deref(), console_env.as_deref())?;
    Ok(Some(tokens))
}

/// This machine's name, for the audit lines of a node ("" when it cannot be read).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|n| n.trim().to_owned())
        .unwrap_or_default()
}

/// `hermetic inspect`: a registered tool by name, or a `.wasm` file (exit 1 when it
/// does not load, whatever else the report shows).
fn inspect(
    host: &HostArgs,
    target: &str,
    registry_args: &crate::community::RegistryArgs,
) -> Result<ExitCode> {
    let registry = build_registry(host)?;
    let path = std::path::Path::new(target);
    let reference = (!path.exists())
        .then(|| hermetic_distribution::Reference::parse(target).ok())
        .flatten();
    let mut report = if let Some(reference) = reference {
        // A tool in a registry: fetched into the store (signature checked as the
        // policy says), never run.
        let trust = trust_of(host)?;
        let (bytes, pinned) = crate::community::fetch_for_inspection(
            &reference,
            trust.as_ref(),
            host.store.as_deref(),
            host.tenant(),
            registry_args,
        )?;
        inspect_bytes(
            &registry,
            &bytes,
            ToolSource::Oci(format!("oci://{pinned}")),
            host.tenant(),
        )?
    } else if target.ends_with(".wasm") || target.contains('/') {
        if !path.exists() {
            bail!("{target}: no such file");
        }
        inspect_file(&registry, path.to_path_buf(), host.tenant())?
    } else {
        match registry.inspect_for(target, host.tenant()) {
            Some(report) => report,
            None => crate::community::skipped_report(
                &registry,
                host.policy.as_deref(),
                host.store.as_deref(),
                host.tenant(),
                target,
            )?
            .ok_or_else(|| anyhow::anyhow!("no tool named {target:?} (see `hermetic tools`)"))?,
        }
    };
    if let Some(hex) = report["sha256"].as_str() {
        // What `[tools.NAME] reviewed` takes.
        report["component"] = serde_json::Value::String(format!("sha256:{hex}"));
    }
    // Whether the policy's review withholds this version, and how it differs from
    // the one `reviewed` names.
    let trust = trust_of(host)?;
    crate::community::add_review(
        &mut report,
        &registry,
        host.policy.as_deref().zip(trust.as_ref()),
        host.store.as_deref(),
    )?;
    out!("{}", serde_json::to_string_pretty(&report)?);
    Ok(if report["loads"] == false {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

enum Transport {
    Stdio,
    /// The address, and the tokens made for it (printed once it listens).
    Http(
        std::net::SocketAddr,
        Option<hermetic_server::auth::ServeTokens>,
    ),
}

/// Runs the MCP server until the client goes away (stdio) or a shutdown signal.
fn serve(
    registry: std::sync::Arc<Registry>,
    options: hermetic_server::ServeOptions,
    watch_dirs: Option<Vec<PathBuf>>,
    transport: Transport,
) -> Result<()> {
    use hermetic_server::{McpServer, Reloader, http, stdio, watch};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("hermetic-serve")
        .build()
        .context("starting the async runtime")?;
    let server = McpServer::new(registry.clone(), options);
    let result = runtime.block_on(async {
        let shutdown = tokio_util::sync::CancellationToken::new();
        tokio::spawn(cancel_on_signal(shutdown.clone()));
        let _watcher = watch_dirs.filter(|d| !d.is_empty()).map(|dirs| {
            let notifier = server.clone();
            watch(Reloader::new(registry, dirs), move |report| {
                for problem in &report.problems {
                    eprintln!("warning: skipped {}: {}", problem.source, problem.reason);
                }
                notifier.notify_tools_changed();
            })
        });
        match transport {
            Transport::Stdio => stdio::serve(&server, shutdown).await?,
            Transport::Http(addr, token) => {
                if !addr.ip().is_loopback() && !server.requires_tokens() {
                    // Checked again by http::serve; refused here before anything binds.
                    return Err(hermetic_server::ServeError::Unprotected(addr).into());
                }
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr}"))?;
                let bound = listener.local_addr()?;
                if let Some(audit) = server.audit() {
                    eprintln!("hermetic: audit log {}", audit.path().display());
                }
                eprintln!("hermetic: serving MCP at http://{bound}{}", http::MCP_PATH);
                print_access(bound, token.as_ref(), server.requires_tokens());
                http::serve(&server, listener, shutdown).await?;
            }
        }
        anyhow::Ok(())
    });
    if let Some(audit) = server.audit() {
        // The head to record elsewhere: `audit verify --head` then catches a cut tail.
        let (lines, head) = audit.head();
        eprintln!(
            "hermetic: audit log {}: {lines} lines, head {head}",
            audit.path().display()
        );
    }
    // Calls still running were cancelled with their sessions (after the shutdown
    // grace); do not wait for blocked stdin reads.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}

/// How to reach the server just bound, on stderr (as Jupyter and other local servers
/// do): the header a client sends, with the MCP token made at start, and the console's
/// URL with the console token (tokens from the environment are named, not printed).
/// The console token is printed only inside the URL: it answers approvals, so it is
/// not what to hand an agent.
fn print_access(
    bound: std::net::SocketAddr,
    tokens: Option<&hermetic_server::auth::ServeTokens>,
    requires_tokens: bool,
) {
    use hermetic_server::auth;
    let console = hermetic_server::http::console::CONSOLE_PATH;
    let Some(t) = tokens else {
        if requires_tokens {
            eprintln!(
                "hermetic: send the header  Authorization: Bearer <a tenant's token from the policy>"
            );
        } else {
            eprintln!(
                "hermetic: warning: no authentication (--no-auth): any process on this machine can call these tools"
            );
        }
        return;
    };
    let shown = |token: &auth::OperatorToken, var: &str| {
        if token.from_env {
            format!("${var}")
        } else {
            token.token.clone()
        }
    };
    eprintln!(
        "hermetic: send the header  Authorization: Bearer {}",
        shown(&t.mcp, auth::TOKEN_ENV)
    );
    match &t.console {
        Some(c) if !c.from_env => eprintln!(
            "hermetic: console at http://{bound}{console}#token={}",
            c.token
        ),
        Some(_) => eprintln!(
            "hermetic: console at http://{bound}{console} (log in with ${})",
            auth::CONSOLE_TOKEN_ENV
        ),
        // The policy names the console's admin tokens.
        None => eprintln!(
            "hermetic: console at http://{bound}{console} (log in with an admin token of the policy)"
        ),
    }
}

/// `key` as a TOML key: bare when it may be, else a quoted (JSON-escaped) string.
fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_owned()
    } else {
        serde_json::Value::from(key).to_string()
    }
}

/// `hermetic token new|hash`.
fn token(command: TokenCommand) -> Result<ExitCode> {
    use hermetic_server::auth;
    match command {
        TokenCommand::New { tenant, admin } => {
            let token = auth::new_token()
                .map_err(|e| anyhow::anyhow!("reading the OS random source: {e}"))?;
            let digest = auth::hex(&auth::digest(&token));
            if admin {
                out!("token: {token}");
                out!(
                    "# sign in to the operator console (/console) with the token; put this in the policy:"
                );
                out!("[server]");
                out!("admin_token_sha256 = [\"{digest}\"]");
                return Ok(ExitCode::SUCCESS);
            }
            let placeholder = tenant.is_none();
            let tenant = toml_key(tenant.as_deref().unwrap_or("TENANT"));
            out!("token: {token}");
            out!(
                "# give the token to the client (Authorization: Bearer <token>); put this in the policy:"
            );
            if placeholder {
                out!("# (TENANT: the tenant's id; or run `hermetic token new --tenant ID`)");
            }
            out!("[tenants.{tenant}]");
            out!("token_sha256 = [\"{digest}\"]");
        }
        TokenCommand::Hash => {
            let mut token = String::new();
            std::io::stdin()
                .read_to_string(&mut token)
                .context("reading the token from stdin")?;
            let token = token.trim();
            if token.is_empty() {
                // A usage error (exit 2, like clap's), not a failure of the host.
                eprintln!(
                    "error: no token on stdin (e.g. `echo -n \"$TOKEN\" | hermetic token hash`)"
                );
                return Ok(ExitCode::from(2));
            }
            out!("{}", auth::hex(&auth::digest(token)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `hermetic audit verify`: exit 0 when the chain holds, 1 naming the first bad line.
fn audit_verify(
    file: &std::path::Path,
    head: Option<&str>,
    min_lines: Option<u64>,
) -> Result<ExitCode> {
    use hermetic_server::audit::{VerifyError, verify};
    match verify(file) {
        Ok(verified) => {
            if let Some(expected) = head
                && !expected.eq_ignore_ascii_case(&verified.head)
            {
                out!(
                    "{}: chain intact but ends at {} (line {}), not at the expected head {expected}: lines were cut off the end",
                    file.display(),
                    verified.head,
                    verified.lines
                );
                return Ok(ExitCode::from(1));
            }
            if let Some(min) = min_lines
                && verified.lines < min
            {
                out!(
                    "{}: chain intact but has {} lines, fewer than {min}: lines were cut off the end",
                    file.display(),
                    verified.lines
                );
                return Ok(ExitCode::from(1));
            }
            out!(
                "{}: ok, {} lines, head {}",
                file.display(),
                verified.lines,
                verified.head
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ VerifyError::TornTail { .. }) => {
            out!(
                "{}: torn: {e}; run `hermetic audit repair {}`",
                file.display(),
                file.display()
            );
            Ok(ExitCode::from(1))
        }
        Err(e @ VerifyError::Line { .. }) => {
            out!("{}: tampered: {e}", file.display());
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.into()),
    }
}

/// `hermetic audit repair`: exit 0 when the log verifies afterwards, 1 when it is
/// broken before its last line.
fn audit_repair(file: &std::path::Path) -> Result<ExitCode> {
    use hermetic_server::audit::{Repair, RepairError, repair};
    let done = match repair(file) {
        Ok(done) => done,
        Err(e @ RepairError::Broken(_)) => {
            out!("{}: not repaired: {e}", file.display());
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    let what = match &done.repair {
        Repair::Nothing => "nothing to repair".to_owned(),
        Repair::Completed => "completed the last line (only its newline was missing)".to_owned(),
        Repair::Cut { bytes, saved_to } => format!(
            "cut a torn last line ({bytes} bytes, kept in {})",
            saved_to.display()
        ),
    };
    out!(
        "{}: {what}; ok, {} lines, head {}",
        file.display(),
        done.verified.lines,
        done.verified.head
    );
    Ok(ExitCode::SUCCESS)
}

/// Cancels `shutdown` on Ctrl-C or SIGTERM.
async fn cancel_on_signal(shutdown: tokio_util::sync::CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    shutdown.cancel();
}

/// Inspects a component file without registering it: its declaration (read without
/// running it), whether it loads, and what it would be granted.
fn inspect_file(registry: &Registry, path: PathBuf, tenant: &str) -> Result<serde_json::Value> {
    let bytes = hermetic::component::read_file(&path)
        .with_context(|| format!("reading {}", path.display()))?;
    inspect_bytes(registry, &bytes, ToolSource::File(path), tenant)
}

/// A component's declaration, schema and the grants it would get, and — when a tool
/// of its name is registered — what it asks for beyond that granted version. Runs no
/// guest code but `schema` (as loading does).
fn inspect_bytes(
    registry: &Registry,
    bytes: &[u8],
    source: ToolSource,
    tenant: &str,
) -> Result<serde_json::Value> {
    let label = source.to_string();
    let declaration = match hermetic::component::read_declaration(bytes) {
        Ok(d) => d,
        Err(e) => {
            return Ok(serde_json::json!({
                "file": label,
                "loads": false,
                "error": LoadProblem::new(label.clone(), &e).reason,
            }));
        }
    };
    let granted = registry.declaration_for(&declaration.name, tenant);
    let new_against_granted = granted.as_ref().map(|g| declaration.asks_beyond(g));
    let tenant_policy = registry.policy().tenants.get(tenant);
    let grants = hermetic::policy::effective(
        &declaration,
        registry.policy(),
        tenant_policy.map(|t| (tenant, t)),
    );
    let (loads, error, schema) = match registry.load(bytes, source) {
        Ok(tool) => (true, None, Some(tool.schema)),
        Err(e) => (
            false,
            Some(LoadProblem::new(label.clone(), &e).reason),
            None,
        ),
    };
    Ok(serde_json::json!({
        "file": label,
        "component": hermetic_distribution::Digest::of(bytes).to_string(),
        "new_against_granted": new_against_granted,
        "loads": loads,
        "error": error,
        "declaration": declaration,
        "operator": registry.policy().grants_for(&declaration.name),
        "tenant_policy": tenant_policy,
        "grants": grants,
        "schema": schema,
        "available": grants.unavailable_reason().is_none(),
        "reason": grants.unavailable_reason(),
    }))
}

fn parse_destination(s: &str) -> Result<hermetic::policy::network::Destination, String> {
    hermetic::policy::network::Destination::parse(s).map_err(|e| e.to_string())
}
