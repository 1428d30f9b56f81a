//! Network: uploads of credentials, cloud metadata endpoints, remote copies.

use super::fold::{Field, Producer};
use super::paths::canonical;
use super::rules::RuleId;
use super::walk::Analyzer;
use super::walk::Invocation;

/// Commands that send their stdin over the network.
pub(crate) const NETWORK: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "telnet", "openssl", "scp", "sftp",
    "rsync", "ftp", "tftp", "http", "https", "xh",
];

/// The archive an archiver writes: tar's `-f FILE` (also in a cluster such as
/// `czf FILE` or `--file=FILE`), zip's and 7z's first operand after the verb.
pub(crate) fn archive_operand(name: &str, args: &[Field]) -> Option<String> {
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

/// curl's short options that take a value.
const CURL_VALUE_SHORTS: &str = "AbcCdDeEFHKmoPQrTuUwxXyYz";

/// The file name a download of `url` is saved under by `curl -O` or `wget`: the last
/// path segment, without query or fragment (`index.html` for none).
pub(crate) fn url_file_name(url: &str) -> &str {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let path = path.split_once("://").map_or(path, |(_, rest)| rest);
    match path.split_once('/') {
        Some((_, p)) => match p.rsplit('/').next() {
            Some(name) if !name.is_empty() => name,
            _ => "index.html",
        },
        None => "index.html",
    }
}

/// True for cloud instance-metadata endpoints, which hand out credentials.
pub(crate) fn is_metadata_url(text: &str) -> bool {
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

impl Analyzer<'_> {
    pub(crate) fn check_curl(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let mut remote_name = false;
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            if matches!(t, "-O" | "--remote-name" | "--remote-name-all") {
                remote_name = true;
            }
            // A cluster of short options (`-fsSLo FILE`, `-sLO`): `O` saves under the
            // URL's name; the first option that takes a value takes the rest or the
            // next argument, as for `-o`.
            let cluster = t.len() > 2
                && t.starts_with('-')
                && !t.starts_with("--")
                && t[1..].starts_with(|c: char| c.is_ascii_alphabetic());
            let unclustered;
            let t = if cluster {
                let mut flag: Option<(usize, char)> = None;
                for (k, c) in t.char_indices().skip(1) {
                    if c == 'O' {
                        remote_name = true;
                    }
                    if CURL_VALUE_SHORTS.contains(c) {
                        flag = Some((k, c));
                        break;
                    }
                }
                match flag {
                    Some((1, _)) | None => t,
                    Some((k, c)) => {
                        unclustered = format!("-{c}{}", &t[k + 1..]);
                        unclustered.as_str()
                    }
                }
            } else {
                t
            };
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
                self.check_curl_value(opt, &v, inv);
            }
            i += 1;
        }
        if remote_name {
            for url in args.iter().filter(|a| a.text.contains("://")) {
                self.mark_fresh(url_file_name(&url.text));
            }
        }
    }

    /// One curl option with its value: a write (`-o`), an upload or a header.
    fn check_curl_value(&mut self, opt: &str, v: &str, inv: &Invocation<'_>) {
        let r = inv.rendered;
        let credential = |a: &Self, v: &str| a.is_secret(&canonical(v));
        match opt {
            "-o" | "--output" if v != "-" => self.check_write(&Field::literal(v), true, r),
            "-F" | "--form" | "-T" | "--upload-file" | "-d" | "--data" | "--data-binary"
                if inv.bulk && v.contains("{}") =>
            {
                // Uploading each file a search found: files chosen at run time.
                self.hit(RuleId::Exfiltration, r);
            }
            "-F" | "--form" => {
                if let Some(file) = v.split_once(['@', '<']).map(|x| x.1) {
                    let file = file.split(';').next().unwrap_or(file);
                    if credential(self, file)
                        || (file == "-" && *inv.stdin == Producer::Credentials)
                    {
                        self.hit(RuleId::Exfiltration, r);
                    }
                }
            }
            "-d" | "--data" | "--data-binary" | "--data-urlencode" | "--data-ascii" | "--json" => {
                if let Some(file) = v.split_once('@').map(|x| x.1)
                    && (credential(self, file)
                        || (file == "-" && *inv.stdin == Producer::Credentials))
                {
                    self.hit(RuleId::Exfiltration, r);
                }
            }
            "-T" | "--upload-file"
                if (credential(self, v) || (v == "-" && *inv.stdin == Producer::Credentials)) =>
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

    /// wget: where it saves (`-O`, `-P`, or each URL's own name), what it posts.
    pub(crate) fn check_wget(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
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
                let name = url_file_name(&url.text);
                let path = match &prefix {
                    Some(dir) => format!("{dir}/{name}"),
                    None => name.to_owned(),
                };
                self.mark_fresh(&path);
            }
        }
    }

    pub(crate) fn is_remote_copy(&self, args: &[Field]) -> bool {
        args.iter().any(|a| {
            !a.text.starts_with('-')
                && a.text
                    .split_once(':')
                    .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
        })
    }
}
