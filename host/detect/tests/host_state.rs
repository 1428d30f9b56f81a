//! The host's own state is hardline to name, in every spelling a shell would find it
//! by; the host user's credentials are dangerous to read. Table tests through the
//! public API, with the configuration the terminal gives (absolute paths and a home).
#![allow(clippy::unwrap_used, reason = "tests")]

use hermetic_detect::{Detector, DetectorConfig, Frame, RuleId, Tier};

const HOME: &str = "/home/op";

fn detector() -> Detector {
    Detector::new(&DetectorConfig {
        host_state: vec![
            "/home/op/.config/hermetic/approvals.json".into(),
            "/home/op/.config/hermetic/policy.toml".into(),
            "/srv/hermetic/secrets.toml".into(),
            "/var/log/hermetic/audit.jsonl".into(),
            "/home/op/.local/share/hermetic/keyvalue.redb".into(),
            "/srv/store".into(),
        ],
        host_programs: vec!["/opt/hermetic/bin/hermetic".into()],
        home: Some(HOME.into()),
        ..DetectorConfig::default()
    })
}

/// The verdict for `command` run from `/work/ws` (as the terminal judges it).
fn judge(d: &Detector, command: &str) -> (Tier, Vec<RuleId>) {
    let judged = d.judge(
        command,
        &Frame {
            fresh: &[],
            cwd: "/work/ws",
        },
    );
    (judged.detection.tier, judged.detection.rule_ids())
}

#[test]
fn naming_host_state_is_hardline_in_every_spelling() {
    let d = detector();
    let blocked = [
        // The attack of issue 52: the allowlist written by its path.
        "printf '[\"fs.rm_recursive\"]' > ~/.config/hermetic/approvals.json",
        "echo x >> $HOME/.config/hermetic/approvals.json",
        "echo x | tee \"${HOME}\"/.config/hermetic/approvals.json",
        // Reads, each file, each form.
        "cat /home/op/.config/hermetic/policy.toml",
        "cat ~/.config/hermetic/policy.toml",
        "cat ~op/.config/hermetic/policy.toml",
        "cat /srv/hermetic/secrets.toml",
        "tail -f /var/log/hermetic/audit.jsonl",
        "cp ~/.local/share/hermetic/keyvalue.redb /tmp/kv",
        "ls /srv/store/sha256",
        "cat /opt/hermetic/bin/hermetic",
        "cp ./hermetic /opt/hermetic/bin/",
        "install -m 755 build/hermetic /opt/hermetic/bin",
        "/opt/hermetic/bin/hermetic approval check ls",
        "hermetic tools",
        // Globs that can match one.
        "cat ~/.config/*/approvals.json",
        "cat ~/.config/herm*/*",
        "cat /srv/hermetic/secret?.toml",
        "cat /srv/*/secrets.toml",
        "cat ~/.config/hermeti[c]/policy.toml",
        "cat ~/.config/@(hermetic)/policy.toml",
        "cat ~/.config/herm{e..e}tic/policy.toml",
        "cat ~/.config/herm{e,x}tic/policy.toml",
        // Variables the detector resolves, and ones it cannot (the known tail).
        "D=~/.config/hermetic; cat $D/policy.toml",
        "cat $XDG_CONFIG_HOME/hermetic/policy.toml",
        "cat ${CONF:-/nowhere}/hermetic/policy.toml",
        // After cd, and through `..`.
        "cd ~/.config/hermetic && cat approvals.json",
        "cd /srv && cat hermetic/secrets.toml",
        "cd ~/.config && cd hermetic && echo x > approvals.json",
        "cat ../../../home/op/.config/hermetic/policy.toml",
        "cat /srv/x/../hermetic/secrets.toml",
        "cat /tmp/../srv/hermetic/secrets.toml",
        "cat //srv//hermetic/./secrets.toml",
        "cat /proc/self/root/srv/hermetic/secrets.toml",
        // Quoting tricks fold away.
        "cat '/srv/hermetic/'\"secrets\"'.toml'",
        "cat /srv/her\\metic/secrets.toml",
        "cat $'/srv/hermetic/secrets.toml'",
        // Inside options and code.
        "dd if=/srv/hermetic/secrets.toml of=/tmp/x",
        "sqlite3 --init=/srv/hermetic/secrets.toml",
        "python3 -c \"print(open('/srv/hermetic/secrets.toml').read())\"",
        "bash -c 'cat ~/.config/hermetic/policy.toml'",
        "sudo cat /srv/hermetic/secrets.toml",
        "xargs -a /srv/hermetic/secrets.toml echo",
        // Links and copies onto it.
        "ln -sf /tmp/mine ~/.config/hermetic/approvals.json",
        "ln -s ~/.config/hermetic/approvals.json a.json",
        "mv /tmp/mine ~/.config/hermetic/policy.toml",
        "cp x ~/.config/hermetic/",
        "cp approvals.json ~/.config/",
        // A directory holding state, when the command does more than list it.
        "rm -rf ~/.config",
        "rm -rf ~/.config/hermetic",
        "cp -r ~/.config /tmp/c",
        "tar czf /tmp/c.tgz ~/.local/share",
        "grep -r token /srv",
        "chmod -R 777 /var/log",
        "find ~ -name approvals.json -delete",
        "find /srv -exec cat {} +",
        "env -C ~/.config/hermetic cat approvals.json",
        "tar xzf evil.tgz -C ~",
        "rsync -a ~/.config/ /tmp/c/",
        "cd ~/.config/hermetic && rm -rf .",
        "cd /srv && tar czf /tmp/s.tgz hermetic",
        "docker run -v ~/.config:/c alpine cat /c/hermetic/policy.toml",
    ];
    let mut failures = Vec::new();
    for command in blocked {
        let (tier, rules) = judge(&d, command);
        if tier != Tier::Hardline || !rules.contains(&RuleId::HostState) {
            failures.push(format!("{command:?}: {tier:?} {rules:?}"));
        }
    }
    assert!(failures.is_empty(), "not blocked:\n{}", failures.join("\n"));
}

#[test]
fn listing_near_host_state_and_unrelated_paths_are_not_host_state() {
    let d = detector();
    let fine = [
        "ls ~",
        "ls -la ~/.config",
        "ls /srv /var/log",
        "du -sh ~/.config",
        "cd ~ && ls",
        "cd ~/.config && ls",
        "find ~ -name approvals.json",
        "find / -name '*.toml' -print",
        "cp notes.txt ~/",
        "cp -r build ~/backups",
        "mkdir -p ~/.config/other",
        "cat ~/.config/other/settings.toml",
        "cat policy.toml",
        "cat /srv/hermetic/secrets.toml.example",
        "cat $BUILD/x",
        "rm -rf $OUT/hermetic",
        "grep -rn TODO .",
        "echo ~",
        "cat /opt/hermetic/bin/README",
        "ls /opt/hermetic/bin",
        "cp ./tool /opt/hermetic/bin/",
        "cargo build --release",
        "cat ~/*.json",
    ];
    let mut failures = Vec::new();
    for command in fine {
        let (_, rules) = judge(&d, command);
        if rules.contains(&RuleId::HostState) {
            failures.push(format!("{command:?}: {rules:?}"));
        }
    }
    assert!(failures.is_empty(), "flagged:\n{}", failures.join("\n"));
}

#[test]
fn host_state_is_hardline_inside_stdin_and_scripts_the_gate_judges() {
    let d = detector();
    // What a background bash is sent is judged as shell in its session's directory.
    let judged = d.judge_input(
        "cat approvals.json\n",
        &[hermetic_detect::Reader::Shell {
            bash: true,
            interactive: false,
        }],
        false,
        &Frame {
            fresh: &[],
            cwd: "/home/op/.config/hermetic",
        },
    );
    assert_eq!(judged.detection.tier, Tier::Hardline, "{judged:?}");
}

#[test]
fn the_built_in_directories_are_protected_without_configuration() {
    // Without a home, `~` is only itself: the built-in `~/.config/hermetic` still is.
    let d = Detector::default();
    for command in [
        "cat ~/.config/hermetic/policy.toml",
        "echo x > ~/.local/share/hermetic/keyvalue.redb",
        "rm -rf ~/.cache/hermetic",
        "cat /etc/hermetic/secrets.toml",
    ] {
        assert_eq!(d.detect(command).tier, Tier::Hardline, "{command}");
    }
}

#[test]
fn the_host_user_s_credentials_need_approval_to_read() {
    let d = detector();
    for command in [
        "cat ~/.ssh/id_rsa",
        "cat ~/.aws/credentials",
        "cat /home/op/.config/gcloud/application_default_credentials.json",
        "head ~/.kube/config",
        "cat ~/.docker/config.json",
        "cat ~/.netrc",
        "cat ~/.git-credentials",
        "tar czf /tmp/g.tgz ~/.gnupg",
        "cat /root/.ssh/id_ed25519",
        "cat ~/.ssh/*",
        "less < ~/.aws/credentials",
        "grep -r secret ~",
        "python3 -c \"print(open('/home/op/.aws/credentials').read())\"",
    ] {
        let (tier, rules) = judge(&d, command);
        assert!(
            tier >= Tier::Dangerous && rules.contains(&RuleId::CredentialRead),
            "{command}: {tier:?} {rules:?}"
        );
    }
    for command in [
        "ls ~/.ssh",
        "cat ~/.ssh/id_rsa.pub",
        "cat ~/.ssh/known_hosts",
        "cp ~/.ssh/config /tmp/x",
        "ssh -i ~/.ssh/id_rsa host uptime",
        "chmod 600 ~/.ssh/id_ed25519",
        "cp notes.txt ~",
    ] {
        let (_, rules) = judge(&d, command);
        assert!(
            !rules.contains(&RuleId::CredentialRead),
            "{command}: {rules:?}"
        );
    }
    // Off for backends whose commands do not see the host's home.
    let isolated = Detector::new(&DetectorConfig {
        credential_reads: false,
        ..DetectorConfig::default()
    });
    assert_eq!(isolated.detect("cat ~/.ssh/id_rsa").tier, Tier::Safe);
}

/// The verdict for `command` run from `cwd`.
fn judge_in(d: &Detector, cwd: &str, command: &str) -> (Tier, Vec<RuleId>) {
    let judged = d.judge(command, &Frame { fresh: &[], cwd });
    (judged.detection.tier, judged.detection.rule_ids())
}

/// Review r3, finding 3, the reproductions by their text (workspace `~/proj`): `..`
/// after `/proc/self/cwd` was removed with the link's name (`/proc/self/.config/…`),
/// and a relative `ln -s` target was read from the working directory instead of the
/// link's. Each fails without the fix (checked).
#[test]
fn magic_links_and_link_targets_do_not_hide_host_state() {
    let d = detector();
    let cwd = "/home/op/proj";
    let blocked = [
        "cd /proc/self/cwd/../.config/hermetic && echo x > approvals.json",
        "cat /proc/self/cwd/../.config/hermetic/approvals.json",
        "echo x > /proc/self/cwd/../.config/hermetic/approvals.json",
        "cat /proc/thread-self/cwd/../.config/hermetic/policy.toml",
        "cat /proc/self/task/1/cwd/../.config/hermetic/policy.toml",
        "cat /proc/1/root/../home/op/.config/hermetic/policy.toml",
        "cat /dev/fd/3/../.config/hermetic/approvals.json",
        "cat /dev/stdin/../.config/hermetic/approvals.json",
        "ln -s .config ../c && echo x > ../c/hermetic/approvals.json",
        "mkdir d; ln -s ../../.config d/c",
        "ln -s ../../.config/hermetic -t d",
        "ln -sf ../../.config/hermetic/approvals.json d/a.json",
        "ln -s /proc/self/cwd/.. up",
        "ln -s /proc/self/cwd up",
        "ln --symbolic /dev/fd/3/.. up",
    ];
    let mut failures = Vec::new();
    for command in blocked {
        let (tier, rules) = judge_in(&d, cwd, command);
        if tier != Tier::Hardline || !rules.contains(&RuleId::HostState) {
            failures.push(format!("{command:?}: {tier:?} {rules:?}"));
        }
    }
    assert!(failures.is_empty(), "not blocked:\n{}", failures.join("\n"));
    let fine = [
        "ln -sf /dev/stdout access.log",
        "ln -s build/out latest",
        "ln -s ../lib vendor/lib",
        "ln -s /usr/bin/python3 py",
        "cat /proc/self/status",
        "ls /proc/self/cwd",
        "cat /dev/fd/0",
    ];
    for command in fine {
        let (_, rules) = judge_in(&d, cwd, command);
        assert!(!rules.contains(&RuleId::HostState), "{command}: {rules:?}");
    }
}
