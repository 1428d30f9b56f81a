//! What this suite's topics share: a server's directories, the `hermetic serve --http`
//! process and raw requests to it, and the Python MCP client (tests/mcp/client.py) run
//! against it or against a `serve --stdio` it starts itself.
use hermetic_test_support::guests::{guest, test_cache};
use hermetic_test_support::http::{Reply, request};
use hermetic_test_support::lines::Lines;
use hermetic_test_support::mcp_http::{message, sessionless_headers, with_meta};
use hermetic_test_support::serve_process::ServeProcess;
use hermetic_test_support::tokens::sha256_hex;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;
use tempfile::TempDir;

/// Longest any wait may take before the test gives up (a hang guard, not a timing
/// assertion: on a healthy machine every wait ends in well under a second).
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// The test tools most scenarios serve.
pub const TEST_TOOLS: &[&str] = &["echo", "fail", "progress", "spin_long", "shaped"];

/// The message a refusal by the user carries (host/approval flow.rs).
pub const DENIED_BY_THE_USER: &str = "DENIED by the user";

/// The scenarios the Python client runs.
pub fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/client.py")
}

/// A tools directory and a workspace for one server.
pub struct Dirs {
    /// The `--tools-dir`.
    pub tools: TempDir,
    /// The `--workspace`.
    pub workspace: TempDir,
    /// The host's own files (policy, audit log): outside the workspace, as the host
    /// requires.
    pub state: TempDir,
}

impl Dirs {
    /// Directories with the named test tools.
    pub fn new(tools: &[&str]) -> Self {
        let dirs = Self {
            tools: TempDir::new().unwrap(),
            workspace: TempDir::new().unwrap(),
            state: TempDir::new().unwrap(),
        };
        for name in tools {
            dirs.add(name);
        }
        dirs
    }

    /// Adds a test tool to the tools directory.
    pub fn add(&self, name: &str) {
        std::fs::copy(guest(name), self.tools.path().join(format!("{name}.wasm"))).unwrap();
    }

    /// Removes a tool from the tools directory.
    pub fn remove(&self, name: &str) {
        std::fs::remove_file(self.tools.path().join(format!("{name}.wasm"))).unwrap();
    }

    /// `hermetic` arguments before the subcommand.
    pub fn global_args(&self) -> Vec<String> {
        vec![
            "--no-bundled".into(),
            "--tools-dir".into(),
            self.tools.path().display().to_string(),
            "--workspace".into(),
            self.workspace.path().display().to_string(),
            "--log-level".into(),
            "warn,hermetic=info".into(),
        ]
    }
}

/// Global arguments for a server with only the bundled tools (so `terminal` and
/// `process` get the local backend with manual approval, the embedded default) whose
/// workspace — and the terminal's working directory — is `workspace`.
pub fn bundled_args(workspace: &Path) -> Vec<String> {
    vec![
        "--workspace".into(),
        workspace.display().to_string(),
        "--log-level".into(),
        "warn,hermetic=info".into(),
    ]
}

/// `cmd` with the suites' shared compiled-code cache and plain log lines to match on.
pub fn hermetic_env(cmd: &mut Command) -> &mut Command {
    cmd.env("HERMETIC_CACHE_DIR", test_cache())
        .env("NO_COLOR", "1")
        .env_remove("HERMETIC_LOG")
}

/// A `hermetic serve --http 127.0.0.1:0` process (killed on drop) and the token it
/// made.
pub struct HttpServer {
    /// The process, its URL and its log.
    pub process: ServeProcess,
    /// The token the server made at start (no tenant tokens in its policy): clients
    /// and raw requests here send it unless they say otherwise.
    pub token: Option<String>,
}

impl std::ops::Deref for HttpServer {
    type Target = ServeProcess;
    fn deref(&self) -> &ServeProcess {
        &self.process
    }
}

impl std::ops::DerefMut for HttpServer {
    fn deref_mut(&mut self) -> &mut ServeProcess {
        &mut self.process
    }
}

impl HttpServer {
    /// A server of `dirs`' tools.
    pub fn start(dirs: &Dirs) -> Self {
        Self::start_with(dirs.global_args(), &[])
    }

    /// With these global arguments and these `serve` arguments.
    pub fn start_with(global: Vec<String>, serve: &[&str]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
        hermetic_env(&mut cmd)
            .args(global)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(serve);
        let process = ServeProcess::spawn(cmd, HANG_GUARD);
        let url = &process.url;
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url}"
        );
        // The next line says how to authenticate: the token it made, if it made one.
        let log = &process.log;
        let header = log
            .wait_for(|l| l.contains("Authorization: Bearer ") || l.contains("--no-auth"))
            .unwrap_or_else(|| {
                panic!(
                    "the server did not say how to authenticate:\n{}",
                    log.text()
                )
            });
        let token = header
            .split("Authorization: Bearer ")
            .nth(1)
            .map(str::trim)
            .filter(|t| t.starts_with(hermetic_server::auth::TOKEN_PREFIX))
            .map(str::to_owned);
        Self { process, token }
    }
}

/// Where a client connects.
pub enum Target<'a> {
    /// To this HTTP server, with its token.
    Http(&'a HttpServer),
    /// To a `serve --stdio` of these directories it starts.
    Stdio(&'a Dirs),
}

/// The Python of the venv with the MCP SDK (`mcp==2.3.0`; .ci/run makes it): `MCP_VENV`,
/// or `target/venv-mcp` in the workspace. A venv, not the system Python: Debian's is
/// "externally managed" (PEP 668) and refuses `pip install`.
pub fn mcp_python() -> PathBuf {
    let venv = std::env::var_os("MCP_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/venv-mcp"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let probe = Command::new(&python).args(["-c", "import mcp"]).output();
    assert!(
        probe.as_ref().is_ok_and(|p| p.status.success()),
        "the MCP SDK venv is missing or broken at {}: python3 -m venv {0} && \
         {0}/bin/pip install 'mcp==2.3.0' (.ci/run does)\n{}",
        venv.display(),
        probe.map_or_else(
            |e| e.to_string(),
            |p| String::from_utf8_lossy(&p.stderr).into_owned()
        )
    );
    python
}

/// The Python client for one scenario, with stdout and stderr piped.
pub fn client(scenario: &str, mode: &str, target: &Target<'_>) -> Command {
    client_with(scenario, mode, target, &[])
}

/// [`client`] with extra client arguments (`--token`, `--call`, …).
pub fn client_with(scenario: &str, mode: &str, target: &Target<'_>, extra: &[&str]) -> Command {
    let mut cmd = Command::new(mcp_python());
    cmd.arg(client_script()).args([scenario, mode]).args(extra);
    match target {
        Target::Http(server) => {
            cmd.args(["--url", &server.url]);
            if let Some(token) = &server.token
                && !extra.contains(&"--token")
            {
                cmd.args(["--token", token]);
            }
        }
        Target::Stdio(dirs) => {
            cmd.arg("--stdio")
                .arg(env!("CARGO_BIN_EXE_hermetic"))
                .args(dirs.global_args())
                .args(["serve", "--stdio"]);
        }
    }
    hermetic_env(&mut cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A running client: its stdout lines (the harness protocol) and stderr (where a stdio
/// server's log goes too).
pub struct Running {
    /// The client process.
    pub child: Child,
    /// Its stdout.
    pub stdout: Lines,
    /// Its stderr.
    pub stderr: Lines,
}

impl Running {
    /// Starts the client `cmd` (from [`client`] or [`client_with`]).
    pub fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd.spawn().unwrap();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let stderr = Lines::collect(child.stderr.take().unwrap(), HANG_GUARD);
        Self {
            child,
            stdout: Lines::collect(stdout, HANG_GUARD),
            stderr,
        }
    }

    /// Waits for a stdout line starting with `prefix`.
    pub fn wait_line(&self, prefix: &str) -> String {
        self.stdout
            .wait_for(|l| l.starts_with(prefix))
            .unwrap_or_else(|| {
                panic!(
                    "the client ended before printing {prefix:?}\nstdout:\n{}\nstderr:\n{}",
                    self.stdout.text(),
                    self.stderr.text()
                )
            })
    }

    /// Waits for a successful exit and returns the report (the last stdout line).
    pub fn report(&mut self) -> Value {
        let status = self.child.wait().unwrap();
        self.stdout.wait_closed();
        let out = self.stdout.text();
        assert!(
            status.success(),
            "client failed ({status})\nstdout:\n{out}\nstderr:\n{}",
            self.stderr.text()
        );
        let last = out.lines().last().unwrap_or_default();
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("report is not JSON ({e}): {last}\n{}", self.stderr.text()))
    }
}

/// Runs `scenario` to its end: the report, and the client (its output).
pub fn run(scenario: &str, mode: &str, target: &Target<'_>) -> (Value, Running) {
    let mut running = Running::spawn(client(scenario, mode, target));
    let report = running.report();
    (report, running)
}

/// Runs the `elicit` scenario in `mode` against `server`, making one terminal call of
/// `command` and answering the approval request with `answer` (client.py `--elicit`)
/// after `extra`'s delay, if any.
pub fn terminal_elicit(
    server: &HttpServer,
    mode: &str,
    command: &str,
    answer: &str,
    extra: &[&str],
) -> Value {
    let call = format!("terminal={}", json!({ "command": command }));
    let mut args = vec!["--call", &call, "--elicit", answer];
    args.extend_from_slice(extra);
    let mut running = Running::spawn(client_with("elicit", mode, &Target::Http(server), &args));
    running.report()
}

// ── Raw requests ─────────────────────────────────────────────────────────────────────

/// One request on a fresh connection, with the server's token unless `headers` carry
/// an `Authorization`. `headers` may override `Host`.
pub fn raw(
    server: &HttpServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut all = headers.to_vec();
    let bearer = server.token.as_ref().map(|t| format!("Bearer {t}"));
    if let Some(bearer) = &bearer
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
    {
        all.push(("Authorization", bearer.as_str()));
    }
    request(
        &server.addr,
        method,
        path,
        &all,
        body.as_bytes(),
        HANG_GUARD,
    )
}

/// A sessionless (2026-07-28) JSON-RPC request to /mcp with a bearer token.
pub fn mcp_raw(
    server: &HttpServer,
    token: Option<&str>,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Reply {
    mcp_raw_as(server, token, method, params, json!({}), extra)
}

/// [`mcp_raw`] from a client that declares `capabilities`.
pub fn mcp_raw_as(
    server: &HttpServer,
    token: Option<&str>,
    method: &str,
    params: Value,
    capabilities: Value,
    extra: &[(&str, &str)],
) -> Reply {
    let params = with_meta(params, "raw", capabilities);
    let mut headers = sessionless_headers(method, &params);
    if let Some(token) = token {
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    headers.extend(extra.iter().map(|(n, v)| (*n, (*v).to_owned())));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    raw(server, "POST", "/mcp", &headers, &message(method, params))
}

// ── Two tenants ──────────────────────────────────────────────────────────────────────

/// Tokens of the two tenants in [`tenants_policy`] (their SHA-256 digests are what
/// the policy holds).
pub const ACME_TOKEN: &str = "hmt_acme_test_token";
/// See [`ACME_TOKEN`].
pub const GLOBEX_TOKEN: &str = "hmt_globex_test_token";

/// A policy file with two tenants: `acme` sees the bundled file tools and may make 2
/// tools/call per minute; `globex` sees the test tools. `extra` is appended.
pub fn tenants_policy(dirs: &Dirs, extra: &str) -> PathBuf {
    let path = dirs.state.path().join("policy.toml");
    let text = format!(
        r#"[mounts.workspace]
path = "{workspace}"
access = "rw"

[tenants.acme]
toolsets = ["file"]
token_sha256 = ["{acme}"]
[tenants.acme.limits]
calls_per_minute = 2

[tenants.globex]
toolsets = ["test"]
token_sha256 = ["{globex}"]
{extra}"#,
        workspace = dirs.workspace.path().display(),
        acme = sha256_hex(ACME_TOKEN),
        globex = sha256_hex(GLOBEX_TOKEN),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Global arguments for a server with the bundled tools, `dirs`' tools and `policy`.
pub fn policy_args(dirs: &Dirs, policy: &Path) -> Vec<String> {
    let mut args: Vec<String> = dirs
        .global_args()
        .into_iter()
        .filter(|a| a != "--no-bundled")
        .collect();
    args.extend(["--policy".to_owned(), policy.display().to_string()]);
    args
}
