"""Benchmark of the preference pipeline: segments/s through the wrapper and labels/s through the pipeline.

1. Segments/s: a scripted Wordle agent plays in ``PreferenceEnv`` with ``--segment-length`` steps per clip and
   a list as the clip sink, against the same games played in the bare environment (the wrapper's overhead is
   the ratio of the two, measured in one run).
2. Labels/s: clips are fed to the multi-process pipeline (``trainers.algorithms.reward.pipeline``, collect only:
   selection, synthetic labelling, recording as RLDS, the never-dropping label queue and the routed
   databases), with a queue large enough that nothing is dropped; the rate is labels stored by the trainer
   process per second, from the first clip to the last label (process start-up excluded).

    .venv/bin/python bench/preferences.py                  # 2,000 games, 500 labels
    .venv/bin/python bench/preferences.py --games 10000 --labels 2000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rlds_lang.env import run_episode  # noqa: E402
from rlds_lang.preferences.wrapper import PreferenceEnv  # noqa: E402
from rlds_lang.wordle.env import WordleEnv  # noqa: E402
from rlds_lang.wordle.policies import make_policy  # noqa: E402
from trainers.algorithms.reward.pipeline import PipelineConfig, PreferencePipeline  # noqa: E402


def _play(env, games: int) -> tuple[int, float]:
    """Steps taken and seconds spent playing ``games`` seeded games."""
    policy = make_policy("random_mixture", prob_smart=0.5)
    steps, started = 0, time.perf_counter()
    for seed in range(games):
        steps += len(run_episode(env, policy, seed=seed).actions)
    return steps, time.perf_counter() - started


def segments_per_second(games: int, segment_length: int) -> dict[str, float]:
    """Clips/s and steps/s through the wrapper, and the bare environment's steps/s."""
    _, bare_seconds = _play(WordleEnv(seed=0), games)
    clips: list = []
    steps, seconds = _play(PreferenceEnv(WordleEnv(seed=0), clip_sink=clips.append, segment_length=segment_length),
                           games)
    return {"segments_per_s": len(clips) / seconds, "wrapped_steps_per_s": steps / seconds,
            "bare_steps_per_s": steps / bare_seconds, "wrapper_slowdown": seconds / bare_seconds}


def labels_per_second(labels: int) -> dict[str, float]:
    """Labels/s the pipeline stores (collect only), one label per clip after the first."""
    env_clips: list = []
    env = PreferenceEnv(WordleEnv(seed=1), clip_sink=env_clips.append)
    policy = make_policy("random_mixture", prob_smart=0.5)
    for seed in range(labels + 1):
        run_episode(env, policy, seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        config = PipelineConfig(out=tmp, train=False, clip_queue_size=len(env_clips) + 1,
                                label_queue_size=labels + 1)
        with PreferencePipeline(config) as pipeline:
            started = time.perf_counter()
            for clip in env_clips:
                pipeline.clip_sink(clip)
            stored = pipeline.wait_for_labels(labels, timeout=3600)
            seconds = time.perf_counter() - started
    return {"labels": float(stored), "labels_per_s": stored / seconds, "dropped": float(pipeline.summary["clips_dropped"])}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Runs both measurements and prints their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--segment-length", type=int, default=40)
    parser.add_argument("--labels", type=int, default=500)
    args = parser.parse_args(argv)
    figures = segments_per_second(args.games, args.segment_length)
    print(f"wrapper: {figures['segments_per_s']:,.0f} segments/s ({args.segment_length}-step clips), "
          f"{figures['wrapped_steps_per_s']:,.0f} steps/s vs {figures['bare_steps_per_s']:,.0f} bare "
          f"(x{figures['wrapper_slowdown']:.2f} time) over {args.games} games")
    figures.update(labels_per_second(args.labels))
    print(f"pipeline: {figures['labels_per_s']:,.1f} labels/s ({figures['labels']:.0f} labels selected, labelled, "
          f"recorded and routed across processes; {figures['dropped']:.0f} clips dropped)")
    return figures


if __name__ == "__main__":
    main()
