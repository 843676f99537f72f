"""Expert iteration and MALT rounds: the keep rule, the reuse (compatibility) rule, a MALT round on scripted
trees (pairs -> DPO checkpoint, earlier compatible trees reused), and `rlds-lang malt` end to end, resumed."""

import json

import numpy as np
import pytest
import torch

from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import RandomMixturePolicy
from tests.malt_fixtures import tiny_checkpoint
from trainers.algorithms.malt.expert_iteration import (
    RoundManifest,
    compatible,
    keep_mask,
    reusable_rounds,
)
from trainers.algorithms.malt.malt import (
    MALTConfig,
    dpo_round_steps,
    env_config,
    malt_round,
)
from trainers.cli.main import main
from trainers.core.checkpoint import read_checkpoint_config

torch.set_num_threads(1)


def test_defaults_are_the_reference_trainer_s():
    config = MALTConfig()
    assert config.branching == 2 and config.nll_coef == 0.0 and not config.reuse_rollouts
    assert config.pair_method == "positive_negative" and not config.strict_threshold and config.beta == 0.1
    spec = config.tree_spec("malt")
    assert spec.branching == 2 and not spec.strict_threshold and spec.threshold is None


def test_keep_mask_threshold_and_top_fraction():
    returns = np.array([-6.0, -2.0, -4.0, -2.0, -5.0])
    assert keep_mask(returns, min_return=-4.0).tolist() == [False, True, True, True, False]
    assert keep_mask(returns, top_fraction=0.4).tolist() == [False, True, False, True, False]
    assert keep_mask(returns, top_fraction=0.5).sum() == 3  # ceil(2.5)
    with pytest.raises(ValueError, match="exactly one"):
        keep_mask(returns, min_return=-4.0, top_fraction=0.5)


def _manifest(r, kind, env, spec):
    return RoundManifest(r, kind, env, spec, {"kept" if kind == "ei" else "trees": f"d{r}"}, [], "ckpt", 0, 0, 0.0, 1)


def test_compatibility_rule():
    env = env_config(WordleEnv())
    other_env = env_config(WordleEnv(rule="ilql"))
    config = MALTConfig()
    ei_spec = json.loads(json.dumps(config.tree_spec("ei").__dict__))
    malt_spec = json.loads(json.dumps(config.tree_spec("malt").__dict__))
    wider = {**malt_spec, "branching": 4}
    rounds = [_manifest(0, "ei", env, ei_spec), _manifest(1, "ei", other_env, ei_spec),
              _manifest(2, "malt", env, malt_spec), _manifest(3, "malt", env, wider), _manifest(4, "malt", other_env, malt_spec)]
    assert [m.round for m in reusable_rounds(rounds, "ei", env, ei_spec)] == [0]  # same env only, never trees
    assert [m.round for m in reusable_rounds(rounds, "malt", env, malt_spec)] == [2]  # never EI samples, same spec
    assert not compatible(rounds[0], "malt", env, ei_spec)  # EI data is not mixed into MALT pairs
    assert compatible(rounds[3], "malt", env, wider)


def test_malt_round_trains_dpo_and_reuses_compatible_trees(tmp_path):
    init = tiny_checkpoint(tmp_path / "init")
    config = MALTConfig(init=str(init), out=str(tmp_path / "m"), trees=2, branching=2, branch_depth=1, dpo_steps=2,
                        dpo_batch_size=2, pair_method="interval", reuse_rollouts=True)
    env, sampler = WordleEnv(), RandomMixturePolicy(prob_smart=1.0)
    first = malt_round(config, env, sampler, init, 0, tmp_path / "r0", [], progress=False)
    assert first.kind == "malt" and first.selected > 0 and first.env_steps > 0
    assert read_checkpoint_config(first.checkpoint)[0] == "dpo"
    second = malt_round(config, env, sampler, init, 1, tmp_path / "r1", [first], progress=False)
    assert second.train_data == [first.data["trees"], second.data["trees"]]
    assert second.selected > first.selected  # its own pairs plus round 0's
    config.reuse_rollouts = False
    alone = malt_round(config, env, sampler, init, 2, tmp_path / "r2", [first], progress=False)
    assert alone.train_data == [alone.data["trees"]]


def test_a_malt_round_without_pairs_is_recorded_as_empty_with_its_reason(tmp_path, capsys):
    from trainers.algorithms.malt.malt import rounds_table

    init = tiny_checkpoint(tmp_path / "init")
    config = MALTConfig(init=str(init), out=str(tmp_path / "m"), trees=2, branching=1, branch_depth=1, dpo_steps=2,
                        dpo_batch_size=2, pair_method="interval")  # one response per node: nothing to prefer
    manifest = malt_round(config, WordleEnv(), RandomMixturePolicy(prob_smart=1.0), init, 0, tmp_path / "r0", [],
                          progress=False)
    assert manifest.selected == 0 and not manifest.trained
    assert "no preference pairs in 2 trees" in manifest.empty_reason
    assert manifest.checkpoint == str(init) and not (tmp_path / "r0" / "train").exists()  # nothing trained
    assert "no preference pairs" in capsys.readouterr().out
    manifest.save(tmp_path / "r0")
    assert RoundManifest.load(tmp_path / "r0").empty_reason == manifest.empty_reason
    assert "(empty: no preference pairs" in rounds_table([manifest])


def test_dpo_epochs_set_a_round_s_steps_from_its_pairs(tmp_path):
    assert dpo_round_steps(MALTConfig(dpo_steps=7), 100) == 7
    assert dpo_round_steps(MALTConfig(dpo_epochs=2, dpo_batch_size=16), 64) == 8
    assert dpo_round_steps(MALTConfig(dpo_epochs=0.5, dpo_batch_size=16), 3) == 1
    init = tiny_checkpoint(tmp_path / "init")
    config = MALTConfig(init=str(init), out=str(tmp_path / "m"), trees=2, branching=2, branch_depth=1, dpo_steps=50,
                        dpo_epochs=1, dpo_batch_size=2, pair_method="interval")
    manifest = malt_round(config, WordleEnv(), RandomMixturePolicy(prob_smart=1.0), init, 0, tmp_path / "r0", [],
                          progress=False)
    assert manifest.selected > 0
    assert read_checkpoint_config(manifest.checkpoint)[1]["steps"] == -(-manifest.selected // 2)


def test_malt_command_runs_rounds_and_resumes(tmp_path, capsys):
    init = tiny_checkpoint(tmp_path / "init")
    args = ["malt", "--task", "wordle", "--init", str(init), "--out", str(tmp_path / "malt"), "--rounds", "2",
            "--num_initial_ei_rounds", "0", "--trees", "2", "--branching", "2", "--branch_depth", "1",
            "--dpo_steps", "2", "--eval_games", "2", "--reuse_rollouts", "true", "--no-progress"]
    main(args)
    assert "malt" in capsys.readouterr().out
    r0 = RoundManifest.load(tmp_path / "malt" / "round_00")
    r1 = RoundManifest.load(tmp_path / "malt" / "round_01")
    assert r0.kind == r1.kind == "malt" and r0.episodes == 4 and r0.env_steps > 4
    assert r0.evaluation["games"] == 2 and -6.0 <= r0.evaluation["mean"] <= 0.0
    assert r1.train_data == [r0.data["trees"], r1.data["trees"]]  # compatible earlier trees reused
    stamp = (tmp_path / "malt" / "round_01" / "round.json").stat().st_mtime_ns
    main(args)  # resumed: both rounds are finished, nothing is redone
    assert (tmp_path / "malt" / "round_01" / "round.json").stat().st_mtime_ns == stamp
    with pytest.raises(ValueError, match="num_initial_ei_rounds=3 must be in"):
        main([*args, "--num_initial_ei_rounds", "3"])
