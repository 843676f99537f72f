"""Every docstring example of the trainers package runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["trainers.config", "trainers.model", "trainers.ilql_losses", "trainers.agents", "trainers.eval"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0
