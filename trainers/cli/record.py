"""``rlds-lang record``: records games of any Wordle policy (``rlds_lang.wordle.policies``) as RLDS episodes in
EnvLogger logs (``loggers.record``).

Example::

    rlds-lang record --policy random_mixture --policy-params '{"prob_smart": 0.5}' --episodes 200 --out runs/logs
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def cmd_record(args: argparse.Namespace) -> Path:
    """Records ``args.episodes`` games of a named Wordle policy into ``args.out`` (must be new)."""
    from loggers import record
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import make_policy
    from trainers.cli.commands import UsageError

    env = WordleEnv(rule=args.rule, mode=args.mode, seed=args.seed)
    try:
        policy = make_policy(args.policy, **args.policy_params)
    except (TypeError, ValueError) as error:  # parameters the policy does not take, or values it refuses
        raise UsageError(f"--policy {args.policy} --policy-params {json.dumps(args.policy_params)}: {error}") from None
    result = record(env, policy, args.episodes, args.out, seed=args.seed, run_name=args.run_name,
                    workers=args.workers)
    print(f"recorded {result.num_episodes} episodes, {result.num_steps} steps in {result.seconds:.1f} s "
          f"-> {result.data_dir}")
    return Path(result.data_dir)


def add_record_parser(sub: Any) -> None:
    """Adds ``rlds-lang record`` (any Wordle policy of ``rlds_lang.wordle.policies.POLICIES``)."""
    from rlds_lang.wordle.policies import POLICIES
    from trainers.cli.commands import COMMAND_HELP

    policies = "; ".join(f"{name}: {(POLICIES[name].__doc__ or '').strip().splitlines()[0].rstrip('.').replace('``', '')}"
                         for name in sorted(POLICIES))
    rec = sub.add_parser("record", help=COMMAND_HELP["record"],
                         description="Records games of a Wordle policy (rlds_lang.wordle.policies) as RLDS episodes "
                                     "in EnvLogger logs (loggers.record); build them with rlds-lang build LOGS --name "
                                     "NAME.")
    rec.add_argument("--policy", default="optimal", choices=sorted(POLICIES), metavar="POLICY",
                     help=f"the policy that plays (default: optimal). {policies}".replace("%", "%%"))
    rec.add_argument("--policy-params", default={}, type=json_object, metavar="JSON",
                     help="JSON parameters of the policy, e.g. '{\"prob_smart\": 0.5}' for random_mixture")
    rec.add_argument("--episodes", type=int, default=100, help="games to record (default: 100)")
    rec.add_argument("--out", required=True, help="a new folder for the logs")
    rec.add_argument("--rule", default="official", choices=["official", "ilql"],
                     help="the colouring rule (rlds_lang.wordle.game): official, the real game's (a guessed letter "
                          "is yellow only while the answer has an unmatched copy of it), or ilql, the ILQL paper's "
                          "code's (every non-green letter found in the answer is yellow) (default: official)")
    rec.add_argument("--mode", default="fixed", choices=["fixed", "adversarial_resample"],
                     help="the hidden word (rlds_lang.wordle.env): fixed, one answer per game, or "
                          "adversarial_resample, the ILQL paper's MDP (after every guess the answer is drawn again "
                          "among those still consistent with the feedback) (default: fixed)")
    rec.add_argument("--seed", type=int, default=0, help="seed of the games and of the policy (default: 0)")
    rec.add_argument("--run-name", default="run", help="the run's name recorded in the logs (default: run)")
    rec.add_argument("--workers", type=int, default=1, help="recording processes (default: 1: in this process)")
    rec.set_defaults(func=cmd_record)


def json_object(text: str) -> dict[str, Any]:
    """An argparse type: a JSON object (a policy's parameters)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object ({{...}}), got {text!r}")
    return value


__all__ = ["cmd_record", "add_record_parser", "json_object"]
