"""Property test: random episodes -> ReplayEnv/ReplayPolicy -> loggers.record -> TFDS builder -> tf.data,
compared field by field (text byte-for-byte, including emoji, NUL, empty and long strings)."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
import tensorflow_datasets as tfds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loggers import record
from loggers import tfds_examples as common
from loggers.reader import log_dirs
from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode
from rlds_lang.schema import FieldSpec, TaskSchema

SCHEMA = TaskSchema(task="replay", observation_fields={"turn": FieldSpec(np.int32)},
                    episode_metadata={"source": str, "weight": np.float64})


class ReplayRoundtrip(tfds.core.GeneratorBasedBuilder):
    """A test builder over logs in ``manual_dir`` using the same schema mechanism as the real builders."""

    VERSION = tfds.core.Version("1.0.0")
    MANUAL_DOWNLOAD_INSTRUCTIONS = "logs written by loggers.record"
    BUILDER_CONFIGS = [SCHEMA.dataset_config("default", "roundtrip")]

    def _info(self):
        from tensorflow_datasets.rlds import rlds_base

        return rlds_base.build_info(self.builder_config, self)

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(log_dirs(dl_manager.manual_dir))}

    def _generate_examples(self, dirs):
        for d in dirs:
            yield from common.examples_from_log_dir(d, SCHEMA)


TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", "\x00", "a\x00b", "🟩🟨⬛", "👩‍👩‍👧 émoji ✓", "x" * 5000, "\u200b\ufeff", "中文"]),
)
# float32-representable values: TFDS stores floats as float32, so the schema declares float32 and the
# builders refuse (test_float64_that_float32_cannot_hold_is_refused) what float32 cannot hold exactly.
FLOAT = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32)


@st.composite
def episodes(draw):
    n = draw(st.integers(1, 6))
    obs = [{"text": draw(TEXT), "turn": np.int32(i)} for i in range(n + 1)]
    return ScriptedEpisode(observations=obs, actions=[draw(TEXT) for _ in range(n)],
                           rewards=[draw(FLOAT) for _ in range(n)],
                           metadata={"source": draw(TEXT), "weight": np.float64(draw(FLOAT))},
                           truncated=draw(st.booleans()))


def _tfds_float(value: float) -> float:
    """The value as stored (float32); equal to ``value`` for every float the strategy draws."""
    assert float(np.float32(value)) == value
    return float(np.float32(value))


def _text(value) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(episodes(), min_size=1, max_size=4))
def test_roundtrip_through_logger_and_builder(eps):
    with tempfile.TemporaryDirectory() as tmp:
        logs, data = os.path.join(tmp, "logs"), os.path.join(tmp, "tfds")
        record(ReplayEnv(eps, task_name="replay"), ReplayPolicy(eps), episodes=len(eps), data_dir=logs,
               run_name="rt", seed=11, progress=False)
        builder = ReplayRoundtrip(data_dir=data)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=logs))
        loaded = {ep["episode_id"].decode(): ep for ep in tfds.as_numpy(builder.as_dataset(split="train"))}
    assert len(loaded) == len(eps)
    for i, ep in enumerate(eps):
        got = loaded[f"rt-{i:08d}"]
        assert got["task"] == b"replay" and got["policy"] == b"replay" and got["seed"] == 11 + i
        assert got["source"] == _text(ep.metadata["source"])
        assert got["weight"] == _tfds_float(ep.metadata["weight"])
        steps = list(got["steps"])
        assert len(steps) == len(ep.actions) + 1
        for t, step in enumerate(steps):
            assert step["observation"]["text"] == _text(ep.observations[t]["text"])
            assert step["observation"]["turn"] == t
            assert bool(step["is_first"]) == (t == 0)
            last = t == len(ep.actions)
            assert bool(step["is_last"]) == last
            if last:
                assert step["action"] == b"" and step["reward"] == 0.0 and step["discount"] == 0.0
                assert bool(step["is_terminal"]) == (not ep.truncated)
            else:
                assert step["action"] == _text(ep.actions[t])
                assert step["reward"] == _tfds_float(ep.rewards[t])
                assert step["discount"] == (1.0 if t < len(ep.actions) - 1 or ep.truncated else 0.0)
                assert not step["is_terminal"]


def test_float64_that_float32_cannot_hold_is_refused():
    from rlds_lang.schema import LossyValueError

    episode = {"episode_id": "e1", "steps": [
        {"observation": {"text": "o", "turn": np.int32(0)}, "action": "a", "reward": 0.1, "discount": 1.0,
         "is_first": True, "is_last": False, "is_terminal": False},
        {"observation": {"text": "", "turn": np.int32(1)}, "action": "", "reward": 0.0, "discount": 0.0,
         "is_first": False, "is_last": True, "is_terminal": True}]}
    meta = {k: ("x" if v is str else np.asarray(0, v)) for k, v in SCHEMA.all_episode_metadata.items()}
    meta["episode_id"] = "e1"
    with pytest.raises(LossyValueError, match=r"episode e1, step 0\.reward: 0\.1"):
        common.episode_to_example({**meta, **episode}, SCHEMA)
