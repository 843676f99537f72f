"""Trainers: training changes the model and lowers the loss, accumulation is exact, resumption is exact,
ILQL finds a rare rewarded action that BC does not, and ``torchrun`` runs the same loop with 2 processes."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlds_lang.tokenizers import make_tokenizer
from tests.toy_data import build_dataset, rare_best_action, wordle_like
from trainers.algorithms.ilql.ilql import ILQLConfig
from trainers.algorithms.registry import algorithm_by_name, load_agent_model, train
from trainers.core.loop import DistInfo, accumulate_gradients, training_batches
from trainers.core.model import ModelConfig
from trainers.core.plots import CURVES_ENV

REPO = Path(__file__).resolve().parents[1]
TINY = ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=64)


@pytest.fixture(scope="module")
def wordle_dataset(tmp_path_factory) -> str:
    return build_dataset(wordle_like(48, seed=3), tmp_path_factory.mktemp("wordle_like"))


def config(algorithm: str, dataset: str, out: Path, **kwargs):
    cls = algorithm_by_name(algorithm).config_class
    base = dict(dataset=dataset, out=str(out), model=TINY, max_length=64, batch_size=8, lr=3e-3, warmup_steps=0,
                log_every=1, checkpoint_every=1000, shuffle_buffer=64)
    base.update(kwargs)
    return cls(**base)


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def initial_state(cfg) -> dict[str, torch.Tensor]:
    torch.manual_seed(cfg.seed)
    module = algorithm_by_name("ilql" if isinstance(cfg, ILQLConfig) else "bc").model_class(cfg, make_tokenizer("wordle"))
    return {k: v.clone() for k, v in module.state_dict().items()}


@pytest.mark.parametrize("algorithm", ["bc", "ilql"])
def test_training_changes_parameters_and_lowers_loss(algorithm, wordle_dataset, tmp_path, monkeypatch):
    monkeypatch.setenv(CURVES_ENV, "1")  # the suite turns the curves off (conftest.py); this test draws them
    cfg = config(algorithm, wordle_dataset, tmp_path / algorithm, steps=30)
    before = initial_state(cfg)
    result = train(algorithm, cfg, progress=False)
    after = load_agent_model(tmp_path / algorithm / "checkpoint")
    assert after.step == 30 and result.steps == 30
    changed = [k for k, v in after.model.state_dict().items() if not torch.equal(v, before[k])]
    assert any(k.startswith("lm.") for k in changed)
    losses = [row["loss"] for row in metrics(tmp_path / algorithm)]
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 < 0.9 * sum(losses[:5]) / 5, losses
    assert (tmp_path / algorithm / "training_curves.png").stat().st_size > 1000
    assert any((tmp_path / algorithm / "tb").iterdir()), "no TensorBoard events written"
    if algorithm == "ilql":
        state = after.model.state_dict()
        for head in ("q1", "q2"):
            key = f"heads.{head}.0.weight"
            target = f"heads.target_{head}.0.weight"
            assert not torch.equal(state[key], before[key])          # trained
            assert not torch.equal(state[target], before[target])    # moved by Polyak averaging...
            assert not torch.equal(state[target], state[key])        # ...but only part of the way


@pytest.mark.parametrize("algorithm", ["bc", "ilql"])
def test_one_batch_of_8_equals_8_accumulated_micro_batches_of_1(algorithm, wordle_dataset, tmp_path):
    whole = config(algorithm, wordle_dataset, tmp_path / "a", batch_size=8, grad_accum=1, shuffle_buffer=0)
    split = dataclasses.replace(whole, batch_size=1, grad_accum=8)
    grads, logged = [], []
    tokenizer = make_tokenizer("wordle")
    for cfg in (whole, split):
        torch.manual_seed(0)
        module = algorithm_by_name(algorithm).model_class(cfg, tokenizer)
        batches = training_batches(cfg, tokenizer, DistInfo())
        micro = [next(batches) for _ in range(cfg.grad_accum)]
        logged.append(accumulate_gradients(module, micro))
        grads.append({n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None})
    assert set(grads[0]) == set(grads[1]) and grads[0]
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], rtol=1e-4, atol=1e-6, msg=name)
    assert logged[0]["loss"] == pytest.approx(logged[1]["loss"], rel=1e-5)


#: ILQL with LMRL-Gym's target network: a Polyak copy of the (shared or separate) value trunk, live-head decoding.
TARGET_TRUNK = {"target_network": "trunk", "decode_with": "live", "alpha": 0.3}


@pytest.mark.parametrize("algorithm, options", [("bc", {}), ("ilql", {}), ("ilql", TARGET_TRUNK),
                                                ("ilql", {**TARGET_TRUNK, "separate_value_trunk": True})],
                         ids=["bc", "ilql", "ilql-target-trunk", "ilql-target-trunk-separate"])
def test_resume_from_checkpoint_gives_the_same_next_steps(algorithm, options, wordle_dataset, tmp_path):
    straight = config(algorithm, wordle_dataset, tmp_path / "straight", steps=4, **options)
    train(algorithm, straight, progress=False)
    interrupted = config(algorithm, wordle_dataset, tmp_path / "resumed", steps=2, checkpoint_every=2, **options)
    train(algorithm, interrupted, progress=False)
    train(algorithm, dataclasses.replace(interrupted, steps=4), progress=False)
    a, b = metrics(tmp_path / "straight"), metrics(tmp_path / "resumed")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for step in (2, 3):  # rows of steps 3 and 4, the first two after resuming
        assert b[step]["loss"] == pytest.approx(a[step]["loss"], rel=1e-6, abs=1e-7), (a[step], b[step])
    final_a = load_agent_model(tmp_path / "straight" / "checkpoint").model.state_dict()
    final_b = load_agent_model(tmp_path / "resumed" / "checkpoint").model.state_dict()
    for key in final_a:
        torch.testing.assert_close(final_b[key], final_a[key], rtol=1e-5, atol=1e-7, msg=key)
    if "target_network" in options:  # the target trunk is saved, and has moved away from the trunk it follows
        start = initial_state(straight)
        assert [k for k in final_a if k.startswith("target_trunk.") and not torch.equal(final_a[k], start[k])]
    # reloading a finished run reads no data (its dataset may even be gone) and changes nothing
    weights = (tmp_path / "resumed" / "checkpoint" / "model.pt").read_bytes()
    again = train(algorithm, dataclasses.replace(interrupted, steps=4, dataset=str(tmp_path / "no-such-dataset"),
                                                 top_p=0.5), progress=False)
    assert again.steps == 4 and (tmp_path / "resumed" / "checkpoint" / "model.pt").read_bytes() == weights


def test_adam_betas_come_from_the_config(wordle_dataset, tmp_path):
    """LMRL-Gym's value-based rows train with Adam's beta2 at 0.95 (``LMRL_GYM_OPTIMIZER``)."""
    train("ilql", config("ilql", wordle_dataset, tmp_path / "ilql", steps=1, adam_beta1=0.8, adam_beta2=0.95),
          progress=False)
    state = torch.load(tmp_path / "ilql" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert [tuple(group["betas"]) for group in state["optimizer"]["param_groups"]] == [(0.8, 0.95)]


def test_a_resumed_run_restores_the_data_position_instead_of_replaying(wordle_dataset, tmp_path):
    """The checkpoint keeps the data stream's position: restored with nothing skipped, the stream gives the batch
    that follows the last one trained on, i.e. the one a replay of the stream would give."""
    from itertools import islice

    from trainers.core.checkpoint import DATA_STATE

    part = config("bc", wordle_dataset, tmp_path / "run", steps=3, checkpoint_every=3, grad_accum=2)
    train("bc", part, progress=False)
    state = tmp_path / "run" / "checkpoint" / DATA_STATE
    assert state.is_dir()
    tokenizer = make_tokenizer("wordle")
    replayed = list(islice(training_batches(part, tokenizer, DistInfo()), 3 * 2 + 1))[-1]
    restored = next(training_batches(part, tokenizer, DistInfo(), restore=state))
    assert replayed.keys() == restored.keys()
    for key, value in replayed.items():
        if isinstance(value, torch.Tensor):
            torch.testing.assert_close(restored[key], value, rtol=0, atol=0, msg=key)
        else:  # text
            assert restored[key] == value, key


@pytest.mark.parametrize("saved_position", ["missing", "unreadable"])
def test_a_checkpoint_without_a_readable_data_position_resumes_exactly_by_replaying(saved_position, wordle_dataset,
                                                                                     tmp_path):
    """A checkpoint from before the position was kept (or one that cannot be read) replays the stream instead; the
    run so resumed keeps the position from then on, and a second resume from it is exact too."""
    import shutil

    from trainers.core.checkpoint import DATA_STATE

    straight = config("bc", wordle_dataset, tmp_path / "straight", steps=6)
    train("bc", straight, progress=False)
    part = config("bc", wordle_dataset, tmp_path / "resumed", steps=2, checkpoint_every=2)
    train("bc", part, progress=False)
    state = tmp_path / "resumed" / "checkpoint" / DATA_STATE
    shutil.rmtree(state)
    if saved_position == "unreadable":
        state.mkdir()
        (state / "iterator.index").write_bytes(b"not a checkpoint")
        with pytest.warns(UserWarning, match="saved position could not be read.*replaying 2 batches"):
            train("bc", dataclasses.replace(part, steps=4), progress=False)
    else:
        train("bc", dataclasses.replace(part, steps=4), progress=False)
    assert state.is_dir()  # the replayed run saved its position
    train("bc", dataclasses.replace(part, steps=6), progress=False)
    a, b = metrics(tmp_path / "straight"), metrics(tmp_path / "resumed")
    assert [r["step"] for r in b] == [1, 2, 3, 4, 5, 6]
    for step in (2, 3, 4, 5):
        assert b[step]["loss"] == pytest.approx(a[step]["loss"], rel=1e-6, abs=1e-7), (a[step], b[step])

def test_training_time_is_carried_by_the_checkpoint_across_calls(wordle_dataset, tmp_path):
    """A run's training time sums every call up to its last checkpoint (so a call killed at the end of a
    session still counts up to there), and reloading a finished run adds nothing."""
    from trainers.experiments.common import TRAIN_SECONDS, training_minutes

    part = config("bc", wordle_dataset, tmp_path / "run", steps=2, checkpoint_every=2)
    first = train("bc", part, progress=False)
    state = tmp_path / "run" / "checkpoint" / "trainer_state.pt"
    assert 0 < first.total_seconds <= first.seconds
    assert torch.load(state, weights_only=False)["train_seconds"] == first.total_seconds
    second = train("bc", dataclasses.replace(part, steps=4), progress=False)
    assert first.total_seconds < second.total_seconds <= first.total_seconds + second.seconds
    assert torch.load(state, weights_only=False)["train_seconds"] == second.total_seconds
    reloaded = train("bc", dataclasses.replace(part, steps=4), progress=False)
    assert reloaded.steps == 4 and reloaded.total_seconds == second.total_seconds
    assert training_minutes(reloaded) == second.total_seconds / 60
    assert not (tmp_path / "run" / TRAIN_SECONDS).exists()
    # a checkpoint saved before checkpoints carried the time: unknown, and the document falls back to the
    # calls that finished (train_seconds.json)
    legacy = torch.load(state, weights_only=False)
    del legacy["train_seconds"]
    torch.save(legacy, state)
    (tmp_path / "run" / TRAIN_SECONDS).write_text('{"seconds": 30.0, "step": 4}')
    old = train("bc", dataclasses.replace(part, steps=4), progress=False)
    assert old.total_seconds is None and training_minutes(old) == 0.5


def test_filtered_bc_keeps_its_episode_returns_for_a_resume(wordle_dataset, tmp_path):
    """%BC's first pass over the episodes (an hour on 1M games) is done once per run: the resumed run reads
    the stored returns, and keeps to the same episodes (it would fail loudly otherwise)."""
    from trainers.core.data import RETURNS_CACHE

    straight = config("bc", wordle_dataset, tmp_path / "straight", steps=4, top_p=0.5)
    train("bc", straight, progress=False)
    part = config("bc", wordle_dataset, tmp_path / "resumed", steps=2, checkpoint_every=2, top_p=0.5)
    train("bc", part, progress=False)
    stored = tmp_path / "resumed" / RETURNS_CACHE
    written = stored.stat().st_mtime_ns
    train("bc", dataclasses.replace(part, steps=4), progress=False)
    assert stored.stat().st_mtime_ns == written  # read, not recomputed
    a, b = metrics(tmp_path / "straight"), metrics(tmp_path / "resumed")
    assert b[3]["loss"] == pytest.approx(a[3]["loss"], rel=1e-6, abs=1e-7)


def test_a_row_logged_after_a_resume_averages_only_the_steps_since(wordle_dataset, tmp_path):
    """Resumed at step 3 with ``log_every=4``, the row of step 4 is step 4's own loss (it was divided by 4)."""
    train("bc", config("bc", wordle_dataset, tmp_path / "straight", steps=4), progress=False)
    part = config("bc", wordle_dataset, tmp_path / "resumed", steps=3, log_every=4)
    train("bc", part, progress=False)
    train("bc", dataclasses.replace(part, steps=4), progress=False)
    per_step, rows = metrics(tmp_path / "straight"), metrics(tmp_path / "resumed")
    assert [r["step"] for r in rows] == [3, 4]
    assert rows[0]["loss"] == pytest.approx(sum(r["loss"] for r in per_step[:3]) / 3, rel=1e-5)
    assert rows[1]["loss"] == pytest.approx(per_step[3]["loss"], rel=1e-5)


def test_ilql_prefers_a_rare_rewarded_action_that_bc_rarely_takes(tmp_path):
    """Data: 10% of episodes take ``ab`` (reward 0), 90% ``ba`` (reward -1). BC imitates the data; ILQL's
    perturbed policy should take ``ab``. Compared by each policy's exact expected reward."""
    from trainers.core.decoding import next_token_logits

    dataset = build_dataset(rare_best_action(n_good=12, n_bad=108), tmp_path / "data")
    common = dict(steps=150, batch_size=24, lr=2e-3, log_every=50, shuffle_buffer=120, seed=1)
    train("bc", config("bc", dataset, tmp_path / "bc", **common), progress=False)
    # alpha=0.1: the paper's 0.005 suits 100k-step runs; in 150 steps the targets must move faster for the
    # value of the final token to reach the first one (three Bellman backups: 'a', 'b', end of action)
    train("ilql", config("ilql", dataset, tmp_path / "ilql", tau=0.9, alpha=0.1, **common), progress=False)
    tokenizer = make_tokenizer("wordle")
    prompt = torch.tensor([tokenizer.encode_prompt([""], [])])
    a, b = tokenizer.encode("a")[0], tokenizer.encode("b")[0]

    def expected_reward(path: Path, beta: float) -> float:
        loaded = load_agent_model(path / "checkpoint")
        logits = next_token_logits(loaded.lm, loaded.heads, prompt, torch.ones_like(prompt), beta)[0]
        p_good = torch.softmax(logits[[a, b]], dim=0)[0].item()   # the only two valid first letters
        return p_good * 0.0 + (1 - p_good) * -1.0

    bc = expected_reward(tmp_path / "bc", beta=0.0)
    ilql = expected_reward(tmp_path / "ilql", beta=16.0)
    assert bc < -0.6, f"BC should imitate the data (mostly 'ba'), expected reward {bc:.3f}"
    assert ilql > -0.3, f"ILQL should take the rare rewarded 'ab', expected reward {ilql:.3f}"


def test_torchrun_two_processes_match_one_process(wordle_dataset, tmp_path):
    """DDP over 2 gloo processes, each with half the episodes of a batch, logs the same first-step loss as
    one process with the whole batch, and writes one checkpoint."""
    single = config("bc", wordle_dataset, tmp_path / "single", steps=2, batch_size=8, shuffle_buffer=0)
    train("bc", single, progress=False)
    args = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
            "-m", "trainers.cli.main", "train", "bc", "--dataset", wordle_dataset, "--out", str(tmp_path / "ddp"),
            "--steps", "2", "--batch_size", "4", "--shuffle_buffer", "0", "--lr", "3e-3", "--warmup_steps", "0",
            "--log_every", "1", "--max_length", "64", "--model.n_layer", "1", "--model.n_embd", "32",
            "--model.n_head", "2", "--model.n_positions", "64", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    run = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    ddp, one = metrics(tmp_path / "ddp"), metrics(tmp_path / "single")
    assert [r["step"] for r in ddp] == [1, 2]
    assert ddp[0]["loss"] == pytest.approx(one[0]["loss"], rel=1e-5)
    assert load_agent_model(tmp_path / "ddp" / "checkpoint").step == 2


def test_the_process_group_is_left_at_exit(monkeypatch):
    """``init_distributed`` registers an exit hook that destroys the gloo group it created: without it, the
    interpreter's teardown aborts most ``torchrun`` processes after training finished ("terminate called without
    an active exception", 11 of 15 two-process runs here)."""
    import atexit

    import torch.distributed as dist

    from trainers.core import loop

    joined, hooks, destroyed = [False], [], []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(dist, "is_initialized", lambda: joined[0])
    monkeypatch.setattr(dist, "init_process_group", lambda backend: joined.__setitem__(0, True))
    monkeypatch.setattr(dist, "get_rank", lambda: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    monkeypatch.setattr(dist, "destroy_process_group", lambda: destroyed.append(True) or joined.__setitem__(0, False))
    monkeypatch.setattr(atexit, "register", hooks.append)
    assert loop.init_distributed() == DistInfo(1, 2)
    assert len(hooks) == 1
    hooks[0]()
    assert destroyed == [True] and not joined[0]
    hooks[0]()  # a group already left is not left twice
    assert destroyed == [True]
