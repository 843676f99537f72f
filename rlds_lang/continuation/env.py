"""``ContinuationEnv``: one-step text continuation on ``LanguageEnv`` (the recipe's sentiment task, scaled down).

An episode shows a prompt (observation ``text``: the first words of a corpus sentence), takes one action --
the continuation -- and terminates with reward ``scorer([continuation])[0]`` (VADER's compound sentiment by
default, ``rlds_lang.continuation.scorer``). Episode seed ``s`` shows prompt ``s mod len(prompts)``, so
``loggers.record`` with seeds ``s`` and ``s + len(prompts)`` plays the same prompt twice (two samples to
compare) and two agents evaluated on the same seeds see the same prompts. The episode metadata names the
prompt, its corpus continuation and the scorer.

Example::

    from rlds_lang.continuation.corpus import corpus_examples
    from rlds_lang.continuation.env import ContinuationEnv

    env = ContinuationEnv(corpus_examples("test"))
    env.seed(3)
    timestep = env.reset()                 # timestep.observation["text"] is a prompt
    timestep = env.step("a wonderful gift.")
    print(timestep.reward, timestep.last())
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from dm_env import specs

from rlds_lang.continuation.corpus import Example
from rlds_lang.env import LanguageEnv, Observation, text_spec


class ContinuationEnv(LanguageEnv):
    """One-step continuation environment (see the module docstring).

    Args:
      examples: the prompts (``corpus.Example``; at least one).
      scorer: ``texts -> scores``; default ``VaderScorer()``.
      seed: the first episode's seed.
    """

    task_name = "continuation"

    def __init__(self, examples: Sequence[Example], scorer: Callable[[Sequence[str]], Sequence[float]] | None = None,
                 seed: int = 0):
        super().__init__(seed)
        if not examples:
            raise ValueError("ContinuationEnv needs at least one example to draw prompts from")
        if scorer is None:
            from rlds_lang.continuation.scorer import VaderScorer

            scorer = VaderScorer()
        self.examples = list(examples)
        self.scorer = scorer
        self.example = self.examples[0]

    def observation_spec(self) -> dict[str, specs.Array]:
        return {"text": text_spec("text")}

    def _reset(self) -> Observation:
        self.example = self.examples[self.current_seed % len(self.examples)]
        return {"text": self.example.prompt}

    def _step(self, action: str) -> tuple[Observation, float, bool]:
        return {"text": ""}, float(self.scorer([action])[0]), True

    def episode_metadata(self) -> dict[str, Any]:
        e = self.example
        return {"task": self.task_name, "prompt": e.prompt, "corpus_continuation": e.continuation,
                "split": e.split, "source": e.source, "scorer": str(getattr(self.scorer, "name", self.scorer))}


class CorpusPolicy:
    """Continues each prompt with the corpus's own continuation (the data's behaviour policy), byte for byte."""

    name = "corpus"

    def __init__(self, env: ContinuationEnv):
        self.env = env

    def reset(self, seed: int) -> None:
        """Nothing to reset: the corpus decides every continuation."""

    def act(self, observations, actions) -> str:
        """The corpus continuation of the prompt the environment shows."""
        return self.env.example.continuation

    def params(self) -> dict[str, Any]:
        """No parameters."""
        return {}


__all__ = ["ContinuationEnv", "CorpusPolicy"]
