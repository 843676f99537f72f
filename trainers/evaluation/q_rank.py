"""The ILQL code's Section-5 ranking measure, ``Action_Ranking_Evaluator_Adversarial`` (src/wordle/wordle_evaluators.py
of Sea-Snell/Implicit-Language-Q-Learning, run by scripts/eval/wordle/eval_q_rank.py), on our episodes and agents.

What it measures, as read in its code:

* **States** (``adversarial_ranking_states``): the initial state, where the optimal games' first moves meet the
  suboptimal games' (its ``initial_states``: the states in both ``expert_actions`` and ``suboptimal_actions``), and
  every branch state, where an optimal game's move after its first two meets the adversarial takeovers' moves there
  (``branch_states``). Each state keeps one entry per recorded game, so a move counts as often as it was played.
* **Draws** (``draw_pairs``): ``bsize x batches`` times (its config: 64 x 128), a state uniformly among the distinct
  states (``random.choice(self.initial_states)``), then one optimal move and one other move uniformly among that
  state's entries; with replacement, and a pair of equal moves is kept (it counts as not ranked right).
* **Comparison** (``q_rank``): the strict ``Q(optimal move) > Q(other move)`` at each of the last 6 action tokens of
  the sequence that ends with the move (``qs[0, n - 1 - i] > qs[1, n - 1 - i]``, ``i`` 0..5: a 5-letter word's end
  token, the whole word, then its letters from the last), for the trained Q and the target Q apart (its
  ``q_rank_acc_-k`` and ``q_target_rank_acc_-k``).

Differences: its evaluator takes a single Q head (``assert not model.double_q``; the shipped
config/wordle/eval_q_rank.yaml sets ``double_q: true`` and so cannot run as shipped); ours compares the minimum of the
twin heads, live (``ValueHeads.live_q``) and target (``ILQLModel.target_values``, on the target trunk when there is
one). A move of fewer tokens than 6 (a word-as-token tokenizer's) is compared at its own tokens only.

Example::

    states = adversarial_ranking_states(games)          # games: recorded episodes (policy, branch_turn, steps)
    draws = draw_pairs(states["initial"], 8192, seed=0)
    fractions = q_rank(loaded, states["initial"], draws)  # {"live": [6 fractions], "target": [...], ...}
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from rlds_lang.env import as_text
from trainers.core.checkpoint import LoadedModel

#: the action tokens compared, counted from the end (the ILQL code's ``N_CHARS + 1``: 5 letters and the end token).
POSITIONS = 6
#: the reference's draws per test: its config's ``eval.bsize`` x ``eval.batches`` (config/wordle/eval_q_rank.yaml).
REFERENCE_DRAWS = 64 * 128

#: a state: the observations so far and the moves between them.
History = tuple[list[Any], list[str]]


def state_key(history: History) -> tuple:
    """A hashable state: the observation texts interleaved with the moves (the ILQL code's ``hashable_state`` of
    ``(state, action_history)``).

    >>> state_key(([{"text": b""}, {"text": b"xx"}], ["raise"]))
    ('', 'raise', 'xx')
    """
    observations, moves = history
    key: tuple = ()
    for k, observation in enumerate(observations):
        text = observation["text"] if isinstance(observation, Mapping) else observation
        key += (as_text(text, "observation.text"),)
        if k < len(moves):
            key += (moves[k],)
    return key


@dataclasses.dataclass
class RankingStates:
    """One test's distinct states, each with the better policy's moves there and the other policy's, one entry per
    recorded game (``adversarial_ranking_states``)."""

    histories: list[History]
    better: list[list[str]]
    worse: list[list[str]]

    def __len__(self) -> int:
        return len(self.histories)


def _history(steps: Sequence[Mapping[str, Any]], turn: int) -> History:
    return [s["observation"] for s in steps[:turn + 1]], [as_text(s["action"], "action") for s in steps[:turn]]


def adversarial_ranking_states(episodes: Iterable[Mapping[str, Any]], better_policy: str = "optimal"
                               ) -> dict[str, RankingStates]:
    """``{"initial": ..., "branch": ...}`` of recorded episodes (``policy``, ``branch_turn``, ``parent_episode_id``,
    ``episode_id``, ``steps``): at the initial state, every ``better_policy`` game's first move against every other
    unbranched game's; at each branch state (a parent's state after ``branch_turn`` moves), the parent's move there
    (once per parent) against each of its branches' moves there."""
    initial: dict[tuple, tuple[History, list[str], list[str]]] = {}
    branch: dict[tuple, tuple[History, list[str], list[str]]] = {}
    parents: dict[str, Sequence[Mapping[str, Any]]] = {}
    branches = []
    for episode in episodes:
        steps, turn = list(episode["steps"]), int(episode["branch_turn"])
        if turn >= 0:
            branches.append((as_text(episode["parent_episode_id"], "parent_episode_id"), turn, steps))
            continue
        parents[as_text(episode["episode_id"], "episode_id")] = steps
        history = _history(steps, 0)
        entry = initial.setdefault(state_key(history), (history, [], []))
        entry[1 if as_text(episode["policy"], "policy") == better_policy else 2].append(
            as_text(steps[0]["action"], "action"))
    seen_parents: set[tuple[str, int]] = set()
    for parent_id, turn, steps in branches:
        if parent_id not in parents:
            raise ValueError(f"a branch names parent {parent_id!r}, which is not among the episodes")
        parent = parents[parent_id]
        history = _history(parent, turn)
        entry = branch.setdefault(state_key(history), (history, [], []))
        if (parent_id, turn) not in seen_parents:
            seen_parents.add((parent_id, turn))
            entry[1].append(as_text(parent[turn]["action"], "action"))
        entry[2].append(as_text(steps[turn]["action"], "action"))

    def kept(states: dict) -> RankingStates:
        both = [v for v in states.values() if v[1] and v[2]]  # in both lists, as the reference's intersection
        return RankingStates([v[0] for v in both], [v[1] for v in both], [v[2] for v in both])

    return {"initial": kept(initial), "branch": kept(branch)}


def draw_pairs(states: RankingStates, draws: int, seed: int = 0) -> list[tuple[int, str, str]]:
    """``draws`` pairs ``(state index, better move, other move)`` as the reference draws them: a state uniformly
    among the distinct ones, then each move uniformly among that state's entries, all with replacement.

    >>> s = RankingStates([([""], [])], [["raise", "raise"]], [["abbey", "xylyl", "abbey"]])
    >>> sorted({p[2] for p in draw_pairs(s, 50, seed=1)})
    ['abbey', 'xylyl']
    """
    if not len(states):
        raise ValueError("no state has both a better and an other move: nothing to rank")
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(draws):
        i = int(rng.integers(len(states)))
        pairs.append((i, states.better[i][int(rng.integers(len(states.better[i])))],
                      states.worse[i][int(rng.integers(len(states.worse[i])))]))
    return pairs


@torch.no_grad()
def move_token_values(loaded: LoadedModel, history: History, moves: Sequence[str], batch: int = 128
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``(live, target)``, each ``[len(moves), POSITIONS]``: Q of the last ``POSITIONS`` tokens of each move said in
    ``history`` (its tokens and its end token; column 0 the end token, the whole word, then backwards), NaN where a
    move has fewer tokens. ``live`` is the minimum of the trained heads, ``target`` the target network's."""
    from trainers.core.padding import right_pad
    from trainers.core.policy import observation_text

    if loaded.heads is None:
        raise ValueError(f"a {loaded.algorithm!r} checkpoint has no Q heads to rank moves with")
    tok = loaded.tokenizer
    prompt = tok.encode_prompt([observation_text(o) for o in history[0]], list(history[1]))
    live = np.full((len(moves), POSITIONS), np.nan)
    target = np.full((len(moves), POSITIONS), np.nan)
    for start in range(0, len(moves), batch):
        chunk = moves[start:start + batch]
        said = [tok.encode(move) + [tok.eoa_id] for move in chunk]
        ids, mask = right_pad([prompt + s for s in said], tok.pad_id)
        hidden = loaded.lm(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
        live_q = loaded.heads.live_q(hidden)
        target_q = loaded.model.target_values({"input_ids": ids, "attention_mask": mask}, hidden)
        for row, tokens in enumerate(said):
            end = len(prompt) + len(tokens)  # one past the end token
            for i in range(min(POSITIONS, len(tokens))):
                position, token = end - 1 - i, tokens[len(tokens) - 1 - i]
                live[start + row, i] = float(live_q[row, position - 1, token])
                target[start + row, i] = float(target_q[row, position - 1, token])
    return live, target


def q_rank(loaded: LoadedModel, states: RankingStates, pairs: Sequence[tuple[int, str, str]]) -> dict[str, Any]:
    """The fractions of ``pairs`` where Q of the better move is strictly above Q of the other, at each of the last
    ``POSITIONS`` action tokens (index 0: the end token, the whole word): ``{"live": [...], "target": [...],
    "draws": n, "better_q": mean live Q of the drawn better moves' word, "worse_q": the other moves'}``. Each distinct
    (state, move) is scored once."""
    wanted: dict[int, set[str]] = {}
    for i, better, worse in pairs:
        wanted.setdefault(i, set()).update((better, worse))
    values: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    for i, moves in wanted.items():
        ordered = sorted(moves)
        live, target = move_token_values(loaded, states.histories[i], ordered)
        values.update({(i, move): (live[k], target[k]) for k, move in enumerate(ordered)})
    out: dict[str, Any] = {"draws": len(pairs)}
    for head, index in (("live", 0), ("target", 1)):
        wins = np.array([values[(i, b)][index] > values[(i, w)][index] for i, b, w in pairs])  # NaN compares False
        out[head] = [float(x) for x in wins.mean(axis=0)]
    out["better_q"] = float(np.mean([values[(i, b)][0][0] for i, b, _ in pairs]))
    out["worse_q"] = float(np.mean([values[(i, w)][0][0] for i, _, w in pairs]))
    return out


__all__ = ["POSITIONS", "REFERENCE_DRAWS", "History", "state_key", "RankingStates", "adversarial_ranking_states",
           "draw_pairs", "move_token_values", "q_rank"]
