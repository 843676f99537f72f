"""Every trained row of the LMRL-Gym table played under every decoding, and the headline decoding.

LMRL-Gym's evaluation scripts sample by default, but the command lines of its paper are not public; a BC policy
played greedily or at a low temperature acts on its mode, which in this setting is a word consistent with the
board more often than its samples are. So every row is played greedy and at temperatures 0.3, 0.5, 0.7 and 1
(``LMRL_GYM_DECODINGS``) on the same seeded games, the β of each value row chosen on held-out games separately
for each decoding. The headline table is the decoding whose BC row comes closest to LMRL-Gym's BC
(``headline_decoding``), played again on LMRL-Gym's 4,096 games; the page says that it was chosen that way.

BC and %BC are also played from the checkpoint of lowest held-out loss among those their runs kept
(``trainers.evaluation.selection``: LMRL-Gym's ``save_best``), beside their last.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, Sequence

from rlds_lang.wordle import lmrl_gym
from trainers.experiments.beta_choice import BetaChoice, choose_beta
from trainers.experiments.common import DECODINGS, Decoding, Experiment, evaluate_run, slug

#: the decodings every row is played with (keys of ``trainers.experiments.common.DECODINGS``), most greedy first.
LMRL_GYM_DECODINGS = ("greedy", "t0.3", "t0.5", "t0.7", "sample")
#: the name of a row played from its checkpoint of lowest held-out loss (LMRL-Gym's ``save_best``).
SAVE_BEST = "{name} (save_best)"


@dataclasses.dataclass(frozen=True)
class TrainedRow:
    """A row to play: its name in the tables, its experiment (algorithm, β), its run folder and the checkpoint to
    play (None: the run's latest) at its optimizer ``step``."""

    name: str
    experiment: Experiment
    run: Path
    step: int
    checkpoint: Path | None = None


@dataclasses.dataclass
class DecodingOutcome:
    """One decoding's evaluations: every row (named as in the tables), the scripted policy last, and the β choices
    of its value rows."""

    decoding: Decoding
    games: int
    results: list
    betas: list[BetaChoice]

    @property
    def by_name(self) -> dict[str, Any]:
        """The results by row name."""
        return {r.name: r for r in self.results}


def play_rows(rows: Sequence[TrainedRow], decoding: Decoding, eval_config: Any, held_out: Any,
              grid: Sequence[float], scripted: Any, fresh: bool = False) -> DecodingOutcome:
    """Plays every row with ``decoding`` on ``eval_config``'s games (each evaluation cached beside its run), a row
    with a β at the β its held-out games choose under this decoding (``grid`` empty: its committed β), then
    appends the ``scripted`` result (it decodes nothing, so one result serves every decoding)."""
    results, betas = [], []
    for row in rows:
        beta = None
        if row.experiment.beta is not None and grid:
            betas.append(choose_beta(row.experiment, row.run, row.step, held_out, decoding, fresh, grid))
            beta = betas[-1].best
        result = evaluate_run(row.experiment, row.run, row.step, eval_config, decoding, fresh, beta,
                              checkpoint=row.checkpoint)
        results.append(dataclasses.replace(result, name=row.name))
    return DecodingOutcome(decoding, eval_config.games, [*results, scripted], betas)


def headline_decoding(outcomes: Sequence[DecodingOutcome], bc: str = "BC") -> DecodingOutcome:
    """The outcome whose ``bc`` row's mean return is closest to LMRL-Gym's published BC (the first of equals)."""
    published = lmrl_gym.published_return("BC")
    return min(outcomes, key=lambda o: abs(o.by_name[bc].mean_reward - published))


def save_best_rows(rows: Sequence[TrainedRow], load: Callable[[Path], Any], cache: Path, episodes: int,
                   fresh: bool = False) -> tuple[list[TrainedRow], dict[str, Any]]:
    """For each of ``rows`` (BC, %BC), a row playing its checkpoint of lowest held-out loss on the first
    ``episodes`` games of the ``eval`` split (``select_by_held_out_loss``), and each run's selection. Each
    selection is kept in ``cache/selection-<row>.json`` under its candidates' steps and ``episodes``, and reused
    unless ``fresh`` or the run has kept another checkpoint since."""
    from trainers.core.checkpoint import checkpoint_dir, checkpoint_step, snapshots
    from trainers.evaluation.selection import Selection, select_by_held_out_loss

    chosen, selections = [], {}
    for row in rows:
        steps = sorted({step for step, _ in snapshots(row.run)} | {checkpoint_step(checkpoint_dir(row.run))})
        key = {"steps": steps, "episodes": episodes}
        path = cache / f"selection-{slug(row.name)}.json"
        stored = json.loads(path.read_text()) if path.exists() and not fresh else {}
        if stored.get("key") == key:
            try:
                selection = Selection.from_dict(stored["selection"])
            except ValueError as error:
                raise ValueError(f"{path}: {error} (delete it, or pass --fresh, to score the checkpoints "
                                 "again)") from None
        else:
            selection = select_by_held_out_loss(row.run, load, split="eval", episodes=episodes)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"key": key, "selection": selection.to_dict()}, indent=2) + "\n")
        selections[row.name] = selection
        best = selection.best
        chosen.append(TrainedRow(SAVE_BEST.format(name=row.name), row.experiment, row.run, best.step, best.path))
    return chosen, selections


def decodings_from_args(keys: Sequence[str] | None) -> list[Decoding]:
    """The decodings named (default ``LMRL_GYM_DECODINGS``), in the order given."""
    return [DECODINGS[key] for key in (keys or LMRL_GYM_DECODINGS)]


__all__ = ["LMRL_GYM_DECODINGS", "SAVE_BEST", "TrainedRow", "DecodingOutcome", "play_rows", "headline_decoding",
           "save_best_rows", "decodings_from_args"]
