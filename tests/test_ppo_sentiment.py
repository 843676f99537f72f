"""Result 3 of docs/ppo.md (trainers.experiments.ppo.sentiment) and the continuation task's core (rlds_lang.continuation), tiny."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from rlds_lang.continuation.corpus import (
    ALPHABET,
    continuation_tokenizer,
    corpus_examples,
    make_example,
    normalise,
)
from rlds_lang.continuation.env import ContinuationEnv, CorpusPolicy
from rlds_lang.continuation.scorer import VaderScorer


def test_corpus_is_shipped_with_its_licence_and_splits_are_disjoint():
    from rlds_lang.continuation.corpus import DATA_DIR

    assert "BSD" in (DATA_DIR / "COPYRIGHT").read_text()
    train, test = corpus_examples("train"), corpus_examples("test")
    assert len(train) > 500 and len(test) > 150
    assert {e.split for e in train} == {"train"} and {e.split for e in test} == {"test"}
    # the split is by sentence: different sentences may still start alike (rare)
    shared = {(e.prompt, e.continuation) for e in train} & {(e.prompt, e.continuation) for e in test}
    assert len(shared) < 0.05 * len(test)
    for e in train[:50] + test[:50]:
        assert set(e.prompt + e.continuation) <= set(ALPHABET)
        assert len(e.prompt.split(" ")) == 4 and 0 < len(e.continuation) <= 23
    assert continuation_tokenizer().decode(continuation_tokenizer().encode(train[0].continuation)) == train[0].continuation


def test_make_example_cuts_whole_words():
    example = make_example(normalise("One two three four five six seven."), prompt_words=2, max_chars=10)
    assert (example.prompt, example.continuation) == ("one two", "three four")
    assert make_example("too short", prompt_words=2, max_chars=10) is None


def test_env_rewards_vader_and_records_losslessly(tmp_path):
    from loggers import record_and_read

    examples = corpus_examples("test")[:3]
    env = ContinuationEnv(examples)
    episodes = sorted(record_and_read(env, CorpusPolicy(env), 4, tmp_path, run_name="t", seed=0),
                      key=lambda ep: int(ep["seed"]))
    vader = VaderScorer()
    for episode in episodes:
        example = examples[int(episode["seed"]) % 3]
        step = episode["steps"][0]
        assert step["observation"]["text"] == example.prompt and step["action"] == example.continuation
        assert float(step["reward"]) == pytest.approx(vader.score(example.continuation))
    assert episodes[3]["steps"][0]["observation"]["text"] == episodes[0]["steps"][0]["observation"]["text"]
    assert vader(["what a wonderful lovely day"])[0] > 0.5 > -0.5 > vader(["this is awful and horrible"])[0]


def test_paired_difference_and_side():
    from trainers.evaluation.stats import sample_separation

    base = np.zeros(100)
    mean, se, side = sample_separation(base + 0.5 + np.linspace(-0.1, 0.1, 100), base)
    assert mean == pytest.approx(0.5) and se > 0 and side == 1
    assert sample_separation(base + np.linspace(-1, 1, 100), base)[2] == 0


def test_section_3_pipeline_tiny_writes_only_section_3(tmp_path):
    """The whole result-3 pipeline at tiny sizes, through `results ppo --section 3`: sections 1-2 are kept."""
    from trainers.experiments.ppo import results as ppo_results
    from trainers.experiments.ppo.sentiment import SentimentSizes

    out = tmp_path / "docs" / "ppo.md"
    out.parent.mkdir()
    out.write_text("# PPO\n\n## 1. one\n\nkept\n\n## 3. old\n\nNot produced yet.\n")
    sizes = {"base_steps": 30, "base_examples": 64, "preference_prompts": 24, "candidates": 4, "reward_epochs": 1, "reward_members": 1,
             "updates": 2, "episodes": 4, "samples_per_prompt": 1, "eval_prompts": 8}
    args = argparse.Namespace(section="3", out=str(out), runs=str(tmp_path / "runs"), progress=False,
                              **{f"sentiment_{k}": v for k, v in sizes.items()})
    ppo_results.run(args)
    text = out.read_text()
    assert text.startswith("# PPO\n\n## 1. one\n\nkept\n") and "Not produced yet" not in text
    assert text.count("## 3. ") == 1 and "| ppo | 8 |" in text and "Verdicts (computed)" in text
    assert (out.parent / "ppo_sentiment.png").stat().st_size > 1000
    rows = [json.loads(line) for line in (tmp_path / "runs" / "sentiment" / "ppo" / "metrics.jsonl").open()]
    assert len(rows) == SentimentSizes(updates=2).updates and all(-1 <= r["true_return"] <= 1 for r in rows)
    reward = json.loads((tmp_path / "runs" / "sentiment" / "reward" / "sentiment_reward.json").read_text())
    assert reward["comparisons"] + reward["ties"] == 24 and reward["candidates"] == 4 and reward["gain"] > 0
    assert reward["steps"] == -(-reward["train_labels"] // 8) and 0.0 <= reward["val_accuracy"] <= 1.0
    ppo_results.run(args)  # resumes every step: the same numbers again
    assert out.read_text().split("## 3. ")[1].split("Verdicts")[1] == text.split("## 3. ")[1].split("Verdicts")[1]
