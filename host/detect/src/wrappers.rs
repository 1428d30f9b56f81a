//! Wrappers and argv carriers as data: for each, its names, the shape of its options,
//! where the command it runs starts, which of its options run nothing, carry shell code
//! or are dangerous by themselves. One small interpreter (`unwrap_with`) reads the
//! table; the few programs whose argv is not getopt-shaped (find, docker, ssh, eval…)
//! have a handler function each, named in the same table.

use super::fold::{Field, Producer};
use super::opts::{self, Spec};
use super::rules::RuleId;
use super::script_run::{ScriptForm, ScriptLang};
use super::walk::Invocation;
use super::walk::{Analyzer, Cx};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

/// FNV-1a: the name tables are looked up for every simple command with short keys
/// that are ours, not an attacker's choice of keys to collide (a collision costs a
/// string compare, nothing more), so SipHash's flood resistance buys nothing here.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// A table keyed by command name.
pub(crate) type NameMap<V> = HashMap<&'static str, V, BuildHasherDefault<Fnv>>;

/// An option by its short letter (`'\0'`: none) and long name (`""`: none).
pub(crate) type Opt = (char, &'static str);

/// True when `o` holds the option `opt` in either spelling.
fn has(o: &opts::Opts<'_>, (short, long): Opt) -> bool {
    (short != '\0' && o.short(short)) || (!long.is_empty() && o.long(long))
}

/// The value of `opt` in `o`, in either spelling.
fn value<'o>(o: &'o opts::Opts<'_>, (short, long): Opt) -> Option<&'o str> {
    o.value(short, long)
        .filter(|_| short != '\0' || !long.is_empty())
}

/// A handler for a program whose argv is read by hand (not getopt-shaped).
type Handler = fn(&mut Analyzer<'_>, &str, &[Field], &Invocation<'_>) -> Option<Producer>;

/// A handler for what a wrapper runs, given its parsed options and its operands after
/// the first `skip`.
type Then = fn(&mut Analyzer<'_>, &opts::Opts<'_>, &[Field], &Invocation<'_>) -> Producer;

/// What the wrapper runs once its options are read.
pub(crate) enum Runs {
    /// The operands after the first `skip` are the command, as argv.
    Argv,
    /// As argv with this option; without it the operands are one shell command line
    /// (`watch 'a | b'` vs `watch -x a b`, `wsl cmd` vs `wsl -e cmd`).
    ArgvWith(Opt),
    /// The first operand is a package whose binary runs with the rest (`npx pkg`).
    Package,
    /// Nothing but the code of its code option (`script -c CODE`).
    Nothing,
    /// Read by its own function once the options are parsed.
    Then(Then),
    /// Read by its own function (the options are not parsed first).
    Custom(Handler),
}

/// One wrapper or argv carrier.
pub(crate) struct Wrapper {
    /// The names it is called by.
    pub names: &'static [&'static str],
    /// Its options: which take a value, and (with `stop_at_operand`) whether the
    /// first operand starts the wrapped command. A wrong guess about a value would
    /// make a value the command, or the command a value.
    pub opts: Spec,
    /// Operands the wrapper takes before the command (`timeout DURATION cmd`).
    pub skip: usize,
    /// Options with which it runs no command (`ionice -p PID`, `command -v`).
    pub inert: &'static [Opt],
    /// What it prints when it runs no command.
    pub inert_output: Output,
    /// An option whose value is shell code it runs (`flock -c`, `npx -c`).
    pub code: Opt,
    /// Options dangerous by themselves, and the rule they break.
    pub dangerous: &'static [(Opt, RuleId)],
    /// The command runs detached from the session (`nohup`, `systemd-run`).
    pub detached: bool,
    /// What it runs.
    pub runs: Runs,
}

/// What a wrapper that runs no command prints (a const stand-in for a [`Producer`]).
#[derive(Clone, Copy)]
pub(crate) enum Output {
    /// Nothing that matters (`ionice -p`: a status line at most).
    Nothing,
    /// Some text not known here (`command -v` prints a path).
    Unknown,
}

impl Output {
    fn producer(self) -> Producer {
        match self {
            Output::Nothing => Producer::None,
            Output::Unknown => Producer::Other,
        }
    }
}

const NONE: Opt = ('\0', "");

/// A wrapper whose operands are the command: `names`, `short_values` and `longs`.
const fn argv(
    names: &'static [&'static str],
    short_values: &'static str,
    longs: &'static [&'static str],
) -> Wrapper {
    Wrapper {
        names,
        opts: Spec {
            short_values,
            longs,
            stop_at_operand: true,
        },
        skip: 0,
        inert: &[],
        inert_output: Output::Nothing,
        code: NONE,
        dangerous: &[],
        detached: false,
        runs: Runs::Argv,
    }
}

/// A program read by its own `handler`.
const fn custom(names: &'static [&'static str], handler: Handler) -> Wrapper {
    Wrapper {
        runs: Runs::Custom(handler),
        ..argv(names, "", &[])
    }
}

/// The table. Short options that take a value are from each tool's manual.
pub(crate) static WRAPPERS: &[Wrapper] = &[
    Wrapper {
        dangerous: &[
            // A password read from stdin or an askpass program: the agent supplies
            // the credential the prompt is there to ask a human for.
            (('S', "stdin"), RuleId::SudoPassword),
            (('A', "askpass"), RuleId::SudoPassword),
        ],
        runs: Runs::Then(sudo),
        ..argv(
            &["sudo"],
            "ugpCDrtTU",
            &[
                "askpass",
                "background",
                "bell",
                "close-from=",
                "chdir=",
                "preserve-env",
                "edit",
                "group=",
                "set-home",
                "help",
                "host=",
                "login",
                "remove-timestamp",
                "reset-timestamp",
                "list",
                "non-interactive",
                "preserve-groups",
                "prompt=",
                "chroot=",
                "role=",
                "stdin",
                "shell",
                "type=",
                "command-timeout=",
                "other-user=",
                "user=",
                "validate",
                "version",
            ],
        )
    },
    argv(&["doas"], "uC", &[]),
    Wrapper {
        runs: Runs::Then(env),
        ..argv(
            &["env"],
            "uCSa",
            &[
                "ignore-environment",
                "null",
                "unset=",
                "chdir=",
                "split-string=",
                "argv0=",
                "block-signal",
                "default-signal",
                "ignore-signal",
                "list-signal-handling",
                "debug",
            ],
        )
    },
    argv(&["nice"], "n", &["adjustment="]),
    Wrapper {
        inert: &[('p', "pid"), ('P', "pgid"), ('u', "uid")],
        ..argv(
            &["ionice"],
            "cnPpu",
            &["class=", "classdata=", "pid", "pgid", "uid", "ignore"],
        )
    },
    Wrapper {
        skip: 1,
        ..argv(
            &["timeout"],
            "sk",
            &[
                "signal=",
                "kill-after=",
                "preserve-status",
                "foreground",
                "verbose",
            ],
        )
    },
    Wrapper {
        detached: true,
        ..argv(&["nohup", "setsid", "disown"], "", &[])
    },
    argv(&["stdbuf"], "ioe", &["input=", "output=", "error="]),
    argv(&["time"], "fo", &["format=", "output="]),
    Wrapper {
        inert: &[('v', ""), ('V', "")],
        inert_output: Output::Unknown,
        ..argv(&["command"], "", &[])
    },
    custom(&["builtin", "busybox", "toybox"], all_args),
    argv(&["exec"], "a", &[]),
    Wrapper {
        runs: Runs::ArgvWith(('e', "exec")),
        ..argv(
            &["wsl"],
            "du",
            &[
                "distribution=",
                "user=",
                "cd=",
                "shell-type=",
                "exec",
                "system",
            ],
        )
    },
    argv(
        &[
            "nocache",
            "catchsegv",
            "dbus-run-session",
            "torsocks",
            "tsocks",
            "firejail",
            "chronic",
            "unbuffer",
            "rlwrap",
            "eatmydata",
        ],
        "",
        &[],
    ),
    argv(&["fakeroot"], "lsib", &[]),
    argv(
        &["unshare"],
        "SGRw",
        &[
            "mount",
            "uts",
            "ipc",
            "net",
            "pid",
            "user",
            "cgroup",
            "time",
            "fork",
            "kill-child",
            "mount-proc",
            "map-user=",
            "map-group=",
            "map-users=",
            "map-groups=",
            "map-auto",
            "map-root-user",
            "map-current-user",
            "propagation=",
            "setgroups=",
            "keep-caps",
            "setuid=",
            "setgid=",
            "root=",
            "wd=",
            "monotonic=",
            "boottime=",
            "load-interp=",
        ],
    ),
    Wrapper {
        detached: true,
        // A timer runs the command later, outside the session: a scheduled job.
        dangerous: &[
            (('\0', "on-active"), RuleId::Persistence),
            (('\0', "on-boot"), RuleId::Persistence),
            (('\0', "on-startup"), RuleId::Persistence),
            (('\0', "on-unit-active"), RuleId::Persistence),
            (('\0', "on-unit-inactive"), RuleId::Persistence),
            (('\0', "on-calendar"), RuleId::Persistence),
            (('\0', "on-clock-change"), RuleId::Persistence),
            (('\0', "on-timezone-change"), RuleId::Persistence),
            (('\0', "path-property"), RuleId::Persistence),
            (('\0', "socket-property"), RuleId::Persistence),
            (('\0', "timer-property"), RuleId::Persistence),
        ],
        ..argv(
            &["systemd-run"],
            "puEMH",
            &[
                "property=",
                "unit=",
                "setenv=",
                "machine=",
                "host=",
                "description=",
                "slice=",
                "uid=",
                "gid=",
                "nice=",
                "working-directory=",
                "service-type=",
                "on-active=",
                "on-boot=",
                "on-startup=",
                "on-unit-active=",
                "on-unit-inactive=",
                "on-calendar=",
                "on-clock-change",
                "on-timezone-change",
                "path-property=",
                "socket-property=",
                "timer-property=",
                "expand-environment=",
                "user",
                "system",
                "scope",
                "pty",
                "pipe",
                "quiet",
                "wait",
                "collect",
                "same-dir",
                "shell",
                "remain-after-exit",
                "send-sighup",
                "no-block",
                "no-ask-password",
                "slice-inherit",
                "json=",
            ],
        )
    },
    argv(&["numactl"], "NCmip", &[]),
    argv(&["xvfb-run"], "nsfepw", &[]),
    argv(&["cgexec"], "g", &[]),
    argv(&["proxychains", "proxychains4"], "f", &[]),
    argv(&["sem"], "j", &[]),
    argv(&["pkexec"], "", &["user="]),
    argv(&["strace", "ltrace"], "oeEpsuaObPIXS", &[]),
    Wrapper {
        skip: 1,
        inert: &[('p', "pid")],
        ..argv(&["taskset"], "", &["cpu-list", "pid", "all-tasks"])
    },
    Wrapper {
        skip: 1,
        inert: &[('p', "")],
        ..argv(
            &["chrt"],
            "TPD",
            &[
                "sched-runtime=",
                "sched-period=",
                "sched-deadline=",
                "all-tasks",
                "batch",
                "deadline",
                "fifo",
                "idle",
                "other",
                "rr",
                "reset-on-fork",
                "max",
                "pid",
                "verbose",
            ],
        )
    },
    Wrapper {
        skip: 1,
        ..argv(&["chroot"], "", &["userspec=", "groups=", "skip-chdir"])
    },
    Wrapper {
        code: ('c', "command"),
        skip: 1,
        runs: Runs::Then(flock),
        ..argv(
            &["flock"],
            "wEc",
            &["command=", "timeout=", "conflict-exit-code="],
        )
    },
    // Run a command under limits, in other namespaces, with other credentials or
    // capabilities, under a debugger or an agent: the command runs as if typed.
    Wrapper {
        inert: &[('p', "pid")],
        ..argv(
            &["prlimit"],
            "po",
            &["pid=", "output=", "noheadings", "raw", "verbose"],
        )
    },
    argv(
        &["nsenter"],
        "tSGW",
        &[
            "target=",
            "setuid=",
            "setgid=",
            "wdns=",
            "all",
            "mount",
            "uts",
            "ipc",
            "net",
            "pid",
            "cgroup",
            "user",
            "time",
            "root",
            "wd",
            "env",
            "preserve-credentials",
            "no-fork",
            "follow-context",
            "user-parent",
            "keep-caps",
            "join-cgroup",
        ],
    ),
    Wrapper {
        inert: &[('d', "dump"), ('\0', "list-caps")],
        ..argv(
            &["setpriv"],
            "",
            &[
                "reuid=",
                "regid=",
                "ruid=",
                "euid=",
                "rgid=",
                "egid=",
                "groups=",
                "inh-caps=",
                "ambient-caps=",
                "bounding-set=",
                "securebits=",
                "pdeathsig=",
                "selinux-label=",
                "apparmor-profile=",
                "landlock-access=",
                "landlock-rule=",
                "seccomp-filter=",
                "clear-groups",
                "keep-groups",
                "init-groups",
                "reset-env",
                "nnp",
                "no-new-privs",
                "dump",
                "list-caps",
            ],
        )
    },
    Wrapper {
        runs: Runs::Then(setarch),
        ..argv(
            &["setarch", "linux32", "linux64", "i386", "x86_64"],
            "",
            &["list", "uname-2.6", "verbose", "3gb", "4gb"],
        )
    },
    custom(&["capsh"], capsh),
    argv(&["valgrind"], "", &[]),
    custom(&["gdb", "lldb"], debugger),
    Wrapper {
        inert: &[('k', ""), ('D', ""), ('d', "")],
        ..argv(&["ssh-agent"], "aEOPt", &[])
    },
    argv(&["tini"], "ep", &[]),
    argv(
        &["dumb-init"],
        "r",
        &["rewrite=", "single-child", "setsid", "verbose"],
    ),
    Wrapper {
        skip: 1,
        ..argv(&["gosu", "su-exec"], "", &[])
    },
    argv(&["chpst"], "uUbe/nlLmdopfc", &[]),
    Wrapper {
        inert: &[('p', "pid"), ('e', "exe")],
        ..argv(
            &["cpulimit"],
            "lpec",
            &[
                "limit=",
                "pid=",
                "exe=",
                "path=",
                "cpu=",
                "lazy",
                "include-children",
                "verbose",
                "background",
                "kill",
                "quiet",
                "monitor-forks",
            ],
        )
    },
    argv(&["trickle"], "duwtln", &[]),
    Wrapper {
        skip: 1,
        ..argv(
            &["faketime"],
            "",
            &["exclude-monotonic", "disable-shm", "date-prog="],
        )
    },
    Wrapper {
        runs: Runs::Then(entr),
        ..argv(&["entr"], "", &[])
    },
    Wrapper {
        detached: true,
        ..argv(&["daemonize"], "ceoplu", &[])
    },
    argv(
        &["run0"],
        "ugD",
        &[
            "user=",
            "group=",
            "nice=",
            "chdir=",
            "setenv=",
            "unit=",
            "property=",
            "description=",
            "slice=",
            "machine=",
            "background=",
            "slice-inherit",
            "no-ask-password",
        ],
    ),
    argv(
        &["dbus-launch"],
        "",
        &[
            "autolaunch=",
            "config-file=",
            "binary-syntax",
            "close-stderr",
            "csh-syntax",
            "sh-syntax",
            "exit-with-session",
            "exit-with-x11",
        ],
    ),
    Wrapper {
        inert: &[('p', "pid")],
        ..argv(
            &["heaptrack"],
            "op",
            &["output=", "pid=", "record-only", "analyze"],
        )
    },
    // Option shapes too many to list: every place the command may start is checked.
    custom(&["perf", "rr", "uftrace", "ip"], subcommand_runs),
    custom(
        &[
            "poetry",
            "pipenv",
            "pdm",
            "hatch",
            "rye",
            "uv",
            "conda",
            "mamba",
            "micromamba",
            "pixi",
            "bundle",
        ],
        subcommand_runs,
    ),
    custom(&["su", "runuser"], su),
    custom(&["sg"], sg),
    Wrapper {
        runs: Runs::ArgvWith(('x', "exec")),
        ..argv(
            &["watch"],
            "nq",
            &[
                "interval=",
                "differences",
                "exec",
                "chgexit",
                "errexit",
                "beep",
                "color",
                "no-title",
                "precise",
                "no-wrap",
            ],
        )
    },
    Wrapper {
        opts: Spec {
            short_values: "cOIBTEm",
            longs: &[
                "command=",
                "log-out=",
                "log-in=",
                "log-io=",
                "log-timing=",
                "echo=",
                "logging-format=",
            ],
            stop_at_operand: false,
        },
        code: ('c', "command"),
        inert_output: Output::Unknown,
        runs: Runs::Nothing,
        ..argv(&["script"], "", &[])
    },
    Wrapper {
        runs: Runs::Then(xargs),
        ..argv(
            &["xargs"],
            "adEILnPs",
            &[
                "arg-file=",
                "delimiter=",
                "eof=",
                "replace=",
                "max-lines=",
                "max-args=",
                "max-procs=",
                "max-chars=",
                "process-slot-var=",
                "null",
                "no-run-if-empty",
                "verbose",
                "interactive",
                "exit",
                "show-limits",
                "open-tty",
            ],
        )
    },
    custom(&["find"], find),
    custom(&["fd", "fdfind"], fd),
    custom(&["parallel"], parallel),
    custom(&["rg", "ripgrep"], rg),
    Wrapper {
        code: ('c', "call"),
        runs: Runs::Package,
        ..argv(
            &["npx", "pnpx", "bunx"],
            "pc",
            &[
                "package=",
                "call=",
                "yes",
                "no",
                "quiet",
                "no-install",
                "ignore-existing",
            ],
        )
    },
    custom(&["npm", "pnpm", "yarn"], npm),
    custom(&["docker", "podman", "nerdctl"], container),
    custom(&["kubectl", "oc"], kubectl),
    custom(&["ssh"], ssh),
    custom(&["eval"], eval),
    custom(&["source", "."], source),
    custom(&["alias"], alias),
    custom(&["trap"], trap),
    custom(
        &["export", "declare", "typeset", "local", "readonly"],
        declare,
    ),
];

/// The table by name, built once.
static BY_NAME: LazyLock<NameMap<&'static Wrapper>> = LazyLock::new(|| {
    WRAPPERS
        .iter()
        .flat_map(|w| w.names.iter().map(move |n| (*n, w)))
        .collect()
});

/// The wrapper or argv carrier called `name`, if it is one.
pub(crate) fn wrapper(name: &str) -> Option<&'static Wrapper> {
    BY_NAME.get(name).copied()
}

impl Analyzer<'_> {
    /// Unwraps wrappers (the command they run is checked in their place) and handles
    /// carriers whose payload is argv. Returns `Some(producer)` when handled.
    pub(crate) fn check_wrapper(
        &mut self,
        name: &str,
        args: &[Field],
        inv: &Invocation<'_>,
    ) -> Option<Producer> {
        let spec = wrapper(name)?;
        if let Runs::Custom(handler) = spec.runs {
            return handler(self, name, args, inv);
        }
        Some(self.unwrap_with(spec, args, inv))
    }

    /// Reads `args` with the wrapper's spec and checks what it runs.
    fn unwrap_with(&mut self, spec: &Wrapper, args: &[Field], inv: &Invocation<'_>) -> Producer {
        let o = opts::parse(args, &spec.opts);
        for (opt, rule) in spec.dangerous {
            if has(&o, *opt) {
                self.hit(*rule, inv.rendered);
            }
        }
        if spec.inert.iter().any(|opt| has(&o, *opt)) {
            return spec.inert_output.producer();
        }
        if let Some(code) = value(&o, spec.code) {
            self.run_payload(&Field::literal(code), inv);
            return Producer::Other;
        }
        let rest = o.rest.map(|i| &args[i..]).unwrap_or(&[]);
        let command = rest.get(spec.skip..).unwrap_or(&[]);
        match spec.runs {
            Runs::Argv => self.run_argv(command, inv, false, spec.detached),
            Runs::ArgvWith(opt) if has(&o, opt) => self.run_argv(command, inv, false, false),
            Runs::ArgvWith(_) => {
                if !command.is_empty() {
                    self.run_payload(&Self::joined(command), inv);
                }
                Producer::Other
            }
            Runs::Package => self.run_package(command, inv),
            // `Custom` is dispatched before the options are parsed (`check_wrapper`).
            Runs::Nothing | Runs::Custom(_) => spec.inert_output.producer(),
            Runs::Then(then) => then(self, &o, command, inv),
        }
    }
}

// The handlers. Each gets the program's name and arguments; `None` means "not a
// wrapper after all" (the command is checked by the rules instead).

fn all_args(
    a: &mut Analyzer<'_>,
    _: &str,
    args: &[Field],
    inv: &Invocation<'_>,
) -> Option<Producer> {
    Some(a.run_argv(args, inv, false, false))
}

/// `sudo -e FILE…` edits the files as root: each is a write.
fn sudo(
    a: &mut Analyzer<'_>,
    o: &opts::Opts<'_>,
    rest: &[Field],
    inv: &Invocation<'_>,
) -> Producer {
    if o.has('e', "edit") {
        for f in rest {
            a.check_write(f, false, inv.rendered);
        }
        return Producer::None;
    }
    a.run_argv(rest, inv, false, false)
}

/// `env [NAME=value…] cmd`: the assignments are checked like the shell's; `-S` splits
/// its value into a command line.
fn env(
    a: &mut Analyzer<'_>,
    o: &opts::Opts<'_>,
    mut rest: &[Field],
    inv: &Invocation<'_>,
) -> Producer {
    let cx = Cx {
        depth: inv.depth,
        ..Cx::default()
    };
    while let Some((first, tail)) = rest.split_first() {
        match first.text.split_once('=') {
            Some((n, v)) if is_name(n) => {
                let value = Field {
                    text: v.to_owned(),
                    span: None,
                    ..first.clone()
                };
                a.check_assignment(n, &value, inv.rendered, &cx);
                rest = tail;
            }
            _ => break,
        }
    }
    if let Some(split) = o.value('S', "split-string") {
        let mut payload = Field::literal(split);
        let tail = Analyzer::joined(rest);
        if !tail.text.is_empty() {
            payload.text.push(' ');
            payload.text.push_str(&tail.text);
            payload.dynamic |= tail.dynamic;
        }
        a.run_payload(&payload, inv);
        return Producer::Other;
    }
    a.run_argv(rest, inv, false, false)
}

/// True for a shell variable name.
fn is_name(n: &str) -> bool {
    !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `flock FILE -c CODE` or `flock FILE cmd…` (`flock -c CODE FILE` is the code option).
fn flock(
    a: &mut Analyzer<'_>,
    _: &opts::Opts<'_>,
    rest: &[Field],
    inv: &Invocation<'_>,
) -> Producer {
    match rest.first() {
        Some(f) if f.text == "-c" || f.text == "--command" => {
            if let Some(payload) = rest.get(1) {
                a.run_payload(payload, inv);
            }
            Producer::Other
        }
        _ => a.run_argv(rest, inv, false, false),
    }
}

/// `setarch ARCH [options] cmd…` (`linux32 [options] cmd…`): options may follow the
/// architecture.
fn setarch(
    a: &mut Analyzer<'_>,
    o: &opts::Opts<'_>,
    rest: &[Field],
    inv: &Invocation<'_>,
) -> Producer {
    let command = match inv
        .argv
        .first()
        .map(|f| f.text.rsplit('/').next().unwrap_or(""))
    {
        Some("setarch") if !o.long("list") => rest.get(1..).unwrap_or(&[]),
        _ => rest,
    };
    let spec = Spec {
        short_values: "",
        longs: &["uname-2.6", "verbose", "3gb", "4gb"],
        stop_at_operand: true,
    };
    let again = opts::parse(command, &spec);
    let command = again.rest.map_or(&[][..], |i| &command[i..]);
    a.run_argv(command, inv, false, false)
}

/// `capsh … -- ARGS`: the shell (`/bin/bash`, or `--shell=`) runs with ARGS.
fn capsh(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    let mut shell = Field::literal("/bin/bash");
    for (i, f) in args.iter().enumerate() {
        if let Some(s) = f.text.strip_prefix("--shell=") {
            shell = Field {
                text: s.to_owned(),
                span: None,
                ..f.clone()
            };
        }
        if f.text == "--" || f.text == "==" {
            let mut argv = vec![shell];
            if f.text == "==" {
                argv = vec![Field::literal("capsh")];
            }
            argv.extend(args[i + 1..].iter().cloned());
            return Some(a.run_argv(&argv, inv, false, false));
        }
    }
    Some(Producer::Other)
}

/// `gdb --args cmd…` and `lldb -- cmd…` run the command; `-ex`/`-o` commands run
/// shell (`shell …`, `!…`) or Python (`python …`); `-x`/`-s` read commands from a
/// file, in a language the detector does not read. Without a command it is no
/// wrapper (`None`): a debugger reading its commands from stdin.
fn debugger(
    a: &mut Analyzer<'_>,
    name: &str,
    args: &[Field],
    inv: &Invocation<'_>,
) -> Option<Producer> {
    let (start, commands, files): (&[&str], &[&str], &[&str]) = if name == "gdb" {
        (
            &["--args", "-args"],
            &[
                "-ex",
                "--ex",
                "-eval-command",
                "--eval-command",
                "-iex",
                "--iex",
                "-init-eval-command",
                "--init-eval-command",
            ],
            &[
                "-x",
                "--x",
                "-command",
                "--command",
                "-ix",
                "--ix",
                "-init-command",
                "--init-command",
            ],
        )
    } else {
        (
            &["--"],
            &[
                "-o",
                "--one-line",
                "-O",
                "--one-line-before-file",
                "-k",
                "--one-line-on-crash",
            ],
            &[
                "-s",
                "--source",
                "-S",
                "--source-before-file",
                "-K",
                "--source-on-crash",
            ],
        )
    };
    let mut i = 0;
    while i < args.len() {
        let word = args[i].text.as_str();
        let (option, attached) = match word.split_once('=') {
            Some((o, v)) if o.starts_with('-') => (o, Some(v)),
            _ => (word, None),
        };
        if start.contains(&word) {
            let produced = a.run_argv(&args[i + 1..], inv, false, false);
            // It still reads its own commands from stdin.
            a.note_stdin(name, &[], inv);
            return Some(produced);
        }
        let value = || {
            attached
                .map(|v| Field {
                    text: v.to_owned(),
                    span: None,
                    ..args[i].clone()
                })
                .or_else(|| args.get(i + 1).cloned())
        };
        if commands.contains(&option) {
            if let Some(v) = value() {
                let text = v.text.trim_start();
                let shell = [
                    "shell ",
                    "!",
                    "pipe ",
                    "|",
                    "platform shell ",
                    "platform process launch",
                ]
                .iter()
                .find_map(|p| text.strip_prefix(p));
                if v.dynamic {
                    a.hit(Analyzer::unseen_code_rule(&v.origin), inv.rendered);
                } else if let Some(code) = shell {
                    a.run_payload(&Field::literal(code), inv);
                } else if ["python", "py ", "pi ", "script", "guile", "gu "]
                    .iter()
                    .any(|p| text.starts_with(p))
                {
                    a.hit(RuleId::InterpreterCode, inv.rendered);
                }
            }
        } else if files.contains(&option)
            && let Some(v) = value()
        {
            let unread = ScriptLang::Code {
                lang: super::reader::CodeLang::Unread,
            };
            a.check_script(&v, inv);
            a.note_script(&v, unread, ScriptForm::Operand, false);
        }
        i += if attached.is_none() && (commands.contains(&option) || files.contains(&option)) {
            2
        } else {
            1
        };
    }
    // It runs no command of its own: the rules and its stdin are a debugger's.
    None
}

/// `entr [-s] cmd…`: with `-s` its operands are one shell command line.
fn entr(
    a: &mut Analyzer<'_>,
    o: &opts::Opts<'_>,
    rest: &[Field],
    inv: &Invocation<'_>,
) -> Producer {
    if o.short('s') {
        if !rest.is_empty() {
            a.run_payload(&Analyzer::joined(rest), inv);
        }
        return Producer::Other;
    }
    a.run_argv(rest, inv, true, false)
}

/// Most places a command may start that are checked for a program whose options are
/// not listed (each is checked as a command of its own).
const GUESSES: usize = 3;

/// Programs with a subcommand that runs a command (`perf stat cmd`, `rr record cmd`,
/// `ip netns exec NAME cmd`, `poetry run cmd`, `uv run x.py`, `bundle exec cmd`,
/// `conda run -n env cmd`), whose options are too many to list: the command is
/// checked from each of the first words after the subcommand that is not an option
/// (a value taken for the command is an unknown program, harmless; the command itself
/// is among them). The first is the likeliest: only its words keep their places (a
/// script it runs is pinned there), and a Python file there runs with Python (`uv run
/// x.py`); a script a later guess runs cannot be pinned, so it asks.
fn subcommand_runs(
    a: &mut Analyzer<'_>,
    name: &str,
    args: &[Field],
    inv: &Invocation<'_>,
) -> Option<Producer> {
    let runs = |sub: &str| match name {
        "perf" => matches!(
            sub,
            "stat" | "record" | "trace" | "c2c" | "mem" | "sched" | "lock" | "kvm"
        ),
        "rr" => matches!(sub, "record"),
        "uftrace" => matches!(sub, "record" | "live"),
        "ip" => matches!(sub, "exec"),
        "bundle" => matches!(sub, "exec"),
        "pixi" => matches!(sub, "run" | "exec"),
        "uv" => matches!(sub, "run" | "tool"),
        _ => sub == "run",
    };
    // `ip netns exec NAME cmd`: the subcommand is a later word.
    let at = args
        .iter()
        .position(|f| !f.text.starts_with('-') && runs(&f.text))?;
    let rest = &args[at + 1..];
    let starts = rest
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.text.starts_with('-'))
        .map(|(k, _)| k)
        .take(GUESSES)
        .collect::<Vec<_>>();
    for (n, k) in starts.into_iter().enumerate() {
        let command = &rest[k..];
        if n > 0 {
            let guessed: Vec<Field> = command.iter().map(super::walk::unlocated).collect();
            a.run_argv(&guessed, inv, false, false);
        } else if command[0].text.ends_with(".py") {
            // Not where `python3` stands in the text: not pinned there.
            let mut python = vec![Field::literal("python3")];
            python.extend(command.iter().map(super::walk::unlocated));
            a.run_argv(&python, inv, false, false);
        } else {
            a.run_argv(command, inv, false, false);
        }
    }
    Some(Producer::Other)
}

const SU: Spec = Spec {
    short_values: "cgGsuw",
    longs: &[
        "command=",
        "session-command=",
        "login",
        "group=",
        "supp-group=",
        "shell=",
        "preserve-environment",
        "pty",
        "user=",
    ],
    stop_at_operand: false,
};

/// `su -c CODE`, and `runuser -u USER cmd…` (argv).
fn su(a: &mut Analyzer<'_>, name: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    let o = opts::parse(args, &SU);
    if let Some(c) = o.value('c', "command").or(o.value('\0', "session-command")) {
        a.run_payload(&Field::literal(c), inv);
        return Some(Producer::Other);
    }
    if name == "runuser" && o.value('u', "user").is_some() {
        let ops: Vec<Field> = o.operands.iter().map(|f| (*f).clone()).collect();
        return Some(a.run_argv(&ops, inv, false, false));
    }
    Some(Producer::Other)
}

/// `sg GROUP [-c] CODE`.
fn sg(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    let ops: Vec<&Field> = args.iter().filter(|a| a.text != "-c").collect();
    if let Some((_, rest)) = ops.split_first() {
        let payload: Vec<Field> = rest.iter().map(|f| (*f).clone()).collect();
        a.run_payload(&Analyzer::joined(&payload), inv);
    }
    Some(Producer::Other)
}

/// `xargs cmd…` runs the command once per batch of its input lines.
fn xargs(
    a: &mut Analyzer<'_>,
    _: &opts::Opts<'_>,
    rest: &[Field],
    inv: &Invocation<'_>,
) -> Producer {
    if rest.is_empty() {
        return Producer::Other;
    }
    // The words xargs reads are arguments of the command: unless its input is known
    // text, the command runs with arguments only known at run time (`xargs sh -c`
    // reading `'rm -rf ~'` runs it).
    let mut argv = rest.to_vec();
    if !matches!(inv.stdin, Producer::Literal(_)) {
        let origin = match inv.stdin {
            Producer::None => Producer::Other,
            other => other.clone(),
        };
        argv.push(Field {
            text: "$(cat)".to_owned(),
            dynamic: true,
            origin,
            glob: false,
            span: None,
        });
    }
    let nested_stdin = Producer::Other;
    let nested = Invocation {
        stdin: &nested_stdin,
        stdin_file: None,
        ..inv.nested(&argv, true, false)
    };
    a.check_invocation(&nested)
}

fn find(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    a.check_find(args, inv);
    Some(Producer::Other)
}

/// `fd … -x cmd…` runs the command once per file found.
fn fd(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    let exec = args
        .iter()
        .position(|a| matches!(a.text.as_str(), "-x" | "--exec" | "-X" | "--exec-batch"));
    if let Some(i) = exec {
        let rest = &args[i + 1..];
        let end = rest
            .iter()
            .position(|a| a.text == ";")
            .unwrap_or(rest.len());
        a.run_argv(&rest[..end], inv, true, false);
    }
    Some(Producer::Other)
}

/// `parallel [opts] cmd… ::: items`: one word is a command line, several are argv.
fn parallel(
    a: &mut Analyzer<'_>,
    _: &str,
    args: &[Field],
    inv: &Invocation<'_>,
) -> Option<Producer> {
    let end = args
        .iter()
        .position(|a| a.text.starts_with(":::"))
        .unwrap_or(args.len());
    let mut start = 0;
    while start < end && args[start].text.starts_with('-') {
        let takes = matches!(args[start].text.as_str(), "-j" | "-S" | "--jobs" | "-I");
        start += if takes { 2 } else { 1 };
    }
    let command = args.get(start..end).unwrap_or(&[]);
    if command.len() == 1 {
        let per_item = Invocation {
            bulk: true,
            ..inv.nested(command, true, false)
        };
        a.run_payload(&command[0], &per_item);
    } else {
        a.run_argv(command, inv, true, false);
    }
    Some(Producer::Other)
}

/// `rg --pre CMD` runs CMD on every file searched.
fn rg(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    let mut programs: Vec<(String, &str)> = Vec::new();
    for (i, f) in args.iter().enumerate() {
        for option in ["--pre", "--hostname-bin"] {
            if f.text == option {
                if let Some(v) = args.get(i + 1) {
                    programs.push((v.text.clone(), option));
                }
            } else if let Some(v) = f
                .text
                .strip_prefix(option)
                .and_then(|v| v.strip_prefix('='))
            {
                programs.push((v.to_owned(), option));
            }
        }
    }
    for (program, option) in programs.into_iter().filter(|(p, _)| !p.is_empty()) {
        // A search made to run a program (on every file, for `--pre`): an escape from
        // what the command appears to do, whatever the program.
        a.hit(RuleId::ShellEscape, inv.rendered);
        let argv = [Field::literal(program), Field::literal("FILE")];
        a.run_argv(&argv, inv, option == "--pre", false);
    }
    Some(Producer::Other)
}

/// `npm exec`/`x`/`dlx` run a package like `npx`; other npm commands are not wrappers.
fn npm(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    const EXEC: Spec = Spec {
        short_values: "pc",
        longs: &["package=", "call=", "yes", "no"],
        stop_at_operand: true,
    };
    if !matches!(
        args.first().map(|f| f.text.as_str()),
        Some("exec" | "x" | "dlx")
    ) {
        return None;
    }
    let o = opts::parse(&args[1..], &EXEC);
    if let Some(c) = o.value('c', "call") {
        a.run_payload(&Field::literal(c), inv);
        return Some(Producer::Other);
    }
    let rest = o.rest.map(|i| &args[1 + i..]).unwrap_or(&[]);
    Some(a.run_package(rest, inv))
}

fn container(
    a: &mut Analyzer<'_>,
    _: &str,
    args: &[Field],
    inv: &Invocation<'_>,
) -> Option<Producer> {
    a.check_container(args, inv)
}

/// `kubectl exec … -- cmd` runs argv in a pod; delete, drain and scaling to zero are
/// destructive.
fn kubectl(
    a: &mut Analyzer<'_>,
    _: &str,
    args: &[Field],
    inv: &Invocation<'_>,
) -> Option<Producer> {
    let sub = args
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str());
    match sub {
        Some("exec") => {
            if let Some(i) = args.iter().position(|a| a.text == "--") {
                return Some(a.run_argv(&args[i + 1..], inv, false, false));
            }
        }
        Some("delete" | "drain") => a.hit(RuleId::ContainerDestructive, inv.rendered),
        Some("scale") if args.iter().any(|a| a.text == "--replicas=0") => {
            a.hit(RuleId::ContainerDestructive, inv.rendered);
        }
        _ => {}
    }
    Some(Producer::Other)
}

/// `ssh [opts] host cmd…`: the words after the host are one remote command line;
/// `-o ProxyCommand=…` runs locally.
fn ssh(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    const SSH: Spec = Spec {
        short_values: "BbcDEeFIiJLlmOoPpQRSWw",
        longs: &[],
        stop_at_operand: true,
    };
    let o = opts::parse(args, &SSH);
    for (k, v) in &o.values {
        if *k == 'o' && v.to_ascii_lowercase().starts_with("proxycommand") {
            let cmd = v.split_once(['=', ' ']).map(|x| x.1).unwrap_or("");
            a.run_payload(&Field::literal(cmd), inv);
        }
    }
    let rest = o.rest.map(|i| &args[i..]).unwrap_or(&[]);
    if rest.len() > 1 {
        a.run_payload(&Analyzer::joined(&rest[1..]), inv);
    }
    Some(Producer::Network)
}

fn eval(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    a.run_payload(&Analyzer::joined(args), inv);
    Some(Producer::Other)
}

/// `source FILE`: a script; sourcing stdin runs whatever is piped or redirected in.
fn source(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    match args.first() {
        Some(f)
            if matches!(
                f.text.as_str(),
                "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "-"
            ) =>
        {
            if let (Producer::None, Some(file)) = (inv.stdin, inv.stdin_file) {
                a.note_script(
                    file,
                    ScriptLang::Shell { bash: true },
                    ScriptForm::Stdin,
                    file.span.is_some(),
                );
            }
            a.check_stdin_code(None, inv);
        }
        Some(script) => {
            a.check_script(script, inv);
            // Read by the shell running the command, parsed as bash (the form is
            // pinned only where that shell is bash).
            a.note_script(
                script,
                ScriptLang::Shell { bash: true },
                ScriptForm::Source,
                true,
            );
        }
        None => {}
    }
    Some(Producer::Other)
}

/// `alias name=CODE`: the code runs whenever the name is typed.
fn alias(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    for f in args {
        if let Some((_, value)) = f.text.split_once('=') {
            let payload = Field {
                text: value.to_owned(),
                span: None,
                ..f.clone()
            };
            a.run_payload(&payload, inv);
        }
    }
    Some(Producer::None)
}

/// `trap CODE SIGNAL…`: the code runs on the signal.
fn trap(a: &mut Analyzer<'_>, _: &str, args: &[Field], inv: &Invocation<'_>) -> Option<Producer> {
    if let Some(code) = args.iter().find(|a| !a.text.starts_with('-')) {
        a.run_payload(code, inv);
    }
    Some(Producer::None)
}

/// `export`/`declare NAME=value`: assignments like the shell's; with `-i` (and in
/// array subscripts) values are evaluated as arithmetic on assignment.
fn declare(
    a: &mut Analyzer<'_>,
    _: &str,
    args: &[Field],
    inv: &Invocation<'_>,
) -> Option<Producer> {
    let cx = Cx {
        depth: inv.depth,
        ..Cx::default()
    };
    let integer = args
        .iter()
        .any(|f| f.text.starts_with('-') && f.text.contains('i'));
    for f in args {
        if integer || f.text.contains('[') {
            a.scan_arithmetic_field(f, &cx);
        }
        if let Some((n, v)) = f.text.split_once('=')
            && is_name(n)
        {
            let value = Field {
                text: v.to_owned(),
                span: None,
                ..f.clone()
            };
            a.check_assignment(n, &value, inv.rendered, &cx);
            a.set_var(n, (!value.dynamic).then(|| value.text.clone()));
        }
    }
    Some(Producer::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wrapper_name_is_listed_once() {
        let names: usize = WRAPPERS.iter().map(|w| w.names.len()).sum();
        assert_eq!(BY_NAME.len(), names, "a name appears in two entries");
    }
}
