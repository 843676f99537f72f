"""The data-source reader: an ArrayRecord build read through ``tfds.data_source`` and a torch ``DataLoader`` gives
the ``tf.data`` reader's batches, tensor for tensor and in the same order; the reader is chosen by what the build
holds; training and evaluation run where TensorFlow is not installed (``tests/no_tensorflow.py``)."""

from __future__ import annotations

import ast
import dataclasses
import doctest
import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import torch

from rlds_lang.tokenizers import wordle_tokenizer
from tests.test_transforms import EPISODES
from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.bc import BCConfig
from trainers.algorithms.ilql.ilql import ILQLConfig
from trainers.algorithms.ilql.mc import MCConfig
from trainers.core import data as data_module
from trainers.core.build import tfds_build
from trainers.core.data import chosen_reader, require_tensorflow
from trainers.core.loop import DistInfo, training_batches
from trainers.evaluation.selection import held_out_batches, held_out_episodes
from transforms import array_record, data_source, shuffle_order, token_layout, top_p
from transforms.array_record import check_step_features, open_source, select_episodes
from transforms.data_source import SourceBatches
from transforms.loading import load
from transforms.shuffle_order import ShuffledRepeat
from transforms.token_layout import StepsBatch, TokenMDPConfig, layout, sequences
from transforms.token_mdp import token_mdp

REPO = Path(__file__).resolve().parent.parent
TINY = ["--model.n_layer", "1", "--model.n_embd", "16", "--model.n_head", "2", "--model.n_positions", "96",
        "--max_length", "48", "--batch_size", "4", "--no-progress"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, str]:
    """The same 40 recorded episodes built twice: as TFRecord (read by tf.data) and as ArrayRecord."""
    episodes = wordle_like(38, seed=3) + EPISODES  # the EPISODES add a truncated episode and non-ASCII text
    root = tmp_path_factory.mktemp("formats")
    return {fmt: build_dataset(episodes, root / fmt, file_format=fmt) for fmt in ("tfrecord", "array_record")}


def assert_same_batch(expected: dict, got: dict, where: str) -> None:
    """Same keys, and every tensor of the same dtype, shape and values (text lists equal)."""
    assert sorted(got) == sorted(expected), where
    for key, value in expected.items():
        if isinstance(value, torch.Tensor):
            assert got[key].dtype == value.dtype and torch.equal(got[key], value), f"{where}: {key}"
        else:
            assert got[key] == value, f"{where}: {key}"


@pytest.mark.parametrize("size,buffer,seed", [(10, 4, 0), (7, 100, 3), (33, 8, 2**33 + 5), (5, 1, 9), (12, 12, 1)])
def test_shuffle_order_is_tf_datas(size, buffer, seed):
    """Epoch after epoch, the positions of shuffle(buffer, seed).repeat() cut into batches that span epochs."""
    want = list(tf.data.Dataset.range(size).shuffle(buffer, seed=seed).repeat().batch(3, drop_remainder=True)
                .take(4 * size // 3 + 2).as_numpy_iterator())
    got = ShuffledRepeat(size, buffer, seed).batches(3)
    assert [next(got).tolist() for _ in want] == [w.tolist() for w in want]
    later = ShuffledRepeat(size, buffer, seed).batches(3, start=len(want) - 2)  # started mid-stream
    assert [next(later).tolist() for _ in range(2)] == [w.tolist() for w in want[-2:]]


def test_shuffle_order_refuses_nothing_to_repeat():
    with pytest.raises(ValueError, match="no elements"):
        ShuffledRepeat(0, 4, 0)
    with pytest.raises(ValueError, match="no episodes to train on"):
        data_source.ShuffledBatches(np.zeros(0, np.int64), 2, 4, 0)


CONFIGS = {
    "bc": BCConfig(max_length=40, batch_size=4, shuffle_buffer=16, seed=5),
    "pbc": BCConfig(max_length=40, batch_size=3, shuffle_buffer=8, seed=1, top_p=0.5),
    "ilql": ILQLConfig(max_length=24, batch_size=5, shuffle_buffer=100, seed=2, token_reward=-0.01),
    "mc_cutoff": MCConfig(max_length=40, batch_size=4, shuffle_buffer=0, seed=0, gamma=0.9, min_return=-1.0),
}


@pytest.mark.parametrize("name,info", [(name, DistInfo()) for name in sorted(CONFIGS)] + [("pbc", DistInfo(1, 2))],
                         ids=[*sorted(CONFIGS), "pbc-rank1of2"])
def test_batches_equal_the_tf_data_readers(builds, tmp_path, name, info):
    """Ten training batches (several epochs) of each reader: equal tensors, same episodes, same order; the
    filtered-BC config also as the second of two torchrun processes (filters, then shard)."""
    config = CONFIGS[name]
    tokenizer = wordle_tokenizer()
    reference = dataclasses.replace(config, dataset=builds["tfrecord"], reader="tf_data", out=str(tmp_path / "tf"))
    ours = dataclasses.replace(config, dataset=builds["array_record"], out=str(tmp_path / "source"))
    assert chosen_reader(ours) == "data_source" and chosen_reader(dataclasses.replace(reference, reader="auto")) == "tf_data"
    expected, got = training_batches(reference, tokenizer, info), training_batches(ours, tokenizer, info)
    assert isinstance(got, SourceBatches)
    for index in range(10):
        assert_same_batch(next(expected), next(got), f"{name} batch {index}")


def test_resumes_at_its_saved_position(builds, tmp_path):
    """A stream started at a saved position continues the stream that saved it; damaged positions name their file."""
    tokenizer = wordle_tokenizer()
    config = dataclasses.replace(CONFIGS["bc"], dataset=builds["array_record"], out=str(tmp_path))
    first = training_batches(config, tokenizer, DistInfo())
    for _ in range(7):
        next(first)
    first.save(tmp_path / "state")
    assert SourceBatches.read_position(tmp_path / "state") == 7
    resumed = training_batches(config, tokenizer, DistInfo(), skip=0, restore=tmp_path / "state")
    for index in range(3):
        assert_same_batch(next(first), next(resumed), f"resumed batch {index}")
    (tmp_path / "state" / SourceBatches.POSITION).write_text('{"batches": -2}')
    with pytest.raises(ValueError, match=f"{SourceBatches.POSITION}.*'batches'"):
        SourceBatches.read_position(tmp_path / "state")
    with pytest.warns(UserWarning, match="could not be read"):
        replayed = training_batches(config, tokenizer, DistInfo(), skip=10, restore=tmp_path / "state")
    assert_same_batch(next(first), next(replayed), "replayed after a damaged position")


def test_layout_of_decoded_episodes_is_token_mdps(builds):
    """Episodes decoded by the data source and laid out directly equal token_mdp's sequences of the TFRecord
    build, for a tokenizer with its own observation encoding (the board tokenizer) and a gamma below 1."""
    from rlds_lang.wordle.board_tokenizer import WordBoardTokenizer

    tokenizer = WordBoardTokenizer(["crane", "slate", "abide", "speed", "geese", "these", "lever"])
    config = TokenMDPConfig(max_length=30, gamma=0.5, token_reward=-0.25)
    want = list(token_mdp(load(builds["tfrecord"]), tokenizer, config).as_numpy_iterator())
    source = open_source(builds["array_record"])
    got = sequences(layout(StepsBatch.of_episodes(source.__getitems__(list(range(len(source)))), config),
                           tokenizer, config))
    assert len(got) == len(want) == 40
    for index, (expected, ours) in enumerate(zip(want, got)):
        assert sorted(ours) == sorted(expected)
        for key, value in expected.items():
            assert np.asarray(ours[key]).dtype == np.asarray(value).dtype, (index, key)
            assert np.array_equal(ours[key], value), (index, key)
    assert any(s["truncated"] for s in got) and not all(s["dones"].any() for s in got)


class PlainTextSource:
    """A data source's interface (``dataset_info.features``, ``len``, ``__getitems__``) over decoded episodes of a
    plain ``dm_env`` text environment, whose steps hold the observation as one text."""

    def __init__(self, episodes: list[dict], observation: object):
        import tensorflow_datasets as tfds

        self.episodes = episodes
        self.dataset_info = type("Info", (), {})()
        self.dataset_info.features = tfds.features.FeaturesDict({"steps": tfds.features.Dataset({
            "observation": observation, "action": tfds.features.Text(), "reward": np.float64, "is_first": np.bool_,
            "is_last": np.bool_, "is_terminal": np.bool_, "discount": np.float64})})

    def __len__(self) -> int:
        return len(self.episodes)

    def __getitems__(self, indices: list[int]) -> list[dict]:
        return [self.episodes[i] for i in indices]


def test_the_data_source_reads_a_plain_text_observation_by_default():
    """Like token_mdp on tf.data, the data-source reader's default observation key reads a plain-text observation
    (a dataset of one's own dm_env text environment built as ArrayRecord), and keeps a key given explicitly."""
    import tensorflow_datasets as tfds

    from rlds_lang.tokenizers import bytes_tokenizer
    from transforms.array_record import resolved_source_config
    from transforms.data_source import ordered_batches

    def step(observation, action, reward, last):
        return {"observation": observation, "action": action, "reward": reward, "is_first": False,
                "is_last": last, "is_terminal": last, "discount": 0.0 if last else 1.0}

    episodes = [{"steps": [step(b"apple", b"pear", 1.0, False), step(b"pear", b"", 0.0, True)]},
                {"steps": [step(b"fig", b"fig", 0.5, False), step(b"", b"", 0.0, True)]}]
    plain = PlainTextSource(episodes, tfds.features.Text())
    assert resolved_source_config(plain, TokenMDPConfig()).observation_key == "observation"
    assert resolved_source_config(plain, TokenMDPConfig(observation_key="action")).observation_key == "action"
    nested = PlainTextSource(episodes, tfds.features.FeaturesDict({"text": tfds.features.Text()}))
    assert resolved_source_config(nested, TokenMDPConfig()).observation_key == "observation/text"
    tokenizer = bytes_tokenizer()
    [by_default] = ordered_batches(plain, tokenizer, TokenMDPConfig(max_length=32), batch_size=2)
    [named] = ordered_batches(plain, tokenizer, TokenMDPConfig(max_length=32, observation_key="observation"),
                              batch_size=2)
    assert torch.equal(by_default["input_ids"], named["input_ids"])
    assert tokenizer.decode(by_default["input_ids"][0].tolist()).count("pear") == 2


def test_held_out_batches_equal_the_tf_data_readers(builds):
    """Checkpoint selection scores the same held-out episodes in the same batches from either build."""
    @dataclasses.dataclass
    class Model:
        config: BCConfig
        tokenizer: object

    config = BCConfig(max_length=16, top_p=0.75, min_return=-1.0)  # both filters, and sequences cut short
    reference = Model(dataclasses.replace(config, dataset=builds["tfrecord"]), wordle_tokenizer())
    ours = Model(dataclasses.replace(config, dataset=builds["array_record"]), wordle_tokenizer())
    expected = list(held_out_batches(reference, held_out_episodes(reference.config, "train", 30), 7))
    got = list(held_out_batches(ours, held_out_episodes(ours.config, "train", 30), 7))
    assert len(got) == len(expected) >= 2
    for index, (e, g) in enumerate(zip(expected, got)):
        assert_same_batch(e, g, f"held-out batch {index}")


def test_dpo_reads_episodes_of_either_build(builds):
    from trainers.algorithms.dpo.data import load_tree_episodes

    assert load_tree_episodes(builds["array_record"]) == load_tree_episodes(builds["tfrecord"])


def test_reader_choice_and_clear_errors(builds, tmp_path, monkeypatch):
    tokenizer = wordle_tokenizer()
    config = dataclasses.replace(CONFIGS["bc"], out=str(tmp_path))
    # by name under a data folder, as by folder
    name_dir = Path(builds["array_record"])
    by_name = dataclasses.replace(config, dataset=name_dir.parent.parent.name, config=name_dir.parent.name,
                                  data_dir=str(name_dir.parent.parent.parent))
    assert chosen_reader(by_name) == "data_source"
    assert_same_batch(next(training_batches(dataclasses.replace(config, dataset=str(name_dir)), tokenizer, DistInfo())),
                      next(training_batches(by_name, tokenizer, DistInfo())), "by name")
    with pytest.raises(ValueError, match="reader must be one of auto, tf_data, data_source; got 'arrow'"):
        chosen_reader(dataclasses.replace(config, dataset=builds["array_record"], reader="arrow"))
    with pytest.raises(ValueError, match=rf"{builds['array_record']}: its episodes are stored as array_record, which "
                                         "tf.data does not read; train with --reader data_source"):
        training_batches(dataclasses.replace(config, dataset=builds["array_record"], reader="tf_data"), tokenizer,
                         DistInfo())
    with pytest.raises(ValueError, match=rf"{builds['tfrecord']}: its episodes are stored as tfrecord.*array_record"):
        training_batches(dataclasses.replace(config, dataset=builds["tfrecord"], reader="data_source"), tokenizer,
                         DistInfo())
    with pytest.raises(FileNotFoundError, match="no built dataset"):
        open_source("nothing_here", data_dir=str(tmp_path))
    with pytest.raises(KeyError, match=r"observation_key='observation/words': no field 'words'.*\['text', 'turn'\]"):
        check_step_features(open_source(builds["array_record"]), TokenMDPConfig(observation_key="observation/words"))
    with pytest.raises(ValueError, match=r"'action' \(reward_key\) must be number"):
        check_step_features(open_source(builds["array_record"]), TokenMDPConfig(reward_key="action"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ModuleNotFoundError, match="needs TensorFlow.*--file-format array_record"):
        require_tensorflow(config)


def test_episodes_are_checked_against_the_returns_they_were_chosen_by(builds):
    """A stale cache of returns (a dataset rebuilt in place) fails on read instead of training on other episodes."""
    source = open_source(builds["array_record"])
    returns = array_record.episode_returns(source)
    sequences_of = data_source.EpisodeSequences(source, wordle_tokenizer(), TokenMDPConfig(), returns)
    assert [s["episode_return"] for s in sequences_of.__getitems__([0, 5])] == list(returns[[0, 5]].astype(np.float32))
    stale = returns.copy()
    stale[5] += 1.0
    with pytest.raises(ValueError, match="episode 5 of the data source returns .* the dataset changed since"):
        data_source.EpisodeSequences(source, wordle_tokenizer(), TokenMDPConfig(), stale).__getitems__([0, 5])


def test_select_episodes_filters_then_shards():
    returns = np.array([3.0, 9.0, 1.0, 7.0, 7.0, 0.0, 5.0])
    assert select_episodes(7, returns, top_p=0.5).tolist() == [1, 3, 4, 6]
    assert select_episodes(7, returns, top_p=0.5, min_return=7.0, world_size=2, rank=1).tolist() == [3]
    with pytest.raises(ValueError, match="7 episodes need as many returns, got None"):
        select_episodes(7, top_p=0.5)


def test_build_refuses_a_build_in_another_format(builds, tmp_path):
    folder = Path(builds["tfrecord"])
    with pytest.raises(ValueError, match="is built as tfrecord, not array_record"):
        tfds_build(folder.parent.parent.name, folder.parent.name, folder.parent.parent.parent, file_format="array_record")
    with pytest.raises(ValueError, match="file_format must be one of"):
        tfds_build("wordle_synthetic", "expert", tmp_path, file_format="parquet")
    (tmp_path / "dataset_info.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"dataset_info.json: not JSON"):
        array_record.file_format(tmp_path)


#: The modules a training or evaluation run without TensorFlow imports at their top level (directly or through
#: other modules of this repository); none may import TensorFlow there.
TENSORFLOW_FREE = ("trainers.cli.main", "trainers.core.loop", "trainers.core.data", "trainers.core.build",
                   "trainers.evaluation.selection", "trainers.algorithms.registry", "trainers.algorithms.dpo.data",
                   "transforms.data_source", "transforms.array_record", "transforms.token_layout",
                   "transforms.shuffle_order", "transforms.top_p", "transforms.torch_bridge", "rlds_lang.tokenizers")


def _top_level_imports(module: str) -> set[str]:
    """The modules ``module``'s source imports outside functions and ``if TYPE_CHECKING`` blocks."""
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text())
    found: set[str] = set()

    def visit(nodes) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body + node.orelse)
            elif isinstance(node, (ast.Try, ast.With)):
                visit(node.body)

    visit(tree.body)
    return found


def _first_party_module(name: str) -> str | None:
    """``name`` (or, for ``from module import attribute``, its module) when it is a module of this repository."""
    if name.split(".")[0] not in ("trainers", "transforms", "rlds_lang", "loggers", "creator_web", "builders"):
        return None
    for candidate in (name, name.rsplit(".", 1)[0]):
        try:
            spec = importlib.util.find_spec(candidate)
        except (ModuleNotFoundError, ValueError):
            continue
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            return candidate
    return None


def test_training_path_imports_no_tensorflow_at_module_level():
    """The fast twin of the subprocess test below: follows the repository's module-level imports (and the packages
    they live in) from every module a run without TensorFlow loads, and finds no ``tensorflow`` among them."""
    seen, pending, offenders = set(), list(TENSORFLOW_FREE), []
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        pending += [".".join(parts[:i]) for i in range(1, len(parts))]  # importing a.b.c runs a and a.b first
        for name in _top_level_imports(module):
            if name == "tensorflow" or name.startswith("tensorflow."):
                offenders.append(module)
            elif (found := _first_party_module(name)) is not None:
                pending.append(found)
    assert {"transforms", "transforms.token_layout", "trainers.core.checkpoint"} <= seen
    assert "transforms.token_mdp" not in seen
    assert offenders == []


def run_without_tensorflow(*args: str) -> subprocess.CompletedProcess:
    """``rlds-lang ARGS`` in a fresh process where TensorFlow is hidden (``tests/no_tensorflow.py``)."""
    return subprocess.run([sys.executable, str(REPO / "tests" / "no_tensorflow.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=900)


def tensorflow_report(run: subprocess.CompletedProcess) -> dict:
    [line] = [line for line in run.stderr.splitlines() if line.startswith("NO_TENSORFLOW_REPORT ")]
    return json.loads(line.split(" ", 1)[1])


def test_train_and_eval_without_tensorflow(builds, tmp_path):
    """`rlds-lang train bc|ilql` on the ArrayRecord build (two DataLoader workers for BC) and `rlds-lang eval` of
    the result, in processes where TensorFlow cannot be imported; the TFRecord build is refused with what to do."""
    for algorithm, extra in (("bc", ["--reader_workers", "2"]), ("ilql", [])):
        run = run_without_tensorflow("train", algorithm, "--dataset", builds["array_record"], "--steps", "2",
                                     "--out", str(tmp_path / algorithm), *TINY, *extra)
        assert run.returncode == 0, run.stderr[-3000:]
        assert f"{algorithm}: 2 steps" in run.stdout
        assert tensorflow_report(run)["tensorflow_modules"] == []
    played = run_without_tensorflow("eval", "--agent", f"bc={tmp_path / 'bc' / 'checkpoint'}", "--games", "2",
                                    "--no-progress", "--out", str(tmp_path / "eval.json"))
    assert played.returncode == 0, played.stderr[-3000:]
    assert "| bc | 2 |" in played.stdout and tensorflow_report(played)["tensorflow_modules"] == []
    refused = run_without_tensorflow("train", "bc", "--dataset", builds["tfrecord"], "--steps", "1",
                                     "--out", str(tmp_path / "refused"), *TINY)
    assert refused.returncode != 0 and "the tf_data reader needs TensorFlow" in refused.stderr
    assert tensorflow_report(refused)["lookups"] >= 1


def test_beam_builder_builds_array_record(tmp_path):
    """`rlds-lang build` of a Beam builder (wordle_synthetic) with --file-format array_record, read back by the
    data source: every game, with its steps."""
    from trainers.cli.main import main

    main(["build", "wordle_synthetic", "--config", "expert", "--data-dir", str(tmp_path), "--small", "3",
          "--file-format", "array_record"])
    from loggers.tfds_examples import small_config_name

    source = open_source("wordle_synthetic", config=small_config_name("expert", 3), data_dir=str(tmp_path))
    assert len(source) == 3
    assert all(episode["steps"][len(episode["steps"]) - 1]["is_last"] for episode in source)


#: One builder test case of each builder (its dummy data, its config): built as ArrayRecord by
#: ``test_every_builder_builds_array_record``.
BUILDER_CASES = {
    "visdial": ("builders.visdial.visdial_dataset_builder_test", "YnV1Test"),
    "reddit_comments": ("builders.reddit_comments.reddit_comments_dataset_builder_test", "ToxicityPublishedTest"),
    "preferences": ("builders.preferences.preferences_dataset_builder_test", "PreferencesTest"),
    "response_trees": ("builders.response_trees.response_trees_dataset_builder_test", "ManualDirTest"),
    "wordle_tweets": ("builders.wordle_tweets.wordle_tweets_dataset_builder_test", "TrueWordTest"),
    "wordle_synthetic": ("builders.wordle_synthetic.wordle_synthetic_dataset_builder_test", "ManualDirTest"),
}


@pytest.mark.parametrize("builder", sorted(BUILDER_CASES))
def test_every_builder_builds_array_record(builder):
    """Each builder's test case, built as ArrayRecord through TFDS's test harness (its dummy data, Beam where the
    builder uses it): every split holds the episodes the test case expects, each read back by the data source (an
    RLDS episode ends with its ``is_last`` step). The builder tests' own content checks read through ``as_dataset``,
    which ArrayRecord builds do not serve, so the harness's generic build is run here."""
    import unittest

    import tensorflow_datasets as tfds

    module, name = BUILDER_CASES[builder]
    case = getattr(importlib.import_module(module), name)
    read: dict[str, int] = {}

    class AsArrayRecord(case):
        def _make_builder(self, config=None):
            return self.dataset_class(data_dir=self.tmp_dir, config=config, version=self.VERSION,
                                      file_format="array_record")

        def _download_and_prepare_as_dataset(self, builder):
            tfds.testing.DatasetBuilderTestCase._download_and_prepare_as_dataset(self, builder)

        def _assertAsDataset(self, builder):
            assert array_record.file_format(builder.data_dir) == "array_record"
            for split, expected in self.SPLITS.items():
                source = open_source(builder.data_dir, split)
                assert len(source) == expected, (split, len(source), expected)
                for episode in source:
                    steps = episode.get("steps")
                    assert steps is None or steps[len(steps) - 1]["is_last"]
                read[split] = expected

    AsArrayRecord.__name__ = f"{name}AsArrayRecord"
    suite = unittest.TestSuite([AsArrayRecord("test_download_and_prepare_as_dataset")])  # a suite runs setUpClass
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(suite)
    assert result.wasSuccessful(), [text for _, text in result.errors + result.failures]
    assert read and read == dict(AsArrayRecord.SPLITS)


def test_docstring_examples_run():
    for module in (shuffle_order, token_layout, top_p, array_record, data_source, data_module):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__


def test_worker_processes_read_after_tensorflow_ran_in_this_process(builds):
    """Workers give the in-process reader's batches although this process built with TFDS (TensorFlow's threads
    run here): a forked worker crashed with a segmentation fault on its first read; they start from a fork server."""
    source = open_source(builds["array_record"])
    config = token_layout.TokenMDPConfig(max_length=48)
    alone = SourceBatches(source, wordle_tokenizer(), config, 4, 8, seed=1)
    workers = SourceBatches(source, wordle_tokenizer(), config, 4, 8, seed=1, workers=1)
    for index in range(3):
        assert_same_batch(next(alone), next(workers), f"batch {index}")
    assert data_source.worker_start(0) is None and data_source.worker_start(2) == data_source.WORKER_START
