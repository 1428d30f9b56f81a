//! Rules for the command that actually runs (after unwrapping): the dispatch by command
//! name, and deletion, permissions, disks, services, processes, databases, containers
//! and cloud. Carriers are in `carriers`, git in `git`, network in `net`.

use super::carriers::{SHELLS, language};
use super::code;
use super::commands::Invocation;
use super::fold::{Field, Producer};
use super::net::{NETWORK, archive_operand, is_metadata_url};
use super::opts::{self, Spec};
use super::paths::{self, canonical};
use super::rules::RuleId;
use super::walk::Analyzer;

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
        let words: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        if *inv.stdin == Producer::Credentials && NETWORK.contains(&name) {
            self.hit(RuleId::Exfiltration, r);
        }
        match name {
            "rm" | "rimraf" => self.check_rm(name, args, inv),
            "unlink" | "shred" | "srm" => {
                for a in args.iter().filter(|a| !a.text.starts_with('-')) {
                    let p = canonical(&a.text);
                    if paths::leaves_cwd(&p) {
                        self.hit(RuleId::RmOutside, r);
                    }
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
            "sed" | "gsed" => self.check_sed(args, inv),
            // A created file may be run, or (named `-delete`) expanded into an option.
            "touch" => {
                let mut options = true;
                for a in args {
                    if options && a.text == "--" {
                        options = false;
                    } else if !options || !a.text.starts_with('-') || a.text.contains('/') {
                        self.fresh_files.push(canonical(&a.text));
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
            // Arithmetic evaluation runs the substitutions in subscripts.
            "let" | "unset" => {
                let cx = super::walk::Cx {
                    depth: inv.depth,
                    ..Default::default()
                };
                for a in args
                    .iter()
                    .filter(|a| name == "let" || a.text.contains('['))
                {
                    self.scan_arithmetic_field(a, &cx);
                }
            }
            // `test -v 'a[…]'` evaluates the subscript, as `[[ -v … ]]` does.
            "[" | "test" => {
                let cx = super::walk::Cx {
                    depth: inv.depth,
                    ..Default::default()
                };
                for pair in args.windows(2).filter(|p| p[0].text == "-v") {
                    self.scan_arithmetic_field(&pair[1], &cx);
                }
            }
            "pkill" | "killall" | "skill" | "slay" => self.check_pkill(args, inv),
            "git" => self.check_git(args, inv),
            "curl" => self.check_curl(args, inv),
            "wget" => {
                let mut iter = args.iter().peekable();
                let mut named = false;
                let mut prefix: Option<String> = None;
                while let Some(a) = iter.next() {
                    let t = a.text.as_str();
                    // A cluster (`-qO file`, `-qO-`): the first option taking a value
                    // takes the rest of the word or the next argument.
                    let unclustered;
                    let t = match t
                        .char_indices()
                        .skip(1)
                        .find(|(_, c)| "OoaPiBetTwQUDlARIX".contains(*c))
                    {
                        Some((k, c)) if k > 1 && t.starts_with('-') && !t.starts_with("--") => {
                            unclustered = format!("-{c}{}", &t[k + c.len_utf8()..]);
                            unclustered.as_str()
                        }
                        _ => t,
                    };
                    if t == "-O"
                        || t.starts_with("--output-document")
                        || (t.starts_with("-O") && t.len() > 2)
                    {
                        named = true;
                    }
                    if t == "-P" || t == "--directory-prefix" {
                        prefix = iter.peek().map(|f| f.text.clone());
                    } else if let Some(p) = t
                        .strip_prefix("--directory-prefix=")
                        .or_else(|| t.strip_prefix("-P").filter(|p| !p.is_empty()))
                    {
                        prefix = Some(p.to_owned());
                    }
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
                if !named {
                    // Without -O, wget saves each URL under its own name.
                    for url in args.iter().filter(|a| a.text.contains("://")) {
                        let name = super::net::url_file_name(&url.text);
                        let path = match &prefix {
                            Some(dir) => format!("{dir}/{name}"),
                            None => name.to_owned(),
                        };
                        self.fresh_files.push(canonical(&path));
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
            // `at`/`batch` run the script on their stdin later.
            "at" | "batch"
                if !words
                    .iter()
                    .any(|w| matches!(*w, "-l" | "-r" | "-d" | "-c" | "-V" | "--help")) =>
            {
                self.hit(RuleId::Persistence, r);
                if let Producer::Literal(text) = inv.stdin {
                    let text = text.clone();
                    self.run_payload_text(&text, inv);
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
