"""Evaluate Wordle agents: N seeded games per agent, mean reward ± standard error, win rate, mean guesses,
and one table (or plot) comparing several agents with error bars.

Games are paired across agents: game ``i`` seeds its environment with ``config.seed + i`` and starts from
answer ``answer_schedule(...)[i]`` (a permutation of the answer list drawn once from ``config.seed``; in
``adversarial_resample`` mode that is the initial answer, later redrawn by the seeded environment), so every
agent evaluated with the same config plays the same games and ``results_table`` can compare agents by the
paired difference, whose standard error is much smaller than that of two independent means.

Agents with ``act_batch`` (``trainers.core.policy.LanguageModelPolicy``) play ``config.batch_games`` games in
lockstep -- one batched forward pass serves every game in flight, and a finished game is replaced by the
next unplayed one -- with per-game seeds ``config.seed + i``, so results do not depend on ``batch_games``
(beyond float rounding in batched matrix products). Other policies play one game at a time after
``policy.reset(config.seed + i)``, exactly as ``rlds_lang.env.run_episode`` would.

Speed (2-core CPU shared with other jobs, load average ~7): 500 games of an untrained default-size agent
(``ModelConfig()``: 4 layers, 128 wide; every game lasts the full 6 guesses, the slowest case) take 6-10 s
with ``batch_games`` 64-128 (50-80 games/s, ILQL heads included; twice as long without the agent's
``TurnStates``), and 500 games of ``OptimalPolicy`` 5-8 s. ``EvalConfig.torch_threads`` (default 1) matters
on a busy machine: a run that took 17 s on one thread took 99 s on two.

Per game: the return (-1 per non-winning guess, 0 for the win), the number of guesses made (a lost game
counts ``max_guesses``) and whether it was won. An action the environment rejects
(``InvalidActionError``, possible only for free-text LM agents without ``allowed_actions``) ends that game
as lost with the return of ``max_guesses`` wrong guesses (-6) and ``max_guesses`` guesses; ``EvalResult.invalid``
counts such games.

Example::

    from rlds_lang.wordle.policies import OptimalPolicy
    from trainers.evaluation.wordle import EvalConfig, evaluate, results_table

    result = evaluate(OptimalPolicy(), EvalConfig(games=50))
    print(results_table([result]))
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import sys
import time
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from rlds_lang.env import InvalidActionError, Observation, Policy
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.words import WordList, resolve_word_list
from trainers.evaluation.stats import paired_separation, standard_error

_FORMAT = "rlds_lang.eval_results"
_FORMAT_VERSION = 1


@dataclasses.dataclass
class EvalConfig:
    """Which games an agent is evaluated on (the same config gives every agent the same games)."""

    #: number of games (>= 500 per agent for the results tables).
    games: int = 500
    #: game ``i`` seeds the environment with ``seed + i``; the answer permutation is drawn from ``seed``.
    seed: int = 0
    #: colouring rule: ``official`` or ``ilql``.
    rule: str = "official"
    #: hidden word: ``fixed`` or ``adversarial_resample``.
    mode: str = "fixed"
    #: answer list (a packaged name or a file path).
    answers: str = "official_answers"
    #: accepted guesses (a packaged name or a file path).
    guesses: str = "official_guesses"
    #: games played in lockstep by agents with ``act_batch`` (one batched forward pass for all of them).
    batch_games: int = 64
    #: torch intra-op threads during the evaluation (restored afterwards); None leaves torch's setting. One
    #: thread is the default because small models gain little from two, and on a busy 2-core machine
    #: two threads spin against other processes (measured 6x slower under load, see the module docstring).
    torch_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.games < 1:
            raise ValueError(f"EvalConfig.games must be >= 1, got {self.games}")
        if self.batch_games < 1:
            raise ValueError(f"EvalConfig.batch_games must be >= 1, got {self.batch_games}")
        if self.torch_threads is not None and self.torch_threads < 1:
            raise ValueError(f"EvalConfig.torch_threads must be >= 1 or None, got {self.torch_threads}")


@dataclasses.dataclass
class EvalResult:
    """One agent's games: per-game return, guesses made and win, plus the counts and time of the run."""

    name: str
    #: per-game return (sum of rewards).
    rewards: np.ndarray
    #: per-game number of guesses made (``max_guesses`` for a lost game).
    guesses: np.ndarray
    #: per-game win flag.
    wins: np.ndarray
    #: games ended by an action the environment rejected (counted as lost).
    invalid: int
    #: wall-clock seconds of the evaluation.
    seconds: float
    #: per-game (initial) answer: two results are paired when these agree.
    answers: list[str] = dataclasses.field(default_factory=list)
    #: per-game actions, in order (a rejected action is included as the game's last).
    actions: list[list[str]] = dataclasses.field(default_factory=list)
    #: the agent's ``params()``.
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: the ``EvalConfig`` as a dict.
    config: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rewards = np.asarray(self.rewards, dtype=np.float64)
        self.guesses = np.asarray(self.guesses, dtype=np.int64)
        self.wins = np.asarray(self.wins, dtype=bool)
        self.answers = list(self.answers)
        self.actions = [list(game) for game in self.actions]
        lengths = {"rewards": len(self.rewards), "guesses": len(self.guesses), "wins": len(self.wins)}
        for optional in ("answers", "actions"):
            if getattr(self, optional):
                lengths[optional] = len(getattr(self, optional))
        if len(set(lengths.values())) != 1:
            raise ValueError(f"EvalResult {self.name!r}: per-game fields differ in length: {lengths}")

    @property
    def games(self) -> int:
        """Number of games played."""
        return len(self.rewards)

    @property
    def mean_reward(self) -> float:
        """Mean return per game."""
        return float(self.rewards.mean())

    @property
    def stderr(self) -> float:
        """Standard error of ``mean_reward``: sample std / sqrt(n)."""
        return standard_error(self.rewards)

    @property
    def win_rate(self) -> float:
        """Fraction of games won."""
        return float(self.wins.mean())

    @property
    def win_rate_stderr(self) -> float:
        """Standard error of ``win_rate`` (sample std of the win flags / sqrt(n))."""
        return standard_error(self.wins.astype(np.float64))

    @property
    def mean_guesses(self) -> float:
        """Mean number of guesses per game (lost games count ``max_guesses``)."""
        return float(self.guesses.mean())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: the per-game data plus the summary figures (ignored by ``from_dict``)."""
        return {"name": self.name, "rewards": self.rewards.tolist(), "guesses": self.guesses.tolist(),
                "wins": self.wins.tolist(), "invalid": int(self.invalid), "seconds": float(self.seconds),
                "answers": self.answers, "actions": self.actions, "params": self.params, "config": self.config,
                "summary": {"games": self.games, "mean_reward": self.mean_reward, "stderr": self.stderr,
                            "win_rate": self.win_rate, "win_rate_stderr": self.win_rate_stderr,
                            "mean_guesses": self.mean_guesses}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EvalResult":
        """The result ``to_dict`` wrote; a missing field raises ``ValueError`` naming it."""
        required = ("name", "rewards", "guesses", "wins", "invalid", "seconds")
        missing = [k for k in required if k not in d]
        if missing:
            raise ValueError(f"EvalResult: missing field(s) {missing} in {sorted(d)}")
        return cls(name=d["name"], rewards=d["rewards"], guesses=d["guesses"], wins=d["wins"],
                   invalid=int(d["invalid"]), seconds=float(d["seconds"]), answers=d.get("answers", []),
                   actions=d.get("actions", []), params=dict(d.get("params", {})), config=dict(d.get("config", {})))


def answer_schedule(answers: WordList, games: int, seed: int) -> list[str]:
    """The (initial) answer of each game: permutations of the answer list drawn from ``seed``, concatenated.

    >>> from rlds_lang.wordle.words import word_list_from
    >>> sorted(answer_schedule(word_list_from(["abcde", "fghij"], "two"), 4, seed=0))
    ['abcde', 'abcde', 'fghij', 'fghij']
    """
    rng = np.random.default_rng(seed)
    order: list[int] = []
    while len(order) < games:
        order.extend(rng.permutation(len(answers)).tolist())
    return [answers.words[i] for i in order[:games]]


@dataclasses.dataclass
class _Game:
    """A game in flight in one lockstep slot."""

    index: int
    env: WordleEnv
    observations: list[Observation]
    actions: list[str] = dataclasses.field(default_factory=list)
    total: float = 0.0


class _Scores:
    """Per-game outcomes, filled as games finish in any order."""

    def __init__(self, games: int):
        self.rewards = np.zeros(games, np.float64)
        self.guesses = np.zeros(games, np.int64)
        self.wins = np.zeros(games, bool)
        self.invalid = 0
        self.actions: list[list[str]] = [[] for _ in range(games)]

    def finish(self, game: _Game, won: bool) -> None:
        self.actions[game.index] = game.actions
        self.rewards[game.index], self.guesses[game.index], self.wins[game.index] = game.total, len(game.actions), won

    def reject(self, game: _Game, rejected: str) -> None:
        max_guesses = game.env.max_guesses
        self.actions[game.index] = game.actions + [rejected]
        self.rewards[game.index], self.guesses[game.index], self.wins[game.index] = -float(max_guesses), max_guesses, False
        self.invalid += 1


def _play_turn(game: _Game, action: str, scores: _Scores) -> bool:
    """Steps ``game`` with ``action``; records the outcome when the game ends. True if it goes on."""
    try:
        timestep = game.env.step(action)
    except InvalidActionError:
        scores.reject(game, action)
        return False
    game.actions.append(action)
    game.observations.append(timestep.observation)
    game.total += float(timestep.reward)
    if timestep.last():
        scores.finish(game, won=float(timestep.reward) == 0.0)
        return False
    return True


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Runs the block with ``threads`` torch intra-op threads, restoring the previous count afterwards.

    Does nothing for ``None`` or when torch has not been imported (scripted policies never need it).
    """
    torch = sys.modules.get("torch")
    if threads is None or torch is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def evaluate(policy: Policy, config: EvalConfig, name: str | None = None, progress: bool = True) -> EvalResult:
    """Plays ``config.games`` seeded Wordle games with ``policy`` and returns the per-game outcomes.

    Policies with ``act_batch(histories, seeds=...)`` play ``config.batch_games`` games in lockstep; others
    play one at a time after ``reset(config.seed + i)`` (see the module docstring for the pairing).
    """
    name = name or getattr(policy, "name", "") or type(policy).__name__
    answers, guesses = resolve_word_list(config.answers), resolve_word_list(config.guesses)
    schedule = answer_schedule(answers, config.games, config.seed)
    batched = callable(getattr(policy, "act_batch", None))
    slots = min(config.batch_games, config.games) if batched else 1
    envs = [WordleEnv(answers=answers, guesses=guesses, rule=config.rule, mode=config.mode) for _ in range(slots)]
    if batched:
        policy.reset(config.seed)
    scores = _Scores(config.games)
    upcoming = iter(range(config.games))

    def start(env: WordleEnv) -> _Game | None:
        index = next(upcoming, None)
        if index is None:
            return None
        env.seed(config.seed + index)
        env.set_next_answer(schedule[index])
        if not batched:
            policy.reset(config.seed + index)
        return _Game(index, env, [env.reset().observation])

    started = time.perf_counter()
    in_flight = [game for game in map(start, envs) if game is not None]
    with torch_threads(config.torch_threads), \
            tqdm(total=config.games, desc=f"eval {name}", unit="game", disable=not progress) as bar:
        while in_flight:
            histories = [(game.observations, game.actions) for game in in_flight]
            if batched:
                actions = policy.act_batch(histories, seeds=[config.seed + game.index for game in in_flight])
            else:
                actions = [policy.act(*histories[0])]
            still: list[_Game] = []
            for game, action in zip(in_flight, actions):
                if _play_turn(game, action, scores):
                    still.append(game)
                    continue
                bar.update(1)
                nxt = start(game.env)
                if nxt is not None:
                    still.append(nxt)
            in_flight = still
    seconds = time.perf_counter() - started
    params = dict(policy.params()) if callable(getattr(policy, "params", None)) else {}
    return EvalResult(name=name, rewards=scores.rewards, guesses=scores.guesses, wins=scores.wins,
                      invalid=scores.invalid, seconds=seconds, answers=schedule, actions=scores.actions, params=params,
                      config=dataclasses.asdict(config))


def results_table(results: Sequence[EvalResult], baseline: str | None = None) -> str:
    """One markdown table of the agents: games, mean reward ± SE, win rate ± SE, mean guesses, invalid actions.

    With ``baseline`` (an agent's name) two more columns give each agent's paired return difference to
    the baseline ± its SE and whether it exceeds 2 SE (the baseline's own row shows ``—``).
    """
    by_name = {r.name: r for r in results}
    if baseline is not None and baseline not in by_name:
        raise ValueError(f"baseline {baseline!r} is not among the results {list(by_name)}")
    header = ["agent", "games", "mean reward ± SE", "win rate ± SE", "mean guesses", "invalid actions"]
    if baseline is not None:
        header += [f"Δ vs {baseline} ± SE", "beyond 2 SE"]
    rows = [header, ["---"] * len(header)]
    for r in results:
        row = [r.name, str(r.games), f"{r.mean_reward:.3f} ± {r.stderr:.3f}",
               f"{r.win_rate:.3f} ± {r.win_rate_stderr:.3f}", f"{r.mean_guesses:.2f}", str(r.invalid)]
        if baseline is not None:
            if r.name == baseline:
                row += ["—", "—"]
            else:
                delta, se, side = paired_separation(r, by_name[baseline])
                row += [f"{delta:+.3f} ± {se:.3f}", "yes" if side else "no"]
        rows.append(row)
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def plot_results(results: Sequence[EvalResult], path: str | os.PathLike) -> pathlib.Path:
    """Writes a PNG with two bar charts: mean reward ± 1 SE and win rate ± 1 SE per agent."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = [r.name for r in results]
    x = np.arange(len(results))
    fig, (ax_reward, ax_win) = plt.subplots(1, 2, figsize=(max(6.0, 1.2 * len(results) + 4), 4))
    panels = ((ax_reward, [r.mean_reward for r in results], [r.stderr for r in results], "mean reward (± 1 SE)"),
              (ax_win, [r.win_rate for r in results], [r.win_rate_stderr for r in results], "win rate (± 1 SE)"))
    for ax, values, errors, title in panels:
        ax.bar(x, values, yerr=np.nan_to_num(errors), capsize=4, color="tab:blue")
        ax.set_xticks(x, names, rotation=30, ha="right")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    ax_win.set_ylim(0, 1.05)
    fig.suptitle(f"Wordle evaluation ({', '.join(sorted({str(r.games) for r in results}))} games per agent)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def save_results(results: Sequence[EvalResult], path: str | os.PathLike) -> pathlib.Path:
    """Writes the results (per-game data, parameters, config and summaries) as UTF-8 JSON."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"format": _FORMAT, "version": _FORMAT_VERSION, "results": [r.to_dict() for r in results]}
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def load_results(path: str | os.PathLike) -> list[EvalResult]:
    """The results ``save_results`` wrote; errors name the file and the result that is wrong."""
    path = pathlib.Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error})") from error
    if not isinstance(document, dict) or document.get("format") != _FORMAT:
        raise ValueError(f"{path}: not an evaluation results file (field 'format' should be {_FORMAT!r})")
    if document.get("version") != _FORMAT_VERSION:
        raise ValueError(f"{path}: field 'version' is {document.get('version')!r}, this code reads {_FORMAT_VERSION}")
    results = []
    for i, entry in enumerate(document.get("results", [])):
        try:
            results.append(EvalResult.from_dict(entry))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{path}: results[{i}]: {error}") from error
    return results


__all__ = ["EvalConfig", "EvalResult", "answer_schedule", "evaluate", "torch_threads", "results_table", "plot_results", "save_results", "load_results"]
