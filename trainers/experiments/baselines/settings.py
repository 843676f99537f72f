"""The two settings of ``docs/baselines.md`` and the rows trained in each.

LMRL-Gym's Wordle (``wordle_synthetic/lmrl_gym``, built by ``trainers.experiments.lmrl_gym.run.build_dataset``)
trains with that page's ``TRAINING``; its BC, %BC and ILQL rows are that page's rows (same names, configs and run
folders under ``<runs>/lmrl_gym``, so a run trained for one page is reused by the other). CQL and ψ are built as
that page's ILQL is (``ON_BC_POLICY``: Q and V on a second transformer started from the finished BC row, decoding
BC's policy perturbed by β·(Q − V)); CHAI's frozen language model is the finished BC row's; DT and utterance ILQL
train their own policy, starting from the finished BC row's transformer too (``FROM_BC_STEPS``).

The ILQL paper's Section-5 data (``wordle_synthetic/ilql_adversarial``) trains with
``trainers.experiments.section5.TRAINING`` (undiscounted returns); its ILQL row is that page's row at the authors'
expectile (run folders under ``<runs>/section5``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rlds_lang.wordle import ilql_adversarial, lmrl_gym
from trainers.experiments import section5
from trainers.experiments.common import Experiment
from trainers.experiments.lmrl_gym import run as lmrl_gym_run

#: token-level value agents (Q and V per token: β-decoding, the Section-5 ranking and top-advantage read them) and
#: utterance-level ones (one Q per utterance: played as best of N samples; the token-level diagnostics do not apply).
TOKEN_VALUE = ("ilql", "mc", "cql", "psi")
UTTERANCE_VALUE = ("utterance_ilql", "chai")
#: the decoding β of CQL and ψ when no β is chosen on held-out games (their configs' default, the authors' adv_weight).
BASELINE_BETA = 8.0
#: the Decision Transformer's target returns swept in both settings (a Wordle game returns -6 to 0).
DT_TARGETS = (-6.0, -5.0, -4.0, -3.0, -2.0)


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting of the page: its dataset, training config, rows, which rows start from the finished BC row's
    transformer, and the row whose top-advantage table the page shows (None: none)."""

    key: str
    title: str
    training: dict[str, Any]
    rows: tuple[Experiment, ...]
    from_bc: tuple[str, ...]
    top_advantage_row: str | None = None
    #: what the page says of the game itself when most rows almost never win it (``document.floor_note``).
    hard_game: str = ""

    def row(self, name: str) -> Experiment:
        """The row called ``name``; a clear error naming this setting's rows otherwise."""
        for experiment in self.rows:
            if experiment.name == name:
                return experiment
        raise ValueError(f"{self.key} has no row {name!r}: its rows are {[e.name for e in self.rows]}")

    def eval_config(self, games: int, seed: int) -> Any:
        """The ``EvalConfig`` of this setting's seeded games (game ``i`` seeded ``seed + i``)."""
        from trainers.evaluation.wordle import EvalConfig
        from trainers.experiments.lmrl_gym.setting import setting_config

        if self.key == "lmrl_gym":
            return setting_config(games, seed)
        return EvalConfig(games=games, seed=seed, rule=ilql_adversarial.RULE, mode=ilql_adversarial.MODE)


def _lmrl_gym_row(name: str) -> Experiment:
    return next(e for e in lmrl_gym_run.ROWS if e.name == name)


#: the training steps of every LMRL-Gym row that starts from the finished BC row (``ON_BC_POLICY``'s, the value rows'
#: of that page). DT and utterance ILQL start there too, as LMRL-Gym starts every agent from a pretrained GPT-2 (the
#: BC row is our nearest to it): from random weights each would need the BC row's 32,000 steps (5.9 CPU hours).
FROM_BC_STEPS = lmrl_gym_run.ON_BC_POLICY["steps"]
#: CQL keeps its own conservative weight (0.1, ``CQLConfig.cql_weight``), not the 0.01 LMRL-Gym gives ILQL.
_ON_BC_CQL = {k: v for k, v in lmrl_gym_run.ON_BC_POLICY.items() if k != "cql_weight"}

LMRL_GYM = Setting(
    "lmrl_gym", "LMRL-Gym's Wordle (`wordle_synthetic/lmrl_gym`)", lmrl_gym_run.TRAINING,
    (_lmrl_gym_row("BC"), _lmrl_gym_row("%BC (top 30%)"), _lmrl_gym_row("ILQL"),
     Experiment("CQL", "cql", _ON_BC_CQL, beta=BASELINE_BETA),
     # ψ's logsumexp runs over every token: the conservative term holds down the tokens the data never takes
     # (docs/guides/baselines.md, "Things to know")
     Experiment("psi", "psi", {**lmrl_gym_run.ON_BC_POLICY, "cql_weight": 0.1}, beta=BASELINE_BETA),
     Experiment("DT", "dt", {"steps": FROM_BC_STEPS}),
     Experiment("utterance ILQL", "utterance_ilql", {"steps": FROM_BC_STEPS}),
     Experiment("CHAI", "chai", {"steps": FROM_BC_STEPS})),
    from_bc=("ILQL", "CQL", "psi", "DT", "utterance ILQL", "CHAI"), top_advantage_row="CQL")

#: the Section-5 rows: ILQL at the authors' expectile with that page's Polyak rate 0.05, which CQL and ψ share
#: (2,000 steps at 0.005 carry returns back only about 10 tokens: ``trainers.experiments.section5``). ψ's
#: ``pi_beta`` and utterance ILQL's policy are the finished BC row, fixed (``PsiConfig``, ``UtteranceILQLConfig``: the
#: authors' never train them), as CHAI's LM is.
SECTION5 = Setting(
    "section5", "The ILQL paper's Section-5 data (`wordle_synthetic/ilql_adversarial`)", section5.TRAINING,
    (Experiment("BC", "bc"), Experiment("%BC (top 30%)", "bc", {"top_p": lmrl_gym.PCT_BC_FRACTION}),
     dataclasses.replace(next(e for e in section5.ROWS if e.name == section5.AUTHORS_ROW), beta=BASELINE_BETA),
     Experiment("CQL", "cql", {"alpha": 0.05}, beta=BASELINE_BETA),
     Experiment("psi", "psi", {"alpha": 0.05, "cql_weight": 0.1}, beta=BASELINE_BETA),
     Experiment("DT", "dt"),
     Experiment("utterance ILQL", "utterance_ilql"),
     Experiment("CHAI", "chai")),
    from_bc=("psi", "utterance ILQL", "CHAI"), top_advantage_row="CQL",
    hard_game=("In this game the hidden word is redrawn after every guess among the answers still consistent with "
               "the feedback (`adversarial_resample`): a guess wins only if it is such an answer, and a word the "
               "feedback has ruled out, or one off the answer list, never wins."))

SETTINGS = (LMRL_GYM, SECTION5)


def settings_named(keys: list[str] | tuple[str, ...]) -> tuple[Setting, ...]:
    """The settings whose keys are ``keys``, in the page's order (LMRL-Gym's Wordle first); a clear error naming the
    known keys for any other."""
    known = {s.key: s for s in SETTINGS}
    unknown = sorted(set(keys) - set(known))
    if unknown or not keys:
        raise ValueError(f"--settings {unknown or '(none)'}: settings are {list(known)}")
    return tuple(s for s in SETTINGS if s.key in keys)


def setting_scale(setting: Setting, args: Any) -> tuple[int | None, int | None]:
    """``(games per split cap, optimizer steps)`` of ``setting`` in this run: ``--lmrl-gym-small`` and
    ``--lmrl-gym-steps`` for LMRL-Gym's Wordle when given, else ``--small`` and ``--steps`` (None: the full build,
    the committed steps).

    >>> from types import SimpleNamespace as NS
    >>> setting_scale(LMRL_GYM, NS(small=None, steps=2000, lmrl_gym_small=20000, lmrl_gym_steps=None))
    (20000, 2000)
    """
    small, steps = args.small, args.steps
    if setting.key == LMRL_GYM.key:
        small = args.lmrl_gym_small if args.lmrl_gym_small is not None else small
        steps = args.lmrl_gym_steps if args.lmrl_gym_steps is not None else steps
    return small, steps


#: the page's targets (LMRL-Gym Wordle): each row beats BC by more than 2 paired SE.
TARGETS = (("CQL", "BC"), ("psi", "BC"), ("utterance ILQL", "BC"))

__all__ = ["TOKEN_VALUE", "UTTERANCE_VALUE", "BASELINE_BETA", "DT_TARGETS", "FROM_BC_STEPS", "Setting", "LMRL_GYM",
           "SECTION5", "SETTINGS", "TARGETS", "settings_named", "setting_scale"]
