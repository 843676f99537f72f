"""Picklable scripted policies for tests (importable by worker processes)."""

import sys
import time


class ScriptedWordle:
    """Plays a fixed list of words in order; optionally reports and sleeps at each episode's first move."""

    name = "scripted"

    def __init__(self, words, report=False, sleep=0.0):
        self.words, self.report, self.sleep = list(words), report, sleep
        self.episode = -1

    def reset(self, seed):
        self.episode += 1

    def params(self):
        return {"words": self.words}

    def act(self, observations, actions):
        if self.report and not actions:
            print(f"in {self.episode}", flush=True)
            time.sleep(self.sleep)
        return self.words[len(actions) % len(self.words)]


class DyingPolicy(ScriptedWordle):
    """Kills its own process at its first move (a worker that dies: out of memory, killed by someone)."""

    name = "dying"

    def act(self, observations, actions):
        import os

        os._exit(3)


def report_boundary(env, index):
    """``before_episode`` hook of the crash-test child: episode ``index - 1`` has ended, ``index`` has not begun."""
    print(f"between {index}", flush=True)
    time.sleep(0.05)


def kill_trial_recorder(data_dir, durability):
    """The recorder of one random-kill trial (run in a forked child of ``zygote``): tiny Wordle episodes (two
    guesses at most) recorded for ever, each episode end reported as ``end <episodes ended>`` on stdout."""
    import os

    from loggers import record
    from rlds_lang.wordle.env import WordleEnv

    def report_end(env, index):
        os.write(1, f"end {index}\n".encode())

    record(WordleEnv(seed=1, max_guesses=2), ScriptedWordle(KILL_TRIAL_WORDS), episodes=100_000, data_dir=data_dir,
           chunk_size=100_000, progress=False, before_episode=report_end, durability=durability)


#: the guesses of the random-kill trials' recorder.
KILL_TRIAL_WORDS = ["crane", "slate"]


def zygote():
    """Forks one recorder per line ``<data_dir> <episodes> <milliseconds or -> <checkpoint_episodes>`` read from
    stdin, printing ``pid <pid>`` when it starts and ``done <pid>`` once it has been reaped (killed by the test):
    the imports are paid once, so a trial costs milliseconds."""
    import os

    from loggers.durability import Durability

    for line in iter(sys.stdin.readline, ""):
        data_dir, episodes, milliseconds, checkpoint = line.split()
        durability = Durability(int(episodes), None if milliseconds == "-" else float(milliseconds), int(checkpoint))
        pid = os.fork()
        if pid == 0:
            try:
                kill_trial_recorder(data_dir, durability)
            finally:
                os._exit(0)
        os.write(1, f"pid {pid}\n".encode())
        os.waitpid(pid, 0)
        os.write(1, f"done {pid}\n".encode())


if __name__ == "__main__":  # crash-test child: record forever until killed
    sys.path.insert(0, sys.argv[2])
    if sys.argv[1] == "zygote":
        zygote()
        sys.exit(0)
    from loggers import record
    from rlds_lang.wordle.env import WordleEnv

    at_boundary = len(sys.argv) > 3 and sys.argv[3] == "boundary"  # report between episodes, not in them
    record(WordleEnv(seed=1), ScriptedWordle(["crane", "slate", "abide"], report=not at_boundary, sleep=0.05),
           episodes=10_000, data_dir=sys.argv[1], chunk_size=10_000, progress=False,
           before_episode=report_boundary if at_boundary else None)
