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


@pytest.mark.parametrize("workers", [1, 2])
def test_prefill_records_every_shard_so_a_build_only_reads_them(tmp_path, monkeypatch, workers):
    from loggers.wordle_recipes import prefill_shard_cache
    from rlds_lang.wordle.recipes import shards

    recipes = [Recipe("fill", "random_mixture", '{"prob_smart": 0.5}', episodes=5, seed=3),
               Recipe("fill_eval", "optimal", episodes=2, seed=9)]
    pieces = shards(recipes, shard_size=2)
    assert prefill_shard_cache(pieces, tmp_path, workers=workers, progress=False) == 7
    assert sorted(os.listdir(tmp_path)) == ["fill-0000", "fill-0001", "fill-0002", "fill_eval-0000"]
    played = [_content(play_shard(piece)) for piece in pieces]

    def never(*args, **kwargs):
        raise AssertionError("a prefilled shard was played again")

    monkeypatch.setattr(loggers.roundtrip, "record", never)
    assert [_content(play_shard(piece, cache_dir=str(tmp_path))) for piece in pieces] == played
    assert prefill_shard_cache(pieces, tmp_path, workers=1, progress=False) == 7  # complete: only read back


def test_prefill_refuses_no_workers(tmp_path):
    from loggers.wordle_recipes import prefill_shard_cache

    with pytest.raises(ValueError, match="workers"):
        prefill_shard_cache([], tmp_path, workers=0)


def test_the_cache_key_of_a_recipe_without_the_later_branch_options_is_unchanged():
    """Caches recorded before ``branch_at_turn``, ``branches_per_turn`` and ``branch_min_turns`` existed stay valid."""
    import dataclasses

    before = {"run_name": "cache", "policy": "optimal", "policy_params": "{}", "episodes": 2, "mode": "fixed",
              "rule": "official", "answers": "official_answers", "guesses": "official_guesses", "seed": 0,
              "branch_policy": "wrong", "branch_params": "{}"}
    assert BRANCHING.key() == before
    assert dataclasses.replace(BRANCHING, branches_per_turn=3).key() == {**before, "branches_per_turn": 3}
