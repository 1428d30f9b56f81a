//! What each simple command does: wrappers are unwrapped, carriers have their payload
//! analyzed as code, and the rules of the table are applied to the command that
//! actually runs.

use super::code::language;
use super::fold::{Field, Producer};
use super::limits::MAX_CARRIER_DEPTH;
use super::paths::{self, canonical};
use super::rules::RuleId;
use super::script_run::{ScriptForm, ScriptLang};
use super::walk::{Analyzer, Cx, Invocation, Redirect};
use brush_parser::ast::IoFileRedirectKind;

/// Options that turn a command the rules let through into one they flag (find's
/// actions, rm's recursion, git's force, kill's signals): what a glob in option
/// position could expand to that matters.
const GLOB_OPTIONS: &[&str] = &[
    "-delete",
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "-fprint",
    "-fprint0",
    "-fprintf",
    "-fls",
    "-r",
    "-R",
    "-rf",
    "-fr",
    "-Rf",
    "-fR",
    "--recursive",
    "--no-preserve-root",
    "-f",
    "-d",
    "-D",
    "--force",
    "--force-with-lease",
    "--hard",
    "--merge",
    "--delete",
    "--mirror",
    "--prune",
    "--output",
    "--discard-changes",
    "-9",
    "-KILL",
    "-SIGKILL",
    "-1",
    "-e",
    "-c",
    "-S",
];

fn texts(fields: &[Field]) -> Vec<&str> {
    fields.iter().map(|f| f.text.as_str()).collect()
}

impl Analyzer<'_> {
    /// The rule for code whose text comes from `origin` and cannot be read.
    pub(crate) fn unseen_code_rule(origin: &Producer) -> RuleId {
        match origin {
            Producer::Network => RuleId::RemoteCode,
            Producer::Decoder => RuleId::DecodedCode,
            _ => RuleId::DynamicCode,
        }
    }

    /// Analyzes a carrier's code payload (the text of `sh -c`, `eval`, `ssh host …`).
    pub(crate) fn run_payload(&mut self, payload: &Field, inv: &Invocation<'_>) {
        if payload.dynamic {
            self.hit(Self::unseen_code_rule(&payload.origin), inv.rendered);
            return;
        }
        let file = inv.stdin_file.map(super::walk::unlocated);
        self.analyze_payload(&payload.text, (inv.stdin.clone(), file), inv);
    }

    /// Joins argument fields into one payload (`eval a b`, `ssh host a b`).
    pub(crate) fn joined(fields: &[Field]) -> Field {
        let mut out = Field::literal("");
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.text.push(' ');
            }
            out.text.push_str(&f.text);
            out.dynamic |= f.dynamic;
            if f.origin != Producer::None {
                out.origin = f.origin.clone();
            }
        }
        out
    }

    /// Checks the command a wrapper or multiplier runs.
    pub(crate) fn run_argv(
        &mut self,
        argv: &[Field],
        inv: &Invocation<'_>,
        bulk: bool,
        detached: bool,
    ) -> Producer {
        if argv.is_empty() {
            return Producer::Other;
        }
        if inv.depth >= MAX_CARRIER_DEPTH * 2 {
            self.hit(RuleId::TooLarge, inv.rendered);
            return Producer::Other;
        }
        let nested = inv.nested(argv, bulk, detached);
        self.check_invocation(&nested)
    }

    /// A script operand: code we cannot see unless it came from a substitution.
    pub(crate) fn check_script(&mut self, script: &Field, inv: &Invocation<'_>) {
        if script.dynamic {
            self.hit(Self::unseen_code_rule(&script.origin), inv.rendered);
        } else if self.is_fresh(&canonical(&script.text)) {
            self.hit(RuleId::FreshFile, inv.rendered);
        }
    }

    /// Checks one write to `target`. `truncates`: the file is replaced, not appended to.
    pub(crate) fn check_write(&mut self, target: &Field, truncates: bool, rendered: &str) {
        let path = canonical(&target.text);
        if matches!(
            path.as_ref(),
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
        ) || path.starts_with("/dev/fd/")
        {
            return;
        }
        if paths::is_dev_net(&path) {
            self.hit(RuleId::ReverseShell, rendered);
        } else if paths::is_block_device(&path) {
            self.hit(RuleId::DeviceWrite, rendered);
        } else if paths::is_kernel_knob(&path) {
            self.hit(RuleId::KernelWrite, rendered);
        } else if paths::is_other_process(&path) {
            self.hit(RuleId::ProcessWrite, rendered);
        } else if paths::is_protected(&path, &self.own.agent_dirs) {
            self.hit(RuleId::ProtectedWrite, rendered);
        } else if truncates && paths::is_config_file(&path) {
            self.hit(RuleId::ConfigOverwrite, rendered);
        }
        let path = path.into_owned();
        self.mark_fresh(&path);
    }

    /// Checks the file redirections of a command.
    pub(crate) fn check_redirects(&mut self, redirects: &[Redirect], rendered: &str) {
        for r in redirects {
            self.check_host_redirect(&r.target, rendered);
            match r.kind {
                IoFileRedirectKind::Write | IoFileRedirectKind::Clobber => {
                    self.check_write(&r.target, true, rendered);
                }
                IoFileRedirectKind::Append | IoFileRedirectKind::ReadAndWrite => {
                    self.check_write(&r.target, false, rendered);
                }
                IoFileRedirectKind::Read if paths::is_dev_net(&canonical(&r.target.text)) => {
                    self.hit(RuleId::ReverseShell, rendered);
                }
                _ => {}
            }
        }
    }

    /// Checks a variable assignment (`NAME=value cmd`, `export NAME=value`).
    pub(crate) fn check_assignment(&mut self, name: &str, value: &Field, rendered: &str, cx: &Cx) {
        match name {
            // Variables whose value is a command that some program runs later.
            "PROMPT_COMMAND"
            | "PAGER"
            | "GIT_PAGER"
            | "MANPAGER"
            | "GIT_EXTERNAL_DIFF"
            | "GIT_SSH_COMMAND"
            | "GIT_SSH"
            | "GIT_EDITOR"
            | "EDITOR"
            | "VISUAL"
            | "LESSOPEN"
            | "LESSCLOSE"
            | "GIT_ASKPASS"
            | "SSH_ASKPASS"
            | "SUDO_ASKPASS"
            | "BROWSER"
            | "FCEDIT"
            | "GIT_SEQUENCE_EDITOR"
            | "PS0"
            | "PS1"
            | "PS2"
            | "PS4" => {
                if value.dynamic {
                    self.hit(Self::unseen_code_rule(&value.origin), rendered);
                } else {
                    let inner = Cx {
                        depth: cx.depth + 1,
                        stdin: Producer::None,
                        bulk: false,
                        function: None,
                        stdin_file: None,
                    };
                    // Prompts hold text with substitutions; the others hold a command.
                    if name.starts_with("PS") {
                        self.fold_word(
                            &format!("\"{}\"", value.text.replace('"', "\\\"")),
                            false,
                            &inner,
                        );
                    } else {
                        self.analyze_code(&value.text, &inner);
                    }
                }
            }
            // Variables that make every later program load or source attacker code,
            // whatever their value: a file or options it loads (`BASH_ENV`, an `-r`
            // in `RUBYOPT`, `PYTHONSTARTUP`), the configuration git runs pagers and
            // hooks from, the directory programs read their rc files from (`HOME`: a
            // `.bashrc`, Python's user site with `usercustomize`, `.gitconfig`).
            "BASH_ENV"
            | "ENV"
            | "LD_PRELOAD"
            | "LD_AUDIT"
            | "DYLD_INSERT_LIBRARIES"
            | "DYLD_LIBRARY_PATH"
            | "PERL5OPT"
            | "RUBYOPT"
            | "PYTHONSTARTUP"
            | "PYTHONHOME"
            | "PYTHONUSERBASE"
            | "PYTHONEXECUTABLE"
            | "LUA_INIT"
            | "LUA_INIT_5_1"
            | "LUA_INIT_5_2"
            | "LUA_INIT_5_3"
            | "LUA_INIT_5_4"
            | "JAVA_TOOL_OPTIONS"
            | "_JAVA_OPTIONS"
            | "JDK_JAVA_OPTIONS"
            | "PHPRC"
            | "PHP_INI_SCAN_DIR"
            | "GIT_CONFIG"
            | "GIT_CONFIG_GLOBAL"
            | "GIT_CONFIG_SYSTEM"
            | "GIT_CONFIG_COUNT"
            | "GIT_CONFIG_PARAMETERS"
            | "GIT_EXEC_PATH"
            | "GIT_TEMPLATE_DIR"
            | "INPUTRC"
            | "XDG_CONFIG_HOME"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "ZDOTDIR" => {
                self.hit(RuleId::Hijack, rendered);
            }
            // `git -c` through the environment (`GIT_CONFIG_KEY_0=core.pager`).
            _ if name.starts_with("GIT_CONFIG_KEY_") || name.starts_with("GIT_CONFIG_VALUE_") => {
                self.hit(RuleId::Hijack, rendered);
            }
            // The home itself (`HOME=$HOME`, `HOME=~`) changes nothing.
            "HOME" if value.dynamic || value.text != "~" => {
                self.hit(RuleId::Hijack, rendered);
            }
            "NODE_OPTIONS" if !node_options_are_inert(&value.text) || value.dynamic => {
                self.hit(RuleId::Hijack, rendered);
            }
            // Where programs are found: a writable directory there (the working
            // directory, relative, temporary) puts a file of the session in the
            // place of a program, or of a name that would otherwise not be found.
            "PATH" | "LD_LIBRARY_PATH" | "GCONV_PATH"
                if value
                    .text
                    .split(':')
                    .any(|e| self.is_writable_entry(e, true)) =>
            {
                self.hit(RuleId::Hijack, rendered);
            }
            // Where modules are found (`sitecustomize`, a module named like a
            // standard one): a module of the working directory.
            "PYTHONPATH" | "NODE_PATH" | "PERL5LIB" | "PERLLIB" | "RUBYLIB" | "LUA_PATH"
            | "LUA_CPATH"
                if value
                    .text
                    .split([':', ';'])
                    .any(|e| self.is_writable_entry(e, false)) =>
            {
                self.hit(RuleId::Hijack, rendered);
            }
            _ => {}
        }
    }

    /// True when the search-path entry `entry` (folded) names a directory of the
    /// session's own: empty or relative (the working directory), `$PWD`, `~+`, a
    /// command substitution (`$(pwd)`), inside the working directory the command
    /// starts in, or (`temporary`) a temporary directory anyone can write.
    pub(crate) fn is_writable_entry(&self, entry: &str, temporary: bool) -> bool {
        if matches!(entry, "$PATH" | "$LD_LIBRARY_PATH" | "$GCONV_PATH")
            || entry.starts_with("$PYTHONPATH")
        {
            return false;
        }
        let own = ["$PWD", "${PWD}", "$OLDPWD", "~+", "~-", "$(", "`"]
            .iter()
            .any(|p| entry.starts_with(p));
        let relative = !entry.starts_with(['/', '~', '$']);
        let temporary = temporary
            && ["/tmp", "/var/tmp", "/dev/shm"]
                .iter()
                .any(|t| entry == *t || entry.strip_prefix(t).is_some_and(|r| r.starts_with('/')));
        let cwd = self.cwd();
        let inside = cwd.starts_with('/')
            && cwd.len() > 1
            && entry
                .strip_prefix(cwd)
                .is_some_and(|r| r.is_empty() || r.starts_with('/'));
        own || relative || temporary || inside
    }

    /// Checks one simple command and returns what its output is made of.
    pub(crate) fn check_invocation(&mut self, inv: &Invocation<'_>) -> Producer {
        let Some(first) = inv.argv.first() else {
            return Producer::None;
        };
        self.check_host_paths(inv);
        if inv.argv[1..].iter().any(|a| a.glob) {
            self.check_glob_options(inv);
        }
        let r = inv.rendered;
        if first.dynamic {
            let rule = match first.origin {
                Producer::Network | Producer::Decoder => Self::unseen_code_rule(&first.origin),
                _ => RuleId::DynamicCommand,
            };
            self.hit(rule, r);
        }
        if !first.text.is_ascii()
            || first
                .text
                .contains(|c: char| c.is_whitespace() || c.is_control())
        {
            self.hit(RuleId::LookalikeChars, r);
        }
        let path = first.text.as_str();
        let name = path.rsplit('/').next().unwrap_or(path);
        let name = name.strip_suffix(".exe").unwrap_or(name);
        let args = &inv.argv[1..];
        if inv.function == Some(name) && (inv.piped || inv.background) {
            self.hit(RuleId::ForkBomb, r);
        }
        if path.contains('/') && self.is_fresh(&canonical(path)) {
            self.hit(RuleId::FreshFile, r);
        }
        if path.contains('/') {
            // Run by its path: its `#!` line says what reads it (the host reads it).
            self.note_script(first, ScriptLang::Shebang, ScriptForm::Path, true);
            self.check_own_program_script(path, name, args, inv);
        }
        self.check_self(name, args, inv);
        self.check_renamed_interpreter(name, args, inv);
        if self.stdin_functions.iter().any(|f| f == name) {
            // A function of this input whose body runs its stdin as code: what it is
            // fed runs (`f() { sh; }; f < x.sh`), read where it is not named.
            if let (Producer::None, Some(file)) = (inv.stdin, inv.stdin_file) {
                let file = super::walk::unlocated(file);
                self.note_script(
                    &file,
                    ScriptLang::Shell { bash: true },
                    ScriptForm::Stdin,
                    false,
                );
            }
            self.check_stdin_code(None, inv);
        }
        self.invocations += 1;
        let before = self.invocations;
        if let Some(p) = self.check_wrapper(name, args, inv) {
            self.note_wrapper_stdin(name, self.invocations == before, inv);
            return p;
        }
        self.check_command(name, args, inv);
        self.note_stdin(name, args, inv);
        self.producer_of(name, args, inv)
    }

    /// An unquoted glob argument becomes the names of matching files, and a file may be
    /// named like an option (`touch ./-delete; find . -del*`). Each option that could
    /// change the verdict and that the glob matches is checked in the glob's place.
    fn check_glob_options(&mut self, inv: &Invocation<'_>) {
        let plain: Vec<Field> = inv
            .argv
            .iter()
            .map(|a| Field {
                glob: false,
                ..a.clone()
            })
            .collect();
        // Files this input created with option-like names (`touch ./-delete`): any
        // glob may expand to them. Otherwise only a glob in option position (`-del*`)
        // is read as the options it matches; `*` matching a file named `-rf` that
        // nobody made is not worth flagging every `ls *`.
        let mut planted: Vec<String> = Vec::new();
        for name in self
            .fresh_files
            .iter()
            .chain(self.prior_fresh)
            .filter_map(|f| f.rsplit('/').next())
            .filter(|n| n.starts_with('-'))
        {
            if planted.len() == super::limits::MAX_GLOB_ARGS {
                break;
            }
            if !planted.iter().any(|p| p == name) {
                planted.push(name.to_owned());
            }
        }
        let globs = inv.argv.iter().enumerate().skip(1).filter(|(_, a)| a.glob);
        for (i, arg) in globs.take(super::limits::MAX_GLOB_ARGS) {
            let options = GLOB_OPTIONS
                .iter()
                .filter(|_| arg.text.starts_with('-'))
                .copied()
                .chain(planted.iter().map(String::as_str));
            for option in options.filter(|o| super::fold::glob_matches(&arg.text, o)) {
                let mut argv = plain.clone();
                argv[i] = Field::literal(option);
                self.check_invocation(&inv.nested(&argv, false, false));
            }
        }
    }

    /// Self-protection: the agent host stopping, killing or replacing itself.
    fn check_self(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        // Case-insensitive substring test without allocating (the names are lowercase
        // ASCII; this runs for every simple command).
        let contains_any = |s: &str, names: &[String]| {
            let bytes = s.as_bytes();
            names.iter().any(|n| {
                let n = n.as_bytes();
                !n.is_empty() && bytes.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
            })
        };
        let is_self = |s: &str| contains_any(s, &self.own.self_names);
        let is_own_process = |s: &str| contains_any(s, &self.own.process_names);
        let module = args
            .iter()
            .position(|a| a.text == "-m")
            .and_then(|i| args.get(i + 1))
            .is_some_and(|m| language(name).is_some() && is_self(&m.text));
        if !(is_self(name) || module) {
            match name {
                "launchctl" => {
                    let verb = args.first().map(|a| a.text.as_str()).unwrap_or("");
                    if matches!(
                        verb,
                        "stop" | "unload" | "remove" | "bootout" | "kill" | "disable" | "kickstart"
                    ) && args.iter().skip(1).any(|a| is_self(&a.text))
                    {
                        self.hit(RuleId::SelfLifecycle, inv.rendered);
                    }
                }
                "pkill" | "killall" | "kill"
                    if args
                        .iter()
                        .any(|a| !a.text.starts_with('-') && is_own_process(&a.text)) =>
                {
                    self.hit(RuleId::SelfLifecycle, inv.rendered);
                }
                "systemctl" | "service"
                    if args
                        .iter()
                        .any(|a| !a.text.starts_with('-') && is_self(&a.text)) =>
                {
                    self.hit(RuleId::SelfLifecycle, inv.rendered);
                }
                _ => {}
            }
            return;
        }
        let words = texts(args);
        // `update` replaces the running host (Hermes restarts its gateway); a gateway
        // started in the background or detached (`&`, nohup, setsid) runs outside its
        // service manager, beside or instead of the one serving the agents.
        let starts_gateway =
            words.contains(&"--replace") || words.windows(2).any(|w| w == ["gateway", "run"]);
        if words.iter().any(|w| {
            matches!(
                *w,
                "stop" | "restart" | "kill" | "uninstall" | "shutdown" | "update"
            )
        }) || (starts_gateway && (inv.background || inv.detached))
        {
            self.hit(RuleId::SelfLifecycle, inv.rendered);
        }
    }

    /// `npx PKG args`: the package's binary runs with the arguments.
    pub(crate) fn run_package(&mut self, rest: &[Field], inv: &Invocation<'_>) -> Producer {
        let Some((pkg, tail)) = rest.split_first() else {
            return Producer::Other;
        };
        let bare = match pkg.text.strip_prefix('@') {
            Some(scoped) => scoped
                .split_once('@')
                .map_or(pkg.text.as_str(), |(n, _)| &pkg.text[..n.len() + 1]),
            None => pkg.text.split('@').next().unwrap_or(&pkg.text),
        };
        let mut argv = vec![Field {
            text: bare.to_owned(),
            span: None,
            ..pkg.clone()
        }];
        argv.extend(tail.iter().cloned());
        self.run_argv(&argv, inv, false, false)
    }

    pub(crate) fn check_find(&mut self, args: &[Field], inv: &Invocation<'_>) {
        // Tests that take an argument: their argument is data even if it looks like an
        // action (`find . -name -delete`).
        const WITH_ARG: &[&str] = &[
            "-name",
            "-iname",
            "-path",
            "-ipath",
            "-wholename",
            "-iwholename",
            "-regex",
            "-iregex",
            "-type",
            "-xtype",
            "-user",
            "-group",
            "-uid",
            "-gid",
            "-perm",
            "-size",
            "-mtime",
            "-mmin",
            "-atime",
            "-amin",
            "-ctime",
            "-cmin",
            "-newer",
            "-anewer",
            "-cnewer",
            "-maxdepth",
            "-mindepth",
            "-links",
            "-inum",
            "-samefile",
            "-lname",
            "-ilname",
            "-printf",
            "-fstype",
            "-used",
            "-context",
            "-regextype",
            "-files0-from",
        ];
        let mut i = 0;
        while i < args.len() {
            let a = args[i].text.as_str();
            if WITH_ARG.contains(&a) || a.starts_with("-newer") {
                i += 2;
                continue;
            }
            match a {
                "-delete" => self.hit(RuleId::BulkDelete, inv.rendered),
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let rest = &args[i + 1..];
                    let end = rest
                        .iter()
                        .position(|f| f.text == ";" || f.text == "+")
                        .unwrap_or(rest.len());
                    self.run_argv(&rest[..end], inv, true, false);
                    i += end + 2;
                    continue;
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    self.hit(RuleId::FindWrite, inv.rendered);
                    if let Some(target) = args.get(i + 1) {
                        self.check_write(target, true, inv.rendered);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    pub(crate) fn check_container(
        &mut self,
        args: &[Field],
        inv: &Invocation<'_>,
    ) -> Option<Producer> {
        let r = inv.rendered;
        let mut i = 0;
        // Global options before the subcommand.
        while i < args.len() && args[i].text.starts_with('-') {
            let takes = matches!(
                args[i].text.as_str(),
                "--context"
                    | "-c"
                    | "-H"
                    | "--host"
                    | "--config"
                    | "-l"
                    | "--log-level"
                    | "--url"
                    | "--connection"
            );
            i += if takes { 2 } else { 1 };
        }
        let sub = args.get(i).map(|a| a.text.as_str()).unwrap_or("");
        let rest = args.get(i + 1..).unwrap_or(&[]);
        let words = texts(rest);
        let destructive = match sub {
            "stop" | "kill" | "rm" => true,
            "rmi" => words.iter().any(|w| *w == "-f" || *w == "--force"),
            "system" | "volume" | "network" | "container" | "image" | "builder" | "buildx"
            | "pod" => words
                .first()
                .is_some_and(|w| matches!(*w, "prune" | "rm" | "stop" | "kill" | "remove")),
            "compose" => words
                .iter()
                .find(|w| !w.starts_with('-'))
                .is_some_and(|w| matches!(*w, "down" | "kill" | "stop" | "rm")),
            "exec" => {
                let k = options_end(rest, EXEC_VALUES);
                let command = rest.get(k + 1..).unwrap_or(&[]);
                return Some(self.run_argv(command, inv, false, false));
            }
            "run" | "create" => {
                let k = options_end(rest, RUN_VALUES);
                let command = rest.get(k + 1..).unwrap_or(&[]);
                if !command.is_empty() {
                    return Some(self.run_argv(command, inv, false, false));
                }
                false
            }
            _ => false,
        };
        if destructive {
            self.hit(RuleId::ContainerDestructive, r);
        }
        Some(Producer::Other)
    }
}

/// True when `NODE_OPTIONS` holds only options that load no code (heap sizes,
/// warnings, source maps): every other one (`--require`, `--import`, `--loader`,
/// `--inspect`'s debugger port, `--env-file`…) runs or lets in code the gate never sees.
fn node_options_are_inert(text: &str) -> bool {
    const INERT: &[&str] = &[
        "--max-old-space-size",
        "--max-semi-space-size",
        "--stack-size",
        "--stack-trace-limit",
        "--max-http-header-size",
        "--enable-source-maps",
        "--no-warnings",
        "--no-deprecation",
        "--trace-warnings",
        "--trace-deprecation",
        "--trace-uncaught",
        "--throw-deprecation",
        "--pending-deprecation",
        "--unhandled-rejections",
        "--openssl-legacy-provider",
        "--use-openssl-ca",
        "--use-bundled-ca",
        "--dns-result-order",
        "--experimental-vm-modules",
        "--no-experimental-fetch",
        "--expose-gc",
        "--preserve-symlinks",
        "--title",
        "--tls-min-v1.2",
        "--report-on-fatalerror",
    ];
    text.split_whitespace().all(|o| {
        let name = o.split_once('=').map_or(o, |(n, _)| n);
        INERT.contains(&name)
    })
}

/// Index of the first operand of `args`, given the options that take a value.
fn options_end(args: &[Field], values: &[&str]) -> usize {
    let mut k = 0;
    while k < args.len() && args[k].text.starts_with('-') {
        k += if values.contains(&args[k].text.as_str()) {
            2
        } else {
            1
        };
    }
    k
}

/// `docker exec` options that take a value (the container and command follow).
const EXEC_VALUES: &[&str] = &[
    "-e",
    "--env",
    "-u",
    "--user",
    "-w",
    "--workdir",
    "--env-file",
    "--detach-keys",
];

/// `docker run`/`create` options that take a value (the image and command follow).
const RUN_VALUES: &[&str] = &[
    "-v",
    "-p",
    "-e",
    "-w",
    "-u",
    "-m",
    "-l",
    "-h",
    "-a",
    "-c",
    "--name",
    "--network",
    "--net",
    "--entrypoint",
    "--volume",
    "--publish",
    "--env",
    "--workdir",
    "--user",
    "--memory",
    "--label",
    "--hostname",
    "--attach",
    "--cpus",
    "--cpu-shares",
    "--mount",
    "--env-file",
    "--add-host",
    "--device",
    "--cap-add",
    "--cap-drop",
    "--security-opt",
    "--restart",
    "--log-driver",
    "--log-opt",
    "--tmpfs",
    "--ulimit",
    "--volumes-from",
    "--ip",
    "--dns",
    "--platform",
    "--pull",
    "--gpus",
    "--shm-size",
    "--pid",
    "--ipc",
    "--uts",
    "--userns",
    "--runtime",
    "--health-cmd",
    "--link",
    "--expose",
    "--group-add",
    "--cidfile",
    "--stop-signal",
    "--stop-timeout",
    "--label-file",
    "--init-path",
];
