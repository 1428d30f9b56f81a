//! The pinner on its own: forms, refusals, and pinned commands run by bash.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]
use super::*;
use hermetic_detect::CodeLang;
use std::collections::HashMap;

const BASH: Runner = Runner {
    bash: true,
    typed: false,
    pty: false,
    unsure: false,
};
const SH: Runner = Runner {
    bash: false,
    ..BASH
};

/// Pins `command` (judged in /ws, run by `runner`) with `files` as the file
/// system: the text to run, and the rules found.
fn pin(command: &str, runner: Runner, files: &[(&str, &str)]) -> (String, Vec<String>) {
    let d = Detector::default();
    let files: HashMap<String, Vec<u8>> = files
        .iter()
        .map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec()))
        .collect();
    let mut read = |path: &str| match files.get(path) {
        Some(b) => FileRead::Read {
            bytes: b.clone(),
            executable: true,
        },
        None => FileRead::Missing,
    };
    let judged = d.judge(
        command,
        &Frame {
            fresh: &[],
            cwd: "/ws",
        },
    );
    let (run, found) = pin_input(&d, &mut read, Vec::new(), command, &judged, runner);
    let mut rules: Vec<String> = judged
        .detection
        .hits
        .iter()
        .chain(&found.hits)
        .map(|h| h.rule.as_str().to_owned())
        .collect();
    rules.dedup();
    (run, rules)
}

/// Runs `text` with bash in `dir` and returns its output.
fn bash_in(dir: &Path, text: &str) -> String {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(text)
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn each_form_is_given_the_judged_text_in_the_files_place() {
    let ls = "echo judged \"$0\" \"$@\"\n";
    let cases: &[(&str, Runner, &str)] = &[
        (
            "sh x.sh a",
            BASH,
            "sh -c -- 'echo judged \"$0\" \"$@\"\n' x.sh a",
        ),
        (
            "bash -e ./x.sh",
            SH,
            "bash -e -c -- 'echo judged \"$0\" \"$@\"\n' ./x.sh",
        ),
        (
            ". ./x.sh",
            BASH,
            ". <(\\builtin printf %s 'echo judged \"$0\" \"$@\"\n')",
        ),
        (
            "sh <x.sh",
            BASH,
            "sh < <(\\builtin printf %s 'echo judged \"$0\" \"$@\"\n')",
        ),
        (
            "./x.sh a",
            BASH,
            "\\command -p bash -c -- 'echo judged \"$0\" \"$@\"\n' ./x.sh a",
        ),
        (
            "exec ./x.sh",
            SH,
            "exec \\command -p sh -c -- 'echo judged \"$0\" \"$@\"\n' ./x.sh",
        ),
        (
            "xargs sh x.sh",
            SH,
            "xargs sh -c -- 'echo judged \"$0\" \"$@\"\n' x.sh",
        ),
    ];
    for (command, runner, expected) in cases {
        let (run, rules) = pin(command, *runner, &[("/ws/x.sh", ls)]);
        assert_eq!(run, *expected, "{command}");
        assert!(rules.is_empty(), "{command}: {rules:?}");
    }
}

#[test]
fn what_sh_cannot_be_handed_asks() {
    for command in [
        ". ./x.sh",
        "sh < x.sh",
        "perl x.pl",
        "bash -c 'sh x.sh'",
        "sh -- x.sh",
    ] {
        let (run, rules) = pin(
            command,
            SH,
            &[("/ws/x.sh", "echo hi\n"), ("/ws/x.pl", "print 1;\n")],
        );
        assert_eq!(run, command, "{command}: left as written");
        assert_eq!(rules, ["exec.unjudged_script"], "{command}");
    }
}

#[test]
fn a_dangerous_script_is_found_and_what_cannot_be_read_asks() {
    let (_, rules) = pin(
        "sh cleanup.sh",
        BASH,
        &[("/ws/cleanup.sh", "rm -rf victim\n")],
    );
    assert_eq!(rules, ["fs.rm_recursive"]);
    for (files, why) in [
        (&[][..], "missing"),
        (&[("/ws/x.sh", "echo \0 bin")][..], "binary"),
    ] {
        let (_, rules) = pin("bash x.sh", BASH, files);
        assert_eq!(rules, ["exec.unjudged_script"], "{why}");
    }
    let long = "echo x\n".repeat(MAX_SCRIPT_BYTES / 7 + 1);
    let (_, rules) = pin("bash x.sh", BASH, &[("/ws/x.sh", &long)]);
    assert_eq!(rules, ["exec.unjudged_script"], "too long");
    // A program run by its path is not judged; an unknown #! asks.
    let (run, rules) = pin("./tool", BASH, &[("/ws/tool", "\x7fELF\x02\x01")]);
    assert_eq!((run.as_str(), rules.len()), ("./tool", 0));
    let (run, rules) = pin("cc -o m m.c && ./m", BASH, &[]);
    assert_eq!(
        (run.as_str(), rules.len()),
        ("cc -o m m.c && ./m", 0),
        "built first"
    );
    let (_, rules) = pin("./x", BASH, &[("/ws/x", "#!/usr/bin/make -f\nall:\n")]);
    assert_eq!(rules, ["exec.unjudged_script"]);
    let (run, _) = pin("/usr/bin/env ls", BASH, &[]);
    assert_eq!(run, "/usr/bin/env ls", "a system program");
}

#[test]
fn scripts_run_by_scripts_are_judged_and_pinned_inside_theirs() {
    let files = [
        ("/ws/build.sh", "#!/bin/bash\n. ./lib.sh\necho built\n"),
        ("/ws/lib.sh", "rm -rf victim\n"),
    ];
    let (run, rules) = pin("./build.sh", BASH, &files);
    assert_eq!(rules, ["fs.rm_recursive"]);
    assert!(
        run.starts_with(
            "'/bin/bash' -c -- '#!/bin/bash\n. <(\\builtin printf %s '\\''rm -rf victim"
        ),
        "{run}"
    );
    // Deeper than the limit asks.
    let files = [
        ("/ws/a.sh", "sh b.sh\n"),
        ("/ws/b.sh", "sh c.sh\n"),
        ("/ws/c.sh", "sh d.sh\n"),
        ("/ws/d.sh", "echo deep\n"),
    ];
    let (_, rules) = pin("sh a.sh", BASH, &files);
    assert_eq!(rules, ["exec.unjudged_script"]);
}

#[test]
fn pinned_commands_run_the_judged_text_with_the_files_names() {
    let dir = tempfile::TempDir::new().unwrap();
    let ws = dir.path();
    std::fs::write(ws.join("helper.py"), "X = 42\n").unwrap();
    let script = "echo \"$0:$1\"; echo \"it's\"\n";
    let py = "import sys, helper\nprint(sys.argv, __file__.endswith('x.py'), __name__, helper.X)\n";
    let js = "const h = require('path');\nconsole.log(process.argv.slice(1).map(a => h.basename(a)), h.basename(__filename), require.main === module)\n";
    let cases: &[(&str, &str, &str, &str)] = &[
        ("sh x.sh one", "x.sh", script, "x.sh:one\nit's\n"),
        (
            ". ./x.sh two",
            "x.sh",
            "echo \"sourced $1\"\n",
            "sourced two\n",
        ),
        ("bash < x.sh", "x.sh", "echo from stdin\n", "from stdin\n"),
        (
            "for i in 1 2; do bash x.sh $i; done",
            "x.sh",
            script,
            "x.sh:1\nit's\nx.sh:2\nit's\n",
        ),
        (
            "printf 'a\\nb\\n' | xargs -n1 sh x.sh",
            "x.sh",
            script,
            "x.sh:a\nit's\nx.sh:b\nit's\n",
        ),
        (
            "python3 x.py a",
            "x.py",
            py,
            "['x.py', 'a'] True __main__ 42\n",
        ),
        ("node x.js a", "x.js", js, "[ 'x.js', 'a' ] x.js true\n"),
        (
            "perl x.pl a",
            "x.pl",
            "print \"perl @ARGV\\n\";\n",
            "perl a\n",
        ),
        // A text that begins with `-` is the text, not options of sh (review r3,
        // finding 7).
        (
            "sh x.sh",
            "x.sh",
            "--help 2>/dev/null || echo \"minus $0\"\n",
            "minus x.sh\n",
        ),
        (
            "bash x.sh",
            "x.sh",
            "-e 2>/dev/null; echo \"minus $0\"\n",
            "minus x.sh\n",
        ),
        // A module of the working directory named like one the bootstrap could
        // import is not run before the script (finding 9).
        (
            "python3 -S x.py",
            "x.py",
            "import sys\nprint('main', 'types' in sys.modules and sys.modules['types'].__file__.startswith('/tmp'))\n",
            "main False\n",
        ),
    ];
    std::fs::write(ws.join("types.py"), "print('HIJACKED')\n").unwrap();
    for (command, file, text, expected) in cases {
        let path = ws.join(file);
        std::fs::write(&path, text).unwrap();
        let d = Detector::default();
        let cwd = ws.to_str().unwrap();
        let judged = d.judge(command, &Frame { fresh: &[], cwd });
        let mut read = |p: &str| FileRead::Read {
            bytes: std::fs::read(p).unwrap(),
            executable: true,
        };
        let (run, _) = pin_input(&d, &mut read, Vec::new(), command, &judged, BASH);
        assert_ne!(&run, command, "{command}: pinned");
        // The file changes after the check: the judged text runs.
        std::fs::write(&path, "echo CHANGED\n").unwrap();
        assert_eq!(bash_in(ws, &run), *expected, "{command}: {run}");
    }
}

#[test]
fn a_foreground_shells_stdin_runs_its_scripts_as_judged() {
    let dir = tempfile::TempDir::new().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir(ws.join("victim")).unwrap();
    std::fs::write(ws.join("cleanup.sh"), "rm -rf victim\n").unwrap();
    std::fs::write(ws.join("hello.sh"), "echo \"hello $1\"\n").unwrap();
    let mut settings = crate::TerminalSettings::default();
    settings.default.cwd = Some(ws.clone());
    let host = crate::TerminalHost::new(settings).unwrap();
    let call = TerminalCall {
        host: &host,
        tenant: String::new(),
        session: "stdin".into(),
        approver: None,
        cancel: None,
        env: Vec::new(),
        deadline: None,
    };
    let request = |stdin: &str| hermetic::CommandRequest {
        command: "bash".into(),
        stdin: Some(stdin.into()),
        ..hermetic::CommandRequest::default()
    };
    let r = call.run(&request("sh cleanup.sh\n"), &mut |_| {});
    let named = |r: &hermetic::GateRefusal| {
        r.descriptions.iter().any(|d| d.contains("cleanup.sh")) && r.input == "sh cleanup.sh\n"
    };
    assert!(
        matches!(&r, Err(TerminalCallError::PendingApproval(x)) if named(x)),
        "{r:?}"
    );
    assert!(ws.join("victim").exists());
    let r = call.run(&request("sh hello.sh fg\n"), &mut |_| {}).unwrap();
    assert_eq!(r.output, "hello fg");
}

#[test]
fn a_file_is_read_beneath_the_tenants_directory_or_not_at_all() {
    use std::os::fd::AsFd;
    let dir = tempfile::TempDir::new().unwrap();
    let ws = dir.path();
    std::fs::write(ws.join("x.sh"), "echo hi\n").unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink("../x.sh", ws.join("sub/inside.sh")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", ws.join("out.sh")).unwrap();
    std::os::unix::fs::symlink("../../../../../etc/hostname", ws.join("up.sh")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        ws.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let opened = std::fs::File::open(ws).unwrap();
    let read = |p: &str| read_host(Some(opened.as_fd()), Path::new(p), 4).map(|(r, _)| r);
    let text = |b: &[u8]| FileRead::Read {
        bytes: b.to_vec(),
        executable: false,
    };
    assert_eq!(
        read("x.sh").unwrap(),
        text(b"echo "),
        "at most cap + 1 bytes"
    );
    assert_eq!(
        read("sub/inside.sh").unwrap(),
        text(b"echo "),
        "a link inside"
    );
    assert!(read("out.sh").is_err(), "an absolute link leads out");
    assert!(read("up.sh").is_err(), "so does one up and out");
    assert_eq!(read("missing.sh").unwrap(), FileRead::Missing);
    assert!(
        matches!(read("fifo").unwrap(), FileRead::Unreadable(_)),
        "a FIFO is not read (nor waited on)"
    );
    assert!(matches!(read("sub").unwrap(), FileRead::Unreadable(_)));
}

#[test]
fn scripts_that_run_many_scripts_are_read_up_to_a_count() {
    // 6 scripts each running 6 empty ones: 43 files, more than are read.
    let six = |p: &str| {
        (0..6)
            .map(|i| format!("sh {p}{i}.sh\n"))
            .collect::<String>()
    };
    let mut files: Vec<(String, String)> = vec![("/ws/top.sh".into(), six("a"))];
    for i in 0..6 {
        files.push((format!("/ws/a{i}.sh"), six(&format!("b{i}"))));
        for j in 0..6 {
            files.push((format!("/ws/b{i}{j}.sh"), String::new()));
        }
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let (_, rules) = pin("sh top.sh", BASH, &refs);
    assert_eq!(rules, ["exec.unjudged_script"]);
    // 4 scripts of 6 empty ones (29 files) are read.
    let four = |p: &str| {
        (0..4)
            .map(|i| format!("sh {p}{i}.sh\n"))
            .collect::<String>()
    };
    let mut files: Vec<(String, String)> = vec![("/ws/top.sh".into(), four("a"))];
    for i in 0..4 {
        files.push((format!("/ws/a{i}.sh"), six(&format!("b{i}"))));
        for j in 0..6 {
            files.push((format!("/ws/b{i}{j}.sh"), String::new()));
        }
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let (_, rules) = pin("sh top.sh", BASH, &refs);
    assert!(rules.is_empty(), "{rules:?}");
}

#[test]
fn what_reads_stdin_inside_a_script_is_a_reader_of_the_command() {
    let d = Detector::default();
    let mut read = |_: &str| FileRead::Read {
        bytes: b"echo start\npython3\n".to_vec(),
        executable: true,
    };
    let judged = d.judge(
        "sh x.sh",
        &Frame {
            fresh: &[],
            cwd: "/ws",
        },
    );
    let mut pinner = Pinner::new(&d, &mut read, Vec::new());
    pinner.pin("sh x.sh", &judged.scripts, BASH, 1);
    assert_eq!(
        pinner.into_found().readers,
        [hermetic_detect::Reader::Code(CodeLang::Python)]
    );
}

/// The runs of `command` in a real directory `ws`, read as the terminal reads them
/// (beneath the opened directory, by the kernel's resolution), pinned for bash.
fn pin_in(ws: &Path, command: &str, runner: Runner) -> (String, Vec<String>) {
    use std::os::fd::AsFd;
    let d = Detector::default();
    let opened = std::fs::File::open(ws).unwrap();
    let mut read = |p: &str| {
        let inside = Path::new(p).strip_prefix(ws).unwrap();
        read_host(Some(opened.as_fd()), inside, MAX_SCRIPT_BYTES)
            .map(|(r, _)| r)
            .unwrap_or(FileRead::Unreadable("out".into()))
    };
    let judged = d.judge(
        command,
        &Frame {
            fresh: &[],
            cwd: ws.to_str().unwrap(),
        },
    );
    let (run, found) = pin_input(&d, &mut read, Vec::new(), command, &judged, runner);
    let rules = judged
        .detection
        .hits
        .iter()
        .chain(&found.hits)
        .map(|h| h.rule.as_str().to_owned())
        .collect();
    (run, rules)
}

#[test]
fn the_file_pinned_is_the_one_the_kernel_opens() {
    // Review r3, findings 6 and 14: `link/..` is the directory above the link's
    // target, not the directory the link is in.
    let dir = tempfile::TempDir::new().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("sub/d")).unwrap();
    std::fs::write(ws.join("x.sh"), "echo top\n").unwrap();
    std::fs::write(ws.join("sub/x.sh"), "echo beside-the-target\n").unwrap();
    std::os::unix::fs::symlink("sub/d", ws.join("link")).unwrap();
    let (run, rules) = pin_in(&ws, "sh link/../x.sh", BASH);
    assert!(rules.is_empty(), "{rules:?}");
    std::fs::write(ws.join("sub/x.sh"), "echo CHANGED\n").unwrap();
    assert_eq!(bash_in(&ws, &run), "beside-the-target\n", "{run}");
    // A program named through a link into the workspace is not a system program:
    // `./a/../../../usr/bin/x` is the workspace's usr/bin/x, judged.
    std::fs::create_dir_all(ws.join("s/d1/d2/d3")).unwrap();
    std::fs::create_dir_all(ws.join("usr/bin")).unwrap();
    std::os::unix::fs::symlink("s/d1/d2/d3", ws.join("a")).unwrap();
    let x = ws.join("usr/bin/x");
    std::fs::write(&x, "rm -rf victim\n").unwrap();
    std::fs::set_permissions(&x, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (_, rules) = pin_in(&ws, "./a/../../../../usr/bin/x", BASH);
    assert_eq!(rules, ["fs.rm_recursive"]);
    // A program missing when the command is judged asks, unless a compiler before
    // it in the command writes it.
    let (run, rules) = pin_in(&ws, "tar xf a.tar && ./run", BASH);
    assert_eq!(rules, ["exec.unjudged_script"], "{run}");
    for built in ["cc -o m m.c && ./m", "gcc -O2 m.c && ./a.out"] {
        let (run, rules) = pin_in(&ws, built, BASH);
        assert_eq!((run.as_str(), rules.len()), (built, 0), "{rules:?}");
    }
    let (_, rules) = pin_in(&ws, "cd sub && cc -o m m.c && cd .. && ./m", BASH);
    assert_eq!(rules, ["exec.unjudged_script"], "built elsewhere");
}

#[test]
fn a_shebang_runs_only_a_system_program_given_no_file() {
    // Review r3, finding 4.
    for shebang in [
        "#!/bin/bash x.sh",
        "#!/usr/bin/env -S python3 -m xx",
        "#!/ws/bin/python3",
        "#!/usr/bin/python3 -mxx",
    ] {
        let text = format!("{shebang}\necho hi\n");
        let (run, rules) = pin("./run", BASH, &[("/ws/run", &text)]);
        assert_eq!(run, "./run", "{shebang}");
        assert_eq!(rules, ["exec.unjudged_script"], "{shebang}");
    }
    let (run, rules) = pin("./run", BASH, &[("/ws/run", "#!/bin/sh -eu\necho hi\n")]);
    assert!(rules.is_empty(), "{rules:?}");
    assert_eq!(
        run,
        "'/bin/sh' '-eu' -c -- '#!/bin/sh -eu\necho hi\n' ./run"
    );
}

#[test]
fn what_is_handed_the_text_cannot_be_redefined_by_the_input() {
    // Review r3, finding 5: a function or alias named after what the pinner
    // emits, defined by the input or a script it runs, leaves the command as
    // written (and asks).
    let files = [("/ws/ok.sh", "echo ok\n")];
    for command in [
        "printf() { cat x; }; . ./ok.sh",
        "builtin() { cat x; }; . ./ok.sh",
        "command() { cat x; }; ./ok.sh",
        "sh() { cat x; }; sh ok.sh",
        "function bash { cat x; }; bash ok.sh",
        "shopt -s expand_aliases; alias printf='cat x #'\n. ./ok.sh",
        "BASH_CMDS[sh]=./evil; sh ok.sh",
    ] {
        let (run, rules) = pin(command, BASH, &files);
        assert_eq!(run, command, "left as written");
        assert!(
            rules.contains(&"exec.shadow_command".to_owned()),
            "{command}: {rules:?}"
        );
        assert!(
            rules.contains(&"exec.unjudged_script".to_owned()),
            "{command}: {rules:?}"
        );
    }
    let files = [
        ("/ws/a.sh", "printf() { cat x; }\n. ./ok.sh\n"),
        ("/ws/ok.sh", "echo ok\n"),
    ];
    let (run, rules) = pin("bash a.sh", BASH, &files);
    assert_eq!(run, "bash a.sh", "a script's own definition: {rules:?}");
    // A shell whose input a human approved though dangerous may have any.
    let unsure = Runner::of(
        &[
            hermetic_detect::Reader::Shell {
                bash: true,
                interactive: false,
            },
            hermetic_detect::Reader::Unknown,
        ],
        false,
    );
    let (run, rules) = pin(". ./ok.sh", unsure, &files);
    assert_eq!(
        (run.as_str(), rules.as_slice()),
        (". ./ok.sh", &["exec.unjudged_script".to_owned()][..])
    );
}

#[test]
fn text_typed_into_an_interactive_shell_is_pinned_only_when_it_reads_as_written() {
    // Review r3, finding 1: a tab in the script, typed at a terminal, completes
    // and closes the quote early.
    let shell = |interactive| hermetic_detect::Reader::Shell {
        bash: true,
        interactive,
    };
    let pty = Runner::of(&[shell(false)], true);
    let interactive = Runner::of(&[shell(true)], false);
    for (runner, text) in [
        (pty, "echo fo\t\n"),
        (pty, "echo \u{1b}b\n"),
        (pty, "echo \r\n"),
        (pty, "echo é\n"),
        (interactive, "echo a!b\n"),
        (pty, "#!/bin/sh\necho a\n"),
    ] {
        let (run, rules) = pin("sh x.sh\n", runner, &[("/ws/x.sh", text)]);
        assert_eq!(run, "sh x.sh\n", "{text:?}");
        assert!(
            rules.contains(&"exec.unjudged_script".to_owned()),
            "{text:?}: {rules:?}"
        );
    }
    let (run, rules) = pin("sh x.sh\n", pty, &[("/ws/x.sh", "echo plain\n")]);
    assert!(rules.is_empty(), "{rules:?}");
    assert_eq!(run, "sh -c -- 'echo plain\n' x.sh\n");
    // A tab is fine where no terminal reads it.
    let (run, _) = pin("sh x.sh\n", interactive, &[("/ws/x.sh", "echo\tplain\n")]);
    assert_ne!(run, "sh x.sh\n");
}

#[test]
fn the_host_opens_for_reading_only_regular_files() {
    // Review r3, finding 10: on `local` a script's name may lead (by a symlink out of
    // the workspace) to a device or FIFO; the host examines it as a path and opens
    // nothing else. inotify sees every open for reading (none for O_PATH).
    use rustix::fs::inotify;
    use std::os::fd::AsFd;
    let dir = tempfile::TempDir::new().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let fifo = dir.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    std::os::unix::fs::symlink(&fifo, ws.join("f.sh")).unwrap();
    std::fs::write(dir.path().join("plain.sh"), "echo hi\n").unwrap();
    let watch =
        inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC).unwrap();
    inotify::add_watch(&watch, dir.path(), inotify::WatchFlags::OPEN).unwrap();
    let opened = |n: &str| {
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let mut names = Vec::new();
        let mut events = inotify::Reader::new(watch.as_fd(), &mut buf);
        while let Ok(e) = events.next() {
            names.push(
                e.file_name()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
        names.iter().any(|x| x == n)
    };
    let ws_fd = std::fs::File::open(&ws).unwrap();
    // Beneath the workspace the absolute link leads out; on the host's own view the
    // FIFO is found, examined and refused.
    assert!(read_host(Some(ws_fd.as_fd()), Path::new("f.sh"), 16).is_err());
    let (read, _) = read_host(None, &ws.join("f.sh"), 16).unwrap();
    assert!(matches!(read, FileRead::Unreadable(_)), "{read:?}");
    assert!(!opened("fifo"), "the FIFO was never opened");
    // A regular file is opened and read.
    let (read, real) = read_host(None, &dir.path().join("plain.sh"), 16).unwrap();
    assert!(matches!(read, FileRead::Read { .. }), "{read:?}");
    assert_eq!(real, dir.path().join("plain.sh"));
    assert!(opened("plain.sh"), "the watch sees an open for reading");
    // No magic link: this process's own descriptors are not scripts.
    let (read, _) = read_host(None, Path::new("/proc/self/fd/0"), 16).unwrap();
    assert!(matches!(read, FileRead::Unreadable(_)), "{read:?}");
}
