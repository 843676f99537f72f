"""Main stack (TF 2.21, tfds 4.9.10): builds the datasets that tests/legacy reads on the legacy stack, and
writes ``manifest.json`` beside them with the values expected there.

Run by ``tests/legacy/run.sh`` with the main venv, after ``tfds build builders/wordle_synthetic`` (configs
``expert`` and ``branch``, ``RLDS_LANG_SMALL`` set) has written into ``DATA_DIR``::

    RLDS_LANG_SMALL=3 .venv/bin/python tests/legacy/make_datasets.py --data_dir .cache/legacy/tfds \
        --wordle_configs expert,branch --manifest .cache/legacy/manifest.json

It does two things:

* records ``NASTY_EPISODES`` (unicode, NUL bytes -- also trailing ones, which numpy ``<U`` arrays drop --,
  empty and long strings, a float32[3] observation field) with ``ReplayEnv``/``ReplayPolicy`` through
  ``loggers.record`` and builds them with the ``LegacyNastyStrings`` builder (``legacy_nasty_strings``);
* writes the manifest. Expected values come from the *source* episodes, never from reading a built
  dataset back: for ``legacy_nasty_strings`` from the ``ScriptedEpisode`` objects themselves (RLDS SAR
  semantics: T actions give T+1 steps, the last with action ``""``, reward 0 and discount 0); for
  ``wordle_synthetic`` by replaying the config's recipes with the same ``play_shard`` the builder runs
  (deterministic: fixed seeds) and converting with ``episode_to_example``. Field dtypes and shapes come
  from the task schema.

Texts are stored in the manifest as hex of their UTF-8 bytes, so the legacy test compares bytes exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import Any, Mapping

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from rlds_lang.schema import FieldSpec, TaskSchema, stored_dtype  # noqa: E402

NASTY_NAME = "legacy_nasty_strings"
NASTY_SCHEMA = TaskSchema(task="nasty", observation_fields={"vec": FieldSpec(np.float32, (3,))},
                          episode_metadata={"source": str})

LONG = "long:" + "x" * 100_000 + "🟩"
NASTY_TEXTS = ["", "\x00", "a\x00b", "trailing NUL\x00\x00", "\x00leading NUL", "🟩🟨⬛", "👩‍👩‍👧 émoji ✓",
               "\u200b\ufeff", "中文テキスト", "e\u0301 (combining)", "עברית RTL", "line\nbreak\r\ttab", "\\x00 not a NUL",
               "\U0010fffd max plane", LONG]


def _vec(i: int) -> np.ndarray:
    return np.asarray([i, -0.5 * i, 1e6], np.float32)


def nasty_episodes():
    """The scripted episodes: every nasty string appears as an observation, an action and metadata."""
    from rlds_lang.replay import ScriptedEpisode

    t = NASTY_TEXTS
    rewards = [0.5, -1.25, 1e6, 3.0, 0.0, -7.75, 0.125, 2.0]
    specs = [  # (observation texts (T+1), action texts (T), truncated)
        ([t[0], t[1], t[2]], [t[3], t[4]], False),
        ([t[5], t[6]], [t[0]], True),
        ([t[7], t[8], t[9], t[10], t[11]], [t[12], t[13], t[1], t[2]], False),
        ([LONG, t[3], ""], [LONG, ""], False),
        ([t[1], t[1], t[1], t[1]], [t[1], t[1], t[1]], True),
    ]
    episodes, k = [], 0
    for e, (obs, acts, truncated) in enumerate(specs):
        rs = [rewards[(k + j) % len(rewards)] for j in range(len(acts))]
        k += len(acts)
        episodes.append(ScriptedEpisode(
            observations=[{"text": o, "vec": _vec(i)} for i, o in enumerate(obs)], actions=list(acts),
            rewards=rs, metadata={"source": NASTY_TEXTS[e % len(NASTY_TEXTS)]}, truncated=truncated))
    return episodes


def _make_builder_class():
    import tensorflow_datasets as tfds

    from loggers import tfds_examples as common
    from loggers.reader import log_dirs

    class LegacyNastyStrings(tfds.core.GeneratorBasedBuilder):
        """Nasty-string episodes recorded through loggers.record (read from the manual folder)."""

        VERSION = tfds.core.Version("1.0.0")
        RELEASE_NOTES = {"1.0.0": "Initial release."}
        MANUAL_DOWNLOAD_INSTRUCTIONS = "logs written by loggers.record"
        BUILDER_CONFIGS = [NASTY_SCHEMA.dataset_config("default", "nasty strings for the legacy stack")]

        def _info(self):
            from tensorflow_datasets.rlds import rlds_base

            return rlds_base.build_info(self.builder_config, self)

        def _split_generators(self, dl_manager):
            return {"train": self._generate_examples(log_dirs(dl_manager.manual_dir))}

        def _generate_examples(self, dirs):
            for d in dirs:
                yield from common.examples_from_log_dir(d, NASTY_SCHEMA)

    return LegacyNastyStrings


def _hex(text: Any) -> str:
    return (text if isinstance(text, bytes) else str(text).encode("utf-8")).hex()


def _spec(spec: Any) -> list:
    """``[dtype name, shape]`` as TFDS stores a schema field (text -> string, float64 -> float32)."""
    if spec is str:
        return ["string", []]
    if isinstance(spec, FieldSpec):
        return [stored_dtype(spec.dtype).name, list(spec.shape)]
    return [stored_dtype(spec).name, []]


def element_spec(schema: TaskSchema, extra_metadata: Mapping[str, Any] | None = None) -> dict[str, list]:
    """Flat ``path -> [dtype, shape]`` of the episode dataset's element_spec, from the schema."""
    out = {name: _spec(spec) for name, spec in {**schema.all_episode_metadata, **(extra_metadata or {})}.items()}
    out["steps/observation/text"] = ["string", []]
    out.update({f"steps/observation/{k}": _spec(v) for k, v in schema.observation_fields.items()})
    out.update({f"steps/{k}": _spec(v) for k, v in schema.step_metadata.items()})
    out.update({"steps/action": ["string", []], "steps/reward": ["float32", []], "steps/discount": ["float32", []],
                "steps/is_first": ["bool", []], "steps/is_last": ["bool", []], "steps/is_terminal": ["bool", []]})
    return dict(sorted(out.items()))


def _episode_entry(steps: list[Mapping[str, Any]], metadata: Mapping[str, Any]) -> dict[str, Any]:
    rewards = [float(np.float32(s["reward"])) for s in steps]
    return {
        "length": len(steps),
        "rewards": rewards,
        "reward_sum": float(np.sum(np.asarray(rewards, np.float64))),
        "discounts": [float(np.float32(s["discount"])) for s in steps],
        "is_first": [bool(s["is_first"]) for s in steps],
        "is_last": [bool(s["is_last"]) for s in steps],
        "is_terminal": [bool(s["is_terminal"]) for s in steps],
        "observation_text_hex": [_hex(s["observation"]["text"]) for s in steps],
        "action_text_hex": [_hex(s["action"]) for s in steps],
        "metadata_text_hex": {k: _hex(v) for k, v in metadata.items() if isinstance(v, (str, bytes))},
    }


def nasty_manifest(episodes, run_name: str) -> dict[str, Any]:
    """Expected values straight from the ``ScriptedEpisode`` objects (SAR alignment written out by hand)."""
    out = {}
    for i, ep in enumerate(episodes):
        n = len(ep.actions)
        steps = []
        for t in range(n + 1):
            last = t == n
            steps.append({
                "observation": ep.observations[t], "action": "" if last else ep.actions[t],
                "reward": 0.0 if last else ep.rewards[t],
                "discount": 0.0 if last else (1.0 if t < n - 1 or ep.truncated else 0.0),
                "is_first": t == 0, "is_last": last, "is_terminal": last and not ep.truncated})
        entry = _episode_entry(steps, {**ep.metadata, "task": "nasty", "policy": "replay"})
        entry["observation_vec"] = [np.asarray(s["observation"]["vec"], np.float32).tolist() for s in steps]
        out[f"{run_name}-{i:08d}"] = entry
    return out


def wordle_manifest(config_name: str) -> dict[str, Any]:
    """Expected values of ``wordle_synthetic/<config>`` by replaying its recipes as the builder does."""
    sys.path.insert(0, REPO)
    from builders.wordle_synthetic import wordle_synthetic_dataset_builder as wb
    from loggers import tfds_examples as common
    from loggers.wordle_recipes import play_shard
    from rlds_lang.wordle.recipes import BRANCH_DEFAULTS, BRANCH_METADATA, shards
    from rlds_lang.wordle.schema import WORDLE_SCHEMA

    config = next(c for c in wb.CONFIGS if c.name == config_name)
    extra = BRANCH_METADATA if config.branching else None
    defaults = BRANCH_DEFAULTS if config.branching else None
    episodes = {}
    for shard in shards(config.recipes, config.shard_size, common.small_limit(config.num_episodes)):
        for episode_id, example in common.examples_from_episodes(play_shard, shard, WORDLE_SCHEMA, extra, defaults):
            metadata = {k: v for k, v in example.items() if k != "steps"}
            entry = _episode_entry(example["steps"], metadata)
            entry["observation_feedback"] = [np.asarray(s["observation"]["feedback"]).tolist() for s in example["steps"]]
            entry["observation_turn"] = [int(s["observation"]["turn"]) for s in example["steps"]]
            episodes[episode_id] = entry
    built = common.small_config_name(config_name, common.small_limit())  # a small build's own config name
    return {"name": f"wordle_synthetic/{built}", "builder_dir": f"wordle_synthetic/{built}/{wb.Builder.VERSION}",
            "split": "train", "element_spec": element_spec(WORDLE_SCHEMA, extra), "episodes": episodes}


def build_nasty(data_dir: str, work_dir: str) -> dict[str, Any]:
    import tensorflow_datasets as tfds

    from loggers import record
    from rlds_lang.replay import ReplayEnv, ReplayPolicy

    episodes = nasty_episodes()
    logs = os.path.join(work_dir, "nasty_logs")
    shutil.rmtree(logs, ignore_errors=True)
    shutil.rmtree(os.path.join(data_dir, NASTY_NAME), ignore_errors=True)
    record(ReplayEnv(episodes, task_name="nasty"), ReplayPolicy(episodes), episodes=len(episodes), data_dir=logs,
           run_name="nasty", seed=5, progress=False)
    builder = _make_builder_class()(data_dir=data_dir)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=logs))
    return {"name": f"{NASTY_NAME}/default", "builder_dir": f"{NASTY_NAME}/default/1.0.0", "split": "train",
            "element_spec": element_spec(NASTY_SCHEMA), "episodes": nasty_manifest(episodes, "nasty")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", required=True, help="TFDS data folder (wordle_synthetic already built there)")
    parser.add_argument("--manifest", required=True, help="where to write manifest.json")
    parser.add_argument("--wordle_configs", default="expert,branch", help="wordle_synthetic configs built by tfds build")
    args = parser.parse_args(argv)
    data_dir = os.path.abspath(args.data_dir)
    os.makedirs(data_dir, exist_ok=True)
    datasets = [build_nasty(data_dir, os.path.dirname(os.path.abspath(args.manifest)))]
    from loggers.tfds_examples import small_config_name, small_limit

    for name in filter(None, args.wordle_configs.split(",")):
        if not os.path.isdir(os.path.join(data_dir, "wordle_synthetic", small_config_name(name, small_limit()))):
            raise SystemExit(f"wordle_synthetic/{name} is not built under {data_dir}: run tfds build first")
        datasets.append(wordle_manifest(name))
    import tensorflow_datasets as tfds

    manifest = {"built_with": {"tensorflow_datasets": tfds.__version__, "numpy": np.__version__},
                "rlds_lang_small": os.environ.get("RLDS_LANG_SMALL", ""), "data_dir": data_dir,
                "datasets": datasets}
    with open(args.manifest, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print(f"wrote {args.manifest}: " + ", ".join(f"{d['name']} ({len(d['episodes'])} episodes)" for d in datasets))


if __name__ == "__main__":
    main()
