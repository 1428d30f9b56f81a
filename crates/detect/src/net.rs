//! Network: uploads of credentials, cloud metadata endpoints, remote copies.

use super::commands::Invocation;
use super::fold::{Field, Producer};
use super::paths::{self, canonical};
use super::rules::RuleId;
use super::walk::Analyzer;

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
                    "-F" | "--form" | "-T" | "--upload-file" | "-d" | "--data"
                    | "--data-binary"
                        if inv.bulk && v.contains("{}") =>
                    {
                        // Uploading each file a search found: files chosen at run time.
                        self.hit(RuleId::Exfiltration, r);
                    }
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

    pub(crate) fn is_remote_copy(&self, args: &[Field]) -> bool {
        args.iter().any(|a| {
            !a.text.starts_with('-')
                && a.text
                    .split_once(':')
                    .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
        })
    }
}
