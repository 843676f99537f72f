"""What the results pages share: a row of a table (``Experiment``), the hyperparameters every row shares
(``SHARED``), the decodings rows are played with (``DECODINGS``), a row's config and folder name, its
training time across resumed calls, ``evaluate_run`` (a trained row played on seeded games, cached), and
``differing_fields`` (the fields in which a page's config departs from a reference config, each with its reason).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One row: an algorithm, its config overrides on top of ``SHARED``, and the ``beta`` it is played with."""

    name: str
    algorithm: str
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    beta: float | None = None


#: hyperparameters every row shares (model size, optimisation, data layout); see trainers.core.config.TrainConfig.
SHARED: dict[str, Any] = {
    "model": {"n_layer": 4, "n_embd": 128, "n_head": 4, "n_positions": 96},
    "steps": 6000,
    "batch_size": 32,
    "lr": 3e-4,
    "warmup_steps": 100,
    "max_length": 96,
    "log_every": 25,
    "checkpoint_every": 500,
    "seed": 0,
}


@dataclasses.dataclass(frozen=True)
class Decoding:
    """How every trained agent picks its letters in one table of the document (all agents alike)."""

    key: str
    title: str
    greedy: bool
    #: the sampling temperature (ignored when ``greedy``).
    temperature: float = 1.0


#: the decodings the agents are evaluated with, each a table of its own. ``greedy`` is the ILQL authors'
#: protocol for ILQL (config/wordle/eval_policy.yaml: beam search of width 1 on the perturbed logits);
#: their BC evaluator samples at temperature 1. Both are applied to every agent here, so that each table
#: compares the algorithms under one protocol.
DECODINGS: dict[str, Decoding] = {
    "sample": Decoding("sample", "sampling at temperature 1", greedy=False),
    "greedy": Decoding("greedy", "greedy (arg-max letter by letter, the ILQL authors' beam of width 1)", greedy=True),
    **{f"t{t:g}": Decoding(f"t{t:g}", f"sampling at temperature {t:g}", greedy=False, temperature=t)
       for t in (0.3, 0.5, 0.7)},
}


def add_decodings_argument(parser: argparse.ArgumentParser, help: str, nargs: int | str = "+") -> None:
    """Adds ``--decodings`` (keys of ``DECODINGS``; default None, the page's own choice) to a results page's
    parser: ``nargs`` decodings, ``help`` saying how the page plays them and its default."""
    parser.add_argument("--decodings", nargs=nargs, default=None, choices=list(DECODINGS), help=help)


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


def experiment_config(experiment: Experiment, dataset: str, out: Path, steps: int | None = None,
                      shared: dict[str, Any] | None = None):
    """The full config dataclass of ``experiment`` on ``dataset`` writing under ``out``: ``shared`` (default
    ``SHARED``), then the experiment's overrides, then ``steps`` when given."""
    from trainers.algorithms.registry import algorithm_by_name
    from trainers.core.config import config_from_dict

    values = {**(SHARED if shared is None else shared), **experiment.overrides, "dataset": dataset,
              "out": str(out / slug(experiment.name))}
    if steps is not None:
        values["steps"] = steps
    return config_from_dict(algorithm_by_name(experiment.algorithm).config_class, values)


def count_parameters(config) -> int:
    from rlds_lang.tokenizers import make_tokenizer
    from trainers.algorithms.registry import algorithm_by_name

    module = algorithm_by_name("bc").model_class(config, make_tokenizer(config.tokenizer))
    return sum(p.numel() for p in module.lm.parameters())


#: per run folder begun before checkpoints carried their training time (``TrainResult.total_seconds``):
#: wall-clock seconds of the calls that finished training it, and the step it reached.
TRAIN_SECONDS = "train_seconds.json"


def training_minutes(result: Any) -> float:
    """The minutes a run took to train, over every call that advanced it: what its checkpoint carries
    (``TrainResult.total_seconds``), or, for a run begun before checkpoints carried it, ``add_training_seconds``
    of this call's loop (``TrainResult.seconds``), which misses the calls stopped before the end."""
    if result.total_seconds is not None:
        return result.total_seconds / 60
    return add_training_seconds(Path(result.out), result.seconds, result.steps) / 60


def add_training_seconds(run: Path, seconds: float, step: int) -> float:
    """Adds ``seconds`` to the training time recorded in ``run`` if this call advanced the run past the step
    recorded there (to ``step``); returns the total. Reloading a finished run adds nothing."""
    path = run / TRAIN_SECONDS
    saved = json.loads(path.read_text()) if path.exists() else {"seconds": 0.0, "step": 0}
    if step <= saved.get("step", 0):
        return saved["seconds"]
    total = saved["seconds"] + seconds
    path.write_text(json.dumps({"seconds": total, "step": step}) + "\n")
    return total


def evaluate_run(experiment: Experiment, run: Path, steps: int, eval_config, decoding: Decoding, fresh: bool,
                  beta: float | None = None, checkpoint: Path | None = None, target_return: float | None = None):
    """``experiment``'s trained checkpoint in ``run`` played with ``decoding`` (reused from its JSON unless
    ``fresh``; keyed by games, seed, trained step and decoding, so a longer or differently decoded rerun is
    evaluated anew; sampled results keep their earlier file name). ``beta`` replaces the experiment's own
    (the β sweep): the result is named ``"<name> β=<beta>"`` and cached under a name with the β. ``checkpoint``
    plays another checkpoint folder of the run than its latest (a kept one, ``steps`` its step). ``target_return``:
    the return a return-conditioned agent (``dt``) plays for, named ``"<name> R=<target>"`` and cached apart."""
    from trainers.algorithms.registry import load_policy
    from trainers.evaluation.wordle import evaluate, load_results, save_results

    suffix = ("" if decoding.key == "sample" else f"-{decoding.key}") + ("" if beta is None else f"-beta{beta:g}")
    suffix += "" if target_return is None else f"-target{target_return:g}"
    cached = run / f"eval-{eval_config.games}-{eval_config.seed}-step{steps}{suffix}.json"
    if cached.exists() and not fresh:
        return load_results(cached)[0]
    name = experiment.name if beta is None else f"{experiment.name} β={beta:g}"
    name = name if target_return is None else f"{name} R={target_return:g}"
    policy = load_policy(checkpoint or run / "checkpoint", allowed_actions=eval_config.guesses, name=name,
                         beta=experiment.beta if beta is None else beta, greedy=decoding.greedy,
                         temperature=decoding.temperature, target_return=target_return)
    result = evaluate(policy, eval_config, name=name)
    save_results([result], cached)
    return result


def saved_by_table(checkpoints: list[tuple[str, str]]) -> str:
    """A markdown table naming, for each ``(row, checkpoint)`` a page starts from or plays, the checkpoint (relative to
    the repository) and the ``rlds-lang`` command that saved it (``trainers.core.checkpoint.saved_by``): what a
    reader runs to produce it."""
    from trainers.core.checkpoint import saved_by
    from trainers.core.provenance import repository_path

    lines = ["| row | checkpoint | saved by |", "| --- | --- | --- |"]
    for name, checkpoint in checkpoints:
        command = saved_by(checkpoint)
        lines.append(f"| {name} | `{repository_path(checkpoint)}` | "
                     + (f"`{command}` |" if command else "not recorded (saved before checkpoints named their command) |"))
    return "\n".join(lines)


def differences_table(rows: list[tuple[str, Any, Any, str]], mine: str, theirs: str, why: str = "why") -> str:
    """Markdown table of ``differing_fields`` rows: setting, the value under ``mine``, under ``theirs``, and the
    reason under ``why`` (the column headers)."""
    lines = [f"| setting | {mine} | {theirs} | {why} |", "| --- | --- | --- | --- |"]
    return "\n".join(lines + [f"| `{name}` | {value} | {reference} | {reason} |"
                              for name, value, reference, reason in rows])


def differing_fields(config: Any, reference: Any, reasons: dict[str, str], skip: tuple[str, ...] = ("out",),
                     reasons_name: str = "the page's list of reasons") -> list[tuple[str, Any, Any, str]]:
    """``(field, config's value, reference's value, why)`` for every field of the dataclass ``config`` that differs
    from ``reference``'s, but those in ``skip``; a difference without a reason in ``reasons`` is an error naming the
    field, both values and ``reasons_name`` (a choice a page would not explain)."""
    rows = []
    for field in dataclasses.fields(config):
        mine, theirs = getattr(config, field.name), getattr(reference, field.name)
        if field.name in skip or mine == theirs:
            continue
        if field.name not in reasons:
            raise ValueError(f"{type(config).__name__}.{field.name}: {mine!r} against the reference's {theirs!r}, and "
                             f"{reasons_name} gives no reason for it")
        rows.append((field.name, mine, theirs, reasons[field.name]))
    return rows
