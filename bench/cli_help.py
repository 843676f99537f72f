"""Benchmark of the command line's help: the wall time (and CPU time) of ``rlds-lang --help`` and of every command's
and sub-command's ``--help``, each in a fresh process as a user runs it, against the target of 1 s.

The command paths are those of the parser itself (``trainers.cli.main.build_parser``), so a new command is timed
without a change here. Each help runs ``--repeats`` times; the table shows the median and the fastest wall time and
the median CPU time (user + system) of each, with a verdict computed from the median wall time. The machine's load
average is printed first: on a busy machine the wall time exceeds the CPU time.

    .venv/bin/python bench/cli_help.py                 # every help, 3 runs each
    .venv/bin/python bench/cli_help.py --repeats 5 --only "" "train bc" eval
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the target of every help's wall time, in seconds.
TARGET_S = 1.0

PATHS = """
from trainers.cli.commands import command_paths
from trainers.cli.main import build_parser

for path in command_paths(build_parser()):
    print("\\t".join(path))
"""


def command_paths() -> list[tuple[str, ...]]:
    """Every command path of ``rlds-lang`` (the top level is ``()``), from its parser, in a separate process."""
    run = subprocess.run([sys.executable, "-c", PATHS], cwd=REPO, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    return [tuple(line.split("\t")) if line else () for line in run.stdout.split("\n")[:-1]]


def timed_help(path: tuple[str, ...]) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of one ``rlds-lang PATH --help`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "trainers.cli", *path, "--help"], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    """Times the helps and prints the table with each verdict and the slowest one's."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each help (default: 3)")
    parser.add_argument("--only", nargs="+", default=None, metavar="PATH",
                        help='time these command paths only ("" is the top level, e.g. "train bc")')
    args = parser.parse_args(argv)
    paths = [tuple(p.split()) for p in args.only] if args.only is not None else command_paths()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; "
          f"{args.repeats} runs of each help; target < {TARGET_S:g} s (median wall)")
    start_only = [timed_help_of_python() for _ in range(args.repeats)]
    print(f"python start alone (python -c pass): median {statistics.median(start_only):.2f} s")
    print(f"{'command':<36} {'median':>7} {'fastest':>7} {'CPU':>6}  verdict")
    rows = []
    for path in paths:
        runs = [timed_help(path) for _ in range(args.repeats)]
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        rows.append((path, wall))
        verdict = "meets" if wall < TARGET_S else "MISSES"
        print(f"{'rlds-lang ' + ' '.join(path):<36} {wall:>6.2f}s {min(w for w, _ in runs):>6.2f}s {cpu:>5.2f}s  "
              f"{verdict}", flush=True)
    slowest_path, slowest = max(rows, key=lambda row: row[1])
    missed = sum(wall >= TARGET_S for _, wall in rows)
    print(f"{len(rows)} helps; slowest: rlds-lang {' '.join(slowest_path)} --help, median {slowest:.2f} s; "
          f"{missed} at or over {TARGET_S:g} s: {'target met' if not missed else 'target missed'}")


def timed_help_of_python() -> float:
    """Wall seconds of ``python -c pass``: what any command costs before its first import."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
