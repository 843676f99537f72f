"""Benchmark of the two test tiers (``docs/guides/commands.md``): the wall time and the CPU time of the everyday tier
and of the whole suite, each run as documented (two pytest-xdist workers), against their targets on 2 cores
(everyday 5 minutes, whole suite 12 minutes).

The load average is printed before and after each run: on a busy machine the wall time exceeds what the tier takes
on a quiet one, and the CPU time (user + system of pytest and its workers) says how much work it did either way.
The verdict is computed from the wall time (a run whose tests failed has none). Pass extra pytest arguments after ``--``.

    .venv/bin/python bench/test_tiers.py                    # the everyday tier
    .venv/bin/python bench/test_tiers.py --tiers everyday full
    .venv/bin/python bench/test_tiers.py -- -x              # stop at the first failure
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: each tier's pytest arguments (after ``python -m pytest -q``) and its target wall time in seconds on 2 cores.
TIERS: dict[str, tuple[list[str], float]] = {
    "everyday": (["-n", "2", "--dist", "loadfile", "-m", "not slow"], 300.0),
    "full": (["-n", "2", "--dist", "loadfile"], 720.0),
}


def children_cpu_seconds() -> float:
    """User plus system CPU seconds of every finished child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_tier(name: str, extra: list[str]) -> dict[str, object]:
    """Runs one tier; returns its wall and CPU seconds, pytest's summary line, exit status and load averages."""
    arguments, target = TIERS[name]
    load_before = os.getloadavg()[0]
    cpu_before, started = children_cpu_seconds(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments, *extra],
                          cwd=REPO, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - started, children_cpu_seconds() - cpu_before
    summary = next((line.strip("= ") for line in reversed(done.stdout.splitlines())
                    if re.search(r"\d+ (passed|failed|error)|no tests ran", line)), "no pytest summary")
    return {"tier": name, "wall": wall, "cpu": cpu, "target": target, "summary": summary, "status": done.returncode,
            "load": (load_before, os.getloadavg()[0]), "tail": done.stdout[-2000:] + done.stderr[-2000:]}


def main(argv: list[str] | None = None) -> int:
    """Times the chosen tiers and prints a line each with its verdict; exit status 1 when a tier's tests failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiers", nargs="+", choices=list(TIERS), default=["everyday"])
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} cores; pytest -n 2 --dist loadfile")
    print(f"{'tier':9} {'wall':>9} {'cpu':>9} {'target':>8}  {'load before/after':17}  verdict; pytest")
    failed = False
    for name in args.tiers:
        row = run_tier(name, args.pytest_args)
        met = (f"tests failed (pytest exit status {row['status']})" if row["status"] != 0 else
               "met" if row["wall"] <= row["target"] else "NOT met")
        load = "{:.1f} / {:.1f}".format(*row["load"])
        print(f"{name:9} {row['wall']:8.0f}s {row['cpu']:8.0f}s {row['target']:7.0f}s  {load:17}  {met}; "
              f"{row['summary']}", flush=True)
        if row["status"] != 0:
            failed = True
            print(row["tail"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
