"""Did Q and V learn anything? Calibration against Monte-Carlo returns, and the ILQL paper's ranking test.

* ``value_calibration``: on held-out games (e.g. the ``eval`` split of ``wordle_synthetic/lmrl_gym``), the
  model's ``V(s_0)`` at the start of every game beside the game's discounted return, and its (decoding) ``Q``
  of every action token beside the token's discounted return-to-go (``transforms.token_mdp``). A value head
  that learned nothing has no correlation with the returns. ILQL's ``V`` is an upper expectile and its ``Q``
  values a better policy than the data's, so they sit above the data's returns; MC's regress onto them.
* ``utterance_values`` / ``ranking_fraction``: the ILQL paper's Section-5 test on its ``adversarial`` data --
  at each given state, does ``Q`` rank the better of two moves above the worse one? A word's value is the
  decoding ``Q`` (``ValueHeads.acting_q``: ``min`` of the heads the model decodes with, target or live) of its end-of-action token after its characters: the value
  of having said the whole word. ``first_move_ranking`` runs it at the initial state with the pairs of a
  dataset (``first_move_pairs``: the expert's first guess against every other policy's).

Example::

    from trainers.algorithms.registry import load_agent_model
    from trainers.evaluation.diagnostics import ranking_fraction, value_calibration

    loaded = load_agent_model("runs/ilql/checkpoint")
    print(value_calibration(loaded, "/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", split="eval").table())
    print(ranking_fraction(loaded, [([""], [])], better=["soare"], worse=["xylyl"]))
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from rlds_lang.env import as_text
from trainers.core.checkpoint import LoadedModel
from trainers.core.device import Placement, module_device
from trainers.core.model import action_targets
from trainers.core.padding import right_pad


@dataclasses.dataclass
class Calibration:
    """Predicted values beside Monte-Carlo returns: per game at its start (``v0_*``), per action token (``q_*``)."""

    v0_pred: np.ndarray
    v0_return: np.ndarray
    q_pred: np.ndarray
    q_return: np.ndarray

    @staticmethod
    def _summary(pred: np.ndarray, target: np.ndarray) -> tuple[float, float, float, float]:
        """``(mean prediction, mean return, RMSE, Pearson correlation)`` (correlation NaN when constant)."""
        corr = float(np.corrcoef(pred, target)[0, 1]) if len(pred) > 1 and pred.std() > 0 and target.std() > 0 \
            else float("nan")
        return float(pred.mean()), float(target.mean()), float(np.sqrt(np.mean((pred - target) ** 2))), corr

    def table(self) -> str:
        """A markdown table of both comparisons."""
        rows = ["| values | n | mean predicted | mean MC return | RMSE | correlation |", "| --- | --- | --- | --- | --- | --- |"]
        for name, pred, target in (("V(s_0) vs game return", self.v0_pred, self.v0_return),
                                   ("Q(s, a) vs return-to-go, every action token", self.q_pred, self.q_return)):
            mean_pred, mean_ret, rmse, corr = self._summary(pred, target)
            shown = f"{corr:.3f}" if np.isfinite(corr) else "— (one value: e.g. every game starts in one state)"
            rows.append(f"| {name} | {len(pred)} | {mean_pred:.3f} | {mean_ret:.3f} | {rmse:.3f} | {shown} |")
        return "\n".join(rows)

    def plot(self, path: str | os.PathLike, title: str = "") -> Path:
        """Predicted against returned value (mean prediction per distinct return), both comparisons; a PNG."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(9, 4))
        for ax, (name, pred, target) in zip(axes, (("V(s_0)", self.v0_pred, self.v0_return),
                                                   ("Q(s, a)", self.q_pred, self.q_return))):
            levels = np.unique(np.round(target, 3))
            means = [pred[np.isclose(np.round(target, 3), level)].mean() for level in levels]
            ax.scatter(target, pred, s=4, alpha=0.2, label="tokens" if name.startswith("Q") else "games")
            ax.plot(levels, means, "o-", color="C1", label="mean prediction")
            low, high = float(min(target.min(), pred.min())), float(max(target.max(), pred.max()))
            ax.plot([low, high], [low, high], "k--", linewidth=1, label="calibrated")
            ax.set_xlabel("Monte-Carlo return"), ax.set_ylabel(f"predicted {name}"), ax.legend(fontsize=7)
        fig.suptitle(title or "value calibration on held-out games")
        fig.tight_layout()
        path = Path(path)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


@torch.no_grad()
def value_calibration(loaded: LoadedModel, dataset: str, split: str = "eval", episodes: int = 500,
                      batch_size: int = 32) -> Calibration:
    """``loaded``'s values on the first ``episodes`` games of ``dataset``'s ``split`` beside their Monte-Carlo
    returns, discounted by the model config's ``gamma`` per action token (1 when it has none)."""
    from transforms.loading import load
    from transforms.token_mdp import TokenMDPConfig, token_batches
    from transforms.torch_bridge import TensorBatches

    if loaded.heads is None:
        raise ValueError(f"a {loaded.algorithm!r} checkpoint has no value heads to calibrate")
    config = loaded.config
    mdp = TokenMDPConfig(max_length=config.max_length, token_reward=config.token_reward,
                         gamma=getattr(config, "gamma", 1.0))
    batches = token_batches(load(dataset, split=split).take(episodes), loaded.tokenizer, mdp, batch_size)
    v0_pred, v0_ret, q_pred, q_ret = [], [], [], []
    place = Placement(module_device(loaded.lm))
    for batch in TensorBatches(batches):
        batch = place.move(batch)
        out = loaded.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True)
        hidden = out.hidden_states[-1][:, :-1]
        actions, mask = action_targets(batch)
        q = loaded.heads.acting_q(hidden).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        v = loaded.heads.v(hidden).squeeze(-1)
        returns = batch["returns_to_go"][:, 1:].double()
        q_pred.append(q[mask].double().cpu().numpy())
        q_ret.append(returns[mask].cpu().numpy())
        has_action = mask.any(1)
        first = mask.float().argmax(1)  # the first action token: the state s_0 before it
        rows = torch.arange(mask.shape[0], device=mask.device)[has_action]
        v0_pred.append(v[rows, first[has_action]].double().cpu().numpy())
        v0_ret.append(returns[rows, first[has_action]].cpu().numpy())
    return Calibration(*(np.concatenate(parts) for parts in (v0_pred, v0_ret, q_pred, q_ret)))


@torch.no_grad()
def utterance_values(loaded: LoadedModel, history: tuple[Sequence[Any], Sequence[str]], words: Sequence[str]) -> np.ndarray:
    """The decoding ``Q`` of each word said in the state ``history = (observations, actions)``: ``Q`` of its
    end-of-action token, after its characters. Observations are texts or RLDS observations with a ``text``."""
    if loaded.heads is None:
        raise ValueError(f"a {loaded.algorithm!r} checkpoint has no Q heads to rank moves with")
    from trainers.core.policy import observation_text

    tok = loaded.tokenizer
    prompt = tok.encode_prompt([observation_text(o) for o in history[0]], list(history[1]))
    values = []
    device = module_device(loaded.lm)
    for word in words:
        ids = torch.tensor([prompt + tok.encode(word)], device=device)  # the state before the word's [EOA]
        out = loaded.lm(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
        values.append(float(loaded.heads.acting_q(out.hidden_states[-1][:, -1])[0, tok.eoa_id]))
    return np.asarray(values)


@torch.no_grad()
def word_log_probs(loaded: LoadedModel, history: tuple[Sequence[Any], Sequence[str]], words: Sequence[str]) -> np.ndarray:
    """The language model's (the BC policy's) ``log p(word | history)`` of each word: the sum of the log-probabilities
    of its tokens and its end-of-action token after the prompt of ``history = (observations, actions)``. Over a
    whole guess list, ``exp`` of it sums to at most 1 (the rest goes to other strings). The prompt is run once and
    its key/value cache shared by every word's continuation (right-padded: padding never precedes a scored token)."""
    from trainers.core.policy import observation_text

    tok = loaded.tokenizer
    prompt = tok.encode_prompt([observation_text(o) for o in history[0]], list(history[1]))
    continuations = [tok.encode(word) + [tok.eoa_id] for word in words]
    device = module_device(loaded.lm)
    ids, scored = (tensor.to(device) for tensor in right_pad(continuations, tok.pad_id))
    out = loaded.lm(input_ids=torch.tensor([prompt], device=device), use_cache=True)
    first = out.logits[0, -1].float().log_softmax(-1)[ids[:, 0]]  # the prompt's last position scores token 0
    cache = out.past_key_values
    cache.batch_repeat_interleave(len(words))
    logp = loaded.lm(input_ids=ids, past_key_values=cache).logits.float().log_softmax(-1)
    rest = logp[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)  # position t scores token t + 1
    return (torch.cat([first[:, None], rest], 1) * scored).sum(1).cpu().numpy()


def ranking_fraction(loaded: LoadedModel, histories: Sequence[tuple[Sequence[str], Sequence[str]]],
                     better: Sequence[str], worse: Sequence[str]) -> float:
    """The fraction of states ``histories[i]`` where ``Q`` values ``better[i]`` above ``worse[i]``."""
    if not (len(histories) == len(better) == len(worse)) or not histories:
        raise ValueError(f"need one (better, worse) pair per state, got {len(histories)} states, "
                         f"{len(better)} better and {len(worse)} worse moves")
    wins = [float(np.subtract(*utterance_values(loaded, h, [b, w])) > 0) for h, b, w in zip(histories, better, worse)]
    return float(np.mean(wins))


def first_move_pairs(episodes: Iterable[Mapping[str, Any]], better_policy: str = "optimal") -> tuple[str, list[str]]:
    """The ILQL paper's Section-5 pairs from RLDS episodes (e.g. ``wordle_synthetic/adversarial``, read with
    ``tfds.as_numpy``): the better first move is ``better_policy``'s most frequent first guess, the worse ones
    are the other policies' first guesses that differ from it. Returns ``(better, worse moves)``."""
    firsts: dict[bool, list[str]] = {True: [], False: []}
    for episode in episodes:
        first = next(iter(episode["steps"]))["action"]
        firsts[as_text(episode["policy"], "policy") == better_policy].append(as_text(first, "action"))
    if not firsts[True]:
        raise ValueError(f"no episode of policy {better_policy!r}: cannot tell the better first move")
    better = Counter(firsts[True]).most_common(1)[0][0]
    return better, [word for word in firsts[False] if word != better]


def branch_pairs(episodes: Iterable[Mapping[str, Any]]) -> tuple[list[tuple[list[Any], list[str]]], list[str], list[str]]:
    """The ILQL paper's Section-5 pairs at branch states, from the RLDS episodes of a branching dataset (episode
    metadata ``parent_episode_id`` and ``branch_turn``; ``steps`` a sequence of step dicts): for every branch of
    turn ``k``, the state after its parent's first ``k`` moves, the parent's move there (the better one: the
    parent kept playing its own policy) and the branch's (the worse one: the takeover policy's). A branch whose
    move equals its parent's is left out. Returns ``(histories, better, worse)`` for ``ranking_fraction``."""
    parents: dict[str, Sequence[Mapping[str, Any]]] = {}
    branches = []
    for episode in episodes:
        turn, steps = int(episode["branch_turn"]), list(episode["steps"])
        if turn < 0:
            parents[as_text(episode["episode_id"], "episode_id")] = steps
        else:
            branches.append((as_text(episode["episode_id"], "episode_id"),
                             as_text(episode["parent_episode_id"], "parent_episode_id"), turn, steps))
    histories, better, worse = [], [], []
    for episode_id, parent_id, turn, steps in branches:
        if parent_id not in parents:
            raise ValueError(f"branch {episode_id}: its parent {parent_id!r} is not among the episodes")
        parent = parents[parent_id]
        theirs, mine = as_text(parent[turn]["action"], "action"), as_text(steps[turn]["action"], "action")
        if theirs == mine:
            continue
        histories.append(([s["observation"] for s in parent[:turn + 1]], [as_text(s["action"], "action") for s in parent[:turn]]))
        better.append(theirs)
        worse.append(mine)
    return histories, better, worse


def first_move_ranking(loaded: LoadedModel, episodes: Iterable[Mapping[str, Any]], better_policy: str = "optimal") -> float:
    """Section 5's ranking test at the initial state: the fraction of the other policies' first moves that ``Q``
    values below ``better_policy``'s (ILQL's reaches ~1 on the paper's adversarial data, single-step methods ~0)."""
    return ranking_at_start(loaded, *first_move_pairs(episodes, better_policy))


def ranking_at_start(loaded: LoadedModel, better: str, worse: Sequence[str]) -> float:
    """The fraction of the first moves ``worse`` that ``Q`` values below the first move ``better``."""
    if not worse:
        raise ValueError("every first move is the better one: nothing to rank")
    values = utterance_values(loaded, ([""], []), [better, *worse])
    return float(np.mean(values[0] > values[1:]))


__all__ = ["Calibration", "value_calibration", "utterance_values", "word_log_probs", "ranking_fraction", "first_move_pairs",
           "first_move_ranking", "ranking_at_start", "branch_pairs"]
