"""Preference pairs from response-tree episodes, and their token tensors for DPO.

A pair is two sibling responses of a response tree (``rlds_lang.trees``) with their common history: the
observations and responses from the start state to the decision point. ``tree_pairs`` takes the pairs
the recorder flagged (``is_pair_positive`` / ``is_pair_negative`` under the same parent), or re-pairs the
rebuilt trees with another selector. ``encode_pairs`` lays each response out after the agent's prompt
exactly as ``trainers.core.policy.LanguageModelPolicy`` generates it -- ``[BOS] o_0 [EOO] a_0 [EOA] ... o_t
[EOO]`` then the response's characters and ``[EOA]`` -- and marks every response token (the first one
and ``[EOA]`` included) in ``response_mask``. Sequences are right-padded.

Episodes come from a log folder written by ``loggers.trees.record_trees`` or from a ``tfds build`` folder
of ``builders/response_trees`` (``load_tree_episodes``).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from rlds_lang.char_tokenizer import CharTokenizer
from rlds_lang.trees import (
    TreeError,
    expected_rewards,
    pair_histories,
    rebuild_trees,
    select_pairs,
)
from trainers.core.padding import pad_responses


@dataclasses.dataclass(frozen=True)
class PreferencePair:
    """Two sibling responses after the same history; ``chosen`` has the higher expected reward for ``agent``, the
    agent that gave both (0 in single-agent trees)."""

    observations: tuple[str, ...]
    actions: tuple[str, ...]
    chosen: str
    rejected: str
    node_ids: tuple[str, str]
    agent: int = 0


def _text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.item()
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def load_tree_episodes(path: str | os.PathLike, split: str = "train") -> list[dict[str, Any]]:
    """The episodes of a log folder (``loggers.read_episodes``) or of a ``tfds build`` folder, as python dicts
    (an ArrayRecord build is read with ``tfds.data_source``, without TensorFlow)."""
    path = Path(path)
    if not (path / "dataset_info.json").exists():
        from loggers import read_episodes

        return list(read_episodes(path))
    from transforms.array_record import ARRAY_RECORD, file_format, open_source

    if file_format(path) == ARRAY_RECORD:
        stored: Iterable[Mapping[str, Any]] = open_source(path, split)
    else:
        import tensorflow_datasets as tfds

        stored = tfds.as_numpy(tfds.builder_from_directory(str(path)).as_dataset(split=split))
    episodes = []
    for episode in stored:
        meta = {k: _text(v) if isinstance(v, (bytes, np.ndarray)) and np.asarray(v).dtype.kind in "SOU" else v
                for k, v in episode.items() if k != "steps"}
        steps = [{k: (_text(v) if isinstance(v, bytes) else v) for k, v in step.items()} for step in episode["steps"]]
        for step in steps:
            step["observation"] = {k: _text(v) if isinstance(v, bytes) else v for k, v in step["observation"].items()}
        episodes.append({**meta, "steps": steps})
    return episodes


def _node_table(episodes: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per node id: parent id, action, observation text at the decision point, acting agent, pair flags."""
    table: dict[str, dict[str, Any]] = {}
    for episode in episodes:
        for step in episode["steps"]:
            if bool(step.get("is_last", False)):
                break
            observation = step["observation"]
            text = observation["text"] if isinstance(observation, Mapping) else observation
            table.setdefault(_text(step["node_id"]), {
                "parent": _text(step["parent_node_id"]), "action": _text(step["action"]), "observation": _text(text),
                "agent": int(step.get("agent", 0)), "positive": bool(step.get("is_pair_positive", False)),
                "negative": bool(step.get("is_pair_negative", False))})
    return table


def _pair(table: dict[str, dict[str, Any]], chosen: str, rejected: str) -> PreferencePair:
    """The pair of two sibling node ids with the history from the start to their parent."""
    prefix, node = [], table[chosen]["parent"]
    while node in table:
        prefix.append(node)
        node = table[node]["parent"]
    prefix.reverse()
    observations = tuple(table[n]["observation"] for n in prefix) + (table[chosen]["observation"],)
    return PreferencePair(observations, tuple(table[n]["action"] for n in prefix), table[chosen]["action"],
                          table[rejected]["action"], (chosen, rejected), table[chosen]["agent"])


def tree_pairs(episodes: Iterable[Mapping[str, Any]], pair_method: str | None = None,
               reward_range: Sequence[float] | Sequence[Sequence[float]] = (-6.0, 0.0),
               threshold: float | Sequence[float | None] | None = None,
               interval_threshold_proportion: float = 0.1, seed: int = 0,
               strict_threshold: bool = False) -> list[PreferencePair]:
    """The preference pairs of response-tree episodes.

    ``pair_method=None`` uses the recorded flags (one positive and one negative child under a parent);
    ``positive_negative`` or ``interval`` re-selects pairs on the rebuilt trees (``rlds_lang.trees.select_pairs``,
    one generator seeded ``seed`` over all trees, in tree-id order; ``reward_range`` and ``threshold`` may give one
    value per agent; ``strict_threshold`` leaves values exactly at the threshold out of ``positive_negative``). Each
    pair says which agent it belongs to (``PreferencePair.agent``).
    """
    episodes = list(episodes)
    table = _node_table(episodes)
    if pair_method is None:
        by_parent: dict[str, dict[str, list[str]]] = {}
        for nid, node in sorted(table.items()):
            for flag in ("positive", "negative"):
                if node[flag]:
                    by_parent.setdefault(node["parent"], {"positive": [], "negative": []})[flag].append(nid)
        pairs = []
        for parent, flagged in sorted(by_parent.items()):
            if len(flagged["positive"]) != len(flagged["negative"]):
                raise TreeError(f"node {parent!r}: {len(flagged['positive'])} positive and {len(flagged['negative'])} "
                                f"negative children flagged; expected one of each per pair")
            pairs += [_pair(table, c, r) for c, r in zip(flagged["positive"], flagged["negative"])]
        return pairs
    rng = np.random.default_rng(seed)
    pairs = []
    for tree in rebuild_trees(episodes):
        selected = select_pairs(tree, expected_rewards(tree), pair_method, reward_range, seed=rng, threshold=threshold,
                                interval_threshold_proportion=interval_threshold_proportion,
                                strict_threshold=strict_threshold)
        pairs += [_pair(table, tree.ids[c], tree.ids[r]) for _, c, r in pair_histories(tree, selected)]
    return pairs


def pairs_of_agents(pairs: Iterable[PreferencePair], agents: Iterable[int]) -> list[PreferencePair]:
    """The pairs given by any of ``agents`` (a model group's share of a round's pairs)."""
    wanted = set(int(a) for a in agents)
    return [p for p in pairs if p.agent in wanted]


def encode_response(tokenizer: CharTokenizer, observations: Sequence[str], actions: Sequence[str],
                    response: str) -> tuple[list[int], int]:
    """``(prompt + response + [EOA] token ids, index of the first response token)``."""
    prompt = tokenizer.encode_prompt(list(observations), list(actions))
    return prompt + tokenizer.encode(response, strict=False) + [tokenizer.eoa_id], len(prompt)


def encode_pairs(pairs: Sequence[PreferencePair], tokenizer: CharTokenizer, max_length: int) -> dict[str, torch.Tensor]:
    """Right-padded tensors of all pairs: ``{chosen,rejected}_{input_ids,attention_mask,response_mask}`` ``[P, T]``.

    ``response_mask[p, t]`` marks the response tokens (its first character through ``[EOA]``); a sequence
    longer than ``max_length`` is an error naming the pair's node ids.
    """
    out: dict[str, torch.Tensor] = {}
    for side in ("chosen", "rejected"):
        rows = []
        for pair in pairs:
            ids, start = encode_response(tokenizer, pair.observations, pair.actions, getattr(pair, side))
            if len(ids) > max_length:
                raise ValueError(f"pair {pair.node_ids}: the {side} sequence has {len(ids)} tokens, more than "
                                 f"max_length={max_length}")
            rows.append((ids, start))
        input_ids, attention, response = pad_responses(rows, tokenizer.pad_id)
        out.update({f"{side}_input_ids": input_ids, f"{side}_attention_mask": attention,
                    f"{side}_response_mask": response})
    return out


__all__ = ["PreferencePair", "encode_pairs", "encode_response", "load_tree_episodes", "pairs_of_agents",
           "tree_pairs"]
