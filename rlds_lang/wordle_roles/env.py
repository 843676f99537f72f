"""Wordle played by two roles: a proposer offers a guess, a checker accepts it or sends it back.

Each turn the proposer (agent 0) proposes a guess; the checker (agent 1) sees the board and the proposal and
answers ``accept`` (the guess is played) or ``reject`` (the proposer proposes again). After ``max_sendbacks``
send-backs in a turn the next proposal is played without a check. Every environment step is one role's action;
``acting_agent()`` says whose it is (also the observation's ``agent``).

Rewards. The timestep's reward is the shared game reward: Wordle's -1 for every played guess that is not the
answer, 0 otherwise (so the team's return lies in ``[-6, 0]``). Each role also has its own reward
(``agent_rewards()`` after a step, ``role_rewards`` as a pure function of the step), the game reward plus what
makes its choices matter:

* proposer: ``-SENDBACK_COST`` for each of its proposals sent back (its proposals should be worth playing);
* checker: ``-MISJUDGE_COST`` for each wrong judgement: accepting a proposal that cannot be the answer given the
  feedback so far, or sending back one that can (``proposal_fits``).

``agent_reward_ranges()`` gives each role's possible return range (MALT's per-agent mid-point and range).

Observation: ``text`` (the role prompt, ``propose`` or ``check``, then the last played guess with its feedback
written as cells, letter then square: ``proposec⬛r🟨a⬛n⬛e🟩``; ``rlds_lang.wordle.board_tokenizer`` reads these
as one token per (letter, colour), so a model sees which letter got which colour without binding the squares to
a guess several actions back: the action before an observation is often ``accept``, not the guess). The
checker's text is set by ``checker_view``: ``"marked"`` (the default) writes the proposal as cells, each letter
with the square the board gives it at its place (``rlds_lang.wordle.game.Constraints.marks``: 🟩 known there, ⬛
ruled out there, 🟨 known in the answer, ⬜ unknown), as Wordle's keyboard colours the letters typed: a proposal
with a ⬛ cannot be the answer. ``"board"`` writes the board as the proposer sees it; then the proposal is only the
word token of the action before, and reading its letters from that token is what the small models trained on
these games did not learn (their checkers accepted fitting and non-fitting proposals alike). Further fields:
``agent``, ``turn`` (guesses played), ``played`` and ``feedback`` (the last played guess and its colours; ``""``
and -1 before the first), ``proposal`` (the guess under check, ``""`` for the proposer), ``proposal_fits`` (1 if
it is still a possible answer, 0 if not, -1 without a proposal) and ``sendbacks`` (this turn's so far).

Example::

    from rlds_lang.env import run_episode
    from rlds_lang.wordle_roles.env import ProposerCheckerEnv
    from rlds_lang.wordle_roles.policies import scripted_team

    episode = run_episode(ProposerCheckerEnv(), scripted_team("strong", "strong"), seed=3)
    print(episode.actions, episode.total_reward)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from dm_env import specs

from rlds_lang.env import InvalidActionError, LanguageEnv, Observation, text_spec
from rlds_lang.wordle import game
from rlds_lang.wordle.board_tokenizer import written_cells
from rlds_lang.wordle.env import MAX_GUESSES, WordleEnv
from rlds_lang.wordle.knowledge import WordleKnowledge, feedback_pattern_id
from rlds_lang.wordle.words import WORD_LENGTH, WordList

PROPOSER, CHECKER = 0, 1
#: the role names by agent index.
ROLES = ("proposer", "checker")
#: the role prompt that starts each role's observation text.
ROLE_PROMPTS = ("propose", "check")
#: what the checker's text may show (``ProposerCheckerEnv``'s ``checker_view``; module docstring).
CHECKER_VIEWS = ("marked", "board")
#: the checker's two actions.
ACCEPT, REJECT = "accept", "reject"
#: the proposer's own cost of a proposal sent back.
SENDBACK_COST = 0.5
#: the checker's own cost of a wrong judgement (see the module docstring).
MISJUDGE_COST = 0.5


def role_rewards(observation: Observation, action: str, game_reward: float, max_sendbacks: int) -> np.ndarray:
    """float64 ``[2]``: each role's reward for ``action`` taken from ``observation`` that earned ``game_reward``.

    A pure function of the recorded step, so a recorded episode's per-role rewards can be recomputed from it.
    """
    agent = int(observation["agent"])
    if agent == PROPOSER:
        played = int(observation["sendbacks"]) >= max_sendbacks
        return np.array([game_reward, game_reward]) if played else np.zeros(2)
    fits = int(observation["proposal_fits"]) == 1
    if action == ACCEPT:
        return np.array([game_reward, game_reward - (0.0 if fits else MISJUDGE_COST)])
    return np.array([-SENDBACK_COST, -(MISJUDGE_COST if fits else 0.0)])


def board_history(observations: Sequence[Observation]) -> list[tuple[str, int]]:
    """``[(guess, pattern id), ...]`` of the guesses played so far, read from the observations (a guess shows up
    as ``played`` in the first observation whose ``turn`` counts it)."""
    history, turn = [], 0
    for observation in observations:
        if int(observation["turn"]) > turn:
            turn = int(observation["turn"])
            history.append((str(observation["played"]), feedback_pattern_id(observation["feedback"])))
    return history


class ProposerCheckerEnv(LanguageEnv):
    """Two-role Wordle as a ``dm_env`` language environment (see the module docstring).

    Args:
      max_sendbacks: proposals the checker may send back per turn (K); the next one is played unchecked.
      checker_view: what the checker's text shows, ``"marked"`` or ``"board"`` (module docstring).
      answers, guesses, rule, mode, max_guesses: the game's (``rlds_lang.wordle.env.WordleEnv``).
      seed: seed of the hidden-word draws.
    """

    task_name = "wordle_roles"

    def __init__(self, max_sendbacks: int = 1, answers: WordList | str = "official_answers",
                 guesses: WordList | str = "official_guesses", rule: game.Rule | str = game.Rule.OFFICIAL,
                 mode: str = "fixed", max_guesses: int = MAX_GUESSES, seed: int = 0,
                 checker_view: str = "marked"):
        super().__init__(seed)
        if max_sendbacks < 0:
            raise ValueError(f"max_sendbacks must be >= 0, got {max_sendbacks}")
        if checker_view not in CHECKER_VIEWS:
            raise ValueError(f"checker_view must be one of {CHECKER_VIEWS}, got {checker_view!r}")
        self.max_sendbacks = int(max_sendbacks)
        self.checker_view = checker_view
        self.game = WordleEnv(answers, guesses, rule=rule, mode=mode, max_guesses=max_guesses, seed=seed)
        self.knowledge = WordleKnowledge(self.game.answers, self.game.guesses, self.game.rule)
        self._observation: dict[str, Any] = {}
        self._last_rewards = np.zeros(2)

    @property
    def guesses(self) -> WordList:
        """The guess list (the proposer's actions)."""
        return self.game.guesses

    @property
    def answers(self) -> WordList:
        """The answer list."""
        return self.game.answers

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.game.seed(seed)

    def observation_spec(self) -> dict[str, specs.Array]:
        return {
            "text": text_spec("text"),
            "agent": specs.BoundedArray((), np.int32, minimum=0, maximum=1, name="agent"),
            "turn": specs.BoundedArray((), np.int32, minimum=0, maximum=self.game.max_guesses, name="turn"),
            "played": text_spec("played"),
            "feedback": specs.BoundedArray((WORD_LENGTH,), np.int8, minimum=-1, maximum=2, name="feedback"),
            "proposal": text_spec("proposal"),
            "proposal_fits": specs.BoundedArray((), np.int8, minimum=-1, maximum=1, name="proposal_fits"),
            "sendbacks": specs.BoundedArray((), np.int32, minimum=0, maximum=self.max_sendbacks, name="sendbacks"),
        }

    def acting_agent(self) -> int:
        """The agent whose action the environment waits for: 0 (proposer) or 1 (checker)."""
        return int(self._observation["agent"])

    def agent_actions(self, agent: int) -> list[str]:
        """Every action ``agent`` may take: the guess list (proposer) or ``accept``/``reject`` (checker)."""
        return list(self.guesses.words) if agent == PROPOSER else [ACCEPT, REJECT]

    def agent_rewards(self) -> np.ndarray:
        """float64 ``[2]``: each role's reward for the last step (``role_rewards``)."""
        return self._last_rewards.copy()

    def agent_reward_ranges(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """Each role's possible return ``(min, max)``: the game's ``[-max_guesses, 0]`` less every possible cost."""
        turns, k = self.game.max_guesses, self.max_sendbacks
        return ((-turns - SENDBACK_COST * k * turns, 0.0), (-turns - MISJUDGE_COST * (k + 1) * turns, 0.0))

    def _make_observation(self, agent: int, proposal: str = "", sendbacks: int = 0) -> dict[str, Any]:
        history = self.game.history
        played, pattern = history[-1] if history else ("", None)
        if agent == CHECKER and self.checker_view == "marked":
            cells = written_cells(proposal, game.constraints_from_history(history, self.game.rule).marks(proposal))
        else:
            cells = written_cells(played, game.render(pattern)) if pattern is not None else ""
        fits = -1
        if proposal:
            fits = int(proposal in self.answers and self.answers.index(proposal) in set(
                self.knowledge.consistent([(g, game.pattern_id(p)) for g, p in history]).tolist()))
        return {"text": ROLE_PROMPTS[agent] + cells, "agent": np.int32(agent), "turn": np.int32(len(history)),
                "played": played,
                "feedback": np.asarray(pattern if pattern is not None else (-1,) * WORD_LENGTH, np.int8),
                "proposal": proposal, "proposal_fits": np.int8(fits), "sendbacks": np.int32(sendbacks)}

    def _reset(self) -> Observation:
        self.game.reset()
        self._last_rewards = np.zeros(2)
        self._observation = self._make_observation(PROPOSER)
        return self._observation

    def _play(self, guess: str) -> tuple[float, bool]:
        timestep = self.game.step(guess)
        return float(timestep.reward), timestep.last()

    def _step(self, action: str) -> tuple[Observation, float, bool]:
        current = self._observation
        agent, sendbacks = int(current["agent"]), int(current["sendbacks"])
        reward, done = 0.0, False
        if agent == PROPOSER:
            self.game.validate_guess(action)
            if sendbacks >= self.max_sendbacks:
                reward, done = self._play(action)
                following = self._make_observation(PROPOSER)
            else:
                following = self._make_observation(CHECKER, proposal=action, sendbacks=sendbacks)
        else:
            if action not in (ACCEPT, REJECT):
                raise InvalidActionError(f"checker action {action[:40]!r} is neither {ACCEPT!r} nor {REJECT!r}")
            if action == ACCEPT:
                reward, done = self._play(str(current["proposal"]))
                following = self._make_observation(PROPOSER)
            else:
                following = self._make_observation(PROPOSER, sendbacks=sendbacks + 1)
        self._last_rewards = role_rewards(current, action, reward, self.max_sendbacks)
        self._observation = following
        return following, reward, done

    def episode_metadata(self) -> dict[str, Any]:
        return {**self.game.episode_metadata(), "task": self.task_name, "max_sendbacks": np.int32(self.max_sendbacks),
                "checker_view": self.checker_view}


def episode_role_returns(steps: Sequence[dict[str, Any]], max_sendbacks: int) -> np.ndarray:
    """float64 ``[2]``: each role's return in a recorded episode (RLDS steps as ``loggers.read_episodes`` yields
    them), recomputed with ``role_rewards``."""
    total = np.zeros(2)
    for step in steps:
        if bool(step.get("is_last", False)):
            break
        action = step["action"].decode() if isinstance(step["action"], bytes) else str(step["action"])
        total += role_rewards(step["observation"], action, float(step["reward"]), max_sendbacks)
    return total


__all__ = ["ACCEPT", "CHECKER", "CHECKER_VIEWS", "MISJUDGE_COST", "PROPOSER", "REJECT", "ROLES", "ROLE_PROMPTS", "SENDBACK_COST",
           "ProposerCheckerEnv", "board_history", "episode_role_returns", "role_rewards"]
