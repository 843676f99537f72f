"""Recording any ``dm_env.Environment``: the schema read from its specs (``rlds_lang.spec_schema``), the adapter
``loggers.record`` puts around it (``loggers.plain_env``), the log folder's schema and examples
(``loggers.log_schema``), a builder of another task refusing those logs in one line, and the failure of plain
EnvLogger's TFDS backend on the same game's text actions that the guide states."""

from __future__ import annotations

import os

import dm_env
import numpy as np
import pytest
from dm_env import specs

from loggers import dataset_metadata, log_dirs, read_episodes, record
from loggers.log_schema import LogSchemaError, episode_example, read_log_schema
from loggers.plain_env import PlainEnv, as_language_env, task_name_of
from loggers.tfds_examples import WrongBuilderError, check_logs_fit
from rlds_lang.spec_schema import (SPECS_KEY, UnsupportedSpecError, ValueMismatchError, conform, describe_environment,
                                   from_json)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("apple", "pear", "fig")


class TextGame(dm_env.Environment):
    """Shows a word (text, with a float64 score and an int8 board beside it); repeating it earns 1. The actions are
    ``bytes`` when ``bytes_actions``, so that bytes that are not UTF-8 can be recorded."""

    def __init__(self, bytes_actions: bool = False):
        self.bytes_actions, self.turn, self.start = bytes_actions, 0, 0

    def seed(self, seed: int) -> None:
        self.start = seed

    def _observation(self) -> dict:
        word = WORDS[(self.start + self.turn) % len(WORDS)] if self.turn < 3 else ""
        return {"word": word, "score": np.float64(self.turn / 3), "board": np.arange(3, dtype=np.int8) * self.turn}

    def reset(self) -> dm_env.TimeStep:
        self.turn = 0
        return dm_env.restart(self._observation())

    def step(self, action) -> dm_env.TimeStep:
        expected = self._observation()["word"]
        reward = float(action == (expected.encode() if self.bytes_actions else expected))
        self.turn += 1
        if self.turn == 3:
            return dm_env.termination(reward, self._observation())
        return dm_env.transition(reward, self._observation())

    def observation_spec(self) -> dict:
        return {"word": specs.StringArray((), str, name="word"), "score": specs.Array((), np.float64, name="score"),
                "board": specs.BoundedArray((3,), np.int8, 0, 8, name="board")}

    def action_spec(self) -> specs.StringArray:
        return specs.StringArray((), bytes if self.bytes_actions else str, name="action")


def raw_bytes(observations, actions):
    """Repeats the word as bytes, except on the second turn: bytes that are not UTF-8 (reward 0)."""
    return b"\xff\x00\xfe" if len(actions) == 1 else observations[-1]["word"].encode()


def test_the_description_of_the_specs_names_every_field_and_refuses_what_cannot_be_stored():
    described = describe_environment(TextGame(bytes_actions=True))
    assert described["action"] == {"kind": "text", "string_type": "bytes", "shape": []}
    assert described["observation"]["fields"]["word"] == {"kind": "text", "string_type": "str", "shape": []}
    assert described["observation"]["fields"]["board"] == {"kind": "number", "dtype": "int8", "shape": [3]}
    assert described["reward"] == {"kind": "number", "dtype": "float64", "shape": []}

    class Tupled(TextGame):
        def observation_spec(self):
            return (specs.Array((), np.int32), specs.Array((), np.int32))

    with pytest.raises(UnsupportedSpecError, match="^observation: a tuple of specs has no field names"):
        describe_environment(Tupled())

    class Complex(TextGame):
        def observation_spec(self):
            return {"signal": specs.Array((2,), np.complex64)}

    with pytest.raises(UnsupportedSpecError, match="^observation/signal: dtype complex64"):
        describe_environment(Complex())


def test_conform_keeps_values_exact_and_names_the_field_of_a_value_that_does_not_fit():
    number = {"kind": "number", "dtype": "int8", "shape": [3]}
    assert conform(number, [1, 2, 3], "x").dtype == np.int8
    with pytest.raises(ValueMismatchError, match=r"^episode e, step 2, observation/board: .* does not fit int8"):
        conform(number, [0.5, 1, 2], "episode e, step 2, observation/board")
    with pytest.raises(ValueMismatchError, match=r"expected shape \(3,\)"):
        conform(number, [1, 2], "x")
    text = {"kind": "text", "string_type": "bytes", "shape": []}
    assert conform(text, b"\xff\x00", "x") == b"\xff\x00" and conform(text, np.array("é", object), "x") == "é"
    with pytest.raises(ValueMismatchError, match="expected text"):
        conform(text, 3, "x")
    assert conform({"kind": "number", "dtype": "float64", "shape": []}, 0.1, "x") == 0.1  # no float32 rounding


def test_a_plain_environment_records_losslessly_with_its_specs_beside_the_logs(tmp_path):
    logs = tmp_path / "logs"
    result = record(TextGame(bytes_actions=True), raw_bytes, episodes=3, data_dir=logs, progress=False)
    assert result.num_episodes == 3
    episodes = {e["episode_id"]: e for e in read_episodes(logs)}
    first = episodes["run-00000000"]
    assert first["task"] == "text_game" and first["policy"] == "raw_bytes" and first["seed"] == 0
    actions = [step["action"] for step in first["steps"]]
    assert actions == [b"apple", b"\xff\x00\xfe", b"fig", ""]  # bytes stay bytes, byte for byte
    assert [step["reward"] for step in first["steps"]] == [1.0, 0.0, 1.0, 0.0]
    observation = first["steps"][1]["observation"]
    assert observation["word"] == "pear" and observation["score"] == 1 / 3 and observation["board"].tolist() == [0, 1, 2]
    stored = from_json(dataset_metadata(log_dirs(logs)[0])[SPECS_KEY])
    assert stored == describe_environment(TextGame(bytes_actions=True))


def test_the_adapter_passes_timesteps_through_and_names_the_task():
    class PlainEcho(dm_env.Environment):
        def reset(self):
            return dm_env.restart("hi")

        def step(self, action):
            return dm_env.termination(1.0, action)

        def observation_spec(self):
            return specs.StringArray((), str, name="observation")

        def action_spec(self):
            return specs.StringArray((), str, name="action")

    env = PlainEcho()
    adapted = as_language_env(env)
    assert isinstance(adapted, PlainEnv) and adapted.task_name == "plain_echo" == task_name_of(env)
    assert as_language_env(adapted) is adapted
    assert adapted.reset().observation == "hi" and adapted.step("yo").observation == "yo"
    assert adapted.episode_metadata() == {} and adapted.step_metadata() == {}
    env.task_name = "echo"
    assert task_name_of(env) == "echo"


def test_a_recording_that_fails_leaves_no_folder_unless_an_episode_finished(tmp_path):
    def broken(observations, actions):
        raise RuntimeError("policy bug")

    with pytest.raises(RuntimeError, match="policy bug"):
        record(TextGame(), broken, episodes=2, data_dir=tmp_path / "none", progress=False)
    assert not (tmp_path / "none").exists()

    def breaks_in_the_second_episode(observations, actions):
        if observations[0]["word"] == "pear":
            raise RuntimeError("policy bug")
        return observations[-1]["word"]

    with pytest.raises(RuntimeError, match="policy bug"):
        record(TextGame(), breaks_in_the_second_episode, episodes=3, data_dir=tmp_path / "one", progress=False)
    assert [e["episode_id"] for e in read_episodes(tmp_path / "one")] == ["run-00000000"]  # acknowledged: kept

    class Tupled(TextGame):
        def action_spec(self):
            return (specs.Array((), np.int32),)

    with pytest.raises(UnsupportedSpecError, match="^action: a tuple"):
        record(Tupled(), broken, episodes=1, data_dir=tmp_path / "never", progress=False)
    assert not (tmp_path / "never").exists()


def test_the_log_schema_is_read_from_the_logs_and_every_value_checked(tmp_path):
    logs = tmp_path / "logs"
    record(TextGame(bytes_actions=True), raw_bytes, episodes=2, data_dir=logs, progress=False)
    schema = read_log_schema(logs)
    assert schema.task == "text_game" and schema.specs["action"]["string_type"] == "bytes"
    assert set(schema.episode_metadata) == {"episode_id", "task", "policy", "policy_params", "seed"}
    assert "action bytes" in schema.summary() and "episode seed int64" in schema.summary()
    episode = next(read_episodes(logs))
    key, example = episode_example(episode, schema, "logs")
    assert key == episode["episode_id"] and example["steps"][1]["action"] == b"\xff\x00\xfe"
    episode["steps"][2]["observation"]["board"] = np.array([0.5, 0, 0])
    with pytest.raises(ValueMismatchError, match=r"logs: episode run-0000000\d, step 2, observation/board"):
        episode_example(episode, schema, "logs")
    record(TextGame(), lambda o, a: o[-1]["word"], episodes=1, data_dir=tmp_path / "other", progress=False)
    os.rename(log_dirs(tmp_path / "other")[0], logs / "chunk_other")
    with pytest.raises(LogSchemaError, match="build each environment's logs as its own dataset"):
        read_log_schema(logs)
    with pytest.raises(LogSchemaError, match="holds no EnvLogger log directory"):
        read_log_schema(tmp_path / "other")


def test_a_wordle_builder_refuses_another_tasks_logs_in_one_line_naming_the_builder_that_fits(tmp_path):
    from builders.response_trees.response_trees_dataset_builder import SCHEMA as TREES
    from rlds_lang.wordle.schema import WORDLE_SCHEMA

    logs = tmp_path / "logs"
    record(TextGame(), lambda o, a: o[-1]["word"], episodes=1, data_dir=logs, progress=False)
    with pytest.raises(WrongBuilderError) as error:
        check_logs_fit(logs, WORDLE_SCHEMA, "wordle_synthetic/manual_dir")
    message = str(error.value)
    assert "\n" not in message and "recorded from task 'text_game'" in message
    assert message.endswith(f"build them with the generic builder: rlds-lang build {logs} --name NAME")
    wordle_logs = os.path.join(REPO, "builders", "wordle_synthetic", "dummy_data")
    check_logs_fit(wordle_logs, WORDLE_SCHEMA, "wordle_synthetic/manual_dir")  # they fit: no error
    with pytest.raises(WrongBuilderError, match=r"lack step metadata 'node_id'.*build them with wordle_synthetic"):
        check_logs_fit(wordle_logs, TREES, "response_trees/manual_dir",
                       alternatives={"wordle_synthetic --config manual_dir": WORDLE_SCHEMA})


@pytest.mark.parametrize("kind,error", [("str", "Dtype <U3 do not match object"),
                                        ("object array", "Expected binary or unicode string, got 0"),
                                        ("bytes", "Dtype |S3 do not match object")])
def test_plain_envloggers_tfds_backend_fails_on_text_actions_as_the_guide_says(kind, error, tmp_path):
    """docs/guides/own_environment.md: EnvLogger 1.2's TFDS backend fills the last step's action with
    ``np.zeros_like`` of the previous one, which TFDS's ``Text`` cannot encode, however the text is passed."""
    import envlogger
    import tensorflow_datasets as tfds
    from envlogger.backends import tfds_backend_writer

    class Echo(dm_env.Environment):
        def reset(self):
            self.turn = 0
            return dm_env.restart(WORDS[0])

        def step(self, action):
            self.turn += 1
            if self.turn == 3:
                return dm_env.termination(1.0, "")
            return dm_env.transition(1.0, WORDS[self.turn])

        def observation_spec(self):
            return specs.StringArray((), str, name="observation")

        def action_spec(self):
            return specs.StringArray((), str, name="action")

    convert = {"str": str, "object array": lambda w: np.array(w, dtype=object), "bytes": str.encode}[kind]
    config = tfds.rlds.rlds_base.DatasetConfig(name="echo", observation_info=tfds.features.Text(),
                                               action_info=tfds.features.Text(), reward_info=np.float64,
                                               discount_info=np.float64)
    writer = tfds_backend_writer.TFDSBackendWriter(data_directory=str(tmp_path), split_name="train",
                                                   max_episodes_per_file=10, ds_config=config)
    with pytest.raises((ValueError, TypeError), match=error.replace("|", r"\|")):
        with envlogger.EnvLogger(Echo(), backend=writer) as env:
            timestep, turn = env.reset(), 0
            while not timestep.last():
                timestep, turn = env.step(convert(WORDS[turn])), turn + 1


def test_the_features_of_the_specs_give_back_float64_and_bytes_exactly():
    """``tfds_feature``: float64 is stored as raw bytes (a plain TFDS float is float32 and would round 0.1)."""
    from rlds_lang.spec_schema import tfds_feature

    import tensorflow_datasets as tfds

    for field, value in ((describe_environment(TextGame())["observation"]["fields"]["score"], 0.1),
                         ({"kind": "number", "dtype": "float64", "shape": [2]}, np.array([1 / 3, -2.5e-300])),
                         ({"kind": "text", "string_type": "bytes", "shape": []}, b"\xff\x00")):
        features = tfds.features.FeaturesDict({"x": tfds_feature(field)})  # serialized as a build writes it
        decoded = features.deserialize_example(features.serialize_example({"x": value}))["x"]
        assert np.array_equal(np.asarray(decoded.numpy()), np.asarray(value)), (field, value)


def test_wordle_synthetic_refuses_another_tasks_logs_before_beam_starts(tmp_path):
    import tensorflow_datasets as tfds

    import rlds_lang_datasets

    logs = tmp_path / "logs"
    record(TextGame(), lambda o, a: o[-1]["word"], episodes=1, data_dir=logs, progress=False)
    builder = rlds_lang_datasets.BUILDERS["wordle_synthetic"](config="manual_dir", data_dir=str(tmp_path / "tfds"))
    with pytest.raises(WrongBuilderError, match="recorded from task 'text_game'.*rlds-lang build .* --name NAME$"):
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(logs)))


def test_a_folder_whose_files_could_not_be_written_is_kept(tmp_path, monkeypatch):
    """The cleanup is for a failing environment or policy: an ``OSError`` (a full disk) names the folder's files,
    so the folder stays for inspection."""
    import importlib

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(importlib.import_module("loggers.record"), "_record_chunks", full)  # the module, not record()
    with pytest.raises(OSError, match="No space left"):
        record(TextGame(), raw_bytes, episodes=1, data_dir=tmp_path / "logs", progress=False)
    assert (tmp_path / "logs").is_dir()


def test_the_generic_builders_features_are_the_recorded_specs_and_an_episode_passes_through_them(tmp_path):
    """rlds_logs on a log folder declares the features of its recorded specs (a dict observation of text, float64
    and int8, bytes actions), and an episode of those logs comes back through them byte for byte: the fast twin of
    the builder's DatasetBuilderTestCase and of the guide's build."""
    from builders.rlds_logs.rlds_logs_dataset_builder import Builder, LogsConfig

    logs = tmp_path / "logs"
    record(TextGame(bytes_actions=True), raw_bytes, episodes=1, data_dir=logs, progress=False)
    builder = Builder(config=LogsConfig(name="text_game", logs=str(logs)), data_dir=str(tmp_path / "tfds"))
    steps = builder.info.features["steps"].feature
    assert sorted(steps["observation"].keys()) == ["board", "score", "word"]
    assert steps["observation"]["board"].shape == (3,) and steps["observation"]["board"].np_dtype == np.int8
    assert steps["observation"]["score"].np_dtype == np.float64 and builder.info.metadata["task"] == "text_game"
    episode = next(read_episodes(logs))
    _, example = episode_example(episode, read_log_schema(logs), "logs")
    features = builder.info.features
    decoded = features.deserialize_example(features.serialize_example(example))
    back = list(decoded["steps"].as_numpy_iterator())
    assert [s["action"] for s in back] == [b"apple", b"\xff\x00\xfe", b"fig", b""]
    assert [s["observation"]["word"] for s in back] == [b"apple", b"pear", b"fig", b""]
    assert [s["observation"]["score"] for s in back] == [0.0, 1 / 3, 2 / 3, 1.0]
    assert back[2]["observation"]["board"].tolist() == [0, 2, 4]
