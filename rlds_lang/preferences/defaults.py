"""The preference pipeline's defaults, in one place, each with its source.

Source ("the anchor"): the environment-wrapper refactor of Rahtz's reimplementation of Christiano et al.
2017 (HumanCompatibleAI's ``drlhp``, ``HumanPreferencesEnvWrapper``), whose defaults this pipeline adopts:
``segment_length=40``, ``n_initial_prefs=40``, ``max_prefs_in_db=10000``, ``PREFS_VAL_FRACTION=0.2``,
``validation_interval=10``, ``n_initial_training_steps=50``, ``reward_predictor_refresh_interval=10``.
The query-rate schedule follows the paper (arXiv 1706.03741, appendix A, from memory: not checked against
the text): labels requested at a rate proportional to ``T0 / (T0 + t)`` after ``t`` environment steps
(``T0`` = 2e6 for MuJoCo, 5e6 for Atari).
"""

from __future__ import annotations

#: steps per segment (clip) shown to a labeller (anchor ``segment_length``).
SEGMENT_LENGTH = 40
#: preferences collected before reward training starts (anchor ``n_initial_prefs``).
INITIAL_PREFERENCES = 40
#: capacity of the circular preference database, in labels (anchor ``max_prefs_in_db``).
DATABASE_CAPACITY = 10_000
#: share of labels routed to the validation database (anchor ``PREFS_VAL_FRACTION``).
VALIDATION_FRACTION = 0.2
#: reward-training steps between validations (anchor ``validation_interval``).
VALIDATION_EVERY = 10
#: reward-training steps before the wrapper switches to the predicted reward (anchor ``n_initial_training_steps``).
INITIAL_TRAINING_STEPS = 50
#: reward-training steps between the wrapper's reloads of the predictor (anchor ``reward_predictor_refresh_interval``).
RELOAD_EVERY_TRAINING_STEPS = 10
#: the synthetic labeller's tie tolerance: returns closer than this are "equal" (anchor: exact ties only).
TIE_TOLERANCE = 0.0
#: candidate pairs drawn per query for ensemble-disagreement selection (our choice; the paper samples
#: "a large number of pairs" and keeps the most disagreed).
CANDIDATES_PER_QUERY = 10
#: the query-rate time constant ``T0`` in environment steps (the paper's MuJoCo value as we recall it, appendix A).
QUERY_RATE_TIMESCALE = 2_000_000

__all__ = ["SEGMENT_LENGTH", "INITIAL_PREFERENCES", "DATABASE_CAPACITY", "VALIDATION_FRACTION", "VALIDATION_EVERY",
           "INITIAL_TRAINING_STEPS", "RELOAD_EVERY_TRAINING_STEPS", "TIE_TOLERANCE", "CANDIDATES_PER_QUERY",
           "QUERY_RATE_TIMESCALE"]
