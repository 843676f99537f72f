"""Load check of creator_web: N simulated people play a task's episodes through the HTTP API at once.

Starts ``rlds-lang web`` in a subprocess on 127.0.0.1 (a free port, a temporary data folder), then, for each
task of ``--task`` (``wordle``, ``reddit``, ``visdial`` or ``all``, one after another), runs ``--clients``
threads, each with its own session, playing until ``--games`` episodes per client or ``--seconds`` have passed:

- ``wordle``: the optimal policy's game for the client's own answer;
- ``reddit``: one reply per episode (text unique to the client and episode) to a parent drawn from the dummy
  Reddit data (``builders/reddit_comments/dummy_data/published``);
- ``visdial``: ten questions per dialogue (mode ``10_stop``) about images of a small generated VisDial folder,
  answered by a ``LocalBackend`` served over the published protocol from this process (``--visdial-answerer``).

Prints, per task, episodes/s and request latency (median, p95), then reads every session's logs back and
checks that no episode is lost (each finished one is in its own session's log) and none is mixed (each holds
exactly its client's actions, policy and session). Each client sends its session's secret token
(``X-Session-Token``) as the pages do, and one extra request per client checks that another client's token is
refused. Exits non-zero if any check fails.

Run: ``PYTHONPATH=. python bench/web_load.py [--task all] [--clients 8] [--games 20] [--seconds 60]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from creator_web.server import free_port  # noqa: E402
from loggers import read_episodes  # noqa: E402
from rlds_lang.env import run_episode  # noqa: E402
from rlds_lang.wordle.env import WordleEnv  # noqa: E402
from rlds_lang.wordle.policies import OptimalPolicy  # noqa: E402

MAX_CLIENTS, MAX_SECONDS = 64, 600
TASKS = ("wordle", "reddit", "visdial")
REDDIT_DATA = REPO / "builders" / "reddit_comments" / "dummy_data" / "published"
#: feature size of the generated VisDial folder (small: the bench measures the tool, not the answerer).
VISDIAL_DIM = 64


@dataclasses.dataclass(frozen=True)
class Plan:
    """What client ``k`` plays in one task: its session config and the actions of its episode ``g``."""

    config: dict
    actions: Callable[[int], list[str]]
    answer: str | None = None


def plans(task: str, clients: int) -> list[Plan]:
    """Each client's plan: Wordle on distinct answers (the optimal policy's guesses), Reddit replies and VisDial
    questions that name the client and the episode, so a mixed log shows."""
    if task == "wordle":
        env, policy, out = WordleEnv(), OptimalPolicy(), []
        for k in range(clients):
            answer = env.answers.words[(k * 97) % len(env.answers)]
            env.set_next_answer(answer)
            guesses = run_episode(env, policy, seed=k).actions
            out.append(Plan({"answer": answer}, lambda g, guesses=guesses: list(guesses), answer))
        return out
    if task == "reddit":
        return [Plan({"split": "train", "seed": k}, lambda g, k=k: [f"reply of client {k}, episode {g} 🙂"])
                for k in range(clients)]
    return [Plan({"mode": "10_stop", "split": "val", "seed": k},
                 lambda g, k=k: [f"client {k} episode {g} question {i}?" for i in range(10)])
            for k in range(clients)]


@contextlib.contextmanager
def visdial_answerer(folder: str) -> Iterator[str]:
    """A generated VisDial folder's ``LocalBackend`` served over the published protocol; yields its URL."""
    from rlds_lang.visdial.backend import build_local_backend
    from rlds_lang.visdial.fixtures import write_fixture
    from rlds_lang.visdial.server import BackendServer

    write_fixture(folder, sizes={"train": 8, "val": 8}, dim=VISDIAL_DIM)
    backend = build_local_backend(folder, lambda caption, history: np.zeros(VISDIAL_DIM, np.float32))
    with BackendServer(backend) as served:
        yield served.url


def start_server(data_dir: str, extra: list[str]) -> tuple[subprocess.Popen, str]:
    """``rlds-lang web`` on 127.0.0.1 and a free port (with ``extra`` options); returns once it answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "trainers.cli.main", "web", "--data-dir", data_dir, "--port", str(port),
                             *extra],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + "/api/tasks", timeout=2)
            return proc, url
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("creator_web did not start") from None
            time.sleep(0.2)


def client(url: str, task: str, k: int, plan: Plan, games: int, stop_at: float, latencies: list[float],
           lock: threading.Lock) -> tuple[str, str, int]:
    """Plays up to ``games`` episodes of ``task`` as annotator ``load-k``; returns (session id, token, finished)."""
    mine: list[float] = []
    with httpx.Client(base_url=url, timeout=60) as http:
        def call(path: str, body: dict | None = None) -> dict:
            started = time.perf_counter()
            response = http.post(path, json=body)
            mine.append(time.perf_counter() - started)
            response.raise_for_status()
            return response.json()

        opened = call("/api/sessions", {"annotator": f"load-{k}", "task": task, "config": plan.config})
        sid, token = opened["session_id"], opened["token"]
        http.headers["X-Session-Token"] = token
        done = 0
        while done < games and time.monotonic() < stop_at:
            call(f"/api/sessions/{sid}/play/new")
            for action in plan.actions(done):
                state = call(f"/api/sessions/{sid}/play/act", {"action": action, "client_ms": 1})
            assert state["done"] and (task != "wordle" or state["won"]), state
            done += 1
    with lock:
        latencies.extend(mine)
    return sid, token, done


def foreign_token_refused(url: str, sessions: list[tuple[str, str, int]]) -> list[str]:
    """Problems found when each client's token is used on the next client's session (every such request must be
    refused 403)."""
    problems = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for k, (sid, _, _) in enumerate(sessions):
            other_token = sessions[(k + 1) % len(sessions)][1]
            if len(sessions) > 1:
                response = http.get(f"/api/sessions/{sid}/play", headers={"X-Session-Token": other_token})
                if response.status_code != 403:
                    problems.append(f"client {k}: another client's token read its game ({response.status_code})")
    return problems


def verify(data_dir: str, task: str, sessions: list[tuple[str, str, int]], plans_: list[Plan]) -> tuple[int, list[str]]:
    """(episodes read back, problems found: empty when none is lost or mixed)."""
    problems, found = [], 0
    seen_ids: set[str] = set()
    for k, ((sid, _, finished), plan) in enumerate(zip(sessions, plans_)):
        episodes = list(read_episodes(os.path.join(data_dir, "human", task, sid)))
        found += len(episodes)
        if len(episodes) != finished:
            problems.append(f"{task} client {k}: {finished} episodes finished, {len(episodes)} in its log")
        for ep in episodes:
            index = int(str(ep["episode_id"]).rsplit("-", 1)[1])
            actions = [s["action"] for s in ep["steps"]][:-1]
            if actions != plan.actions(index) or ep["policy"] != f"human:load-{k}" or ep["session_id"] != sid \
                    or (plan.answer is not None and ep["answer"] != plan.answer):
                problems.append(f"{task} client {k}: episode {ep['episode_id']} is mixed: {actions} by {ep['policy']}")
            if ep["episode_id"] in seen_ids:
                problems.append(f"episode id {ep['episode_id']} recorded twice")
            seen_ids.add(ep["episode_id"])
    return found, problems


def run_task(url: str, data_dir: str, task: str, clients: int, games: int, seconds: float) -> list[str]:
    """Runs one task's load and prints its figures; returns the problems found."""
    plans_ = plans(task, clients)
    latencies: list[float] = []
    lock = threading.Lock()
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        futures = [pool.submit(client, url, task, k, plan, games, started + seconds, latencies, lock)
                   for k, plan in enumerate(plans_)]
        sessions = [f.result() for f in futures]
    elapsed = time.monotonic() - started
    refused = foreign_token_refused(url, sessions)
    finished = sum(n for _, _, n in sessions)
    lat = np.asarray(latencies) * 1000
    noun = {"wordle": "games", "reddit": "replies", "visdial": "dialogues"}[task]
    print(f"{task}: {clients} clients, {finished} {noun} ({len(lat)} requests) in {elapsed:.1f} s: "
          f"{finished / elapsed:.1f} {noun}/s, latency median {np.median(lat):.1f} ms, "
          f"p95 {np.percentile(lat, 95):.1f} ms")
    found, problems = verify(data_dir, task, sessions, plans_)
    print(f"{task} read back: {found} episodes for {finished} {noun} finished; problems (lost or mixed): "
          f"{len(problems)}")
    others = len(sessions) if len(sessions) > 1 else 0
    print(f"{task} other clients' tokens refused: {others - len(refused) if others else 0} of {others}")
    return problems + refused


def main() -> None:
    """Runs the load check and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=[*TASKS, "all"], default="all", help="the task to load (default: all)")
    parser.add_argument("--clients", type=int, default=8, help=f"simultaneous people (at most {MAX_CLIENTS})")
    parser.add_argument("--games", type=int, default=20, help="episodes per client and task")
    parser.add_argument("--seconds", type=float, default=60.0, help=f"time limit per task (at most {MAX_SECONDS})")
    args = parser.parse_args()
    clients = max(1, min(args.clients, MAX_CLIENTS))
    seconds = max(1.0, min(args.seconds, MAX_SECONDS))
    tasks = TASKS if args.task == "all" else (args.task,)
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="web_load-") as data_dir, contextlib.ExitStack() as stack:
        extra = ["--reddit-dir", str(REDDIT_DATA)] if "reddit" in tasks else []
        if "visdial" in tasks:
            folder = os.path.join(data_dir, "visdial_source")
            extra += ["--visdial-dir", folder, "--visdial-answerer", stack.enter_context(visdial_answerer(folder))]
        proc, url = start_server(os.path.join(data_dir, "web"), extra)
        try:
            for task in tasks:
                problems += run_task(url, os.path.join(data_dir, "web"), task, clients, args.games, seconds)
        finally:
            proc.terminate()
            proc.wait(30)
        for problem in problems[:20]:
            print("  " + problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
