"""transforms.statistics: every number by hand, batch-size invariance, text-only steps, table, PNG, CLI."""

from __future__ import annotations

import doctest
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from transforms import statistics, statistics_report
from transforms.statistics import compute_statistics, dataset_statistics
from transforms.statistics_report import DatasetStatistics

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Episodes with numeric and string fields. The reward on each is_last step is junk on purpose (SAR: ignored).
MIXED = [
    {"action": ["crane", "二 🟩", ""], "reward": [-1.0, 0.0, 7.0], "terminal": True},        # won
    {"action": ["one", "two words", "é", ""], "reward": [0.5, -1.25, -1.0, 5.0], "terminal": False},  # truncated
    {"action": [""], "reward": [3.0], "terminal": True},                                      # no action at all
    {"action": ["🙂", "a  b\tc", ""], "reward": [-1.0, -1.0, 9.0], "terminal": True},        # final reward -1
]
MIXED_RETURNS = [-1.0, -1.75, 0.0, -2.0]
MIXED_LENGTHS = [2, 3, 0, 2]
MIXED_CHARS = [5, 3, 3, 9, 1, 1, 6]   # "二 🟩" is 3 code points, "é" 1, "🙂" 1, "a  b\tc" 6
MIXED_WORDS = [1, 2, 1, 2, 1, 1, 3]


def mixed_episodes() -> tf.data.Dataset:
    """MIXED through ``tf.data.Dataset.from_generator``, steps with an int observation, text and flags."""
    def gen():
        for e, episode in enumerate(MIXED):
            n = len(episode["action"])
            yield {"action": np.array(episode["action"], object), "reward": np.array(episode["reward"], np.float32),
                   "observation": np.arange(n, dtype=np.int32) + 10 * e,
                   "is_last": np.arange(n) == n - 1, "is_terminal": (np.arange(n) == n - 1) & episode["terminal"],
                   "episode_id": str(e)}

    sig = {"action": tf.TensorSpec([None], tf.string), "reward": tf.TensorSpec([None], tf.float32),
           "observation": tf.TensorSpec([None], tf.int32), "is_last": tf.TensorSpec([None], tf.bool),
           "is_terminal": tf.TensorSpec([None], tf.bool), "episode_id": tf.TensorSpec([], tf.string)}

    def make(episode):
        steps = {k: v for k, v in episode.items() if k != "episode_id"}
        return {"steps": tf.data.Dataset.from_tensor_slices(steps), "episode_id": episode["episode_id"]}

    return tf.data.Dataset.from_generator(gen, output_signature=sig).map(make)


def text_only_episodes() -> tf.data.Dataset:
    """Nested from_tensor_slices: steps holding only strings and the two flags (no reward)."""
    actions = tf.ragged.constant([["go north", "二", ""], ["x", ""], ["👩‍👩‍👧", "take lamp", "🟩🟩⬛", ""]])
    observations = tf.ragged.constant([["a", "b", "c"], ["d", "e"], ["f", "g", "h", "i"]])
    terminal = tf.constant([True, False, True])

    def make(action, observation, term):
        n = tf.shape(action)[0]
        last = tf.range(n) == n - 1
        steps = {"observation": observation, "action": action, "is_last": last, "is_terminal": last & term}
        return {"steps": tf.data.Dataset.from_tensor_slices(steps)}

    return tf.data.Dataset.from_tensor_slices((actions, observations, terminal)).map(make)


def test_mixed_episodes_every_number():
    stats = compute_statistics(mixed_episodes())
    assert (stats.episodes, stats.steps, stats.actions) == (4, 11, 7)
    assert (stats.terminated, stats.truncated, stats.wins) == (3, 1, 1)
    assert stats.win_rate == 0.25  # only the first: the truncated one, the empty one and the -1 one are not wins
    assert stats.returns.dtype == np.float64 and stats.returns.tolist() == MIXED_RETURNS
    assert stats.episode_lengths.tolist() == MIXED_LENGTHS
    assert stats.action_lengths.tolist() == MIXED_CHARS
    assert stats.action_words.tolist() == MIXED_WORDS
    assert stats.action_field == "action"
    lenient = compute_statistics(mixed_episodes(), win_reward=-1.0)
    assert lenient.wins == 2 and lenient.win_rate == 0.5


def test_summary_numbers():
    summary = compute_statistics(mixed_episodes()).summary()
    assert summary["episodes"] == 4.0 and summary["win_rate"] == 0.25
    assert summary["return_count"] == 4.0 and summary["return_mean"] == -1.1875
    assert summary["return_min"] == -2.0 and summary["return_max"] == 0.0
    assert math.isclose(summary["return_std"], float(np.std(MIXED_RETURNS)))
    assert summary["return_median"] == -1.375  # between -1.75 and -1
    assert summary["return_p25"] == -1.8125 and summary["return_p75"] == -0.75
    assert summary["episode_length_mean"] == 1.75 and summary["episode_length_max"] == 3.0
    assert summary["action_length_count"] == 7.0 and summary["action_length_mean"] == 4.0
    assert summary["action_length_min"] == 1.0 and summary["action_length_median"] == 3.0
    assert summary["action_length_max"] == 9.0 and summary["action_words_max"] == 3.0


def test_dataset_statistics_dict():
    assert dataset_statistics(mixed_episodes()) == {"episodes": 4, "steps": 11, "actions": 7, "mean_return": -1.1875,
                                                    "min_return": -2.0, "max_return": 0.0, "win_rate": 0.25}


@pytest.mark.parametrize("make", [mixed_episodes, text_only_episodes])
def test_batch_boundaries_do_not_change_results(make):
    reference = compute_statistics(make(), batch_size=4096)
    for size in (1, 2, 3, 5):
        assert compute_statistics(make(), batch_size=size) == reference, size


def test_exact_float_sums_independent_of_batching():
    rewards = [0.1, 0.2, 0.3, 1e-17, 1e16, 1.0, -1e16, 0.0]
    steps = {"reward": rewards, "action": ["a"] * 7 + [""], "is_last": [False] * 7 + [True],
             "is_terminal": [False] * 7 + [True]}
    episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)}).repeat(3)
    results = {size: compute_statistics(episodes, batch_size=size).returns.tolist() for size in (1, 2, 3, 7, 4096)}
    assert len({tuple(r) for r in results.values()}) == 1


def test_text_only_steps():
    stats = compute_statistics(text_only_episodes(), batch_size=2)
    assert (stats.episodes, stats.steps, stats.actions) == (3, 9, 6)
    assert (stats.terminated, stats.truncated) == (2, 1)
    assert stats.episode_lengths.tolist() == [2, 1, 3]
    # "👩‍👩‍👧" is 5 code points (3 people, 2 zero-width joiners); "🟩🟩⬛" is 3
    assert stats.action_lengths.tolist() == [8, 1, 1, 5, 9, 3]
    assert stats.action_words.tolist() == [2, 1, 1, 1, 2, 1]
    assert np.isnan(stats.returns).all() and len(stats.returns) == 3  # no reward field: returns unknown
    assert math.isnan(stats.win_rate)
    assert "nan" in stats.table()


def test_nested_action_and_missing_action():
    steps = {"action": {"id": [3, 4, 0], "note": ["n", "nn", ""], "text": ["ab", "二", ""]},
             "reward": [1.0, 2.0, 0.0], "is_last": [False, False, True], "is_terminal": [False, False, True]}
    episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    first_leaf = compute_statistics(episodes)  # first string leaf in tf.nest (sorted key) order: "note"
    assert first_leaf.action_field == "action/note" and first_leaf.action_lengths.tolist() == [1, 2]
    by_path = compute_statistics(episodes, action_key="action/text")
    assert by_path.action_field == "action/text" and by_path.action_lengths.tolist() == [2, 1]
    numeric = compute_statistics(episodes, action_key="action/id")
    assert numeric.action_field is None and numeric.action_lengths.size == 0
    assert numeric.returns.tolist() == [3.0] and numeric.actions == 2
    with pytest.raises(KeyError, match="is_last"):
        compute_statistics(tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices({"a": [1]})}))


def test_unfinished_tail_and_empty_dataset(tmp_path):
    steps = {"reward": [1.0, 0.0, 2.0], "is_last": [False, True, False], "is_terminal": [False, True, False]}
    episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    with pytest.warns(RuntimeWarning, match="1 trailing steps"):
        stats = compute_statistics(episodes, batch_size=2)
    assert (stats.episodes, stats.steps, stats.actions) == (1, 3, 1) and stats.returns.tolist() == [1.0]
    empty = compute_statistics(episodes.take(0))
    assert (empty.episodes, empty.steps, empty.returns.size) == (0, 0, 0) and math.isnan(empty.win_rate)
    assert math.isnan(empty.summary()["return_mean"])
    pytest.importorskip("matplotlib")
    assert empty.plot(tmp_path / "empty.png").read_bytes().startswith(PNG_SIGNATURE)


def table_rows(table: str) -> dict[str, list[str]]:
    lines = table.splitlines()
    return {cells[0]: cells[1:] for cells in (re.split(r"\s{2,}", line.strip()) for line in lines[1:])}


def test_table_contains_the_numbers():
    table = compute_statistics(mixed_episodes()).table()
    print(table)
    head = table.splitlines()[0]
    assert head == ("episodes 4  steps 11  actions 7  terminated 3  truncated 1  win rate 0.250 "
                    "(final reward >= 0)")
    rows = table_rows(table)
    assert rows["quantity"] == ["count", "mean", "std", "min", "p25", "median", "p75", "max"]
    assert rows["return"] == ["4", "-1.188", f"{np.std(MIXED_RETURNS):.3f}", "-2", "-1.812", "-1.375", "-0.750", "0"]
    assert rows["episode length (actions)"] == ["4", "1.750", f"{np.std(MIXED_LENGTHS):.3f}", "0", "1.500", "2",
                                                "2.250", "3"]
    assert rows["action length (chars)"] == ["7", "4", f"{np.std(MIXED_CHARS):.3f}", "1", "2", "3", "5.500", "9"]
    assert rows["action length (words)"][0] == "7" and rows["action length (words)"][-1] == "3"
    widths = {len(line) for line in table.splitlines()[1:]}
    assert len(widths) == 1  # aligned: every row as wide as the header


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from PIL import Image

    out = compute_statistics(mixed_episodes()).plot(tmp_path / "sub" / "stats.png")
    data = out.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 20_000
    with Image.open(out) as image:
        assert image.size == (1500, 450)


def test_module_imports_neither_torch_nor_matplotlib():
    code = ("import sys, tensorflow\n"
            "before = set(sys.modules)\n"  # tensorflow itself may pull matplotlib (keras) when installed
            "import transforms.statistics\n"
            "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
            "print(sorted(new & {'torch', 'matplotlib'}))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]),
               TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_docstring_examples_run():
    try:
        import matplotlib  # noqa: F401
        plotting = True
    except ImportError:  # the legacy TF 2.15 environment: everything but plot's example
        plotting = False
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for module in (statistics, statistics_report):
        for test in doctest.DocTestFinder().find(module, globs={**vars(module), "tf": tf, "np": np}):
            if plotting or not test.name.endswith(".plot"):
                runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted >= 6
    for obj in (compute_statistics, dataset_statistics, DatasetStatistics, DatasetStatistics.summary,
                DatasetStatistics.table, DatasetStatistics.plot):
        assert ">>>" in obj.__doc__, obj


# The CLI on a small dataset built like tests/test_transforms.py's fixture (record -> TFDS builder).

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("envlogger")
    pytest.importorskip("matplotlib")
    import tensorflow_datasets as tfds

    from loggers import record
    from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode
    from tests.test_builder_roundtrip import ReplayRoundtrip

    episodes = [
        ScriptedEpisode([{"text": t, "turn": np.int32(i)} for i, t in enumerate(["", "🟩⬛", "🟩🟩"])],
                        ["crane", "🟩 ok"], [-1.0, 0.0], {"source": "a", "weight": np.float64(1.0)}),
        ScriptedEpisode([{"text": t, "turn": np.int32(i)} for i, t in enumerate(["start", "é\x00", "end", "x"])],
                        ["one", "二", "two words"], [-1.0, -1.0, -1.0], {"source": "b", "weight": np.float64(2.0)},
                        truncated=True),
    ]
    tmp = tmp_path_factory.mktemp("stats")
    logs = os.fspath(tmp / "logs")
    record(ReplayEnv(episodes), ReplayPolicy(episodes), episodes=2, data_dir=logs, run_name="st", progress=False)
    builder = ReplayRoundtrip(data_dir=os.fspath(tmp / "tfds"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=logs))
    return builder.data_dir, os.fspath(tmp / "tfds")


def test_statistics_of_a_built_dataset(built):
    from transforms.loading import load

    stats = compute_statistics(load(built[0]))
    assert (stats.episodes, stats.steps, stats.actions, stats.terminated, stats.truncated) == (2, 7, 5, 1, 1)
    assert stats.win_rate == 0.5
    assert sorted(stats.returns.tolist()) == [-3.0, -1.0] and sorted(stats.episode_lengths.tolist()) == [2, 3]
    assert sorted(stats.action_lengths.tolist()) == [1, 3, 4, 5, 9]


def test_cli_stats(built, tmp_path, capsys):
    from trainers.cli.main import main

    data_dir, tfds_root = built
    out = tmp_path / "cli.png"
    main(["stats", data_dir, "--plot", os.fspath(out)])
    printed = capsys.readouterr().out
    print(printed)
    # a task without a win rule (the episodes' task is "replay"): no win rate, and a line saying why
    assert "task replay" in printed and "episodes 2  steps 7  actions 5  terminated 1  truncated 1\n" in printed
    assert "win rate 0" not in printed and "(no win rate: this task has no win rule here" in printed
    table = printed[printed.index("episodes 2"):printed.index("plot ->")]
    rows = table_rows(table)
    assert rows["return"] == ["2", "-2", "1", "-3", "-2.500", "-2", "-1.500", "-1"]
    assert rows["action length (chars)"][:4] == ["5", "4.400", f"{np.std([1, 3, 4, 5, 9]):.3f}", "1"]
    assert out.read_bytes().startswith(PNG_SIGNATURE)
    main(["stats", "replay_roundtrip", "--config", "default", "--data_dir", tfds_root, "--split", "train[:1]",
          "--win-reward", "-1"])
    assert "episodes 1" in capsys.readouterr().out
    main(["stats", data_dir, "--win-reward", "0"])  # a rule given: counted for any task
    assert "truncated 1  win rate 0.500 (final reward >= 0)" in capsys.readouterr().out


def test_cli_stats_gives_the_win_rate_only_where_the_task_has_a_win_rule(monkeypatch, capsys):
    """Wordle's rule (the final guess earns >= 0) for a Wordle dataset; none for another task, where 4 of 5 episodes
    whose final action earned 0 would otherwise read as "win rate 1.000"."""
    import transforms.loading
    from trainers.cli.main import main

    def episodes(task: str, finals: list[float]) -> tf.data.Dataset:
        n = len(finals)
        steps = {"action": [["a", ""]] * n, "reward": [[f, 0.0] for f in finals], "is_last": [[False, True]] * n,
                 "is_terminal": [[False, True]] * n}
        return tf.data.Dataset.from_tensor_slices({"task": [task] * n, **steps}).map(
            lambda e: {"task": e["task"], "steps": tf.data.Dataset.from_tensor_slices({k: e[k] for k in steps})})

    monkeypatch.setattr(transforms.loading, "load", lambda *a, **k: episodes("wordle", [0.0, -1.0, 0.0, -1.0]))
    main(["stats", "any"])
    assert "win rate 0.500 (final reward >= 0)" in capsys.readouterr().out
    monkeypatch.setattr(transforms.loading, "load", lambda *a, **k: episodes("echo", [0.0, 0.0, 0.0, 0.0, -1.0]))
    main(["stats", "any"])
    printed = capsys.readouterr().out
    assert "task echo" in printed and "\nepisodes 5  steps 10  actions 5  terminated 5  truncated 0\n" in printed


def test_returns_and_lengths_read_from_the_record_files_agree_with_compute_statistics(built):
    from transforms.loading import load
    from transforms.statistics import returns_and_lengths

    stats = compute_statistics(load(built[0]))
    for batch_size in (1, 4096):
        returns, lengths = returns_and_lengths(built[0], batch_size=batch_size)
        assert sorted(zip(returns.tolist(), lengths.tolist())) == sorted(zip(stats.returns.tolist(),
                                                                             stats.episode_lengths.tolist()))
    assert sorted(returns.tolist()) == [-3.0, -1.0] and returns.dtype == np.float64
