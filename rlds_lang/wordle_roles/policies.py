"""Scripted roles of two-role Wordle, of several strengths, and a team that lets whichever role acts answer.

* ``ScriptedProposer(prob_smart)``: with probability ``prob_smart`` a random answer consistent with the board,
  else any random guess (``rlds_lang.wordle.policies.RandomMixturePolicy`` on the two-role board).
* ``ScriptedChecker(accuracy)``: with probability ``accuracy`` the right judgement (accept a proposal that can
  still be the answer, send back one that cannot), else ``accept`` or ``reject`` at random.
* ``RoleTeam(members)``: one policy per agent; each step is answered by the member of the acting agent
  (the observation's ``agent``). Members may be language-model policies (``trainers.algorithms.malt.team``).

``STRENGTHS`` names three strengths per role; ``scripted_team("weak", "strong")`` builds a team from them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from rlds_lang.env import Observation, Policy
from rlds_lang.wordle.knowledge import GameView, WordleKnowledge
from rlds_lang.wordle.policies import RandomMixturePolicy, child_seed, policy_spec
from rlds_lang.wordle_roles.env import ACCEPT, REJECT, board_history

#: the scripted strengths: the proposer's ``prob_smart`` and the checker's ``accuracy``.
STRENGTHS: dict[str, dict[str, float]] = {
    "proposer": {"weak": 0.2, "medium": 0.6, "strong": 1.0},
    "checker": {"weak": 0.5, "medium": 0.8, "strong": 1.0},
}


def board_view(knowledge: WordleKnowledge, observations: Sequence[Observation]) -> GameView:
    """The game state of the two-role board (played guesses and the answers still consistent with them)."""
    history = board_history(observations)
    return GameView(history, knowledge.consistent(history))


class ScriptedProposer(RandomMixturePolicy):
    """The proposer: a consistent answer with probability ``prob_smart``, else a random guess."""

    name = "scripted_proposer"

    def view(self, observations: Sequence[Observation], actions: Sequence[str]) -> GameView:
        """The board, read from the observations (the actions interleave both roles')."""
        return board_view(self.knowledge, observations)


class ScriptedChecker:
    """The checker: the right judgement with probability ``accuracy``, else a coin flip.

    ``lists``: the answers, guesses and rule of ``rlds_lang.wordle.knowledge.WordleKnowledge``.
    """

    name = "scripted_checker"

    def __init__(self, accuracy: float = 1.0, **lists: Any):
        if not 0.0 <= accuracy <= 1.0:
            raise ValueError(f"accuracy must be in [0, 1], got {accuracy}")
        self.accuracy = float(accuracy)
        self.knowledge = WordleKnowledge(**lists)
        self._rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        """Restarts the checker's randomness from ``seed``."""
        self._rng = np.random.default_rng(int(seed))

    def params(self) -> dict[str, Any]:
        return {**self.knowledge.params(), "accuracy": self.accuracy}

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        """``accept`` or ``reject`` for the proposal in the last observation."""
        proposal = str(observations[-1]["proposal"])
        if self._rng.random() < self.accuracy:
            candidates = board_view(self.knowledge, observations).candidates
            answers = self.knowledge.answers
            fits = proposal in answers and answers.index(proposal) in set(candidates.tolist())
            return ACCEPT if fits else REJECT
        return ACCEPT if self._rng.random() < 0.5 else REJECT


class RoleTeam:
    """A policy made of one member per agent; the acting agent's member answers (see the module docstring)."""

    def __init__(self, members: Sequence[Policy], name: str = "team"):
        self.members = list(members)
        self.name = name

    def reset(self, seed: int) -> None:
        """Seeds each member with its own seed derived from ``seed``."""
        for k, member in enumerate(self.members):
            member.reset(child_seed(seed, k))

    def member_of(self, observations: Sequence[Observation]) -> Policy:
        """The member of the agent acting in the last observation."""
        agent = int(observations[-1]["agent"])
        if not 0 <= agent < len(self.members):
            raise ValueError(f"RoleTeam: agent {agent} acts, but the team has {len(self.members)} members")
        return self.members[agent]

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        """The acting agent's member's action."""
        return self.member_of(observations).act(observations, actions)

    def act_batch(self, histories: Sequence[tuple[Sequence[Observation], Sequence[str]]],
                  seeds: Sequence[int]) -> list[str]:
        """The next action of several seeded games: each member answers its games at once (its own ``act_batch``
        when it has one, else ``act`` per game after a reset to ``child_seed(seed, step)``, so that, as a
        language-model policy's draws, a game's draws depend on its seed and its step; ``step``: the actions so
        far)."""
        out: list[str | None] = [None] * len(histories)
        by_member: dict[int, list[int]] = {}
        for i, (observations, _) in enumerate(histories):
            by_member.setdefault(id(self.member_of(observations)), []).append(i)
        for rows in by_member.values():
            member = self.member_of(histories[rows[0]][0])
            batch = getattr(member, "act_batch", None)
            if callable(batch):
                answers = batch([histories[i] for i in rows], seeds=[seeds[i] for i in rows])
            else:
                answers = []
                for i in rows:
                    member.reset(child_seed(seeds[i], len(histories[i][1])))
                    answers.append(member.act(*histories[i]))
            for i, answer in zip(rows, answers):
                out[i] = answer
        return [str(a) for a in out]

    def params(self) -> Mapping[str, Any]:
        return {"members": [policy_spec(m) for m in self.members]}


def scripted_team(proposer: str = "medium", checker: str = "medium", **lists: Any) -> RoleTeam:
    """A scripted team of the named strengths (``STRENGTHS``), members in agent order (proposer, checker)."""
    for role, strength in (("proposer", proposer), ("checker", checker)):
        if strength not in STRENGTHS[role]:
            raise ValueError(f"unknown {role} strength {strength!r}; known: {sorted(STRENGTHS[role])}")
    members = [ScriptedProposer(STRENGTHS["proposer"][proposer], **lists),
               ScriptedChecker(STRENGTHS["checker"][checker], **lists)]
    return RoleTeam(members, name=f"scripted_{proposer}_{checker}")

__all__ = ["STRENGTHS", "RoleTeam", "ScriptedChecker", "ScriptedProposer", "board_view", "scripted_team"]
