"""``rlds-lang visdial guesser``: trains the small PyTorch guesser the local Visual Dialogue backend scores with.

The guesser predicts the (L2-normalised) image feature from the caption and the dialogue so far. It is a
hashed bag of words (``buckets`` hash buckets of lower-cased words, stable CRC32) -> ``EmbeddingBag``
(mean) -> one hidden ReLU layer -> the feature, trained with mean squared error on every prefix (0..10
rounds) of the training dialogues. It stands in for the paper's pretrained guesser (visdial-rl's Q-bot
feature regression), which is not available here. Saved as ``guesser.pt`` + ``config.json`` in ``--out``;
``load_guesser`` gives the callable ``(caption, history) -> feature`` that ``LocalBackend`` takes.

Example::

    rlds-lang visdial guesser --manual-dir ~/visdial_manual --out ~/visdial_guesser --epochs 5
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import zlib
from typing import Sequence

import numpy as np

from rlds_lang.visdial.backend import Turn
from rlds_lang.visdial.data import FEATURES_FILE, FeatureStore, read_split

WORD = re.compile(r"\w+|[^\w\s]")


@dataclasses.dataclass
class GuesserConfig:
    """Model size and training schedule (our defaults; the paper's guesser was a pretrained Q-bot)."""

    buckets: int = 4096      #: hash buckets of the bag of words
    dim: int = 64            #: word-embedding size
    hidden: int = 128        #: hidden layer size
    epochs: int = 5          #: passes over every dialogue prefix
    batch_size: int = 64     #: prefixes per optimizer step
    lr: float = 3e-3         #: Adam learning rate
    seed: int = 0            #: initialisation and shuffling seed
    version: str = "0.5"     #: VisDial version of the manual folder
    split: str = "train"     #: the split trained on
    device: str = "auto"     #: where it trains (``--device``: auto, cpu, cuda or cuda:N; built on the CPU, then moved)


def word_ids(text: str, buckets: int) -> list[int]:
    """Stable hash buckets of the lower-cased words of ``text``."""
    return [zlib.crc32(w.encode("utf-8")) % buckets for w in WORD.findall(text.lower())]


def dialogue_text(caption: str, history: Sequence[Turn]) -> str:
    """Caption and every turn, space-joined (what the guesser reads)."""
    return " ".join([caption, *(t["text"] for t in history)])


class Guesser:
    """The trained model as the callable ``(caption, history) -> predicted feature`` (float32, [dim])."""

    def __init__(self, config: GuesserConfig, feature_dim: int):
        import torch

        self.config, self.feature_dim = config, int(feature_dim)
        self.module = torch.nn.ModuleDict({
            "embed": torch.nn.EmbeddingBag(config.buckets, config.dim, mode="mean"),
            "mlp": torch.nn.Sequential(torch.nn.Linear(config.dim, config.hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(config.hidden, self.feature_dim)),
        })

    def forward(self, texts: Sequence[str]):
        """Predicted features of a batch of dialogue texts (a torch tensor on the module's device)."""
        import torch

        from trainers.core.device import module_device

        device = module_device(self.module)
        ids = [word_ids(t, self.config.buckets) or [0] for t in texts]
        flat = torch.tensor([i for row in ids for i in row], dtype=torch.long, device=device)
        offsets = torch.tensor(np.cumsum([0] + [len(r) for r in ids[:-1]]), dtype=torch.long, device=device)
        return self.module["mlp"](self.module["embed"](flat, offsets))

    def loss(self, texts: Sequence[str], targets: np.ndarray):
        """Mean squared error of the predicted features of ``texts`` against ``targets`` ([len(texts), dim])."""
        import torch

        from trainers.core.device import module_device

        target = torch.from_numpy(targets).to(module_device(self.module))
        return torch.nn.functional.mse_loss(self.forward(texts), target)

    def __call__(self, caption: str, history: Sequence[Turn]) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.forward([dialogue_text(caption, history)])[0].cpu().numpy().astype(np.float32)

    def save(self, folder: str, info: dict) -> None:
        """Writes ``guesser.pt`` and ``config.json`` (config, feature size, ``info`` such as losses)."""
        import torch

        os.makedirs(folder, exist_ok=True)
        torch.save(self.module.state_dict(), os.path.join(folder, "guesser.pt"))
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
            json.dump({"config": dataclasses.asdict(self.config), "feature_dim": self.feature_dim, **info}, f, indent=1)


def load_guesser(folder: str) -> Guesser:
    """The guesser saved in ``folder`` by ``rlds-lang visdial guesser``."""
    import torch

    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        saved = json.load(f)
    guesser = Guesser(GuesserConfig(**saved["config"]), saved["feature_dim"])
    guesser.module.load_state_dict(torch.load(os.path.join(folder, "guesser.pt"), map_location="cpu",
                                              weights_only=True))
    guesser.module.eval()
    return guesser


def prefixes(manual_dir: str, split: str, version: str) -> tuple[list[str], np.ndarray]:
    """Every dialogue prefix (0..rounds complete rounds) of a split as text, with its image feature."""
    dialogues = list(read_split(manual_dir, split, version))
    store = FeatureStore(os.path.join(manual_dir, FEATURES_FILE), split, expected=len(dialogues))
    texts, rows = [], []
    for d in dialogues:
        feature = store[d.index]
        history: list[dict] = []
        for r in range(d.rounds + 1):
            texts.append(dialogue_text(d.caption, history))
            rows.append(feature)
            if r < d.rounds:
                history += [{"speaker": "question", "text": d.questions[r]}, {"speaker": "answer", "text": d.answers[r]}]
    store.close()
    return texts, np.stack(rows)


def train_guesser(manual_dir: str, config: GuesserConfig) -> tuple[Guesser, list[float]]:
    """Trains a guesser on ``config.split`` on ``config.device`` (built on the CPU, so a seed gives the same initial
    weights on every device, then moved); returns it and the mean loss of each epoch."""
    import torch

    from trainers.core.device import resolve_device

    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    texts, targets = prefixes(manual_dir, config.split, config.version)
    guesser = Guesser(config, targets.shape[1])
    guesser.module.to(device)
    optimizer = torch.optim.Adam(guesser.module.parameters(), lr=config.lr)
    rng = random.Random(config.seed)
    order = list(range(len(texts)))
    losses = []
    for _ in range(config.epochs):
        rng.shuffle(order)
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = order[start:start + config.batch_size]
            loss = guesser.loss([texts[i] for i in batch], targets[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        losses.append(total / len(order))
    guesser.module.eval()
    return guesser, losses


__all__ = ["Guesser", "GuesserConfig", "load_guesser", "train_guesser"]
