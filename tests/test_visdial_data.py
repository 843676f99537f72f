"""The Visual Dialogue readers on fixtures in the published layouts: v0.5 and v1.0 JSON, HDF5 features, caches, errors."""

import json
import os

import h5py
import numpy as np
import pytest

from rlds_lang.visdial import data
from rlds_lang.visdial.data import (
    FeatureStore,
    VisDialDataError,
    load_reward_cache,
    read_split,
)
from rlds_lang.visdial.fixtures import write_fixture

SIZES = {"train": 3, "val": 2}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("visdial05")
    return str(path), write_fixture(str(path), SIZES, dim=64)


@pytest.mark.parametrize("version", ["0.5", "1.0"])
def test_both_versions_give_the_same_dialogues_byte_for_byte(tmp_path, version, monkeypatch):
    monkeypatch.setattr(data, "CHUNK", 97)  # force elements to straddle read chunks
    raw = write_fixture(str(tmp_path), SIZES, version=version, dim=16, seed=3)
    for split, entries in raw.items():
        got = list(read_split(str(tmp_path), split, version))
        assert [d.index for d in got] == list(range(len(entries)))
        for d, e in zip(got, entries):
            assert d.split == split and d.image_id == e["image_id"] and d.caption == e["caption"]
            assert d.questions == tuple(t["question"] for t in e["dialog"])
            assert d.answers == tuple(t["answer"] for t in e["dialog"])
            assert d.rounds == 10


def test_non_ascii_text_survives(tmp_path):
    entry = {"image_id": 7, "caption": "un café – naïve ☕", "dialog": [{"question": "is it hot ☕", "answer": "yes 🙂"}]}
    path = tmp_path / "visdial_0.5_val.json"
    path.write_text(json.dumps([entry], ensure_ascii=False), encoding="utf-8")
    (d,) = read_split(str(tmp_path), "val")
    assert (d.caption, d.questions, d.answers) == (entry["caption"], ("is it hot ☕",), ("yes 🙂",))


def test_dialogue_errors_name_file_and_index(tmp_path):
    path = tmp_path / "visdial_0.5_val.json"
    good = {"image_id": 1, "caption": "c", "dialog": [{"question": "q", "answer": "a"}]}
    path.write_text(json.dumps([good, {"image_id": 2, "dialog": []}]))
    with pytest.raises(VisDialDataError, match=r"visdial_0.5_val.json, dialogue 1, field 'caption': missing"):
        list(read_split(str(tmp_path), "val"))
    v1 = {"data": {"questions": ["q"], "answers": ["a"], "dialogs": [{**good, "dialog": [{"question": 5, "answer": 0}]}]}}
    path.write_text(json.dumps(v1))
    with pytest.raises(VisDialDataError, match=r"dialogue 0, round 0: question/answer index is not in the tables: \(5, 0\)"):
        list(data.read_dialogues(str(path), "val"))
    path.write_text('[{"image_id": 1, "caption": "c", "dialog": [')
    with pytest.raises(VisDialDataError, match="visdial_0.5_val.json:1, character 44, dialogue 0: invalid JSON"):
        list(read_split(str(tmp_path), "val"))


def test_features_lazy_rows_normalised_and_checked(folder):
    path, raw = folder
    h5 = os.path.join(path, data.FEATURES_FILE)
    store = FeatureStore(h5, "val", expected=2)
    with h5py.File(h5) as f:
        row = f["images_val"][1]
    assert store.dim == 64 and len(store) == 2
    np.testing.assert_allclose(store[1], row / np.linalg.norm(row), rtol=1e-6)
    np.testing.assert_array_equal(FeatureStore(h5, "val", normalize=False)[1], row)
    assert np.allclose(np.linalg.norm(store.all(), axis=1), 1.0)
    with pytest.raises(VisDialDataError, match=r"data_img.h5: 2 rows in images_val but the split has 3 dialogues"):
        FeatureStore(h5, "val", expected=3)
    with pytest.raises(VisDialDataError, match=r"data_img.h5, field .images_test.: no dataset .images_test."):
        FeatureStore(h5, "test")
    with pytest.raises(VisDialDataError, match=r"dialogue 5 has no row"):
        store[5]


def test_reward_cache_rows_and_errors(folder, tmp_path):
    path, _ = folder
    rows = load_reward_cache(os.path.join(path, data.cache_file("train", "rank")), expected=3)
    assert len(rows) == 3 and all(len(r) == 11 for r in rows)
    with open(os.path.join(path, "train_rank_reward_cache1.json")) as f:
        assert rows == [tuple(r) for r in json.load(f)]
    with pytest.raises(VisDialDataError, match=r"3 reward-cache rows but the split has 4 dialogues"):
        load_reward_cache(os.path.join(path, data.cache_file("train", "rank")), expected=4)
    bad = tmp_path / "val_reward_cache2.json"
    bad.write_text(json.dumps([[0.0] * 11, [0.0] * 10]))
    with pytest.raises(VisDialDataError, match=r"val_reward_cache2.json, dialogue 1: a reward-cache row must be 11"):
        load_reward_cache(str(bad))
    bad.write_text(json.dumps([[0.0] * 10 + ["x"]]))
    with pytest.raises(VisDialDataError, match=r"dialogue 0"):
        load_reward_cache(str(bad))


def test_v1_with_dialogs_before_the_tables_is_read_in_two_passes(tmp_path):
    raw = write_fixture(str(tmp_path), {"val": 2}, version="1.0", dim=4, seed=5)
    path = tmp_path / "visdial_1.0_val.json"
    payload = json.loads(path.read_text())
    data = payload["data"]
    payload["data"] = {"dialogs": data["dialogs"], "answers": data["answers"], "questions": data["questions"]}
    path.write_text(json.dumps(payload))
    got = list(read_split(str(tmp_path), "val", "1.0"))
    assert [d.answers for d in got] == [tuple(t["answer"] for t in e["dialog"]) for e in raw["val"]]
    payload["data"] = {"dialogs": data["dialogs"], "questions": data["questions"]}
    path.write_text(json.dumps(payload))
    with pytest.raises(VisDialDataError, match="lacks the questions/answers tables"):
        list(read_split(str(tmp_path), "val", "1.0"))
    path.write_text(json.dumps({"version": "1.0"}))
    with pytest.raises(VisDialDataError, match="neither a v0.5 list nor a v1.0 object"):
        list(read_split(str(tmp_path), "val", "1.0"))
