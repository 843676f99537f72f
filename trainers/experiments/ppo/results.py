"""Result 1 of ``docs/ppo.md``: online PPO on Wordle from a BC checkpoint, evaluated against its BC start on the
same seeded games (paired standard errors), beside LMRL-Gym's online-PPO row; rerun with ``rlds-lang results ppo``.

The committed PPO settings are ``PPO_OVERRIDES`` on top of ``trainers.algorithms.ppo.config.PPOConfig`` (environment rewards,
the recipe's details). Training resumes from its checkpoint, so an interrupted reproduction continues
where it stopped. Both agents are played as PPO trained them: sampling at ``PPOConfig.temperature`` from
the guess-list-constrained policy. The verdict line is computed from the evaluation, never typed.

Result 2 (RLHF on Wordle: synthetic preferences -> reward model -> PPO against it) is ``trainers.experiments.ppo.rlhf``;
its runs live beside result 1's under ``--runs`` (``reward/``, ``rlhf/``) and resume the same way. Result 3
(RLHF on a sentiment-like text-continuation task) is ``trainers.experiments.ppo.sentiment`` (runs under ``--runs``/
``sentiment``); ``--section 3`` reruns only it and replaces section 3 of an existing ``--out``, leaving
sections 1 and 2 as they are (their evaluations are not repeated).

Example::

    rlds-lang results ppo --bc runs/results/official/bc/checkpoint          # full: docs/ppo.md
    rlds-lang results ppo --bc runs/bc/checkpoint --updates 1 --games 20 --out runs/ppo.md   # smoke run
    rlds-lang results ppo --section 3                                       # only section 3 of docs/ppo.md
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

from trainers.core.provenance import command_line, generated_by, repository_path
from trainers.experiments.common import saved_by_table
from trainers.evaluation.stats import in_standard_errors, paired_separation
from trainers.experiments.ppo.rlhf import (
    RLHFSizes,
    curve_rows,
    plot_curves,
    render_section,
    train_rlhf,
)
from trainers.experiments.ppo.sentiment import SentimentSizes

#: the heading that starts section 3 (``--section 3`` replaces the document from it on).
SECTION_3 = "## 3. "

#: LMRL-Gym's Wordle rows (Abdulhai et al. 2023; ../shared/REFERENCE_TASKS.md): raw return, normalised score.
LMRL_GYM = {"BC": (-2.81, 79.9), "online PPO": (-2.63, 84.2)}

#: the committed PPO run on top of ``PPOConfig``'s recipe defaults (scaled for CPU: 16 games per update).
PPO_OVERRIDES: dict[str, Any] = {"reward": "env", "updates": 300, "episodes": 16, "lr": 1e-5, "checkpoint_every": 10}


def verdict(ppo: Any, bc: Any) -> str:
    """Whether PPO beats its BC start by more than two standard errors of the paired difference."""
    diff, se, side = paired_separation(ppo, bc)
    ratio = abs(in_standard_errors(diff, se))
    said = {1: "PPO beats its BC start by more than two paired standard errors.",
            -1: "PPO is worse than its BC start by more than two paired standard errors.",
            0: "PPO and its BC start are not separated by two paired standard errors."}[side]
    return f"- PPO − BC = {diff:+.3f} ± {se:.3f} ({ratio:.1f} SE) over {ppo.games} games: {said}"


def run(args: argparse.Namespace) -> Path:
    """Trains (or resumes) the committed PPO run from ``args.bc``, evaluates both agents, writes ``args.out``;
    with ``args.section == "3"`` only section 3 (``write_section_3``)."""
    if args.section == "3":
        return write_section_3(args)
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import train_ppo
    from trainers.algorithms.registry import load_policy
    from trainers.evaluation.wordle import EvalConfig, evaluate

    bc_checkpoint = Path(args.bc)
    if not (bc_checkpoint / "config.json").is_file():
        raise SystemExit(f"--bc {bc_checkpoint}: not a checkpoint folder (train one with `rlds-lang train bc` or "
                         f"`rlds-lang results wordle`)")
    overrides = dict(PPO_OVERRIDES, **({"updates": args.updates} if args.updates is not None else {}))
    config = PPOConfig(init=str(bc_checkpoint), out=str(Path(args.runs) / "ppo"), **overrides)
    result = train_ppo(config, progress=args.progress)
    sizes = RLHFSizes(**{f.name: getattr(args, f"rlhf_{f.name}") for f in dataclasses.fields(RLHFSizes)
                         if getattr(args, f"rlhf_{f.name}", None) is not None})
    reward, rlhf_result = train_rlhf(bc_checkpoint, Path(args.runs), sizes, args.progress)
    rlhf_out = Path(args.runs) / "rlhf"
    eval_config = EvalConfig(games=args.games, seed=args.eval_seed)
    agents = (("bc", bc_checkpoint), ("ppo", Path(config.out) / "checkpoint"), ("rlhf", rlhf_out / "checkpoint"))
    evaluated = {name: evaluate(load_policy(path, allowed_actions=eval_config.guesses, name=name,
                                            temperature=config.temperature), eval_config, name=name,
                                progress=args.progress)
                 for name, path in agents}
    text = render([evaluated["bc"], evaluated["ppo"]], config, result, eval_config, args)
    rows = curve_rows(rlhf_out / "metrics.jsonl")
    out = Path(args.out)
    plot = plot_curves(rows, out.parent / "ppo_rlhf.png")
    rlhf_config = json.loads((rlhf_out / "config.json").read_text())["config"]
    text += "\n" + render_section(evaluated, reward, rlhf_result, rows, argparse.Namespace(**rlhf_config), eval_config,
                                  plot.name)
    text += "\n" + sentiment_section(args)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out}")
    return out


def sentiment_section(args: argparse.Namespace) -> str:
    """Section 3's markdown (``trainers.experiments.ppo.sentiment``; its sizes from the ``--sentiment-*`` options)."""
    from trainers.experiments.ppo.sentiment import write_section

    sizes = SentimentSizes(**{f.name: getattr(args, f"sentiment_{f.name}") for f in dataclasses.fields(SentimentSizes)
                              if getattr(args, f"sentiment_{f.name}", None) is not None})
    return write_section(Path(args.runs), Path(args.out), sizes, args.progress, section_3_command(args))


def section_3_command(args: argparse.Namespace) -> str:
    """The command that regenerates section 3 alone as this run did: ``--section 3`` with the run's ``--runs``,
    ``--out`` and every ``--sentiment-*`` size it was given (paths relative to the repository)."""
    sizes = [(f"--sentiment-{f.name.replace('_', '-')}", getattr(args, f"sentiment_{f.name}", None))
             for f in dataclasses.fields(SentimentSizes)]
    return command_line(None, "rlds-lang results ppo --section 3", [("--runs", args.runs), ("--out", args.out), *sizes])


def write_section_3(args: argparse.Namespace) -> Path:
    """Replaces section 3 of ``args.out`` (from its ``SECTION_3`` heading on; appended when it has none)."""
    out = Path(args.out)
    if not out.is_file():
        raise SystemExit(f"--section 3: {out} does not exist; run `rlds-lang results ppo` once without --section")
    text = out.read_text()
    start = text.find("\n" + SECTION_3)
    head = (text[:start] if start >= 0 else text).rstrip("\n") + "\n"
    out.write_text(head + "\n" + sentiment_section(args))
    print(f"wrote section 3 of {out}")
    return out


def render(results: list, config: Any, result: Any, eval_config: Any, args: argparse.Namespace) -> str:
    """The markdown document: the table, the computed verdict, LMRL-Gym's rows, the settings."""
    from trainers.core.config import config_to_dict
    from trainers.evaluation.wordle import results_table

    by_name = {r.name: r for r in results}
    reference = "\n".join(f"| {name} (LMRL-Gym, GPT-2 small) | {raw:+.2f} | {norm} |"
                          for name, (raw, norm) in LMRL_GYM.items())
    settings = {k: repository_path(v) if k == "init" else v for k, v in config_to_dict(config).items() if k != "out"}
    last = result.final_metrics or (curve_rows(Path(config.out) / "metrics.jsonl") or [{}])[-1]  # resumed when done
    final = ", ".join(f"{k} {v:.4g}" for k, v in sorted(last.items()))
    rates = ((result.rollout_tokens_per_second, result.update_tokens_per_second) if result.final_metrics else
             (last.get("rollout_tokens_per_second", 0.0), last.get("update_tokens_per_second", 0.0)))
    return f"""# PPO on Wordle

{generated_by(command_line(args, 'rlds-lang results ppo', (('--bc', args.bc), ('--games', args.games))))} on
{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; do not edit by hand.

The BC start, where both PPO and RLHF begin:

{saved_by_table([("bc", args.bc)])}

## 1. Online PPO from the BC checkpoint (environment rewards)

{eval_config.games} seeded games per agent (rule {eval_config.rule}, seed {eval_config.seed}), both sampled at
temperature {config.temperature} from the guess-list-constrained policy; Δ is the paired difference to `bc`.

{results_table(results, baseline="bc")}

Verdict (computed):
{verdict(by_name["ppo"], by_name["bc"])}

Beside LMRL-Gym (their model, data and 4,096 games; raw return, normalised score):

| method | raw return | normalised |
| --- | --- | --- |
{reference}

Training: {result.updates} PPO updates, {result.time_text()}; rollouts
{rates[0]:,.0f} tokens/s, updates {rates[1]:,.0f} tokens/s.
Last update: {final}.

Settings (`trainers.algorithms.ppo.config.PPOConfig`):

```
{settings}
```
"""


__all__ = ["LMRL_GYM", "PPO_OVERRIDES", "SECTION_3", "verdict", "run", "section_3_command", "sentiment_section",
           "write_section_3", "render"]
