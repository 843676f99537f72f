"""Expert iteration (EI) rounds, round manifests, and which earlier rollouts a round may reuse.

An EI round samples episodes with the current policy (response trees of ``branching=1``, recorded through
``loggers.trees``, so every sample is an RLDS episode with node ids), keeps those whose return reaches
``min_return`` (or the top ``top_fraction``), re-records the kept ones as their own RLDS log folder, builds
it with ``rlds-lang build wordle_synthetic --config manual_dir`` and trains BC on it, starting from the
current policy's weights. Each round writes ``round.json`` (``RoundManifest``) when it is done.

Reuse rule (``reusable_rounds``): a round may train on the data of an earlier round only when both are of
the same kind (EI samples are never mixed into MALT's preference pairs, nor trees into EI's BC data), were
played in the same environment configuration (task, rule, mode, word lists by hash), and -- for MALT -- grew
trees with the same ``TreeSpec`` (branching, depths, reward range, pair selector). Everything else is
incompatible and is never read.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from loggers.trees import TreePath, TreeSpec, plan_paths, record_paths
from rlds_lang.env import LanguageEnv, Policy

ROUND_FILE = "round.json"


def round_seeds(seed: int, r: int, n: int) -> list[int]:
    """The start-state seeds of round ``r`` of a run seeded ``seed`` (``seed + (r + 1) * 10_000_000 + i``): every
    round plays its own games, disjoint from the other rounds' (while a round plays fewer than 10,000,000). One rule for
    the one-agent and the team loops (``trainers.algorithms.malt.malt``, ``trainers.algorithms.malt.team_rounds``).

    >>> round_seeds(0, 1, 3)
    [20000000, 20000001, 20000002]
    """
    return [seed + (r + 1) * 10_000_000 + i for i in range(n)]


@dataclasses.dataclass
class RoundManifest:
    """What one finished round did (``out/round_XX/round.json``).

    Attributes:
      round: index from 0.
      kind: ``ei`` or ``malt``.
      env: the environment configuration the data was played in.
      tree_spec: how the round's trees grew (``TreeSpec`` as a dict).
      data: the round's own RLDS log folders by role (``samples``, ``kept``, ``trees``).
      train_data: the log folders the round trained on (its own and reused compatible ones).
      checkpoint: the round's model checkpoint.
      env_steps: responses sampled in the environment this round (tree nodes).
      episodes: episodes (root-to-leaf paths) recorded.
      mean_return: mean return of the sampled episodes (EI) or of the tree paths (MALT).
      selected: kept episodes (EI) or preference pairs (MALT) trained on.
      evaluation: optional ``{"games", "mean", "se"}`` of the round's policy.
      empty_reason: why the round trained nothing (empty when it trained); its ``checkpoint`` is then the
        previous round's, unchanged.
    """

    round: int
    kind: str
    env: dict[str, Any]
    tree_spec: dict[str, Any]
    data: dict[str, str]
    train_data: list[str]
    checkpoint: str
    env_steps: int
    episodes: int
    mean_return: float
    selected: int
    evaluation: dict[str, float] = dataclasses.field(default_factory=dict)
    empty_reason: str = ""

    @property
    def trained(self) -> bool:
        """Whether the round trained a new checkpoint (an empty round passes the previous one on)."""
        return not self.empty_reason

    def save(self, round_dir: Path) -> None:
        """Writes ``round.json`` atomically."""
        write_round_file(self, round_dir)

    @classmethod
    def load(cls, round_dir: Path) -> "RoundManifest | None":
        """The manifest of a finished round, or None."""
        fields = read_round_file(round_dir)
        return None if fields is None else cls(**fields)


def write_round_file(record: Any, round_dir: Path) -> None:
    """Writes a round's record (a dataclass) as ``round_dir/round.json``, atomically (temporary file, rename)."""
    tmp = round_dir / (ROUND_FILE + ".tmp")
    tmp.write_text(json.dumps(dataclasses.asdict(record), indent=2, sort_keys=True))
    tmp.rename(round_dir / ROUND_FILE)


def read_round_file(round_dir: Path) -> dict[str, Any] | None:
    """The fields of a finished round's ``round.json``, or None when the round has not finished."""
    path = round_dir / ROUND_FILE
    return json.loads(path.read_text()) if path.exists() else None


def compatible(earlier: RoundManifest, kind: str, env: dict[str, Any], tree_spec: dict[str, Any]) -> bool:
    """Whether ``earlier``'s data may be reused by a round of ``kind`` in ``env`` with ``tree_spec`` (module doc)."""
    if earlier.kind != kind or earlier.env != env:
        return False
    return kind != "malt" or earlier.tree_spec == tree_spec


def reusable_rounds(manifests: Sequence[RoundManifest], kind: str, env: dict[str, Any],
                    tree_spec: dict[str, Any]) -> list[RoundManifest]:
    """The earlier rounds whose data a new round may train on, in round order."""
    return [m for m in manifests if compatible(m, kind, env, tree_spec)]


def keep_mask(returns: np.ndarray, min_return: float | None = None, top_fraction: float | None = None) -> np.ndarray:
    """bool mask of the episodes EI keeps: return >= ``min_return``, or the top ``top_fraction`` by return
    (``ceil(fraction * n)`` episodes; ties broken by episode order). Exactly one of the two must be given.

    >>> keep_mask(np.array([-6.0, -3.0, -4.0, -3.0]), min_return=-4).tolist()
    [False, True, True, True]
    >>> keep_mask(np.array([-6.0, -3.0, -4.0, -3.0]), top_fraction=0.5).tolist()
    [False, True, False, True]
    """
    if (min_return is None) == (top_fraction is None):
        raise ValueError("keep_mask: give exactly one of min_return and top_fraction")
    returns = np.asarray(returns, dtype=np.float64)
    if min_return is not None:
        return returns >= min_return
    if not 0 < top_fraction <= 1:
        raise ValueError(f"keep_mask: top_fraction must be in (0, 1], got {top_fraction}")
    keep = np.zeros(len(returns), bool)
    keep[np.argsort(-returns, kind="stable")[:math.ceil(top_fraction * len(returns))]] = True
    return keep


def record_once(folder: Path, write) -> Path:
    """Runs ``write(tmp_folder)`` unless ``folder`` exists, then renames the result to ``folder``.

    A round interrupted while recording leaves only a ``.tmp`` folder, redone on resumption.
    """
    if folder.exists():
        return folder
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    write(tmp)
    tmp.rename(folder)
    return folder


def path_returns(paths: Sequence[TreePath]) -> np.ndarray:
    """The return of each path (the tree's return at its leaf, first agent)."""
    cache: dict[str, np.ndarray] = {}
    out = []
    for path in paths:
        returns = cache.setdefault(path.tree.tree_id, path.tree.returns()[:, 0])
        out.append(float(returns[path.nodes[-1]]))
    return np.asarray(out)


@dataclasses.dataclass
class Sampled:
    """An EI round's samples: their paths, returns and the kept mask."""

    paths: list[TreePath]
    returns: np.ndarray
    keep: np.ndarray
    env_steps: int


def sample_and_keep(env: LanguageEnv, policy: Policy, spec: TreeSpec, seeds: Sequence[int], round_dir: Path,
                    run_name: str, min_return: float | None, top_fraction: float | None) -> Sampled:
    """Plays one episode per seed (``spec`` with ``branching=1``), records all of them (``samples``) and
    the kept ones (``kept``) under ``round_dir``; returns the selection."""
    _, paths, _ = plan_paths(env, policy, spec, len(seeds), int(seeds[0]) if len(seeds) else 0, run_name, seeds)
    returns = path_returns(paths)
    keep = keep_mask(returns, min_return, top_fraction)
    record_once(round_dir / "samples", lambda d: record_paths(env, policy, spec, paths, d, run_name=run_name))
    kept = [p for p, k in zip(paths, keep) if k]
    record_once(round_dir / "kept", lambda d: record_paths(env, policy, spec, kept, d, run_name=f"{run_name}-kept"))
    return Sampled(paths, returns, keep, sum(len(p.nodes) for p in paths))


def bc_manual_dir(round_dir: Path, folders: Sequence[str]) -> Path:
    """A manual folder for ``tfds build ... --config manual_dir`` holding a copy of every log folder to train on."""
    manual = round_dir / "bc_manual"
    if manual.exists():
        shutil.rmtree(manual)
    manual.mkdir(parents=True)
    for i, folder in enumerate(folders):
        shutil.copytree(folder, manual / f"part_{i:03d}")
    return manual


__all__ = ["round_seeds", "ROUND_FILE", "RoundManifest", "Sampled", "bc_manual_dir", "compatible", "keep_mask",
           "path_returns", "read_round_file", "record_once", "reusable_rounds", "sample_and_keep", "write_round_file"]
