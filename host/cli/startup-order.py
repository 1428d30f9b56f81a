#!/usr/bin/env python3
"""Refreshes startup-order.txt: the functions (and data) `hermetic` touches to start and
serve its first calls, which build.rs has the linker lay out first (see build.rs for why).

The file is in blocks, in the order of use: `seed` (every function a start ran, from a
callgrind profile), `idle` (what a later start of `serve --http` with the bundled tools
touches until it is idle: the memory figure of the start bench), `bench` (the rest of
the start bench: stdio starts, first calls, compiling a tool, 1,000 sessions). Each
round builds the release binary with the current list, runs each workload under
`perf record -e page-faults -d` and appends the symbols whose pages faulted, and are
not listed yet, to the workload's block. The kernel maps code 64 KiB around each
fault, so a round sees only the first symbol touched in each such window outside the
listed region: repeat until rounds add few (default: 3 rounds). A symbol a workload
touches that is listed in a later block moves to the workload's block. Needs perf (software
events do) and the tool chain of the README; run from anywhere in the repository.

A callgrind profile names every function run, not only the first per window, and
makes the better seed: `--callgrind FILE` adds the functions of one
(`valgrind --tool=callgrind --demangle=no`) to `seed`. valgrind cannot run the default
engine (the pooling allocator reserves terabytes of address space); the committed seed
is from a start of a build with `EngineConfig::pooling` off.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = Path(__file__).resolve().parent
ROOT = CLI.parent.parent
ORDER = CLI / "startup-order.txt"
BLOCKS = ("seed", "idle", "bench")
HEADER = """\
# The functions (and data) `hermetic` touches to start and serve its first calls, which
# the linker lays out first (host/cli/build.rs says why). Blocks in the order of
# use; refresh with host/cli/startup-order.py. Lines starting with # are comments to
# lld, and names the binary lacks are skipped.
"""


def read_order():
    """The list's blocks: name -> symbols, in file order."""
    blocks = {name: [] for name in BLOCKS}
    current = blocks["seed"]
    if ORDER.exists():
        for line in ORDER.read_text().splitlines():
            if line.startswith("# block: "):
                current = blocks.setdefault(line.removeprefix("# block: ").strip(), [])
            elif line and not line.startswith("#"):
                current.append(line)
    return blocks


def write_order(blocks):
    text = HEADER + "".join(
        f"# block: {name}\n" + "".join(s + "\n" for s in symbols)
        for name, symbols in blocks.items()
    )
    ORDER.write_text(text)


def callgrind_functions(path, binary_name):
    """Functions of `binary_name` that a callgrind profile saw run."""
    objects, functions, current, seen = {}, {}, None, []
    pattern = re.compile(r"(c?ob|c?fn)=\((\d+)\)(?: (.*))?$")
    for line in Path(path).read_text(errors="replace").splitlines():
        match = pattern.match(line)
        if not match:
            continue
        kind, index, name = match.groups()
        if kind in ("ob", "cob"):
            if name:
                objects[index] = name
            if kind == "ob":
                current = objects.get(index, "")
        else:
            if name:
                # callgrind marks recursion levels as name'2, name'3...
                functions[index] = re.sub(r"'\d+$", "", name)
            if kind == "fn" and current and Path(current).name == binary_name:
                seen.append(functions[index])
    return seen


def record(command, data, env, until_idle=False):
    """Runs `command` under perf, recording page faults with their addresses. With
    `until_idle` the command is a server: stopped (SIGINT) a second after it says it
    is serving."""
    perf = ["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-o", str(data)]
    if not until_idle:
        subprocess.run(perf + ["--"] + command, cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        return
    server = subprocess.Popen(perf + ["--"] + command, cwd=ROOT, env=env, text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    said = []
    for line in server.stderr:
        said.append(line)
        if "serving" in line:
            break
    else:
        server.wait()
        sys.exit(f"the server did not start: {' '.join(command)}\n{''.join(said)}")
    time.sleep(1)
    os.killpg(server.pid, signal.SIGINT)
    server.communicate(timeout=60)


def symbols_faulted(data, binary):
    """Symbols of `binary` whose pages faulted in the recording `data`."""
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--mem-mode", "--no-demangle",
         "--sort=dso_daddr,symbol_daddr", "-g", "none", "--percent-limit", "0"],
        check=True, capture_output=True, text=True,
    ).stdout
    symbols = []
    for line in report.splitlines():
        # "  0.07%  hermetic  [.] _ZN...E" (data symbols as "name+0x10")
        fields = line.split()
        if len(fields) >= 4 and fields[1] == binary.name and fields[2] == "[.]":
            symbol = fields[3].split("+0x")[0]
            if not symbol.startswith("0x"):
                symbols.append(symbol)
    return symbols


def workloads(binary, tmp):
    """(block, command, is a server, environment) of each workload, in block order."""
    cache = tmp / "cache"
    serve = [str(binary), "serve", "--http", "127.0.0.1:0"]
    idle_env = dict(os.environ, HERMETIC_CACHE_DIR=str(cache))
    bench_env = dict(os.environ, HERMETIC_BENCH_BIN=str(binary), HERMETIC_BENCH_CALLS="3")
    bench = ["cargo", "bench", "-p", "hermetic-cli", "--bench", "start"]
    subprocess.run(bench + ["--no-run"], cwd=ROOT, env=bench_env, check=True)
    return [("idle", serve, True, idle_env), ("bench", bench, False, bench_env)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="perf rounds (default 3)")
    parser.add_argument("--callgrind", help="add the functions a callgrind profile saw run")
    args = parser.parse_args()
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = target_dir / "release" / "hermetic"
    blocks = read_order()
    listed = {s: name for name, symbols in blocks.items() for s in symbols}
    rank = {name: i for i, name in enumerate(blocks)}

    def add(block, symbols, source):
        """Appends to `block` the symbols not listed yet, and moves there those listed
        in a later block (used earlier than thought)."""
        new = moved = 0
        for s in dict.fromkeys(symbols):
            if s in listed and rank[listed[s]] <= rank[block]:
                continue
            if s in listed:
                blocks[listed[s]].remove(s)
                moved += 1
            else:
                new += 1
            blocks[block].append(s)
            listed[s] = block
        write_order(blocks)
        print(f"{source}: {new} added to {block}, {moved} moved there, {len(listed)} listed",
              flush=True)

    if args.callgrind:
        add("seed", callgrind_functions(args.callgrind, binary.name), "callgrind")
    for round_ in range(1, args.rounds + 1):
        subprocess.run(["cargo", "build", "--release", "-p", "hermetic-cli"], cwd=ROOT,
                       check=True)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            for block, command, server, env in workloads(binary, tmp):
                if server:
                    # A later start: the first puts the tools' code in the cache.
                    record(command, tmp / "first.data", env, until_idle=True)
                record(command, tmp / f"{block}.data", env, until_idle=server)
                add(block, symbols_faulted(tmp / f"{block}.data", binary), f"round {round_}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
