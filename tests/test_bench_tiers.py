"""``bench/test_tiers.py`` runs a tier as documented and prints its wall and CPU time with a computed verdict."""

from __future__ import annotations

from bench import test_tiers as bench


def test_a_tier_is_timed_with_its_verdict_and_pytests_summary(capsys):
    assert bench.TIERS["everyday"][0][:4] == ["-n", "2", "--dist", "loadfile"] and "not slow" in bench.TIERS["everyday"][0]
    assert bench.main(["--tiers", "everyday", "--", "tests/test_tiers.py", "-k", "exists_once", "-n", "0"]) == 0  # no workers to start
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("everyday"))
    assert row.split()[3] == "300s" and " met; " in row and "1 passed" in row


def test_a_failing_tier_exits_1_and_has_no_verdict(capsys):
    assert bench.main(["--tiers", "everyday", "--", "tests/test_tiers.py", "-k", "no_such_test", "-n", "0"]) == 1
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("everyday"))
    assert "tests failed (pytest exit status 5)" in row and " met" not in row
