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


def report_boundary(env, index):
    """``before_episode`` hook of the crash-test child: episode ``index - 1`` has ended, ``index`` has not begun."""
    print(f"between {index}", flush=True)
    time.sleep(0.05)


if __name__ == "__main__":  # crash-test child: record forever until killed
    sys.path.insert(0, sys.argv[2])
    from loggers import record
    from rlds_lang.wordle.env import WordleEnv

    at_boundary = len(sys.argv) > 3 and sys.argv[3] == "boundary"  # report between episodes, not in them
    record(WordleEnv(seed=1), ScriptedWordle(["crane", "slate", "abide"], report=not at_boundary, sleep=0.05),
           episodes=10_000, data_dir=sys.argv[1], chunk_size=10_000, progress=False,
           before_episode=report_boundary if at_boundary else None)
