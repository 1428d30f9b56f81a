//! `hermetic serve`: the policy's server settings with the command line's additions,
//! the tokens an HTTP server needs, then MCP on stdio or HTTP until a signal.

use crate::args::{HostArgs, ServeArgs};
use crate::host::build_host;
use anyhow::{Context, Result, bail};
use hermetic::{Registry, Selection};
use std::path::PathBuf;

/// `hermetic serve`: the server's keys of the policy file (tokens, limits,
/// allow-lists) with the command line's additions, then MCP on stdio or HTTP.
pub(crate) fn serve_command(outer: &HostArgs, args: ServeArgs) -> Result<()> {
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
pub(crate) fn http_token(
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
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|n| n.trim().to_owned())
        .unwrap_or_default()
}

pub(crate) enum Transport {
    Stdio,
    /// The address, and the tokens made for it (printed once it listens).
    Http(
        std::net::SocketAddr,
        Option<hermetic_server::auth::ServeTokens>,
    ),
}

/// Runs the MCP server until the client goes away (stdio) or a shutdown signal.
pub(crate) fn serve(
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
pub(crate) fn print_access(
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

/// Cancels `shutdown` on Ctrl-C or SIGTERM.
pub(crate) async fn cancel_on_signal(shutdown: tokio_util::sync::CancellationToken) {
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
