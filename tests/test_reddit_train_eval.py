"""Subword tokenizer (lossless, saved with the checkpoint) and the Reddit end to end: dummy build -> train
BC, %BC and ILQL a few steps with the BPE tokenizer -> ``eval --task reddit`` (mean ± SE)."""

import math
import os

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from builders.reddit_comments import make_dummy_data as dummy
from builders.reddit_comments import reddit_comments_dataset_builder as rcb
from rlds_lang.subword import SubwordTokenizer
from rlds_lang.tokenizers import load_tokenizer, make_tokenizer
from trainers.algorithms.registry import load_agent_model
from trainers.cli.main import main
from trainers.evaluation.stats import mean_and_se
from transforms.selection import episode_returns, filter_min_return

PUBLISHED = os.path.join(dummy.OUT, "published")
TINY = ["--model.n_layer", "1", "--model.n_embd", "32", "--model.n_head", "2", "--model.n_positions", "128",
        "--max_length", "128", "--batch_size", "4", "--no-progress", "--steps", "3"]
ODD = ["emoji 😀👍🏽 and CRLF\r\n", "<eoa> typed as text <pad>", "𝔘𝔫𝔦 café\u202e\u00a0", "  spaces  ", ""]


def test_subword_tokenizer_is_lossless_and_saves(tmp_path):
    tok = SubwordTokenizer.train(dummy.ODD_TEXTS * 5 + ["some more words here"] * 5, vocab_size=300)
    for text in ODD + dummy.ODD_TEXTS:
        assert tok.decode(tok.encode(text)) == text
    assert tok.decode(tok.encode_prompt(["hi"], []) + [tok.eoa_id], skip_special=False) == "<bos>hi<eoo><eoa>"
    ragged = tok.tf_encode(tf.constant(ODD)).to_list()
    assert ragged == [tok.encode(t) for t in ODD]
    assert tok.tf_encode(tf.constant("x")).numpy().tolist() == tok.encode("x")
    path = tmp_path / "tok.json"
    tok.save(path)
    assert load_tokenizer(path) == tok and make_tokenizer(f"file:{path}") == tok
    assert make_tokenizer("wordle").vocab_size == 38
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([tok.vocab_size])


def test_mean_and_se():
    assert mean_and_se([1.0, 3.0]) == (2.0, 1.0)
    mean, se = mean_and_se([4.0])  # one episode: the mean, and no standard error to give
    assert mean == 4.0 and math.isnan(se)


def test_build_train_eval_end_to_end(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    builder = rcb.Builder(config="toxicity", data_dir=str(tmp_path / "data"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=PUBLISHED))
    dataset = str(builder.data_dir)
    train = builder.as_dataset(split="train")
    returns = episode_returns(train)
    kept = episode_returns(filter_min_return(train, 0.0))   # %BC by reward cutoff: the non-toxic comments
    assert len(kept) == int((returns >= 0.0).sum()) and (kept == 0.0).all() and 0 < len(kept) < len(returns)
    tok_path = tmp_path / "tok.json"
    main(["reddit", "tokenizer", "--data", PUBLISHED, "--out", str(tok_path), "--vocab-size", "400"])
    assert "train comments" in capsys.readouterr().out
    runs = {}
    for name, algorithm, extra in (("bc", "bc", []), ("pbc", "bc", ["--min_return", "0"]), ("top", "bc", ["--top_p", "0.5"]), ("ilql", "ilql", [])):
        runs[name] = tmp_path / name
        main(["train", algorithm, "--dataset", dataset, "--out", str(runs[name]), "--tokenizer", f"file:{tok_path}",
              *extra, *TINY])
    loaded = load_agent_model(runs["bc"] / "checkpoint")
    assert isinstance(loaded.tokenizer, SubwordTokenizer) and loaded.tokenizer == load_tokenizer(tok_path)
    capsys.readouterr()
    results = main_eval(["--agent", f"bc={runs['bc'] / 'checkpoint'}", "--agent", f"ilql={runs['ilql'] / 'checkpoint'}",
                         "--episodes", "6", "--max-tokens", "8", "--out", str(tmp_path / "eval.json")])
    printed = capsys.readouterr().out
    assert "6 episodes on the test split" in printed and "bc" in printed and "±" in printed
    for name in ("bc", "ilql"):
        assert results[name]["episodes"] == 6
        assert -10.0 <= results[name]["mean"] <= 0.0 and results[name]["se"] >= 0.0
    assert os.path.exists(tmp_path / "eval.json")
    with pytest.raises(SystemExit, match="upvotes_real"):
        main_eval(["--agent", f"bc={runs['bc'] / 'checkpoint'}", "--reward", "upvotes_real"])


def main_eval(extra):
    """``rlds-lang eval --task reddit`` on the dummy published folder; returns the results dict."""
    from trainers.cli.main import build_parser

    args = build_parser().parse_args(["eval", "--task", "reddit", "--data", PUBLISHED, *extra])
    return args.func(args)
