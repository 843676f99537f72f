"""The loop over in-memory tensors (``trainers.core.tensor_loop``) that DPO and the multi-agent MALT's BC share:
seeded batches, a resumed run equal to a straight one, the config's warm-up, clear errors."""

import json

import pytest
import torch

from rlds_lang.tokenizers import wordle_tokenizer
from tests.malt_fixtures import TINY
from trainers.algorithms.bc import BCConfig, BCModel
from trainers.algorithms.dpo.dpo import sequence_logps
from trainers.core.tensor_loop import batch_indices, fit_tensors

torch.set_num_threads(1)
ROWS, LENGTH = 10, 12


def rows(seed: int = 0) -> dict[str, torch.Tensor]:
    """Ten random token rows, the second half of each the response."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, 30, (ROWS, LENGTH), generator=generator)
    response = torch.zeros(ROWS, LENGTH, dtype=torch.long)
    response[:, LENGTH // 2:] = 1
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "response_mask": response}


def fit(out, steps: int, crash_at: int | None = None, **overrides):
    """``(result, module, the batches' input ids)`` of a tiny BC model fitted on ``rows()`` for ``steps`` steps (a
    KeyboardInterrupt in the call's ``crash_at``-th step)."""
    config = BCConfig(out=str(out), model=TINY, steps=steps, batch_size=4, seed=5, lr=3e-3,
                      **{"warmup_steps": 4, "checkpoint_every": 5, "log_every": 1, **overrides})
    torch.manual_seed(config.seed)
    tokenizer = wordle_tokenizer()
    module = BCModel(config, tokenizer)
    calls = []

    def step_loss(batch):
        calls.append(batch["input_ids"])
        if len(calls) == crash_at:
            raise KeyboardInterrupt("simulated crash")
        logps = sequence_logps(module.lm, batch["input_ids"], batch["attention_mask"], batch["response_mask"])
        return -logps.mean(), {"rows": float(batch["input_ids"].shape[0])}, int(batch["attention_mask"].sum())

    result = fit_tensors(config, "bc", module, tokenizer, rows(), step_loss, progress=False)
    return result, module, calls


def test_batches_are_seeded_epochs():
    first = [tuple(batch_indices(10, 4, s, seed=3)) for s in range(2)]
    assert len(set(first[0]) | set(first[1])) == 8 and first == [tuple(batch_indices(10, 4, s, seed=3)) for s in range(2)]
    assert tuple(batch_indices(10, 4, 2, seed=3)) != first[0]  # a new epoch, a new permutation
    assert len(batch_indices(3, 4, 0, seed=0)) == 3


def test_a_resumed_run_equals_a_straight_one(tmp_path):
    straight, module, batches = fit(tmp_path / "straight", 12)
    for step, batch in enumerate(batches):  # step s trains the rows batch_indices(..., s, seed) picks
        assert torch.equal(batch, rows()["input_ids"][batch_indices(ROWS, 4, step, seed=5)])
    with pytest.raises(KeyboardInterrupt):
        fit(tmp_path / "resumed", 12, crash_at=8)  # after the checkpoint of step 5
    saved = torch.load(tmp_path / "resumed" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert saved["step"] == 5
    resumed, again, batches = fit(tmp_path / "resumed", 12)
    assert resumed.steps == straight.steps == 12 and len(batches) == 12 - 5  # from the checkpoint on
    for name, value in module.state_dict().items():
        assert torch.equal(value, again.state_dict()[name]), name
    assert saved["train_seconds"] < resumed.total_seconds  # the crashed call's seconds are counted
    final = torch.load(tmp_path / "resumed" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert final["train_seconds"] == resumed.total_seconds and final["step"] == 12
    logged = [json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in logged if "loss" in row][-1] == 12 and logged[-1]["rows"] == 4.0


def test_the_learning_rate_is_the_config_s_warm_up(tmp_path):
    def lr_of(out):
        return [row["lr"] for row in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "lr" in row]

    fit(tmp_path / "warm", 5)
    fit(tmp_path / "flat", 3, warmup_steps=0)
    assert lr_of(tmp_path / "warm") == pytest.approx([3e-3 * min(1.0, (s + 1) / 4) for s in range(1, 6)])
    assert lr_of(tmp_path / "flat") == [3e-3] * 3


def test_tensors_of_different_lengths_are_an_error(tmp_path):
    config = BCConfig(out=str(tmp_path / "bad"), model=TINY, steps=1)
    tensors = {**rows(), "response_mask": torch.zeros(3, LENGTH, dtype=torch.long)}
    with pytest.raises(ValueError, match="one non-zero number of rows"):
        fit_tensors(config, "bc", BCModel(config, wordle_tokenizer()), wordle_tokenizer(), tensors,
                    lambda batch: (torch.zeros(()), {}, 0), progress=False)
