"""Benchmark of the Visual Dialogue pipeline: dialogues/s through the reader and the dataset recipe, and
environment steps/s through our server (HTTP client backend, local TF-IDF answerer + guesser).

Writes a synthetic manual folder in the published layout (``--dialogues`` per split, train and val,
``--dim`` wide features), then times separately: reading the val dialogues (``read_split``), recording them
through ``loggers.record`` in ``env_stops`` mode (``record_dialogues``, cached rewards), and playing
``--steps`` questions through ``VisDialEnv`` -> ``HttpBackend`` -> our FastAPI server on 127.0.0.1 (an
untrained guesser of the default size: the timing does not depend on its weights).

    .venv/bin/python bench/visdial.py                            # 200 dialogues, 200 steps
    .venv/bin/python bench/visdial.py --dialogues 2000 --steps 1000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from loggers.visdial_recipes import record_dialogues  # noqa: E402
from rlds_lang.visdial.backend import build_local_backend  # noqa: E402
from rlds_lang.visdial.data import (  # noqa: E402
    FEATURES_FILE,
    FeatureStore,
    cache_file,
    load_reward_cache,
    read_split,
)
from rlds_lang.visdial.env import VisDialEnv  # noqa: E402
from rlds_lang.visdial.fixtures import write_fixture  # noqa: E402
from rlds_lang.visdial.http import HttpBackend  # noqa: E402
from rlds_lang.visdial.rewards import RewardConfig  # noqa: E402
from rlds_lang.visdial.server import BackendServer  # noqa: E402
from trainers.tasks.visdial_guesser import Guesser, GuesserConfig  # noqa: E402


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Runs the benchmark and prints the rate of each stage."""
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=200)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--dim", type=int, default=4096)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        write_fixture(tmp, {"train": args.dialogues, "val": args.dialogues}, dim=args.dim)
        start = time.perf_counter()
        dialogues = list(read_split(tmp, "val"))
        rates["reader (dialogues/s)"] = len(dialogues) / (time.perf_counter() - start)
        rows = {"rank": load_reward_cache(os.path.join(tmp, cache_file("val", "rank")))}
        start = time.perf_counter()
        n = sum(1 for _ in record_dialogues(dialogues, rows, RewardConfig("env_stops", yn_kind="hard"), "bench",
                                            work_dir=tmp))
        rates["recipe, env_stops (dialogues/s)"] = n / (time.perf_counter() - start)
        backend = build_local_backend(tmp, Guesser(GuesserConfig(), args.dim))
        features = FeatureStore(os.path.join(tmp, FEATURES_FILE), "val")
        with BackendServer(backend) as server:
            client = HttpBackend(server.url)
            env = VisDialEnv(dialogues, client, RewardConfig("10_stop"), features=features)
            questions = [q for d in dialogues for q in d.questions]
            start, steps = time.perf_counter(), 0
            while steps < args.steps:
                env.reset()
                for q in questions[steps % len(questions):][:10]:
                    steps += 1
                    if env.step(q + "?").last() or steps >= args.steps:
                        break
            rates["server steps (steps/s)"] = steps / (time.perf_counter() - start)
            client.close()
        features.close()
    for stage, rate in rates.items():
        print(f"{stage:34s} {rate:10.1f}")
    return rates


if __name__ == "__main__":
    main()
