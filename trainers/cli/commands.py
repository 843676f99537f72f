"""The sub-commands of ``rlds-lang`` as its help lists them, and a sub-command registry that builds a command's
options only when that command is named (``LazySubParsers``): ``rlds-lang --help`` reads this table alone, and
``rlds-lang train ilql --help`` builds the ``train`` options alone, so no help imports what only another command, or
only running the command, needs (PyTorch, TensorFlow, the servers).

Example::

    import argparse
    from trainers.cli.commands import LazySubParsers

    parser = argparse.ArgumentParser(prog="tool")
    sub = parser.add_subparsers(dest="command", action=LazySubParsers)
    sub.add_lazy("hello", "say hello", lambda sub: sub.add_parser("hello").add_argument("--name"))
    args = parser.parse_args(["hello", "--name", "you"])  # the parser of "hello" is built here
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Iterator

#: each top-level command's line in ``rlds-lang --help`` (``train`` and ``results``: ``train_help``,
#: ``results_help``; the task groups': ``trainers.cli.main.TASK_GROUPS``).
COMMAND_HELP = {
    "demo": "record -> tfds build -> tfds.load -> train BC and ILQL -> evaluate, on a 32-word Wordle whose games are "
            "mostly random play (about 100 s of CPU time)",
    "record": "record Wordle games of a policy to EnvLogger logs",
    "build": "build a dataset by name (e.g. wordle_synthetic), or a folder of your own logs with --name, into a TFDS "
             "data folder",
    "datasets": "the catalog of datasets: list them, show one's card, write the docs pages",
    "stats": "statistics table (and histograms PNG) of a built dataset",
    "eval": "play trained agents on the same seeded episodes of a task (--task wordle, reddit or visdial); table with "
            "paired differences, JSON, plot",
    "malt": "expert iteration then MALT (response trees + DPO) rounds from a BC checkpoint",
    "preferences": "preference collection and reward learning workflows",
    "top-advantage": "the actions of a dataset with the largest and smallest advantage under a value-based agent "
                     "(ilql, mc, cql, psi)",
    "web": "the browser tool (creator_web): play tasks, judge clip pairs, review episodes",
}

#: the pages of ``rlds-lang results`` (``trainers.cli.results``): name -> its one-line help (what the page shows, and
#: where it is).
PAGES = {
    "wordle": "docs/results.md: BC, %BC and ILQL on wordle_synthetic branch datasets, official and paper rules",
    "lmrl-gym": "docs/lmrl_gym.md: BC, %BC, MC returns, ILQL and online %BC in LMRL-Gym's Wordle setting",
    "section5": "docs/section5.md: the ILQL paper's ranking test on its adversarial Wordle data",
    "ppo": "docs/ppo.md: online PPO on Wordle from a BC checkpoint, RLHF and sentiment pipelines",
    "malt": "docs/malt.md: BC, expert iteration and MALT on Wordle",
    "malt-roles": "docs/malt.md's two-role Wordle section: BC, expert iteration and per-agent MALT",
    "baselines": "docs/baselines.md: BC, %BC, ILQL, CQL, DT, ψ, utterance ILQL and CHAI on LMRL-Gym's Wordle and "
                 "the ILQL paper's Section-5 data",
    "preferences": "reward learning from preferences: Wordle ranking, label curves (docs/preference_curves.md), "
                   "moving dot (docs/preference_dot.md)",
    "gpu": "docs/gpu.md: throughput, CPU/GPU agreement and rows trained on a GPU, from the benchmarks' figures "
           "(docs/gpu.json); says so while none were measured on a GPU",
}

#: the trainers ``rlds-lang train`` has besides the catalog's (each with a parser of its own).
OTHER_TRAINERS = ("online_pbc", "reward")


def train_help() -> str:
    """``train``'s line: the algorithms of ``trainers.algorithms.catalog.CATALOG``, then ``OTHER_TRAINERS``."""
    from trainers.algorithms.catalog import CATALOG

    names = ", ".join([*CATALOG, *OTHER_TRAINERS])
    return f"train an algorithm ({names}) from an RLDS dataset or its environment"


def results_help() -> str:
    """``results``' line: its pages."""
    return "regenerate a results page of docs/ (" + ", ".join(PAGES) + ")"


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command path of ``parser`` (``()``, ``("train",)``, ``("train", "bc")``, ...), each command's before its
    sub-commands'; it builds every command's parser (what a check or a benchmark of all the helps wants)."""
    yield prefix
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name in list(action.choices):
                yield from command_paths(action.choices[name], (*prefix, name))


class UsageError(Exception):
    """A command line that cannot run as given (found after parsing): ``rlds-lang`` prints it as one line naming the
    command and exits with status 2, as ``argparse`` does for the errors it finds."""


class LazyParsers(dict):
    """A sub-command name -> parser map whose parsers are built the first time they are looked up (a name added
    with ``LazySubParsers.add_lazy`` maps to None until then)."""

    def __init__(self, build: Callable[[str], argparse.ArgumentParser]):
        super().__init__()
        self.build = build

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        """The parser of ``name``, built now if it was not yet."""
        parser = super().__getitem__(name)
        if parser is None:
            parser = self.build(name)
        return parser

    def get(self, name: str, default: Any = None) -> Any:
        """``dict.get`` through ``__getitem__`` (the parser, built)."""
        return self[name] if name in self else default

    def values(self) -> list[argparse.ArgumentParser]:  # type: ignore[override]
        """Every parser, built."""
        return [self[name] for name in self]

    def items(self) -> list[tuple[str, argparse.ArgumentParser]]:  # type: ignore[override]
        """Every ``(name, parser)``, built."""
        return [(name, self[name]) for name in self]


class LazySubParsers(argparse._SubParsersAction):
    """``argparse``'s sub-command action with commands that are listed at once (name and help line) and built when
    named: ``add_lazy(name, help, add)`` keeps ``add``, a function that adds the command to a sub-command registry
    as ``sub.add_parser(name, ...)`` does, and calls it the first time the command's parser is looked up."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = LazyParsers(self._build)
        self._adders: dict[str, Callable[[Any], Any]] = {}

    def add_lazy(self, name: str, help: str, add: Callable[[Any], Any]) -> None:
        """Lists ``name`` with ``help`` now; ``add(self)`` builds its parser when it is first needed."""
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help.replace("%", "%%")))
        self._adders[name] = add
        dict.__setitem__(self._name_parser_map, name, None)

    def _build(self, name: str) -> argparse.ArgumentParser:
        parsers = self._name_parser_map
        order, listed = list(parsers), list(self._choices_actions)
        dict.__delitem__(parsers, name)  # add_parser refuses a name it finds taken
        self._adders.pop(name)(self)
        self._choices_actions[:] = listed  # the command is listed already: drop the line add_parser appended
        if dict.get(parsers, name) is None:
            raise RuntimeError(f"the function that adds {name!r} added no parser of that name")
        built = {key: dict.__getitem__(parsers, key) for key in [*order, *parsers]}
        dict.clear(parsers)
        dict.update(parsers, built)  # the commands in the order they were listed
        return built[name]


__all__ = ["command_paths", "UsageError", "COMMAND_HELP", "PAGES", "OTHER_TRAINERS", "train_help", "results_help", "LazyParsers", "LazySubParsers"]
