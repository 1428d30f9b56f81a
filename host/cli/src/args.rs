//! The command line's shape: every command and option, with the help text `--help`
//! prints (clap derives the parser from these types).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// hermetic — a WebAssembly-sandboxed tool host for AI agents.
///
/// Every tool is a WebAssembly component; every call runs in a fresh sandbox that gets
/// only what the tool declared and the operator granted. The bundled tools (read_file,
/// write_file, patch, search_files, web_extract, weather, terminal, process, todo,
/// memory) are loaded unless --no-bundled; add your own with --tools-dir.
#[derive(Parser, Debug)]
#[command(name = "hermetic", version, propagate_version = true)]
pub(crate) struct Cli {
    /// Log level for diagnostics on stderr: error, warn, info, debug, trace or off,
    /// optionally per module (`warn,hermetic=info`).
    #[arg(long, value_name = "LEVEL", default_value = "warn", global = true, value_parser = parse_log_level)]
    pub(crate) log_level: String,
    /// The tool-host options may also come before the command (`hermetic --workspace
    /// DIR serve`); they apply to tools, toolsets, definitions, call, inspect, serve, pull and verify.
    #[command(flatten)]
    pub(crate) host: HostArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// What the tool host loads and grants: the options of the commands that build one.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Tool host")]
pub(crate) struct HostArgs {
    /// Also load every *.wasm in DIR (repeatable). Broken components are reported and
    /// skipped.
    #[arg(long = "tools-dir", value_name = "DIR")]
    pub(crate) tools_dirs: Vec<PathBuf>,

    /// Do not load the tools embedded in this binary.
    #[arg(long)]
    pub(crate) no_bundled: bool,

    /// Operator policy file (TOML; see policy.example.toml). Without one, the
    /// embedded defaults apply: workspace = the current directory (read-write), no
    /// network, no env, the terminal (local backend, approval mode manual) only for
    /// the bundled terminal and process tools, and a key-value store for tools that
    /// declare one (todo, memory), kept in $HERMETIC_DATA_DIR/keyvalue.redb (default
    /// ~/.local/share/hermetic; in memory when that is inside the workspace).
    #[arg(long, value_name = "FILE")]
    pub(crate) policy: Option<PathBuf>,

    /// Act as this tenant of the policy: its toolsets, its narrower grants and limits
    /// (default: the policy's default tenant).
    #[arg(long, value_name = "ID")]
    pub(crate) tenant: Option<String>,

    /// Host directory behind the `workspace` mount (default: the policy's, else the
    /// current directory). Terminal commands start there unless the policy sets the
    /// terminal's `cwd`.
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// Grant env var VAR (from this process's environment) to tools that declare it
    /// (repeatable).
    #[arg(long = "allow-env", value_name = "VAR")]
    pub(crate) allow_env: Vec<String>,

    /// Grant network destination DEST (e.g. `https://api.example.com`, `https://*.example.com`,
    /// `http://127.0.0.1:8080`) to tools that declare it (repeatable). Loopback, private
    /// and link-local addresses stay refused unless DEST names the address itself.
    #[arg(long = "allow-net", value_name = "DEST", value_parser = parse_destination)]
    pub(crate) allow_net: Vec<hermetic::policy::network::Destination>,

    /// Let tool NAME replace a registration from another toolset (repeatable).
    #[arg(long = "allow-override", value_name = "NAME")]
    pub(crate) allow_override: Vec<String>,

    /// Do not read or write the compiled-code cache (the bundled tools then load the
    /// code the build compiled, copied out of the binary at every start).
    #[arg(long)]
    pub(crate) no_cache: bool,

    /// The tool store: where `hermetic pull` keeps components by digest and where
    /// tools the policy names by `source` are loaded from (default: the policy's
    /// `[trust] store`, else $HERMETIC_STORE_DIR, else ~/.local/share/hermetic/store).
    #[arg(long, value_name = "DIR")]
    pub(crate) store: Option<PathBuf>,

    /// Refuse to start when a tool the policy names by `source` cannot be loaded (not
    /// pulled, unsigned, tampered with, named otherwise), as `[trust] strict = true`
    /// does; without it such a tool is listed unavailable with the reason and the rest
    /// are served.
    #[arg(long)]
    pub(crate) strict: bool,
}

impl HostArgs {
    /// These options with those given before the command (`outer`) filled in; lists
    /// add up, a value given after the command wins.
    pub(crate) fn with_outer(mut self, outer: &HostArgs) -> HostArgs {
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
    pub(crate) fn is_given(&self) -> bool {
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

    pub(crate) fn tenant(&self) -> &str {
        self.tenant.as_deref().unwrap_or_default()
    }
}

/// Accepts what `tracing`'s filter accepts, but only with level names: `bogus` would
/// otherwise be read as "everything from the module `bogus`" and silently log nothing.
pub(crate) fn parse_log_level(value: &str) -> Result<String, String> {
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
pub(crate) enum Command {
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
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub(crate) host: HostArgs,
    /// Serve one client on stdin/stdout (for clients that spawn the host).
    #[arg(long, conflicts_with = "http")]
    pub(crate) stdio: bool,
    /// Listen for MCP streamable HTTP on ADDR (port 0 picks a free port). Every
    /// request needs a bearer token: the policy's tenant tokens, else one made at
    /// start (or $HERMETIC_TOKEN, at least 32 characters) and printed on stderr; the
    /// console takes another, its admin token (or $HERMETIC_CONSOLE_TOKEN), printed
    /// only in the console's URL. Without tenant tokens in the policy, loopback
    /// addresses only. Accepted Host values: localhost, 127.0.0.1 and [::1] with
    /// the bound port, the bound address, and --allow-host / [server] allowed_hosts.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// Serve HTTP without a token: any process on this machine (a web page's script
    /// included, if it gets past the Host/Origin checks) can call the tools. Loopback
    /// addresses only; not with tenant tokens in the policy.
    #[arg(long, conflicts_with = "stdio")]
    pub(crate) no_auth: bool,
    /// Also accept this Host header value (`name` or `name:port`; repeatable;
    /// adds to the policy's [server] allowed_hosts).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub(crate) allow_hosts: Vec<String>,
    /// Also accept this Origin (`scheme://host[:port]`; repeatable; adds to the
    /// policy's [server] allowed_origins).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origins: Vec<String>,
    /// Append an audit record per call, policy decision and approval to FILE
    /// (hash-chained; check it with `hermetic audit verify`). Overrides the
    /// policy's [server] audit_file.
    #[arg(long, value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
    /// On SIGINT/SIGTERM, let calls in flight finish for up to SECS before
    /// cancelling them (default: the policy's [server] shutdown_grace_secs, else 30).
    #[arg(long, value_name = "SECS")]
    pub(crate) shutdown_grace: Option<u64>,
    /// Only these toolsets (comma-separated; default all).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub(crate) toolsets: Option<Vec<String>>,
    /// Subtract these toolsets afterwards (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "C,D")]
    pub(crate) disable: Vec<String>,
    /// Do not watch the tools directories for changes.
    #[arg(long)]
    pub(crate) no_watch: bool,
    /// Share rate limits with the other nodes of a cluster through this Redis
    /// (`redis://[user:password@]host[:port][/db]`; overrides the policy's [cluster]
    /// redis_url). Without it, this process counts alone.
    #[arg(long, value_name = "URL")]
    pub(crate) redis_url: Option<String>,
    /// Serve /metrics (Prometheus text format, with an admin token; also [server]
    /// metrics = true).
    #[arg(long)]
    pub(crate) metrics: bool,
}

#[derive(Subcommand, Debug)]
pub(crate) enum TokenCommand {
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
pub(crate) enum AuditCommand {
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

pub(crate) fn parse_destination(s: &str) -> Result<hermetic::policy::network::Destination, String> {
    hermetic::policy::network::Destination::parse(s).map_err(|e| e.to_string())
}
