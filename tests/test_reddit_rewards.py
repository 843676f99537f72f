"""The Reddit reward kinds: toxicity thresholds, seeded noise, real upvotes, the upvote model and the disk cache."""

import os
import subprocess
import sys

import pytest

from builders.reddit_comments import make_dummy_data as dummy
from rlds_lang.reddit import rewards as rw
from rlds_lang.reddit.data import RedditComment
from rlds_lang.reddit.upvote_model import UpvoteClassifier, UpvoteModelConfig

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_toxicity_label_thresholds():
    assert [rw.toxicity_label(p) for p in (0.0, 0.49, 0.5, 0.89, 0.9, 1.0)] == [0, 0, 1, 1, 2, 2]


def test_toxicity_reward_on_real_classifier():
    labels = rw.ToxicityReward().labels(["I love this thread, thanks for sharing", "fuck you asshole"])
    assert labels == [0, 2]


def test_noised_toxicity_replaces_label_one_with_seeded_coin(monkeypatch):
    import profanity_check

    texts = [f"text {i}" for i in range(200)]
    monkeypatch.setattr(profanity_check, "predict_prob", lambda xs: [0.7] * len(xs))  # every text: label 1
    noised = rw.ToxicityReward(noised=True, seed=3)
    labels = noised.labels(texts)
    assert set(labels) == {0, 2} and 70 < labels.count(0) < 130
    assert labels == rw.ToxicityReward(noised=True, seed=3).labels(texts)          # seeded
    assert labels != rw.ToxicityReward(noised=True, seed=4).labels(texts)
    assert rw.ToxicityReward().labels(texts[:3]) == [1, 1, 1]                       # not noised
    monkeypatch.setattr(profanity_check, "predict_prob", lambda xs: [0.1, 0.95][:len(xs)])
    assert noised.labels(["a", "b"]) == [0, 2]                                      # 0 and 2 untouched


def _comment(text, score):
    return RedditComment(0, "id", "t1_p", "s", text, score, "", "train", "x")


def test_real_upvotes():
    reward = rw.RealUpvotesReward.from_comments([_comment("good", 5), _comment("bad", 0), _comment("neg", -3)])
    assert reward.rewards(["good", "bad", "neg"]) == [1.0, -1.0, -1.0]
    with pytest.raises(rw.UnknownCommentError, match="not in the data"):
        reward.rewards(["never written"])


def test_make_reward_errors():
    with pytest.raises(ValueError, match="unknown reward kind"):
        rw.make_reward("likes")
    with pytest.raises(ValueError, match="model_dir"):
        rw.make_reward("upvotes_model")
    with pytest.raises(FileNotFoundError, match="rlds-lang reddit upvotes"):
        rw.make_reward("upvotes_model", model_dir="/nonexistent/model")


def test_cache_stores_per_text(tmp_path):
    class Counting:
        kind = "counting"
        calls = []

        def fingerprint(self):
            return "v1"

        def rewards(self, texts):
            self.calls.append(list(texts))
            return [float(len(t)) for t in texts]

    path = str(tmp_path / "c.sqlite")
    cached = rw.CachedReward(Counting(), path)
    assert cached.rewards(["ab", "abc", "ab"]) == [2.0, 3.0, 2.0]
    again = rw.CachedReward(Counting(), path)
    assert again.rewards(["abc", "😀\r\n"]) == [3.0, 3.0]
    assert Counting.calls == [["ab", "abc"], ["😀\r\n"]] and again.hits == 1 and again.misses == 1


def test_default_cache_path_under_rlds_lang_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RLDS_LANG_CACHE", str(tmp_path))
    cached = rw.make_reward("toxicity")
    assert cached.rewards(["hello there"]) == [0.0]
    assert os.path.dirname(cached.path) == str(tmp_path / "reddit_rewards") and os.path.exists(cached.path)


def test_upvote_model_saves_and_loads(tmp_path):
    model = UpvoteClassifier(UpvoteModelConfig(buckets=64, dim=4), {"val_accuracy": 0.5})
    model.save(tmp_path)
    loaded = UpvoteClassifier.load(tmp_path)
    texts = ["hi", "what a day 😀"]
    assert loaded.probabilities(texts) == model.probabilities(texts)
    assert loaded.info == {"val_accuracy": 0.5} and loaded.fingerprint() == model.fingerprint()
    reward = rw.ModelUpvotesReward(loaded)
    assert reward.rewards(texts) == [1.0 if p >= 0.5 else 0.0 for p in loaded.probabilities(texts)]


def test_reddit_upvotes_command_trains_and_reports(tmp_path):
    """The documented command trains on the test split, validates on eval and learns a separable fixture."""
    pos = [dummy.row(f"p{i}", f"great helpful answer thanks {i}", 3, "q") for i in range(40)]
    neg = [dummy.row(f"n{i}", f"stupid spam garbage {i}", -1, "q") for i in range(40)]
    splits = {"train": [], "eval": list(range(0, 80, 4)), "test": [i for i in range(80) if i % 4]}
    dummy.write_published(str(tmp_path / "data"), pos, neg, splits)
    out = tmp_path / "model"
    env = {**os.environ, "PYTHONPATH": REPO, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "trainers.cli.main", "reddit", "upvotes", "--data", str(tmp_path / "data"),
                             "--out", str(out), "--epochs", "20", "--buckets", "512", "--dim", "8", "--lr", "0.03", "--batch-size", "16"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "validation accuracy on 20 eval comments" in result.stdout
    model = UpvoteClassifier.load(out)
    assert model.info["train_comments"] == 60 and model.info["val_accuracy"] == 1.0
    assert rw.make_reward("upvotes_model", model_dir=str(out), cache=False).rewards(
        ["great helpful answer thanks 99", "stupid spam garbage 99"]) == [1.0, 0.0]


def test_upvote_training_reads_every_dump_of_a_build_together(tmp_path):
    """A reply whose parent sits in another dump file keeps its parent text, and a comment repeated across files
    is counted once (rejected as a duplicate) -- which only happens when the files are read as one build."""
    import collections
    import json

    from trainers.tasks.reddit_upvotes import read_comments

    def record(cid, body, parent="t3_post"):
        return json.dumps({"id": cid, "body": body, "score": 2, "parent_id": parent, "link_id": "t3_post",
                           "subreddit": "q"})

    (tmp_path / "a.ndjson").write_text(record("c1", "the parent comment") + "\n" + record("c2", "said twice") + "\n")
    (tmp_path / "b.ndjson").write_text(record("c3", "a reply across files", parent="t1_c1") + "\n"
                                       + record("c2", "said twice") + "\n")
    rejections: collections.Counter = collections.Counter()
    comments = read_comments(None, [tmp_path / "a.ndjson", tmp_path / "b.ndjson"], rejections)
    assert [c.comment_id for c in comments] == ["c1", "c2", "c3"]
    assert comments[2].parent_text == "the parent comment"
    assert sum(rejections.values()) == 1 and "duplicate" in str(list(rejections)).lower()
    folder = read_comments(None, [tmp_path], collections.Counter())  # a folder: all of its dumps, in name order
    assert [c.comment_id for c in folder] == ["c1", "c2", "c3"]
