"""Visual Dialogue commands: ``rlds-lang visdial-tokenizer`` and ``rlds-lang eval --task visdial``.

``visdial-tokenizer`` trains a byte-level BPE (``rlds_lang.subword.SubwordTokenizer``) on the captions,
questions (with ``?``) and answers of a manual folder's ``train`` split, plus ``<stop>``; training then
uses it with ``--tokenizer file:PATH``.

``eval --task visdial`` plays each ``--agent`` checkpoint (or, with ``--agent NAME=server``, the server's
question bot, a supervised-learning baseline) as the questioner against the environment over
seeded episodes (episode i: seed ``--seed + i``, which draws the image of the ``--visdial-split`` split;
the paper: val, env_stops, hard y/n with -2, 1,024 episodes, seed 0, questions up to 40 tokens) and prints
mean return ± standard error and the number of answers that are exactly "yes" or "no", as the paper does.
Answers and rewards come from ``--visdial-server URL`` (the authors' server or ours), else from our
server started in this process on 127.0.0.1 over ``--data`` with the guesser ``--guesser``
(``rlds-lang visdial-guesser``), which stands in for the paper's pretrained bots.

Example::

    rlds-lang visdial-tokenizer --manual-dir DIR --out runs/visdial-tokenizer.json
    rlds-lang train bc --dataset /tmp/visdial-data/visdial/yn/1.0.0 --tokenizer file:runs/visdial-tokenizer.json
    rlds-lang eval --task visdial --data DIR --guesser runs/guesser --agent bc=runs/train/checkpoint \\
        --agent qbot=server --episodes 64
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any, Iterator

import numpy as np

from rlds_lang.env import run_episode
from rlds_lang.subword import SubwordTokenizer
from rlds_lang.visdial.backend import build_local_backend
from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore, read_split
from rlds_lang.visdial.env import BotQuestionPolicy, VisDialEnv, as_question
from rlds_lang.visdial.http import HttpBackend
from rlds_lang.visdial.rewards import MODES, STOP, YN_KINDS, RewardConfig
from trainers.reddit_eval import mean_and_se, write_results

#: ``--agent NAME=server`` plays the server's question bot (``/fetch_q_bot_response``) as a baseline.
SERVER_AGENT = "server"


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
                                  published_pool=args.published_pool, unk_below=args.unk_below)
    with BackendServer(backend) as server:
        yield server.url


def evaluate_questioner(policy: Any, env: VisDialEnv, episodes: int, seed: int) -> tuple[list[float], int, list[list[float]]]:
    """Returns of ``episodes`` episodes (episode i seeded ``seed + i``), the count of yes/no answers, and each
    episode's rewards round by round."""
    returns, yes_no, rounds = [], 0, []
    for i in range(episodes):
        episode = run_episode(env, policy, seed=seed + i)
        returns.append(episode.total_reward)
        rounds.append([float(r) for r in episode.rewards])
        yes_no += env.yes_no_answers
    return returns, yes_no, rounds


def cumulative_by_round(rounds: list[list[float]], max_rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean ± SE over episodes of the return accumulated after each round 1..``max_rounds`` (an episode that
    stopped earlier keeps its final return)."""
    totals = np.array([np.cumsum((r + [0.0] * max_rounds)[:max_rounds]) for r in rounds]) if rounds else \
        np.zeros((0, max_rounds))
    n = max(len(totals), 1)
    se = totals.std(axis=0, ddof=1) / np.sqrt(n) if len(totals) > 1 else np.zeros(max_rounds)
    return totals.mean(axis=0) if len(totals) else np.zeros(max_rounds), se


def plot_questioners(curves: dict[str, list[list[float]]], results: dict[str, dict[str, float]],
                     path: str | os.PathLike) -> str:
    """A PNG: return accumulated round by round per agent (± 1 SE), and the yes/no answers each agent drew."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    longest = max((len(r) for rounds in curves.values() for r in rounds), default=1)
    fig, (ax_rounds, ax_yn) = plt.subplots(1, 2, figsize=(10, 4))
    for name, rounds in curves.items():
        mean, se = cumulative_by_round(rounds, longest)
        x = np.arange(1, longest + 1)
        ax_rounds.plot(x, mean, marker="o", label=name)
        ax_rounds.fill_between(x, mean - se, mean + se, alpha=0.2)
    ax_rounds.set_xlabel("round")
    ax_rounds.set_ylabel("return so far (± 1 SE)")
    ax_rounds.grid(alpha=0.3)
    ax_rounds.legend()
    names = list(results)
    ax_yn.bar(range(len(names)), [results[n]["yes_no_answers"] for n in names], color="tab:red")
    ax_yn.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax_yn.set_title("yes/no answers drawn")
    ax_yn.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Visual Dialogue questioners ({', '.join(sorted({str(int(r['episodes'])) for r in results.values()}))} "
                 f"episodes each)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return os.fspath(path)


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
    curves: dict[str, list[list[float]]] = {}
    with server_url(args) as url:
        backend = HttpBackend(url)
        env = VisDialEnv(dialogues, backend, config, features=features, seed=args.seed)
        print(f"{args.episodes} episodes on the {args.visdial_split} split of {args.data}, mode {config.mode}, "
              f"yes/no {config.yn_kind} ({config.yn_reward:g}), seed {args.seed}, server {url}")
        for name, path, options in args.agent:
            if path == SERVER_AGENT:
                policy = BotQuestionPolicy(backend.question)
            else:
                    policy = load_policy(path, name=name, beta=float(options["beta"]) if "beta" in options else None,
                                     greedy=parse_bool(options.get("greedy", "false")),
                                     temperature=float(options.get("temperature", 1.0)), seed=args.seed,
                                     max_action_tokens=args.question_tokens)
            returns, yes_no, curves[name] = evaluate_questioner(policy, env, args.episodes, args.seed)
            mean, se = mean_and_se(returns)
            results[name] = {"mean": mean, "se": se, "episodes": len(returns), "yes_no_answers": yes_no}
            print(f"{name:16s} return {mean:+.3f} ± {se:.3f}   yes/no answers {yes_no}")
        backend.close()
    features.close()
    write_results(args.out, results)
    if args.out:
        print(f"wrote {args.out} and {plot_questioners(curves, results, os.path.splitext(args.out)[0] + '.png')}")
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
    group.add_argument("--unk-below", type=int, default=0,
                       help="visdial: our server answers in the vocabulary of words seen this often (the published "
                            "bots: 5; rarer words become UNK); 0 keeps the dataset answers, lower-cased")
    group.add_argument("--question-tokens", type=int, default=40, help="visdial: longest question in tokens")


def add_parser(sub) -> None:
    """Registers ``visdial-tokenizer`` on the ``rlds-lang`` subcommands."""
    p = sub.add_parser("visdial-tokenizer", help="train a subword (BPE) tokenizer on a VisDial folder's train split")
    p.add_argument("--manual-dir", required=True, help="folder with visdial_<version>_train.json")
    p.add_argument("--out", required=True, help="JSON file to write (use with --tokenizer file:OUT)")
    p.add_argument("--version", default="0.5")
    p.add_argument("--vocab-size", type=int, default=4000)
    p.set_defaults(func=cmd_visdial_tokenizer)


__all__ = ["add_eval_arguments", "add_parser", "cmd_visdial_eval", "cmd_visdial_tokenizer", "cumulative_by_round",
           "evaluate_questioner", "plot_questioners"]
