#!/usr/bin/env python3
"""Refreshes startup-order.txt: the functions `hermetic` runs to start and serve its
first calls, which build.rs has the linker lay out first (see build.rs for why).

Each round builds the release binary with the current list, runs the start bench
(`cargo bench -p hermetic-cli --bench start`: stdio and HTTP starts, first calls, an
idle server, 1,000 sessions) under `perf record -e page-faults -d`, and appends the
symbols whose pages faulted. The kernel maps code 64 KiB around each fault, so a round
sees only the first symbol touched in each such window outside the listed region:
repeat until a round adds few (default: 3 rounds). Needs perf (software events do)
and the tool chain of the README; run from anywhere in the repository.

A callgrind profile names every function run, not only the first per window, and
makes a better seed: `--callgrind FILE` adds the functions of one
(`valgrind --tool=callgrind --demangle=no`). valgrind cannot run the default engine
(the pooling allocator reserves terabytes of address space); the committed list was
seeded from a start of a build with `EngineConfig::pooling` off, then refined here.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CLI = Path(__file__).resolve().parent
ROOT = CLI.parent.parent
ORDER = CLI / "startup-order.txt"


def read_order():
    if not ORDER.exists():
        return []
    return [line for line in ORDER.read_text().splitlines() if line]


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


def faulted_symbols(target_dir, binary):
    """Symbols of `binary` whose pages faulted during the start bench."""
    env = dict(os.environ, HERMETIC_BENCH_BIN=str(binary), HERMETIC_BENCH_CALLS="3")
    bench = ["cargo", "bench", "-p", "hermetic-cli", "--bench", "start"]
    subprocess.run(bench + ["--no-run"], cwd=ROOT, env=env, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "faults.data"
        record = ["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d"]
        subprocess.run(
            record + ["-o", str(data), "--"] + bench,
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        report = subprocess.run(
            ["perf", "report", "-i", str(data), "--stdio", "--mem-mode", "--no-demangle",
             "--sort=dso_daddr,symbol_daddr", "-g", "none", "--percent-limit", "0"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    symbols = []
    for line in report.splitlines():
        # "  0.07%  hermetic  [.] _ZN...E"
        fields = line.split()
        if (len(fields) >= 4 and fields[1] == binary.name and fields[2] in ("[.]", "[k]")
                and not fields[3].startswith("0x")):
            symbols.append(fields[3])
    return symbols


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="perf rounds (default 3)")
    parser.add_argument("--callgrind", help="add the functions a callgrind profile saw run")
    args = parser.parse_args()
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = target_dir / "release" / "hermetic"
    order = read_order()
    listed = set(order)

    def add(symbols, source):
        new = [s for s in dict.fromkeys(symbols) if s not in listed]
        order.extend(new)
        listed.update(new)
        ORDER.write_text("".join(s + "\n" for s in order))
        print(f"{source}: {len(new)} symbols added, {len(order)} listed", flush=True)
        return len(new)

    if args.callgrind:
        add(callgrind_functions(args.callgrind, binary.name), "callgrind")
    for round_ in range(1, args.rounds + 1):
        build = ["cargo", "build", "--release", "-p", "hermetic-cli"]
        subprocess.run(build, cwd=ROOT, check=True)
        add(faulted_symbols(target_dir, binary), f"round {round_}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
