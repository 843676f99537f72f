"""Visual Dialogue commands: ``rlds-lang visdial-tokenizer`` and ``rlds-lang eval --task visdial``.

``visdial-tokenizer`` trains a byte-level BPE (``rlds_lang.subword.SubwordTokenizer``) on the captions,
questions (with ``?``) and answers of a manual folder's ``train`` split, plus ``<stop>``; training then
uses it with ``--tokenizer file:PATH``.

``eval --task visdial`` plays each ``--agent`` checkpoint as the questioner against the environment over
seeded episodes (episode i: seed ``--seed + i``, which draws the image of the ``--visdial-split`` split;
the paper: val, env_stops, hard y/n with -2, 1,024 episodes, seed 0, questions up to 40 tokens) and prints
mean return ± standard error and the number of answers that are exactly "yes" or "no", as the paper does.
Answers and rewards come from ``--visdial-server URL`` (the authors' server or ours), else from our
server started in this process on 127.0.0.1 over ``--data`` with the guesser ``--guesser``
(``rlds-lang visdial-guesser``), which stands in for the paper's pretrained bots.

Example::

    rlds-lang visdial-tokenizer --manual-dir DIR --out runs/visdial-tokenizer.json
    rlds-lang train bc --dataset /tmp/visdial-data/visdial/yn/1.0.0 --tokenizer file:runs/visdial-tokenizer.json
    rlds-lang eval --task visdial --data DIR --guesser runs/guesser --agent bc=runs/train/checkpoint --episodes 64
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any, Iterator

from rlds_lang.env import run_episode
from rlds_lang.subword import SubwordTokenizer
from rlds_lang.visdial.backend import build_local_backend
from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore, read_split
from rlds_lang.visdial.env import VisDialEnv, as_question
from rlds_lang.visdial.http import HttpBackend
from rlds_lang.visdial.rewards import MODES, STOP, YN_KINDS, RewardConfig
from trainers.reddit_eval import mean_and_se, write_results


def cmd_visdial_tokenizer(args: argparse.Namespace) -> SubwordTokenizer:
    """Trains the subword tokenizer on the train split's texts and saves it to ``args.out``."""
    dialogues = list(read_split(args.manual_dir, "train", args.version))
    if not dialogues:
        raise SystemExit(f"rlds-lang visdial-tokenizer: no train dialogues in {args.manual_dir}")
    texts = [STOP] + [t for d in dialogues for t in (d.caption, *map(as_question, d.questions), *d.answers)]
    tokenizer = SubwordTokenizer.train(texts, vocab_size=args.vocab_size, name=f"visdial-bpe-{args.vocab_size}")
    tokenizer.save(args.out)
    print(f"trained on {len(texts)} texts of {len(dialogues)} train dialogues: {tokenizer.vocab_size} ids -> {args.out}")
    return tokenizer


@contextlib.contextmanager
def server_url(args: argparse.Namespace) -> Iterator[str]:
    """``--visdial-server``, or the URL of our server started here over ``--data`` and ``--guesser``."""
    if args.visdial_server:
        yield args.visdial_server
        return
    if not args.guesser:
        raise SystemExit("eval --task visdial: give --visdial-server URL, or --guesser DIR (rlds-lang visdial-guesser) "
                         "to start our server")
    from rlds_lang.visdial.server import BackendServer
    from trainers.visdial_guesser import load_guesser

    backend = build_local_backend(args.data, load_guesser(args.guesser), args.visdial_version,
                                  published_pool=args.published_pool)
    with BackendServer(backend) as server:
        yield server.url


def evaluate_questioner(policy: Any, env: VisDialEnv, episodes: int, seed: int) -> tuple[list[float], int]:
    """Returns of ``episodes`` episodes (episode i seeded ``seed + i``) and the count of yes/no answers."""
    returns, yes_no = [], 0
    for i in range(episodes):
        returns.append(run_episode(env, policy, seed=seed + i).total_reward)
        yes_no += env.yes_no_answers
    return returns, yes_no


def cmd_visdial_eval(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """``eval --task visdial`` (see the module docstring)."""
    import torch

    from trainers.checkpoint import load_policy
    from trainers.config import parse_bool

    torch.set_num_threads(1)
    if not args.agent:
        raise SystemExit("eval --task visdial: give at least one --agent NAME=CHECKPOINT")
    if not args.data:
        raise SystemExit("eval --task visdial: give --data, the manual folder holding the dialogues and data_img.h5")
    dialogues = list(read_split(args.data, args.visdial_split, args.visdial_version))
    features = FeatureStore(os.path.join(args.data, FEATURES_FILE), args.visdial_split, expected=len(dialogues))
    config = RewardConfig(args.visdial_mode, yn_kind=args.yn_kind, yn_reward=args.yn_reward)
    results: dict[str, dict[str, float]] = {}
    with server_url(args) as url:
        backend = HttpBackend(url)
        env = VisDialEnv(dialogues, backend, config, features=features, seed=args.seed)
        print(f"{args.episodes} episodes on the {args.visdial_split} split of {args.data}, mode {config.mode}, "
              f"yes/no {config.yn_kind} ({config.yn_reward:g}), seed {args.seed}, server {url}")
        for name, path, options in args.agent:
            policy = load_policy(path, name=name, beta=float(options["beta"]) if "beta" in options else None,
                                 greedy=parse_bool(options.get("greedy", "false")),
                                 temperature=float(options.get("temperature", 1.0)), seed=args.seed,
                                 max_action_tokens=args.question_tokens)
            returns, yes_no = evaluate_questioner(policy, env, args.episodes, args.seed)
            mean, se = mean_and_se(returns)
            results[name] = {"mean": mean, "se": se, "episodes": len(returns), "yes_no_answers": yes_no}
            print(f"{name:16s} return {mean:+.3f} ± {se:.3f}   yes/no answers {yes_no}")
        backend.close()
    features.close()
    write_results(args.out, results)
    return results


def add_eval_arguments(ev: argparse.ArgumentParser) -> None:
    """The options ``eval --task visdial`` adds to the eval parser (``--data`` and ``--episodes`` are shared)."""
    group = ev.add_argument_group("--task visdial")
    group.add_argument("--guesser", help="visdial: guesser folder (rlds-lang visdial-guesser) for our server")
    group.add_argument("--visdial-server", help="visdial: URL of a server speaking the published protocol")
    group.add_argument("--visdial-split", default="val", help="visdial: split whose images are played (paper: val)")
    group.add_argument("--visdial-version", default="0.5", help="visdial: VisDial version of --data (0.5 or 1.0)")
    group.add_argument("--visdial-mode", default="env_stops", choices=MODES, help="visdial: episode mode")
    group.add_argument("--yn-kind", default="hard", choices=YN_KINDS, help="visdial: yes/no penalty kind (paper: hard)")
    group.add_argument("--yn-reward", type=float, default=-2.0, help="visdial: the yes/no penalty")
    group.add_argument("--published-pool", action="store_true",
                       help="visdial: our server ranks as the reference one (true image prepended to the val pool)")
    group.add_argument("--question-tokens", type=int, default=40, help="visdial: longest question in tokens")


def add_parser(sub) -> None:
    """Registers ``visdial-tokenizer`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("visdial-tokenizer", help="train a subword (BPE) tokenizer on a VisDial folder's train split")
    p.add_argument("--manual-dir", required=True, help="folder with visdial_<version>_train.json")
    p.add_argument("--out", required=True, help="JSON file to write (use with --tokenizer file:OUT)")
    p.add_argument("--version", default="0.5")
    p.add_argument("--vocab-size", type=int, default=4000)
    p.set_defaults(func=cmd_visdial_tokenizer)


__all__ = ["add_eval_arguments", "add_parser", "cmd_visdial_eval", "cmd_visdial_tokenizer", "evaluate_questioner"]
