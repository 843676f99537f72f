"""Load check of creator_web: N simulated people play Wordle games through the HTTP API at once.

Starts ``rlds-lang web`` in a subprocess on 127.0.0.1 (a free port, a temporary data folder), then runs
``--clients`` threads, each with its own session and answer, playing the optimal policy's game for that
answer again and again until ``--games`` games per client or ``--seconds`` have passed. Prints games/s
and request latency (median, p95), then reads every session's logs back and checks that no game is
lost (each finished game is in its own session's log) and none is mixed (each episode holds exactly its
client's guesses, policy and session). Each client sends its session's secret token (``X-Session-Token``) as
the pages do, and one extra request per client checks that another client's token is refused. Exits non-zero
if any check fails.

Run: ``PYTHONPATH=. python bench/web_load.py [--clients 8] [--games 20] [--seconds 60]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def scripts(clients: int) -> list[tuple[str, list[str]]]:
    """(answer, the optimal policy's guesses) for each client, on distinct answers."""
    env, policy, out = WordleEnv(), OptimalPolicy(), []
    for k in range(clients):
        answer = env.answers.words[(k * 97) % len(env.answers)]
        env.set_next_answer(answer)
        out.append((answer, run_episode(env, policy, seed=k).actions))
    return out


def start_server(data_dir: str) -> tuple[subprocess.Popen, str]:
    """``rlds-lang web`` on 127.0.0.1 and a free port; returns once it answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "trainers.cli.main", "web", "--data-dir", data_dir, "--port", str(port)],
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


def client(url: str, k: int, answer: str, guesses: list[str], games: int, stop_at: float,
           latencies: list[float], lock: threading.Lock) -> tuple[str, int]:
    """Plays up to ``games`` games as annotator ``load-k``; returns (session id, token, games finished)."""
    mine: list[float] = []
    with httpx.Client(base_url=url, timeout=30) as http:
        def call(path: str, body: dict | None = None) -> dict:
            started = time.perf_counter()
            response = http.post(path, json=body)
            mine.append(time.perf_counter() - started)
            response.raise_for_status()
            return response.json()

        opened = call("/api/sessions", {"annotator": f"load-{k}", "config": {"answer": answer}})
        sid, token = opened["session_id"], opened["token"]
        http.headers["X-Session-Token"] = token
        done = 0
        while done < games and time.monotonic() < stop_at:
            call(f"/api/sessions/{sid}/play/new")
            for guess in guesses:
                state = call(f"/api/sessions/{sid}/play/act", {"action": guess, "client_ms": 1})
            assert state["done"] and state["won"], state
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


def verify(data_dir: str, sessions: list[tuple[str, str, int]],
           plays: list[tuple[str, list[str]]]) -> tuple[int, list[str]]:
    """(episodes read back, problems found: empty when none is lost or mixed)."""
    problems, found = [], 0
    seen_ids: set[str] = set()
    for k, ((sid, _, finished), (answer, guesses)) in enumerate(zip(sessions, plays)):
        episodes = list(read_episodes(os.path.join(data_dir, "human", "wordle", sid)))
        found += len(episodes)
        if len(episodes) != finished:
            problems.append(f"client {k}: {finished} games finished, {len(episodes)} in its log")
        for ep in episodes:
            actions = [s["action"] for s in ep["steps"]][:-1]
            if actions != guesses or ep["policy"] != f"human:load-{k}" or ep["session_id"] != sid \
                    or ep["answer"] != answer:
                problems.append(f"client {k}: episode {ep['episode_id']} is mixed: {actions} by {ep['policy']}")
            if ep["episode_id"] in seen_ids:
                problems.append(f"episode id {ep['episode_id']} recorded twice")
            seen_ids.add(ep["episode_id"])
    return found, problems


def main() -> None:
    """Runs the load check and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8, help=f"simultaneous people (at most {MAX_CLIENTS})")
    parser.add_argument("--games", type=int, default=20, help="games per client")
    parser.add_argument("--seconds", type=float, default=60.0, help=f"time limit (at most {MAX_SECONDS})")
    args = parser.parse_args()
    clients = max(1, min(args.clients, MAX_CLIENTS))
    seconds = max(1.0, min(args.seconds, MAX_SECONDS))
    plays = scripts(clients)
    with tempfile.TemporaryDirectory(prefix="web_load-") as data_dir:
        proc, url = start_server(data_dir)
        latencies: list[float] = []
        lock = threading.Lock()
        try:
            started = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(clients) as pool:
                futures = [pool.submit(client, url, k, answer, guesses, args.games, started + seconds, latencies, lock)
                           for k, (answer, guesses) in enumerate(plays)]
                sessions = [f.result() for f in futures]
            elapsed = time.monotonic() - started
            refused = foreign_token_refused(url, sessions)
        finally:
            proc.terminate()
            proc.wait(30)
        games = sum(n for _, _, n in sessions)
        lat = np.asarray(latencies) * 1000
        print(f"{clients} clients, {games} games ({len(lat)} requests) in {elapsed:.1f} s: "
              f"{games / elapsed:.1f} games/s, latency median {np.median(lat):.1f} ms, p95 {np.percentile(lat, 95):.1f} ms")
        found, problems = verify(data_dir, sessions, plays)
        print(f"read back: {found} episodes for {games} games finished; problems (lost or mixed): {len(problems)}")
        print(f"other clients' tokens refused: {len(sessions) - len(refused) if len(sessions) > 1 else 0} of "
              f"{len(sessions) if len(sessions) > 1 else 0}")
        problems += refused
        for problem in problems[:20]:
            print("  " + problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
