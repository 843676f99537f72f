"""The linear reference of the LMRL-Gym setting: how much of the data policy a linear model of the board learns.

BC in ``wordle_synthetic/lmrl_gym`` can only learn one thing beyond uniform guessing: which words are still
consistent with the feedback (``trainers.experiments.lmrl_gym.setting.ConsistencyReport``). Part of that is *linear* in the board
-- a black ``s`` anywhere lowers every word holding ``s``, a green ``a`` in place 3 raises every word with
``a`` there -- and part needs the exact conjunction of every constraint (the data policy's smart half picks
uniformly among the few words that satisfy all of them). ``linear_reference`` fits a softmax over the 431 words
whose logit for word ``w`` is ``board · W · spelling(w) + b_w``: bilinear in the board's (place, letter, colour)
indicators and the word's (place, letter) indicators, so what it learns about a letter holds for every word
spelled with it. It trains by Adam on the data policy's games and reports its held-out nats per guess as it
trains, beside the data policy's own (the floor) and uniform guessing's.
A trained language model's held-out nats (``consistency_learned``) read against it: at the linear
reference's level, the model has learned the linear part and none of the conjunctions.

Run: ``python -m trainers.experiments.lmrl_gym --linear-reference``.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Sequence

import numpy as np

from rlds_lang.env import Observation
from rlds_lang.wordle import lmrl_gym
from rlds_lang.wordle.words import WORD_LENGTH
from trainers.experiments.lmrl_gym.setting import HELD_OUT_SEED, data_policy_turns

#: colours of the ``feedback`` observation (``rlds_lang.wordle.game``: black 0, yellow 1, green 2).
COLOURS = 3
#: (place, letter, colour) indicators and a constant.
FEATURES = WORD_LENGTH * 26 * COLOURS + 1


def board_features(observations: Sequence[Observation], actions: Sequence[str]) -> np.ndarray:
    """The indicators of every (place, letter, colour) the board shows after ``actions``, and a constant 1.

    >>> import numpy as np
    >>> obs = [{"feedback": np.full(5, -1)}, {"feedback": np.array([2, 0, 0, 0, 0])}]
    >>> f = board_features(obs, ["abbey"])
    >>> int(f[:-1].sum()), bool(f[(0 * 26 + 0) * COLOURS + 2]), bool(f[-1])
    (5, True, True)
    """
    if len(observations) != len(actions) + 1:
        raise ValueError(f"expected one more observation than actions, got {len(observations)} and {len(actions)}")
    features = np.zeros(FEATURES, np.float32)
    features[-1] = 1.0
    for guess, observation in zip(actions, observations[1:]):
        for place, (letter, colour) in enumerate(zip(guess, observation["feedback"])):
            features[(place * 26 + ord(letter) - ord("a")) * COLOURS + int(colour)] = 1.0
    return features


def word_spellings(words: Sequence[str]) -> np.ndarray:
    """``[len(words), 5 * 26]``: the (place, letter) indicators of each word.

    >>> word_spellings(["abcde"]).nonzero()[1].tolist()
    [0, 27, 54, 81, 108]
    """
    spelling = np.zeros((len(words), WORD_LENGTH * 26), np.float32)
    for row, word in enumerate(words):
        for place, letter in enumerate(word):
            spelling[row, place * 26 + ord(letter) - ord("a")] = 1.0
    return spelling


def _states(games: int, seed: int, nats: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """Every state of ``games`` data-policy games: (features, index of the guess made, the data policy's mean nats
    per guess when ``nats``, else nan)."""
    policy = lmrl_gym.behaviour_policy()
    index = {word: i for i, word in enumerate(policy.knowledge.guesses.words)}
    features, targets, losses = [], [], []
    for state, guess in data_policy_turns(policy, games, seed):
        features.append(board_features(*state))
        targets.append(index[guess])
        if nats:
            losses.append(-float(np.log(policy.distribution(*state)[index[guess]])))
    return np.stack(features), np.asarray(targets), float(np.mean(losses)) if nats else float("nan")


@dataclasses.dataclass
class LinearReport:
    """Held-out nats per guess of the linear reference after each of ``steps``, beside the floor and uniform."""

    steps: list[int]
    nats: list[float]
    behaviour_nats: float
    uniform_nats: float
    states: int

    def learned(self, nats: float) -> float:
        """The share of the learnable nats (uniform − data policy) that a model at ``nats`` per guess took up."""
        return (self.uniform_nats - nats) / (self.uniform_nats - self.behaviour_nats)

    @property
    def lowest(self) -> float:
        """The lowest held-out nats per guess along the fit (picked on the same held-out games, so a little
        optimistic: a reference for how far the linear part goes, not a model to deploy)."""
        return min(self.nats)

    def line(self) -> str:
        """One line for logs and notes."""
        curve = ", ".join(f"{s}: {n:.3f}" for s, n in zip(self.steps, self.nats))
        lowest = self.lowest
        return (f"linear reference, held-out nats per guess by Adam step ({curve}; learned "
                f"{self.learned(self.nats[-1]):.0%} at the end, {self.learned(lowest):.0%} at the lowest, "
                f"{lowest:.3f}) over {self.states} guesses; data policy {self.behaviour_nats:.3f}, uniform "
                f"{self.uniform_nats:.3f}")


def linear_reference(train_games: int = 200_000, held_out_games: int = 500, steps: int = 4096, batch: int = 256,
                     lr: float = 1e-2, seed: int = 0, held_out_seed: int | None = None,
                     device: str | Any = "auto") -> LinearReport:
    """Fits the linear reference on ``train_games`` games of the train split's seeds and measures it on
    ``held_out_games`` games seeded beyond both splits (``trainers.experiments.lmrl_gym.setting.HELD_OUT_SEED``); ``batch`` states
    per Adam step at ``lr``, measured at doubling steps up to ``steps``. Its tensors live on ``device`` (a
    ``--device`` value or a ``torch.device``; ``auto`` is the enclosing command's choice, else CUDA when present);
    the minibatches are drawn by a CPU generator, so a seed picks the same states on every device."""
    import torch

    from trainers.core.device import resolve_device

    device = resolve_device(device)
    x, y, _ = _states(train_games, lmrl_gym.TRAIN_SEED)
    hx, hy, behaviour_nats = _states(held_out_games, HELD_OUT_SEED if held_out_seed is None else held_out_seed,
                                     nats=True)
    spelling = torch.from_numpy(word_spellings(lmrl_gym.behaviour_policy().knowledge.guesses.words)).to(device)
    generator = torch.Generator(device="cpu").manual_seed(seed)
    x, y, hx, hy = (torch.from_numpy(a).to(device) for a in (x, y, hx, hy))
    weights = torch.zeros(FEATURES, spelling.shape[1], requires_grad=True, device=device)
    bias = torch.zeros(len(spelling), requires_grad=True, device=device)
    optimizer = torch.optim.Adam([weights, bias], lr=lr)

    def logits(board: torch.Tensor) -> torch.Tensor:
        return board @ weights @ spelling.T + bias

    report = LinearReport([], [], behaviour_nats, float(np.log(len(spelling))), len(hy))
    checkpoints = {min(steps, 2 ** k) for k in range(4, 40) if 2 ** (k - 1) < steps}
    for step in range(1, steps + 1):
        pick = torch.randint(len(y), (batch,), generator=generator, device="cpu").to(device)
        loss = torch.nn.functional.cross_entropy(logits(x[pick]), y[pick])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step in checkpoints:
            with torch.no_grad():
                report.steps.append(step)
                report.nats.append(float(torch.nn.functional.cross_entropy(logits(hx), hy)))
    return report


def add_linear_arguments(parser: argparse.ArgumentParser) -> None:
    """``--linear-train-games``, ``--linear-held-out-games`` and ``--linear-steps``: the sizes of ``linear_reference``."""
    parser.add_argument("--linear-train-games", type=int, default=200_000,
                        help="linear reference: data-policy games it is fitted on")
    parser.add_argument("--linear-held-out-games", type=int, default=500,
                        help="linear reference: held-out data-policy games it is measured on")
    parser.add_argument("--linear-steps", type=int, default=4096, help="linear reference: Adam steps")


def linear_reference_from_args(args: argparse.Namespace) -> LinearReport:
    """``linear_reference`` at the sizes ``add_linear_arguments`` parsed, on the command's ``--device`` (``auto``
    where it has none)."""
    return linear_reference(args.linear_train_games, args.linear_held_out_games, args.linear_steps,
                            device=getattr(args, "device", "auto"))


__all__ = ["COLOURS", "FEATURES", "board_features", "word_spellings", "LinearReport", "linear_reference",
           "add_linear_arguments", "linear_reference_from_args"]
