"""The continuation task's scorer: VADER's compound sentiment (``vaderSentiment``, a lexicon and rules shipped
inside its PyPI wheel, MIT licence; no network, no weights), in ``[-1, 1]``: the synthetic labeller's and the
environment's true reward, standing in for the recipe's human sentiment labels.

Example::

    from rlds_lang.continuation.scorer import VaderScorer

    VaderScorer()(["what a lovely day", "this is awful"])   # [0.599..., -0.458...]
"""

from __future__ import annotations

from typing import Sequence


class VaderScorer:
    """``scorer(texts) -> compound scores``; results are memoised per text (VADER is a pure function)."""

    name = "vader_compound"

    def __init__(self) -> None:
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer  # loads the lexicon once

        self._analyzer = SentimentIntensityAnalyzer()
        self._memo: dict[str, float] = {}

    def score(self, text: str) -> float:
        """The compound score of one text."""
        if text not in self._memo:
            self._memo[text] = float(self._analyzer.polarity_scores(text)["compound"])
        return self._memo[text]

    def __call__(self, texts: Sequence[str]) -> list[float]:
        return [self.score(text) for text in texts]

    def __getstate__(self):  # the memo is a per-process speed-up: do not ship it to workers
        state = dict(self.__dict__)
        state["_memo"] = {}
        return state


__all__ = ["VaderScorer"]
