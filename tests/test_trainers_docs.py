"""Every docstring example of the trainers package runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["trainers.core.config", "trainers.core.model", "trainers.algorithms.ilql.losses", "trainers.core.decoding",
           "trainers.core.policy", "trainers.evaluation.wordle", "trainers.core.heads", "trainers.algorithms.ilql.ilql",
           "trainers.algorithms.catalog", "trainers.algorithms.chai.model", "trainers.experiments.section5_ranking",
           "trainers.experiments.baselines.document", "trainers.tasks.visdial_caches"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0
