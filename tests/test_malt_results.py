"""`rlds-lang malt-results --smoke` runs the whole pipeline of docs/malt.md on tiny settings: BC start, an EI
arm and a MALT arm, the same seeded games for every row, computed verdicts."""

import torch

from trainers.checkpoint import read_checkpoint_config
from trainers.cli import main
from trainers.expert_iteration import RoundManifest

torch.set_num_threads(1)


def test_malt_results_smoke(tmp_path):
    out = tmp_path / "malt.md"
    main(["malt-results", "--smoke", "--out", str(out), "--workdir", str(tmp_path / "work"), "--no-progress"])
    text = out.read_text()
    assert "Smoke run with tiny settings: not a result." in text
    for row in ("| bc | 8 |", "| ei | 8 |", "| malt_ei_start | 8 |", "| malt | 8 |"):
        assert row in text
    assert text.count("paired SE) ->") == 4  # every row against bc, and malt against its start
    assert "- `malt` vs `malt_ei_start`: Δ =" in text and "(the MALT rounds' own effect)" in text
    assert "## Rounds" in text and "environment steps" in text
    ei = RoundManifest.load(tmp_path / "work" / "ei" / "round_00")  # the EI arm: 4 games, the top half kept, BC
    assert ei.kind == "ei" and ei.episodes == 4 and ei.selected == 2
    assert read_checkpoint_config(ei.checkpoint)[0] == "bc"
    assert (tmp_path / "work" / "ei" / "round_00" / "samples").is_dir()


def test_rollout_steps_counts_the_actions_a_run_recorded(tmp_path):
    from loggers import read_episodes, record
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import OptimalPolicy
    from trainers.malt_results import rollout_steps

    (tmp_path / "run" / "checkpoint").mkdir(parents=True)
    assert rollout_steps(tmp_path / "run" / "checkpoint") is None  # no rollouts: not known
    for update in range(2):
        record(WordleEnv(), OptimalPolicy(), 3, tmp_path / "run" / "rollouts" / f"update-{update:05d}", seed=update,
               progress=False)
    actions = sum(len(e["steps"]) - 1 for e in read_episodes(tmp_path / "run" / "rollouts"))
    assert actions >= 6 and rollout_steps(tmp_path / "run" / "checkpoint") == actions
