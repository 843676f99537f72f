"""Fault injection into the VisDial readers (``rlds_lang.visdial.data``): split JSON, HDF5 features and the reward
cache: missing, empty, truncated and damaged files, encoding, NaN features, 1 MB values, JSON read in chunks.
``docs/guides/damaged_input.md`` ("Visual Dialogue") describes what they do; this module checks it."""

from __future__ import annotations

import io
import json
import os
import re
import types
from pathlib import Path

import h5py
import numpy as np
import pytest

from loggers.dataset_cards import ManualDataError

from rlds_lang.visdial import data as visdial
from rlds_lang.visdial.data import FeatureStore, VisDialDataError
from rlds_lang.visdial.fixtures import write_fixture
from tests.damaged_helpers import MEGABYTE, short_message

SIZES = {"train": 3, "val": 2, "test": 2}


@pytest.fixture()
def vfolder(tmp_path):
    write_fixture(str(tmp_path), SIZES, dim=16)
    return str(tmp_path)


def _dialogues(path, split="val"):
    return list(visdial.read_dialogues(path, split))


def test_visdial_missing_split_file_is_an_error(vfolder):
    from builders.visdial import visdial_dataset_builder as vb

    os.remove(os.path.join(vfolder, "visdial_0.5_test.json"))
    builder = vb.Builder(config=vb.CONFIGS[0].name, data_dir=os.path.join(vfolder, "out"))
    with pytest.raises(ManualDataError, match=r"(?s)lacks visdial_0\.5_test\.json.*visualdialog\.org.*--dummy-data"):
        builder._split_generators(types.SimpleNamespace(manual_dir=vfolder))


def test_visdial_empty_split_and_nan_features_are_errors(vfolder):
    from builders.visdial import visdial_dataset_builder as vb

    config = vb.CONFIGS[0]
    dialogues, rows = vb.read_manual_split(vfolder, "val", config)
    assert len(dialogues) == len(rows) == 2
    with h5py.File(os.path.join(vfolder, visdial.FEATURES_FILE), "a") as h5:
        h5["images_val"][1, 3] = np.nan
    with pytest.raises(VisDialDataError, match=r"data_img\.h5, dialogue 1, field 'images_val': NaN or infinite"):
        vb.read_manual_split(vfolder, "val", config)
    Path(os.path.join(vfolder, "visdial_0.5_train.json")).write_text("[]")
    with pytest.raises(VisDialDataError, match=r"visdial_0\.5_train\.json: holds no dialogue"):
        vb.read_manual_split(vfolder, "train", config)


def test_visdial_feature_row_with_nan_is_refused_when_read(vfolder):
    with h5py.File(os.path.join(vfolder, visdial.FEATURES_FILE), "a") as h5:
        h5["images_train"][2, 0] = np.inf
    store = FeatureStore(os.path.join(vfolder, visdial.FEATURES_FILE), "train")
    assert store[0].shape == (16,)
    with pytest.raises(VisDialDataError, match="dialogue 2"):
        store[2]
    with pytest.raises(VisDialDataError, match="dialogue 2"):
        store.all()
    store.close()


@pytest.mark.parametrize("content", [b"", b"\x89HDF\r\n\x1a\n" + b"\x00" * 100, b"not hdf5 at all" * 50])
def test_visdial_damaged_hdf5_names_the_path(tmp_path, content):
    path = tmp_path / "data_img.h5"
    path.write_bytes(content)
    with pytest.raises(VisDialDataError, match=re.escape(str(path))):
        FeatureStore(str(path), "val")


def test_visdial_truncated_hdf5_names_the_path(vfolder):
    path = os.path.join(vfolder, visdial.FEATURES_FILE)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:len(data) // 2])
    with pytest.raises(VisDialDataError, match=re.escape(path)):
        FeatureStore(path, "train").check_finite()


def test_visdial_json_error_location_is_in_the_whole_file(tmp_path, monkeypatch):
    monkeypatch.setattr(visdial, "CHUNK", 4096)
    entry = {"image_id": 1, "caption": "a caption", "dialog": [{"question": "is it", "answer": "yes"}] * 10}
    text = json.dumps(entry)
    body = ",\n".join([text] * 500)
    damaged = "[" + body + ",\n" + text[:40] + "}" + text[41:] + "]"  # dialogue 500 broken at its character 40
    path = tmp_path / "visdial_0.5_val.json"
    path.write_text(damaged)
    with pytest.raises(VisDialDataError) as e:
        _dialogues(str(path))
    expected_char = len("[" + body + ",\n") + 40
    message = short_message(e.value)
    assert f"visdial_0.5_val.json:501, character {expected_char:,}, dialogue 500: invalid JSON" in message


class _CountingFile:
    """A binary file that counts its reads and the bytes they returned."""

    def __init__(self, path):
        self.f = io.BytesIO(Path(path).read_bytes())
        self.reads = self.bytes = 0

    def read(self, n):
        """The next ``n`` bytes, counted."""
        data = self.f.read(n)
        self.reads += 1
        self.bytes += len(data)
        return data


def test_visdial_syntax_error_stops_reading_at_the_error(tmp_path, monkeypatch):
    """A syntax error is reported without reading the file to its end (the old reader grew its buffer to the
    end of the file, re-decoding it at every chunk: quadratic)."""
    monkeypatch.setattr(visdial, "CHUNK", 1024)
    entry = json.dumps({"image_id": 1, "caption": "c", "dialog": []})
    path = tmp_path / "v.json"
    path.write_text("[" + ",".join([entry] * 10) + ", {bad}, " + ",".join([entry] * 20000) + "]")
    counting = _CountingFile(path)
    with pytest.raises(VisDialDataError, match="dialogue 10: invalid JSON"):
        list(visdial._Cursor(counting, str(path)).array("dialogue"))
    assert counting.bytes <= 2 * 1024 < os.path.getsize(path) // 100


def test_visdial_long_value_grows_the_buffer_geometrically(tmp_path, monkeypatch):
    monkeypatch.setattr(visdial, "CHUNK", 1024)
    path = tmp_path / "v.json"
    caption = "w" * MEGABYTE
    path.write_text(json.dumps([{"image_id": 1, "caption": caption, "dialog": []}]))
    counting = _CountingFile(path)
    values = list(visdial._Cursor(counting, str(path)).array("dialogue"))
    assert values[0]["caption"] == caption
    assert counting.reads < 20  # 1 KiB, 1 KiB, 2 KiB, ... up to 1 MB: about log2(1024) reads, not 1,024


@pytest.mark.parametrize("chunk", range(2, 24))
def test_numbers_cut_by_a_chunk_end_are_read_whole(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(visdial, "CHUNK", chunk)
    numbers = [0.125, -1.5e-3, 2.0, 1e+2, 12345.678, -7, 0.5]
    path = tmp_path / "numbers.json"
    path.write_text(json.dumps(numbers))
    assert list(visdial.stream_json_array(str(path))) == numbers


def test_visdial_truncated_json_names_file_and_dialogue(vfolder):
    path = os.path.join(vfolder, "visdial_0.5_train.json")
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:int(len(data) * 0.6)])
    with pytest.raises(VisDialDataError, match=r"visdial_0\.5_train\.json:1, character [\d,]+, dialogue 1: invalid JSON"):
        _dialogues(path, "train")


@pytest.mark.parametrize("name", ["visdial_0.5_val.json", "visdial_1.0_val.json"])
def test_visdial_not_utf8_names_the_line(tmp_path, name):
    path = tmp_path / name
    text = json.dumps([{"image_id": 1, "caption": "c", "dialog": []}] * 3, indent=1).encode()
    path.write_bytes(text.replace(b'"c"', b'"caf\xe9"', 1))
    with pytest.raises(VisDialDataError, match=re.escape(name) + r":4, character 39, dialogue 0: not UTF-8 at byte 39"):
        _dialogues(str(path))


@pytest.mark.parametrize("tail, shown", [(b" [1]", "'[1]'"), (b"\n\xff\xfe", "not UTF-8"), (b"x" * MEGABYTE, "'xxx")])
def test_visdial_content_after_the_list_is_an_error(tmp_path, tail, shown):
    path = tmp_path / "visdial_0.5_val.json"
    path.write_bytes(json.dumps([{"image_id": 7, "caption": "c", "dialog": []}]).encode() + tail)
    with pytest.raises(VisDialDataError) as e:
        _dialogues(str(path))
    assert "visdial_0.5_val.json:" in short_message(e.value) and shown in str(e.value)
    path = tmp_path / "val_reward_cache2.json"
    path.write_bytes(json.dumps([[0.5] * 11]).encode() + tail)
    with pytest.raises(VisDialDataError) as e:
        visdial.load_reward_cache(str(path))
    assert "val_reward_cache2.json:" in short_message(e.value) and shown in str(e.value)


def test_visdial_bom_is_accepted_and_empty_file_named(tmp_path):
    path = tmp_path / "visdial_0.5_val.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"image_id": 7, "caption": "c", "dialog": []}]).encode())
    assert [d.image_id for d in _dialogues(str(path))] == [7]
    path.write_bytes(b"")
    with pytest.raises(VisDialDataError, match=r"visdial_0\.5_val\.json: dialogue file is empty \(0 bytes\)"):
        _dialogues(str(path))


def test_visdial_missing_and_megabyte_fields(tmp_path):
    path = tmp_path / "visdial_0.5_val.json"
    good = {"image_id": 1, "caption": "c" * MEGABYTE, "dialog": [{"question": "q", "answer": "a"}]}
    path.write_text(json.dumps([good, {**good, "image_id": "9" * MEGABYTE}]))
    with pytest.raises(VisDialDataError) as e:
        _dialogues(str(path))
    assert "dialogue 1, field 'image_id': must be an integer" in short_message(e.value)
    path.write_text(json.dumps([good, {"image_id": 2, "caption": "c", "dialog": [{"question": "q"}]}]))
    with pytest.raises(VisDialDataError, match=r"dialogue 1, round 0, field 'answer': missing"):
        _dialogues(str(path))
    path.write_text(json.dumps([good]))
    assert _dialogues(str(path))[0].caption == "c" * MEGABYTE  # a long caption is data


def test_reward_cache_damage(tmp_path):
    path = tmp_path / "val_reward_cache2.json"
    path.write_bytes(b"")
    with pytest.raises(VisDialDataError, match=r"reward cache is empty \(0 bytes\)"):
        visdial.load_reward_cache(str(path))
    path.write_text(json.dumps([[0.0] * 11, [0.0] * 10 + ["x" * MEGABYTE]]))
    with pytest.raises(VisDialDataError) as e:
        visdial.load_reward_cache(str(path))
    assert "val_reward_cache2.json, dialogue 1: a reward-cache row must be 11 finite numbers" in short_message(e.value)
    path.write_text("[[" + ",".join(["0.5"] * 10) + ", NaN]]")
    with pytest.raises(VisDialDataError, match="dialogue 0"):
        visdial.load_reward_cache(str(path))
    path.write_bytes(b"[[" + b",".join([b"0.5"] * 11) + b"],\n[0.1, \xff]]")
    with pytest.raises(VisDialDataError, match=r"val_reward_cache2\.json:2, character 54, dialogue 1: not UTF-8"):
        visdial.load_reward_cache(str(path))
    path.write_text("[[" + ",".join(["0.5"] * 10) + "," + "5" * MEGABYTE + "]]")
    with pytest.raises(VisDialDataError) as e:
        visdial.load_reward_cache(str(path))
    assert "val_reward_cache2.json:1, character 1, dialogue 0: invalid JSON value" in short_message(e.value)
    path.write_text("[[" + ",".join(["0.5"] * 11) + "],\n[0.1,")
    with pytest.raises(VisDialDataError, match=r"val_reward_cache2\.json:2, character [\d,]+, dialogue 1: invalid JSON"):
        visdial.load_reward_cache(str(path))


DEEP = "[" * 100_000 + "]" * 100_000  # deeper than Python's JSON decoder follows


@pytest.mark.parametrize("name, text, where", [
    ("visdial_0.5_val.json", '[{"image_id": 1, "caption": "c", "dialog": []}, {"image_id": 2, "caption": ' + DEEP + "}]",
     "dialogue 1"),
    ("visdial_1.0_val.json", '{"data": {"questions": ' + DEEP + ', "answers": [], "dialogs": []}}', "question 0"),
    ("val_reward_cache2.json", "[" + DEEP + "]", "dialogue 0"),
])
def test_json_nested_too_deep_is_an_error_naming_file_and_record(tmp_path, name, text, where):
    path = tmp_path / name
    path.write_text(text)
    read = visdial.read_reward_cache if "cache" in name else (lambda p: visdial.read_dialogues(p, "val"))
    with pytest.raises(VisDialDataError) as e:
        list(read(str(path)))
    assert re.match(rf".*{re.escape(name)}:1, character [\d,]+, {where}: invalid JSON: nested deeper than "
                    r"Python's JSON decoder can follow$", short_message(e.value)), e.value


@pytest.mark.parametrize("text, where, key", [
    ('[{"image_id": 1, "caption": "a", "dialog": []}, {"image_id": 2, "caption": "b", "caption": "c", "dialog": []}]',
     "dialogue 1", "caption"),
    ('[{"image_id": 1, "caption": "a", "dialog": [{"question": "q", "answer": "a", "answer": "b"}]}]', "dialogue 0",
     "answer"),
    ('{"data": {"questions": ["q"], "answers": ["a"], "questions": ["r"], "dialogs": []}}', None, "questions"),
])
def test_a_key_given_twice_is_an_error_naming_file_record_and_key(tmp_path, text, where, key):
    path = tmp_path / "visdial_0.5_val.json"
    path.write_text(text)
    with pytest.raises(VisDialDataError) as e:
        _dialogues(str(path))
    record = rf", {where}" if where else ""
    assert re.match(rf".*visdial_0\.5_val\.json:1, character [\d,]+{record}: invalid JSON: duplicate key '{key}' in "
                    "one object$", str(e.value)), e.value


def _h5(path, build) -> str:
    with h5py.File(path, "w") as h5:
        build(h5)
    return str(path)


@pytest.mark.parametrize("build, problem", [
    (lambda h5: h5.create_group("images_val"), "a Group, not a dataset"),
    (lambda h5: h5.__setitem__("images_val", h5py.SoftLink("/nowhere")), "a link whose target is not there"),
    (lambda h5: h5.__setitem__("images_val", h5py.ExternalLink("gone.h5", "/x")), "a link whose target is not there"),
])
def test_a_feature_file_whose_split_is_no_dataset_is_an_error_naming_file_and_field(tmp_path, build, problem):
    path = _h5(tmp_path / "data_img.h5", build)
    with pytest.raises(VisDialDataError, match=rf"data_img\.h5, field 'images_val': {problem} \(the file has "
                                               r"\['images_val'\]\)"):
        FeatureStore(path, "val")
