//! Rules for the command that actually runs (after unwrapping): shells and
//! interpreters, deletion, permissions, disks, services, processes, git, network,
//! databases, containers and cloud.

use super::code::{self, Lang};
use super::commands::Invocation;
use super::fold::{self, Field, Producer};
use super::opts::{self, Spec};
use super::paths::{self, canonical};
use super::rules::RuleId;
use super::walk::{Analyzer, Cx};

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "rbash", "fish", "tcsh",
    "csh", "posh",
];

/// Commands that send their stdin over the network.
const NETWORK: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "telnet", "openssl", "scp", "sftp",
    "rsync", "ftp", "tftp", "http", "https", "xh",
];

/// Names of interpreters and the language of their inline code.
pub(crate) fn language(name: &str) -> Option<Lang> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match base {
        "python" | "pypy" => Lang::Python,
        "node" | "nodejs" | "bun" | "deno" => Lang::Node,
        "perl" => Lang::Perl,
        "ruby" | "jruby" => Lang::Ruby,
        "php" => Lang::Php,
        "awk" | "gawk" | "mawk" | "nawk" => Lang::Awk,
        "lua" | "luajit" | "tclsh" | "wish" | "Rscript" | "osascript" | "julia" | "groovy" => {
            Lang::Generic
        }
        _ => return None,
    })
}

/// True for `-9`, `-KILL`, `-SIGKILL`, `KILL`, `9`, `SIGKILL` (any case).
fn is_sigkill(sig: &str) -> bool {
    let s = sig.trim_start_matches('-').to_ascii_uppercase();
    matches!(s.as_str(), "9" | "KILL" | "SIGKILL")
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
        if let Some(lang) = language(name) {
            self.check_interpreter(name, lang, args, inv);
            return;
        }
        let words: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        if *inv.stdin == Producer::Credentials && NETWORK.contains(&name) {
            self.hit(RuleId::Exfiltration, r);
        }
        match name {
            "rm" | "rimraf" => self.check_rm(name, args, inv),
            "unlink" | "shred" | "srm" => {
                for a in args.iter().filter(|a| !a.text.starts_with('-')) {
                    let p = canonical(&a.text);
                    if paths::is_block_device(&p) {
                        self.hit(RuleId::DiskFormat, r);
                    } else if paths::is_protected(&p, &self.det.agent_dirs) {
                        self.hit(RuleId::ProtectedWrite, r);
                    }
                }
            }
            "chmod" => self.check_chmod(args, inv),
            "chown" => {
                let o = opts::parse(
                    args,
                    &Spec {
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
                    },
                );
                let owner = o.operands.first().map(|f| f.text.as_str()).unwrap_or("");
                let root = owner == "root"
                    || owner.starts_with("root:")
                    || owner == "0"
                    || owner.starts_with("0:");
                if o.has('R', "recursive") && root {
                    self.hit(RuleId::ChownRoot, r);
                }
            }
            "dd" => {
                if words.iter().any(|w| *w == "--help" || *w == "--version") {
                    return;
                }
                self.hit(RuleId::RawCopy, r);
                for w in args {
                    if let Some(target) = w.text.strip_prefix("of=") {
                        let field = Field {
                            text: target.to_owned(),
                            ..w.clone()
                        };
                        self.check_write(&field, true, r);
                    }
                }
            }
            "mkswap"
                if args
                    .iter()
                    .any(|a| paths::is_block_device(&canonical(&a.text))) =>
            {
                self.hit(RuleId::DiskFormat, r);
            }
            "wipefs"
                if words.iter().any(|w| {
                    w.starts_with("-a")
                        || *w == "--all"
                        || w.starts_with("-o")
                        || w.starts_with("--offset")
                }) =>
            {
                self.hit(RuleId::DiskFormat, r);
            }
            "sgdisk" | "gdisk" => {
                let destructive = [
                    "-Z",
                    "--zap-all",
                    "-z",
                    "--zap",
                    "-o",
                    "--clear",
                    "-d",
                    "--delete",
                    "-n",
                    "--new",
                    "-g",
                    "--mbrtogpt",
                ];
                if words.iter().any(|w| {
                    destructive
                        .iter()
                        .any(|d| w == d || w.starts_with(&format!("{d}=")))
                }) {
                    self.hit(RuleId::DiskFormat, r);
                }
            }
            "sfdisk" | "fdisk" | "cfdisk" | "parted" => {
                let listing = words.iter().any(|w| {
                    matches!(
                        *w,
                        "-l" | "--list"
                            | "-d"
                            | "--dump"
                            | "-s"
                            | "--show-size"
                            | "--help"
                            | "-h"
                            | "-V"
                            | "--version"
                            | "print"
                    )
                });
                if !listing
                    && args
                        .iter()
                        .any(|a| paths::is_block_device(&canonical(&a.text)))
                {
                    self.hit(RuleId::DiskFormat, r);
                }
            }
            "blkdiscard" | "mke2fs" | "mkntfs" | "mkdosfs"
                if !words
                    .iter()
                    .any(|w| *w == "--help" || *w == "-V" || *w == "--version")
                    && !words.is_empty() =>
            {
                self.hit(RuleId::DiskFormat, r);
            }
            n if n.starts_with("mkfs")
                && !words
                    .iter()
                    .any(|w| *w == "--help" || *w == "-V" || *w == "--version") =>
            {
                self.hit(RuleId::DiskFormat, r);
            }
            "diskutil" => {
                let verb = words
                    .first()
                    .map(|w| w.to_ascii_lowercase())
                    .unwrap_or_default();
                if [
                    "erasedisk",
                    "erasevolume",
                    "partitiondisk",
                    "zerodisk",
                    "randomdisk",
                    "secureerase",
                    "reformat",
                    "apfs",
                ]
                .contains(&verb.as_str())
                    && (verb != "apfs"
                        || words
                            .iter()
                            .any(|w| w.to_ascii_lowercase().starts_with("delete")))
                {
                    self.hit(RuleId::DiskFormat, r);
                }
            }
            "cryptsetup" if words.iter().any(|w| *w == "luksFormat" || *w == "erase") => {
                self.hit(RuleId::DiskFormat, r);
            }
            "zpool" | "zfs" if words.first().is_some_and(|w| *w == "destroy") => {
                self.hit(RuleId::DiskFormat, r);
            }
            "tee" => {
                let append = words.iter().any(|w| *w == "-a" || *w == "--append");
                for a in args.iter().filter(|a| !a.text.starts_with('-')) {
                    self.check_write(a, !append, r);
                }
            }
            "tar" | "gtar" | "bsdtar" | "zip" | "7z" | "7za"
                if args
                    .iter()
                    .any(|a| !a.text.starts_with('-') && self.is_secret(&canonical(&a.text))) =>
            {
                // An archive of credentials is a credential.
                if let Some(archive) = archive_operand(name, args) {
                    self.secret_files.push(canonical(&archive));
                }
                self.check_tar_payloads(args, inv);
            }
            "cp" | "mv" | "install" | "ln" | "rsync"
                if name != "rsync" || !self.is_remote_copy(args) =>
            {
                self.check_copy(name, args, inv);
            }
            "sed" | "gsed" => {
                let o = opts::parse(
                    args,
                    &Spec {
                        short_values: "efl",
                        longs: &[
                            "in-place",
                            "expression=",
                            "file=",
                            "quiet",
                            "silent",
                            "regexp-extended",
                            "separate",
                            "null-data",
                            "zero-terminated",
                            "debug",
                            "posix",
                            "sandbox",
                            "unbuffered",
                            "line-length=",
                            "follow-symlinks",
                        ],
                        stop_at_operand: false,
                    },
                );
                let in_place = o.short('i')
                    || o.long("in-place")
                    || words
                        .iter()
                        .any(|w| w.starts_with("-i") || w.starts_with("--in-place"));
                if in_place {
                    // With -i the first operand may be the script or a file (`sed -i FILE`
                    // without a script is an error, but costs nothing to check).
                    for f in &o.operands {
                        let p = canonical(&f.text);
                        if paths::is_protected(&p, &self.det.agent_dirs) {
                            self.hit(RuleId::ProtectedWrite, r);
                        }
                    }
                }
            }
            "truncate" => {
                for a in args.iter().filter(|a| !a.text.starts_with('-')) {
                    if paths::is_protected(&canonical(&a.text), &self.det.agent_dirs) {
                        self.hit(RuleId::ProtectedWrite, r);
                    }
                }
            }
            "shutdown" if !words.iter().any(|w| matches!(*w, "-c" | "--help" | "-k")) => {
                self.hit(RuleId::Shutdown, r);
            }
            "reboot" | "halt" | "poweroff" | "kexec" if !words.contains(&"--help") => {
                self.hit(RuleId::Shutdown, r);
            }
            "init" | "telinit"
                if words
                    .iter()
                    .any(|w| matches!(*w, "0" | "6" | "1" | "s" | "S")) =>
            {
                self.hit(RuleId::Shutdown, r);
            }
            "systemctl" | "loginctl" => self.check_systemctl(args, inv),
            "service" | "rc-service"
                if words
                    .iter()
                    .any(|w| matches!(*w, "stop" | "restart" | "force-reload" | "zap")) =>
            {
                self.hit(RuleId::ServiceStop, r);
            }
            "sv" if words.first().is_some_and(|w| {
                matches!(
                    *w,
                    "stop" | "down" | "kill" | "restart" | "force-stop" | "force-restart"
                )
            }) =>
            {
                self.hit(RuleId::ServiceStop, r);
            }
            "kill" => self.check_kill(args, inv),
            "pkill" | "killall" | "skill" | "slay" => {
                if words
                    .iter()
                    .any(|w| matches!(*w, "-l" | "--list" | "-V" | "--version" | "--help"))
                {
                    return;
                }
                let mut iter = words.iter().peekable();
                while let Some(w) = iter.next() {
                    let force = match *w {
                        "-s" | "--signal" => iter.next().is_some_and(|s| is_sigkill(s)),
                        w if w.starts_with("--signal=") => is_sigkill(&w[9..]),
                        "-f" | "--full" | "-r" | "--regexp" => true,
                        w if w.starts_with('-') && !w.starts_with("--") => is_sigkill(w),
                        _ => false,
                    };
                    if force {
                        self.hit(RuleId::KillForce, r);
                    }
                }
                if inv.bulk {
                    self.hit(RuleId::KillDynamic, r);
                }
            }
            "git" => self.check_git(args, inv),
            "curl" => self.check_curl(args, inv),
            "wget" => {
                let mut iter = args.iter().peekable();
                while let Some(a) = iter.next() {
                    let t = a.text.as_str();
                    if t == "-O" || t == "--output-document" {
                        if let Some(target) = iter.next()
                            && target.text != "-"
                        {
                            self.check_write(target, true, r);
                        }
                    } else if let Some(target) = t
                        .strip_prefix("--output-document=")
                        .or_else(|| t.strip_prefix("-O").filter(|s| !s.is_empty() && *s != "-"))
                    {
                        self.check_write(&Field::literal(target), true, r);
                    } else if let Some(file) = t
                        .strip_prefix("--post-file=")
                        .or_else(|| t.strip_prefix("--body-file="))
                        && self.is_secret(&canonical(file))
                    {
                        self.hit(RuleId::Exfiltration, r);
                    }
                    if is_metadata_url(t) {
                        self.hit(RuleId::Exfiltration, r);
                    }
                }
            }
            "nc" | "ncat" | "netcat" | "nc.openbsd" | "nc.traditional"
                if words.iter().any(|w| {
                    matches!(*w, "-e" | "-c" | "--exec" | "--sh-exec" | "--lua-exec")
                        || (w.starts_with("-e") && w.len() > 2 && !w.starts_with("--"))
                }) =>
            {
                self.hit(RuleId::ReverseShell, r);
            }
            "socat" => {
                for w in &words {
                    let lower = w.to_ascii_lowercase();
                    if lower.contains("exec:") || lower.contains("system:") {
                        self.hit(RuleId::ReverseShell, r);
                    }
                    if lower
                        .split([':', ','])
                        .any(|p| self.is_secret(&canonical(p)))
                    {
                        self.hit(RuleId::Exfiltration, r);
                    }
                }
            }
            "scp" | "sftp" | "rsync" => {
                let remote = self.is_remote_copy(args);
                if remote
                    && args
                        .iter()
                        .any(|a| !a.text.contains(':') && self.is_secret(&canonical(&a.text)))
                {
                    self.hit(RuleId::Exfiltration, r);
                }
            }
            "psql" | "mysql" | "mariadb" | "sqlite3" | "sqlcmd" | "clickhouse-client"
            | "clickhouse" | "duckdb" | "cockroach" | "cqlsh" | "mongosh" | "mongo"
            | "redis-cli" | "snowsql" | "usql" | "pgcli" | "mycli" | "litecli" => {
                let mut destructive = args.iter().any(|a| code::is_destructive_sql(&a.text));
                if let Producer::Literal(text) = inv.stdin {
                    destructive |= code::is_destructive_sql(text);
                }
                if destructive {
                    self.hit(RuleId::SqlDestructive, r);
                }
            }
            // PostgreSQL's and MySQL's command-line forms of DROP.
            "dropdb" | "dropuser"
                if !words
                    .iter()
                    .any(|w| matches!(*w, "--help" | "-?" | "--version" | "-V")) =>
            {
                self.hit(RuleId::SqlDestructive, r);
            }
            "mysqladmin" if words.iter().any(|w| w.eq_ignore_ascii_case("drop")) => {
                self.hit(RuleId::SqlDestructive, r);
            }
            n if n.len() > 2
                && n.chars().all(|c| c.is_ascii_uppercase())
                && matches!(n, "DROP" | "DELETE" | "TRUNCATE") =>
            {
                let text = format!("{n} {}", words.join(" "));
                if code::is_destructive_sql(&text) {
                    self.hit(RuleId::SqlDestructive, r);
                }
            }
            "crontab" => {
                let listing = words
                    .iter()
                    .any(|w| matches!(*w, "-l" | "-e" | "-h" | "--help" | "-V"));
                let operands = words
                    .iter()
                    .filter(|w| !w.starts_with('-') || **w == "-")
                    .count();
                if words.contains(&"-r")
                    || words.contains(&"-ri")
                    || (!listing && (operands > 0 || *inv.stdin != Producer::None))
                {
                    self.hit(RuleId::Persistence, r);
                }
            }
            "iptables" | "ip6tables" | "iptables-legacy" | "iptables-nft" | "ip6tables-legacy" => {
                let flush = words
                    .iter()
                    .any(|w| matches!(*w, "-F" | "--flush" | "-X" | "--delete-chain"));
                let open = words
                    .windows(3)
                    .any(|w| (w[0] == "-P" || w[0] == "--policy") && w[2] == "ACCEPT");
                if flush || open {
                    self.hit(RuleId::Firewall, r);
                }
            }
            "nft"
                if words.contains(&"flush")
                    || (words.contains(&"delete") && words.contains(&"table")) =>
            {
                self.hit(RuleId::Firewall, r);
            }
            "ufw" if words.iter().any(|w| matches!(*w, "disable" | "reset")) => {
                self.hit(RuleId::Firewall, r);
            }
            "setenforce"
                if words
                    .first()
                    .is_some_and(|w| *w == "0" || w.eq_ignore_ascii_case("permissive")) =>
            {
                self.hit(RuleId::Firewall, r);
            }
            "hash" if words.iter().any(|w| w.starts_with('-') && w.contains('p')) => {
                self.hit(RuleId::Hijack, r);
            }
            "enable"
                if words
                    .iter()
                    .any(|w| w.starts_with('-') && (w.contains('n') || w.contains('f'))) =>
            {
                self.hit(RuleId::Hijack, r);
            }
            "aws" => {
                let s3_rm = words.contains(&"s3")
                    && ((words.contains(&"rm") && words.contains(&"--recursive"))
                        || words.contains(&"rb"));
                let verb = words.iter().any(|w| {
                    ["delete-", "terminate-", "remove-", "deregister-", "purge-"]
                        .iter()
                        .any(|p| w.starts_with(p))
                });
                if s3_rm || verb {
                    self.hit(RuleId::ContainerDestructive, r);
                }
            }
            "gcloud" | "az" | "doctl" | "flyctl" | "fly" | "heroku" | "gsutil"
                if words.iter().any(|w| {
                    matches!(
                        *w,
                        "delete" | "destroy" | "terminate" | "rm" | "rb" | "apps:destroy"
                    )
                }) =>
            {
                self.hit(RuleId::ContainerDestructive, r);
            }
            "terraform" | "tofu" | "pulumi" | "cdk"
                if (words.contains(&"destroy") || words.contains(&"-destroy")) =>
            {
                self.hit(RuleId::ContainerDestructive, r);
            }
            "helm"
                if words
                    .iter()
                    .any(|w| matches!(*w, "uninstall" | "delete" | "del" | "un")) =>
            {
                self.hit(RuleId::ContainerDestructive, r);
            }
            "docker-compose" | "podman-compose"
                if words
                    .iter()
                    .find(|w| !w.starts_with('-'))
                    .is_some_and(|w| matches!(*w, "down" | "kill" | "stop" | "rm")) =>
            {
                self.hit(RuleId::ContainerDestructive, r);
            }
            "powershell" | "pwsh" => self.check_powershell(args, inv),
            "vim" | "vi" | "nvim" | "ex" | "view" | "gvim" | "vimdiff" | "nano" | "emacs" => {
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
                            self.hit(RuleId::InterpreterCode, r);
                        }
                    }
                }
            }
            "tar" | "gtar" | "bsdtar" => self.check_tar_payloads(args, inv),
            _ => {}
        }
    }

    /// tar options whose value is a command tar runs.
    fn check_tar_payloads(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let mut iter = args.iter();
        while let Some(a) = iter.next() {
            let t = a.text.as_str();
            let payload = if let Some(v) = t.strip_prefix("--checkpoint-action=") {
                v.strip_prefix("exec=").map(str::to_owned)
            } else if let Some(v) = [
                "--to-command=",
                "--use-compress-program=",
                "--info-script=",
                "--new-volume-script=",
                "--rsh-command=",
            ]
            .iter()
            .find_map(|p| t.strip_prefix(p))
            {
                Some(v.to_owned())
            } else if t == "-I" || t == "-F" || t == "--to-command" || t == "--use-compress-program"
            {
                iter.next().map(|f| f.text.clone())
            } else {
                None
            };
            if let Some(p) = payload {
                self.run_payload_text(&p, inv);
            }
        }
    }

    /// Runs a carrier payload given as text.
    pub(crate) fn run_payload_text(&mut self, text: &str, inv: &Invocation<'_>) {
        let cx = Cx {
            depth: inv.depth + 1,
            stdin: Producer::None,
            bulk: inv.bulk,
            function: None,
        };
        self.analyze_code(text, &cx);
    }

    fn is_remote_copy(&self, args: &[Field]) -> bool {
        args.iter().any(|a| {
            !a.text.starts_with('-')
                && a.text
                    .split_once(':')
                    .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
        })
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
            if recursive && paths::is_critical_dir(&p) {
                critical = true;
            } else if paths::is_protected(&p, &self.det.agent_dirs) {
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
                self.fresh_files.push(canonical(&f.text));
            }
        }
    }

    fn check_copy(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
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
                self.secret_files.push(canonical(&dest.text));
            }
        }
        if name == "mv" {
            for s in sources {
                if paths::is_protected(&canonical(&s.text), &self.det.agent_dirs) {
                    self.hit(RuleId::ProtectedWrite, r);
                }
            }
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
        if signal.as_deref().is_some_and(is_sigkill) {
            self.hit(RuleId::KillForce, r);
        }
        if inv.bulk || pids.iter().any(|p| p.dynamic) {
            self.hit(RuleId::KillDynamic, r);
        }
    }

    fn check_git(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            if t == "-c" {
                if let Some(kv) = args.get(i + 1) {
                    self.check_git_config(&kv.text, inv);
                }
                i += 2;
            } else if let Some(kv) = t.strip_prefix("-c") {
                self.check_git_config(kv, inv);
                i += 1;
            } else if matches!(
                t,
                "-C" | "--git-dir"
                    | "--work-tree"
                    | "--namespace"
                    | "--exec-path"
                    | "--config-env"
                    | "--super-prefix"
                    | "--list-cmds"
            ) {
                i += 2;
            } else if t.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
        let Some(sub) = args.get(i) else { return };
        let rest = &args[i + 1..];
        let words: Vec<&str> = rest.iter().map(|a| a.text.as_str()).collect();
        let destructive = match sub.text.as_str() {
            "reset" => {
                let o = opts::parse(
                    rest,
                    &Spec {
                        short_values: "",
                        longs: &[
                            "hard",
                            "soft",
                            "mixed",
                            "merge",
                            "keep",
                            "quiet",
                            "patch",
                            "help",
                            "recurse-submodules",
                            "no-recurse-submodules",
                            "pathspec-from-file=",
                            "pathspec-file-nul",
                            "no-refresh",
                            "refresh",
                            "intent-to-add",
                        ],
                        stop_at_operand: false,
                    },
                );
                o.long("hard") || o.long("merge")
            }
            "push" => {
                let o = opts::parse(
                    rest,
                    &Spec {
                        short_values: "o",
                        longs: &[
                            "delete",
                            "mirror",
                            "prune",
                            "all",
                            "tags",
                            "set-upstream",
                            "dry-run",
                            "verbose",
                            "quiet",
                            "repo=",
                            "push-option=",
                            "receive-pack=",
                            "exec=",
                            "no-verify",
                            "verify",
                            "atomic",
                            "follow-tags",
                            "signed",
                            "porcelain",
                            "progress",
                            "recurse-submodules=",
                            "thin",
                            "no-thin",
                            "ipv4",
                            "ipv6",
                        ],
                        stop_at_operand: false,
                    },
                );
                let force = o.short('f')
                    || o.short('d')
                    || o.longs.iter().any(|(n, _)| {
                        n.starts_with("force") || n == "delete" || n == "mirror" || n == "prune"
                    });
                let refspec = o
                    .operands
                    .iter()
                    .skip(1)
                    .any(|f| f.text.starts_with('+') || f.text.starts_with(':'));
                force || refspec
            }
            "clean" => {
                let dry = words.iter().any(|w| {
                    *w == "--dry-run"
                        || (w.starts_with('-') && !w.starts_with("--") && w.contains('n'))
                });
                let force = words.iter().any(|w| {
                    *w == "--force"
                        || (w.starts_with('-') && !w.starts_with("--") && w.contains('f'))
                });
                force && !dry
            }
            "branch" => {
                let o = opts::parse(
                    rest,
                    &Spec {
                        short_values: "",
                        longs: &[
                            "delete",
                            "force",
                            "move",
                            "copy",
                            "list",
                            "all",
                            "remotes",
                            "verbose",
                            "quiet",
                            "track",
                            "no-track",
                            "set-upstream-to=",
                            "unset-upstream",
                            "show-current",
                            "contains=",
                            "merged=",
                            "no-merged=",
                            "sort=",
                            "format=",
                            "color",
                            "column",
                        ],
                        stop_at_operand: false,
                    },
                );
                o.short('D') || (o.has('d', "delete") && o.has('f', "force"))
            }
            "filter-branch" | "filter-repo" => true,
            "config" => {
                if let [key, value, ..] = &words
                    .iter()
                    .filter(|w| !w.starts_with('-'))
                    .collect::<Vec<_>>()[..]
                {
                    self.check_git_config(&format!("{key}={value}"), inv);
                }
                false
            }
            _ => false,
        };
        if destructive {
            self.hit(RuleId::GitDestructive, r);
        }
    }

    /// `git -c key=value`: some keys hold commands that git runs.
    fn check_git_config(&mut self, kv: &str, inv: &Invocation<'_>) {
        let Some((key, value)) = kv.split_once('=') else {
            return;
        };
        let key = key.to_ascii_lowercase();
        let code_key = matches!(
            key.as_str(),
            "core.pager"
                | "core.editor"
                | "core.sshcommand"
                | "core.fsmonitor"
                | "diff.external"
                | "sequence.editor"
                | "gpg.program"
                | "core.askpass"
                | "credential.helper"
                | "uploadpack.packobjectshook"
                | "core.gitproxy"
        ) || key.starts_with("pager.")
            || (key.starts_with("alias.") && value.starts_with('!'))
            || (key.starts_with("filter.")
                && (key.ends_with(".clean")
                    || key.ends_with(".smudge")
                    || key.ends_with(".process")))
            || (key.starts_with("diff.")
                && (key.ends_with(".textconv") || key.ends_with(".command")))
            || (key.starts_with("merge.") && key.ends_with(".driver"));
        if key == "core.hookspath" {
            self.hit(RuleId::Hijack, inv.rendered);
        } else if code_key {
            self.run_payload_text(value.strip_prefix('!').unwrap_or(value), inv);
        }
    }

    fn check_curl(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let secrets = self.secret_files.clone();
        let credential = |v: &str| {
            let p = canonical(v);
            paths::is_credential(&p) || secrets.contains(&p)
        };
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            let (opt, value): (&str, Option<String>) =
                if let Some((o, v)) = t.split_once('=').filter(|(o, _)| o.starts_with("--")) {
                    (o, Some(v.to_owned()))
                } else if matches!(
                    t,
                    "-o" | "--output"
                        | "-F"
                        | "--form"
                        | "-d"
                        | "--data"
                        | "--data-binary"
                        | "--data-urlencode"
                        | "--data-ascii"
                        | "--json"
                        | "-T"
                        | "--upload-file"
                        | "-H"
                        | "--header"
                ) {
                    i += 1;
                    (t, args.get(i).map(|f| f.text.clone()))
                } else if let Some((flag @ ("-o" | "-F" | "-d" | "-T" | "-H"), value)) =
                    t.get(..2).zip(t.get(2..)).filter(|(_, v)| !v.is_empty())
                {
                    (flag, Some(value.to_owned()))
                } else {
                    (t, None)
                };
            if is_metadata_url(t) {
                self.hit(RuleId::Exfiltration, r);
            }
            if let Some(v) = value {
                match opt {
                    "-o" | "--output" if v != "-" => self.check_write(&Field::literal(v), true, r),
                    "-F" | "--form" => {
                        if let Some(file) = v.split_once(['@', '<']).map(|x| x.1) {
                            let file = file.split(';').next().unwrap_or(file);
                            if credential(file)
                                || (file == "-" && *inv.stdin == Producer::Credentials)
                            {
                                self.hit(RuleId::Exfiltration, r);
                            }
                        }
                    }
                    "-d" | "--data" | "--data-binary" | "--data-urlencode" | "--data-ascii"
                    | "--json" => {
                        if let Some(file) = v.split_once('@').map(|x| x.1)
                            && (credential(file)
                                || (file == "-" && *inv.stdin == Producer::Credentials))
                        {
                            self.hit(RuleId::Exfiltration, r);
                        }
                    }
                    "-T" | "--upload-file"
                        if (credential(&v)
                            || (v == "-" && *inv.stdin == Producer::Credentials)) =>
                    {
                        self.hit(RuleId::Exfiltration, r);
                    }
                    "-H" | "--header" => {
                        let lower = v.to_ascii_lowercase();
                        if lower.starts_with("metadata-flavor")
                            || lower.starts_with("metadata:")
                            || lower.starts_with("x-aws-ec2-metadata-token")
                        {
                            self.hit(RuleId::Exfiltration, r);
                        }
                    }
                    _ => {}
                }
            }
            i += 1;
        }
    }

    fn check_shell(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let mut command_mode = false;
        let mut stdin_mode = false;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].text.as_str();
            if a == "--" || a == "-" {
                i += 1;
                break;
            }
            if matches!(a, "--rcfile" | "--init-file") {
                i += 2;
                continue;
            }
            if a.starts_with("--") {
                i += 1;
                continue;
            }
            if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
                let cluster = &a[1..];
                command_mode |= cluster.contains('c');
                stdin_mode |= cluster.contains('s');
                if cluster.contains('o') || cluster.contains('O') {
                    i += 1;
                }
                i += 1;
                continue;
            }
            break;
        }
        let operands = args.get(i..).unwrap_or(&[]);
        if command_mode {
            if let Some(code) = operands.first() {
                self.run_payload(code, inv);
            }
            return;
        }
        if !stdin_mode && let Some(script) = operands.first() {
            self.check_script(script, inv);
            return;
        }
        self.check_stdin_code(None, inv);
    }

    /// A shell (`lang` None) or interpreter reading its program from stdin.
    pub(crate) fn check_stdin_code(&mut self, lang: Option<Lang>, inv: &Invocation<'_>) {
        let r = inv.rendered;
        match inv.stdin {
            Producer::None => {}
            Producer::Network => self.hit(RuleId::RemoteCode, r),
            Producer::Decoder => self.hit(RuleId::DecodedCode, r),
            Producer::Literal(text) => match lang {
                None => {
                    self.hit(RuleId::ShellStdin, r);
                    let text = text.clone();
                    self.run_payload_text(&text, inv);
                }
                Some(lang) => {
                    if code::is_risky(lang, text) {
                        self.hit(RuleId::InterpreterCode, r);
                    }
                }
            },
            Producer::Credentials | Producer::Other => match lang {
                None => self.hit(RuleId::ShellStdin, r),
                Some(_) => self.hit(RuleId::DynamicCode, r),
            },
        }
    }

    fn check_interpreter(&mut self, name: &str, lang: Lang, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let mut code_text: Option<Field> = None;
        let mut in_place = false;
        let mut module = false;
        let mut i = 0;
        let (code_flags, value_flags): (&str, &str) = match lang {
            Lang::Python => ("c", "WXQ"),
            Lang::Node => ("ep", "r"),
            Lang::Perl | Lang::Ruby => ("eE", "IMmxFlCdDr0"),
            Lang::Php => ("rBRE", "fdcz"),
            Lang::Awk => ("e", "fFvi"),
            Lang::Generic => ("ec", ""),
        };
        // deno/bun subcommands: `deno eval CODE`, `deno run URL`.
        if matches!(name, "deno" | "bun") {
            match args.first().map(|a| a.text.as_str()) {
                Some("eval") => {
                    code_text = args.get(1).cloned();
                    i = args.len();
                }
                Some("run" | "x") => {
                    if args
                        .iter()
                        .skip(1)
                        .any(|a| a.text.starts_with("http://") || a.text.starts_with("https://"))
                    {
                        self.hit(RuleId::RemoteCode, r);
                    }
                    return;
                }
                _ => {}
            }
        }
        while i < args.len() {
            let a = args[i].text.as_str();
            if a == "--" {
                i += 1;
                break;
            }
            if let Some(long) = a.strip_prefix("--") {
                match long.split_once('=') {
                    Some(("eval" | "print" | "source", v)) => {
                        code_text = Some(Field {
                            text: v.to_owned(),
                            ..args[i].clone()
                        })
                    }
                    None if matches!(long, "eval" | "print" | "source") => {
                        code_text = args.get(i + 1).cloned();
                        i += 1;
                    }
                    None if matches!(long, "require" | "import" | "loader" | "input-type") => {
                        i += 1
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            if a.starts_with('-') && a.len() > 1 {
                let cluster: Vec<char> = a[1..].chars().collect();
                let mut k = 0;
                while k < cluster.len() {
                    let c = cluster[k];
                    let attached: String = cluster[k + 1..].iter().collect();
                    if code_flags.contains(c) {
                        let value = if attached.is_empty() {
                            i += 1;
                            args.get(i).cloned()
                        } else {
                            Some(Field::literal(attached))
                        };
                        if let Some(v) = value {
                            code_text = Some(match code_text.take() {
                                Some(mut prev) => {
                                    prev.text.push('\n');
                                    prev.text.push_str(&v.text);
                                    prev.dynamic |= v.dynamic;
                                    prev
                                }
                                None => v,
                            });
                        }
                        break;
                    }
                    if c == 'i' && matches!(lang, Lang::Perl | Lang::Ruby) {
                        in_place = true;
                        break;
                    }
                    if c == 'm' && lang == Lang::Python {
                        module = true;
                        break;
                    }
                    if value_flags.contains(c) {
                        if attached.is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    k += 1;
                }
                i += 1;
                if module {
                    break;
                }
                continue;
            }
            break;
        }
        let operands = args.get(i..).unwrap_or(&[]);
        if module {
            return;
        }
        match &code_text {
            Some(code) => {
                if code.dynamic {
                    self.hit(Self::unseen_code_rule(&code.origin), r);
                } else if code::is_risky(lang, &code.text) {
                    self.hit(RuleId::InterpreterCode, r);
                }
            }
            None if lang == Lang::Awk => {
                // awk's program is its first operand (unless -f gave a file).
                if !args
                    .iter()
                    .any(|a| a.text == "-f" || a.text.starts_with("--file"))
                    && let Some(program) = operands.first()
                    && (program.dynamic || code::is_risky(lang, &program.text))
                {
                    self.hit(RuleId::InterpreterCode, r);
                }
            }
            None => match operands.first() {
                Some(script) => self.check_script(script, inv),
                None => self.check_stdin_code(Some(lang), inv),
            },
        }
        if in_place {
            let files = if code_text.is_some() {
                operands
            } else {
                operands.get(1..).unwrap_or(&[])
            };
            for f in files {
                if paths::is_protected(&canonical(&f.text), &self.det.agent_dirs) {
                    self.hit(RuleId::ProtectedWrite, r);
                }
            }
        }
    }

    fn check_powershell(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let mut i = 0;
        while i < args.len() {
            let lower = args[i].text.to_ascii_lowercase();
            if !lower.starts_with('-') {
                break;
            }
            match lower.as_str() {
                "-encodedcommand" | "-enc" | "-e" | "-ec" => {
                    self.hit(RuleId::DecodedCode, r);
                    return;
                }
                "-command" | "-c" => {
                    i += 1;
                    break;
                }
                "-executionpolicy" | "-ep" | "-file" | "-f" | "-windowstyle" | "-w"
                | "-configurationname" | "-workingdirectory" | "-wd" => {
                    i += 2;
                }
                _ => i += 1,
            }
        }
        let text = args
            .get(i..)
            .unwrap_or(&[])
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(rule) = code::powershell_rule(&text) {
            self.hit(rule, r);
        }
    }

    /// What a command's output is made of (for `… | sh` and `$(…)`).
    pub(crate) fn producer_of(&self, name: &str, args: &[Field], inv: &Invocation<'_>) -> Producer {
        let words: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        let has = |w: &str| words.contains(&w);
        let operands = || args.iter().filter(|a| !a.text.starts_with('-'));
        match name {
            "curl" | "wget" | "fetch" | "http" | "https" | "xh" | "nc" | "ncat" | "netcat"
            | "socat" | "ssh" | "aria2c" | "lwp-request" | "GET" | "telnet" => Producer::Network,
            "echo" => {
                if args.iter().any(|a| a.dynamic) {
                    Producer::Other
                } else {
                    let strings: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
                    Producer::Literal(fold::eval_echo(&strings))
                }
            }
            "printf" => {
                if args.iter().any(|a| a.dynamic) {
                    return Producer::Other;
                }
                let strings: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
                fold::eval_printf(&strings).map_or(Producer::Other, Producer::Literal)
            }
            "base64" | "base32" | "basenc" if has("-d") || has("--decode") || has("-D") => {
                Producer::Decoder
            }
            "xxd" if words.iter().any(|w| w.starts_with("-r")) => Producer::Decoder,
            "openssl" if has("-d") || has("-base64") || has("-a") || has("base64") => {
                Producer::Decoder
            }
            "tr" | "rev" | "gunzip" | "zcat" | "bzcat" | "xzcat" | "zstdcat" | "uudecode"
            | "unxz" | "bunzip2" => Producer::Decoder,
            "gzip" | "bzip2" | "xz" | "zstd" if has("-d") || has("--decompress") || has("-dc") => {
                Producer::Decoder
            }
            "cat" | "tee" | "head" | "tail" | "stdbuf" | "sort" | "uniq"
                if operands().count() == 0 =>
            {
                inv.stdin.clone()
            }
            // Commands that print nothing unless asked to: `$(touch x)` is empty.
            "touch" | "mkdir" | "true" | "false" | ":" | "cd" | "chmod" | "chown" | "ln" | "cp"
            | "mv" | "rm" | "sleep" | "rmdir"
                if !words
                    .iter()
                    .any(|w| *w == "-v" || w.starts_with("--verbose")) =>
            {
                Producer::Literal(String::new())
            }
            _ => {
                if operands().any(|a| self.is_secret(&canonical(&a.text))) {
                    Producer::Credentials
                } else {
                    Producer::Other
                }
            }
        }
    }
}

/// The archive an archiver writes: tar's `-f FILE` (also in a cluster such as
/// `czf FILE` or `--file=FILE`), zip's and 7z's first operand after the verb.
fn archive_operand(name: &str, args: &[Field]) -> Option<String> {
    if name.starts_with("zip") {
        return args
            .iter()
            .find(|a| !a.text.starts_with('-'))
            .map(|a| a.text.clone());
    }
    if name.starts_with("7z") {
        return args
            .iter()
            .filter(|a| !a.text.starts_with('-'))
            .nth(1)
            .map(|a| a.text.clone());
    }
    for (i, a) in args.iter().enumerate() {
        if let Some(file) = a.text.strip_prefix("--file=") {
            return Some(file.to_owned());
        }
        let cluster = a.text.strip_prefix('-').unwrap_or(&a.text);
        let is_cluster = i == 0 || a.text.starts_with('-');
        if is_cluster
            && !a.text.starts_with("--")
            && cluster.ends_with('f')
            && cluster.chars().all(|c| c.is_ascii_alphabetic())
        {
            return args.get(i + 1).map(|f| f.text.clone());
        }
    }
    None
}

/// True for cloud instance-metadata endpoints, which hand out credentials.
fn is_metadata_url(text: &str) -> bool {
    [
        "169.254.169.254",
        "metadata.google.internal",
        "100.100.100.200",
        "fd00:ec2::254",
        "169.254.170.2",
        "metadata.azure.com",
    ]
    .iter()
    .any(|h| text.contains(h))
}
