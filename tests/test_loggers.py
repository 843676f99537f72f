"""loggers.record / read_episodes / record_and_read: lossless Wordle round trip, metadata, workers, explicit
seeds, crash safety."""

import json
import os
import signal
import subprocess
import sys

import envlogger
import numpy as np
import pytest

from loggers import log_dirs, read_episodes, record, record_and_read
from loggers.durability import Durability
from rlds_lang.env import run_episode
from rlds_lang.schema import check_episode
from rlds_lang.wordle.env import WordleEnv
from tests.scripted import ScriptedWordle

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _by_id(episodes):
    return {e["episode_id"]: e for e in episodes}


def test_recorded_games_equal_played_games(tmp_path):
    policy = ScriptedWordle(["crane", "slate", "moist", "abide", "fight", "zesty"])
    result = record(WordleEnv(seed=4), policy, episodes=12, data_dir=tmp_path / "logs", seed=100,
                    run_name="t", progress=False)
    assert result.num_episodes == 12
    episodes = _by_id(read_episodes(tmp_path / "logs"))
    assert sorted(episodes) == [f"t-{i:08d}" for i in range(12)]
    for i in range(12):
        env = WordleEnv(seed=4)
        played = run_episode(env, ScriptedWordle(policy.words), seed=100 + i)
        ep = episodes[f"t-{i:08d}"]
        check_episode(ep)
        steps = ep["steps"]
        assert [s["observation"]["text"] for s in steps] == [o["text"] for o in played.observations]
        for s, o in zip(steps, played.observations):
            np.testing.assert_array_equal(s["observation"]["feedback"], o["feedback"])
            assert int(s["observation"]["turn"]) == int(o["turn"])
        assert [s["action"] for s in steps] == played.actions + [""]
        assert [s["reward"] for s in steps] == played.rewards + [0.0]
        assert [s["discount"] for s in steps] == played.discounts + [0.0]
        assert steps[-1]["is_terminal"] and steps[0]["is_first"]
        assert ep["answer"] == played.metadata["answer"] and int(ep["seed"]) == 100 + i
        assert ep["policy"] == "scripted" and json.loads(ep["policy_params"]) == {"words": policy.words}
        assert ep["task"] == "wordle" and ep["answers_sha256"] == env.answers.sha256


def test_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "keep.txt").write_text("recorded before")
    with pytest.raises(FileExistsError, match="not empty"):
        record(WordleEnv(), ScriptedWordle(["crane"]), 1, tmp_path / "logs", progress=False)
    assert (tmp_path / "logs" / "keep.txt").read_text() == "recorded before"


def test_workers_give_the_same_episodes(tmp_path):
    words = ["crane", "slate", "moist", "abide", "fight", "zesty"]
    one = record(WordleEnv(seed=2), ScriptedWordle(words), 20, tmp_path / "one", progress=False)
    two = record(WordleEnv(seed=2), ScriptedWordle(words), 20, tmp_path / "two", workers=2, chunk_size=5,
                 progress=False)
    assert one.num_episodes == two.num_episodes == 20 and len(two.log_dirs) == 4
    a, b = _by_id(read_episodes(tmp_path / "one")), _by_id(read_episodes(tmp_path / "two"))
    assert sorted(a) == sorted(b)
    for key in a:
        assert a[key]["answer"] == b[key]["answer"]
        assert [s["action"] for s in a[key]["steps"]] == [s["action"] for s in b[key]["steps"]]


@pytest.mark.parametrize("workers", [1, 2])
def test_explicit_seeds_seed_each_episode(tmp_path, workers):
    # adversarial_resample redraws the hidden word from the env's RNG: equal seeds must replay equal games.
    words, seeds = ["crane", "slate", "moist", "abide", "fight", "zesty"], [7, 7, 3, 7, 11]
    env = WordleEnv(mode="adversarial_resample", seed=5)
    result = record(env, ScriptedWordle(words), len(seeds), tmp_path / "logs", seed=1000, seeds=seeds, run_name="s",
                    workers=workers, chunk_size=2, progress=False)
    assert result.num_episodes == 5 and len(result.log_dirs) == 3
    episodes = _by_id(read_episodes(tmp_path / "logs"))
    assert sorted(episodes) == [f"s-{i:08d}" for i in range(5)]
    for i, seed in enumerate(seeds):
        ep = episodes[f"s-{i:08d}"]
        played = run_episode(WordleEnv(mode="adversarial_resample", seed=5), ScriptedWordle(words), seed=seed)
        assert int(ep["seed"]) == seed
        assert [s["observation"]["text"] for s in ep["steps"]] == [o["text"] for o in played.observations]
        assert [s["action"] for s in ep["steps"]] == played.actions + [""]
        assert (ep["initial_answer"], ep["answer"]) == (played.metadata["initial_answer"], played.metadata["answer"])
    same = [episodes[f"s-{i:08d}"] for i in (0, 1, 3)]
    assert len({tuple(s["observation"]["text"] for s in ep["steps"]) for ep in same}) == 1
    with envlogger.Reader(data_directory=result.log_dirs[0]) as reader:
        assert bool(reader.metadata()["explicit_seeds"]) is True


def test_explicit_seeds_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r"seeds has 2 entries but episodes=3"):
        record(WordleEnv(), ScriptedWordle(["crane"]), 3, tmp_path / "logs", seeds=[1, 2], progress=False)
    with pytest.raises(TypeError, match=r"seeds\[1\] must be an integer, got float"):
        record(WordleEnv(), ScriptedWordle(["crane"]), 2, tmp_path / "logs", seeds=[1, 2.5], progress=False)
    assert not (tmp_path / "logs").exists()  # nothing written for a bad call


def test_record_and_read_leaves_no_logs(tmp_path):
    words = ["crane", "slate", "moist", "abide", "fight", "zesty"]
    episodes = list(record_and_read(WordleEnv(seed=3), ScriptedWordle(words), 4, tmp_path, run_name="rr", seed=50))
    assert [e["episode_id"] for e in episodes] == [f"rr-{i:08d}" for i in range(4)]
    assert [int(e["seed"]) for e in episodes] == [50, 51, 52, 53]
    for ep in episodes:
        check_episode(ep)
    assert list(tmp_path.iterdir()) == []  # the temporary log folder is gone once read


def _kill_child_at(logs, line_wanted, *mode):
    """Starts the crash-test child (tests/scripted.py) recording into ``logs`` and SIGKILLs it as soon as it
    prints ``line_wanted``."""
    child = subprocess.Popen([sys.executable, os.path.join(REPO, "tests", "scripted.py"), str(logs), REPO, *mode],
                             stdout=subprocess.PIPE, text=True, cwd=REPO,
                             env={**os.environ, "PYTHONPATH": REPO})
    try:
        for line in child.stdout:
            if line.strip() == line_wanted:
                break
        else:
            pytest.fail(f"child ended early with code {child.wait()}")
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert len(log_dirs(logs)) == 1


def _check_survivors(logs, finished):
    episodes = list(read_episodes(logs))
    assert len(episodes) >= finished
    for ep in episodes:
        check_episode(ep)
        assert ep["episode_id"].startswith("run-") and ep["answer"]
    assert [ep["episode_id"] for ep in episodes[:finished]] == [f"run-{i:08d}" for i in range(finished)]
    return episodes


def test_sigkill_loses_at_most_the_episode_in_flight(tmp_path):
    target = 7
    _kill_child_at(tmp_path / "logs", f"in {target}")  # episode `target` is in flight: 0..target-1 are finished
    _check_survivors(tmp_path / "logs", target)


def test_a_killed_folder_builds_with_tfds_to_the_episodes_that_survived(tmp_path):
    from trainers.core.build import tfds_build
    from transforms.loading import load

    _kill_child_at(tmp_path / "logs" / "killed", "in 5")
    survivors = _check_survivors(tmp_path / "logs" / "killed", 5)
    built = tfds_build("wordle_synthetic", "manual_dir", tmp_path / "tfds", manual_dir=tmp_path / "logs", quiet=True)
    ids = sorted(ep["episode_id"].numpy().decode() for ep in load(built))  # manual_dir: one train split
    assert ids == sorted(ep["episode_id"] for ep in survivors)


@pytest.mark.parametrize("boundary", [1, 7])
def test_sigkill_right_after_an_episode_ends_keeps_it(tmp_path, boundary):
    # killed between episodes: `boundary - 1` has ended (not yet indexed by EnvLogger), `boundary` has not begun
    _kill_child_at(tmp_path / "logs", f"between {boundary}", "boundary")
    episodes = _check_survivors(tmp_path / "logs", boundary)
    assert len(episodes) == boundary  # nothing was in flight
    last = episodes[-1]
    assert int(last["seed"]) == boundary - 1 and last["steps"][-1]["is_last"]


class _Zygote:
    """The crash-test child in zygote mode (tests/scripted.py): forks a recorder per trial, so 40 trials take
    seconds. Reads its stdout with a deadline so a stuck child fails the test instead of hanging it."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, os.path.join(REPO, "tests", "scripted.py"), "zygote", REPO],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO,
                                     env={**os.environ, "PYTHONPATH": REPO})
        self._buffer = b""

    def line(self, deadline=30.0):
        import select
        import time

        end = time.monotonic() + deadline
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                pytest.fail("the crash-test zygote printed nothing for 30 s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                pytest.fail(f"the crash-test zygote ended with code {self.proc.wait()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def trial(self, logs, durability, ends_before_kill, delay):
        """Starts a recorder into ``logs``, SIGKILLs it ``delay`` seconds after it reports ``ends_before_kill``
        episode ends (at once after it starts when that is 0), and returns how many ends it reported in all."""
        import time

        ms = "-" if durability.milliseconds is None else durability.milliseconds
        self.proc.stdin.write(f"{logs} {durability.episodes} {ms} {durability.checkpoint_episodes}\n".encode())
        self.proc.stdin.flush()
        kind, pid = self.line().split()
        assert kind == "pid"
        ended = 0
        while ended < ends_before_kill:
            kind, value = self.line().split()
            ended = int(value)
        start = time.perf_counter()
        while time.perf_counter() - start < delay:  # busy wait: sleep() overshoots sub-millisecond delays
            pass
        os.kill(int(pid), signal.SIGKILL)
        while True:  # ends reported before the kill landed are reported ends too
            kind, value = self.line().split()
            if kind == "done":
                return ended
            ended = int(value)

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


_EXPECTED_GAMES = {}


def _expected_game(i):
    from tests.scripted import KILL_TRIAL_WORDS

    if i not in _EXPECTED_GAMES:
        _EXPECTED_GAMES[i] = run_episode(WordleEnv(seed=1, max_guesses=2), ScriptedWordle(KILL_TRIAL_WORDS), seed=i)
    return _EXPECTED_GAMES[i]


def _check_killed_folder(logs, reported_ends, may_lose):
    """The folder of a killed recorder reads back without raising, as episodes 0..n-1 each equal to the game
    played (no torn or partial episode), with n >= the reported ends minus what the durability setting may lose."""
    episodes = list(read_episodes(logs)) if os.path.isdir(logs) and log_dirs(logs) else []
    assert [ep["episode_id"] for ep in episodes] == [f"run-{i:08d}" for i in range(len(episodes))]
    assert len(episodes) >= reported_ends - may_lose, (len(episodes), reported_ends, may_lose)
    for i, ep in enumerate(episodes):
        played = _expected_game(i)
        check_episode(ep)
        assert int(ep["seed"]) == i and ep["answer"] == played.metadata["answer"]
        assert [s["observation"]["text"] for s in ep["steps"]] == [o["text"] for o in played.observations]
        assert [s["action"] for s in ep["steps"]] == played.actions + [""]
        assert [s["reward"] for s in ep["steps"]] == played.rewards + [0.0]
    return len(episodes)


@pytest.mark.parametrize("durability", [
    Durability(),  # per episode, EnvLogger's files flushed only at close: recovery reads the journal
    Durability(checkpoint_episodes=3),  # per episode, with kills landing around flushes and journal truncations
    Durability.group(episodes=5, milliseconds=1000.0, checkpoint_episodes=7),
], ids=["per-episode", "per-episode-checkpoint-3", "group-5-1000ms"])
def test_random_sigkills_lose_no_more_than_the_durability_bound(tmp_path, durability):
    rng = np.random.default_rng(durability.episodes * 1000 + durability.checkpoint_episodes)
    zygote = _Zygote()
    try:
        for trial in range(40):
            logs = tmp_path / f"t{trial}"
            ends = int(rng.integers(0, 25)) if trial % 8 else 0  # some kills land while the recorder starts
            delay = float(rng.choice([0.0, rng.uniform(0, 0.001), rng.uniform(0, 0.005)]))  # within 1 ms of an end
            reported = zygote.trial(logs, durability, ends, delay)
            _check_killed_folder(logs, reported, may_lose=durability.episodes - 1)
    finally:
        zygote.close()


def test_stock_reader_reads_record_like_envloggers_own_files(tmp_path):
    """record's files (wire-encoded steps, journal, checkpoints) decode with envlogger.Reader to exactly what
    EnvLogger's own backend writes for the same games."""
    from loggers.metadata import env_step_metadata

    result = record(WordleEnv(seed=3, enforce_guess_list=False), ScriptedWordle(["crane", "slate", "zesty"]), 6,
                    tmp_path / "ours", seed=20, durability=Durability(checkpoint_episodes=2), progress=False)
    env = WordleEnv(seed=3, enforce_guess_list=False)
    state = {"i": 0}
    (tmp_path / "raw").mkdir()

    def episode_fn(timestep, action, wrapped):
        return dict(wrapped.episode_metadata(), index=np.int64(state["i"])) if timestep.last() else None

    with envlogger.EnvLogger(env, data_directory=str(tmp_path / "raw"), step_fn=env_step_metadata,
                             episode_fn=episode_fn) as logged:
        for i in range(6):
            state["i"] = i
            run_episode(logged, ScriptedWordle(["crane", "slate", "zesty"]), seed=20 + i)
    with envlogger.Reader(data_directory=result.log_dirs[0]) as ours, \
            envlogger.Reader(data_directory=str(tmp_path / "raw")) as raw:
        assert len(ours.episodes) == len(raw.episodes) == 6
        for mine, theirs in zip(ours.steps, raw.steps):
            assert mine.timestep.step_type == theirs.timestep.step_type
            assert mine.timestep.reward == theirs.timestep.reward and mine.action == theirs.action
            assert mine.timestep.observation["text"] == theirs.timestep.observation["text"]
            np.testing.assert_array_equal(mine.timestep.observation["feedback"], theirs.timestep.observation["feedback"])
            assert type(mine.timestep.observation["turn"]) is type(theirs.timestep.observation["turn"])
            assert mine.custom_data == theirs.custom_data
        for mine, theirs in zip(ours.episode_metadata(), raw.episode_metadata()):
            assert {k: (v, type(v)) for k, v in mine.items() if k in theirs} == \
                {k: (v, type(v)) for k, v in theirs.items() if k != "index"}


_SCRIPT_HEAD = f"""import sys
sys.path.insert(0, {REPO!r})
from loggers import read_episodes, record
from rlds_lang.wordle.env import WordleEnv
from tests.scripted import DyingPolicy, ScriptedWordle
"""


def _run_script(tmp_path, body):
    """Runs ``body`` (after the imports of ``_SCRIPT_HEAD``) as a script file, bounded by a timeout."""
    script = tmp_path / "script.py"
    script.write_text(_SCRIPT_HEAD + body)
    try:
        return subprocess.run([sys.executable, str(script), str(tmp_path / "logs")], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": REPO})
    except subprocess.TimeoutExpired:
        pytest.fail("the script hung (its worker processes were restarted for ever?)")


_RECORD = 'record(WordleEnv(), ScriptedWordle(["crane"]), 4, sys.argv[1], workers=2, chunk_size=2, progress=False)\n'


def test_a_script_without_main_guard_gets_a_clear_error_instead_of_hanging(tmp_path):
    done = _run_script(tmp_path, _RECORD)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "MissingMainGuardError" in done.stderr and "script.py, line 6" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
    assert not (tmp_path / "logs").exists()  # refused before anything was written


def test_a_script_with_main_guard_records_with_workers(tmp_path):
    done = _run_script(tmp_path, 'if __name__ == "__main__":\n    ' + _RECORD +
                       '    print(len(list(read_episodes(sys.argv[1]))))\n')
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "4"


def test_a_dying_worker_raises_instead_of_hanging(tmp_path):
    done = _run_script(tmp_path, 'if __name__ == "__main__":\n    record(WordleEnv(), DyingPolicy(["crane"]), 4, '
                       'sys.argv[1], workers=2, chunk_size=2, progress=False)\n')
    assert done.returncode == 1
    assert "RuntimeError: a worker process died before finishing its work" in done.stderr, done.stderr[-2000:]


def test_main_guard_lines_are_found_in_a_scripts_source():
    from loggers.workers import _guarded_lines

    source = ("import x\n"                                  # 1
              "if __name__ == '__main__':\n"               # 2
              "    record()\n"                              # 3
              "else:\n"                                     # 4
              "    record()\n"                              # 5
              "if '__main__' == __name__ and ready():\n"    # 6
              "    go()\n"                                  # 7
              "    go()\n"                                  # 8
              "if __name__ == 'x':\n"                       # 9
              "    no()\n")                                 # 10
    assert sorted(_guarded_lines(source)) == [(3, 3), (7, 8)]
