"""DPO: the loss against a hand computation, every response token counted, the reference model (the starting
policy unless asked, never updated), training raises the margin, metrics at batch size 1, pairs from trees."""

import math

import pytest
import torch

from rlds_lang.tokenizers import wordle_tokenizer
from tests.malt_fixtures import TINY, tiny_checkpoint, wordle_trees
from trainers.algorithms.dpo.data import (
    encode_pairs,
    encode_response,
    load_tree_episodes,
    tree_pairs,
)
from trainers.algorithms.dpo.dpo import (
    DPOConfig,
    DPOModel,
    dpo_loss,
    pair_logps,
    sequence_logps,
)
from trainers.algorithms.dpo.trainer import prepare
from trainers.algorithms.registry import fit_dpo, load_agent_model, train
from trainers.core.model import build_language_model

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("dpo")
    result = wordle_trees(root / "trees", trees=3)
    return {"root": root, "trees": root / "trees", "result": result, "init": tiny_checkpoint(root / "init", seed=0),
            "other": tiny_checkpoint(root / "other", seed=1)}


def test_dpo_loss_matches_hand_computation():
    pc, pr, rc, rr = torch.tensor([-3.0, -1.0]), torch.tensor([-4.0, -0.5]), torch.tensor([-3.5, -1.0]), torch.tensor([-3.0, -1.0])
    beta = 0.5
    h = [(-3.0 + 3.5) - (-4.0 + 3.0), (-1.0 + 1.0) - (-0.5 + 1.0)]  # 1.5, -0.5
    losses, metrics = dpo_loss(pc, pr, rc, rr, beta)
    expected = [-math.log(1 / (1 + math.exp(-beta * x))) for x in h]
    torch.testing.assert_close(losses, torch.tensor(expected))
    torch.testing.assert_close(metrics["rewards/chosen"], torch.tensor([0.25, 0.0]))
    torch.testing.assert_close(metrics["rewards/rejected"], torch.tensor([-0.5, 0.25]))
    torch.testing.assert_close(metrics["rewards/margin"], torch.tensor([0.75, -0.25]))
    assert metrics["rewards/accuracy"].tolist() == [1.0, 0.0]
    smooth, _ = dpo_loss(pc, pr, rc, rr, beta, label_smoothing=0.2)
    expected = [-0.8 * math.log(1 / (1 + math.exp(-beta * x))) - 0.2 * math.log(1 / (1 + math.exp(beta * x))) for x in h]
    torch.testing.assert_close(smooth, torch.tensor(expected))
    ipo, _ = dpo_loss(pc, pr, rc, rr, beta, loss_type="ipo")
    torch.testing.assert_close(ipo, torch.tensor([(x - 1 / (2 * beta)) ** 2 for x in h]))
    with pytest.raises(ValueError, match="unknown loss_type"):
        dpo_loss(pc, pr, rc, rr, beta, loss_type="hinge")


def test_every_response_token_is_counted():
    tok = wordle_tokenizer()
    torch.manual_seed(0)
    lm = build_language_model(TINY, tok.vocab_size, pad_id=tok.pad_id).eval()
    ids, start = encode_response(tok, ["", "⬛🟨⬛⬛🟩"], ["crane"], "slate")
    assert ids[start:] == tok.encode("slate") + [tok.eoa_id]
    with torch.no_grad():
        logps = torch.log_softmax(lm(input_ids=torch.tensor([ids])).logits[0].float(), -1)
    by_hand = sum(float(logps[t - 1, ids[t]]) for t in range(start, len(ids)))  # the first character included
    tensors = encode_pairs([_pair(["", "⬛🟨⬛⬛🟩"], ["crane"], "slate", "slate")], tok, 96)
    with torch.no_grad():
        ours = sequence_logps(lm, tensors["chosen_input_ids"], tensors["chosen_attention_mask"],
                              tensors["chosen_response_mask"])
    assert float(ours[0]) == pytest.approx(by_hand, abs=1e-4)
    # two responses that differ only in their first character: their log-probabilities differ
    tensors = encode_pairs([_pair([""], [], "slate", "plate")], tok, 96)
    with torch.no_grad():
        chosen, rejected = pair_logps(lm, tensors)
    assert abs(float(chosen[0] - rejected[0])) > 1e-3


def _pair(observations, actions, chosen, rejected):
    from trainers.algorithms.dpo.data import PreferencePair

    return PreferencePair(tuple(observations), tuple(actions), chosen, rejected, ("c", "r"))


def test_pairs_from_recorded_trees(setup):
    episodes = load_tree_episodes(setup["trees"])
    pairs = tree_pairs(episodes)
    assert len(pairs) == setup["result"].num_pairs > 0
    for pair in pairs:
        assert len(pair.observations) == len(pair.actions) + 1 and pair.chosen and pair.rejected
    repaired = tree_pairs(episodes, "positive_negative", (-6.0, 0.0), seed=0)
    assert all(len(p.observations) == len(p.actions) + 1 for p in repaired)


def prepare_from(config: DPOConfig):
    """``prepare`` with the starting policy and reference loaded from the config's checkpoint folders."""
    reference = load_agent_model(config.reference).lm if config.reference else None
    return prepare(config, load_agent_model(config.init), reference)


def test_reference_is_the_starting_policy_unless_asked(setup):
    config = DPOConfig(dataset=str(setup["trees"]), init=str(setup["init"]), out=str(setup["root"] / "unused"))
    _, _, module, tensors = prepare_from(config)
    with torch.no_grad():
        out = module(tensors)
    assert float(out.metrics["rewards/margin"]) == 0.0 and float(out.loss) == pytest.approx(math.log(2), abs=1e-6)
    config.reference = str(setup["other"])
    _, _, _, other = prepare_from(config)
    assert not torch.allclose(other["ref_chosen_logps"], tensors["ref_chosen_logps"])


def test_metrics_mean_the_same_at_batch_size_one(setup):
    config = DPOConfig(dataset=str(setup["trees"]), init=str(setup["init"]), reference=str(setup["other"]))
    _, _, module, tensors = prepare_from(config)
    n = min(4, tensors["chosen_input_ids"].shape[0])
    with torch.no_grad():
        whole = module({k: v[:n] for k, v in tensors.items()}).metrics
        singles = [module({k: v[i:i + 1] for k, v in tensors.items()}).metrics for i in range(n)]
    for key, value in whole.items():
        assert math.isfinite(float(value))
        assert float(value) == pytest.approx(sum(float(s[key]) for s in singles) / n, abs=1e-4), key


def test_nll_coef_adds_the_chosen_per_token_nll(setup):
    config = DPOConfig(dataset=str(setup["trees"]), init=str(setup["init"]), reference=str(setup["other"]))
    _, _, module, tensors = prepare_from(config)
    with torch.no_grad():
        plain = module(tensors)
        chosen, _ = pair_logps(module.lm, tensors)
        tokens = tensors["chosen_response_mask"][:, 1:].sum(-1).float()
        nll = float((-chosen / tokens).mean())
        assert float(plain.metrics["loss/nll"]) == pytest.approx(nll, rel=1e-5)
        module.config.nll_coef = 0.5
        assert float(module(tensors).loss) == pytest.approx(float(plain.loss) + 0.5 * nll, rel=1e-5)
    module.config.nll_coef = 1.0
    module(tensors).loss.backward()  # the NLL term pushes the chosen responses' log-probabilities up
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)
    with pytest.raises(ValueError, match="nll_coef"):
        prepare_from(DPOConfig(dataset=str(setup["trees"]), init=str(setup["init"]), nll_coef=-1.0))


def test_training_raises_the_margin_and_never_updates_the_reference(setup):
    init = load_agent_model(setup["init"]).model.state_dict()
    reference = load_agent_model(setup["other"]).model.state_dict()
    out = setup["root"] / "run"
    config = DPOConfig(dataset=str(setup["trees"]), init=str(setup["init"]), reference=str(setup["other"]),
                       out=str(out), steps=40, batch_size=8, lr=3e-3, beta=0.5, log_every=40, checkpoint_every=20)
    result = train("dpo", config, progress=False)  # through the shared entry point
    assert result.steps == 40
    after = load_agent_model(out / "checkpoint")
    assert after.algorithm == "dpo"
    _, _, start, tensors = prepare_from(config)
    with torch.no_grad():
        before_margin = float(start(tensors).metrics["rewards/margin"])
        assert isinstance(after.model, DPOModel)
        metrics = after.model(tensors).metrics
    assert float(metrics["rewards/margin"]) > before_margin + 0.5
    assert float(metrics["rewards/accuracy"]) > 0.8
    for name, value in load_agent_model(setup["other"]).model.state_dict().items():
        assert torch.equal(value, reference[name])  # the reference checkpoint is untouched
    for name, value in load_agent_model(setup["init"]).model.state_dict().items():
        assert torch.equal(value, init[name])
    assert any(not torch.equal(v, init[k]) for k, v in after.model.state_dict().items())
    # resumable: asking for more steps continues from step 40
    config.steps = 44
    assert train("dpo", config, progress=False).steps == 44


def test_unused_train_config_fields_are_rejected(setup):
    config = DPOConfig(dataset=str(setup["trees"]), init=str(setup["init"]), top_p=0.5)
    with pytest.raises(ValueError, match="DPOConfig.top_p=0.5 is not used by DPO"):
        prepare_from(config)
    with pytest.raises(ValueError, match="DPOConfig.init is empty"):
        fit_dpo(DPOConfig(dataset=str(setup["trees"])))


def test_pairs_are_the_same_from_logs_and_from_the_built_dataset(tmp_path):
    import tensorflow_datasets as tfds

    from builders.response_trees import response_trees_dataset_builder as trees_builder
    from trainers.core.build import built_dataset_dir

    dummy = trees_builder.__file__.rsplit("/", 1)[0] + "/dummy_data"
    builder = trees_builder.Builder(config="manual_dir", data_dir=str(tmp_path))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=dummy))
    from_tfds = tree_pairs(load_tree_episodes(built_dataset_dir(tmp_path)))
    from_logs = tree_pairs(load_tree_episodes(dummy))
    assert from_tfds == from_logs and len(from_logs) > 0


def test_reselected_pairs_keep_strict_threshold(setup):
    """``DPOConfig.strict_threshold`` reaches the re-selection: at a threshold some sibling's value equals exactly, the
    strict rule gives other pairs than the reference trainer's (values at the threshold positive)."""
    from rlds_lang.trees import expected_rewards, rebuild_trees
    from trainers.algorithms.dpo.trainer import config_pairs

    episodes = load_tree_episodes(setup["trees"])
    values = sorted({float(v) for tree in rebuild_trees(episodes) for v in expected_rewards(tree)[:, 0]})

    def chosen(pairs):
        return [(p.chosen, p.rejected) for p in pairs]

    differing = [t for t in values if chosen(tree_pairs(episodes, "positive_negative", (-6.0, 0.0), t, seed=0))
                 != chosen(tree_pairs(episodes, "positive_negative", (-6.0, 0.0), t, seed=0, strict_threshold=True))]
    assert differing, values
    for strict in (False, True):
        config = DPOConfig(dataset=str(setup["trees"]), init=str(setup["init"]), out=str(setup["root"] / "unused"),
                           pair_method="positive_negative", pair_threshold=differing[0], strict_threshold=strict)
        assert chosen(config_pairs(config)) == chosen(tree_pairs(episodes, "positive_negative", (-6.0, 0.0),
                                                                 differing[0], seed=0, strict_threshold=strict))
