"""Visual Dialogue commands: ``rlds-lang visdial tokenizer`` and ``rlds-lang eval --task visdial``.

``visdial-tokenizer`` trains a byte-level BPE (``rlds_lang.subword.SubwordTokenizer``) on the captions,
questions (with ``?``) and answers of a manual folder's ``train`` split, plus ``<stop>``; training then
uses it with ``--tokenizer file:PATH``.

``eval --task visdial`` plays each ``--agent`` checkpoint (or, with ``--agent NAME=server``, the server's
question bot, a supervised-learning baseline) as the questioner against the environment over
seeded episodes (episode i: seed ``--seed + i``, which draws the image of the ``--visdial-split`` split;
the paper: val, env_stops, hard y/n with -2, 1,024 episodes, seed 0, questions up to 40 tokens) and prints
mean return ± standard error and the number of answers that are exactly "yes" or "no", as the paper does.
Answers and rewards come from ``--visdial-server URL`` (the authors' server or ours), else from our
server started in this process on 127.0.0.1 over ``--data`` with the guesser ``--guesser``
(``rlds-lang visdial guesser``), which stands in for the paper's pretrained bots.

Example::

    rlds-lang visdial tokenizer --manual-dir DIR --out runs/visdial-tokenizer.json
    rlds-lang train bc --dataset /tmp/visdial-data/visdial/yn/1.0.0 --tokenizer file:runs/visdial-tokenizer.json
    rlds-lang eval --task visdial --data DIR --guesser runs/guesser --agent bc=runs/train/checkpoint \\
        --agent qbot=server --episodes 64
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from rlds_lang.visdial.env import VisDialEnv
from trainers.evaluation.lockstep import play_seeded
from trainers.evaluation.stats import column_standard_errors


def evaluate_questioner(policy: Any, env: VisDialEnv | Sequence[VisDialEnv], episodes: int, seed: int,
                        progress: bool = False) -> tuple[list[float], int, list[list[float]]]:
    """Returns of ``episodes`` episodes (episode i seeded ``seed + i``), the count of yes/no answers, and each
    episode's rewards round by round. Given several environments (over the same dialogues and backend), an agent
    with ``act_batch`` plays that many episodes at once, each as it would alone
    (``trainers.evaluation.lockstep.play_seeded``)."""
    envs = [env] if isinstance(env, VisDialEnv) else list(env)
    played = play_seeded(envs, policy, range(seed, seed + episodes), finished=lambda e: e.yes_no_answers,
                         progress=progress, desc=f"visdial {getattr(policy, 'name', '')}".strip())
    returns = [episode.total_reward for episode, _ in played]
    rounds = [[float(r) for r in episode.rewards] for episode, _ in played]
    return returns, sum(yes_no for _, yes_no in played), rounds


def cumulative_by_round(rounds: list[list[float]], max_rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean ± SE over episodes of the return accumulated after each round 1..``max_rounds`` (an episode that
    stopped earlier keeps its final return; the SE is NaN, and the plot draws no band, for fewer than two
    episodes)."""
    totals = np.array([np.cumsum((r + [0.0] * max_rounds)[:max_rounds]) for r in rounds]) if rounds else \
        np.zeros((0, max_rounds))
    se = column_standard_errors(totals)
    return totals.mean(axis=0) if len(totals) else np.zeros(max_rounds), se


def plot_questioners(curves: dict[str, list[list[float]]], results: dict[str, dict[str, float]],
                     path: str | os.PathLike) -> str:
    """A PNG: return accumulated round by round per agent (± 1 SE), and the yes/no answers each agent drew."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    longest = max((len(r) for rounds in curves.values() for r in rounds), default=1)
    fig, (ax_rounds, ax_yn) = plt.subplots(1, 2, figsize=(10, 4))
    for name, rounds in curves.items():
        mean, se = cumulative_by_round(rounds, longest)
        x = np.arange(1, longest + 1)
        ax_rounds.plot(x, mean, marker="o", label=name)
        ax_rounds.fill_between(x, mean - se, mean + se, alpha=0.2)
    ax_rounds.set_xlabel("round")
    ax_rounds.set_ylabel("return so far (± 1 SE)")
    ax_rounds.grid(alpha=0.3)
    ax_rounds.legend()
    names = list(results)
    ax_yn.bar(range(len(names)), [results[n]["yes_no_answers"] for n in names], color="tab:red")
    ax_yn.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax_yn.set_title("yes/no answers drawn")
    ax_yn.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Visual Dialogue questioners ({', '.join(sorted({str(int(r['episodes'])) for r in results.values()}))} "
                 f"episodes each)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return os.fspath(path)


__all__ = ["cumulative_by_round", "evaluate_questioner", "plot_questioners"]
