"""``trainers.core.build``'s split-size check: a build that lost episodes fails, naming the folder and the split."""

from __future__ import annotations

import json

import pytest

from trainers.core.build import (
    IncompleteBuildError,
    check_split_sizes,
    split_sizes,
    tfds_build,
)


def _fake_built(tmp_path, train_shards, eval_shards):
    """A folder with a ``dataset_info.json`` in TFDS's layout (the only file the check reads)."""
    folder = tmp_path / "wordle_synthetic" / "lmrl_gym" / "1.1.0"
    folder.mkdir(parents=True)
    splits = [{"name": "train", "shardLengths": [str(n) for n in train_shards]},
              {"name": "eval", "shardLengths": [str(n) for n in eval_shards]}]
    (folder / "dataset_info.json").write_text(json.dumps({"name": "wordle_synthetic", "splits": splits}))
    return folder


def test_split_sizes_sum_the_shards(tmp_path):
    folder = _fake_built(tmp_path, [60130, 60325], [100])
    assert split_sizes(folder) == {"train": 120455, "eval": 100}
    check_split_sizes(folder, {"train": 120455, "eval": 100})  # complete: no error
    check_split_sizes(folder, {})


def test_a_short_split_raises_naming_folder_split_and_counts(tmp_path):
    folder = _fake_built(tmp_path, [60130, 59801], [100])
    with pytest.raises(IncompleteBuildError) as error:
        check_split_sizes(folder, {"train": 120000, "eval": 100})
    message = str(error.value)
    assert str(folder) in message and "'train' holds 119,931 episodes" in message and "120,000" in message
    assert "'eval'" not in message
    with pytest.raises(IncompleteBuildError, match="'test' holds 0 episodes"):
        check_split_sizes(folder, {"test": 5})


def test_tfds_build_checks_a_dataset_it_finds_already_built(tmp_path):
    _fake_built(tmp_path, [7], [3])
    assert tfds_build("wordle_synthetic", "lmrl_gym", tmp_path, expected={"train": 7, "eval": 3}).endswith("1.1.0")
    with pytest.raises(IncompleteBuildError, match="Remove the folder and build again"):
        tfds_build("wordle_synthetic", "lmrl_gym", tmp_path, expected={"train": 8, "eval": 3})
