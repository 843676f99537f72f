"""The preference pipeline's defaults, in one place, each with its source and the unit it is counted in.

Sources: "the paper" is Christiano et al. 2017 (arXiv 1706.03741); "the anchor" is the environment-wrapper
version of Rahtz's reimplementation (HumanCompatibleAI's ``drlhp``, ``drlhp/HumanPreferencesEnvWrapper.py``
and ``drlhp/reward_predictor.py``), checked against its code: ``segment_length=40``, ``n_initial_prefs=40``,
``max_prefs_in_db=10000``, ``PREFS_VAL_FRACTION=0.2``, ``n_initial_training_steps=50``,
``reward_predictor_ckpt_interval=10``, ``validation_interval=10``.

Units, as the anchor counts them: its reward-training loop calls ``RewardPredictorEnsemble.train`` once per
"training step", and that call is **one epoch** over the training database (shuffled mini-batches of 32),
so ``n_initial_training_steps`` and ``reward_predictor_ckpt_interval`` count epochs. Inside ``train`` the
ensemble counts **mini-batches**, and validates every ``validation_interval`` of them. We keep both units:
the switch to the predicted reward and the checkpoints count epochs (``INITIAL_TRAINING_EPOCHS``,
``CHECKPOINT_EVERY_EPOCHS``; an epoch is as many judgements drawn as the training database holds), and
validation counts optimizer steps (``VALIDATION_EVERY``).

The query-rate schedule follows the paper (appendix A, from memory: not checked against the text): labels
requested at a rate proportional to ``T0 / (T0 + t)`` after ``t`` environment steps (``T0`` = 2e6 for
MuJoCo, 5e6 for Atari); the anchor asks at a constant rate.
"""

from __future__ import annotations

#: steps per segment (clip) shown to a labeller (anchor ``segment_length``).
SEGMENT_LENGTH = 40
#: preferences collected before reward training starts (anchor ``n_initial_prefs``).
INITIAL_PREFERENCES = 40
#: capacity of the circular preference database, in labels (anchor ``max_prefs_in_db``).
DATABASE_CAPACITY = 10_000
#: share of labels routed to the validation database (anchor ``PREFS_VAL_FRACTION``; we hold out episodes).
VALIDATION_FRACTION = 0.2
#: reward-training optimizer steps (mini-batches) between validations (anchor ``validation_interval``, which
#: its ensemble counts in mini-batches).
VALIDATION_EVERY = 10
#: reward-training epochs before the wrapper switches to the predicted reward (anchor
#: ``n_initial_training_steps``, whose "training step" is one epoch over the database).
INITIAL_TRAINING_EPOCHS = 50
#: reward-training epochs between the checkpoints the wrapper reloads (anchor ``reward_predictor_ckpt_interval``,
#: in epochs as above).
CHECKPOINT_EVERY_EPOCHS = 10
#: the synthetic labeller's tie tolerance: returns closer than this are "equal" (anchor: exact ties only).
TIE_TOLERANCE = 0.0
#: candidate pairs drawn per query for ensemble-disagreement selection (ours: the anchor selects at random, the
#: paper samples "a large number of pairs" without a number we could check).
CANDIDATES_PER_QUERY = 10
#: the query-rate time constant ``T0`` in environment steps (the paper's MuJoCo value as we recall it, appendix A).
QUERY_RATE_TIMESCALE = 2_000_000
#: members of the reward-model ensemble (the paper's 3 predictors, section 2.2.3 and appendix A; the anchor's
#: ``RewardPredictorEnsemble`` defaults to ``n_preds=1``, which leaves disagreement selection nothing to measure).
ENSEMBLE_MEMBERS = 3

__all__ = ["SEGMENT_LENGTH", "INITIAL_PREFERENCES", "DATABASE_CAPACITY", "VALIDATION_FRACTION", "VALIDATION_EVERY",
           "INITIAL_TRAINING_EPOCHS", "CHECKPOINT_EVERY_EPOCHS", "TIE_TOLERANCE", "CANDIDATES_PER_QUERY",
           "QUERY_RATE_TIMESCALE", "ENSEMBLE_MEMBERS"]
