"""Legacy stack only (TF 2.15, tfds 4.9.6, rlds 0.1.8): datasets built on the main stack (tfds 4.9.10) load
here, and ``rlds`` itself agrees with the manifest that ``make_datasets.py`` wrote from the source episodes.

``RLDS_LANG_LEGACY_DATA`` names the folder holding ``manifest.json`` (``tests/legacy/run.sh`` sets it).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.legacy.conftest import DATA, MANIFEST

tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")
rlds = pytest.importorskip("rlds")


def _manifest():
    with open(MANIFEST, encoding="utf-8") as f:
        return json.load(f)


DATASETS = _manifest()["datasets"] if os.path.exists(MANIFEST) else []
IDS = [d["name"] for d in DATASETS]


def _data_dir() -> str:
    return _manifest()["data_dir"] if os.path.isdir(_manifest()["data_dir"]) else os.path.join(DATA, "tfds")


def _flat_spec(spec, prefix="") -> dict[str, list]:
    out = {}
    for key, value in spec.items():
        path = f"{prefix}{key}"
        if isinstance(value, tf.data.DatasetSpec):
            out.update(_flat_spec(value.element_spec, path + "/"))
        elif isinstance(value, dict):
            out.update(_flat_spec(value, path + "/"))
        else:
            out[path] = [value.dtype.name, list(value.shape)]
    return out


def _by_id(ds: tf.data.Dataset) -> dict[str, dict]:
    return {ep["episode_id"].numpy().decode("utf-8"): ep for ep in ds}


def test_manifest_present():
    assert os.path.exists(MANIFEST), f"{MANIFEST} missing: run tests/legacy/run.sh (it builds the data first)"
    assert {d["name"].split("/")[0] for d in DATASETS} >= {"legacy_nasty_strings", "wordle_synthetic"}
    assert tfds.__version__ == "4.9.6" and tf.__version__.startswith("2.15.")


@pytest.fixture(scope="module", params=DATASETS, ids=IDS)
def loaded(request):
    info = request.param
    builder = tfds.builder_from_directory(os.path.join(_data_dir(), info["builder_dir"]))
    return info, builder, builder.as_dataset(split=info["split"])


def test_builder_from_directory_element_spec(loaded):
    info, builder, ds = loaded
    assert _flat_spec(ds.element_spec) == info["element_spec"]
    assert builder.info.splits[info["split"]].num_examples == len(info["episodes"])


def test_tfds_load_by_name_matches_builder_from_directory(loaded):
    info, _, ds = loaded
    by_name = tfds.load(info["name"], split=info["split"], data_dir=_data_dir())
    assert _flat_spec(by_name.element_spec) == info["element_spec"]
    assert sorted(_by_id(by_name)) == sorted(info["episodes"])


def test_episode_length_with_rlds(loaded):
    info, _, ds = loaded
    got = {k: int(rlds.transformations.episode_length(ep["steps"])) for k, ep in _by_id(ds).items()}
    assert got == {k: e["length"] for k, e in info["episodes"].items()}


def test_reward_sums_with_rlds(loaded):
    info, _, ds = loaded
    episodes = _by_id(ds)
    assert sorted(episodes) == sorted(info["episodes"])
    for key, ep in episodes.items():
        expected = info["episodes"][key]
        total = rlds.transformations.sum_dataset(ep["steps"], lambda step: step["reward"])
        np.testing.assert_allclose(float(total), expected["reward_sum"], rtol=1e-6, atol=0, err_msg=key)
        rewards = [float(s["reward"]) for s in ep["steps"].as_numpy_iterator()]
        assert rewards == expected["rewards"], key
        discounts = [float(s["discount"]) for s in ep["steps"].as_numpy_iterator()]
        assert discounts == expected["discounts"], key


def test_rlds_sum_nested_steps_total(loaded):
    info, _, ds = loaded
    total = rlds.transformations.sum_nested_steps(ds, lambda step: step["reward"])
    np.testing.assert_allclose(float(total), sum(e["reward_sum"] for e in info["episodes"].values()), rtol=1e-6)


def test_texts_byte_for_byte(loaded):
    info, _, ds = loaded
    for key, ep in _by_id(ds).items():
        expected = info["episodes"][key]
        steps = list(ep["steps"].as_numpy_iterator())
        assert [s["observation"]["text"].hex() for s in steps] == expected["observation_text_hex"], key
        assert [s["action"].hex() for s in steps] == expected["action_text_hex"], key
        for field, value in expected["metadata_text_hex"].items():
            assert ep[field].numpy().hex() == value, (key, field)


def test_structured_observations(loaded):
    info, _, ds = loaded
    for key, ep in _by_id(ds).items():
        expected = info["episodes"][key]
        steps = list(ep["steps"].as_numpy_iterator())
        if "observation_vec" in expected:
            got = [s["observation"]["vec"].tolist() for s in steps]
            assert got == expected["observation_vec"], key
        if "observation_feedback" in expected:
            assert [s["observation"]["feedback"].tolist() for s in steps] == expected["observation_feedback"], key
            assert [int(s["observation"]["turn"]) for s in steps] == expected["observation_turn"], key


def test_flags_consistent(loaded):
    info, _, ds = loaded
    for key, ep in _by_id(ds).items():
        expected = info["episodes"][key]
        steps = list(ep["steps"].as_numpy_iterator())
        first = [bool(s["is_first"]) for s in steps]
        last = [bool(s["is_last"]) for s in steps]
        terminal = [bool(s["is_terminal"]) for s in steps]
        assert (first, last, terminal) == (expected["is_first"], expected["is_last"], expected["is_terminal"]), key
        # RLDS invariants: exactly one first (the first step) and one last (the final step); terminal only there.
        assert first == [True] + [False] * (len(steps) - 1), key
        assert last == [False] * (len(steps) - 1) + [True], key
        assert not any(terminal[:-1]), key
        final = rlds.transformations.final_step(ep["steps"])
        assert bool(final["is_last"]) and bool(final["is_terminal"]) == terminal[-1], key
        # The last step carries no action information (docs/architecture.md, "The RLDS text schema").
        assert steps[-1]["action"] == b"" and steps[-1]["reward"] == 0.0 and steps[-1]["discount"] == 0.0, key


def test_rlds_batching_reads_every_step(loaded):
    """rlds' batched step pipeline (what its own users run) yields the same steps on text-heavy episodes."""
    info, _, ds = loaded
    for key, ep in list(_by_id(ds).items())[:4]:
        windows = rlds.transformations.batch(ep["steps"], size=2, shift=1, drop_remainder=False)
        actions = [w["action"].numpy().tolist() for w in windows]
        expected = [bytes.fromhex(h) for h in info["episodes"][key]["action_text_hex"]]
        assert [a[0] for a in actions] == expected, key
