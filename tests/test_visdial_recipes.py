"""The Visual Dialogue dataset recipe: human dialogues replayed through VisDialEnv and recorded with loggers.record."""

import os

import numpy as np
import pytest

from loggers.visdial_recipes import record_dialogues
from rlds_lang.schema import check_episode
from rlds_lang.visdial.data import cache_file, load_reward_cache, read_split
from rlds_lang.visdial.fixtures import write_fixture
from rlds_lang.visdial.rewards import STOP, RewardConfig, replay_rewards
from rlds_lang.visdial.schema import VISDIAL_SCHEMA


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("visdial"))
    write_fixture(folder, {"val": 3}, dim=8, seed=4)
    dialogues = list(read_split(folder, "val"))
    rows = {k: load_reward_cache(os.path.join(folder, cache_file("val", k))) for k in ("rank", "distance")}
    return dialogues, rows


@pytest.mark.parametrize("config", [RewardConfig("env_stops", yn_kind="hard"), RewardConfig("10_stop"),
                                    RewardConfig("agent_stops", reward_kind="distance")])
def test_recorded_episodes_are_lossless_with_published_rewards(data, config, tmp_path):
    dialogues, rows = data
    episodes = list(record_dialogues(dialogues, rows, config, "visdial-val", work_dir=str(tmp_path)))
    per_dialogue = 11 if config.mode == "agent_stops" else 1
    assert len(episodes) == per_dialogue * len(dialogues)
    assert [e["episode_id"] for e in episodes] == [f"visdial-val-{i:08d}" for i in range(len(episodes))]
    for i, episode in enumerate(episodes):
        check_episode(episode)
        d, stop_after = dialogues[i // per_dialogue], (i % per_dialogue if per_dialogue > 1 else None)
        steps = episode["steps"]
        expected = [float(np.float32(r)) for r in replay_rewards(config, rows[config.score_kind][d.index], d.answers,
                                                                 stop_after)]
        assert [float(s["reward"]) for s in steps[:-1]] == expected
        assert steps[0]["observation"]["text"] == d.caption
        stopped = stop_after is not None and stop_after < 10
        asked = len(expected) - stopped
        assert [s["action"] for s in steps[:asked]] == [q + "?" for q in d.questions[:asked]]
        assert [s["observation"]["text"] for s in steps[1:asked + 1]] == list(d.answers[:asked])
        assert len(steps) == asked + stopped + 1 and (steps[-2]["action"] == STOP) == stopped
        assert steps[-1]["is_terminal"] and steps[-1]["action"] == ""
        assert int(episode["dialogue_index"]) == d.index and int(episode["image_id"]) == d.image_id
        assert (episode["split"], episode["mode"], episode["reward_kind"]) == ("val", config.mode, config.score_kind)
        assert episode["policy"] == "visdial_data" and set(VISDIAL_SCHEMA.all_episode_metadata) <= set(episode)


def test_bench_prints_dialogues_and_steps_per_second(capsys):
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "visdial.py")
    spec = importlib.util.spec_from_file_location("bench_visdial", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rates = bench.main(["--dialogues", "5", "--steps", "12", "--dim", "64"])
    assert set(rates) == {"reader (dialogues/s)", "recipe, env_stops (dialogues/s)", "server steps (steps/s)"}
    assert all(rate > 0 for rate in rates.values())
    assert "server steps" in capsys.readouterr().out


def test_odd_text_survives_recording_byte_for_byte(tmp_path):
    from rlds_lang.visdial.data import Dialogue

    odd = ["un café ☕ – naïve", "line one\r\nline two", "zero\u200bwidth \u202eRTL", "  spaces  ", "𝔘𝔫𝔦?"]
    d = Dialogue("val", 0, 42, odd[0], tuple(odd[1:]), tuple(reversed(odd)))
    rows = {"rank": [[0.25] + [0.0] * 10]}
    (episode,) = record_dialogues([d], rows, RewardConfig("10_stop"), "odd", work_dir=str(tmp_path))
    steps = episode["steps"]
    assert steps[0]["observation"]["text"] == odd[0]
    assert [s["action"] for s in steps[:-1]] == [q if q.endswith("?") else q + "?" for q in d.questions]
    assert [s["observation"]["text"] for s in steps[1:]] == list(d.answers[:4])
