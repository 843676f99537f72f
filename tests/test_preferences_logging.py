"""Preferences as RLDS: clips and judgements round-trip losslessly (unicode text, float arrays) through the raw
logs and a built TFDS dataset, a killed session keeps its judgements, and `train reward` learns from the dataset."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loggers.preferences import (
    PreferenceRecorder,
    read_clips,
    read_preference_logs,
    record_judgements,
)
from loggers.preferences_dataset import RAW_SPLITS, read_judgements
from rlds_lang.preferences.labellers import SyntheticLabeller, judge
from rlds_lang.preferences.segments import Segmenter
from rlds_lang.preferences.types import Clip, Judgement, Label

ROOT = Path(__file__).resolve().parents[1]
TRICKY = ["", "é\u0301 — “quotes”", "🟩🟨⬛ emoji", "tab\tnew\nline", "zero\u200bwidth", "\x01ctl", "日本語"]


def text_clips() -> list[Clip]:
    """Clips of a text episode whose observations and actions are awkward unicode strings (one is padded)."""
    segmenter = Segmenter(segment_length=3)
    clips = segmenter.start_episode(TRICKY[0], "txt")
    for t in range(1, len(TRICKY)):
        clips += segmenter.step(TRICKY[-t], float(t) / 3.0, TRICKY[t], last=t == len(TRICKY) - 1)
    return clips


def array_clips(rng: np.random.Generator) -> list[Clip]:
    """Clips of an array episode: float32 images, float64 actions with values float32 cannot hold, int8 fields."""
    segmenter = Segmenter(segment_length=4)
    clips = segmenter.start_episode({"image": rng.normal(size=(3, 4, 1)).astype(np.float32),
                                     "flags": np.array([1, -2], np.int8)}, "arr")
    for t in range(6):
        obs = {"image": rng.normal(size=(3, 4, 1)).astype(np.float32), "flags": np.array([t, -t], np.int8)}
        clips += segmenter.step(np.array([0.1 + t, 1e-300]), 1.0 / 7.0 * t, obs, last=t == 5)
    return clips


def assert_same_clip(a: Clip, b: Clip) -> None:
    """Field by field, arrays compared exactly with their dtype."""
    assert (a.clip_id, a.source_episode_id, a.start, a.stop, a.rewards, a.padding) == (
        b.clip_id, b.source_episode_id, b.start, b.stop, b.rewards, b.padding)
    for x, y in zip(list(a.observations) + list(a.actions), list(b.observations) + list(b.actions)):
        if isinstance(x, dict):
            assert sorted(x) == sorted(y)
            for key in x:
                assert x[key].dtype == y[key].dtype and np.array_equal(x[key], y[key])
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        else:
            assert type(x) is str and type(y) is str and x.encode() == y.encode()


def sample_judgements() -> list[Judgement]:
    """Judgements about text pairs and array pairs, every label, with timing and selection metadata."""
    t, a = text_clips(), array_clips(np.random.default_rng(0))
    labels = [Label.LEFT, Label.RIGHT, Label.EQUAL, Label.SKIP]
    return [Judgement(t[0], t[1], labels[0], "synthetic", 0.0, "random", 0.0),
            Judgement(t[1], t[0], labels[1], "human:ann", 3.25, "manual", 0.0),
            Judgement(a[0], a[1], labels[2], "synthetic", 0.001, "disagreement", 0.125),
            Judgement(a[1], a[0], labels[3], "human:ann", 12.5, "disagreement", 1e-9)]


def assert_same_judgements(got: list[Judgement], want: list[Judgement]) -> None:
    """Same judgements in the same order, clips included."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.label, g.labeller, g.seconds, g.selection, g.disagreement) == (
            w.label, w.labeller, w.seconds, w.selection, w.disagreement)
        assert_same_clip(g.left, w.left)
        assert_same_clip(g.right, w.right)


def test_judgements_and_clips_round_trip_losslessly_through_the_raw_logs(tmp_path):
    want = sample_judgements()
    assert record_judgements(tmp_path / "logs", want, session_id="s-1", labeller="mixed") == 4
    assert_same_judgements(list(read_preference_logs(tmp_path / "logs")), want)
    clips = read_clips(tmp_path / "logs")
    assert sorted(clips) == ["arr:0", "arr:4", "txt:0", "txt:3"]  # each clip recorded once
    assert clips["txt:3"].padding == [False, False, False] and clips["arr:4"].padding == [False, False, True, True]
    assert_same_judgements(list(read_judgements(tmp_path / "logs", "all")), want)
    with pytest.raises(FileExistsError, match="not empty"):
        record_judgements(tmp_path / "logs", want, session_id="s-1")
    with pytest.raises(ValueError, match="expected one of"):
        list(read_judgements(tmp_path / "logs", "test"))


def test_judgements_whose_games_overlap_split_by_game_so_no_validation_clip_is_trained_on(tmp_path):
    """Every pair among the clips of 8 games, so each game's clips are in many pairs: a split by pair would put
    every game on both sides. The raw-log reader and the builder's rows split by game (episode)."""
    from loggers.preferences import judgement_examples

    clips = []
    for e in range(8):
        segmenter = Segmenter(segment_length=2)
        clips += segmenter.start_episode(f"s{e}", f"game{e}")
        for t in range(3):
            clips += segmenter.step(f"a{t}", float(t), f"o{t}", last=t == 2)
    labeller = SyntheticLabeller(seed=0)
    want = [judge(labeller, a, b, "random") for i, a in enumerate(clips) for b in clips[i + 1:]]
    record_judgements(tmp_path / "logs", want, session_id="s")
    splits = {split: list(read_judgements(tmp_path / "logs", split)) for split in RAW_SPLITS[:-1]}
    assert sum(map(len, splits.values())) == len(want)
    games = {split: [{j.left.source_episode_id, j.right.source_episode_id} for j in got] for split, got in splits.items()}
    train, val = set().union(*games["train"]), set().union(*games["validation"])
    assert train and val and not train & val  # no validation clip is in a training judgement
    assert all(len(pair) == 2 and len(pair & val) == 1 for pair in games["straddling"])
    rows = {split: sorted(ex["judgement_id"] for _, ex in judgement_examples(tmp_path / "logs", split))
            for split in RAW_SPLITS[:-1]}
    ids = {j.pair_key: i for i, j in enumerate(want)}  # the session's judgements are numbered in order
    assert rows == {split: sorted(f"s:{ids[j.pair_key]}" for j in got) for split, got in splits.items()}


def test_the_builder_leaves_out_empty_splits_and_stops_without_training_judgements(tmp_path):
    """TFDS cannot build an empty split: pairs within one side (as the pipeline's labeller makes) have no
    straddling split, and judgements all about validation games give no training split, which is an error."""
    import types

    from builders.preferences.preferences_dataset_builder import Builder
    from rlds_lang.preferences.database import EpisodeSplit

    clips = []
    for e in range(8):
        segmenter = Segmenter(segment_length=2)
        clips += segmenter.start_episode(f"s{e}", f"game{e}")
        clips += segmenter.step("a", 1.0, "o", last=True)
    sides = EpisodeSplit()
    labeller = SyntheticLabeller(seed=0)
    same_side = [judge(labeller, a, b, "random") for i, a in enumerate(clips) for b in clips[i + 1:]
                 if sides.side(a) == sides.side(b)]
    record_judgements(tmp_path / "same", same_side, session_id="s")
    builder = Builder(data_dir=str(tmp_path / "data"))
    generators = builder._split_generators(types.SimpleNamespace(manual_dir=tmp_path / "same"))
    assert sorted(generators) == ["train", "validation"]
    only_validation = [j for j in same_side if sides.side(j.left) == "validation"]
    record_judgements(tmp_path / "val", only_validation, session_id="s")
    with pytest.raises(ValueError, match=rf"no training judgement .*'train': 0, 'validation': {len(only_validation)}, "
                                         r"'straddling': 0"):
        builder._split_generators(types.SimpleNamespace(manual_dir=tmp_path / "val"))


def test_a_killed_session_keeps_every_judgement_it_wrote(tmp_path):
    """A recorder killed (os._exit, no close) after its judgements still yields all of them, the last label too."""
    script = ("import os, sys; sys.path.insert(0, 'tests')\n"
              "from test_preferences_logging import sample_judgements\n"
              "from loggers.preferences import PreferenceRecorder\n"
              f"recorder = PreferenceRecorder({str(tmp_path / 'logs')!r}, 'killed')\n"
              "session = recorder.session('s-kill', 'synthetic')\n"
              "for j in sample_judgements(): session.write(j)\n"
              "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                   check=True, capture_output=True, timeout=120)
    assert_same_judgements(list(read_preference_logs(tmp_path / "logs")), sample_judgements())


def test_missing_clip_is_a_clear_error(tmp_path):
    with PreferenceRecorder(tmp_path / "logs", "r") as recorder:
        session = recorder.session("s")
        session.clips = None  # the caller forgot to record the clips
        session.write(sample_judgements()[0])
    with pytest.raises(ValueError, match=r"session s judgement 0 names clip\(s\) \['txt:0', 'txt:3'\]"):
        list(read_preference_logs(tmp_path / "logs"))


def test_built_dataset_gives_the_episode_splits_back_and_trains_a_reward_model(tmp_path):
    import tensorflow_datasets as tfds
    import torch

    from builders.preferences.preferences_dataset_builder import Builder
    from trainers.algorithms.reward.model import RewardModelConfig
    from trainers.algorithms.reward.trainer import train_reward
    from trainers.core.model import ModelConfig

    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    clips = []
    for e in range(12):  # array episodes whose true reward is the image mean: learnable
        segmenter = Segmenter(segment_length=3)
        clips += segmenter.start_episode(rng.normal(size=4).astype(np.float32), f"e{e}")
        for t in range(6):
            obs = rng.normal(loc=e / 6.0 - 1.0, size=4).astype(np.float32)
            clips += segmenter.step(np.zeros(1, np.float32), float(obs.astype(np.float64).mean()), obs, last=t == 5)
    labeller = SyntheticLabeller(seed=0)
    pairs = [(clips[i], clips[j]) for i in range(len(clips)) for j in range(i + 1, len(clips))][::3]
    # float64 values that float32 would round (1.0.0 stored them as tf.train.FloatList and did, now and then)
    want = [dataclasses.replace(judge(labeller, a, b, "random"), seconds=k / 3 + 0.1, disagreement=k / 7)
            for k, (a, b) in enumerate(pairs)]
    assert any(np.float32(c.rewards[0]) != c.rewards[0] for c in clips)
    record_judgements(tmp_path / "logs", want, session_id="s", labeller="synthetic")

    builder = Builder(data_dir=str(tmp_path / "data"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(tmp_path / "logs")))
    built = {split: list(read_judgements(tmp_path / "data", split)) for split in RAW_SPLITS[:-1]}
    assert sum(map(len, built.values())) == len(want) and all(built.values())
    for split, got in built.items():  # the same episode split on raw logs
        assert sorted(j.pair_key for j in read_judgements(tmp_path / "logs", split)) == sorted(j.pair_key for j in got)
    by_key = {j.pair_key: j for j in want}
    for got in sum(built.values(), []):
        assert_same_judgements([got], [by_key[got.pair_key]])

    # the built validation split holds out whole episodes: given as --val_split, none of it is dropped
    config = RewardModelConfig(dataset=str(tmp_path / "data"), val_split="validation", out=str(tmp_path / "r0"),
                               steps=2, members=1, model=ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32))
    train_reward(config, progress=False)
    metrics = json.loads((tmp_path / "r0" / "metrics.json").read_text())
    assert (metrics["val_labels"], metrics["val_overlapping_dropped"]) == (len(built["validation"]), 0)
    config = RewardModelConfig(dataset=str(tmp_path / "data"), split="train+validation", val_fraction=0.3,
                               out=str(tmp_path / "reward"), steps=30, members=2, lr=3e-3, log_every=10,
                               model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32))
    result = train_reward(config, progress=False)  # validation holds out whole episodes
    metrics = json.loads((tmp_path / "reward" / "metrics.json").read_text())
    assert metrics["train_labels"] + metrics["val_labels"] + metrics["val_straddling_dropped"] == len(
        built["train"]) + len(built["validation"])
    assert metrics["val_labels"] > 0 and metrics["val_overlapping_dropped"] == 0
    assert metrics["val_accuracy"] == result.metrics["val_accuracy"] and metrics["val_accuracy"] > 0.6

    # the trained ensemble's disagreement drives pair selection: the chosen pairs are its top-scored candidates
    from rlds_lang.preferences.selection import PairSelector

    scored = []
    selector = PairSelector("disagreement", disagreement=lambda p: scored.append(result.model.disagreement(p))
                            or scored[-1], candidates=5, seed=0)
    chosen = selector.select(clips, 4)
    assert len(chosen) == 4 and len(scored[0]) == 20
    assert [p.disagreement for p in chosen] == pytest.approx(sorted(scored[0], reverse=True)[:4])


def test_guide_example_prints_exactly_what_it_says():
    from tests.test_docs_run import expected_prints, guide_code, run_code

    code = guide_code("preferences.md")
    assert expected_prints(code) == ["12 clips", "20 judgements read back"]
    assert run_code(code, "preferences.md").splitlines() == expected_prints(code)
