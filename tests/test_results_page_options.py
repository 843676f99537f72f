"""The options several ``rlds-lang results`` pages take are declared once, by the experiment they belong to, and
every page that takes one parses it alike (same spelling, type and default) with its own rows named in the help."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from trainers.cli.main import build_parser
from trainers.cli.results import add_results_group

REPO = Path(__file__).resolve().parents[1]
#: option -> (the pages that take it, its default once parsed, a value typed after it (None: a flag) and its parse)
SHARED = {
    "--build-workers": (("lmrl-gym", "baselines"), 1, ("3", 3)),
    "--beta-grid": (("lmrl-gym", "baselines"), "1,2,4,8,16,32,64,128", ("1,4", "1,4")),
    "--beta-games": (("lmrl-gym", "baselines"), 500, ("7", 7)),
    "--section5-pairs": (("section5", "baselines"), 1000, ("9", 9)),
    "--decodings": (("wordle", "lmrl-gym", "baselines"), None, ("t0.5", ["t0.5"])),
    "--fresh": (("wordle", "lmrl-gym", "baselines"), False, (None, True)),
}


def page_parser(page: str) -> argparse.ArgumentParser:
    """The parser of ``rlds-lang results PAGE``, as ``trainers.cli.results`` adds it."""
    pages = argparse.ArgumentParser().add_subparsers()
    add_results_group(pages)
    return pages.choices["results"]._subparsers._group_actions[0].choices[page]


def option_help(page: str, option: str) -> str:
    """The help line of ``option`` on ``page``."""
    return next(a.help for a in page_parser(page)._actions if option in a.option_strings)


@pytest.mark.parametrize("option", sorted(SHARED))
def test_each_shared_option_parses_alike_on_every_page_that_takes_it(option):
    pages, default, (typed, parsed) = SHARED[option]
    dest = option[2:].replace("-", "_")
    for page in pages:
        args = build_parser().parse_args(["results", page])
        assert getattr(args, dest) == default, (page, option)
        args = build_parser().parse_args(["results", page, option, *([] if typed is None else [typed])])
        assert getattr(args, dest) == parsed, (page, option)


@pytest.mark.parametrize("option", sorted(SHARED))
def test_each_shared_option_is_declared_in_one_place(option):
    """Among the results pages' modules (the demo has its own --beta-games, sized for its few games)."""
    modules = [REPO / "trainers" / "cli" / "results.py", *sorted((REPO / "trainers" / "experiments").rglob("*.py"))]
    declared = [f"{path.relative_to(REPO)}:{text[:m.start()].count(chr(10)) + 1}"
                for path in modules
                for text in [path.read_text()]
                for m in re.finditer(r"add_argument\(\s*\"" + re.escape(option) + "\"", text)]
    assert len(declared) == 1, f"{option} is declared at {declared}"


def test_the_beta_choice_help_names_each_pages_rows():
    assert option_help("lmrl-gym", "--beta-grid").startswith("the β values MC returns and ILQL play on held-out games")
    baselines = option_help("baselines", "--beta-grid")
    assert baselines.startswith("the β values the token-level value rows (ILQL, CQL, ψ)")
    assert option_help("baselines", "--beta-games") == option_help("lmrl-gym", "--beta-games")


def test_each_page_keeps_its_own_help_for_a_shared_option():
    assert option_help("wordle", "--games").endswith("(the document uses 2,000; >= 500 for any claim)")
    assert option_help("lmrl-gym", "--games") == "evaluation games per agent"
    assert option_help("baselines", "--decodings").startswith("the one sampling decoding")
    with pytest.raises(SystemExit):  # the Section-5 page plays no games: it ranks values
        build_parser().parse_args(["results", "section5", "--games", "4"])
    with pytest.raises(SystemExit):  # the baselines page plays one decoding
        build_parser().parse_args(["results", "baselines", "--decodings", "sample", "t0.5"])
    assert build_parser().parse_args(["results", "lmrl-gym", "--decodings", "sample", "t0.5"]).decodings == [
        "sample", "t0.5"]
