"""A run log draws ``training_curves.png`` when it closes, and skips it when ``RLDS_LANG_TRAINING_CURVES`` is 0."""

from __future__ import annotations

import pytest

from trainers.core.logs import RunLog
from trainers.core.plots import CURVES_ENV, curves_wanted


def close_a_run(out) -> None:
    """Two logged steps of a run writing to ``out``, then ``close``."""
    run = RunLog(out, "bc", total=2, progress=False)
    for step in (1, 2):
        run.step_done(step, {"loss": 1.0 / step})
    run.close()


@pytest.mark.parametrize("value, wanted", [("1", True), ("0", False), (" 0 ", False), ("yes", True)])
def test_the_variable_turns_the_curves_off_only_when_it_is_0(value, wanted, monkeypatch):
    monkeypatch.setenv(CURVES_ENV, value)
    assert curves_wanted() is wanted


def test_curves_are_drawn_by_default_and_skipped_when_turned_off(tmp_path, monkeypatch):
    monkeypatch.delenv(CURVES_ENV, raising=False)
    assert curves_wanted()
    close_a_run(tmp_path / "drawn")
    assert (tmp_path / "drawn" / "training_curves.png").stat().st_size > 1000
    monkeypatch.setenv(CURVES_ENV, "0")
    close_a_run(tmp_path / "skipped")
    assert (tmp_path / "skipped" / "metrics.jsonl").is_file()
    assert not (tmp_path / "skipped" / "training_curves.png").exists()
