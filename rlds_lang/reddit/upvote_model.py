"""The upvote classifier behind the ``upvotes_model`` reward: its architecture, saving, loading and prediction.

The paper's classifier is a RoBERTa pooler followed by an MLP, trained with binary cross-entropy to
predict ``score > 0``. No pretrained weights can be shipped or downloaded here, so the encoder is a
hashed bag of lower-cased word unigrams and bigrams (``EmbeddingBag``, mean) followed by the same kind
of MLP (hidden layer twice the embedding width, ReLU, one logit). Training lives in
``trainers/tasks/reddit_upvotes.py`` (``rlds-lang reddit upvotes``); this module only defines, saves and
loads the model, so the core never imports the trainers.

A saved model is a folder: ``config.json`` (``UpvoteModelConfig`` plus the validation accuracy and the
training split) and ``weights.pt`` (the ``state_dict``). ``UpvoteClassifier.probabilities(texts)``
returns P(score > 0). torch is imported when a model is built or loaded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from typing import Any, Sequence

CONFIG_FILE = "config.json"
#: environment variable naming an upvote model folder (used when a data folder has no ``upvote_model/``).
UPVOTE_MODEL_ENV = "RLDS_LANG_REDDIT_UPVOTE_MODEL"
#: the upvote model's folder name inside a data (manual) folder.
UPVOTE_MODEL_DIR = "upvote_model"
WEIGHTS_FILE = "weights.pt"
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


@dataclasses.dataclass(frozen=True)
class UpvoteModelConfig:
    """Shape of the classifier.

    Attributes:
      buckets: hash buckets of the n-gram embedding table.
      dim: embedding width (the MLP's hidden layer is ``2 * dim``, as in the paper's head).
      max_ngrams: n-grams kept per text (the first ones), bounding the cost of very long comments.
    """

    buckets: int = 2 ** 18
    dim: int = 64
    max_ngrams: int = 1024


def ngram_ids(text: str, buckets: int, max_ngrams: int) -> list[int]:
    """Hash-bucket ids of the lower-cased word unigrams and bigrams of ``text`` (stable across runs: BLAKE2)."""
    words = _WORD.findall(text.lower())
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    ids = [int.from_bytes(hashlib.blake2b(g.encode("utf-8"), digest_size=8).digest(), "big") % buckets
           for g in grams[:max_ngrams]]
    return ids or [0]


class UpvoteClassifier:
    """A hashed-n-gram MLP predicting P(score > 0) for a comment; wraps a ``torch.nn.Module`` (``module``)."""

    def __init__(self, config: UpvoteModelConfig | None = None, info: dict[str, Any] | None = None):
        import torch
        from torch import nn

        self.config = config or UpvoteModelConfig()
        self.info = dict(info or {})
        self.module = nn.ModuleDict({
            "embed": nn.EmbeddingBag(self.config.buckets, self.config.dim, mode="mean"),
            "head": nn.Sequential(nn.Linear(self.config.dim, 2 * self.config.dim), nn.ReLU(),
                                  nn.Linear(2 * self.config.dim, 1)),
        })
        self._torch = torch

    @property
    def device(self):
        """The ``torch.device`` of the model's weights: where ``batch`` puts its tensors and ``logits`` computes."""
        return next(self.module.parameters()).device

    def batch(self, texts: Sequence[str]):
        """``(ids, offsets)`` tensors of a batch of texts for ``logits``, on the model's device."""
        torch = self._torch
        ids, offsets = [], []
        for text in texts:
            offsets.append(len(ids))
            ids.extend(ngram_ids(text, self.config.buckets, self.config.max_ngrams))
        device = self.device
        return (torch.tensor(ids, dtype=torch.long, device=device),
                torch.tensor(offsets, dtype=torch.long, device=device))

    def logits(self, texts: Sequence[str]):
        """The logit of P(score > 0) for each text (a float tensor of shape [len(texts)], on the model's device)."""
        ids, offsets = self.batch(texts)
        return self.module["head"](self.module["embed"](ids, offsets)).squeeze(-1)

    def probabilities(self, texts: Sequence[str], batch_size: int = 256) -> list[float]:
        """P(score > 0) for each text, in evaluation mode without gradients."""
        self.module.eval()
        out: list[float] = []
        with self._torch.no_grad():
            for start in range(0, len(texts), batch_size):
                out.extend(self._torch.sigmoid(self.logits(texts[start:start + batch_size])).tolist())
        return out

    def save(self, folder: str | os.PathLike) -> None:
        """Writes ``config.json`` and ``weights.pt`` into ``folder`` (created if needed)."""
        folder = os.fspath(folder)
        os.makedirs(folder, exist_ok=True)
        self._torch.save(self.module.state_dict(), os.path.join(folder, WEIGHTS_FILE))
        with open(os.path.join(folder, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump({"config": dataclasses.asdict(self.config), "info": self.info}, f, indent=2, sort_keys=True)

    def fingerprint(self) -> str:
        """SHA-256 of the weights, so reward caches of different models never mix."""
        digest = hashlib.sha256()
        for name, tensor in sorted(self.module.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().numpy().tobytes())
        return digest.hexdigest()[:16]

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "UpvoteClassifier":
        """The model saved in ``folder``; ``FileNotFoundError`` says how to train one when it is absent."""
        folder = os.fspath(folder)
        config_path, weights_path = os.path.join(folder, CONFIG_FILE), os.path.join(folder, WEIGHTS_FILE)
        for path in (config_path, weights_path):
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path} not found: no upvote model in {folder}; train one with "
                                        "`rlds-lang reddit upvotes --data <manual folder> --out <folder>`")
        with open(config_path, encoding="utf-8") as f:
            saved = json.load(f)
        model = cls(UpvoteModelConfig(**saved["config"]), saved.get("info", {}))
        model.module.load_state_dict(model._torch.load(weights_path, map_location="cpu", weights_only=True))
        model.module.eval()
        return model


def find_upvote_model(data_dir: str | os.PathLike) -> str:
    """The upvote model for a data folder: ``<data_dir>/upvote_model``, else the folder ``$RLDS_LANG_REDDIT_UPVOTE_MODEL``.

    ``FileNotFoundError`` says where it looked and how to train one when neither exists.
    """
    inside = os.path.join(os.fspath(data_dir), UPVOTE_MODEL_DIR)
    if os.path.isdir(inside):
        return inside
    named = os.environ.get(UPVOTE_MODEL_ENV, "")
    if named and os.path.isdir(named):
        return named
    where = f"names {named!r}, not a folder" if named else "is not set"
    raise FileNotFoundError(f"the upvotes_model reward needs an upvote classifier: none in {inside} and "
                            f"${UPVOTE_MODEL_ENV} {where}. Train one with "
                            f"`rlds-lang reddit upvotes --data {os.fspath(data_dir)} --out {inside}`.")


__all__ = ["UPVOTE_MODEL_DIR", "UPVOTE_MODEL_ENV", "UpvoteClassifier", "find_upvote_model", "UpvoteModelConfig", "ngram_ids"]
