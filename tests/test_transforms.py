"""to_turns and the torch bridge on a small dataset built from replayed episodes."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow_datasets as tfds
import torch.utils.data

from loggers import record
from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode
from tests.test_builder_roundtrip import ReplayRoundtrip
from transforms.loading import load, to_turns
from transforms.statistics import dataset_statistics
from transforms.torch_bridge import TurnDataset

EPISODES = [
    ScriptedEpisode([{"text": t, "turn": np.int32(i)} for i, t in enumerate(["", "🟩⬛", "🟩🟩"])],
                    ["crane", "slate"], [-1.0, 0.0], {"source": "a", "weight": np.float64(1.0)}),
    ScriptedEpisode([{"text": t, "turn": np.int32(i)} for i, t in enumerate(["start", "é\x00", "end", "x"])],
                    ["one", "二", ""], [-1.0, -1.0, -1.0], {"source": "b", "weight": np.float64(2.0)}, truncated=True),
]


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tr")
    logs = os.fspath(tmp / "logs")
    record(ReplayEnv(EPISODES), ReplayPolicy(EPISODES), episodes=2, data_dir=logs, run_name="tr", progress=False)
    builder = ReplayRoundtrip(data_dir=os.fspath(tmp / "tfds"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=logs))
    return builder.data_dir


def test_to_turns(dataset_dir):
    episodes = load(dataset_dir)
    turns = sorted(to_turns(episodes).as_numpy_iterator(), key=lambda t: (t["episode_id"], t["observation"]))
    by_episode = {}
    for t in to_turns(episodes).as_numpy_iterator():
        by_episode.setdefault(t["episode_id"].decode(), []).append(t)
    assert len(turns) == 5
    first = by_episode["tr-00000000"]
    assert [t["observation"].decode() for t in first] == ["", "🟩⬛"]
    assert [t["action"].decode() for t in first] == ["crane", "slate"]
    assert [float(t["reward"]) for t in first] == [-1.0, 0.0]
    assert [bool(t["done"]) for t in first] == [False, True]
    second = by_episode["tr-00000001"]
    assert [t["action"].decode() for t in second] == ["one", "二", ""]
    assert second[1]["observation"].decode() == "é\x00"
    assert [bool(t["done"]) for t in second] == [False, False, True]


def test_torch_iterable_dataset_and_statistics(dataset_dir):
    episodes = load(dataset_dir)
    items = list(TurnDataset(episodes))
    assert len(items) == 5
    assert all(isinstance(i["observation"], str) and isinstance(i["action"], str) for i in items)
    assert all(isinstance(i["reward"], float) and isinstance(i["done"], bool) for i in items)
    assert {i["action"] for i in items} == {"crane", "slate", "one", "二", ""}
    batches = list(torch.utils.data.DataLoader(TurnDataset(turns=to_turns(episodes)), batch_size=2))
    assert sum(len(b["action"]) for b in batches) == 5
    stats = dataset_statistics(episodes)
    assert stats["episodes"] == 2 and stats["steps"] == 7 and stats["actions"] == 5
    assert stats["min_return"] == -3.0 and stats["max_return"] == -1.0 and stats["mean_return"] == -2.0
    assert stats["win_rate"] == 0.5  # the truncated episode is not a win
