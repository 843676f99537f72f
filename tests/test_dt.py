"""The Decision Transformer's defining loss on a hand-made batch: BC of the action tokens with a linear embedding
of the episode's return at the ``[BOS]`` slot; conditioned on a high return it takes a rare rewarded action."""

from __future__ import annotations

import doctest

import pytest
import torch
import torch.nn.functional as F

from tests.baseline_helpers import first_letter_odds, train_on_rare_action
from tests.test_ilql_targets import TINY, TOKENIZER, hand_batch
from trainers.algorithms.dt import losses as dt_losses
from trainers.algorithms.dt.config import DTConfig
from trainers.algorithms.dt.model import DTModel


def model(**overrides) -> DTModel:
    torch.manual_seed(0)
    return DTModel(DTConfig(dataset="unused", model=TINY, **overrides), TOKENIZER)


def dt_batch(returns: list[float]) -> dict[str, torch.Tensor]:
    batch = hand_batch()
    batch["input_ids"][:, 0] = TOKENIZER.bos_id
    batch["episode_return"] = torch.tensor(returns)
    return batch


def test_docstring_examples_run():
    assert doctest.testmod(dt_losses, raise_on_error=False).failed == 0


def test_target_return_default_and_check():
    assert DTConfig().target_return == -5.7  # the authors' Visual Dialogue target (they have no Wordle DT)
    with pytest.raises(ValueError, match="DTConfig.target_return"):
        DTConfig(target_return=float("nan"))


def test_the_loss_is_bc_given_the_return_embedding_at_bos_by_hand():
    dt = model()
    with torch.no_grad():
        dt.lm.return_embedding.weight.normal_()
        dt.lm.return_embedding.bias.normal_()
    batch = dt_batch([-3.0, 0.0])
    loss = float(dt(batch).loss)
    gpt = dt.lm.wrapped_lm
    with torch.no_grad():
        embeddings = gpt.get_input_embeddings()(batch["input_ids"]).clone()
        for row, ret in enumerate((-3.0, 0.0)):   # W * R + b added to the [BOS] embedding of each row
            embeddings[row, 0] += dt.lm.return_embedding.weight[:, 0] * ret + dt.lm.return_embedding.bias
        logits = gpt(inputs_embeds=embeddings, attention_mask=batch["attention_mask"]).logits[:, :-1]
    nll = [F.cross_entropy(logits[row, t], batch["input_ids"][row, t + 1]).item()
           for row, positions in ((0, (0, 1, 3, 4)), (1, (0, 1, 3, 4, 5))) for t in positions]
    assert loss == pytest.approx(sum(nll) / len(nll), rel=1e-5)
    # the return changes the loss (through the prefix alone)
    assert float(dt(dt_batch([5.0, 5.0])).loss) != pytest.approx(loss, rel=1e-4)


def test_the_prefix_is_only_at_bos_so_a_cached_continuation_is_unchanged():
    dt = model(target_return=-1.0)
    with torch.no_grad():
        dt.lm.return_embedding.bias.normal_()
    ids = torch.tensor([[TOKENIZER.bos_id, 9, 10, 11]])
    whole = dt.lm(input_ids=ids).logits[0, -1]
    first = dt.lm(input_ids=ids[:, :2], use_cache=True)
    rest = dt.lm(input_ids=ids[:, 2:], past_key_values=first.past_key_values, use_cache=True).logits[0, -1]
    torch.testing.assert_close(rest, whole, rtol=1e-5, atol=1e-5)
    dt.lm.target_return = 3.0
    assert not torch.allclose(dt.lm(input_ids=ids).logits[0, -1], whole)


def test_the_agent_plays_conditioned_on_its_target_return_with_its_sign():
    """At play the prefix is ``W * target_return + b`` at ``[BOS]``, what training gives a row whose episode returned
    ``target_return`` (a flipped sign at play would condition on the opposite return); ``set_target_return`` sets it
    as given."""
    from trainers.algorithms.registry import set_target_return
    from trainers.core.checkpoint import LoadedModel

    dt = model()
    with torch.no_grad():
        dt.lm.return_embedding.weight.normal_()
        dt.lm.return_embedding.bias.normal_()
    ids = torch.tensor([[TOKENIZER.bos_id, 9, 10]])
    set_target_return(LoadedModel("dt", dt.config, dt, TOKENIZER, 0), -4.0)
    assert dt.lm.target_return == -4.0
    played = dt.lm(input_ids=ids).logits
    torch.testing.assert_close(played, dt.lm(input_ids=ids, returns=torch.tensor([-4.0])).logits)
    assert not torch.allclose(played, dt.lm(input_ids=ids, returns=torch.tensor([4.0])).logits)
    with torch.no_grad():
        embeddings = dt.lm.wrapped_lm.get_input_embeddings()(ids).clone()
        embeddings[0, 0] += dt.lm.return_embedding.weight[:, 0] * -4.0 + dt.lm.return_embedding.bias
        torch.testing.assert_close(played, dt.lm.wrapped_lm(inputs_embeds=embeddings).logits)


def test_dt_conditioned_on_a_high_return_takes_the_rare_rewarded_action(tmp_path):
    loaded = train_on_rare_action("dt", tmp_path)
    loaded.lm.target_return = 0.0
    high = first_letter_odds(loaded, 0.0)
    loaded.lm.target_return = -1.0
    low = first_letter_odds(loaded, 0.0)
    assert high > 0.7 and low < 0.3, (high, low)
