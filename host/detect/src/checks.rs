//! Rules for the command that actually runs (after unwrapping): the dispatch by command
//! name, and deletion, permissions, disks, services, processes, databases, containers
//! and cloud. Carriers are in `carriers`, git in `git`, network in `net`.
//!
//! Most rules are data: a [`WordRule`] names the commands, the words that make them
//! destructive, the words that make them harmless (`--help`, listing) and the rule
//! broken. Commands whose arguments need reading (rm's paths, chmod's mode, kill's
//! signal and pids) have a handler function, named in the same table.

use super::code;
use super::code::{SHELLS, SQL_CLIENTS, language};
use super::fold::{Field, Producer};
use super::net::{NETWORK, archive_operand};
use super::opts::{self, Spec};
use super::paths::{self, canonical};
use super::rules::RuleId;
use super::walk::Analyzer;
use super::walk::Invocation;
use super::wrappers::NameMap;
use std::sync::LazyLock;

/// True for `-9`, `-KILL`, `-SIGKILL`, `KILL`, `9`, `SIGKILL` (any case).
fn is_sigkill(sig: &str) -> bool {
    let s = sig.trim_start_matches('-').to_ascii_uppercase();
    matches!(s.as_str(), "9" | "KILL" | "SIGKILL")
}

/// Where a [`WordRule`] looks for its words.
#[derive(Clone, Copy)]
pub(crate) enum Where {
    /// The first argument (a verb: `zfs destroy`).
    First,
    /// Any argument.
    Any,
    /// The first argument that is not an option (`docker-compose -f x.yml down`).
    FirstOperand,
    /// Nowhere: the command is destructive by itself; `needs_args`: only with some
    /// argument (`blkdiscard` alone prints its usage).
    Always { needs_args: bool },
    /// An argument that names a block device (`/dev/sda`).
    BlockDevice,
    /// A short-option cluster holding one of these letters (`hash -rp`).
    Cluster(&'static str),
}

/// A rule that reads only the words of a command.
pub(crate) struct WordRule {
    /// The commands it applies to.
    pub names: &'static [&'static str],
    /// Where the words are looked for.
    pub at: Where,
    /// Words that make the command destructive; a trailing `*` matches a prefix.
    pub words: &'static [&'static str],
    /// `words` match in any case.
    pub ignore_case: bool,
    /// Words anywhere with which the command does nothing destructive (`--help`).
    pub unless: &'static [&'static str],
    /// The rule broken.
    pub rule: RuleId,
    /// Why these words are destructive: the rule's justification, kept with its data
    /// (read by the table test, which requires one).
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "documentation kept with the data")
    )]
    pub why: &'static str,
}

/// A rule that needs to read a command's arguments.
type Handler = fn(&mut Analyzer<'_>, &str, &[Field], &Invocation<'_>);

/// How one command is checked.
pub(crate) enum Check {
    /// By its words.
    Words(WordRule),
    /// By a function.
    Handler(&'static [&'static str], Handler),
}

/// Options of `--help`/`--version` shape that only print.
const INFO: &[&str] = &["--help", "-V", "--version"];

/// A [`WordRule`] with the defaults: case-sensitive, no `unless`.
const fn words(
    names: &'static [&'static str],
    at: Where,
    words: &'static [&'static str],
    rule: RuleId,
    why: &'static str,
) -> WordRule {
    WordRule {
        names,
        at,
        words,
        ignore_case: false,
        unless: &[],
        rule,
        why,
    }
}

/// The table.
pub(crate) static CHECKS: &[Check] = &[
    Check::Handler(&["rm", "rimraf"], |a, n, args, inv| {
        a.check_rm(n, args, inv)
    }),
    Check::Handler(&["unlink", "shred", "srm"], |a, _, args, inv| {
        a.check_unlink(args, inv)
    }),
    Check::Handler(&["chmod"], |a, _, args, inv| a.check_chmod(args, inv)),
    Check::Handler(&["chown"], |a, _, args, inv| a.check_chown(args, inv)),
    Check::Handler(&["dd"], |a, _, args, inv| a.check_dd(args, inv)),
    Check::Words(words(
        &["mkswap"],
        Where::BlockDevice,
        &[],
        RuleId::DiskFormat,
        "makes a block device swap space, erasing it",
    )),
    Check::Words(words(
        &["wipefs"],
        Where::Any,
        &["-a*", "--all", "-o*", "--offset*"],
        RuleId::DiskFormat,
        "erases file-system signatures",
    )),
    Check::Words(words(
        &["sgdisk", "gdisk"],
        Where::Any,
        &[
            "-Z",
            "-Z=*",
            "--zap-all",
            "--zap-all=*",
            "-z",
            "-z=*",
            "--zap",
            "--zap=*",
            "-o",
            "-o=*",
            "--clear",
            "--clear=*",
            "-d",
            "-d=*",
            "--delete",
            "--delete=*",
            "-n",
            "-n=*",
            "--new",
            "--new=*",
            "-g",
            "-g=*",
            "--mbrtogpt",
            "--mbrtogpt=*",
        ],
        RuleId::DiskFormat,
        "zaps, clears, deletes or creates partitions",
    )),
    Check::Words(WordRule {
        unless: &[
            "-l",
            "--list",
            "-d",
            "--dump",
            "-s",
            "--show-size",
            "--help",
            "-h",
            "-V",
            "--version",
            "print",
        ],
        ..words(
            &["sfdisk", "fdisk", "cfdisk", "parted"],
            Where::BlockDevice,
            &[],
            RuleId::DiskFormat,
            "repartitions a disk unless only listing it",
        )
    }),
    Check::Words(WordRule {
        unless: INFO,
        ..words(
            &["blkdiscard", "mke2fs", "mkntfs", "mkdosfs"],
            Where::Always { needs_args: true },
            &[],
            RuleId::DiskFormat,
            "discards or formats a device",
        )
    }),
    // Every `mkfs*` name is looked up as `mkfs` (`mkfs.ext4`, `mkfs.xfs`).
    Check::Words(WordRule {
        unless: INFO,
        ..words(
            &["mkfs"],
            Where::Always { needs_args: false },
            &[],
            RuleId::DiskFormat,
            "formats a device",
        )
    }),
    Check::Handler(&["diskutil"], |a, _, args, inv| a.check_diskutil(args, inv)),
    Check::Words(words(
        &["cryptsetup"],
        Where::Any,
        &["luksFormat", "erase"],
        RuleId::DiskFormat,
        "formats or erases a LUKS header",
    )),
    Check::Words(words(
        &["zpool", "zfs"],
        Where::First,
        &["destroy"],
        RuleId::DiskFormat,
        "destroys a pool or dataset",
    )),
    Check::Handler(&["tee"], |a, _, args, inv| a.check_tee(args, inv)),
    Check::Handler(
        &["tar", "gtar", "bsdtar", "zip", "7z", "7za"],
        |a, n, args, inv| a.check_archive(n, args, inv),
    ),
    Check::Handler(&["unzip"], |a, _, args, _| a.check_unzip(args)),
    Check::Handler(&["cd", "pushd", "popd"], |a, n, args, _| {
        a.check_cd(n, args)
    }),
    Check::Handler(&["cp", "mv", "install", "ln"], |a, n, args, inv| {
        a.check_copy(n, args, inv)
    }),
    Check::Handler(&["mkfifo", "mknod"], |a, n, args, _| a.check_fifo(n, args)),
    Check::Handler(&["rsync"], |a, n, args, inv| {
        if a.is_remote_copy(args) {
            a.check_remote_copy(args, inv);
        } else {
            a.check_copy(n, args, inv);
        }
    }),
    Check::Handler(&["scp", "sftp"], |a, _, args, inv| {
        if a.is_remote_copy(args) {
            a.check_remote_copy(args, inv);
        }
    }),
    Check::Handler(&["sed", "gsed"], |a, _, args, inv| a.check_sed(args, inv)),
    Check::Handler(&["touch"], |a, _, args, _| a.check_touch(args)),
    Check::Handler(&["truncate"], |a, _, args, inv| a.check_truncate(args, inv)),
    Check::Words(WordRule {
        unless: &["-c", "--help", "-k"],
        ..words(
            &["shutdown"],
            Where::Always { needs_args: false },
            &[],
            RuleId::Shutdown,
            "shuts the host down (-c cancels, -k only warns)",
        )
    }),
    Check::Words(WordRule {
        unless: &["--help"],
        ..words(
            &["reboot", "halt", "poweroff", "kexec"],
            Where::Always { needs_args: false },
            &[],
            RuleId::Shutdown,
            "stops or restarts the host",
        )
    }),
    Check::Words(words(
        &["init", "telinit"],
        Where::Any,
        &["0", "6", "1", "s", "S"],
        RuleId::Shutdown,
        "runlevels that halt, reboot or drop to single user",
    )),
    Check::Handler(&["systemctl", "loginctl"], |a, _, args, inv| {
        a.check_systemctl(args, inv)
    }),
    Check::Words(words(
        &["service", "rc-service"],
        Where::Any,
        &["stop", "restart", "force-reload", "zap"],
        RuleId::ServiceStop,
        "stops or restarts a service",
    )),
    Check::Words(words(
        &["sv"],
        Where::First,
        &[
            "stop",
            "down",
            "kill",
            "restart",
            "force-stop",
            "force-restart",
        ],
        RuleId::ServiceStop,
        "stops or restarts a runit service",
    )),
    Check::Handler(&["kill"], |a, _, args, inv| a.check_kill(args, inv)),
    Check::Handler(&["let", "unset", "[", "test"], |a, n, args, inv| {
        a.check_arithmetic_args(n, args, inv)
    }),
    Check::Handler(&["pkill", "killall", "skill", "slay"], |a, _, args, inv| {
        a.check_pkill(args, inv)
    }),
    Check::Handler(&["git"], |a, _, args, inv| a.check_git(args, inv)),
    Check::Handler(&["curl"], |a, _, args, inv| a.check_curl(args, inv)),
    Check::Handler(&["wget"], |a, _, args, inv| a.check_wget(args, inv)),
    Check::Words(words(
        &["nc", "ncat", "netcat", "nc.openbsd", "nc.traditional"],
        Where::Any,
        &["-e*", "-c", "--exec", "--sh-exec", "--lua-exec"],
        RuleId::ReverseShell,
        "runs a program with its stdio on the socket",
    )),
    Check::Handler(&["socat"], |a, _, args, inv| a.check_socat(args, inv)),
    Check::Handler(SQL_CLIENTS, |a, _, args, inv| a.check_sql_client(args, inv)),
    // PostgreSQL's command-line forms of DROP.
    Check::Words(WordRule {
        unless: &["--help", "-?", "--version", "-V"],
        ..words(
            &["dropdb", "dropuser"],
            Where::Always { needs_args: false },
            &[],
            RuleId::SqlDestructive,
            "drops a database or role",
        )
    }),
    Check::Words(WordRule {
        ignore_case: true,
        ..words(
            &["mysqladmin"],
            Where::Any,
            &["drop"],
            RuleId::SqlDestructive,
            "drops a database",
        )
    }),
    // SQL typed at the shell prompt (pasted from a SQL session).
    Check::Handler(&["DROP", "DELETE", "TRUNCATE"], |a, n, args, inv| {
        a.check_sql_words(n, args, inv)
    }),
    Check::Handler(&["at", "batch"], |a, _, args, inv| a.check_at(args, inv)),
    Check::Handler(&["crontab"], |a, _, args, inv| a.check_crontab(args, inv)),
    Check::Handler(
        &[
            "iptables",
            "ip6tables",
            "iptables-legacy",
            "iptables-nft",
            "ip6tables-legacy",
        ],
        |a, _, args, inv| a.check_iptables(args, inv),
    ),
    Check::Handler(&["nft"], |a, _, args, inv| {
        let has = |w: &str| args.iter().any(|f| f.text == w);
        if has("flush") || (has("delete") && has("table")) {
            a.hit(RuleId::Firewall, inv.rendered);
        }
    }),
    Check::Words(words(
        &["ufw"],
        Where::Any,
        &["disable", "reset"],
        RuleId::Firewall,
        "turns the firewall off or drops its rules",
    )),
    Check::Words(WordRule {
        ignore_case: true,
        ..words(
            &["setenforce"],
            Where::First,
            &["0", "permissive"],
            RuleId::Firewall,
            "turns SELinux enforcement off",
        )
    }),
    Check::Words(words(
        &["hash"],
        Where::Cluster("p"),
        &[],
        RuleId::Hijack,
        "binds a command name to another program",
    )),
    Check::Words(words(
        &["enable"],
        Where::Cluster("nf"),
        &[],
        RuleId::Hijack,
        "disables a builtin or loads one from a shared object",
    )),
    Check::Handler(&["aws"], |a, _, args, inv| a.check_aws(args, inv)),
    Check::Words(words(
        &["gcloud", "az", "doctl", "flyctl", "fly", "heroku", "gsutil"],
        Where::Any,
        &["delete", "destroy", "terminate", "rm", "rb", "apps:destroy"],
        RuleId::ContainerDestructive,
        "deletes cloud resources",
    )),
    Check::Words(words(
        &["terraform", "tofu", "pulumi", "cdk"],
        Where::Any,
        &["destroy", "-destroy"],
        RuleId::ContainerDestructive,
        "destroys the managed infrastructure",
    )),
    Check::Words(words(
        &["helm"],
        Where::Any,
        &["uninstall", "delete", "del", "un"],
        RuleId::ContainerDestructive,
        "uninstalls a release",
    )),
    Check::Words(words(
        &["docker-compose", "podman-compose"],
        Where::FirstOperand,
        &["down", "kill", "stop", "rm"],
        RuleId::ContainerDestructive,
        "stops or removes the project's containers",
    )),
    Check::Handler(&["powershell", "pwsh"], |a, _, args, inv| {
        a.check_powershell(args, inv)
    }),
    Check::Handler(
        &[
            "vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "nano", "emacs",
        ],
        |a, _, args, inv| a.check_editor(args, inv),
    ),
    Check::Handler(&["sort", "man", "ag"], |a, n, args, inv| {
        a.check_program_option(n, args, inv)
    }),
];

/// An option of a read-only tool that names a program the tool runs: its full name,
/// the shortest prefix the tool accepts for it (GNU-style abbreviations), and whether
/// its value may be left out (`man -H` runs the default browser).
struct ProgramOption {
    name: &'static str,
    shortest: usize,
    value_optional: bool,
}

/// For `sort`, `man` and `ag`: the options that run a program, and the programs that
/// do nothing but their job there (compressors, plain pagers).
fn program_options(name: &str) -> (&'static [ProgramOption], &'static [&'static str]) {
    const PAGERS: &[&str] = &["cat", "less", "more", "most"];
    match name {
        "sort" => (
            &[ProgramOption {
                name: "--compress-program",
                shortest: 4,
                value_optional: false,
            }],
            &[
                "gzip", "pigz", "xz", "zstd", "lz4", "lzop", "bzip2", "pbzip2", "compress",
            ],
        ),
        "man" => (
            &[
                ProgramOption {
                    name: "-P",
                    shortest: 2,
                    value_optional: false,
                },
                ProgramOption {
                    name: "--pager",
                    shortest: 5,
                    value_optional: false,
                },
                ProgramOption {
                    name: "-H",
                    shortest: 2,
                    value_optional: true,
                },
                ProgramOption {
                    name: "--html",
                    shortest: 4,
                    value_optional: true,
                },
            ],
            PAGERS,
        ),
        _ => (
            &[ProgramOption {
                name: "--pager",
                shortest: 5,
                value_optional: false,
            }],
            PAGERS,
        ),
    }
}

/// The table by name, built once.
static BY_NAME: LazyLock<NameMap<&'static Check>> = LazyLock::new(|| {
    CHECKS
        .iter()
        .flat_map(|c| {
            let names = match c {
                Check::Words(w) => w.names,
                Check::Handler(names, _) => names,
            };
            names.iter().map(move |n| (*n, c))
        })
        .collect()
});

/// The check for the command `name`.
fn check_of(name: &str) -> Option<&'static Check> {
    let name = if name.starts_with("mkfs") {
        "mkfs"
    } else {
        name
    };
    BY_NAME.get(name).copied()
}

/// True when tar's arguments ask it to extract: `x` in the first (dashless) cluster or
/// a short-option cluster, or `--extract`/`--get`.
fn is_tar_extract(args: &[Field]) -> bool {
    args.iter().enumerate().any(|(i, a)| {
        let t = a.text.as_str();
        matches!(t, "--extract" | "--get")
            || (!t.starts_with("--")
                && (t.starts_with('-') || i == 0)
                && t.trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_alphabetic())
                && t.contains('x'))
    })
}

/// The value of the option `short` (`-C DIR`) or `long` (`--directory=DIR`,
/// `--directory DIR`; `""`: none).
fn option_value<'a>(args: &'a [Field], short: &str, long: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, a)| {
        let t = a.text.as_str();
        if t == short || (!long.is_empty() && t == long) {
            return args.get(i + 1).map(|f| f.text.as_str());
        }
        t.strip_prefix(long)
            .filter(|_| !long.is_empty())
            .and_then(|v| v.strip_prefix('='))
    })
}

/// True when `pattern` (a word, or a prefix ending in `*`) matches `word`.
fn word_matches(pattern: &str, word: &str, ignore_case: bool) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) if ignore_case => word
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix)),
        Some(prefix) => word.starts_with(prefix),
        None if ignore_case => word.eq_ignore_ascii_case(pattern),
        None => word == pattern,
    }
}

impl WordRule {
    /// True when the rule matches the arguments `args`.
    fn matches(&self, args: &[Field]) -> bool {
        let is = |w: &str| {
            self.words
                .iter()
                .any(|p| word_matches(p, w, self.ignore_case))
        };
        if args
            .iter()
            .any(|a| self.unless.iter().any(|u| word_matches(u, &a.text, false)))
        {
            return false;
        }
        match self.at {
            Where::First => args.first().is_some_and(|a| is(&a.text)),
            Where::Any => args.iter().any(|a| is(&a.text)),
            Where::FirstOperand => args
                .iter()
                .find(|a| !a.text.starts_with('-'))
                .is_some_and(|a| is(&a.text)),
            Where::Always { needs_args } => !needs_args || !args.is_empty(),
            Where::BlockDevice => args
                .iter()
                .any(|a| paths::is_block_device(&canonical(&a.text))),
            Where::Cluster(letters) => args
                .iter()
                .any(|a| a.text.starts_with('-') && a.text.contains(|c| letters.contains(c))),
        }
    }
}

impl Analyzer<'_> {
    /// Applies the rules of the table to the command `name args`.
    pub(crate) fn check_command(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        if inv.bulk && matches!(name, "rm" | "unlink" | "shred" | "rmdir" | "rimraf" | "srm") {
            self.hit(RuleId::BulkDelete, r);
        }
        if SHELLS.contains(&name) {
            self.check_shell(args, inv);
            return;
        }
        if super::windows::is_cmd(name) {
            self.check_cmd(args, inv);
            return;
        }
        // cmd's deletes typed without `cmd /c` (a Windows shell behind the terminal,
        // or pasted from a Windows guide): Unix has no `del` or `rd`, and no one asks
        // Unix rmdir to remove a directory named `/s`.
        if matches!(name, "del" | "erase" | "rd" | "DEL" | "ERASE" | "RD")
            || (name == "rmdir" && args.iter().any(|a| a.text.eq_ignore_ascii_case("/s")))
            || (name == "start" && args.iter().any(|a| super::windows::is_cmd(&a.text)))
        {
            let mut line = name.to_owned();
            for a in args {
                line.push(' ');
                line.push_str(&a.text);
            }
            self.check_cmd_line(&line, inv, 1);
            return;
        }
        if let Some(lang) = language(name) {
            self.check_interpreter(name, lang, args, inv);
            return;
        }
        if *inv.stdin == Producer::Credentials && NETWORK.contains(&name) {
            self.hit(RuleId::Exfiltration, r);
        }
        match check_of(name) {
            Some(Check::Words(rule)) if rule.matches(args) => self.hit(rule.rule, r),
            Some(Check::Handler(_, handler)) => handler(self, name, args, inv),
            _ => {}
        }
    }

    fn check_unlink(&mut self, args: &[Field], inv: &Invocation<'_>) {
        for a in args.iter().filter(|a| !a.text.starts_with('-')) {
            let p = canonical(&a.text);
            if paths::leaves_cwd(&p) {
                self.hit(RuleId::RmOutside, inv.rendered);
            }
            if paths::is_block_device(&p) {
                self.hit(RuleId::DiskFormat, inv.rendered);
            } else if paths::is_protected(&p, &self.own.agent_dirs) {
                self.hit(RuleId::ProtectedWrite, inv.rendered);
            }
        }
    }

    /// `chown -R root …`: handing a tree to root.
    fn check_chown(&mut self, args: &[Field], inv: &Invocation<'_>) {
        const CHOWN: Spec = Spec {
            short_values: "",
            longs: &[
                "recursive",
                "reference=",
                "from=",
                "changes",
                "silent",
                "quiet",
                "verbose",
                "dereference",
                "no-dereference",
                "preserve-root",
                "no-preserve-root",
                "help",
                "version",
            ],
            stop_at_operand: false,
        };
        let o = opts::parse(args, &CHOWN);
        let owner = o.operands.first().map(|f| f.text.as_str()).unwrap_or("");
        let root = owner == "root"
            || owner.starts_with("root:")
            || owner == "0"
            || owner.starts_with("0:");
        if o.has('R', "recursive") && root {
            self.hit(RuleId::ChownRoot, inv.rendered);
        }
    }

    /// dd copies raw bytes; `of=` is a write.
    fn check_dd(&mut self, args: &[Field], inv: &Invocation<'_>) {
        if args
            .iter()
            .any(|a| a.text == "--help" || a.text == "--version")
        {
            return;
        }
        self.hit(RuleId::RawCopy, inv.rendered);
        for w in args {
            if let Some(target) = w.text.strip_prefix("of=") {
                let field = Field {
                    text: target.to_owned(),
                    span: None,
                    ..w.clone()
                };
                self.check_write(&field, true, inv.rendered);
            }
        }
    }

    /// macOS diskutil's erasing verbs (`apfs` only with a `delete…` verb).
    fn check_diskutil(&mut self, args: &[Field], inv: &Invocation<'_>) {
        const ERASING: &[&str] = &[
            "erasedisk",
            "erasevolume",
            "partitiondisk",
            "zerodisk",
            "randomdisk",
            "secureerase",
            "reformat",
            "apfs",
        ];
        let Some(verb) = args.first().map(|w| w.text.to_ascii_lowercase()) else {
            return;
        };
        if ERASING.contains(&verb.as_str())
            && (verb != "apfs"
                || args
                    .iter()
                    .any(|w| w.text.to_ascii_lowercase().starts_with("delete")))
        {
            self.hit(RuleId::DiskFormat, inv.rendered);
        }
    }

    fn check_tee(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let append = args.iter().any(|a| a.text == "-a" || a.text == "--append");
        for a in args.iter().filter(|a| !a.text.starts_with('-')) {
            self.check_write(a, !append, inv.rendered);
        }
    }

    /// An archive of credentials is a credential; tar's options may carry commands.
    fn check_archive(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        let secret = args
            .iter()
            .any(|a| !a.text.starts_with('-') && self.is_secret(&canonical(&a.text)));
        if secret && let Some(archive) = archive_operand(name, args) {
            self.secret_files.push(canonical(&archive).into_owned());
        }
        if secret || matches!(name, "tar" | "gtar" | "bsdtar") {
            self.check_tar_payloads(args, inv);
        }
        if matches!(name, "tar" | "gtar" | "bsdtar") && is_tar_extract(args) {
            // What comes out of a download is downloaded: `curl … | tar xz`, or
            // `tar xf` of a file fetched earlier in the line.
            let downloaded = match archive_operand(name, args).as_deref() {
                None | Some("-") => matches!(inv.stdin, Producer::Network | Producer::Decoder),
                Some(file) => self.is_fresh(file),
            };
            if downloaded {
                let dir = option_value(args, "-C", "--directory").unwrap_or(".");
                self.mark_fresh_dir(dir);
            }
        }
    }

    /// `unzip` of an archive fetched earlier in the line: its files are downloaded.
    fn check_unzip(&mut self, args: &[Field]) {
        let listing = args
            .iter()
            .any(|a| matches!(a.text.as_str(), "-l" | "-t" | "-Z" | "-v" | "-p" | "-c"));
        let archive = args.iter().find(|a| !a.text.starts_with('-'));
        if !listing && archive.is_some_and(|a| self.is_fresh(&a.text)) {
            let dir = option_value(args, "-d", "").unwrap_or(".");
            self.mark_fresh_dir(dir);
        }
    }

    /// `cd DIR`, `pushd DIR`, `popd`: later relative paths are read from there.
    fn check_cd(&mut self, name: &str, args: &[Field]) {
        let target = args
            .iter()
            .find(|a| !a.text.starts_with('-') || a.text == "-")
            .map(|a| a.text.as_str());
        match (name, target) {
            ("popd", _) => self.change_dir(Some("-")),
            (_, target) => self.change_dir(target),
        }
    }

    /// A created file may be run, or (named `-delete`) expanded into an option.
    fn check_touch(&mut self, args: &[Field]) {
        let mut options = true;
        for a in args {
            if options && a.text == "--" {
                options = false;
            } else if !options || !a.text.starts_with('-') || a.text.contains('/') {
                self.mark_fresh(&a.text);
            }
        }
    }

    fn check_truncate(&mut self, args: &[Field], inv: &Invocation<'_>) {
        for a in args.iter().filter(|a| !a.text.starts_with('-')) {
            if paths::is_protected(&canonical(&a.text), &self.own.agent_dirs) {
                self.hit(RuleId::ProtectedWrite, inv.rendered);
            }
        }
    }

    /// Arithmetic evaluation runs the substitutions in subscripts: `let`'s arguments,
    /// `unset 'a[…]'`, and `test -v 'a[…]'` (as `[[ -v … ]]` does).
    fn check_arithmetic_args(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        let cx = super::walk::Cx {
            depth: inv.depth,
            ..Default::default()
        };
        if matches!(name, "[" | "test") {
            for pair in args.windows(2).filter(|p| p[0].text == "-v") {
                self.scan_arithmetic_field(&pair[1], &cx);
            }
            return;
        }
        for a in args
            .iter()
            .filter(|a| name == "let" || a.text.contains('['))
        {
            self.scan_arithmetic_field(a, &cx);
        }
    }

    /// socat addresses that run programs, or read credential files.
    fn check_socat(&mut self, args: &[Field], inv: &Invocation<'_>) {
        for w in args {
            let lower = w.text.to_ascii_lowercase();
            if lower.contains("exec:") || lower.contains("system:") {
                self.hit(RuleId::ReverseShell, inv.rendered);
            }
            if lower
                .split([':', ','])
                .any(|p| self.is_secret(&canonical(p)))
            {
                self.hit(RuleId::Exfiltration, inv.rendered);
            }
        }
    }

    /// scp, sftp and remote rsync: a credential file sent to a host.
    fn check_remote_copy(&mut self, args: &[Field], inv: &Invocation<'_>) {
        if args
            .iter()
            .any(|a| !a.text.contains(':') && self.is_secret(&canonical(&a.text)))
        {
            self.hit(RuleId::Exfiltration, inv.rendered);
        }
    }

    /// Database clients: destructive SQL in an argument or on stdin.
    fn check_sql_client(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let mut destructive = args.iter().any(|a| code::is_destructive_sql(&a.text));
        if let Producer::Literal(text) = inv.stdin {
            destructive |= code::is_destructive_sql(text);
        }
        if destructive {
            self.hit(RuleId::SqlDestructive, inv.rendered);
        }
    }

    fn check_sql_words(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        let words: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        let text = format!("{name} {}", words.join(" "));
        if code::is_destructive_sql(&text) {
            self.hit(RuleId::SqlDestructive, inv.rendered);
        }
    }

    /// `at`/`batch` run the script on their stdin later.
    fn check_at(&mut self, args: &[Field], inv: &Invocation<'_>) {
        if args
            .iter()
            .any(|w| matches!(w.text.as_str(), "-l" | "-r" | "-d" | "-c" | "-V" | "--help"))
        {
            return;
        }
        self.hit(RuleId::Persistence, inv.rendered);
        if let Producer::Literal(text) = inv.stdin {
            let text = text.clone();
            self.run_payload_text(&text, inv);
        }
    }

    /// Installing or removing a crontab (listing and editing by hand are not).
    fn check_crontab(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let has = |w: &str| args.iter().any(|a| a.text == w);
        let listing = args
            .iter()
            .any(|w| matches!(w.text.as_str(), "-l" | "-e" | "-h" | "--help" | "-V"));
        let operands = args
            .iter()
            .filter(|w| !w.text.starts_with('-') || w.text == "-")
            .count();
        if has("-r") || has("-ri") || (!listing && (operands > 0 || *inv.stdin != Producer::None)) {
            self.hit(RuleId::Persistence, inv.rendered);
        }
    }

    /// Flushing the rules or opening a chain's policy.
    fn check_iptables(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let flush = args
            .iter()
            .any(|w| matches!(w.text.as_str(), "-F" | "--flush" | "-X" | "--delete-chain"));
        let open = args
            .windows(3)
            .any(|w| (w[0].text == "-P" || w[0].text == "--policy") && w[2].text == "ACCEPT");
        if flush || open {
            self.hit(RuleId::Firewall, inv.rendered);
        }
    }

    /// AWS: deleting buckets' contents and the delete/terminate family of verbs.
    fn check_aws(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let has = |w: &str| args.iter().any(|a| a.text == w);
        let s3_rm = has("s3") && ((has("rm") && has("--recursive")) || has("rb"));
        let verb = args.iter().any(|w| {
            ["delete-", "terminate-", "remove-", "deregister-", "purge-"]
                .iter()
                .any(|p| w.text.starts_with(p))
        });
        if s3_rm || verb {
            self.hit(RuleId::ContainerDestructive, inv.rendered);
        }
    }

    /// Editors' `-c`/`+cmd` commands: `:!cmd` runs a shell command.
    fn check_editor(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let mut iter = args.iter();
        while let Some(a) = iter.next() {
            let command = match a.text.as_str() {
                "-c" | "--cmd" | "--eval" => iter.next().map(|f| f.text.clone()),
                t if t.starts_with('+') && t.len() > 1 => Some(t[1..].to_owned()),
                _ => None,
            };
            if let Some(command) = command {
                if let Some((_, shell)) = command.split_once('!')
                    && !shell.trim().is_empty()
                {
                    self.run_payload_text(shell, inv);
                }
                if command.contains("system(") || command.contains("shell-command") {
                    self.hit(RuleId::InterpreterCode, inv.rendered);
                }
            }
        }
    }

    /// Options that make a read-only tool run another program — sort's
    /// `--compress-program`, man's pager (`-P`, `--pager`) and browser (`-H`,
    /// `--html`), ag's `--pager` — with anything but a program known to only do that
    /// job there: an escape from what the command appears to do. man and ag start
    /// theirs through a shell, so the value is also read as code.
    fn check_program_option(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        let (options, inert) = program_options(name);
        let mut iter = args.iter();
        while let Some(a) = iter.next() {
            let t = a.text.as_str();
            if t == "--" {
                break;
            }
            let (flag, attached) = match t.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
                _ => (t, None),
            };
            let found = options.iter().find_map(|o| {
                if o.name.starts_with("--") {
                    (flag.len() >= o.shortest && o.name.starts_with(flag)).then_some((o, attached))
                } else {
                    // `-Pless`: a short option with its value attached.
                    t.strip_prefix(o.name)
                        .map(|rest| (o, (!rest.is_empty()).then_some(rest)))
                }
            });
            let Some((option, attached)) = found else {
                continue;
            };
            let value = match attached {
                Some(v) => Some(v.to_owned()),
                None if option.value_optional => None,
                None => iter.next().map(|f| f.text.clone()),
            };
            let program = value.as_deref().and_then(|v| v.split_whitespace().next());
            let inert_program =
                program.is_some_and(|p| inert.contains(&p.rsplit('/').next().unwrap_or(p)));
            if !inert_program {
                self.hit(RuleId::ShellEscape, inv.rendered);
            }
            if let Some(value) = value.filter(|_| name != "sort") {
                self.run_payload_text(&value, inv);
            }
        }
    }

    /// pkill, killall and kin: SIGKILL by name is forceful; so is matching by a regular
    /// expression or, with `-f`, by a piece of a command line (`'cli.py --gateway'`
    /// matches every process started with that text). `-f` with one plain process name
    /// (`pkill -f myserver`) targets that program.
    fn check_pkill(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let (mut force, mut full) = (false, false);
        let mut patterns: Vec<&Field> = Vec::new();
        let mut iter = args.iter();
        while let Some(a) = iter.next() {
            let w = a.text.as_str();
            match w {
                "-l" | "--list" | "-V" | "--version" | "--help" => return,
                "-s" | "--signal" => force |= iter.next().is_some_and(|s| is_sigkill(&s.text)),
                w if w.starts_with("--signal=") => force |= is_sigkill(&w[9..]),
                "-f" | "--full" => full = true,
                "-r" | "--regexp" => force = true,
                // Options that take a value (procps pkill, psmisc killall).
                "-g" | "-G" | "-P" | "-t" | "-u" | "-U" | "-F" | "-o" | "-y" | "-Z" | "--ns"
                | "--nslist" | "--uid" | "--euid" | "--group" | "--pgroup" | "--parent"
                | "--session" | "--terminal" | "--pidfile" | "--older-than" | "--younger-than"
                | "--user" => {
                    iter.next();
                }
                w if w.starts_with('-') && !w.starts_with("--") && w.len() > 1 => {
                    if is_sigkill(w) {
                        force = true;
                    } else {
                        full |= w.contains('f');
                    }
                }
                w if w.starts_with("--") => {}
                _ => patterns.push(a),
            }
        }
        let plain_name = |f: &&Field| {
            !f.dynamic
                && !f.text.is_empty()
                && f.text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        };
        if force || (full && !patterns.iter().all(plain_name)) {
            self.hit(RuleId::KillForce, r);
        }
        if inv.bulk {
            self.hit(RuleId::KillDynamic, r);
        }
    }

    fn check_rm(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let o = opts::parse(
            args,
            &Spec {
                short_values: "",
                longs: &[
                    "recursive",
                    "force",
                    "interactive",
                    "dir",
                    "verbose",
                    "one-file-system",
                    "no-preserve-root",
                    "preserve-root",
                    "help",
                    "version",
                ],
                stop_at_operand: false,
            },
        );
        if o.long("help") || o.long("version") {
            return;
        }
        let recursive = name == "rimraf" || o.has('r', "recursive") || o.short('R');
        let mut critical = o.long("no-preserve-root");
        for f in &o.operands {
            let p = canonical(&f.text);
            if paths::leaves_cwd(&p) {
                self.hit(RuleId::RmOutside, r);
            }
            if recursive && paths::is_critical_dir(&p) {
                critical = true;
            } else if paths::is_protected(&p, &self.own.agent_dirs) {
                self.hit(RuleId::ProtectedWrite, r);
            }
            let last = p.rsplit('/').next().unwrap_or(&p);
            if !recursive && (last == "*" || last == ".*") {
                self.hit(RuleId::RmWildcard, r);
            }
        }
        if critical {
            self.hit(RuleId::RmRoot, r);
        } else if recursive {
            self.hit(RuleId::RmRecursive, r);
        }
    }

    fn check_chmod(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let o = opts::parse(
            args,
            &Spec {
                short_values: "",
                longs: &[
                    "recursive",
                    "reference=",
                    "changes",
                    "silent",
                    "quiet",
                    "verbose",
                    "preserve-root",
                    "no-preserve-root",
                    "help",
                    "version",
                ],
                stop_at_operand: false,
            },
        );
        // A mode may itself start with '-' (`chmod -w f`): take it from the raw args.
        let mode = o
            .operands
            .first()
            .map(|f| f.text.clone())
            .or_else(|| {
                args.iter()
                    .find(|a| {
                        a.text.starts_with('-')
                            && a.text.len() > 1
                            && a.text[1..].chars().all(|c| "rwxXst".contains(c))
                    })
                    .map(|f| f.text.clone())
            })
            .unwrap_or_default();
        let mut world = false;
        let mut exec = false;
        if mode.chars().all(|c| c.is_ascii_digit()) && !mode.is_empty() {
            let digits: Vec<u32> = mode.chars().filter_map(|c| c.to_digit(8)).collect();
            if let Some(other) = digits.last() {
                world |= other & 2 != 0;
            }
            if digits.len() == 4 {
                world |= digits[0] & 6 != 0;
            }
            exec = digits.iter().rev().take(3).any(|d| d & 1 != 0);
        } else {
            for clause in mode.split(',') {
                let op = clause.find(['+', '=', '-']);
                let Some(op) = op else { continue };
                let who = &clause[..op];
                let perms = &clause[op + 1..];
                let adds = !clause[op..].starts_with('-');
                if adds
                    && perms.contains('w')
                    && (who.is_empty() || who.contains('o') || who.contains('a'))
                {
                    world = true;
                }
                if adds && perms.contains('s') {
                    world = true;
                }
                if adds && perms.contains('x') {
                    exec = true;
                }
            }
        }
        if world {
            self.hit(RuleId::WorldWritable, inv.rendered);
        }
        if exec {
            for f in o.operands.iter().skip(1) {
                self.mark_fresh(&f.text);
            }
        }
    }

    /// `mkfifo NAME…`, `mknod NAME p`: a pipe a later command can write into while a
    /// shell or interpreter reads it (`bash < f` in the background, then `echo … > f`),
    /// so what reads it runs code the gate never judged. The pipe is fresh, like a
    /// written file: reading code from it needs approval.
    pub(crate) fn check_fifo(&mut self, name: &str, args: &[Field]) {
        let o = opts::parse(
            args,
            &Spec {
                short_values: "mZ",
                longs: &["mode=", "context="],
                stop_at_operand: false,
            },
        );
        let names = if name == "mkfifo" {
            &o.operands[..]
        } else {
            o.operands.get(..1).unwrap_or(&[])
        };
        let names: Vec<String> = names.iter().map(|f| f.text.clone()).collect();
        for n in names {
            self.mark_fresh(&n);
        }
    }

    pub(crate) fn check_copy(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        let o = opts::parse(
            args,
            &Spec {
                short_values: "tSmogb",
                longs: &[
                    "target-directory=",
                    "suffix=",
                    "mode=",
                    "owner=",
                    "group=",
                    "backup",
                    "force",
                    "recursive",
                    "archive",
                    "no-target-directory",
                    "verbose",
                    "symbolic",
                    "interactive",
                    "no-clobber",
                    "update",
                    "preserve",
                    "parents",
                    "link",
                    "strip",
                    "directory",
                ],
                stop_at_operand: false,
            },
        );
        if name == "install" && o.has('d', "directory") {
            return;
        }
        let r = inv.rendered;
        let target = o.value('t', "target-directory").map(Field::literal);
        let (sources, dest): (&[&Field], Option<Field>) = match target {
            Some(t) => (&o.operands[..], Some(t)),
            None if o.operands.len() >= 2 => {
                let (last, rest) = o
                    .operands
                    .split_last()
                    .map(|(l, r)| ((*l).clone(), r))
                    .unwrap_or((Field::literal(""), &[]));
                (rest, Some(last))
            }
            None => (&o.operands[..], None),
        };
        if let Some(dest) = dest {
            self.check_write(&dest, true, r);
            if sources.iter().any(|s| self.is_secret(&canonical(&s.text))) {
                self.secret_files.push(canonical(&dest.text).into_owned());
            }
        }
        if name == "mv" {
            for s in sources {
                if paths::is_protected(&canonical(&s.text), &self.own.agent_dirs) {
                    self.hit(RuleId::ProtectedWrite, r);
                }
            }
        }
        // A link to another process's open file is a way to write into it later
        // (`ln -s /proc/PID/fd/0 p`, then `echo … > p`).
        if name == "ln"
            && sources
                .iter()
                .any(|s| paths::is_other_process(&canonical(&s.text)))
        {
            self.hit(RuleId::ProcessWrite, r);
        }
    }

    fn check_systemctl(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let o = opts::parse(
            args,
            &Spec {
                short_values: "tpHMnosS",
                longs: &[
                    "type=",
                    "property=",
                    "host=",
                    "machine=",
                    "state=",
                    "lines=",
                    "output=",
                    "signal=",
                    "kill-whom=",
                    "kill-value=",
                    "root=",
                    "job-mode=",
                    "what=",
                    "timestamp=",
                    "message=",
                    "image=",
                    "when=",
                    "preset-mode=",
                    "user",
                    "system",
                    "now",
                    "force",
                    "no-block",
                    "quiet",
                    "all",
                    "global",
                    "runtime",
                    "no-pager",
                    "no-ask-password",
                ],
                stop_at_operand: false,
            },
        );
        let verb = o.operands.first().map(|f| f.text.as_str()).unwrap_or("");
        match verb {
            "stop"
            | "restart"
            | "try-restart"
            | "reload-or-restart"
            | "try-reload-or-restart"
            | "condrestart"
            | "force-reload"
            | "disable"
            | "mask"
            | "kill"
            | "isolate"
            | "freeze" => {
                self.hit(RuleId::ServiceStop, inv.rendered);
            }
            "poweroff" | "reboot" | "halt" | "kexec" | "soft-reboot" | "emergency" | "rescue" => {
                self.hit(RuleId::Shutdown, inv.rendered);
            }
            _ => {}
        }
    }

    fn check_kill(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let mut signal: Option<String> = None;
        let mut pids: Vec<&Field> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            match t {
                "-l" | "-L" | "--list" | "--table" => return,
                "-s" | "-n" | "--signal" => {
                    signal = args.get(i + 1).map(|f| f.text.clone());
                    i += 2;
                    continue;
                }
                "--" => {
                    pids.extend(args[i + 1..].iter());
                    break;
                }
                t if t.starts_with('-') && t.len() > 1 && signal.is_none() && pids.is_empty() => {
                    signal = Some(t[1..].to_owned());
                }
                _ => pids.push(&args[i]),
            }
            i += 1;
        }
        // `kill -1` alone: read as the process group -1 (everything), as the issue's
        // hardline list has it; bash would report a usage error, zsh kills all.
        if pids.is_empty() && signal.as_deref() == Some("1") {
            self.hit(RuleId::KillAll, r);
            return;
        }
        if pids.iter().any(|p| p.text == "-1") {
            self.hit(RuleId::KillAll, r);
        }
        // SIGKILL to named processes: only pid 1 (init), 0 (the process group) and
        // negative ids (groups) reach beyond the one process the agent picked.
        let one_process = |p: &&Field| !p.dynamic && p.text.parse::<u32>().is_ok_and(|n| n > 1);
        if signal.as_deref().is_some_and(is_sigkill) && !pids.iter().all(one_process) {
            self.hit(RuleId::KillForce, r);
        }
        // Reload/status signals (`kill -HUP $(cat app.pid)`) do not end processes.
        let benign = signal.as_deref().is_some_and(|s| {
            let s = s.trim_start_matches("SIG").to_ascii_uppercase();
            matches!(
                s.as_str(),
                "0" | "HUP" | "1" | "USR1" | "USR2" | "CONT" | "WINCH"
            )
        });
        if (inv.bulk || pids.iter().any(|p| p.dynamic)) && !benign {
            self.hit(RuleId::KillDynamic, r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_name_is_listed_once_and_every_word_rule_says_why() {
        let mut names = 0;
        for c in CHECKS {
            match c {
                Check::Words(w) => {
                    names += w.names.len();
                    assert!(!w.why.is_empty(), "{:?}", w.names);
                }
                Check::Handler(n, _) => names += n.len(),
            }
        }
        assert_eq!(BY_NAME.len(), names, "a name appears in two entries");
    }

    #[test]
    fn tar_extraction_and_its_directory_are_read_from_any_spelling() {
        let f = |v: &[&str]| v.iter().map(|s| Field::literal(*s)).collect::<Vec<_>>();
        assert!(is_tar_extract(&f(&["xzf", "a.tgz"])));
        assert!(is_tar_extract(&f(&["-C", "/opt", "-xzf", "-"])));
        assert!(is_tar_extract(&f(&["--extract", "-f", "a.tar"])));
        assert!(!is_tar_extract(&f(&["czf", "a.tgz", "src"])));
        assert!(!is_tar_extract(&f(&["tzf", "a.tgz", "--exclude=x"])));
        let args = f(&["xz", "--directory=out"]);
        assert_eq!(option_value(&args, "-C", "--directory"), Some("out"));
        let args = f(&["-C", "/opt", "-xz"]);
        assert_eq!(option_value(&args, "-C", "--directory"), Some("/opt"));
        assert_eq!(option_value(&f(&["xz"]), "-C", "--directory"), None);
    }

    #[test]
    fn word_patterns_match_words_and_prefixes() {
        assert!(word_matches("-e*", "-e", false));
        assert!(word_matches("-e*", "-ebash", false));
        assert!(!word_matches("-e*", "--exec", false));
        assert!(word_matches("drop", "DROP", true));
        assert!(!word_matches("drop", "DROP", false));
    }
}
