"""Kept shard logs (``loggers.roundtrip.record_and_read_cached`` through ``play_shard``): a resumable build."""

import os

import numpy as np
import pytest

import loggers.roundtrip
from loggers.roundtrip import CacheMismatchError
from loggers.wordle_recipes import play_shard
from rlds_lang.wordle.recipes import Recipe, Shard

BRANCHING = Recipe("cache", "optimal", episodes=2, branch_policy="wrong")


def _canon(value):
    """A comparable form of an episode's value: arrays as (dtype, shape, bytes), containers recursively."""
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        return (array.dtype.str, array.shape, array.tobytes() if array.dtype != object else repr(array.tolist()))
    return (type(value).__name__, value)


def _content(episodes):
    """Everything the episodes hold, exactly (dtypes and bytes of arrays, text as is)."""
    return [_canon(e) for e in episodes]


def test_cached_shard_equals_the_played_one_and_is_read_back_without_playing(tmp_path, monkeypatch):
    shard = Shard(BRANCHING, 0, 0, 2)
    played = _content(play_shard(shard))
    cached = _content(play_shard(shard, cache_dir=str(tmp_path)))
    assert cached == played and len(played) > 2  # the games and their branches
    assert sorted(os.listdir(tmp_path)) == ["cache-0000", "cache-0000-branch"]

    def never(*args, **kwargs):
        raise AssertionError("a complete shard was played again")

    monkeypatch.setattr(loggers.roundtrip, "record", never)
    assert _content(play_shard(shard, cache_dir=str(tmp_path))) == played


def test_an_interrupted_shard_is_recorded_again(tmp_path):
    shard = Shard(Recipe("cache", "optimal", episodes=2), 0, 0, 2)
    partial = tmp_path / "cache-0000.partial"
    (partial / "logs").mkdir(parents=True)
    (partial / "logs" / "junk").write_text("half-written")
    episodes = list(play_shard(shard, cache_dir=str(tmp_path)))
    assert len(episodes) == 2
    assert sorted(os.listdir(tmp_path)) == ["cache-0000"]


def test_a_folder_recorded_for_another_shard_is_refused(tmp_path):
    recipe = Recipe("cache", "optimal", episodes=3)
    list(play_shard(Shard(recipe, 0, 0, 2), cache_dir=str(tmp_path)))
    with pytest.raises(CacheMismatchError, match="cache-0000"):
        list(play_shard(Shard(recipe, 0, 0, 3), cache_dir=str(tmp_path)))
